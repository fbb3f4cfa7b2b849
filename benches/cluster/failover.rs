//! Failover under `kill -9`, and what the clients got across it (phases 1
//! and 2 of the cluster bench).
//!
//! Each round: sessions created on one node (their owner), each streaming a
//! slow, paced reply; a client of each on another node that is not killed
//! (it keeps its connection), and in every other round also a client on the
//! owner itself, which loses its connection with the owner and reconnects
//! to the third node with `Last-Event-ID`. The owner is killed at t0; per
//! session the bench measures when the follower sees `owner_changed` and
//! when the adopter stamped it (its `at`), checks that the interrupted turn
//! is closed with `stop_reason: error`, sends a next query through the
//! follower's node (it runs on the adopter) and waits for its answer; then
//! every client's events are compared with the `events` table and the
//! killed node starts again under its name, so three nodes stand for the
//! next round.
//!
//! Never decides a pass on a time: a wait that runs out is a hang guard,
//! reported as a problem (a failover that never happened).

use crate::audit::{Audit, check_client, log_problems};
use crate::client::{Client, Endpoint};
use crate::figures::{Spread, mark_load};
use crate::harness::{Node, start_node_with, stored_log};
use crate::measure::unix_micros;
use crate::support::Fixture;
use agentbus_testkit::postgres::TestDatabase;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The query that starts a slow reply, and the next one.
pub const SLOW: &str = "slow please";
pub const NEXT: &str = "next please";
/// What the scripted model answers to [`NEXT`].
pub const NEXT_ANSWER: &str = "The next answer.";

/// The script's responses for `turns` slow replies and as many next ones:
/// a slow reply is 600 stamped chunks 50 ms apart (30 s), far longer than
/// any failover.
pub fn script(turns: usize) -> String {
    let slow = "[[response]]\nmatch = \"slow\"\nstamped_chunks = 600\nchunk_interval_ms = 50\n";
    let next = format!("[[response]]\nmatch = \"next\"\ntext = \"{NEXT_ANSWER}\"\n");
    format!("{}{}", slow.repeat(turns), next.repeat(turns))
}

/// How a failover phase runs.
pub struct Plan<'a> {
    /// The lease, as the output names it.
    pub lease: String,
    pub kills: usize,
    pub sessions: usize,
    pub fx: &'a Fixture,
    pub database: &'a TestDatabase,
    pub nats: String,
    /// How often the nodes renew their lease: each kill comes at a random
    /// moment within such an interval.
    pub heartbeat: Duration,
    /// Extra environment for the nodes started again.
    pub node_env: &'a [(&'a str, &'a str)],
}

/// What a failover phase measured.
#[derive(Default)]
pub struct Figures {
    pub lease: String,
    pub kills: usize,
    /// Sessions whose failover was measured.
    pub sessions: usize,
    /// Kill → `owner_changed` received by the follower on a surviving node.
    pub seen_us: Vec<u64>,
    /// Kill → the `at` of `owner_changed` (stamped by the adopter as it
    /// wrote the event; it was committed before any client saw it).
    pub stored_us: Vec<u64>,
    /// Kill → `owner_changed` received by a client of the killed node,
    /// reconnected to the third node.
    pub reconnected_seen_us: Vec<u64>,
    /// Kill → the answer to the next query reached the follower.
    pub answered_us: Vec<u64>,
    /// The killed node's start again, until it answered.
    pub restart_us: Vec<u64>,
    pub adopters: BTreeMap<String, usize>,
    pub audit: Audit,
    /// Correctness failures, said in full.
    pub problems: Vec<String>,
}

/// The three nodes' names.
pub const NAMES: [&str; 3] = ["node-1", "node-2", "node-3"];

