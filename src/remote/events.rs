//! Following a session's events over SSE, as if attached in-process.
//!
//! A task reads `GET /v1/sessions/{id}/events` and publishes each envelope,
//! in `seq` order, on a [`Mirror`] of the session's topic, which readers
//! subscribe to as to a session of this process (the daemon's session is
//! a door: `remote/door.rs`). When the stream breaks (the network, a
//! server restart, or the server cutting off a client that fell behind) it
//! reconnects with `Last-Event-ID` set to the last seq it published, so
//! nothing is missed and nothing arrives twice. It gives up — closing the
//! mirror — when the session is gone (404), the token is refused, or the
//! server stays unreachable for [`GIVE_UP`]; dropping its [`Following`]
//! stops it.
//! How the connection is doing is published as a [`Connection`]: a front
//! end that shows it (the interactive chat) subscribes; otherwise breaks are
//! logged as warnings.

use super::client::RemoteClient;
use agentbus_engine::protocol::{EventEnvelope, SessionId};
use agentbus_engine::runtime::Mirror;
use agentbus_engine::runtime::describe_http_error as describe;
use futures::StreamExt;
use reqwest::StatusCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long reconnecting is tried before the stream is given up.
pub const GIVE_UP: Duration = Duration::from_secs(30);

/// Longest pause between two reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How following a server's session is going.
#[derive(Clone, Debug, PartialEq)]
pub enum Connection {
    /// The server accepted the stream: events arrive as they happen.
    Up,
    /// The stream broke (`reason`); trying again.
    Reconnecting { reason: String },
}

/// The task following a session; dropping it stops following.
pub struct Following {
    task: JoinHandle<()>,
    connection: Arc<watch::Sender<Connection>>,
}

