//! `--json`: every event as one JSON object per line, flushed as it
//! arrives — the same envelope every front end and the HTTP API see.

use super::Output;
use agentbus_engine::protocol::EventEnvelope;
use std::io::Write;

/// Events as JSON lines on a writer (stdout, normally).
pub struct JsonLines<W: Write>(pub W);

impl<W: Write> Output for JsonLines<W> {
    fn event(&mut self, event: &EventEnvelope) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.0, event)?;
        self.0.write_all(b"\n")?;
        self.0.flush()
    }
}
