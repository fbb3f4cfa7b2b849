//! Events as text for people: streamed assistant text as it arrives, the
//! model's thinking before it on one short line (dimmed and italic, cut at
//! [`THINKING_SHOWN`] characters: a glimpse, not the answer), tool calls
//! on a line (their arguments in the model's order, the telling one first:
//! `path` for the file tools, `command` for bash) and results on a line or
//! two — an edit or a write as its diff ([`diff`](super::diff)) — notices
//! dimmed, errors in red, a compaction as a divider, the model's plan as
//! a checklist each time it changes, and how full the context is at the
//! end of each turn's result line.
//!
//! With colour on, a reply is Markdown rendered as it streams
//! ([`LiveReply`]): final blocks rendered, the unfinished rest plain below
//! them until it is final too. Anything else written meanwhile (a notice,
//! a line typed ahead) goes above that plain rest, which is drawn again
//! under it. With colour off the reply is written exactly as the model
//! wrote it.
//!
//! Used by the terminal chat (interactive and piped). Knows nothing about
//! keys or input; writes only to the writer it is given.

use super::Output;
use super::checklist;
use super::diff::{self, FileChange};
use super::markdown::MarkdownStream;
use super::markdown::styled::sanitize;
use super::reply::{LiveReply, ScreenSize};
use agentbus_engine::protocol::context::{Compacted, CompactionTrigger};
use agentbus_engine::protocol::plan::TODO_WRITE;
use agentbus_engine::protocol::system::SessionStarted;
use agentbus_engine::protocol::{
    AgentMessage, ContentBlock, ContextUsage, EventEnvelope, Plan, PlanStatus, StopReason,
    StreamDelta, SystemEvent, SystemSubtype, Usage,
};
use agentbus_engine::text::{count, ellipsize as cut};
use crossterm::style::Stylize;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;

/// Clears from the cursor to the end of the screen.
const ERASE_BELOW: &str = "\x1b[J";

/// How much of a message's thinking the transcript shows.
pub const THINKING_SHOWN: usize = 160;

/// How to render.
#[derive(Clone, Copy, Debug)]
pub struct RenderOptions {
    /// ANSI colours.
    pub color: bool,
    /// The terminal is in raw mode: lines end with `\r\n`.
    pub raw: bool,
    /// Echo `user` events (piped input is not on the screen otherwise).
    pub echo_user: bool,
}

/// Renders a session's events as text.
pub struct Renderer<W: Write> {
    out: W,
    pub options: RenderOptions,
    /// The text of the current assistant message streamed so far.
    streamed: String,
    /// Characters of the current message's thinking streamed so far (what
    /// is shown of them is cut at [`THINKING_SHOWN`]).
    thought: usize,
    /// The cursor is on the thinking line.
    in_thought: bool,
    /// The cursor is at the start of a line.
    at_line_start: bool,
    /// The reply streaming as Markdown (colour on), until its message.
    reply: Option<LiveReply>,
    /// The inputs of `write_file` calls waiting for their result (which
    /// shows the content written).
    calls: HashMap<String, Value>,
    /// The screen's size, when not the terminal's (tests).
    size: Option<ScreenSize>,
}

impl<W: Write> Renderer<W> {
    pub fn new(out: W, options: RenderOptions) -> Self {
        Renderer {
            out,
            options,
            streamed: String::new(),
            thought: 0,
            in_thought: false,
            at_line_start: true,
            reply: None,
            calls: HashMap::new(),
            size: None,
        }
    }

    /// Lay replies out for a screen of `size` rather than the terminal.
    #[cfg(test)]
    pub fn with_screen_size(mut self, size: ScreenSize) -> Self {
        self.size = Some(size);
        self
    }

    fn screen_size(&self) -> ScreenSize {
        self.size.unwrap_or_else(ScreenSize::of_terminal)
    }

