//! Driving the built `agentbus` binary against the scripted model server.
//!
//! A [`Fixture`] is a temporary workspace, a temporary data dir and home (so
//! no user configuration leaks in), a scripted model server, and a config
//! file pointing the `scripted` and `other` profiles at that server. An
//! [`Agent`] is a running binary whose stdout is read line by line.
//!
//! Waits are bounded by [`GUARD`] only so that a broken build fails instead
//! of hanging; tests synchronise on what the binary prints, never on time.
//! A fixture fails its test, when dropped, if the scripted model recorded a
//! protocol violation.

pub mod server;
pub mod store_lock;
pub mod tmux;

use agentbus_testkit::{Script, ScriptedModel, fixtures_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The system message of a recorded OpenAI request (empty when it has
/// none).
pub fn system_message(body: &Value) -> String {
    body["messages"][0]
        .as_object()
        .filter(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// How long any single wait may take before the test fails as hung.
pub const GUARD: Duration = Duration::from_secs(60);

/// The secret configured for the `scripted` profile; it must never appear
/// in output.
pub const SECRET: &str = "sk-test-secret-must-never-appear-4711";

pub struct Fixture {
    pub workspace: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub server: ScriptedModel,
    pub config: PathBuf,
}

/// The first line of every fixture's configuration.
const PERMISSIVE: &str = "permission_mode = \"bypass\"\n";

impl Fixture {
    /// Make sessions start in permission mode `mode` (fixtures start in
    /// `bypass`: tests of other things run every call the script makes).
    pub fn set_permission_mode(&self, mode: &str) {
        let text = std::fs::read_to_string(&self.config).expect("read config");
        let text = text.replacen(PERMISSIVE, &format!("permission_mode = \"{mode}\"\n"), 1);
        std::fs::write(&self.config, text).expect("write config");
    }

    /// A fixture answering from `tests/fixtures/scripts/<name>.toml`.
    pub async fn new(script: &str) -> Fixture {
        let path = fixtures_dir()
            .join("scripts")
            .join(format!("{script}.toml"));
        let script =
            Script::from_file(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        Self::with_script(script).await
    }

    pub async fn with_script(script: Script) -> Fixture {
        let server = ScriptedModel::start(script)
            .await
            .expect("start the scripted model");
        let workspace = tempfile::tempdir().expect("workspace");
        let home = tempfile::tempdir().expect("home");
        let config = home.path().join("test-config.toml");
        let base = server.openai_base_url();
        let anthropic = server.anthropic_base_url();
        std::fs::write(
            &config,
            format!(
                "{PERMISSIVE}model = \"scripted\"\n\
                 [models.scripted]\nprovider = \"openai\"\nmodel = \"scripted-main\"\nbase_url = \"{base}\"\napi_key = \"{SECRET}\"\nretry_base_delay_ms = 1\nimages = true\n\
                 [models.other]\nprovider = \"openai\"\nmodel = \"scripted-other\"\nbase_url = \"{base}\"\n\
                 [models.scripted-anthropic]\nprovider = \"anthropic\"\nmodel = \"scripted-main\"\nbase_url = \"{anthropic}\"\napi_key = \"{SECRET}\"\nretry_base_delay_ms = 1\nimages = true\n"
            ),
        )
        .expect("write config");
        Fixture {
            workspace,
            home,
            server,
            config,
        }
    }

    /// A model that fails twice with 503 and then answers "Back.", behind
    /// a profile `flaky` that retries once: one turn fails with its retries
    /// used up, the next one works.
    pub async fn flaky_then_back() -> Fixture {
        let script = Script::from_toml_str(
            "[[response]]\nstatus = 503\nbody = 'down'\n\
             [[response]]\nstatus = 503\nbody = 'still down'\n\
             [[response]]\ntext = \"Back.\"\n",
        )
        .expect("script");
        let fx = Fixture::with_script(script).await;
        fx.add_config(&format!(
            "[models.flaky]\nprovider = \"openai\"\nmodel = \"scripted-main\"\n\
             base_url = \"{}\"\nmax_retries = 1\nretry_base_delay_ms = 1\n",
            fx.server.openai_base_url()
        ));
        fx
    }

    /// A profile `scripted-thinking`: the scripted model over the Anthropic
    /// wire with extended thinking enabled (`thinking_budget = 2048`).
    pub fn add_thinking_profile(&self) {
        self.add_config(&format!(
            "[models.scripted-thinking]\nprovider = \"anthropic\"\nmodel = \"scripted-main\"\n\
             base_url = \"{}\"\napi_key = \"{SECRET}\"\nretry_base_delay_ms = 1\nthinking_budget = 2048\n",
            self.server.anthropic_base_url()
        ));
    }

    /// A profile `name` over the OpenAI Responses wire
    /// (`provider = "openai-responses"`) for `model`, at the scripted
    /// model's `/v1/responses`, with the fixture's key.
    pub fn add_responses_profile(&self, name: &str, model: &str) {
        self.add_config(&format!(
            "[models.{name}]\nprovider = \"openai-responses\"\nmodel = \"{model}\"\n\
             base_url = \"{}\"\napi_key = \"{SECRET}\"\nretry_base_delay_ms = 1\n",
            self.server.openai_base_url()
        ));
    }

    pub fn workspace(&self) -> &Path {
        self.workspace.path()
    }

    /// Add TOML (e.g. `[mcp_servers.NAME]` tables) to the fixture's config.
    pub fn add_config(&self, toml: &str) {
        let mut text = std::fs::read_to_string(&self.config).expect("read config");
        text.push('\n');
        text.push_str(toml);
        std::fs::write(&self.config, text).expect("write config");
    }

    /// The binary with this fixture's config, workspace, data dir and home.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_in(self.workspace(), args)
    }

    /// [`command`](Self::command) with another workspace.
    pub fn command_in(&self, workspace: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentbus"));
        cmd.arg("--config")
            .arg(&self.config)
            .arg("--workspace")
            .arg(workspace)
            .arg("--data-dir")
            .arg(self.home.path().join("data"))
            .args(args)
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join(".config"))
            .env_remove("AGENTBUS_CONFIG")
            .env_remove("AGENTBUS_DATA_DIR")
            // Traces go where a test says, never to a collector of the
            // machine's.
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env_remove("OTEL_SERVICE_NAME")
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Start the binary.
    pub fn spawn(&self, args: &[&str]) -> Agent {
        let mut cmd = self.command(args);
        Agent::spawn(&mut cmd, false)
    }

    /// Start the binary with a stdin pipe.
    pub fn spawn_with_stdin(&self, args: &[&str]) -> Agent {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped());
        Agent::spawn(&mut cmd, true)
    }

    /// Run to the end and collect everything.
    pub async fn run(&self, args: &[&str]) -> Finished {
        self.spawn(args).finish().await
    }

    /// Like [`run`](Self::run), in another workspace.
    pub async fn run_in(&self, workspace: &Path, args: &[&str]) -> Finished {
        let mut cmd = self.command_in(workspace, args);
        Agent::spawn(&mut cmd, false).finish().await
    }

    /// The user's configuration file as agentbus names it in advice (the
    /// fixture's home's; the fixture's own config is `--config`).
    pub fn user_config_file(&self) -> PathBuf {
        self.home.path().join(".config/agentbus/config.toml")
    }

    /// Like [`run`](Self::run), with extra environment variables.
    pub async fn run_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Finished {
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied());
        Agent::spawn(&mut cmd, false).finish().await
    }

    /// The `messages` of every model request the server received.
    pub fn request_messages(&self) -> Vec<Vec<Value>> {
        self.server
            .model_calls()
            .iter()
            .map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// Fails the test if any request broke the protocol (every fixture
    /// checks this when it is dropped; call it to check earlier).
    pub fn assert_requests_valid(&self) {
        let violations = self.server.violations();
        assert!(
            violations.is_empty(),
            "protocol violations (a request a real provider would reject, or a scripted call to a tool the request did not offer): {violations:#?}"
        );
    }
}

impl Drop for Fixture {
    /// Every test fails on a protocol violation, whether or not it asked:
    /// a request a real provider would reject, or a scripted answer no real
    /// model could give (a call to a tool nobody offered), means the test
    /// did not test what it claims. (Not while a test is failing already:
    /// its own message is the one to read.)
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.assert_requests_valid();
        }
    }
}

/// A running binary.
pub struct Agent {
    child: Child,
    stdout: Lines<BufReader<ChildStdout>>,
    stdin: Option<ChildStdin>,
    stderr: tokio::task::JoinHandle<String>,
    /// Every stdout line read so far.
    pub lines: Vec<String>,
}

impl Agent {
    fn spawn(cmd: &mut Command, with_stdin: bool) -> Agent {
        let mut child = cmd.spawn().expect("spawn agentbus");
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut stderr_pipe = child.stderr.take().expect("stderr");
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text).await;
            text
        });
        let stdin = if with_stdin { child.stdin.take() } else { None };
        Agent {
            child,
            stdout,
            stdin,
            stderr,
            lines: Vec::new(),
        }
    }

    /// The next stdout line, or `None` at end of output.
    pub async fn next_line(&mut self) -> Option<String> {
        let line = match tokio::time::timeout(GUARD, self.stdout.next_line()).await {
            Ok(line) => line.expect("read stdout")?,
            Err(_) => panic!(
                "agentbus printed nothing for {GUARD:?}; so far:\n{}",
                self.lines.join("\n")
            ),
        };
        self.lines.push(line.clone());
        Some(line)
    }

    /// Read JSON events until one satisfies `pred`; returns it.
    pub async fn wait_for_event(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self.next_line().await.unwrap_or_else(|| {
                panic!(
                    "output ended before the awaited event; got:\n{}",
                    self.lines.join("\n")
                )
            });
            let event: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            if pred(&event) {
                return event;
            }
        }
    }

    /// The first event read so far, or read from now on, that satisfies
    /// `pred` (for events whose order relative to others is not fixed).
    pub async fn seen_or_wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let seen = self
            .lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| pred(e));
        match seen {
            Some(event) => event,
            None => self.wait_for_event(pred).await,
        }
    }

    /// Read stdout lines until one contains `text`.
    #[allow(dead_code)] // no test calls it yet
    pub async fn wait_for_text(&mut self, text: &str) -> String {
        loop {
            let line = self.next_line().await.unwrap_or_else(|| {
                panic!(
                    "output ended before {text:?}; got:\n{}",
                    self.lines.join("\n")
                )
            });
            if line.contains(text) {
                return line;
            }
        }
    }

    /// Kill the process outright (SIGKILL): no cleanup runs.
    pub fn kill9(&self) {
        let pid = self.child.id().expect("agentbus is running") as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("send SIGKILL");
    }

    /// Send SIGINT, as Ctrl-C in a terminal would.
    pub fn interrupt(&self) {
        let pid = self.child.id().expect("agentbus is running") as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("send SIGINT");
    }

    /// Write lines to stdin.
    pub async fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("spawned with stdin");
        stdin.write_all(text.as_bytes()).await.expect("write stdin");
        stdin.flush().await.expect("flush stdin");
    }

    /// Close stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Read the rest of the output and wait for the exit.
    pub async fn finish(mut self) -> Finished {
        self.close_stdin();
        while self.next_line().await.is_some() {}
        let status = tokio::time::timeout(GUARD, self.child.wait())
            .await
            .expect("agentbus did not exit")
            .expect("wait for agentbus");
        let stderr = self.stderr.await.unwrap_or_default();
        Finished {
            status,
            stdout: self.lines,
            stderr,
        }
    }
}

