//! An MCP server's tool as an entry of the tool registry: calling it asks
//! the owning McpServer actor ([`CallMcpTool`]).
//!
//! Knows the server only as something that answers [`CallMcpTool`] (a
//! kameo reply recipient), so the server depends on this file and not the
//! other way round.

use crate::model::{ToolOrigin, ToolOutcome, ToolSpec};
use crate::spans;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use futures::future::BoxFuture;
use kameo::actor::ReplyRecipient;
use kameo::error::Infallible;
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Call tool `tool` (its name on the server) with `arguments`.
#[derive(Debug)]
pub struct CallMcpTool {
    pub tool: String,
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// Fires on interrupt: the call is dropped (and cancelled on the server).
    pub cancel: CancellationToken,
}

pub struct McpTool {
    spec: ToolSpec,
    /// The tool's name on its server.
    remote: String,
    server: ReplyRecipient<CallMcpTool, ToolOutcome, Infallible>,
    /// The server's `tool_timeout_secs`.
    time_limit: Duration,
}

impl McpTool {
    pub fn new(
        spec: ToolSpec,
        remote: String,
        server: ReplyRecipient<CallMcpTool, ToolOutcome, Infallible>,
        time_limit: Duration,
    ) -> Self {
        McpTool {
            spec,
            remote,
            server,
            time_limit,
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn time_limit(&self) -> Option<Duration> {
        Some(self.time_limit)
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let server = self.server.clone();
        let tool = self.remote.clone();
        let name = self.spec.name.clone();
        let span = match &self.spec.origin {
            ToolOrigin::Mcp { server, .. } => ctx.trace.mcp_call(server, &tool),
            ToolOrigin::Builtin => tracing::Span::none(),
        };
        Box::pin(async move {
            let Value::Object(arguments) = input else {
                return Err(ToolError::InvalidArguments {
                    tool: name,
                    detail: "expected a JSON object of arguments".into(),
                });
            };
            let call = CallMcpTool {
                tool,
                arguments,
                cancel: ctx.cancel.clone(),
            };
            let asked = server.ask(call).await;
            match &asked {
                Ok(outcome) if outcome.is_error => {
                    spans::record_tool_outcome(&span, "error", Some("tool_error"))
                }
                Ok(_) => spans::record_tool_outcome(&span, "ok", None),
                Err(_) => spans::record_tool_outcome(&span, "error", Some("server_gone")),
            }
            drop(span);
            match asked {
                Ok(outcome) => Ok(ToolOutput {
                    text: outcome.output,
                    is_error: outcome.is_error,
                }),
                Err(e) => Err(ToolError::failed(format!(
                    "the MCP server of `{name}` is gone: {e}"
                ))),
            }
        })
    }
}
