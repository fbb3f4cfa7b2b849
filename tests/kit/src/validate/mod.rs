//! Protocol validation of recorded requests: the rules the real providers
//! enforce (and reject requests for), checked on every request so that an
//! end-to-end test fails when agentbus sends something OpenAI or Anthropic
//! would refuse, even though the scripted model itself would answer it.
//!
//! Each violation is one human-readable line naming where it is (e.g.
//! `messages[3]: ...`).

mod anthropic;
mod openai;

use serde_json::Value;

use crate::wire::Wire;

/// All protocol violations of a request body in the given wire format.
pub(crate) fn validate(wire: Wire, body: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    match wire {
        Wire::OpenAi => openai::validate(body, &mut violations),
        Wire::Anthropic => anthropic::validate(body, &mut violations),
    }
    violations
}

/// The `type` of a content block or part, if it has a string one.
fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// Whether `content` is a string or an array of `{"type":"text","text":..}`.
fn is_text_content(content: &Value) -> bool {
    match content {
        Value::String(_) => true,
        Value::Array(parts) => parts.iter().all(|part| {
            block_type(part) == Some("text") && part.get("text").is_some_and(Value::is_string)
        }),
        _ => false,
    }
}

/// Pushes a violation unless `body.model` is a string.
fn check_model(body: &Value, violations: &mut Vec<String>) {
    if !body.get("model").is_some_and(Value::is_string) {
        violations.push("`model` is missing or not a string".into());
    }
}

/// `body.messages` when it is a non-empty array; pushes a violation otherwise.
fn messages<'a>(body: &'a Value, violations: &mut Vec<String>) -> Option<&'a [Value]> {
    match body.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => Some(messages),
        Some(Value::Array(_)) => {
            violations.push("`messages` is empty".into());
            None
        }
        _ => {
            violations.push("`messages` is missing or not an array".into());
            None
        }
    }
}
