//! The queue: inputs accepted in order, control commands applied between
//! turns, a query opening its turn; at shutdown, every queued input answered.

use super::{Step, notice};
use crate::protocol::context::CompactionTrigger;
use crate::protocol::hook::HookEvent;
use crate::protocol::{
    AgentMessage, InputId, Message, ResultEvent, StopReason, SystemEvent, UserEvent, UserInput,
};
use crate::session::core::attach;
use crate::session::core::commands;
use crate::session::core::context;
use crate::session::core::effect::Effect;
use crate::session::core::hooks::{self as hooks, HookWait};
use crate::session::core::mcp_wait;
use crate::session::core::state::{QueuedInput, SessionState};
use crate::session::core::turn::{Phase, PromptHook, RunAs, Turn};

impl Step<'_> {
    /// Queue a query or command. Slash text is parsed here, once, for every
    /// front end; an unknown command is answered at once and never queued.
    pub(super) fn accept(&mut self, input_id: InputId, input: UserInput) {
        self.state.next_input_id = self.state.next_input_id.max(input_id + 1);
        let input = match input {
            UserInput::Query { text, images, by } => {
                match commands::parse_with(&text, &self.state.config.commands) {
                    None => UserInput::Query { text, images, by },
                    Some(Ok(command)) => {
                        if !images.is_empty() {
                            self.fx.emit(
                                Some(input_id),
                                notice(format!(
                                    "Not sent: {} — `{}` is a command, and images go with a query.",
                                    crate::text::count(images.len() as u64, "image"),
                                    text.split_whitespace().next().unwrap_or_default()
                                )),
                            );
                        }
                        UserInput::Control { command, by }
                    }
                    Some(Err(why)) => {
                        self.fx.emit(Some(input_id), notice(why));
                        return;
                    }
                }
            }
            control => control,
        };
        self.state.queue.push_back(QueuedInput { input_id, input });
    }

    /// Start queued inputs while no turn runs: control commands apply at once,
    /// a query starts a turn (and stops the loop until it ends).
    pub(super) fn run_queue(&mut self) {
        while self.state.turn.is_none()
            && self.state.pending_command.is_none()
            && !self.state.hooks.starting
        {
            let Some(QueuedInput { input_id, input }) = self.state.queue.pop_front() else {
                return;
            };
            match input {
                UserInput::Control { command, by } => match commands::apply(&command, self.state) {
                    commands::Applied::Reply(reply) => self.fx.emit(
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
                        self.begin_query(input_id, user, run_as, false)
                    }
                    commands::Applied::NeedsStore(command) => {
                        self.state.pending_command = Some(input_id);
                        self.fx.push(Effect::SessionCommand { input_id, command });
                    }
                    commands::Applied::Compact { focus } => {
                        match context::plan_compaction(self.state, focus.as_deref(), None) {
                        Some(plan) => {
                            self.state.pending_command = Some(input_id);
                            self.start_compaction(input_id,
                                CompactionTrigger::Command,
                                plan,
                                false);
                        }
                        None => self.fx.emit(Some(input_id),
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
                    self.begin_query(input_id, user, RunAs::default(), true)
                }
                UserInput::Prompt { text } => {
                    self.begin_query(input_id, UserEvent::new(text), RunAs::default(), false)
                }
            }
        }
    }

    /// A query's turn begins: its `UserPromptSubmit` hooks first, when it
    /// has some; then (`typed`: as a user typed it) its `@` mentions or
    /// `!command`, or the model.
    pub(super) fn begin_query(&mut self, id: InputId, user: UserEvent, run_as: RunAs, typed: bool) {
        if hooks::any(&self.state.config.hooks, HookEvent::UserPromptSubmit, None) {
            let hook_id = self.state.take_request_id();
            let mut fields = serde_json::Map::new();
            fields.insert("prompt".into(), user.model_text().into());
            self.fx.push(Effect::RunHook {
                hook_id,
                event: HookEvent::UserPromptSubmit,
                tool: None,
                fields,
            });
            self.state
                .hooks
                .waiting
                .insert(hook_id, HookWait::Prompt { turn_id: id });
            let phase = Phase::PromptHook(Box::new(PromptHook {
                hook_id,
                user,
                run_as,
                typed,
            }));
            self.state.turn = Some(Turn::open(id, self.now_ms, phase, None));
            return;
        }
        self.submit_query(id, user, run_as, typed);
    }

    /// The query enters the history and its turn runs.
    pub(super) fn submit_query(
        &mut self,
        id: InputId,
        user: UserEvent,
        run_as: RunAs,
        typed: bool,
    ) {
        match attach::request(&user.text).filter(|_| typed) {
            Some(request) => self.start_attaching(id, user, request),
            None => self.start_turn(id, user, run_as),
        }
    }

    pub(super) fn start_turn(&mut self, id: InputId, user: UserEvent, run_as: RunAs) {
        self.open_turn(id, user, run_as);
        if !mcp_wait::holds(self.state, id, &mut self.fx) {
            self.call_model();
        }
    }

    /// The query enters the history and its turn begins (nothing runs yet).
    pub(super) fn open_turn(&mut self, id: InputId, user: UserEvent, run_as: RunAs) {
        let mut user = user;
        let refused_images = refuse_images(self.state, &mut user);
        self.state.history.push(Message::User {
            text: user.model_text().to_string(),
            images: user.images.clone(),
        });
        self.fx.emit(Some(id), AgentMessage::User(user));
        if let Some(text) = refused_images {
            self.fx.emit(Some(id), notice(text));
        }
        for text in run_as.notices {
            self.fx.emit(Some(id), notice(text));
        }
        let session_model = run_as
            .model
            .filter(|model| *model != self.state.model)
            .map(|model| std::mem::replace(&mut self.state.model, model));
        self.state.permissions.for_turn = run_as.allowed_tools;
        let turn = Turn::open(id, self.now_ms, Phase::Compacting, session_model);
        self.state.turn = Some(turn);
    }

    /// Answer every input not yet answered: a session command still running
    /// on its task gets a notice (its late reply would reach a stopped
    /// session), and every queued input is answered without running it — a
    /// query with its one `result` (cancelled), a command with a notice.
    pub(super) fn shut_down_queue(&mut self) {
        const REASON: &str = "agentbus shut down before this ran";
        if let Some(input_id) = self.state.pending_command.take() {
            let text =
                "agentbus shut down before this command answered (it may still have taken effect)";
            self.fx.emit(Some(input_id), notice(text));
        }
        for QueuedInput { input_id, input } in self.state.queue.drain(..) {
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
            self.fx.emit(Some(input_id), message);
        }
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
pub(super) fn no_images(state: &SessionState) -> Option<String> {
    let info = state.config.models.iter().find(|m| m.name == state.model);
    if info.is_some_and(|m| m.images) {
        return None;
    }
    Some(format!(
        "model profile `{}` does not take images (set `images = true` in `[models.{}]` if the model reads them)",
        state.model, state.model
    ))
}
