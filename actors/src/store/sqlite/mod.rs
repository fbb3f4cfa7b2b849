//! The embedded backend: SQLite, one file in the data directory.
//!
//! [`SqliteStore`] implements [`SessionStore`] by handing each operation,
//! as a closure over the connection, to the `Writer` actor: the single
//! owner of the connection, running on a thread of its own (SQLite blocks;
//! this needs a multi-threaded tokio runtime). Several processes may open
//! the same file: SQLite's WAL mode and the busy timeout arbitrate the
//! writes, and leases make sure only one process drives a given session.
//!
//! - `options`: [`StoreOptions`], where the store is and how long it waits.
//! - `open`: the file made, checked (never written unless it is ours),
//!   configured and migrated; a lock held past the busy timeout as
//!   [`StoreError::Locked`].
//! - `db`: the SQL behind each operation, as plain synchronous functions.
//! - [`schema`]: tables and versioned migrations.

mod db;
mod open;
mod options;
pub mod schema;

pub use options::StoreOptions;

use super::{
    AcceptedInput, Commit, ListPage, NewSession, Owner, SessionDocument, SessionRecord,
    SessionStore, StoreError,
};
use crate::protocol::{EventEnvelope, SessionId};
use chrono::{DateTime, SubsecRound, Utc};
use kameo::Actor;
use kameo::actor::{ActorRef, Spawn};
use kameo::error::Infallible;
use kameo::message::{Context, Message};
use rusqlite::Connection;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The SQLite backend: cheap to clone, every clone talks to the same
/// connection.
#[derive(Clone)]
pub struct SqliteStore {
    writer: ActorRef<Writer>,
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
        let conn = tokio::task::spawn_blocking(move || open::open_connection(&opening))
            .await
            .map_err(|e| StoreError::Closed {
                reason: format!("the thread opening it failed: {e}"),
            })??;
        Ok(SqliteStore {
            writer: Writer::spawn_in_thread(Writer { conn }),
            options,
        })
    }

    /// Run `work` on the writer's connection and wait for its answer.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = answer.send(work(conn));
        });
        let closed = |reason: String| StoreError::Closed { reason };
        self.writer
            .ask(Run(job))
            .await
            .map_err(|e| closed(e.to_string()))?;
        answered
            .await
            .map_err(|_| closed("it stopped during the operation".into()))?
            .map_err(|e| open::locked(e, &self.options))
    }
}

/// The clock, at the precision the store keeps.
fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// One operation on the connection; it sends its own answer.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The writer actor: the only owner of the connection. A panic in an
/// operation stops it (later calls fail with [`StoreError::Closed`]).
struct Writer {
    conn: Connection,
}

impl Actor for Writer {
    type Args = Writer;
    type Error = Infallible;

    async fn on_start(writer: Self::Args, _: ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(writer)
    }
}

/// Run a job on the connection.
struct Run(Job);

impl Message<Run> for Writer {
    type Reply = ();

    async fn handle(&mut self, Run(job): Run, _: &mut Context<Self, Self::Reply>) {
        job(&mut self.conn);
    }
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
        let id = id.clone();
        self.run(move |conn| db::commit(conn, &id, &commit, now()))
            .await
    }

    async fn accept_input(&self, id: &SessionId, input: AcceptedInput) -> Result<(), StoreError> {
        let id = id.clone();
        self.run(move |conn| db::accept_input(conn, &id, &input, now()))
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

    async fn list(&self, query: ListPage) -> Result<Vec<SessionRecord>, StoreError> {
        self.run(move |conn| db::list(conn, query.limit, query.after.as_ref()))
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
    ) -> Result<SessionRecord, StoreError> {
        let id = id.clone();
        self.run(move |conn| db::fork(conn, &id, at_seq, new_id, owner, now()))
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

    async fn close(&self) {
        let _ = self.writer.stop_gracefully().await;
        self.writer.wait_for_shutdown().await;
    }
}
