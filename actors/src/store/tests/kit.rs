//! What the store's tests share: each backend to run a test against
//! ([`Backend`], with a side door to its tables), the events tests append,
//! and [`on_every_backend!`], which makes a test of each backend from one
//! test function.
//!
//! A Postgres test gets a fresh database on the test binary's throwaway
//! server (`agentbus_testkit::postgres`); without a server it fails, or is
//! skipped with the reason when `AGENTBUS_SKIP_POSTGRES=1`.

use crate::protocol::{
    AgentMessage, AssistantEvent, ContentBlock, EventEnvelope, ResultEvent, SessionId, StopReason,
    StreamDelta, StreamEvent, ToolResultEvent, Usage, UserEvent,
};
use crate::store::{NewSession, Owner, SessionRecord, SessionStore, StoreError, StoreLocation};
use agentbus_testkit::postgres::{TestDatabase, fresh_database};
use chrono::{DateTime, TimeZone, Utc};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

/// A store as tests hold it: through the trait, whatever the backend.
pub type Store = Arc<dyn SessionStore>;

/// The password in every Postgres URL the tests use (trust authentication
/// ignores it): it must never show in an error.
pub const PASSWORD: &str = "pw-must-not-show-4711";

/// A backend with an empty store to test, and a side door to its tables.
pub enum Backend {
    /// A SQLite file in a temporary folder (kept while the backend lives).
    Sqlite { _dir: TempDir, path: PathBuf },
    /// A fresh database on the test server.
    Postgres { database: TestDatabase },
}

impl Backend {
    pub fn sqlite() -> Backend {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("nested").join("sessions.db");
        Backend::Sqlite { _dir: dir, path }
    }

    /// `None` when there is no Postgres server and the tests may skip.
    pub async fn postgres() -> Option<Backend> {
        Some(Backend::Postgres {
            database: fresh_database().await?,
        })
    }

    /// Where the store is, as `--store` would say it.
    pub fn location(&self) -> StoreLocation {
        match self {
            Backend::Sqlite { path, .. } => StoreLocation::Sqlite(path.clone()),
            Backend::Postgres { database } => database
                .url_with_password(PASSWORD)
                .parse()
                .expect("a Postgres URL"),
        }
    }

    /// A store on it (each call another one on the same data: a reopening,
    /// or a second process).
    pub async fn open(&self) -> Store {
        crate::store::open(&self.location(), Duration::from_secs(5))
            .await
            .unwrap_or_else(|e| panic!("the store opens: {e}"))
    }

    /// Run `sql` behind the store's back.
    pub async fn execute(&self, sql: &str) {
        match self {
            Backend::Sqlite { path, .. } => raw(path)
                .execute_batch(sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
            Backend::Postgres { database } => database
                .client()
                .await
                .batch_execute(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
        }
    }

    /// The one integer `sql` selects (a `count(*)`).
    pub async fn count(&self, sql: &str) -> i64 {
        match self {
            Backend::Sqlite { path, .. } => raw(path)
                .query_row(sql, [], |row| row.get(0))
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
            Backend::Postgres { database } => database
                .client()
                .await
                .query_one(sql, &[])
                .await
                .and_then(|row| row.try_get(0))
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
        }
    }

    /// The one text `sql` selects.
    pub async fn text(&self, sql: &str) -> String {
        match self {
            Backend::Sqlite { path, .. } => raw(path)
                .query_row(sql, [], |row| row.get(0))
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
            Backend::Postgres { database } => database
                .client()
                .await
                .query_one(sql, &[])
                .await
                .and_then(|row| row.try_get(0))
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
        }
    }
}

/// A second connection to a SQLite file, to look behind the store's back.
pub fn raw(path: &Path) -> Connection {
    Connection::open(path).expect("raw connection")
}

/// A test for each backend from one `async fn NAME(backend: Backend)`:
/// `sqlite::NAME` and `postgres::NAME`.
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::sqlite()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    if let Some(backend) = super::Backend::postgres().await {
                        super::$name(backend).await;
                    }
                }
            )*
        }
    };
}
pub(crate) use on_every_backend;

pub async fn stop(store: Store) {
    store.close().await;
}

pub fn me() -> Owner {
    Owner::current()
}

pub fn sid(s: &str) -> SessionId {
    SessionId::from(s)
}

