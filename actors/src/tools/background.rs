//! Background commands: the `bash` commands one session started with
//! `run_in_background`, which outlive the call that started them.
//!
//! Why it exists: tools are stateless values shared by every session, but a
//! background command is state of one session — a running process, its
//! output not yet read, how it ended. [`BackgroundCommands`] is that state,
//! a per-session handle made by whoever drives the session (the AgentLoop,
//! the library's tool box) and handed to every call the way `Files` is
//! (`RunTool` → `ToolContext`). `bash` starts a command and hands it over
//! ([`Reservation::adopt`]); `bash_output` reads what it wrote since the
//! last read ([`BackgroundCommands::read`]); `kill_shell` ends its process
//! group ([`BackgroundCommands::kill`]); the session's driver ends them all
//! when the session stops ([`BackgroundCommands::end_all`]).
//!
//! What it keeps to: at most `[tools] max_background_commands` run at once
//! per session (a start beyond is refused, never queued); each command's
//! output is kept in a bounded buffer holding the newest bytes, and a read
//! says how many were dropped; ids (`bash_1`, `bash_2`, ...) are never
//! reused within a session. It must never touch a process this session did
//! not start (it signals only the process groups it was handed), never
//! block the async runtime, and never let a command outlive its session:
//! [`end_all`](BackgroundCommands::end_all) ends them (SIGTERM, then
//! SIGKILL, reaped), and dropping the last handle kills what is left with
//! SIGKILL.

use super::process;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::collections::{BTreeMap, VecDeque};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Ended commands kept for a last read; the oldest are forgotten beyond.
const ENDED_KEPT: usize = 16;
/// How long output is still read after a command ended before its end is
/// told (a process it started may hold its output open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// The background commands of one session (cheap to clone: clones share
/// them).
#[derive(Clone, Default)]
pub struct BackgroundCommands {
    table: Arc<Mutex<Table>>,
}

impl std::fmt::Debug for BackgroundCommands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let table = self.lock();
        f.debug_struct("BackgroundCommands")
            .field("commands", &table.commands.keys().collect::<Vec<_>>())
            .field("closed", &table.closed)
            .finish()
    }
}

#[derive(Default)]
struct Table {
    /// The number of the last id handed out.
    last: u64,
    /// By number (so in the order started).
    commands: BTreeMap<u64, Arc<Command>>,
    /// Slots reserved by starts in progress (counted as running).
    reserved: usize,
    /// The session has ended its commands: nothing more starts.
    closed: bool,
}

impl Table {
    fn running(&self) -> Vec<&Arc<Command>> {
        self.commands.values().filter(|c| c.is_running()).collect()
    }

    fn ids(&self) -> Vec<String> {
        self.commands.values().map(|c| c.id.clone()).collect()
    }

    /// Forgets the oldest ended commands beyond [`ENDED_KEPT`].
    fn forget_old(&mut self) {
        let ended: Vec<u64> = self
            .commands
            .iter()
            .filter(|(_, c)| !c.is_running())
            .map(|(n, _)| *n)
            .collect();
        for n in ended.iter().take(ended.len().saturating_sub(ENDED_KEPT)) {
            self.commands.remove(n);
        }
    }
}

impl Drop for Table {
    /// The session is gone without ending its commands (a driver dropped):
    /// nothing it started keeps running.
    fn drop(&mut self) {
        for command in self.commands.values().filter(|c| c.is_running()) {
            if let Some(pgid) = command.pgid {
                process::signal_group(pgid, Signal::SIGKILL);
            }
        }
    }
}

/// One background command.
struct Command {
    id: String,
    /// The command line, as the model wrote it.
    command: String,
    /// Its process group.
    pgid: Option<Pid>,
    state: watch::Sender<State>,
}

#[derive(Default)]
struct State {
    output: TailBuffer,
    /// How the command ended (its `bash`), once it has.
    ended: Option<Ended>,
    /// Its output pipe reached end-of-file: nothing more will come.
    eof: bool,
}

#[derive(Clone, Debug)]
enum Ended {
    Status(ExitStatus),
    /// Waiting for it failed; it is gone from our view.
    Lost(String),
}

