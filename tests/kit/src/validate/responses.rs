//! OpenAI Responses request rules, in the API's own words where they are
//! known: `input` a string or a non-empty list of items; messages with a
//! valid role and content parts of that role; every `function_call` with a
//! `call_id` of its own, answered by exactly one later
//! `function_call_output` ("No tool output found for function call ..."),
//! and no output without its call ("No tool call found for function call
//! output with call_id ..."); reasoning items whole — with
//! `encrypted_content` when nothing is stored (`store: false`), sealed by
//! the scripted model for its id and summary, and followed by the item the
//! model produced after them; well-formed function `tools`.

use serde_json::Value;

use super::check_model;
use crate::render_responses::encrypted_reasoning;

pub(super) fn validate(body: &Value, violations: &mut Vec<String>) {
    if !body.is_object() {
        violations.push("body is not a JSON object".into());
        return;
    }
    check_model(body, violations);
    if body.get("messages").is_some() {
        violations.push(
            "`messages` is not a field of the Responses API (OpenAI: \"Unsupported parameter: 'messages'. In the Responses API, this parameter has moved to 'input'.\")"
                .into(),
        );
    }
    if let Some(instructions) = body.get("instructions")
        && !instructions.is_string()
        && !instructions.is_null()
    {
        violations.push("`instructions` must be a string".into());
    }
    let stored = body.get("store").and_then(Value::as_bool).unwrap_or(true);
    match body.get("input") {
        Some(Value::String(_)) => {}
        Some(Value::Array(items)) if items.is_empty() => {
            violations.push("`input` is an empty array".into())
        }
        Some(Value::Array(items)) => check_items(items, stored, violations),
        _ => violations.push("`input` is missing or neither a string nor an array".into()),
    }
    if let Some(tools) = body.get("tools") {
        check_tools(tools, violations);
    }
}

/// The `type` of an item or part, if it has a string one.
fn kind(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A function call waiting for its output.
struct Call {
    at: usize,
    id: String,
    answers: usize,
}

fn check_items(items: &[Value], stored: bool, violations: &mut Vec<String>) {
    let mut calls: Vec<Call> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("input[{index}]");
        // An item without `type` is a message (EasyInputMessage).
        match kind(item).unwrap_or("message") {
            "message" => check_message(&at, item, violations),
            "function_call" => {
                match text(item, "call_id").filter(|id| !id.is_empty()) {
                    Some(id) if calls.iter().any(|call| call.id == id) => {
                        violations.push(format!("{at}: duplicate function call id `{id}`"))
                    }
                    Some(id) => calls.push(Call {
                        at: index,
                        id,
                        answers: 0,
                    }),
                    None => violations.push(format!("{at}: function_call has no `call_id`")),
                }
                if text(item, "name").is_none_or(|name| name.is_empty()) {
                    violations.push(format!("{at}: function_call has no `name`"));
                }
                if !item.get("arguments").is_some_and(Value::is_string) {
                    violations.push(format!(
                        "{at}: function_call `arguments` must be a string (JSON text)"
                    ));
                }
            }
            "function_call_output" => {
                let id = text(item, "call_id").unwrap_or_default();
                match calls.iter_mut().find(|call| call.id == id) {
                    Some(call) => {
                        call.answers += 1;
                        if call.answers > 1 {
                            violations.push(format!(
                                "{at}: function call `{id}` of input[{}] is answered more than once",
                                call.at
                            ));
                        }
                    }
                    None => violations.push(format!(
                        "{at}: No tool call found for function call output with call_id {id}."
                    )),
                }
                if !item
                    .get("output")
                    .is_some_and(|output| output.is_string() || output.is_array())
                {
                    violations.push(format!(
                        "{at}: function_call_output `output` must be a string or an array of parts"
                    ));
                }
            }
            "reasoning" => check_reasoning(&at, item, items.get(index + 1), stored, violations),
            other => violations.push(format!(
                "{at}: input item type `{other}` is not one the scripted model takes (message, function_call, function_call_output, reasoning)"
            )),
        }
    }
    for call in calls.iter().filter(|call| call.answers == 0) {
        violations.push(format!(
            "input[{}]: No tool output found for function call {}.",
            call.at, call.id
        ));
    }
}

