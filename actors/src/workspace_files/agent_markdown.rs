//! One agent file: Markdown with YAML front matter, the format Claude Code
//! users keep in `.claude/agents/*.md`, read into an [`AgentDefinition`].
//!
//! ```markdown
//! ---
//! name: reviewer
//! description: Reviews the change for bugs. Use after editing code.
//! tools: Read, Grep, Glob, Bash
//! model: inherit
//! ---
//! You are a senior code reviewer...
//! ```
//!
//! The fields: `name` (default: the file's name), `description`, `tools`
//! (an allow list, a comma-separated string or a YAML list),
//! `disallowedTools`, `model` (a profile of ours; Claude Code's `sonnet`,
//! `opus`, `haiku`, `inherit` keep the session's model), `permissionMode`,
//! `maxTurns`; the body is the system prompt. Claude Code's tool names are
//! mapped onto ours (`front_matter::CLAUDE_TOOLS`); a tool without an
//! equivalent is left out with a note. Fields agentbus does not use (`color`, ...) are ignored.
//!
//! Pure: text in, a definition or an error naming the field out. Reading
//! the folders is `agent_files`' job; the front matter is read as
//! `front_matter` reads it for command files too.

use super::front_matter::{self, shown, string};
use crate::protocol::{AgentDefinition, PermissionMode};
use serde_yaml_ng::Value;

/// Claude Code's model aliases: the session keeps its own model.
const CLAUDE_MODELS: &[&str] = &["inherit", "sonnet", "opus", "haiku"];

/// Read one agent file's `text`; `file_stem` names it when the front
/// matter does not, `profiles` are the configured model profiles. `Err`
/// says which field is wrong and what was expected (the caller prefixes
/// the path).
pub fn parse(
    text: &str,
    file_stem: &str,
    source: &str,
    profiles: &[String],
) -> Result<AgentDefinition, String> {
    let (front, body) = front_matter::split(text)?.ok_or_else(|| {
        "no front matter: the file must start with a `---` line, then `name:` and `description:` lines, then `---`".to_string()
    })?;
    let fields = front_matter::fields(front)?;
    let mut definition = AgentDefinition {
        source: source.to_string(),
        ..AgentDefinition::default()
    };
    let mut name = None;
    let mut ignored = Vec::new();
    for (key, value) in &fields {
        let key = front_matter::key(key)?;
        match key {
            "name" => name = Some(string(key, value)?),
            "description" => definition.description = string(key, value)?.trim().to_string(),
            "tools" => {
                definition.tools = Some(tools(key, value, &mut definition.notes)?);
            }
            "disallowedTools" | "disallowed_tools" => {
                definition.disallowed_tools = tools(key, value, &mut definition.notes)?;
            }
            "model" => definition.model = model(key, value, profiles, &mut definition.notes)?,
            "permissionMode" | "permission_mode" => {
                let text = string(key, value)?;
                definition.permission_mode = Some(
                    text.parse::<PermissionMode>()
                        .map_err(|e| format!("field `{key}`: {e}"))?,
                );
            }
            "maxTurns" | "max_turns" => {
                definition.max_steps = Some(
                    value
                        .as_u64()
                        .filter(|n| *n > 0)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| {
                            format!(
                                "field `{key}`: expected a positive whole number, got {}",
                                shown(value)
                            )
                        })?,
                );
            }
            other => ignored.push(other.to_string()),
        }
    }
    if !ignored.is_empty() {
        definition.notes.push(format!(
            "fields not used by agentbus: {}",
            ignored.join(", ")
        ));
    }
    let name = name.unwrap_or_else(|| file_stem.to_string());
    check_name(&name)?;
    definition.name = name;
    let body = body.trim();
    if !body.is_empty() {
        definition.prompt = Some(body.to_string());
    }
    Ok(definition)
}

/// A tool list: `Read, Grep` or `[Read, Grep]`, Claude's names mapped.
fn tools(key: &str, value: &Value, notes: &mut Vec<String>) -> Result<Vec<String>, String> {
    let names = super::front_matter::tool_list(key, value)?;
    let mut ours = Vec::new();
    for name in names {
        // `Bash(git diff:*)`: the argument limit is Claude Code's permission
        // syntax; here the tool is given and [permissions] rules limit it.
        let (base, limited) = match name.split_once('(') {
            Some((base, _)) => (base.trim(), true),
            None => (name.as_str(), false),
        };
        if limited {
            notes.push(format!(
                "`{name}` in `{key}`: the part in parentheses is not applied here (use [permissions] rules)"
            ));
        }
        match front_matter::claude_tool(base) {
            Some(Some(mapped)) => {
                if !ours.iter().any(|t| t == mapped) {
                    ours.push(mapped.to_string());
                }
            }
            Some(None) => notes.push(format!(
                "`{base}` in `{key}` has no equivalent in agentbus and is left out"
            )),
            None => {
                if !ours.iter().any(|t| t == base) {
                    ours.push(base.to_string());
                }
            }
        }
    }
    Ok(ours)
}

