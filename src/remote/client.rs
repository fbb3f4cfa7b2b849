//! Requests to a running `agentbus serve`.
//!
//! The token comes from the address (`?token=`, as the web page's address
//! has it), else `AGENTBUS_TOKEN`, else the `token` file of the local data
//! dir (where a server on this machine keeps it).

use crate::api::{
    Accepted, Agents, CreateSession, Created, History, HistoryQuery, McpServers, Models,
    OpenSession, Session, Sessions,
};
use agentbus_engine::protocol::{EventEnvelope, InputId, SessionId};
use agentbus_engine::runtime::describe_http_error as describe;
use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;
use std::path::Path;
use std::time::Duration;

/// Why a request to the server failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("`{url}` is not a server address; expected one like http://127.0.0.1:7878")]
    BadUrl { url: String },
    #[error(
        "no token for {url}: set AGENTBUS_TOKEN, or add ?token=TOKEN to the address (a server on this machine keeps it in {token_file})"
    )]
    NoToken { url: String, token_file: String },
    #[error("cannot reach agentbus at {url} ({reason}); is `agentbus serve` running there?")]
    Unreachable { url: String, reason: String },
    #[error(
        "the server refused the token ({source_of_token}); use the one in the server's data dir `token` file"
    )]
    Unauthorized { source_of_token: &'static str },
    #[error("{message}")]
    Refused { status: StatusCode, message: String },
    #[error("the server's answer to {what} was not understood: {reason}")]
    BadAnswer { what: String, reason: String },
}

/// A connection to one server.
#[derive(Clone)]
pub struct RemoteClient {
    base: Url,
    token: String,
    token_source: &'static str,
    http: reqwest::Client,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClient")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

impl RemoteClient {
    /// A client of the server at `address`; the token as described above.
    pub fn new(address: &str, data_dir: &Path) -> Result<RemoteClient, RemoteError> {
        let with_scheme = if address.contains("://") {
            address.to_string()
        } else {
            format!("http://{address}")
        };
        let mut base = Url::parse(&with_scheme).map_err(|_| RemoteError::BadUrl {
            url: address.into(),
        })?;
        if !matches!(base.scheme(), "http" | "https") || base.host().is_none() {
            return Err(RemoteError::BadUrl {
                url: address.into(),
            });
        }
        let from_url = base
            .query_pairs()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.into_owned());
        base.set_query(None);
        base.set_fragment(None);
        base.set_path("/");
        let token_file = data_dir.join("token");
        let (token, token_source) = if let Some(token) = from_url {
            (token, "from the address")
        } else if let Some(token) = std::env::var("AGENTBUS_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty())
        {
            (token, "from AGENTBUS_TOKEN")
        } else if let Some(token) = std::fs::read_to_string(&token_file)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
        {
            (token, "from the data dir's token file")
        } else {
            return Err(RemoteError::NoToken {
                url: base.to_string(),
                token_file: token_file.display().to_string(),
            });
        };
        agentbus_engine::runtime::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // Event streams carry a keep-alive every 15 s: silence for
            // longer means the connection is dead.
            .read_timeout(Duration::from_secs(45))
            .user_agent(concat!("agentbus/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RemoteError::Unreachable {
                url: base.to_string(),
                reason: e.to_string(),
            })?;
        Ok(RemoteClient {
            base,
            token: token.trim().to_string(),
            token_source,
            http,
        })
    }

