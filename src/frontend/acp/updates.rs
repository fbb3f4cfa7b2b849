//! Our events as ACP `session/update`s: the one translation between a
//! session's [`EventEnvelope`]s and what an editor shows.
//!
//! - streamed text → `agent_message_chunk`; a whole `assistant` message
//!   whose text did not stream (a replay from the store) → the same;
//! - the model's thinking → `agent_thought_chunk`, streamed or (not
//!   streamed, a replay) whole; redacted thinking shows nothing;
//! - a tool call → `tool_call` (as its block starts to stream, or whole),
//!   then `tool_call_update`s: in progress, waiting for approval, and
//!   completed or failed with what it returned (`tool_calls.rs`);
//! - a `user` event of a turn this editor did not send (a replay, or
//!   another front end of the same session) → `user_message_chunk`;
//! - progress within a turn (retries, compaction, notices) →
//!   `agent_thought_chunk`; a command's reply → `agent_message_chunk`
//!   (a rewind that forked the conversation adds that the editor stays
//!   in this session, and how to open the fork); an `error` →
//!   `agent_message_chunk`;
//! - the model's plan (`todo_write`) → `plan` (`plan.rs`), and an empty
//!   one when `/clear` drops it; the `todo_write` calls themselves are not
//!   shown as tool calls (the plan stands for them);
//! - the permission mode → `current_mode_update`; the mode, agent or model
//!   switched → `config_option_update`; how full the context is (and the
//!   cost, when the model has prices) → `usage_update`.
//!
//! Pure: a [`Translator`] is fed every event of a session in order and
//! returns the updates; it never sends anything, never waits and never
//! fails. It also keeps what the front end asks of it: which approval
//! requests still wait, how the last reply finished, the mode in force.

