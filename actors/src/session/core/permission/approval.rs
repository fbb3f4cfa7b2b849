//! Approval requests: a call that asks waits in its batch (the others go
//! on) until a decision, a timeout or an interrupt settles it. The first
//! answer wins; later ones find nothing waiting.

use super::policy::Asking;
use crate::model::{GrantedCall, ToolCall, ToolOutcome};
use crate::protocol::{
    AgentMessage, ApprovalChoice, ApprovalDecision, ApprovalOutcome, ApprovalRequestEvent,
    ApprovalResolved, InputId, SystemEvent,
};
use crate::session::core::SessionState;
use crate::session::core::turn::{Phase, Turn, Waiting};

/// The `approval_request` event for `call`.
pub fn request_event(request_id: &str, call: &ToolCall, asking: &Asking) -> AgentMessage {
    let mut options = vec![ApprovalChoice::AllowOnce];
    if asking.always.is_some() {
        options.push(ApprovalChoice::AllowAlways);
    }
    options.push(ApprovalChoice::Reject);
    AgentMessage::ApprovalRequest(ApprovalRequestEvent {
        request_id: request_id.to_string(),
        call_id: call.id.clone(),
        name: call.name.clone(),
        input: call.input.clone(),
        reason: asking.reason.clone(),
        options,
        suggested_rule: asking.always.as_ref().map(|r| r.to_string()),
        suggested_mode: asking.mode,
        child_session: None,
    })
}

/// What settled a request.
#[derive(Clone, Debug, PartialEq)]
pub enum Settle {
    /// A front end answered.
    Decided(ApprovalDecision),
    /// `approval_timeout_secs` passed.
    TimedOut { after_ms: u64 },
    /// The turn was interrupted.
    Cancelled,
}

/// A settled request: what everyone is told and what happens next.
#[derive(Clone, Debug, PartialEq)]
pub struct Settled {
    /// The turn the call belongs to.
    pub turn_id: InputId,
    /// The batch the call belongs to.
    pub batch_id: u64,
    /// The `approval_resolved` event.
    pub event: AgentMessage,
    /// The call to run now, when it was allowed.
    pub run: Option<GrantedCall>,
    /// An allow rule to save to the workspace's `.agentbus.toml`.
    pub save: Option<String>,
}

/// Settle `request_id`, when a call of the running batch waits for it:
/// a rejection becomes the call's (error) outcome, the model reads the
/// user's message in it; `allow_always` adds its rule to the session's.
/// A cancelled request leaves the outcome to the interrupt.
pub fn settle(state: &mut SessionState, request_id: &str, how: Settle) -> Option<Settled> {
    let Some(Turn {
        id,
        phase: Phase::RunningTools { batch_id, calls },
        ..
    }) = state.turn.as_mut()
    else {
        return None;
    };
    let (turn_id, batch_id) = (*id, *batch_id);
    let call = calls.iter_mut().find(|c| {
        c.waiting
            .as_ref()
            .is_some_and(|w| w.request_id == request_id)
    })?;
    let Waiting {
        request_id,
        call: granted,
        always,
    } = call.waiting.take()?;
    let after_secs = match &how {
        Settle::TimedOut { after_ms } => after_ms / 1000,
        _ => 0,
    };
    let mut by = None;
    let (outcome, message, save) = match how {
        Settle::Decided(ApprovalDecision {
            decision,
            message,
            save,
            by: answered_by,
        }) => {
            by = answered_by;
            let message = message.filter(|m| !m.trim().is_empty());
            match decision {
                ApprovalChoice::AllowOnce => (ApprovalOutcome::AllowedOnce, None, false),
                ApprovalChoice::AllowAlways if always.is_some() => {
                    (ApprovalOutcome::AllowedAlways, None, save)
                }
                // No rule can stand for this call: allowed this once.
                ApprovalChoice::AllowAlways => (ApprovalOutcome::AllowedOnce, None, false),
                ApprovalChoice::Reject => (ApprovalOutcome::Rejected, message, false),
            }
        }
        Settle::TimedOut { .. } => (ApprovalOutcome::TimedOut, None, false),
        Settle::Cancelled => (ApprovalOutcome::Cancelled, None, false),
    };
    let rule = always.filter(|_| outcome == ApprovalOutcome::AllowedAlways);
    let text = match outcome {
        ApprovalOutcome::AllowedOnce => format!("Allowed {} once.", call.name),
        ApprovalOutcome::AllowedAlways => format!(
            "Allowed {}; `{}` now runs without asking in this session{}.",
            call.name,
            rule.as_ref().map(|r| r.to_string()).unwrap_or_default(),
            if save {
                " (and is being saved to .agentbus.toml)"
            } else {
                ""
            }
        ),
        ApprovalOutcome::Rejected => match &message {
            Some(m) => format!("Rejected {}: {m}", call.name),
            None => format!("Rejected {}.", call.name),
        },
        ApprovalOutcome::TimedOut => format!(
            "Rejected {}: nobody answered within {} s.",
            call.name, after_secs
        ),
        ApprovalOutcome::Cancelled => format!("The request for {} was cancelled.", call.name),
    };
    match outcome {
        ApprovalOutcome::Rejected => {
            call.outcome = Some(ToolOutcome::error(rejection(message.as_deref())));
        }
        ApprovalOutcome::TimedOut => {
            call.outcome = Some(ToolOutcome::error(format!(
                "Not run: nobody answered the approval request within {after_secs} s, so it was rejected. Do not retry it now; tell the user what you wanted to run."
            )));
        }
        _ => {}
    }
    let resolved = ApprovalResolved {
        request_id,
        call_id: call.id.clone(),
        outcome,
        message,
        rule: rule.as_ref().map(|r| r.to_string()),
        save,
        by,
        child_session: None,
    };
    if let Some(rule) = &rule {
        state.permissions.add(rule.clone());
    }
    Some(Settled {
        turn_id,
        batch_id,
        event: AgentMessage::System(SystemEvent::new(text, &resolved)),
        run: outcome.allowed().then_some(granted),
        save: rule.filter(|_| save).map(|r| r.to_string()),
    })
}

/// What the model reads when the user said no.
pub fn rejection(message: Option<&str>) -> String {
    match message {
        Some(message) => format!(
            "Not run: the user rejected this call and said: {message}"
        ),
        None => "Not run: the user rejected this call. Do not retry it; continue another way or ask the user how to proceed.".to_string(),
    }
}

/// The requests the running batch waits for.
pub fn waiting(state: &SessionState) -> Vec<String> {
    match state.turn.as_ref().map(|t| &t.phase) {
        Some(Phase::RunningTools { calls, .. }) => calls
            .iter()
            .filter_map(|c| c.waiting.as_ref().map(|w| w.request_id.clone()))
            .collect(),
        _ => Vec::new(),
    }
}
