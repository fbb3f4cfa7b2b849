//! The session store: sessions and their append-only event logs in SQLite,
//! behind one kameo actor, [`Store`].
//!
//! Exists so that sessions outlive the process: every persisted event (all
//! but `stream_event`) is appended as it is published, and a session can be
//! listed, resumed (its log folded back into a state), forked, deleted,
//! exported and imported. The `Store` is the single writer of its
//! connection; spawn it with [`Spawn::spawn_in_thread`](kameo::actor::Spawn)
//! (it blocks on SQLite inside its handlers, which is what the dedicated
//! thread is for — this needs a multi-threaded tokio runtime). Several
//! processes may open the same file: SQLite's WAL mode and the busy timeout
//! arbitrate the writes, and leases ([`lease`]) make sure only one process
//! drives a given session.
//!
//! Never rewrites history: an appended event is never updated or replaced
//! (a seq that is not after the stored log is refused), and forks and
//! imports create new sessions. Never stores a `stream_event`, never stores
//! anything secret (events hold none), and never panics on what it reads:
//! undecodable data is [`StoreError::Corrupt`].
//!
//! - [`schema`]: tables and versioned migrations.
//! - [`lease`]: which process owns a session ([`Owner`]).
//! - [`document`]: the export format ([`SessionDocument`]), pure.
//! - [`error`]: the one error type, [`StoreError`].
//! - `db`: the SQL behind each message.

mod db;
pub mod document;
pub mod error;
pub mod lease;
pub mod schema;

#[cfg(test)]
mod tests;

pub use db::{STATUS_ACTIVE, STATUS_IDLE, TITLE_MAX_CHARS, title_from};
pub use document::{
    DOCUMENT_FORMAT, DOCUMENT_VERSION, DocumentError, DocumentSession, SessionDocument,
};
pub use error::StoreError;
pub use lease::Owner;
pub use schema::SCHEMA_VERSION;

use crate::protocol::{EventEnvelope, SessionId};
use chrono::{DateTime, SubsecRound, Utc};
use kameo::Actor;
use kameo::actor::{ActorRef, WeakActorRef};
use kameo::error::{ActorStopReason, Infallible, PanicError};
use kameo::message::{Context, Message};
use rusqlite::Connection;
use serde::Serialize;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where the store lives and how long a write waits for another process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// The database file (its folder is created if missing).
    pub path: PathBuf,
    /// How long a statement waits for another connection's lock before it
    /// fails with [`StoreError::Sqlite`].
    pub busy_timeout: Duration,
}

impl StoreOptions {
    /// The default busy timeout.
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// The store at `path`, with the default busy timeout.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StoreOptions {
            path: path.into(),
            busy_timeout: Self::DEFAULT_BUSY_TIMEOUT,
        }
    }
}

/// A stored session, without its log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionRecord {
    pub id: SessionId,
    /// From the first user message (see [`title_from`]); `None` until there
    /// is one.
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When an event was last appended (or the session created, forked,
    /// imported).
    pub updated_at: DateTime<Utc>,
    /// The model profile the session uses.
    pub model: String,
    pub workspace: String,
    /// The session this one was forked from, and the parent's seq it was
    /// forked at.
    pub parent: Option<(SessionId, u64)>,
    /// [`STATUS_ACTIVE`] while a process holds the lease, else [`STATUS_IDLE`].
    pub status: String,
    /// The process holding the lease.
    pub owner: Option<Owner>,
    /// The highest stored seq (0: no events).
    pub last_seq: u64,
    /// How many events are stored.
    pub event_count: u64,
}

impl SessionRecord {
    /// For a fork, the parent's seq it was forked at; else the last seq.
    pub fn forked_at(&self) -> u64 {
        self.parent.as_ref().map_or(self.last_seq, |(_, seq)| *seq)
    }
}

/// What a new session starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSession {
    pub id: SessionId,
    pub model: String,
    pub workspace: String,
}

