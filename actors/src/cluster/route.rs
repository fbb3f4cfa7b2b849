//! Inputs across nodes: the owner serving a session's `.in` subject with
//! its local [`SessionHandle`], and a non-owner sending an input there
//! (docs/cluster.md, "Inputs across nodes").
//!
//! Exists so that a front end on any node can drive a session another node
//! owns exactly as it drives a local one: a query or control command is
//! queued (its input id comes back), an interrupt cancels the running turn
//! at once (it bypasses the queue, as locally), an approval decision is
//! settled; a refusal comes back with what the session said and the kind of
//! failure. The owner takes each input once per `input_uuid` — a sender
//! that timed out retries with the same uuid, and the retry is answered
//! with the first reply instead of being run again.
//!
//! *No responders* is kept apart from every other failure
//! ([`RouteError::is_no_owner`]): it means no node serves the session, and
//! the caller should claim it in the store and load it locally. Never
//! claims anything itself, never decides what an input does (the session
//! does), and never answers for a session it does not drive: the owner's
//! node [stops](InputRoute::stop) the route when it loses the session.

use crate::cluster::error::{InputError, LiveError};
use crate::cluster::inputs::{InputReply, InputServer, RefusalKind, RoutedInput};
use crate::cluster::live::LivePlane;
use crate::protocol::{InputId, SessionId, SessionInput};
use crate::session::{Failure, SessionDoor, SessionError, SessionHandle};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How many inputs' replies the owner remembers for retries.
pub const REMEMBERED_INPUTS: usize = 1024;

/// A session's inputs served on this node, its owner.
#[derive(Debug)]
pub struct InputRoute {
    server: InputServer,
}

impl InputRoute {
    /// Serves `session`'s `.in` subject with the session itself, until
    /// [`stop`](Self::stop) (or dropped). The route holds a handle that does
    /// not keep the session loaded: once it stops, inputs are refused as
    /// the session being gone.
    pub async fn serve(
        plane: &LivePlane,
        session: &SessionHandle,
    ) -> Result<InputRoute, LiveError> {
        let handle = session.detached();
        let taken = Arc::new(Mutex::new(Taken::new(REMEMBERED_INPUTS)));
        let server = plane
            .serve_inputs(session.id(), move |input: RoutedInput| {
                let handle = handle.clone();
                let taken = taken.clone();
                async move {
                    let uuid = input.input_uuid;
                    if let Some(reply) = lock(&taken).reply(&uuid) {
                        tracing::debug!(session = %handle.id(), %uuid, "an input sent again: answered as before");
                        return reply;
                    }
                    let reply = take(&handle, input.input).await;
                    // Inputs are served one at a time: nobody took this
                    // uuid meanwhile.
                    if let InputReply::Accepted { .. } = reply {
                        lock(&taken).remember(uuid, reply.clone());
                    }
                    reply
                }
            })
            .await?;
        Ok(InputRoute { server })
    }

    /// The subject served.
    #[cfg(test)]
    pub fn subject(&self) -> &str {
        self.server.subject()
    }

    /// Stops serving: once this returns, a request sent after gets *no
    /// responders* (unless the connection is lost, for up to `timeout`).
    pub async fn stop(self, timeout: Duration) -> Result<(), LiveError> {
        self.server.stop(timeout).await
    }
}

fn lock(taken: &Mutex<Taken>) -> std::sync::MutexGuard<'_, Taken> {
    taken.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One input given to the local session.
async fn take(session: &SessionHandle, input: SessionInput) -> InputReply {
    let done = session.send(input).await;
    match done {
        Ok(input_id) => InputReply::Accepted { input_id },
        Err(e) => InputReply::refused(e.to_string(), e.failure().into()),
    }
}

/// The replies to the inputs taken lately, by uuid (the oldest forgotten
/// first).
#[derive(Debug)]
struct Taken {
    capacity: usize,
    order: VecDeque<uuid::Uuid>,
    replies: HashMap<uuid::Uuid, InputReply>,
}

impl Taken {
    fn new(capacity: usize) -> Taken {
        Taken {
            capacity: capacity.max(1),
            order: VecDeque::new(),
            replies: HashMap::new(),
        }
    }

    fn reply(&self, uuid: &uuid::Uuid) -> Option<InputReply> {
        self.replies.get(uuid).cloned()
    }

    fn remember(&mut self, uuid: uuid::Uuid, reply: InputReply) {
        if self.replies.insert(uuid, reply).is_some() {
            return;
        }
        self.order.push_back(uuid);
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.replies.remove(&old);
            }
        }
    }
}

/// How a non-owner sends inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendOptions {
    /// How long to wait for the owner's reply to one request.
    pub timeout: Duration,
    /// How many requests, with the same `input_uuid`, before giving up on
    /// an owner that does not answer.
    pub attempts: u32,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            timeout: Duration::from_secs(2),
            attempts: 3,
        }
    }
}