/// A finished run.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<String>,
    pub stderr: String,
}

impl Finished {
    /// stdout as JSON events (every line must be one).
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .iter()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| {
                    panic!(
                        "stdout line is not JSON ({e}): {l}\nstderr:\n{}",
                        self.stderr
                    )
                })
            })
            .collect()
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn stdout_text(&self) -> String {
        self.stdout.join("\n")
    }
}

/// The events of one type.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The single `result` event (fails if there is not exactly one).
pub fn the_result(events: &[Value]) -> &Value {
    let results = of_type(events, "result");
    assert_eq!(results.len(), 1, "expected one result, got {results:#?}");
    results[0]
}

/// Seq numbers must run 1, 2, 3, ... without a gap.
pub fn assert_gap_free(events: &[Value]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], (i + 1) as u64, "seq gap at event {i}: {e}");
    }
}

/// The role sequence of a request's messages, e.g. `["system", "user", "assistant", "tool"]`.
pub fn roles(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The directory holding the npm MCP reference servers' commands
/// (`mcp-server-everything`, `mcp-server-filesystem`): `$AGENTBUS_MCP_SERVERS_BIN`,
/// else whatever `scripts/mcp-test-servers.sh` installs (once per test binary).
pub fn npm_mcp_bin() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    installed(
        &BIN,
        "AGENTBUS_MCP_SERVERS_BIN",
        "mcp-test-servers.sh",
        "the MCP tests need the npm MCP reference servers",
    )
}

