//! `/debug` — the session state as JSON, for bug reports. Secrets never
//! appear: the state holds no keys by construction, and any field whose name
//! looks like a secret is redacted anyway.

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::system::DebugState;
use crate::protocol::{ControlCommand, SystemEvent};
use crate::session::core::SessionState;
use serde_json::Value;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "debug",
    usage: "/debug",
    summary: "show the session state as JSON (secrets redacted)",
    parse: |args| no_arguments("debug", args, ControlCommand::Debug),
};

pub fn apply(state: &SessionState) -> SystemEvent {
    let mut value = serde_json::to_value(state).unwrap_or(Value::Null);
    redact_secrets(&mut value);
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    SystemEvent::new(text, &DebugState(value))
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
}
