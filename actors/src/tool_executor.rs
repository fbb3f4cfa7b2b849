//! ToolExecutor actor: runs tool calls.
//!
//! Owns the tool registry (built-in tools, later MCP tools too). Accepts
//! [`RunTool`] (answered when the call ends) and [`ListTools`]. Every call
//! runs on its own task, so many run at once and the actor stays responsive;
//! every failure — unknown tool, arguments that do not fit, an error, a
//! panic, a timeout, a cancellation — becomes an error [`ToolOutcome`] the
//! model can read. Outputs are cut to the configured size.
//!
//! Never runs a tool inside its handler (that would serialise all calls) and
//! never talks to a session directly: the caller gets the outcome as a reply.

use crate::model::{ToolCall, ToolOutcome, ToolSpec};
use crate::settings::ToolSettings;
use crate::tools::{Tool, ToolContext, ToolError, truncate_middle};
use kameo::Actor;
use kameo::message::{Context, Message};
use kameo::reply::DelegatedReply;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The tools a session may call, by name, in registration order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    order: Vec<String>,
}

impl ToolRegistry {
    /// A registry of `tools` without the names in `disallowed`.
    pub fn new(tools: Vec<Arc<dyn Tool>>, disallowed: &[String]) -> Self {
        let mut registry = ToolRegistry::default();
        for tool in tools {
            let name = tool.spec().name;
            if disallowed.contains(&name) {
                continue;
            }
            if registry.tools.insert(name.clone(), tool).is_some() {
                tracing::warn!(tool = %name, "two tools share a name; the later one wins");
            } else {
                registry.order.push(name);
            }
        }
        registry
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.order
            .iter()
            .filter_map(|n| self.tools.get(n))
            .map(|t| t.spec())
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }
}

/// Run one tool call in `workspace`; stop it when `cancel` fires.
#[derive(Debug)]
pub struct RunTool {
    pub call: ToolCall,
    pub workspace: PathBuf,
    pub cancel: CancellationToken,
}

/// The specs of every registered tool.
#[derive(Debug)]
pub struct ListTools;

/// The actor.
#[derive(Actor)]
pub struct ToolExecutor {
    registry: ToolRegistry,
    settings: ToolSettings,
}

impl ToolExecutor {
    pub fn new(registry: ToolRegistry, settings: ToolSettings) -> Self {
        ToolExecutor { registry, settings }
    }
}

impl Message<RunTool> for ToolExecutor {
    type Reply = DelegatedReply<ToolOutcome>;

    async fn handle(&mut self, msg: RunTool, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let Some(tool) = self.registry.get(&msg.call.name) else {
            let names = self.registry.order.join(", ");
            return ctx.reply(ToolOutcome {
                output: format!(
                    "unknown tool `{}`; the available tools are: {names}",
                    msg.call.name
                ),
                is_error: true,
                duration_ms: 0,
            });
        };
        let settings = self.settings.clone();
        ctx.spawn(run(tool, msg, settings))
    }
}

impl Message<ListTools> for ToolExecutor {
    type Reply = Vec<ToolSpec>;

    async fn handle(&mut self, _: ListTools, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.registry.specs()
    }
}

