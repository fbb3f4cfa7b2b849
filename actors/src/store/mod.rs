//! The session store: sessions and their append-only event logs, behind
//! one trait, [`SessionStore`].
//!
//! Exists so that sessions outlive the process: every persisted event (all
//! but `stream_event`) is appended as it is published, and a session can be
//! listed, resumed (its log folded back into a state), forked, deleted,
//! exported and imported. The trait is the seam a backend plugs into: the
//! embedded one is SQLite ([`sqlite`], the default, no server needed), the
//! other Postgres ([`postgres`], one database for several processes);
//! [`open`] chooses from a [`StoreLocation`] (a path, or a `postgres://`
//! URL). Everything above this folder holds an `Arc<dyn SessionStore>` and
//! never sees a backend.
//!
//! Rules every backend keeps:
//! - never rewrites history: an appended event is never updated or replaced
//!   (a seq that is not after the stored log is refused), and forks and
//!   imports create new sessions;
//! - never stores a `stream_event` and never anything secret (events hold
//!   none);
//! - never panics on what it reads: undecodable data is
//!   [`StoreError::Corrupt`];
//! - leases ([`lease`]) make sure only one process drives a given session,
//!   and on a cluster claims fenced by an epoch only one node ([`cluster`]);
//! - an accepted input is stored before it is acknowledged and forgotten
//!   only with the events of its turn; a seq reservation is never lowered.
//!
//! A session's record also says who may see it, for `agentbus serve`'s
//! API tokens: `created_by`, the name of the token that created (or
//! forked) it — none for one made without a token, imported, or stored
//! before tokens had names — and `viewers`, the names of the tokens it was
//! given to follow. The store keeps them and lists one token's sessions
//! ([`ListPage::visible_to`]) without reading the others'; it never
//! decides who may do what (the HTTP layer does, from the record).
//!
//! - `backend`: the [`SessionStore`] trait.
//! - [`checkpoint`]: blobs and checkpoints, what taking back a session's
//!   changes to its workspace needs.
//! - [`cluster`]: what a store shared by a cluster's nodes adds (node
//!   leases, claims fenced by an epoch, sweeps): [`ClusterStore`].
//! - [`commit`]: what one step of a running session writes (events, the
//!   seq reservation, the inputs still waiting).
//! - [`record`]: what is kept about a session besides its log (its
//!   creator and viewers among it), and paging.
//! - [`lease`]: which process owns a session ([`Owner`]).
//! - [`document`]: the export format ([`SessionDocument`]), pure.
//! - [`error`]: the one error type, [`StoreError`].
//! - [`location`]: where the store is ([`StoreLocation`]), a URL's password
//!   never shown.

mod backend;
pub mod checkpoint;
pub mod cluster;
pub mod commit;
pub mod copies;
pub mod document;
pub mod error;
pub mod lease;
pub mod location;
pub mod postgres;
pub mod record;
pub mod sqlite;

#[cfg(test)]
mod tests;

pub use backend::SessionStore;
pub use cluster::ClusterStore;
pub use commit::{AcceptedInput, Commit};
pub use document::SessionDocument;
pub use error::StoreError;
pub use lease::Owner;
pub use location::StoreLocation;
pub use record::{ListCursor, ListPage, NewSession, NodeClaim, SessionRecord};

use std::sync::Arc;
use std::time::Duration;

/// The store at `location`, opened (made or migrated as needed). A SQLite
/// write waits up to `busy_timeout` for another process holding the file;
/// Postgres arbitrates its writers itself.
pub async fn open(
    location: &StoreLocation,
    busy_timeout: Duration,
) -> Result<Arc<dyn SessionStore>, StoreError> {
    match location {
        StoreLocation::Sqlite(path) => {
            let options = sqlite::StoreOptions {
                path: path.clone(),
                busy_timeout,
            };
            Ok(Arc::new(sqlite::SqliteStore::open(options).await?))
        }
        StoreLocation::Postgres(url) => Ok(Arc::new(postgres::PostgresStore::open(url).await?)),
    }
}

/// The Postgres database at `url`, opened as a node of a cluster named
/// `name` whose lease lasts `ttl`: the same store, seen as sessions and as
/// the cluster's.
pub async fn open_node(
    url: &location::PostgresUrl,
    name: String,
    ttl: Duration,
) -> Result<(Arc<dyn SessionStore>, Arc<dyn ClusterStore>), StoreError> {
    let store = Arc::new(postgres::PostgresStore::open_node(url, name, ttl).await?);
    Ok((store.clone(), store))
}
