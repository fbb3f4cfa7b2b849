//! The one door to a session: send it an input, follow its events from a
//! seq — the same calls wherever the session runs.
//!
//! A session this process drives ([`SessionHandle`](super::SessionHandle))
//! and one another node of the cluster drives, followed from here (the
//! cluster's `RemoteSession`), are both a [`SessionDoor`];
//! `Runtime::reach_session` gives whichever it is, so the HTTP handlers and
//! the front ends hold a door and never ask which. A front end attached to
//! an `agentbus serve` daemon holds one too: the binary's daemon session,
//! whose follower fills a [`Mirror`](crate::runtime::Mirror). Following
//! is the bus's [`EventSource`]: a door's events are read with the bus's
//! reader (directly, or through a UiSink).
//!
//! Every input is one [`SessionInput`] through [`SessionDoor::send`]: a
//! query or control command is queued (its input id), an interrupt or an
//! approval decision acts at once. The other calls are that one, said for
//! one kind of input. A door never decides which node drives a session:
//! the store's claim did, when it was reached.

use super::SessionError;
use crate::bus::source::EventSource;
use crate::protocol::{ApprovalDecision, ControlCommand, Image, InputId, SessionId, SessionInput};

/// A session, wherever it runs: inputs in, events out from any seq.
#[async_trait::async_trait]
pub trait SessionDoor: EventSource {
    /// Give the session one input: a query or control command is queued
    /// (its input id); an interrupt or an approval decision acts at once
    /// (`None`). Refused with a [`SessionError`] that says why (an unknown
    /// approval request, a full queue, a session gone, ...).
    async fn send(&self, input: SessionInput) -> Result<Option<InputId>, SessionError>;

    /// Queue text as a user typed it (the session reads slash commands);
    /// its input id.
    async fn submit_text(&self, text: &str) -> Result<InputId, SessionError> {
        self.submit_query(text.to_string(), Vec::new()).await
    }

    /// Queue a query with the images that go with it; its input id.
    async fn submit_query(
        &self,
        text: String,
        images: Vec<Image>,
    ) -> Result<InputId, SessionError> {
        let sent = self.send(SessionInput::Query {
            text,
            images,
            by: None,
        });
        queued(self.session_id(), sent.await)
    }

    /// Queue a control command (it waits its turn, as typed commands do);
    /// its input id.
    async fn submit_control(&self, command: ControlCommand) -> Result<InputId, SessionError> {
        let sent = self.send(SessionInput::Control { command, by: None });
        queued(self.session_id(), sent.await)
    }

    /// Cancel the running turn now (queued inputs stay queued).
    async fn interrupt(&self) -> Result<(), SessionError> {
        self.send(SessionInput::Interrupt).await.map(drop)
    }

    /// Answer approval request `request_id`: the first answer wins, and a
    /// request settled already (or unknown) is refused.
    async fn decide(
        &self,
        request_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), SessionError> {
        let input = SessionInput::Approval {
            request_id: request_id.to_string(),
            decision,
        };
        self.send(input).await.map(drop)
    }
}

/// The input id of an input that is queued.
fn queued(
    session: &SessionId,
    sent: Result<Option<InputId>, SessionError>,
) -> Result<InputId, SessionError> {
    sent?.ok_or_else(|| {
        SessionError::Internal(format!(
            "session {session} took a queued input but gave no input id"
        ))
    })
}
