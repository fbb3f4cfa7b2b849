//! The session modes an editor offers (its mode picker): what a session
//! can switch between, and the input that switches.
//!
//! Today these are the permission modes (`default`, `accept-edits`, `plan`,
//! `bypass`), switched with `/mode NAME` like any front end does. This is
//! the one place the list is made: named agents join it in
//! [`available`] (one [`SessionMode`] each) and [`switch_input`] (the input
//! that selects one), and nothing else in the ACP front end changes.
//!
//! Pure; it never talks to a session.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeId, SessionModeState};
use agentbus_actors::protocol::PermissionMode;

/// The mode id of a permission mode (its name, as `/mode` takes it).
pub fn id_of(mode: PermissionMode) -> SessionModeId {
    SessionModeId::new(mode.as_str())
}

/// Every mode a session offers, the one in force marked current.
pub fn available(current: PermissionMode) -> SessionModeState {
    let modes = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Bypass,
    ]
    .into_iter()
    .map(|mode| SessionMode::new(id_of(mode), title(mode)).description(mode.describe().to_string()))
    .collect();
    SessionModeState::new(id_of(current), modes)
}

/// What the picker shows.
fn title(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "Ask before edits",
        PermissionMode::AcceptEdits => "Accept edits",
        PermissionMode::Plan => "Plan (read-only)",
        PermissionMode::Bypass => "Bypass permissions",
    }
}

/// The input that switches to mode `id`, or why there is no such mode.
pub fn switch_input(id: &SessionModeId) -> Result<String, String> {
    match id.0.parse::<PermissionMode>() {
        Ok(mode) => Ok(format!("/mode {mode}")),
        Err(_) => Err(format!(
            "unknown mode `{}`; expected one of default, accept-edits, plan, bypass",
            id.0
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_permission_mode_is_offered_and_the_current_one_marked() {
        let state = available(PermissionMode::Plan);
        assert_eq!(state.current_mode_id, SessionModeId::new("plan"));
        let ids: Vec<&str> = state.available_modes.iter().map(|m| &*m.id.0).collect();
        assert_eq!(ids, ["default", "accept-edits", "plan", "bypass"]);
        assert!(
            state
                .available_modes
                .iter()
                .all(|m| m.description.is_some())
        );
    }

    #[test]
    fn a_mode_id_switches_with_mode_and_a_wrong_one_is_named() {
        assert_eq!(
            switch_input(&SessionModeId::new("accept-edits")).unwrap(),
            "/mode accept-edits"
        );
        let err = switch_input(&SessionModeId::new("yolo")).unwrap_err();
        assert!(err.contains("`yolo`") && err.contains("bypass"), "{err}");
    }
}
