//! The embedded backend: SQLite, one file in the data directory.
//!
//! [`SqliteStore`] implements [`SessionStore`] by handing each operation,
//! as a closure over the connection, to the writer: the single owner of
//! the connection, a thread of its own (SQLite blocks). Appends waiting
//! together share one transaction there (a group commit). Several processes may open
//! the same file: SQLite's WAL mode and the busy timeout arbitrate the
//! writes, and leases make sure only one process drives a given session.
//!
//! - `options`: [`StoreOptions`], where the store is and how long it waits.
//! - `open`: the file made, checked (never written unless it is ours),
//!   configured and migrated; a lock held past the busy timeout as
//!   [`StoreError::Locked`].
//! - `db`: the SQL behind each operation, as plain synchronous functions
//!   (sessions and their logs; blobs and checkpoints, what taking back a
//!   session's changes to its workspace needs).
//! - `visibility`: which sessions a token sees (the list of sessions,
//!   whole or one token's) and the viewers a session is given.
//! - `writer`: the thread, its queue of operations, the group commit.
//! - [`schema`]: tables and versioned migrations.

mod db;
mod open;
mod options;
pub mod schema;
mod visibility;
mod writer;

/// The statement of a page of the list (to check how the planner runs it).
#[cfg(test)]
pub(crate) use visibility::list_statement;

pub use options::StoreOptions;

use super::checkpoint::{Checkpoint, CheckpointUsage, Collected};
use super::{
    AcceptedInput, Commit, ListPage, NewSession, Owner, SessionDocument, SessionRecord,
    SessionStore, StoreError,
};
use crate::protocol::{EventEnvelope, SessionId};
use chrono::{DateTime, SubsecRound, Utc};
use rusqlite::Connection;
use std::sync::{Arc, mpsc};
use tokio::sync::oneshot;
use writer::{Job, Reply, Write};

/// The SQLite backend: cheap to clone, every clone talks to the same
/// connection.
#[derive(Clone)]
pub struct SqliteStore {
    writer: mpsc::Sender<Job>,
    options: Arc<StoreOptions>,
}

impl SqliteStore {
    /// Open (creating if needed) and migrate the store, and start its
    /// writer on a thread of its own. Refuses, untouched, a file from a
    /// newer agentbus ([`StoreError::NewerSchema`]) and one that is not an
    /// agentbus store ([`StoreError::Unusable`]).
    pub async fn open(options: StoreOptions) -> Result<SqliteStore, StoreError> {
        let options = Arc::new(options);
        let opening = options.clone();
        let closed = |reason: String| StoreError::Closed { reason };
        let conn = tokio::task::spawn_blocking(move || open::open_connection(&opening))
            .await
            .map_err(|e| closed(format!("the thread opening it failed: {e}")))??;
        let writer = writer::start(conn)
            .map_err(|e| closed(format!("its writer thread did not start: {e}")))?;
        Ok(SqliteStore { writer, options })
    }

    /// Hand `job` to the writer.
    fn send(&self, job: Job) -> Result<(), StoreError> {
        self.writer.send(job).map_err(|_| StoreError::Closed {
            reason: "its writer has stopped".into(),
        })
    }

    /// Run `work` on the writer's connection and wait for its answer.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.send(Job::Run(Box::new(move |conn| {
            let _ = answer.send(work(conn));
        })))?;
        self.answer(answered).await
    }

    /// Append with `work`, in a transaction the writer may share with
    /// other appends waiting at the same moment (a group commit).
    async fn write(
        &self,
        operation: &'static str,
        id: &SessionId,
        work: impl FnOnce(&Connection) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<(), StoreError> {
        let (answer, answered) = oneshot::channel();
        self.send(Job::Write(Write {
            work: Box::new(work),
            reply: Reply {
                operation,
                id: id.0.clone(),
                answer,
            },
        }))?;
        self.answer(answered).await
    }

    async fn answer<T>(
        &self,
        answered: oneshot::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        answered
            .await
            .map_err(|_| StoreError::Closed {
                reason: "it stopped during the operation".into(),
            })?
            .map_err(|e| open::locked(e, &self.options))
    }
}

/// The clock, at the precision the store keeps.
fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

#[async_trait::async_trait]
impl SessionStore for SqliteStore {
    async fn create(&self, new: NewSession, owner: Owner) -> Result<SessionRecord, StoreError> {
        self.run(move |conn| db::create(conn, new, owner, now()))
            .await
    }

    async fn acquire(
        &self,
        id: &SessionId,
        owner: Owner,
    ) -> Result<(SessionRecord, Vec<EventEnvelope>), StoreError> {
        let id = id.clone();
        self.run(move |conn| db::acquire(conn, &id, owner)).await
    }

    async fn release(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
        let id = id.clone();
        self.run(move |conn| db::release(conn, &id, owner)).await
    }