    /// Where the renderer writes.
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Show one event.
    pub fn render(&mut self, event: &EventEnvelope) {
        let thinking = matches!(&event.message, AgentMessage::StreamEvent(s)
            if matches!(s.event, StreamDelta::ThinkingDelta { .. }));
        if self.in_thought && !thinking {
            // Whatever comes after the thinking starts on a line of its own.
            self.in_thought = false;
            self.end_line();
        }
        match &event.message {
            AgentMessage::System(s) => match s.subtype {
                SystemSubtype::SessionStarted => {
                    let started = s.payload::<SessionStarted>().unwrap_or_default();
                    let tools = count(started.tools.len() as u64, "tool");
                    let model = Some(started.model.as_str())
                        .filter(|m| !m.is_empty())
                        .unwrap_or("?");
                    let mode = started
                        .permission_mode
                        .map(|m| format!(" · mode {m}"))
                        .unwrap_or_default();
                    let agent = started
                        .agent
                        .as_deref()
                        .filter(|a| *a != "build")
                        .map(|a| format!(" · agent {a}"))
                        .unwrap_or_default();
                    let sandbox = match started.sandboxed {
                        Some(false) => " · commands NOT sandboxed",
                        _ => "",
                    };
                    let instructions = if started.instructions.is_empty() {
                        String::new()
                    } else {
                        format!(" · instructions {}", started.instructions.join(", "))
                    };
                    let line = format!(
                        "● session {}{agent} · model {model} · {tools}{mode}{sandbox}{instructions}",
                        event.session_id
                    );
                    self.line(&self.dim(&line));
                }
                SystemSubtype::Retrying
                | SystemSubtype::Notice
                | SystemSubtype::Compacting
                | SystemSubtype::McpServerStatus
                | SystemSubtype::McpWaiting
                | SystemSubtype::OwnerChanged
                | SystemSubtype::Attached => {
                    let text = self.dim(&super::wrap::to_terminal(&format!("● {}", s.message)));
                    self.line(&text);
                }
                SystemSubtype::Plan => self.plan(s),
                SystemSubtype::Compacted => {
                    let what = match s.payload::<Compacted>() {
                        Some(compacted) => compaction_summary(&compacted),
                        None => s.message.clone(),
                    };
                    let text = self.dim(&format!("── {what} ──"));
                    self.line(&text);
                }
                _ => {
                    let text = super::wrap::to_terminal(&s.message);
                    self.line(&text);
                }
            },
            AgentMessage::User(u) => {
                self.end_reply();
                self.streamed.clear();
                self.thought = 0;
                if self.options.echo_user {
                    let text = format!("> {}", u.text);
                    self.line(&self.bold(&text));
                }
            }
            AgentMessage::StreamEvent(s) => match &s.event {
                StreamDelta::TextDelta { text, .. } => {
                    self.streamed.push_str(text);
                    self.reply_text(text);
                }
                StreamDelta::ThinkingDelta { text, .. } => {
                    self.hide_reply();
                    self.think(text);
                }
                StreamDelta::Discard { reason } => {
                    self.end_reply();
                    self.streamed.clear();
                    self.thought = 0;
                    let text = self.dim(&format!("● partial output discarded ({reason})"));
                    self.line(&text);
                }
                _ => {}
            },
            AgentMessage::Assistant(a) => {
                // What did not stream (a replay without the deltas, or a
                // reconnect in the middle of them) is written now. When the
                // deltas shown are not the message's beginning (some in
                // between were missed), the whole message follows them.
                // Thinking that did not stream gets its short line.
                if self.thought == 0 {
                    self.hide_reply();
                    let thinking: String = a
                        .content
                        .iter()
                        .filter_map(ContentBlock::as_thinking)
                        .collect();
                    self.think(&thinking);
                    if self.in_thought {
                        self.in_thought = false;
                        self.end_line();
                    }
                }
                self.thought = 0;
                let text: String = a.content.iter().filter_map(ContentBlock::as_text).collect();
                match text.strip_prefix(self.streamed.as_str()) {
                    // Nothing streamed (a replay): rendered at once.
                    Some(rest) if self.reply.is_none() && self.streamed.is_empty() => {
                        self.whole_reply(rest);
                    }
                    Some(rest) => {
                        self.reply_text(rest);
                        self.end_reply();
                    }
                    None => {
                        self.end_reply();
                        self.end_line();
                        self.line(
                            &self.dim("(part of this reply did not arrive; the whole of it:)"),
                        );
                        self.whole_reply(&text);
                    }
                }
                self.end_line();
                self.streamed.clear();
                for block in &a.content {
                    if let ContentBlock::ToolUse { id, name, input } = block {
                        let text = format!("⏺ {name}({})", summarize_input(name, input));
                        self.line(&self.cyan(&text));
                        if name == "write_file" {
                            self.calls.insert(id.clone(), input.clone());
                        }
                    }
                }
                if a.interrupted {
                    self.line(&self.dim("(interrupted)"));
                }
            }
            // The plan's checklist (its `plan` event) stands for the
            // result: the model's confirmation is not repeated.
            AgentMessage::ToolResult(t) if t.name == TODO_WRITE && !t.is_error => {}
            AgentMessage::ToolResult(t) => {
                let input = self.calls.remove(&t.call_id);
                if !t.is_error
                    && let Some(change) = diff::file_change(&t.name, &t.output, input.as_ref())
                {
                    self.file_change(&change);
                    let _ = self.out.flush();
                    return;
                }
                let summary = summarize_output(&t.output);
                let text = format!("  ⎿ {summary}");
                let text = if t.is_error {
                    self.red(&text)
                } else {
                    self.dim(&text)
                };
                self.line(&text);
            }
            AgentMessage::ApprovalRequest(a) => {
                let text = format!("? {} needs approval: {}", a.name, a.reason);
                self.line(&self.yellow(&super::wrap::to_terminal(&text)));
                for line in crate::frontend::common::approval::describe(a) {
                    let line = if line.starts_with("  -") {
                        self.red(&line)
                    } else if line.starts_with("  +") {
                        self.green(&line)
                    } else {
                        line
                    };
                    self.line(&line);
                }
            }
            AgentMessage::Result(r) => {
                self.end_reply();
                self.end_line();
                // Text that streamed without its `assistant` event is in no
                // history: the node driving the turn died mid-reply.
                if !self.streamed.trim().is_empty() {
                    self.line(&self.dim(
                        "(the partial reply above was not kept: the turn ended before the model finished it)",
                    ));
                }
                self.streamed.clear();
                let seconds = r.duration_ms as f64 / 1000.0;
                // A `!command` calls no model.
                let mut usage = if r.steps == 0 && r.usage.all_input() == 0 {
                    format!("{seconds:.1} s")
                } else {
                    format!(
                        "{} step{} · {} in{} / {} out tokens · {seconds:.1} s",
                        r.steps,
                        if r.steps == 1 { "" } else { "s" },
                        r.usage.all_input(),
                        cached_share(&r.usage),
                        r.usage.output_tokens,
                    )
                };
                if let Some(context) = r.context.as_ref().and_then(context_fill) {
                    usage.push_str(&format!(" · {context}"));
                }
                let text = match r.stop_reason {
                    StopReason::EndTurn => self.dim(&format!("✓ {usage}")),
                    StopReason::Cancelled => self.yellow(&format!("⏹ interrupted · {usage}")),
                    StopReason::MaxSteps => {
                        self.yellow(&format!("⚠ stopped at max_steps · {usage}"))
                    }
                    StopReason::Error => self.red(&format!("✗ turn failed · {usage}")),
                };
                self.line(&text);
            }
            AgentMessage::Error(e) => {
                let text = format!("error: {}", e.message);
                self.line(&self.red(&text));
            }
        }
        let _ = self.out.flush();
    }

