//! Approval requests as `session/request_permission`: the tool call
//! waiting (title, kind, diff, files), and the answers that make sense for
//! it — allow once, allow always (the rule it adds in the option's name),
//! reject — mapped back to an approval decision.
//!
//! The editor's answer is only one of the possible answers: another front
//! end, the approval timeout or an interrupt may settle the request first
//! (then the editor's request is cancelled, and a late answer is refused
//! by the session, which is fine). A cancelled request answers nothing:
//! whoever cancelled it settles the call.

use super::tool_calls;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionId, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use agentbus_engine::protocol::{ApprovalChoice, ApprovalDecision, ApprovalRequestEvent};
use std::path::Path;

/// The request an editor answers for `request`.
pub fn request(
    session: &SessionId,
    request: &ApprovalRequestEvent,
    workspace: &Path,
) -> RequestPermissionRequest {
    let (name, input) = (&request.name, &request.input);
    let call = ToolCallUpdate::new(
        super::updates::call_id(&request.call_id),
        tool_calls::described(
            ToolCallUpdateFields::new().status(ToolCallStatus::Pending),
            name,
            input,
            workspace,
        ),
    );
    let options = request
        .options
        .iter()
        .map(|choice| option(*choice, request))
        .collect();
    RequestPermissionRequest::new(session.clone(), call, options)
}

fn option(choice: ApprovalChoice, request: &ApprovalRequestEvent) -> PermissionOption {
    let (name, kind) = match choice {
        ApprovalChoice::AllowOnce => ("Allow once".to_string(), PermissionOptionKind::AllowOnce),
        ApprovalChoice::AllowAlways => (
            match &request.suggested_rule {
                Some(rule) => format!("Always allow {rule}"),
                None => "Always allow".to_string(),
            },
            PermissionOptionKind::AllowAlways,
        ),
        ApprovalChoice::Reject => ("Reject".to_string(), PermissionOptionKind::RejectOnce),
    };
    PermissionOption::new(PermissionOptionId::new(choice.as_str()), name, kind)
}

/// The decision an editor's answer makes; `None` when the request was
/// cancelled (or answered with an option that was not offered: the
/// session then waits for another answer).
pub fn decision(outcome: &RequestPermissionOutcome) -> Option<ApprovalDecision> {
    let RequestPermissionOutcome::Selected(selected) = outcome else {
        return None;
    };
    let choice = [
        ApprovalChoice::AllowOnce,
        ApprovalChoice::AllowAlways,
        ApprovalChoice::Reject,
    ]
    .into_iter()
    .find(|choice| *selected.option_id.0 == *choice.as_str())?;
    Some(match choice {
        ApprovalChoice::Reject => {
            ApprovalDecision::reject("The user rejected this call in the editor.")
        }
        other => ApprovalDecision::new(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;
    use serde_json::json;

    fn approval(options: Vec<ApprovalChoice>) -> ApprovalRequestEvent {
        ApprovalRequestEvent {
            request_id: "req-1".into(),
            call_id: "call-1".into(),
            name: "bash".into(),
            input: json!({"command": "rm -rf build"}),
            reason: "commands ask in default mode".into(),
            options,
            suggested_rule: Some("bash(rm:*)".into()),
            suggested_mode: None,
            child_session: None,
        }
    }

    #[test]
    fn the_request_shows_the_call_and_the_answers_that_make_sense() {
        let all = approval(vec![
            ApprovalChoice::AllowOnce,
            ApprovalChoice::AllowAlways,
            ApprovalChoice::Reject,
        ]);
        let asked = request(&SessionId::new("s"), &all, Path::new("/ws"));
        assert_eq!(&*asked.tool_call.tool_call_id.0, "call-1");
        assert_eq!(
            asked.tool_call.fields.title.as_deref(),
            Some("`rm -rf build`")
        );
        let options: Vec<(&str, &str, PermissionOptionKind)> = asked
            .options
            .iter()
            .map(|o| (&*o.option_id.0, o.name.as_str(), o.kind))
            .collect();
        assert_eq!(
            options,
            [
                ("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
                (
                    "allow_always",
                    "Always allow bash(rm:*)",
                    PermissionOptionKind::AllowAlways
                ),
                ("reject", "Reject", PermissionOptionKind::RejectOnce),
            ]
        );
        // No rule can stand for the call: no "always".
        let no_rule = approval(vec![ApprovalChoice::AllowOnce, ApprovalChoice::Reject]);
        assert_eq!(
            request(&SessionId::new("s"), &no_rule, Path::new("/ws"))
                .options
                .len(),
            2
        );
    }

    #[test]
    fn each_answer_is_a_decision_and_a_cancellation_none() {
        let selected = |id: &str| {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                PermissionOptionId::new(id),
            ))
        };
        assert_eq!(
            decision(&selected("allow_once")),
            Some(ApprovalDecision::new(ApprovalChoice::AllowOnce))
        );
        assert_eq!(
            decision(&selected("allow_always")),
            Some(ApprovalDecision::new(ApprovalChoice::AllowAlways))
        );
        let rejected = decision(&selected("reject")).unwrap();
        assert_eq!(rejected.decision, ApprovalChoice::Reject);
        assert!(rejected.message.is_some());
        assert_eq!(decision(&selected("something-else")), None);
        assert_eq!(decision(&RequestPermissionOutcome::Cancelled), None);
    }
}
