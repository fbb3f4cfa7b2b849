//! Which session a front end talks to, and how it follows one.
//!
//! A new session by default; `--session ID` (an id or the start of one) or
//! `--continue` (the most recent session of this workspace) load a stored
//! one. [`Attached`] is a session plus the channel its events arrive on; a
//! front end replaces it when a command switches sessions (`/new`,
//! `/resume`, `/fork`, `/load`).

use crate::cli::ResumeArgs;
use crate::frontend::InputEnd;
use agentbus_actors::protocol::{EventEnvelope, SessionId};
use agentbus_actors::ui_sink::{ChannelFrontEnd, UiSink, attach_channel};
use agentbus_actors::{Runtime, SessionHandle, SessionOptions};
use anyhow::Context as _;
use kameo::actor::ActorRef;
use std::sync::Arc;
use tokio::sync::mpsc::Receiver;

/// The session a front end starts with.
pub async fn choose(runtime: &Runtime, resume: &ResumeArgs) -> anyhow::Result<SessionHandle> {
    if let Some(prefix) = &resume.session {
        let id = runtime.resolve(prefix).await?;
        return Ok(runtime.open_session(&id).await?);
    }
    if resume.continue_ {
        let workspace = runtime.settings().workspace.display().to_string();
        let recent = runtime
            .stored_sessions(None)
            .await?
            .into_iter()
            .find(|r| r.workspace == workspace)
            .with_context(|| {
                format!("no earlier session in {workspace}; start one without --continue")
            })?;
        return Ok(runtime.open_session(&recent.id).await?);
    }
    Ok(runtime.create_session(SessionOptions::default()).await?)
}

/// A session and the channel its events arrive on.
pub struct Attached {
    pub session: SessionHandle,
    pub events: Receiver<Arc<EventEnvelope>>,
    _sink: ActorRef<UiSink<ChannelFrontEnd>>,
}

impl Attached {
    /// Follow `session`'s events after `after_seq`.
    pub fn new(session: SessionHandle, after_seq: u64) -> Attached {
        let (sink, events) = attach_channel(&session, after_seq);
        Attached {
            session,
            events,
            _sink: sink,
        }
    }

    /// Follow what this load of `session` does (see `loaded_after`).
    pub fn from_load(session: SessionHandle) -> Attached {
        let after = session.loaded_after();
        Self::new(session, after)
    }
}

/// The session a command's reply says to switch to (`data.switch_to`).
pub fn switch_target(end: &InputEnd) -> Option<SessionId> {
    match end {
        InputEnd::Reply(reply) => reply
            .data
            .as_ref()?
            .get("switch_to")?
            .as_str()
            .map(SessionId::from),
        InputEnd::Result(_) => None,
    }
}
