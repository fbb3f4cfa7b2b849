//! The YAML front matter of the Markdown files Claude Code users keep —
//! sub-agents (`.claude/agents/*.md`) and custom commands
//! (`.claude/commands/*.md`) — and the tool names those files use:
//!
//! ```markdown
//! ---
//! description: Reviews the change for bugs.
//! tools: Read, Grep
//! ---
//! The body.
//! ```
//!
//! What `agent_markdown` and `command_markdown` share: splitting the front
//! matter from the body, reading it as a mapping (serde_yaml_ng), a text
//! field, and [`CLAUDE_TOOLS`]. Pure: text in, fields or an error naming
//! what is wrong out.

use serde_yaml_ng::{Mapping, Value};

pub use crate::session::core::claude_tools::CLAUDE_TOOLS;

/// What Claude Code's tool `name` is called here: `Some(Some(ours))`,
/// `Some(None)` when agentbus has no equivalent, `None` when it is not
/// one of Claude Code's names (ours, or an MCP tool's).
pub fn claude_tool(name: &str) -> Option<Option<&'static str>> {
    CLAUDE_TOOLS
        .iter()
        .find(|(claude, _)| *claude == name)
        .map(|(_, ours)| *ours)
}

/// The front matter between the first two `---` lines, and the body;
/// `None` when the text does not start with a `---` line.
pub fn split(text: &str) -> Result<Option<(&str, &str)>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok(None);
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok(Some((&rest[..at], &rest[at + line.len()..])));
        }
        at += line.len();
    }
    if rest[at..].trim_end() == "---" {
        return Ok(Some((&rest[..at], "")));
    }
    Err("the front matter has no closing `---` line".into())
}

/// The front matter's fields: a mapping of `field: value` lines (empty
/// front matter: none).
pub fn fields(front: &str) -> Result<Mapping, String> {
    let fields: Value = serde_yaml_ng::from_str(front)
        .map_err(|e| format!("the front matter is not valid YAML: {e}"))?;
    match fields {
        Value::Mapping(map) => Ok(map),
        Value::Null => Ok(Mapping::new()),
        _ => Err("the front matter is not a mapping of `field: value` lines".into()),
    }
}

/// A field's name, which must be text.
pub fn key(key: &Value) -> Result<&str, String> {
    key.as_str()
        .ok_or_else(|| format!("a field name is not text: {key:?}"))
}

/// A value as the file wrote it, for messages.
pub fn shown(value: &Value) -> String {
    serde_yaml_ng::to_string(value)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Field `key`'s tool names: `Read, Grep`, `Bash(git add:*) Read` or a
/// list; commas and spaces inside parentheses stay with their entry.
pub fn tool_list(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let expected = || {
        format!(
            "field `{key}`: expected tool names as a comma-separated text or a list, got {}",
            shown(value)
        )
    };
    match value {
        Value::String(text) => Ok(split_entries(text)),
        Value::Sequence(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(|s| s.trim().to_string())
                    .ok_or_else(expected)
            })
            .filter(|entry| entry.as_ref().map_or(true, |e| !e.is_empty()))
            .collect(),
        Value::Null => Ok(Vec::new()),
        _ => Err(expected()),
    }
}

/// `text` cut at commas and spaces outside parentheses.
fn split_entries(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut entry = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                entry.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                entry.push(c);
            }
            ',' if depth == 0 => entries.push(std::mem::take(&mut entry)),
            c if c.is_whitespace() && depth == 0 => entries.push(std::mem::take(&mut entry)),
            c => entry.push(c),
        }
    }
    entries.push(entry);
    entries
        .into_iter()
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect()
}

/// Field `key`'s value as text.
pub fn string(key: &str, value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("field `{key}`: expected text, got {}", shown(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_optional_but_must_be_closed() {
        assert_eq!(split("just a body"), Ok(None));
        assert_eq!(
            split("\u{feff}---\r\na: 1\r\n---\r\nbody"),
            Ok(Some(("a: 1\r\n", "body")))
        );
        assert_eq!(split("---\na: 1\n---"), Ok(Some(("a: 1\n", ""))));
        assert!(split("---\na: 1\n").unwrap_err().contains("no closing"));
    }

    #[test]
    fn fields_are_a_mapping() {
        assert!(fields("").expect("empty").is_empty());
        assert_eq!(fields("a: x\n").expect("one").len(), 1);
        assert!(fields("- a\n").unwrap_err().contains("not a mapping"));
        assert!(fields("a: [x\n").unwrap_err().contains("not valid YAML"));
    }
}