/// A profile of ours, or one of Claude's aliases (kept model, with a note).
fn model(
    key: &str,
    value: &Value,
    profiles: &[String],
    notes: &mut Vec<String>,
) -> Result<Option<String>, String> {
    let name = string(key, value)?;
    let name = name.trim();
    if profiles.iter().any(|p| p == name) {
        return Ok(Some(name.to_string()));
    }
    if CLAUDE_MODELS.contains(&name) || name.starts_with("claude-") {
        if name != "inherit" {
            notes.push(format!(
                "model `{name}` is Claude Code's: the session's model is kept"
            ));
        }
        return Ok(None);
    }
    Err(format!(
        "field `{key}`: unknown model profile `{name}`; expected one of {} (or inherit, sonnet, opus, haiku: the session's model)",
        profiles.join(", ")
    ))
}

/// Names are typed after `/agent` and `--agent`: one word.
pub fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '.');
    if fine {
        Ok(())
    } else {
        Err(format!(
            "field `name`: `{name}` is not a usable agent name (letters, digits, `-`, `_` and `.` only)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles() -> Vec<String> {
        vec!["scripted".into(), "local".into()]
    }

    #[test]
    fn a_claude_code_agent_file_reads_unchanged() {
        let text = "---\nname: code-reviewer\ndescription: Expert code review specialist. Use immediately after writing code.\ntools: Read, Grep, Glob, Bash, WebSearch\nmodel: sonnet\ncolor: blue\n---\n\nYou are a senior code reviewer.\n";
        let agent = parse(
            text,
            "reviewer",
            "/ws/.claude/agents/reviewer.md",
            &profiles(),
        )
        .expect("reads");
        assert_eq!(agent.name, "code-reviewer");
        assert_eq!(
            agent.tools.as_deref(),
            Some(&["read_file", "grep", "glob", "bash"].map(String::from)[..])
        );
        assert_eq!(agent.model, None);
        assert_eq!(
            agent.prompt.as_deref(),
            Some("You are a senior code reviewer.")
        );
        let notes = agent.notes.join("\n");
        assert!(
            notes.contains("WebSearch") && notes.contains("sonnet") && notes.contains("color"),
            "{notes}"
        );
    }

    #[test]
    fn lists_modes_turns_and_our_profiles_are_read() {
        let text = "---\ndescription: d\ntools:\n  - read_file\n  - mcp__gh__*\ndisallowedTools: Bash\nmodel: local\npermissionMode: acceptEdits\nmaxTurns: 7\n---\nbody";
        let agent = parse(text, "mine", "x", &profiles()).expect("reads");
        assert_eq!(
            agent.name, "mine",
            "the file's name when the field is missing"
        );
        assert_eq!(
            agent.tools.as_deref(),
            Some(&["read_file", "mcp__gh__*"].map(String::from)[..])
        );
        assert_eq!(agent.disallowed_tools, ["bash"]);
        assert_eq!(agent.model.as_deref(), Some("local"));
        assert_eq!(agent.permission_mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(agent.max_steps, Some(7));
    }

    #[test]
    fn each_wrong_field_is_named() {
        let cases = [
            ("---\ntools: 42\n---\n", "field `tools`"),
            (
                "---\npermissionMode: sometimes\n---\n",
                "field `permissionMode`",
            ),
            ("---\nmaxTurns: -1\n---\n", "field `maxTurns`"),
            (
                "---\nmodel: gpt-9\n---\n",
                "field `model`: unknown model profile `gpt-9`",
            ),
            ("---\nname: two words\n---\n", "field `name`"),
            ("---\nname: [x\n---\n", "not valid YAML"),
            ("no front matter", "no front matter"),
            ("---\nname: x\n", "no closing"),
        ];
        for (text, expected) in cases {
            let err = parse(text, "f", "x", &profiles()).expect_err(text);
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
