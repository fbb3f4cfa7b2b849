//! SessionLoader: the state a session's AgentLoop starts from — a fresh one
//! built from the configuration, or a stored one folded from its log.
//!
//! Exists so that the SessionManager can load a stored session on a task of
//! its own (a long log is a database read and a fold through the core)
//! instead of inside its handler, where every other request would wait, and
//! so that a stored conversation can be read without loading it (no lease
//! taken). Holds what every session starts from — the settings, the stored
//! sessions (the store and this process's lease owner), the tool catalog —
//! and is the one place the SessionManager and the Runtime read them from.
//! Reads the workspace's and the user's instruction files (`AGENTS.md`),
//! agent files (`.agentbus/agents`, `.claude/agents`) and command files
//! (`.agentbus/commands`, `.claude/commands`) and skills (`.claude/skills`,
//! `.agents/skills`, `[skills] paths`) for each session it starts,
//! on the blocking pool. Cloned into each
//! load; never starts an actor.

use crate::protocol::system::OwnerChanged;
use crate::protocol::{AgentMessage, EventEnvelope, Message, SessionId, SystemEvent};
use crate::session::SessionError;
use crate::session::core::agents::AgentSet;
use crate::session::core::custom_commands::CustomCommands;
use crate::session::core::instructions::Instructions;
use crate::session::core::skills::Skills;
use crate::session::core::{Effect, SessionConfig, SessionState, restore};
use crate::session::permission_setup::permission_config;
use crate::sessions::stored::StoredSessions;
use crate::settings::Settings;
use crate::store::{AcceptedInput, SessionRecord};
use crate::tools::registry::ToolCatalog;
use crate::workspace_files::agent_files::{self, AgentSources};
use crate::workspace_files::command_files;
use crate::workspace_files::instruction_files;
use crate::workspace_files::skill_files;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::watch;

#[derive(Clone)]
pub struct SessionLoader {
    settings: Arc<Settings>,
    /// The prompts of the enabled MCP servers, appended to every agent's
    /// system prompt.
    tool_prompts: Arc<str>,
    /// The profiles every session offers to `/model`, made once.
    model_infos: Arc<[crate::protocol::ModelInfo]>,
    catalog: watch::Receiver<Arc<ToolCatalog>>,
    stored: StoredSessions,
}

/// What a session reads from its workspace (and the user's folders) when
/// it is created or loaded.
#[derive(Clone, Debug, Default)]
pub struct WorkspaceFiles {
    pub instructions: Instructions,
    pub agents: AgentSet,
    pub commands: CustomCommands,
    /// The hooks it runs (the workspace's only once trusted).
    pub hooks: crate::protocol::hook::HookSet,
    pub skills: Skills,
}

/// A stored session, ready to start: its lease is taken.
pub struct Restored {
    pub state: SessionState,
    /// What the core asks for first (e.g. closing a turn a dead process left
    /// open).
    pub startup: Vec<Effect>,
    /// The seq the session continues after: its last stored event's, or
    /// above it when a dead process may have shown clients more.
    pub last_seq: u64,
    pub workspace: PathBuf,
    /// Inputs accepted and not started when the session last ran; they run
    /// first, in order.
    pub waiting: Vec<AcceptedInput>,
    /// Loaded under a claim of this node (a new epoch, which its
    /// `owner_changed` event opens): on a node of a cluster, every load.
    pub claimed: bool,
    /// A sub-agent's session: its parent and the parent's seq at the
    /// `task` call (its checkpoints are kept under them).
    pub child_of: Option<(crate::protocol::SessionId, u64)>,
}

impl Restored {
    /// A new session: nothing to close, nothing waiting.
    pub fn fresh(state: SessionState, workspace: PathBuf) -> Self {
        Restored {
            state,
            startup: Vec::new(),
            last_seq: 0,
            workspace,
            waiting: Vec::new(),
            claimed: false,
            child_of: None,
        }
    }
}

impl SessionLoader {
    pub fn new(
        settings: Arc<Settings>,
        catalog: watch::Receiver<Arc<ToolCatalog>>,
        stored: StoredSessions,
    ) -> Self {
        SessionLoader {
            tool_prompts: tool_prompts(&settings).into(),
            model_infos: settings.model_infos().into(),
            settings,
            catalog,
            stored,
        }
    }

