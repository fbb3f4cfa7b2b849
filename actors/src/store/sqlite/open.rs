//! Opening the store file: make it whole when it is missing, refuse a file
//! that is not an agentbus store, then configure and migrate.
//!
//! Exists so that agentbus never writes to a file it should not: a garbage
//! or zero-length file, a damaged database, another program's database or
//! one from a newer agentbus is refused with what is wrong, and every check
//! before the migration only reads (SQLite's view comes from a read-only
//! connection). A missing file is made beside it under a temporary name,
//! migrated, and only then linked into place without replacing anything, so
//! no process ever sees a half-made store (an empty file is refused, not
//! filled). A database another process keeps locked past the busy timeout
//! is [`StoreError::Locked`], here and in every later operation
//! ([`locked`]).

use super::options::StoreOptions;
use super::schema;
use crate::store::StoreError;
use crate::store::error::Unusable;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::io::Read;
use std::path::Path;

/// Every SQLite database starts with these 16 bytes.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The size of SQLite's file header.
const HEADER_LEN: usize = 100;

/// Open, check, configure and migrate the store (blocking).
pub(super) fn open_connection(options: &StoreOptions) -> Result<Connection, StoreError> {
    let path = &options.path;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    if !path.exists() {
        create(path, dir).map_err(|e| locked(e, options))?;
    }
    check(options).map_err(|e| locked(e, options))?;
    configure(options).map_err(|e| locked(e, options))
}

/// Make a new store at `path`: a migrated database under a temporary name
/// in `dir`, linked to `path` unless another process made one first (then
/// theirs is used).
fn create(path: &Path, dir: &Path) -> Result<(), StoreError> {
    let create_error = |source| StoreError::Create {
        path: path.to_path_buf(),
        source,
    };
    let temp = tempfile::Builder::new()
        .prefix(".agentbus-new-")
        .suffix(".db")
        .tempfile_in(dir)
        .map_err(create_error)?;
    {
        let mut conn = Connection::open(temp.path()).map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        schema::migrate(&mut conn, path)?;
    }
    match temp.persist_noclobber(path) {
        Ok(_) => Ok(()),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(create_error(e.error)),
    }
}

/// Refuse a file that is not an agentbus store this code can open, reading
/// only.
fn check(options: &StoreOptions) -> Result<(), StoreError> {
    let path = &options.path;
    let unusable = |problem| StoreError::Unusable {
        path: path.to_path_buf(),
        problem,
    };
    let read_error = |source| StoreError::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_file() {
        return Err(unusable(Unusable::NotAFile));
    }
    let header = read_header(path).map_err(read_error)?;
    if header.is_empty() {
        return Err(unusable(Unusable::Empty));
    }
    if !header.starts_with(SQLITE_MAGIC) {
        return Err(unusable(Unusable::NotSqlite));
    }
    if header.len() < HEADER_LEN {
        return Err(unusable(Unusable::ShortHeader {
            len: metadata.len(),
        }));
    }

    let sqlite_error = |source: rusqlite::Error| match source.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => unusable(Unusable::NotSqlite),
        Some(ErrorCode::DatabaseCorrupt) => unusable(Unusable::Damaged {
            detail: source.to_string(),
            truncated: truncation(&header, metadata.len()),
        }),
        _ => StoreError::Open {
            path: path.to_path_buf(),
            source,
        },
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite_error)?;
    conn.busy_timeout(options.busy_timeout)
        .map_err(sqlite_error)?;
    let version = schema::version(&conn).map_err(sqlite_error)?;
    let tables = schema::tables(&conn).map_err(sqlite_error)?;
    schema::recognise(path, version, &tables)
}

/// Up to the first [`HEADER_LEN`] bytes of the file.
fn read_header(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    std::fs::File::open(path)?
        .take(HEADER_LEN as u64)
        .read_to_end(&mut header)?;
    Ok(header)
}

/// `(bytes the header promises, bytes the file has)` when a whole header
/// says the database is longer than the file (SQLite trusts the size in
/// the header only while its "version valid for" matches the change
/// counter).
fn truncation(header: &[u8], file_len: u64) -> Option<(u64, u64)> {
    let word = |at: usize| -> Option<u32> {
        let bytes = header.get(at..at + 4)?;
        Some(u32::from_be_bytes(bytes.try_into().ok()?))
    };
    let page_size = match u16::from_be_bytes(header.get(16..18)?.try_into().ok()?) {
        1 => 65_536,
        size => u64::from(size),
    };
    let pages = u64::from(word(28)?);
    let valid = word(24)? == word(92)?;
    let expected = pages * page_size;
    (valid && pages > 0 && expected > file_len).then_some((expected, file_len))
}

/// The read-write connection on a checked (or new) store, configured
/// (busy timeout, foreign keys, WAL) and migrated. The file must exist.
fn configure(options: &StoreOptions) -> Result<Connection, StoreError> {
    let path = &options.path;
    let open_error = |source| StoreError::Open {
        path: path.clone(),
        source,
    };
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_error)?;
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
    schema::migrate(&mut conn, path)?;
    Ok(conn)
}

/// `error`, told as [`StoreError::Locked`] when SQLite gave up waiting for
/// another process's lock (SQLite's "database is locked").
pub(super) fn locked(error: StoreError, options: &StoreOptions) -> StoreError {
    let is_busy = |source: &rusqlite::Error| {
        matches!(
            source.sqlite_error_code(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        )
    };
    let as_locked = |operation, id| StoreError::Locked {
        path: options.path.clone(),
        waited: options.busy_timeout,
        operation,
        id,
    };
    match error {
        StoreError::Sqlite {
            operation,
            id,
            source,
        } if is_busy(&source) => as_locked(operation, id),
        StoreError::Open { source, .. } if is_busy(&source) => as_locked("open", None),
        StoreError::Migrate { source, .. } if is_busy(&source) => {
            as_locked("schema migration", None)
        }
        other => other,
    }
}
