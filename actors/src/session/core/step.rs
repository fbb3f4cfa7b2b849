//! The transition function: every conversation rule, applied to one input.

use super::attach;
use super::context::compaction::{CompactionCall, Summary};
use super::context::{self, CompactionPlan, Next};
use super::effect::Effect;
use super::hooks::{self as hooks, HookWait};
use super::input::Input;
use super::mcp_wait;
use super::partial::{AssembledMessage, PartialMessage};
use super::permission::approval::{self, Settle};
use super::permission::policy::{self, Verdict};
use super::state::{QueuedInput, SessionState};
use super::turn::{CallAttempt, PendingCall, Phase, PromptHook, RunAs, Turn, Waiting};
use crate::model::ContextRefusal;
use crate::model::{GrantedCall, ModelEvent, ToolCall, ToolOutcome};
use crate::protocol::checkpoint::CheckpointRef;
use crate::protocol::context::{Compacted, CompactionTrigger};
use crate::protocol::hook::{HookAnswer, HookDecision, HookEvent};
use crate::protocol::system::{McpServerChanged, Retrying, SessionStarted};
use crate::protocol::{
    AgentMessage, AssistantEvent, ContextUsage, ErrorEvent, ErrorKind, InputId, Message,
    ResultEvent, StopReason, StreamDelta, StreamEvent, SystemEvent, SystemSubtype, ToolResultEvent,
    UserEvent, UserInput,
};
use crate::session::core::commands;

/// Apply one input to `state`, returning what the driver must do, in
/// order. Pure: the same state and input give the same state and effects.
pub fn step(state: &mut SessionState, input: Input, now_ms: u64) -> Vec<Effect> {
    let mut fx = Vec::new();
    match input {
        Input::Started { resumed } => {
            announce_start(state, resumed, &mut fx);
            session_start_hooks(state, resumed, &mut fx);
        }
        Input::HookDone {
            hook_id,
            answer,
            ran,
        } => on_hook_done(state, hook_id, answer, ran, now_ms, &mut fx),
        Input::HooksRan { turn_id, ran } => {
            for ran in &ran {
                emit(&mut fx, turn_id, hooks::ran_event(ran));
            }
        }
        Input::Submit { input_id, input } => accept(state, input_id, input, &mut fx),
        Input::Interrupt => interrupt(state, now_ms, &mut fx),
        Input::Shutdown => {
            interrupt(state, now_ms, &mut fx);
            shut_down_queue(state, &mut fx);
            return fx; // nothing else runs
        }
        Input::Model { request_id, event } => {
            on_model_event(state, request_id, event, now_ms, &mut fx)
        }
        Input::ModelFailed {
            request_id,
            error,
            too_long,
        } => on_model_failed(state, request_id, error, too_long, now_ms, &mut fx),
        Input::ToolFinished {
            batch_id,
            call_id,
            outcome,
            checkpoint,
        } => on_tool_finished(
            state,
            batch_id,
            &call_id,
            (outcome, checkpoint),
            now_ms,
            &mut fx,
        ),
        Input::CatalogChanged {
            tools,
            servers,
            first_start,
            prompts,
        } => {
            state.server_prompts = prompts;
            apply_catalog(state, tools, servers, &mut fx);
            if mcp_wait::observe(state, first_start) {
                call_model(state, now_ms, &mut fx);
            }
        }
        Input::ServersGiven { notices } => {
            mcp_wait::given(state);
            for text in notices {
                emit(&mut fx, None, notice(text));
            }
        }
        Input::McpWaitTimedOut { turn_id } => {
            if mcp_wait::timed_out(state, turn_id, &mut fx) {
                call_model(state, now_ms, &mut fx);
            }
        }
        Input::Approval {
            request_id,
            decision,
        } => on_settle(
            state,
            &request_id,
            Settle::Decided(decision),
            now_ms,
            &mut fx,
        ),
        Input::ApprovalTimedOut { request_id } => {
            let after_ms = state.config.permissions.approval_timeout_ms.unwrap_or(0);
            on_settle(
                state,
                &request_id,
                Settle::TimedOut { after_ms },
                now_ms,
                &mut fx,
            )
        }
        Input::RuleSaved { rule, result } => {
            let text = match result {
                Ok(path) => format!("Saved the allow rule `{rule}` to {path}."),
                Err(why) => format!(
                    "Could not save the allow rule `{rule}` to .agentbus.toml ({why}); it still holds for this session."
                ),
            };
            emit(&mut fx, None, notice(text));
        }
        Input::Subagent { batch_id, update } => on_subagent(state, batch_id, update, &mut fx),
        Input::CommandDone { input_id, reply } => {
            if state.pending_command == Some(input_id) {
                state.pending_command = None;
                emit(&mut fx, Some(input_id), AgentMessage::System(reply));
            }
        }
    }
    run_queue(state, now_ms, &mut fx);
    fx
}

fn emit(fx: &mut Vec<Effect>, turn_id: Option<InputId>, message: AgentMessage) {
    fx.push(Effect::Emit { turn_id, message });
}

fn notice(message: impl Into<String>) -> AgentMessage {
    AgentMessage::System(SystemEvent::bare(SystemSubtype::Notice, message))
}

fn announce_start(state: &SessionState, resumed: bool, fx: &mut Vec<Effect>) {
    let tools: Vec<String> = state
        .offered_tools()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let mode = state.permissions.mode;
    let sandbox = if state.config.permissions.sandboxed {
        ""
    } else {
        "; commands run WITHOUT a sandbox"
    };
    let agent = &state.agent;
    let message = if resumed {
        format!(
            "Session {} resumed as agent {agent} with model {} ({}), permission mode {mode}{sandbox}.",
            state.session_id,
            state.model,
            crate::text::count(state.history.len() as u64, "message")
        )
    } else {
        format!(
            "Session {} started as agent {agent} with model {}, permission mode {mode}{sandbox}.",
            state.session_id, state.model
        )
    };
    let instructions = &state.config.instructions.files;
    let message = if instructions.is_empty() {
        message
    } else {
        let paths: Vec<&str> = instructions.iter().map(|f| f.path.as_str()).collect();
        format!("{message} Instructions from {}.", paths.join(", "))
    };
    let started = SessionStarted {
        model: state.model.clone(),
        tools,
        workspace: state.config.workspace.clone(),
        resumed,
        messages: state.history.len(),
        context: state.context.session.clone(),
        permission_mode: Some(state.permissions.mode),
        sandboxed: Some(state.config.permissions.sandboxed),
        instructions: instructions.iter().map(|f| f.path.clone()).collect(),
        agent: Some(state.agent.clone()),
        commands: state.config.commands.entries(),
    };
    emit(
        fx,
        None,
        AgentMessage::System(SystemEvent::new(message, &started)),
    );
    for text in state.config.instructions.notices() {
        emit(fx, None, notice(text));
    }
    for text in &state.config.hooks.notices {
        emit(fx, None, notice(text.clone()));
    }
    for problem in &state.config.agents.problems {
        emit(fx, None, notice(format!("Agent file not used: {problem}")));
    }
    for problem in &state.config.commands.problems {
        emit(
            fx,
            None,
            notice(format!("Command file not used: {problem}")),
        );
    }
    for text in state.config.skills.notices() {
        emit(fx, None, notice(text));
    }
    if state.current_agent().is_none() {
        emit(
            fx,
            None,
            notice(format!(
                "The agent `{agent}` is no longer defined; the session runs like `build` until /agent switches. Agents: {}.",
                state.config.agents.names()
            )),
        );
    }
}

