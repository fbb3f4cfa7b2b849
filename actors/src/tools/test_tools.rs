//! Tools for tests of whatever runs tools (the executor, the library's
//! driver): shared so that each test does not write its own.

use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::model::{ToolOrigin, ToolSpec};
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// `forever`: runs until its call is cancelled.
pub struct Forever;

impl Tool for Forever {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "forever".into(),
            description: "never ends unless cancelled".into(),
            input_schema: json!({"type": "object"}),
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
