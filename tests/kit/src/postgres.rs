//! A throwaway PostgreSQL server for tests, and a fresh database on it
//! per test.
//!
//! The first test of a test binary that asks for a database starts the
//! server: `initdb` into a temporary folder, then `postgres` listening on
//! `127.0.0.1` at a free port, readiness awaited by polling a real
//! connection (bounded attempts, never a fixed sleep). Every later test of
//! that binary shares the server and gets a database of its own
//! (`CREATE DATABASE t_...`, with an ICU `en-US` collation where the server
//! has ICU, as production databases have a linguistic one). PostgreSQL
//! refuses to run as root: as root, the server runs as the `postgres`
//! system user (which Debian's package creates).
//!
//! The server lives as long as the test binary: a small watcher process
//! reads a pipe from the binary and, when it closes (the binary exited,
//! however it ended), stops the server and removes its folder.
//!
//! Where the server binaries are: `$AGENTBUS_POSTGRES_BIN`, else the
//! newest `/usr/lib/postgresql/*/bin` (Debian's layout), else `initdb` and
//! `postgres` on `PATH`. When no server can be had (binaries missing, no
//! user to run it as), a test fails with one line saying why and how to
//! install it ([`crate::prerequisite`]) — unless `AGENTBUS_SKIP_POSTGRES=1`,
//! when it is skipped with that reason on stderr. Never silently passes.

use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The environment variable that turns a missing server into a skip.
pub const SKIP_VAR: &str = "AGENTBUS_SKIP_POSTGRES";

/// The superuser `initdb` makes (trust authentication: any password is
/// accepted, so URLs may carry one to test its redaction).
pub const SUPERUSER: &str = "postgres";

/// How many connection attempts the readiness poll makes (one per
/// [`POLL_INTERVAL`]): a hang guard, not a synchroniser.
const READY_ATTEMPTS: u32 = 600;
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// How many ports are tried when the chosen one is taken meanwhile.
const START_ATTEMPTS: u32 = 3;

/// The running server of this test binary.
#[derive(Debug)]
pub struct PostgresServer {
    port: u16,
    /// The folder holding the data directory, socket and log.
    dir: PathBuf,
    /// Kept open: when the test binary exits it closes, and the watcher
    /// stops the server.
    _watcher: ChildStdin,
}

