//! `/debug [full]` — what the session is doing, for bug reports.
//!
//! `/debug` is a summary a person reads in one screen: the session, its
//! model profile, agent and permission mode, how full the context is, the
//! tools and MCP servers, the turn running and the queue, the instruction
//! files, how far the model's plan is, what its checkpoints kept. `data` holds the same figures as JSON. `/debug full` is the whole
//! state as JSON (the history, the instructions' text, ...), in the
//! message and in `data`.
//!
//! Secrets never appear: the state holds no keys by construction, and any
//! field whose name looks like a secret is redacted anyway.

use super::syntax::SlashCommand;
use crate::model::ToolOrigin;
use crate::protocol::system::DebugState;
use crate::protocol::{ControlCommand, McpServerStatus, SystemEvent};
use crate::session::core::SessionState;
use crate::session::core::context;
use crate::session::core::turn::Phase;
use crate::text::count;
use serde::Serialize;
use serde_json::Value;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "debug",
    usage: "/debug [full]",
    summary: "show what the session is doing (full: the whole state as JSON; secrets redacted)",
    parse,
};

fn parse(args: &str) -> Result<ControlCommand, String> {
    match args.trim() {
        "" => Ok(ControlCommand::Debug { full: false }),
        "full" => Ok(ControlCommand::Debug { full: true }),
        other => Err(format!(
            "/debug takes nothing, or `full` for the whole state (got `{other}`)."
        )),
    }
}

pub fn apply(state: &SessionState, full: bool) -> SystemEvent {
    if full {
        let mut value = serde_json::to_value(state).unwrap_or(Value::Null);
        redact_secrets(&mut value);
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        return SystemEvent::new(text, &DebugState(value));
    }
    let summary = Summary::of(state);
    let mut value = serde_json::to_value(&summary).unwrap_or(Value::Null);
    redact_secrets(&mut value);
    SystemEvent::new(summary.text(), &DebugState(value))
}

/// The figures `/debug` shows.
#[derive(Debug, Serialize)]
struct Summary {
    session_id: String,
    workspace: String,
    model: String,
    /// `model via provider at base_url`, when the profile is configured.
    model_detail: Option<String>,
    agent: String,
    permission_mode: String,
    /// Configured rules plus those "allow always" added.
    rules: usize,
    sandboxed: bool,
    /// Tokens the last request took, and the budget of one request.
    context_used: Option<u64>,
    context_limit: Option<u64>,
    context_strategy: String,
    compactions: u64,
    history_messages: usize,
    turns: u64,
    model_calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    tools_offered: usize,
    tools_builtin: usize,
    tools_mcp: usize,
    mcp_servers: Vec<(String, String)>,
    /// What the running turn is doing (`None`: idle).
    running: Option<String>,
    queued: usize,
    instructions: Vec<String>,
    /// The model's plan (`todo_write`): how far it is (`None`: no plan).
    plan: Option<String>,
    /// Tool calls whose changes to the workspace were kept, and the files
    /// they changed.
    checkpoints: u64,
    checkpoint_files: u64,
    /// The bytes of blobs they keep in the store.
    checkpoint_bytes: u64,
}

impl Summary {
    fn of(state: &SessionState) -> Summary {
        let offered = state.offered_tools();
        let builtin = offered
            .iter()
            .filter(|t| matches!(t.origin, ToolOrigin::Builtin))
            .count();
        let rules = &state.config.permissions.rules;
        let running = match (&state.turn, &state.compacting, state.pending_command) {
            (Some(turn), _, _) => Some(format!(
                "turn {} ({}, step {})",
                turn.id,
                match &turn.phase {
                    Phase::Streaming { .. } => "the model is answering".to_string(),
                    Phase::RunningTools { calls, .. } =>
                        format!("running {}", count(calls.len() as u64, "tool call")),
                    Phase::Compacting => "compacting".to_string(),
                    Phase::WaitingForMcp => "waiting for MCP servers".to_string(),
                    Phase::Attaching(_) => "reading @ mentions or running a ! command".to_string(),
                    Phase::PromptHook(_) => "UserPromptSubmit hooks look at the query".to_string(),
                    Phase::StopHook { .. } => "Stop hooks look at the answer".to_string(),
                },
                turn.steps
            )),
            (None, Some(_), _) => Some("a compaction (/compact)".to_string()),
            (None, None, Some(input)) => Some(format!("a session command (input {input})")),
            (None, None, None) => None,
        };
        Summary {
            session_id: state.session_id.to_string(),
            workspace: state.config.workspace.clone(),
            model: state.model.clone(),
            model_detail: state
                .current_model()
                .map(|m| format!("{} via {} at {}", m.model, m.provider, m.base_url)),
            agent: state.agent.clone(),
            permission_mode: state.permissions.mode.as_str().to_string(),
            rules: rules.allow.len()
                + rules.ask.len()
                + rules.deny.len()
                + state.permissions.added.len(),
            sandboxed: state.config.permissions.sandboxed,
            context_used: state.context.last.map(|c| c.used),
            context_limit: context::limit(state),
            context_strategy: context::config(state).strategy().to_string(),
            compactions: state.context.compactions,
            history_messages: state.history.len(),
            turns: state.usage.turns,
            model_calls: state.usage.model_calls,
            input_tokens: state.usage.total.input_tokens,
            output_tokens: state.usage.total.output_tokens,
            tools_offered: offered.len(),
            tools_builtin: builtin,
            tools_mcp: offered.len() - builtin,
            mcp_servers: state
                .mcp_servers
                .iter()
                .map(|(name, status)| (name.clone(), describe(status)))
                .collect(),
            running,
            queued: state.queue.len(),
            instructions: state
                .config
                .instructions
                .files
                .iter()
                .map(|f| f.path.clone())
                .collect(),
            plan: crate::session::core::plan::progress(&state.plan),
            checkpoints: state.checkpoints.kept,
            checkpoint_files: state.checkpoints.files,
            checkpoint_bytes: state.checkpoints.bytes,
        }
    }

