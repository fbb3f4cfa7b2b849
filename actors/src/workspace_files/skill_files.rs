//! The Agent Skills of a session in a workspace: each `NAME/SKILL.md` of
//! the user's `~/.claude/skills/` and `~/.agents/skills/`, then of the
//! folders `[skills] paths` names, then of the workspace's
//! `.claude/skills/` and `.agents/skills/`. A name found twice keeps the
//! project's over the configured one over the user's (the first found
//! within one of those), and the other file is a problem naming both.
//!
//! The I/O half of `session::core::skills` (the core must not read
//! files): called when a session is created or loaded; the bodies are read
//! here, whole, so that the core answers the `skill` tool without I/O. A
//! file that cannot be used — unreadable, no front matter, a wrong field,
//! a folder without `SKILL.md` — becomes a problem naming the file and the
//! field, which the session shows as a notice; the others still load.
//! Never fails a session, never reads anything but the `SKILL.md` files.

use super::{markdown_files, skill_markdown};
use crate::permissions::normalize;
use crate::session::core::skills::{Scope, Skills};
use crate::settings::SkillSettings;
use std::path::{Path, PathBuf};

/// The name of a skill's file in its folder.
pub const SKILL_FILE: &str = "SKILL.md";

/// The folders of skills read, each with its scope, in order: `home` is
/// `$HOME`; relative `[skills] paths` are taken from `workspace`.
pub fn folders(
    home: Option<&Path>,
    settings: &SkillSettings,
    workspace: &Path,
) -> Vec<(Scope, PathBuf)> {
    let mut dirs: Vec<(Scope, PathBuf)> = Vec::new();
    let project = [
        workspace.join(".claude").join("skills"),
        workspace.join(".agents").join("skills"),
    ];
    if let Some(home) = home {
        for dir in [
            home.join(".claude").join("skills"),
            home.join(".agents").join("skills"),
        ] {
            // A session in the home folder: those are the project's.
            if !project.contains(&dir) {
                dirs.push((Scope::User, dir));
            }
        }
    }
    for path in &settings.paths {
        let dir = match (path.strip_prefix("~"), home) {
            (Ok(rest), Some(home)) => home.join(rest),
            (Ok(_), None) => continue,
            (Err(_), _) => workspace.join(path),
        };
        dirs.push((Scope::Configured, normalize(&dir)));
    }
    dirs.extend(project.into_iter().map(|dir| (Scope::Project, dir)));
    dirs
}

/// Every skill of a session in `workspace`.
pub fn read(home: Option<&Path>, settings: &SkillSettings, workspace: &Path) -> Skills {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for (scope, dir) in folders(home, settings, workspace) {
        if scope == Scope::Configured && !dir.is_dir() {
            problems.push(format!(
                "{}: [skills] paths names this folder, which is not there (expected a folder holding NAME/{SKILL_FILE} folders)",
                dir.display()
            ));
            continue;
        }
        for folder in skill_folders(&dir, &mut problems) {
            match read_skill(&folder) {
                Ok(skill) => found.push((scope, skill)),
                Err(why) => problems.push(why),
            }
        }
    }
    let skills = Skills::with(found, problems, settings.max_prompt_chars);
    for problem in &skills.problems {
        tracing::warn!("skill not used: {problem}");
    }
    skills
}

/// The subfolders of `dir`, in name order, hidden ones left out; a
/// missing folder holds none, one that cannot be read is a problem.
fn skill_folders(dir: &Path, problems: &mut Vec<String>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            problems.push(format!("{}: the folder cannot be read: {e}", dir.display()));
            return Vec::new();
        }
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    folders.sort();
    folders
}

/// The skill of `folder`, or a problem naming its file (and field).
fn read_skill(folder: &Path) -> Result<crate::session::core::skills::Skill, String> {
    let path = folder.join(SKILL_FILE);
    let shown = path.display().to_string();
    if !path.exists() {
        return Err(format!(
            "{shown}: missing; a skill's folder holds a {SKILL_FILE} with `name` and `description` in its front matter"
        ));
    }
    let text = markdown_files::read_text(&path).map_err(|why| format!("{shown}: {why}"))?;
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = normalize(folder).display().to_string();
    skill_markdown::parse(&text, &name, &dir, &shown).map_err(|why| format!("{shown}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::super::write_test_file as write;
    use super::*;

    fn skill(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\nThe {name} body.\n")
    }

    #[test]
    fn project_skills_win_over_configured_and_user_ones_and_the_loser_is_named() {
        let home = tempfile::tempdir().expect("home");
        let extra = tempfile::tempdir().expect("configured");
        let ws = tempfile::tempdir().expect("workspace");
        write(
            home.path(),
            ".claude/skills/deploy/SKILL.md",
            &skill("deploy", "from home"),
        );
        write(
            home.path(),
            ".agents/skills/mine/SKILL.md",
            &skill("mine", "home only"),
        );
        write(
            extra.path(),
            "deploy/SKILL.md",
            &skill("deploy", "configured"),
        );
        write(
            ws.path(),
            ".claude/skills/deploy/SKILL.md",
            &skill("deploy", "the project's"),
        );
        write(
            ws.path(),
            ".agents/skills/deploy/SKILL.md",
            &skill("deploy", "the project's, second"),
        );
        write(ws.path(), ".claude/skills/scripts-only/run.sh", "echo");
        write(
            ws.path(),
            ".claude/skills/broken/SKILL.md",
            "---\nname: broken\n---\nno description",
        );
        let settings = SkillSettings {
            paths: vec![extra.path().to_path_buf(), "missing-skills".into()],
            ..SkillSettings::default()
        };
        let set = read(Some(home.path()), &settings, ws.path());
        assert_eq!(set.names(), "deploy, mine");
        let deploy = set.get("deploy").expect("deploy");
        assert_eq!(deploy.description, "the project's");
        assert_eq!(deploy.body, "The deploy body.");
        assert_eq!(
            deploy.dir,
            ws.path()
                .join(".claude/skills/deploy")
                .display()
                .to_string()
        );
        let problems = set.problems.join("\n");
        assert_eq!(set.problems.len(), 6, "{problems}");
        for expected in [
            // the user's and the configured one lose to the project's
            format!(
                "{}: the skill `deploy` is also defined by {}",
                home.path().join(".claude/skills/deploy/SKILL.md").display(),
                extra.path().join("deploy/SKILL.md").display()
            ),
            format!(
                "{}: the skill `deploy` is also defined by {} (project skill), which is used: project skills win over configured ones",
                extra.path().join("deploy/SKILL.md").display(),
                ws.path().join(".claude/skills/deploy/SKILL.md").display()
            ),
            format!(
                "{}: the skill `deploy` is also defined by {} (project skill), which is used (it was found first)",
                ws.path().join(".agents/skills/deploy/SKILL.md").display(),
                ws.path().join(".claude/skills/deploy/SKILL.md").display()
            ),
            format!(
                "{}: missing",
                ws.path()
                    .join(".claude/skills/scripts-only/SKILL.md")
                    .display()
            ),
            format!(
                "{}: field `description`",
                ws.path().join(".claude/skills/broken/SKILL.md").display()
            ),
            format!(
                "{}: [skills] paths names this folder",
                ws.path().join("missing-skills").display()
            ),
        ] {
            assert!(
                problems.contains(&expected),
                "{expected}\nnot in:\n{problems}"
            );
        }
        assert_eq!(
            set.read_roots(),
            [
                ws.path().join(".claude/skills/deploy"),
                home.path().join(".agents/skills/mine")
            ]
        );
    }
}
