//! Which sessions a token sees, in SQL: the list of sessions (every one,
//! or those of one token), and the viewers a session is given.
//!
//! Exists to keep the rule of `ListPage::visible_to` in one place, as the
//! SQLite backend has it: a token sees the sessions it created
//! (`sessions.created_by`) and those it was given to follow
//! (`session_viewers`), each found through its index — a token's page
//! never reads the sessions of the others — and paged like the whole list
//! (newest update first, after the cursor). Never decides who may do what
//! with a session: the HTTP layer does, from the record.

use super::failure::Failures;
use super::rows::{SELECT_SESSION, decode_session, storable_id, text};
use crate::protocol::SessionId;
use crate::store::record::viewer_set;
use crate::store::{ListCursor, SessionRecord, StoreError};
use deadpool_postgres::Client;

/// The sessions token `$4` sees (a condition on `sessions`): the ids of
/// those it created and those it follows, each found by an index, then
/// their rows by their key.
const VISIBLE_TO: &str = "id IN (SELECT id FROM sessions WHERE created_by = $4::text \
     UNION ALL SELECT session_id FROM session_viewers WHERE name = $4::text)";

/// The statement of a page of the list: `$1` the limit (NULL: none), `$2`
/// and `$3` the cursor (NULL: from the top), and with `visible_to` `$4`
/// the token. Two statements rather than `$4 IS NULL OR ...`, which would
/// hide the indexes from the planner.
pub fn list_statement(visible_to: bool) -> String {
    let filter = if visible_to {
        format!("{VISIBLE_TO} AND")
    } else {
        String::new()
    };
    format!(
        "SELECT {SELECT_SESSION} FROM sessions \
         WHERE {filter} ($2::timestamptz IS NULL OR (updated_at, id) < ($2, $3::text)) \
         ORDER BY updated_at DESC, id DESC LIMIT $1"
    )
}

/// A page of the list of sessions, most recently updated first: every
/// session, or only those `visible_to` sees.
pub async fn list(
    client: &Client,
    failures: &Failures,
    limit: Option<usize>,
    after: Option<&ListCursor>,
    visible_to: Option<&str>,
) -> Result<Vec<SessionRecord>, StoreError> {
    let operation = "list sessions";
    let fail = |e| failures.statement(operation, None, e);
    let limit = limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let after_time = after.map(|cursor| cursor.updated_at);
    // An id with a NUL sorts where it would, but cannot be sent as text:
    // a cursor holding one is past every id that has the same start.
    let after_id = after.map(|cursor| text(&cursor.id.0).into_owned());
    // Names are stored as `text` keeps them (a NUL made U+FFFD).
    let name = visible_to.map(|name| text(name).into_owned());
    let statement = client
        .prepare_cached(&list_statement(name.is_some()))
        .await
        .map_err(fail)?;
    let rows = match &name {
        Some(name) => {
            client
                .query(&statement, &[&limit, &after_time, &after_id, name])
                .await
        }
        None => {
            client
                .query(&statement, &[&limit, &after_time, &after_id])
                .await
        }
    }
    .map_err(|e| failures.statement(operation, None, e))?;
    rows.iter().map(decode_session).collect()
}

/// Give session `id` exactly `viewers` (in one transaction, the session's
/// row locked meanwhile).
pub async fn set_viewers(
    client: &mut Client,
    failures: &Failures,
    id: &SessionId,
    viewers: &[String],
) -> Result<(), StoreError> {
    let operation = "set session viewers";
    if !storable_id(&id.0) {
        return Err(StoreError::NotFound { id: id.0.clone() });
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let names: Vec<String> = viewer_set(viewers.iter().map(|name| text(name).into_owned()));
    let tx = client.transaction().await.map_err(fail)?;
    let exists = tx
        .query_opt("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    if exists.is_none() {
        return Err(StoreError::NotFound { id: id.0.clone() });
    }
    tx.execute(
        "DELETE FROM session_viewers WHERE session_id = $1",
        &[&id.0],
    )
    .await
    .map_err(|e| failures.statement(operation, Some(id), e))?;
    tx.execute(
        "INSERT INTO session_viewers (session_id, name) \
         SELECT $1, name FROM unnest($2::text[]) AS v (name)",
        &[&id.0, &names],
    )
    .await
    .map_err(|e| failures.statement(operation, Some(id), e))?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))
}
