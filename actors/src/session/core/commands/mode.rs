//! `/mode [MODE]` — shows the permission mode and the rules in force, or
//! switches the mode (default, accept-edits, plan, bypass). The next tool
//! call is checked under the new mode; the next model call is told when it
//! is planning.

use super::syntax::SlashCommand;
use crate::protocol::{ControlCommand, ModeChanged, PermissionMode, SystemEvent};
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "mode",
    usage: "/mode [MODE]",
    summary: "show the permission mode and rules, or switch to default, accept-edits, plan or bypass",
    parse,
};

fn parse(args: &str) -> Result<ControlCommand, String> {
    if args.trim().is_empty() {
        return Ok(ControlCommand::ShowMode);
    }
    args.parse::<PermissionMode>()
        .map(|mode| ControlCommand::SetMode { mode })
        .map_err(|e| format!("/mode: {e}."))
}

/// Switch the mode.
pub fn set(state: &mut SessionState, mode: PermissionMode) -> SystemEvent {
    let previous = std::mem::replace(&mut state.permissions.mode, mode);
    let message = if previous == mode {
        format!("Permission mode stays {mode}: {}.", mode.describe())
    } else {
        format!(
            "Permission mode switched from {previous} to {mode}: {}.",
            mode.describe()
        )
    };
    SystemEvent::new(
        message,
        &ModeChanged {
            mode,
            previous: Some(previous),
        },
    )
}

/// The mode, the rules and where the sandbox lets commands write.
pub fn show(state: &SessionState) -> SystemEvent {
    let config = &state.config.permissions;
    let mode = state.permissions.mode;
    let rules = state.permissions.rules(config);
    let list = |name: &str, rules: &[crate::permissions::Rule]| {
        if rules.is_empty() {
            format!("\n  {name}: (none)")
        } else {
            let texts: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
            format!("\n  {name}: {}", texts.join(", "))
        }
    };
    let roots: Vec<String> = config
        .roots
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    let sandbox = if config.sandboxed {
        "commands run in the sandbox"
    } else {
        "commands run WITHOUT a sandbox"
    };
    let message = format!(
        "Permission mode: {mode} ({}).\nRules (deny, then ask, then allow):{}{}{}\nRoots: {} ({sandbox}).\nModes: {}.",
        mode.describe(),
        list("deny", &rules.deny),
        list("ask", &rules.ask),
        list("allow", &rules.allow),
        roots.join(", "),
        PermissionMode::ALL.map(|m| m.as_str()).join(", ")
    );
    SystemEvent::new(
        message,
        &ModeChanged {
            mode,
            previous: None,
        },
    )
}
