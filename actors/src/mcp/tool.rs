//! An MCP server's tool as an entry of the tool registry: calling it asks
//! the owning McpServer actor.

use crate::mcp_server::{CallMcpTool, McpServer};
use crate::model::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use futures::future::BoxFuture;
use kameo::actor::ActorRef;
use serde_json::Value;
use std::time::Duration;

pub struct McpTool {
    spec: ToolSpec,
    /// The tool's name on its server.
    remote: String,
    server: ActorRef<McpServer>,
    /// The server's `tool_timeout_secs`.
    time_limit: Duration,
}

impl McpTool {
    pub fn new(
        spec: ToolSpec,
        remote: String,
        server: ActorRef<McpServer>,
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
            match server.ask(call).await {
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
