//! `agentbus serve` as a cluster of nodes on Postgres and NATS, measured
//! (docs/cluster.md). Not a test: it checks only that the work was done — and
//! that no event was lost or duplicated, which is a correctness failure:
//! then it says so loudly and exits non-zero. Run with
//! `cargo bench --bench cluster`; the README reports the figures.
//!
//! Everything is real and on this machine: a throwaway Postgres and a NATS
//! server started by the test kit, release `agentbus serve` nodes with
//! `[cluster]`, the scripted model (stamping each text chunk with the time
//! it sent it) and SSE clients, all sharing the cores.
//!
//! 1. Failover: three nodes, `AGENTBUS_BENCH_KILLS` (default 20) rounds of
//!    `AGENTBUS_BENCH_FAILOVER_SESSIONS` (default 8) sessions mid-reply on
//!    one node, killed with `kill -9`; kill → `owner_changed` seen by a
//!    client of another node and stamped by the adopter, p50/p99/max over
//!    every session of every kill. TTL 3 s with the tests' heartbeat and
//!    sweep (`AGENTBUS_BENCH_HEARTBEAT_MS`, `AGENTBUS_BENCH_SWEEP_MS`, 0 for
//!    what a node derives from the TTL), then `AGENTBUS_BENCH_KILLS_TTL10`
//!    (default 6; 0 leaves them out) kills at the default TTL of 10 s. Each
//!    kill comes at a random moment between two of the owner's heartbeats.
//! 2. Events lost and duplicated: every client of (1) against the `events`
//!    table — clients of surviving nodes, and clients of the killed node
//!    that reconnect to another one with `Last-Event-ID`.
//! 3. Cross-node latency: model chunk → SSE client, a client of the owner
//!    against a client of another node; one session alone, then
//!    `AGENTBUS_BENCH_PACED_SESSIONS` (default 100) at once.
//! 4. Throughput: `AGENTBUS_BENCH_SESSIONS` (default 300) sessions
//!    answering a burst at once, `AGENTBUS_BENCH_BURSTS` (default 5)
//!    times, on three nodes (clients on the owners, then on other nodes),
//!    then on one node in cluster mode with a database of its own.
//!
//! Each phase prints the load average at its start and end (other builds
//! may share the machine) and each process's CPU time; the run ends with a
//! summary to paste into the README. The nodes log at
//! `AGENTBUS_BENCH_NODE_LOG` (default `info`).

#[path = "../tests/all/support/mod.rs"]
#[allow(dead_code)] // the bench uses a part of the tests' support
mod support;

#[path = "../tests/cluster/harness.rs"]
#[allow(dead_code)] // and a part of the cluster tests' harness
mod harness;

#[allow(dead_code)] // this bench uses the CPU time and the clock of it
mod measure;

#[path = "cluster/audit.rs"]
mod audit;
#[path = "cluster/client.rs"]
mod client;
#[path = "cluster/failover.rs"]
mod failover;
#[path = "cluster/figures.rs"]
mod figures;
#[path = "cluster/latency.rs"]
mod latency;
#[path = "cluster/summary.rs"]
mod summary;
#[path = "cluster/throughput.rs"]
mod throughput;

use figures::{Meter, mark_load};
use harness::{Lease, Node, cluster_with, start_node_with};
use std::process::ExitCode;

/// What a run does, from the environment.
struct Config {
    kills: usize,
    failover_sessions: usize,
    heartbeat_ms: Option<u64>,
    sweep_ms: Option<u64>,
    kills_ttl10: usize,
    paced_sessions: usize,
    alone_turns: usize,
    sessions: usize,
    bursts: usize,
    node_log: String,
}

