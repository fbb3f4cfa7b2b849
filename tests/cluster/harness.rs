//! A cluster for a test: one fresh database on the test binary's
//! throwaway Postgres, the scripted model, and `agentbus serve` nodes with
//! `[cluster]` and a short lease (TTL 3 s, heartbeat 0.5 s, sweep 0.3 s),
//! each named by `AB_NODE_NAME` and pointed at the database (or a proxy in
//! front of it) by `AB_PG_URL`; they share the fixture's workspace and data
//! dir (one API token). The cluster benchmark (`benches/cluster.rs`) uses it
//! too, with a lease of its choosing ([`cluster_with`]) and quieter nodes
//! ([`start_node_with`]).
//!
//! Waits poll the database or the nodes' logs until a deadline that is a
//! hang guard, never a pass criterion; tests run one at a time
//! ([`serial`]), so the nodes of one test have the machine's cores.

use crate::support::server::Server;
use crate::support::{Fixture, GUARD};
use agentbus_testkit::Script;
use agentbus_testkit::nats::NatsServer;
use agentbus_testkit::postgres::{TestDatabase, fresh_database};
use serde_json::Value;
use std::future::Future;
use std::time::{Duration, Instant};

/// The lease of the nodes under test.
pub const TTL_SECS: u64 = 3;

/// How often a poll looks again.
const POLL: Duration = Duration::from_millis(50);

/// Tests of this binary run one at a time: each starts several daemons.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    ONE_AT_A_TIME.lock().await
}

/// A node's lease as a cluster's configuration sets it: `node_ttl_secs`,
/// and the heartbeat and sweep intervals (`None`: what the node derives
/// from the TTL, as in production).
#[derive(Clone, Copy, Debug)]
pub struct Lease {
    pub ttl_secs: u64,
    pub heartbeat_ms: Option<u64>,
    pub sweep_ms: Option<u64>,
}

/// The lease of the nodes under test: TTL 3 s, heartbeat 0.5 s, sweep 0.3 s.
pub const TEST_LEASE: Lease = Lease {
    ttl_secs: TTL_SECS,
    heartbeat_ms: Some(500),
    sweep_ms: Some(300),
};

impl Lease {
    /// The `[cluster]` lines that set it.
    fn config(&self) -> String {
        let mut toml = format!("node_ttl_secs = {}\n", self.ttl_secs);
        if let Some(ms) = self.heartbeat_ms {
            toml.push_str(&format!("heartbeat_ms = {ms}\n"));
        }
        if let Some(ms) = self.sweep_ms {
            toml.push_str(&format!("sweep_ms = {ms}\n"));
        }
        toml
    }
}

/// A fixture answering `script` (TOML `[[response]]` tables), configured
/// as a cluster, a fresh database for it and a NATS server of its own (the
/// live plane: kept running while the test holds it). `None` when Postgres
/// or NATS is missing and the tests may skip.
pub async fn cluster(script: &str) -> Option<(Fixture, TestDatabase, NatsServer)> {
    cluster_with(script, TEST_LEASE).await
}

/// [`cluster`] with the nodes' lease set to `lease`.
pub async fn cluster_with(
    script: &str,
    lease: Lease,
) -> Option<(Fixture, TestDatabase, NatsServer)> {
    let database = fresh_database().await?;
    let nats = NatsServer::start().await.expect("nats-server starts")?;
    let script = Script::from_toml_str(script).expect("the script parses");
    let fx = Fixture::with_script(script).await;
    fx.add_config(&format!(
        "[cluster]\npostgres_url = \"${{AB_PG_URL}}\"\nname = \"${{AB_NODE_NAME}}\"\n\
         nats_url = \"${{AB_NATS_URL}}\"\n{}",
        lease.config()
    ));
    *lock_nats_url() = nats.url();
    Some((fx, database, nats))
}

