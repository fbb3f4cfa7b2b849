//! Sub-agents: a `task` call's child session reported on this session's
//! stream, its approvals relayed and its usage counted in this turn.

use super::Step;
use crate::protocol::{AgentMessage, SystemEvent};
use crate::session::core::turn::Phase;

impl Step<'_> {
    /// A child session of a `task` call of the running batch started or
    /// ended: say so on this session's stream; a finished child's usage counts
    /// in this turn's.
    pub(super) fn on_subagent(
        &mut self,
        batch_id: u64,
        update: crate::session::core::input::SubagentUpdate,
    ) {
        let running = self.state.turn.as_ref().is_some_and(
        |t| matches!(&t.phase, Phase::RunningTools { batch_id: current, .. } if *current == batch_id),
    );
        let turn_id = self.state.turn.as_ref().map(|t| t.id);
        let event = match update {
            crate::session::core::input::SubagentUpdate::Approval {
                child,
                agent,
                mut request,
            } => {
                request.request_id = format!("{child}/{}", request.request_id);
                request.reason = format!("agent {agent} (session {child}): {}", request.reason);
                request.child_session = Some(child);
                self.fx
                    .emit(turn_id, AgentMessage::ApprovalRequest(request));
                return;
            }
            crate::session::core::input::SubagentUpdate::Resolved { child, event } => {
                let Some(mut resolved) = event.payload::<crate::protocol::ApprovalResolved>()
                else {
                    return;
                };
                resolved.request_id = format!("{child}/{}", resolved.request_id);
                resolved.child_session = Some(child);
                SystemEvent::new(event.message, &resolved)
            }
            crate::session::core::input::SubagentUpdate::Started(started) => SystemEvent::new(
                format!(
                    "Agent {} started on \"{}\" in session {} (task call {}).",
                    started.agent, started.description, started.child, started.call_id
                ),
                &started,
            ),
            crate::session::core::input::SubagentUpdate::Finished(finished) => {
                if let Some(turn) = self.state.turn.as_mut().filter(|_| running) {
                    turn.usage += finished.usage;
                } else {
                    // The turn moved on (interrupted): the tokens were still
                    // spent.
                    self.state.usage.total += finished.usage;
                }
                SystemEvent::new(
                    format!(
                        "Agent {} in session {} finished ({}).",
                        finished.agent,
                        finished.child,
                        serde_json::to_value(finished.stop_reason)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default()
                    ),
                    &finished,
                )
            }
        };
        self.fx.emit(turn_id, AgentMessage::System(event));
    }
}
