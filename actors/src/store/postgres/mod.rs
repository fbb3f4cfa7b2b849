//! The Postgres backend: the sessions of several agentbus processes (and,
//! next, several machines) in one database.
//!
//! [`PostgresStore`] implements [`SessionStore`] with hand-written SQL on a
//! pool of connections (tokio-postgres + deadpool): each operation takes a
//! connection and runs as one statement or one transaction, so operations
//! on different sessions run side by side. The rules are the SQLite
//! backend's, and the shared store tests run against both: a commit is
//! one transaction (events, seq reservation, waiting inputs), history is
//! never rewritten, `stream_event`s are never stored, what does not decode
//! is [`StoreError::Corrupt`]. Leases are today's process leases
//! ([`Owner`]); the schema already has the columns the node leases and
//! fencing of the cluster design need (`nodes`, `owner_node`, `epoch`,
//! `busy`), left at their defaults for now.
//!
//! What differs from SQLite, because the store is across a network: a
//! server that cannot be reached is [`StoreError::Connect`] (at open it
//! stops agentbus with what to check), a connection that breaks mid-way is
//! [`StoreError::ConnectionLost`] (the pool makes a new one for the next
//! operation), and a commit sent again after its answer was lost is
//! recognised (see `log`). The URL's password is never shown: errors and
//! logs carry the URL without it.
//!
//! - `open`: the pool, the first connection, the migration.
//! - [`schema`]: tables and versioned migrations (`schema_version`).
//! - `sessions`: create, lease, release, delete, title, get, list, resolve.
//! - `log`: commit, accepted inputs, replay.
//! - `copies`: fork, export, import.
//! - `statements`: the statements those share; `rows`: decoding rows.
//! - `failure`: a Postgres failure as a [`StoreError`].

mod copies;
mod failure;
mod log;
mod open;
mod rows;
pub mod schema;
mod sessions;
mod statements;

use super::location::PostgresUrl;
use super::{
    AcceptedInput, Commit, ListPage, NewSession, Owner, SessionDocument, SessionRecord,
    SessionStore, StoreError,
};
use crate::protocol::{EventEnvelope, SessionId};
use chrono::{DateTime, SubsecRound, Utc};
use deadpool_postgres::{Client, Pool};
use failure::Failures;

/// The Postgres backend: cheap to clone, every clone shares one pool.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    failures: Failures,
}

impl PostgresStore {
    /// Connect to `url`, and make or migrate its schema. Refuses, untouched,
    /// a database from a newer agentbus ([`StoreError::NewerSchema`]) and
    /// one holding another program's tables
    /// ([`StoreError::ForeignDatabase`]); a server that cannot be reached is
    /// [`StoreError::Connect`], saying what to check.
    pub async fn open(url: &PostgresUrl) -> Result<PostgresStore, StoreError> {
        let (pool, failures) = open::open(url).await?;
        Ok(PostgresStore { pool, failures })
    }

    /// A connection from the pool.
    async fn client(&self) -> Result<Client, StoreError> {
        self.pool.get().await.map_err(|e| self.failures.pool(e))
    }
}

/// The clock, at the precision the store keeps.
fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

#[async_trait::async_trait]
impl SessionStore for PostgresStore {
    async fn create(&self, new: NewSession, owner: Owner) -> Result<SessionRecord, StoreError> {
        let client = self.client().await?;
        sessions::create(&client, &self.failures, new, owner, now()).await
    }

    async fn acquire(
        &self,
        id: &SessionId,
        owner: Owner,
    ) -> Result<(SessionRecord, Vec<EventEnvelope>), StoreError> {
        let mut client = self.client().await?;
        sessions::acquire(&mut client, &self.failures, id, owner).await
    }

    async fn release(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
        let client = self.client().await?;
        sessions::release(&client, &self.failures, id, owner).await
    }

    async fn commit(&self, id: &SessionId, commit: Commit) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        log::commit(&mut client, &self.failures, id, &commit, now()).await
    }

    async fn accept_input(&self, id: &SessionId, input: AcceptedInput) -> Result<(), StoreError> {
        let client = self.client().await?;
        log::accept_input(&client, &self.failures, id, &input, now()).await
    }

    async fn waiting_inputs(&self, id: &SessionId) -> Result<Vec<AcceptedInput>, StoreError> {
        let client = self.client().await?;
        log::waiting_inputs(&client, &self.failures, id).await
    }

    async fn sessions_with_waiting_inputs(&self) -> Result<Vec<SessionId>, StoreError> {
        let client = self.client().await?;
        log::sessions_with_waiting_inputs(&client, &self.failures).await
    }

    async fn load_events(
        &self,
        id: &SessionId,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        let client = self.client().await?;
        log::load_events(&client, &self.failures, id, after_seq, up_to).await
    }

    async fn list(&self, query: ListPage) -> Result<Vec<SessionRecord>, StoreError> {
        let client = self.client().await?;
        sessions::list(&client, &self.failures, query.limit, query.after.as_ref()).await
    }

    async fn get(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let client = self.client().await?;
        sessions::get(&client, &self.failures, id).await
    }

    async fn resolve(&self, prefix: &str) -> Result<SessionId, StoreError> {
        let client = self.client().await?;
        sessions::resolve(&client, &self.failures, prefix).await
    }

    async fn fork(
        &self,
        id: &SessionId,
        at_seq: Option<u64>,
        new_id: SessionId,
        owner: Option<Owner>,
    ) -> Result<SessionRecord, StoreError> {
        let mut client = self.client().await?;
        copies::fork(
            &mut client,
            &self.failures,
            id,
            at_seq,
            new_id,
            owner,
            now(),
        )
        .await
    }

    async fn delete(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        sessions::delete(&mut client, &self.failures, id, owner).await
    }

    async fn set_title(&self, id: &SessionId, title: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        sessions::set_title(&client, &self.failures, id, title).await
    }

    async fn export(&self, id: &SessionId) -> Result<SessionDocument, StoreError> {
        let mut client = self.client().await?;
        copies::export(&mut client, &self.failures, id, now()).await
    }

    async fn import(
        &self,
        document: SessionDocument,
        new_id: SessionId,
        owner: Option<Owner>,
    ) -> Result<SessionRecord, StoreError> {
        let mut client = self.client().await?;
        copies::import(&mut client, &self.failures, document, new_id, owner, now()).await
    }

    async fn close(&self) {
        self.pool.close();
    }
}
