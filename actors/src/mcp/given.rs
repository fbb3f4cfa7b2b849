//! The MCP servers given to sessions rather than configured: an editor's
//! (`mcpServers` of ACP's `session/new` and `session/load`), or the HTTP
//! API's `mcp_servers`. Each is offered only to the sessions it was given
//! to.
//!
//! [`GivenServers`] is the table of them: one McpServer actor per name and
//! settings, shared by every session given that name with those settings
//! (a second session given the same name with other settings gets a server
//! of its own). It tells the ToolExecutor which sessions each is offered to
//! ([`GiveServer`]) — before the server's actor starts, so its first report
//! counts — and stops a server (its process reaped) once no session has it.
//! A name that a configured server has is not started: the configured one
//! is used, and the session is told so.
//!
//! The settings (whose `env` and `headers` may hold secrets) live here and
//! in the server's actor only: never in a session's state, its events or
//! the store, and never logged.

use crate::mcp::server::{McpServer, McpServerArgs, StopServer};
use crate::protocol::SessionId;
use crate::settings::{EnvironmentPolicy, McpServerConfig};
use crate::tools::executor::{GiveServer, ListTools, ToolExecutor};
use crate::tools::registry::ServerId;
use kameo::actor::{ActorRef, Spawn};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use tokio::sync::Mutex;

/// The servers given to sessions, and who has each.
pub struct GivenServers {
    executor: ActorRef<ToolExecutor>,
    /// The enabled configured servers' names: given under one of them, a
    /// server is not started.
    configured: BTreeSet<String>,
    /// The environment a stdio server starts with (its own `env` on top).
    environment: EnvironmentPolicy,
    /// Held across the executor's answers, so that two sessions given
    /// servers at once tell it their audiences in the order they changed.
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// The last instance number handed out.
    last: u64,
    servers: Vec<Given>,
    /// Every server actor started and perhaps not stopped yet (a stop runs
    /// on a task of its own): what shutdown waits for.
    started: Vec<ActorRef<McpServer>>,
}

/// One server given to sessions.
struct Given {
    id: ServerId,
    /// Its settings, as started (a stdio server's `cwd` filled in).
    config: McpServerConfig,
    actor: ActorRef<McpServer>,
    sessions: BTreeSet<SessionId>,
}

impl GivenServers {
    pub fn new(
        executor: ActorRef<ToolExecutor>,
        configured: BTreeSet<String>,
        environment: EnvironmentPolicy,
    ) -> Self {
        GivenServers {
            executor,
            configured,
            environment,
            table: Mutex::new(Table::default()),
        }
    }

    /// Give session `session` (working in `workspace`) exactly `servers`:
    /// each is started unless a server of that name and settings runs
    /// already (then it is shared), and the servers it had before and is
    /// not given now are taken from it. Returns once each new server's
    /// process is spawned (not initialized) and the catalog says so, with
    /// the notices the session should show (a name a configured server
    /// has). A disabled server (`enabled = false`) is not started.
    pub async fn give(
        &self,
        session: &SessionId,
        workspace: &Path,
        servers: BTreeMap<String, McpServerConfig>,
    ) -> Vec<String> {
        let mut notices = Vec::new();
        let mut table = self.table.lock().await;
        let mut keep = BTreeSet::new();
        let mut changed = BTreeSet::new();
        let mut started = Vec::new();
        for (name, mut config) in servers.into_iter().filter(|(_, c)| c.enabled) {
            if self.configured.contains(&name) {
                tracing::warn!(session = %session, server = %name, "a server given with the session has the name of a configured one; the configured one is used");
                notices.push(format!(
                    "MCP server `{name}`: a configured server has this name, so the session uses that one; the server given with the session is not started."
                ));
                continue;
            }
            // A stdio server runs in the session's workspace unless it
            // says otherwise; two sessions in different workspaces do not
            // share one.
            if config.command.is_some() && config.cwd.is_none() {
                config.cwd = Some(workspace.to_path_buf());
            }
            let running = table
                .servers
                .iter_mut()
                .find(|g| g.id.name == name && g.config == config);
            if let Some(given) = running {
                if given.sessions.insert(session.clone()) {
                    changed.insert(given.id.clone());
                }
                keep.insert(given.id.clone());
                continue;
            }
            table.last += 1;
            let id = ServerId::given(name, table.last);
            // The executor learns who has it before the server reports.
            let _ = self
                .executor
                .ask(GiveServer {
                    server: id.clone(),
                    sessions: [session.clone()].into(),
                    prompt: config.prompt.clone(),
                })
                .await;
            let actor = McpServer::spawn(McpServerArgs {
                id: id.clone(),
                config: config.clone(),
                workspace: workspace.to_path_buf(),
                environment: self.environment.clone(),
                executor: self.executor.clone(),
            });
            tracing::info!(session = %session, server = %id, "started an MCP server given with the session");
            table.started.push(actor.clone());
            started.push(actor.clone());
            keep.insert(id.clone());
            table.servers.push(Given {
                id,
                config,
                actor,
                sessions: [session.clone()].into(),
            });
        }
        for given in table.servers.iter_mut() {
            if !keep.contains(&given.id) && given.sessions.remove(session) {
                changed.insert(given.id.clone());
            }
        }
        let unused = self.tell_audiences(&mut table, &changed).await;
        drop(table);
        for actor in &started {
            actor.wait_for_startup().await;
        }
        // Each new server told the executor its first status while
        // starting; an ask queued behind those reports returns once the
        // catalog holds them.
        let _ = self.executor.ask(ListTools).await;
        tokio::spawn(stop(unused));
        notices
    }

