//! [`AgentRun`]: one turn being driven, as a stream of the events the
//! daemon would publish, and the conversation it leaves.

use super::driver::Driver;
use super::error::AgentError;
use super::state::{AgentState, Unfinished};
use crate::protocol::{EventEnvelope, StopReason};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

/// One turn (or slash command) being driven: a [`Stream`] of the
/// [`EventEnvelope`]s the daemon would publish for it, in seq order —
/// `user`, then `assistant`s, `tool_result`s, notices (`system`), and last
/// the turn's `result` (a slash command ends with its `system` reply
/// instead). `stream_event`s are among them only when the agent was built
/// with [`include_partial_messages`](super::AgentBuilder::include_partial_messages).
///
/// The turn only advances while the stream is polled. Take the
/// conversation with [`finish`](AgentRun::finish) (which drives the rest
/// of the turn); dropping the run stops it (running tool calls are
/// cancelled).
pub struct AgentRun {
    /// The driver, when no `next` is in progress.
    driver: Option<Box<Driver>>,
    /// A `next` in progress: it hands the driver back with the event.
    pending: Option<BoxFuture<'static, (Box<Driver>, Option<EventEnvelope>)>>,
    /// The stream ended.
    ended: bool,
}

impl AgentRun {
    pub(super) fn new(driver: Driver) -> AgentRun {
        AgentRun {
            driver: Some(Box::new(driver)),
            pending: None,
            ended: false,
        }
    }

    /// The next event (what [`StreamExt::next`] gives), `None` once the
    /// turn ended.
    pub async fn next_event(&mut self) -> Option<EventEnvelope> {
        self.next().await
    }

    /// The conversation as it is now, between two events: the events so
    /// far are in it, and while the turn runs it is unfinished
    /// ([`AgentState::is_finished`] is false, and
    /// [`Agent::continue_conversation`](super::Agent::continue_conversation)
    /// refuses it). Saved and loaded again, such a state has its turn
    /// closed as failed. `None` while a [`next`](StreamExt::next) is
    /// half-way (started, then dropped before it gave an event).
    pub fn snapshot(&self) -> Option<AgentState> {
        self.driver.as_ref().map(|d| d.state().clone())
    }

    /// Drive the turn to its end (dropping the events left) and return the
    /// conversation. [`AgentError::TurnFailed`] (carrying the
    /// conversation) when the turn ended with `stop_reason: error`, e.g.
    /// the provider failed for good; [`AgentError::Stalled`] when nothing
    /// was left that could end it.
    pub async fn finish(mut self) -> Result<AgentState, AgentError> {
        while self.next().await.is_some() {}
        let Some(driver) = self.driver.take() else {
            return Err(AgentError::Stalled(
                "the run's driver was lost (a panic while waiting for the model or a tool?)".into(),
            ));
        };
        let (state, result) = driver.into_parts();
        if let Some(unfinished) = state.unfinished() {
            let what = match unfinished {
                Unfinished::Running {
                    input_id,
                    waiting_for,
                } => format!("input {input_id} was still waiting for {waiting_for}"),
                Unfinished::Queued { queued, .. } => format!("{queued} input(s) were queued"),
            };
            return Err(AgentError::Stalled(format!(
                "{what}, but neither a model call nor a tool call was running"
            )));
        }
        match result {
            Some(result) if result.stop_reason == StopReason::Error => {
                Err(AgentError::TurnFailed {
                    error: result
                        .error
                        .unwrap_or_else(|| "the turn ended with an error".into()),
                    state: Box::new(state),
                })
            }
            _ => Ok(state),
        }
    }
}

impl Stream for AgentRun {
    type Item = EventEnvelope;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<EventEnvelope>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        if this.pending.is_none() {
            let Some(mut driver) = this.driver.take() else {
                this.ended = true;
                return Poll::Ready(None);
            };
            this.pending = Some(Box::pin(async move {
                let event = driver.next().await;
                (driver, event)
            }));
        }
        let Some(pending) = this.pending.as_mut() else {
            return Poll::Ready(None);
        };
        match pending.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((driver, event)) => {
                this.pending = None;
                this.driver = Some(driver);
                this.ended = event.is_none();
                Poll::Ready(event)
            }
        }
    }
}

impl fmt::Debug for AgentRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRun")
            .field("ended", &self.ended)
            .field("waiting", &self.pending.is_some())
            .finish()
    }
}
