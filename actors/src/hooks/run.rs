//! Running the hooks of one event: each matched handler at once, each
//! with its timeout, then their answers folded into one.
//!
//! A `command` hook is `bash -c COMMAND` in the workspace, in its own
//! process group (killed whole at its timeout), with the environment the
//! tools' commands get (agentbus's secrets scrubbed) plus
//! `CLAUDE_PROJECT_DIR`/`AGENTBUS_PROJECT_DIR`, and the event as JSON on
//! stdin. An `http` hook POSTs the same JSON. Every run is reported
//! ([`HookRan`]), whatever it answered; none can fail this function.

use super::answer::{self, Ended};
use crate::protocol::hook::{HookAnswer, HookEvent, HookHandler, HookRan};
use crate::settings::EnvironmentPolicy;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// Where the hooks of a session run.
#[derive(Clone, Debug)]
pub struct HookContext {
    pub workspace: PathBuf,
    pub environment: EnvironmentPolicy,
    pub session_id: String,
}

/// A hook to run, with the file it came from.
#[derive(Clone, Debug)]
pub struct Matched {
    pub handler: HookHandler,
    pub source: String,
}

/// Run `matched` for `event` (about tool `tool`, if any) with `fields`,
/// the event's own part of the JSON (`tool_name`, `tool_input`, `prompt`,
/// ...); `permission_mode` is the session's. Returns the folded answer and
/// one report per hook, in the order given.
pub async fn run(
    event: HookEvent,
    tool: Option<&str>,
    matched: Vec<Matched>,
    fields: Map<String, Value>,
    permission_mode: &str,
    ctx: &HookContext,
) -> (HookAnswer, Vec<HookRan>) {
    let mut input = Map::new();
    input.insert("session_id".into(), Value::from(ctx.session_id.clone()));
    input.insert("transcript_path".into(), Value::Null);
    input.insert(
        "cwd".into(),
        Value::from(ctx.workspace.display().to_string()),
    );
    input.insert("permission_mode".into(), Value::from(permission_mode));
    input.insert("hook_event_name".into(), Value::from(event.name()));
    input.extend(fields);
    let body = Value::Object(input).to_string();
    let runs = matched.into_iter().map(|m| {
        let body = body.clone();
        async move {
            let started = Instant::now();
            let ended = match &m.handler {
                HookHandler::Command { command, .. } => {
                    run_command(command, &body, m.handler.timeout_secs(), ctx).await
                }
                HookHandler::Http {
                    url,
                    headers,
                    allowed_env_vars,
                    ..
                } => {
                    post(
                        url,
                        headers,
                        allowed_env_vars,
                        &body,
                        m.handler.timeout_secs(),
                    )
                    .await
                }
            };
            let (answer, outcome) = answer::read(event, ended);
            let ran = HookRan {
                event,
                handler: m.handler.label(),
                source: m.source,
                tool: tool.map(str::to_string),
                duration_ms: started.elapsed().as_millis() as u64,
                outcome,
            };
            (answer, ran)
        }
    });
    let (answers, ran): (Vec<_>, Vec<_>) =
        futures::future::join_all(runs).await.into_iter().unzip();
    (answer::fold(answers), ran)
}

/// The most a hook's stdout or stderr is kept.
const MAX_OUTPUT: usize = 256 * 1024;

async fn run_command(command: &str, body: &str, timeout_secs: u64, ctx: &HookContext) -> Ended {
    let workspace = ctx.workspace.display().to_string();
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .envs(crate::tools::environment::from_process(&ctx.environment))
        .env("CLAUDE_PROJECT_DIR", &workspace)
        .env("AGENTBUS_PROJECT_DIR", &workspace)
        .env("AGENTBUS_SESSION_ID", &ctx.session_id)
        .current_dir(&ctx.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return Ended::Failed(format!("could not start `bash -c`: {e}")),
    };
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(nix::unistd::Pid::from_raw);
    if let Some(mut stdin) = child.stdin.take() {
        let body = body.as_bytes().to_vec();
        // A hook that does not read its stdin is not an error.
        tokio::spawn(async move {
            let _ = stdin.write_all(&body).await;
        });
    }
    let waited =
        tokio::time::timeout(Duration::from_secs(timeout_secs), child.wait_with_output()).await;
    // Whatever it left running goes with it (a finished hook's group is
    // usually empty already).
    if let Some(group) = group {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    }
    match waited {
        Err(_) => Ended::Failed(format!("timed out after {timeout_secs} s and was stopped")),
        Ok(Err(e)) => Ended::Failed(format!("lost track of it: {e}")),
        Ok(Ok(output)) => Ended::Exited {
            code: output.status.code(),
            stdout: lossy(&output.stdout),
            stderr: lossy(&output.stderr),
        },
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_OUTPUT)]).into_owned()
}

