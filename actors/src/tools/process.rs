//! A command's process group, as `bash` and the background commands share
//! it: ending the group, and the words for how a command ended.
//!
//! Every command a tool starts runs in a process group of its own (its
//! leader's pid), so that everything it started can be signalled at once.
//! This file must never signal anything but such a group, and never wait
//! without a bound: [`terminate`] gives a group [`TERM_GRACE`] after SIGTERM,
//! then sends SIGKILL.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

/// How long a group has between SIGTERM and SIGKILL.
pub(crate) const TERM_GRACE: Duration = Duration::from_secs(3);

/// The process group a started child leads (`process_group(0)`), if its
/// pid is known.
pub(crate) fn group_of(child: &tokio::process::Child) -> Option<Pid> {
    child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
}

/// Sends `signal` to group `pgid`; a group already gone is fine.
pub(crate) fn signal_group(pgid: Pid, signal: Signal) {
    // ESRCH (the group is already gone) is fine.
    let _ = killpg(pgid, signal);
}

/// Ends group `pgid`: SIGTERM, then, once `exited` resolves (the leader
/// was reaped) or [`TERM_GRACE`] has passed, SIGKILL for whatever is left
/// of the group (children that ignored SIGTERM or outlived the leader).
pub(crate) async fn terminate(pgid: Pid, exited: impl Future<Output = ()>) {
    signal_group(pgid, Signal::SIGTERM);
    let _ = tokio::time::timeout(TERM_GRACE, exited).await;
    signal_group(pgid, Signal::SIGKILL);
}

/// Kills a process group with SIGKILL when dropped, unless disarmed: if a
/// tool call is abandoned half way, nothing it started keeps running.
pub(crate) struct GroupKiller(pub(crate) Option<Pid>);

impl GroupKiller {
    pub(crate) fn kill_now(&mut self) {
        if let Some(pgid) = self.0.take() {
            signal_group(pgid, Signal::SIGKILL);
        }
    }

    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// `Exit code: N` or the terminating signal, or `None` for success.
pub(crate) fn describe_failure(status: ExitStatus) -> Option<String> {
    if let Some(code) = status.code() {
        return (code != 0).then(|| format!("Exit code: {code}"));
    }
    let sig = status.signal()?;
    let name = Signal::try_from(sig)
        .map(Signal::as_str)
        .unwrap_or("unknown signal");
    Some(format!("Killed by signal {sig} ({name})"))
}

/// How a command ended, always in words: `exit code 0`, `exit code 3`,
/// `signal 15 (SIGTERM)`.
pub(crate) fn describe_end(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    match status.signal() {
        Some(sig) => {
            let name = Signal::try_from(sig)
                .map(Signal::as_str)
                .unwrap_or("unknown signal");
            format!("signal {sig} ({name})")
        }
        None => "an unknown status".to_string(),
    }
}
