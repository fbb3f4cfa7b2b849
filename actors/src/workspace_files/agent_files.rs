//! The named agents of a session in a workspace: the built-in `build` and
//! `plan`, the configured `[agents.NAME]`, then the agent files —
//! `~/.claude/agents/*.md`, the configuration directory's `agents/*.md`,
//! the workspace's `.claude/agents/*.md`, then its `.agentbus/agents/*.md`
//! (a later definition of a name replaces an earlier one).
//!
//! The I/O half of `session::core::agents` (the core must not read
//! files): called when a session is created or loaded. A file that cannot
//! be used — unreadable, no front matter, a wrong field — becomes a problem
//! naming the file and the field, which the session shows as a notice and
//! `/agent` lists; the other agents still load. Never fails a session.

use super::{agent_markdown, markdown_files};
use crate::protocol::AgentDefinition;
use crate::session::core::agents::AgentSet;
use std::path::{Path, PathBuf};

/// Where a session's agents come from besides the built-in ones.
#[derive(Clone, Debug, Default)]
pub struct AgentSources<'a> {
    /// `[agents.NAME]` of the configuration.
    pub configured: &'a [AgentDefinition],
    /// The configured model profiles (what an agent's `model` may name).
    pub profiles: Vec<String>,
    /// `$HOME` (for `~/.claude/agents`).
    pub home: Option<&'a Path>,
    /// The user's configuration directory (for its `agents/`).
    pub config_dir: Option<&'a Path>,
}

/// The folders read, in order (later wins).
pub fn folders(sources: &AgentSources<'_>, workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = sources.home {
        dirs.push(home.join(".claude").join("agents"));
    }
    if let Some(config) = sources.config_dir {
        dirs.push(config.join("agents"));
    }
    dirs.push(workspace.join(".claude").join("agents"));
    dirs.push(workspace.join(".agentbus").join("agents"));
    dirs.dedup();
    dirs
}

/// Every agent of a session in `workspace`, with `{workspace}`, `{os}` and
/// `{date}` filled in each prompt.
pub fn read(sources: &AgentSources<'_>, workspace: &Path) -> AgentSet {
    let mut definitions: Vec<AgentDefinition> = sources.configured.to_vec();
    let mut problems = Vec::new();
    for dir in folders(sources, workspace) {
        read_folder(&dir, &sources.profiles, &mut definitions, &mut problems);
    }
    let mut set = AgentSet::with(definitions, problems);
    let date = chrono::Local::now().format("%Y-%m-%d").to_string();
    for agent in &mut set.agents {
        if let Some(prompt) = agent.prompt.as_mut() {
            *prompt = prompt
                .replace("{workspace}", &workspace.display().to_string())
                .replace("{os}", std::env::consts::OS)
                .replace("{date}", &date);
        }
    }
    for problem in &set.problems {
        tracing::warn!("agent file not used: {problem}");
    }
    set
}

/// The `*.md` files of `dir`, in name order; a missing folder adds nothing.
fn read_folder(
    dir: &Path,
    profiles: &[String],
    definitions: &mut Vec<AgentDefinition>,
    problems: &mut Vec<String>,
) {
    for path in markdown_files::list(dir, false, problems) {
        match read_file(&path, profiles) {
            Ok(definition) => definitions.push(definition),
            Err(why) => problems.push(format!("{}: {why}", path.display())),
        }
    }
}

fn read_file(path: &Path, profiles: &[String]) -> Result<AgentDefinition, String> {
    let text = markdown_files::read_text(path)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    agent_markdown::parse(&text, stem, &path.display().to_string(), profiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_file_is_a_problem_and_the_others_still_load() {
        let ws = tempfile::tempdir().expect("tempdir");
        let claude = ws.path().join(".claude/agents");
        let ours = ws.path().join(".agentbus/agents");
        std::fs::create_dir_all(&claude).expect("mkdir");
        std::fs::create_dir_all(&ours).expect("mkdir");
        std::fs::write(
            claude.join("reviewer.md"),
            "---\nname: reviewer\ndescription: from claude\n---\nReview in {workspace}.",
        )
        .expect("write");
        std::fs::write(
            ours.join("reviewer.md"),
            "---\nname: reviewer\ndescription: ours wins\n---\nReview.",
        )
        .expect("write");
        std::fs::write(ours.join("broken.md"), "---\nmaxTurns: lots\n---\n").expect("write");
        std::fs::write(ours.join("notes.txt"), "not an agent").expect("write");
        let set = read(&AgentSources::default(), ws.path());
        assert_eq!(set.names(), "build, plan, reviewer");
        assert_eq!(
            set.get("reviewer").map(|a| a.description.as_str()),
            Some("ours wins")
        );
        assert_eq!(set.problems.len(), 1, "{:?}", set.problems);
        assert!(
            set.problems[0].contains("broken.md") && set.problems[0].contains("maxTurns"),
            "{:?}",
            set.problems
        );
        let plan = set
            .get("plan")
            .and_then(|a| a.prompt.clone())
            .unwrap_or_default();
        assert!(plan.contains(&ws.path().display().to_string()), "{plan}");
    }
}
