//! `GET /v1/sessions/{id}/ws`: one WebSocket per client, events out and
//! inputs in, in the same JSON as the rest of the API.
//!
//! Out: each event's envelope as a text frame; `{"accepted": {"input_id"}}`
//! for each input queued; `{"interrupted": true}`; `{"settled":
//! {"request_id"}}` for each approval decision applied; `{"error": "..."}`
//! for a frame that is not an input or a decision refused. In: the body of
//! `POST .../input` (`{"text"}`, `{"command", ...}`) or a tagged
//! [`SessionInput`] — `{"type": "query", "text"}`, `{"type": "control",
//! "command", ...}`, `{"type": "interrupt"}` or `{"type": "approval",
//! "request_id", "decision", "message"?, "save"?}`. Inputs go where `POST
//! .../input` sends them: to the session wherever it runs — on a node of a
//! cluster, to its owner, or claimed here when no node answers for it any
//! more (the socket's events go on). A bad frame never closes the socket; a client too slow to read its events is
//! closed (code 1013, "try again later") and resumes with `?after=`.

use super::auth::Caller;
use super::error::{ApiError, ApiQuery, ErrorBody};
use super::sessions::{reach, send_to};
use super::state::AppState;
use super::stream::ClientFeed;
use crate::api::{After, Input};
use agentbus_engine::protocol::EventEnvelope;
use agentbus_engine::protocol::{SessionId, SessionInput};
use agentbus_engine::runtime::{EventSource, SessionDoor};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Path, State};
use axum::response::Response;
use futures::SinkExt;
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A burst of ready events is written in pieces of at most this many.
const BURST_EVENTS: usize = 256;

/// Close code for "try again later" (the client fell behind, or the server
/// is shutting down).
const TRY_AGAIN_LATER: u16 = 1013;

#[utoipa::path(get, path = "/v1/sessions/{id}/ws", tag = "events",
    params(("id" = String, Path, description = "Session id or a unique prefix"), After),
    responses((status = 101, description = "WebSocket: events out (envelope JSON), inputs in (the body of `POST .../input`, or `{\"type\": \"query\" | \"control\" | \"interrupt\" | \"approval\", ...}`; an approval decision is answered `{\"settled\": {\"request_id\"}}` or `{\"error\"}`)"),
              (status = 400, description = "Not a WebSocket upgrade (the error says which header is missing), or `after` is not a seq", body = ErrorBody),
              (status = 404, description = "No such session", body = ErrorBody),
              (status = 426, description = "The connection cannot be upgraded", body = ErrorBody)))]
pub async fn session_socket(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<After>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let after = query.seq().map_err(ApiError::bad_request)?;
    // A plain GET gets a JSON error like every other refusal (axum's own
    // is plain text).
    let upgrade = upgrade.map_err(|rejection| {
        ApiError::new(
            rejection.status(),
            format!("not a WebSocket upgrade: {}", rejection.body_text()),
        )
    })?;
    let (session, drives) = reach(&state, &caller, &id, after).await?;
    let shutdown = state.shutdown.clone();
    let sender = drives.then_some(caller);
    Ok(upgrade
        .on_upgrade(move |socket| serve_socket(socket, state, session, sender, after, shutdown)))
}

