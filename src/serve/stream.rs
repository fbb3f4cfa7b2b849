//! Server-sent events: one session's events (`/v1/sessions/{id}/events`)
//! and the lifecycle of all sessions (`/v1/events`).
//!
//! Each frame's `id:` is the event's `seq`, so a client that reconnects
//! with `Last-Event-ID` (or `?after=`) continues exactly where it stopped:
//! the UiSink replays from the ring or the store, then follows live. A
//! client too slow to keep up is disconnected (its buffer is bounded) and
//! resumes the same way. Streams end when the server shuts down.

use super::error::{ApiError, ApiQuery, ErrorBody};
use super::sessions::open;
use super::state::AppState;
use crate::api::{After, checked_seq};
use agentbus_actors::SessionHandle;
use agentbus_actors::protocol::EventEnvelope;
use agentbus_actors::runtime::{DropWhenFull, UiSink, attach_until_full};
use agentbus_actors::runtime::{RecvError, SubscribeError};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{FutureExt, Stream};
use kameo::actor::ActorRef;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many events a network client may have waiting before it is cut off.
pub const CLIENT_BUFFER: usize = 1024;

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

/// A session's events after a seq, for one network client. Dropping it
/// detaches the client's UiSink.
pub struct ClientFeed {
    sink: ActorRef<UiSink<SessionHandle, DropWhenFull>>,
    events: mpsc::Receiver<Arc<EventEnvelope>>,
    /// Set when the shutdown is first seen: the feed ends by then at the
    /// latest.
    drain_until: Option<tokio::time::Instant>,
}

impl ClientFeed {
    pub fn attach(session: &SessionHandle, after_seq: u64) -> Self {
        let (sink, events) = attach_until_full(session, after_seq, CLIENT_BUFFER);
        ClientFeed {
            sink,
            events,
            drain_until: None,
        }
    }

    /// The next event; `None` when the session closed, the client fell too
    /// far behind (it resumes from its last seq) or the server shut down.
    /// The sessions are stopped before `shutdown` fires, so what they said
    /// last (each turn's `result`) may still be on its way: it is delivered
    /// first, until the feed ends, for at most [`SHUTDOWN_DRAIN`].
    pub async fn next(&mut self, shutdown: &CancellationToken) -> Option<Arc<EventEnvelope>> {
        let until = match self.drain_until {
            Some(until) => until,
            None => tokio::select! {
                biased;
                event = self.events.recv() => return event,
                () = shutdown.cancelled() => {
                    *self.drain_until.insert(tokio::time::Instant::now() + SHUTDOWN_DRAIN)
                }
            },
        };
        tokio::time::timeout_at(until, self.events.recv())
            .await
            .ok()
            .flatten()
    }
}

impl Drop for ClientFeed {
    fn drop(&mut self) {
        self.sink.kill();
    }
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
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<After>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let after = resume_after(&headers, &query)?;
    let session = open(&state, &id).await?;
    let mut feed = ClientFeed::attach(&session, after);
    let shutdown = state.shutdown.clone();
    let stream = async_stream::stream! {
        while let Some(event) = feed.next(&shutdown).await {
            yield Ok(frame(event.seq, &*event));
        }
    };
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

#[utoipa::path(get, path = "/v1/events", tag = "events",
    params(("Last-Event-ID" = Option<i64>, Header, nullable = false, minimum = 0, description = "Resume after this seq"), After),
    responses((status = 200, description = "`text/event-stream` of lifecycle events: `{seq, session_id, kind}`", content_type = "text/event-stream"),
              (status = 400, description = "`Last-Event-ID` or `after` is not a seq; the error says why", body = ErrorBody)))]
pub async fn lifecycle_events(
    State(state): State<AppState>,
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
                Ok(event) => yield Ok(frame(event.seq, &*event)),
                Err(_) => break,
            }
        }
    };
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}