    async fn commit(&self, id: &SessionId, commit: Commit) -> Result<(), StoreError> {
        let for_work = id.clone();
        self.write("append events", id, move |tx| {
            db::commit(tx, &for_work, &commit, now())
        })
        .await
    }

    async fn accept_input(&self, id: &SessionId, input: AcceptedInput) -> Result<(), StoreError> {
        let for_work = id.clone();
        self.write("store an accepted input", id, move |tx| {
            db::accept_input(tx, &for_work, &input, now())
        })
        .await
    }

    async fn waiting_inputs(&self, id: &SessionId) -> Result<Vec<AcceptedInput>, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::waiting_inputs(conn, &id)).await
    }

    async fn sessions_with_waiting_inputs(&self) -> Result<Vec<SessionId>, StoreError> {
        self.run(|conn| db::sessions_with_waiting_inputs(conn))
            .await
    }

    async fn load_events(
        &self,
        id: &SessionId,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::load_events(conn, &id, after_seq, up_to))
            .await
    }

    async fn load_events_of_types(
        &self,
        id: &SessionId,
        before: u64,
        types: &'static [&'static str],
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::load_events_of_types(conn, &id, before, types))
            .await
    }

    async fn list(&self, query: ListPage) -> Result<Vec<SessionRecord>, StoreError> {
        self.run(move |conn| {
            let ListPage {
                limit,
                after,
                visible_to,
            } = query;
            visibility::list(conn, limit, after.as_ref(), visible_to.as_deref())
        })
        .await
    }

    async fn get(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::get(conn, &id)).await
    }

    async fn resolve(&self, prefix: &str) -> Result<SessionId, StoreError> {
        let prefix = prefix.to_string();
        self.run(move |conn| db::resolve(conn, &prefix)).await
    }

    async fn fork(
        &self,
        id: &SessionId,
        at_seq: Option<u64>,
        new_id: SessionId,
        owner: Option<Owner>,
        created_by: Option<String>,
    ) -> Result<SessionRecord, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::fork(conn, &id, at_seq, new_id, owner, created_by, now()))
            .await
    }

    async fn delete(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
        let id = id.clone();
        self.run(move |conn| db::delete(conn, &id, owner)).await
    }

    async fn set_title(&self, id: &SessionId, title: &str) -> Result<(), StoreError> {
        let (id, title) = (id.clone(), title.to_string());
        self.run(move |conn| db::set_title(conn, &id, &title)).await
    }

    async fn set_viewers(&self, id: &SessionId, viewers: &[String]) -> Result<(), StoreError> {
        let (id, viewers) = (id.clone(), viewers.to_vec());
        self.run(move |conn| visibility::set_viewers(conn, &id, &viewers))
            .await
    }

    async fn export(&self, id: &SessionId) -> Result<SessionDocument, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::export(conn, &id, now())).await
    }

    async fn import(
        &self,
        document: SessionDocument,
        new_id: SessionId,
        owner: Option<Owner>,
    ) -> Result<SessionRecord, StoreError> {
        self.run(move |conn| db::import(conn, document, new_id, owner, now()))
            .await
    }

    async fn missing_blobs(&self, hashes: Vec<String>) -> Result<Vec<String>, StoreError> {
        self.run(move |conn| db::missing_blobs(conn, hashes, now()))
            .await
    }

    async fn put_blobs(&self, blobs: Vec<(String, Vec<u8>)>) -> Result<(), StoreError> {
        self.run(move |conn| db::put_blobs(conn, blobs, now()))
            .await
    }

    async fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let hash = hash.to_string();
        self.run(move |conn| db::blob(conn, &hash)).await
    }

    async fn add_checkpoint(&self, checkpoint: Checkpoint) -> Result<(), StoreError> {
        self.run(move |conn| db::add_checkpoint(conn, &checkpoint))
            .await
    }

    async fn checkpoints(&self, id: &SessionId) -> Result<Vec<Checkpoint>, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::checkpoints(conn, &id)).await
    }

    async fn mark_undone(&self, id: &SessionId, ids: Vec<String>) -> Result<(), StoreError> {
        let id = id.clone();
        self.run(move |conn| db::mark_undone(conn, &id, &ids)).await
    }

    async fn drop_checkpoints(&self, id: &SessionId, ids: Vec<String>) -> Result<(), StoreError> {
        let id = id.clone();
        self.run(move |conn| db::drop_checkpoints(conn, &id, &ids))
            .await
    }

    async fn checkpoint_usage(&self) -> Result<CheckpointUsage, StoreError> {
        self.run(|conn| db::checkpoint_usage(conn)).await
    }

    async fn collect_blobs(&self, unused_since: DateTime<Utc>) -> Result<Collected, StoreError> {
        self.run(move |conn| db::collect_blobs(conn, unused_since))
            .await
    }

    async fn close(&self) {
        let (stopped, on_stop) = oneshot::channel();
        if self.send(Job::Stop(stopped)).is_ok() {
            // An error: it had stopped already.
            let _ = on_stop.await;
        }
    }
}
