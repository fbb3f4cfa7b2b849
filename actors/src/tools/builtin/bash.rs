//! The `bash` tool: runs a shell command in the workspace and returns its
//! combined output and exit status.
//!
//! The command runs as `bash -c COMMAND` with the workspace as its working
//! directory, stdin from /dev/null, and stdout and stderr sent to one pipe, so
//! the model sees them interleaved as a terminal would show them. It runs in
//! its own process group so that everything it started can be killed at once.
//!
//! It runs in the sandbox of `tools/sandbox.rs` (writes only in the
//! workspace, the write roots and the temporary directories; no writes at
//! all in plan mode) unless the call was granted `unsandboxed`. The tool
//! never decides that itself: `outside_sandbox` is a request the permission
//! layer turns into a grant (after asking the user), or not. When a
//! sandboxed command fails with what looks like a refused write, the output
//! ends with a note saying so and how to proceed.
//!
//! It must never outlive its limits: on timeout or cancellation the whole
//! process group is killed with SIGKILL and the child reaped; it never waits
//! forever for background processes holding the output pipe open, and never
//! keeps more output in memory than it can show.
//!
//! With `run_in_background`, the command is started the same way ([`start`]:
//! the same environment, process group and sandbox) and handed to the
//! session's background commands (`tools/background.rs`); the call returns
//! its id at once. The permission layer sees the same `bash` call with the
//! same command; plan mode starts no background command.

use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::tools::output::HeadTailBuffer;
use crate::tools::process::{self, GroupKiller, describe_failure};
use crate::tools::sandbox;
use schemars::JsonSchema;
use serde::Deserialize;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;

/// Timeout when `timeout_secs` is not given.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Largest timeout a call may ask for; larger values are clamped.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// How long to keep reading output after the command itself has exited
/// (background processes may still hold the pipe open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

#[derive(Clone, Debug)]
pub struct Bash;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The command to run with `bash -c`, in the workspace directory. It may
    /// be a pipeline or several commands joined with `&&` or `;`.
    pub command: String,
    /// Seconds to wait before killing the command (default 120, maximum 600).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Run outside the sandbox. Only when a command failed because the
    /// sandbox blocked it and it must write outside the workspace; the user
    /// is asked first.
    #[serde(default)]
    pub outside_sandbox: bool,
    /// Start it in the background and return its id at once (servers,
    /// watchers); see bash_output and kill_shell.
    #[serde(default)]
    pub run_in_background: bool,
    /// Why the command must run outside the sandbox (shown to the user who
    /// is asked to approve it); give it with `outside_sandbox`.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "the permission layer reads it from the call's arguments"
    )]
    pub justification: Option<String>,
}

impl BuiltinTool for Bash {
    const NAME: &'static str = "bash";
    const DESCRIPTION: &'static str = "Run a shell command with `bash -c` in the workspace \
        directory and return its output, stdout and stderr interleaved as a terminal would \
        show them, followed by `Exit code: N` when it is not 0. Each call starts a fresh shell: \
        `cd` and exported variables do not carry over to the next call, so chain dependent \
        steps with `&&`. Stdin is /dev/null, so interactive programs (editors, pagers, prompts) \
        cannot be used; pass flags such as `--yes` or `--no-pager` instead. \
        The command is killed, with everything it started, after `timeout_secs` (default 120, \
        at most 600). Long output is shortened in the middle, keeping its start and end. \
        For servers and watchers set `run_in_background: true`: it returns an id at once; \
        read with bash_output, stop with kill_shell. Output still open 2 s after a command \
        exits is not waited for. Prefer read_file, list_dir, glob and grep over cat, ls, find and grep: \
        they are faster and their output is made for you. \
        Commands run in a sandbox: they can read everything but write only in the workspace, \
        the configured write roots and the temporary directories (/tmp). If a command fails \
        because the sandbox blocked a write it really needs, call bash again with \
        `outside_sandbox: true` and a `justification`; the user is asked to approve it.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        bash(params, ctx)
    }
}

