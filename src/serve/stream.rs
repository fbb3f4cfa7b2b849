//! Server-sent events: one session's events (`/v1/sessions/{id}/events`)
//! and the lifecycle of all sessions (`/v1/events`).
//!
//! Each frame's `id:` is the event's `seq`, so a client that reconnects
//! with `Last-Event-ID` (or `?after=`) continues exactly where it stopped:
//! its feed replays from the ring or the store, then follows live. A
//! client that falls further behind than the session's replay ring reaches
//! is disconnected and resumes the same way. Streams end when the server
//! shuts down.
//!
//! A client's events are read on its connection's task
//! ([`TopicReader`], cut off beyond the ring: [`Gaps::CutOff`]), each serialised straight into the frame bytes, and
//! every event already there goes out in the same write.

use super::auth::Caller;
use super::error::{ApiError, ApiQuery, ErrorBody};
use super::sessions::reach;
use super::state::AppState;
use crate::api::{After, checked_seq};
use agentbus_engine::protocol::EventEnvelope;
use agentbus_engine::runtime::{Gaps, SessionDoor, TopicReader};
use agentbus_engine::runtime::{RecvError, SubscribeError};
use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use futures::{FutureExt, Stream};
use std::convert::Infallible;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// A burst of ready events is written in pieces of about this many bytes.
const BURST_BYTES: usize = 64 * 1024;

/// Room made for a write at once: a delta's frame fits, so writing one
/// does not grow the buffer piece by piece.
const FRAME_BYTES: usize = 1024;

/// How often an idle stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// At shutdown, how long a client's feed may go on before it is ended
/// anyway (normally it ends as soon as its stopped session's last events
/// are through).
const SHUTDOWN_DRAIN: Duration = Duration::from_secs(2);

/// Where a client resumes: `Last-Event-ID` wins over `?after=`.
pub fn resume_after(headers: &HeaderMap, query: &After) -> Result<u64, ApiError> {
    // Checked even when the header wins: a bad parameter is still refused.
    let from_query = query.seq().map_err(ApiError::bad_request)?;
    let seq = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Last-Event-ID must be the seq (a whole number) of the last event received, got {value:?}"
                ))
            })
            .and_then(|seq| checked_seq(seq, "Last-Event-ID").map_err(ApiError::bad_request))?,
        None => from_query,
    };
    Ok(seq)
}

/// A session's events after a seq, for one network client, read on the
/// connection's own task ([`TopicReader`]).
pub struct ClientFeed {
    events: TopicReader<Arc<dyn SessionDoor>>,
    /// The server's shutdown, as this client's own child token: waiting on
    /// it touches no lock the other clients share.
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Set when the shutdown is first seen: the feed ends by then at the
    /// latest.
    drain_until: Option<tokio::time::Instant>,
}

impl ClientFeed {
    pub fn attach(
        session: &Arc<dyn SessionDoor>,
        after_seq: u64,
        shutdown: &CancellationToken,
    ) -> Self {
        ClientFeed {
            events: TopicReader::new(session.clone(), after_seq, Gaps::CutOff),
            shutdown: Box::pin(shutdown.child_token().cancelled_owned()),
            drain_until: None,
        }
    }

    /// The next event; `None` when the session closed, the client fell too
    /// far behind (it resumes from its last seq) or the server shut down.
    /// The sessions are stopped before the shutdown fires, so what they
    /// said last (each turn's `result`) may still be on its way: it is
    /// delivered first, until the feed ends, for at most [`SHUTDOWN_DRAIN`].
    pub async fn next(&mut self) -> Option<Arc<EventEnvelope>> {
        let until = match self.drain_until {
            Some(until) => until,
            None => tokio::select! {
                biased;
                event = self.events.next() => return event,
                () = self.shutdown.as_mut() => {
                    *self.drain_until.insert(tokio::time::Instant::now() + SHUTDOWN_DRAIN)
                }
            },
        };
        tokio::time::timeout_at(until, self.events.next())
            .await
            .ok()
            .flatten()
    }

    /// The next event if it is already here (never waits), to write a
    /// burst of events at once.
    pub fn ready(&mut self) -> Option<Arc<EventEnvelope>> {
        self.events.ready()
    }
}