    /// `/v1/PATH...`, each segment percent-encoded.
    pub(crate) fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.clear().push("v1").extend(segments);
        }
        url
    }

    pub(crate) fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        self.http.request(method, url).bearer_auth(&self.token)
    }

    pub(crate) fn unreachable(&self, e: &reqwest::Error) -> RemoteError {
        RemoteError::Unreachable {
            url: self.base.to_string(),
            reason: describe(e),
        }
    }

    /// The error a non-success answer stands for.
    pub(crate) async fn refusal(&self, response: reqwest::Response) -> RemoteError {
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED {
            return RemoteError::Unauthorized {
                source_of_token: self.token_source,
            };
        }
        let body = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(String::from))
            .unwrap_or_else(|| format!("the server answered {status}: {}", body.trim()));
        RemoteError::Refused { status, message }
    }

    async fn send<T: DeserializeOwned>(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, RemoteError> {
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        if !response.status().is_success() {
            return Err(self.refusal(response).await);
        }
        response
            .json::<T>()
            .await
            .map_err(|e| RemoteError::BadAnswer {
                what: what.to_string(),
                reason: describe(&e),
            })
    }

    /// Check that the server answers and takes the token.
    /// The server's address, as given (without a trailing `/`).
    pub fn address(&self) -> String {
        self.base.as_str().trim_end_matches('/').to_string()
    }

    pub async fn health(&self) -> Result<(), RemoteError> {
        let _: crate::api::Health = self
            .send(
                "a health check",
                self.request(reqwest::Method::GET, self.url(&["health"])),
            )
            .await?;
        Ok(())
    }

    /// A new session; `model` is a profile name of the server's config,
    /// `mcp_servers` the session's own MCP servers (their settings travel
    /// to the server, over the connection the token guards).
    pub async fn create_session(
        &self,
        model: Option<String>,
        workspace: Option<String>,
        permission_mode: Option<agentbus_engine::protocol::PermissionMode>,
        agent: Option<String>,
        mcp_servers: Option<McpServers>,
    ) -> Result<SessionId, RemoteError> {
        let body = CreateSession {
            model,
            title: None,
            workspace,
            context: None,
            permission_mode,
            agent,
            mcp_servers,
        };
        let created: Created = self
            .send(
                "creating a session",
                self.request(reqwest::Method::POST, self.url(&["sessions"]))
                    .json(&body),
            )
            .await?;
        Ok(SessionId(created.id))
    }

    /// The server's model profiles.
    pub async fn models(&self) -> Result<Models, RemoteError> {
        let url = self.url(&["models"]);
        self.send("the model list", self.request(reqwest::Method::GET, url))
            .await
    }

    /// The named agents a session in `workspace` can run as.
    pub async fn agents(&self, workspace: &Path) -> Result<Agents, RemoteError> {
        let mut url = self.url(&["agents"]);
        url.query_pairs_mut()
            .append_pair("workspace", &workspace.display().to_string());
        self.send("the agent list", self.request(reqwest::Method::GET, url))
            .await
    }

    /// Load a stored session (by id or a unique prefix of one) on the
    /// server — with `mcp_servers`, giving it exactly those of its own;
    /// answers the session as it is then: running there, or (on a node of
    /// a cluster) followed there from the node that drives it.
    pub async fn open_session(
        &self,
        id: &str,
        mcp_servers: Option<McpServers>,
    ) -> Result<Session, RemoteError> {
        let url = self.url(&["sessions", id, "open"]);
        let body = OpenSession { mcp_servers };
        self.send(
            "opening a session",
            self.request(reqwest::Method::POST, url).json(&body),
        )
        .await
    }

    /// The stored sessions, most recent first.
    pub async fn sessions(&self) -> Result<Vec<Session>, RemoteError> {
        let sessions: Sessions = self
            .send(
                "the session list",
                self.request(reqwest::Method::GET, self.url(&["sessions"])),
            )
            .await?;
        Ok(sessions.sessions)
    }

    /// Queue a control command in a session (the input's
    /// `{"command": ...}` form).
    pub async fn submit_control(
        &self,
        id: &SessionId,
        command: &agentbus_engine::protocol::ControlCommand,
    ) -> Result<InputId, RemoteError> {
        let url = self.url(&["sessions", &id.0, "input"]);
        let accepted: Accepted = self
            .send(
                "a command",
                self.request(reqwest::Method::POST, url).json(command),
            )
            .await?;
        Ok(accepted.input_id)
    }

    /// Send a query with images (the input's `images`).
    pub async fn submit_query(
        &self,
        id: &SessionId,
        text: String,
        images: Vec<agentbus_engine::protocol::Image>,
    ) -> Result<InputId, RemoteError> {
        let url = self.url(&["sessions", &id.0, "input"]);
        let mut body = serde_json::json!({ "text": text });
        if !images.is_empty() {
            let images: Vec<serde_json::Value> = images
                .iter()
                .map(|i| serde_json::json!({"media_type": i.media_type, "data": i.data}))
                .collect();
            body["images"] = serde_json::Value::Array(images);
        }
        let accepted: Accepted = self
            .send(
                "an input",
                self.request(reqwest::Method::POST, url).json(&body),
            )
            .await?;
        Ok(accepted.input_id)
    }

    /// Answer approval request `request_id` of a session (the first answer
    /// wins: a request settled already is refused with 409, an unknown one
    /// with 404 naming the waiting ones).
    pub async fn decide(
        &self,
        id: &SessionId,
        request_id: &str,
        decision: &agentbus_engine::protocol::ApprovalDecision,
    ) -> Result<(), RemoteError> {
        let url = self.url(&["sessions", &id.0, "approvals", request_id]);
        let _: crate::api::Settled = self
            .send(
                "an approval decision",
                self.request(reqwest::Method::POST, url).json(decision),
            )
            .await?;
        Ok(())
    }

    /// The stored events of a session with `after_seq < seq <= up_to` (all
    /// after `after_seq` when `None`), read from `/history` a page of turns
    /// at a time, newest first.
    pub async fn stored_events(
        &self,
        id: &SessionId,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, RemoteError> {
        let wanted = |seq: u64| seq > after_seq && up_to.is_none_or(|up_to| seq <= up_to);
        let mut before = up_to.map(|up_to| up_to + 1);
        let mut events = Vec::new();
        loop {
            let mut url = self.url(&["sessions", &id.0, "history"]);
            url.query_pairs_mut()
                .append_pair("turns", &HistoryQuery::MAX_TURNS.to_string());
            if let Some(before) = before {
                url.query_pairs_mut()
                    .append_pair("before", &before.to_string());
            }
            let page: History = self
                .send(
                    "the session's history",
                    self.request(reqwest::Method::GET, url),
                )
                .await?;
            let reached = page
                .events
                .first()
                .is_none_or(|first| first.seq <= after_seq + 1);
            let mut older: Vec<EventEnvelope> =
                page.events.into_iter().filter(|e| wanted(e.seq)).collect();
            older.append(&mut events);
            events = older;
            match page.next_before {
                Some(next) if !reached => before = Some(next),
                _ => return Ok(events),
            }
        }
    }

    /// Delete a session (204; 404 when there is none).
    pub async fn delete_session(&self, id: &SessionId) -> Result<(), RemoteError> {
        let url = self.url(&["sessions", &id.0]);
        let response = self
            .request(reqwest::Method::DELETE, url)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        if !response.status().is_success() {
            return Err(self.refusal(response).await);
        }
        Ok(())
    }

    /// Cancel a session's running turn.
    pub async fn interrupt(&self, id: &SessionId) -> Result<(), RemoteError> {
        let url = self.url(&["sessions", &id.0, "interrupt"]);
        let _: serde_json::Value = self
            .send("an interrupt", self.request(reqwest::Method::POST, url))
            .await?;
        Ok(())
    }
}