/// The timeout to use and, if the requested one was out of range, a note
/// saying what was used instead.
fn effective_timeout(requested: Option<u64>) -> (u64, Option<String>) {
    match requested {
        None => (DEFAULT_TIMEOUT_SECS, None),
        Some(0) => (
            1,
            Some("timeout_secs 0 is too small; used 1 s.".to_string()),
        ),
        Some(n) if n > MAX_TIMEOUT_SECS => (
            MAX_TIMEOUT_SECS,
            Some(format!(
                "timeout_secs {n} exceeds the maximum of {MAX_TIMEOUT_SECS}; used {MAX_TIMEOUT_SECS} s."
            )),
        ),
        Some(n) => (n, None),
    }
}

async fn bash(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    // `outside_sandbox` and `justification` are for the permission layer,
    // which turns an approved request into `ctx.grant.unsandboxed`; here
    // the grant alone decides.
    let Params {
        command: script,
        timeout_secs,
        outside_sandbox,
        run_in_background,
        justification: _,
    } = params;
    if script.trim().is_empty() {
        return Err(ToolError::InvalidArguments {
            tool: Bash::NAME.to_string(),
            detail: "`command` is empty; give the shell command to run".to_string(),
        });
    }
    let timeout_given = timeout_secs.is_some();
    let (timeout_secs, timeout_note) = effective_timeout(timeout_secs);
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }

    if run_in_background {
        return background(script, timeout_given, &ctx).await;
    }
    let Started {
        mut child,
        output: mut reader,
        policy,
        sandboxed,
    } = start(&script, &ctx).await?;
    let mut group = GroupKiller(process::group_of(&child));

    let mut output = HeadTailBuffer::new(ctx.max_output_bytes);
    let mut buf = vec![0u8; 16 * 1024];
    let mut eof = false;
    let deadline = Instant::now() + Duration::from_secs(timeout_secs);
    let waited = loop {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => {
                group.kill_now();
                let _ = child.wait().await;
                return Err(ToolError::Cancelled);
            }
            status = child.wait() => break Some(status),
            _ = tokio::time::sleep_until(deadline) => break None,
            read = reader.read(&mut buf), if !eof => match read {
                Ok(0) => eof = true,
                Ok(n) => output.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            },
        }
    };

    let mut notes: Vec<String> = timeout_note.into_iter().collect();
    let status = match waited {
        None => {
            group.kill_now();
            let _ = child.wait().await;
            if !eof {
                drain(&mut reader, &mut output, &mut buf, &ctx).await?;
            }
            notes.push(format!(
                "Command timed out after {timeout_secs} s and was killed, with every process it \
                 started."
            ));
            return Ok(ToolOutput::error(render(&output, &ctx, &notes)));
        }
        Some(Err(e)) => {
            group.kill_now();
            return Err(ToolError::failed(format!(
                "lost track of the command while waiting for it: {e}"
            )));
        }
        Some(Ok(status)) => status,
    };

    if !eof && !drain(&mut reader, &mut output, &mut buf, &ctx).await? {
        notes.push(format!(
            "Stopped reading output {} s after the command exited: a background process still \
             holds its output open. Redirect a background process's output to a file (e.g. \
             `cmd > cmd.log 2>&1 &`).",
            DRAIN_AFTER_EXIT.as_secs()
        ));
    }
    // The command finished on its own; background processes it deliberately
    // left running are not killed.
    group.disarm();

    let failed = !status.success();
    if let Some(line) = describe_failure(status) {
        notes.push(line);
    }
    if outside_sandbox && sandboxed {
        notes.push(
            "The command ran inside the sandbox: running it outside needs the user's approval, \
             which this call did not get."
                .to_string(),
        );
    }
    if failed
        && sandboxed
        && let Some(policy) = &policy
        && sandbox::looks_blocked(&output.finish(ctx.max_output_bytes))
    {
        notes.push(policy.failure_note());
    }
    let text = render(&output, &ctx, &notes);
    Ok(if failed {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    })
}

