//! The Postgres schema and its migrations, versioned by the
//! `schema_version` table (one row per migration applied).
//!
//! Exists so that every database, whichever agentbus made it, is brought to
//! the one schema this code reads: the migrations still to apply run in one
//! transaction at open, under an advisory lock so that processes opening
//! the same database at once migrate it once. A database whose version is
//! newer than this code knows is refused untouched
//! ([`StoreError::NewerSchema`]), and one holding another program's tables
//! without ours ([`StoreError::ForeignDatabase`]) too: agentbus never writes
//! into a schema it does not understand.
//!
//! Never edit a migration that has shipped: add the next one to
//! [`MIGRATIONS`] instead.

use super::failure::{Failures, describe};
use crate::store::StoreError;
use deadpool_postgres::Client;

/// Migration `i` brings a database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[V1, V2, V3];

/// The schema version this code reads and writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The key of the advisory lock migrations run under: "agentbus" in ASCII.
const MIGRATION_LOCK: i64 = 0x6167_656e_7462_7573;

/// v1: everything the SQLite backend keeps (its versions 1 to 4), plus what
/// running on several nodes will need, made now so that no later migration
/// has to rewrite a large table.
///
/// - `sessions` as in SQLite: `status` is `'active'` while a process holds
///   the lease in `owner` (`"pid:start_time"`, the single-node lease), else
///   `'idle'`; `last_seq`, `event_count` and `turns` summarise the log so
///   listing never scans it; `seq_reserved` is SQLite's `reserved_seq`
///   (seqs up to it may have reached clients; a reload continues above).
/// - Cluster columns, unused for now (their defaults): `nodes` (one row per
///   process incarnation, its lease `expires_at`), `sessions.owner_node`
///   (the node driving it), `epoch` (the fencing token, +1 at every
///   claim), `busy` (a turn is open); `events.epoch` is the session's epoch
///   when the event was stored.
/// - Ids are `COLLATE "C"`: byte order, as SQLite compares text, so the
///   ids starting with a prefix sort together whatever the database's
///   locale (resolving a prefix relies on it) and list pages are stable.
/// - `events.body` and `inputs.body` are `json`, not `jsonb`: `json` keeps
///   the text exactly as written — key order (a tool call's arguments are
///   shown, and sent back to the model, in the order the model wrote them)
///   and `\u0000` in a tool's output, which `jsonb` refuses.
/// - Times are `timestamptz` (microseconds, as the SQLite backend keeps
///   them); an event's own time, to the nanosecond, is in its body.
const V1: &str = "
CREATE TABLE nodes (
    node_id    uuid PRIMARY KEY,
    name       text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);

