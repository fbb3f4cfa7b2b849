//! [`AgentBuilder`]: how an [`Agent`] is put together, and the checks
//! made before it runs anything.

use super::error::AgentError;
use super::provider::Provider;
use super::runner::{Agent, Setup};
use super::tools::ToolBox;
use crate::protocol::PermissionMode;
use crate::protocol::{ContextConfig, ModelInfo};
use crate::provider::ModelClient;
use crate::session::core::SessionConfig;
use crate::session::core::context::custom::{ContextStrategy, CustomStrategy};
use crate::session::permission_setup::permission_config;
use crate::settings::{DEFAULT_COMPACT_PROMPT, ToolSettings};
use crate::tools::Tool;
use crate::tools::builtin::builtin_tools;
use crate::workspace_files::instruction_files;
use std::any::Any;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// `max_steps` when not given (the daemon's default too).
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// The model name requests carry when neither the provider nor the
/// builder names one.
const DEFAULT_MODEL_NAME: &str = "default";

impl Agent {
    /// A builder with agentbus's defaults: no tools, an empty system
    /// prompt, [`DEFAULT_MAX_STEPS`], the default `[context]` rules, the
    /// current directory as workspace.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }
}

/// Puts an [`Agent`] together; [`build`](AgentBuilder::build) checks it.
///
/// ```no_run
/// # async fn demo() -> Result<(), agentbus_engine::embedded::AgentError> {
/// use agentbus_engine::embedded::{Agent, Provider};
/// let agent = Agent::builder()
///     .provider(Provider::openai("http://127.0.0.1:8080/v1", "local")?)
///     .context_window(8192)
///     .system_prompt("You are terse.")
///     .build()?;
/// let state = agent.run("Say hello.").await?;
/// println!("{}", state.final_text().unwrap_or_default());
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct AgentBuilder {
    provider: Option<Arc<dyn ModelClient>>,
    /// A [`Provider`]'s profiles and default profile name.
    provider_models: Vec<ModelInfo>,
    provider_model: Option<String>,
    model: Option<String>,
    info: Option<ModelInfo>,
    context_window: Option<u64>,
    max_output_tokens: Option<u32>,
    system_prompt: String,
    max_steps: Option<u32>,
    include_partial_messages: bool,
    context: ContextConfig,
    custom: Option<CustomStrategy>,
    compact_prompt: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
    workspace: Option<PathBuf>,
    tool_settings: ToolSettings,
    permission_mode: Option<PermissionMode>,
    permission_rules: crate::permissions::Rules,
    /// `false`: the workspace's `AGENTS.md` is not read (default: read).
    project_instructions: Option<bool>,
    user_instructions_dir: Option<PathBuf>,
}

impl AgentBuilder {
    /// The model provider: anything implementing [`ModelClient`] — a
    /// [`Provider`] (the real HTTP providers), a
    /// [`ScriptedProvider`](super::ScriptedProvider), or your own. A
    /// [`Provider`] (or an `Arc` of one) also gives the model's name and
    /// what is known of it (its context window, output cap, prices), unless
    /// [`model`](Self::model) or [`model_info`](Self::model_info) say
    /// otherwise.
    pub fn provider<P: ModelClient>(mut self, provider: P) -> Self {
        let any: &dyn Any = &provider;
        let known = any
            .downcast_ref::<Provider>()
            .or_else(|| any.downcast_ref::<Arc<Provider>>().map(|p| &**p));
        if let Some(known) = known {
            self.provider_models = known.models().to_vec();
            self.provider_model = Some(known.name().to_string());
        } else {
            self.provider_models.clear();
            self.provider_model = None;
        }
        self.provider = Some(Arc::new(provider));
        self
    }

    /// The model provider, already shared.
    pub fn shared_provider(mut self, provider: Arc<dyn ModelClient>) -> Self {
        self.provider_models.clear();
        self.provider_model = None;
        self.provider = Some(provider);
        self
    }

