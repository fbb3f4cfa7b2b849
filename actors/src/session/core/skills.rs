//! Agent Skills as a session holds them: folders with a `SKILL.md` (name
//! and description in its front matter, instructions in its body, other
//! files beside it), read from the workspace's and the user's
//! `.claude/skills/` and `.agents/skills/` and `[skills] paths`.
//!
//! Progressive disclosure: every request's system prompt lists each
//! skill's name and description (within [`Skills::max_prompt_chars`];
//! skills beyond it are left out of the listing, and `/context` and a
//! notice say so), never a body. The body reaches the model when it calls
//! the `skill` tool — answered here, by the core, without running
//! anything — or when the user types `/NAME` (the skill joins the custom
//! commands). Either way the model gets the whole body and the skill's
//! base directory, which the file tools may read without asking (its
//! folder is a read root of the session's permissions). A skill's
//! `allowed-tools` are allow rules from the moment it is loaded to the end
//! of that turn.
//!
//! The files are read by the I/O layer (`workspace_files::skill_files`, when a
//! session is created or loaded) and arrive here as data, bodies included.
//! Never reads a file. Pure.

use super::custom_commands::{CustomCommand, CustomCommands};
use crate::model::{ToolOrigin, ToolOutcome, ToolSpec};
use crate::permissions::Rule;
use serde::Serialize;

/// The tool that loads a skill's instructions.
pub const SKILL_TOOL: &str = "skill";

/// How many characters of the system prompt the listing may take unless
/// `[skills] max_prompt_chars` says otherwise.
pub const DEFAULT_PROMPT_CHARS: usize = 8_000;

/// Where a skill was found: which wins when a name is found twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// `~/.claude/skills`, `~/.agents/skills`.
    User,
    /// `[skills] paths` of the configuration.
    Configured,
    /// The workspace's `.claude/skills`, `.agents/skills`.
    Project,
}

impl Scope {
    fn word(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Configured => "configured",
            Scope::Project => "project",
        }
    }
}

/// One skill, as read from its `SKILL.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Skill {
    /// `name` of the front matter (also its folder's name).
    pub name: String,
    /// What it does and when to use it: what the model decides by.
    pub description: String,
    /// The instructions: the file's body.
    #[serde(skip)]
    pub body: String,
    /// The skill's folder: the model reads its other files from there.
    pub dir: String,
    /// The `SKILL.md` it was read from.
    pub source: String,
    /// `allowed-tools` as allow rules (Claude Code's tool names mapped onto
    /// ours), in force from its loading to the end of that turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<Rule>,
    /// What of the file agentbus does not apply, said when it is loaded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Skill {
    /// What the model receives when the skill is loaded (the `skill`
    /// tool's result, the prompt of `/NAME`): its base directory, then the
    /// whole body.
    pub fn loaded_text(&self) -> String {
        format!(
            "Skill `{}` loaded. Base directory for this skill: {}\n(its other files are read from there: the file tools may read that folder)\n\n{}",
            self.name,
            self.dir,
            self.body.trim()
        )
    }

    /// The listing's line for it.
    fn line(&self) -> String {
        let description: Vec<&str> = self.description.split_whitespace().collect();
        format!("\n- {}: {}", self.name, description.join(" "))
    }
}

/// A session's skills, and the files that could not be used.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skills {
    /// By name.
    pub skills: Vec<Skill>,
    /// Each a sentence naming the file (and the field) that was wrong, or
    /// the file that lost to another of the same name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The most characters the system prompt's listing may take.
    pub max_prompt_chars: usize,
}

impl Default for Skills {
    fn default() -> Self {
        Skills {
            skills: Vec::new(),
            problems: Vec::new(),
            max_prompt_chars: DEFAULT_PROMPT_CHARS,
        }
    }
}