impl Ended {
    fn describe(&self) -> String {
        match self {
            Ended::Status(status) => process::describe_end(*status),
            Ended::Lost(why) => format!("an unknown status (lost track of it: {why})"),
        }
    }

    fn success(&self) -> bool {
        matches!(self, Ended::Status(status) if status.success())
    }
}

impl Command {
    fn is_running(&self) -> bool {
        self.state.borrow().ended.is_none()
    }

    /// Resolves once the command has ended (its `bash` was reaped).
    async fn ended(&self) {
        let mut rx = self.state.subscribe();
        let _ = rx.wait_for(|s| s.ended.is_some()).await;
    }

    fn shown(&self) -> String {
        format!(
            "{} (`{}`)",
            self.id,
            crate::text::ellipsize(&self.command, 80)
        )
    }
}

/// The newest output of a command, at most `cap` bytes; what was pushed
/// out is counted.
#[derive(Default)]
struct TailBuffer {
    cap: usize,
    bytes: VecDeque<u8>,
    /// Bytes dropped since the last take.
    dropped: u64,
}

impl TailBuffer {
    fn new(cap: usize) -> Self {
        TailBuffer {
            cap: cap.max(1),
            ..TailBuffer::default()
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.bytes.extend(bytes);
        let excess = self.bytes.len().saturating_sub(self.cap);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.dropped == 0
    }

    /// What is buffered (invalid UTF-8 replaced) and how many bytes were
    /// dropped before it; the buffer is empty afterwards.
    fn take(&mut self) -> (String, u64) {
        let bytes: Vec<u8> = self.bytes.drain(..).collect();
        let dropped = std::mem::take(&mut self.dropped);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if dropped > 0 {
            // The cut may have split a character.
            let start = text.len() - text.trim_start_matches('\u{FFFD}').len();
            text.drain(..start);
        }
        (text, dropped)
    }
}

/// Why a background command could not be started, read or stopped, in
/// words the model reads.
#[derive(Debug, thiserror::Error)]
pub enum BackgroundError {
    /// No command of this session has the id.
    #[error(
        "no background command `{id}` in this session ({known}); give an id that `bash` with \
         `run_in_background: true` returned (an id is forgotten once its command has ended and \
         all its output was read)"
    )]
    Unknown { id: String, known: String },
    /// As many commands as allowed already run.
    #[error(
        "not started: {limit} background commands already run in this session ({running}), the \
         most allowed ([tools] max_background_commands); stop one with kill_shell, or wait for \
         one to end, before starting another"
    )]
    Limit { limit: usize, running: String },
    /// The session has ended its commands.
    #[error("not started: the session is stopping and has ended its background commands")]
    Closed,
}

/// A slot for one more running command, taken before the command starts
/// (so that a start beyond the limit starts nothing); given back when
/// dropped unused.
pub struct Reservation {
    commands: BackgroundCommands,
    number: u64,
    used: bool,
}

impl Reservation {
    /// The id the command will have.
    pub fn id(&self) -> String {
        format!("bash_{}", self.number)
    }

    /// The command is running, as process group `pgid` writing to
    /// `output`: from now on the session follows it. Its output is kept up
    /// to `buffer_bytes` (the newest). Returns its id.
    pub fn adopt(
        mut self,
        command: String,
        mut child: tokio::process::Child,
        output: pipe::Receiver,
        buffer_bytes: usize,
    ) -> String {
        let id = self.id();
        let pgid = process::group_of(&child);
        let state = watch::Sender::new(State {
            output: TailBuffer::new(buffer_bytes),
            ..State::default()
        });
        let entry = Arc::new(Command {
            id: id.clone(),
            command,
            pgid,
            state,
        });
        {
            let mut table = self.commands.lock();
            table.reserved = table.reserved.saturating_sub(1);
            self.used = true;
            table.commands.insert(self.number, entry.clone());
            table.forget_old();
            if table.closed {
                // The session ended its commands while this one started.
                drop(table);
                if let Some(pgid) = pgid {
                    process::signal_group(pgid, Signal::SIGKILL);
                }
                let _ = child.start_kill();
            }
        }
        tokio::spawn(follow(entry, child, output));
        id
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.used {
            let mut table = self.commands.lock();
            table.reserved = table.reserved.saturating_sub(1);
        }
    }
}