    /// Session `child` (a sub-agent's) gets the servers `parent` has.
    pub async fn inherit(&self, child: &SessionId, parent: &SessionId) {
        let mut table = self.table.lock().await;
        let mut changed = BTreeSet::new();
        for given in table.servers.iter_mut() {
            if given.sessions.contains(parent) && given.sessions.insert(child.clone()) {
                changed.insert(given.id.clone());
            }
        }
        self.tell_audiences(&mut table, &changed).await;
    }

    /// Session `session` has gone (closed, unloaded, deleted): it has none
    /// of the servers any more. Returns the task stopping those no session
    /// has now (awaiting it is optional: shutdown waits for it anyway).
    pub async fn release(&self, session: &SessionId) -> tokio::task::JoinHandle<()> {
        let mut table = self.table.lock().await;
        let mut changed = BTreeSet::new();
        for given in table.servers.iter_mut() {
            if given.sessions.remove(session) {
                changed.insert(given.id.clone());
            }
        }
        let unused = self.tell_audiences(&mut table, &changed).await;
        tokio::spawn(stop(unused))
    }

    /// Stop every given server (shutdown: sessions are gone), waiting until
    /// each process is reaped.
    pub async fn stop_all(&self) {
        let actors = {
            let mut table = self.table.lock().await;
            table.servers.clear();
            std::mem::take(&mut table.started)
        };
        stop(actors).await;
    }

    /// Tell the executor the audience of each server in `changed`; take the
    /// servers no session has out of the table and return their actors.
    async fn tell_audiences(
        &self,
        table: &mut Table,
        changed: &BTreeSet<ServerId>,
    ) -> Vec<ActorRef<McpServer>> {
        for given in table.servers.iter().filter(|g| changed.contains(&g.id)) {
            let _ = self
                .executor
                .ask(GiveServer {
                    server: given.id.clone(),
                    sessions: given.sessions.clone(),
                    prompt: given.config.prompt.clone(),
                })
                .await;
        }
        let (unused, kept) = std::mem::take(&mut table.servers)
            .into_iter()
            .partition::<Vec<_>, _>(|g| g.sessions.is_empty());
        table.servers = kept;
        table.started.retain(|actor| actor.is_alive());
        for given in &unused {
            tracing::info!(server = %given.id, "no session has this MCP server any more; stopping it");
        }
        unused.into_iter().map(|g| g.actor).collect()
    }
}