CREATE TABLE sessions (
    id             text COLLATE \"C\" PRIMARY KEY,
    title          text,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    model          text NOT NULL,
    workspace      text NOT NULL,
    parent_id      text COLLATE \"C\",
    fork_seq       bigint,
    parent_call_id text,
    status         text NOT NULL DEFAULT 'idle' CHECK (status IN ('active', 'idle')),
    owner          text,
    owner_node     uuid,
    epoch          bigint NOT NULL DEFAULT 0,
    busy           boolean NOT NULL DEFAULT false,
    last_seq       bigint NOT NULL DEFAULT 0,
    seq_reserved   bigint NOT NULL DEFAULT 0,
    event_count    bigint NOT NULL DEFAULT 0,
    turns          bigint NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_updated_at ON sessions (updated_at, id);
CREATE INDEX sessions_by_owner_node ON sessions (owner_node) WHERE owner_node IS NOT NULL;

CREATE TABLE events (
    session_id text COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    epoch      bigint NOT NULL DEFAULT 0,
    at         timestamptz NOT NULL,
    type       text NOT NULL,
    turn_id    bigint,
    body       json NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE inputs (
    session_id  text COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    input_id    bigint NOT NULL,
    accepted_at timestamptz NOT NULL,
    body        json NOT NULL,
    PRIMARY KEY (session_id, input_id)
);
";

/// v2: what taking back a session's changes to its workspace needs
/// (`store::checkpoint`), as SQLite's version 5 keeps it.
///
/// - `blobs`: file contents by their SHA-256 (`hash`, lower-case hex),
///   shared by every checkpoint and session that saw the same bytes;
///   `used_at` is when a blob was last put or asked for (a collection
///   deletes only blobs no checkpoint refers to and unused since its
///   cutoff).
/// - `checkpoints`: what one tool call changed, with its turn (`turn_seq`)
///   and call; `undone` once its changes were taken back. Ids are UUID v7
///   text, `COLLATE "C"` so that id order is creation order. Deleted with
///   their session.
/// - `checkpoint_files`: one row per path a checkpoint saw change, each side
///   the version then (hash, kind `'file'`, `'executable'` or `'symlink'`,
///   size), all NULL when the path did not exist; paths `COLLATE "C"`, in
///   byte order as SQLite keeps them. Indexed by each hash: whether any
///   checkpoint still refers to a blob is what a collection, and deleting a
///   session, ask.
const V2: &str = "
CREATE TABLE blobs (
    hash    text COLLATE \"C\" PRIMARY KEY,
    size    bigint NOT NULL,
    used_at timestamptz NOT NULL,
    data    bytea NOT NULL
);

CREATE TABLE checkpoints (
    id         text COLLATE \"C\" PRIMARY KEY,
    session_id text COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_seq   bigint NOT NULL,
    call_id    text,
    tool       text NOT NULL,
    created_at timestamptz NOT NULL,
    undone     boolean NOT NULL DEFAULT false
);
CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);

CREATE TABLE checkpoint_files (
    checkpoint_id text COLLATE \"C\" NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
    path          text COLLATE \"C\" NOT NULL,
    before_hash   text COLLATE \"C\",
    before_kind   text,
    before_size   bigint,
    after_hash    text COLLATE \"C\",
    after_kind    text,
    after_size    bigint,
    PRIMARY KEY (checkpoint_id, path)
);
CREATE INDEX checkpoint_files_by_before_hash ON checkpoint_files (before_hash);
CREATE INDEX checkpoint_files_by_after_hash ON checkpoint_files (after_hash);
";

/// v3: who may see a session, as SQLite's version 6 keeps it.
///
/// - `sessions.created_by`: the name of the API token that created (or
///   forked) the session; NULL for one made without a token (the command
///   line, ACP, an import) and for every session from before this
///   version. Indexed with `(updated_at, id)`, so one token's sessions are
///   found without reading the others'.
/// - `session_viewers`: one row per token name given to follow a session
///   (the pair is the key), deleted with its session. A side table rather
///   than an array in the session row, so that the sessions a token
///   follows are found by its index on `name`; a session's viewers are
///   read with it, by the key. Names are `COLLATE "C"`: compared and
///   sorted byte by byte, as SQLite does.
const V3: &str = "
ALTER TABLE sessions ADD COLUMN created_by text COLLATE \"C\";
CREATE INDEX sessions_by_created_by ON sessions (created_by, updated_at, id);

CREATE TABLE session_viewers (
    session_id text COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name       text COLLATE \"C\" NOT NULL,
    PRIMARY KEY (session_id, name)
);
CREATE INDEX session_viewers_by_name ON session_viewers (name, session_id);
";

/// The tables of agentbus's schema besides `schema_version` (to tell
/// another program's tables from ours in an error).
const OWN_TABLES: [&str; 8] = [
    "blobs",
    "checkpoint_files",
    "checkpoints",
    "events",
    "inputs",
    "nodes",
    "session_viewers",
    "sessions",
];

/// Bring the database up to [`SCHEMA_VERSION`], or refuse it (untouched):
/// a newer version, or another program's tables without ours.
pub async fn migrate(client: &mut Client, failures: &Failures) -> Result<(), StoreError> {
    let migrate_error = |version: i64, error: tokio_postgres::Error| {
        if error.is_closed() {
            failures.statement("migrate the schema", None, error)
        } else {
            StoreError::MigratePostgres {
                url: failures.url().to_string(),
                version,
                detail: describe(&error),
            }
        }
    };
    // Look first, reading only: nothing is written to a database that is
    // not ours or is newer.
    let found = state(client)
        .await
        .map_err(|e| failures.statement("read the schema version", None, e))?;
    recognise(&found, failures)?;
    if found.version == Some(SCHEMA_VERSION) {
        return Ok(());
    }

    let tx = client
        .transaction()
        .await
        .map_err(|e| migrate_error(SCHEMA_VERSION, e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| migrate_error(SCHEMA_VERSION, e))?;
    // Another process may have migrated while we waited for the lock.
    let found = state(&tx)
        .await
        .map_err(|e| migrate_error(SCHEMA_VERSION, e))?;
    recognise(&found, failures)?;
    if found.version.is_none() {
        tx.batch_execute(
            "CREATE TABLE schema_version (
                 version    bigint PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(|e| migrate_error(1, e))?;
    }
    let mut version = found.version.unwrap_or(0);
    while let Some(step) = usize::try_from(version)
        .ok()
        .and_then(|i| MIGRATIONS.get(i))
    {
        let target = version + 1;
        tx.batch_execute(step)
            .await
            .map_err(|e| migrate_error(target, e))?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&target],
        )
        .await
        .map_err(|e| migrate_error(target, e))?;
        version = target;
    }
    tx.commit()
        .await
        .map_err(|e| migrate_error(SCHEMA_VERSION, e))?;
    tracing::info!(
        store = failures.url(),
        version,
        "session store schema migrated"
    );
    Ok(())
}

/// What the database holds in the schema agentbus would use.
struct Found {
    /// `current_schema()`: where unqualified tables go.
    schema: String,
    /// The highest version in `schema_version`; `None` without the table.
    version: Option<i64>,
    /// The schema's tables, by name.
    tables: Vec<String>,
}

async fn state(
    client: &impl deadpool_postgres::GenericClient,
) -> Result<Found, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT current_schema()::text,
                    to_regclass('schema_version') IS NOT NULL,
                    ARRAY(SELECT tablename::text FROM pg_tables
                           WHERE schemaname = current_schema() ORDER BY tablename)",
            &[],
        )
        .await?;
    let schema: Option<String> = row.try_get(0)?;
    let has_versions: bool = row.try_get(1)?;
    let tables: Vec<String> = row.try_get(2)?;
    let version = if has_versions {
        let row = client
            .query_one("SELECT max(version) FROM schema_version", &[])
            .await?;
        Some(row.try_get::<_, Option<i64>>(0)?.unwrap_or(0))
    } else {
        None
    };
    Ok(Found {
        schema: schema.unwrap_or_default(),
        version,
        tables,
    })
}

/// Whether this code may open (and migrate) a database in state `found`:
/// an empty schema, or ours at a version it knows.
fn recognise(found: &Found, failures: &Failures) -> Result<(), StoreError> {
    match found.version {
        Some(version) if !(0..=SCHEMA_VERSION).contains(&version) => Err(StoreError::NewerSchema {
            store: failures.url().to_string(),
            found: version,
            supported: SCHEMA_VERSION,
        }),
        Some(_) => Ok(()),
        None => {
            let foreign: Vec<String> = found
                .tables
                .iter()
                .filter(|table| !OWN_TABLES.contains(&table.as_str()))
                .cloned()
                .collect();
            if found.tables.is_empty() {
                Ok(())
            } else {
                Err(StoreError::ForeignDatabase {
                    url: failures.url().to_string(),
                    schema: found.schema.clone(),
                    tables: if foreign.is_empty() {
                        found.tables.clone()
                    } else {
                        foreign
                    },
                })
            }
        }
    }
}