/// The session store actor: the only writer of its SQLite connection.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating if needed) and migrate the store; refuses a file from
    /// a newer agentbus ([`StoreError::NewerSchema`]). Blocking: call it
    /// before spawning, or from a blocking context.
    pub fn open(options: StoreOptions) -> Result<Store, StoreError> {
        let path = options.path;
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let open_error = |source| StoreError::Open {
            path: path.clone(),
            source,
        };
        let mut conn = Connection::open(&path).map_err(open_error)?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(open_error)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(open_error)?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), %mode, "the session store could not switch to WAL mode");
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_error)?;
        schema::migrate(&mut conn, &path)?;
        Ok(Store { conn, path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The clock, at the precision the store keeps.
fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

impl Actor for Store {
    type Args = Store;
    type Error = Infallible;

    async fn on_start(store: Self::Args, _: ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(store)
    }

    /// A failed `tell` (nobody to reply to) is logged and the store keeps
    /// serving; a real panic stops it.
    async fn on_panic(
        &mut self,
        _: WeakActorRef<Self>,
        err: PanicError,
    ) -> Result<ControlFlow<ActorStopReason>, Self::Error> {
        if err.is_panic() {
            return Ok(ControlFlow::Break(ActorStopReason::Panicked(err)));
        }
        let message = err
            .with_downcast_ref(|e: &StoreError| e.to_string())
            .unwrap_or_else(|| err.with(|e| format!("{e:?}")));
        tracing::warn!(path = %self.path.display(), "session store: {message}");
        Ok(ControlFlow::Continue(()))
    }
}

/// Insert a new session, leased by `owner` (status active).
#[derive(Clone, Debug)]
pub struct CreateSession {
    pub new: NewSession,
    pub owner: Owner,
}

/// Take a session's lease — free, already `owner`'s, or held by a process
/// that is gone — and get its record and whole log in seq order.
/// [`StoreError::Busy`] if a live process holds it.
#[derive(Clone, Debug)]
pub struct AcquireSession {
    pub id: SessionId,
    pub owner: Owner,
}

/// Give up the lease, if `owner` holds it (status idle).
#[derive(Clone, Debug)]
pub struct ReleaseSession {
    pub id: SessionId,
    pub owner: Owner,
}

/// Append a batch of events in one transaction. Every seq must come after
/// the stored log; `stream_event`s are skipped.
#[derive(Clone, Debug)]
pub struct Append {
    pub id: SessionId,
    pub events: Vec<Arc<EventEnvelope>>,
}

/// The events with `after_seq < seq <= up_to`, in seq order (replay).
#[derive(Clone, Debug)]
pub struct LoadEvents {
    pub id: SessionId,
    pub after_seq: u64,
    pub up_to: Option<u64>,
}

/// Sessions, most recently updated first.
#[derive(Clone, Debug, Default)]
pub struct ListSessions {
    pub limit: Option<usize>,
    /// Only the sessions after this place in the list (the next page).
    pub after: Option<ListCursor>,
}

/// A place in the list of sessions: just after the session updated at
/// `updated_at` with id `id`. Stable when sessions are updated meanwhile (an
/// updated session moves to the top; the pages after stay as they were).
/// Written `MICROS.ID` (unix microseconds, the session id).
#[derive(Clone, Debug, PartialEq)]
pub struct ListCursor {
    pub updated_at: DateTime<Utc>,
    pub id: SessionId,
}

impl ListCursor {
    /// The place just after `record`.
    pub fn after(record: &SessionRecord) -> Self {
        ListCursor {
            updated_at: record.updated_at,
            id: record.id.clone(),
        }
    }
}

impl std::fmt::Display for ListCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.updated_at.timestamp_micros(), self.id)
    }
}

impl std::str::FromStr for ListCursor {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "expected the `next` value of a previous page (MICROS.ID)";
        let (micros, id) = s
            .split_once('.')
            .ok_or_else(|| format!("`{s}` is not a list cursor; {expected}"))?;
        let updated_at = micros
            .parse::<i64>()
            .ok()
            .and_then(DateTime::from_timestamp_micros)
            .ok_or_else(|| format!("`{micros}` is not a time in microseconds; {expected}"))?;
        if id.is_empty() {
            return Err(format!("`{s}` names no session; {expected}"));
        }
        Ok(ListCursor {
            updated_at,
            id: SessionId(id.to_string()),
        })
    }
}

/// One session's record, if it exists.
#[derive(Clone, Debug)]
pub struct GetSession {
    pub id: SessionId,
}

/// An exact id, or the one id a prefix starts (like git).
#[derive(Clone, Debug)]
pub struct ResolveId {
    pub prefix: String,
}

