//! What Tab completes at the chat's prompt: slash commands, their arguments
//! (model profiles for `/model`, agents for `/agent`, permission modes for
//! `/mode`, this workspace's sessions for `/resume`), and paths after `@`
//! (relative to the workspace; directories end with `/`).
//!
//! The arguments come from [`Choices`], which the chat refreshes between
//! inputs (the completer runs inside the line editor and must not wait for
//! a server); paths are read from the disk as Tab is pressed.

use agentbus_engine::protocol::PermissionMode;
use agentbus_engine::runtime::COMMANDS;
use reedline::{Completer, Span, Suggestion};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// At most this many paths are offered at once.
const MAX_PATHS: usize = 200;

/// What the arguments of slash commands can be.
#[derive(Clone, Debug, Default)]
pub struct Choices {
    /// Model profile names.
    pub models: Vec<String>,
    /// Agent names, with their descriptions.
    pub agents: Vec<(String, Option<String>)>,
    /// This workspace's stored sessions, most recent first: id and how the
    /// menu describes it (title, age).
    pub sessions: Vec<(String, String)>,
    /// Where `@` paths start from.
    pub workspace: PathBuf,
    /// The session's custom commands (its `session_started` lists them):
    /// name and description.
    pub custom: Vec<(String, String)>,
}

/// The chat's completer; `choices` is shared with the chat, which keeps it
/// up to date.
pub struct ChatCompleter {
    pub choices: Arc<Mutex<Choices>>,
}

impl Completer for ChatCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let pos = floor_boundary(line, pos);
        let typed = &line[..pos];
        let choices = self.choices.lock().map(|c| c.clone()).unwrap_or_default();
        if let Some(rest) = typed.strip_prefix('/') {
            return match rest.find(char::is_whitespace) {
                None => commands(typed, &choices.custom),
                Some(end) => arguments(&rest[..end], &rest[end..], pos, &choices),
            };
        }
        let word_start = typed
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        match typed[word_start..].strip_prefix('@') {
            Some(partial) => paths(&choices.workspace, partial, word_start, pos),
            None => Vec::new(),
        }
    }
}

