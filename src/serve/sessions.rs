//! `/v1/sessions...`: create, list, show, open (with MCP servers of its
//! own), delete, fork, export, send input, interrupt, read the
//! conversation, rewind (files and/or conversation to before a turn) and
//! undo. One handler per operation; each finds the session through
//! the runtime (an id or a unique prefix) and maps failures to the status
//! that says what was wrong.

use super::access::{self, Need};
use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiQuery, ErrorBody};
use super::state::AppState;
use crate::api::{
    Accepted, CreateSession, Created, Earlier, Fork, History, HistoryQuery, Input, ListQuery,
    McpServers, Messages, OpenSession, ResultsSummed, Rewind, Rewinds, Session, SessionChange,
    Sessions, Undo,
};
use agentbus_engine::SessionOptions;
use agentbus_engine::protocol::checkpoint::RewindReport;
use agentbus_engine::protocol::{
    AgentMessage, EventEnvelope, InputId, SessionId, SessionInput, SystemSubtype,
};
use agentbus_engine::runtime::{ListCursor, ListPage, RewindOptions, SessionDoor, SessionHandle};
use agentbus_engine::settings::McpServerConfig;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The session `id` names (an id or a unique prefix), its events from
/// after `after_seq`: loaded here, or followed from the node of the
/// cluster that drives it. Whether `caller` may drive it too.
pub async fn reach(
    state: &AppState,
    caller: &Caller,
    id: &str,
    after_seq: u64,
) -> Result<(Arc<dyn SessionDoor>, bool), ApiError> {
    let (id, record) = access::session(state, caller, id, Need::Follow).await?;
    let drives = access::allows(caller, &record, Need::Drive);
    Ok((state.runtime.reach_session(&id, after_seq).await?, drives))
}

/// Gives `input` to the session `id` names, wherever it runs (this node,
/// or the node of the cluster that drives it), as sent by `caller`.
pub async fn send(
    state: &AppState,
    caller: &Caller,
    id: &str,
    input: SessionInput,
) -> Result<Option<InputId>, ApiError> {
    let (id, _) = access::session(state, caller, id, Need::Drive).await?;
    send_to(state, caller, &id, input).await
}

/// Gives `input` to session `id`, which `caller` may drive: within the
/// caller's limits, stamped with its name.
pub async fn send_to(
    state: &AppState,
    caller: &Caller,
    id: &SessionId,
    input: SessionInput,
) -> Result<Option<InputId>, ApiError> {
    access::command_allowed(caller, &input)?;
    access::within_busy_limit(state, caller, id, &input).await?;
    Ok(state
        .runtime
        .send_input(id, access::stamped(input, caller))
        .await?)
}