    /// More of the model's thinking: the first [`THINKING_SHOWN`]
    /// characters on one line after `✻`, dimmed and italic, then `…`.
    fn think(&mut self, text: &str) {
        let flat = text.replace(['\n', '\r', '\t'], " ");
        let flat = if self.thought == 0 {
            flat.trim_start()
        } else {
            flat.as_str()
        };
        if flat.is_empty() {
            return;
        }
        let room = THINKING_SHOWN.saturating_sub(self.thought);
        let before = self.thought;
        self.thought += flat.chars().count();
        if room == 0 {
            return; // its `…` is written already
        }
        if before == 0 {
            self.end_line();
            let mark = self.dim("✻ ");
            self.write(&mark);
            self.in_thought = true;
        }
        let shown: String = flat.chars().take(room).collect();
        let mut piece = self.thinking_style(&shown);
        if self.thought > THINKING_SHOWN {
            piece.push_str(&self.dim("…"));
        }
        self.write(&piece);
    }

    /// Write text as it streams (newlines converted in raw mode).
    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let text = if self.options.raw {
            text.replace('\n', "\r\n")
        } else {
            text.to_string()
        };
        let _ = self.out.write_all(text.as_bytes());
        // A reply's tail erased leaves the cursor at the start of a line.
        self.at_line_start = text.ends_with('\n') || text.ends_with(ERASE_BELOW);
    }

    /// More of the reply: as it came with colour off, else into the
    /// Markdown being rendered.
    fn reply_text(&mut self, text: &str) {
        if !self.options.color {
            self.write(text);
            return;
        }
        if self.reply.is_none() {
            self.end_line();
            self.reply = Some(LiveReply::new(self.screen_size()));
        }
        if let Some(reply) = self.reply.as_mut() {
            let out = reply.push(text);
            self.write(&out);
        }
    }

    /// The reply is complete: its last lines rendered.
    fn end_reply(&mut self) {
        if let Some(mut reply) = self.reply.take() {
            let out = reply.finish();
            self.write(&out);
        }
    }

    /// A whole reply at once (it did not stream).
    fn whole_reply(&mut self, text: &str) {
        if !self.options.color {
            self.write(text);
            return;
        }
        self.end_line();
        let layout = self.screen_size().layout();
        for line in MarkdownStream::render_all(text, layout) {
            self.write(&line);
            self.write("\n");
        }
    }

    /// Take a streaming reply's plain tail off the screen; whether a reply
    /// streams.
    fn hide_reply(&mut self) -> bool {
        let Some(reply) = self.reply.as_mut() else {
            return false;
        };
        let out = reply.hide();
        self.write(&out);
        true
    }

    fn show_reply(&mut self) {
        if let Some(reply) = self.reply.as_mut() {
            let out = reply.show();
            self.write(&out);
        }
    }

    /// An edit or a write as its diff, under the result's line.
    fn file_change(&mut self, change: &FileChange) {
        let summary = self.dim(&format!("  ⎿ {}", change.summary));
        self.line(&summary);
        let (rows, more) = diff::shown(&change.rows);
        for row in rows {
            let text = format!("    {}", sanitize(&row.signed()));
            let text = diff::styled(row.kind, &text, self.options.color);
            self.line(&text);
        }
        if more > 0 {
            let text = self.dim(&format!("    … {more} more lines"));
            self.line(&text);
        }
    }

    /// The model's plan, one line per item under its call
    /// ([`checklist`](super::checklist)): the item in progress bold, the
    /// completed ones dimmed.
    fn plan(&mut self, s: &SystemEvent) {
        let Some(plan) = s.payload::<Plan>() else {
            let text = self.dim(&format!("● {}", s.message));
            self.line(&text);
            return;
        };
        if plan.todos.is_empty() {
            let text = self.dim("  ⎿ (plan removed)");
            self.line(&text);
        }
        for (i, item) in plan.todos.iter().enumerate() {
            let text = checklist::line(item);
            let text = match item.status {
                PlanStatus::Pending => text,
                PlanStatus::InProgress => self.paint(&text, |s| s.bold().cyan()),
                PlanStatus::Completed => self.dim(&text),
            };
            let lead = if i == 0 { "  ⎿ " } else { "    " };
            self.line(&format!("{lead}{text}"));
        }
    }

    /// End the current line if something is on it.
    pub fn end_line(&mut self) {
        if !self.at_line_start {
            self.write("\n");
        }
    }

    /// A whole line of its own (above a streaming reply's plain tail,
    /// which is drawn again under it).
    pub fn line(&mut self, text: &str) {
        let streaming = self.hide_reply();
        self.end_line();
        self.write(text);
        self.write("\n");
        if streaming {
            self.show_reply();
        }
        let _ = self.out.flush();
    }

    /// A whole line of its own, dimmed.
    pub fn dim_line(&mut self, text: &str) {
        let text = self.dim(&super::wrap::to_terminal(text));
        self.line(&text);
    }

    /// `s` styled with `style` when colour is on, plain otherwise.
    fn paint(&self, s: &str, style: fn(&str) -> crossterm::style::StyledContent<&str>) -> String {
        if self.options.color {
            style(s).to_string()
        } else {
            s.to_string()
        }
    }
    fn dim(&self, s: &str) -> String {
        self.paint(s, |s| s.dark_grey())
    }
    fn thinking_style(&self, s: &str) -> String {
        self.paint(s, |s| s.dark_grey().italic())
    }
    fn bold(&self, s: &str) -> String {
        self.paint(s, |s| s.bold())
    }
    fn cyan(&self, s: &str) -> String {
        self.paint(s, |s| s.cyan())
    }
    fn red(&self, s: &str) -> String {
        self.paint(s, |s| s.red())
    }
    fn yellow(&self, s: &str) -> String {
        self.paint(s, |s| s.yellow())
    }
    fn green(&self, s: &str) -> String {
        self.paint(s, |s| s.green())
    }
}

