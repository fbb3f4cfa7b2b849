//! A tool a test needs and cannot have (no `nats-server`, no PostgreSQL, no
//! tmux): the test fails with one line saying what is missing and how to
//! get it — not a panic message and a backtrace per test, which bury the
//! one fact under hundreds of lines when every test of an area fails for
//! it.
//!
//! Where the README says so, a variable turns the failure into a skip
//! (`AGENTBUS_SKIP_NATS=1`, `AGENTBUS_SKIP_POSTGRES=1`): the test then
//! prints the reason and returns. Nothing is skipped silently.

/// Fails the calling test with `line` alone: it is printed (libtest shows
/// it under the test's name) and the test unwinds without the panic hook,
/// so no `panicked at` and no backtrace, whatever `RUST_BACKTRACE` says.
pub fn missing(line: &str) -> ! {
    eprintln!("{line}");
    std::panic::resume_unwind(Box::new(line.to_string()))
}
