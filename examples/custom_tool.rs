//! A tool of your own: implement `Tool` (a spec the model sees, and an
//! async call), give it to the agent, and watch the turn's events stream:
//! the model calls the tool, its result goes back, the model answers.
//!
//! Talks to the OpenAI-compatible server at `AGENTBUS_EXAMPLE_BASE_URL`
//! (default `http://127.0.0.1:8080/v1`), model `AGENTBUS_EXAMPLE_MODEL`
//! (default `local`). `scripts/run-examples.sh` runs it against the
//! scripted model with `examples/scripts/custom_tool.toml`.

use agentbus_engine::embedded::{
    Agent, AgentMessage, ContentBlock, Provider, Tool, ToolContext, ToolError, ToolOrigin,
    ToolOutput, ToolSpec,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;

type Error = Box<dyn std::error::Error>;

/// Counts the words of a text.
struct WordCount;

impl Tool for WordCount {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "word_count".into(),
            description: "Count the words of a text (runs of non-whitespace characters). \
                          Use it instead of counting yourself."
                .into(),
            input_schema: Arc::new(json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The text to count the words of."}
                },
                "required": ["text"],
                "additionalProperties": false
            })),
            origin: ToolOrigin::Builtin,
        }
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            // The model's arguments are not checked against the schema:
            // say what is wrong, the model reads it and tries again.
            let Some(text) = input.get("text").and_then(Value::as_str) else {
                return Err(ToolError::InvalidArguments {
                    tool: "word_count".into(),
                    detail: "expected an object with a string `text`".into(),
                });
            };
            let words = text.split_whitespace().count();
            Ok(ToolOutput::ok(format!("{words} words")))
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (base_url, model) = server();
    let agent = Agent::builder()
        .provider(Provider::openai(base_url, model)?)
        .system_prompt("Use the word_count tool to count words.")
        .tool(WordCount)
        .build()?;

    let mut run = agent.run_with_events("How many words are in \"the quick brown fox jumps\"?");
    while let Some(event) = run.next().await {
        match &event.message {
            AgentMessage::User(u) => println!("{:>3} user: {}", event.seq, u.text),
            AgentMessage::Assistant(a) => {
                for block in &a.content {
                    match block {
                        ContentBlock::Text { text } => {
                            println!("{:>3} assistant: {text}", event.seq)
                        }
                        ContentBlock::ToolUse { name, input, .. } => {
                            println!("{:>3} assistant calls {name} {input}", event.seq)
                        }
                        ContentBlock::Thinking { thinking, .. } => {
                            println!("{:>3} assistant thinks: {thinking}", event.seq)
                        }
                        // Encrypted reasoning: kept for the model, not shown.
                        ContentBlock::RedactedThinking { .. }
                        | ContentBlock::ReasoningItem { .. } => {}
                    }
                }
            }
            AgentMessage::ToolResult(t) => println!(
                "{:>3} tool_result from {} ({} ms): {}",
                event.seq, t.name, t.duration_ms, t.output
            ),
            AgentMessage::Result(r) => println!(
                "{:>3} result: {:?} in {} step(s), {} tokens",
                event.seq,
                r.stop_reason,
                r.steps,
                r.usage.input_tokens + r.usage.output_tokens
            ),
            other => println!("{:>3} {}", event.seq, other.type_name()),
        }
    }
    let state = run.finish().await?;
    let counted = state
        .events()
        .iter()
        .any(|e| matches!(&e.message, AgentMessage::ToolResult(t) if t.output == "5 words"));
    check(counted, "a call of the word_count tool")?;
    Ok(())
}

/// The server and model to talk to.
fn server() -> (String, String) {
    let base_url = std::env::var("AGENTBUS_EXAMPLE_BASE_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8080/v1".into());
    let model = std::env::var("AGENTBUS_EXAMPLE_MODEL").unwrap_or_else(|_| "local".into());
    (base_url, model)
}

/// An expectation about what the model did. Against the scripted model
/// (`AGENTBUS_EXAMPLE_CHECK` set, as `scripts/run-examples.sh` does) a
/// failed one is an error; against a real model only a note.
fn check(ok: bool, what: &str) -> Result<(), Error> {
    match (ok, std::env::var_os("AGENTBUS_EXAMPLE_CHECK").is_some()) {
        (true, _) => Ok(()),
        (false, true) => Err(format!("check failed: {what}").into()),
        (false, false) => {
            println!(
                "note: {what} did not happen (the model decides; the scripted one would have)"
            );
            Ok(())
        }
    }
}
