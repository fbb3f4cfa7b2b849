//! [`StoreError`]: every way the session store can fail, as one enum.
//!
//! Exists so that a failure reads as a sentence naming what was being done
//! to which session or file ("session 0193…: append event seq 7: …"), and so
//! that callers can match on the cases they handle (a session that is
//! [`Busy`](StoreError::Busy), an id that is [`Ambiguous`](StoreError::Ambiguous)).
//! Never holds secrets and never panics: data the store cannot read comes out
//! as [`Corrupt`](StoreError::Corrupt), a file that is not a store as
//! [`Unusable`](StoreError::Unusable), a file another process keeps locked as
//! [`Locked`](StoreError::Locked), a Postgres server that cannot be reached
//! as [`Connect`](StoreError::Connect) or
//! [`ConnectionLost`](StoreError::ConnectionLost) (naming the URL without its
//! password).

use super::document::DocumentError;
use crate::protocol::SessionId;
use std::path::PathBuf;
use std::time::Duration;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The folder that holds the database could not be created.
    #[error("cannot create the session store folder {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The database file could not be opened or configured (no permission,
    /// a failing disk, ...).
    #[error("cannot open the session store {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    /// The file could not be read to check what it is.
    #[error("cannot read the session store {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A new store file could not be made.
    #[error("cannot create the session store {}: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The file is there but is not a session store agentbus can use (empty,
    /// not SQLite, damaged, another program's database); nothing was
    /// written to it.
    #[error(
        "the session store {} cannot be used: {problem}; agentbus left the file untouched \
         (move it away and agentbus starts a new store there)",
        path.display()
    )]
    Unusable { path: PathBuf, problem: Unusable },

    /// Another process held the database's lock for longer than the busy
    /// timeout; the operation was not done (a write left nothing behind).
    #[error(
        "the session store {} is locked by another process (still busy after waiting {} ms, \
         `[sessions] busy_timeout_ms`): {operation}{} failed; it works again once that process \
         lets go",
        path.display(),
        waited.as_millis(),
        id.as_ref().map(|id| format!(" (session {id})")).unwrap_or_default()
    )]
    Locked {
        path: PathBuf,
        waited: Duration,
        operation: &'static str,
        id: Option<String>,
    },

    /// The database was written by a newer agentbus whose schema this one
    /// does not know; nothing was changed.
    #[error(
        "the session store {store} has schema version {found}, but this agentbus knows only up to \
         version {supported}; upgrade agentbus (the store was left untouched)"
    )]
    NewerSchema {
        /// The file's path, or the Postgres URL without its password.
        store: String,
        found: i64,
        supported: i64,
    },

    /// Bringing the schema up to date failed; the migration was rolled back.
    #[error("cannot migrate the session store {} to schema version {version}: {source}", path.display())]
    Migrate {
        path: PathBuf,
        version: i64,
        #[source]
        source: rusqlite::Error,
    },

    /// No session has this id (or, for a prefix, no session id starts with it).
    #[error("no stored session matches {id:?}")]
    NotFound { id: String },

    /// A prefix matched more than one session id.
    #[error(
        "{prefix:?} matches more than one session ({}); type more of the id",
        candidates.join(", ")
    )]
    Ambiguous {
        prefix: String,
        /// A few of the matching ids (not necessarily all).
        candidates: Vec<String>,
    },

    /// The id is already taken (creating, forking or importing a session).
    #[error("a session with id {id} already exists")]
    Exists { id: SessionId },

    /// Another live agentbus process holds the session's lease.
    #[error(
        "session {id} is being driven by another agentbus process (pid {pid}); close it there first"
    )]
    Busy { id: SessionId, pid: u32 },

    /// A live node of the cluster drives the session (its lease has not
    /// expired).
    #[error(
        "session {id} is being driven by agentbus node `{node}` ({node_id}) of this cluster; use \
         it through that node (following a session from any node comes with the cluster's live \
         plane)"
    )]
    HeldByNode {
        id: SessionId,
        /// The node's name.
        node: String,
        node_id: String,
    },

    /// This node may no longer write to the session: another node claimed
    /// it (a higher epoch), or this node's lease lapsed. Nothing of the
    /// operation was stored; the session stops on this node.
    #[error("session {id}: this node no longer drives it ({reason}); nothing was stored")]
    Fenced { id: SessionId, reason: String },

    /// An appended event does not come after the session's stored log: its
    /// seq already exists, or is not greater than the last one. The log is
    /// append-only; nothing of the batch was stored.
    #[error(
        "session {id}: cannot append event seq {seq}: the log already reaches seq {last_seq} \
         and stored events are never overwritten (nothing of the batch was stored)"
    )]
    SeqConflict {
        id: SessionId,
        seq: u64,
        last_seq: u64,
    },

    /// An appended event carries another session's id.
    #[error("session {id}: cannot append event seq {seq}: it belongs to session {event_session}")]
    ForeignEvent {
        id: SessionId,
        seq: u64,
        event_session: SessionId,
    },

    /// A fork point past the end of the parent's log.
    #[error("cannot fork session {id} at seq {at_seq}: its log ends at seq {last_seq}")]
    SeqOutOfRange {
        id: SessionId,
        at_seq: u64,
        last_seq: u64,
    },

    /// SQLite refused an operation (including a database still busy after
    /// the busy timeout).
    #[error("session store: {operation}{}: {source}", id.as_ref().map(|id| format!(" (session {id})")).unwrap_or_default())]
    Sqlite {
        operation: &'static str,
        id: Option<String>,
        #[source]
        source: rusqlite::Error,
    },

    /// Stored data that does not decode: an event body that is not an
    /// event, a timestamp or lease that does not parse, a negative counter.
    #[error("{}: stored data is corrupt: {detail}", corrupt_place(id, *seq))]
    Corrupt {
        /// The session (empty when the row could not be told apart).
        id: String,
        seq: Option<u64>,
        detail: String,
    },

    /// No connection to the Postgres server could be made (at open, or
    /// later when the pool needed a new one); nothing was done. `url` is
    /// shown without its password.
    #[error("cannot connect to the session store {url}: {detail}; {hint}")]
    Connect {
        url: String,
        detail: String,
        /// What to check, for this failure.
        hint: String,
    },

    /// The connection to Postgres broke during an operation: it was not
    /// done (or, for a commit, may have been: a repeated commit is
    /// recognised).
    #[error(
        "session store {url}: {operation}{}: the connection to Postgres was lost ({detail}); \
         it works again once Postgres answers",
        id.as_ref().map(|id| format!(" (session {id})")).unwrap_or_default()
    )]
    ConnectionLost {
        url: String,
        operation: &'static str,
        id: Option<String>,
        detail: String,
    },

    /// Postgres refused a statement (a permission, a constraint, a
    /// resource); the transaction around it was rolled back.
    #[error(
        "session store {url}: {operation}{}: {detail}",
        id.as_ref().map(|id| format!(" (session {id})")).unwrap_or_default()
    )]
    Postgres {
        url: String,
        operation: &'static str,
        id: Option<String>,
        /// Postgres's message, with its SQLSTATE code.
        detail: String,
    },

    /// The Postgres database holds another program's tables and no
    /// agentbus schema; nothing was written to it.
    #[error(
        "the session store {url} cannot be used: its schema `{schema}` holds another program's \
         tables ({}), and no agentbus schema; agentbus left the database untouched \
         (give agentbus a database of its own, e.g. `createdb agentbus`)",
        tables.join(", ")
    )]
    ForeignDatabase {
        url: String,
        schema: String,
        tables: Vec<String>,
    },

    /// Bringing the Postgres schema up to date failed; the migration was
    /// rolled back.
    #[error("cannot migrate the session store {url} to schema version {version}: {detail}")]
    MigratePostgres {
        url: String,
        version: i64,
        detail: String,
    },

    /// An event could not be serialised (never expected for protocol types).
    #[error("session {id}: cannot encode event seq {seq}: {source}")]
    Encode {
        id: SessionId,
        seq: u64,
        #[source]
        source: serde_json::Error,
    },

    /// An input could not be serialised (never expected for protocol types).
    #[error("session {id}: cannot encode input {input_id}: {source}")]
    EncodeInput {
        id: SessionId,
        input_id: u64,
        #[source]
        source: serde_json::Error,
    },

    /// The store is not running (closed, or its writer died).
    #[error("the store is not running ({reason})")]
    Closed { reason: String },

    /// The events are kept by another process (the `agentbus serve` a
    /// front end is attached to), which could not give them.
    #[error("the events of session {id} could not be read from {server}: {detail}")]
    Remote {
        id: SessionId,
        server: String,
        detail: String,
    },

    /// An export document that cannot be imported.
    #[error(transparent)]
    Document(#[from] DocumentError),
}

