//! Tools for tests of whatever runs tools (the executor, the library's
//! driver): shared so that each test does not write its own.

use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::model::{ToolOrigin, ToolSpec};
use futures::future::BoxFuture;
#[cfg(not(target_os = "linux"))]
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::os::fd::OwnedFd;
use std::time::Duration;

/// `forever`: runs until its call is cancelled.
pub struct Forever;

impl Tool for Forever {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "forever".into(),
            description: "never ends unless cancelled".into(),
            input_schema: std::sync::Arc::new(json!({"type": "object"})),
            origin: ToolOrigin::Builtin,
        }
    }
    fn call(
        &self,
        _: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            ctx.cancel.cancelled().await;
            Err(ToolError::Cancelled)
        })
    }
}

/// Make a named pipe at `path` (tests of tools that must not block on one,
/// or that wait on one to know a command is running).
pub fn make_fifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// The pid written to the file at `path` (by a test's command).
pub fn read_pid(path: &std::path::Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Waits (event-driven, through a pidfd) until process `pid` has exited;
/// `false` if it is still running after a generous 10 s. A zombie counts
/// as exited: it is dead, only not yet reaped by its new parent.
pub async fn process_exits(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd
        // (or -1); it touches no memory of ours.
        let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(nix::libc::ESRCH) {
                return true;
            }
            panic!("pidfd_open({pid}) failed: {err}");
        }
        // SAFETY: `fd` is a freshly opened descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open
        // and unchanged for the AsyncFd's whole life.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        }
        .map_err(|e| e.to_string())
        .expect("register pidfd");
        tokio::time::timeout(Duration::from_secs(10), fd.readable())
            .await
            .is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        nix::sys::signal::kill(Pid::from_raw(pid), None).is_err()
    }
}
