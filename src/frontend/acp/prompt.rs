//! A `session/prompt` as our input, and how its input ended as a
//! `stopReason`.
//!
//! - The prompt's content blocks become one query text: text as it is, a
//!   file mention as `@path`, embedded context (a file's or a selection's
//!   text, `embeddedContext`) appended in a `<context>` block naming where
//!   it came from. Images and audio are not offered (the capabilities say
//!   so); a client that sends them anyway gets a note in their place.
//! - A turn's end: `end_turn`; `max_turn_requests` when the turn used its
//!   `max_steps` model calls; `max_tokens` when the reply was cut at the
//!   output limit; `refusal` when the provider refused; `cancelled` after an
//!   interrupt — never an error; a failed turn is an error answer with its
//!   reason.
//! - Slash commands that would move the front end to another session
//!   (`/new`, `/resume`, `/fork`, `/load`) and `/quit` are not run: an
//!   editor owns its sessions (its own "new session" does that).
//! - `/rewind` alone lists the turns with what each changed; `/rewind SEQ`
//!   takes back the files alone (mode `code`: the editor owns the
//!   conversation list, so the session it shows stays). Naming the mode
//!   (`/rewind SEQ both` or `conversation`) runs it as asked: the fork
//!   before the turn is made, the editor stays in this session, and the
//!   answer names the fork and says to open it from the editor's list of
//!   sessions (`updates.rs`). `/undo` runs as everywhere. The files are
//!   written on disk, not through the editor's buffers.
//!
//! Pure.

use crate::frontend::common::input_ends::InputEnd;
use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, StopReason as AcpStop,
};
use agentbus_engine::protocol::ControlCommand;
use agentbus_engine::protocol::StopReason;
use agentbus_engine::protocol::checkpoint::RewindMode;

/// The query text of a prompt.
pub fn text_of(blocks: &[ContentBlock]) -> String {
    let mut text = String::new();
    let mut context = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                text.push_str(&format!("@{}", path_of(&link.uri)));
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => {
                    let path = path_of(&resource.uri);
                    text.push_str(&format!("@{path}"));
                    context.push_str(&format!(
                        "\n<context ref=\"{}\">\n{}\n</context>",
                        resource.uri,
                        resource.text.trim_end_matches('\n')
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(resource) => {
                    text.push_str(&format!(
                        "@{} (binary content, not shown)",
                        path_of(&resource.uri)
                    ));
                }
                _ => text.push_str("[an attachment of a kind agentbus does not read]"),
            },
            ContentBlock::Image(_) => text.push_str("[an image: agentbus does not read images]"),
            ContentBlock::Audio(_) => text.push_str("[audio: agentbus does not read audio]"),
            _ => text.push_str("[content of a kind agentbus does not read]"),
        }
    }
    if !context.is_empty() {
        text.push('\n');
        text.push_str(&context);
    }
    text
}

/// A `file://` URI as a path; anything else as it is.
fn path_of(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

/// The slash commands an editor does not run: they would move the front
/// end to another session, or end it.
pub const NOT_IN_EDITOR: [&str; 5] = ["new", "resume", "fork", "load", "quit"];

/// Why a slash command is not run in an editor, or `None` when it runs.
pub fn refused_command(text: &str) -> Option<String> {
    let Some(Ok(command)) = agentbus_engine::runtime::parse_command(text) else {
        return None;
    };
    if NOT_IN_EDITOR.contains(&command.name()) {
        return Some(format!(
            "/{} is not available in an editor: the editor owns its sessions (start or pick \
             one there).",
            command.name()
        ));
    }
    None
}

/// The command a prompt is sent as instead of its text, when an editor
/// runs it otherwise: `/rewind SEQ` without a mode rewinds the code alone.
pub fn as_command(text: &str) -> Option<ControlCommand> {
    let Some(Ok(ControlCommand::Rewind {
        seq: Some(seq),
        mode: None,
        overwrite,
    })) = agentbus_engine::runtime::parse_command(text)
    else {
        return None;
    };
    Some(ControlCommand::Rewind {
        seq: Some(seq),
        mode: Some(RewindMode::Code),
        overwrite,
    })
}

/// How a prompt answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Stop(AcpStop),
    /// The turn failed: an error answer with this message.
    Failed(String),
}