/// Reads what is left in the pipe until end-of-file, for at most
/// [`DRAIN_AFTER_EXIT`]. Returns whether end-of-file was reached.
async fn drain(
    reader: &mut pipe::Receiver,
    output: &mut HeadTailBuffer,
    buf: &mut [u8],
    ctx: &ToolContext,
) -> Result<bool, ToolError> {
    let give_up = tokio::time::sleep(DRAIN_AFTER_EXIT);
    tokio::pin!(give_up);
    loop {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            _ = &mut give_up => return Ok(false),
            read = reader.read(buf) => match read {
                Ok(0) => return Ok(true),
                Ok(n) => output.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Ok(true),
            },
        }
    }
}

/// A `bash -c` command started in the workspace, in its sandbox and its
/// own process group, stdout and stderr into one pipe.
pub(crate) struct Started {
    pub(crate) child: tokio::process::Child,
    /// The read end of its output pipe (our copies of the write end are
    /// closed, so end-of-file comes once its processes are done with it).
    pub(crate) output: pipe::Receiver,
    /// Its sandbox (`None`: it runs unconfined, granted or configured).
    pub(crate) policy: Option<sandbox::Policy>,
    /// Whether the sandbox was applied (Landlock works here).
    pub(crate) sandboxed: bool,
}

/// Starts `script` as `bash` runs every command, in the foreground or the
/// background: environment per `[tools.environment]`, stdin from
/// /dev/null, its own process group, its sandbox.
pub(crate) async fn start(script: &str, ctx: &ToolContext) -> Result<Started, ToolError> {
    let (pipe_reader, pipe_writer) = std::io::pipe()
        .map_err(|e| ToolError::failed(format!("could not create a pipe for the output: {e}")))?;
    let pipe_writer_for_stderr = pipe_writer
        .try_clone()
        .map_err(|e| ToolError::failed(format!("could not create a pipe for the output: {e}")))?;
    let mut command = tokio::process::Command::new("bash");
    command
        .arg("-c")
        .arg(script)
        .env_clear()
        .envs(crate::tools::environment::from_process(&ctx.environment))
        .current_dir(&ctx.workspace)
        .stdin(Stdio::null())
        .stdout(pipe_writer)
        .stderr(pipe_writer_for_stderr)
        .process_group(0)
        .kill_on_drop(true);
    // The command's sandbox (none when granted `unsandboxed`); the Command,
    // which holds our copies of the pipe's write end, is dropped once it has
    // started, so that end-of-file arrives once the command's processes are
    // done.
    let policy = sandbox::Policy::for_call(ctx);
    let (child, sandboxed) =
        sandbox::spawn(command, policy.as_ref())
            .await
            .map_err(|e| match e {
                sandbox::SandboxError::Spawn(e) => ToolError::failed(format!(
                    "could not start `bash -c` in {}: {e}",
                    ctx.workspace.display()
                )),
                e => ToolError::failed(e.to_string()),
            })?;
    let mut group = GroupKiller(process::group_of(&child));
    let output = pipe::Receiver::from_owned_fd(OwnedFd::from(pipe_reader))
        .map_err(|e| ToolError::failed(format!("could not read the command's output: {e}")))?;
    group.disarm();
    Ok(Started {
        child,
        output,
        policy,
        sandboxed,
    })
}

