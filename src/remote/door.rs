//! A session of an `agentbus serve` daemon as the one door to a session
//! (`SessionDoor`): inputs sent over the daemon's HTTP API, its events
//! followed over SSE onto a mirror of the session's topic, older persisted
//! ones read from `/history`.
//!
//! Exists so that a front end attached to a daemon (`--attach`) holds the
//! same door, and reads the same feed, as one whose session runs in this
//! process: nothing in `frontend/` asks where a session runs. What only a
//! session of this process can do (file tools through the front end, its
//! model read from its state) is not a door's.

use super::client::{RemoteClient, RemoteError};
use super::events::{self, Connection, Following};
use agentbus_engine::protocol::{EventEnvelope, InputId, SessionId, SessionInput};
use agentbus_engine::runtime::StoreError;
use agentbus_engine::runtime::{
    EventSource, Failure, Mirror, SessionDoor, SessionError, SubscribeError, Subscription,
};
use reqwest::StatusCode;
use tokio::sync::watch;

/// A daemon's session, followed from after a seq.
pub struct DaemonSession {
    client: RemoteClient,
    id: SessionId,
    mirror: Mirror,
    following: Following,
}

impl DaemonSession {
    /// Follow session `id` of the daemon `client` talks to, its events
    /// from after `after_seq`.
    pub fn follow(client: &RemoteClient, id: SessionId, after_seq: u64) -> DaemonSession {
        let mirror = Mirror::new(after_seq);
        let following = events::follow(client, &id, after_seq, mirror.clone());
        DaemonSession {
            client: client.clone(),
            id,
            mirror,
            following,
        }
    }

    /// How the connection to the daemon is doing, as it changes.
    pub fn connection(&self) -> watch::Receiver<Connection> {
        self.following.connection()
    }
}

#[async_trait::async_trait]
impl EventSource for DaemonSession {
    fn session_id(&self) -> &SessionId {
        &self.id
    }

    fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        self.mirror.subscribe(after_seq)
    }

    async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        self.client
            .stored_events(&self.id, after_seq, up_to)
            .await
            .map_err(|e| StoreError::Remote {
                id: self.id.clone(),
                server: self.client.address(),
                detail: e.to_string(),
            })
    }
}

/// Each input goes to the endpoint the API has for it; the daemon stamps
/// it with the token's name.
#[async_trait::async_trait]
impl SessionDoor for DaemonSession {
    async fn send(&self, input: SessionInput) -> Result<Option<InputId>, SessionError> {
        let (client, id) = (&self.client, &self.id);
        let sent = match input {
            SessionInput::Query { text, images, .. } => {
                client.submit_query(id, text, images).await.map(Some)
            }
            SessionInput::Control { command, .. } => {
                client.submit_control(id, &command).await.map(Some)
            }
            SessionInput::Interrupt => client.interrupt(id).await.map(|()| None),
            SessionInput::Approval {
                request_id,
                decision,
            } => client
                .decide(id, &request_id, &decision)
                .await
                .map(|()| None),
        };
        sent.map_err(|e| SessionError::Remote {
            failure: failure(&e),
            message: e.to_string(),
        })
    }
}

/// What kind of failure a daemon's answer is.
fn failure(e: &RemoteError) -> Failure {
    match e {
        RemoteError::Refused { status, .. } => match *status {
            StatusCode::NOT_FOUND => Failure::NotFound,
            StatusCode::CONFLICT => Failure::Conflict,
            StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => Failure::Invalid,
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => Failure::Unavailable,
            _ => Failure::Internal,
        },
        RemoteError::Unreachable { .. } => Failure::Unavailable,
        RemoteError::BadUrl { .. } | RemoteError::NoToken { .. } => Failure::Invalid,
        RemoteError::Unauthorized { .. } | RemoteError::BadAnswer { .. } => Failure::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::{AgentMessage, UserEvent};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    fn event(seq: u64) -> EventEnvelope {
        EventEnvelope {
            session_id: SessionId("s1".into()),
            seq,
            turn_id: None,
            at: chrono::Utc::now(),
            message: AgentMessage::User(UserEvent::new(format!("event {seq}"))),
        }
    }

    /// A daemon whose session `s1` stored seqs 1 to 10, and whose
    /// `/history` answers three events a page (the real one pages by
    /// turns; the client reads only `events` and `next_before`). The
    /// `before`s asked are recorded.
    async fn daemon() -> (String, Arc<Mutex<Vec<Option<u64>>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let app = axum::Router::new().route(
            "/v1/sessions/s1/history",
            axum::routing::get(
                move |axum::extract::Query(query): axum::extract::Query<HashMap<String, u64>>| {
                    let seen = seen.clone();
                    async move {
                        let before = query.get("before").copied();
                        seen.lock().unwrap_or_else(|p| p.into_inner()).push(before);
                        let up_to = before.map_or(10, |b| b - 1).min(10);
                        let first = up_to.saturating_sub(2).max(1);
                        let events: Vec<EventEnvelope> = (first..=up_to).map(event).collect();
                        axum::Json(crate::api::History {
                            events,
                            next_before: (first > 1).then_some(first),
                            last_seq: 10,
                            earlier: None,
                        })
                    }
                },
            ),
        );
        (super::super::fake_daemon(app).await, asked)
    }

    fn seqs(events: &[EventEnvelope]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    #[tokio::test]
    async fn a_daemons_stored_events_are_read_page_by_page_back_to_the_seq_asked() {
        let (url, asked) = daemon().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let client = RemoteClient::new(&url, dir.path()).expect("client");
        let session = DaemonSession::follow(&client, SessionId("s1".into()), 10);

        let middle = session.stored_events(2, Some(8)).await.expect("stored");
        assert_eq!(seqs(&middle), [3, 4, 5, 6, 7, 8]);
        let before: Vec<Option<u64>> = asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        assert_eq!(
            before,
            [Some(9), Some(6)],
            "stopped once the page reached seq 3"
        );

        let all = session.stored_events(0, None).await.expect("stored");
        assert_eq!(seqs(&all), (1..=10).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_daemon_that_cannot_answer_is_a_store_error_naming_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        // Nothing listens on port 9 of this machine.
        let client = RemoteClient::new("http://127.0.0.1:9/?token=t", dir.path()).expect("client");
        let session = DaemonSession::follow(&client, SessionId("s1".into()), 0);
        let error = session.stored_events(0, None).await.unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("session s1") && text.contains("http://127.0.0.1:9"),
            "{text}"
        );
        let sent = session.interrupt().await.unwrap_err();
        assert_eq!(sent.failure(), Failure::Unavailable, "{sent}");
    }
}
