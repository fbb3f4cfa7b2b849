//! The sandbox of `bash` commands: Linux Landlock, so that a command the
//! model writes can read everything but write only in the workspace, the
//! write roots (`[sandbox] write_roots`) and the temporary directories, and
//! (with `[sandbox] network = false`) open no TCP connection.
//!
//! Why it exists: the permission layer decides which calls run, but a
//! command that runs can do anything its user can; Landlock makes "this
//! command may only change the project" true in the kernel, whatever the
//! command line says.
//!
//! What it allows a sandboxed command:
//! - reading and executing everything (read rights are not handled at all);
//! - every write-ish right of Landlock ABI 7 (write file, truncate, remove
//!   file and directory, make regular file, directory, symlink, FIFO,
//!   socket, character and block device, refer, ioctl on devices) beneath
//!   the workspace, the write roots, `std::env::temp_dir()`, `/tmp`,
//!   `/var/tmp` and `/dev/shm`, and on the device files commands need
//!   (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty`, `/dev/ptmx`,
//!   `/dev/pts`);
//! - in plan mode (`Grant::read_only`), writing only to those device files;
//! - with `network = false`, no TCP bind or connect (Landlock ABI ≥ 4).
//!   Landlock does not cover UDP (so DNS still works) nor Unix sockets.
//!
//! Neither applies when the call was granted `unsandboxed` (the user
//! approved running it outside) or `[sandbox] enabled = false`.
//!
//! How it is applied, without `unsafe` code in a forked child: Landlock's
//! `restrict_self` confines the calling *thread* and everything it starts
//! afterwards. So the ruleset is built and enforced on a fresh, short-lived
//! thread, which spawns the command (inside the tokio runtime, for the
//! child's reaping) and hands the child back over a channel before it
//! ends; no other thread of agentbus is ever confined. `restrict_self` also
//! sets `no_new_privs` on that thread, so set-uid programs (`sudo`) do not
//! gain privileges inside the sandbox.
//!
//! What it must never do: run a command unconfined that should have been
//! confined on a system where Landlock works (a ruleset that cannot be
//! enforced there is an error, not a silent fallback), or confine any
//! thread but its own throwaway ones. Where Landlock is missing (an older
//! kernel, Landlock disabled, not Linux), commands run unconfined and
//! [`probe`] says why, so the runtime can tell the user once.

use super::context::ToolContext;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Whether commands can be sandboxed here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Landlock works; `abi` is its version as this build uses it.
    Available { abi: u32 },
    /// Commands run without a sandbox, for this reason.
    Unavailable { reason: String },
}

impl SandboxSupport {
    /// Whether commands are sandboxed.
    pub fn is_available(&self) -> bool {
        matches!(self, SandboxSupport::Available { .. })
    }
}

/// Why a command could not be started in its sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The Landlock ruleset could not be built or enforced.
    #[error("could not set up the sandbox: {0}")]
    Ruleset(String),
    /// Landlock is available but the ruleset was not enforced.
    #[error("the sandbox could not be enforced on this system ({0}); the command was not run")]
    NotEnforced(String),
    /// The thread that starts the command could not be created or died.
    #[error("could not start the sandboxed command: {0}")]
    Thread(String),
    /// The command itself could not be started.
    #[error(transparent)]
    Spawn(std::io::Error),
}

/// Whether Landlock works here, found once by confining a throwaway thread.
pub fn probe() -> &'static SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        std::thread::Builder::new()
            .name("agentbus-sandbox-probe".into())
            .spawn(landlock_rules::probe)
            .map_err(|e| e.to_string())
            .and_then(|thread| thread.join().map_err(|_| "the probe panicked".to_string()))
            .unwrap_or_else(|reason| SandboxSupport::Unavailable {
                reason: format!("the Landlock probe could not run: {reason}"),
            })
    })
}

/// What one sandboxed command may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Directories (and what is beneath them) it may write in.
    pub write: Vec<PathBuf>,
    /// Device files (or directories of them) it may write to, even in plan
    /// mode.
    pub devices: Vec<PathBuf>,
    /// Whether it may bind and connect TCP sockets.
    pub network: bool,
    /// Plan mode: `write` is empty.
    pub read_only: bool,
}

/// The device files commands need to write to.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The temporary directories every sandboxed command may write in.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![std::env::temp_dir()];
    for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
        dirs.push(PathBuf::from(dir));
    }
    dirs
}

