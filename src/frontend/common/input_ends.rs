//! How one submitted input ends, as its events show it: a query at its
//! turn's `result`, a command at its reply — what every front end waits
//! for before it says the input is done (and `run` takes its exit code
//! from).

use agentbus_engine::protocol::{
    AgentMessage, EventEnvelope, InputId, ResultEvent, StopReason, SystemEvent, SystemSubtype,
};
use std::collections::BTreeSet;
use std::process::ExitCode;

/// How one submitted input ended, as its events show it.
#[derive(Clone, Debug)]
pub enum InputEnd {
    /// A query's turn ended.
    Result(ResultEvent),
    /// A control command (or an unknown one) was answered.
    Reply(SystemEvent),
}

/// Follows submitted inputs to their ends, as their events show them.
///
/// A query's turn (its `user` event seen) ends only at its `result`: the
/// `system` events it carries on the way (a compaction and its notices, a
/// note that the recent turns alone exceed the budget, retries) are part of
/// the turn. A command ends at its `system` reply; retry notices and the
/// notice that a summarising call started (`/compact`) do not end it.
#[derive(Debug, Default)]
pub struct InputEnds {
    /// Inputs whose `user` event was seen and whose `result` was not.
    turns: BTreeSet<InputId>,
}

impl InputEnds {
    /// Learn from `event` which inputs are queries whose turn runs. Call
    /// it for every event, in order, before [`ended`](Self::ended).
    pub fn observe(&mut self, event: &EventEnvelope) {
        match (&event.message, event.turn_id) {
            (AgentMessage::User(_), Some(turn)) => {
                self.turns.insert(turn);
            }
            (AgentMessage::Result(_), Some(turn)) => {
                self.turns.remove(&turn);
            }
            _ => {}
        }
    }

    /// `Some` when `event` (already observed) is the last event of input
    /// `id`: its `result`, or the `system` reply of a command.
    pub fn ended(&self, event: &EventEnvelope, id: InputId) -> Option<InputEnd> {
        if event.turn_id != Some(id) {
            return None;
        }
        match &event.message {
            AgentMessage::Result(r) => Some(InputEnd::Result(r.clone())),
            AgentMessage::System(s) if !self.turns.contains(&id) && !is_progress(s) => {
                Some(InputEnd::Reply(s.clone()))
            }
            _ => None,
        }
    }

    /// [`observe`](Self::observe), then [`ended`](Self::ended).
    pub fn end_of(&mut self, event: &EventEnvelope, id: InputId) -> Option<InputEnd> {
        self.observe(event);
        self.ended(event, id)
    }
}

/// A `system` event that says a command is under way rather than answered:
/// a retry, a notice that a summarising call starts, or a hook run (a
/// query's `UserPromptSubmit` hooks run before its `user` event).
pub fn is_progress(s: &SystemEvent) -> bool {
    s.subtype == SystemSubtype::Retrying
        || s.subtype == SystemSubtype::Hook
        || announces_compaction(s)
}

/// How the notices that announce a summarising call begin: when one starts
/// (`/compact`, or before a turn's model call) and when it starts again
/// quoting less: the `compacting` subtype. The `compacted` event or a notice
/// of failure follows.
pub fn announces_compaction(s: &SystemEvent) -> bool {
    s.subtype == SystemSubtype::Compacting
}

impl InputEnd {
    /// The process exit code for a one-shot run that ended this way:
    /// 0 for `end_turn` and answered commands, 130 for an interrupt, 2 for
    /// a command that was refused, 3 for `max_steps`, 1 for errors.
    pub fn exit_code(&self) -> u8 {
        match self {
            InputEnd::Result(r) => match r.stop_reason {
                StopReason::EndTurn => 0,
                StopReason::Cancelled => 130,
                StopReason::MaxSteps => 3,
                StopReason::Error => 1,
            },
            InputEnd::Reply(s) if s.subtype == SystemSubtype::Notice => 2,
            InputEnd::Reply(_) => 0,
        }
    }

