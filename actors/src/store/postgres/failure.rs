//! How a Postgres failure becomes a [`StoreError`] that names what was
//! being done, to which session, in which store — and says what to check.
//!
//! Exists so that every operation tells a lost connection
//! ([`StoreError::ConnectionLost`], worth retrying) from a statement the
//! server refused ([`StoreError::Postgres`]) and a server that cannot be
//! reached at all ([`StoreError::Connect`], with a hint: is it running
//! there, does the database exist, is the password right), the same way.
//! Only the URL without its password is ever put in an error.
//!
//! Never panics and never decides what to do about a failure: callers
//! match on the cases they handle (a unique violation is a taken id or
//! seq) before falling back to [`Failures::statement`].

use crate::protocol::SessionId;
use crate::store::StoreError;
use deadpool_postgres::PoolError;
use std::error::Error as _;
use tokio_postgres::error::{DbError, SqlState};

/// Where the store is, for the errors of its operations.
#[derive(Clone, Debug)]
pub struct Failures {
    /// The URL without its password.
    url: String,
    /// Where the server should be (`HOST:PORT`, or a socket folder), for
    /// hints.
    address: String,
    /// Who connects to what, for hints.
    user: String,
    database: String,
    /// `createdb`'s flags for the first host (`-h HOST -p PORT`).
    createdb_flags: String,
}

impl Failures {
    pub fn new(url: String, config: &tokio_postgres::Config) -> Self {
        let port = |i: usize| {
            config
                .get_ports()
                .get(i)
                .or_else(|| config.get_ports().first())
                .copied()
                .unwrap_or(5432)
        };
        let addresses: Vec<String> = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| match host {
                tokio_postgres::config::Host::Tcp(name) => format!("{name}:{}", port(i)),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(folder) => {
                    format!("{} (port {})", folder.display(), port(i))
                }
            })
            .collect();
        let user = config.get_user().unwrap_or("?").to_string();
        let createdb_flags = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(name)) => format!("-h {name} -p {}", port(0)),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(folder)) => {
                format!("-h {} -p {}", folder.display(), port(0))
            }
            None => String::new(),
        };
        Failures {
            createdb_flags,
            url,
            address: if addresses.is_empty() {
                "(no host in the URL)".to_string()
            } else {
                addresses.join(", ")
            },
            database: config.get_dbname().unwrap_or(&user).to_string(),
            user,
        }
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A statement of `operation` failed with `error`.
    pub fn statement(
        &self,
        operation: &'static str,
        id: Option<&SessionId>,
        error: tokio_postgres::Error,
    ) -> StoreError {
        let id = id.map(|id| id.0.clone());
        if is_lost(&error) {
            return StoreError::ConnectionLost {
                url: self.url.clone(),
                operation,
                id,
                detail: describe(&error),
            };
        }
        StoreError::Postgres {
            url: self.url.clone(),
            operation,
            id,
            detail: describe(&error),
        }
    }

    /// No connection could be had from the pool.
    pub fn pool(&self, error: PoolError) -> StoreError {
        match error {
            PoolError::Backend(error) => self.connect(&error),
            PoolError::Timeout(_) => StoreError::Connect {
                url: self.url.clone(),
                detail: "no connection could be made in time".to_string(),
                hint: self.unreachable_hint(),
            },
            PoolError::Closed => StoreError::Closed {
                reason: "it was closed".to_string(),
            },
            other => StoreError::Connect {
                url: self.url.clone(),
                detail: other.to_string(),
                hint: self.unreachable_hint(),
            },
        }
    }

    /// Connecting failed with `error`.
    pub fn connect(&self, error: &tokio_postgres::Error) -> StoreError {
        let hint = match error.as_db_error().map(DbError::code) {
            Some(code) if *code == SqlState::INVALID_CATALOG_NAME => format!(
                "Postgres answers at {}, but has no database `{}`: create it \
                 (`createdb {} -U {} {}`) or name another in the URL",
                self.address, self.database, self.createdb_flags, self.user, self.database
            ),
            Some(code)
                if *code == SqlState::INVALID_PASSWORD
                    || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
            {
                format!(
                    "Postgres at {} refused user `{}`: check the user and password in the URL \
                     (and the server's pg_hba.conf)",
                    self.address, self.user
                )
            }
            Some(_) => format!("Postgres at {} refused the connection", self.address),
            None => self.unreachable_hint(),
        };
        StoreError::Connect {
            url: self.url.clone(),
            detail: describe(error),
            hint,
        }
    }

    fn unreachable_hint(&self) -> String {
        format!(
            "is Postgres running at {} and accepting connections? \
             (`--store` or `[sessions] store` says where; without either, agentbus keeps its \
             sessions in SQLite in the data dir)",
            self.address
        )
    }
}

/// Whether `error` means the connection is gone (rather than a statement
/// refused on a working one): closed, an I/O failure, or the server
/// shutting down or refusing connections for now.
fn is_lost(error: &tokio_postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    if let Some(db) = error.as_db_error() {
        let code = db.code().code();
        // Class 08: connection exceptions; 57P01-57P03: the server is
        // shutting down, crashed or starting.
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03");
    }
    let mut source = error.source();
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// `error` in words: the server's message and SQLSTATE when it sent one,
/// else the client's error and its causes.
pub fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str(&format!("; {detail}"));
        }
        return text;
    }
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// Whether `error` is a unique violation (a taken key).
pub fn is_unique_violation(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::UNIQUE_VIOLATION)
}
