//! Events as text for people: streamed assistant text as it arrives, the
//! model's thinking before it on one short line (dimmed and italic, cut at
//! [`THINKING_SHOWN`] characters: a glimpse, not the answer), tool calls
//! and results on a line or two each, notices dimmed, errors in red, a
//! compaction as a divider, and how full the context is at the end of each
//! turn's result line.
//!
//! Used by the terminal chat (interactive and piped). Knows nothing about
//! keys or input; writes only to the writer it is given.

use super::Output;
use agentbus_actors::protocol::context::{Compacted, CompactionTrigger};
use agentbus_actors::protocol::system::SessionStarted;
use agentbus_actors::protocol::{
    AgentMessage, ContentBlock, ContextUsage, EventEnvelope, StopReason, StreamDelta, SystemSubtype,
};
use agentbus_actors::text::{count, ellipsize as cut};
use crossterm::style::Stylize;
use serde_json::Value;
use std::io::Write;

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
        }
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
                | SystemSubtype::Attached => {
                    let text = self.dim(&format!("● {}", s.message));
                    self.line(&text);
                }
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
                    self.write(text);
                }
                StreamDelta::ThinkingDelta { text, .. } => self.think(text),
                StreamDelta::Discard { reason } => {
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
                    Some(rest) => self.write(rest),
                    None => {
                        self.end_line();
                        self.line(
                            &self.dim("(part of this reply did not arrive; the whole of it:)"),
                        );
                        self.write(&text);
                    }
                }
                self.end_line();
                self.streamed.clear();
                for block in &a.content {
                    if let ContentBlock::ToolUse { name, input, .. } = block {
                        let text = format!("⏺ {name}({})", summarize_input(input));
                        self.line(&self.cyan(&text));
                    }
                }
                if a.interrupted {
                    self.line(&self.dim("(interrupted)"));
                }
            }
            AgentMessage::ToolResult(t) => {
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
                self.line(&self.yellow(&text));
                for line in crate::frontend::approval::describe(a) {
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
                self.end_line();
                let seconds = r.duration_ms as f64 / 1000.0;
                // A `!command` calls no model.
                let mut usage = if r.steps == 0 && r.usage.input_tokens == 0 {
                    format!("{seconds:.1} s")
                } else {
                    format!(
                        "{} step{} · {} in / {} out tokens · {seconds:.1} s",
                        r.steps,
                        if r.steps == 1 { "" } else { "s" },
                        r.usage.input_tokens,
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
        self.at_line_start = text.ends_with('\n');
    }

    /// End the current line if something is on it.
    pub fn end_line(&mut self) {
        if !self.at_line_start {
            self.write("\n");
        }
    }

    /// A whole line of its own.
    pub fn line(&mut self, text: &str) {
        self.end_line();
        self.write(text);
        self.write("\n");
        let _ = self.out.flush();
    }

    /// A whole line of its own, dimmed.
    pub fn dim_line(&mut self, text: &str) {
        let text = self.dim(text);
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

/// `key: value, ...` with long values cut, for one line.
fn summarize_input(input: &Value) -> String {
    let text = match input {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => format!("{:?}", first_line(s)),
                    other => other.to_string(),
                };
                format!("{k}: {v}")
            })
            .collect::<Vec<_>>()
            .join(", "),
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
    use agentbus_actors::protocol::context::ContextReport;
    use agentbus_actors::protocol::{
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
        use agentbus_actors::protocol::system::McpWaiting;
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
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(123_456_789), "123,456,789");
    }
}