    pub fn settings(&self) -> &Arc<Settings> {
        &self.settings
    }

    /// The stored sessions (the store, and the owner of the leases this
    /// loader takes).
    pub fn stored(&self) -> &StoredSessions {
        &self.stored
    }

    /// The tool catalog as it changes (what new sessions start with).
    pub fn catalog(&self) -> &watch::Receiver<Arc<ToolCatalog>> {
        &self.catalog
    }

    /// What a session in `workspace` reads from disk, on the blocking
    /// pool: its instruction files (the user's in the configuration
    /// directory, then the workspace's), its named agents (built-in,
    /// configured, then the agent files) and its custom commands (the
    /// command files). What cannot be read is a problem the session shows.
    pub async fn workspace_files(&self, workspace: &Path) -> WorkspaceFiles {
        let settings = self.settings.clone();
        let dir = workspace.to_path_buf();
        let reading = tokio::task::spawn_blocking(move || {
            let config_dir = settings.config_dir.as_deref();
            let home = crate::settings::home_dir();
            let sources = AgentSources {
                configured: &settings.agents,
                profiles: settings.models.keys().cloned().collect(),
                home: home.as_deref(),
                config_dir,
            };
            WorkspaceFiles {
                instructions: instruction_files::read(config_dir, Some(&dir)),
                agents: agent_files::read(&sources, &dir),
                commands: command_files::read(home.as_deref(), config_dir, &dir),
                hooks: {
                    let trust = crate::hooks::trust::file(&settings.data_dir);
                    crate::hooks::files::read(&settings.hooks, home.as_deref(), &dir, |groups| {
                        crate::hooks::trust::is_trusted(&trust, &dir, groups)
                    })
                },
                skills: skill_files::read(home.as_deref(), &settings.skills, &dir),
            }
        });
        reading.await.unwrap_or_else(|e| {
            tracing::warn!(workspace = %workspace.display(), error = %e, "reading the instruction, agent and command files failed");
            WorkspaceFiles {
                instructions: Instructions {
                    files: Vec::new(),
                    problems: vec![format!(
                        "The instruction files of {} were not read: {e}.",
                        workspace.display()
                    )],
                },
                agents: AgentSet::default(),
                commands: CustomCommands::default(),
                hooks: Default::default(),
                skills: Skills::default(),
            }
        })
    }

    /// A state for a new session `id` built from the current configuration
    /// and the `files` read for its workspace.
    pub fn fresh_state(
        &self,
        id: SessionId,
        model: String,
        workspace: &Path,
        files: WorkspaceFiles,
    ) -> SessionState {
        let WorkspaceFiles {
            instructions,
            agents,
            commands,
            hooks,
            skills,
        } = files;
        // Skills are typed as `/NAME` too (a command file's name wins).
        let commands = skills.join_commands(commands, crate::session::core::commands::is_built_in);
        let mut permissions = permission_config(
            self.settings.permissions.mode,
            self.settings.permissions.rules.clone(),
            self.settings.permissions.approval_timeout_secs,
            workspace,
            &self.settings.sandbox,
        );
        // The skills' folders are readable without asking.
        permissions.read_roots = skills.read_roots();
        // `disallowed_tools = ["skill"]`: the model is neither told of the
        // skills nor offered the tool (the user still types `/NAME`).
        let mut skills = skills;
        if self
            .settings
            .disallowed_tools
            .iter()
            .any(|t| t == crate::session::core::skills::SKILL_TOOL)
        {
            skills.skills.clear();
        }
        let config = SessionConfig {
            system_prompt: self.settings.system_prompt.clone(),
            tool_prompts: self.tool_prompts.to_string(),
            agents,
            commands,
            // `disallowed_tools = ["task"]` turns sub-agents off.
            task_tool: !self
                .settings
                .disallowed_tools
                .iter()
                .any(|t| t == crate::session::core::agents::TASK_TOOL),
            // `disallowed_tools = ["todo_write"]` turns the plan tool off.
            plan_tool: !self
                .settings
                .disallowed_tools
                .iter()
                .any(|t| t == crate::protocol::plan::TODO_WRITE),
            instructions,
            skills,
            max_steps: self.settings.max_steps,
            include_partial_messages: self.settings.include_partial_messages,
            models: self.model_infos.clone(),
            workspace: workspace.display().to_string(),
            context: self.settings.context.clone(),
            compact_prompt: self.settings.compact_prompt.clone(),
            permissions,
            mcp_first_turn_wait_ms: self.settings.mcp.first_turn_wait_ms(),
            hooks,
        };
        let tools = self.catalog.borrow().shared.tools.clone();
        SessionState::new(id, config, model, tools)
    }