fn floor_boundary(line: &str, pos: usize) -> usize {
    let mut pos = pos.min(line.len());
    while !line.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

/// `/co` → the commands starting so: the built-in ones, then the
/// session's custom ones.
fn commands(typed: &str, custom: &[(String, String)]) -> Vec<Suggestion> {
    let built_in = COMMANDS.iter().map(|c| (c.name, c.summary));
    let custom = custom.iter().map(|(n, d)| (n.as_str(), d.as_str()));
    built_in
        .chain(custom)
        .filter(|(name, _)| format!("/{name}").starts_with(typed))
        .map(|(name, summary)| Suggestion {
            value: format!("/{name}"),
            description: Some(summary.to_string()),
            span: Span::new(0, typed.len()),
            append_whitespace: true,
            ..Default::default()
        })
        .collect()
}

/// The argument of `/name` typed so far (`after`: everything after the
/// name, ending at `pos`).
fn arguments(name: &str, after: &str, pos: usize, choices: &Choices) -> Vec<Suggestion> {
    let arg = after.trim_start();
    if arg.contains(char::is_whitespace) {
        return Vec::new();
    }
    let offered: Vec<(String, Option<String>)> = match name.to_ascii_lowercase().as_str() {
        "model" => choices.models.iter().map(|m| (m.clone(), None)).collect(),
        "agent" => choices.agents.clone(),
        "mode" => PermissionMode::ALL
            .iter()
            .map(|m| (m.to_string(), None))
            .collect(),
        "resume" => choices
            .sessions
            .iter()
            .map(|(id, about)| (id.clone(), Some(about.clone())))
            .collect(),
        _ => Vec::new(),
    };
    offered
        .into_iter()
        .filter(|(value, _)| value.starts_with(arg))
        .map(|(value, description)| Suggestion {
            value,
            description,
            span: Span::new(pos - arg.len(), pos),
            append_whitespace: false,
            ..Default::default()
        })
        .collect()
}

/// `@partial` (starting at byte `start`) → the paths it may go on to.
fn paths(workspace: &Path, partial: &str, start: usize, pos: usize) -> Vec<Suggestion> {
    let quoted = partial.starts_with('"');
    let partial = partial.trim_start_matches('"');
    let (dir, prefix) = match partial.rfind('/') {
        Some(i) => (&partial[..=i], &partial[i + 1..]),
        None => ("", partial),
    };
    let base = match dir {
        "" => workspace.to_path_buf(),
        d if d.starts_with("~/") => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(&d[2..]),
            None => return Vec::new(),
        },
        d => workspace.join(d),
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut found: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            // Follows links: a link to a directory completes as one.
            let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
            Some((name, is_dir))
        })
        .collect();
    found.sort();
    found.truncate(MAX_PATHS);
    found
        .into_iter()
        .map(|(name, is_dir)| {
            let path = format!("{dir}{name}{}", if is_dir { "/" } else { "" });
            let value = if quoted || path.contains(char::is_whitespace) {
                // A directory's quote stays open: the path may go on.
                let close = if is_dir { "" } else { "\"" };
                format!("@\"{path}{close}")
            } else {
                format!("@{path}")
            };
            Suggestion {
                value,
                span: Span::new(start, pos),
                append_whitespace: !is_dir,
                ..Default::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completer(workspace: &Path) -> ChatCompleter {
        ChatCompleter {
            choices: Arc::new(Mutex::new(Choices {
                models: vec!["fast".into(), "smart".into()],
                agents: vec![
                    ("build".into(), Some("the default".into())),
                    ("plan".into(), None),
                ],
                sessions: vec![("01a2-bc".into(), "hello · 5 min ago".into())],
                workspace: workspace.to_path_buf(),
                custom: Vec::new(),
            })),
        }
    }

    fn values(c: &mut ChatCompleter, line: &str) -> Vec<String> {
        c.complete(line, line.len())
            .into_iter()
            .map(|s| s.value)
            .collect()
    }

    #[test]
    fn slash_prefixes_complete_to_commands() {
        let mut c = completer(Path::new("/nowhere"));
        assert_eq!(values(&mut c, "/mo"), ["/model", "/models", "/mode"]);
        assert_eq!(values(&mut c, "/co"), ["/context", "/compact"]);
        assert!(values(&mut c, "hello").is_empty());
    }

    #[test]
    fn the_sessions_custom_commands_complete_after_the_built_in_ones() {
        let mut c = completer(Path::new("/nowhere"));
        if let Ok(mut choices) = c.choices.lock() {
            choices.custom = vec![("compare".into(), "Compare two files".into())];
        }
        let suggestions = c.complete("/co", 3);
        let values: Vec<&str> = suggestions.iter().map(|s| s.value.as_str()).collect();
        assert_eq!(values, ["/context", "/compact", "/compare"]);
        assert_eq!(
            suggestions[2].description.as_deref(),
            Some("Compare two files")
        );
    }

    #[test]
    fn command_arguments_complete_to_what_the_session_can_switch_to() {
        let mut c = completer(Path::new("/nowhere"));
        assert_eq!(values(&mut c, "/model "), ["fast", "smart"]);
        assert_eq!(values(&mut c, "/model s"), ["smart"]);
        assert_eq!(values(&mut c, "/agent p"), ["plan"]);
        assert_eq!(
            values(&mut c, "/mode "),
            ["plan", "default", "accept-edits", "bypass"]
        );
        let resume = c.complete("/resume 01", 10);
        assert_eq!(resume[0].value, "01a2-bc");
        assert_eq!(resume[0].span, Span::new(8, 10));
        assert_eq!(resume[0].description.as_deref(), Some("hello · 5 min ago"));
        assert!(values(&mut c, "/model fast extra").is_empty());
        assert!(values(&mut c, "/clear ").is_empty());
    }

    #[test]
    fn at_paths_complete_from_the_workspace_with_directories_ending_in_a_slash() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/frontend")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join("my notes.txt"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        let mut c = completer(dir.path());
        assert_eq!(
            values(&mut c, "see @"),
            ["@README.md", "@\"my notes.txt\"", "@src/"]
        );
        assert_eq!(
            values(&mut c, "see @src/"),
            ["@src/frontend/", "@src/main.rs"]
        );
        assert_eq!(values(&mut c, "@src/m"), ["@src/main.rs"]);
        assert_eq!(values(&mut c, "@."), ["@.hidden"]);
        let suggestion = &c.complete("read @REA and", 9)[0];
        assert_eq!(suggestion.span, Span::new(5, 9));
        assert!(suggestion.append_whitespace);
        assert!(
            !c.complete("@sr", 3)[0].append_whitespace,
            "a directory goes on"
        );
        assert!(values(&mut c, "@nothing/here").is_empty());
        assert!(
            values(&mut c, "mail@REA").is_empty(),
            "not after whitespace"
        );
    }
}
