//! One call's verdict: run (and with what grant), ask the user, or never.
//!
//! The rules speak first — deny, then ask, then allow (`permissions`) —
//! and the mode settles what they leave open:
//!
//! | call                               | default | accept-edits | plan       | bypass |
//! |------------------------------------|---------|--------------|------------|--------|
//! | read inside the roots⁴             | run     | run          | run        | run    |
//! | read outside                       | ask     | ask          | deny       | run    |
//! | edit or write inside the roots     | ask     | run          | deny       | run    |
//! | edit or write outside              | ask     | ask          | deny       | deny¹  |
//! | `bash`                             | ask     | ask          | ask²       | run    |
//! | `bash` outside the sandbox         | ask     | ask          | deny       | deny¹  |
//! | `bash` in the background           | ask     | ask          | deny       | run    |
//! | `bash_output`, `kill_shell`        | run     | run          | run        | run    |
//! | `web_fetch`                        | ask     | ask          | ask³       | run    |
//! | MCP and other tools                | ask     | ask          | ask        | run    |
//!
//! ¹ the sandbox holds in bypass mode unless `[sandbox] enabled = false`.
//! ² in a read-only sandbox; denied when there is no sandbox.
//! ³ it only reads, as the read-only tools do, so plan mode lets it run
//!   as the default mode does: it reads outside the workspace (the web),
//!   so it asks, per domain (`web_fetch(domain:HOST)`).
//!
//! A background `bash` call is a `bash` call with its command for the
//! rules; plan mode alone tells it apart: a process left running is no
//! investigation. `bash_output` and `kill_shell` touch only the commands
//! this session started, so no mode asks before them (rules still can).
//! ⁴ for reads, the read roots too: the folders of the session's skills.
//!
//! An allow rule runs a call the mode would ask about (plan mode still
//! writes nothing); an ask rule asks even in bypass mode; a deny rule
//! always denies.

use super::config::{PermissionConfig, PermissionState};
use crate::model::Grant;
use crate::permissions::{CallView, Decision, MatchEnv, Rule};
use crate::protocol::PermissionMode;
use std::path::{Path, PathBuf};

/// What happens to a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// It runs with this grant.
    Run(Grant),
    /// It waits for the user.
    Ask(Asking),
    /// It does not run; the model reads why.
    Deny(String),
}

/// A call that asks, and what an answer means.
#[derive(Clone, Debug, PartialEq)]
pub struct Asking {
    /// Why it asks, for the user.
    pub reason: String,
    /// What the call may do once allowed.
    pub grant: Grant,
    /// The rule `allow_always` adds; `None` when none should stand for it
    /// (a command outside the sandbox asks every time).
    pub always: Option<Rule>,
    /// The mode that would have run it without asking, if one would.
    pub mode: Option<PermissionMode>,
}

/// What kind of thing a call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Command,
    /// Reads or stops what this session started (`bash_output`,
    /// `kill_shell`).
    Own,
    /// Reads the web (`web_fetch`).
    Fetch,
    Other,
}

const READS: [&str; 4] = ["read_file", "list_dir", "glob", "grep"];
const WRITES: [&str; 2] = ["write_file", "edit_file"];
const BASH: &str = "bash";
const OWN: [&str; 2] = ["bash_output", "kill_shell"];
const WEB_FETCH: &str = "web_fetch";

fn kind(tool: &str) -> Kind {
    if READS.contains(&tool) {
        Kind::Read
    } else if WRITES.contains(&tool) {
        Kind::Write
    } else if tool == BASH {
        Kind::Command
    } else if OWN.contains(&tool) {
        Kind::Own
    } else if tool == WEB_FETCH {
        Kind::Fetch
    } else {
        Kind::Other
    }
}

/// The verdict on `tool` called with `input` in a session whose workspace
/// is `workspace`.
pub fn decide(
    config: &PermissionConfig,
    state: &PermissionState,
    workspace: &Path,
    tool: &str,
    input: &serde_json::Value,
) -> Verdict {
    let call = CallView { tool, input };
    let env = MatchEnv {
        workspace,
        home: &config.home,
    };
    let mode = state.mode;
    let kind = kind(tool);
    let path = call.path(&env);
    // A file tool call without a usable path is refused by the tool itself.
    let inside = path.as_ref().is_none_or(|p| inside_roots(p, &config.roots));
    let escalating = kind == Kind::Command
        && config.sandboxed
        && input.get("outside_sandbox").and_then(|v| v.as_bool()) == Some(true);
    let always = || Some(Rule::for_call(&call, &env));
    let grant = Grant {
        outside_roots: matches!(kind, Kind::Read | Kind::Write) && !inside,
        unsandboxed: !config.sandboxed,
        read_only: mode == PermissionMode::Plan,
    };
    // A read in a skill's folder is a read inside the roots (the tool is
    // granted the path, as an allow rule would grant it); writes there
    // follow the usual rules.
    let inside = inside
        || (kind == Kind::Read
            && path
                .as_ref()
                .is_some_and(|p| inside_roots(p, &config.read_roots)));
    let said = match state.rules(config).evaluate(&call, &env) {
        Decision::Deny(rule) => {
            return Verdict::Deny(format!(
                "Not run: the rule `{rule}` in [permissions] deny forbids this call. Do not try to get around it; tell the user if it blocks the task."
            ));
        }
        Decision::Ask(rule) => Said::Ask(rule),
        Decision::Allow(_) => Said::Allow,
        Decision::NoRule => Said::Nothing,
    };
    // Plan mode writes nothing, whatever a rule allows.
    if mode == PermissionMode::Plan {
        if kind == Kind::Write {
            return Verdict::Deny(plan_denial(tool));
        }
        if kind == Kind::Command && (escalating || !config.sandboxed) {
            return Verdict::Deny(plan_denial(tool));
        }
        if kind == Kind::Command
            && input.get("run_in_background").and_then(|v| v.as_bool()) == Some(true)
        {
            return Verdict::Deny(
                "Not run: the session is in plan mode, which starts no background commands: a process left running is not an investigation. Run the command in the foreground (without run_in_background), or make it part of your plan.".into(),
            );
        }
        if kind == Kind::Read && !inside && said != Said::Allow {
            return Verdict::Deny(format!(
                "Not run: plan mode reads only inside the workspace and the write roots, and {} is outside them. Plan with what is inside, or ask the user to allow the path with a rule.",
                path.as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ));
        }
    }
    if escalating {
        return escalation(mode, input);
    }
    match said {
        Said::Ask(rule) => Verdict::Ask(Asking {
            reason: format!("the rule `{rule}` in [permissions] ask says to ask first"),
            grant,
            always: None,
            mode: None,
        }),
        // A rule that allows a path outside the roots is the user's say-so.
        Said::Allow => Verdict::Run(grant),
        Said::Nothing => by_mode(
            mode,
            kind,
            inside,
            Target {
                path: path.as_deref(),
                host: call.host().as_deref(),
            },
            grant,
            always(),
            tool,
        ),
    }
}

