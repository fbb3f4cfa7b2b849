//! [`StoreOptions`]: where the store file is and how long a write waits for
//! another process. Its own file because both the store (`mod.rs`) and its
//! opening (`open.rs`) read it.

use std::path::PathBuf;
use std::time::Duration;

/// Where the store lives and how long a write waits for another process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// The database file (its folder is created if missing).
    pub path: PathBuf,
    /// How long a statement waits for another connection's lock before it
    /// fails with [`StoreError::Locked`](crate::store::StoreError::Locked).
    pub busy_timeout: Duration,
}

impl StoreOptions {
    /// The default busy timeout.
    #[cfg(test)]
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// The store at `path`, with the default busy timeout.
    #[cfg(test)]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StoreOptions {
            path: path.into(),
            busy_timeout: Self::DEFAULT_BUSY_TIMEOUT,
        }
    }
}