/// Starts `script` in the background for the session (`run_in_background`)
/// and returns its id at once. Plan mode starts nothing: a command left
/// running is not an investigation.
async fn background(
    script: String,
    timeout_given: bool,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    if ctx.grant.read_only {
        return Err(ToolError::failed(
            "Not run: the session is in plan mode, which starts no background commands. Run \
             the command in the foreground (without run_in_background) to investigate, or make \
             it part of your plan.",
        ));
    }
    let reservation = ctx
        .background
        .reserve(ctx.max_background_commands)
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let started = start(&script, ctx).await?;
    let id = reservation.adopt(script, started.child, started.output, ctx.max_output_bytes);
    let mut text = format!(
        "Started in the background as `{id}`. Read what it writes with bash_output \
         {{\"id\": \"{id}\"}} (only what is new since the last read; give `wait_secs` to wait \
         for output), and stop it with kill_shell {{\"id\": \"{id}\"}}. It runs until it ends, is \
         stopped, or the session ends."
    );
    if timeout_given {
        text.push_str("\ntimeout_secs does not apply to a background command.");
    }
    if started.sandboxed {
        text.push_str(
            "\nIt runs in the same sandbox as any bash command (writes only in the workspace, \
             the write roots and the temporary directories).",
        );
    }
    Ok(ToolOutput::ok(text))
}