/// Runs `plan.kills` rounds on `nodes` (three of them), starting each
/// killed node again in its place.
pub async fn run(plan: &Plan<'_>, nodes: &mut [Node]) -> Figures {
    let phase = format!("failover ({})", plan.lease);
    println!(
        "\n== {phase}: {} kills, {} sessions each, 3 nodes ==",
        plan.kills, plan.sessions
    );
    mark_load(&phase, "start");
    let mut figures = Figures {
        lease: plan.lease.clone(),
        kills: plan.kills,
        ..Figures::default()
    };
    for round in 0..plan.kills {
        if let Err(problem) = one_round(plan, nodes, round, &mut figures).await {
            println!("round {}: {problem}", round + 1);
            figures
                .problems
                .push(format!("round {}: {problem}", round + 1));
        }
    }
    mark_load(&phase, "end");
    figures
}

/// One round's sessions and their clients.
struct Round {
    number: usize,
    owner: usize,
    watcher: usize,
    spare: usize,
    ids: Vec<String>,
    /// A client of each session on the node that is not killed.
    followers: Vec<Client>,
    /// In every other round, a client of each session on the owner, which
    /// reconnects to the third node.
    movers: Vec<Client>,
}

async fn one_round(
    plan: &Plan<'_>,
    nodes: &mut [Node],
    round: usize,
    figures: &mut Figures,
) -> Result<(), String> {
    let mut round = mid_reply(plan, nodes, round).await?;
    let killed_name = nodes[round.owner].name.clone();
    // Not a wait for anything: the kill falls anywhere between two of the
    // owner's heartbeats, so that the failover times are not all measured
    // from the same point of its lease.
    tokio::time::sleep(random_below(plan.heartbeat)).await;
    let t0 = Instant::now();
    let t0_us = unix_micros();
    nodes[round.owner].server.kill9();

    let failed_over = after_the_kill(nodes, &mut round, t0, t0_us, figures).await;

    // Three nodes again, whatever happened.
    let restarting = Instant::now();
    let again = start_node_with(
        plan.fx,
        &killed_name,
        &plan.database.url(),
        &plan.nats,
        plan.node_env,
    )
    .await;
    let restarted = restarting.elapsed();
    figures.restart_us.push(restarted.as_micros() as u64);
    let killed = std::mem::replace(&mut nodes[round.owner], again);
    let (_, killed_log) = killed.server.wait().await;
    let round_seen = failed_over?;

    let number = round.number;
    let audit = audit_round(
        plan,
        nodes,
        round,
        &killed_name,
        &killed_log,
        t0_us,
        figures,
    )
    .await;
    let seen = Spread::of_micros(&round_seen);
    println!(
        "round {}/{}: killed {killed_name} with {} sessions mid-reply; owner_changed at the \
         followers {:.2}-{:.2} s after the kill; {} clients checked ({} reconnected), {} rows, \
         lost {}, duplicated {}; {killed_name} started again in {:.2} s",
        number + 1,
        plan.kills,
        round_seen.len(),
        round_seen.iter().copied().min().unwrap_or(0) as f64 / 1e6,
        seen.max.as_secs_f64(),
        audit.clients,
        audit.reconnected_clients,
        audit.events_checked,
        audit.lost,
        audit.duplicated,
        restarted.as_secs_f64(),
    );
    Ok(())
}

/// Sessions created on the round's owner, their clients attached, each
/// streaming its slow reply.
async fn mid_reply(plan: &Plan<'_>, nodes: &[Node], number: usize) -> Result<Round, String> {
    let (owner, watcher, spare) = (number % 3, (number + 1) % 3, (number + 2) % 3);
    let at = |i: usize| Endpoint::of(&nodes[i]);
    let mut round = Round {
        number,
        owner,
        watcher,
        spare,
        ids: Vec::with_capacity(plan.sessions),
        followers: Vec::with_capacity(plan.sessions),
        movers: Vec::new(),
    };
    for _ in 0..plan.sessions {
        round.ids.push(at(owner).create_session().await?);
    }
    for id in &round.ids {
        round
            .followers
            .push(Client::open(id, vec![at(watcher)], 0, true).await?);
        if number % 2 == 1 {
            round
                .movers
                .push(Client::open(id, vec![at(owner), at(spare)], 0, true).await?);
        }
    }
    let sends = round.ids.iter().map(|id| {
        let owner = at(owner);
        async move { owner.input(id, SLOW).await }
    });
    for sent in futures::future::join_all(sends).await {
        sent?;
    }
    for client in round.followers.iter_mut().chain(round.movers.iter_mut()) {
        if !client.until(|seen| seen.text_deltas >= 2).await {
            return Err(format!(
                "session {} on {}: the slow reply never streamed",
                client.session, client.node
            ));
        }
    }
    Ok(round)
}

