//! The `bash_output` tool: what a background command (`bash` with
//! `run_in_background`) wrote since the last read, and whether it still
//! runs.
//!
//! It reads only the commands of the calling session (its
//! `BackgroundCommands`, `tools/background.rs`), so the permission layer
//! lets it run without asking. It must never return output twice, never
//! block past its `wait_secs` (nor past an interrupt), and never keep more
//! than the newest `[tools] max_output_bytes` of a command's output.

use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::tools::background::Reading;
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

/// Longest wait a call may ask for; longer ones are clamped.
pub const MAX_WAIT_SECS: u64 = 120;

#[derive(Clone, Debug)]
pub struct BashOutput;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The id bash returned (`bash_1`).
    pub id: String,
    /// Seconds to wait for new output or the end when there is none yet
    /// (default 0, at most 120).
    #[serde(default)]
    pub wait_secs: Option<u64>,
}

impl BuiltinTool for BashOutput {
    const NAME: &'static str = "bash_output";
    const DESCRIPTION: &'static str = "Read what a bash command started with \
        `run_in_background: true` wrote since the last read, and whether it still runs or how \
        it ended (its exit code). Only the newest output is kept between reads; dropped bytes \
        are counted. `wait_secs` waits for new output or the end instead of polling.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        bash_output(params, ctx)
    }
}

async fn bash_output(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let wait = Duration::from_secs(params.wait_secs.unwrap_or(0).min(MAX_WAIT_SECS));
    let reading = ctx
        .background
        .read(&params.id, wait, &ctx.cancel)
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let failed = reading.ended.is_some() && !reading.success;
    let text = render(&reading);
    Ok(if failed {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    })
}

/// A reading as the model sees it: a status line, then the new output.
pub(super) fn render(reading: &Reading) -> String {
    let status = match &reading.ended {
        None => format!("`{}` is still running.", reading.id),
        Some(how) if reading.output_open => format!(
            "`{}` has ended ({how}); a process it started still holds its output open.",
            reading.id
        ),
        Some(how) => format!("`{}` has ended ({how}).", reading.id),
    };
    let mut text = status;
    if reading.dropped > 0 {
        text.push_str(&format!(
            " {} bytes of its output were dropped before what follows (only the newest is kept \
             between reads).",
            reading.dropped
        ));
    }
    if reading.output.is_empty() {
        text.push_str("\n(no new output)");
    } else {
        text.push_str("\nNew output:\n");
        text.push_str(&reading.output);
    }
    text
}