/// [`cluster`], and its nodes `names` started in that order (on the
/// cluster's own NATS server).
pub async fn cluster_of<const N: usize>(
    script: &str,
    names: [&str; N],
) -> Option<(Fixture, TestDatabase, NatsServer, [Node; N])> {
    let (fx, database, nats) = cluster(script).await?;
    let url = database.url();
    let mut nodes = Vec::with_capacity(N);
    for name in names {
        nodes.push(start_node(&fx, name, &url).await);
    }
    let nodes = nodes.try_into().ok()?;
    Some((fx, database, nats, nodes))
}

/// One running node.
pub struct Node {
    pub name: String,
    /// Its node id when it started.
    pub id: String,
    pub server: Server,
}

impl Node {
    /// Its current node id, as it says (a new one after it rejoined).
    pub async fn current_id(&self) -> String {
        let health = self.server.get_json("/v1/health").await;
        health["cluster"]["node_id"]
            .as_str()
            .expect("a node says its id")
            .to_string()
    }

    /// Stop it (SIGSTOP), as a hung host would be.
    pub fn pause(&self) {
        signal(self.server.pid(), nix::sys::signal::Signal::SIGSTOP);
    }

    /// Let it go on (SIGCONT).
    pub fn resume(&self) {
        signal(self.server.pid(), nix::sys::signal::Signal::SIGCONT);
    }
}

fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal)
        .unwrap_or_else(|e| panic!("send {signal} to {pid}: {e}"));
}

/// The NATS server of the cluster [`cluster`] made last (tests run one at
/// a time).
fn lock_nats_url() -> std::sync::MutexGuard<'static, String> {
    static NATS_URL: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    NATS_URL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A TCP proxy in front of `nats`, for a test that cuts a node off it
/// (`cut`, `restore`), and the `nats://` address to give that node.
pub async fn nats_proxy(nats: &NatsServer) -> (agentbus_testkit::tcp_proxy::TcpProxy, String) {
    let target = format!("127.0.0.1:{}", nats.port())
        .parse()
        .expect("an address");
    let proxy = agentbus_testkit::tcp_proxy::TcpProxy::start(target)
        .await
        .expect("a proxy");
    let address = format!("nats://{}", proxy.address());
    (proxy, address)
}

/// Start node `name` of `fx`'s cluster, its store at `url`.
pub async fn start_node(fx: &Fixture, name: &str, url: &str) -> Node {
    let nats = lock_nats_url().clone();
    start_node_on(fx, name, url, &nats).await
}

/// Start node `name` of `fx`'s cluster, its store at `url`, its live plane
/// at `nats` (a proxy, for a test that cuts it).
pub async fn start_node_on(fx: &Fixture, name: &str, url: &str, nats: &str) -> Node {
    start_node_with(fx, name, url, nats, &[]).await
}

/// [`start_node_on`] with more environment variables for the node (a
/// benchmark's quieter `RUST_LOG`; the fixture's is `debug`).
pub async fn start_node_with(
    fx: &Fixture,
    name: &str,
    url: &str,
    nats: &str,
    env: &[(&str, &str)],
) -> Node {
    let mut vars = vec![
        ("AB_NODE_NAME", name),
        ("AB_PG_URL", url),
        ("AB_NATS_URL", nats),
    ];
    vars.extend_from_slice(env);
    let server = fx.serve_with_env(&[], &vars).await;
    let health = server.get_json("/v1/health").await;
    let id = health["cluster"]["node_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} is a node of a cluster: {health}"))
        .to_string();
    assert_eq!(health["cluster"]["name"], name, "{health}");
    Node {
        name: name.to_string(),
        id,
        server,
    }
}

/// One stored event, straight from the database.
#[derive(Clone, Debug)]
pub struct Stored {
    pub seq: u64,
    pub kind: String,
    pub epoch: i64,
    pub body: Value,
}

impl Stored {
    pub fn is_owner_changed(&self) -> bool {
        self.kind == "system" && self.body["subtype"] == "owner_changed"
    }
}

