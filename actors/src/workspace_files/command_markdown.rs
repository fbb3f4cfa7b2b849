//! One command file: Markdown with optional YAML front matter, the format
//! Claude Code users keep in `.claude/commands/*.md`, read into a
//! [`CustomCommand`].
//!
//! ```markdown
//! ---
//! description: Review a file for bugs
//! argument-hint: [file]
//! allowed-tools: Read, Grep, Bash(git diff:*)
//! model: fast
//! ---
//! Review $ARGUMENTS for bugs and say what you would change.
//! ```
//!
//! The fields, all optional: `description` (default: the body's first
//! line), `argument-hint`, `model` (a profile of ours; checked when the
//! command runs), `allowed-tools` (comma- or space-separated, or a YAML
//! list; Claude Code's names mapped onto ours and read as permission
//! rules: `Bash(git diff:*)` is `bash(git diff:*)`; one that is no rule
//! of ours is left out with a note). `disable-model-invocation` is about
//! the model starting commands, which agentbus never lets it do; other
//! fields are noted as unused. `description` and `argument-hint` are read
//! as the text they show — Claude Code's files write `argument-hint: [file]`
//! unquoted, which YAML alone would read as a list. The body is the
//! prompt, kept as written: `@path` mentions stay text (the model reads
//! the file with its tools) and `!`-backtick shell lines are not run (a
//! note says so when the command runs).
//!
//! Pure: text in, a command or an error naming the field out. Reading the
//! folders is `command_files`' job.

use super::front_matter::{self, string};
use crate::permissions::Rule;
use crate::session::core::custom_commands::CustomCommand;
use serde_yaml_ng::Value;

/// The fields read as the text they show, whatever YAML makes of them.
const TEXT_FIELDS: [&str; 2] = ["description", "argument-hint"];

/// How long a description taken from the body's first line may be.
const DESCRIPTION_CHARS: usize = 100;

/// Read one command file's `text`: command `name` (from the file's place),
/// defined in `source`. `Err` says which field is wrong and what was
/// expected (the caller prefixes the path).
pub fn parse(text: &str, name: &str, source: &str) -> Result<CustomCommand, String> {
    let (fields, body) = match front_matter::split(text)? {
        Some((front, body)) => (
            front_matter::fields(&quote_text_fields(front, &TEXT_FIELDS))?,
            body,
        ),
        None => (
            Default::default(),
            text.strip_prefix('\u{feff}').unwrap_or(text),
        ),
    };
    let mut command = CustomCommand {
        name: name.to_string(),
        source: source.to_string(),
        ..CustomCommand::default()
    };
    let mut ignored = Vec::new();
    for (key, value) in &fields {
        let key = front_matter::key(key)?;
        match key {
            "description" => command.description = string(key, value)?.trim().to_string(),
            "argument-hint" | "argument_hint" => {
                let hint = string(key, value)?.trim().to_string();
                command.argument_hint = Some(hint).filter(|h| !h.is_empty());
            }
            "model" => {
                let model = string(key, value)?.trim().to_string();
                command.model = Some(model).filter(|m| !m.is_empty());
            }
            "allowed-tools" | "allowed_tools" => {
                command.allowed_tools = allowed_tools(key, value, &mut command.notes)?;
            }
            "disable-model-invocation" => {}
            other => ignored.push(other.to_string()),
        }
    }
    if !ignored.is_empty() {
        command.notes.push(format!(
            "fields not used by agentbus: {}",
            ignored.join(", ")
        ));
    }
    let body = body.trim();
    if body.is_empty() {
        return Err("the file has no prompt: the text after the front matter is empty".into());
    }
    if body.contains("!`") {
        command.notes.push(
            "its !`command` lines are not run by agentbus: the model reads them as written".into(),
        );
    }
    if command.description.is_empty() {
        command.description = first_line(body);
    }
    command.prompt = body.to_string();
    Ok(command)
}

/// The body's first line that says something, without Markdown heading
/// marks, shortened.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    crate::text::ellipsize(line, DESCRIPTION_CHARS)
}

/// The front matter with each one-line value of a field of `fields`
/// quoted, so that YAML reads it as the text written (`[file]`, `a: b`,
/// `#12` would be a list, an error, a comment). Skill files too.
pub(super) fn quote_text_fields(front: &str, fields: &[&str]) -> String {
    let lines: Vec<&str> = front.lines().collect();
    let mut quoted = String::with_capacity(front.len() + 16);
    for (i, line) in lines.iter().enumerate() {
        let continued = lines
            .get(i + 1)
            .is_some_and(|next| next.starts_with([' ', '\t']));
        let field = fields.iter().find_map(|field| {
            let value = line.strip_prefix(field)?.strip_prefix(':')?;
            Some((field, value.trim()))
        });
        match field {
            Some((field, value))
                if !continued
                    && !value.is_empty()
                    && !value.starts_with(['"', '\'', '|', '>', '&', '*', '!']) =>
            {
                quoted.push_str(&format!("{field}: '{}'\n", value.replace('\'', "''")));
            }
            _ => {
                quoted.push_str(line);
                quoted.push('\n');
            }
        }
    }
    quoted
}

