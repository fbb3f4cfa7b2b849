//! Another process's write lock on a fixture's session store: what agentbus
//! meets when something else holds the SQLite file.

use super::Fixture;
use std::path::PathBuf;

impl Fixture {
    /// The store file of this fixture's data dir.
    pub fn database(&self) -> PathBuf {
        self.home.path().join("data/agentbus.db")
    }
}

/// A connection of this test process in an exclusive transaction on the
/// store, held until released (or dropped).
pub struct StoreLock {
    conn: rusqlite::Connection,
}

impl StoreLock {
    pub fn take(fx: &Fixture) -> StoreLock {
        let conn =
            rusqlite::Connection::open(fx.database()).expect("open the store beside agentbus");
        conn.execute_batch("BEGIN EXCLUSIVE")
            .expect("take the write lock");
        StoreLock { conn }
    }

    pub fn release(self) {
        self.conn.execute_batch("ROLLBACK").expect("let go");
    }
}
