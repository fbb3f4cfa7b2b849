//! Where a front end's sessions live: in this process (a [`Runtime`]
//! started for the front end) or in an `agentbus serve` daemon reached over
//! HTTP (`--attach URL`). Front ends ask the backend for an [`Attached`]
//! session and never care which it is.

use super::attached::{Attached, Catchup, Start};
use crate::api::{McpServers, Session};
use crate::cli::ResumeArgs;
use crate::remote::RemoteClient;
use agentbus_engine::protocol::{AgentInfo, PermissionMode, Pricing, SessionId};
use agentbus_engine::runtime::{Failure, Owner, SessionError};
use agentbus_engine::settings::McpServerConfig;
use agentbus_engine::{Runtime, SessionOptions, Settings};
use anyhow::Context as _;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `--attach URL` and what it carries over to the server.
#[derive(Clone, Debug)]
pub struct Attach {
    pub url: String,
    /// `--model`, for a new session.
    pub model: Option<String>,
    /// `--workspace`, given explicitly (else the server's own).
    pub workspace: Option<PathBuf>,
    /// `--permission-mode`, for a new session.
    pub permission_mode: Option<PermissionMode>,
}

/// A stored session as a list shows it.
#[derive(Clone, Debug)]
pub struct Listed {
    pub id: String,
    pub title: Option<String>,
    pub workspace: String,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    /// How many queries it holds.
    pub turns: u64,
}

/// The command line's say in how the chosen session runs.
#[derive(Clone, Debug, Default)]
pub struct SessionFlags {
    /// `--permission-mode`.
    pub permission_mode: Option<PermissionMode>,
    /// `--agent`.
    pub agent: Option<String>,
    /// `--model`: a resumed session switches to it, as `/model` would.
    pub model: Option<String>,
}

/// What a session in a workspace can switch between: the named agents it
/// can run as and the model profiles (for pickers such as ACP's).
#[derive(Clone, Debug, Default)]
pub struct Choices {
    pub agents: Vec<AgentInfo>,
    pub models: Vec<String>,
}

/// The sessions a front end works with.
pub enum Backend {
    Local(Runtime),
    Remote {
        client: RemoteClient,
        model: Option<String>,
        workspace: Option<String>,
        permission_mode: Option<PermissionMode>,
    },
}

impl Backend {
    /// A runtime in this process, or a checked connection to a server.
    pub async fn start(settings: Settings, attach: Option<Attach>) -> anyhow::Result<Backend> {
        let Some(attach) = attach else {
            return Ok(Backend::Local(Runtime::start(settings).await?));
        };
        let client = RemoteClient::new(&attach.url, &settings.data_dir)?;
        client.health().await?;
        let workspace = match attach.workspace {
            Some(dir) => Some(
                std::path::absolute(&dir)
                    .with_context(|| format!("--workspace {}", dir.display()))?
                    .display()
                    .to_string(),
            ),
            None => None,
        };
        Ok(Backend::Remote {
            client,
            model: attach.model,
            workspace,
            permission_mode: attach.permission_mode,
        })
    }

    /// The session the command line asks for: a new one by default;
    /// `--session ID` (an id or the start of one) or `--continue` (the most
    /// recent session of this workspace) a stored one. A stored session
    /// keeps the agent and permission mode it had, unless `--agent` or
    /// `--permission-mode` says otherwise (then it is switched, with
    /// `/agent` and `/mode`, first thing).
    pub async fn choose(
        &self,
        resume: &ResumeArgs,
        start: Start,
        flags: &SessionFlags,
    ) -> anyhow::Result<Attached> {
        let attached = self.choose_session(resume, start, flags).await?;
        if resume.stored() {
            if let Some(agent) = &flags.agent {
                attached.submit_text(format!("/agent {agent}")).await?;
            }
            if let Some(mode) = flags.permission_mode {
                attached.submit_text(format!("/mode {mode}")).await?;
            }
            if let Some(model) = &flags.model {
                attached.submit_text(format!("/model {model}")).await?;
            }
        }
        Ok(attached)
    }