async fn view(state: &AppState, id: &SessionId) -> Result<Session, ApiError> {
    let record = state
        .runtime
        .stored()
        .get(id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
    let loaded = state.runtime.session(id).await;
    let busy = busy(state, id, loaded.as_ref()).await;
    let waiting = pending_approvals(loaded.as_ref()).await;
    Ok(Session::new(record, loaded.is_some(), busy, waiting))
}

/// Whether session `id` runs a turn or command: as its handle says when
/// this server drives it, else as the node of the cluster that drives it
/// last said.
async fn busy(state: &AppState, id: &SessionId, loaded: Option<&SessionHandle>) -> bool {
    match loaded {
        Some(handle) => !handle.is_idle().await,
        None => state.runtime.lifecycle().busy_elsewhere(id),
    }
}

/// How many tool calls of a session loaded here wait for the user's
/// approval (none for a session not loaded here).
async fn pending_approvals(loaded: Option<&SessionHandle>) -> u32 {
    match loaded {
        Some(handle) => handle.pending_approvals().await,
        None => 0,
    }
}

#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(ListQuery),
    responses((status = 200, description = "Success", body = Sessions), (status = 400, description = "The query string is invalid", body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<Sessions>, ApiError> {
    let after = query
        .cursor()
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("invalid `after`: {e}")))?;
    let limit = query.limit.map(|n| n as usize);
    let page = ListPage {
        limit,
        after,
        visible_to: access::visible_to(&caller),
    };
    let records = state.runtime.stored().list(page).await?;
    let full = limit.is_some_and(|limit| records.len() == limit && limit > 0);
    let next = records
        .last()
        .filter(|_| full)
        .map(|last| ListCursor::after(last).to_string());
    let mut sessions = Vec::with_capacity(records.len());
    for record in records {
        let loaded = state.runtime.session(&record.id).await;
        let busy = busy(&state, &record.id, loaded.as_ref()).await;
        let waiting = pending_approvals(loaded.as_ref()).await;
        sessions.push(Session::new(record, loaded.is_some(), busy, waiting));
    }
    Ok(Json(Sessions { sessions, next }))
}

/// The MCP servers a request gives, checked: a bad entry is a 400 naming
/// the server and the field. (Whether a server starts is no part of the
/// answer: one that cannot is a status event of the session.)
fn given_servers(
    servers: Option<McpServers>,
) -> Result<Option<BTreeMap<String, McpServerConfig>>, ApiError> {
    let Some(servers) = servers else {
        return Ok(None);
    };
    if servers.0.len() > McpServers::MAX {
        return Err(ApiError::bad_request(format!(
            "`mcp_servers` gives {} servers; a session may be given at most {}",
            servers.0.len(),
            McpServers::MAX
        )));
    }
    servers
        .settings()
        .map(Some)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

#[utoipa::path(post, path = "/v1/sessions", tag = "sessions", request_body(content = Option<CreateSession>, description = "Optional: without a body (or one that is not JSON) the session gets the server's settings"),
    responses((status = 201, description = "Created", body = Created), (status = 400, description = "The request is invalid; the error says why", body = ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Option<ApiJson<CreateSession>>,
) -> Result<impl IntoResponse, ApiError> {
    access::may_create(&caller)?;
    let body = body.map(|ApiJson(b)| b).unwrap_or_default();
    let workspace = match body.workspace {
        Some(dir) => {
            let path = std::path::PathBuf::from(&dir);
            if !path.is_dir() {
                return Err(ApiError::bad_request(format!(
                    "workspace `{dir}` is not a directory on the server"
                )));
            }
            Some(path)
        }
        None => None,
    };
    let context = match body.context {
        None => None,
        Some(value) => {
            // serde would read the struct from an array too.
            if !value.is_object() {
                return Err(ApiError::bad_request(
                    "`context` must be an object of `[context]` keys, such as {\"max_tokens\": 8000}",
                ));
            }
            let context: agentbus_engine::protocol::ContextConfig =
                serde_json::from_value(value)
                    .map_err(|e| ApiError::bad_request(format!("`context`: {e}")))?;
            context
                .check()
                .map_err(|e| ApiError::bad_request(format!("`context`: {e}")))?;
            if let Some(name) = &context.compact_model {
                let settings = state.runtime.settings();
                if !settings.models.contains_key(name) {
                    let names: Vec<&str> = settings.models.keys().map(String::as_str).collect();
                    return Err(ApiError::bad_request(format!(
                        "`context`: `compact_model` names no model profile (`{name}`); configured profiles: {}",
                        names.join(", ")
                    )));
                }
            }
            Some(context)
        }
    };
    let mcp_servers = given_servers(body.mcp_servers)?.unwrap_or_default();
    let options = SessionOptions {
        model: body.model,
        workspace,
        title: body.title,
        context,
        permission_mode: body.permission_mode,
        agent: body.agent,
        mcp_servers,
        created_by: Some(caller.name.to_string()),
        ..SessionOptions::default()
    };
    let session = state.runtime.create_session(options).await?;
    Ok((
        StatusCode::CREATED,
        Json(Created {
            id: session.id().to_string(),
        }),
    ))
}

#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "Success", body = Session), (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Session>, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Follow).await?;
    Ok(Json(view(&state, &id).await?))
}

#[utoipa::path(post, path = "/v1/sessions/{id}/open", tag = "sessions", operation_id = "open_session",
    request_body(content = Option<OpenSession>, description = "Optional: without a body (or without `mcp_servers`) the session keeps the MCP servers it has"),
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "The session, loaded (on a node of a cluster with a live plane: or followed from here, when another node drives it)", body = Session), (status = 400, description = "The request is invalid; the error says why", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody),
              (status = 409, description = "The session is in use by another agentbus process (or another node of the cluster; with a live plane, only when `mcp_servers` are given)", body = ErrorBody)))]