/// Run a call to its end on a task of its own, so that a panic inside the
/// tool is caught as a `JoinError` instead of taking anything down.
async fn run(tool: Arc<dyn Tool>, msg: RunTool, settings: ToolSettings) -> ToolOutcome {
    let started = Instant::now();
    let name = msg.call.name.clone();
    let context = ToolContext {
        workspace: msg.workspace,
        cancel: msg.cancel.child_token(),
        max_output_bytes: settings.max_output_bytes,
    };
    let tool_cancel = context.cancel.clone();
    let mut task = tokio::spawn(tool.call(msg.call.input, context));
    let timeout = Duration::from_secs(settings.timeout_secs);
    let result = tokio::select! {
        joined = &mut task => joined,
        _ = tokio::time::sleep(timeout) => {
            tool_cancel.cancel();
            task.abort();
            return outcome(started, Err(format!("tool `{name}` timed out after {} s and was stopped", timeout.as_secs())), &settings);
        }
    };
    let text = match result {
        Ok(Ok(output)) if !output.is_error => Ok(output.text),
        Ok(Ok(output)) => Err(output.text),
        Ok(Err(ToolError::Cancelled)) => {
            Err("cancelled: the user interrupted the turn".to_string())
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(join) if join.is_panic() => Err(format!(
            "tool `{name}` crashed (panic: {}); this is a bug in the tool, not in your arguments",
            panic_message(join.into_panic())
        )),
        Err(_) => Err(format!("tool `{name}` was stopped")),
    };
    outcome(started, text, &settings)
}

fn outcome(started: Instant, text: Result<String, String>, settings: &ToolSettings) -> ToolOutcome {
    let (output, is_error) = match text {
        Ok(t) => (t, false),
        Err(t) => (t, true),
    };
    ToolOutcome {
        output: truncate_middle(&output, settings.max_output_bytes),
        is_error,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown payload".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolOrigin;
    use crate::tools::ToolOutput;
    use futures::future::BoxFuture;
    use kameo::actor::Spawn;
    use serde_json::{Value, json};

    struct Panicky;
    impl Tool for Panicky {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "panicky".into(),
                description: "panics".into(),
                input_schema: json!({"type": "object"}),
                origin: ToolOrigin::Builtin,
            }
        }
        fn call(
            &self,
            _: Value,
            _: ToolContext,
        ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            Box::pin(async { panic!("boom") })
        }
    }

    struct Forever;
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

    fn executor(timeout_secs: u64) -> kameo::actor::ActorRef<ToolExecutor> {
        let mut tools = crate::tools::builtin_tools();
        tools.push(Arc::new(Panicky));
        tools.push(Arc::new(Forever));
        let registry = ToolRegistry::new(tools, &["grep".to_string()]);
        ToolExecutor::spawn(ToolExecutor::new(
            registry,
            ToolSettings {
                max_output_bytes: 1000,
                timeout_secs,
            },
        ))
    }

    fn call(name: &str, input: Value) -> RunTool {
        RunTool {
            call: ToolCall {
                id: "c".into(),
                name: name.into(),
                input,
            },
            workspace: std::env::temp_dir(),
            cancel: CancellationToken::new(),
        }
    }

    #[tokio::test]
    async fn unknown_tool_is_an_error_result_listing_the_tools() {
        let ex = executor(60);
        let out = ex.ask(call("nope", json!({}))).await.unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("unknown tool `nope`") && out.output.contains("read_file"));
    }

    #[tokio::test]
    async fn disallowed_tools_are_not_registered() {
        let ex = executor(60);
        let names: Vec<String> = ex
            .ask(ListTools)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert!(!names.contains(&"grep".to_string()));
        assert!(names.contains(&"bash".to_string()));
        let out = ex.ask(call("grep", json!({"pattern": "x"}))).await.unwrap();
        assert!(out.is_error);
    }

    #[tokio::test]
    async fn a_panicking_tool_becomes_an_error_result_and_the_executor_lives_on() {
        let ex = executor(60);
        let out = ex.ask(call("panicky", json!({}))).await.unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("panic: boom"), "{}", out.output);
        let again = ex.ask(call("nope", json!({}))).await.unwrap();
        assert!(again.is_error);
    }

    #[tokio::test]
    async fn cancellation_stops_a_running_call() {
        let ex = executor(60);
        let msg = call("forever", json!({}));
        let cancel = msg.cancel.clone();
        let pending = tokio::spawn(async move { ex.ask(msg).await });
        cancel.cancel();
        let out = pending.await.unwrap().unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("cancelled"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_the_timeout_is_stopped_with_an_error() {
        let ex = executor(5);
        let out = ex.ask(call("forever", json!({}))).await.unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("timed out after 5 s"), "{}", out.output);
    }
}