    async fn choose_session(
        &self,
        resume: &ResumeArgs,
        start: Start,
        flags: &SessionFlags,
    ) -> anyhow::Result<Attached> {
        match self {
            Backend::Local(runtime) => {
                let session = if let Some(prefix) = resume.id()? {
                    let id = runtime.resolve(prefix).await?;
                    open_stored(runtime, &id).await?
                } else if resume.continue_ {
                    let workspace = runtime.settings().workspace.display().to_string();
                    let recent = runtime
                        .stored()
                        .list(Default::default())
                        .await?
                        .into_iter()
                        .find(|r| r.workspace == workspace)
                        .with_context(|| {
                            format!(
                                "no earlier session in {workspace}; start one without --continue"
                            )
                        })?;
                    open_stored(runtime, &recent.id).await?
                } else {
                    runtime
                        .create_session(SessionOptions {
                            agent: flags.agent.clone(),
                            ..SessionOptions::default()
                        })
                        .await?
                };
                Ok(Attached::local(session, start))
            }
            Backend::Remote {
                client,
                model,
                workspace,
                permission_mode,
            } => {
                if let Some(prefix) = resume.id()? {
                    let record = client.open_session(prefix, None).await?;
                    return Ok(remote_attach(client, record, start));
                }
                if resume.continue_ {
                    let recent = client
                        .sessions()
                        .await?
                        .into_iter()
                        .find(|s| workspace.as_ref().is_none_or(|w| &s.workspace == w))
                        .context(
                            "no earlier session on the server; start one without --continue",
                        )?;
                    let record = client.open_session(&recent.id, None).await?;
                    return Ok(remote_attach(client, record, start));
                }
                let id = client
                    .create_session(
                        model.clone(),
                        workspace.clone(),
                        *permission_mode,
                        flags.agent.clone(),
                        None,
                    )
                    .await?;
                Ok(Attached::remote(client, id, 0, Catchup::StartedAfter(0)))
            }
        }
    }

    /// A new session working in `workspace` (an absolute path), as the
    /// named `agent` (default: `build`), with the command line's model and
    /// permission mode and `mcp_servers` of its own (an editor's), followed
    /// from its start.
    pub async fn create_in(
        &self,
        workspace: PathBuf,
        agent: Option<String>,
        mcp_servers: BTreeMap<String, McpServerConfig>,
    ) -> anyhow::Result<Attached> {
        match self {
            Backend::Local(runtime) => {
                let options = SessionOptions {
                    workspace: Some(workspace),
                    agent,
                    mcp_servers,
                    ..SessionOptions::default()
                };
                let session = runtime.create_session(options).await?;
                Ok(Attached::local(session, Start::Beginning))
            }
            Backend::Remote {
                client,
                model,
                permission_mode,
                ..
            } => {
                let id = client
                    .create_session(
                        model.clone(),
                        Some(workspace.display().to_string()),
                        *permission_mode,
                        agent,
                        Some(McpServers::new(&mcp_servers)),
                    )
                    .await?;
                Ok(Attached::remote(client, id, 0, Catchup::StartedAfter(0)))
            }
        }
    }

    /// The agents and model profiles a session in `workspace` can switch
    /// to. Agent files that could not be used are logged (the session's
    /// `/agent` names them too).
    pub async fn choices(&self, workspace: &std::path::Path) -> anyhow::Result<Choices> {
        let (agents, problems, models) = match self {
            Backend::Local(runtime) => {
                let (agents, problems) = runtime.agents(Some(workspace)).await;
                let models = runtime.settings().models.keys().cloned().collect();
                (agents, problems, models)
            }
            Backend::Remote { client, .. } => {
                let listed = client.agents(workspace).await?;
                let agents = listed
                    .agents
                    .into_iter()
                    .map(|a| AgentInfo {
                        name: a.name,
                        description: a.description,
                        source: a.source,
                    })
                    .collect();
                let models = client.models().await?.models;
                (
                    agents,
                    listed.problems,
                    models.into_iter().map(|m| m.name).collect(),
                )
            }
        };
        for problem in problems {
            tracing::warn!("an agent file was not used: {problem}");
        }
        Ok(Choices { agents, models })
    }

