//! Opening sessions for the editor (`session/new`, `session/load`) and
//! listing the stored ones (`session/list`), and the table of the sessions
//! this connection has open.
//!
//! A new session works in the request's `cwd`; the editor's MCP servers
//! join the configured ones for that session alone (its tools are offered
//! to no other session; with `--attach` they are given to the session in
//! the server, which starts them). A loaded session has the servers the
//! `session/load` gives (none are stored), and replays its stored
//! conversation as updates before the answer.
//!
//! It never answers before the session's task has taken over (the task
//! answers, after the replay), and never holds the dispatch loop (each
//! request runs on a task of its own).

use super::client_fs::ClientFiles;
use super::handshake::ClientOffers;
use super::mcp_servers;
use super::session::{Opening, SessionTask, ToSession};
use super::updates::{Models, Translator};
use crate::frontend::common::attached::{Attached, Start};
use crate::frontend::common::backend::Backend;
use agent_client_protocol::v1::schema::{
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpServer,
    NewSessionRequest, NewSessionResponse, SessionId, SessionInfo,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use agentbus_engine::runtime::Files;
use agentbus_engine::settings::McpServerConfig;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;

/// Sessions listed per page of `session/list`.
const PAGE: usize = 100;

/// What every request of the connection reaches.
pub struct Shared {
    backend: Backend,
    models: Models,
    /// `--agent`: the named agent new sessions run as.
    agent: Option<String>,
    offers: Mutex<ClientOffers>,
    /// The task of each session open on this connection, by id.
    open: Mutex<HashMap<String, UnboundedSender<ToSession>>>,
}

impl Shared {
    pub fn new(backend: Backend, models: Models, agent: Option<String>) -> Self {
        Shared {
            backend,
            models,
            agent,
            offers: Mutex::new(ClientOffers::default()),
            open: Mutex::new(HashMap::new()),
        }
    }

    pub fn set_offers(&self, offers: ClientOffers) {
        if let Ok(mut current) = self.offers.lock() {
            *current = offers;
        }
    }

    fn offers(&self) -> ClientOffers {
        self.offers.lock().map(|o| *o).unwrap_or_default()
    }

    /// The task of session `id`, when it is open on this connection.
    pub fn session(&self, id: &SessionId) -> Option<UnboundedSender<ToSession>> {
        self.open
            .lock()
            .ok()
            .and_then(|open| open.get(&*id.0).cloned())
            .filter(|task| !task.is_closed())
    }

    /// Let go of every session (their tasks end), then stop the sessions
    /// of this process (they stay stored).
    pub async fn close(&self) {
        if let Ok(mut open) = self.open.lock() {
            open.clear();
        }
        self.backend.shutdown().await;
    }

    pub async fn new_session(
        &self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        connection: ConnectionTo<Client>,
    ) {
        let servers = match prepare(&request.cwd, &request.mcp_servers) {
            Ok(servers) => servers,
            Err(why) => {
                let _ = responder.respond_with_error(why);
                return;
            }
        };
        match self
            .backend
            .create_in(request.cwd.clone(), self.agent.clone(), servers)
            .await
        {
            Ok(attached) => {
                self.start(attached, request.cwd, Opening::New(responder), connection)
                    .await
            }
            Err(e) => {
                let _ = responder.respond_with_error(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("could not create a session: {e:#}"),
                ));
            }
        }
    }

    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        connection: ConnectionTo<Client>,
    ) {
        let servers = match prepare(&request.cwd, &request.mcp_servers) {
            Ok(servers) => servers,
            Err(why) => {
                let _ = responder.respond_with_error(why);
                return;
            }
        };
        let id = agentbus_engine::protocol::SessionId(request.session_id.0.to_string());
        match self.backend.open_with(&id, Start::Beginning, servers).await {
            Ok(attached) => {
                self.start(attached, request.cwd, Opening::Load(responder), connection)
                    .await
            }
            Err(e) => {
                let _ = responder.respond_with_error(Error::new(
                    ErrorCode::RESOURCE_NOT_FOUND,
                    format!("could not load session {}: {e:#}", id.0),
                ));
            }
        }
    }

    /// Give `attached` a task of its own (replacing the task of an earlier
    /// open of the same session), the editor's files when it offers them.
    async fn start(
        &self,
        attached: Attached,
        cwd: PathBuf,
        opening: Opening,
        connection: ConnectionTo<Client>,
    ) {
        let id = attached.id().0.clone();
        if self.offers().files {
            let files = ClientFiles {
                connection: connection.clone(),
                session: SessionId::new(id.as_str()),
            };
            match attached.use_files(Files::Held(Arc::new(files))).await {
                Ok(true) => {}
                Ok(false) => tracing::info!(
                    session = %id,
                    "the editor's files are not used: with --attach the file tools run in the server"
                ),
                Err(e) => tracing::warn!(session = %id, "the editor's files are not used: {e:#}"),
            }
        }
        let choices = match self.backend.choices(&cwd).await {
            Ok(choices) => choices,
            Err(e) => {
                tracing::warn!(session = %id, "the agent and model pickers are left out: {e:#}");
                Default::default()
            }
        };
        let translator = Translator::new(cwd, self.models.clone(), choices);
        let (task, sender) = SessionTask::new(attached, translator, connection, opening);
        if let Ok(mut open) = self.open.lock()
            && let Some(earlier) = open.insert(id, sender)
        {
            // Opened again: the earlier task stops forwarding its events.
            let _ = earlier.send(ToSession::Replaced);
        }
        tokio::spawn(task.run());
    }

    /// A page of the stored sessions, most recent first, those of `cwd`
    /// alone when it is given.
    pub async fn list(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let listed = self.backend.list().await.map_err(|e| {
            Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("could not list the sessions: {e:#}"),
            )
        })?;
        let start = match &request.cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                Error::new(
                    ErrorCode::INVALID_PARAMS,
                    format!(
                        "cursor `{cursor}` is not one of ours; expected the nextCursor of a previous page"
                    ),
                )
            })?,
        };
        let cwd = request.cwd.as_ref().map(|c| c.display().to_string());
        let matching: Vec<_> = listed
            .into_iter()
            .filter(|s| cwd.as_ref().is_none_or(|cwd| &s.workspace == cwd))
            .collect();
        let sessions = matching
            .iter()
            .skip(start)
            .take(PAGE)
            .map(|s| {
                SessionInfo::new(SessionId::new(s.id.as_str()), PathBuf::from(&s.workspace))
                    .title(s.title.clone())
                    .updated_at(s.updated_at.to_rfc3339())
            })
            .collect();
        let next = start + PAGE;
        let mut response = ListSessionsResponse::new(sessions);
        if next < matching.len() {
            response = response.next_cursor(next.to_string());
        }
        Ok(response)
    }
}

/// What opening any session needs first: an absolute `cwd`; and the
/// editor's MCP servers as ours (those we cannot speak to are skipped,
/// saying why in the log).
fn prepare(cwd: &Path, servers: &[McpServer]) -> Result<BTreeMap<String, McpServerConfig>, Error> {
    absolute(cwd)?;
    let mut given = BTreeMap::new();
    for server in servers {
        match mcp_servers::config(server, cwd) {
            Ok((name, config)) => {
                given.insert(name, config);
            }
            Err(why) => tracing::warn!("{why}; skipped"),
        }
    }
    Ok(given)
}

/// ACP requires an absolute `cwd`.
fn absolute(cwd: &Path) -> Result<(), Error> {
    if cwd.is_absolute() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "cwd `{}` is not an absolute path; expected the absolute path of the working directory",
                cwd.display()
            ),
        ))
    }
}
