//! One SSE client of one session, as the cluster bench runs them by the
//! hundred. It follows `GET /v1/sessions/ID/events` on a node, and when the
//! stream ends — its node was killed, or the node cut it off for reading
//! too slowly — it reconnects as a real client does: with `Last-Event-ID`
//! (the last seq it got), to the next node of its list, or to the same node
//! when that is the last. It reads only what the bench measures and keeps
//! the persisted events' JSON only when asked to (to compare with the
//! `events` table afterwards).
//!
//! It never judges what it sees: it counts and keeps, and the phases check.

use crate::harness::Node;
use crate::measure::unix_micros;
use crate::support::GUARD;
use futures::StreamExt;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long a client waits before it tries a refused reconnection again.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// One node's API, as a client reaches it.
#[derive(Clone)]
pub struct Endpoint {
    /// The node's name, for the report.
    pub node: String,
    url: String,
    token: String,
    http: reqwest::Client,
}

impl Endpoint {
    pub fn of(node: &Node) -> Endpoint {
        Endpoint {
            node: node.name.clone(),
            url: node.server.url.clone(),
            token: node.server.token.clone(),
            http: node.server.http.clone(),
        }
    }

    /// `POST /v1/sessions`: the new session's id (the node claims it).
    pub async fn create_session(&self) -> Result<String, String> {
        let response = self
            .http
            .post(format!("{}/v1/sessions", self.url))
            .bearer_auth(&self.token)
            .json(&serde_json::json!({}))
            .send()
            .await
            .map_err(|e| format!("{}: POST /v1/sessions: {e}", self.node))?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        match body["id"].as_str() {
            Some(id) if status == 201 => Ok(id.to_string()),
            _ => Err(format!(
                "{}: POST /v1/sessions answered {status}: {body}",
                self.node
            )),
        }
    }

    /// `POST .../input` with `text`: the input id, once the node answered
    /// 202 (itself, or the node it routed the input to).
    pub async fn input(&self, id: &str, text: &str) -> Result<u64, String> {
        let response = self
            .http
            .post(format!("{}/v1/sessions/{id}/input", self.url))
            .bearer_auth(&self.token)
            .json(&serde_json::json!({ "text": text }))
            .send()
            .await
            .map_err(|e| format!("{}: POST input to {id}: {e}", self.node))?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        match body["input_id"].as_u64() {
            Some(input) if status == 202 => Ok(input),
            _ => Err(format!(
                "{}: POST input to {id} answered {status}: {body}",
                self.node
            )),
        }
    }

    /// Opens the session's event stream after `after`.
    async fn events(&self, id: &str, after: u64) -> Result<Frames, String> {
        let response = self
            .http
            .get(format!("{}/v1/sessions/{id}/events", self.url))
            .bearer_auth(&self.token)
            .header("Last-Event-ID", after.to_string())
            .send()
            .await
            .map_err(|e| format!("{}: GET events of {id}: {e}", self.node))?;
        if response.status() != 200 {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            return Err(format!(
                "{}: GET events of {id} answered {status}: {body}",
                self.node
            ));
        }
        Ok(Box::pin(sse_stream::SseStream::from_bytes_stream(
            response.bytes_stream(),
        )))
    }
}

type Frames = std::pin::Pin<
    Box<dyn futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>,
>;

/// How one turn ended, as the client saw it.
#[derive(Clone, Debug)]
pub struct TurnEnd {
    pub turn_id: u64,
    pub stop_reason: String,
    pub text: Option<String>,
    /// When the client read the `result`.
    pub at: Instant,
}

/// Everything one client saw so far.
#[derive(Default)]
pub struct Seen {
    /// The highest seq received (or the seq the client started after).
    pub last_seq: u64,
    /// `text_delta` stream events received.
    pub text_deltas: u64,
    /// Every event but the `stream_event`s, as received: its seq and JSON
    /// (kept only by clients asked to keep them).
    pub persisted: Vec<(u64, String)>,
    /// When the first `system` `owner_changed` event arrived.
    pub owner_changed: Option<Instant>,
    /// Every `result`, in order.
    pub results: Vec<TurnEnd>,
    /// Events received per turn (`turn_id`), its `result` included.
    pub events_by_turn: BTreeMap<u64, u64>,
    /// Per turn: microseconds from the model stamping each text chunk to
    /// this client parsing the delta that carries it.
    pub delays_us: BTreeMap<u64, Vec<u64>>,
    /// Streams opened again after one ended.
    pub reconnects: u32,
    /// Reconnection attempts that failed or were refused (tried again).
    pub refused: u32,
    /// Events whose seq was not above every seq received before.
    pub out_of_order: u32,
    /// Why the client stopped reconnecting, if it did.
    pub gave_up: Option<String>,
}

impl Seen {
    /// The `result` of turn `turn_id`, if it came.
    pub fn result_of(&self, turn_id: u64) -> Option<&TurnEnd> {
        self.results.iter().find(|r| r.turn_id == turn_id)
    }

