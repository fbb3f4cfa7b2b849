//! One node's connection to the live plane: NATS core (no JetStream),
//! through `async-nats`.
//!
//! Owns the client, the cluster's [`Subjects`] and the [`Link`] watch on the
//! connection. It publishes a session's events with their owner in the
//! headers (`Ab-Epoch`, `Ab-Node`), subscribes to one session's events, and
//! publishes and subscribes to the lifecycle; `inputs.rs` adds the inputs'
//! request/reply on the same connection.
//!
//! Everything on the live plane is at-most-once: a message published while
//! the connection is down is refused at once ([`LiveError::NotConnected`])
//! rather than queued behind a reconnect, and the store fills whatever a
//! follower missed (`follow.rs`). Never blocks a publisher on a lost
//! server, never panics on what arrives (an undecodable message is skipped
//! with a warning), and never shows the server's credentials (see
//! `nats_url.rs`).

use crate::cluster::error::LiveError;
use crate::cluster::follow::LiveEvent;
use crate::cluster::link::{Link, LinkState, LinkWriter};
use crate::cluster::nats_url::{Credentials, NatsUrl};
use crate::cluster::owner::{EPOCH_HEADER, NODE_HEADER, NodeId, Owner, OwnerHeaderError};
use crate::cluster::subjects::Subjects;
use crate::protocol::{EventEnvelope, LifecycleEvent, SessionId};
use async_nats::{HeaderMap, Message};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How a node connects.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// The connection's name on the server (its monitoring shows it).
    pub name: String,
    /// How long one attempt to connect may take.
    pub connect_timeout: Duration,
    /// How often the client pings the server: a silent server (a partition,
    /// not a crash) is noticed after about three intervals.
    pub ping_interval: Duration,
    /// The longest wait between two attempts to reconnect (the wait doubles
    /// from 10 ms up to this).
    pub max_reconnect_delay: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            name: "agentbus".to_string(),
            connect_timeout: Duration::from_secs(5),
            ping_interval: Duration::from_secs(2),
            max_reconnect_delay: Duration::from_secs(1),
        }
    }
}

/// A node's connection to the live plane; cheap to clone (one connection).
#[derive(Clone)]
pub struct LivePlane {
    pub(super) client: async_nats::Client,
    pub(super) url: NatsUrl,
    pub(super) subjects: Subjects,
    link: Link,
}

impl fmt::Debug for LivePlane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LivePlane")
            .field("url", &self.url)
            .field("subjects", &self.subjects)
            .field("link", &self.link.state())
            .finish()
    }
}

impl LivePlane {
    /// Connects to `url` (one attempt: a server that is not there is an
    /// error naming the address); once connected, a lost connection is
    /// retried for ever, and [`link`](Self::link) says how it stands.
    pub async fn connect(
        url: &NatsUrl,
        subjects: Subjects,
        options: LiveOptions,
    ) -> Result<LivePlane, LiveError> {
        let (writer, link) = LinkWriter::connected();
        let shown = url.clone();
        let max_delay = options.max_reconnect_delay;
        let mut connect_options = async_nats::ConnectOptions::new();
        match url.credentials() {
            Some(Credentials::UserPassword { user, password }) => {
                connect_options = connect_options.user_and_password(user.clone(), password.clone())
            }
            Some(Credentials::Token(token)) => {
                connect_options = connect_options.token(token.clone())
            }
            None => {}
        }
        let connect_options = connect_options
            .name(&options.name)
            .connection_timeout(options.connect_timeout)
            .ping_interval(options.ping_interval)
            .max_reconnects(None)
            .reconnect_delay_callback(move |attempts| reconnect_delay(attempts, max_delay))
            .event_callback(move |event| {
                let writer = writer.clone();
                let url = shown.clone();
                async move { on_event(&writer, &url, event) }
            });
        let client = connect_options
            .connect(url.servers())
            .await
            .map_err(|source| LiveError::Connect {
                url: url.to_string(),
                source,
            })?;
        Ok(LivePlane {
            client,
            url: url.clone(),
            subjects,
            link,
        })
    }

    /// A watch on the connection's state.
    pub fn link(&self) -> Link {
        self.link.clone()
    }

    #[cfg(test)]
    pub fn subjects(&self) -> &Subjects {
        &self.subjects
    }

    /// The server's address, credentials redacted.
    #[cfg(test)]
    pub fn url(&self) -> &NatsUrl {
        &self.url
    }

    /// Publishes one of a session's events, as its owner: the envelope as
    /// JSON on `…s.<sid>.ev`, the owner in the headers. Persisted events
    /// only after their commit (the follow protocol relies on it).
    pub async fn publish_event(
        &self,
        event: &EventEnvelope,
        owner: Owner,
    ) -> Result<(), LiveError> {
        let subject = self.subjects.session_events(&event.session_id)?;
        let payload = encode("an event", &subject, event)?;
        let (epoch, node) = owner.header_values();
        let mut headers = HeaderMap::new();
        headers.insert(EPOCH_HEADER, epoch);
        headers.insert(NODE_HEADER, node);
        self.publish(subject, headers, payload).await
    }