/// Copy a session's log up to `at_seq` (default: its last seq) into a new
/// session `new_id`, leased by `owner` if given. The parent is untouched.
#[derive(Clone, Debug)]
pub struct ForkSession {
    pub id: SessionId,
    pub at_seq: Option<u64>,
    pub new_id: SessionId,
    pub owner: Option<Owner>,
}

/// Delete a session and its log, unless a live process other than `owner`
/// holds it.
#[derive(Clone, Debug)]
pub struct DeleteSession {
    pub id: SessionId,
    pub owner: Owner,
}

/// Name a session (a title given when it is created; otherwise the first
/// query names it).
#[derive(Clone, Debug)]
pub struct SetTitle {
    pub id: SessionId,
    pub title: String,
}

impl Message<SetTitle> for Store {
    type Reply = Result<(), StoreError>;

    async fn handle(&mut self, msg: SetTitle, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        db::set_title(&mut self.conn, &msg.id, &msg.title)
    }
}

/// A session as an export document.
#[derive(Clone, Debug)]
pub struct ExportSession {
    pub id: SessionId,
}

/// An export document as a new session `new_id` (events re-stamped with it,
/// seqs kept), leased by `owner` if given.
#[derive(Clone, Debug)]
pub struct ImportSession {
    pub document: SessionDocument,
    pub new_id: SessionId,
    pub owner: Option<Owner>,
}

impl Message<CreateSession> for Store {
    type Reply = Result<SessionRecord, StoreError>;

    async fn handle(
        &mut self,
        msg: CreateSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::create(&mut self.conn, msg.new, msg.owner, now())
    }
}

impl Message<AcquireSession> for Store {
    type Reply = Result<(SessionRecord, Vec<EventEnvelope>), StoreError>;

    async fn handle(
        &mut self,
        msg: AcquireSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::acquire(&mut self.conn, &msg.id, msg.owner)
    }
}

impl Message<ReleaseSession> for Store {
    type Reply = Result<(), StoreError>;

    async fn handle(
        &mut self,
        msg: ReleaseSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::release(&mut self.conn, &msg.id, msg.owner)
    }
}

impl Message<Append> for Store {
    type Reply = Result<(), StoreError>;

    async fn handle(&mut self, msg: Append, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        db::append(&mut self.conn, &msg.id, &msg.events, now())
    }
}

impl Message<LoadEvents> for Store {
    type Reply = Result<Vec<EventEnvelope>, StoreError>;

    async fn handle(&mut self, msg: LoadEvents, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        db::load_events(&mut self.conn, &msg.id, msg.after_seq, msg.up_to)
    }
}

impl Message<ListSessions> for Store {
    type Reply = Result<Vec<SessionRecord>, StoreError>;

    async fn handle(
        &mut self,
        msg: ListSessions,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::list(&self.conn, msg.limit, msg.after.as_ref())
    }
}

impl Message<GetSession> for Store {
    type Reply = Result<Option<SessionRecord>, StoreError>;

    async fn handle(&mut self, msg: GetSession, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        db::get(&self.conn, &msg.id)
    }
}

impl Message<ResolveId> for Store {
    type Reply = Result<SessionId, StoreError>;

    async fn handle(&mut self, msg: ResolveId, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        db::resolve(&self.conn, &msg.prefix)
    }
}

impl Message<ForkSession> for Store {
    type Reply = Result<SessionRecord, StoreError>;

    async fn handle(
        &mut self,
        msg: ForkSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::fork(
            &mut self.conn,
            &msg.id,
            msg.at_seq,
            msg.new_id,
            msg.owner,
            now(),
        )
    }
}

impl Message<DeleteSession> for Store {
    type Reply = Result<(), StoreError>;

    async fn handle(
        &mut self,
        msg: DeleteSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::delete(&mut self.conn, &msg.id, msg.owner)
    }
}

impl Message<ExportSession> for Store {
    type Reply = Result<SessionDocument, StoreError>;

    async fn handle(
        &mut self,
        msg: ExportSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::export(&mut self.conn, &msg.id, now())
    }
}

impl Message<ImportSession> for Store {
    type Reply = Result<SessionRecord, StoreError>;

    async fn handle(
        &mut self,
        msg: ImportSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        db::import(&mut self.conn, msg.document, msg.new_id, msg.owner, now())
    }
}
