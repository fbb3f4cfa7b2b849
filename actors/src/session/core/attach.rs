//! What a query takes along to the model, as Claude Code does it: each
//! `@path` mention attaches a file's contents (or a directory's listing),
//! and a query that starts with `!` is a command the user runs in the
//! workspace — its output goes into the conversation for the model to see
//! on the next turn, and no model call follows.
//!
//! A mention named like an image (`@shot.png`) attaches the image itself,
//! sent to the model as image content when the profile takes images (and
//! left out with a notice saying why when it does not).
//!
//! The reading and running is the tools' own — `read_file` (then
//! `list_dir`, for a directory), `read_image` and `bash`, asked for with
//! [`Effect::RunTools`](super::Effect::RunTools) like the model's calls and
//! answered with `Input::ToolFinished` — so the roots, the confinement of
//! file access, the sandbox and the output limits are the same. The query's
//! `user` event keeps the text as typed; the `attached` event that follows
//! carries what the model reads with it, and the fold
//! (`restore.rs`) rebuilds the history message from both with
//! [`model_text`].
//!
//! Consent: the user typed the path or the command, which answers what the
//! mode would ask (a read outside the workspace, any command) — as Claude
//! Code's bash mode (`!`) runs what the user typed without asking. Deny
//! rules still hold (a denied mention is left out with a notice, a denied
//! command does not run), and so does the sandbox: a command runs in it
//! (read-only in plan mode, refused in plan mode without one), never
//! outside. A mention that cannot be read is a notice and the query still
//! goes; a long file is cut where `read_file` cuts it, with a notice.
//!
//! Pure: parses text, decides grants and words messages.

use super::permission::policy::{self, Verdict};
use super::permission::{PermissionConfig, PermissionState};
use crate::model::{GrantedCall, ToolCall, ToolOutcome};
use crate::protocol::system::{Attachment, AttachmentKind, Attachments};
use crate::protocol::{Image, InputId, Message, SystemEvent};
use serde::Serialize;

/// What a query asks to take along.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The paths its `@` mentions name, in order, each once.
    Mentions(Vec<String>),
    /// It is a `!command`: this command.
    Command(String),
}

/// What `text` (a query as typed) asks to take along, if anything.
pub fn request(text: &str) -> Option<Request> {
    if let Some(command) = text.trim_start().strip_prefix('!') {
        let command = command.trim();
        return (!command.is_empty()).then(|| Request::Command(command.to_string()));
    }
    let paths = mentions(text);
    (!paths.is_empty()).then_some(Request::Mentions(paths))
}

/// The paths `@` mentions name in `text`: an `@` at the start or after
/// whitespace, then the path up to the next whitespace (or within double
/// quotes: `@"my notes.txt"`), without trailing punctuation (`@README.md,`
/// names `README.md`). An e-mail address is not a mention.
pub fn mentions(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    let mut previous = None::<char>;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let starts = c == '@' && previous.is_none_or(char::is_whitespace);
        previous = Some(c);
        if !starts {
            continue;
        }
        let rest = &text[at + 1..];
        let (path, used) = match rest.strip_prefix('"') {
            Some(quoted) => match quoted.find('"') {
                Some(end) => (quoted[..end].to_string(), end + 2),
                None => continue,
            },
            None => {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                (trim_punctuation(&rest[..end]).to_string(), end)
            }
        };
        // Skip what the mention took (its last character is `previous`).
        while chars.peek().is_some_and(|(i, _)| *i <= at + used) {
            previous = chars.next().map(|(_, c)| c);
        }
        if !path.is_empty() && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// `path` without the punctuation a sentence puts after it; `.` and `..`
/// (and paths ending in them) keep their dots.
fn trim_punctuation(path: &str) -> &str {
    let mut path = path.trim_end_matches([',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
    if let Some(rest) = path.strip_suffix('.')
        && !rest.is_empty()
        && !rest.ends_with(['.', '/'])
    {
        path = rest;
    }
    path
}

/// A turn's query whose attachments are being read or run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attaching {
    /// The tool batch reading or running them.
    pub batch_id: u64,
    /// The query's message in the history.
    pub message: usize,
    /// Each mention, or the one command, in order.
    pub items: Vec<Item>,
}

impl Attaching {
    /// The query is a `!command` (no model call follows).
    pub fn is_command(&self) -> bool {
        self.items
            .iter()
            .any(|item| item.kind == AttachmentKind::Command)
    }

    /// Every item has its outcome (or was refused).
    pub fn is_complete(&self) -> bool {
        self.items
            .iter()
            .all(|item| item.refused.is_some() || item.outcome.is_some())
    }
}

/// One mention or command.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Item {
    pub kind: AttachmentKind,
    /// The path as written, or the command.
    pub source: String,
    /// The path read (`~/` expanded), or the command.
    pub target: String,
    /// The call reading or running it.
    pub call_id: String,
    /// What it was granted (a directory is listed with the same grant).
    pub grant: crate::model::Grant,
    pub outcome: Option<ToolOutcome>,
    /// Why it is not read or run (a deny rule, plan mode).
    pub refused: Option<String>,
}

/// Where a query's attachments are read or run: the session's
/// permissions and workspace, the turn and its message in the history.
pub struct Query<'a> {
    pub config: &'a PermissionConfig,
    pub permissions: &'a PermissionState,
    pub workspace: &'a str,
    pub turn_id: InputId,
    /// The query's message in the history.
    pub message: usize,
    /// Why images cannot go with the query (the profile does not take
    /// them), if they cannot.
    pub no_images: Option<String>,
}

