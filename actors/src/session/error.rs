//! Why a session, or the set of sessions, could not do what was asked.
//!
//! One error for every session operation a front end can call: each variant
//! says what went wrong in words a user can act on (an HTTP front end maps
//! them to status codes).

use crate::protocol::SessionId;
use crate::store::StoreError;

/// Why a session could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("unknown model profile `{name}`; configured profiles: {available}")]
    UnknownProfile { name: String, available: String },
    #[error("unknown agent `{name}`; agents: {available}")]
    UnknownAgent { name: String, available: String },
    #[error("session {0} is not running")]
    Gone(SessionId),
    #[error("agentbus is shutting down: no session can be started or loaded")]
    ShuttingDown,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the input was not accepted (nothing was queued): could not store it: {0}")]
    NotAccepted(StoreError),
    #[error("no approval request `{request_id}` is waiting in this session{}", waiting_hint(.waiting))]
    UnknownApproval {
        request_id: String,
        waiting: Vec<String>,
    },
    #[error("approval request `{request_id}` was already settled (the first answer wins)")]
    ApprovalSettled { request_id: String },
    /// The node that drives the session (on a cluster) refused or did not
    /// take the input, saying why.
    #[error("{message}")]
    Remote { message: String, failure: Failure },
    /// A rewind or `/undo` that could not be done.
    #[error(transparent)]
    Rewind(#[from] crate::checkpoint::rewind::RewindError),
    #[error("internal error: {0}")]
    Internal(String),
}

fn waiting_hint(waiting: &[String]) -> String {
    if waiting.is_empty() {
        "; none is".to_string()
    } else {
        format!("; waiting: {}", waiting.join(", "))
    }
}

/// A request to a session actor that failed: its own error, or the actor
/// not running.
impl<M> From<kameo::error::SendError<M, SessionError>> for SessionError {
    fn from(e: kameo::error::SendError<M, SessionError>) -> Self {
        match e {
            kameo::error::SendError::HandlerError(e) => e,
            other => SessionError::Internal(other.to_string()),
        }
    }
}

/// What kind of failure a [`SessionError`] is, for front ends that answer
/// with a status (HTTP) instead of the message alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No such session (or no session id starts with the prefix).
    NotFound,
    /// The request itself was wrong: an unknown profile or agent.
    Invalid,
    /// The sessions' state stands in the way: another agentbus process
    /// (or node of the cluster) drives the session, an id prefix matches more than one session, or
    /// a fork point is past the end of the log (so far), a rewind names a
    /// seq that is not a user turn's, or there is nothing to undo.
    Conflict,
    /// agentbus is shutting down, another process keeps the store locked,
    /// the store's server cannot be reached, or the store cannot keep what
    /// was asked (full or failing): worth trying again later.
    Unavailable,
    /// Anything else: a store failure, a bug.
    Internal,
}

impl SessionError {
    /// What kind of failure this is.
    pub fn failure(&self) -> Failure {
        match self {
            SessionError::UnknownProfile { .. } | SessionError::UnknownAgent { .. } => {
                Failure::Invalid
            }
            SessionError::Gone(_) => Failure::NotFound,
            SessionError::ShuttingDown => Failure::Unavailable,
            SessionError::Store(e) => store_failure(e),
            SessionError::NotAccepted(_) => Failure::Unavailable,
            SessionError::UnknownApproval { .. } => Failure::NotFound,
            SessionError::ApprovalSettled { .. } => Failure::Conflict,
            SessionError::Remote { failure, .. } => *failure,
            SessionError::Rewind(e) => {
                use crate::checkpoint::rewind::RewindError;
                match e {
                    // As a fork point past the log: the request's form is
                    // right, the session's log does not have such a turn.
                    RewindError::NotATurn { .. } | RewindError::NothingToUndo => Failure::Conflict,
                    RewindError::Store(e) => store_failure(e),
                    _ => Failure::Internal,
                }
            }
            SessionError::Internal(_) => Failure::Internal,
        }
    }
}

/// What kind of failure a store error is.
fn store_failure(e: &StoreError) -> Failure {
    match e {
        StoreError::NotFound { .. } => Failure::NotFound,
        // The state stands in the way, not the request's form: a
        // prefix that was unique becomes ambiguous as sessions are
        // added; a fork point the log has not reached yet.
        StoreError::Busy { .. }
        | StoreError::HeldByNode { .. }
        | StoreError::Fenced { .. }
        | StoreError::Ambiguous { .. }
        | StoreError::SeqOutOfRange { .. } => Failure::Conflict,
        // Worth trying again once the other process lets go, or
        // once Postgres answers.
        StoreError::Locked { .. }
        | StoreError::Connect { .. }
        | StoreError::ConnectionLost { .. } => Failure::Unavailable,
        _ => Failure::Internal,
    }
}