    /// Subscribes to one session's events. Subscribe *before* reading the
    /// store (`follow.rs`): what is published from now on arrives here.
    pub async fn session_events(&self, session: &SessionId) -> Result<SessionEvents, LiveError> {
        let subject = self.subjects.session_events(session)?;
        let subscriber = self.subscribe(&subject).await?;
        Ok(SessionEvents {
            session: session.clone(),
            subject,
            subscriber,
        })
    }

    /// Publishes a lifecycle event of this node's on `ab.<cluster>.lifecycle`,
    /// the node in the `Ab-Node` header.
    pub async fn publish_lifecycle(
        &self,
        event: &LifecycleEvent,
        node: NodeId,
    ) -> Result<(), LiveError> {
        let subject = self.subjects.lifecycle();
        let payload = encode("a lifecycle event", &subject, event)?;
        let mut headers = HeaderMap::new();
        headers.insert(NODE_HEADER, node.to_string());
        self.publish(subject, headers, payload).await
    }

    /// Subscribes to every node's lifecycle events (this node's own too).
    pub async fn lifecycle(&self) -> Result<LifecycleEvents, LiveError> {
        let subject = self.subjects.lifecycle();
        let subscriber = self.subscribe(&subject).await?;
        Ok(LifecycleEvents {
            subject,
            subscriber,
        })
    }

    /// Waits (up to `timeout`) until the server has seen everything this
    /// connection sent so far — publishes, subscriptions and their ends: a
    /// message to itself comes back. (The client's own `flush` only writes
    /// to the socket.)
    pub async fn sync(&self, timeout: Duration) -> Result<(), LiveError> {
        let round_trip = async {
            let inbox = self.client.new_inbox();
            let mut echo = self
                .client
                .subscribe(inbox.clone())
                .await
                .map_err(|e| e.to_string())?;
            self.client
                .publish(inbox, Bytes::new())
                .await
                .map_err(|e| e.to_string())?;
            self.client.flush().await.map_err(|e| e.to_string())?;
            let came_back = echo.next().await;
            if let Err(e) = echo.unsubscribe().await {
                tracing::debug!(url = %self.url, error = %e, "ending a sync's subscription");
            }
            came_back
                .map(drop)
                .ok_or_else(|| "the connection closed".to_string())
        };
        let reason = match tokio::time::timeout(timeout, round_trip).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(reason)) => reason,
            Err(_) => format!("no answer within {timeout:?}"),
        };
        Err(LiveError::Sync {
            url: self.url.to_string(),
            reason,
        })
    }

    /// Sends what is queued and closes the connection — every clone's, it
    /// is one: subscriptions end, the link reads closed.
    #[cfg(test)]
    pub async fn close(self) {
        if let Err(e) = self.client.drain().await {
            tracing::debug!(url = %self.url, error = %e, "closing the NATS connection");
        }
    }

    async fn publish(
        &self,
        subject: String,
        headers: HeaderMap,
        payload: Bytes,
    ) -> Result<(), LiveError> {
        if let LinkState::Disconnected { .. } | LinkState::Closed = self.link.state() {
            return Err(LiveError::NotConnected {
                subject,
                url: self.url.to_string(),
            });
        }
        self.client
            .publish_with_headers(subject.clone(), headers, payload)
            .await
            .map_err(|source| LiveError::Publish {
                subject,
                url: self.url.to_string(),
                source,
            })
    }

    pub(super) async fn subscribe(
        &self,
        subject: &str,
    ) -> Result<async_nats::Subscriber, LiveError> {
        self.client
            .subscribe(subject.to_string())
            .await
            .map_err(|source| LiveError::Subscribe {
                subject: subject.to_string(),
                url: self.url.to_string(),
                source,
            })
    }
}

/// The JSON of `value`, for `subject`.
pub(super) fn encode(
    what: &'static str,
    subject: &str,
    value: &impl serde::Serialize,
) -> Result<Bytes, LiveError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|source| LiveError::Encode {
            what,
            subject: subject.to_string(),
            source,
        })
}

/// 0 for the first attempt, then 10 ms doubling up to `max`.
fn reconnect_delay(attempts: usize, max: Duration) -> Duration {
    if attempts <= 1 {
        return Duration::ZERO;
    }
    let doublings = u32::try_from(attempts - 2).unwrap_or(u32::MAX).min(16);
    Duration::from_millis(10u64 << doublings).min(max)
}

