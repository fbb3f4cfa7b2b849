//! Custom commands as a session holds them: one per Markdown file of the
//! workspace's and the user's `.agentbus/commands/` and `.claude/commands/`
//! (Claude Code's format, so its users' commands run unchanged), each
//! becoming `/NAME [ARGUMENTS]`. Which command a typed word means, and how
//! a command's prompt gets its arguments: `$ARGUMENTS` all of them, `$1`,
//! `$2`, … each (quotes group words); a prompt with neither gets them
//! appended as `ARGUMENTS: …`, as Claude Code does.
//!
//! The files are read by the I/O layer (`workspace_files::command_files`, when a
//! session is created or loaded) and arrive here as data; running one is
//! `commands/custom.rs`. Never reads a file. Pure.

use crate::permissions::Rule;
use crate::protocol::system::CommandEntry;
use serde::Serialize;

/// One custom command, as read from its file.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CustomCommand {
    /// What is typed after `/`: the file's name without `.md`, its
    /// subfolders before it (`frontend/component.md` → `frontend:component`).
    pub name: String,
    /// For `/help` and front ends' menus (the file's `description`, else
    /// its first line).
    pub description: String,
    /// How its arguments are typed (`argument-hint`, e.g. `[file]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// The prompt: the file's body.
    pub prompt: String,
    /// The model profile its query runs on (`model`), as written: a name
    /// that is not a profile here is said when it runs, and the session's
    /// model answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `allowed-tools` as allow rules (Claude Code's tool names mapped onto
    /// ours), in force for its query's turn alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<Rule>,
    /// The file it was read from.
    pub source: String,
    /// What of the file agentbus does not apply, said when it runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A skill typed as a command (`skills.rs`): only `$ARGUMENTS` is
    /// filled in, since skills' scripts use `$1` for their own.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skill: bool,
}

impl CustomCommand {
    /// How to type it: `/review [file]`.
    pub fn usage(&self) -> String {
        match &self.argument_hint {
            Some(hint) => format!("/{} {hint}", self.name),
            None => format!("/{}", self.name),
        }
    }
}

/// A session's custom commands, and the files that could not be used.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CustomCommands {
    /// By name.
    pub commands: Vec<CustomCommand>,
    /// Each a sentence naming the file (and the field) that was wrong.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl CustomCommands {
    /// The commands of `definitions`, read from the least to the most
    /// preferred folder: a later definition of a name replaces an earlier
    /// one. A name `built_in` claims is skipped with a problem — a custom
    /// command never replaces a built-in one — and so is one that cannot be
    /// typed.
    pub fn with(
        definitions: Vec<CustomCommand>,
        mut problems: Vec<String>,
        built_in: impl Fn(&str) -> bool,
    ) -> Self {
        let mut commands: Vec<CustomCommand> = Vec::new();
        for definition in definitions {
            if !typeable(&definition.name) {
                problems.push(format!(
                    "{}: `/{}` cannot be typed as a command (names are letters, digits, `-`, `_` and `.`; subfolders add `NAME:`); not used",
                    definition.source, definition.name
                ));
                continue;
            }
            if built_in(&definition.name.to_ascii_lowercase()) {
                problems.push(format!(
                    "{}: `/{}` is a built-in command, which a custom command never replaces; skipped (rename the file to use it)",
                    definition.source, definition.name
                ));
                continue;
            }
            match commands.iter_mut().find(|c| c.name == definition.name) {
                Some(slot) => *slot = definition,
                None => commands.push(definition),
            }
        }
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        CustomCommands { commands, problems }
    }

    /// The command `typed` (the word after `/`) means: the one of that
    /// name, else — for a word without `:` — the one namespaced command
    /// whose last part it is (`/component` for `frontend:component`, as
    /// Claude Code also names such commands), if exactly one is.
    pub fn find(&self, typed: &str) -> Option<&CustomCommand> {
        if let Some(command) = self.commands.iter().find(|c| c.name == typed) {
            return Some(command);
        }
        if typed.is_empty() || typed.contains(':') {
            return None;
        }
        let mut last_part = self
            .commands
            .iter()
            .filter(|c| c.name.rsplit(':').next() == Some(typed) && c.name.contains(':'));
        match (last_part.next(), last_part.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// The commands as `/help` and front ends list them.
    pub fn entries(&self) -> Vec<CommandEntry> {
        self.commands
            .iter()
            .map(|c| CommandEntry {
                command: c.usage(),
                description: c.description.clone(),
                name: c.name.clone(),
                source: Some(c.source.clone()),
            })
            .collect()
    }
}

/// Whether `name` is one word of letters, digits, `-`, `_` and `.`, or
/// several joined by `:`.
fn typeable(name: &str) -> bool {
    name.split(':').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '.')
    })
}

