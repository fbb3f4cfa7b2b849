//! OpenAI Chat Completions request rules: valid roles, every assistant tool
//! call answered by exactly one `tool` message before the next non-tool
//! message, no `tool` message without its call, well-formed `tools`, no
//! reasoning sent back (`reasoning_content`, which DeepSeek refuses).

use serde_json::Value;

use super::{check_model, is_text_content, messages};

pub(super) fn validate(body: &Value, violations: &mut Vec<String>) {
    if !body.is_object() {
        violations.push("body is not a JSON object".into());
        return;
    }
    check_model(body, violations);
    if let Some(messages) = messages(body, violations) {
        check_messages(messages, violations);
    }
    if let Some(tools) = body.get("tools") {
        check_tools(tools, violations);
    }
}

/// The tool calls of the latest assistant message, while `tool` messages may
/// still answer them.
struct OpenCalls {
    message: usize,
    ids: Vec<String>,
    answered: Vec<usize>,
}

impl OpenCalls {
    /// Pushes a violation for each call that got no answer; `closed_by` is the
    /// message that ended the group, `None` for the end of the list.
    fn close(self, closed_by: Option<usize>, violations: &mut Vec<String>) {
        let until = closed_by.map_or("the end of `messages`".to_owned(), |next| {
            format!("messages[{next}]")
        });
        for (id, answers) in self.ids.iter().zip(&self.answered) {
            if *answers == 0 {
                violations.push(format!(
                    "messages[{}]: tool call `{id}` has no `tool` message answering it before {until}",
                    self.message
                ));
            }
        }
    }
}

fn check_messages(messages: &[Value], violations: &mut Vec<String>) {
    let mut open: Option<OpenCalls> = None;
    for (index, message) in messages.iter().enumerate() {
        let at = format!("messages[{index}]");
        let role = message.get("role").and_then(Value::as_str);
        if role == Some("tool") {
            check_tool_message(&at, message, open.as_mut(), violations);
            continue;
        }
        if let Some(calls) = open.take() {
            calls.close(Some(index), violations);
        }
        match role {
            Some("user") if message.get("content").is_some_and(Value::is_array) => {
                check_user_parts(&at, message, violations)
            }
            Some("system" | "developer" | "user") => match message.get("content") {
                Some(Value::String(_) | Value::Array(_)) => {}
                _ => violations.push(format!(
                    "{at}: {} message needs `content` (a string or an array of parts)",
                    role.unwrap_or_default()
                )),
            },
            Some("assistant") => open = check_assistant(index, &at, message, violations),
            Some(other) => violations.push(format!("{at}: invalid role `{other}`")),
            None => violations.push(format!("{at}: `role` is missing or not a string")),
        }
    }
    if let Some(calls) = open {
        calls.close(None, violations);
    }
}

/// A user message's content parts: text, or an image as `image_url` (an
/// `http(s)` URL, or a `data:` URL of base64 image data checked as the API
/// checks it).
fn check_user_parts(at: &str, message: &Value, violations: &mut Vec<String>) {
    let Some(parts) = message.get("content").and_then(Value::as_array) else {
        return;
    };
    if parts.is_empty() {
        violations.push(format!("{at}: `content` is an empty array"));
    }
    for (k, part) in parts.iter().enumerate() {
        let at = format!("{at}.content[{k}]");
        match part.get("type").and_then(Value::as_str) {
            Some("text") if part.get("text").is_some_and(Value::is_string) => {}
            Some("text") => violations.push(format!("{at}: text part has no string `text`")),
            Some("image_url") => {
                let Some(url) = part
                    .get("image_url")
                    .and_then(|i| i.get("url"))
                    .and_then(Value::as_str)
                else {
                    violations.push(format!(
                        "{at}: image_url part has no string `image_url.url`"
                    ));
                    continue;
                };
                if let Some(rest) = url.strip_prefix("data:") {
                    match rest.split_once(";base64,") {
                        Some((media_type, data)) => {
                            super::check_image_data(&at, media_type, data, violations)
                        }
                        None => violations.push(format!(
                            "{at}: a data: URL must be `data:MEDIA_TYPE;base64,DATA`"
                        )),
                    }
                } else if !url.starts_with("https://") && !url.starts_with("http://") {
                    violations.push(format!(
                        "{at}: image_url.url must be an http(s) or data: URL"
                    ));
                }
            }
            Some(other) => {
                violations.push(format!("{at}: invalid user content part type `{other}`"))
            }
            None => violations.push(format!("{at}: part has no string `type`")),
        }
    }
}

