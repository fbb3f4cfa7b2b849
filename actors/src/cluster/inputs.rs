//! Inputs routed to a session's owner: request/reply on
//! `ab.<cluster>.s.<sid>.in` (docs/cluster.md, "Inputs across nodes").
//!
//! Any node sends ([`LivePlane::send_input`]); the owner alone serves the
//! subject while it holds the claim ([`LivePlane::serve_inputs`]). The
//! three outcomes are kept apart, since each calls for something else: a
//! reply; *no responders* — said at once by the server, nobody holds the
//! session, so check the store and maybe claim it; a timeout — somebody
//! holds it but did not answer, so retry with the same `input_uuid` (the
//! owner deduplicates). Never decides what an input does: the handler
//! does; never answers for a session it was not asked to serve.

use crate::cluster::error::{InputError, LiveError};
use crate::cluster::live::{LivePlane, encode};
use crate::protocol::{InputId, SessionId, SessionInput};
use crate::session::Failure;
use async_nats::client::RequestErrorKind;
use futures::{FutureExt, StreamExt};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// An input on its way to the session's owner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoutedInput {
    /// Chosen by the sender, the same for every retry of one input: the
    /// owner takes an input once per uuid.
    pub input_uuid: uuid::Uuid,
    pub input: SessionInput,
}

/// The owner's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum InputReply {
    /// Taken: queued (a query or control command: its input id) or acted
    /// upon (an interrupt or an approval: no id).
    Accepted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_id: Option<InputId>,
    },
    /// Not taken, and why (the session refused it, or the request could not
    /// be read); `kind` says what kind of failure it is, for a front end
    /// that answers with a status (absent: internal).
    Refused {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<RefusalKind>,
    },
}

/// What kind of failure a refusal is: a [`Failure`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    NotFound,
    Invalid,
    Conflict,
    Unavailable,
    Internal,
}

impl From<Failure> for RefusalKind {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::NotFound => RefusalKind::NotFound,
            Failure::Invalid => RefusalKind::Invalid,
            Failure::Conflict => RefusalKind::Conflict,
            Failure::Unavailable => RefusalKind::Unavailable,
            Failure::Internal => RefusalKind::Internal,
        }
    }
}

impl From<RefusalKind> for Failure {
    fn from(kind: RefusalKind) -> Self {
        match kind {
            RefusalKind::NotFound => Failure::NotFound,
            RefusalKind::Invalid => Failure::Invalid,
            RefusalKind::Conflict => Failure::Conflict,
            RefusalKind::Unavailable => Failure::Unavailable,
            RefusalKind::Internal => Failure::Internal,
        }
    }
}

impl InputReply {
    /// A refusal saying `message`, of kind `kind`.
    pub fn refused(message: impl Into<String>, kind: RefusalKind) -> Self {
        InputReply::Refused {
            message: message.into(),
            kind: Some(kind),
        }
    }
}

impl LivePlane {
    /// Sends `input` to the owner of `session` and waits up to `timeout` for
    /// its reply.
    pub async fn send_input(
        &self,
        session: &SessionId,
        input: &RoutedInput,
        timeout: Duration,
    ) -> Result<InputReply, InputError> {
        let subject = self
            .subjects
            .session_inputs(session)
            .map_err(LiveError::from)?;
        let payload = encode("an input", &subject, input)?;
        let request = async_nats::Request::new()
            .payload(payload)
            .timeout(Some(timeout));
        let reply = match self.client.send_request(subject.clone(), request).await {
            Ok(reply) => reply,
            Err(e) => {
                return Err(match e.kind() {
                    RequestErrorKind::NoResponders => InputError::NoResponders {
                        session: session.clone(),
                        subject,
                    },
                    RequestErrorKind::TimedOut => InputError::TimedOut {
                        session: session.clone(),
                        subject,
                        timeout,
                    },
                    _ => InputError::Request {
                        session: session.clone(),
                        subject,
                        url: self.url.to_string(),
                        source: e,
                    },
                });
            }
        };
        serde_json::from_slice(&reply.payload).map_err(|source| InputError::BadReply {
            session: session.clone(),
            subject,
            source,
        })
    }

    /// Serves `session`'s inputs: each request is read and given to
    /// `handler`, one at a time in arrival order (the session's queue is a
    /// FIFO), and its reply sent back. A request that cannot be read is
    /// refused saying why; a handler that panics refuses that one input.
    /// Served until [`InputServer::stop`] (or the server is dropped).
    pub async fn serve_inputs<H, F>(
        &self,
        session: &SessionId,
        mut handler: H,
    ) -> Result<InputServer, LiveError>
    where
        H: FnMut(RoutedInput) -> F + Send + 'static,
        F: Future<Output = InputReply> + Send + 'static,
    {
        let subject = self.subjects.session_inputs(session)?;
        let mut requests = self.subscribe(&subject).await?;
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let plane = self.clone();
        let served = subject.clone();
        let task = tokio::spawn(async move {
            loop {
                let request = tokio::select! {
                    _ = stopped.cancelled() => break,
                    request = requests.next() => request,
                };
                let Some(request) = request else { break };
                let Some(reply_to) = request.reply.clone() else {
                    tracing::warn!(subject = %served, "an input without a reply subject: ignored");
                    continue;
                };
                let reply = match serde_json::from_slice::<RoutedInput>(&request.payload) {
                    Ok(input) => AssertUnwindSafe(handler(input))
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|_| {
                            InputReply::refused(
                                "the session failed while taking the input",
                                RefusalKind::Internal,
                            )
                        }),
                    Err(e) => InputReply::refused(
                        format!("the input cannot be read: {e}"),
                        RefusalKind::Invalid,
                    ),
                };
                let sent = match encode("an input reply", &served, &reply) {
                    Ok(body) => plane
                        .client
                        .publish(reply_to, body)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                if let Err(e) = sent {
                    tracing::warn!(subject = %served, error = %e, "cannot answer an input");
                }
            }
            if let Err(e) = requests.unsubscribe().await {
                tracing::debug!(subject = %served, error = %e, "unsubscribing from inputs");
            }
        });
        Ok(InputServer {
            plane: self.clone(),
            subject,
            stop,
            task: Some(task),
        })
    }
}

/// A session's `.in` subject being served; dropping it stops serving too
/// (without waiting).
#[derive(Debug)]
pub struct InputServer {
    plane: LivePlane,
    subject: String,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl InputServer {
    #[cfg(test)]
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Stops serving: the input being handled is answered first, then the
    /// subscription ends, and once this returns the server knows it (a
    /// request sent after gets *no responders*) — unless that took longer
    /// than `timeout` (the connection is lost: then nobody reaches this
    /// node anyway).
    pub async fn stop(mut self, timeout: Duration) -> Result<(), LiveError> {
        self.stop.cancel();
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            tracing::warn!(subject = %self.subject, error = %e, "the input server's task failed");
        }
        self.plane.sync(timeout).await
    }
}

impl Drop for InputServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