/// The answer to a prompt whose input ended as `end`; `finish` is how the
/// turn's last reply finished, in the provider's words.
pub fn answer(end: &InputEnd, finish: Option<&str>) -> Answer {
    let result = match end {
        // A command was answered (its reply is shown).
        InputEnd::Reply(_) => return Answer::Stop(AcpStop::EndTurn),
        InputEnd::Result(result) => result,
    };
    match result.stop_reason {
        StopReason::Cancelled => Answer::Stop(AcpStop::Cancelled),
        StopReason::MaxSteps => Answer::Stop(AcpStop::MaxTurnRequests),
        StopReason::Error => Answer::Failed(
            result
                .error
                .clone()
                .unwrap_or_else(|| "the turn failed".to_string()),
        ),
        StopReason::EndTurn => Answer::Stop(match finish {
            Some("refusal" | "content_filter") => AcpStop::Refusal,
            Some("max_tokens" | "length") => AcpStop::MaxTokens,
            _ => AcpStop::EndTurn,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ResourceLink, TextContent, TextResourceContents,
    };
    use agentbus_engine::protocol::{ResultEvent, SystemEvent, SystemSubtype};

    #[test]
    fn text_mentions_and_embedded_context_make_one_query() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("compare ")),
            ContentBlock::ResourceLink(ResourceLink::new("a.rs", "file:///ws/a.rs")),
            ContentBlock::Text(TextContent::new(" with ")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn b() {}\n",
                    "file:///ws/b.rs",
                )),
            )),
        ];
        assert_eq!(
            text_of(&blocks),
            "compare @/ws/a.rs with @/ws/b.rs\n\n<context ref=\"file:///ws/b.rs\">\nfn b() {}\n</context>"
        );
    }

    fn result(stop_reason: StopReason, error: Option<&str>) -> InputEnd {
        InputEnd::Result(ResultEvent {
            stop_reason,
            text: String::new(),
            usage: Default::default(),
            steps: 1,
            duration_ms: 1,
            error: error.map(str::to_string),
            context: None,
        })
    }

    #[test]
    fn every_end_of_a_turn_has_its_stop_reason() {
        let stop = |end: &InputEnd, finish| answer(end, finish);
        assert_eq!(
            stop(&result(StopReason::EndTurn, None), Some("stop")),
            Answer::Stop(AcpStop::EndTurn)
        );
        assert_eq!(
            stop(&result(StopReason::Cancelled, None), Some("interrupted")),
            Answer::Stop(AcpStop::Cancelled)
        );
        assert_eq!(
            stop(&result(StopReason::MaxSteps, None), Some("tool_use")),
            Answer::Stop(AcpStop::MaxTurnRequests)
        );
        assert_eq!(
            stop(&result(StopReason::EndTurn, None), Some("refusal")),
            Answer::Stop(AcpStop::Refusal)
        );
        assert_eq!(
            stop(&result(StopReason::EndTurn, None), Some("length")),
            Answer::Stop(AcpStop::MaxTokens)
        );
        assert_eq!(
            stop(&result(StopReason::Error, Some("provider down")), None),
            Answer::Failed("provider down".into())
        );
        let reply = InputEnd::Reply(SystemEvent::bare(SystemSubtype::Usage, "12 tokens"));
        assert_eq!(stop(&reply, None), Answer::Stop(AcpStop::EndTurn));
    }

    #[test]
    fn a_rewind_to_a_turn_takes_back_the_code_alone_unless_told_otherwise() {
        let code = |seq, overwrite| {
            Some(ControlCommand::Rewind {
                seq: Some(seq),
                mode: Some(RewindMode::Code),
                overwrite,
            })
        };
        assert_eq!(as_command("/rewind 12"), code(12, false));
        assert_eq!(as_command("/rewind 12 --force"), code(12, true));
        for as_typed in [
            "/rewind",
            "/rewind 12 both",
            "/rewind 12 conversation --force",
            "/rewind 12 code",
            "/rewind twelve",
            "/undo",
            "rewind 12",
        ] {
            assert_eq!(as_command(as_typed), None, "{as_typed}");
        }
        assert_eq!(refused_command("/rewind 12 both"), None);
    }

    #[test]
    fn commands_that_switch_sessions_are_refused_and_others_run() {
        for refused in ["/new", "/resume abc", "/fork", "/load x.json", "/quit"] {
            let why = refused_command(refused).unwrap_or_else(|| panic!("{refused} runs"));
            assert!(why.contains("editor"), "{why}");
        }
        for runs in [
            "/help",
            "/mode plan",
            "/usage",
            "hello",
            "/etc/hosts is odd",
        ] {
            assert_eq!(refused_command(runs), None, "{runs}");
        }
    }
}