    /// The model profile name requests carry (`ModelRequest::profile`) and
    /// events show (`assistant.model`). A [`Provider`] answers only for its
    /// own profile names.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = Some(name.into());
        self
    }

    /// What is known of the model: its context window, output cap, the
    /// model id (which picks the tokenizer agentbus counts with), prices,
    /// `[context]` overrides. Its `name` is the model name unless
    /// [`model`](Self::model) gives one.
    pub fn model_info(mut self, info: ModelInfo) -> Self {
        self.info = Some(info);
        self
    }

    /// The model's context window in tokens: with it (or
    /// `ContextConfig::max_tokens`) the conversation is kept inside the
    /// window by pruning and compaction.
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The model's cap on output tokens per call (taken from the window
    /// when the budget of a request is worked out).
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// The system prompt (default: none).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// Most model calls one turn may make before it stops with
    /// `stop_reason: max_steps` (default [`DEFAULT_MAX_STEPS`]).
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.max_steps = Some(steps);
        self
    }

    /// Emit `stream_event`s (text as it streams) in
    /// [`AgentRun`](super::AgentRun)s (default false: whole messages only).
    pub fn include_partial_messages(mut self, include: bool) -> Self {
        self.include_partial_messages = include;
        self
    }

    /// The context-window rules (`[context]` in the daemon's configuration):
    /// budget, strategy, when to compact, how many recent turns are always
    /// sent.
    pub fn context(mut self, config: ContextConfig) -> Self {
        self.context = config;
        self
    }

    /// Choose what of the conversation each request carries with your own
    /// strategy — a closure `Fn(&[Message], u64) -> Vec<Message>` (history
    /// after the last summary, token budget) or a [`ContextStrategy`]. It
    /// replaces `ContextConfig::strategy`. Its answer is checked: one that
    /// breaks the pairing of tool calls and results is not sent (the
    /// oldest-first view is, with a notice saying why).
    pub fn context_strategy(mut self, strategy: impl ContextStrategy) -> Self {
        self.custom = Some(CustomStrategy::new(strategy));
        self
    }

    /// The instructions a summary is written with (default: agentbus's).
    pub fn compact_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.compact_prompt = Some(prompt.into());
        self
    }

    /// What runs without asking (default: [`PermissionMode::Bypass`](crate::protocol::PermissionMode::Bypass):
    /// an embedded agent runs the tools it was given, inside the sandbox).
    /// An embedded agent has nobody to ask: a call that would ask is
    /// rejected with a message the model reads.
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.permission_mode = Some(mode);
        self
    }

    /// Allow, ask and deny rules, as in `[permissions]`.
    pub fn permission_rules(mut self, rules: crate::permissions::Rules) -> Self {
        self.permission_rules = rules;
        self
    }

    /// Offer a tool to the model.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Offer a tool that is already shared.
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Offer several shared tools (e.g. an agent's [`tools`](Agent::tools)).
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Offer agentbus's built-in tools (`read_file`, `write_file`,
    /// `edit_file`, `bash`, `list_dir`, `glob`, `grep`) working in
    /// `workspace`, which also becomes the agent's workspace. `bash` runs
    /// any command there: give it only to models you trust with your
    /// machine.
    pub fn builtin_tools(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.tools.extend(builtin_tools());
        self.workspace = Some(workspace.into());
        self
    }

    /// The directory tools work in (relative paths resolve against it;
    /// built-in tools write only inside it). Default: the current
    /// directory.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Whether a workspace given with [`workspace`](Self::workspace) or
    /// [`builtin_tools`](Self::builtin_tools) brings its project
    /// instructions: its `AGENTS.md`, else its `CLAUDE.md`, appended to the
    /// system prompt under a heading naming the file, as in the daemon's
    /// sessions (default true; the current directory, used when no
    /// workspace is given, is never read). A file that cannot be read is a
    /// notice when the conversation starts, not an error.
    pub fn project_instructions(mut self, read: bool) -> Self {
        self.project_instructions = Some(read);
        self
    }

    /// Also append `dir/AGENTS.md`, the user's own instructions, before the
    /// project's (the daemon reads the one in its configuration directory;
    /// an embedded agent reads none unless told where).
    pub fn user_instructions_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.user_instructions_dir = Some(dir.into());
        self
    }

    /// Limits of tool calls: time per call and output size (default as in
    /// the daemon: 900 s, 30,000 bytes).
    pub fn tool_settings(mut self, settings: ToolSettings) -> Self {
        self.tool_settings = settings;
        self
    }

    /// Check the setup and make the agent.
    pub fn build(self) -> Result<Agent, AgentError> {
        let model = self.provider.ok_or(AgentError::NoProvider)?;
        self.context.check().map_err(AgentError::InvalidConfig)?;
        let max_steps = self.max_steps.unwrap_or(DEFAULT_MAX_STEPS);
        if max_steps == 0 {
            return Err(AgentError::InvalidConfig(
                "`max_steps` is 0; a turn needs at least one model call".into(),
            ));
        }
        let read_project = self.workspace.is_some() && self.project_instructions.unwrap_or(true);
        let workspace = match self.workspace {
            Some(dir) => dir,
            None => std::env::current_dir().map_err(|e| AgentError::Workspace {
                path: PathBuf::from("."),
                detail: format!("the current directory cannot be read: {e}"),
            })?,
        };
        let workspace = std::path::absolute(&workspace).map_err(|e| AgentError::Workspace {
            path: workspace.clone(),
            detail: e.to_string(),
        })?;
        if !workspace.is_dir() {
            return Err(AgentError::Workspace {
                path: workspace,
                detail: "it is not a directory".into(),
            });
        }
        let name = self
            .model
            .or_else(|| self.info.as_ref().map(|i| i.name.clone()))
            .or(self.provider_model)
            .unwrap_or_else(|| DEFAULT_MODEL_NAME.to_string());
        let mut models = self.provider_models;
        let position = models.iter().position(|m| m.name == name);
        let mut info = self
            .info
            .or_else(|| position.map(|at| models.remove(at)))
            .unwrap_or_else(|| ModelInfo {
                name: name.clone(),
                provider: "custom".into(),
                model: name.clone(),
                base_url: String::new(),
                context_window: None,
                max_output_tokens: None,
                context: None,
                pricing: None,
                key_missing: None,
                images: false,
            });
        models.retain(|m| m.name != name);
        info.name = name.clone();
        if let Some(window) = self.context_window {
            info.context_window = Some(window);
        }
        if let Some(cap) = self.max_output_tokens {
            info.max_output_tokens = Some(cap);
        }
        models.insert(0, info);
        // An embedded agent runs the tools it was given (in the sandbox).
        let permissions = permission_config(
            self.permission_mode.unwrap_or(PermissionMode::Bypass),
            self.permission_rules,
            None,
            &workspace,
            &self.tool_settings.sandbox,
        );
        let tools = ToolBox::new(self.tools, self.tool_settings, workspace.clone())
            .map_err(|name| AgentError::DuplicateTool { name })?;
        let instructions = instruction_files::read(
            self.user_instructions_dir.as_deref(),
            read_project.then_some(workspace.as_path()),
        );
        let config = SessionConfig {
            system_prompt: self.system_prompt,
            tool_prompts: String::new(),
            agents: Default::default(),
            commands: Default::default(),
            skills: Default::default(),
            task_tool: false,
            plan_tool: false,
            instructions,
            max_steps,
            include_partial_messages: self.include_partial_messages,
            models: models.into(),
            workspace: workspace.display().to_string(),
            context: self.context,
            compact_prompt: self
                .compact_prompt
                .unwrap_or_else(|| DEFAULT_COMPACT_PROMPT.to_string()),
            permissions,
            // An embedded agent has no MCP servers: none is ever on its
            // first start, so nothing waits (the driver would not either).
            mcp_first_turn_wait_ms: crate::settings::McpSettings::default().first_turn_wait_ms(),
            hooks: Default::default(),
        };
        Ok(Agent {
            setup: Arc::new(Setup {
                model,
                model_name: name,
                config,
                tools: Arc::new(tools),
                custom: self.custom,
            }),
        })
    }
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("has_provider", &self.provider.is_some())
            .field("model", &self.model)
            .field("tools", &self.tools.len())
            .field("max_steps", &self.max_steps)
            .field("context", &self.context)
            .field("workspace", &self.workspace)
            .finish()
    }
}
