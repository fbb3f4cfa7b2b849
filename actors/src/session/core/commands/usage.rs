//! `/usage` — tokens spent in this session and in the last turn: input
//! (uncached) and output, the prompt cache's reads and writes with the
//! share of the input read from it, and the cost (cache reads and writes at
//! their own prices).

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::system::UsageReport;
use crate::protocol::{ContextUsage, ControlCommand, SystemEvent, Usage};
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "usage",
    usage: "/usage",
    summary: "tokens used in this session",
    parse: |args| no_arguments("usage", args, ControlCommand::Usage),
};

fn describe(u: &Usage) -> String {
    let mut s = format!(
        "{} input + {} output tokens",
        u.input_tokens, u.output_tokens
    );
    if u.cache_read_input_tokens > 0 || u.cache_creation_input_tokens > 0 {
        s.push_str(&format!(
            " (cache: {} read, {} written; {:.0}% of the input read from the cache)",
            u.cache_read_input_tokens,
            u.cache_creation_input_tokens,
            u.cache_read_share().unwrap_or(0.0) * 100.0
        ));
    }
    s
}

pub fn apply(state: &SessionState) -> SystemEvent {
    let u = &state.usage;
    let cost = match u.cost_usd {
        Some(usd) => format!("\nCost: ${usd:.4} (turns on profiles with prices)."),
        None => "\nCost: unknown (no prices configured for the profiles used).".to_string(),
    };
    let report = UsageReport {
        session: u.total,
        last_turn: u.last_turn,
        model_calls: u.model_calls,
        turns: u.turns,
        cost_usd: u.cost_usd,
        context: state.context.last,
    };
    let context = match state.context.last {
        Some(ContextUsage {
            used,
            limit: Some(limit),
        }) if limit > 0 => format!(
            "\nContext: {used} of {limit} tokens ({:.0}%); /context shows the breakdown.",
            used as f64 * 100.0 / limit as f64
        ),
        Some(ContextUsage { used, limit: _ }) => {
            format!("\nContext: {used} tokens (no limit known); /context shows the breakdown.")
        }
        None => String::new(),
    };
    SystemEvent::new(
        format!(
            "Session: {} over {} in {}.\nLast turn: {}.{cost}{context}",
            describe(&u.total),
            crate::text::count(u.model_calls, "model call"),
            crate::text::count(u.turns, "turn"),
            describe(&u.last_turn)
        ),
        &report,
    )
}