fn check_message(at: &str, item: &Value, violations: &mut Vec<String>) {
    let role = item.get("role").and_then(Value::as_str);
    let part_types: &[&str] = match role {
        Some("user" | "system" | "developer") => &["input_text", "input_image", "input_file"],
        Some("assistant") => &["output_text", "refusal", "input_text"],
        Some(other) => {
            violations.push(format!("{at}: invalid role `{other}`"));
            return;
        }
        None => {
            violations.push(format!("{at}: message has no `role`"));
            return;
        }
    };
    match item.get("content") {
        Some(Value::String(_)) => {}
        Some(Value::Array(parts)) if parts.is_empty() => {
            violations.push(format!("{at}: `content` is an empty array"))
        }
        Some(Value::Array(parts)) => {
            for (k, part) in parts.iter().enumerate() {
                let at = format!("{at}.content[{k}]");
                match kind(part) {
                    Some(t) if !part_types.contains(&t) => violations.push(format!(
                        "{at}: a {} message cannot hold a `{t}` part",
                        role.unwrap_or_default()
                    )),
                    Some("input_text" | "output_text") if text(part, "text").is_none() => {
                        violations.push(format!("{at}: text part has no string `text`"))
                    }
                    Some("input_image") => check_image(&at, part, violations),
                    Some(_) => {}
                    None => violations.push(format!("{at}: part has no string `type`")),
                }
            }
        }
        _ => violations.push(format!(
            "{at}: message needs `content` (a string or an array of parts)"
        )),
    }
}

/// An `input_image` part: a `data:` URL of base64 image data checked as the
/// API checks it, or an http(s) URL.
fn check_image(at: &str, part: &Value, violations: &mut Vec<String>) {
    let Some(url) = part.get("image_url").and_then(Value::as_str) else {
        violations.push(format!("{at}: input_image has no string `image_url`"));
        return;
    };
    if let Some(rest) = url.strip_prefix("data:") {
        match rest.split_once(";base64,") {
            Some((media_type, data)) => super::check_image_data(at, media_type, data, violations),
            None => violations.push(format!(
                "{at}: a data: URL must be `data:MEDIA_TYPE;base64,DATA`"
            )),
        }
    } else if !url.starts_with("https://") && !url.starts_with("http://") {
        violations.push(format!("{at}: image_url must be an http(s) or data: URL"));
    }
}