/// The heading and the words before the list, in the system prompt.
const LISTING_HEAD: &str = "\n\n# Skills\n\nSkills are instructions for particular tasks, kept in folders. When a task matches a skill's description, call the `skill` tool with its name first: it answers with the skill's instructions and its folder, whose other files you can read. Available skills:";

impl Skills {
    /// The skills of `found`, each with where it was found: a name found
    /// twice keeps the one of the stronger scope (project over configured
    /// over user; the first found within one scope), and the other file is
    /// a problem naming both.
    pub fn with(
        found: Vec<(Scope, Skill)>,
        mut problems: Vec<String>,
        max_prompt_chars: usize,
    ) -> Self {
        let mut kept: Vec<(Scope, Skill)> = Vec::new();
        for (scope, skill) in found {
            match kept.iter_mut().find(|(_, k)| k.name == skill.name) {
                Some((kept_scope, kept_skill)) if scope > *kept_scope => {
                    problems.push(format!(
                        "{}: the skill `{}` is also defined by {} ({} skill), which is used: {} skills win over {} ones",
                        kept_skill.source,
                        skill.name,
                        skill.source,
                        scope.word(),
                        scope.word(),
                        kept_scope.word()
                    ));
                    *kept_scope = scope;
                    *kept_skill = skill;
                }
                Some((kept_scope, kept_skill)) => problems.push(format!(
                    "{}: the skill `{}` is also defined by {} ({} skill), which is used{}",
                    skill.source,
                    skill.name,
                    kept_skill.source,
                    kept_scope.word(),
                    if scope == *kept_scope {
                        " (it was found first)".to_string()
                    } else {
                        format!(
                            ": {} skills win over {} ones",
                            kept_scope.word(),
                            scope.word()
                        )
                    }
                )),
                None => kept.push((scope, skill)),
            }
        }
        let mut skills: Vec<Skill> = kept.into_iter().map(|(_, s)| s).collect();
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        Skills {
            skills,
            problems,
            max_prompt_chars,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The names, comma-separated.
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        names.join(", ")
    }

    /// How many skills the listing holds: those, in name order, whose
    /// lines fit in [`max_prompt_chars`](Self::max_prompt_chars) with the
    /// heading.
    pub fn listed(&self) -> usize {
        let mut used = LISTING_HEAD.chars().count();
        let mut listed = 0;
        for skill in &self.skills {
            used += skill.line().chars().count();
            if used > self.max_prompt_chars {
                break;
            }
            listed += 1;
        }
        listed
    }

    /// The skills the listing leaves out (over the budget).
    pub fn left_out(&self) -> &[Skill] {
        &self.skills[self.listed()..]
    }

    /// What joins the system prompt: a heading, what the `skill` tool is
    /// for, then one line per listed skill — name and description, never
    /// a body (empty without skills, or when none fits).
    pub fn section(&self) -> String {
        let listed = self.listed();
        if listed == 0 {
            return String::new();
        }
        let mut section = LISTING_HEAD.to_string();
        for skill in &self.skills[..listed] {
            section.push_str(&skill.line());
        }
        section
    }

    /// What the user is told when the session starts: each file that could
    /// not be used, and the skills the listing has no room for.
    pub fn notices(&self) -> Vec<String> {
        let mut notices: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("Skill file not used: {p}"))
            .collect();
        if let Some(line) = self.left_out_line() {
            notices.push(line);
        }
        notices
    }

    /// The sentence about skills the listing leaves out, if any.
    pub fn left_out_line(&self) -> Option<String> {
        let left_out = self.left_out();
        if left_out.is_empty() {
            return None;
        }
        let names: Vec<&str> = left_out.iter().map(|s| s.name.as_str()).collect();
        Some(format!(
            "{} not listed to the model: the skills' listing is capped at {} characters of the system prompt ([skills] max_prompt_chars). Left out: {}. They still load with /NAME or when the model calls `skill` by name.",
            crate::text::count(left_out.len() as u64, "skill"),
            self.max_prompt_chars,
            names.join(", ")
        ))
    }