/// The calls (of tool batch `batch_id`) that read or run what `request`
/// asks for; what the rules refuse is noted in its item.
pub fn begin(query: Query<'_>, batch_id: u64, request: Request) -> (Attaching, Vec<GrantedCall>) {
    let Query {
        config,
        permissions,
        workspace,
        turn_id,
        message,
        no_images,
    } = query;
    let wanted: Vec<(AttachmentKind, String)> = match request {
        Request::Command(command) => vec![(AttachmentKind::Command, command)],
        Request::Mentions(paths) => paths
            .into_iter()
            .map(|path| {
                let kind = if path.ends_with('/') {
                    AttachmentKind::Directory
                } else if crate::images::looks_like_image(&path) {
                    AttachmentKind::Image
                } else {
                    AttachmentKind::File
                };
                (kind, path)
            })
            .collect(),
    };
    let mut items = Vec::new();
    let mut calls = Vec::new();
    let home = &config.home;
    for (index, (kind, source)) in wanted.into_iter().enumerate() {
        let target = match (kind, source.strip_prefix("~/")) {
            (AttachmentKind::Command, _) | (_, None) => source.clone(),
            (_, Some(rest)) => home.join(rest).display().to_string(),
        };
        let call = tool_call(format!("attach_{turn_id}_{index}"), kind, &target);
        // An image is read under the rules for reading its path.
        let ruled_as = match kind {
            AttachmentKind::Image => "read_file",
            _ => call.name.as_str(),
        };
        let verdict = policy::decide(
            config,
            permissions,
            std::path::Path::new(workspace),
            ruled_as,
            &call.input,
        );
        let (grant, refused) = match verdict {
            Verdict::Deny(why) => (Default::default(), Some(first_sentence(&why))),
            _ if kind == AttachmentKind::Image && no_images.is_some() => {
                (Default::default(), no_images.clone())
            }
            Verdict::Run(grant) => (grant, None),
            // Typed by the user: the answer to what the mode would ask.
            Verdict::Ask(asking) => (asking.grant, None),
        };
        if refused.is_none() {
            calls.push(GrantedCall {
                call: call.clone(),
                grant,
            });
        }
        items.push(Item {
            kind,
            source,
            target,
            call_id: call.id,
            grant,
            outcome: None,
            refused,
        });
    }
    let attaching = Attaching {
        batch_id,
        message,
        items,
    };
    (attaching, calls)
}

fn tool_call(id: String, kind: AttachmentKind, source: &str) -> ToolCall {
    let (name, input) = match kind {
        AttachmentKind::File => ("read_file", serde_json::json!({ "path": source })),
        AttachmentKind::Directory => ("list_dir", serde_json::json!({ "path": source })),
        AttachmentKind::Command => ("bash", serde_json::json!({ "command": source })),
        AttachmentKind::Image => (
            crate::model::READ_IMAGE,
            serde_json::json!({ "path": source }),
        ),
    };
    ToolCall {
        id,
        name: name.to_string(),
        input,
    }
}