/// What is wrong with a file that is not a usable session store.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    /// Not a regular file (a folder, a device).
    #[error("it is not a regular file")]
    NotAFile,
    /// Zero bytes: SQLite would take it for a new database and fill it.
    #[error(
        "it is empty (0 bytes), not a database (agentbus makes the file itself when it is missing)"
    )]
    Empty,
    /// The first bytes are not SQLite's header.
    #[error("it is not a SQLite database (it does not start with the SQLite header)")]
    NotSqlite,
    /// Shorter than SQLite's 100-byte header.
    #[error("it is truncated: {len} bytes, shorter than a SQLite header (100 bytes)")]
    ShortHeader { len: u64 },
    /// SQLite finds it damaged; `truncated` when its header promises more
    /// bytes than the file has.
    #[error("it is damaged ({detail}){}", truncated.map(|(expected, found)| format!(": it is truncated, its header says {expected} bytes but the file has {found}")).unwrap_or_default())]
    Damaged {
        detail: String,
        truncated: Option<(u64, u64)>,
    },
    /// A SQLite database of another program: tables, but not agentbus's.
    #[error(
        "it is another program's SQLite database, not an agentbus session store (its tables: {})",
        tables.join(", ")
    )]
    Foreign { tables: Vec<String> },
}

/// "session ID, event seq N", as far as known.
fn corrupt_place(id: &str, seq: Option<u64>) -> String {
    let session = if id.is_empty() {
        "session store".to_string()
    } else {
        format!("session {id}")
    };
    match seq {
        Some(seq) => format!("{session}, event seq {seq}"),
        None => session,
    }
}