fn check_tool_message(
    at: &str,
    message: &Value,
    open: Option<&mut OpenCalls>,
    violations: &mut Vec<String>,
) {
    if !message.get("content").is_some_and(is_text_content) {
        violations.push(format!(
            "{at}: tool message `content` must be a string or an array of text parts"
        ));
    }
    let Some(id) = message.get("tool_call_id").and_then(Value::as_str) else {
        violations.push(format!("{at}: tool message has no string `tool_call_id`"));
        return;
    };
    let position = open.and_then(|calls| {
        calls
            .ids
            .iter()
            .position(|call| call == id)
            .map(|k| (calls, k))
    });
    match position {
        Some((calls, k)) => {
            calls.answered[k] += 1;
            if calls.answered[k] > 1 {
                violations.push(format!(
                    "{at}: tool call `{id}` of messages[{}] is answered more than once",
                    calls.message
                ));
            }
        }
        None => violations.push(format!(
            "{at}: tool message answers `{id}`, which is not a tool call of the preceding assistant message"
        )),
    }
}

/// Checks an assistant message; returns its tool calls when it has any.
fn check_assistant(
    index: usize,
    at: &str,
    message: &Value,
    violations: &mut Vec<String>,
) -> Option<OpenCalls> {
    let has_content = match message.get("content") {
        None | Some(Value::Null) => false,
        Some(Value::String(_) | Value::Array(_)) => true,
        Some(_) => {
            violations.push(format!(
                "{at}: assistant `content` must be null, a string or an array"
            ));
            true
        }
    };
    if message
        .get("reasoning_content")
        .is_some_and(|reasoning| !reasoning.is_null())
    {
        // DeepSeek answers 400: the reasoning is for display only.
        violations.push(format!(
            "{at}: assistant `reasoning_content` sent back (DeepSeek refuses it: \"Please remove the reasoning_content from your input messages\")"
        ));
    }
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => None,
        Some(Value::Array(calls)) if calls.is_empty() => {
            violations.push(format!(
                "{at}: `tool_calls` is an empty array (omit it instead)"
            ));
            None
        }
        Some(Value::Array(calls)) => Some(calls),
        Some(_) => {
            violations.push(format!("{at}: `tool_calls` is not an array"));
            None
        }
    };
    let Some(calls) = calls else {
        if !has_content {
            violations.push(format!(
                "{at}: assistant message has neither `content` nor `tool_calls`"
            ));
        }
        return None;
    };
    let mut ids = Vec::new();
    for (k, call) in calls.iter().enumerate() {
        let at = format!("{at}.tool_calls[{k}]");
        if call.get("type").and_then(Value::as_str) != Some("function") {
            violations.push(format!("{at}: `type` must be \"function\""));
        }
        let function = call.get("function");
        if function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            violations.push(format!("{at}: `function.name` is missing or empty"));
        }
        if !function
            .and_then(|f| f.get("arguments"))
            .is_some_and(Value::is_string)
        {
            violations.push(format!(
                "{at}: `function.arguments` must be a string (JSON text), not {}",
                describe(function.and_then(|f| f.get("arguments")))
            ));
        }
        match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => {
                if ids.iter().any(|seen| seen == id) {
                    violations.push(format!("{at}: duplicate tool call id `{id}`"));
                } else {
                    ids.push(id.to_owned());
                }
            }
            _ => violations.push(format!("{at}: `id` is missing or empty")),
        }
    }
    let answered = vec![0; ids.len()];
    Some(OpenCalls {
        message: index,
        ids,
        answered,
    })
}

