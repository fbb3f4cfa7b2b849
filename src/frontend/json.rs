//! `--json`: every event as one JSON object per line on stdout, flushed as
//! it arrives — the same envelope every front end and the HTTP API see.

use agentbus_actors::protocol::EventEnvelope;
use std::io::Write;

/// Print one event as a line of JSON.
pub fn print_event(out: &mut impl Write, event: &EventEnvelope) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    out.write_all(b"\n")?;
    out.flush()
}