    /// The prices of the model profiles that have them, by name (for the
    /// chat's cost figure).
    pub async fn prices(&self) -> anyhow::Result<BTreeMap<String, Pricing>> {
        Ok(match self {
            Backend::Local(runtime) => runtime
                .settings()
                .models
                .iter()
                .filter_map(|(name, profile)| Some((name.clone(), profile.pricing()?)))
                .collect(),
            Backend::Remote { client, .. } => client
                .models()
                .await?
                .models
                .into_iter()
                .filter_map(|m| {
                    let p = m.pricing?;
                    let pricing = Pricing {
                        input_per_mtok: p.input_per_mtok,
                        output_per_mtok: p.output_per_mtok,
                        cache_read_per_mtok: p.cache_read_per_mtok,
                        cache_write_per_mtok: p.cache_write_per_mtok,
                    };
                    Some((m.name, pricing))
                })
                .collect(),
        })
    }

    /// The stored sessions, most recent first.
    pub async fn list(&self) -> anyhow::Result<Vec<Listed>> {
        Ok(match self {
            Backend::Local(runtime) => runtime
                .stored()
                .list(Default::default())
                .await?
                .into_iter()
                .map(|r| Listed {
                    id: r.id.0,
                    title: r.title,
                    workspace: r.workspace,
                    updated_at: r.updated_at,
                    turns: r.turns,
                })
                .collect(),
            Backend::Remote { client, .. } => client
                .sessions()
                .await?
                .into_iter()
                .map(|s| Listed {
                    id: s.id,
                    title: s.title,
                    workspace: s.workspace,
                    updated_at: s.updated_at,
                    turns: s.turns,
                })
                .collect(),
        })
    }

    /// Attach to a session by id (where a command switched to).
    pub async fn open(&self, id: &SessionId, start: Start) -> anyhow::Result<Attached> {
        match self {
            Backend::Local(runtime) => Ok(Attached::local(open_stored(runtime, id).await?, start)),
            Backend::Remote { client, .. } => {
                let record = client.open_session(&id.0, None).await?;
                Ok(remote_attach(client, record, start))
            }
        }
    }

    /// Say on stderr what keeps `attached`'s model profile from answering
    /// (a key not set, a local server not running), with the ways out;
    /// `true` when something does. Only a session of this process is
    /// checked: a server checks its own profiles as it starts.
    pub async fn say_model_problem(&self, attached: &Attached) -> bool {
        let Backend::Local(runtime) = self else {
            return false;
        };
        let Some(model) = attached.local_model().await else {
            return false;
        };
        match crate::model_check::check(runtime.settings(), &model).await {
            Some(problem) => {
                say_model_problem(&problem, runtime.settings());
                true
            }
            None => false,
        }
    }

    /// Delete a session this front end made and left without a turn (a
    /// command-only `run`, a chat opened and left), so that it is not
    /// kept as an untitled session; logged if that fails.
    pub async fn forget(&self, id: &SessionId) {
        let deleted = match self {
            Backend::Local(runtime) => runtime
                .delete_session(id, None)
                .await
                .map_err(anyhow::Error::from),
            Backend::Remote { client, .. } => {
                client.delete_session(id).await.map_err(anyhow::Error::from)
            }
        };
        if let Err(e) = deleted {
            tracing::warn!(session = %id, "could not delete the unused session this front end made: {e:#}");
        }
    }

    /// Attach to a stored session by id, loading it if need be, with
    /// exactly `mcp_servers` of its own (an editor's `session/load`),
    /// replacing those it had.
    pub async fn open_with(
        &self,
        id: &SessionId,
        start: Start,
        mcp_servers: BTreeMap<String, McpServerConfig>,
    ) -> anyhow::Result<Attached> {
        match self {
            Backend::Local(runtime) => {
                let session = runtime.open_session_with(id, mcp_servers).await?;
                Ok(Attached::local(session, start))
            }
            Backend::Remote { client, .. } => {
                let servers = McpServers::new(&mcp_servers);
                let record = client.open_session(&id.0, Some(servers)).await?;
                Ok(remote_attach(client, record, start))
            }
        }
    }

