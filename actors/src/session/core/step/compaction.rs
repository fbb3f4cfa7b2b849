//! Compaction: the summarising call, its summary kept only when it makes
//! the request smaller, and the turn (or `/compact`) resumed afterwards.

use super::{Step, notice, retrying_event};
use crate::model::ModelEvent;
use crate::protocol::context::{Compacted, CompactionTrigger};
use crate::protocol::system::Retrying;
use crate::protocol::{AgentMessage, InputId, SystemEvent, SystemSubtype};
use crate::session::core::context::compaction::{CompactionCall, Summary};
use crate::session::core::context::{self, CompactionPlan};
use crate::session::core::effect::Effect;
use crate::session::core::turn::Phase;

impl Step<'_> {
    /// Ask the model for a summary; the turn (or the `/compact` command)
    /// waits for it.
    pub(super) fn start_compaction(
        &mut self,
        input_id: InputId,
        trigger: CompactionTrigger,
        plan: CompactionPlan,
        shortened: bool,
    ) {
        let request_id = self.state.take_request_id();
        let limit = context::limit(self.state)
            .map(|l| format!(" of the {l}-token budget"))
            .unwrap_or_default();
        let why = match trigger {
            CompactionTrigger::Command => "as asked".to_string(),
            CompactionTrigger::Auto => format!(
                "the next request would take about {} tokens{limit}",
                plan.tokens_before
            ),
            CompactionTrigger::Overflow => {
                "the provider refused the request as too long".to_string()
            }
        };
        let text = if shortened {
            format!(
                "The summarising request was too long as well; trying once more quoting about {} tokens of the conversation.",
                plan.quoted_tokens
            )
        } else {
            format!(
                "Compacting the conversation ({why}): the model is summarising {} older messages.",
                plan.first_kept - plan.first_new
            )
        };
        self.fx.emit(
            Some(input_id),
            AgentMessage::System(SystemEvent::bare(SystemSubtype::Compacting, text)),
        );
        self.state.compacting = Some(CompactionCall {
            request_id,
            profile: plan.request.profile.clone(),
            input_id,
            trigger,
            first_kept: plan.first_kept,
            first_new: plan.first_new,
            tokens_before: plan.tokens_before,
            focus: plan.focus,
            quoted_tokens: plan.quoted_tokens,
            shortened,
            text: String::new(),
            usage: Default::default(),
        });
        if let Some(turn) = self.state.turn.as_mut().filter(|t| t.id == input_id) {
            turn.phase = Phase::Compacting;
            turn.call.compacted = true;
        }
        self.fx.push(Effect::CallModel {
            request_id,
            request: plan.request,
        });
    }

    /// One event of the summarising call: only its text and usage matter (its
    /// thinking, if the model thinks, is not the summary).
    pub(super) fn on_compaction_event(&mut self, event: ModelEvent) {
        let Some(call) = self.state.compacting.as_mut() else {
            return;
        };
        match event {
            ModelEvent::TextDelta { text, .. } => call.text.push_str(&text),
            ModelEvent::Usage(usage) => call.usage.overwrite_with(usage),
            ModelEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => {
                call.text.clear();
                let retrying = Retrying {
                    attempt,
                    delay_ms,
                    reason,
                };
                self.fx.emit(Some(call.input_id), retrying_event(&retrying));
            }
            ModelEvent::Finished { .. } => self.finish_compaction(),
            ModelEvent::BlockStart { .. }
            | ModelEvent::ThinkingDelta { .. }
            | ModelEvent::ThinkingSignature { .. }
            | ModelEvent::RedactedThinking { .. }
            | ModelEvent::ReasoningItem { .. }
            | ModelEvent::ToolInputDelta { .. }
            | ModelEvent::BlockStop { .. } => {}
        }
    }

    /// The summary is written: it stands for the older turns from now on.
    pub(super) fn finish_compaction(&mut self) {
        let Some(call) = self.state.compacting.take() else {
            return;
        };
        let summary = call.text.trim().to_string();
        if summary.is_empty() {
            self.compaction_failed(call, "the model wrote an empty summary");
            return;
        }
        self.state.count_call(call.usage);
        let previous = self.state.context.summary.replace(Summary {
            first_kept: call.first_kept,
            text: summary.clone(),
        });
        let tokens_after = context::tokens_after(self.state);
        if tokens_after >= call.tokens_before {
            // A summary that does not shorten the request is worse than none:
            // the oldest turns are left out instead.
            self.state.context.summary = previous;
            let text = format!(
                "The summary would not have made the request smaller (about {} → {} tokens), so it was not kept; the oldest turns are left out of the model's view instead.",
                call.tokens_before, tokens_after
            );
            self.fx.emit(Some(call.input_id), notice(text));
            self.resume_after_compaction(call.input_id);
            return;
        }
        self.state.context.compactions += 1;
        self.state.context.learnt.compacted_at_call = Some(self.state.usage.model_calls);
        let (first_seq, last_seq) = self
            .state
            .context
            .seqs
            .span(call.first_new, call.first_kept);
        let compacted = Compacted {
            trigger: call.trigger,
            first_seq,
            last_seq,
            first_kept: call.first_kept,
            summary,
            tokens_before: call.tokens_before,
            tokens_after,
            usage: call.usage,
        };
        let message = format!(
            "Conversation compacted: about {} → {} tokens. A summary now stands for the first {} in the model's view; the whole conversation stays stored.",
            call.tokens_before,
            tokens_after,
            crate::text::count(call.first_kept as u64, "message")
        );
        self.fx.emit(
            Some(call.input_id),
            AgentMessage::System(SystemEvent::new(message, &compacted)),
        );
        self.resume_after_compaction(call.input_id);
    }

    /// The summary could not be had: the turn goes on with the oldest turns
    /// left out instead (the notice says so); `/compact` answers with it.
    pub(super) fn compaction_failed(&mut self, call: CompactionCall, reason: &str) {
        let text = if self
            .state
            .turn
            .as_ref()
            .is_some_and(|t| t.id == call.input_id)
        {
            format!(
                "Compaction failed ({reason}); the oldest turns are left out of the model's view instead (oldest-first) and the turn goes on."
            )
        } else {
            format!("Compaction failed ({reason}); the conversation is unchanged.")
        };
        self.fx.emit(Some(call.input_id), notice(text));
        self.resume_after_compaction(call.input_id);
    }

    pub(super) fn resume_after_compaction(&mut self, input_id: InputId) {
        if self.state.turn.as_ref().is_some_and(|t| t.id == input_id) {
            self.call_model();
        } else if self.state.pending_command == Some(input_id) {
            self.state.pending_command = None;
        }
    }
}
