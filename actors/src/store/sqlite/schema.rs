//! The database schema and its migrations, versioned by `PRAGMA user_version`.
//!
//! Exists so that every store file, whichever agentbus created it, is brought
//! to the one schema this code reads — one migration per version, each in its
//! own transaction that also bumps `user_version`, so a crash never leaves a
//! half-migrated file. A file whose version is *newer* than this code knows
//! is refused untouched ([`StoreError::NewerSchema`]): an older agentbus must
//! never write to a schema it does not understand.
//!
//! Never edit a migration that has shipped: add the next one to
//! `MIGRATIONS` instead.
//!
//! [`recognise`] tells an agentbus store from another program's database
//! before anything is written, so that a foreign file is never migrated.

use crate::store::StoreError;
use crate::store::error::Unusable;
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;

/// Migration `i` brings a database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The schema version this code reads and writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// v1: sessions and their append-only event logs.
///
/// - `sessions.status` is `'active'` while a process holds the lease in
///   `owner` (`"pid:start_time"`), else `'idle'` (and `owner` is NULL).
/// - `last_seq`/`event_count` summarise `events` so listing never scans logs.
/// - Timestamps are RFC 3339 UTC text of fixed width (microseconds, `Z`), so
///   text order is time order.
/// - `events.body` is the whole `EventEnvelope` as JSON; the other columns
///   are copies for querying.
const V1: &str = "
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    title       TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    model       TEXT NOT NULL,
    workspace   TEXT NOT NULL,
    parent_id   TEXT,
    fork_seq    INTEGER,
    status      TEXT NOT NULL DEFAULT 'idle' CHECK (status IN ('active', 'idle')),
    owner       TEXT,
    last_seq    INTEGER NOT NULL DEFAULT 0,
    event_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_updated_at ON sessions (updated_at);

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    at         TEXT NOT NULL,
    type       TEXT NOT NULL,
    turn_id    INTEGER,
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

/// v2: what a crash must not lose besides the log.
///
/// - `sessions.reserved_seq`: seqs up to this one may have been given to
///   events clients saw without being stored (stream deltas); a session
///   loaded again continues above it, so a seq is never handed out twice.
/// - `inputs`: inputs accepted and not yet started, in input id order. A
///   row is written before the input is acknowledged and deleted in the
///   same transaction as the first events of its turn; a session loaded
///   again runs the rows left.
const V2: &str = "
ALTER TABLE sessions ADD COLUMN reserved_seq INTEGER NOT NULL DEFAULT 0;

CREATE TABLE inputs (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    input_id    INTEGER NOT NULL,
    accepted_at TEXT NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (session_id, input_id)
) WITHOUT ROWID;
";

/// v3: a session a `task` call of another session started (a sub-agent):
/// `parent_id` is that session, `fork_seq` the seq it had reached, and
/// `parent_call_id` the call. A fork has no call.
const V3: &str = "
ALTER TABLE sessions ADD COLUMN parent_call_id TEXT;
";

/// v4: `sessions.turns`, how many queries a session holds (its `user`
/// events), kept like `event_count` so that a list of sessions can say it
/// without scanning their logs; counted once here for the sessions there are.
const V4: &str = "
ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET turns =
    (SELECT COUNT(*) FROM events WHERE events.session_id = sessions.id AND events.type = 'user');
";

/// v5: what taking back a session's changes to its workspace needs
/// (`store::checkpoint`).
///
/// - `blobs`: file contents by their SHA-256 (`hash`, lower-case hex),
///   shared by every checkpoint and session that saw the same bytes.
///   `used_at` is when a blob was last put or asked for: a collection
///   deletes only blobs no checkpoint refers to and unused since its
///   cutoff, so a blob asked for just before its checkpoint is stored is
///   kept. `data` is the last column: reading the others (a collection, a
///   sum of sizes) never walks a large blob's overflow pages.
/// - `checkpoints`: what one tool call changed, with the turn (`turn_seq`,
///   the seq of its `user` event) and call it belongs to; `undone` once its
///   changes were taken back. Ids are UUID v7 text, so id order is creation
///   order. Deleted with their session.
/// - `checkpoint_files`: one row per path a checkpoint saw change, each side
///   (`before_*`, `after_*`) the version then (hash, kind `'file'`,
///   `'executable'` or `'symlink'`, size), all NULL when the path did not
///   exist. Indexed by each hash: whether any checkpoint still refers to a
///   blob is what a collection, and deleting a session, ask.
const V5: &str = "
CREATE TABLE blobs (
    hash    TEXT PRIMARY KEY NOT NULL,
    size    INTEGER NOT NULL,
    used_at TEXT NOT NULL,
    data    BLOB NOT NULL
);