/// Load a session (if it is not loaded) and, with `mcp_servers`, give it
/// exactly those MCP servers of its own, replacing any it had. On a node of
/// a cluster, a session another node drives is answered as it is (this
/// node follows it, and its inputs go there); giving it servers there is
/// a 409.
pub async fn open_session(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Option<ApiJson<OpenSession>>,
) -> Result<Json<Session>, ApiError> {
    let body = body.map(|ApiJson(b)| b).unwrap_or_default();
    let servers = given_servers(body.mcp_servers)?;
    let need = match servers {
        Some(_) => Need::Drive,
        None => Need::Follow,
    };
    let (id, _) = access::session(&state, &caller, &id, need).await?;
    let giving = servers.as_ref().is_some_and(|s| !s.is_empty());
    let opened = match servers {
        Some(servers) => state.runtime.open_session_with(&id, servers).await,
        None => state.runtime.open_session(&id).await,
    };
    match opened {
        // Asked after its start: the stored record includes what the load
        // wrote (its `session_started`).
        Ok(session) => {
            session.is_idle().await;
        }
        // Driven by another node, which this one follows and sends inputs
        // to: nothing to load here (an empty `mcp_servers` leaves the
        // owner's as they are). Servers of its own would have to start
        // there, which only its node can do.
        Err(e) if state.runtime.followed_from_here(&e) && !giving => {}
        Err(e) if state.runtime.followed_from_here(&e) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "{e}. `mcp_servers` can only be given to a session on the node that drives it; \
                     open it without them here (its events and inputs reach it from any node)"
                ),
            ));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(Json(view(&state, &id).await?))
}

#[utoipa::path(patch, path = "/v1/sessions/{id}", tag = "sessions", request_body = SessionChange,
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "The session, changed", body = Session), (status = 400, description = "The request is invalid; the error says why", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody)))]
/// Change a stored session: its `title` (kept; a later query does not
/// change it). Announced on the lifecycle stream (`renamed`).
pub async fn rename(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(change): ApiJson<SessionChange>,
) -> Result<Json<Session>, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Drive).await?;
    if let Some(viewers) = change.viewers {
        let viewers = access::checked_viewers(viewers)?;
        state.runtime.stored().set_viewers(&id, viewers).await?;
    }
    if let Some(title) = change.title {
        // As the OpenAPI document says (`SessionChange::title`): measured
        // as sent, then trimmed.
        if title.chars().count() > SessionChange::MAX_TITLE {
            return Err(ApiError::bad_request(format!(
                "`title` is longer than {} characters",
                SessionChange::MAX_TITLE
            )));
        }
        if title.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "`title` must be one line of text (no control characters)",
            ));
        }
        let title = title.trim();
        if title.is_empty() {
            return Err(ApiError::bad_request("`title` must not be blank"));
        }
        state
            .runtime
            .stored()
            .rename(&id, title, Some(caller.name.to_string()))
            .await?;
    }
    Ok(Json(view(&state, &id).await?))
}

#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "No such session", body = ErrorBody), (status = 409, description = "The session is in use by another agentbus process (or another node of the cluster)", body = ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Drive).await?;
    state
        .runtime
        .delete_session(&id, Some(caller.name.to_string()))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/v1/sessions/{id}/fork", tag = "sessions", request_body(content = Option<Fork>, description = "Optional: without a body the whole log is copied"),
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 201, description = "Created", body = Created), (status = 400, description = "The request is invalid; the error says why", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody),
              (status = 409, description = "`at_seq` is past the end of the session's log (yet)", body = ErrorBody)))]
pub async fn fork(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Option<ApiJson<Fork>>,
) -> Result<impl IntoResponse, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Drive).await?;
    let at_seq = body.and_then(|ApiJson(b)| b.at_seq);
    let record = state
        .runtime
        .stored()
        .fork(&id, at_seq, Some(caller.name.to_string()))
        .await?;
    Ok((StatusCode::CREATED, Json(Created { id: record.id.0 })))
}

#[utoipa::path(get, path = "/v1/sessions/{id}/export", tag = "sessions",
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "The export document", body = Object), (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn export(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Follow).await?;
    let document = state.runtime.stored().export(&id).await?;
    Ok(Json(document))
}

#[utoipa::path(post, path = "/v1/sessions/{id}/input", tag = "sessions", request_body = Input,
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 202, description = "Queued", body = Accepted), (status = 400, description = "The request is invalid; the error says why", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody),
              (status = 409, description = "The session is in use by another agentbus process (or another node of the cluster)", body = ErrorBody)))]
pub async fn input(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<Input>,
) -> Result<impl IntoResponse, ApiError> {
    let input = input.into_session_input(None);
    let input_id = send(&state, &caller, &id, input).await?.ok_or_else(|| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the session took the input but gave no input id",
        )
    })?;
    Ok((StatusCode::ACCEPTED, Json(Accepted { input_id })))
}

