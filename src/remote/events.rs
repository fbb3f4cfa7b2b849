//! Following a session's events over SSE, as if attached in-process.
//!
//! A task reads `GET /v1/sessions/{id}/events` and forwards each envelope,
//! in `seq` order, into a channel. When the stream breaks (the network, a
//! server restart, or the server cutting off a client that fell behind) it
//! reconnects with `Last-Event-ID` set to the last seq it forwarded, so
//! nothing is missed and nothing arrives twice. It gives up — closing the
//! channel — when the session is gone (404), the token is refused, the
//! receiver is dropped, or the server stays unreachable for [`GIVE_UP`].

use super::client::RemoteClient;
use agentbus_actors::protocol::{EventEnvelope, SessionId};
use agentbus_actors::provider::http::describe;
use futures::StreamExt;
use reqwest::StatusCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long reconnecting is tried before the stream is given up.
pub const GIVE_UP: Duration = Duration::from_secs(30);

/// Longest pause between two reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The task following a session; dropping it stops following.
pub struct Following {
    task: JoinHandle<()>,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Follow `id`'s events after `after_seq`: they arrive on the receiver.
pub fn follow(
    client: &RemoteClient,
    id: &SessionId,
    after_seq: u64,
) -> (Following, mpsc::Receiver<Arc<EventEnvelope>>) {
    let (tx, events) = mpsc::channel(256);
    let task = tokio::spawn(pump(client.clone(), id.clone(), after_seq, tx));
    (Following { task }, events)
}

/// How one connection ended.
enum Ended {
    /// Stop following.
    Finished,
    /// Try again. `connected`: the server had accepted the stream (200)
    /// before it broke, so the failures start afresh.
    Broken { reason: String, connected: bool },
}

impl Ended {
    /// Broken before the server accepted the stream.
    fn refused(reason: impl Into<String>) -> Ended {
        Ended::Broken {
            reason: reason.into(),
            connected: false,
        }
    }

    /// Broken after the server accepted the stream.
    fn cut(reason: impl Into<String>) -> Ended {
        Ended::Broken {
            reason: reason.into(),
            connected: true,
        }
    }
}

async fn pump(
    client: RemoteClient,
    id: SessionId,
    mut last_seq: u64,
    tx: mpsc::Sender<Arc<EventEnvelope>>,
) {
    let mut failing_since: Option<Instant> = None;
    let mut attempt = 0u32;
    loop {
        let ended = connect_once(&client, &id, &mut last_seq, &tx).await;
        let reason = match ended {
            Ended::Finished => return,
            Ended::Broken { reason, connected } => {
                if connected {
                    // This connection was up: the next failure starts afresh.
                    failing_since = None;
                    attempt = 0;
                }
                reason
            }
        };
        let since = *failing_since.get_or_insert_with(Instant::now);
        if since.elapsed() > GIVE_UP {
            tracing::error!(session = %id, "gave up following the session's events: {reason}");
            return;
        }
        attempt += 1;
        let pause =
            Duration::from_millis(100 * 2u64.saturating_pow(attempt.min(5))).min(MAX_BACKOFF);
        tracing::warn!(session = %id, last_seq, "event stream interrupted ({reason}); reconnecting");
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = tx.closed() => return,
        }
    }
}

async fn connect_once(
    client: &RemoteClient,
    id: &SessionId,
    last_seq: &mut u64,
    tx: &mpsc::Sender<Arc<EventEnvelope>>,
) -> Ended {
    let url = client.url(&["sessions", &id.0, "events"]);
    let request = client
        .request(reqwest::Method::GET, url)
        .header("Last-Event-ID", last_seq.to_string())
        .header(reqwest::header::ACCEPT, "text/event-stream");
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => return Ended::refused(describe(&e)),
    };
    let status = response.status();
    if !status.is_success() {
        let error = client.refusal(response).await;
        if matches!(
            status,
            StatusCode::NOT_FOUND | StatusCode::UNAUTHORIZED | StatusCode::BAD_REQUEST
        ) {
            tracing::error!(session = %id, "cannot follow the session: {error}");
            return Ended::Finished;
        }
        return Ended::refused(error.to_string());
    }
    let mut frames = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
    loop {
        let frame = tokio::select! {
            frame = frames.next() => frame,
            () = tx.closed() => return Ended::Finished,
        };
        let frame = match frame {
            Some(Ok(frame)) => frame,
            Some(Err(e)) => return Ended::cut(e.to_string()),
            None => return Ended::cut("the server ended the stream"),
        };
        let Some(data) = frame.data else { continue };
        let event: EventEnvelope = match serde_json::from_str(&data) {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(session = %id, "skipped an event this client does not understand: {e}");
                continue;
            }
        };
        if event.seq <= *last_seq {
            continue;
        }
        *last_seq = event.seq;
        if tx.send(Arc::new(event)).await.is_err() {
            return Ended::Finished;
        }
    }
}