/// Call `call_id` of `attaching` ended with `outcome`. A mention that
/// turned out to be a directory is listed instead: the call to make next.
pub fn finished(
    attaching: &mut Attaching,
    call_id: &str,
    outcome: ToolOutcome,
) -> Option<GrantedCall> {
    let item = attaching
        .items
        .iter_mut()
        .find(|item| item.call_id == call_id && item.outcome.is_none())?;
    if item.kind == AttachmentKind::File
        && outcome.is_error
        && outcome.output.contains(crate::model::NOT_A_FILE)
    {
        item.kind = AttachmentKind::Directory;
        item.call_id = format!("{call_id}_dir");
        return Some(GrantedCall {
            call: tool_call(item.call_id.clone(), item.kind, &item.target),
            grant: item.grant,
        });
    }
    item.outcome = Some(outcome);
    None
}

/// What the attaching came to.
#[derive(Debug, PartialEq)]
pub struct Concluded {
    /// What to tell the user: mentions left out, files cut short, a
    /// command that was not run.
    pub notices: Vec<String>,
    /// The `attached` event, when anything was attached.
    pub event: Option<SystemEvent>,
    /// The command could not run at all.
    pub refused_command: Option<String>,
}

/// Conclude `attaching`; an item still running was interrupted.
pub fn conclude(attaching: Attaching) -> Concluded {
    let mut notices = Vec::new();
    let mut items = Vec::new();
    let mut refused_command = None;
    for item in attaching.items {
        let command = item.kind == AttachmentKind::Command;
        if let Some(why) = item.refused {
            if command {
                notices.push(format!("`!{}` was not run: {why}", item.source));
                refused_command = Some(why);
            } else {
                notices.push(format!("@{} was not attached: {why}", item.source));
            }
            continue;
        }
        let outcome = item.outcome.unwrap_or_else(|| {
            ToolOutcome::error(format!("{} before it finished", crate::model::INTERRUPTED))
        });
        if command {
            items.push(Attachment {
                kind: item.kind,
                source: item.source,
                content: outcome.output,
                is_error: outcome.is_error,
                image: None,
            });
            continue;
        }
        if outcome.is_error {
            notices.push(format!(
                "@{} was not attached: {}",
                item.source,
                outcome.output.trim()
            ));
            continue;
        }
        if item.kind == AttachmentKind::Image {
            match serde_json::from_str::<Image>(&outcome.output) {
                Ok(image) => items.push(Attachment {
                    kind: item.kind,
                    source: item.source,
                    content: String::new(),
                    is_error: false,
                    image: Some(image),
                }),
                Err(_) => notices.push(format!(
                    "@{} was not attached: the image could not be read back",
                    item.source
                )),
            }
            continue;
        }
        if outcome.output.contains(crate::model::MORE_LINES_REMAIN) {
            notices.push(format!(
                "@{} is long: the model gets its beginning (what read_file shows at once) and can read on.",
                item.source
            ));
        }
        items.push(Attachment {
            kind: item.kind,
            source: item.source,
            content: outcome.output,
            is_error: false,
            image: None,
        });
    }
    let event = (!items.is_empty()).then(|| {
        let attachments = Attachments { items };
        SystemEvent::new(describe(&attachments), &attachments)
    });
    Concluded {
        notices,
        event,
        refused_command,
    }
}

/// The `attached` event's message: the command's output, or what was
/// attached.
fn describe(attachments: &Attachments) -> String {
    if let Some(command) = attachments
        .items
        .iter()
        .find(|a| a.kind == AttachmentKind::Command)
    {
        return format!("$ {}\n{}", command.source, command.content.trim_end());
    }
    let shown: Vec<String> = attachments
        .items
        .iter()
        .map(|a| match a.kind {
            AttachmentKind::Directory => {
                format!("{} (directory)", a.source)
            }
            AttachmentKind::Image => match &a.image {
                Some(image) => format!(
                    "{} ({}, {})",
                    a.source,
                    image.media_type,
                    size(crate::images::decoded_len(image))
                ),
                None => format!("{} (image)", a.source),
            },
            _ => format!(
                "{} ({})",
                a.source,
                count(a.content.lines().count(), "line")
            ),
        })
        .collect();
    format!("Attached {}.", shown.join(", "))
}