/// One event as an SSE frame (`id: SEQ`, `data: JSON`), appended to `out`.
/// The JSON is compact, so it is one `data:` line.
fn put_frame(out: &mut BytesMut, event: &EventEnvelope) {
    let start = out.len();
    let mut writer = out.writer();
    let mut seq = itoa::Buffer::new();
    let written = [b"id: ", seq.format(event.seq).as_bytes(), b"\ndata: "]
        .iter()
        .try_for_each(|part| writer.write_all(part))
        .map_err(serde_json::Error::io)
        .and_then(|()| serde_json::to_writer(&mut writer, event))
        .and_then(|()| writer.write_all(b"\n\n").map_err(serde_json::Error::io));
    if let Err(e) = written {
        out.truncate(start);
        out.put_slice(format!(": event {} could not be encoded: {e}\n\n", event.seq).as_bytes());
    }
}

/// An SSE response whose body is `frames`, already encoded.
fn event_stream(
    frames: impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}

fn frame<T: serde::Serialize>(seq: u64, event: &T) -> Event {
    match Event::default().id(seq.to_string()).json_data(event) {
        Ok(frame) => frame,
        Err(e) => Event::default().comment(format!("event {seq} could not be encoded: {e}")),
    }
}

#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "events",
    params(("id" = String, Path, description = "Session id or a unique prefix"),
           ("Last-Event-ID" = Option<i64>, Header, nullable = false, minimum = 0, description = "Resume after this seq"),
           After),
    responses((status = 200, description = "`text/event-stream`: one frame per event, `id:` = seq, `data:` = the envelope", content_type = "text/event-stream"),
              (status = 400, description = "The request is invalid; the error says why", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn session_events(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<After>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = resume_after(&headers, &query)?;
    let (session, _) = reach(&state, &caller, &id, after).await?;
    let mut feed = ClientFeed::attach(&session, after, &state.shutdown);
    let frames = async_stream::stream! {
        let _connected = agentbus_engine::metrics::get().stream_client("sse");
        // A comment when a whole period passed without an event.
        let mut keep_alive =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
        let mut quiet = true;
        loop {
            let event = tokio::select! {
                biased;
                event = feed.next() => event,
                _ = keep_alive.tick() => {
                    if quiet {
                        yield Ok(Bytes::from_static(b":\n\n"));
                    }
                    quiet = true;
                    continue;
                }
            };
            let Some(event) = event else { break };
            let mut burst = BytesMut::with_capacity(FRAME_BYTES);
            put_frame(&mut burst, &event);
            while burst.len() < BURST_BYTES
                && let Some(event) = feed.ready()
            {
                put_frame(&mut burst, &event);
            }
            quiet = false;
            yield Ok(burst.freeze());
        }
    };
    Ok(event_stream(frames))
}

#[utoipa::path(get, path = "/v1/events", tag = "events",
    params(("Last-Event-ID" = Option<i64>, Header, nullable = false, minimum = 0, description = "Resume after this seq"), After),
    responses((status = 200, description = "`text/event-stream` of lifecycle events: `{seq, session_id, kind}`, and on a node of a cluster `node` (the name of the node that drives the session; with a live plane, every node's sessions)", content_type = "text/event-stream"),
              (status = 400, description = "`Last-Event-ID` or `after` is not a seq; the error says why", body = ErrorBody)))]
pub async fn lifecycle_events(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<After>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let after = resume_after(&headers, &query)?;
    let topic = state.runtime.lifecycle().clone();
    // Lifecycle events are not stored: a client resuming from before the
    // ring's oldest gets what the ring still holds.
    let subscription = match topic.subscribe(after) {
        Ok(s) => Ok(s),
        Err(SubscribeError::NotInRing { oldest, .. }) => topic.subscribe(oldest.saturating_sub(1)),
    };
    let mut subscription = subscription
        .map_err(|e| ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let shutdown: CancellationToken = state.shutdown.clone();
    let mut visible = super::access::Visible::new(caller);
    let stream = async_stream::stream! {
        let mut shutting_down = false;
        loop {
            let event = if shutting_down {
                // Announced before the shutdown (each session's `closed`):
                // already in, sent before the stream ends.
                subscription.recv().now_or_never().unwrap_or(Err(RecvError::Closed))
            } else {
                tokio::select! {
                    biased;
                    event = subscription.recv() => event,
                    () = shutdown.cancelled() => {
                        shutting_down = true;
                        continue;
                    }
                }
            };
            match event {
                Ok(event) => {
                    if visible.sees(&state, &event).await {
                        yield Ok(frame(event.seq, &*event));
                    }
                }
                Err(_) => break,
            }
        }
    };
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}