    fn record(&mut self, event: &Peek, data: &str, keep: bool, received: Instant, now_us: u64) {
        if event.seq <= self.last_seq {
            self.out_of_order += 1;
        }
        self.last_seq = self.last_seq.max(event.seq);
        if let Some(turn) = event.turn_id {
            *self.events_by_turn.entry(turn).or_default() += 1;
        }
        if event.kind == "stream_event" {
            let Some(delta) = event.event.as_ref().filter(|d| d.kind == "text_delta") else {
                return;
            };
            self.text_deltas += 1;
            let stamps = delta.text.as_deref().unwrap_or_default();
            let delays = self
                .delays_us
                .entry(event.turn_id.unwrap_or_default())
                .or_default();
            for stamp in stamps.split_whitespace() {
                if let Ok(sent) = stamp.parse::<u64>() {
                    delays.push(now_us.saturating_sub(sent));
                }
            }
            return;
        }
        if keep {
            self.persisted.push((event.seq, data.to_string()));
        }
        if event.kind == "system" && event.subtype.as_deref() == Some("owner_changed") {
            self.owner_changed.get_or_insert(received);
        }
        if event.kind == "result" {
            self.results.push(TurnEnd {
                turn_id: event.turn_id.unwrap_or_default(),
                stop_reason: event.stop_reason.as_deref().unwrap_or_default().to_string(),
                text: event.text.as_deref().map(str::to_string),
                at: received,
            });
        }
    }
}

/// What the client reads of each event.
#[derive(Deserialize)]
struct Peek<'a> {
    seq: u64,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    turn_id: Option<u64>,
    #[serde(default, borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    event: Option<PeekDelta<'a>>,
}

#[derive(Deserialize)]
struct PeekDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// A client following one session on its own task.
pub struct Client {
    pub session: String,
    /// The node it connected to first.
    pub node: String,
    seen: watch::Receiver<Seen>,
    state: Arc<watch::Sender<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl Client {
    /// Connects to `endpoints[0]` after seq `after` (answered 200: the node
    /// attached the client), then follows on a task of its own.
    pub async fn open(
        session: &str,
        endpoints: Vec<Endpoint>,
        after: u64,
        keep: bool,
    ) -> Result<Client, String> {
        let first = endpoints.first().ok_or("a client needs a node")?;
        let frames = first.events(session, after).await?;
        let (state, seen) = watch::channel(Seen {
            last_seq: after,
            ..Seen::default()
        });
        let state = Arc::new(state);
        let node = first.node.clone();
        let task = tokio::spawn(follow(
            session.to_string(),
            endpoints,
            frames,
            keep,
            state.clone(),
        ));
        Ok(Client {
            session: session.to_string(),
            node,
            seen,
            state,
            task,
        })
    }

    /// Waits until what the client saw satisfies `done`; false when it did
    /// not within [`GUARD`] (a hang guard, not a measurement).
    pub async fn until(&mut self, done: impl FnMut(&Seen) -> bool) -> bool {
        matches!(
            tokio::time::timeout(GUARD, self.seen.wait_for(done)).await,
            Ok(Ok(_))
        )
    }

    /// [`until`](Self::until) with a guard of `guard`.
    pub async fn until_within(&mut self, guard: Duration, done: impl FnMut(&Seen) -> bool) -> bool {
        matches!(
            tokio::time::timeout(guard, self.seen.wait_for(done)).await,
            Ok(Ok(_))
        )
    }

    /// What it saw so far (do not hold it across an await).
    pub fn seen(&self) -> watch::Ref<'_, Seen> {
        self.seen.borrow()
    }

    /// Hangs up; everything it saw.
    pub fn finish(self) -> Seen {
        self.task.abort();
        self.state.send_replace(Seen::default())
    }
}

impl Drop for Client {
    /// A client dropped hangs up: its task ends with it.
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The client's task: reads `frames`, and opens the stream again (after
/// the last seq it got) each time it ends, for as long as the client lives.
async fn follow(
    session: String,
    endpoints: Vec<Endpoint>,
    mut frames: Frames,
    keep: bool,
    state: Arc<watch::Sender<Seen>>,
) {
    let mut at = 0;
    loop {
        while let Some(Ok(frame)) = frames.next().await {
            let received = Instant::now();
            let now_us = unix_micros();
            let Some(data) = frame.data else { continue };
            let Ok(event) = serde_json::from_str::<Peek>(&data) else {
                continue;
            };
            state.send_modify(|seen| seen.record(&event, &data, keep, received, now_us));
        }
        at = (at + 1).min(endpoints.len() - 1);
        let started = Instant::now();
        frames = loop {
            let after = state.borrow().last_seq;
            match endpoints[at].events(&session, after).await {
                Ok(frames) => break frames,
                Err(error) if started.elapsed() > GUARD => {
                    state.send_modify(|seen| seen.gave_up = Some(error));
                    return;
                }
                Err(_) => {
                    state.send_modify(|seen| seen.refused += 1);
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        };
        state.send_modify(|seen| seen.reconnects += 1);
    }
}
