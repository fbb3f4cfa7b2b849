//! Which sessions a token sees, in SQL: the list of sessions (every one,
//! or those of one token), and the viewers a session is given.
//!
//! Exists to keep the rule of `ListPage::visible_to` in one place: a token
//! sees the sessions it created (`sessions.created_by`) and those it was
//! given to follow (`session_viewers`), each found through its index — a
//! token's page never reads the sessions of the others — and paged like
//! the whole list (newest update first, after the cursor). Never decides
//! who may do what with a session: the HTTP layer does, from the record.

use super::db::{RawSession, SELECT_SESSION, sqlite, timestamp, write_tx};
use crate::protocol::SessionId;
use crate::store::record::viewer_set;
use crate::store::{ListCursor, SessionRecord, StoreError};
use rusqlite::Connection;

/// The sessions token `?4` sees (a condition on `sessions`): the ids of
/// those it created and those it follows, each found by an index, then
/// their rows by their key.
const VISIBLE_TO: &str = "id IN (SELECT id FROM sessions WHERE created_by = ?4 \
     UNION ALL SELECT session_id FROM session_viewers WHERE name = ?4)";

/// The statement of a page of the list: `?1` the limit (-1: none), `?2`
/// and `?3` the cursor (NULL: from the top), and with `visible_to` `?4`
/// the token. Two statements rather than `?4 IS NULL OR ...`, which would
/// hide the indexes from the planner.
pub fn list_statement(visible_to: bool) -> String {
    let filter = if visible_to {
        format!("{VISIBLE_TO} AND")
    } else {
        String::new()
    };
    format!(
        "SELECT {SELECT_SESSION} FROM sessions \
         WHERE {filter} (?2 IS NULL OR (updated_at, id) < (?2, ?3)) \
         ORDER BY updated_at DESC, id DESC LIMIT ?1"
    )
}

/// A page of the list of sessions, most recently updated first: every
/// session, or only those `visible_to` sees.
pub fn list(
    conn: &Connection,
    limit: Option<usize>,
    after: Option<&ListCursor>,
    visible_to: Option<&str>,
) -> Result<Vec<SessionRecord>, StoreError> {
    let operation = "list sessions";
    let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
    let after_time = after.map(|c| timestamp(c.updated_at));
    let after_id = after.map(|c| c.id.0.as_str());
    let mut stmt = conn
        .prepare_cached(&list_statement(visible_to.is_some()))
        .map_err(|e| sqlite(operation, None, e))?;
    let rows = match visible_to {
        Some(name) => stmt.query_map(
            rusqlite::params![limit, after_time, after_id, name],
            RawSession::from_row,
        ),
        None => stmt.query_map(
            rusqlite::params![limit, after_time, after_id],
            RawSession::from_row,
        ),
    }
    .map_err(|e| sqlite(operation, None, e))?;
    rows.map(|row| row.map_err(|e| sqlite(operation, None, e))?.decode())
        .collect()
}

/// Give session `id` exactly `viewers` (in one transaction).
pub fn set_viewers(
    conn: &mut Connection,
    id: &SessionId,
    viewers: &[String],
) -> Result<(), StoreError> {
    let operation = "set session viewers";
    let fail = |e| sqlite(operation, Some(id), e);
    let tx = write_tx(conn, operation, id)?;
    super::db::require_exists(&tx, operation, id)?;
    tx.prepare_cached("DELETE FROM session_viewers WHERE session_id = ?1")
        .and_then(|mut stmt| stmt.execute([&id.0]))
        .map_err(fail)?;
    {
        let mut insert = tx
            .prepare_cached("INSERT INTO session_viewers (session_id, name) VALUES (?1, ?2)")
            .map_err(fail)?;
        for name in viewer_set(viewers.iter().cloned()) {
            insert
                .execute(rusqlite::params![id.0, name])
                .map_err(fail)?;
        }
    }
    tx.commit().map_err(fail)
}
