//! How long a model's text chunk takes to reach a client of another node
//! than the one driving the session, against a client of the driving node
//! itself (phase 3 of the cluster bench). The scripted model stamps each
//! chunk with the time it sent it; a client of the owner measures the path
//! model → owner → SSE, a client of another node model → owner → NATS →
//! that node's follower → SSE.
//!
//! First one session alone (driven by the first node, a client on it and
//! one on the second node), then many sessions at once spread over the
//! nodes, their clients on other nodes, then the same sessions with their
//! clients on their owners.

use crate::client::{Client, Endpoint, Seen};
use crate::figures::{Meter, Spread, mark_load};
use crate::harness::Node;

/// The query that starts a paced reply.
pub const PACED: &str = "paced please";
/// Text chunks per paced reply, and the pause between them (the serve
/// bench's).
pub const CHUNKS: usize = 50;
pub const PACE_MS: u64 = 20;
/// The first chunks of a turn, reported apart when many turns start at once.
const STARTING_CHUNKS: usize = 5;

/// `turns` paced replies.
pub fn script(turns: usize) -> String {
    format!(
        "[[response]]\nmatch = \"paced\"\nstamped_chunks = {CHUNKS}\nchunk_interval_ms = {PACE_MS}\n"
    )
    .repeat(turns)
}

/// The script's paced turns a run of [`run`] takes.
pub fn turns(alone_turns: usize, sessions: usize) -> usize {
    alone_turns + 2 * sessions
}

/// What the phase measured: chunk → client delays.
#[derive(Default)]
pub struct Figures {
    pub alone_turns: usize,
    pub alone_on_owner: Spread,
    pub alone_elsewhere: Spread,
    pub sessions: usize,
    pub many_elsewhere: Spread,
    pub many_on_owner: Spread,
    /// Stamped chunks that never reached a client that should have had them.
    pub chunks_missing: u64,
}

pub async fn run(
    nodes: &[Node],
    meter: Meter,
    alone_turns: usize,
    sessions: usize,
) -> Result<Figures, String> {
    let phase = "cross-node latency";
    println!(
        "\n== {phase}: paced replies ({CHUNKS} chunks, {PACE_MS} ms apart), chunk stamped by the \
         model -> parsed by an SSE client =="
    );
    mark_load(phase, "start");
    let at = |i: usize| Endpoint::of(&nodes[i % nodes.len()]);
    let mut figures = Figures {
        alone_turns,
        sessions,
        ..Figures::default()
    };

    // One session alone.
    let cpu = meter.start(nodes);
    let id = at(0).create_session().await?;
    let mut on_owner = Client::open(&id, vec![at(0)], 0, false).await?;
    let mut elsewhere = Client::open(&id, vec![at(1)], 0, false).await?;
    let mut turns = Vec::new();
    for _ in 0..alone_turns {
        let input = at(0).input(&id, PACED).await?;
        for client in [&mut on_owner, &mut elsewhere] {
            if !client.until(|seen| seen.result_of(input).is_some()).await {
                return Err(format!("session {id}: turn {input} never ended"));
            }
        }
        turns.push(input);
    }
    let (owner_delays, missing_a) = delays(&on_owner.finish(), &turns);
    let (other_delays, missing_b) = delays(&elsewhere.finish(), &turns);
    figures.chunks_missing += missing_a + missing_b;
    figures.alone_on_owner = Spread::of_micros(&owner_delays);
    figures.alone_elsewhere = Spread::of_micros(&other_delays);
    println!(
        "one session, {alone_turns} turns, client of the owner ({}): {}",
        nodes[0].name,
        figures.alone_on_owner.millis()
    );
    println!(
        "one session, {alone_turns} turns, client of another node ({}): {}",
        nodes[1].name,
        figures.alone_elsewhere.millis()
    );
    cpu.report("one session, paced", 0);

    // Many at once, spread over the nodes.
    let mut ids = Vec::with_capacity(sessions);
    for i in 0..sessions {
        ids.push((at(i).create_session().await?, i));
    }
    let mut last_seqs = vec![0; sessions];
    for (shift, what) in [(1, "clients of other nodes"), (0, "clients of the owners")] {
        let cpu = meter.start(nodes);
        let mut clients = Vec::with_capacity(sessions);
        for ((id, owner), after) in ids.iter().zip(&last_seqs) {
            clients.push(Client::open(id, vec![at(owner + shift)], *after, false).await?);
        }
        let sends = ids.iter().map(|(id, owner)| {
            let owner = at(*owner);
            async move { owner.input(id, PACED).await }
        });
        let inputs: Vec<u64> = futures::future::join_all(sends)
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        let mut all = Vec::new();
        let (mut starts, mut rest) = (Vec::new(), Vec::new());
        for ((client, input), last) in clients.iter_mut().zip(&inputs).zip(&mut last_seqs) {
            if !client.until(|seen| seen.result_of(*input).is_some()).await {
                return Err(format!(
                    "session {}: turn {input} never ended",
                    client.session
                ));
            }
            *last = client.seen().last_seq;
        }
        for (client, input) in clients.into_iter().zip(&inputs) {
            let (turn_delays, missing) = delays(&client.finish(), &[*input]);
            figures.chunks_missing += missing;
            // In the order the model sent them: the turn's start (the
            // inputs stored, the models called, all at once) apart.
            let start = turn_delays.len().min(STARTING_CHUNKS);
            starts.extend_from_slice(&turn_delays[..start]);
            rest.extend_from_slice(&turn_delays[start..]);
            all.extend(turn_delays);
        }
        let spread = Spread::of_micros(&all);
        println!(
            "{sessions} sessions at once over {} nodes, {what}: {}",
            nodes.len(),
            spread.millis()
        );
        println!(
            "  of which chunks 1-{STARTING_CHUNKS}: {}; chunks {}-{CHUNKS}: {}",
            Spread::of_micros(&starts).millis(),
            STARTING_CHUNKS + 1,
            Spread::of_micros(&rest).millis()
        );
        cpu.report(&format!("{sessions} sessions paced, {what}"), 0);
        if shift == 1 {
            figures.many_elsewhere = spread;
        } else {
            figures.many_on_owner = spread;
        }
    }
    mark_load(phase, "end");
    Ok(figures)
}

/// The delays of `turns` a client saw, and how many of their stamped
/// chunks it missed.
fn delays(seen: &Seen, turns: &[u64]) -> (Vec<u64>, u64) {
    let mut all = Vec::new();
    let mut missing = 0;
    for turn in turns {
        let got = seen.delays_us.get(turn).map_or(&[][..], Vec::as_slice);
        missing += CHUNKS.saturating_sub(got.len()) as u64;
        all.extend_from_slice(got);
    }
    (all, missing)
}
