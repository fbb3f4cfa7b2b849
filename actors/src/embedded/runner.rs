//! [`Agent`]: a configured model, tools and rules, and the conversations
//! it runs.

use super::driver::{Driver, now_ms};
use super::error::AgentError;
use super::run::AgentRun;
use super::state::{AgentState, Unfinished};
use super::tools::ToolBox;
use crate::protocol::{SessionId, UserInput};
use crate::provider::ModelClient;
use crate::session::core::context::custom::CustomStrategy;
use crate::session::core::{SessionConfig, SessionState};
use crate::tools::Tool;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// An LLM agent: a model provider, tools, a system prompt and the rules of
/// the context window, running conversations with agentbus's session core
/// — the same rules as the daemon (tool calls always paired with results,
/// `max_steps`, pruning and compaction) without its actors or its store.
///
/// Build one with [`Agent::builder`]. Cheap to clone; one agent may run
/// many conversations at once (each call works on its own
/// [`AgentState`]).
#[derive(Clone)]
pub struct Agent {
    pub(super) setup: Arc<Setup>,
}

/// What an agent is made of (built by the builder).
pub(super) struct Setup {
    pub(super) model: Arc<dyn ModelClient>,
    /// The profile name requests carry.
    pub(super) model_name: String,
    pub(super) config: SessionConfig,
    pub(super) tools: Arc<ToolBox>,
    pub(super) custom: Option<CustomStrategy>,
}

impl Agent {
    /// A new, empty conversation (its only event is `session_started`).
    pub fn new_conversation(&self) -> AgentState {
        let setup = &self.setup;
        let mut session = SessionState::new(
            SessionId::new(),
            setup.config.clone(),
            setup.model_name.clone(),
            setup.tools.specs(),
        );
        session.context.custom = setup.custom.clone();
        AgentState::start(session, now_ms())
    }

    /// Run `prompt` as the first turn of a new conversation, to its end.
    ///
    /// `Ok` when the turn ended (its `result`'s stop reason is `end_turn`
    /// or `max_steps`; see [`AgentState::last_result`]);
    /// [`AgentError::TurnFailed`], carrying the conversation, when the
    /// provider failed for good. Text starting with a slash command
    /// (`/context`, `/compact`, ...) is applied as the daemon applies it.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<AgentState, AgentError> {
        self.run_with_events(prompt).finish().await
    }

    /// Like [`run`](Agent::run), as a stream of the turn's events (see
    /// [`AgentRun`]); [`AgentRun::finish`] gives the conversation.
    pub fn run_with_events(&self, prompt: impl Into<String>) -> AgentRun {
        self.drive(self.new_conversation(), prompt.into())
    }

    /// Run `message` as the next turn of the conversation `state` (which is
    /// left as it was) and return the conversation after it.
    ///
    /// The conversation must be finished — its last turn complete or
    /// failed, nothing running, nothing queued — or this is
    /// [`AgentError::TurnNotFinished`] / [`AgentError::InputsQueued`].
    /// The turn runs with this agent's provider, tools, prompt and rules,
    /// whatever the conversation was started with.
    pub async fn continue_conversation(
        &self,
        state: &AgentState,
        message: impl Into<String>,
    ) -> Result<AgentState, AgentError> {
        self.continue_with_events(state, message)?.finish().await
    }

    /// Like [`continue_conversation`](Agent::continue_conversation), as a
    /// stream of the turn's events.
    pub fn continue_with_events(
        &self,
        state: &AgentState,
        message: impl Into<String>,
    ) -> Result<AgentRun, AgentError> {
        check_finished(state)?;
        Ok(self.drive(self.rebind(state.clone()), message.into()))
    }

    /// Run `first` in a new conversation, then each of `follow_ups` as the
    /// next turn: a fold of [`continue_conversation`](Agent::continue_conversation).
    /// Stops at the first turn that fails.
    pub async fn run_multi_turn<I, S>(
        &self,
        first: impl Into<String>,
        follow_ups: I,
    ) -> Result<AgentState, AgentError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut state = self.run(first).await?;
        for message in follow_ups {
            state = self.continue_conversation(&state, message).await?;
        }
        Ok(state)
    }

    /// The tools this agent offers, in the order the model sees them (what
    /// [`AgentState::from_json`] re-binds a saved conversation to).
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        self.setup.tools.tools()
    }

    /// The model profile name its requests carry.
    pub fn model(&self) -> &str {
        &self.setup.model_name
    }

    /// The directory its tools work in.
    pub fn workspace(&self) -> &Path {
        self.setup.tools.workspace()
    }

    fn drive(&self, state: AgentState, text: String) -> AgentRun {
        let setup = &self.setup;
        let driver = Driver::submit(
            state,
            setup.model.clone(),
            setup.tools.clone(),
            UserInput::Query {
                text,
                images: Vec::new(),
                by: None,
            },
        );
        AgentRun::new(driver)
    }

    /// A conversation made to go on with this agent's settings.
    fn rebind(&self, mut state: AgentState) -> AgentState {
        let setup = &self.setup;
        let session = &mut state.session;
        session.config = setup.config.clone();
        // A model switched to with `/model` stays, if this agent knows it.
        if !session
            .config
            .models
            .iter()
            .any(|m| m.name == session.model)
        {
            session.model = setup.model_name.clone();
        }
        session.tools = setup.tools.specs();
        session.context.custom = setup.custom.clone();
        state
    }
}

/// The validation of [`Agent::continue_conversation`].
fn check_finished(state: &AgentState) -> Result<(), AgentError> {
    match state.unfinished() {
        None => Ok(()),
        Some(Unfinished::Running {
            input_id,
            waiting_for,
        }) => Err(AgentError::TurnNotFinished {
            input_id,
            waiting_for,
        }),
        Some(Unfinished::Queued { queued, first }) => {
            Err(AgentError::InputsQueued { queued, first })
        }
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let specs = self.setup.tools.specs();
        let tools: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("Agent")
            .field("model", &self.setup.model_name)
            .field("tools", &tools)
            .field("max_steps", &self.setup.config.max_steps)
            .field("context", &self.setup.config.context)
            .field("custom_strategy", &self.setup.custom)
            .finish()
    }
}
