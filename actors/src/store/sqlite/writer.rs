//! The writer: the one thread that owns the SQLite connection and runs
//! the store's operations on it, in the order they were sent.
//!
//! SQLite blocks, so the connection lives on a thread of its own, never on
//! a runtime worker. Appends ([`Job::Write`]: a session's commit, an
//! accepted input) that are waiting together run as one group commit: one
//! `IMMEDIATE` transaction, each write in a savepoint of its own. When a
//! thousand sessions end their turns at once, that is one transaction
//! instead of a thousand — the per-transaction work (the write lock, the
//! WAL frames of the pages every append touches) is most of an append's
//! cost. Each write is answered only after the transaction holding it
//! committed; a write that fails is rolled back to its savepoint and
//! answered with its own error, leaving the others in the group untouched.
//!
//! A panic in an operation ends the thread: later calls fail with
//! [`StoreError::Closed`].

use super::super::StoreError;
use rusqlite::{Connection, TransactionBehavior};
use std::sync::mpsc;
use tokio::sync::oneshot;

/// At most this many writes share one transaction (a bound on how long
/// the first of them waits for its answer).
const MAX_GROUP: usize = 256;

/// An append, run inside the writer's transaction.
pub(super) type WriteWork = Box<dyn FnOnce(&Connection) -> Result<(), StoreError> + Send>;

/// Any other operation, on the connection itself; it answers for itself.
pub(super) type RunWork = Box<dyn FnOnce(&mut Connection) + Send>;

/// An append and where its answer goes.
pub(super) struct Write {
    pub work: WriteWork,
    pub reply: Reply,
}

/// Where a write's answer goes.
pub(super) struct Reply {
    /// What the write is and for which session, to name in an error of the
    /// transaction around it.
    pub operation: &'static str,
    pub id: String,
    pub answer: oneshot::Sender<Result<(), StoreError>>,
}

/// What the writer is asked to do.
pub(super) enum Job {
    /// An append: grouped with the appends waiting next to it.
    Write(Write),
    /// Any other operation, alone.
    Run(RunWork),
    /// Finish what was sent before, then end the thread.
    Stop(oneshot::Sender<()>),
}

/// Start the writer thread on `conn`; jobs go in through the sender.
pub(super) fn start(conn: Connection) -> std::io::Result<mpsc::Sender<Job>> {
    let (jobs, queue) = mpsc::channel();
    std::thread::Builder::new()
        .name("agentbus-store".into())
        .spawn(move || serve(conn, &queue))?;
    Ok(jobs)
}

fn serve(mut conn: Connection, queue: &mpsc::Receiver<Job>) {
    let mut next = queue.recv().ok();
    while let Some(job) = next.take() {
        match job {
            Job::Run(work) => work(&mut conn),
            Job::Stop(stopped) => {
                let _ = stopped.send(());
                return;
            }
            Job::Write(write) => {
                let mut group = vec![write];
                while group.len() < MAX_GROUP {
                    match queue.try_recv() {
                        Ok(Job::Write(write)) => group.push(write),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                write_group(&mut conn, group);
            }
        }
        if next.is_none() {
            next = queue.recv().ok();
        }
    }
}

/// Run `group` in one transaction and answer each write.
fn write_group(conn: &mut Connection, group: Vec<Write>) {
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            for Write { reply, .. } in group {
                let error = reply.failed(copy(&e));
                let _ = reply.answer.send(Err(error));
            }
            return;
        }
    };
    let mut done = Vec::with_capacity(group.len());
    for Write { work, reply } in group {
        let outcome = match tx.savepoint() {
            Ok(mut savepoint) => match work(&savepoint) {
                Ok(()) => savepoint.commit().map_err(|e| reply.failed(e)),
                Err(own) => {
                    // Undo this write alone; the others stay.
                    let _ = savepoint.rollback();
                    Err(own)
                }
            },
            Err(e) => Err(reply.failed(e)),
        };
        done.push((reply, outcome));
    }
    let committed = tx.commit();
    for (reply, outcome) in done {
        let answered = match (&committed, outcome) {
            (Ok(()), outcome) | (Err(_), outcome @ Err(_)) => outcome,
            (Err(e), Ok(())) => Err(reply.failed(copy(e))),
        };
        let _ = reply.answer.send(answered);
    }
}

impl Reply {
    fn failed(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            operation: self.operation,
            id: Some(self.id.clone()),
            source,
        }
    }
}

/// The same failure again, for each write it failed (its code kept: a
/// busy database is told as [`StoreError::Locked`]).
fn copy(e: &rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(x: i64, then_fail: bool) -> WriteWork {
        Box::new(move |tx| {
            tx.execute("INSERT INTO t (x) VALUES (?1)", [x])
                .map_err(|e| StoreError::Sqlite {
                    operation: "test insert",
                    id: None,
                    source: e,
                })?;
            match then_fail {
                true => Err(StoreError::Closed {
                    reason: format!("write {x} fails after inserting"),
                }),
                false => Ok(()),
            }
        })
    }

    /// Queues `writes` before the writer runs, so they make one group;
    /// their answers, in order.
    fn one_group(conn: Connection, writes: Vec<WriteWork>) -> Vec<Result<(), StoreError>> {
        let (jobs, queue) = mpsc::channel();
        let mut answers = Vec::new();
        for work in writes {
            let (answer, answered) = oneshot::channel();
            let reply = Reply {
                operation: "test insert",
                id: "s".into(),
                answer,
            };
            jobs.send(Job::Write(Write { work, reply })).unwrap();
            answers.push(answered);
        }
        let (stopped, _) = oneshot::channel();
        jobs.send(Job::Stop(stopped)).unwrap();
        serve(conn, &queue);
        answers
            .into_iter()
            .map(|mut answered| answered.try_recv().expect("every write answered"))
            .collect()
    }

    #[test]
    fn a_failing_write_in_a_group_is_undone_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let answers = one_group(
            conn,
            vec![insert(1, false), insert(2, true), insert(3, false)],
        );
        assert!(answers[0].is_ok() && answers[2].is_ok(), "{answers:?}");
        assert!(
            matches!(&answers[1], Err(StoreError::Closed { reason }) if reason.contains("write 2")),
            "{answers:?}"
        );
        let kept: Vec<i64> = Connection::open(&path)
            .unwrap()
            .prepare("SELECT x FROM t ORDER BY x")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(kept, [1, 3], "the failed write's insert was rolled back");
    }

    #[test]
    fn a_group_that_cannot_begin_fails_every_write_with_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER); BEGIN IMMEDIATE")
            .unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.busy_timeout(std::time::Duration::ZERO).unwrap();
        let answers = one_group(conn, vec![insert(1, false), insert(2, false)]);
        for answer in &answers {
            match answer {
                Err(StoreError::Sqlite { id, source, .. }) => {
                    assert_eq!(id.as_deref(), Some("s"));
                    assert_eq!(
                        source.sqlite_error_code(),
                        Some(rusqlite::ErrorCode::DatabaseBusy),
                        "the code is kept, so the store says it is locked"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
