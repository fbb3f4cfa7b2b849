//! Events delivered per second to SSE clients when every session answers
//! at once (phase 4 of the cluster bench): the same number of sessions on
//! one node in cluster mode, on three nodes with each client on its
//! session's owner, and on three nodes with each client on another node
//! (its inputs sent there too, and routed to the owner). The model streams
//! each reply's stamped chunks as fast as it can.
//!
//! All on one machine: three nodes share the cores one node had, with the
//! model, the clients, Postgres and NATS.

use crate::client::{Client, Endpoint};
use crate::figures::{Meter, Spent, Spread, mark_load};
use crate::harness::Node;
use std::time::Instant;

/// The query of a burst.
pub const BURST: &str = "burst please";
/// Text chunks per reply.
pub const CHUNKS: usize = 50;

/// `turns` fast replies.
pub fn script(turns: usize) -> String {
    format!("[[response]]\nmatch = \"burst\"\nstamped_chunks = {CHUNKS}\n").repeat(turns)
}

/// One way of running the bursts, and what it measured.
#[derive(Clone, Default)]
pub struct Run {
    pub label: String,
    /// Events per second, each burst.
    pub rates: Vec<f64>,
    /// Chunk → client over all bursts.
    pub delays: Spread,
    /// Streams a client had to open again (cut off as too slow).
    pub reconnects: u64,
    pub chunks_missing: u64,
    pub out_of_order: u64,
    /// Each burst's CPU time.
    pub cpu: Vec<Spent>,
}

/// Creates `count` sessions, session `i` on node `i % nodes.len()`.
pub async fn create(nodes: &[Node], count: usize) -> Result<Vec<(String, usize)>, String> {
    let mut ids = Vec::with_capacity(count);
    for batch in (0..count).collect::<Vec<_>>().chunks(20) {
        let creates = batch.iter().map(|&i| {
            let node = Endpoint::of(&nodes[i % nodes.len()]);
            async move { node.create_session().await.map(|id| (id, i % nodes.len())) }
        });
        for created in futures::future::join_all(creates).await {
            ids.push(created?);
        }
    }
    Ok(ids)
}

/// What [`run`] is asked to do.
pub struct Bursts<'a> {
    pub label: String,
    pub nodes: &'a [Node],
    /// Each session and the node (index) that owns it.
    pub sessions: &'a [(String, usize)],
    /// Each client is on node `(owner + shift) % nodes.len()`, and sends
    /// its inputs there.
    pub shift: usize,
    /// Each session's client starts after this seq (what an earlier run
    /// saw), so that nothing old is replayed during a burst.
    pub after: &'a mut Vec<u64>,
    pub bursts: usize,
    pub meter: Meter,
}

pub async fn run(plan: Bursts<'_>) -> Result<Run, String> {
    let Bursts {
        label,
        nodes,
        sessions,
        shift,
        after,
        bursts,
        meter,
    } = plan;
    println!("\n== throughput: {label} ==");
    mark_load(&label, "start");
    after.resize(sessions.len(), 0);
    let at = |i: usize| Endpoint::of(&nodes[i % nodes.len()]);
    let mut clients = Vec::with_capacity(sessions.len());
    for ((id, owner), after) in sessions.iter().zip(after.iter()) {
        clients.push(Client::open(id, vec![at(owner + shift)], *after, false).await?);
    }
    let mut result = Run {
        label: label.clone(),
        ..Run::default()
    };
    let mut all_delays = Vec::new();
    for burst in 1..=bursts {
        let cpu = meter.start(nodes);
        let started = Instant::now();
        let sends = sessions.iter().map(|(id, owner)| {
            let node = at(owner + shift);
            async move { node.input(id, BURST).await }
        });
        let inputs: Vec<u64> = futures::future::join_all(sends)
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        let mut events = 0;
        let mut last_result = started;
        for (client, input) in clients.iter_mut().zip(&inputs) {
            if !client.until(|seen| seen.result_of(*input).is_some()).await {
                return Err(format!(
                    "{label}: session {}: burst turn {input} never ended",
                    client.session
                ));
            }
            let seen = client.seen();
            events += seen.events_by_turn.get(input).copied().unwrap_or(0);
            if let Some(end) = seen.result_of(*input) {
                last_result = last_result.max(end.at);
            }
            let delays = seen.delays_us.get(input).map_or(&[][..], Vec::as_slice);
            result.chunks_missing += CHUNKS.saturating_sub(delays.len()) as u64;
            all_delays.extend_from_slice(delays);
        }
        let elapsed = last_result.duration_since(started).as_secs_f64();
        let rate = events as f64 / elapsed.max(1e-9);
        result.rates.push(rate);
        println!(
            "burst {burst}: {} turns, {events} events delivered to SSE clients in {elapsed:.2} s \
             = {rate:.0} events/s",
            sessions.len()
        );
        result
            .cpu
            .push(cpu.report(&format!("{label}, burst {burst}"), events));
    }
    for (client, last) in clients.into_iter().zip(after.iter_mut()) {
        let seen = client.finish();
        *last = seen.last_seq;
        result.reconnects += u64::from(seen.reconnects);
        result.out_of_order += u64::from(seen.out_of_order);
    }
    result.delays = Spread::of_micros(&all_delays);
    println!(
        "{label}: chunk -> client over the bursts {}; streams reopened {}, chunks missing {}, \
         events out of order {}",
        result.delays.millis(),
        result.reconnects,
        result.chunks_missing,
        result.out_of_order
    );
    mark_load(&label, "end");
    Ok(result)
}