/// What an install script of `scripts/` installed (the path it prints):
/// `$VARIABLE` when set, else the script's output, run once per test
/// binary. When the script fails (no npm, no registry), every test that
/// needs it fails with one line — `needs`, the script's reason and the way
/// out — and the script is not run again for each of them.
pub fn installed(
    cell: &'static OnceLock<Result<PathBuf, String>>,
    variable: &str,
    script: &str,
    needs: &str,
) -> PathBuf {
    let found = cell.get_or_init(|| match std::env::var_os(variable) {
        Some(path) => Ok(PathBuf::from(path)),
        None => agentbus_testkit::prerequisite::run_install_script(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts")
                .join(script),
            "npm and the network to the npm registry",
            &format!("set {variable}"),
        ),
    });
    match found {
        Ok(path) => path.clone(),
        Err(why) => agentbus_testkit::prerequisite::missing(&format!("{needs}: {why}")),
    }
}

/// The test kit's MCP server, built next to the agentbus binary by
/// `cargo test --workspace` (or `cargo build -p agentbus-testkit --bins`).
pub fn test_mcp_server() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_agentbus")).with_file_name("test-mcp-server");
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test --workspace`, or `cargo build -p agentbus-testkit --bins` first",
        path.display()
    );
    path
}

/// Whether process `pid` still exists (a zombie counts: it was not reaped).
pub fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Processes (zombies included) whose environment holds `entry` (`KEY=value`),
/// e.g. the unique pid-file path a test gave a server: how to find the
/// children of a run even if they never got as far as writing a file.
pub fn processes_with_env(entry: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|var| var == entry.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Read a pid written by the test MCP server to `TEST_MCP_PID_FILE`.
pub fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no pid file {}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("bad pid in {}: {e}", path.display()))
}

/// SIGKILL every process whose command line contains `marker` (what a
/// killed agentbus left behind, e.g. a tool's `sleep`); returns how many.
pub fn kill_processes_with_cmdline(marker: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let pids: Vec<i32> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .collect();
    for pid in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    pids.len()
}

/// The session id of a run's events.
pub fn session_id(events: &[Value]) -> String {
    events
        .first()
        .and_then(|e| e["session_id"].as_str())
        .expect("events carry a session id")
        .to_string()
}