    /// Why a run ended badly, for stderr; `None` when it ended well.
    pub fn failure_reason(&self) -> Option<String> {
        match self {
            InputEnd::Result(r) => match r.stop_reason {
                StopReason::EndTurn => None,
                StopReason::Cancelled => Some("interrupted (stop_reason: cancelled)".into()),
                StopReason::MaxSteps => Some(format!(
                    "stopped after {} (stop_reason: max_steps)",
                    agentbus_engine::text::count(r.steps, "model call")
                )),
                StopReason::Error => Some(format!(
                    "the turn failed (stop_reason: error): {}",
                    r.error.as_deref().unwrap_or("unknown error")
                )),
            },
            InputEnd::Reply(s) if s.subtype == SystemSubtype::Notice => Some(s.message.clone()),
            InputEnd::Reply(_) => None,
        }
    }

    pub fn to_exit_code(&self) -> ExitCode {
        ExitCode::from(self.exit_code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::{SessionId, UserEvent};

    fn env(turn_id: InputId, message: AgentMessage) -> EventEnvelope {
        EventEnvelope {
            session_id: SessionId::from("s"),
            seq: 1,
            turn_id: Some(turn_id),
            at: chrono::Utc::now(),
            message,
        }
    }

    fn notice(text: &str) -> AgentMessage {
        AgentMessage::System(SystemEvent::bare(SystemSubtype::Notice, text))
    }

    fn compacting(text: &str) -> AgentMessage {
        AgentMessage::System(SystemEvent::bare(SystemSubtype::Compacting, text))
    }

    /// A `compacted` event as the wire has it.
    fn compacted(trigger: &str) -> AgentMessage {
        AgentMessage::System(SystemEvent {
            subtype: SystemSubtype::Compacted,
            message: "Conversation compacted.".into(),
            data: Some(serde_json::json!({
                "trigger": trigger, "first_seq": 1, "last_seq": 5, "first_kept": 4,
                "summary": "s", "tokens_before": 900, "tokens_after": 100,
            })),
            by: None,
        })
    }

    fn result() -> AgentMessage {
        AgentMessage::Result(ResultEvent {
            stop_reason: StopReason::EndTurn,
            text: "done".into(),
            usage: Default::default(),
            steps: 1,
            duration_ms: 1,
            error: None,
            context: None,
        })
    }

    /// Which of `events` (all of input 7) ends it.
    fn end_at(events: Vec<AgentMessage>) -> Option<usize> {
        let mut ends = InputEnds::default();
        events
            .into_iter()
            .position(|m| ends.end_of(&env(7, m), 7).is_some())
    }

    #[test]
    fn a_turn_ends_at_its_result_whatever_it_says_on_the_way() {
        let turn = vec![
            AgentMessage::User(UserEvent::new("hi")),
            compacting("Compacting the conversation (the next request would take ...)."),
            compacted("auto"),
            notice("The provider refused the request as too long; trying once more."),
            result(),
        ];
        assert_eq!(end_at(turn), Some(4));
    }

    #[test]
    fn a_command_ends_at_its_reply_not_at_its_progress() {
        let compact = vec![
            compacting(
                "Compacting the conversation (as asked): the model is summarising 4 older messages.",
            ),
            AgentMessage::System(SystemEvent::bare(SystemSubtype::Retrying, "retrying")),
            compacted("command"),
        ];
        assert_eq!(end_at(compact), Some(2));
        let refused = vec![notice("Nothing to compact yet.")];
        assert_eq!(end_at(refused), Some(0));
        let failed = vec![
            compacting("Compacting the conversation (as asked): ..."),
            compacting(
                "The summarising request was too long as well; trying once more quoting about 900 tokens of the conversation.",
            ),
            notice("Compaction failed (boom); the conversation is unchanged."),
        ];
        assert_eq!(end_at(failed), Some(2));
    }

    #[test]
    fn other_inputs_events_end_nothing() {
        let mut ends = InputEnds::default();
        assert!(ends.end_of(&env(3, result()), 7).is_none());
        assert!(ends.end_of(&env(3, notice("x")), 7).is_none());
        let mut started = env(7, result());
        started.turn_id = None;
        assert!(ends.end_of(&started, 7).is_none());
    }
}
