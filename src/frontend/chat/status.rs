//! The status line the chat shows above its prompt: the model profile, the
//! agent, the permission mode, how full the context is, what the session
//! has cost (when the profile has prices), and the server when the chat is
//! attached to one.
//!
//! Pure: it follows the session's events ([`observe`](Status::observe)) —
//! `session_started`, the `/model`, `/agent` and `/mode` switches, each
//! reply's context and usage — and says what it knows as one line.

use agentbus_engine::protocol::context::Compacted;
use agentbus_engine::protocol::system::{ModelSwitched, SessionStarted};
use agentbus_engine::protocol::{
    AgentMessage, AgentSwitched, ContextUsage, EventEnvelope, ModeChanged, PermissionMode, Pricing,
    SystemSubtype, Usage,
};
use std::collections::BTreeMap;

/// What the status line knows.
#[derive(Clone, Debug, Default)]
pub struct Status {
    model: Option<String>,
    agent: Option<String>,
    mode: Option<PermissionMode>,
    context: Option<ContextUsage>,
    /// US dollars, once a priced profile was used.
    cost: Option<f64>,
    /// Prices by profile name.
    prices: BTreeMap<String, Pricing>,
    /// The server the chat is attached to.
    attached: Option<String>,
    /// Queries seen.
    turns: u64,
}

impl Status {
    /// A status line for a chat attached to `server` (if any), with the
    /// profiles' `prices`.
    pub fn new(attached: Option<String>, prices: BTreeMap<String, Pricing>) -> Status {
        Status {
            attached,
            prices,
            ..Status::default()
        }
    }

    /// Another session (`/new`, `/resume`, ...): what it is comes with its
    /// events.
    pub fn switched(&mut self) {
        *self = Status::new(self.attached.take(), std::mem::take(&mut self.prices));
    }

    /// Learn from one event of the session.
    pub fn observe(&mut self, event: &EventEnvelope) {
        match &event.message {
            AgentMessage::System(s) => match s.subtype {
                SystemSubtype::SessionStarted => {
                    let started = s.payload::<SessionStarted>().unwrap_or_default();
                    if !started.model.is_empty() {
                        self.model = Some(started.model);
                    }
                    self.agent = started.agent.or(self.agent.take());
                    self.mode = started.permission_mode.or(self.mode);
                }
                SystemSubtype::ModelSwitched => {
                    if let Some(switched) = s.payload::<ModelSwitched>() {
                        self.model = Some(switched.model);
                    }
                }
                SystemSubtype::Mode => {
                    if let Some(changed) = s.payload::<ModeChanged>() {
                        self.mode = Some(changed.mode);
                    }
                }
                SystemSubtype::Agent => {
                    if let Some(switched) = s.payload::<AgentSwitched>() {
                        self.agent = Some(switched.agent);
                        self.model = Some(switched.model);
                        self.mode = Some(switched.permission_mode);
                    }
                }
                SystemSubtype::Cleared => self.context = None,
                SystemSubtype::Compacted => {
                    if let Some(compacted) = s.payload::<Compacted>() {
                        self.spend(&compacted.usage);
                    }
                }
                _ => {}
            },
            AgentMessage::User(_) => self.turns += 1,
            AgentMessage::Assistant(a) if a.context.is_some() => self.context = a.context,
            AgentMessage::Result(r) => {
                if r.context.is_some() {
                    self.context = r.context;
                }
                self.spend(&r.usage);
            }
            _ => {}
        }
    }

    /// The session has a conversation (a query was seen).
    pub fn has_turns(&self) -> bool {
        self.turns > 0
    }

    /// What `usage` cost at the current profile's prices.
    fn spend(&mut self, usage: &Usage) {
        let price = self.model.as_ref().and_then(|m| self.prices.get(m));
        if let Some(price) = price {
            *self.cost.get_or_insert(0.0) += price.cost(usage);
        }
    }

    /// `scripted · build · default mode · context 12% · $0.0042 · attached
    /// to http://...`: what is known, in that order.
    pub fn line(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.model.clone());
        parts.extend(self.agent.clone());
        parts.extend(self.mode.map(|m| format!("{m} mode")));
        if let Some(context) = self.context
            && let Some(limit) = context.limit.filter(|l| *l > 0)
        {
            let percent = (context.used as f64 * 100.0 / limit as f64).round();
            parts.push(format!("context {percent:.0}%"));
        }
        if let Some(cost) = self.cost {
            parts.push(if cost < 1.0 {
                format!("${cost:.4}")
            } else {
                format!("${cost:.2}")
            });
        }
        if let Some(url) = &self.attached {
            parts.push(format!("attached to {url}"));
        }
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::{ResultEvent, SessionId, StopReason, SystemEvent, UserEvent};

    fn env(message: AgentMessage) -> EventEnvelope {
        EventEnvelope {
            session_id: SessionId::from("s"),
            seq: 1,
            turn_id: None,
            at: chrono::Utc::now(),
            message,
        }
    }

    fn system<P: agentbus_engine::protocol::SystemPayload>(payload: &P) -> EventEnvelope {
        env(AgentMessage::System(SystemEvent::new("", payload)))
    }

    fn result(input: u64, used: u64) -> EventEnvelope {
        env(AgentMessage::Result(ResultEvent {
            stop_reason: StopReason::EndTurn,
            text: String::new(),
            usage: Usage {
                input_tokens: input,
                ..Default::default()
            },
            steps: 1,
            duration_ms: 1,
            error: None,
            context: Some(ContextUsage {
                used,
                limit: Some(1_000),
            }),
        }))
    }

    #[test]
    fn the_line_follows_the_sessions_switches_and_replies() {
        let prices = BTreeMap::from([(
            "paid".to_string(),
            Pricing {
                input_per_mtok: 1_000.0,
                output_per_mtok: 0.0,
                cache_read_per_mtok: None,
                cache_write_per_mtok: None,
            },
        )]);
        let mut status = Status::new(None, prices);
        assert_eq!(status.line(), "");
        status.observe(&system(&SessionStarted {
            model: "free".into(),
            agent: Some("build".into()),
            permission_mode: Some(PermissionMode::Default),
            ..Default::default()
        }));
        assert_eq!(status.line(), "free · build · default mode");
        assert!(!status.has_turns());
        status.observe(&env(AgentMessage::User(UserEvent::new("hi"))));
        assert!(status.has_turns());
        status.observe(&result(100, 120));
        assert_eq!(
            status.line(),
            "free · build · default mode · context 12%",
            "no prices, no cost"
        );
        status.observe(&system(&ModeChanged {
            mode: PermissionMode::Plan,
            previous: Some(PermissionMode::Default),
        }));
        status.observe(&system(&ModelSwitched {
            model: "paid".into(),
            previous: "free".into(),
        }));
        status.observe(&result(10, 450));
        assert_eq!(
            status.line(),
            "paid · build · plan mode · context 45% · $0.0100"
        );
        status.observe(&system(&AgentSwitched {
            agent: "review".into(),
            previous: Some("build".into()),
            model: "free".into(),
            permission_mode: PermissionMode::AcceptEdits,
        }));
        assert_eq!(
            status.line(),
            "free · review · accept-edits mode · context 45% · $0.0100"
        );
    }

    #[test]
    fn an_attached_chat_says_where() {
        let mut status = Status::new(Some("http://127.0.0.1:7878".into()), BTreeMap::new());
        status.observe(&system(&SessionStarted {
            model: "m".into(),
            ..Default::default()
        }));
        status.switched();
        assert_eq!(status.line(), "attached to http://127.0.0.1:7878");
    }
}
