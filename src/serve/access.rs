//! What each token may do with a session: the rules of the roles.
//!
//! - `admin` sees and drives every session.
//! - `user` creates sessions, and sees, drives, forks and deletes the ones
//!   it created; it follows (never drives) the ones it was given.
//! - `viewer` follows the sessions it was given (`PATCH
//!   /v1/sessions/{id}` `{"viewers": [...]}`, by their creator or an
//!   admin), and sends nothing.
//!
//! "Follow" is reading: the record, the conversation, the events, the
//! files' history. "Drive" is everything that changes the session: input,
//! interrupt, approvals, rewind, rename, fork, delete, opening it with
//! servers. A refusal is a 403 that names the role that would be needed,
//! never who owns the session or who else may see it. Also here: the
//! `max_busy_sessions` limit of a token (429), and stamping inputs with
//! the token's name (what a client sends as `by` is replaced).
//!
//! Never: decide anything from the request's body or query (only from the
//! [`Caller`] the token gave and the stored record).

use super::auth::Caller;
use super::error::ApiError;
use super::state::AppState;
use agentbus_engine::protocol::{SessionId, SessionInput};
use agentbus_engine::runtime::SessionRecord;
use agentbus_engine::settings::Role;

/// What a request does to a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Read it.
    Follow,
    /// Change it.
    Drive,
}

/// Whether `caller` may do what `need` says to the session `record`
/// describes.
pub fn allows(caller: &Caller, record: &SessionRecord, need: Need) -> bool {
    if caller.role == Role::Admin {
        return true;
    }
    let created = record.created_by.as_deref() == Some(&*caller.name);
    let given = record.viewers.iter().any(|name| **name == *caller.name);
    match need {
        Need::Drive => created && caller.role == Role::User,
        Need::Follow => created || given,
    }
}

/// The refusal for a caller that may not do `need` to a session.
fn refusal(caller: &Caller, record: &SessionRecord, need: Need) -> ApiError {
    let created = record.created_by.as_deref() == Some(&*caller.name);
    let given = record.viewers.iter().any(|name| **name == *caller.name);
    tracing::debug!(token = %caller.name, session = %record.id, ?need, "refused: the token's role");
    ApiError::forbidden(match (caller.role, need) {
        (Role::Viewer, Need::Drive) if given => {
            "this token's role is `viewer`: changing a session needs role `user` (its creator) or `admin`"
        }
        (Role::User, Need::Drive) if !created && given => {
            "this session was given to this token to follow: changing it needs its creator's token or role `admin`"
        }
        _ => "this session is not this token's: it needs role `admin`",
    })
}