/// `conversation compacted: ~12,345 → 2,345 tokens (auto)`: what a
/// `compacted` event did, on one line (the chat draws it as a divider, `run`
/// says it on stderr).
pub fn compaction_summary(compacted: &Compacted) -> String {
    let why = match compacted.trigger {
        CompactionTrigger::Auto => "auto",
        CompactionTrigger::Command => "/compact",
        CompactionTrigger::Overflow => "request too long",
    };
    format!(
        "conversation compacted: ~{} → {} tokens ({why})",
        thousands(compacted.tokens_before),
        thousands(compacted.tokens_after)
    )
}

/// ` (92% cached)`: the share of a turn's input the provider read from its
/// prompt cache, when it read any.
fn cached_share(usage: &Usage) -> String {
    match usage.cache_read_share() {
        Some(share) if usage.cache_read_input_tokens > 0 => {
            format!(" ({:.0}% cached)", share * 100.0)
        }
        _ => String::new(),
    }
}

/// `context 45% (1,800/4,000)`: how full the context is, when its limit is
/// known.
pub fn context_fill(context: &ContextUsage) -> Option<String> {
    let limit = context.limit.filter(|l| *l > 0)?;
    let percent = (context.used as f64 * 100.0 / limit as f64).round();
    Some(format!(
        "context {percent:.0}% ({}/{})",
        thousands(context.used),
        thousands(limit)
    ))
}

/// `12345` as `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The argument a built-in tool's call line starts with, whatever the
/// model's order.
fn telling_argument(tool: &str) -> Option<&'static str> {
    match tool {
        "read_file" | "edit_file" | "write_file" | "list_dir" => Some("path"),
        "bash" => Some("command"),
        "glob" | "grep" => Some("pattern"),
        _ => None,
    }
}