/// `allowed-tools` as allow rules: Claude Code's tool names mapped onto
/// ours, each entry read as a permission rule; what cannot be applied is
/// left out with a note. Skill files too.
pub(super) fn allowed_tools(
    key: &str,
    value: &Value,
    notes: &mut Vec<String>,
) -> Result<Vec<Rule>, String> {
    let entries = super::front_matter::tool_list(key, value)?;
    let mut rules: Vec<Rule> = Vec::new();
    for entry in entries.iter().filter(|e| !e.is_empty()) {
        let (tool, limit) = match entry.find('(') {
            Some(at) => (entry[..at].trim(), &entry[at..]),
            None => (entry.as_str(), ""),
        };
        let ours = match front_matter::claude_tool(tool) {
            Some(Some(ours)) => ours,
            Some(None) => {
                notes.push(format!(
                    "`{entry}` in `{key}` has no equivalent in agentbus and is left out"
                ));
                continue;
            }
            None => tool,
        };
        match Rule::parse(&format!("{ours}{limit}")) {
            Ok(rule) => {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            Err(e) => notes.push(format!(
                "`{entry}` in `{key}` is not applied (as an agentbus permission rule it reads {e})"
            )),
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(command: &CustomCommand) -> Vec<String> {
        command
            .allowed_tools
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_claude_code_command_file_reads_unchanged() {
        let text = "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Read, WebSearch\nargument-hint: [message]\ndescription: Create a git commit\nmodel: claude-3-5-haiku-20241022\n---\n\n## Context\n\n- Current status: !`git status`\n\nCommit with message $ARGUMENTS.\n";
        let command = parse(text, "commit", "/ws/.claude/commands/commit.md").expect("reads");
        assert_eq!(command.name, "commit");
        assert_eq!(command.description, "Create a git commit");
        assert_eq!(command.argument_hint.as_deref(), Some("[message]"));
        assert_eq!(command.model.as_deref(), Some("claude-3-5-haiku-20241022"));
        assert_eq!(
            rules(&command),
            ["bash(git add:*)", "bash(git status:*)", "read_file"]
        );
        assert!(
            command.prompt.starts_with("## Context"),
            "{}",
            command.prompt
        );
        let notes = command.notes.join("\n");
        assert!(
            notes.contains("WebSearch") && notes.contains("!`command`"),
            "{notes}"
        );
    }

    #[test]
    fn without_front_matter_the_first_line_describes_it() {
        let command =
            parse("# Explain the code\n\nExplain $ARGUMENTS.", "explain", "x").expect("reads");
        assert_eq!(command.description, "Explain the code");
        assert_eq!(command.prompt, "# Explain the code\n\nExplain $ARGUMENTS.");
        assert!(command.notes.is_empty(), "{:?}", command.notes);
    }

    #[test]
    fn hints_and_descriptions_are_the_text_written() {
        let text = "---\nargument-hint: [pr-number] [priority] [assignee]\ndescription: Fix: issue #12 ('now')\nallowed-tools:\n  - Edit(src/**)\n  - mcp__github__*\ncolor: red\n---\nbody";
        let command = parse(text, "fix", "x").expect("reads");
        assert_eq!(
            command.argument_hint.as_deref(),
            Some("[pr-number] [priority] [assignee]")
        );
        assert_eq!(command.description, "Fix: issue #12 ('now')");
        assert_eq!(rules(&command), ["edit_file(src/**)", "mcp__github__*"]);
        assert_eq!(command.notes, ["fields not used by agentbus: color"]);
        let spaced = parse(
            "---\nallowed-tools: Read Grep Bash(git diff:*)\n---\nb",
            "s",
            "x",
        )
        .expect("reads");
        assert_eq!(rules(&spaced), ["read_file", "grep", "bash(git diff:*)"]);
    }

    #[test]
    fn each_wrong_field_is_named() {
        let cases = [
            ("---\nallowed-tools: 42\n---\nb", "field `allowed-tools`"),
            ("---\nmodel: [a, b]\n---\nb", "field `model`"),
            (
                "---\ndescription:\n  nested: map\n---\nb",
                "field `description`",
            ),
            ("---\nmodel: [x\n---\nb", "not valid YAML"),
            ("---\ndescription: x\n", "no closing"),
            ("---\ndescription: x\n---\n  \n", "no prompt"),
        ];
        for (text, expected) in cases {
            let err = parse(text, "f", "x").expect_err(text);
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_rule_that_cannot_apply_is_a_note() {
        let command = parse(
            "---\nallowed-tools: Bash(git diff | less), Read\n---\nb",
            "d",
            "x",
        )
        .expect("reads");
        assert_eq!(rules(&command), ["read_file"]);
        assert!(
            command.notes[0].contains("Bash(git diff | less)"),
            "{:?}",
            command.notes
        );
    }
}