use super::config_options;
use super::modes;
use super::tool_calls;
use crate::frontend::common::backend::Choices;
use agent_client_protocol::v1::schema::{
    self as acp, ConfigOptionUpdate, ContentChunk, Cost, CurrentModeUpdate, SessionConfigOption,
    SessionModeState, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, UsageUpdate,
};
use agentbus_engine::protocol::plan::TODO_WRITE;
use agentbus_engine::protocol::system::{CommandEntry, ModelSwitched, SessionStarted};
use agentbus_engine::protocol::{
    AgentMessage, AgentSwitched, ApprovalRequestEvent, ApprovalResolved, AssistantEvent, BlockKind,
    ContentBlock, ContextUsage, EventEnvelope, InputId, ModeChanged, PermissionMode, Plan, Pricing,
    StreamDelta, SystemEvent, SystemSubtype, ToolResultEvent,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// What the translator knows of the models: prices (for the cost) and
/// context windows (the size when a request's budget is not reported).
#[derive(Clone, Debug, Default)]
pub struct Models {
    pub pricing: HashMap<String, Pricing>,
    pub windows: HashMap<String, u64>,
}

impl Models {
    /// The configured profiles' prices and windows (in this process; a
    /// server's are not known here).
    pub fn of(settings: &agentbus_engine::Settings) -> Models {
        let mut models = Models::default();
        for (name, profile) in &settings.models {
            let info = profile.info(name);
            if let Some(pricing) = info.pricing {
                models.pricing.insert(name.clone(), pricing);
            }
            if let Some(window) = info.context_window {
                models.windows.insert(name.clone(), window);
            }
        }
        models
    }
}

/// A tool call as the model wrote it.
#[derive(Clone, Debug)]
struct Call {
    name: String,
    input: Value,
}

/// Follows one session's events and turns them into updates.
#[derive(Debug)]
pub struct Translator {
    workspace: PathBuf,
    models: Models,
    /// Inputs this editor sent: their `user` events are not echoed.
    own: BTreeSet<InputId>,
    /// Inputs this editor sent without showing their reply (the mode
    /// picker's `/mode`).
    quiet: BTreeSet<InputId>,
    /// Turns whose `user` event was seen and whose `result` was not.
    turns: BTreeSet<InputId>,
    /// Text streamed since the last `assistant` event.
    streamed_text: bool,
    /// Thinking streamed since the last `assistant` event.
    streamed_thought: bool,
    /// Tool calls announced while their block streamed, not yet in an
    /// `assistant` event (void if the attempt is discarded).
    streaming_calls: Vec<String>,
    /// Tool calls already shown (`tool_call` sent), by id.
    calls: HashMap<String, Call>,
    /// Approval requests not settled yet, by request id.
    waiting: BTreeMap<String, ApprovalRequestEvent>,
    /// How the last `assistant` message finished, per turn.
    finish: HashMap<InputId, String>,
    mode: PermissionMode,
    /// The session's model profile (as it started or was switched to, or
    /// of the last reply), for the context window and the model picker.
    model: Option<String>,
    /// The named agent the session runs as.
    agent: Option<String>,
    /// What the pickers offer.
    choices: Choices,
    /// The session's custom commands, as its last `session_started` listed
    /// them.
    commands: Vec<CommandEntry>,
    /// US dollars spent, when every model used has prices.
    cost: Option<f64>,
    /// The last usage shown (used, size, cost): the same is not sent
    /// twice (a turn's `result` repeats its last reply's).
    shown_usage: Option<(u64, u64, Option<f64>)>,
    /// A plan with entries was shown (`/clear` then empties it).
    plan_shown: bool,
}

impl Translator {
    /// A translator for a session working in `workspace`.
    pub fn new(workspace: PathBuf, models: Models, choices: Choices) -> Self {
        Translator {
            workspace,
            models,
            own: BTreeSet::new(),
            quiet: BTreeSet::new(),
            turns: BTreeSet::new(),
            streamed_text: false,
            streamed_thought: false,
            streaming_calls: Vec::new(),
            calls: HashMap::new(),
            waiting: BTreeMap::new(),
            finish: HashMap::new(),
            mode: PermissionMode::default(),
            model: None,
            agent: None,
            choices,
            commands: Vec::new(),
            cost: None,
            shown_usage: None,
            plan_shown: false,
        }
    }

    /// Input `id` came from this editor: its `user` event is not shown.
    pub fn own(&mut self, id: InputId) {
        self.own.insert(id);
    }

    /// Input `id` came from this editor and its reply is not shown (a
    /// control it made; what it changes still is, e.g. the mode).
    pub fn quiet(&mut self, id: InputId) {
        self.own.insert(id);
        self.quiet.insert(id);
    }

    /// Whether the turn of input `id` started and has not ended.
    pub fn running(&self, id: InputId) -> bool {
        self.turns.contains(&id)
    }

    /// Where the session works (relative paths of tool calls resolve
    /// there).
    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// The mode picker: permission modes and agents.
    pub fn modes(&self) -> SessionModeState {
        modes::available(self.mode, &self.choices)
    }

    /// The config options (mode, agent, model pickers) as they stand.
    pub fn config_options(&self) -> Vec<SessionConfigOption> {
        let current = config_options::Current {
            mode: self.mode,
            agent: self.agent.as_deref(),
            model: self.model.as_deref(),
        };
        config_options::options(current, &self.choices)
    }

    /// The config options as they will stand once option `id` is `value`
    /// (the answer to the picker's request, given before the session
    /// makes the switch).
    pub fn config_options_after(&self, id: &str, value: &str) -> Vec<SessionConfigOption> {
        let mut current = config_options::Current {
            mode: self.mode,
            agent: self.agent.as_deref(),
            model: self.model.as_deref(),
        };
        match id {
            config_options::MODE => current.mode = value.parse().unwrap_or(self.mode),
            config_options::AGENT => current.agent = Some(value),
            config_options::MODEL => current.model = Some(value),
            _ => {}
        }
        config_options::options(current, &self.choices)
    }

    /// What the pickers offer.
    pub fn choices(&self) -> &Choices {
        &self.choices
    }

    /// The session's custom commands (for the editor's command menu).
    pub fn commands(&self) -> &[CommandEntry] {
        &self.commands
    }

    /// The pickers changed: the editor is told their new state.
    fn pickers_changed(&self, mode_changed: bool) -> Vec<SessionUpdate> {
        let mut updates = Vec::new();
        if mode_changed {
            updates.push(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                modes::id_of(self.mode),
            )));
        }
        updates.push(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
            self.config_options(),
        )));
        updates
    }

    /// Approval requests not settled yet, oldest first.
    pub fn waiting(&self) -> impl Iterator<Item = &ApprovalRequestEvent> {
        self.waiting.values()
    }

    /// How the last reply of turn `id` finished (`end_turn`, `length`,
    /// `refusal`, ... as the provider said it).
    pub fn finish_reason(&self, id: InputId) -> Option<&str> {
        self.finish.get(&id).map(String::as_str)
    }

    /// The updates `event` makes.
    pub fn translate(&mut self, event: &EventEnvelope) -> Vec<SessionUpdate> {
        match &event.message {
            AgentMessage::User(user) => {
                if let Some(turn) = event.turn_id {
                    self.turns.insert(turn);
                    if self.own.contains(&turn) {
                        return Vec::new();
                    }
                }
                vec![SessionUpdate::UserMessageChunk(chunk(&user.text))]
            }
            AgentMessage::StreamEvent(stream) => self.stream(&stream.event),
            AgentMessage::Assistant(assistant) => self.assistant(event.turn_id, assistant),
            AgentMessage::ToolResult(result) => self.tool_result(result),
            AgentMessage::ApprovalRequest(request) => {
                self.waiting
                    .insert(request.request_id.clone(), request.clone());
                let update = ToolCallUpdateFields::new().status(ToolCallStatus::Pending);
                self.call_update(&request.call_id, &request.name, &request.input, update)
            }
            AgentMessage::Result(result) => {
                if let Some(turn) = event.turn_id {
                    self.turns.remove(&turn);
                }
                self.usage(result.context.as_ref()).into_iter().collect()
            }
            AgentMessage::Error(error) => {
                vec![SessionUpdate::AgentMessageChunk(chunk(&format!(
                    "\n\nError: {}\n",
                    error.message
                )))]
            }
            AgentMessage::System(system) => self.system(event.turn_id, system),
        }
    }

    fn stream(&mut self, delta: &StreamDelta) -> Vec<SessionUpdate> {
        match delta {
            StreamDelta::TextDelta { text, .. } if !text.is_empty() => {
                self.streamed_text = true;
                vec![SessionUpdate::AgentMessageChunk(chunk(text))]
            }
            StreamDelta::ThinkingDelta { text, .. } if !text.is_empty() => {
                self.streamed_thought = true;
                vec![SessionUpdate::AgentThoughtChunk(chunk(text))]
            }
            StreamDelta::BlockStart {
                block: BlockKind::ToolUse { id, name },
                ..
            } if name != TODO_WRITE => {
                let call = Call {
                    name: name.clone(),
                    input: Value::Null,
                };
                self.streaming_calls.push(id.clone());
                self.calls.insert(id.clone(), call);
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(call_id(id), tool_calls::title(name, &Value::Null))
                        .kind(tool_calls::kind(name))
                        .status(ToolCallStatus::Pending),
                )]
            }
            StreamDelta::Discard { reason } => {
                let mut updates = Vec::new();
                if self.streamed_text {
                    updates.push(SessionUpdate::AgentMessageChunk(chunk(&format!(
                        "\n\n(The reply above was cut off ({reason}); the model is asked again.)\n\n"
                    ))));
                }
                for id in std::mem::take(&mut self.streaming_calls) {
                    self.calls.remove(&id);
                    updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        call_id(&id),
                        ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
                    )));
                }
                self.streamed_text = false;
                self.streamed_thought = false;
                updates
            }
            _ => Vec::new(),
        }
    }

    fn assistant(
        &mut self,
        turn: Option<InputId>,
        assistant: &AssistantEvent,
    ) -> Vec<SessionUpdate> {
        let mut updates = Vec::new();
        for block in &assistant.content {
            match block {
                ContentBlock::Text { text } if !self.streamed_text && !text.is_empty() => {
                    updates.push(SessionUpdate::AgentMessageChunk(chunk(text)));
                }
                ContentBlock::Text { .. } => {}
                ContentBlock::Thinking { thinking, .. }
                    if !self.streamed_thought && !thinking.is_empty() =>
                {
                    updates.push(SessionUpdate::AgentThoughtChunk(chunk(thinking)));
                }
                ContentBlock::Thinking { .. }
                | ContentBlock::RedactedThinking { .. }
                | ContentBlock::ReasoningItem { .. } => {}
                ContentBlock::ToolUse { name, .. } if name == TODO_WRITE => {}
                ContentBlock::ToolUse { id, name, input } => {
                    let shown = self.calls.contains_key(id);
                    self.calls.insert(
                        id.clone(),
                        Call {
                            name: name.clone(),
                            input: input.clone(),
                        },
                    );
                    let workspace = &self.workspace;
                    let status = if assistant.interrupted {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::InProgress
                    };
                    updates.push(if shown {
                        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            call_id(id),
                            tool_calls::described(
                                ToolCallUpdateFields::new().status(status),
                                name,
                                input,
                                workspace,
                            ),
                        ))
                    } else {
                        SessionUpdate::ToolCall(
                            ToolCall::new(call_id(id), tool_calls::title(name, input))
                                .kind(tool_calls::kind(name))
                                .status(status)
                                .content(tool_calls::proposed(name, input, workspace))
                                .locations(tool_calls::locations(name, input, workspace))
                                .raw_input(input.clone()),
                        )
                    });
                }
            }
        }
        self.streamed_text = false;
        self.streamed_thought = false;
        self.streaming_calls.clear();
        if let Some(turn) = turn {
            self.finish.insert(turn, assistant.finish_reason.clone());
        }
        self.model = Some(assistant.model.clone());
        if let Some(pricing) = self.models.pricing.get(&assistant.model) {
            *self.cost.get_or_insert(0.0) += pricing.cost(&assistant.usage);
        }
        updates.extend(self.usage(assistant.context.as_ref()));
        updates
    }

    fn tool_result(&mut self, result: &ToolResultEvent) -> Vec<SessionUpdate> {
        if result.name == TODO_WRITE {
            return Vec::new();
        }
        let call = self.calls.remove(&result.call_id).unwrap_or(Call {
            name: result.name.clone(),
            input: Value::Null,
        });
        let status = if result.is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        let content = tool_calls::finished(
            &call.name,
            &call.input,
            &result.output,
            result.is_error,
            &self.workspace,
        );
        vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id(&result.call_id),
            ToolCallUpdateFields::new()
                .status(status)
                .content(content)
                .raw_output(Value::String(result.output.clone())),
        ))]
    }

    /// An update of call `call_id`, announcing it first if it was never
    /// shown (an approval request seen without its `assistant` event).
    fn call_update(
        &mut self,
        id: &str,
        name: &str,
        input: &Value,
        fields: ToolCallUpdateFields,
    ) -> Vec<SessionUpdate> {
        if self.calls.contains_key(id) {
            return vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id(id),
                fields,
            ))];
        }
        self.calls.insert(
            id.to_string(),
            Call {
                name: name.to_string(),
                input: input.clone(),
            },
        );
        let mut call = ToolCall::new(call_id(id), tool_calls::title(name, input))
            .kind(tool_calls::kind(name))
            .content(tool_calls::proposed(name, input, &self.workspace))
            .locations(tool_calls::locations(name, input, &self.workspace))
            .raw_input(input.clone());
        call.update(fields);
        vec![SessionUpdate::ToolCall(call)]
    }

    fn system(&mut self, turn: Option<InputId>, system: &SystemEvent) -> Vec<SessionUpdate> {
        match system.subtype {
            SystemSubtype::SessionStarted => {
                if let Some(started) = system.payload::<SessionStarted>() {
                    if let Some(mode) = started.permission_mode {
                        self.mode = mode;
                    }
                    if !started.model.is_empty() {
                        self.model = Some(started.model);
                    }
                    self.agent = Some(started.agent.unwrap_or_else(|| "build".into()));
                    if !started.workspace.is_empty() {
                        self.workspace = PathBuf::from(started.workspace);
                    }
                    self.commands = started.commands;
                }
                Vec::new()
            }
            SystemSubtype::Mode => match system.payload::<ModeChanged>() {
                Some(changed) => {
                    self.mode = changed.mode;
                    // `/mode` typed as a prompt: its reply shows too.
                    [self.pickers_changed(true), self.reply(turn, system)].concat()
                }
                None => self.reply(turn, system),
            },
            SystemSubtype::Agent => match system.payload::<AgentSwitched>() {
                Some(switched) => {
                    let mode_changed = self.mode != switched.permission_mode;
                    self.mode = switched.permission_mode;
                    self.agent = Some(switched.agent);
                    if !switched.model.is_empty() {
                        self.model = Some(switched.model);
                    }
                    [self.pickers_changed(mode_changed), self.reply(turn, system)].concat()
                }
                None => self.reply(turn, system),
            },
            SystemSubtype::ModelSwitched => match system.payload::<ModelSwitched>() {
                Some(switched) => {
                    self.model = Some(switched.model);
                    [self.pickers_changed(false), self.reply(turn, system)].concat()
                }
                None => self.reply(turn, system),
            },
            SystemSubtype::Plan => match system.payload::<Plan>() {
                Some(plan) => {
                    self.plan_shown = !plan.todos.is_empty();
                    vec![super::plan::update(&plan)]
                }
                None => Vec::new(),
            },
            SystemSubtype::Cleared if self.plan_shown => {
                self.plan_shown = false;
                [
                    vec![super::plan::update(&Plan::default())],
                    self.reply(turn, system),
                ]
                .concat()
            }
            SystemSubtype::ApprovalResolved => {
                let Some(resolved) = system.payload::<ApprovalResolved>() else {
                    return Vec::new();
                };
                let request = self.waiting.remove(&resolved.request_id);
                if !resolved.outcome.allowed() {
                    // The call's error result follows.
                    return Vec::new();
                }
                let (name, input) = match &request {
                    Some(r) => (r.name.as_str(), r.input.clone()),
                    None => ("", Value::Null),
                };
                let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                self.call_update(&resolved.call_id, name, &input, fields)
            }
            SystemSubtype::Rewound => {
                let mut updates = self.reply(turn, system);
                if let Some(fork) = system.switch_to()
                    && !updates.is_empty()
                {
                    updates.push(SessionUpdate::AgentMessageChunk(chunk(&format!(
                        "\n\nThis editor stays in this session. To go on from before the turn, open session {fork} from the editor's list of sessions."
                    ))));
                }
                updates
            }
            _ => self.reply(turn, system),
        }
    }

    /// A `system` event with a turn: progress within a running turn is a
    /// thought; otherwise it is a command's reply, shown as the answer.
    /// Events of no input (session start, MCP servers) show nothing.
    fn reply(&self, turn: Option<InputId>, system: &SystemEvent) -> Vec<SessionUpdate> {
        let Some(turn) = turn else { return Vec::new() };
        if system.message.is_empty() || self.quiet.contains(&turn) {
            return Vec::new();
        }
        if self.turns.contains(&turn) {
            vec![SessionUpdate::AgentThoughtChunk(chunk(&format!(
                "{}\n",
                system.message
            )))]
        } else {
            vec![SessionUpdate::AgentMessageChunk(chunk(&system.message))]
        }
    }

    /// How full the context is, when its size is known and it changed.
    fn usage(&mut self, context: Option<&ContextUsage>) -> Option<SessionUpdate> {
        let context = context?;
        let size = context.limit.or_else(|| {
            let model = self.model.as_ref()?;
            self.models.windows.get(model).copied()
        })?;
        let shown = Some((context.used, size, self.cost));
        if self.shown_usage == shown {
            return None;
        }
        self.shown_usage = shown;
        let mut update = UsageUpdate::new(context.used, size);
        if let Some(cost) = self.cost {
            update = update.cost(Cost::new(cost, "USD"));
        }
        Some(SessionUpdate::UsageUpdate(update))
    }
}

/// A tool call's id on the wire.
pub fn call_id(id: &str) -> acp::ToolCallId {
    acp::ToolCallId::new(id)
}

/// A text chunk.
fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(acp::ContentBlock::from(text))
}