pub fn new_session(id: &str) -> NewSession {
    NewSession {
        id: sid(id),
        model: "default".to_string(),
        workspace: "/work/project".to_string(),
        parent: None,
        parent_call: None,
        created_by: None,
    }
}

pub async fn create(store: &Store, id: &str) -> SessionRecord {
    store
        .create(new_session(id), me())
        .await
        .expect("session created")
}

pub async fn append(
    store: &Store,
    id: &str,
    events: Vec<Arc<EventEnvelope>>,
) -> Result<(), StoreError> {
    store.append(&sid(id), events).await
}

pub async fn load_all(store: &Store, id: &str) -> Result<Vec<EventEnvelope>, StoreError> {
    store.load_events(&sid(id), 0, None).await
}

pub async fn get(store: &Store, id: &str) -> Option<SessionRecord> {
    store.get(&sid(id)).await.expect("get session")
}

/// Event times with nanoseconds, to show bodies keep full precision.
pub fn time(seq: u64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + seq as i64, 123_456_789)
        .single()
        .expect("valid time")
}

pub fn event(id: &str, seq: u64, message: AgentMessage) -> Arc<EventEnvelope> {
    Arc::new(EventEnvelope {
        session_id: sid(id),
        seq,
        turn_id: Some(seq / 4 + 1),
        at: time(seq),
        message,
    })
}

pub fn user(id: &str, seq: u64, text: &str) -> Arc<EventEnvelope> {
    event(
        id,
        seq,
        AgentMessage::User(UserEvent::new(text.to_string())),
    )
}

pub fn assistant(id: &str, seq: u64, text: &str) -> Arc<EventEnvelope> {
    event(
        id,
        seq,
        AgentMessage::Assistant(AssistantEvent {
            content: vec![
                ContentBlock::Text {
                    text: text.to_string(),
                },
                ContentBlock::ToolUse {
                    id: format!("call_{seq}"),
                    name: "read_file".to_string(),
                    input: serde_json::json!({"path": "a.txt"}),
                },
            ],
            model: "default".to_string(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
            finish_reason: "tool_use".to_string(),
            interrupted: false,
            context: None,
        }),
    )
}

pub fn tool_result_with(id: &str, seq: u64, output: &str) -> Arc<EventEnvelope> {
    event(
        id,
        seq,
        AgentMessage::ToolResult(ToolResultEvent {
            checkpoint: None,
            call_id: format!("call_{}", seq - 1),
            name: "read_file".to_string(),
            is_error: false,
            output: output.to_string(),
            duration_ms: 3,
            cancelled: false,
        }),
    )
}

pub fn tool_result(id: &str, seq: u64) -> Arc<EventEnvelope> {
    tool_result_with(id, seq, "hello\n")
}

pub fn result(id: &str, seq: u64) -> Arc<EventEnvelope> {
    event(
        id,
        seq,
        AgentMessage::Result(ResultEvent {
            stop_reason: StopReason::EndTurn,
            text: "done".to_string(),
            usage: Usage::default(),
            steps: 1,
            duration_ms: 40,
            error: None,
            context: None,
        }),
    )
}

pub fn stream(id: &str, seq: u64) -> Arc<EventEnvelope> {
    event(
        id,
        seq,
        AgentMessage::StreamEvent(StreamEvent {
            event: StreamDelta::TextDelta {
                index: 0,
                text: "partial".to_string(),
            },
        }),
    )
}

/// One turn of four persisted events starting at `first`.
pub fn turn(id: &str, first: u64, text: &str) -> Vec<Arc<EventEnvelope>> {
    vec![
        user(id, first, text),
        assistant(id, first + 1, "let me look"),
        tool_result(id, first + 2),
        result(id, first + 3),
    ]
}

pub fn unwrapped(events: &[Arc<EventEnvelope>]) -> Vec<EventEnvelope> {
    events.iter().map(|e| e.as_ref().clone()).collect()
}

pub fn seqs(events: &[EventEnvelope]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// A process that is alive until killed: a live owner that is not us.
pub struct OtherProcess {
    child: Child,
}

impl OtherProcess {
    pub fn start() -> Self {
        let child = Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("spawn sleep");
        OtherProcess { child }
    }

    pub fn owner(&self) -> Owner {
        Owner::of_pid(self.child.id()).expect("the child runs")
    }

    pub fn kill(&mut self) {
        self.child.kill().expect("kill child");
        self.child.wait().expect("reap child");
    }
}

impl Drop for OtherProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