impl Config {
    fn from_env() -> Config {
        let optional = |name: &str, default: u64| match env_number(name, default as usize) {
            0 => None,
            ms => Some(ms as u64),
        };
        Config {
            kills: env_number("AGENTBUS_BENCH_KILLS", 20),
            failover_sessions: env_number("AGENTBUS_BENCH_FAILOVER_SESSIONS", 8).max(1),
            heartbeat_ms: optional("AGENTBUS_BENCH_HEARTBEAT_MS", 500),
            sweep_ms: optional("AGENTBUS_BENCH_SWEEP_MS", 300),
            kills_ttl10: env_number("AGENTBUS_BENCH_KILLS_TTL10", 6),
            paced_sessions: env_number("AGENTBUS_BENCH_PACED_SESSIONS", 100).max(1),
            alone_turns: 10,
            sessions: env_number("AGENTBUS_BENCH_SESSIONS", 300).max(1),
            bursts: env_number("AGENTBUS_BENCH_BURSTS", 5).max(1),
            node_log: std::env::var("AGENTBUS_BENCH_NODE_LOG").unwrap_or_else(|_| "info".into()),
        }
    }
}

/// A whole number from the environment, or `default`.
fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cluster bench: no tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(bench())
}

async fn bench() -> ExitCode {
    let config = Config::from_env();
    let mut summary = summary::Summary::begin();
    println!(
        "agentbus cluster bench, {}: {} cores, release build (commit {})",
        summary.date,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        summary.commit
    );
    mark_load("the run", "start");

    // The short lease: failover, latency, throughput on three nodes, then
    // one node.
    let lease = Lease {
        ttl_secs: 3,
        heartbeat_ms: config.heartbeat_ms,
        sweep_ms: config.sweep_ms,
    };
    let script = format!(
        "{}{}{}",
        failover::script(config.kills * config.failover_sessions),
        latency::script(latency::turns(config.alone_turns, config.paced_sessions)),
        throughput::script(config.sessions * config.bursts * 3)
    );
    let Some((fx, database, nats)) = cluster_with(&script, lease).await else {
        eprintln!("cluster bench: no Postgres or no NATS server (see the messages above)");
        return ExitCode::FAILURE;
    };
    summary.postgres = summary::postgres_settings(&database).await;
    println!("Postgres (the test kit's): {}", summary.postgres);
    let meter = Meter {
        nats_pid: nats.pid(),
        postgres_port: database
            .address()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok()),
    };
    let env = [("RUST_LOG", config.node_log.as_str())];
    let mut nodes = Vec::new();
    for name in failover::NAMES {
        nodes.push(start_node_with(&fx, name, &database.url(), &nats.url(), &env).await);
    }

    let plan = failover::Plan {
        lease: lease_label(&lease, "the tests' lease"),
        kills: config.kills,
        sessions: config.failover_sessions,
        fx: &fx,
        database: &database,
        nats: nats.url(),
        heartbeat: heartbeat(&lease),
        node_env: &env,
    };
    summary
        .failovers
        .push(failover::run(&plan, &mut nodes).await);

    match latency::run(&nodes, meter, config.alone_turns, config.paced_sessions).await {
        Ok(figures) => summary.latency = Some(figures),
        Err(problem) => summary.not_done(format!("cross-node latency: {problem}")),
    }

    let mut after = Vec::new();
    let runs = async {
        let ids = throughput::create(&nodes, config.sessions).await?;
        let mut runs = Vec::new();
        for (shift, label) in [
            (0, "3 nodes, each client on its session's owner"),
            (1, "3 nodes, each client on another node than the owner"),
        ] {
            runs.push(
                throughput::run(throughput::Bursts {
                    label: format!("{} sessions, {label}", config.sessions),
                    nodes: &nodes,
                    sessions: &ids,
                    shift,
                    after: &mut after,
                    bursts: config.bursts,
                    meter,
                })
                .await?,
            );
        }
        Ok::<_, String>(runs)
    };
    match runs.await {
        Ok(runs) => summary.throughput.extend(runs),
        Err(problem) => summary.not_done(format!("throughput on 3 nodes: {problem}")),
    }
    for problem in stop(nodes).await {
        summary.not_done(problem);
    }

    match one_node(&fx, &nats, &env, &config, meter).await {
        Ok(run) => summary.throughput.insert(0, run),
        Err(problem) => summary.not_done(format!("throughput on 1 node: {problem}")),
    }
    let violations = fx.server.violations();
    if !violations.is_empty() {
        summary.not_done(format!("the model saw invalid requests: {violations:#?}"));
    }
    drop((fx, database, nats));

    if config.kills_ttl10 > 0 {
        default_ttl(&config, &env, &mut summary).await;
    }

    mark_load("the run", "end");
    summary.print()
}