    /// The stored sessions, when they live in this process (a server's
    /// are reached through its API).
    pub fn stored(&self) -> Option<&agentbus_engine::StoredSessions> {
        match self {
            Backend::Local(runtime) => Some(runtime.stored()),
            Backend::Remote { .. } => None,
        }
    }

    /// The server's address, when the sessions live in one.
    pub fn server(&self) -> Option<String> {
        match self {
            Backend::Local(_) => None,
            Backend::Remote { client, .. } => Some(client.address()),
        }
    }

    /// The workspace new sessions work in, as far as this process knows:
    /// the configured one, or `--workspace` for a server (else the
    /// server's own, which only its sessions say).
    pub fn workspace(&self) -> Option<PathBuf> {
        match self {
            Backend::Local(runtime) => Some(runtime.settings().workspace.clone()),
            Backend::Remote { workspace, .. } => workspace.as_ref().map(PathBuf::from),
        }
    }

    /// Stop the in-process runtime (sessions stay stored); a server keeps
    /// running.
    pub async fn shutdown(&self) {
        if let Backend::Local(runtime) = self {
            runtime.shutdown().await;
        }
    }
}

/// Open stored session `id` in this process. When another process drives
/// it, the error says which, and for an `agentbus serve` daemon of this
/// data dir how to join the session there.
async fn open_stored(
    runtime: &Runtime,
    id: &SessionId,
) -> anyhow::Result<agentbus_engine::SessionHandle> {
    match runtime.open_session(id).await {
        Ok(session) => Ok(session),
        Err(e) => Err(match holder(runtime, id, &e).await {
            Some(holder) => anyhow::anyhow!("{}", held_elsewhere(id, &holder)),
            None => e.into(),
        }),
    }
}

/// The live process other than this one that holds session `id`, when
/// that is why `error` happened: its pid, and where it listens if it is a
/// daemon of this data dir.
struct Holder {
    pid: u32,
    url: Option<String>,
    command: Option<String>,
}

async fn holder(runtime: &Runtime, id: &SessionId, error: &SessionError) -> Option<Holder> {
    if error.failure() != Failure::Conflict {
        return None;
    }
    let owner = runtime.stored().get(id).await.ok()??.owner?;
    if owner == Owner::current() || !owner.is_alive() {
        return None;
    }
    Some(Holder {
        pid: owner.pid,
        url: crate::daemons::url_of(&runtime.settings().data_dir, &owner.to_string()),
        command: crate::daemons::command_of(owner.pid),
    })
}

fn held_elsewhere(id: &SessionId, holder: &Holder) -> String {
    match &holder.url {
        Some(url) => format!(
            "session {id} is open in the agentbus daemon at {url} (`agentbus serve`, pid {}), so it cannot be opened here too; \
             join it there instead: `agentbus chat --attach {url} --session {id}` (or `agentbus run --attach {url} --session {id} \"...\"`)",
            holder.pid
        ),
        None => format!(
            "session {id} is being driven by another agentbus process (pid {}{}); \
             close it there first, or start a new session (without --continue or --session)",
            holder.pid,
            holder
                .command
                .as_deref()
                .map(|c| format!(": `{c}`"))
                .unwrap_or_default()
        ),
    }
}

fn remote_attach(client: &RemoteClient, record: Session, start: Start) -> Attached {
    // Opened on the server first (loaded there, or followed from the node
    // of its cluster that drives it): what it held ends at its last seq,
    // its load's announcement included.
    let after = match start {
        Start::Beginning => 0,
        Start::ThisLoad => record.last_seq,
    };
    Attached::remote(
        client,
        SessionId(record.id),
        after,
        Catchup::Through(record.last_seq),
    )
}

/// Say on stderr what keeps a model profile from answering, with the ways
/// out (the user's configuration file named), broken at words on a
/// terminal.
pub fn say_model_problem(
    problem: &crate::model_check::Problem,
    settings: &agentbus_engine::Settings,
) {
    let config_file = crate::config::user_config_file();
    let advice = problem.advice(settings, config_file.as_deref());
    eprintln!(
        "{}",
        crate::frontend::output::wrap::to_stderr(&format!("agentbus: {advice}"))
    );
}