/// New tools apply to the next model call; each MCP server whose state
/// changed is reported to the user.
fn apply_catalog(
    state: &mut SessionState,
    tools: crate::model::ToolList,
    servers: std::collections::BTreeMap<String, crate::protocol::McpServerStatus>,
    fx: &mut Vec<Effect>,
) {
    state.tools = tools;
    for (name, status) in &servers {
        if state.mcp_servers.get(name) == Some(status) {
            continue;
        }
        let changed = McpServerChanged {
            server: name.clone(),
            status: status.clone(),
        };
        let message = format!("MCP server `{name}`: {}", status.describe());
        emit(
            fx,
            None,
            AgentMessage::System(SystemEvent::new(message, &changed)),
        );
    }
    state.mcp_servers = servers;
}

/// Queue a query or command. Slash text is parsed here, once, for every
/// front end; an unknown command is answered at once and never queued.
fn accept(state: &mut SessionState, input_id: InputId, input: UserInput, fx: &mut Vec<Effect>) {
    state.next_input_id = state.next_input_id.max(input_id + 1);
    let input = match input {
        UserInput::Query { text, images, by } => {
            match commands::parse_with(&text, &state.config.commands) {
                None => UserInput::Query { text, images, by },
                Some(Ok(command)) => {
                    if !images.is_empty() {
                        emit(
                            fx,
                            Some(input_id),
                            self::notice(format!(
                                "Not sent: {} — `{}` is a command, and images go with a query.",
                                crate::text::count(images.len() as u64, "image"),
                                text.split_whitespace().next().unwrap_or_default()
                            )),
                        );
                    }
                    UserInput::Control { command, by }
                }
                Some(Err(notice)) => {
                    emit(fx, Some(input_id), self::notice(notice));
                    return;
                }
            }
        }
        control => control,
    };
    state.queue.push_back(QueuedInput { input_id, input });
}

/// Start queued inputs while no turn runs: control commands apply at once,
/// a query starts a turn (and stops the loop until it ends).
fn run_queue(state: &mut SessionState, now_ms: u64, fx: &mut Vec<Effect>) {
    while state.turn.is_none() && state.pending_command.is_none() && !state.hooks.starting {
        let Some(QueuedInput { input_id, input }) = state.queue.pop_front() else {
            return;
        };
        match input {
            UserInput::Control { command, by } => match commands::apply(&command, state) {
                commands::Applied::Reply(reply) => emit(
                    fx,
                    Some(input_id),
                    AgentMessage::System(SystemEvent { by, ..reply }),
                ),
                commands::Applied::Query(query) => {
                    let user = UserEvent {
                        text: query.typed,
                        prompt: Some(query.prompt),
                        images: Vec::new(),
                        by,
                    };
                    let run_as = RunAs {
                        model: query.model,
                        allowed_tools: query.allowed_tools,
                        notices: query.notices,
                    };
                    begin_query(state, input_id, user, run_as, false, now_ms, fx)
                }
                commands::Applied::NeedsStore(command) => {
                    state.pending_command = Some(input_id);
                    fx.push(Effect::SessionCommand { input_id, command });
                }
                commands::Applied::Compact { focus } => {
                    match context::plan_compaction(state, focus.as_deref(), None) {
                        Some(plan) => {
                            state.pending_command = Some(input_id);
                            start_compaction(
                                state,
                                input_id,
                                CompactionTrigger::Command,
                                plan,
                                false,
                                fx,
                            );
                        }
                        None => emit(
                            fx,
                            Some(input_id),
                            notice(
                                "Nothing to compact yet: the conversation has at most one turn, which is always sent verbatim.",
                            ),
                        ),
                    }
                }
            },
            // Typed by a user: its `@` mentions and `!command` count.
            UserInput::Query { text, images, by } => {
                let user = UserEvent {
                    images,
                    by,
                    ..UserEvent::new(text)
                };
                begin_query(state, input_id, user, RunAs::default(), true, now_ms, fx)
            }
            UserInput::Prompt { text } => begin_query(
                state,
                input_id,
                UserEvent::new(text),
                RunAs::default(),
                false,
                now_ms,
                fx,
            ),
        }
    }
}

/// A query's turn begins: its `UserPromptSubmit` hooks first, when it
/// has some; then (`typed`: as a user typed it) its `@` mentions or
/// `!command`, or the model.
fn begin_query(
    state: &mut SessionState,
    id: InputId,
    user: UserEvent,
    run_as: RunAs,
    typed: bool,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    if hooks::any(&state.config.hooks, HookEvent::UserPromptSubmit, None) {
        let hook_id = state.take_request_id();
        let mut fields = serde_json::Map::new();
        fields.insert("prompt".into(), user.model_text().into());
        fx.push(Effect::RunHook {
            hook_id,
            event: HookEvent::UserPromptSubmit,
            tool: None,
            fields,
        });
        state
            .hooks
            .waiting
            .insert(hook_id, HookWait::Prompt { turn_id: id });
        state.turn = Some(Turn {
            id,
            started_at_ms: now_ms,
            steps: 0,
            usage: Default::default(),
            last_text: String::new(),
            phase: Phase::PromptHook(Box::new(PromptHook {
                hook_id,
                user,
                run_as,
                typed,
            })),
            warned_over_budget: false,
            call: CallAttempt::default(),
            session_model: None,
            stop_continuations: 0,
        });
        return;
    }
    submit_query(state, id, user, run_as, typed, now_ms, fx);
}

/// The query enters the history and its turn runs.
fn submit_query(
    state: &mut SessionState,
    id: InputId,
    user: UserEvent,
    run_as: RunAs,
    typed: bool,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    match attach::request(&user.text).filter(|_| typed) {
        Some(request) => start_attaching(state, id, user, request, now_ms, fx),
        None => start_turn(state, id, user, run_as, now_ms, fx),
    }
}

fn start_turn(
    state: &mut SessionState,
    id: InputId,
    user: UserEvent,
    run_as: RunAs,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    open_turn(state, id, user, run_as, now_ms, fx);
    if !mcp_wait::holds(state, id, fx) {
        call_model(state, now_ms, fx);
    }
}

/// A query's images when the profile does not take images: left out (the
/// text still goes), with the notice saying so, naming the profile and the
/// key that would allow them.
fn refuse_images(state: &SessionState, user: &mut UserEvent) -> Option<String> {
    if user.images.is_empty() {
        return None;
    }
    let why = no_images(state)?;
    let sources: Vec<String> = user
        .images
        .drain(..)
        .map(|image| {
            if image.source.is_empty() {
                "an image".to_string()
            } else {
                image.source
            }
        })
        .collect();
    Some(format!(
        "Not sent to the model: {} — {why}. The text was sent.",
        sources.join(", "),
    ))
}

/// Why the session's model profile takes no images, if it does not.
fn no_images(state: &SessionState) -> Option<String> {
    let info = state.config.models.iter().find(|m| m.name == state.model);
    if info.is_some_and(|m| m.images) {
        return None;
    }
    Some(format!(
        "model profile `{}` does not take images (set `images = true` in `[models.{}]` if the model reads them)",
        state.model, state.model
    ))
}