/// The lease as the output names it.
fn lease_label(lease: &Lease, what: &str) -> String {
    let interval = |ms: Option<u64>, derived: &str| match ms {
        Some(ms) => format!("{:.1} s", ms as f64 / 1000.0),
        None => derived.to_string(),
    };
    format!(
        "TTL {} s, heartbeat {}, sweep {} ({what})",
        lease.ttl_secs,
        interval(lease.heartbeat_ms, "TTL/3"),
        interval(lease.sweep_ms, "~1 s (at most TTL/3)")
    )
}

/// How often a node with `lease` renews it.
fn heartbeat(lease: &Lease) -> std::time::Duration {
    std::time::Duration::from_millis(lease.heartbeat_ms.unwrap_or(lease.ttl_secs * 1000 / 3))
}

/// Stops `nodes` as an operator would (SIGTERM: they drain and leave);
/// what went wrong.
async fn stop(nodes: Vec<Node>) -> Vec<String> {
    for node in &nodes {
        node.server.terminate();
    }
    let mut problems = Vec::new();
    for node in nodes {
        let (status, log) = node.server.wait().await;
        if !status.success() {
            problems.push(format!(
                "{} did not stop cleanly ({status}); its log's end:\n{}",
                node.name,
                tail(&log)
            ));
        }
    }
    problems
}

/// The last lines of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// The throughput of one node in cluster mode, on a database of its own.
async fn one_node(
    fx: &support::Fixture,
    nats: &agentbus_testkit::nats::NatsServer,
    env: &[(&str, &str)],
    config: &Config,
    meter: Meter,
) -> Result<throughput::Run, String> {
    let database = agentbus_testkit::postgres::fresh_database()
        .await
        .ok_or("no database for the single node")?;
    let node = start_node_with(fx, "solo", &database.url(), &nats.url(), env).await;
    let nodes = vec![node];
    let ids = throughput::create(&nodes, config.sessions).await?;
    let mut after = Vec::new();
    let run = throughput::run(throughput::Bursts {
        label: format!("{} sessions, 1 node (cluster mode)", config.sessions),
        nodes: &nodes,
        sessions: &ids,
        shift: 0,
        after: &mut after,
        bursts: config.bursts,
        meter,
    })
    .await;
    if let Some(problem) = stop(nodes).await.into_iter().next() {
        return Err(problem);
    }
    run
}

/// A few kills at the default lease (TTL 10 s, heartbeat and sweep as a
/// node derives them), on a cluster of its own.
async fn default_ttl(config: &Config, env: &[(&str, &str)], summary: &mut summary::Summary) {
    let lease = Lease {
        ttl_secs: 10,
        heartbeat_ms: None,
        sweep_ms: None,
    };
    let script = failover::script(config.kills_ttl10 * config.failover_sessions);
    let Some((fx, database, nats)) = cluster_with(&script, lease).await else {
        summary.not_done("the TTL 10 s cluster: no Postgres or no NATS server".to_string());
        return;
    };
    let mut nodes = Vec::new();
    for name in failover::NAMES {
        nodes.push(start_node_with(&fx, name, &database.url(), &nats.url(), env).await);
    }
    let plan = failover::Plan {
        lease: lease_label(&lease, "the default"),
        kills: config.kills_ttl10,
        sessions: config.failover_sessions,
        fx: &fx,
        database: &database,
        nats: nats.url(),
        heartbeat: heartbeat(&lease),
        node_env: env,
    };
    summary
        .failovers
        .push(failover::run(&plan, &mut nodes).await);
    for problem in stop(nodes).await {
        summary.not_done(problem);
    }
    let violations = fx.server.violations();
    if !violations.is_empty() {
        summary.not_done(format!("the model saw invalid requests: {violations:#?}"));
    }
}