/// `812 bytes`, `14 KB`, `2.3 MB`.
fn size(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{} KB", bytes / 1_000),
        _ => format!("{:.1} MB", bytes as f64 / 1_000_000.0),
    }
}

/// `1 line`, `3 lines`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// What the model reads for a query typed as `typed` that took
/// `attachments` along: the text, then each attachment in a tagged block.
pub fn model_text(typed: &str, attachments: &Attachments) -> String {
    let mut text = typed.to_string();
    for a in &attachments.items {
        let block = match a.kind {
            AttachmentKind::File => format!(
                "<attached-file path=\"{}\">\n{}\n</attached-file>",
                a.source,
                a.content.trim_end()
            ),
            AttachmentKind::Directory => format!(
                "<attached-directory path=\"{}\">\n{}\n</attached-directory>",
                a.source,
                a.content.trim_end()
            ),
            AttachmentKind::Image => format!(
                "<attached-image path=\"{}\" /> (the image is attached to this message)",
                a.source
            ),
            AttachmentKind::Command => format!(
                "The user ran this command in the workspace themselves (with `!`); its output is here for you to see, no answer was asked for.\n<command>{}</command>\n<output{}>\n{}\n</output>",
                a.source,
                if a.is_error { " failed=\"true\"" } else { "" },
                a.content.trim_end()
            ),
        };
        text.push_str("\n\n");
        text.push_str(&block);
    }
    text
}

/// The query's `message` with what it took along: the text of
/// [`model_text`], and the images attached after any it came with.
pub fn join(message: &mut Message, attachments: &Attachments) {
    if let Message::User { text, images } = message {
        *text = model_text(text, attachments);
        images.extend(attachments.items.iter().filter_map(|a| a.image.clone()));
    }
}

/// The first sentence of a refusal written for the model (the advice
/// after it is the model's).
fn first_sentence(text: &str) -> String {
    match text.find(". ") {
        Some(end) => text[..=end].to_string(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_at_signs_after_whitespace_without_trailing_punctuation() {
        assert_eq!(
            mentions("@README.md summarise, and see @src/ and @docs/api.md."),
            ["README.md", "src/", "docs/api.md"]
        );
        assert_eq!(
            mentions("mail me at someone@example.com"),
            Vec::<String>::new()
        );
        assert_eq!(mentions("what is in @. and @.. (or @x)?"), [".", "..", "x"]);
        assert_eq!(mentions("read @\"my notes.txt\" please"), ["my notes.txt"]);
        assert_eq!(mentions("@a @a @ alone"), ["a"]);
        assert_eq!(mentions("@\"unclosed quote"), Vec::<String>::new());
    }

    #[test]
    fn a_query_starting_with_a_bang_is_a_command() {
        assert_eq!(
            request("  !ls -la "),
            Some(Request::Command("ls -la".into()))
        );
        assert_eq!(request("!"), None, "a bare ! is a plain query");
        assert_eq!(request("hello"), None);
        assert_eq!(
            request("look at @a.txt"),
            Some(Request::Mentions(vec!["a.txt".into()]))
        );
        assert_eq!(
            request("!cat @a.txt"),
            Some(Request::Command("cat @a.txt".into())),
            "a command's @ is the shell's"
        );
    }

    #[test]
    fn the_model_reads_the_text_then_each_attachment() {
        let attachments = Attachments {
            items: vec![
                Attachment {
                    kind: AttachmentKind::File,
                    source: "a.txt".into(),
                    content: "     1\thello\n".into(),
                    is_error: false,
                    image: None,
                },
                Attachment {
                    kind: AttachmentKind::Directory,
                    source: "src/".into(),
                    content: "main.rs (10 bytes)\n".into(),
                    is_error: false,
                    image: None,
                },
            ],
        };
        assert_eq!(
            model_text("see @a.txt and @src/", &attachments),
            "see @a.txt and @src/\n\n<attached-file path=\"a.txt\">\n     1\thello\n</attached-file>\n\n<attached-directory path=\"src/\">\nmain.rs (10 bytes)\n</attached-directory>"
        );
        assert_eq!(
            describe(&attachments),
            "Attached a.txt (1 line), src/ (directory)."
        );
    }
}