impl Policy {
    /// The sandbox of a call with this context, or `None` when it runs
    /// unconfined (granted, or the sandbox is off). Says nothing of
    /// whether Landlock works here ([`probe`]).
    pub fn for_call(ctx: &ToolContext) -> Option<Policy> {
        if ctx.grant.unsandboxed || !ctx.sandbox.enabled {
            return None;
        }
        let mut write = Vec::new();
        if !ctx.grant.read_only {
            for dir in ctx.roots().into_iter().chain(temp_dirs()) {
                if !write.contains(&dir) && dir.exists() {
                    write.push(dir);
                }
            }
        }
        let devices = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|dev| dev.exists())
            .collect();
        Some(Policy {
            write,
            devices,
            network: ctx.sandbox.network,
            read_only: ctx.grant.read_only,
        })
    }

    /// What the model reads after a command that may have failed because
    /// of this sandbox.
    pub fn failure_note(&self) -> String {
        let network = if self.network {
            ""
        } else {
            " It also allows no network connections over TCP ([sandbox] network = false)."
        };
        if self.read_only {
            return format!(
                "Note: agentbus runs commands in a read-only sandbox in plan mode: no command may \
                 write any file.{network} If this failure came from the sandbox, do not retry \
                 outside it; make the change part of your plan instead."
            );
        }
        let roots: Vec<String> = self.write.iter().map(|p| p.display().to_string()).collect();
        format!(
            "Note: agentbus runs commands in a sandbox that allows writing only in {}.{network} \
             If this failure came from the sandbox and the command must write elsewhere, call \
             bash again with the same command and \"outside_sandbox\": true and a \
             \"justification\"; the user will be asked to approve running it outside the \
             sandbox.",
            roots.join(", ")
        )
    }
}

/// Whether the output of a failed command suggests the sandbox stopped it.
pub(crate) fn looks_blocked(output: &str) -> bool {
    [
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
    ]
    .iter()
    .any(|sign| output.contains(sign))
}

/// Starts `command` confined by `policy` (or unconfined when `policy` is
/// `None` or Landlock is unavailable here). Returns the child and whether
/// it is sandboxed. Must be called inside a tokio runtime.
pub(crate) async fn spawn(
    command: tokio::process::Command,
    policy: Option<&Policy>,
) -> Result<(tokio::process::Child, bool), SandboxError> {
    let policy = match policy {
        Some(policy) if probe().is_available() => policy.clone(),
        _ => {
            let mut command = command;
            let child = command.spawn().map_err(SandboxError::Spawn)?;
            // Our copies of the pipes the Command holds close here.
            drop(command);
            return Ok((child, false));
        }
    };
    let runtime = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("agentbus-sandbox".into())
        .spawn(move || {
            let started = landlock_rules::restrict(&policy).and_then(|()| {
                let _entered = runtime.enter();
                let mut command = command;
                let child = command.spawn().map_err(SandboxError::Spawn);
                drop(command);
                child
            });
            if let Err(Ok(child)) = tx.send(started) {
                // Nobody waits for it any more: stop what it started.
                kill_group(&child);
            }
        })
        .map_err(|e| SandboxError::Thread(e.to_string()))?;
    let child = rx
        .await
        .map_err(|_| SandboxError::Thread("the thread ended without a result".into()))??;
    Ok((child, true))
}

/// Kills the process group led by `child` (started with `process_group(0)`).
fn kill_group(child: &tokio::process::Child) {
    if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// The Landlock rules themselves (Linux).
#[cfg(target_os = "linux")]
mod landlock_rules {
    use super::{Policy, SandboxError, SandboxSupport};
    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, PathBeneath, PathFd,
        RestrictionStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    };

    /// The Landlock ABI whose rights are asked for; older kernels get what
    /// they support of it (best effort), newer ones nothing more.
    const ABI_USED: ABI = ABI::V7;

    fn abi_number(abi: ABI) -> u32 {
        match abi {
            ABI::Unsupported => 0,
            ABI::V1 => 1,
            ABI::V2 => 2,
            ABI::V3 => 3,
            ABI::V4 => 4,
            ABI::V5 => 5,
            ABI::V6 => 6,
            _ => 7,
        }
    }

    fn unavailable(status: LandlockStatus) -> String {
        match status {
            LandlockStatus::NotEnabled => {
                "Landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` \
                 boot parameter)"
                    .to_string()
            }
            LandlockStatus::NotImplemented => {
                "this kernel has no Landlock (it needs Linux 5.13 or newer, built with \
                 CONFIG_SECURITY_LANDLOCK)"
                    .to_string()
            }
            LandlockStatus::Available { .. } => "Landlock did not enforce the rules".to_string(),
        }
    }

    /// Confines the calling (throwaway) thread with every write right
    /// handled and none allowed, and reports what happened.
    pub(super) fn probe() -> SandboxSupport {
        let status = Ruleset::default()
            .handle_access(AccessFs::from_write(ABI_USED))
            .and_then(|ruleset| ruleset.create())
            .and_then(|ruleset| ruleset.restrict_self());
        match status {
            Ok(RestrictionStatus {
                ruleset: RulesetStatus::NotEnforced,
                landlock,
                ..
            }) => SandboxSupport::Unavailable {
                reason: unavailable(landlock),
            },
            Ok(RestrictionStatus {
                landlock: LandlockStatus::Available { effective_abi, .. },
                ..
            }) => SandboxSupport::Available {
                abi: abi_number(effective_abi).min(abi_number(ABI_USED)),
            },
            Ok(status) => SandboxSupport::Unavailable {
                reason: unavailable(status.landlock),
            },
            Err(e) => SandboxSupport::Unavailable {
                reason: format!("Landlock refused a ruleset: {e}"),
            },
        }
    }

    /// Confines the calling thread (and what it starts from now on) by
    /// `policy`.
    pub(super) fn restrict(policy: &Policy) -> Result<(), SandboxError> {
        let write = AccessFs::from_write(ABI_USED);
        let file_write: BitFlags<AccessFs> = write & AccessFs::from_file(ABI_USED);
        let err = |e: landlock::RulesetError| SandboxError::Ruleset(e.to_string());
        let mut ruleset = Ruleset::default().handle_access(write).map_err(err)?;
        if !policy.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI_USED))
                .map_err(err)?;
        }
        let mut ruleset = ruleset.create().map_err(err)?;
        for dir in &policy.write {
            let Some(fd) = open(dir)? else { continue };
            ruleset = ruleset.add_rule(PathBeneath::new(fd, write)).map_err(err)?;
        }
        for device in &policy.devices {
            let Some(fd) = open(device)? else { continue };
            let access = if device.is_dir() { write } else { file_write };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(err)?;
        }
        let status = ruleset.restrict_self().map_err(err)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err(SandboxError::NotEnforced(unavailable(status.landlock)));
        }
        Ok(())
    }

    /// `path` opened for a rule; `None` when it vanished meanwhile.
    fn open(path: &std::path::Path) -> Result<Option<PathFd>, SandboxError> {
        match PathFd::new(path) {
            Ok(fd) => Ok(Some(fd)),
            Err(_) if !path.exists() => Ok(None),
            Err(e) => Err(SandboxError::Ruleset(format!(
                "could not open {}: {e}",
                path.display()
            ))),
        }
    }
}