    /// Take stored session `id`'s lease and fold its log. A model profile no
    /// longer configured falls back to the default, a workspace gone from
    /// disk to the configured one.
    pub async fn load(&self, id: SessionId) -> Result<Restored, SessionError> {
        let store = self.stored.store();
        let (record, events) = store.acquire(&id, self.stored.owner()).await?;
        let waiting = store.waiting_inputs(&id).await?;
        let files = self.workspace_files(&self.workspace_of(&record)).await;
        let mut restored = self.fold(&record, &events, files);
        // A node's claim opens a new epoch: its first event says so, before
        // whatever closes a turn the previous owner left open.
        if let Some(claim) = &record.claim {
            let changed = OwnerChanged {
                epoch: claim.epoch,
                node: claim.node.clone(),
                resumed_after: restored.last_seq,
            };
            // The claim is this node's: its name is ours.
            let name = self
                .settings
                .cluster
                .as_ref()
                .map(|cluster| format!("{} ({})", cluster.node_name(), claim.node))
                .unwrap_or_else(|| claim.node.to_string());
            let message = format!(
                "Node {name} now drives this session (epoch {}); it goes on after seq {}.",
                claim.epoch, restored.last_seq
            );
            let owner_changed = Effect::Emit {
                turn_id: None,
                message: AgentMessage::System(SystemEvent::new(message, &changed)),
            };
            restored.startup.insert(0, owner_changed);
            restored.claimed = true;
        }
        Ok(Restored {
            waiting,
            ..restored
        })
    }

    /// Stored session `record`'s conversation as the model sees it, read
    /// from the store without taking the lease (another process may be
    /// driving it), with the stored events it comes from.
    pub async fn read(
        &self,
        record: &SessionRecord,
    ) -> Result<(Vec<Message>, Vec<EventEnvelope>), SessionError> {
        let events = self.stored.events(&record.id, 0, None).await?;
        let history = self
            .fold(record, &events, WorkspaceFiles::default())
            .state
            .history;
        Ok((history, events))
    }

    /// The workspace a stored session runs in: its own, or the configured
    /// one when its own is gone from disk.
    fn workspace_of(&self, record: &SessionRecord) -> PathBuf {
        let stored_workspace = PathBuf::from(&record.workspace);
        if stored_workspace.is_dir() {
            stored_workspace
        } else {
            self.settings.workspace.clone()
        }
    }

    /// A session's log folded through the core.
    fn fold(
        &self,
        record: &SessionRecord,
        events: &[EventEnvelope],
        files: WorkspaceFiles,
    ) -> Restored {
        let id = &record.id;
        let model = if self.settings.models.contains_key(&record.model) {
            record.model.clone()
        } else {
            tracing::warn!(session = %id, model = %record.model, "the session's model profile is no longer configured; using the default");
            self.settings.model.clone()
        };
        let workspace = self.workspace_of(record);
        let mut state = self.fresh_state(id.clone(), model, &workspace, files);
        // A sub-agent's session starts no sub-agents of its own.
        state.config.task_tool &= record.parent_call.is_none();
        let startup = restore(&mut state, events);
        let last_seq = record
            .resume_after()
            .max(events.last().map(|e| e.seq).unwrap_or(0));
        Restored {
            state,
            startup,
            last_seq,
            workspace,
            waiting: Vec::new(),
            claimed: false,
            child_of: record.parent_call.as_ref().and(record.parent.clone()),
        }
    }
}

/// The `prompt` of each enabled MCP server, each under a heading.
fn tool_prompts(settings: &Settings) -> String {
    let mut prompt = String::new();
    for (name, server) in settings.mcp_servers.iter().filter(|(_, s)| s.enabled) {
        if let Some(extra) = server.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            prompt.push_str(&format!("\n\n# MCP server `{name}`\n{}", extra.trim()));
        }
    }
    prompt
}