/// `prompt` with `arguments` filled in: `$ARGUMENTS` is all of them (as
/// typed), `$1`, `$2`, … one each (missing ones are empty). A prompt that
/// uses neither gets non-empty arguments appended as `ARGUMENTS: …`.
pub fn expand(prompt: &str, arguments: &str) -> String {
    let positional = split_arguments(arguments);
    let mut expanded = String::with_capacity(prompt.len() + arguments.len());
    let mut used = false;
    let mut rest = prompt;
    while let Some(at) = rest.find('$') {
        expanded.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            expanded.push_str(arguments);
            used = true;
            rest = tail;
            continue;
        }
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || after.starts_with('0') {
            expanded.push('$');
            rest = after;
            continue;
        }
        let value = after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|n| positional.get(n - 1));
        expanded.push_str(value.map(String::as_str).unwrap_or_default());
        used = true;
        rest = &after[digits..];
    }
    expanded.push_str(rest);
    if !used && !arguments.is_empty() {
        expanded = format!("{}\n\nARGUMENTS: {arguments}", expanded.trim_end());
    }
    expanded
}

/// The arguments one by one: split at whitespace, a `"…"` or `'…'` part
/// kept whole (without its quotes).
pub fn split_arguments(arguments: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in arguments.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(name: &str, source: &str) -> CustomCommand {
        CustomCommand {
            name: name.into(),
            description: format!("from {source}"),
            prompt: "p".into(),
            source: source.into(),
            ..CustomCommand::default()
        }
    }

    #[test]
    fn arguments_fill_the_prompt() {
        assert_eq!(
            expand("Review $ARGUMENTS carefully.", "src/main.rs  lib.rs"),
            "Review src/main.rs  lib.rs carefully."
        );
        assert_eq!(
            expand("Fix issue #$1 with priority $2 ($3).", "123 high"),
            "Fix issue #123 with priority high ()."
        );
        assert_eq!(
            expand("$2 then $1, all: $ARGUMENTS", "\"two words\" 'x y'"),
            "x y then two words, all: \"two words\" 'x y'"
        );
        assert_eq!(
            expand("cost $0 or $ 5 or $x: $1", "a"),
            "cost $0 or $ 5 or $x: a"
        );
        assert_eq!(expand("$10", "1 2 3 4 5 6 7 8 9 ten"), "ten");
        assert_eq!(expand("$99999999999999999999999", "a"), "");
    }

    #[test]
    fn arguments_without_a_placeholder_are_appended() {
        assert_eq!(
            expand("Explain the code.\n", "src/lib.rs"),
            "Explain the code.\n\nARGUMENTS: src/lib.rs"
        );
        assert_eq!(expand("Explain the code.\n", ""), "Explain the code.\n");
        assert_eq!(expand("Use $1.", ""), "Use .");
    }

    #[test]
    fn later_folders_win_and_built_in_names_are_skipped() {
        let set = CustomCommands::with(
            vec![
                command("review", "~/.claude/commands/review.md"),
                command("help", "/ws/.claude/commands/help.md"),
                command("review", "/ws/.agentbus/commands/review.md"),
                command(
                    "frontend:component",
                    "/ws/.claude/commands/frontend/component.md",
                ),
                command("two words", "/ws/.claude/commands/two words.md"),
            ],
            Vec::new(),
            |name| name == "help",
        );
        let names: Vec<&str> = set.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["frontend:component", "review"]);
        assert_eq!(
            set.find("review").map(|c| c.source.as_str()),
            Some("/ws/.agentbus/commands/review.md")
        );
        assert_eq!(set.problems.len(), 2, "{:?}", set.problems);
        assert!(set.problems[0].contains("help.md") && set.problems[0].contains("built-in"));
        assert!(set.problems[1].contains("two words.md"));
    }

    #[test]
    fn a_namespaced_command_answers_to_its_last_part_when_that_is_unique() {
        let set = CustomCommands::with(
            vec![
                command("frontend:component", "a"),
                command("backend:api", "b"),
                command("frontend:test", "c"),
                command("backend:test", "d"),
            ],
            Vec::new(),
            |_| false,
        );
        assert_eq!(
            set.find("frontend:component").map(|c| c.source.as_str()),
            Some("a")
        );
        assert_eq!(set.find("component").map(|c| c.source.as_str()), Some("a"));
        assert_eq!(set.find("api").map(|c| c.source.as_str()), Some("b"));
        assert!(set.find("test").is_none(), "two commands end in `test`");
        assert!(set.find("front").is_none());
        assert!(set.find(":component").is_none());
    }

    #[test]
    fn entries_carry_usage_and_source() {
        let mut review = command("review", "/ws/.claude/commands/review.md");
        review.argument_hint = Some("[file]".into());
        let set = CustomCommands::with(vec![review], Vec::new(), |_| false);
        let entries = set.entries();
        assert_eq!(entries[0].command, "/review [file]");
        assert_eq!(entries[0].argument_hint(), Some("[file]"));
        assert_eq!(entries[0].name, "review");
        assert_eq!(
            entries[0].source.as_deref(),
            Some("/ws/.claude/commands/review.md")
        );
    }
}