/// Reads a command's output into its buffer and records how it ended,
/// until both its `bash` has ended and its output is closed. Its end is
/// recorded once its output is all read — or, when a process it started
/// holds the output open, [`DRAIN_AFTER_EXIT`] after it ended — so a read
/// that says it ended has everything it wrote.
async fn follow(command: Arc<Command>, mut child: tokio::process::Child, mut out: pipe::Receiver) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut exit: Option<Ended> = None;
    let (mut recorded, mut eof) = (false, false);
    let mut drained_by = tokio::time::Instant::now();
    loop {
        if let Some(ended) = &exit
            && eof
            && !recorded
        {
            command.state.send_modify(|s| s.ended = Some(ended.clone()));
            recorded = true;
        }
        if recorded && eof {
            return;
        }
        tokio::select! {
            status = child.wait(), if exit.is_none() => {
                exit = Some(match status {
                    Ok(status) => Ended::Status(status),
                    Err(e) => Ended::Lost(e.to_string()),
                });
                drained_by = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
            }
            () = tokio::time::sleep_until(drained_by), if exit.is_some() && !recorded => {
                let ended = exit.clone();
                command.state.send_modify(|s| s.ended = ended);
                recorded = true;
            }
            read = out.read(&mut buf), if !eof => match read {
                Ok(0) => {
                    eof = true;
                    command.state.send_modify(|s| s.eof = true);
                }
                Ok(n) => command.state.send_modify(|s| s.output.push(&buf[..n])),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    eof = true;
                    command.state.send_modify(|s| s.eof = true);
                }
            },
        }
    }
}

/// What a read of a command returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub id: String,
    pub command: String,
    /// What it wrote since the last read (the newest part, when more was
    /// written than is kept).
    pub output: String,
    /// Bytes it wrote since the last read that were not kept.
    pub dropped: u64,
    /// `None` while it runs; how it ended, in words, once it has.
    pub ended: Option<String>,
    /// It ended with exit code 0.
    pub success: bool,
    /// It ended but a process it started still holds its output open.
    pub output_open: bool,
}

impl BackgroundCommands {
    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding the lock leaves the table consistent
        // (every change is one statement), so a poisoned lock is used.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot for a new command, when fewer than `limit` run (and
    /// the session has not ended its commands).
    pub fn reserve(&self, limit: usize) -> Result<Reservation, BackgroundError> {
        let mut table = self.lock();
        if table.closed {
            return Err(BackgroundError::Closed);
        }
        let running = table.running();
        if running.len() + table.reserved >= limit {
            let running = running
                .iter()
                .map(|c| c.shown())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(BackgroundError::Limit { limit, running });
        }
        table.reserved += 1;
        table.last += 1;
        Ok(Reservation {
            commands: self.clone(),
            number: table.last,
            used: false,
        })
    }

    fn find(&self, id: &str) -> Result<Arc<Command>, BackgroundError> {
        let table = self.lock();
        let found = id
            .trim()
            .strip_prefix("bash_")
            .and_then(|n| n.parse::<u64>().ok())
            .and_then(|n| table.commands.get(&n));
        match found {
            Some(command) => Ok(command.clone()),
            None => {
                let ids = table.ids();
                let known = if ids.is_empty() {
                    "it has none".to_string()
                } else {
                    format!("it has {}", ids.join(", "))
                };
                Err(BackgroundError::Unknown {
                    id: id.to_string(),
                    known,
                })
            }
        }
    }

    fn forget(&self, command: &Command) {
        let mut table = self.lock();
        table.commands.retain(|_, c| c.id != command.id);
    }