#[utoipa::path(post, path = "/v1/sessions/{id}/interrupt", tag = "sessions",
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 202, description = "The running turn (if any) is being cancelled; it ends with a `result` (stop_reason `cancelled`). Queued inputs stay queued", body = Object), (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn interrupt(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    send(&state, &caller, &id, SessionInput::Interrupt).await?;
    Ok((StatusCode::ACCEPTED, Json(serde_json::json!({}))))
}

#[utoipa::path(get, path = "/v1/sessions/{id}/messages", tag = "sessions",
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "Success", body = Messages), (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn messages(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Messages>, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Follow).await?;
    let (history, events) = state.runtime.conversation(&id).await?;
    Ok(Json(Messages { history, events }))
}

#[utoipa::path(get, path = "/v1/sessions/{id}/history", tag = "sessions",
    params(("id" = String, Path, description = "Session id or a unique prefix"), HistoryQuery),
    responses((status = 200, description = "The stored events of the turns asked for, where to ask for the ones before, and (for the newest page) what the earlier events say", body = History),
              (status = 400, description = "The query string is invalid", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody)))]
/// A page of a session's stored log, a whole number of turns (each from
/// its `user` event to the next): the newest `turns`, or those before
/// `before`. Reads the store only (it never loads the session).
pub async fn history(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<HistoryQuery>,
) -> Result<Json<History>, ApiError> {
    let turns = query.turns.unwrap_or(HistoryQuery::DEFAULT_TURNS);
    if turns == 0 || turns > HistoryQuery::MAX_TURNS {
        return Err(ApiError::bad_request(format!(
            "`turns` is {turns}; it must be 1 to {}",
            HistoryQuery::MAX_TURNS
        )));
    }
    if let Some(before) = query.before {
        crate::api::checked_seq(before, "`before`").map_err(ApiError::bad_request)?;
        if before == 0 {
            return Err(ApiError::bad_request("`before` must be at least 1"));
        }
    }
    let (id, _) = access::session(&state, &caller, &id, Need::Follow).await?;
    let stored = state.runtime.stored();
    let record = stored
        .get(&id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
    let last_seq = record.last_seq;
    let up_to = match query.before {
        Some(before) => (before - 1).min(last_seq),
        None => last_seq,
    };
    // Read backwards in growing chunks until the page holds `turns`
    // queries or reaches the start.
    let mut events: Vec<EventEnvelope> = Vec::new();
    let mut to = up_to;
    let mut chunk = 256u64;
    let (page, more) = loop {
        let from = to.saturating_sub(chunk);
        let mut part = stored.events(&id, from, Some(to)).await?;
        part.append(&mut events);
        events = part;
        let queries = events.iter().filter(|e| is_query(e)).count();
        if from == 0 || queries >= turns as usize {
            let start = page_start(&events, turns as usize);
            break (events.split_off(start), start > 0 || from > 0);
        }
        to = from;
        chunk = chunk.saturating_mul(2);
    };
    let next_before = page.first().filter(|_| more).map(|e| e.seq);
    // The newest page: what the events before it set (only the types that
    // can are read).
    let earlier = match (query.before, next_before) {
        (Some(_), _) => None,
        (None, None) => Some(Earlier::default()),
        (None, Some(first)) => {
            let before = stored
                .events_of_types(&id, first, &["system", "result"])
                .await?;
            Some(earlier(&before))
        }
    };
    Ok(Json(History {
        events: page,
        next_before,
        last_seq,
        earlier,
    }))
}

fn is_query(event: &EventEnvelope) -> bool {
    matches!(event.message, AgentMessage::User(_))
}

/// Where the last `turns` turns of `events` start: the `turns`-th `user`
/// event from the end, or 0 when there are not that many.
fn page_start(events: &[EventEnvelope], turns: usize) -> usize {
    let mut seen = 0;
    for (i, event) in events.iter().enumerate().rev() {
        if is_query(event) {
            seen += 1;
            if seen == turns {
                return i;
            }
        }
    }
    0
}

/// What the events before a page say that the page's state comes from:
/// the `system` events that change it, and the `result`s summed between
/// them.
fn earlier(events: &[EventEnvelope]) -> Earlier {
    let mut out = Earlier::default();
    let mut run: Option<ResultsSummed> = None;
    for event in events {
        match &event.message {
            AgentMessage::System(system)
                if matches!(
                    system.subtype,
                    SystemSubtype::SessionStarted
                        | SystemSubtype::Mode
                        | SystemSubtype::Agent
                        | SystemSubtype::ModelSwitched
                        | SystemSubtype::Plan
                        | SystemSubtype::Cleared
                        | SystemSubtype::Usage
                        | SystemSubtype::Context
                ) =>
            {
                out.results.extend(run.take());
                out.events.push(event.clone());
            }
            AgentMessage::Result(result) => {
                let sum = run.get_or_insert_with(|| ResultsSummed {
                    from_seq: event.seq,
                    ..ResultsSummed::default()
                });
                sum.to_seq = event.seq;
                sum.turns += 1;
                sum.usage.input_tokens += result.usage.input_tokens;
                sum.usage.output_tokens += result.usage.output_tokens;
                sum.usage.cache_read_input_tokens += result.usage.cache_read_input_tokens;
                sum.usage.cache_creation_input_tokens += result.usage.cache_creation_input_tokens;
                if result.context.is_some() {
                    sum.context = result.context;
                }
            }
            _ => {}
        }
    }
    out.results.extend(run);
    out
}

/// Refuse to change session `id`'s files or conversation while it runs a
/// turn (or has inputs queued): what a turn writes meanwhile would be lost
/// or half taken back.
async fn refuse_busy(state: &AppState, id: &SessionId) -> Result<(), ApiError> {
    let loaded = state.runtime.session(id).await;
    if busy(state, id, loaded.as_ref()).await {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "session {id} is running a turn: wait until it is idle (its `result`), \
                 or interrupt it first (POST /v1/sessions/{id}/interrupt), then rewind"
            ),
        ));
    }
    Ok(())
}

