//! Opening a Postgres store: the URL read, the connection pool made, one
//! connection tried at once (so a server that is not there, a database
//! that does not exist or a wrong password stops agentbus at start, with
//! what to check), then the schema recognised and migrated.
//!
//! Exists so that every way of failing to reach Postgres is said the same
//! way, naming the URL without its password. Never retries a failed
//! connection here: a store that cannot be opened is an error for the
//! user; a connection lost later is re-made by the pool on the next
//! operation.

use super::failure::Failures;
use super::schema;
use crate::store::StoreError;
use crate::store::location::PostgresUrl;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::NoTls;

/// At most this many connections per process: commits of different
/// sessions run side by side, each on a connection of its own.
const MAX_CONNECTIONS: usize = 16;

/// How long making a connection may take, unless the URL says
/// (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long sent data may stay unacknowledged before the connection counts
/// as lost, unless the URL says (`tcp_user_timeout`): a server that
/// vanished is noticed in this long, not after the system's minutes of
/// retransmissions.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// The pool on `url`, its first connection made and the schema migrated.
pub async fn open(url: &PostgresUrl) -> Result<(Pool, Failures), StoreError> {
    let (pool, failures) = pool(url, MAX_CONNECTIONS)?;
    let mut client = pool.get().await.map_err(|e| failures.pool(e))?;
    schema::migrate(&mut client, &failures).await?;
    drop(client);
    tracing::info!(store = %failures.url(), "session store opened (Postgres)");
    Ok((pool, failures))
}

/// A pool of at most `max` connections on `url` (none made yet).
pub fn pool(url: &PostgresUrl, max: usize) -> Result<(Pool, Failures), StoreError> {
    let shown = url.to_string();
    let mut config =
        tokio_postgres::Config::from_str(url.secret_text()).map_err(|e| StoreError::Connect {
            url: shown.clone(),
            detail: super::failure::describe(&e),
            hint: "the URL must read postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE".into(),
        })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("agentbus");
    }
    let failures = Failures::new(shown.clone(), &config);
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(max)
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(CONNECT_TIMEOUT))
        .build()
        .map_err(|e| StoreError::Connect {
            url: shown.clone(),
            detail: e.to_string(),
            hint: "the connection pool could not be made".into(),
        })?;
    Ok((pool, failures))
}