/// The query enters the history and its turn begins (nothing runs yet).
fn open_turn(
    state: &mut SessionState,
    id: InputId,
    user: UserEvent,
    run_as: RunAs,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let mut user = user;
    let refused_images = refuse_images(state, &mut user);
    state.history.push(Message::User {
        text: user.model_text().to_string(),
        images: user.images.clone(),
    });
    emit(fx, Some(id), AgentMessage::User(user));
    if let Some(text) = refused_images {
        emit(fx, Some(id), notice(text));
    }
    for text in run_as.notices {
        emit(fx, Some(id), notice(text));
    }
    let session_model = run_as
        .model
        .filter(|model| *model != state.model)
        .map(|model| std::mem::replace(&mut state.model, model));
    state.permissions.for_turn = run_as.allowed_tools;
    state.turn = Some(Turn {
        id,
        started_at_ms: now_ms,
        steps: 0,
        usage: Default::default(),
        last_text: String::new(),
        phase: Phase::Compacting,
        warned_over_budget: false,
        call: CallAttempt::default(),
        session_model,
        stop_continuations: 0,
    });
}

/// A query with `@` mentions, or a `!command`: its turn begins by reading
/// or running them (`attach`).
fn start_attaching(
    state: &mut SessionState,
    id: InputId,
    user: UserEvent,
    request: attach::Request,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    open_turn(state, id, user, RunAs::default(), now_ms, fx);
    let batch_id = state.take_request_id();
    let query = attach::Query {
        config: &state.config.permissions,
        permissions: &state.permissions,
        workspace: &state.config.workspace,
        turn_id: id,
        message: state.history.len() - 1,
        no_images: no_images(state),
    };
    let (attaching, calls) = attach::begin(query, batch_id, request);
    if let Some(turn) = state.turn.as_mut() {
        turn.phase = Phase::Attaching(attaching);
    }
    if calls.is_empty() {
        finish_attaching(state, false, now_ms, fx);
    } else {
        fx.push(Effect::RunTools { batch_id, calls });
    }
}

/// One call reading a mention or running the command ended.
fn on_attach_finished(
    state: &mut SessionState,
    batch_id: u64,
    call_id: &str,
    outcome: ToolOutcome,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(Turn {
        phase: Phase::Attaching(attaching),
        ..
    }) = state.turn.as_mut()
    else {
        return;
    };
    if attaching.batch_id != batch_id {
        return;
    }
    if let Some(next) = attach::finished(attaching, call_id, outcome) {
        fx.push(Effect::RunTools {
            batch_id,
            calls: vec![next],
        });
    }
    if attaching.is_complete() {
        finish_attaching(state, false, now_ms, fx);
    }
}

/// What the query took along joins its message in the history; then the
/// model is called — or, for a `!command` or after an interrupt, the turn
/// ends.
fn finish_attaching(
    state: &mut SessionState,
    interrupted: bool,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(turn) = state.turn.as_mut() else {
        return;
    };
    let Phase::Attaching(attaching) = std::mem::replace(&mut turn.phase, Phase::Compacting) else {
        return;
    };
    let turn_id = turn.id;
    if interrupted {
        fx.push(Effect::CancelTools {
            batch_id: attaching.batch_id,
        });
    }
    let (message, command) = (attaching.message, attaching.is_command());
    let concluded = attach::conclude(attaching);
    for text in concluded.notices {
        emit(fx, Some(turn_id), notice(text));
    }
    if let Some(event) = concluded.event {
        if let (Some(query), Some(attachments)) = (state.history.get_mut(message), event.payload())
        {
            attach::join(query, &attachments);
        }
        emit(fx, Some(turn_id), AgentMessage::System(event));
    }
    if interrupted {
        end_turn(state, StopReason::Cancelled, None, now_ms, fx);
    } else if let Some(why) = concluded.refused_command {
        end_turn(state, StopReason::Error, Some(why), now_ms, fx);
    } else if command {
        end_turn(state, StopReason::EndTurn, None, now_ms, fx);
    } else if !mcp_wait::holds(state, turn_id, fx) {
        call_model(state, now_ms, fx);
    }
}

/// Make the turn's next model call with the model's view of the
/// conversation — or, when the view passed `auto_compact_at`, compact first
/// (at most once per call); or, when even the current turn alone cannot
/// fit, end the turn saying so, having sent nothing.
fn call_model(state: &mut SessionState, now_ms: u64, fx: &mut Vec<Effect>) {
    call_model_after(state, CompactionTrigger::Auto, now_ms, fx);
}

/// [`call_model`], saying `trigger` should a compaction run first.
fn call_model_after(
    state: &mut SessionState,
    trigger: CompactionTrigger,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(turn) = state.turn.as_ref() else {
        return;
    };
    let turn_id = turn.id;
    let allow_compaction = !turn.call.compacted;
    match context::prepare(state, allow_compaction) {
        Next::Compact(plan) => {
            start_compaction(state, turn_id, trigger, plan, false, fx);
        }
        Next::TooLong(why) => {
            emit(
                fx,
                Some(turn_id),
                AgentMessage::Error(ErrorEvent {
                    kind: ErrorKind::Context,
                    message: why.clone(),
                }),
            );
            end_turn(state, StopReason::Error, Some(why), now_ms, fx);
        }
        Next::Call(prepared) => {
            if let Some(text) = prepared.warning {
                emit(fx, Some(turn_id), notice(text));
            }
            let warned = state.turn.as_ref().is_some_and(|t| t.warned_over_budget);
            if !warned && !prepared.notices.is_empty() {
                for text in prepared.notices {
                    emit(fx, Some(turn_id), notice(text));
                }
                if let Some(turn) = state.turn.as_mut() {
                    turn.warned_over_budget = true;
                }
            }
            let request_id = state.take_request_id();
            if let Some(turn) = state.turn.as_mut() {
                turn.call.counted = prepared.counted;
                turn.phase = Phase::Streaming {
                    request_id,
                    partial: PartialMessage::default(),
                };
            }
            fx.push(Effect::CallModel {
                request_id,
                request: prepared.request,
            });
        }
    }
}