#[utoipa::path(get, path = "/v1/sessions/{id}/rewind", tag = "sessions", operation_id = "rewind_turns",
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "The session's user turns, each with what it changed in the workspace", body = Rewinds), (status = 404, description = "No such session", body = ErrorBody)))]
/// The turns a rewind can go back to: each user turn's seq and query, and
/// the files it changed (with line counts), oldest first.
pub async fn rewind_turns(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Rewinds>, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Follow).await?;
    let turns = state.runtime.stored().changes(&id).await?;
    Ok(Json(Rewinds { turns }))
}

#[utoipa::path(post, path = "/v1/sessions/{id}/rewind", tag = "sessions", request_body = Rewind,
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "What the rewind did (or, with `preview`, would do): each file's action and diff; the fork the conversation continues in", body = crate::api_schemas::RewindReport),
              (status = 400, description = "The request is invalid; the error says why", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody),
              (status = 409, description = "`seq` is not the seq of one of the session's `user` events, or the session is running a turn (not for a preview): wait for its `result`, or interrupt it", body = ErrorBody)))]
/// Take back what the turns from `seq` on did: the files this session
/// changed return to their state before the turn (`code`), the
/// conversation continues in a fork made before it (`conversation`), or
/// both (the default). A file changed since by someone else is a
/// conflict, left alone unless `overwrite`. `preview` changes nothing.
pub async fn rewind(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Rewind>,
) -> Result<Json<RewindReport>, ApiError> {
    let (id, _) = access::session(&state, &caller, &id, Need::Drive).await?;
    if !body.preview {
        refuse_busy(&state, &id).await?;
    }
    let options = RewindOptions {
        mode: body.mode.into(),
        preview: body.preview,
        overwrite: body.overwrite,
    };
    let report = state
        .runtime
        .stored()
        .rewind(&id, body.seq, options)
        .await?;
    Ok(Json(report))
}

#[utoipa::path(post, path = "/v1/sessions/{id}/undo", tag = "sessions",
    request_body(content = Option<Undo>, description = "Optional: without a body, conflicts are left alone and the undo is done"),
    params(("id" = String, Path, description = "Session id or a unique prefix")),
    responses((status = 200, description = "What the undo did (or, with `preview`, would do): each file's action and diff", body = crate::api_schemas::RewindReport),
              (status = 400, description = "The request is invalid; the error says why", body = ErrorBody), (status = 404, description = "No such session", body = ErrorBody),
              (status = 409, description = "Nothing to undo (no turn changed files that are not taken back already), or the session is running a turn (not for a preview)", body = ErrorBody)))]
/// Take back the file changes of the last turn that changed files and is
/// not taken back already; the conversation stays.
pub async fn undo(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Option<ApiJson<Undo>>,
) -> Result<Json<RewindReport>, ApiError> {
    let body = body.map(|ApiJson(b)| b).unwrap_or_default();
    let (id, _) = access::session(&state, &caller, &id, Need::Drive).await?;
    if !body.preview {
        refuse_busy(&state, &id).await?;
    }
    let report = state
        .runtime
        .stored()
        .undo(&id, body.preview, body.overwrite)
        .await?;
    Ok(Json(report))
}