/// Waits for every client to see the failover, measures it, then sends
/// the next query through the followers' node and waits for its answer.
/// The followers' kill → `owner_changed` times.
async fn after_the_kill(
    nodes: &[Node],
    round: &mut Round,
    t0: Instant,
    t0_us: u64,
    figures: &mut Figures,
) -> Result<Vec<u64>, String> {
    let since_kill = |at: Instant| at.duration_since(t0).as_micros() as u64;
    let survivors: BTreeMap<String, String> = [round.watcher, round.spare]
        .iter()
        .map(|&i| (nodes[i].id.clone(), nodes[i].name.clone()))
        .collect();
    let mut round_seen = Vec::new();
    for client in &mut round.followers {
        if !client
            .until(|seen| seen.owner_changed.is_some() && seen.result_of(1).is_some())
            .await
        {
            return Err(format!(
                "session {}: the follower on {} saw no owner_changed and no end of the \
                 interrupted turn within {:?} of the kill: a failover that never happened",
                client.session,
                client.node,
                crate::support::GUARD
            ));
        }
        let (seen_at, closed, changed) = {
            let seen = client.seen();
            let changed = seen.persisted.iter().find_map(|(_, data)| {
                let event: serde_json::Value = serde_json::from_str(data).ok()?;
                (event["subtype"] == "owner_changed").then_some(event)
            });
            (
                seen.owner_changed,
                seen.result_of(1).map(|r| r.stop_reason.clone()),
                changed.unwrap_or_default(),
            )
        };
        let seen_us = seen_at.map_or(0, since_kill);
        round_seen.push(seen_us);
        figures.seen_us.push(seen_us);
        if let Some(stamped) = changed["at"]
            .as_str()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        {
            let stamped_us = stamped.timestamp_micros().max(0) as u64;
            figures.stored_us.push(stamped_us.saturating_sub(t0_us));
        }
        let adopter = changed["data"]["node"].as_str().unwrap_or_default();
        let adopter = survivors
            .get(adopter)
            .cloned()
            .unwrap_or_else(|| format!("another node ({adopter})"));
        *figures.adopters.entry(adopter).or_default() += 1;
        if closed.as_deref() != Some("error") {
            figures.problems.push(format!(
                "round {}: session {}: the interrupted turn ended with stop_reason {closed:?}, \
                 not error",
                round.number + 1,
                client.session
            ));
        }
    }
    for client in &mut round.movers {
        if !client
            .until(|seen| seen.owner_changed.is_some() && seen.result_of(1).is_some())
            .await
        {
            return Err(format!(
                "session {}: the client of the killed node, reconnecting to {}, saw no \
                 owner_changed within {:?}",
                client.session,
                nodes[round.spare].name,
                crate::support::GUARD
            ));
        }
        let seen = client.seen().owner_changed;
        figures.reconnected_seen_us.push(seen.map_or(0, since_kill));
    }

    // The next query, through the follower's node: it runs on the adopter.
    let watcher = Endpoint::of(&nodes[round.watcher]);
    let sends = round.ids.iter().map(|id| {
        let watcher = watcher.clone();
        async move { watcher.input(id, NEXT).await }
    });
    let inputs: Vec<u64> = futures::future::join_all(sends)
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    for (client, input) in round.followers.iter_mut().zip(&inputs) {
        if !client.until(|seen| seen.result_of(*input).is_some()).await {
            return Err(format!(
                "session {}: the next query (input {input}) was not answered",
                client.session
            ));
        }
        let Some(answer) = client.seen().result_of(*input).cloned() else {
            continue;
        };
        figures.answered_us.push(since_kill(answer.at));
        if answer.text.as_deref() != Some(NEXT_ANSWER) {
            figures.problems.push(format!(
                "round {}: session {}: the next query was answered {:?} ({}), not {NEXT_ANSWER:?}",
                round.number + 1,
                client.session,
                answer.text,
                answer.stop_reason
            ));
        }
    }
    for (client, input) in round.movers.iter_mut().zip(&inputs) {
        if !client.until(|seen| seen.result_of(*input).is_some()).await {
            return Err(format!(
                "session {}: the reconnected client never got the next answer",
                client.session
            ));
        }
    }
    Ok(round_seen)
}

