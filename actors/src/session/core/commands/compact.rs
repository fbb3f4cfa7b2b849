//! `/compact [FOCUS]` — summarise the older turns now; the summary stands
//! for them in the model's view (the conversation itself stays stored and
//! shown). The core runs the summarising call; the reply is the
//! `compacted` event, or a notice saying why nothing changed.

use super::syntax::SlashCommand;
use crate::protocol::ControlCommand;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "compact",
    usage: "/compact [FOCUS]",
    summary: "summarise older turns for the model now (FOCUS: what to keep above all)",
    parse: |args| {
        let focus = args.trim();
        Ok(ControlCommand::Compact {
            focus: (!focus.is_empty()).then(|| focus.to_string()),
        })
    },
};
