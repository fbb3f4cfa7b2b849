//! Attachments: a query's `@` mentions read and its `!command` run before
//! the model sees it.

use super::queue::no_images;
use super::{Step, notice};
use crate::model::ToolOutcome;
use crate::protocol::{AgentMessage, InputId, StopReason, UserEvent};
use crate::session::core::attach;
use crate::session::core::effect::Effect;
use crate::session::core::mcp_wait;
use crate::session::core::turn::{Phase, RunAs, Turn};

impl Step<'_> {
    /// A query with `@` mentions, or a `!command`: its turn begins by reading
    /// or running them (`attach`).
    pub(super) fn start_attaching(
        &mut self,
        id: InputId,
        user: UserEvent,
        request: attach::Request,
    ) {
        self.open_turn(id, user, RunAs::default());
        let batch_id = self.state.take_request_id();
        let query = attach::Query {
            config: &self.state.config.permissions,
            permissions: &self.state.permissions,
            workspace: &self.state.config.workspace,
            turn_id: id,
            message: self.state.history.len() - 1,
            no_images: no_images(self.state),
        };
        let (attaching, calls) = attach::begin(query, batch_id, request);
        if let Some(turn) = self.state.turn.as_mut() {
            turn.phase = Phase::Attaching(attaching);
        }
        if calls.is_empty() {
            self.finish_attaching(false);
        } else {
            self.fx.push(Effect::RunTools { batch_id, calls });
        }
    }

    /// One call reading a mention or running the command ended.
    pub(super) fn on_attach_finished(
        &mut self,
        batch_id: u64,
        call_id: &str,
        outcome: ToolOutcome,
    ) {
        let Some(Turn {
            phase: Phase::Attaching(attaching),
            ..
        }) = self.state.turn.as_mut()
        else {
            return;
        };
        if attaching.batch_id != batch_id {
            return;
        }
        if let Some(next) = attach::finished(attaching, call_id, outcome) {
            self.fx.push(Effect::RunTools {
                batch_id,
                calls: vec![next],
            });
        }
        if attaching.is_complete() {
            self.finish_attaching(false);
        }
    }

    /// What the query took along joins its message in the history; then the
    /// model is called — or, for a `!command` or after an interrupt, the turn
    /// ends.
    pub(super) fn finish_attaching(&mut self, interrupted: bool) {
        let Some(turn) = self.state.turn.as_mut() else {
            return;
        };
        let Phase::Attaching(attaching) = std::mem::replace(&mut turn.phase, Phase::Compacting)
        else {
            return;
        };
        let turn_id = turn.id;
        if interrupted {
            self.fx.push(Effect::CancelTools {
                batch_id: attaching.batch_id,
            });
        }
        let (message, command) = (attaching.message, attaching.is_command());
        let concluded = attach::conclude(attaching);
        for text in concluded.notices {
            self.fx.emit(Some(turn_id), notice(text));
        }
        if let Some(event) = concluded.event {
            if let (Some(query), Some(attachments)) =
                (self.state.history.get_mut(message), event.payload())
            {
                attach::join(query, &attachments);
            }
            self.fx.emit(Some(turn_id), AgentMessage::System(event));
        }
        if interrupted {
            self.end_turn(StopReason::Cancelled, None);
        } else if let Some(why) = concluded.refused_command {
            self.end_turn(StopReason::Error, Some(why));
        } else if command {
            self.end_turn(StopReason::EndTurn, None);
        } else if !mcp_wait::holds(self.state, turn_id, &mut self.fx) {
            self.call_model();
        }
    }
}
