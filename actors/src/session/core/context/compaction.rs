//! Compaction: the model writes a summary of the older turns, which then
//! stands for them in the model's view (the history itself is untouched).
//!
//! The request is built so that it always fits: its input is the older
//! turns as one transcript, and when that is too long for the summarising
//! model, tool outputs are shortened first and then the oldest turns left
//! out, until it fits. It offers no tools, so the model can only write.

use super::view::turns;
use crate::model::{ModelRequest, ToolList};
use crate::protocol::context::CompactionTrigger;
use crate::protocol::{ContentBlock, InputId, Message, Usage};
use serde::Serialize;
use std::fmt::Write;

/// A summary standing for `history[..first_kept]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub first_kept: usize,
    pub text: String,
}

/// A compaction in progress (its model call is streaming).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactionCall {
    pub request_id: u64,
    /// The profile that writes the summary.
    pub profile: String,
    /// The turn or the `/compact` command it belongs to.
    pub input_id: InputId,
    pub trigger: CompactionTrigger,
    /// The summary will stand for `history[..first_kept]`.
    pub first_kept: usize,
    /// Where the previous summary ended (the span newly covered starts here).
    pub first_new: usize,
    pub tokens_before: u64,
    /// What `/compact` asked the summary to focus on.
    pub focus: Option<String>,
    /// Estimated tokens of the conversation the request quotes.
    pub quoted_tokens: u64,
    /// The provider refused it as too long once already; this is the
    /// shortened retry.
    pub shortened: bool,
    /// What streamed so far.
    pub text: String,
    pub usage: Usage,
}

/// Where a summary of `history[start..]` may end so that the last
/// `keep_turns` turns (at least the latest, with the latest request) stay
/// verbatim; `None` when there is nothing older to summarise.
pub fn span_end(history: &[Message], start: usize, keep_turns: usize) -> Option<usize> {
    let turns = turns(history, start);
    let keep = keep_turns.max(1);
    if turns.len() <= keep {
        return None;
    }
    Some(turns[turns.len() - keep].start)
}

/// Longest piece of one tool output the transcript quotes.
const TOOL_OUTPUT_QUOTE: usize = 2_000;

/// The request that asks for a summary of `history[from..to]` (and of the
/// previous summary), fitting `budget` tokens by the estimates in `costs`
/// (`costs[i]` is `history[from + i]`), with the estimate of what it
/// quotes.
#[allow(clippy::too_many_arguments)]
pub fn request(
    profile: String,
    prompt: &str,
    previous: Option<&str>,
    history: &[Message],
    (from, to): (usize, usize),
    costs: &[u64],
    budget: u64,
    focus: Option<&str>,
) -> (ModelRequest, u64) {
    let span = &history[from..to];
    let quote_tokens = (TOOL_OUTPUT_QUOTE / 3) as u64;
    // Tool outputs are quoted shortened; if still too long, the oldest
    // turns are left out.
    let cost = |i: usize| match &span[i] {
        Message::ToolResult { .. } => costs[i].min(quote_tokens),
        _ => costs[i],
    };
    let mut total: u64 = (0..span.len()).map(cost).sum();
    let mut first = 0;
    let span_turns = turns(span, 0);
    let mut omitted = 0;
    for turn in &span_turns {
        if total <= budget || turn.end == span.len() {
            break;
        }
        total -= turn.clone().map(cost).sum::<u64>();
        first = turn.end;
        omitted += 1;
    }
    let mut text = String::new();
    if let Some(previous) = previous {
        let _ = write!(
            text,
            "<previous-summary>\n{previous}\n</previous-summary>\n\n"
        );
    }
    text.push_str("<conversation>\n");
    if omitted > 0 {
        let _ = writeln!(
            text,
            "[{omitted} earlier turns left out: they did not fit the summarising request]"
        );
    }
    for message in &span[first..] {
        transcribe(&mut text, message);
    }
    text.push_str("</conversation>\n");
    if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
        let _ = write!(text, "\nFocus the summary on: {}\n", focus.trim());
    }
    text.push_str("\nWrite the summary now, following the instructions.");
    let request = ModelRequest {
        profile,
        cache_key: String::new(),
        max_output_tokens: None,
        system_prompt: prompt.to_string(),
        messages: vec![Message::user(text)],
        tools: ToolList::default(),
    };
    (request, total)
}

fn transcribe(out: &mut String, message: &Message) {
    match message {
        Message::User { text, .. } => {
            let _ = writeln!(out, "[user]\n{text}");
        }
        Message::Assistant { content, .. } => {
            for block in content {
                match block {
                    ContentBlock::Text { text } => {
                        let _ = writeln!(out, "[assistant]\n{text}");
                    }
                    ContentBlock::ToolUse { name, input, .. } => {
                        let _ = writeln!(out, "[assistant called {name}] {input}");
                    }
                    // The model's reasoning is not the conversation: the
                    // summary is of what was said and done.
                    ContentBlock::Thinking { .. }
                    | ContentBlock::RedactedThinking { .. }
                    | ContentBlock::ReasoningItem { .. } => {}
                }
            }
        }
        Message::ToolResult {
            name,
            output,
            is_error,
            ..
        } => {
            let label = if *is_error { "error" } else { "result" };
            let quoted = crate::text::ellipsize(output, TOOL_OUTPUT_QUOTE);
            let _ = writeln!(out, "[{name} {label}]\n{quoted}");
        }
    }
}

/// What the system prompt gets appended when a summary stands for the
/// older turns.
pub fn summary_block(summary: &str) -> String {
    format!(
        "\n\n# Summary of the conversation so far\n\nThe earlier part of this conversation was compacted into this summary; the messages after it are verbatim.\n\n{summary}"
    )
}