/// Session `id`'s stored log, in seq order.
pub async fn stored_log(database: &TestDatabase, id: &str) -> Vec<Stored> {
    database
        .client()
        .await
        .query(
            "SELECT seq, type, epoch, body::text FROM events WHERE session_id = $1 ORDER BY seq",
            &[&id],
        )
        .await
        .expect("read the log")
        .iter()
        .map(|row| Stored {
            seq: row.get::<_, i64>(0) as u64,
            kind: row.get(1),
            epoch: row.get(2),
            body: serde_json::from_str(row.get::<_, &str>(3)).expect("a JSON body"),
        })
        .collect()
}

/// The node id that owns session `id`, if any.
pub async fn owner_of(database: &TestDatabase, id: &str) -> Option<String> {
    database
        .client()
        .await
        .query_one(
            "SELECT owner_node::text FROM sessions WHERE id = $1",
            &[&id],
        )
        .await
        .expect("the session")
        .get(0)
}

/// The live node rows named `name`: their ids.
pub async fn live_nodes_named(database: &TestDatabase, name: &str) -> Vec<String> {
    database
        .client()
        .await
        .query(
            "SELECT node_id::text FROM nodes WHERE name = $1 AND expires_at > now() \
             ORDER BY started_at",
            &[&name],
        )
        .await
        .expect("nodes")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// Poll `check` until it gives a value; panics (naming `what`) after
/// [`GUARD`], a hang guard.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < GUARD, "{what}: not within {GUARD:?}");
        tokio::time::sleep(POLL).await;
    }
}

/// The log's invariants across owners: seqs strictly increase (the table's
/// key makes them unique), the epoch stamped on each event never goes
/// back as seqs go on, and each later epoch opens with `owner_changed`.
pub fn assert_log_consistent(log: &[Stored]) {
    for pair in log.windows(2) {
        assert!(pair[0].seq < pair[1].seq, "seqs increase: {log:#?}");
        assert!(
            pair[0].epoch <= pair[1].epoch,
            "the epoch never goes back: seq {} epoch {} then seq {} epoch {}",
            pair[0].seq,
            pair[0].epoch,
            pair[1].seq,
            pair[1].epoch
        );
        if pair[1].epoch > pair[0].epoch && pair[1].epoch > 1 {
            assert!(
                pair[1].is_owner_changed(),
                "epoch {} opens with owner_changed, not {:?}",
                pair[1].epoch,
                pair[1].body
            );
        }
    }
}

/// Every persisted event a client received is stored, identical (its
/// seq, and its body byte for byte as JSON) — but for the `error` a node
/// that lost the session tells its watchers, which is never stored.
pub fn assert_stored(received: &[Value], log: &[Stored]) {
    let told_by_a_fenced_node = |e: &Value| {
        e["type"] == "error"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("stopped driving the session"))
    };
    for event in received
        .iter()
        .filter(|e| e["type"] != "stream_event" && !told_by_a_fenced_node(e))
    {
        let seq = event["seq"].as_u64().expect("a seq");
        let stored = log
            .iter()
            .find(|s| s.seq == seq)
            .unwrap_or_else(|| panic!("event seq {seq} a client received is not stored: {event}"));
        assert_eq!(
            &stored.body, event,
            "the stored event seq {seq} is what the client got"
        );
    }
}

/// The slow turn the scripts hold open: three text pieces, then nothing
/// until the node is gone.
pub const SLOW: &str = "[[response]]\nmatch = \"slow\"\ntext = \"This answer never finishes\"\n\
     chunk_size = 5\nstall_after_chunks = 3\n";

/// `n` answers to `word` each.
pub fn answers(word: &str, text: &str, n: usize) -> String {
    format!("[[response]]\nmatch = \"{word}\"\ntext = \"{text}\"\n").repeat(n)
}

/// Wait for `stream`'s first text deltas of a turn (so the turn is in
/// flight): returns the persisted events and the last seq received.
pub async fn until_streaming(stream: &mut crate::support::server::EventStream) -> u64 {
    for _ in 0..2 {
        stream
            .until(|e| e["type"] == "stream_event" && e["event"]["type"] == "text_delta")
            .await;
    }
    *stream.seqs().last().expect("events")
}

/// A readable duration for the report lines.
pub fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}