    /// The `skill` tool as the model sees it.
    pub fn tool_spec(&self) -> ToolSpec {
        ToolSpec {
            name: SKILL_TOOL.into(),
            description: "Load a skill: its full instructions and the folder its other files are in. Call it with a skill's name (see the skills listed in the system prompt) as soon as a task matches the skill's description, before doing the task; then follow the instructions.".into(),
            input_schema: std::sync::Arc::new(serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed"}
                },
                "required": ["name"],
                "additionalProperties": false
            })),
            origin: ToolOrigin::Builtin,
        }
    }

    /// The `skill` tool's answer to `input`: the skill's loaded text and
    /// its `allowed-tools` (for the rest of the turn), or an error listing
    /// the skills.
    pub fn answer(&self, input: &serde_json::Value) -> (ToolOutcome, Vec<Rule>) {
        let Some(name) = input.get("name").and_then(|n| n.as_str()) else {
            return (
                ToolOutcome::error(format!(
                    "`name` is missing: call `skill` with {{\"name\": SKILL}}, one of: {}",
                    self.names()
                )),
                Vec::new(),
            );
        };
        let name = name.trim().trim_start_matches('/');
        match self.get(name) {
            Some(skill) => {
                let mut text = skill.loaded_text();
                for note in &skill.notes {
                    text.push_str(&format!("\n\n[agentbus: {note}]"));
                }
                (
                    ToolOutcome {
                        output: text,
                        is_error: false,
                        duration_ms: 0,
                    },
                    skill.allowed_tools.clone(),
                )
            }
            None => (
                ToolOutcome::error(format!(
                    "unknown skill `{name}`; the skills are: {}",
                    self.names()
                )),
                Vec::new(),
            ),
        }
    }

    /// `commands` with each skill as `/NAME` too (its prompt the loaded
    /// text, `$ARGUMENTS` filled in: [`expand`]): a command file
    /// of the same name keeps it, and a name `built_in` claims is not
    /// typeable (a problem; the model still loads the skill).
    pub fn join_commands(
        &self,
        mut commands: CustomCommands,
        built_in: impl Fn(&str) -> bool,
    ) -> CustomCommands {
        for skill in &self.skills {
            if built_in(&skill.name) {
                commands.problems.push(format!(
                    "{}: `/{}` is a built-in command, so this skill is not typed as a command (the model still loads it with the `skill` tool)",
                    skill.source, skill.name
                ));
                continue;
            }
            if commands.commands.iter().any(|c| c.name == skill.name) {
                continue;
            }
            commands.commands.push(CustomCommand {
                name: skill.name.clone(),
                description: skill.description.clone(),
                argument_hint: None,
                prompt: skill.loaded_text(),
                model: None,
                allowed_tools: skill.allowed_tools.clone(),
                source: skill.source.clone(),
                notes: skill.notes.clone(),
                skill: true,
            });
        }
        commands.commands.sort_by(|a, b| a.name.cmp(&b.name));
        commands
    }

    /// The folders the file tools may read without asking: each skill's.
    pub fn read_roots(&self) -> Vec<std::path::PathBuf> {
        self.skills
            .iter()
            .map(|s| std::path::PathBuf::from(&s.dir))
            .collect()
    }
}

/// A skill's `prompt` typed as `/NAME arguments`: `$ARGUMENTS` is the
/// arguments as typed; without it, non-empty arguments are appended as
/// `ARGUMENTS: …` (as for a command file). `$1` and the like stay as
/// written: they are the skill's scripts'.
pub fn expand(prompt: &str, arguments: &str) -> String {
    if prompt.contains("$ARGUMENTS") {
        return prompt.replace("$ARGUMENTS", arguments);
    }
    if arguments.is_empty() {
        return prompt.to_string();
    }
    format!("{}\n\nARGUMENTS: {arguments}", prompt.trim_end())
}