/// Stop `actors`' servers and wait until their processes are reaped.
async fn stop(actors: Vec<ActorRef<McpServer>>) {
    futures::future::join_all(actors.into_iter().map(|server| async move {
        let _ = server.ask(StopServer).await;
        let _ = server.stop_gracefully().await;
        server.wait_for_shutdown().await;
    }))
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::registry::{ToolCatalog, ToolRegistry};
    use kameo::actor::Spawn;
    use std::sync::Arc;
    use tokio::sync::watch;

    /// A "server" that never answers the handshake (so it stays starting),
    /// marked by `marker` in its environment.
    fn silent(marker: &str, prompt: Option<&str>) -> McpServerConfig {
        let mut config = McpServerConfig::stdio("sleep", &["600"]);
        config.env.insert("GIVEN_TEST_MARKER".into(), marker.into());
        config.prompt = prompt.map(String::from);
        config
    }

    /// The processes whose environment holds `GIVEN_TEST_MARKER=marker`.
    fn processes(marker: &str) -> usize {
        let entry = format!("GIVEN_TEST_MARKER={marker}");
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return 0;
        };
        dir.filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .filter(|e| {
                std::fs::read(e.path().join("environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == entry.as_bytes()))
            })
            .count()
    }

    fn setup() -> (GivenServers, watch::Receiver<Arc<ToolCatalog>>) {
        let (tx, catalog) = watch::channel(Arc::new(ToolCatalog::default()));
        let executor = ToolExecutor::spawn(ToolExecutor::new(
            ToolRegistry::new(vec![], &[]),
            Default::default(),
            tx,
        ));
        let given = GivenServers::new(
            executor,
            ["configured".to_string()].into(),
            EnvironmentPolicy::default(),
        );
        (given, catalog)
    }

    #[tokio::test]
    async fn a_server_runs_while_a_session_has_it_and_is_shared_by_equal_settings() {
        let marker = format!("shared-{}", std::process::id());
        let (given, catalog) = setup();
        let (a, b, c) = (
            SessionId::from("a"),
            SessionId::from("b"),
            SessionId::from("c"),
        );
        let ws = std::env::temp_dir();
        let servers = BTreeMap::from([("fs".to_string(), silent(&marker, None))]);
        assert!(given.give(&a, &ws, servers.clone()).await.is_empty());
        given.give(&b, &ws, servers).await;
        assert_eq!(processes(&marker), 1, "one process for the same settings");
        {
            let catalog = catalog.borrow();
            assert!(catalog.view(&a).servers.contains_key("fs"));
            assert!(catalog.view(&b).first_start.contains("fs"));
            assert!(!catalog.view(&c).servers.contains_key("fs"));
        }
        given.release(&a).await.await.unwrap();
        assert_eq!(processes(&marker), 1, "b still has it");
        given.release(&b).await.await.unwrap();
        assert_eq!(processes(&marker), 0, "stopped once no session has it");
        assert_eq!(**catalog.borrow(), ToolCatalog::default());
    }

    #[tokio::test]
    async fn other_settings_under_one_name_are_another_server() {
        let marker = format!("apart-{}", std::process::id());
        let (given, catalog) = setup();
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        let ws = std::env::temp_dir();
        let one = BTreeMap::from([("fs".to_string(), silent(&marker, Some("first")))]);
        let two = BTreeMap::from([("fs".to_string(), silent(&marker, Some("second")))]);
        given.give(&a, &ws, one).await;
        given.give(&b, &ws, two).await;
        assert_eq!(processes(&marker), 2);
        {
            let catalog = catalog.borrow();
            assert!(catalog.view(&a).prompts.contains("first"));
            assert!(catalog.view(&b).prompts.contains("second"));
            assert!(!catalog.view(&a).prompts.contains("second"));
        }
        // Given again with nothing: a's server is taken away, b's stays.
        given.give(&a, &ws, BTreeMap::new()).await;
        assert!(!catalog.borrow().view(&a).servers.contains_key("fs"));
        assert!(catalog.borrow().view(&b).servers.contains_key("fs"));
        given.stop_all().await;
        assert_eq!(processes(&marker), 0);
    }

    #[tokio::test]
    async fn a_configured_name_is_not_started_and_the_session_is_told() {
        let marker = format!("configured-{}", std::process::id());
        let (given, catalog) = setup();
        let a = SessionId::from("a");
        let servers = BTreeMap::from([("configured".to_string(), silent(&marker, None))]);
        let notices = given.give(&a, &std::env::temp_dir(), servers).await;
        assert_eq!(notices.len(), 1);
        assert!(notices[0].contains("`configured`"), "{notices:?}");
        assert_eq!(processes(&marker), 0);
        assert!(catalog.borrow().sessions.is_empty());
    }

    #[tokio::test]
    async fn a_child_session_has_its_parents_servers() {
        let marker = format!("child-{}", std::process::id());
        let (given, catalog) = setup();
        let (parent, child) = (SessionId::from("parent"), SessionId::from("child"));
        let servers = BTreeMap::from([("fs".to_string(), silent(&marker, None))]);
        given.give(&parent, &std::env::temp_dir(), servers).await;
        given.inherit(&child, &parent).await;
        assert!(catalog.borrow().view(&child).servers.contains_key("fs"));
        given.release(&parent).await.await.unwrap();
        assert_eq!(processes(&marker), 1, "the child still has it");
        given.release(&child).await.await.unwrap();
        assert_eq!(processes(&marker), 0);
    }
}
