//! What every front end shares: where sessions live and a front end's hold
//! on one, how an input ends, how approvals are asked, and the interrupt
//! key.
//!
//! - [`backend`]: where sessions live — an in-process runtime or an
//!   `agentbus serve` daemon (`--attach`) — and how one is chosen, made or
//!   listed.
//! - [`attached`]: a front end's hold on one session, the same whichever
//!   backend it is on.
//! - [`input_ends`]: when a submitted input is over, as its events show it.
//! - [`approval`]: an approval request as a front end shows and answers it.

pub mod approval;
pub mod attached;
pub mod backend;
pub mod input_ends;

/// SIGINT as a stream. Made once, before the loop that waits for it: a
/// signal that arrives while the loop is busy elsewhere is kept, where a
/// fresh `ctrl_c()` future per iteration would miss it.
pub fn interrupt_signals() -> anyhow::Result<tokio::signal::unix::Signal> {
    use anyhow::Context as _;
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("listening for Ctrl-C")
}