    fn text(&self) -> String {
        let model = match &self.model_detail {
            Some(detail) => format!("{} ({detail})", self.model),
            None => format!("{} (not a configured profile)", self.model),
        };
        let context = match (self.context_used, self.context_limit) {
            (Some(used), Some(limit)) if limit > 0 => format!(
                "{used} of {limit} tokens ({:.0}%) in the last request",
                used as f64 * 100.0 / limit as f64
            ),
            (Some(used), _) => format!("{used} tokens in the last request (no limit known)"),
            (None, Some(limit)) => format!("no request yet; the budget is {limit} tokens"),
            (None, None) => "no request yet; no limit known".to_string(),
        };
        let servers = if self.mcp_servers.is_empty() {
            "none".to_string()
        } else {
            self.mcp_servers
                .iter()
                .map(|(name, status)| format!("{name} {status}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let running = self.running.as_deref().unwrap_or("idle");
        let instructions = if self.instructions.is_empty() {
            "none".to_string()
        } else {
            self.instructions.join(", ")
        };
        [
            format!("Session {} in {}", self.session_id, self.workspace),
            format!("  model         {model}"),
            format!(
                "  agent         {} · permission mode {} · {} · commands {}",
                self.agent,
                self.permission_mode,
                count(self.rules as u64, "rule"),
                if self.sandboxed {
                    "sandboxed"
                } else {
                    "NOT sandboxed"
                }
            ),
            format!(
                "  context       {context} · strategy {} · {} · {} in the history",
                self.context_strategy,
                count(self.compactions, "compaction"),
                count(self.history_messages as u64, "message")
            ),
            format!(
                "  usage         {} input + {} output tokens over {} in {}",
                self.input_tokens,
                self.output_tokens,
                count(self.model_calls, "model call"),
                count(self.turns, "turn")
            ),
            format!(
                "  tools         {} offered ({} built-in, {} from MCP servers)",
                self.tools_offered, self.tools_builtin, self.tools_mcp
            ),
            format!("  MCP servers   {servers}"),
            format!(
                "  running       {running} · {} queued",
                count(self.queued as u64, "input")
            ),
            format!("  instructions  {instructions}"),
            format!("  plan          {}", self.plan.as_deref().unwrap_or("none")),
            format!(
                "  checkpoints   {} kept ({} changed, {:.1} MiB of blobs in the store) · /rewind lists them, /undo takes the last back",
                count(self.checkpoints, "tool call"),
                count(self.checkpoint_files, "file"),
                self.checkpoint_bytes as f64 / (1024.0 * 1024.0)
            ),
            "/debug full shows the whole state as JSON (secrets redacted).".to_string(),
        ]
        .join("\n")
    }
}

/// A server's status in a few words (the last of its stderr left out).
fn describe(status: &McpServerStatus) -> String {
    match status {
        McpServerStatus::Ready { tools } => format!("ready ({})", count(*tools as u64, "tool")),
        McpServerStatus::Starting => "starting".to_string(),
        McpServerStatus::Restarting { attempt, .. } => format!("restarting (attempt {attempt})"),
        McpServerStatus::Failed { reason, .. } => format!("failed: {reason}"),
        McpServerStatus::Stopped => "stopped".to_string(),
    }
}

/// Replace the value of every object key that names a secret.
pub fn redact_secrets(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if looks_secret(key) && !v.is_null() {
                    *v = Value::String("[redacted]".into());
                } else {
                    redact_secrets(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_secrets),
        _ => {}
    }
}

fn looks_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "api_key",
        "apikey",
        "token",
        "secret",
        "password",
        "authorization",
    ]
    .iter()
    .any(|s| k.contains(s))
        && !k.ends_with("_tokens")
        && !k.ends_with("_env")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_fields_are_redacted_but_token_counts_are_not() {
        let mut v = json!({"api_key": "sk-123", "nested": [{"Authorization": "Bearer x"}],
                           "input_tokens": 5, "api_key_env": "OPENAI_API_KEY"});
        redact_secrets(&mut v);
        assert_eq!(v["api_key"], "[redacted]");
        assert_eq!(v["nested"][0]["Authorization"], "[redacted]");
        assert_eq!(v["input_tokens"], 5);
        assert_eq!(v["api_key_env"], "OPENAI_API_KEY");
    }

    #[test]
    fn debug_takes_full_or_nothing() {
        assert_eq!(parse(""), Ok(ControlCommand::Debug { full: false }));
        assert_eq!(parse("full"), Ok(ControlCommand::Debug { full: true }));
        assert!(parse("everything").unwrap_err().contains("full"));
    }
}