/// What the rules said, once a deny rule has been ruled out.
#[derive(PartialEq)]
enum Said {
    Ask(Rule),
    Allow,
    Nothing,
}

fn plan_denial(tool: &str) -> String {
    format!(
        "Not run: the session is in plan mode, which is read-only, so `{tool}` may not change anything (commands run only in a read-only sandbox). Keep investigating with the read-only tools and present your plan; the user switches the mode (/mode default or /mode accept-edits) to carry it out."
    )
}

/// What a call works on, as its reasons name it.
struct Target<'a> {
    /// A file tool's path.
    path: Option<&'a Path>,
    /// `web_fetch`'s host.
    host: Option<&'a str>,
}

/// What the mode says about a call no rule decided.
fn by_mode(
    mode: PermissionMode,
    kind: Kind,
    inside: bool,
    Target { path, host }: Target<'_>,
    grant: Grant,
    always: Option<Rule>,
    tool: &str,
) -> Verdict {
    use PermissionMode::{AcceptEdits, Bypass, Plan};
    let shown = path.map(|p| p.display().to_string()).unwrap_or_default();
    let ask = |reason: String, mode: Option<PermissionMode>| {
        Verdict::Ask(Asking {
            reason,
            grant,
            always: always.clone(),
            mode,
        })
    };
    match (kind, mode) {
        (Kind::Read, _) if inside => Verdict::Run(grant),
        (Kind::Read, Bypass) => Verdict::Run(grant),
        (Kind::Read, _) => ask(
            format!("{tool} reads {shown}, outside the workspace and the write roots"),
            Some(Bypass),
        ),
        (Kind::Write, AcceptEdits | Bypass) if inside => Verdict::Run(grant),
        (Kind::Write, Bypass) if grant.unsandboxed => Verdict::Run(grant),
        (Kind::Write, Bypass) => Verdict::Deny(format!(
            "Not run: {shown} is outside the workspace and the write roots, and the sandbox holds in bypass mode. Write inside the workspace, or ask the user to add the directory to [sandbox] write_roots."
        )),
        (Kind::Write, _) if inside => ask(
            format!("{tool} changes {shown}; {mode} mode asks before edits"),
            Some(AcceptEdits),
        ),
        (Kind::Write, _) => ask(
            format!("{tool} changes {shown}, outside the workspace and the write roots"),
            None,
        ),
        (Kind::Own, _) => Verdict::Run(grant),
        (Kind::Command, Bypass) | (Kind::Fetch, Bypass) | (Kind::Other, Bypass) => {
            Verdict::Run(grant)
        }
        (Kind::Fetch, _) => ask(
            format!(
                "web_fetch reads {} from the web; {mode} mode asks before each domain",
                host.unwrap_or("a page")
            ),
            Some(Bypass),
        ),
        (Kind::Command, Plan) => ask(
            "bash runs a command (in a read-only sandbox: plan mode)".into(),
            None,
        ),
        (Kind::Command, _) => ask(
            format!(
                "bash runs a command{}; {mode} mode asks before commands",
                if grant.unsandboxed {
                    " without a sandbox"
                } else {
                    " in the sandbox"
                }
            ),
            Some(Bypass),
        ),
        (Kind::Other, _) => ask(
            format!("{tool} is not a built-in read; {mode} mode asks before it runs"),
            Some(Bypass),
        ),
    }
}

/// A `bash` call asking to leave the sandbox (Codex's escalation).
fn escalation(mode: PermissionMode, input: &serde_json::Value) -> Verdict {
    if mode == PermissionMode::Bypass {
        return Verdict::Deny(
            "Not run: the sandbox holds in bypass mode, so commands cannot run outside it. Find a way that writes only inside the workspace, or tell the user what must run outside (they can set [sandbox] enabled = false).".into(),
        );
    }
    let why = input
        .get("justification")
        .and_then(|v| v.as_str())
        .filter(|s| !s.trim().is_empty())
        .map(|s| format!(": {}", s.trim()))
        .unwrap_or_default();
    Verdict::Ask(Asking {
        reason: format!("bash asks to run a command OUTSIDE the sandbox{why}"),
        grant: Grant {
            unsandboxed: true,
            ..Grant::default()
        },
        always: None,
        mode: None,
    })
}

/// Whether `path` is one of the roots or beneath one.
pub fn inside_roots(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| path.starts_with(root))
}