/// `key: value, ...` in the order the model wrote them (the telling
/// argument first), long values cut, for one line. An edit's strings and a
/// write's content are left out: its diff follows.
fn summarize_input(tool: &str, input: &Value) -> String {
    // The plan's checklist follows its call.
    if let Some(todos) = input.get("todos").and_then(Value::as_array)
        && tool == TODO_WRITE
    {
        return count(todos.len() as u64, "item");
    }
    let text = match input {
        Value::Object(map) => {
            let first = telling_argument(tool).filter(|k| map.contains_key(*k));
            let shown_later: &[&str] = match tool {
                "edit_file" => &["old_string", "new_string"],
                "write_file" => &["content"],
                _ => &[],
            };
            let keys = first.into_iter().chain(
                map.keys()
                    .map(String::as_str)
                    .filter(|k| Some(*k) != first && !shown_later.contains(k)),
            );
            let mut parts: Vec<String> = keys
                .map(|k| {
                    let v = match &map[k] {
                        Value::String(s) => format!("{:?}", first_line(s)),
                        other => other.to_string(),
                    };
                    format!("{k}: {v}")
                })
                .collect();
            if tool == "write_file"
                && let Some(content) = map.get("content").and_then(Value::as_str)
            {
                parts.push(format!("lines: {}", content.lines().count()));
            }
            parts.join(", ")
        }
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    cut(&text, 100)
}

/// The first lines of a tool's output, and how many more there are.
fn summarize_output(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    if lines.is_empty() {
        return "(no output)".into();
    }
    let shown: Vec<String> = lines.iter().take(3).map(|l| cut(l, 120)).collect();
    let mut text = shown.join("\n    ");
    if lines.len() > 3 {
        text.push_str(&format!(
            "\n    … +{}",
            count((lines.len() - 3) as u64, "line")
        ));
    }
    text
}

fn first_line(s: &str) -> String {
    match s.split_once('\n') {
        Some((first, _)) => format!("{first}…"),
        None => s.to_string(),
    }
}

/// The transcript as an [`Output`] (write failures to a terminal are
/// not worth stopping a chat for: the renderer ignores them).
impl<W: Write> Output for Renderer<W> {
    fn event(&mut self, event: &EventEnvelope) -> std::io::Result<()> {
        self.render(event);
        Ok(())
    }

    fn note(&mut self, text: &str) -> std::io::Result<()> {
        self.line(&self.yellow(text));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::context::ContextReport;
    use agentbus_engine::protocol::{
        AssistantEvent, ResultEvent, SessionId, StreamEvent, SystemEvent, ToolResultEvent, Usage,
    };

    fn env(message: AgentMessage) -> EventEnvelope {
        EventEnvelope {
            session_id: SessionId::from("s"),
            seq: 1,
            turn_id: Some(1),
            at: chrono::Utc::now(),
            message,
        }
    }

    fn render(events: Vec<AgentMessage>) -> String {
        let mut out = Vec::new();
        {
            let mut r = Renderer::new(
                &mut out,
                RenderOptions {
                    color: false,
                    raw: false,
                    echo_user: false,
                },
            );
            for e in events {
                r.render(&env(e));
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn streamed_text_is_not_printed_twice() {
        let out = render(vec![
            AgentMessage::StreamEvent(StreamEvent {
                event: StreamDelta::TextDelta {
                    index: 0,
                    text: "Hello".into(),
                },
            }),
            AgentMessage::Assistant(AssistantEvent {
                content: vec![ContentBlock::Text {
                    text: "Hello".into(),
                }],
                model: "m".into(),
                usage: Usage::default(),
                finish_reason: "end_turn".into(),
                interrupted: false,
                context: None,
            }),
        ]);
        assert_eq!(out, "Hello\n");
    }

    #[test]
    fn text_that_did_not_stream_is_written_with_the_whole_message() {
        let out = render(vec![
            AgentMessage::StreamEvent(StreamEvent {
                event: StreamDelta::TextDelta {
                    index: 0,
                    text: "Hel".into(),
                },
            }),
            // The rest of the deltas were missed (a reconnect after they
            // left the replay ring).
            AgentMessage::Assistant(AssistantEvent {
                content: vec![ContentBlock::Text {
                    text: "Hello world".into(),
                }],
                model: "m".into(),
                usage: Usage::default(),
                finish_reason: "end_turn".into(),
                interrupted: false,
                context: None,
            }),
        ]);
        assert_eq!(out, "Hello world\n");
    }

    #[test]
    fn a_reply_whose_middle_did_not_stream_is_written_whole() {
        let delta = |text: &str| {
            AgentMessage::StreamEvent(StreamEvent {
                event: StreamDelta::TextDelta {
                    index: 0,
                    text: text.into(),
                },
            })
        };
        let out = render(vec![
            delta("Hel"),
            // "lo wo" was missed.
            delta("rld"),
            AgentMessage::Assistant(AssistantEvent {
                content: vec![ContentBlock::Text {
                    text: "Hello world".into(),
                }],
                model: "m".into(),
                usage: Usage::default(),
                finish_reason: "end_turn".into(),
                interrupted: false,
                context: None,
            }),
        ]);
        assert_eq!(
            out,
            "Helrld\n(part of this reply did not arrive; the whole of it:)\nHello world\n"
        );
    }

    fn thinking_delta(text: &str) -> AgentMessage {
        AgentMessage::StreamEvent(StreamEvent {
            event: StreamDelta::ThinkingDelta {
                index: 0,
                text: text.into(),
            },
        })
    }

    fn thought_then(text: &str, thinking: &str) -> AgentMessage {
        AgentMessage::Assistant(AssistantEvent {
            content: vec![
                ContentBlock::Thinking {
                    thinking: thinking.into(),
                    signature: Some("sig".into()),
                },
                ContentBlock::Text { text: text.into() },
            ],
            model: "m".into(),
            usage: Usage::default(),
            finish_reason: "end_turn".into(),
            interrupted: false,
            context: None,
        })
    }

    #[test]
    fn thinking_streams_on_one_short_line_before_the_answer() {
        let long = "x".repeat(THINKING_SHOWN);
        let out = render(vec![
            thinking_delta("\nFirst, read\nthe file. "),
            thinking_delta(&long),
            thinking_delta("never shown"),
            AgentMessage::StreamEvent(StreamEvent {
                event: StreamDelta::TextDelta {
                    index: 1,
                    text: "Done.".into(),
                },
            }),
            thought_then(
                "Done.",
                &format!("First, read\nthe file. {long}never shown"),
            ),
        ]);
        let shown: String = format!("First, read the file. {long}")
            .chars()
            .take(THINKING_SHOWN)
            .collect();
        assert_eq!(out, format!("✻ {shown}…\nDone.\n"));
    }

    #[test]
    fn thinking_that_did_not_stream_is_shown_with_its_message() {
        let out = render(vec![thought_then("4", "2 + 2 is 4.")]);
        assert_eq!(out, "✻ 2 + 2 is 4.\n4\n");
    }

    #[test]
    fn thinking_is_dimmed_and_italic_in_colour() {
        let mut out = Vec::new();
        {
            let mut r = Renderer::new(
                &mut out,
                RenderOptions {
                    color: true,
                    raw: false,
                    echo_user: false,
                },
            );
            r.render(&env(thinking_delta("hm")));
        }
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(&"hm".dark_grey().italic().to_string()),
            "{out:?}"
        );
    }

    #[test]
    fn tool_calls_and_results_take_a_line_or_two() {
        let out = render(vec![
            AgentMessage::Assistant(AssistantEvent {
                content: vec![ContentBlock::ToolUse {
                    id: "c".into(),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "ls\nrm -rf"}),
                }],
                model: "m".into(),
                usage: Usage::default(),
                finish_reason: "tool_use".into(),
                interrupted: false,
                context: None,
            }),
            AgentMessage::ToolResult(ToolResultEvent {
                checkpoint: None,
                call_id: "c".into(),
                name: "bash".into(),
                is_error: false,
                output: "a\nb\nc\nd\ne".into(),
                duration_ms: 1,
                cancelled: false,
            }),
        ]);
        assert!(out.contains("⏺ bash(command: \"ls…\")"), "{out}");
        assert!(out.contains("  ⎿ a\n    b\n    c\n    … +2 lines"), "{out}");
    }

    fn call(id: &str, name: &str, input: Value) -> AgentMessage {
        AgentMessage::Assistant(AssistantEvent {
            content: vec![ContentBlock::ToolUse {
                id: id.into(),
                name: name.into(),
                input,
            }],
            model: "m".into(),
            usage: Usage::default(),
            finish_reason: "tool_use".into(),
            interrupted: false,
            context: None,
        })
    }

    fn tool_result(id: &str, name: &str, output: &str) -> AgentMessage {
        AgentMessage::ToolResult(ToolResultEvent {
            checkpoint: None,
            call_id: id.into(),
            name: name.into(),
            is_error: false,
            output: output.into(),
            duration_ms: 1,
            cancelled: false,
        })
    }

    #[test]
    fn call_lines_keep_the_models_order_with_the_telling_argument_first() {
        // serde_json keeps the keys in the order the model wrote them.
        let input: Value =
            serde_json::from_str(r#"{"timeout_secs": 5, "command": "make", "z": 1, "a": 2}"#)
                .unwrap();
        let out = render(vec![call("b", "bash", input)]);
        assert!(
            out.contains("⏺ bash(command: \"make\", timeout_secs: 5, z: 1, a: 2)"),
            "{out}"
        );
        let input: Value = serde_json::from_str(
            r#"{"old_string": "a", "new_string": "b", "path": "f.txt", "replace_all": true}"#,
        )
        .unwrap();
        let out = render(vec![call("e", "edit_file", input)]);
        assert!(
            out.contains("⏺ edit_file(path: \"f.txt\", replace_all: true)"),
            "{out}"
        );
        let input: Value =
            serde_json::from_str(r#"{"content": "x\ny\n", "path": "new.txt"}"#).unwrap();
        let out = render(vec![call("w", "write_file", input)]);
        assert!(
            out.contains("⏺ write_file(path: \"new.txt\", lines: 2)"),
            "{out}"
        );
        // Other tools: as written.
        let input: Value = serde_json::from_str(r#"{"z": 1, "a": 2}"#).unwrap();
        assert!(render(vec![call("m", "mcp__x__y", input)]).contains("(z: 1, a: 2)"));
    }

    const EDIT_OUTPUT: &str = "Edited notes.txt: 1 replacement.\n\n--- notes.txt\n+++ notes.txt\n@@ -1,3 +1,3 @@\n zero\n-one two three\n+one TWO three\n four\n";

    #[test]
    fn an_edit_result_is_its_diff() {
        let out = render(vec![
            call("e", "edit_file", serde_json::json!({"path": "notes.txt"})),
            tool_result("e", "edit_file", EDIT_OUTPUT),
        ]);
        assert!(
            out.ends_with(
                "  ⎿ Edited notes.txt: 1 replacement.\n    @@ -1,3 +1,3 @@\n     zero\n    -one two three\n    +one TWO three\n     four\n"
            ),
            "{out}"
        );
        let colored = render_colored(vec![tool_result("e", "edit_file", EDIT_OUTPUT)], SCREEN);
        assert!(
            colored.contains(&"    -one two three".red().to_string()),
            "{colored:?}"
        );
        assert!(
            colored.contains(&"    +one TWO three".green().to_string()),
            "{colored:?}"
        );
        assert!(
            colored.contains(&"    @@ -1,3 +1,3 @@".cyan().to_string()),
            "{colored:?}"
        );
    }

    #[test]
    fn a_long_edit_is_shown_whole_up_to_the_cap() {
        let mut output = String::from(
            "Edited big.txt: 1 replacement.\n\n--- big.txt\n+++ big.txt\n@@ -1,300 +1,300 @@\n",
        );
        for i in 0..300 {
            output.push_str(&format!("-old {i}\n+new {i}\n"));
        }
        let out = render(vec![tool_result("e", "edit_file", &output)]);
        assert!(out.contains("    -old 0\n    +new 0\n"), "{out}");
        assert!(out.contains("    -old 99\n    … 401 more lines\n"), "{out}");
        assert!(!out.contains("+6 lines"));
    }

    #[test]
    fn a_new_file_shows_what_was_written() {
        let out = render(vec![
            call(
                "w",
                "write_file",
                serde_json::json!({"path": "a.txt", "content": "alpha\nbeta\n"}),
            ),
            tool_result("w", "write_file", "Created a.txt (11 bytes)"),
        ]);
        assert!(
            out.ends_with(
                "  ⎿ Created a.txt (11 bytes)\n    @@ -0,0 +1,2 @@\n    +alpha\n    +beta\n"
            ),
            "{out}"
        );
    }

    const SCREEN: ScreenSize = ScreenSize {
        columns: 50,
        rows: 200,
    };

    fn render_colored(events: Vec<AgentMessage>, size: ScreenSize) -> String {
        let mut out = Vec::new();
        {
            let mut r = Renderer::new(
                &mut out,
                RenderOptions {
                    color: true,
                    raw: false,
                    echo_user: false,
                },
            )
            .with_screen_size(size);
            for e in events {
                r.render(&env(e));
            }
        }
        String::from_utf8(out).unwrap()
    }

    fn text_delta(text: &str) -> AgentMessage {
        AgentMessage::StreamEvent(StreamEvent {
            event: StreamDelta::TextDelta {
                index: 0,
                text: text.into(),
            },
        })
    }

    fn said(text: &str) -> AgentMessage {
        AgentMessage::Assistant(AssistantEvent {
            content: vec![ContentBlock::Text { text: text.into() }],
            model: "m".into(),
            usage: Usage::default(),
            finish_reason: "end_turn".into(),
            interrupted: false,
            context: None,
        })
    }

    /// What a terminal `columns` wide shows after `bytes`: its rows, each
    /// cell with the escape codes written after it (or, at the start of a
    /// row, before it). Knows what the renderer writes: text, `\n`, `\r`,
    /// SGR, cursor up, erase below; a character written past the last
    /// column wraps first.
    fn screen(bytes: &str, columns: usize) -> Vec<String> {
        let mut rows: Vec<Vec<String>> = vec![Vec::new()];
        let (mut row, mut col) = (0usize, 0usize);
        let mut codes = String::new();
        let mut chars = bytes.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\n' => {
                    row += 1;
                    col = 0;
                    if rows.len() <= row {
                        rows.push(Vec::new());
                    }
                }
                '\r' => col = 0,
                '\x1b' => {
                    assert_eq!(chars.next(), Some('['), "only CSI is written");
                    let mut params = String::new();
                    let fin = loop {
                        let c = chars.next().expect("a whole sequence");
                        if c.is_ascii_alphabetic() {
                            break c;
                        }
                        params.push(c);
                    };
                    match fin {
                        'm' if col > 0 => rows[row][col - 1].push_str(&format!("\x1b[{params}m")),
                        'm' => codes.push_str(&format!("\x1b[{params}m")),
                        'A' => row -= params.parse::<usize>().unwrap_or(1),
                        'J' => {
                            rows.truncate(row + 1);
                            rows[row].truncate(col);
                        }
                        other => panic!("unexpected sequence {other}"),
                    }
                }
                c => {
                    if col == columns {
                        row += 1;
                        col = 0;
                        if rows.len() <= row {
                            rows.push(Vec::new());
                        }
                    }
                    let cells = &mut rows[row];
                    cells.truncate(col);
                    cells.push(format!("{}{c}", std::mem::take(&mut codes)));
                    col += 1;
                }
            }
        }
        rows.into_iter().map(|cells| cells.concat()).collect()
    }

    /// The sample reply streamed in `chunks`, as the screen shows it.
    fn streamed_screen(chunks: &[&str], size: ScreenSize) -> Vec<String> {
        let mut events: Vec<AgentMessage> = chunks.iter().map(|c| text_delta(c)).collect();
        events.push(said(&chunks.concat()));
        screen(&render_colored(events, size), size.columns)
    }

    #[test]
    fn a_streamed_reply_ends_on_the_screen_as_if_it_came_at_once() {
        use crate::frontend::output::markdown::tests::SAMPLE;
        // ASCII but for the table's and list's own characters: one column each.
        let whole = streamed_screen(&[SAMPLE], SCREEN);
        assert!(whole.iter().any(|r| r.contains("\x1b[1;4m")), "{whole:#?}");
        for (at, _) in SAMPLE.char_indices().skip(1).step_by(3) {
            let (a, b) = SAMPLE.split_at(at);
            assert_eq!(streamed_screen(&[a, b], SCREEN), whole, "split at {at}");
        }
        let chars: Vec<String> = SAMPLE.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(streamed_screen(&refs, SCREEN), whole);
        // A screen too short for a whole block: the tail stops growing at
        // its last row, and the block still ends rendered.
        let short = ScreenSize {
            columns: 50,
            rows: 4,
        };
        assert_eq!(
            streamed_screen(&refs, short),
            streamed_screen(&[SAMPLE], short)
        );
    }

    #[test]
    fn a_line_written_during_a_reply_goes_above_its_unfinished_rest() {
        let mut out = Vec::new();
        {
            let mut r = Renderer::new(
                &mut out,
                RenderOptions {
                    color: true,
                    raw: false,
                    echo_user: false,
                },
            )
            .with_screen_size(SCREEN);
            r.render(&env(text_delta("# Done\n\nhalf a para")));
            r.dim_line("⏎ next: more");
            r.render(&env(text_delta("graph")));
            r.render(&env(said("# Done\n\nhalf a paragraph")));
        }
        let rows = screen(&String::from_utf8(out).unwrap(), SCREEN.columns);
        let plain: Vec<String> = rows
            .iter()
            .map(|r| crate::frontend::output::markdown::tests::plain(r))
            .collect();
        assert_eq!(plain, ["Done", "⏎ next: more", "", "half a paragraph", ""]);
    }

    #[test]
    fn without_colour_a_reply_is_the_models_text_exactly() {
        let text = "# Title\n\n**bold** and `code`\n\n```rust\nfn x() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |";
        let mut events: Vec<AgentMessage> = text
            .as_bytes()
            .chunks(5)
            .map(|c| text_delta(std::str::from_utf8(c).unwrap()))
            .collect();
        events.push(said(text));
        assert_eq!(render(events), format!("{text}\n"));
        // A reply that did not stream, too.
        assert_eq!(render(vec![said(text)]), format!("{text}\n"));
    }

    #[test]
    fn with_colour_a_reply_is_rendered_markdown() {
        let out = render_colored(
            vec![
                text_delta("# Title\n\n```rust\nfn x() {}\n```\n"),
                said("# Title\n\n```rust\nfn x() {}\n```\n"),
            ],
            SCREEN,
        );
        assert!(out.contains("\x1b[1;4mTitle\x1b[0m\n"), "{out:?}");
        assert!(!out.contains("# Title"), "{out:?}");
        assert!(
            out.contains("\x1b[38;5;"),
            "the code is highlighted: {out:?}"
        );
    }

    /// A `compacted` event as the wire has it.
    fn compacted(trigger: &str) -> SystemEvent {
        SystemEvent {
            subtype: SystemSubtype::Compacted,
            message: "Conversation compacted: about 12345 → 2345 tokens. ...".into(),
            data: Some(serde_json::json!({
                "trigger": trigger, "first_seq": 3, "last_seq": 40, "first_kept": 12,
                "summary": "The user asked for a parser; it is written.",
                "tokens_before": 12_345, "tokens_after": 2_345,
            })),
            by: None,
        }
    }

    #[test]
    fn a_compaction_is_a_divider_line() {
        let out = render(vec![
            AgentMessage::System(compacted("auto")),
            AgentMessage::System(compacted("command")),
            AgentMessage::System(compacted("overflow")),
        ]);
        assert_eq!(
            out,
            "── conversation compacted: ~12,345 → 2,345 tokens (auto) ──\n\
             ── conversation compacted: ~12,345 → 2,345 tokens (/compact) ──\n\
             ── conversation compacted: ~12,345 → 2,345 tokens (request too long) ──\n"
        );
    }

    #[test]
    fn a_compaction_without_its_data_shows_its_message() {
        let bare = SystemEvent::bare(SystemSubtype::Compacted, "Conversation compacted.");
        let out = render(vec![AgentMessage::System(bare)]);
        assert_eq!(out, "── Conversation compacted. ──\n");
    }

    #[test]
    fn the_wait_for_mcp_servers_is_a_notice_line() {
        use agentbus_engine::protocol::system::McpWaiting;
        let text = "Waiting up to 10 s for the MCP server `everything` to start, so that the model is offered its tools.";
        let waiting = McpWaiting {
            servers: vec!["everything".into()],
            max_wait_ms: 10_000,
        };
        let out = render(vec![AgentMessage::System(SystemEvent::new(text, &waiting))]);
        assert_eq!(out, format!("● {text}\n"));
    }

    #[test]
    fn the_context_report_is_shown_as_the_session_wrote_it() {
        let text = "Context: about 1800 tokens used (45%) of 4000 tokens.\n  system prompt          200\n  messages              1600";
        let report = SystemEvent::new(text, &ContextReport::default());
        let out = render(vec![AgentMessage::System(report)]);
        assert_eq!(out, format!("{text}\n"));
    }

    fn result(context: Option<ContextUsage>) -> AgentMessage {
        AgentMessage::Result(ResultEvent {
            stop_reason: StopReason::EndTurn,
            text: "done".into(),
            usage: Usage {
                input_tokens: 1_790,
                output_tokens: 10,
                ..Default::default()
            },
            steps: 1,
            duration_ms: 1_200,
            error: None,
            context,
        })
    }

    #[test]
    fn a_partial_reply_that_no_message_completes_is_said_not_kept() {
        let delta = AgentMessage::StreamEvent(StreamEvent {
            event: StreamDelta::TextDelta {
                index: 0,
                text: "tha".into(),
            },
        });
        let out = render(vec![delta, result(None)]);
        assert!(
            out.starts_with("tha\n(the partial reply above was not kept"),
            "{out}"
        );
        // A completed reply is not marked.
        let out = render(vec![result(None)]);
        assert!(!out.contains("not kept"), "{out}");
    }

    #[test]
    fn the_result_line_says_how_full_the_context_is() {
        let out = render(vec![
            result(Some(ContextUsage {
                used: 1_800,
                limit: Some(4_000),
            })),
            // Without a limit there is no share to show.
            result(Some(ContextUsage {
                used: 1_800,
                limit: None,
            })),
            result(None),
        ]);
        assert_eq!(
            out,
            "✓ 1 step · 1790 in / 10 out tokens · 1.2 s · context 45% (1,800/4,000)\n\
             ✓ 1 step · 1790 in / 10 out tokens · 1.2 s\n\
             ✓ 1 step · 1790 in / 10 out tokens · 1.2 s\n"
        );
    }

    #[test]
    fn the_result_line_counts_all_input_and_says_how_much_was_cached() {
        let mut cached = result(None);
        if let AgentMessage::Result(r) = &mut cached {
            r.usage.input_tokens = 100;
            r.usage.cache_read_input_tokens = 1_700;
            r.usage.cache_creation_input_tokens = 200;
        }
        assert_eq!(
            render(vec![cached]),
            "✓ 1 step · 2000 in (85% cached) / 10 out tokens · 1.2 s\n"
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(123_456_789), "123,456,789");
    }

    #[test]
    fn the_plan_is_a_checklist_under_its_call_and_its_result_is_not_repeated() {
        let todos = serde_json::json!({"todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
            {"content": "Run the tests", "status": "pending"}
        ]});
        let plan: agentbus_engine::protocol::Plan =
            serde_json::from_value(serde_json::json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress", "active_form": "Fixing the bug"},
                {"content": "Run the tests", "status": "pending"}
            ]}))
            .unwrap();
        let out = render(vec![
            call("p", TODO_WRITE, todos),
            AgentMessage::System(SystemEvent::new("Plan: 1 of 3 done.", &plan)),
            tool_result("p", TODO_WRITE, "Plan saved: 3 items."),
        ]);
        assert_eq!(
            out,
            "⏺ todo_write(3 items)\n  ⎿ ☑ Read the code\n    ◐ Fixing the bug\n    ☐ Run the tests\n"
        );
        let colored = render_colored(
            vec![AgentMessage::System(SystemEvent::new("Plan", &plan))],
            ScreenSize {
                columns: 80,
                rows: 24,
            },
        );
        assert!(
            colored.contains(&"◐ Fixing the bug".bold().cyan().to_string()),
            "{colored:?}"
        );
        assert!(
            colored.contains(&"☑ Read the code".dark_grey().to_string()),
            "{colored:?}"
        );
    }
}
