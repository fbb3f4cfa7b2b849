//! Reading hooks: the `hooks` block of Claude Code's settings files and
//! `[hooks]` of agentbus's configuration, one structure for both:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash",
//!   "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 30}]}]}}
//! ```
//!
//! The user's `~/.claude/settings.json` and the configuration are the
//! user's own and always run. The workspace's `.claude/settings.json` and
//! `.claude/settings.local.json` come with a repository: they run only once
//! the user trusted that exact set of hooks ([`super::trust`]); until then
//! the session says so at start, naming the files. An entry that cannot be
//! used (an unknown event, a handler type agentbus does not run, a missing
//! command) is a notice naming the file and the entry, and the rest run.
//! Reads files; never runs a hook.

use crate::protocol::hook::{HookEvent, HookGroup, HookHandler, HookSet};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The hooks of one `hooks` block (`value` is the block itself, the
/// object keyed by event name), read from `source`, and what in it could
/// not be used.
pub fn parse(value: &Value, source: &str) -> (Vec<HookGroup>, Vec<String>) {
    let mut groups = Vec::new();
    let mut problems = Vec::new();
    let Some(events) = value.as_object() else {
        problems.push(format!(
            "{source}: `hooks` is not an object of event names; hooks there are not run."
        ));
        return (groups, problems);
    };
    for (name, entries) in events {
        let Some(event) = HookEvent::from_name(name) else {
            let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
            problems.push(format!(
                "{source}: hooks.{name} is not an event agentbus runs hooks for (it knows {}); skipped.",
                known.join(", ")
            ));
            continue;
        };
        let Some(entries) = entries.as_array() else {
            problems.push(format!(
                "{source}: hooks.{name} is not a list of {{\"matcher\", \"hooks\"}} entries; skipped."
            ));
            continue;
        };
        for (index, entry) in entries.iter().enumerate() {
            let at = format!("{source}: hooks.{name}[{index}]");
            let matcher = match entry.get("matcher") {
                None | Some(Value::Null) => None,
                Some(Value::String(m)) => Some(m.clone()).filter(|m| !m.is_empty()),
                Some(_) => {
                    problems.push(format!("{at}.matcher is not a string; entry skipped."));
                    continue;
                }
            };
            let Some(list) = entry.get("hooks").and_then(Value::as_array) else {
                problems.push(format!("{at} has no `hooks` list; entry skipped."));
                continue;
            };
            let mut handlers = Vec::new();
            for (i, handler) in list.iter().enumerate() {
                match parse_handler(handler) {
                    Ok(h) => handlers.push(h),
                    Err(why) => problems.push(format!("{at}.hooks[{i}]: {why}; skipped.")),
                }
            }
            if !handlers.is_empty() {
                groups.push(HookGroup {
                    event,
                    matcher,
                    handlers,
                    source: source.to_string(),
                });
            }
        }
    }
    (groups, problems)
}

fn parse_handler(handler: &Value) -> Result<HookHandler, String> {
    let text = |key: &str| handler.get(key).and_then(Value::as_str).map(str::to_string);
    let timeout = match handler.get("timeout") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(secs) if secs > 0.0 => Some(secs.ceil() as u64),
            _ => return Err("`timeout` is not a positive number of seconds".into()),
        },
    };
    match text("type").as_deref() {
        Some("command") => {
            let command = text("command")
                .filter(|c| !c.trim().is_empty())
                .ok_or("a `command` hook has no `command`")?;
            Ok(HookHandler::Command { command, timeout })
        }
        Some("http") => {
            let url = text("url").ok_or("an `http` hook has no `url`")?;
            let parsed = url::Url::parse(&url).map_err(|e| format!("`url` {url:?}: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!("`url` {url:?} is not http or https"));
            }
            let headers = match handler.get("headers") {
                None | Some(Value::Null) => Default::default(),
                Some(Value::Object(map)) => map
                    .iter()
                    .map(|(k, v)| match v.as_str() {
                        Some(v) => Ok((k.clone(), v.to_string())),
                        None => Err(format!("header {k:?} is not a string")),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("`headers` is not an object".into()),
            };
            let allowed_env_vars = handler
                .get("allowedEnvVars")
                .or_else(|| handler.get("allowed_env_vars"))
                .and_then(Value::as_array)
                .map(|vars| {
                    vars.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            Ok(HookHandler::Http {
                url,
                headers,
                allowed_env_vars,
                timeout,
            })
        }
        Some(other) => Err(format!(
            "hooks of type {other:?} are not run by agentbus (it runs `command` and `http` hooks)"
        )),
        None => Err("no `type` (`command` or `http`)".into()),
    }
}

/// The settings files a workspace's hooks come from, in the order they
/// are read.
pub fn project_files(workspace: &Path) -> [PathBuf; 2] {
    let dir = workspace.join(".claude");
    [dir.join("settings.json"), dir.join("settings.local.json")]
}

/// The user's settings file (`~/.claude/settings.json`).
pub fn user_file(home: &Path) -> PathBuf {
    home.join(".claude").join("settings.json")
}

/// The `hooks` block of settings file `path`, when it has one; a file
/// that is not there has none. `shown` names it in problems.
fn read_file(path: &Path, shown: &str) -> (Vec<HookGroup>, Vec<String>) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Default::default(),
        Err(e) => return (Vec::new(), vec![format!("{shown} could not be read: {e}.")]),
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => {
            return (
                Vec::new(),
                vec![format!(
                    "{shown} is not valid JSON ({e}); its hooks are not run."
                )],
            );
        }
    };
    match value.get("hooks") {
        Some(hooks) => parse(hooks, shown),
        None => Default::default(),
    }
}

/// The workspace's own hooks (`.claude/settings.json`, then
/// `.claude/settings.local.json`), whether trusted or not, and their
/// problems. A workspace file that is the user's own (the workspace is
/// the home directory) is left to [`read`]'s user part.
pub fn read_project(workspace: &Path, home: Option<&Path>) -> (Vec<HookGroup>, Vec<String>) {
    let user = home.map(user_file).and_then(|f| f.canonicalize().ok());
    let mut groups = Vec::new();
    let mut problems = Vec::new();
    for path in project_files(workspace) {
        if user.is_some() && path.canonicalize().ok() == user {
            continue;
        }
        let shown = path
            .strip_prefix(workspace)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| path.clone());
        let (g, p) = read_file(&path, &shown.display().to_string());
        groups.extend(g);
        problems.extend(p);
    }
    (groups, problems)
}

/// Every hook a session in `workspace` runs: `configured` (`[hooks]`),
/// the user's, then the workspace's when `trusted` says the set read now
/// is the one the user trusted. Untrusted project hooks are a notice.
pub fn read(
    configured: &[HookGroup],
    home: Option<&Path>,
    workspace: &Path,
    trusted: impl FnOnce(&[HookGroup]) -> bool,
) -> HookSet {
    let mut set = HookSet {
        groups: configured.to_vec(),
        notices: Vec::new(),
    };
    if let Some(home) = home {
        let (groups, problems) = read_file(&user_file(home), "~/.claude/settings.json");
        set.groups.extend(groups);
        set.notices.extend(problems);
    }
    let (project, problems) = read_project(workspace, home);
    set.notices.extend(problems);
    if project.is_empty() {
        return set;
    }
    if trusted(&project) {
        set.groups.extend(project);
    } else {
        let mut files: Vec<&str> = project.iter().map(|g| g.source.as_str()).collect();
        files.dedup();
        let count: usize = project.iter().map(|g| g.handlers.len()).sum();
        set.notices.push(format!(
            "{} in {} {} not run: they run commands on this machine, so they wait until you trust them. Look at them, then run `agentbus hooks trust` in {} (the terminal chat asks when it starts).",
            crate::text::count(count as u64, "hook"),
            files.join(" and "),
            if count == 1 { "is" } else { "are" },
            workspace.display()
        ));
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_code_hook_blocks_are_read_as_they_are() {
        let block = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "./guard.sh"},
                {"type": "http", "url": "http://127.0.0.1:9/h", "headers": {"Authorization": "Bearer $T"}, "allowedEnvVars": ["T"], "timeout": 5}
            ]}],
            "Stop": [{"hooks": [{"type": "command", "command": "make check", "timeout": 120}]}]
        });
        let (groups, problems) = parse(&block, ".claude/settings.json");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(groups.len(), 2);
        let pre = groups
            .iter()
            .find(|g| g.event == HookEvent::PreToolUse)
            .unwrap();
        assert_eq!(pre.matcher.as_deref(), Some("Bash"));
        assert_eq!(pre.handlers.len(), 2);
        assert!(
            matches!(&pre.handlers[1], HookHandler::Http { allowed_env_vars, timeout: Some(5), .. } if allowed_env_vars == &["T"])
        );
        let stop = groups.iter().find(|g| g.event == HookEvent::Stop).unwrap();
        assert_eq!(stop.handlers[0].timeout_secs(), 120);
    }

    #[test]
    fn what_cannot_be_used_is_named_with_its_file_and_place() {
        let block = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "prompt", "prompt": "is this safe?"},
                {"type": "command"},
                {"type": "command", "command": "ok.sh"}
            ]}],
            "BeforeEverything": []
        });
        let (groups, problems) = parse(&block, ".claude/settings.json");
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].handlers.len(), 1);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.contains("hooks.BeforeEverything")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("hooks.PreToolUse[0].hooks[0]") && p.contains("\"prompt\"")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("hooks.PreToolUse[0].hooks[1]") && p.contains("no `command`")),
            "{problems:?}"
        );
    }

    #[test]
    fn project_hooks_run_only_when_trusted() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".claude")).unwrap();
        std::fs::write(
            ws.path().join(".claude/settings.json"),
            json!({"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}]}}).to_string(),
        )
        .unwrap();
        let untrusted = read(&[], None, ws.path(), |_| false);
        assert!(untrusted.groups.is_empty());
        assert_eq!(untrusted.notices.len(), 1);
        assert!(
            untrusted.notices[0].contains(".claude/settings.json"),
            "{:?}",
            untrusted.notices
        );
        assert!(untrusted.notices[0].contains("agentbus hooks trust"));
        let trusted = read(&[], None, ws.path(), |_| true);
        assert_eq!(trusted.groups.len(), 1);
        assert!(trusted.notices.is_empty());
    }

    #[test]
    fn a_settings_file_that_is_not_json_is_a_notice() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".claude")).unwrap();
        std::fs::write(ws.path().join(".claude/settings.local.json"), "{ nope").unwrap();
        let set = read(&[], None, ws.path(), |_| true);
        assert!(set.groups.is_empty());
        assert!(
            set.notices[0].contains(".claude/settings.local.json is not valid JSON"),
            "{:?}",
            set.notices
        );
    }
}