/// The captured output (shortened to the output limit) followed by notes.
fn render(output: &HeadTailBuffer, ctx: &ToolContext, notes: &[String]) -> String {
    let mut text = if output.is_empty() {
        "(no output)".to_string()
    } else {
        output.finish(ctx.max_output_bytes)
    };
    for note in notes {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(note);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    async fn run(ctx: &ToolContext, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        Bash.call(args, ctx.clone()).await
    }

    use crate::tools::test_tools::{process_exits, read_pid};
    use nix::sys::signal::Signal;
    use nix::unistd::Pid;

    #[tokio::test]
    async fn bash_captures_stdout_and_stderr_interleaved() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(
            &ctx,
            json!({"command": "echo out1; echo err1 >&2; echo out2; echo err2 >&2"}),
        )
        .await
        .unwrap();
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "out1\nerr1\nout2\nerr2\n");
    }

    #[tokio::test]
    async fn bash_reports_a_nonzero_exit_code_as_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(
            &ctx,
            json!({"command": "echo partial; echo oops >&2; exit 3"}),
        )
        .await
        .unwrap();
        assert!(out.is_error);
        assert_eq!(out.text, "partial\noops\nExit code: 3");
    }

    #[tokio::test]
    async fn bash_says_when_there_is_no_output() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(&ctx, json!({"command": "true"})).await.unwrap();
        assert!(!out.is_error);
        assert_eq!(out.text, "(no output)");
        let out = run(&ctx, json!({"command": "false"})).await.unwrap();
        assert!(out.is_error);
        assert_eq!(out.text, "(no output)\nExit code: 1");
    }

    #[tokio::test]
    async fn bash_runs_in_the_workspace_with_stdin_from_dev_null() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        // `cat` would hang on an inherited terminal; with /dev/null it ends.
        let out = run(&ctx, json!({"command": "pwd -P; cat; echo done"}))
            .await
            .unwrap();
        let expected = format!("{}\ndone\n", dir.path().canonicalize().unwrap().display());
        assert_eq!(out.text, expected);
    }

    #[tokio::test]
    async fn bash_names_the_signal_that_killed_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(&ctx, json!({"command": "kill -TERM $$"}))
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(out.text.contains("signal 15 (SIGTERM)"), "{}", out.text);
    }

    #[tokio::test]
    async fn bash_timeout_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(
            &ctx,
            json!({"command": "sleep 30 & echo $! > bg.pid; echo started; sleep 30", "timeout_secs": 1}),
        )
        .await
        .unwrap();
        assert!(out.is_error);
        assert!(out.text.starts_with("started\n"), "{}", out.text);
        assert!(out.text.contains("timed out after 1 s"), "{}", out.text);
        let bg = read_pid(&dir.path().join("bg.pid"));
        assert!(
            process_exits(bg).await,
            "background child {bg} survived the timeout"
        );
    }

    #[tokio::test]
    async fn bash_cancellation_kills_the_process_group_and_returns_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ready.fifo");
        crate::tools::test_tools::make_fifo(&fifo);
        let ctx = ToolContext::new(dir.path());
        let call = tokio::spawn(Bash.call(
            json!({"command": "sleep 30 & echo $! > ready.fifo; wait"}),
            ctx.clone(),
        ));
        // Opening the FIFO blocks until the command writes its background
        // child's PID: by then the command is certainly running.
        let bg = tokio::task::spawn_blocking(move || read_pid(&fifo))
            .await
            .unwrap();
        ctx.cancel.cancel();
        let result = call.await.unwrap();
        assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
        assert!(
            process_exits(bg).await,
            "background child {bg} survived cancellation"
        );
    }

    #[tokio::test]
    async fn bash_returns_cancelled_without_running_when_already_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        ctx.cancel.cancel();
        let result = run(&ctx, json!({"command": "touch ran"})).await;
        assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
        assert!(!dir.path().join("ran").exists());
    }

    #[tokio::test]
    async fn bash_does_not_wait_forever_for_background_jobs_holding_the_output_open() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(
            &ctx,
            json!({"command": "sleep 30 & echo $! > bg.pid; echo hi"}),
        )
        .await
        .unwrap();
        let bg = read_pid(&dir.path().join("bg.pid"));
        // Clean up: the tool deliberately leaves finished commands' background
        // processes running.
        let _ = nix::sys::signal::kill(Pid::from_raw(bg), Signal::SIGKILL);
        assert!(!out.is_error, "{}", out.text);
        assert!(out.text.starts_with("hi\n"), "{}", out.text);
        assert!(out.text.contains("Stopped reading output"), "{}", out.text);
    }

    #[tokio::test]
    async fn bash_background_jobs_with_redirected_output_do_not_delay_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(
            &ctx,
            json!({"command": "sleep 30 > /dev/null 2>&1 & echo $! > bg.pid; echo hi"}),
        )
        .await
        .unwrap();
        let bg = read_pid(&dir.path().join("bg.pid"));
        let _ = nix::sys::signal::kill(Pid::from_raw(bg), Signal::SIGKILL);
        assert_eq!(out.text, "hi\n");
    }

    #[tokio::test]
    async fn bash_truncates_long_output_keeping_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.max_output_bytes = 1000;
        let out = run(&ctx, json!({"command": "seq 1 200000"})).await.unwrap();
        assert!(out.text.starts_with("1\n2\n3\n"), "{}", out.text);
        assert!(out.text.ends_with("199999\n200000\n"), "{}", out.text);
        assert!(out.text.contains("bytes truncated"), "{}", out.text);
        assert!(out.text.len() < 1200, "{}", out.text.len());
    }

    #[tokio::test]
    async fn bash_clamps_the_timeout_to_the_maximum_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = run(&ctx, json!({"command": "echo hi", "timeout_secs": 100000}))
            .await
            .unwrap();
        assert!(!out.is_error);
        assert!(out.text.starts_with("hi\n"), "{}", out.text);
        assert!(out.text.contains("maximum of 600"), "{}", out.text);
    }

    #[tokio::test]
    async fn bash_rejects_unknown_fields_wrong_types_and_empty_commands() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        for args in [
            json!({"command": "ls", "timeout": 5}),
            json!({"command": 5}),
            json!({"command": "ls", "timeout_secs": -1}),
            json!({"command": "  "}),
            json!("ls"),
        ] {
            let err = run(&ctx, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments { .. }),
                "{args}: {err}"
            );
        }
    }

    /// The sandbox, through the tool: real commands, real Landlock.
    mod sandboxed {
        use super::*;
        use crate::tools::sandbox::{SandboxSupport, probe};
        use std::path::{Path, PathBuf};

        /// Landlock's ABI here, or `None` (after saying why) when the
        /// sandbox cannot be tested; fails instead when
        /// `AGENTBUS_REQUIRE_LANDLOCK=1`.
        fn landlock() -> Option<u32> {
            match probe() {
                SandboxSupport::Available { abi } => Some(*abi),
                SandboxSupport::Unavailable { reason } => {
                    assert!(
                        std::env::var("AGENTBUS_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
                        "AGENTBUS_REQUIRE_LANDLOCK=1 but Landlock is unavailable: {reason}"
                    );
                    eprintln!("skipping a sandbox test: Landlock is unavailable: {reason}");
                    None
                }
            }
        }

        /// A fresh directory that is neither under a temporary directory
        /// nor under the workspace (the sandbox lets commands write in
        /// those), or `None` if there is none to be had.
        fn outside_dir() -> Option<tempfile::TempDir> {
            let temps: Vec<PathBuf> = [std::env::temp_dir(), "/tmp".into(), "/var/tmp".into()]
                .iter()
                .filter_map(|t| t.canonicalize().ok())
                .collect();
            let candidates = [
                PathBuf::from("/var/lib"),
                PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            ];
            for base in candidates {
                let Ok(dir) = tempfile::Builder::new()
                    .prefix("agentbus-sandbox-test-")
                    .tempdir_in(&base)
                else {
                    continue;
                };
                let real = dir.path().canonicalize().unwrap();
                if !temps.iter().any(|t| real.starts_with(t)) {
                    return Some(dir);
                }
            }
            assert!(
                std::env::var("AGENTBUS_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
                "no directory outside the temporary directories to test the sandbox with"
            );
            eprintln!("skipping a sandbox test: no writable directory outside /tmp");
            None
        }

        fn write(path: &Path) -> serde_json::Value {
            json!({"command": format!("echo hi > '{}'", path.display())})
        }

        #[tokio::test]
        async fn sandboxed_bash_writes_in_the_workspace_and_tmp_but_not_elsewhere() {
            let (Some(_), Some(outside)) = (landlock(), outside_dir()) else {
                return;
            };
            let ws = tempfile::tempdir().unwrap();
            let ctx = ToolContext::new(ws.path());
            let out = run(&ctx, json!({"command": "echo hi > in-workspace.txt"}))
                .await
                .unwrap();
            assert!(!out.is_error, "{}", out.text);
            assert!(ws.path().join("in-workspace.txt").is_file());

            let tmp = tempfile::NamedTempFile::new_in("/tmp").unwrap();
            let out = run(&ctx, write(tmp.path())).await.unwrap();
            assert!(!out.is_error, "{}", out.text);
            assert_eq!(std::fs::read_to_string(tmp.path()).unwrap(), "hi\n");

            let target = outside.path().join("blocked.txt");
            let out = run(&ctx, write(&target)).await.unwrap();
            assert!(out.is_error, "{}", out.text);
            assert!(
                !target.exists(),
                "the sandbox let {} be written",
                target.display()
            );
            assert!(out.text.contains("Permission denied"), "{}", out.text);
            assert!(
                out.text.contains(
                    "Note: agentbus runs commands in a sandbox that allows writing only in"
                ),
                "{}",
                out.text
            );
            assert!(
                out.text.contains(&ws.path().display().to_string()),
                "{}",
                out.text
            );
            assert!(
                out.text.contains("\"outside_sandbox\": true"),
                "{}",
                out.text
            );
        }

        #[tokio::test]
        async fn a_write_root_lets_a_sandboxed_command_write_there() {
            let (Some(_), Some(outside)) = (landlock(), outside_dir()) else {
                return;
            };
            let ws = tempfile::tempdir().unwrap();
            let mut ctx = ToolContext::new(ws.path());
            ctx.sandbox.write_roots = vec![outside.path().to_path_buf()];
            let target = outside.path().join("allowed.txt");
            let out = run(&ctx, write(&target)).await.unwrap();
            assert!(!out.is_error, "{}", out.text);
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi\n");
        }

        #[tokio::test]
        async fn an_unsandboxed_grant_or_a_disabled_sandbox_lets_a_command_write_anywhere() {
            let (Some(_), Some(outside)) = (landlock(), outside_dir()) else {
                return;
            };
            let ws = tempfile::tempdir().unwrap();
            let mut ctx = ToolContext::new(ws.path());
            ctx.grant.unsandboxed = true;
            let target = outside.path().join("granted.txt");
            let out = run(&ctx, write(&target)).await.unwrap();
            assert!(!out.is_error, "{}", out.text);
            assert!(target.is_file());

            let mut ctx = ToolContext::new(ws.path());
            ctx.sandbox.enabled = false;
            let target = outside.path().join("disabled.txt");
            let out = run(&ctx, write(&target)).await.unwrap();
            assert!(!out.is_error, "{}", out.text);
            assert!(target.is_file());
        }

        #[tokio::test]
        async fn asking_for_outside_sandbox_without_the_grant_still_runs_sandboxed() {
            let (Some(_), Some(outside)) = (landlock(), outside_dir()) else {
                return;
            };
            let ws = tempfile::tempdir().unwrap();
            let ctx = ToolContext::new(ws.path());
            let target = outside.path().join("asked.txt");
            let command = format!("echo hi > '{}'", target.display());
            let out = run(
                &ctx,
                json!({"command": command, "outside_sandbox": true, "justification": "test"}),
            )
            .await
            .unwrap();
            assert!(out.is_error, "{}", out.text);
            assert!(!target.exists());
            assert!(out.text.contains("ran inside the sandbox"), "{}", out.text);
        }

        #[tokio::test]
        async fn plan_mode_blocks_writes_even_in_the_workspace_but_not_to_dev_null() {
            if landlock().is_none() {
                return;
            }
            let ws = tempfile::tempdir().unwrap();
            let mut ctx = ToolContext::new(ws.path());
            ctx.grant.read_only = true;
            let out = run(&ctx, json!({"command": "echo quiet > /dev/null && cat /etc/hostname > /dev/null && echo ok"}))
                .await
                .unwrap();
            assert!(!out.is_error, "{}", out.text);
            assert_eq!(out.text, "ok\n");
            let out = run(&ctx, json!({"command": "echo hi > planned.txt"}))
                .await
                .unwrap();
            assert!(out.is_error, "{}", out.text);
            assert!(!ws.path().join("planned.txt").exists());
            assert!(
                out.text.contains("read-only sandbox in plan mode"),
                "{}",
                out.text
            );
            assert!(out.text.contains("do not retry outside it"), "{}", out.text);
            assert!(
                !out.text.contains("\"outside_sandbox\": true"),
                "{}",
                out.text
            );
        }

        #[tokio::test]
        async fn network_false_blocks_tcp_connections_and_true_allows_them() {
            let Some(abi) = landlock() else { return };
            if abi < 4 {
                eprintln!("skipping: Landlock ABI {abi} has no network rules (needs 4)");
                return;
            }
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let connect = json!({
                "command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
            });
            let ws = tempfile::tempdir().unwrap();
            let mut ctx = ToolContext::new(ws.path());
            let out = run(&ctx, connect.clone()).await.unwrap();
            assert!(!out.is_error, "{}", out.text);
            assert_eq!(out.text, "connected\n");

            ctx.sandbox.network = false;
            let out = run(&ctx, connect).await.unwrap();
            assert!(out.is_error, "{}", out.text);
            assert!(!out.text.contains("connected\n"), "{}", out.text);
            assert!(out.text.contains("Permission denied"), "{}", out.text);
            assert!(out.text.contains("no network connections"), "{}", out.text);
        }

        #[test]
        fn the_schema_offers_outside_sandbox_and_a_justification() {
            let schema = crate::tools::builtin::typed::schema_of::<Params>();
            assert_eq!(
                schema["properties"]["outside_sandbox"]["type"],
                json!("boolean")
            );
            assert!(schema["properties"]["justification"]["description"].is_string());
            assert_eq!(schema["required"], json!(["command"]));
        }
    }
}