impl Following {
    /// How the connection is doing, as it changes.
    pub fn connection(&self) -> watch::Receiver<Connection> {
        self.connection.subscribe()
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Follow `id`'s events after `after_seq`: they are published on `mirror`
/// (closed when following ends by itself).
pub fn follow(client: &RemoteClient, id: &SessionId, after_seq: u64, mirror: Mirror) -> Following {
    let connection = Arc::new(watch::Sender::new(Connection::Up));
    let (client, id, sender) = (client.clone(), id.clone(), connection.clone());
    let task = tokio::spawn(async move {
        let mirror = Closes(mirror);
        pump(client, id, after_seq, &mirror.0, sender).await;
    });
    Following { task, connection }
}

/// Closes the mirror when following ends, by itself or stopped: its
/// readers' streams end after what they have.
struct Closes(Mirror);

impl Drop for Closes {
    fn drop(&mut self) {
        self.0.close();
    }
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
    mirror: &Mirror,
    connection: Arc<watch::Sender<Connection>>,
) {
    let mut failing_since: Option<Instant> = None;
    let mut attempt = 0u32;
    loop {
        let ended = connect_once(&client, &id, &mut last_seq, mirror, &connection).await;
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
        if connection.receiver_count() == 0 {
            tracing::warn!(session = %id, last_seq, "event stream interrupted ({reason}); reconnecting");
        } else {
            tracing::debug!(session = %id, last_seq, "event stream interrupted ({reason}); reconnecting");
        }
        connection.send_if_modified(|now| {
            let was_up = *now == Connection::Up;
            *now = Connection::Reconnecting { reason };
            was_up
        });
        tokio::time::sleep(pause).await;
    }
}

async fn connect_once(
    client: &RemoteClient,
    id: &SessionId,
    last_seq: &mut u64,
    mirror: &Mirror,
    connection: &watch::Sender<Connection>,
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
    connection.send_if_modified(|now| std::mem::replace(now, Connection::Up) != Connection::Up);
    let mut frames = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
    loop {
        let frame = match frames.next().await {
            Some(Ok(frame)) => frame,
            Some(Err(e)) => return Ended::cut(e.to_string()),
            None => return Ended::cut("the server ended the stream"),
        };
        let event = match read_frame(frame.data.as_deref(), *last_seq) {
            Frame::Event(event) => event,
            Frame::Nothing => continue,
            Frame::Unreadable(reason) => {
                tracing::warn!(session = %id, "skipped an event this client does not understand: {reason}");
                continue;
            }
        };
        *last_seq = event.seq;
        mirror.publish(Arc::from(event));
    }
}

/// What one SSE frame of a session's stream is to a client that has seen
/// every event up to `last_seq`.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// The next event to pass on (boxed: it is large, the rest small).
    Event(Box<EventEnvelope>),
    /// Nothing to pass on: a frame without data (a keep-alive), or an event
    /// already passed on (a replay overlapping what was seen).
    Nothing,
    /// Data that is not an event this client can read (a newer server, or
    /// garbage); the reason says what was wrong and quotes the data.
    Unreadable(String),
}

/// Read one frame's data. Pure: no network, so any bytes can be tried.
pub fn read_frame(data: Option<&str>, last_seq: u64) -> Frame {
    let Some(data) = data else {
        return Frame::Nothing;
    };
    match serde_json::from_str::<EventEnvelope>(data) {
        Ok(event) if event.seq <= last_seq => Frame::Nothing,
        Ok(event) => Frame::Event(Box::new(event)),
        Err(e) => Frame::Unreadable(format!(
            "{e} in `{}`",
            agentbus_engine::text::ellipsize(data, 200)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::{AgentMessage, UserEvent};
    use axum::http::HeaderMap;
    use axum::response::sse::{Event, Sse};
    use std::convert::Infallible;
    use std::sync::Mutex;

    /// Only so a broken build fails instead of hanging.
    const GUARD: Duration = Duration::from_secs(30);

    fn event(seq: u64) -> String {
        let envelope = EventEnvelope {
            session_id: SessionId("s1".into()),
            seq,
            turn_id: None,
            at: chrono::Utc::now(),
            message: AgentMessage::User(UserEvent::new(format!("event {seq}"))),
        };
        serde_json::to_string(&envelope).unwrap_or_default()
    }

    /// A server whose first stream sends seqs 1 and 2 and ends; later ones
    /// send what comes after `Last-Event-ID` up to 3 and stay open.
    async fn flaky_server() -> (String, Arc<Mutex<Vec<String>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let app = axum::Router::new().route(
            "/v1/sessions/s1/events",
            axum::routing::get(move |headers: HeaderMap| {
                let seen = seen.clone();
                async move {
                    let last = headers
                        .get("Last-Event-ID")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("0")
                        .to_string();
                    let first = {
                        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                        seen.push(last.clone());
                        seen.len() == 1
                    };
                    let after: u64 = last.parse().unwrap_or(0);
                    let upto = if first { 2 } else { 3 };
                    let frames: Vec<Result<Event, Infallible>> = (after + 1..=upto)
                        .map(|seq| Ok(Event::default().id(seq.to_string()).data(event(seq))))
                        .collect();
                    let stream = futures::stream::iter(frames);
                    let stream: futures::stream::BoxStream<'static, Result<Event, Infallible>> =
                        if first {
                            Box::pin(stream)
                        } else {
                            Box::pin(stream.chain(futures::stream::pending()))
                        };
                    Sse::new(stream)
                }
            }),
        );
        (super::super::fake_daemon(app).await, asked)
    }

    #[tokio::test]
    async fn a_broken_stream_is_resumed_after_the_last_seq_and_the_connection_state_says_so() {
        let (url, asked) = flaky_server().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let client = RemoteClient::new(&url, dir.path()).expect("client");
        let mirror = Mirror::new(0);
        let mut events = mirror.subscribe(0).expect("a new mirror's subscription");
        let following = follow(&client, &SessionId("s1".into()), 0, mirror);
        let mut connection = following.connection();
        let mut seqs = Vec::new();
        for _ in 0..3 {
            let event = tokio::time::timeout(GUARD, events.recv())
                .await
                .expect("an event in time")
                .expect("still following");
            seqs.push(event.seq);
        }
        assert_eq!(seqs, [1, 2, 3], "nothing missed, nothing twice");
        let asked = asked.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(asked, ["0", "2"], "reconnected after the last seq");
        // The break was published, then the recovery (the receiver sees the
        // latest: up again, after having changed).
        assert!(connection.has_changed().unwrap_or(false));
        assert_eq!(*connection.borrow_and_update(), Connection::Up);
    }
}
