//! `/tools` — lists the tools the model can call and where each comes from.

use super::syntax::{SlashCommand, no_arguments};
use crate::model::ToolOrigin;
use crate::protocol::system::{ToolEntry, ToolListing};
use crate::protocol::{ControlCommand, SystemEvent};
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "tools",
    usage: "/tools",
    summary: "list the tools the model can call",
    parse: |args| no_arguments("tools", args, ControlCommand::ListTools),
};

pub fn apply(state: &SessionState) -> SystemEvent {
    let origin = |o: &ToolOrigin| match o {
        ToolOrigin::Builtin => "built-in".to_string(),
        ToolOrigin::Mcp { server, .. } => format!("mcp:{server}"),
    };
    // What the model is offered: the agent's limits, and `task`.
    let tools = state.offered_tools();
    let lines: Vec<String> = tools
        .iter()
        .map(|t| format!("  {} [{}] — {}", t.name, origin(&t.origin), t.summary()))
        .collect();
    let entries = tools
        .iter()
        .map(|t| ToolEntry {
            name: t.name.clone(),
            description: t.description.clone(),
            origin: origin(&t.origin),
        })
        .collect();
    SystemEvent::new(
        format!(
            "{}:\n{}",
            crate::text::count(tools.len() as u64, "tool"),
            lines.join("\n")
        ),
        &ToolListing(entries),
    )
}

#[cfg(test)]
mod tests {
    use crate::model::{ToolOrigin, ToolSpec};

    #[test]
    fn listings_show_the_first_sentence() {
        let spec = |d: &str| ToolSpec {
            name: "t".into(),
            description: d.into(),
            input_schema: std::sync::Arc::new(serde_json::json!({})),
            origin: ToolOrigin::Builtin,
        };
        assert_eq!(
            spec("Edit a file. It must exist.\nMore.").summary(),
            "Edit a file."
        );
        assert_eq!(spec("One line").summary(), "One line");
        assert_eq!(
            spec("Find files, e.g. `*.rs`. Then more.").summary(),
            "Find files, e.g. `*.rs`."
        );
    }
}