/// Why an input sent to another node's session was not taken.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// Nobody serves the session: claim it in the store and load it here.
    #[error(transparent)]
    NoOwner(InputError),
    /// The owner did not answer any attempt (it may have taken the input:
    /// send it again with the same uuid).
    #[error("{source} ({attempts} attempts)")]
    Unanswered {
        attempts: u32,
        #[source]
        source: InputError,
    },
    /// The input could not be sent, or its answer read.
    #[error(transparent)]
    Send(InputError),
    /// The session refused it, saying why.
    #[error("{message}")]
    Refused { message: String, failure: Failure },
    /// The owner took a query but gave no input id for it.
    #[error("the owner of session {session} took the input but gave no input id")]
    NoInputId { session: SessionId },
    /// This kind of input is never sent to another node.
    #[error("{what} cannot be sent to session {session} on another node")]
    NotRoutable {
        what: &'static str,
        session: SessionId,
    },
}

impl RouteError {
    /// No node serves the session: the caller may claim it.
    pub fn is_no_owner(&self) -> bool {
        matches!(self, RouteError::NoOwner(_))
    }

    /// What kind of failure this is, for a front end that answers with a
    /// status.
    pub fn failure(&self) -> Failure {
        match self {
            RouteError::NoOwner(_) | RouteError::Unanswered { .. } => Failure::Unavailable,
            RouteError::Refused { failure, .. } => *failure,
            RouteError::NotRoutable { .. } => Failure::Invalid,
            RouteError::Send(_) | RouteError::NoInputId { .. } => Failure::Internal,
        }
    }
}

/// What the owner (or the way to it) said, as a session's error.
impl From<RouteError> for SessionError {
    fn from(e: RouteError) -> SessionError {
        SessionError::Remote {
            failure: e.failure(),
            message: e.to_string(),
        }
    }
}

/// The sending side: one session's owner, reached through the live plane.
#[derive(Clone, Debug)]
pub struct InputSender {
    plane: LivePlane,
    session: SessionId,
    options: SendOptions,
}

impl InputSender {
    pub fn new(plane: LivePlane, session: SessionId, options: SendOptions) -> InputSender {
        InputSender {
            plane,
            session,
            options,
        }
    }

    /// Sends `input` (the same uuid for every attempt) and returns the
    /// owner's reply; a timeout is tried again, up to the options'
    /// attempts. No responders ends it at once.
    pub async fn send(&self, input: &RoutedInput) -> Result<InputReply, RouteError> {
        let attempts = self.options.attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self
                .plane
                .send_input(&self.session, input, self.options.timeout)
                .await
            {
                Ok(reply) => return Ok(reply),
                Err(e @ InputError::NoResponders { .. }) => return Err(RouteError::NoOwner(e)),
                Err(e @ InputError::TimedOut { .. }) => {
                    if attempt >= attempts {
                        return Err(RouteError::Unanswered {
                            attempts,
                            source: e,
                        });
                    }
                    tracing::debug!(session = %self.session, uuid = %input.input_uuid, attempt, "the owner did not answer; sending the input again");
                }
                Err(e) => return Err(RouteError::Send(e)),
            }
        }
    }

    /// Sends `input` as a new one (a fresh uuid) and returns what the owner
    /// made of it: the input id (a query or control command), or none.
    pub async fn input(&self, input: SessionInput) -> Result<Option<InputId>, RouteError> {
        let routed = RoutedInput {
            input_uuid: uuid::Uuid::now_v7(),
            input,
        };
        match self.send(&routed).await? {
            InputReply::Accepted { input_id } => Ok(input_id),
            InputReply::Refused { message, kind } => Err(RouteError::Refused {
                message,
                failure: kind.unwrap_or(RefusalKind::Internal).into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_remembers_the_latest_replies_forgetting_the_oldest() {
        let mut taken = Taken::new(2);
        let (a, b, c) = (
            uuid::Uuid::now_v7(),
            uuid::Uuid::now_v7(),
            uuid::Uuid::now_v7(),
        );
        let reply = |id| InputReply::Accepted { input_id: Some(id) };
        taken.remember(a, reply(1));
        taken.remember(b, reply(2));
        taken.remember(b, reply(2));
        assert_eq!(taken.reply(&a), Some(reply(1)));
        taken.remember(c, reply(3));
        assert_eq!(taken.reply(&a), None, "the oldest is forgotten");
        assert_eq!(taken.reply(&b), Some(reply(2)));
        assert_eq!(taken.reply(&c), Some(reply(3)));
    }

    #[test]
    fn refusals_keep_their_kind_on_the_wire_and_an_older_peers_has_none() {
        let reply = InputReply::refused("no such request", RefusalKind::NotFound);
        let json = serde_json::to_value(&reply).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"outcome": "refused", "message": "no such request", "kind": "not_found"})
        );
        let old: InputReply =
            serde_json::from_value(serde_json::json!({"outcome": "refused", "message": "x"}))
                .unwrap();
        assert_eq!(
            old,
            InputReply::Refused {
                message: "x".into(),
                kind: None
            }
        );
    }
}