CREATE TABLE checkpoints (
    id         TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_seq   INTEGER NOT NULL,
    call_id    TEXT,
    tool       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    undone     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);

CREATE TABLE checkpoint_files (
    checkpoint_id TEXT NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
    path          TEXT NOT NULL,
    before_hash   TEXT,
    before_kind   TEXT,
    before_size   INTEGER,
    after_hash    TEXT,
    after_kind    TEXT,
    after_size    INTEGER,
    PRIMARY KEY (checkpoint_id, path)
) WITHOUT ROWID;
CREATE INDEX checkpoint_files_by_before_hash ON checkpoint_files (before_hash);
CREATE INDEX checkpoint_files_by_after_hash ON checkpoint_files (after_hash);
";

/// v6: who may see a session, for `agentbus serve`'s tokens with roles.
///
/// - `sessions.created_by`: the name of the API token that created (or
///   forked) the session; NULL for one made without a token (the command
///   line, ACP, an import) and for every session from before this
///   version. Indexed with `(updated_at, id)`: one token's sessions are
///   read newest first, from a page's cursor on, without walking the
///   others.
/// - `session_viewers`: one row per token name given to follow a session
///   (a set: the key is the pair), deleted with its session. A side table
///   rather than a list in the session row, so that the sessions a token
///   follows are found by its index on `name` instead of by reading every
///   row; a session's list of viewers is read with it (a lookup by the
///   key).
const V6: &str = "
ALTER TABLE sessions ADD COLUMN created_by TEXT;
CREATE INDEX sessions_by_created_by ON sessions (created_by, updated_at, id);

CREATE TABLE session_viewers (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    PRIMARY KEY (session_id, name)
) WITHOUT ROWID;
CREATE INDEX session_viewers_by_name ON session_viewers (name, session_id);
";

/// The tables every schema version from 1 on has: a database at version 1
/// or later without them was not made by agentbus.
const OWN_TABLES: [&str; 2] = ["sessions", "events"];

/// The database's tables (SQLite's own left out), by name.
pub fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         ORDER BY name",
    )?;
    let names = statement.query_map([], |row| row.get(0))?;
    names.collect()
}

/// Whether a database at schema `version` holding `tables` is a store this
/// code may open (and migrate): an empty database or one of ours at a
/// version it knows. A newer version is [`StoreError::NewerSchema`]; tables
/// at version 0 (no migration ever ran), or a version without our tables,
/// are another program's database.
pub fn recognise(path: &Path, version: i64, tables: &[String]) -> Result<(), StoreError> {
    if !(0..=SCHEMA_VERSION).contains(&version) {
        return Err(StoreError::NewerSchema {
            store: path.display().to_string(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    let ours = if version == 0 {
        tables.is_empty()
    } else {
        OWN_TABLES
            .iter()
            .all(|own| tables.iter().any(|table| table == own))
    };
    if ours {
        Ok(())
    } else {
        Err(StoreError::Unusable {
            path: path.to_path_buf(),
            problem: Unusable::Foreign {
                tables: tables.to_vec(),
            },
        })
    }
}

/// The database's `user_version`.
pub fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Bring the database at `path` up to [`SCHEMA_VERSION`], or refuse a newer
/// one. Safe against another process migrating the same file at the same
/// time: each step re-reads the version inside its write transaction.
pub fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let open_error = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let newer = |found| StoreError::NewerSchema {
        store: path.display().to_string(),
        found,
        supported: SCHEMA_VERSION,
    };

    // A negative version is written by no agentbus: refuse it like a newer one.
    let unknown = |v: i64| !(0..=SCHEMA_VERSION).contains(&v);

    let found = version(conn).map_err(open_error)?;
    if unknown(found) {
        return Err(newer(found));
    }
    while version(conn).map_err(open_error)? < SCHEMA_VERSION {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(open_error)?;
        // Another process may have migrated while we waited for the lock.
        let current = version(&tx).map_err(open_error)?;
        if unknown(current) {
            return Err(newer(current));
        }
        let Some(step) = usize::try_from(current)
            .ok()
            .and_then(|i| MIGRATIONS.get(i))
        else {
            return Ok(());
        };
        let target = current + 1;
        let migrate_error = |source| StoreError::Migrate {
            path: path.to_path_buf(),
            version: target,
            source,
        };
        tx.execute_batch(step).map_err(migrate_error)?;
        tx.pragma_update(None, "user_version", target)
            .map_err(migrate_error)?;
        tx.commit().map_err(migrate_error)?;
    }
    Ok(())
}