/// `sender`: the caller, when it may drive the session (else its inputs
/// are refused and only events flow).
async fn serve_socket(
    mut socket: WebSocket,
    state: AppState,
    session: Arc<dyn SessionDoor>,
    sender: Option<Caller>,
    after: u64,
    shutdown: CancellationToken,
) {
    let mut feed = ClientFeed::attach(&session, after, &shutdown);
    let _connected = agentbus_engine::metrics::get().stream_client("websocket");
    loop {
        tokio::select! {
            event = feed.next() => {
                let Some(event) = event else {
                    let reason = match shutdown.is_cancelled() {
                        true => "the server is shutting down",
                        false => "the session closed or this client fell behind; reconnect with ?after=LAST_SEQ",
                    };
                    close(&mut socket, reason).await;
                    return;
                };
                // Every event already there goes out in the same write.
                let mut queued = 0;
                let mut next = Some(event);
                while let Some(event) = next {
                    if socket.feed(Message::Text(event_text(&event).into())).await.is_err() {
                        return;
                    }
                    queued += 1;
                    next = if queued < BURST_EVENTS { feed.ready() } else { None };
                }
                if socket.flush().await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => {
                let text = match incoming {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        let reply = json!({"error": "binary frames are not inputs; send JSON text frames"});
                        if socket.send(Message::Text(reply.to_string().into())).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => return,
                };
                let reply = match &sender {
                    Some(caller) => handle_input(&state, caller, session.session_id(), text.as_str()).await,
                    None => json!({"error": "this token may follow this session but not change it: sending needs its creator's token (role `user`) or role `admin`"}),
                };
                if socket.send(Message::Text(reply.to_string().into())).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// An event as a text frame's JSON.
fn event_text(event: &EventEnvelope) -> String {
    serde_json::to_string(event).unwrap_or_else(|e| {
        json!({"error": format!("event {} could not be encoded: {e}", event.seq)}).to_string()
    })
}

/// One frame's input, given to the session wherever it runs — as `POST
/// .../input` gives it: on a node of a cluster whose owner no longer answers
/// for the session, this node claims it.
async fn handle_input(
    state: &AppState,
    caller: &Caller,
    id: &SessionId,
    text: &str,
) -> serde_json::Value {
    let input = match parse_input(text) {
        Ok(input) => input,
        Err(e) => return json!({"error": format!("not an input: {e}")}),
    };
    let input = match input {
        SessionInput::Query { text, images, by } => {
            // Checked as the HTTP input checks them.
            let checked: Result<Vec<_>, _> = images
                .iter()
                .enumerate()
                .map(|(i, image)| {
                    crate::api::checked_image(
                        &format!("images[{i}]"),
                        Some(&image.media_type),
                        &image.data,
                        Some(&image.source),
                    )
                })
                .collect();
            match checked {
                Ok(images) => SessionInput::Query { text, images, by },
                Err(e) => return json!({"error": e}),
            }
        }
        other => other,
    };
    let settled = match &input {
        SessionInput::Approval { request_id, .. } => Some(request_id.clone()),
        _ => None,
    };
    let interrupt = matches!(input, SessionInput::Interrupt);
    match send_to(state, caller, id, input).await {
        Ok(Some(input_id)) => json!({"accepted": {"input_id": input_id}}),
        Ok(None) if interrupt => json!({"interrupted": true}),
        Ok(None) => json!({"settled": {"request_id": settled.unwrap_or_default()}}),
        Err(e) => json!({"error": e.message}),
    }
}

/// A frame as an input: the body of `POST .../input` (`{"text": ...}` or
/// `{"command": ...}`), or a tagged [`SessionInput`] (`{"type": "query" |
/// "control" | "interrupt" | "approval", ...}`, the only way to interrupt
/// or answer an approval request here).
fn parse_input(text: &str) -> Result<SessionInput, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if value.get("type").is_some() {
        return serde_json::from_value(value).map_err(|e| {
            format!("{e}; expected {{\"type\": \"query\", \"text\": \"...\"}}, {{\"type\": \"control\", \"command\": \"clear\"}}, {{\"type\": \"interrupt\"}} or {{\"type\": \"approval\", \"request_id\": \"...\", \"decision\": \"allow_once\" | \"allow_always\" | \"reject\", \"message\"?: \"...\"}}")
        });
    }
    Ok(Input::try_from(value)?.into_session_input(None))
}

async fn close(socket: &mut WebSocket, reason: &str) {
    let frame = CloseFrame {
        code: TRY_AGAIN_LATER,
        reason: reason.into(),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}
