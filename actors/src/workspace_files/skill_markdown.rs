//! One skill file: a `SKILL.md` with YAML front matter, the format of the
//! Agent Skills specification (agentskills.io) that Claude Code and other
//! agents read from `.claude/skills/NAME/SKILL.md`, read into a [`Skill`].
//!
//! ```markdown
//! ---
//! name: release-notes
//! description: Writes release notes from the git log. Use when asked for release notes or a changelog.
//! allowed-tools: Bash(git log:*) Read
//! ---
//! # Release notes
//! 1. Run `git log --oneline LAST_TAG..HEAD`. ...
//! ```
//!
//! The fields: `name` (required: lowercase letters, digits and single
//! hyphens, at most 64 characters, the same as its folder's name),
//! `description` (required, at most 1024 characters), `allowed-tools`
//! (as a command file's: Claude Code's names mapped onto ours, read as
//! permission rules). The specification's `license`, `compatibility` and
//! `metadata` are accepted and not used; other fields are noted as unused.
//! The body is the instructions, kept whole.
//!
//! Pure: text in, a skill or an error naming the field out. Finding the
//! folders is `skill_files`' job.

use super::command_markdown::{allowed_tools, quote_text_fields};
use super::front_matter::{self, string};
use crate::session::core::skills::Skill;

/// The longest a name may be.
pub const MAX_NAME_CHARS: usize = 64;

/// The longest a description may be.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The fields read as the text they show, whatever YAML makes of them.
const TEXT_FIELDS: [&str; 1] = ["description"];

/// The specification's fields agentbus accepts without using.
const SPEC_ONLY: [&str; 3] = ["license", "compatibility", "metadata"];

/// Read one `SKILL.md`'s `text`: the skill of folder `folder` (its name),
/// whose folder is `dir`, read from `source`. `Err` says which field is
/// wrong and what was expected (the caller prefixes the path).
pub fn parse(text: &str, folder: &str, dir: &str, source: &str) -> Result<Skill, String> {
    let (front, body) = front_matter::split(text)?.ok_or_else(|| {
        "no front matter: the file must start with a `---` line, then `name:` and `description:` lines, then `---`".to_string()
    })?;
    let fields = front_matter::fields(&quote_text_fields(front, &TEXT_FIELDS))?;
    let mut skill = Skill {
        dir: dir.to_string(),
        source: source.to_string(),
        ..Skill::default()
    };
    let mut name = None;
    let mut ignored = Vec::new();
    for (key, value) in &fields {
        let key = front_matter::key(key)?;
        match key {
            "name" => name = Some(string(key, value)?.trim().to_string()),
            "description" => skill.description = string(key, value)?.trim().to_string(),
            "allowed-tools" | "allowed_tools" => {
                skill.allowed_tools = allowed_tools(key, value, &mut skill.notes)?;
            }
            spec if SPEC_ONLY.contains(&spec) => {}
            other => ignored.push(other.to_string()),
        }
    }
    if !ignored.is_empty() {
        skill.notes.push(format!(
            "fields not used by agentbus: {}",
            ignored.join(", ")
        ));
    }
    let name = name.ok_or_else(|| {
        format!("field `name` is missing: expected `name: {folder}` (the skill's folder's name)")
    })?;
    check_name(&name)?;
    if name != folder {
        return Err(format!(
            "field `name`: `{name}` is not the name of its folder `{folder}`; they must be the same"
        ));
    }
    skill.name = name;
    if skill.description.is_empty() {
        return Err(
            "field `description` is missing or empty: expected what the skill does and when to use it"
                .into(),
        );
    }
    let chars = skill.description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "field `description`: {chars} characters, more than the {MAX_DESCRIPTION_CHARS} a description may have"
        ));
    }
    let body = body.trim();
    if body.is_empty() {
        return Err(
            "the file has no instructions: the text after the front matter is empty".into(),
        );
    }
    skill.body = body.to_string();
    Ok(skill)
}

