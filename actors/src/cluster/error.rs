//! What can go wrong on the live plane, each naming what was being done and
//! to what: the subject, the session, the server (its address redacted:
//! see `nats_url.rs`).
//!
//! Never carries a credential: every address in here is a `NatsUrl`'s
//! redacted text.

use crate::cluster::nats_url::NatsUrlError;
use crate::cluster::subjects::SubjectError;
use crate::protocol::SessionId;
use std::time::Duration;

/// A failure of the connection, or of one publish or subscription.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Address(#[from] NatsUrlError),
    #[error("cannot connect to NATS at {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error(transparent)]
    Subject(#[from] SubjectError),
    #[error("cannot encode {what} for {subject}: {source}")]
    Encode {
        what: &'static str,
        subject: String,
        #[source]
        source: serde_json::Error,
    },
    /// The connection is lost (the client is reconnecting) or closed: the
    /// message was not queued behind it. Followers refill from the store.
    #[error("cannot publish on {subject}: the connection to NATS at {url} is lost")]
    NotConnected { subject: String, url: String },
    #[error("cannot publish on {subject} to NATS at {url}: {source}")]
    Publish {
        subject: String,
        url: String,
        #[source]
        source: async_nats::PublishError,
    },
    #[error("cannot subscribe to {subject} on NATS at {url}: {source}")]
    Subscribe {
        subject: String,
        url: String,
        #[source]
        source: async_nats::SubscribeError,
    },
    #[error("cannot sync with NATS at {url}: {reason}")]
    Sync { url: String, reason: String },
}

/// Why an input sent to a session's owner got no answer.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Nobody serves the session's `.in` subject: no node holds it (or its
    /// owner is between claiming and serving). Said by the server at once.
    #[error("no node holds session {session}: nobody answers on {subject}")]
    NoResponders { session: SessionId, subject: String },
    /// Somebody serves it but did not answer in time (the input may still
    /// have been accepted: retry with the same `input_uuid`).
    #[error("the owner of session {session} did not answer on {subject} within {timeout:?}")]
    TimedOut {
        session: SessionId,
        subject: String,
        timeout: Duration,
    },
    #[error("the answer on {subject} for session {session} is not an input reply: {source}")]
    BadReply {
        session: SessionId,
        subject: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot send an input for session {session} on {subject} to NATS at {url}: {source}")]
    Request {
        session: SessionId,
        subject: String,
        url: String,
        #[source]
        source: async_nats::RequestError,
    },
    #[error(transparent)]
    Live(#[from] LiveError),
}