impl PostgresServer {
    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `HOST:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A URL of database `name` as the superuser.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{name}", self.port)
    }

    /// The server's log (for messages when something fails).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
    }
}

/// A database of its own for one test.
#[derive(Clone, Debug)]
pub struct TestDatabase {
    pub name: String,
    port: u16,
}

impl TestDatabase {
    /// Its URL, as the superuser without a password.
    pub fn url(&self) -> String {
        format!(
            "postgres://{SUPERUSER}@127.0.0.1:{}/{}",
            self.port, self.name
        )
    }

    /// Its URL with `password` in it (trust authentication ignores it).
    pub fn url_with_password(&self, password: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{password}@127.0.0.1:{}/{}",
            self.port, self.name
        )
    }

    /// `HOST:PORT` of its server.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A plain connection to it, to look behind a store's back; its
    /// connection task runs on the current runtime.
    pub async fn client(&self) -> tokio_postgres::Client {
        connect(&self.url())
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.url()))
    }
}

/// The server of this test binary, started on first use; `Err` says why
/// there is none.
pub fn server() -> Result<&'static PostgresServer, String> {
    static SERVER: OnceLock<Result<PostgresServer, String>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            // Its own thread: the readiness poll runs a runtime of its own,
            // which cannot be started on a runtime's thread.
            std::thread::spawn(start)
                .join()
                .unwrap_or_else(|_| Err("starting the server panicked".to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A fresh, empty database on the server of this test binary. `None` only
/// when there is no server and `AGENTBUS_SKIP_POSTGRES=1` (the reason is
/// printed); without that variable, no server fails the test.
pub async fn fresh_database() -> Option<TestDatabase> {
    let server = match tokio::task::spawn_blocking(server).await {
        Ok(Ok(server)) => server,
        Ok(Err(reason)) => return unavailable(&reason),
        Err(e) => return unavailable(&format!("starting the server failed: {e}")),
    };
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let name = format!(
        "t_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let admin = connect(&server.url("postgres"))
        .await
        .unwrap_or_else(|e| panic!("connect to the test server: {e}\n{}", server.log()));
    let icu = format!(
        "CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' \
         LOCALE 'C.UTF-8'"
    );
    if admin.batch_execute(&icu).await.is_err() {
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}\n{}", server.log()));
    }
    Some(TestDatabase {
        name,
        port: server.port,
    })
}

/// No server: skip with the reason when `AGENTBUS_SKIP_POSTGRES=1`, else
/// fail with it.
pub fn unavailable<T>(reason: &str) -> Option<T> {
    if std::env::var(SKIP_VAR).as_deref() == Ok("1") {
        eprintln!("skipping a Postgres test ({SKIP_VAR}=1): {reason}");
        return None;
    }
    crate::prerequisite::missing(&format!(
        "the Postgres tests need a PostgreSQL server and cannot have one: {reason}; install \
         Debian's (as root: apt-get install -y postgresql; .ci/run does), point \
         AGENTBUS_POSTGRES_BIN at its binaries, or set {SKIP_VAR}=1 to skip these tests"
    ))
}

async fn connect(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes away.
        let _ = connection.await;
    });
    Ok(client)
}

/// The folder holding `initdb` and `postgres`.
fn binaries() -> Result<PathBuf, String> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("AGENTBUS_POSTGRES_BIN") {
        let dir = PathBuf::from(dir);
        return if has_both(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "AGENTBUS_POSTGRES_BIN={} holds no initdb and postgres",
                dir.display()
            ))
        };
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| has_both(bin))
        .collect();
    debian.sort();
    if let Some((_, bin)) = debian.pop() {
        return Ok(bin);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .find(|dir| has_both(dir))
        .ok_or_else(|| {
            "no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin \
             or on PATH"
                .to_string()
        })
}

/// Who runs the server: `None` for this process's own user, or the
/// `postgres` user's uid and gid when this process is root.
fn server_user() -> Result<Option<(u32, u32)>, String> {
    let me = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(|e| format!("cannot tell who runs the tests (/proc/self: {e})"))?;
    if me != 0 {
        return Ok(None);
    }
    let output = Command::new("getent")
        .args(["passwd", SUPERUSER])
        .output()
        .map_err(|e| format!("getent passwd {SUPERUSER}: {e}"))?;
    let line = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<&str> = line.trim().split(':').collect();
    match (
        fields.get(2).and_then(|u| u.parse().ok()),
        fields.get(3).and_then(|g| g.parse().ok()),
    ) {
        (Some(uid), Some(gid)) => Ok(Some((uid, gid))),
        _ => Err(format!(
            "the tests run as root, which PostgreSQL refuses, and there is no `{SUPERUSER}` \
             user to run the server as (create one: useradd --system {SUPERUSER})"
        )),
    }
}

/// A command run as the server's user, in `dir`.
fn as_server_user(program: PathBuf, user: Option<(u32, u32)>, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir);
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
    command
}

/// Start the server: `initdb`, `postgres`, the watcher, the readiness poll.
fn start() -> Result<PostgresServer, String> {
    let bin = binaries()?;
    let user = server_user()?;
    let dir = tempfile::Builder::new()
        .prefix("agentbus-postgres-")
        .tempdir()
        .map_err(|e| format!("a temporary folder: {e}"))?
        .keep();
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            .map_err(|e| format!("chown {}: {e}", dir.display()))?;
    }
    let data = dir.join("data");
    let initdb = as_server_user(bin.join("initdb"), user, &dir)
        .args([
            "-A",
            "trust",
            "-U",
            SUPERUSER,
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ])
        .arg("-D")
        .arg(&data)
        .output()
        .map_err(|e| format!("run {}: {e}", bin.join("initdb").display()))?;
    if !initdb.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(format!(
            "initdb failed ({}): {}",
            initdb.status,
            String::from_utf8_lossy(&initdb.stderr)
        ));
    }
    let mut last_failure = String::new();
    for _ in 0..START_ATTEMPTS {
        let port = free_port()?;
        let log = std::fs::File::create(dir.join("postgres.log"))
            .map_err(|e| format!("the server's log: {e}"))?;
        if let Some((uid, gid)) = user {
            let _ = std::os::unix::fs::chown(dir.join("postgres.log"), Some(uid), Some(gid));
        }
        let mut child = as_server_user(bin.join("postgres"), user, &dir)
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&dir)
            .args(["-c", "listen_addresses=127.0.0.1", "-p", &port.to_string()])
            // A throwaway server: no durability to wait for.
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .args(["-c", "max_connections=300"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            // Not stopped by a Ctrl-C meant for the test binary before the
            // watcher stops it.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("run {}: {e}", bin.join("postgres").display()))?;
        let watcher = watch(child.id(), &dir)?;
        match ready(port, &mut child) {
            Ok(()) => {
                return Ok(PostgresServer {
                    port,
                    dir,
                    _watcher: watcher,
                });
            }
            Err(failure) => {
                // The watcher stops what is left of this attempt.
                drop(watcher);
                last_failure = format!(
                    "{failure}; its log:\n{}",
                    std::fs::read_to_string(dir.join("postgres.log")).unwrap_or_default()
                );
            }
        }
    }
    Err(format!("the test server did not start: {last_failure}"))
}

/// Start the watcher of server `pid`: when its stdin closes it stops the
/// server (fast shutdown), waits for it to let go of its data directory,
/// and removes `dir`.
fn watch(pid: u32, dir: &Path) -> Result<ChildStdin, String> {
    const SCRIPT: &str = r#"
trap '' INT HUP
cat > /dev/null
kill -INT "$1" 2>/dev/null
i=0
while [ -e "$2/data/postmaster.pid" ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
rm -rf "$2"
"#;
    let mut watcher: Child = Command::new("sh")
        .args(["-c", SCRIPT, "agentbus-postgres-watcher"])
        .arg(pid.to_string())
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("start the server's watcher: {e}"))?;
    let mut stdin = watcher
        .stdin
        .take()
        .ok_or("the watcher has no stdin".to_string())?;
    // Nothing is ever written: only the pipe's closing matters.
    let _ = stdin.flush();
    Ok(stdin)
}

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| format!("a free port: {e}"))
}

/// Poll a connection to the server at `port` until one works, the server
/// exits, or [`READY_ATTEMPTS`] are used up.
fn ready(port: u16, child: &mut Child) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a runtime to poll the server: {e}"))?;
    let url = format!("postgres://{SUPERUSER}@127.0.0.1:{port}/postgres?connect_timeout=5");
    let mut last = String::new();
    for _ in 0..READY_ATTEMPTS {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the server exited ({status})"));
        }
        match runtime.block_on(tokio_postgres::connect(&url, tokio_postgres::NoTls)) {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let _ = child.kill();
    Err(format!(
        "no connection after {READY_ATTEMPTS} attempts (last: {last})"
    ))
}