/// The session `id` names (an id or a unique prefix), when `caller` may do
/// `need` to it: its id and record. A 404 when there is none; a 403 when
/// the caller may not.
pub async fn session(
    state: &AppState,
    caller: &Caller,
    id: &str,
    need: Need,
) -> Result<(SessionId, SessionRecord), ApiError> {
    let id = state.runtime.resolve(id).await?;
    let record = state
        .runtime
        .stored()
        .get(&id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
    if allows(caller, &record, need) {
        Ok((id, record))
    } else {
        Err(refusal(caller, &record, need))
    }
}

/// Refuse a caller that may not create sessions (a `viewer`).
pub fn may_create(caller: &Caller) -> Result<(), ApiError> {
    match caller.role {
        Role::Viewer => Err(ApiError::forbidden(
            "this token's role is `viewer`: creating a session needs role `user` or `admin`",
        )),
        Role::User | Role::Admin => Ok(()),
    }
}

/// Refuse, to a caller that is not an admin, the commands that reach
/// other sessions than the one they are sent to: `/sessions` and
/// `/resume` (which would list and open any stored session) and `/load`
/// (which makes a session of a file, owned by nobody).
pub fn command_allowed(caller: &Caller, input: &SessionInput) -> Result<(), ApiError> {
    use agentbus_engine::protocol::ControlCommand;
    if caller.role == Role::Admin {
        return Ok(());
    }
    let parsed;
    let command = match input {
        SessionInput::Control { command, .. } => command,
        SessionInput::Query { text, .. } => match agentbus_engine::runtime::parse_command(text) {
            Some(Ok(command)) => {
                parsed = command;
                &parsed
            }
            _ => return Ok(()),
        },
        _ => return Ok(()),
    };
    match command {
        ControlCommand::ListSessions
        | ControlCommand::Resume { .. }
        | ControlCommand::Load { .. } => Err(ApiError::forbidden(format!(
            "`/{}` reaches other sessions than this one: it needs role `admin` (the session list is `GET /v1/sessions`)",
            command.name()
        ))),
        _ => Ok(()),
    }
}

/// The viewers a `PATCH` gives, checked as the OpenAPI document says
/// (sorted, each once).
pub fn checked_viewers(given: Vec<crate::api::TokenName>) -> Result<Vec<String>, ApiError> {
    use crate::api::SessionChange;
    if given.len() > SessionChange::MAX_VIEWERS {
        return Err(ApiError::bad_request(format!(
            "`viewers` names {} tokens; a session is given to at most {}",
            given.len(),
            SessionChange::MAX_VIEWERS
        )));
    }
    let mut names = Vec::with_capacity(given.len());
    for crate::api::TokenName(name) in given {
        if !super::auth::is_token_name(&name) {
            return Err(ApiError::bad_request(format!(
                "`viewers`: `{name}` is not a token's name (1 to 64 letters, digits, `-`, `_` or `.`)"
            )));
        }
        names.push(name);
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// The name of the token whose sessions a list shows: none for an admin
/// (every session).
pub fn visible_to(caller: &Caller) -> Option<String> {
    (caller.role != Role::Admin).then(|| caller.name.to_string())
}

/// `input` as sent by `caller`: its `by` is the token's name, whatever the
/// client wrote there.
pub fn stamped(input: SessionInput, caller: &Caller) -> SessionInput {
    let by = Some(caller.name.to_string());
    match input {
        SessionInput::Query { text, images, .. } => SessionInput::Query { text, images, by },
        SessionInput::Control { command, .. } => SessionInput::Control { command, by },
        SessionInput::Approval {
            request_id,
            mut decision,
        } => {
            decision.by = by;
            SessionInput::Approval {
                request_id,
                decision,
            }
        }
        SessionInput::Interrupt => SessionInput::Interrupt,
    }
}

/// Refuse an input that would start a turn of one more of `caller`'s
/// sessions than its `max_busy_sessions` lets run at once (429). The
/// count is of its sessions this server drives (on a cluster: this node).
pub async fn within_busy_limit(
    state: &AppState,
    caller: &Caller,
    session: &SessionId,
    input: &SessionInput,
) -> Result<(), ApiError> {
    let Some(max) = caller.max_busy_sessions else {
        return Ok(());
    };
    if !matches!(
        input,
        SessionInput::Query { .. } | SessionInput::Control { .. }
    ) {
        return Ok(());
    }
    let mut busy = 0u32;
    for id in state.runtime.loaded_sessions().await {
        let Some(handle) = state.runtime.session(&id).await else {
            continue;
        };
        if handle.is_idle().await {
            continue;
        }
        // An input to a session already busy only queues.
        if id == *session {
            return Ok(());
        }
        let mine = matches!(
            state.runtime.stored().get(&id).await,
            Ok(Some(record)) if record.created_by.as_deref() == Some(&*caller.name)
        );
        busy += u32::from(mine);
    }
    if busy < max {
        return Ok(());
    }
    tracing::debug!(token = %caller.name, busy, "refused: the token's busy sessions");
    Err(ApiError::too_many(
        format!(
            "this token's sessions already run {busy} turns at once (`max_busy_sessions` = {max} of `[server.tokens.{}]`); send it when one of them ends",
            caller.name
        ),
        5,
    ))
}

/// Which lifecycle events a caller's stream shows: every one to an admin;
/// to others, those of sessions it may follow (looked up once per session
/// and remembered, so a `deleted` session is still known).
pub struct Visible {
    caller: Caller,
    known: std::collections::HashMap<SessionId, bool>,
}

impl Visible {
    /// The most sessions remembered; past it, the memory starts again.
    const REMEMBERED: usize = 4096;

    pub fn new(caller: Caller) -> Visible {
        Visible {
            caller,
            known: std::collections::HashMap::new(),
        }
    }

    /// Whether `event` goes to the caller.
    pub async fn sees(
        &mut self,
        state: &AppState,
        event: &agentbus_engine::protocol::LifecycleEvent,
    ) -> bool {
        if self.caller.role == Role::Admin {
            return true;
        }
        if let Some(&known) = self.known.get(&event.session_id) {
            return known;
        }
        let sees = match state.runtime.stored().get(&event.session_id).await {
            Ok(Some(record)) => allows(&self.caller, &record, Need::Follow),
            // Gone before it was looked up, or the store did not answer:
            // nothing is shown that cannot be checked.
            _ => false,
        };
        if self.known.len() >= Self::REMEMBERED {
            self.known.clear();
        }
        self.known.insert(event.session_id.clone(), sees);
        sees
    }
}