/// A name as the specification allows it: lowercase letters, digits and
/// hyphens, neither first nor last nor two in a row, at most
/// [`MAX_NAME_CHARS`].
pub fn check_name(name: &str) -> Result<(), String> {
    let expected =
        "lowercase letters, digits and single hyphens, not first or last, at most 64 characters";
    let chars = name.chars().count();
    if name.is_empty() || chars > MAX_NAME_CHARS {
        return Err(format!(
            "field `name`: `{name}` has {chars} characters; expected {expected}"
        ));
    }
    let fine = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if fine {
        Ok(())
    } else {
        Err(format!(
            "field `name`: `{name}` is not a skill name; expected {expected}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELEASE_NOTES: &str = "---\nname: release-notes\ndescription: Writes release notes from the git log. Use when: the user asks for release notes.\nallowed-tools: Bash(git log:*) Read WebSearch\nlicense: MIT\ncolor: blue\n---\n# Release notes\n\nRun `git log` and group the changes.\n";

    #[test]
    fn a_skill_file_reads_with_its_body_whole() {
        let skill = parse(
            RELEASE_NOTES,
            "release-notes",
            "/ws/.claude/skills/release-notes",
            "/ws/.claude/skills/release-notes/SKILL.md",
        )
        .expect("reads");
        assert_eq!(skill.name, "release-notes");
        assert_eq!(
            skill.description,
            "Writes release notes from the git log. Use when: the user asks for release notes."
        );
        assert_eq!(
            skill.body,
            "# Release notes\n\nRun `git log` and group the changes."
        );
        assert_eq!(skill.dir, "/ws/.claude/skills/release-notes");
        let rules: Vec<String> = skill.allowed_tools.iter().map(|r| r.to_string()).collect();
        assert_eq!(rules, ["bash(git log:*)", "read_file"]);
        let notes = skill.notes.join("\n");
        assert!(
            notes.contains("WebSearch") && notes.contains("color") && !notes.contains("license"),
            "{notes}"
        );
    }

    #[test]
    fn a_missing_description_is_named() {
        for text in [
            "---\nname: notes\n---\nbody",
            "---\nname: notes\ndescription: \"  \"\n---\nbody",
        ] {
            let err = parse(text, "notes", "d", "s").expect_err(text);
            assert!(err.contains("field `description`"), "{err}");
        }
        let long = format!(
            "---\nname: notes\ndescription: {}\n---\nb",
            "x".repeat(1025)
        );
        let err = parse(&long, "notes", "d", "s").expect_err("too long");
        assert!(
            err.contains("field `description`") && err.contains("1025"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_name_is_named() {
        let cases = [
            ("Release-Notes", "Release-Notes"),
            ("release_notes", "release_notes"),
            ("-notes", "-notes"),
            ("notes-", "notes-"),
            ("two--hyphens", "two--hyphens"),
        ];
        for (name, folder) in cases {
            let text = format!("---\nname: {name}\ndescription: d\n---\nb");
            let err = parse(&text, folder, "d", "s").expect_err(name);
            assert!(err.contains("field `name`") && err.contains(name), "{err}");
        }
        let long = "a".repeat(65);
        let err = parse(
            &format!("---\nname: {long}\ndescription: d\n---\nb"),
            &long,
            "d",
            "s",
        )
        .expect_err("65 characters");
        assert!(err.contains("65 characters"), "{err}");
        let err = parse(
            "---\nname: notes\ndescription: d\n---\nb",
            "other",
            "d",
            "s",
        )
        .expect_err("not its folder");
        assert!(
            err.contains("field `name`") && err.contains("`other`"),
            "{err}"
        );
        let err = parse("---\ndescription: d\n---\nb", "notes", "d", "s").expect_err("no name");
        assert!(err.contains("field `name` is missing"), "{err}");
    }

    #[test]
    fn other_mistakes_are_named() {
        let cases = [
            ("no front matter", "no front matter"),
            ("---\nname: n\ndescription: d\n---\n \n", "no instructions"),
            (
                "---\nname: n\ndescription: d\nallowed-tools: 3\n---\nb",
                "field `allowed-tools`",
            ),
            ("---\nname: [n\n---\nb", "not valid YAML"),
        ];
        for (text, expected) in cases {
            let err = parse(text, "n", "d", "s").expect_err(text);
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
