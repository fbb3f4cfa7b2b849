//! The `kill_shell` tool: stops a background command (`bash` with
//! `run_in_background`) and everything it started.
//!
//! It signals only the process group of a command the calling session
//! started (its `BackgroundCommands`, `tools/background.rs`), so the
//! permission layer lets it run without asking: SIGTERM, then SIGKILL after
//! a grace period, the command reaped before the call returns. It must
//! never signal anything else, and never return while the command's `bash`
//! still runs.

use super::bash_output::render;
use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug)]
pub struct KillShell;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The id bash returned (`bash_1`).
    pub id: String,
}

impl BuiltinTool for KillShell {
    const NAME: &'static str = "kill_shell";
    const DESCRIPTION: &'static str = "Stop a bash command started with \
        `run_in_background: true` and everything it started (SIGTERM, then SIGKILL after 3 s). \
        Returns how it ended and the output not read yet.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        kill_shell(params, ctx)
    }
}

async fn kill_shell(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let (reading, already) = ctx
        .background
        .kill(&params.id)
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let head = if already {
        format!("`{}` had already ended by itself.", reading.id)
    } else {
        format!("Stopped `{}` (`{}`).", reading.id, reading.command)
    };
    Ok(ToolOutput::ok(format!("{head} {}", render(&reading))))
}
