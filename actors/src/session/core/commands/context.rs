//! `/context` — where the context budget of the next request goes: system
//! prompt, instructions (and the files they came from), how many skills
//! the system prompt lists, tool definitions,
//! messages, the model's thinking sent back (when there is any), tool
//! outputs, and what is free; then, once the provider reported any, how
//! much of the input it read from its prompt cache.

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::{ControlCommand, SystemEvent};
use crate::session::core::SessionState;
use crate::session::core::context;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "context",
    usage: "/context",
    summary: "show how full the context window is, and with what",
    parse: |args| no_arguments("context", args, ControlCommand::Context),
};

pub fn apply(state: &mut SessionState) -> SystemEvent {
    let report = context::report(state);
    let share = |n: u64| match report.limit {
        Some(limit) if limit > 0 => format!(" ({:.0}%)", n as f64 * 100.0 / limit as f64),
        _ => String::new(),
    };
    let limit = match (report.limit, report.learnt_limit) {
        (Some(limit), Some(learnt)) if learnt == limit => {
            format!("{limit} tokens (as the provider said when it refused a longer request)")
        }
        (Some(limit), _) => format!("{limit} tokens"),
        (None, _) => {
            "unknown (set `context_window` on the profile or `[context] max_tokens`)".into()
        }
    };
    let mut text = format!(
        "Context: about {} tokens used{} of {limit}.\n  system prompt     {:>8}",
        report.used,
        share(report.used),
        report.system_prompt,
    );
    if !report.instruction_files.is_empty() {
        text.push_str(&format!("\n  instructions      {:>8}", report.instructions));
        for file in &report.instruction_files {
            let cut = if file.truncated {
                ", cut at the cap"
            } else {
                ""
            };
            text.push_str(&format!(
                "\n    {} ({} tokens{cut})",
                file.path, file.tokens
            ));
        }
    }
    let skills = &state.config.skills;
    if !skills.is_empty() {
        text.push_str(&format!(
            "\n  skills listed: {} of {} (names and descriptions, in the system prompt)",
            skills.listed(),
            skills.skills.len()
        ));
        if let Some(line) = skills.left_out_line() {
            text.push_str(&format!("\n    {line}"));
        }
    }
    text.push_str(&format!(
        "\n  tool definitions  {:>8}\n  messages          {:>8}",
        report.tool_definitions, report.messages,
    ));
    if report.thinking > 0 {
        text.push_str(&format!("\n  thinking          {:>8}", report.thinking));
    }
    text.push_str(&format!("\n  tool outputs      {:>8}", report.tool_outputs));
    if let Some(free) = report.free {
        text.push_str(&format!("\n  free              {free:>8}"));
    }
    if report.safety_margin > 0 {
        text.push_str(&format!(
            "\n  of which held back {:>7} (safety margin: tokenizers differ)",
            report.safety_margin.min(report.free.unwrap_or(0))
        ));
    }
    text.push_str(&format!(
        "\nStrategy {}; the model sees {} of {}",
        report.strategy,
        report.sent_messages,
        crate::text::count(report.history_messages as u64, "message")
    ));
    if report.elided_tool_outputs > 0 {
        text.push_str(&format!(
            " ({} as one-line markers)",
            crate::text::count(report.elided_tool_outputs as u64, "older tool output")
        ));
    }
    if report.compactions > 0 {
        text.push_str(&format!("; {} compaction(s) so far", report.compactions));
    }
    text.push('.');
    if let Some(cache) = &report.cache {
        text.push_str(&format!(
            "\nPrompt cache: {:.0}% of the last turn's input read from it ({:.0}% over the session: {} tokens read, {} written).",
            cache.last_turn * 100.0,
            cache.session * 100.0,
            cache.read_tokens,
            cache.written_tokens,
        ));
    }
    for warning in &report.warnings {
        text.push_str(&format!("\n{warning}"));
    }
    SystemEvent::new(text, &report)
}