/// Background commands through the three tools: `bash` with
/// `run_in_background`, `bash_output`, `kill_shell`, on one session's
/// handle (the context's).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use crate::tools::builtin::bash::Bash;
    use crate::tools::builtin::kill_shell::KillShell;
    use crate::tools::test_tools::{make_fifo, process_exits, read_pid};
    use serde_json::{Value, json};
    use std::path::Path;

    async fn start(ctx: &ToolContext, command: &str) -> Result<ToolOutput, ToolError> {
        Bash.call(
            json!({"command": command, "run_in_background": true}),
            ctx.clone(),
        )
        .await
    }

    async fn output(ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        BashOutput.call(args, ctx.clone()).await
    }

    async fn kill(ctx: &ToolContext, id: &str) -> Result<ToolOutput, ToolError> {
        KillShell.call(json!({ "id": id }), ctx.clone()).await
    }

    /// Writes `line` into the FIFO at `path` (blocks until the command
    /// opens it for reading).
    async fn release(path: &Path, line: &str) {
        let (path, line) = (path.to_path_buf(), line.to_string());
        tokio::task::spawn_blocking(move || std::fs::write(path, line))
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn a_background_command_is_read_twice_seeing_only_new_output_then_killed() {
        let dir = tempfile::tempdir().unwrap();
        let gate = dir.path().join("gate.fifo");
        make_fifo(&gate);
        let ctx = ToolContext::new(dir.path());
        let started = start(
            &ctx,
            "echo $$ > leader.pid; sleep 600 & echo $! > child.pid; echo one; read _ < gate.fifo; \
             echo two; wait",
        )
        .await
        .unwrap();
        assert!(!started.is_error, "{}", started.text);
        assert!(started.text.contains("`bash_1`"), "{}", started.text);
        assert!(started.text.contains("bash_output"), "{}", started.text);
        assert_eq!(ctx.background.running(), ["bash_1"]);

        let first = output(&ctx, json!({"id": "bash_1", "wait_secs": 30}))
            .await
            .unwrap();
        assert!(!first.is_error, "{}", first.text);
        assert!(
            first.text.starts_with("`bash_1` is still running."),
            "{}",
            first.text
        );
        assert!(first.text.ends_with("New output:\none\n"), "{}", first.text);

        release(&gate, "go\n").await;
        let second = output(&ctx, json!({"id": "bash_1", "wait_secs": 30}))
            .await
            .unwrap();
        assert!(second.text.contains("is still running"), "{}", second.text);
        assert!(
            second.text.ends_with("New output:\ntwo\n"),
            "{}",
            second.text
        );
        assert!(!second.text.contains("one"), "{}", second.text);

        let nothing = output(&ctx, json!({"id": "bash_1"})).await.unwrap();
        assert!(
            nothing.text.ends_with("(no new output)"),
            "{}",
            nothing.text
        );

        let killed = kill(&ctx, "bash_1").await.unwrap();
        assert!(!killed.is_error, "{}", killed.text);
        assert!(
            killed.text.starts_with("Stopped `bash_1`"),
            "{}",
            killed.text
        );
        assert!(
            killed.text.contains("has ended (signal 15 (SIGTERM))"),
            "{}",
            killed.text
        );
        for pid in ["leader.pid", "child.pid"] {
            let pid = read_pid(&dir.path().join(pid));
            assert!(process_exits(pid).await, "{pid} survived kill_shell");
        }
        assert!(ctx.background.running().is_empty());
        let gone = output(&ctx, json!({"id": "bash_1"})).await.unwrap_err();
        assert!(
            gone.to_string().contains("no background command `bash_1`"),
            "{gone}"
        );
    }

    #[tokio::test]
    async fn a_command_that_ends_by_itself_reports_its_exit_code_once_read() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        start(&ctx, "echo bye; exit 3").await.unwrap();
        let mut seen = String::new();
        let ended = loop {
            let read = output(&ctx, json!({"id": "bash_1", "wait_secs": 30}))
                .await
                .unwrap();
            seen.push_str(&read.text);
            if read.text.contains("has ended") {
                break read;
            }
        };
        assert!(
            ended.is_error,
            "a failed command is an error: {}",
            ended.text
        );
        assert!(
            ended.text.contains("has ended (exit code 3)"),
            "{}",
            ended.text
        );
        assert!(seen.contains("bye\n"), "{seen}");
        // Ended and read: forgotten.
        assert!(output(&ctx, json!({"id": "bash_1"})).await.is_err());
    }

    #[tokio::test]
    async fn only_the_newest_output_is_kept_and_the_dropped_bytes_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.max_output_bytes = 100;
        start(&ctx, "seq 1 10000").await.unwrap();
        let (mut kept, mut dropped) = (String::new(), 0u64);
        loop {
            let read = output(&ctx, json!({"id": "bash_1", "wait_secs": 30}))
                .await
                .unwrap();
            let (head, body) = read.text.split_once('\n').unwrap();
            if let Some(n) = head.split(" bytes of its output were dropped").next()
                && let Some(n) = n.rsplit(' ').next()
                && let Ok(n) = n.parse::<u64>()
            {
                dropped += n;
            }
            let body = body.strip_prefix("New output:\n").unwrap_or("");
            assert!(body.len() <= 100, "{}", read.text);
            kept.push_str(body);
            if head.contains("has ended") {
                break;
            }
        }
        let all: String = (1..=10000).map(|n| format!("{n}\n")).collect();
        assert!(dropped > 0);
        assert_eq!(kept.len() as u64 + dropped, all.len() as u64);
        assert!(kept.ends_with("9999\n10000\n"), "{kept}");
    }

    #[tokio::test]
    async fn a_start_beyond_the_session_limit_is_refused_until_one_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.max_background_commands = 2;
        for _ in 0..2 {
            let out = start(&ctx, "exec sleep 600").await.unwrap();
            assert!(!out.is_error, "{}", out.text);
        }
        let refused = start(&ctx, "touch third").await.unwrap_err().to_string();
        assert!(
            refused.contains("not started: 2 background commands"),
            "{refused}"
        );
        assert!(refused.contains("bash_1 (`exec sleep 600`)"), "{refused}");
        assert!(
            refused.contains("[tools] max_background_commands"),
            "{refused}"
        );
        assert!(refused.contains("kill_shell"), "{refused}");
        assert!(!dir.path().join("third").exists(), "a refused start ran");

        kill(&ctx, "bash_2").await.unwrap();
        let third = start(&ctx, "exec sleep 600").await.unwrap();
        assert!(third.text.contains("`bash_3`"), "{}", third.text);
        assert_eq!(ctx.background.end_all().await.len(), 2);
    }

    #[tokio::test]
    async fn ending_the_session_ends_every_background_command_and_starts_no_more() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        start(&ctx, "echo $$ > a.pid; exec sleep 600")
            .await
            .unwrap();
        start(
            &ctx,
            "trap '' TERM; echo $$ > b.pid; while :; do sleep 1; done",
        )
        .await
        .unwrap();
        // Both have written their pid (and, for b, set its trap) once they
        // print; the pids are the commands' `bash`es.
        for id in ["bash_1", "bash_2"] {
            let mut path = None;
            while path.is_none() {
                let p = dir
                    .path()
                    .join(if id == "bash_1" { "a.pid" } else { "b.pid" });
                if std::fs::read_to_string(&p).is_ok_and(|s| s.ends_with('\n')) {
                    path = Some(p);
                } else {
                    output(&ctx, json!({"id": id, "wait_secs": 1}))
                        .await
                        .unwrap();
                }
            }
        }
        let ended = ctx.background.end_all().await;
        assert_eq!(
            ended,
            [
                "bash_1 (`echo $$ > a.pid; exec sleep 600`)",
                "bash_2 (`trap '' TERM; echo $$ > b.pid; while :; do sleep 1; done`)"
            ]
        );
        for pid in ["a.pid", "b.pid"] {
            let pid = read_pid(&dir.path().join(pid));
            assert!(process_exits(pid).await, "{pid} outlived the session");
        }
        let refused = start(&ctx, "true").await.unwrap_err().to_string();
        assert!(refused.contains("session is stopping"), "{refused}");
    }

    #[tokio::test]
    async fn plan_mode_starts_no_background_command() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.grant.read_only = true;
        let refused = start(&ctx, "touch planned").await.unwrap_err().to_string();
        assert!(refused.contains("plan mode"), "{refused}");
        assert!(ctx.background.running().is_empty());
        assert!(!dir.path().join("planned").exists());
    }

    #[tokio::test]
    async fn unknown_ids_name_the_sessions_commands() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let none = output(&ctx, json!({"id": "bash_9"})).await.unwrap_err();
        assert!(none.to_string().contains("(it has none)"), "{none}");
        start(&ctx, "exec sleep 600").await.unwrap();
        let wrong = kill(&ctx, "shell_1").await.unwrap_err();
        assert!(wrong.to_string().contains("(it has bash_1)"), "{wrong}");
        ctx.background.end_all().await;
    }
}
