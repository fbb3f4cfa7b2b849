//! Claude Code's names for the tools agentbus has too, in one table: agent
//! and command files name tools that way (`workspace_files::front_matter`), and
//! hook matchers match them (`hooks`). Plain data.

/// Claude Code's tool names and ours: `None` where agentbus has no
/// equivalent (the tool is left out, with a note).
pub const CLAUDE_TOOLS: &[(&str, Option<&str>)] = &[
    ("Read", Some("read_file")),
    ("Write", Some("write_file")),
    ("Edit", Some("edit_file")),
    ("MultiEdit", Some("edit_file")),
    ("Bash", Some("bash")),
    ("Grep", Some("grep")),
    ("Glob", Some("glob")),
    ("LS", Some("list_dir")),
    ("Task", Some("task")),
    ("Agent", Some("task")),
    ("WebFetch", Some("web_fetch")),
    ("WebSearch", None),
    ("NotebookEdit", None),
    ("NotebookRead", None),
    ("TodoWrite", Some("todo_write")),
    ("BashOutput", Some("bash_output")),
    ("KillShell", Some("kill_shell")),
    ("KillBash", Some("kill_shell")),
    ("SlashCommand", None),
    ("Skill", Some("skill")),
];

/// The name Claude Code gives our tool `ours`, when it has one (the first
/// of several: `Edit` for `edit_file`, not `MultiEdit`).
pub fn claude_name(ours: &str) -> Option<&'static str> {
    CLAUDE_TOOLS
        .iter()
        .find(|(_, mapped)| *mapped == Some(ours))
        .map(|(claude, _)| *claude)
}
