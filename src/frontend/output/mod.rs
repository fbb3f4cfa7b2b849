//! How a front end shows a session's events: one [`Output`] trait, written
//! for people or for programs.
//!
//! - [`render`]: [`Renderer`](render::Renderer), events as text for people
//!   (streamed replies, a line or two per tool call, an edit as its diff,
//!   notices dimmed) — the chat's transcript.
//! - [`answer`]: [`Answer`](answer::Answer), what `agentbus run` prints
//!   without `--json`: the final text on stdout (rendered as Markdown on a
//!   terminal, exactly as written otherwise); retries, failures and what
//!   the turn says on the way (a compaction) on stderr.
//! - [`markdown`]: replies as Markdown for the terminal, streamed block by
//!   block; [`reply`]: a streaming reply on the screen (its unfinished rest
//!   plain, replaced once final); [`diff`]: an edit or a write as a diff.
//! - [`checklist`]: the model's plan (`todo_write`) as checklist lines.
//! - [`json`]: [`JsonLines`](json::JsonLines), every event as one JSON
//!   object per line (`--json`), the same envelope the HTTP API sends.
//! - [`wrap`]: command replies broken at words to the terminal's width
//!   (not at all when the output is not a terminal).
//!
//! Front ends pick an output once and then never ask which one it is.

pub mod answer;
pub mod checklist;
pub mod diff;
pub mod json;
pub mod markdown;
pub mod render;
pub mod reply;
pub mod wrap;

use super::common::input_ends::InputEnd;
use agentbus_engine::protocol::EventEnvelope;

/// Where a front end's events go.
pub trait Output {
    /// Show one event.
    fn event(&mut self, event: &EventEnvelope) -> std::io::Result<()>;

    /// The input the front end waited for has ended as `end` (a one-shot
    /// run shows its answer here).
    fn ended(&mut self, _end: &InputEnd) -> std::io::Result<()> {
        Ok(())
    }

    /// A line of the front end's own (how to answer an approval request):
    /// shown to people, left out of JSON lines, which hold events only.
    fn note(&mut self, _text: &str) -> std::io::Result<()> {
        Ok(())
    }
}