/// A connection event: into the link, and the log.
fn on_event(writer: &LinkWriter, url: &NatsUrl, event: async_nats::Event) {
    use async_nats::Event;
    match event {
        Event::Connected => {
            tracing::info!(%url, "connected to NATS");
            writer.set_connected();
        }
        Event::Disconnected => {
            tracing::warn!(%url, "lost the connection to NATS; reconnecting");
            writer.set_disconnected(tokio::time::Instant::now());
        }
        Event::Closed => writer.set_closed(),
        Event::LameDuckMode => {
            tracing::warn!(%url, "the NATS server is shutting down (lame duck mode)")
        }
        Event::Draining => tracing::debug!(%url, "draining the NATS connection"),
        Event::SlowConsumer(sid) => {
            tracing::warn!(%url, subscription = sid, "a NATS subscription fell behind: messages were dropped")
        }
        Event::ServerError(e) => tracing::warn!(%url, error = %e, "NATS server error"),
        Event::ClientError(e) => tracing::warn!(%url, error = %e, "NATS client error"),
    }
}

/// Why a message on a session's subject could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum DecodeError {
    #[error("no headers (the owner's Ab-Epoch and Ab-Node)")]
    NoHeaders,
    #[error(transparent)]
    Owner(#[from] OwnerHeaderError),
    #[error("the body is not an event envelope: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the envelope is of session {found}")]
    OtherSession { found: SessionId },
}

/// One message of `session`'s `.ev` subject, read.
pub(super) fn decode_event(
    session: &SessionId,
    message: &Message,
) -> Result<LiveEvent, DecodeError> {
    let headers = message.headers.as_ref().ok_or(DecodeError::NoHeaders)?;
    let owner = Owner::from_headers(
        headers.get(EPOCH_HEADER).map(|v| v.as_str()),
        headers.get(NODE_HEADER).map(|v| v.as_str()),
    )?;
    let envelope: EventEnvelope = serde_json::from_slice(&message.payload)?;
    if envelope.session_id != *session {
        return Err(DecodeError::OtherSession {
            found: envelope.session_id,
        });
    }
    Ok(LiveEvent { envelope, owner })
}

/// One session's live events, as they arrive (in the order each owner
/// published them). Messages that cannot be read are skipped with a
/// warning. Ends only when the connection is closed: while it is lost the
/// stream is merely quiet — watch the [`Link`].
pub struct SessionEvents {
    session: SessionId,
    subject: String,
    subscriber: async_nats::Subscriber,
}

impl fmt::Debug for SessionEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionEvents")
            .field("subject", &self.subject)
            .finish()
    }
}

impl SessionEvents {
    #[cfg(test)]
    pub fn subject(&self) -> &str {
        &self.subject
    }
}

impl Stream for SessionEvents {
    type Item = LiveEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LiveEvent>> {
        loop {
            let Some(message) = futures::ready!(Pin::new(&mut self.subscriber).poll_next(cx))
            else {
                return Poll::Ready(None);
            };
            match decode_event(&self.session, &message) {
                Ok(event) => return Poll::Ready(Some(event)),
                Err(e) => tracing::warn!(
                    subject = %self.subject,
                    error = %e,
                    "skipping a message that is not a session event"
                ),
            }
        }
    }
}

/// A lifecycle event, and the node that published it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeLifecycleEvent {
    pub node: NodeId,
    pub event: LifecycleEvent,
}

/// Every node's lifecycle events as they arrive; unreadable ones skipped
/// with a warning. Ends only when the connection is closed.
pub struct LifecycleEvents {
    subject: String,
    subscriber: async_nats::Subscriber,
}

impl fmt::Debug for LifecycleEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LifecycleEvents")
            .field("subject", &self.subject)
            .finish()
    }
}

fn decode_lifecycle(message: &Message) -> Result<NodeLifecycleEvent, DecodeError> {
    let node = message
        .headers
        .as_ref()
        .and_then(|h| h.get(NODE_HEADER))
        .ok_or(OwnerHeaderError::Missing { name: NODE_HEADER })?;
    let node =
        uuid::Uuid::try_parse(node.as_str().trim()).map_err(|_| OwnerHeaderError::Invalid {
            name: NODE_HEADER,
            value: node.as_str().to_string(),
            expected: "a UUID",
        })?;
    let event = serde_json::from_slice(&message.payload)?;
    Ok(NodeLifecycleEvent {
        node: NodeId(node),
        event,
    })
}

impl Stream for LifecycleEvents {
    type Item = NodeLifecycleEvent;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<NodeLifecycleEvent>> {
        loop {
            let Some(message) = futures::ready!(Pin::new(&mut self.subscriber).poll_next(cx))
            else {
                return Poll::Ready(None);
            };
            match decode_lifecycle(&message) {
                Ok(event) => return Poll::Ready(Some(event)),
                Err(e) => tracing::warn!(
                    subject = %self.subject,
                    error = %e,
                    "skipping a message that is not a lifecycle event"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnects_start_at_once_then_double_up_to_the_cap() {
        let max = Duration::from_secs(1);
        let delays: Vec<u64> = (0..12)
            .map(|n| reconnect_delay(n, max).as_millis() as u64)
            .collect();
        assert_eq!(
            delays,
            [0, 0, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]
        );
        assert_eq!(reconnect_delay(usize::MAX, max), max);
    }
}