async fn post(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    allowed: &[String],
    body: &str,
    timeout_secs: u64,
) -> Ended {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(timeout_secs))
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(e) => return Ended::Failed(format!("no HTTP client: {e}")),
    };
    let mut request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(name, fill(value, allowed, |v| std::env::var(v).ok()));
    }
    match request.send().await {
        Err(e) if e.is_timeout() => Ended::Failed(format!("timed out after {timeout_secs} s")),
        Err(e) => Ended::Failed(format!("POST {url} failed: {e}")),
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            Ended::Answered {
                status,
                body: crate::text::ellipsize(&body, MAX_OUTPUT),
            }
        }
    }
}

/// `value` with `$VAR` and `${VAR}` filled in for the variables in
/// `allowed` (others become empty, as in Claude Code: a header never
/// carries a variable the hook did not name).
fn fill(value: &str, allowed: &[String], var: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, next) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], &inner[end + 1..]),
                None => ("", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        if allowed.iter().any(|a| a == name) {
            out.push_str(&var(name).unwrap_or_default());
        }
        rest = next;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::hook::{HookDecision, HookOutcome};
    use serde_json::json;

    fn ctx(dir: &std::path::Path) -> HookContext {
        HookContext {
            workspace: dir.to_path_buf(),
            environment: Default::default(),
            session_id: "s1".into(),
        }
    }

    fn command(text: &str, timeout: Option<u64>) -> Matched {
        Matched {
            handler: HookHandler::Command {
                command: text.into(),
                timeout,
            },
            source: "test".into(),
        }
    }

    #[test]
    fn only_named_variables_reach_a_header() {
        let var = |name: &str| Some(format!("<{name}>"));
        let allowed = ["TOKEN".to_string()];
        assert_eq!(fill("Bearer $TOKEN", &allowed, var), "Bearer <TOKEN>");
        assert_eq!(fill("${TOKEN}-$SECRET!", &allowed, var), "<TOKEN>-!");
        assert_eq!(fill("costs $5 or $", &allowed, var), "costs  or $");
    }

    #[tokio::test]
    async fn a_command_reads_the_event_on_stdin_and_exit_2_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let guard = r#"input=$(cat); case "$input" in *'rm -rf'*) echo "no rm -rf in $CLAUDE_PROJECT_DIR" >&2; exit 2;; esac"#;
        let fields = |cmd: &str| {
            let mut map = Map::new();
            map.insert("tool_name".into(), json!("bash"));
            map.insert("tool_input".into(), json!({"command": cmd}));
            map
        };
        let (answer, ran) = run(
            HookEvent::PreToolUse,
            Some("bash"),
            vec![command(guard, None)],
            fields("rm -rf /tmp/x"),
            "default",
            &ctx(dir.path()),
        )
        .await;
        assert_eq!(answer.decision, Some(HookDecision::Deny));
        let reason = answer.reason.unwrap();
        assert!(reason.starts_with("no rm -rf in /"), "{reason}");
        assert_eq!(ran.len(), 1);
        assert_eq!(ran[0].tool.as_deref(), Some("bash"));
        let (answer, ran) = run(
            HookEvent::PreToolUse,
            Some("bash"),
            vec![command(guard, None)],
            fields("ls"),
            "default",
            &ctx(dir.path()),
        )
        .await;
        assert!(answer.is_empty());
        assert_eq!(ran[0].outcome, HookOutcome::Ok);
    }

    #[tokio::test]
    async fn a_hook_past_its_timeout_is_stopped_and_blocks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (answer, ran) = run(
            HookEvent::PreToolUse,
            None,
            vec![command("sleep 30 & sleep 30", Some(1))],
            Map::new(),
            "default",
            &ctx(dir.path()),
        )
        .await;
        assert!(answer.is_empty());
        assert!(
            matches!(&ran[0].outcome, HookOutcome::Failed { error } if error.contains("timed out after 1 s")),
            "{ran:?}"
        );
    }
}