    /// What command `id` wrote since the last read, and whether it still
    /// runs. When nothing is new and it runs, waits up to `wait` for output
    /// or its end (`cancel` stops the wait). A command that has ended and
    /// whose output is all read is forgotten.
    pub async fn read(
        &self,
        id: &str,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<Reading, BackgroundError> {
        let command = self.find(id)?;
        if !wait.is_zero() {
            let mut rx = command.state.subscribe();
            let news = rx.wait_for(|s| !s.output.is_empty() || s.ended.is_some());
            tokio::select! {
                _ = tokio::time::timeout(wait, news) => {}
                () = cancel.cancelled() => {}
            }
        }
        Ok(self.take(&command))
    }

    /// Takes what `command` wrote, forgetting it when that was its last.
    fn take(&self, command: &Command) -> Reading {
        let mut taken = None;
        command.state.send_if_modified(|s| {
            taken = Some((s.output.take(), s.ended.clone(), s.eof));
            false
        });
        let ((output, dropped), ended, eof) = taken.unwrap_or_default();
        if ended.is_some() && eof {
            self.forget(command);
        }
        Reading {
            id: command.id.clone(),
            command: command.command.clone(),
            output,
            dropped,
            success: ended.as_ref().is_some_and(Ended::success),
            ended: ended.map(|e| e.describe()),
            output_open: !eof,
        }
    }

    /// Stops command `id`: SIGTERM to its process group, SIGKILL after a
    /// grace period, its `bash` reaped. Returns what it wrote since the
    /// last read and how it ended; the command is forgotten. `already`:
    /// it had ended by itself.
    pub async fn kill(&self, id: &str) -> Result<(Reading, bool), BackgroundError> {
        let command = self.find(id)?;
        let already = !command.is_running();
        stop(&command).await;
        let reading = self.take(&command);
        self.forget(&command);
        Ok((reading, already))
    }

    /// The session is stopping: ends every command still running (as
    /// [`kill`](Self::kill) does, all at once) and starts no more. Returns
    /// the ended commands, as shown to the user (`bash_1 (`npm run dev`)`).
    pub async fn end_all(&self) -> Vec<String> {
        let running: Vec<Arc<Command>> = {
            let mut table = self.lock();
            table.closed = true;
            let running = table.running().into_iter().cloned().collect();
            table.commands.clear();
            running
        };
        futures::future::join_all(running.iter().map(|c| stop(c))).await;
        running.iter().map(|c| c.shown()).collect()
    }

    /// The ids of the commands running now.
    pub fn running(&self) -> Vec<String> {
        self.lock().running().iter().map(|c| c.id.clone()).collect()
    }
}

/// Ends `command`'s process group and waits until its `bash` is reaped.
async fn stop(command: &Command) {
    if !command.is_running() {
        // Processes it started that still hold its output open live on in
        // its group (which keeps the group's id theirs): they go too. An
        // empty group is left alone, its id free for reuse.
        if let Some(pgid) = command.pgid
            && !command.state.borrow().eof
        {
            process::signal_group(pgid, Signal::SIGKILL);
        }
        return;
    }
    if let Some(pgid) = command.pgid {
        process::terminate(pgid, command.ended()).await;
    }
    // SIGKILL was sent: the reaping follows.
    command.ended().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_buffer_keeps_the_newest_bytes_and_counts_the_rest() {
        let mut buffer = TailBuffer::new(5);
        buffer.push(b"abc");
        buffer.push(b"defgh");
        assert_eq!(buffer.take(), ("defgh".to_string(), 3));
        assert!(buffer.is_empty());
        buffer.push(b"xy");
        assert_eq!(buffer.take(), ("xy".to_string(), 0));
    }

    #[test]
    fn a_character_cut_by_the_drop_is_not_shown_half() {
        let mut buffer = TailBuffer::new(4);
        buffer.push("aé€".as_bytes()); // 1 + 2 + 3 bytes
        let (text, dropped) = buffer.take();
        assert_eq!(dropped, 2);
        assert_eq!(text, "€");
    }

    #[test]
    fn reservations_count_against_the_limit_until_given_back() {
        let commands = BackgroundCommands::default();
        let first = commands.reserve(2).unwrap();
        assert_eq!(first.id(), "bash_1");
        let second = commands.reserve(2).unwrap();
        let refused = commands.reserve(2).err().unwrap();
        assert!(matches!(refused, BackgroundError::Limit { limit: 2, .. }));
        drop(second);
        let third = commands.reserve(2).unwrap();
        assert_eq!(third.id(), "bash_3", "ids are never reused");
        drop(first);
    }
}