fn check_reasoning(
    at: &str,
    item: &Value,
    next: Option<&Value>,
    stored: bool,
    violations: &mut Vec<String>,
) {
    let id = text(item, "id").unwrap_or_default();
    if id.is_empty() {
        violations.push(format!("{at}: reasoning item has no `id`"));
    }
    let summary: Vec<&str> = match item.get("summary").and_then(Value::as_array) {
        Some(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        None => {
            violations.push(format!("{at}: reasoning item has no `summary` array"));
            Vec::new()
        }
    };
    match item.get("encrypted_content").and_then(Value::as_str) {
        None if !stored => violations.push(format!(
            "{at}: Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
        )),
        None => {}
        Some(sealed) if sealed != encrypted_reasoning(&id, &summary) => violations.push(format!(
            "{at}: The encrypted content for item {id} could not be verified."
        )),
        Some(_) => {}
    }
    let followed = next.is_some_and(|next| {
        matches!(kind(next), Some("function_call"))
            || (kind(next).unwrap_or("message") == "message"
                && next.get("role").and_then(Value::as_str) == Some("assistant"))
    });
    if !followed {
        violations.push(format!(
            "{at}: Item '{id}' of type 'reasoning' was provided without its required following item."
        ));
    }
}

fn check_tools(tools: &Value, violations: &mut Vec<String>) {
    let Some(tools) = tools.as_array() else {
        violations.push("`tools` is not an array".into());
        return;
    };
    let mut names: Vec<&str> = Vec::new();
    for (k, tool) in tools.iter().enumerate() {
        let at = format!("tools[{k}]");
        if kind(tool) != Some("function") {
            violations.push(format!("{at}: `type` must be \"function\""));
        }
        if tool.get("function").is_some() {
            violations.push(format!(
                "{at}: a Responses tool has `name` and `parameters` at its top level, not under `function` (the Chat Completions shape)"
            ));
        }
        match tool.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => {
                if names.contains(&name) {
                    violations.push(format!("{at}: duplicate tool name `{name}`"));
                }
                names.push(name);
            }
            _ => violations.push(format!("{at}: `name` is missing or empty")),
        }
        if !tool.get("parameters").is_some_and(Value::is_object) {
            violations.push(format!("{at}: `parameters` must be a JSON Schema object"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::render_responses::encrypted_reasoning;
    use crate::validate::validate;
    use crate::wire::Wire;

    fn violations(input: Value) -> Vec<String> {
        validate(
            Wire::Responses,
            &json!({"model": "gpt-5.1-codex", "stream": true, "store": false, "input": input,
                    "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}, "strict": false}]}),
        )
    }

    fn call(id: &str) -> Value {
        json!({"type": "function_call", "call_id": id, "name": "read_file", "arguments": "{}"})
    }

    fn output(id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": id, "output": "A"})
    }

    fn reasoning(id: &str, summary: &str) -> Value {
        json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": summary}],
               "encrypted_content": encrypted_reasoning(id, &[summary])})
    }

    #[test]
    fn a_tool_round_with_its_reasoning_passes() {
        let found = violations(json!([
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "read both"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==", "detail": "auto"},
            ]},
            reasoning("rs_1", "read both"),
            {"type": "message", "role": "assistant", "content": "Reading."},
            call("a"),
            call("b"),
            output("b"),
            output("a"),
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done", "annotations": []}]},
            {"role": "user", "content": "thanks"},
        ]));
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn calls_and_outputs_must_answer_each_other() {
        let found = violations(json!([
            {"type": "message", "role": "user", "content": "hi"},
            call("a"),
            output("ghost"),
            call("b"),
            output("b"),
            output("b"),
        ]));
        let joined = found.join("\n");
        for expected in [
            "input[2]: No tool call found for function call output with call_id ghost.",
            "input[5]: function call `b` of input[3] is answered more than once",
            "input[1]: No tool output found for function call a.",
        ] {
            assert!(
                joined.contains(expected),
                "missing {expected:?} in\n{joined}"
            );
        }
        assert_eq!(found.len(), 3, "{joined}");
    }

    #[test]
    fn reasoning_items_must_be_whole_sealed_and_followed() {
        let unsealed = json!({"type": "reasoning", "id": "rs_1", "summary": []});
        let mut tampered = reasoning("rs_2", "read a");
        tampered["summary"][0]["text"] = json!("read b");
        let found = violations(json!([
            {"type": "message", "role": "user", "content": "hi"},
            unsealed,
            call("a"),
            output("a"),
            tampered,
            call("b"),
            output("b"),
            reasoning("rs_3", "nothing after"),
            {"type": "message", "role": "user", "content": "next"},
        ]));
        let joined = found.join("\n");
        for expected in [
            "input[1]: Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.",
            "input[4]: The encrypted content for item rs_2 could not be verified.",
            "input[7]: Item 'rs_3' of type 'reasoning' was provided without its required following item.",
        ] {
            assert!(
                joined.contains(expected),
                "missing {expected:?} in\n{joined}"
            );
        }
        assert_eq!(found.len(), 3, "{joined}");
    }

    #[test]
    fn chat_shapes_and_bad_parts_are_refused() {
        let found = validate(
            Wire::Responses,
            &json!({"model": "m", "messages": [], "input": [
                {"type": "message", "role": "user", "content": [{"type": "text", "text": "x"}]},
                {"type": "message", "role": "wizard", "content": "x"},
                {"type": "item_reference", "id": "msg_1"},
            ], "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}),
        );
        let joined = found.join("\n");
        for expected in [
            "`messages` is not a field of the Responses API",
            "input[0].content[0]: a user message cannot hold a `text` part",
            "input[1]: invalid role `wizard`",
            "input[2]: input item type `item_reference`",
            "tools[0]: a Responses tool has `name` and `parameters` at its top level",
            "tools[0]: `name` is missing or empty",
            "tools[0]: `parameters` must be a JSON Schema object",
        ] {
            assert!(
                joined.contains(expected),
                "missing {expected:?} in\n{joined}"
            );
        }
        assert_eq!(found.len(), 7, "{joined}");
        assert_eq!(
            validate(Wire::Responses, &json!({"model": "m", "input": []})).len(),
            1
        );
        assert_eq!(validate(Wire::Responses, &json!("x")).len(), 1);
    }
}