/// Ask the model for a summary; the turn (or the `/compact` command)
/// waits for it.
fn start_compaction(
    state: &mut SessionState,
    input_id: InputId,
    trigger: CompactionTrigger,
    plan: CompactionPlan,
    shortened: bool,
    fx: &mut Vec<Effect>,
) {
    let request_id = state.take_request_id();
    let limit = context::limit(state)
        .map(|l| format!(" of the {l}-token budget"))
        .unwrap_or_default();
    let why = match trigger {
        CompactionTrigger::Command => "as asked".to_string(),
        CompactionTrigger::Auto => format!(
            "the next request would take about {} tokens{limit}",
            plan.tokens_before
        ),
        CompactionTrigger::Overflow => "the provider refused the request as too long".to_string(),
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
    emit(
        fx,
        Some(input_id),
        AgentMessage::System(SystemEvent::bare(SystemSubtype::Compacting, text)),
    );
    state.compacting = Some(CompactionCall {
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
    if let Some(turn) = state.turn.as_mut().filter(|t| t.id == input_id) {
        turn.phase = Phase::Compacting;
        turn.call.compacted = true;
    }
    fx.push(Effect::CallModel {
        request_id,
        request: plan.request,
    });
}

/// One event of the summarising call: only its text and usage matter (its
/// thinking, if the model thinks, is not the summary).
fn on_compaction_event(
    state: &mut SessionState,
    event: ModelEvent,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(call) = state.compacting.as_mut() else {
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
            let message = format!("retrying: attempt {attempt} in {delay_ms} ms after {reason}");
            let retrying = Retrying {
                attempt,
                delay_ms,
                reason,
            };
            let input_id = call.input_id;
            emit(
                fx,
                Some(input_id),
                AgentMessage::System(SystemEvent::new(message, &retrying)),
            );
        }
        ModelEvent::Finished { .. } => finish_compaction(state, now_ms, fx),
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
fn finish_compaction(state: &mut SessionState, now_ms: u64, fx: &mut Vec<Effect>) {
    let Some(call) = state.compacting.take() else {
        return;
    };
    let summary = call.text.trim().to_string();
    if summary.is_empty() {
        compaction_failed(state, call, "the model wrote an empty summary", now_ms, fx);
        return;
    }
    state.count_call(call.usage);
    let previous = state.context.summary.replace(Summary {
        first_kept: call.first_kept,
        text: summary.clone(),
    });
    let tokens_after = context::tokens_after(state);
    if tokens_after >= call.tokens_before {
        // A summary that does not shorten the request is worse than none:
        // the oldest turns are left out instead.
        state.context.summary = previous;
        let text = format!(
            "The summary would not have made the request smaller (about {} → {} tokens), so it was not kept; the oldest turns are left out of the model's view instead.",
            call.tokens_before, tokens_after
        );
        emit(fx, Some(call.input_id), notice(text));
        resume_after_compaction(state, call.input_id, now_ms, fx);
        return;
    }
    state.context.compactions += 1;
    state.context.learnt.compacted_at_call = Some(state.usage.model_calls);
    let (first_seq, last_seq) = state.context.seqs.span(call.first_new, call.first_kept);
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
    emit(
        fx,
        Some(call.input_id),
        AgentMessage::System(SystemEvent::new(message, &compacted)),
    );
    resume_after_compaction(state, call.input_id, now_ms, fx);
}

/// The summary could not be had: the turn goes on with the oldest turns
/// left out instead (the notice says so); `/compact` answers with it.
fn compaction_failed(
    state: &mut SessionState,
    call: CompactionCall,
    reason: &str,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let text = if state.turn.as_ref().is_some_and(|t| t.id == call.input_id) {
        format!(
            "Compaction failed ({reason}); the oldest turns are left out of the model's view instead (oldest-first) and the turn goes on."
        )
    } else {
        format!("Compaction failed ({reason}); the conversation is unchanged.")
    };
    emit(fx, Some(call.input_id), notice(text));
    resume_after_compaction(state, call.input_id, now_ms, fx);
}

fn resume_after_compaction(
    state: &mut SessionState,
    input_id: InputId,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    if state.turn.as_ref().is_some_and(|t| t.id == input_id) {
        call_model(state, now_ms, fx);
    } else if state.pending_command == Some(input_id) {
        state.pending_command = None;
    }
}

fn on_model_event(
    state: &mut SessionState,
    request_id: u64,
    event: ModelEvent,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    if state
        .compacting
        .as_ref()
        .is_some_and(|c| c.request_id == request_id)
    {
        on_compaction_event(state, event, now_ms, fx);
        return;
    }
    let include_partial = state.config.include_partial_messages;
    let Some(turn) = state.turn.as_mut() else {
        return;
    };
    let turn_id = Some(turn.id);
    let Phase::Streaming {
        request_id: current,
        partial,
    } = &mut turn.phase
    else {
        return;
    };
    if *current != request_id {
        return; // a cancelled call's late event
    }
    partial.apply(&event);
    let delta = match event {
        ModelEvent::BlockStart { index, block } => Some(StreamDelta::BlockStart { index, block }),
        ModelEvent::TextDelta { index, text } => Some(StreamDelta::TextDelta { index, text }),
        ModelEvent::ThinkingDelta { index, text } => {
            Some(StreamDelta::ThinkingDelta { index, text })
        }
        // Opaque: kept in the message, never streamed to front ends.
        ModelEvent::ThinkingSignature { .. }
        | ModelEvent::RedactedThinking { .. }
        | ModelEvent::ReasoningItem { .. } => None,
        ModelEvent::ToolInputDelta {
            index,
            partial_json,
        } => Some(StreamDelta::ToolInputDelta {
            index,
            partial_json,
        }),
        ModelEvent::BlockStop { index } => Some(StreamDelta::BlockStop { index }),
        ModelEvent::Usage(_) => None,
        ModelEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => {
            let had_output = !partial.is_empty();
            *partial = PartialMessage::default();
            if had_output && include_partial {
                emit(
                    fx,
                    turn_id,
                    AgentMessage::StreamEvent(StreamEvent {
                        event: StreamDelta::Discard {
                            reason: reason.clone(),
                        },
                    }),
                );
            }
            let message = format!("retrying: attempt {attempt} in {delay_ms} ms after {reason}");
            let retrying = Retrying {
                attempt,
                delay_ms,
                reason,
            };
            emit(
                fx,
                turn_id,
                AgentMessage::System(SystemEvent::new(message, &retrying)),
            );
            None
        }
        ModelEvent::Finished { finish_reason } => {
            let partial = std::mem::take(partial);
            finish_model_call(state, request_id, partial, finish_reason, now_ms, fx);
            return;
        }
    };
    if let Some(delta) = delta.filter(|_| include_partial) {
        emit(
            fx,
            turn_id,
            AgentMessage::StreamEvent(StreamEvent { event: delta }),
        );
    }
}

/// The model's message is complete: record it, then run its tool calls or
/// end the turn.
fn finish_model_call(
    state: &mut SessionState,
    request_id: u64,
    partial: PartialMessage,
    finish_reason: String,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let assembled = partial.finish(|index| format!("call_{request_id}_{index}"));
    let model = state.model.clone();
    let usage = partial.usage;
    let counted = state.turn.as_ref().and_then(|t| t.call.counted.clone());
    let reported =
        usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
    if let Some(counted) = counted.filter(|_| reported > 0) {
        state.context.ledger.observe(counted, reported);
    }
    if reported > 0 {
        context::learn_accepted(state, &model, reported);
    }
    let used = if reported > 0 {
        reported + usage.output_tokens
    } else {
        context::tokens_after(state) + state.context.ledger.text_tokens(&assembled.text())
    };
    state.context.last = Some(ContextUsage {
        used,
        limit: context::limit(state),
    });
    let context_usage = state.context.last;
    let Some(turn) = state.turn.as_mut() else {
        return;
    };
    turn.call = CallAttempt::default();
    record_assistant(
        &mut state.history,
        turn,
        &model,
        &assembled,
        (usage, context_usage),
        finish_reason,
        false,
        fx,
    );
    state.usage.model_calls += 1;

    if assembled.calls.is_empty() {
        if !stop_hooks(state, fx) {
            end_turn(state, StopReason::EndTurn, None, now_ms, fx);
        }
        return;
    }
    let batch_id = state.take_request_id();
    let turn_id = state.turn.as_ref().map_or(0, |t| t.id);
    let mut pending = Vec::new();
    let mut runnable = Vec::new();
    for call in assembled.calls {
        let (mut outcome, mut waiting) = (None, None);
        match call.input {
            Ok(input) => {
                let tool_call = ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input,
                };
                if hooks::any(&state.config.hooks, HookEvent::PreToolUse, Some(&call.name)) {
                    pre_tool_hooks(state, batch_id, tool_call, fx);
                } else {
                    match admit(state, turn_id, tool_call, None, fx) {
                        Admitted::Runs(granted) => runnable.push(granted),
                        Admitted::Denied(denied) => outcome = Some(denied),
                        Admitted::Waits(asked) => waiting = Some(asked),
                        Admitted::Answered(answer, allowed) => {
                            allow_for_turn(state, allowed);
                            outcome = Some(answer);
                        }
                    }
                }
            }
            Err(reason) => {
                outcome = Some(ToolOutcome::error(format!(
                    "{reason}. Call {} again with a JSON object of arguments.",
                    call.name
                )))
            }
        }
        pending.push(PendingCall {
            id: call.id,
            name: call.name,
            outcome,
            recorded: false,
            waiting,
            checkpoint: None,
        });
    }
    if let Some(turn) = state.turn.as_mut() {
        turn.phase = Phase::RunningTools {
            batch_id,
            calls: pending,
        };
    }
    if !runnable.is_empty() {
        fx.push(Effect::RunTools {
            batch_id,
            calls: runnable,
        });
    }
    record_finished_results(state, fx);
    continue_after_tools(state, now_ms, fx);
}

/// What the permission check made of a call.
enum Admitted {
    Runs(GrantedCall),
    Denied(ToolOutcome),
    Waits(Waiting),
    /// Answered by the core itself (`todo_write`, `skill`), with allow
    /// rules for the rest of the turn (a skill's `allowed-tools`).
    Answered(ToolOutcome, Vec<crate::permissions::Rule>),
}

/// Check `call` against the mode and the rules; a call that must ask
/// emits its `approval_request` (and its timer, when requests time out).
/// `hook`: what `PreToolUse` hooks decided (`allow` skips the mode's
/// question but not a deny rule; `ask` asks whatever the mode says).
fn admit(
    state: &mut SessionState,
    turn_id: InputId,
    call: ToolCall,
    hook: Option<(HookDecision, Option<String>)>,
    fx: &mut Vec<Effect>,
) -> Admitted {
    let given = state.plan_tool_given();
    if let Some(answered) = super::plan::answer(&mut state.plan, given, turn_id, &call, fx) {
        return Admitted::Answered(answered, Vec::new());
    }
    if call.name == super::agents::TASK_TOOL && state.config.task_tool {
        // The child session asks for what it does itself (its approvals
        // reach this session's front ends); starting it asks nothing.
        if super::agents::allows(state.current_agent(), &call.name) {
            return Admitted::Runs(GrantedCall {
                call,
                grant: Default::default(),
            });
        }
    }
    if call.name == super::skills::SKILL_TOOL && state.skill_tool() {
        let (answer, allowed) = state.config.skills.answer(&call.input);
        return Admitted::Answered(answer, allowed);
    }
    if !super::agents::allows(state.current_agent(), &call.name) {
        return Admitted::Denied(ToolOutcome::error(format!(
            "Not run: the agent `{}` is not given the tool {}. Use the tools offered.",
            state.agent, call.name
        )));
    }
    // A model calls only what it was offered: a made-up name, or a tool
    // the session keeps for itself (`read_image`), is never run.
    let offered = state.offered_tools();
    if !offered.iter().any(|tool| tool.name == call.name) {
        let names: Vec<&str> = offered.iter().map(|tool| tool.name.as_str()).collect();
        return Admitted::Denied(ToolOutcome::error(format!(
            "unknown tool `{}`; the available tools are: {}",
            call.name,
            names.join(", ")
        )));
    }
    let verdict = policy::decide(
        &state.config.permissions,
        &state.permissions,
        std::path::Path::new(&state.config.workspace),
        &call.name,
        &call.input,
    );
    let verdict = match (hook, verdict) {
        (Some((HookDecision::Allow, _)), Verdict::Ask(asking)) => Verdict::Run(asking.grant),
        (Some((HookDecision::Ask, reason)), Verdict::Run(grant)) => Verdict::Ask(policy::Asking {
            reason: hook_asks(reason),
            grant,
            always: None,
            mode: None,
        }),
        (Some((HookDecision::Ask, reason)), Verdict::Ask(mut asking)) => {
            asking.reason = hook_asks(reason);
            Verdict::Ask(asking)
        }
        (_, verdict) => verdict,
    };
    match verdict {
        Verdict::Run(grant) => Admitted::Runs(GrantedCall { call, grant }),
        Verdict::Deny(why) => Admitted::Denied(ToolOutcome::error(why)),
        Verdict::Ask(asking) => {
            let request_id = format!("t{turn_id}-{}", call.id);
            emit(
                fx,
                Some(turn_id),
                approval::request_event(&request_id, &call, &asking),
            );
            if let Some(after_ms) = state.config.permissions.approval_timeout_ms {
                fx.push(Effect::ApprovalTimer {
                    request_id: request_id.clone(),
                    after_ms,
                });
            }
            Admitted::Waits(Waiting {
                request_id,
                call: GrantedCall {
                    call,
                    grant: asking.grant,
                },
                always: asking.always,
            })
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn record_assistant(
    history: &mut Vec<Message>,
    turn: &mut Turn,
    model: &str,
    message: &AssembledMessage,
    (usage, context): (crate::protocol::Usage, Option<ContextUsage>),
    finish_reason: String,
    interrupted: bool,
    fx: &mut Vec<Effect>,
) {
    turn.steps += 1;
    turn.usage += usage;
    let text = message.text();
    if !text.is_empty() {
        turn.last_text = text;
    }
    history.push(Message::Assistant {
        content: message.content.clone(),
        interrupted,
    });
    emit(
        fx,
        Some(turn.id),
        AgentMessage::Assistant(AssistantEvent {
            content: message.content.clone(),
            model: model.to_string(),
            usage,
            finish_reason,
            interrupted,
            context,
        }),
    );
}

/// A skill's `allowed-tools` hold from its loading to the end of the turn
/// (the later calls of this reply included).
fn allow_for_turn(state: &mut SessionState, allowed: Vec<crate::permissions::Rule>) {
    for rule in allowed {
        if !state.permissions.for_turn.contains(&rule) {
            state.permissions.for_turn.push(rule);
        }
    }
}

/// Why an approval asks when a hook made it ask.
fn hook_asks(reason: Option<String>) -> String {
    match reason {
        Some(reason) => format!("a PreToolUse hook asks: {reason}"),
        None => "a PreToolUse hook asks for this call".to_string(),
    }
}

/// Call `call` of batch `batch_id` waits for its `PreToolUse` hooks.
fn pre_tool_hooks(state: &mut SessionState, batch_id: u64, call: ToolCall, fx: &mut Vec<Effect>) {
    let hook_id = state.take_request_id();
    fx.push(Effect::RunHook {
        hook_id,
        event: HookEvent::PreToolUse,
        tool: Some(call.name.clone()),
        fields: {
            let mut fields = hooks::tool_fields(&call.name, &call.input, &state.config.workspace);
            fields.insert("tool_use_id".into(), call.id.clone().into());
            fields
        },
    });
    state
        .hooks
        .waiting
        .insert(hook_id, HookWait::PreToolUse { batch_id, call });
}

/// `SessionStart` hooks run before the first query.
fn session_start_hooks(state: &mut SessionState, resumed: bool, fx: &mut Vec<Effect>) {
    let source = if resumed { "resume" } else { "startup" };
    if !hooks::any(&state.config.hooks, HookEvent::SessionStart, Some(source)) {
        return;
    }
    let hook_id = state.take_request_id();
    let mut fields = serde_json::Map::new();
    fields.insert("source".into(), source.into());
    fx.push(Effect::RunHook {
        hook_id,
        event: HookEvent::SessionStart,
        tool: None,
        fields,
    });
    state.hooks.starting = true;
    state.hooks.waiting.insert(hook_id, HookWait::SessionStart);
}

/// The model ended its answer: when `Stop` hooks (a sub-agent's:
/// `SubagentStop`) run, the turn waits for them. Returns whether it does.
fn stop_hooks(state: &mut SessionState, fx: &mut Vec<Effect>) -> bool {
    /// The most times hooks may send the model back within one turn.
    const MAX_CONTINUATIONS: u32 = 8;
    let event = if state.config.task_tool {
        HookEvent::Stop
    } else {
        HookEvent::SubagentStop
    };
    let Some(turn) = state.turn.as_ref() else {
        return false;
    };
    if turn.stop_continuations >= MAX_CONTINUATIONS || !hooks::any(&state.config.hooks, event, None)
    {
        return false;
    }
    let (turn_id, active, last) = (turn.id, turn.stop_continuations > 0, turn.last_text.clone());
    let hook_id = state.take_request_id();
    let mut fields = serde_json::Map::new();
    fields.insert("stop_hook_active".into(), active.into());
    fields.insert("last_assistant_message".into(), last.into());
    fx.push(Effect::RunHook {
        hook_id,
        event,
        tool: None,
        fields,
    });
    state
        .hooks
        .waiting
        .insert(hook_id, HookWait::Stop { turn_id });
    if let Some(turn) = state.turn.as_mut() {
        turn.phase = Phase::StopHook { hook_id };
    }
    true
}

/// The hooks of run `hook_id` answered.
fn on_hook_done(
    state: &mut SessionState,
    hook_id: u64,
    answer: HookAnswer,
    ran: Vec<crate::protocol::hook::HookRan>,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(wait) = state.hooks.waiting.remove(&hook_id) else {
        return;
    };
    let turn_id = match &wait {
        HookWait::PreToolUse { .. } | HookWait::SessionStart => state.turn.as_ref().map(|t| t.id),
        HookWait::Prompt { turn_id } | HookWait::Stop { turn_id } => Some(*turn_id),
    };
    for ran in &ran {
        emit(fx, turn_id, hooks::ran_event(ran));
    }
    match wait {
        HookWait::SessionStart => {
            state.hooks.starting = false;
            state.hooks.session_context = answer.context;
        }
        HookWait::PreToolUse { batch_id, call } => {
            on_pre_tool_answer(state, batch_id, call, answer, now_ms, fx)
        }
        HookWait::Prompt { turn_id } => {
            on_prompt_answer(state, turn_id, hook_id, answer, now_ms, fx)
        }
        HookWait::Stop { turn_id } => on_stop_answer(state, turn_id, hook_id, answer, now_ms, fx),
    }
}

/// A call's `PreToolUse` hooks answered: it is checked (with what they
/// decided) and runs, asks or is refused, in its place in the batch.
fn on_pre_tool_answer(
    state: &mut SessionState,
    batch_id: u64,
    mut call: ToolCall,
    answer: HookAnswer,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(turn) = state.turn.as_ref() else {
        return;
    };
    let turn_id = turn.id;
    let still_waits = matches!(&turn.phase, Phase::RunningTools { batch_id: b, calls }
        if *b == batch_id && calls.iter().any(|c| c.id == call.id && c.outcome.is_none() && c.waiting.is_none()));
    if !still_waits {
        return;
    }
    if let Some(input) = answer.updated_input {
        call.input = hooks::tool_input_from_hook(&call.name, input);
    }
    let call_id = call.id.clone();
    let admitted = match answer.decision {
        Some(HookDecision::Deny | HookDecision::Block) => {
            Admitted::Denied(ToolOutcome::error(format!(
                "Blocked by a PreToolUse hook: {}",
                answer
                    .reason
                    .unwrap_or_else(|| "no reason given".to_string())
            )))
        }
        Some(decision) => admit(state, turn_id, call, Some((decision, answer.reason)), fx),
        None => admit(state, turn_id, call, None, fx),
    };
    let Some(Turn {
        phase: Phase::RunningTools { calls, .. },
        ..
    }) = state.turn.as_mut()
    else {
        return;
    };
    let Some(pending) = calls.iter_mut().find(|c| c.id == call_id) else {
        return;
    };
    match admitted {
        Admitted::Runs(granted) => fx.push(Effect::RunTools {
            batch_id,
            calls: vec![granted],
        }),
        Admitted::Denied(denied) => pending.outcome = Some(denied),
        Admitted::Waits(asked) => pending.waiting = Some(asked),
        Admitted::Answered(answer, allowed) => {
            pending.outcome = Some(answer);
            allow_for_turn(state, allowed);
        }
    }
    record_finished_results(state, fx);
    continue_after_tools(state, now_ms, fx);
}

/// A query's `UserPromptSubmit` hooks answered: it is refused (never
/// entering the history), or goes on with what they added.
fn on_prompt_answer(
    state: &mut SessionState,
    turn_id: InputId,
    hook_id: u64,
    answer: HookAnswer,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let waiting = state.turn.as_ref().is_some_and(|t| {
        t.id == turn_id && matches!(&t.phase, Phase::PromptHook(p) if p.hook_id == hook_id)
    });
    if !waiting {
        return;
    }
    let Some(Turn {
        phase: Phase::PromptHook(prompt),
        ..
    }) = state.turn.take()
    else {
        return;
    };
    let blocked = matches!(
        answer.decision,
        Some(HookDecision::Block | HookDecision::Deny)
    );
    if blocked || answer.stop.is_some() {
        let why = answer
            .reason
            .filter(|_| blocked)
            .or(answer.stop)
            .unwrap_or_else(|| "no reason given".to_string());
        let error = format!("Not sent: a UserPromptSubmit hook blocked this query: {why}");
        emit(
            fx,
            Some(turn_id),
            AgentMessage::Result(ResultEvent {
                stop_reason: StopReason::Error,
                text: String::new(),
                usage: Default::default(),
                steps: 0,
                duration_ms: 0,
                error: Some(error),
                context: state.context.last,
            }),
        );
        return;
    }
    let PromptHook {
        mut user,
        run_as,
        typed,
        ..
    } = *prompt;
    if !answer.context.is_empty() {
        let with = format!(
            "{}\n\n<user-prompt-submit-hook>\n{}\n</user-prompt-submit-hook>",
            user.model_text(),
            answer.context.join("\n")
        );
        user.prompt = Some(with);
    }
    submit_query(state, turn_id, user, run_as, typed, now_ms, fx);
}

/// A turn's `Stop` hooks answered: the turn ends, or (a hook blocked the
/// stop) the model reads why and goes on.
fn on_stop_answer(
    state: &mut SessionState,
    turn_id: InputId,
    hook_id: u64,
    answer: HookAnswer,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let max_steps = state.max_steps();
    let Some(turn) = state.turn.as_mut().filter(|t| {
        t.id == turn_id && matches!(t.phase, Phase::StopHook { hook_id: h } if h == hook_id)
    }) else {
        return;
    };
    let blocked = matches!(answer.decision, Some(HookDecision::Block))
        && answer.stop.is_none()
        && turn.steps < max_steps;
    if !blocked {
        end_turn(state, StopReason::EndTurn, None, now_ms, fx);
        return;
    }
    turn.stop_continuations += 1;
    let event = if state.config.task_tool {
        HookEvent::Stop
    } else {
        HookEvent::SubagentStop
    };
    let reason = answer.reason.unwrap_or_default();
    state.history.push(Message::User {
        text: crate::protocol::hook::feedback_text(event, &reason),
        images: Vec::new(),
    });
    let continued = crate::protocol::hook::HookContinued { event, reason };
    let message = format!(
        "A {event} hook sent the model back to work: {}",
        continued.reason
    );
    emit(
        fx,
        Some(turn_id),
        AgentMessage::System(SystemEvent::new(message, &continued)),
    );
    call_model(state, now_ms, fx);
}

fn on_tool_finished(
    state: &mut SessionState,
    batch_id: u64,
    call_id: &str,
    (outcome, checkpoint): (ToolOutcome, Option<CheckpointRef>),
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    if state
        .turn
        .as_ref()
        .is_some_and(|t| matches!(t.phase, Phase::Attaching(_)))
    {
        on_attach_finished(state, batch_id, call_id, outcome, now_ms, fx);
        return;
    }
    let Some(Turn {
        id,
        phase: Phase::RunningTools {
            batch_id: current, ..
        },
        ..
    }) = state.turn.as_ref()
    else {
        return;
    };
    if *current != batch_id {
        return;
    }
    let turn_id = Some(*id);
    let mut limit = None;
    if let Some(Turn {
        phase: Phase::RunningTools { calls, .. },
        ..
    }) = state.turn.as_mut()
        && let Some(call) = calls
            .iter_mut()
            .find(|c| c.id == call_id && c.outcome.is_none())
    {
        call.outcome = Some(outcome);
        if let Some(kept) = checkpoint {
            state.checkpoints.count(&kept);
            if !state.checkpoints.limit_said {
                limit = kept.limited.clone();
            }
            // Only a checkpoint that kept something is named on the event.
            call.checkpoint = (!kept.files.is_empty()).then_some(kept);
        }
    }
    if let Some(limit) = limit {
        state.checkpoints.limit_said = true;
        emit(
            fx,
            turn_id,
            notice(format!(
                "Checkpoints: {limit}. A rewind cannot restore what was not recorded; raise the limits under [checkpoints] to record more."
            )),
        );
    }
    record_finished_results(state, fx);
    continue_after_tools(state, now_ms, fx);
}

/// A child session of a `task` call of the running batch started or
/// ended: say so on this session's stream; a finished child's usage counts
/// in this turn's.
fn on_subagent(
    state: &mut SessionState,
    batch_id: u64,
    update: super::input::SubagentUpdate,
    fx: &mut Vec<Effect>,
) {
    let running = state.turn.as_ref().is_some_and(
        |t| matches!(&t.phase, Phase::RunningTools { batch_id: current, .. } if *current == batch_id),
    );
    let turn_id = state.turn.as_ref().map(|t| t.id);
    let event = match update {
        super::input::SubagentUpdate::Approval {
            child,
            agent,
            mut request,
        } => {
            request.request_id = format!("{child}/{}", request.request_id);
            request.reason = format!("agent {agent} (session {child}): {}", request.reason);
            request.child_session = Some(child);
            emit(fx, turn_id, AgentMessage::ApprovalRequest(request));
            return;
        }
        super::input::SubagentUpdate::Resolved { child, event } => {
            let Some(mut resolved) = event.payload::<crate::protocol::ApprovalResolved>() else {
                return;
            };
            resolved.request_id = format!("{child}/{}", resolved.request_id);
            resolved.child_session = Some(child);
            SystemEvent::new(event.message, &resolved)
        }
        super::input::SubagentUpdate::Started(started) => SystemEvent::new(
            format!(
                "Agent {} started on \"{}\" in session {} (task call {}).",
                started.agent, started.description, started.child, started.call_id
            ),
            &started,
        ),
        super::input::SubagentUpdate::Finished(finished) => {
            if let Some(turn) = state.turn.as_mut().filter(|_| running) {
                turn.usage += finished.usage;
            } else {
                // The turn moved on (interrupted): the tokens were still
                // spent.
                state.usage.total += finished.usage;
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
    emit(fx, turn_id, AgentMessage::System(event));
}

/// An approval request is settled: tell everyone, run the call if it was
/// allowed, and go on when the batch is complete.
fn on_settle(
    state: &mut SessionState,
    request_id: &str,
    how: Settle,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(settled) = approval::settle(state, request_id, how) else {
        return;
    };
    emit(fx, Some(settled.turn_id), settled.event);
    if let Some(rule) = settled.save {
        fx.push(Effect::SaveRule { rule });
    }
    if let Some(call) = settled.run {
        fx.push(Effect::RunTools {
            batch_id: settled.batch_id,
            calls: vec![call],
        });
    }
    record_finished_results(state, fx);
    continue_after_tools(state, now_ms, fx);
}

/// Emit and record the results that are ready, in call order: a finished
/// call waits for the calls before it.
fn record_finished_results(state: &mut SessionState, fx: &mut Vec<Effect>) {
    let Some(Turn {
        id,
        phase: Phase::RunningTools { calls, .. },
        ..
    }) = state.turn.as_mut()
    else {
        return;
    };
    for call in calls.iter_mut().filter(|c| !c.recorded) {
        let Some(outcome) = &call.outcome else { break };
        record_tool_result(&mut state.history, *id, call, outcome.clone(), false, fx);
    }
}

fn record_tool_result(
    history: &mut Vec<Message>,
    turn_id: InputId,
    call: &mut PendingCall,
    outcome: ToolOutcome,
    cancelled: bool,
    fx: &mut Vec<Effect>,
) {
    call.recorded = true;
    push_tool_result(
        history,
        turn_id,
        (call.id.clone(), call.name.clone()),
        (outcome, call.checkpoint.take()),
        cancelled,
        fx,
    );
}

/// A tool call's result into the history and out as a `tool_result` event.
pub(super) fn push_tool_result(
    history: &mut Vec<Message>,
    turn_id: InputId,
    (call_id, name): (String, String),
    (outcome, checkpoint): (ToolOutcome, Option<CheckpointRef>),
    cancelled: bool,
    fx: &mut Vec<Effect>,
) {
    history.push(Message::ToolResult {
        call_id: call_id.clone(),
        name: name.clone(),
        output: outcome.output.clone(),
        is_error: outcome.is_error,
    });
    emit(
        fx,
        Some(turn_id),
        AgentMessage::ToolResult(ToolResultEvent {
            call_id,
            name,
            is_error: outcome.is_error,
            output: outcome.output,
            duration_ms: outcome.duration_ms,
            cancelled,
            checkpoint,
        }),
    );
}

/// When every call of the batch is recorded: call the model again, or stop
/// at `max_steps`.
fn continue_after_tools(state: &mut SessionState, now_ms: u64, fx: &mut Vec<Effect>) {
    let Some(turn) = state.turn.as_ref() else {
        return;
    };
    let Phase::RunningTools { calls, .. } = &turn.phase else {
        return;
    };
    if !calls.iter().all(|c| c.recorded) {
        return;
    }
    if turn.steps >= state.max_steps() {
        end_turn(state, StopReason::MaxSteps, None, now_ms, fx);
    } else {
        call_model(state, now_ms, fx);
    }
}

/// Answer every input not yet answered: a session command still running
/// on its task gets a notice (its late reply would reach a stopped
/// session), and every queued input is answered without running it — a
/// query with its one `result` (cancelled), a command with a notice.
fn shut_down_queue(state: &mut SessionState, fx: &mut Vec<Effect>) {
    const REASON: &str = "agentbus shut down before this ran";
    if let Some(input_id) = state.pending_command.take() {
        let notice =
            "agentbus shut down before this command answered (it may still have taken effect)";
        emit(fx, Some(input_id), self::notice(notice));
    }
    for QueuedInput { input_id, input } in state.queue.drain(..) {
        let message = match input {
            UserInput::Query { .. } | UserInput::Prompt { .. } => {
                AgentMessage::Result(ResultEvent {
                    stop_reason: StopReason::Cancelled,
                    text: String::new(),
                    usage: Default::default(),
                    steps: 0,
                    duration_ms: 0,
                    error: Some(REASON.into()),
                    context: None,
                })
            }
            UserInput::Control { .. } => notice(REASON),
        };
        emit(fx, Some(input_id), message);
    }
}

/// Cancel the running turn, keeping the history valid: the part of the
/// message that streamed is kept (marked interrupted) and every tool call
/// without a result gets a cancelled one.
fn interrupt(state: &mut SessionState, now_ms: u64, fx: &mut Vec<Effect>) {
    if let Some(call) = state.compacting.take() {
        fx.push(Effect::CancelModel {
            request_id: call.request_id,
        });
        if state.pending_command == Some(call.input_id) {
            state.pending_command = None;
            emit(
                fx,
                Some(call.input_id),
                notice("Compaction interrupted; the conversation is unchanged."),
            );
        }
    }
    for request_id in approval::waiting(state) {
        if let Some(settled) = approval::settle(state, &request_id, Settle::Cancelled) {
            emit(fx, Some(settled.turn_id), settled.event);
        }
    }
    if state
        .turn
        .as_ref()
        .is_some_and(|t| matches!(t.phase, Phase::Attaching(_)))
    {
        finish_attaching(state, true, now_ms, fx);
        return;
    }
    let model = state.model.clone();
    let Some(turn) = state.turn.as_mut() else {
        return;
    };
    let turn_id = turn.id;
    match &mut turn.phase {
        Phase::Streaming {
            request_id,
            partial,
        } => {
            let request_id = *request_id;
            fx.push(Effect::CancelModel { request_id });
            if !partial.is_empty() {
                let assembled = partial.finish(|index| format!("call_{request_id}_{index}"));
                let usage = partial.usage;
                record_assistant(
                    &mut state.history,
                    turn,
                    &model,
                    &assembled,
                    (usage, None),
                    "interrupted".into(),
                    true,
                    fx,
                );
                state.usage.model_calls += 1;
                for call in assembled.calls {
                    push_tool_result(
                        &mut state.history,
                        turn_id,
                        (call.id, call.name),
                        (cancelled_outcome(), None),
                        true,
                        fx,
                    );
                }
            }
        }
        Phase::RunningTools { batch_id, calls } => {
            fx.push(Effect::CancelTools {
                batch_id: *batch_id,
            });
            for call in calls.iter_mut().filter(|c| !c.recorded) {
                let (outcome, cancelled) = match call.outcome.clone() {
                    Some(done) => (done, false),
                    None => (cancelled_outcome(), true),
                };
                record_tool_result(&mut state.history, turn_id, call, outcome, cancelled, fx);
            }
        }
        Phase::Compacting
        | Phase::WaitingForMcp
        | Phase::Attaching(_)
        | Phase::PromptHook(_)
        | Phase::StopHook { .. } => {}
    }
    end_turn(state, StopReason::Cancelled, None, now_ms, fx);
}

fn cancelled_outcome() -> ToolOutcome {
    ToolOutcome::error(format!(
        "{} before this tool call finished",
        crate::model::INTERRUPTED
    ))
}

fn on_model_failed(
    state: &mut SessionState,
    request_id: u64,
    error: String,
    too_long: Option<ContextRefusal>,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    if let Some(call) = state.compacting.take_if(|c| c.request_id == request_id) {
        // Too long itself: learn the window, and quote less, once.
        let shorter = too_long.filter(|_| !call.shortened).and_then(|refusal| {
            let window_only = ContextRefusal {
                input_tokens: None,
                ..refusal
            };
            context::learn_refusal(state, &call.profile, &window_only, None);
            let cap = match (refusal.input_tokens, refusal.input_budget(0)) {
                (Some(counted), Some(budget)) if counted > 0 => {
                    call.quoted_tokens.saturating_mul(budget) / counted * 8 / 10
                }
                _ => call.quoted_tokens * 6 / 10,
            };
            context::plan_compaction(state, call.focus.as_deref(), Some(cap))
        });
        match shorter {
            Some(plan) => {
                start_compaction(state, call.input_id, call.trigger, plan, true, fx);
            }
            None => compaction_failed(state, call, &error, now_ms, fx),
        }
        return;
    }
    let include_partial = state.config.include_partial_messages;
    let Some(turn) = state.turn.as_ref() else {
        return;
    };
    let Phase::Streaming {
        request_id: current,
        partial,
    } = &turn.phase
    else {
        return;
    };
    if *current != request_id {
        return;
    }
    let turn_id = Some(turn.id);
    if include_partial && !partial.is_empty() {
        emit(
            fx,
            turn_id,
            AgentMessage::StreamEvent(StreamEvent {
                event: StreamDelta::Discard {
                    reason: "the model call failed".into(),
                },
            }),
        );
    }
    if let Some(refusal) = too_long {
        if !turn.call.retried_overflow {
            retry_shorter(state, &error, &refusal, now_ms, fx);
            return;
        }
        // The retry was refused too: what it said still counts for the
        // next turn.
        let (model, counted) = (state.model.clone(), turn.call.counted.clone());
        context::learn_refusal(state, &model, &refusal, counted);
    }
    emit(
        fx,
        turn_id,
        AgentMessage::Error(ErrorEvent {
            kind: ErrorKind::Provider,
            message: error.clone(),
        }),
    );
    end_turn(state, StopReason::Error, Some(error), now_ms, fx);
}

/// The provider refused the request as too long: learn what it said (its
/// count and its window win over our estimates), then plan the call again —
/// compacting first when the older turns are worth it and no compaction ran
/// for this call — and try exactly once more. A refusal that says nothing
/// makes every estimate count higher, and the window smaller than our count
/// of the refused request.
fn retry_shorter(
    state: &mut SessionState,
    error: &str,
    refusal: &ContextRefusal,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(turn) = state.turn.as_mut() else {
        return;
    };
    turn.call.retried_overflow = true;
    let (turn_id, counted) = (turn.id, turn.call.counted.clone());
    let model = state.model.clone();
    if !context::learn_refusal(state, &model, refusal, counted) {
        state.context.ledger.distrust();
    }
    emit(
        fx,
        Some(turn_id),
        notice(format!(
            "The provider refused the request as too long ({error}); shortening the model's view and trying once more."
        )),
    );
    call_model_after(state, CompactionTrigger::Overflow, now_ms, fx);
}

fn end_turn(
    state: &mut SessionState,
    stop_reason: StopReason,
    error: Option<String>,
    now_ms: u64,
    fx: &mut Vec<Effect>,
) {
    let Some(turn) = state.turn.take() else {
        return;
    };
    if let Some(call) = state.compacting.take_if(|c| c.input_id == turn.id) {
        fx.push(Effect::CancelModel {
            request_id: call.request_id,
        });
    }
    state.count_turn(turn.usage);
    if let Some(model) = turn.session_model {
        state.model = model;
    }
    state.permissions.for_turn.clear();
    emit(
        fx,
        Some(turn.id),
        AgentMessage::Result(ResultEvent {
            stop_reason,
            text: turn.last_text,
            usage: turn.usage,
            steps: turn.steps,
            duration_ms: now_ms.saturating_sub(turn.started_at_ms),
            error,
            context: state.context.last,
        }),
    );
}