fn check_tools(tools: &Value, violations: &mut Vec<String>) {
    let Some(tools) = tools.as_array() else {
        violations.push("`tools` is not an array".into());
        return;
    };
    let mut names: Vec<&str> = Vec::new();
    for (k, tool) in tools.iter().enumerate() {
        let at = format!("tools[{k}]");
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            violations.push(format!("{at}: `type` must be \"function\""));
        }
        match tool.pointer("/function/name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => {
                if names.contains(&name) {
                    violations.push(format!("{at}: duplicate tool name `{name}`"));
                }
                names.push(name);
            }
            _ => violations.push(format!("{at}: `function.name` is missing or empty")),
        }
        if !tool
            .pointer("/function/parameters")
            .is_some_and(Value::is_object)
        {
            violations.push(format!(
                "{at}: `function.parameters` must be a JSON Schema object"
            ));
        }
    }
}

fn describe(value: Option<&Value>) -> &'static str {
    match value {
        None => "missing",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::validate::validate;
    use crate::wire::Wire;

    fn violations(messages: Value) -> Vec<String> {
        validate(
            Wire::OpenAi,
            &json!({"model": "m", "stream": true, "messages": messages, "tools": [
                {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
            ]}),
        )
    }

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}})
    }

    #[test]
    fn valid_tool_round_passes() {
        let found = violations(json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "read both"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "B"},
            {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "A"}]},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "thanks"},
        ]));
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn flags_tool_message_without_call() {
        let found = violations(json!([
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "ghost", "content": "x"},
        ]));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("messages[1]: tool message answers `ghost`"));
    }

    #[test]
    fn flags_tool_call_without_result() {
        let found = violations(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "user", "content": "and?"},
        ]));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].contains("messages[1]: tool call `b` has no `tool` message")
                && found[0].contains("before messages[3]"),
            "{found:#?}"
        );
    }

    #[test]
    fn flags_trailing_unanswered_call_and_double_answer() {
        let found = violations(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "tool", "tool_call_id": "a", "content": "A again"},
            {"role": "assistant", "tool_calls": [call("c")]},
        ]));
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("answered more than once"));
        assert!(found[1].contains("`c`") && found[1].contains("end of `messages`"));
    }

    #[test]
    fn flags_reasoning_sent_back() {
        let found = violations(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello", "reasoning_content": "greet back"},
            {"role": "user", "content": "again"},
        ]));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with("messages[1]: assistant `reasoning_content` sent back"),
            "{found:#?}"
        );
    }

    #[test]
    fn flags_bad_roles_arguments_and_tools() {
        let found = validate(
            Wire::OpenAi,
            &json!({"messages": [
                {"role": "wizard", "content": "x"},
                {"role": "assistant", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"k": 1}}},
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "ok"},
            ], "tools": [
                {"type": "function", "function": {"name": "f"}},
                {"function": {"name": "f", "parameters": {}}},
            ]}),
        );
        let joined = found.join("\n");
        for expected in [
            "`model` is missing",
            "messages[0]: invalid role `wizard`",
            "messages[1].tool_calls[0]: `function.arguments` must be a string (JSON text), not an object",
            "tools[0]: `function.parameters` must be a JSON Schema object",
            "tools[1]: `type` must be \"function\"",
            "tools[1]: duplicate tool name `f`",
        ] {
            assert!(
                joined.contains(expected),
                "missing {expected:?} in\n{joined}"
            );
        }
        assert_eq!(found.len(), 6, "{joined}");
    }

    #[test]
    fn non_object_body_is_one_violation() {
        assert_eq!(validate(Wire::OpenAi, &json!([1, 2])).len(), 1);
    }
}