/// Every client's events against its session's table; counts them into
/// `figures` and says every discrepancy in full. This round's counts.
async fn audit_round(
    plan: &Plan<'_>,
    nodes: &[Node],
    round: Round,
    killed_name: &str,
    killed_log: &str,
    t0_us: u64,
    figures: &mut Figures,
) -> Audit {
    let mut audit = Audit::default();
    let mut clients: Vec<Client> = round.followers.into_iter().chain(round.movers).collect();
    for client in &mut clients {
        let table = stored_log(plan.database, &client.session).await;
        let last = table.last().map_or(0, |row| row.seq);
        // Whatever the table holds after the answer (nothing, as built)
        // may still be on its way: a bounded wait, then it counts as lost.
        client
            .until_within(Duration::from_secs(5), |seen| seen.last_seq >= last)
            .await;
    }
    for client in clients {
        let table = stored_log(plan.database, &client.session).await;
        let (session, node) = (client.session.clone(), client.node.clone());
        let seen = client.finish();
        let finding = check_client(&table, &seen);
        audit.count(&seen, table.len(), &finding);
        let inconsistent = log_problems(&table);
        if !inconsistent.is_empty() {
            audit.inconsistent_logs += 1;
            figures.problems.push(format!(
                "round {}: session {session}: its log breaks an invariant: {inconsistent:?}",
                round.number + 1
            ));
        }
        if finding.is_clean() && seen.out_of_order == 0 && seen.gave_up.is_none() {
            continue;
        }
        let received: Vec<u64> = seen.persisted.iter().map(|(seq, _)| *seq).collect();
        let stored: Vec<(u64, &str, i64)> = table
            .iter()
            .map(|row| (row.seq, row.kind.as_str(), row.epoch))
            .collect();
        let problem = format!(
            "round {}: session {session}, client first on {node} ({} reconnects, gave up: {:?}): \
             lost {:?}, duplicated {:?}, not stored {:?}, differing {:?}, out of order {}; \
             received persisted seqs {received:?}; table (seq, type, epoch) {stored:?}; \
             {killed_name} killed at unix {t0_us} us",
            round.number + 1,
            seen.reconnects,
            seen.gave_up,
            finding.lost,
            finding.duplicated,
            finding.not_stored,
            finding.differing,
            seen.out_of_order,
        );
        println!("CORRECTNESS FAILURE: {problem}");
        println!(
            "the logs' lines naming the session:\n{}",
            lines_naming(&session, killed_name, killed_log, nodes)
        );
        figures.problems.push(problem);
    }
    figures.audit.add(&audit);
    figures.sessions += round.ids.len();
    audit
}

/// A duration picked at random below `bound`.
fn random_below(bound: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let bound = bound.as_micros().max(1) as u64;
    Duration::from_micros(random % bound)
}

/// The lines of the nodes' logs that name `session`, each prefixed with
/// its node.
fn lines_naming(session: &str, killed: &str, killed_log: &str, nodes: &[Node]) -> String {
    let mut out = String::new();
    let logs = std::iter::once((format!("{killed} (killed)"), killed_log.to_string())).chain(
        nodes
            .iter()
            .map(|node| (node.name.clone(), node.server.stderr())),
    );
    for (name, log) in logs {
        for line in log.lines().filter(|line| line.contains(session)) {
            out.push_str(&format!("  [{name}] {line}\n"));
        }
    }
    out
}