/// No Landlock off Linux: commands run unconfined.
#[cfg(not(target_os = "linux"))]
mod landlock_rules {
    use super::{Policy, SandboxError, SandboxSupport};

    pub(super) fn probe() -> SandboxSupport {
        SandboxSupport::Unavailable {
            reason: "the sandbox uses Linux Landlock, which this system does not have".into(),
        }
    }

    pub(super) fn restrict(_: &Policy) -> Result<(), SandboxError> {
        Err(SandboxError::NotEnforced("not Linux".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_writes_in_its_roots_and_the_temporary_directories_unless_in_plan_mode() {
        let ws = tempfile::tempdir().unwrap();
        let shared = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(ws.path());
        ctx.sandbox.write_roots = vec![shared.path().to_path_buf(), "/nonexistent/x".into()];
        let policy = Policy::for_call(&ctx).unwrap();
        assert_eq!(policy.write[0], ws.path());
        assert_eq!(policy.write[1], shared.path());
        assert!(policy.write.contains(&PathBuf::from("/tmp")));
        assert!(!policy.write.contains(&PathBuf::from("/nonexistent/x")));
        assert!(policy.devices.contains(&PathBuf::from("/dev/null")));
        assert!(policy.network && !policy.read_only);
        assert!(
            policy
                .failure_note()
                .contains(&ws.path().display().to_string())
        );

        ctx.grant.read_only = true;
        let policy = Policy::for_call(&ctx).unwrap();
        assert!(policy.write.is_empty());
        assert!(policy.devices.contains(&PathBuf::from("/dev/null")));
        assert!(
            policy.failure_note().contains("plan mode"),
            "{}",
            policy.failure_note()
        );

        ctx.grant.unsandboxed = true;
        assert_eq!(Policy::for_call(&ctx), None);
        let mut ctx = ToolContext::new(ws.path());
        ctx.sandbox.enabled = false;
        assert_eq!(Policy::for_call(&ctx), None);
    }

    #[test]
    fn the_probe_answers_once_and_says_why_when_landlock_is_missing() {
        let first = probe();
        assert!(std::ptr::eq(first, probe()));
        match first {
            SandboxSupport::Available { abi } => assert!((1..=7).contains(abi), "{abi}"),
            SandboxSupport::Unavailable { reason } => {
                assert!(!reason.is_empty());
                assert!(
                    std::env::var("AGENTBUS_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
                    "AGENTBUS_REQUIRE_LANDLOCK=1 but Landlock is unavailable: {reason}"
                );
            }
        }
    }

    #[test]
    fn only_refusal_messages_look_like_the_sandbox() {
        assert!(looks_blocked("bash: /etc/x: Permission denied"));
        assert!(looks_blocked(
            "touch: cannot touch 'x': Read-only file system"
        ));
        assert!(looks_blocked("mkdir: Operation not permitted"));
        assert!(!looks_blocked("error: test failed"));
    }
}
