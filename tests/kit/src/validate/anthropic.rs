//! Anthropic Messages request rules: `max_tokens` present, `system` only at
//! the top level, messages alternating user/assistant from a user message,
//! every `tool_use` answered by a `tool_result` in the very next user message
//! (results first in it), and no `tool_result` without its `tool_use`.

use serde_json::Value;

use super::{block_type, check_model, is_text_content, messages};

pub(super) fn validate(body: &Value, violations: &mut Vec<String>) {
    if !body.is_object() {
        violations.push("body is not a JSON object".into());
        return;
    }
    check_model(body, violations);
    match body.get("max_tokens") {
        None => violations.push("`max_tokens` is missing (Anthropic requires it)".into()),
        Some(value) if value.as_u64().is_some_and(|n| n > 0) => {}
        Some(other) => violations.push(format!(
            "`max_tokens` must be a positive integer, got {other}"
        )),
    }
    if let Some(system) = body.get("system")
        && !is_text_content(system)
    {
        violations.push("`system` must be a string or an array of text blocks".into());
    }
    if let Some(messages) = messages(body, violations) {
        check_messages(messages, violations);
    }
    if let Some(tools) = body.get("tools") {
        check_tools(tools, violations);
    }
}

fn check_messages(messages: &[Value], violations: &mut Vec<String>) {
    // Tool uses of the previous message, when it was an assistant message,
    // with how often each was answered.
    let mut pending: Option<(usize, Vec<(String, usize)>)> = None;
    let mut previous_role: Option<&str> = None;
    for (index, message) in messages.iter().enumerate() {
        let at = format!("messages[{index}]");
        let role = message.get("role").and_then(Value::as_str);
        match (role, previous_role) {
            (Some("system"), _) => violations.push(format!(
                "{at}: role `system` is not allowed in `messages`; the system prompt goes in top-level `system`"
            )),
            (Some("assistant"), None) => violations.push(format!(
                "{at}: the first message must be a user message"
            )),
            (Some(role @ ("user" | "assistant")), Some(previous)) if role == previous => violations
                .push(format!(
                    "{at}: two `{role}` messages in a row (messages must alternate user/assistant)"
                )),
            (Some("user" | "assistant"), _) => {}
            (Some(other), _) => violations.push(format!("{at}: invalid role `{other}`")),
            (None, _) => violations.push(format!("{at}: `role` is missing or not a string")),
        }
        let blocks = content_blocks(&at, message, violations);
        check_images(&at, role, blocks, violations);
        let answers = pending.take();
        if role == Some("user") {
            check_tool_results(&at, blocks, answers, violations);
        } else {
            report_unanswered(answers, violations);
            for block in blocks
                .iter()
                .filter(|b| block_type(b) == Some("tool_result"))
            {
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                violations.push(format!("{at}: tool_result `{id}` outside a user message"));
            }
        }
        if role == Some("assistant") {
            pending = tool_uses(index, &at, blocks, violations);
        }
        previous_role = role;
    }
    report_unanswered(pending, violations);
}

/// Image blocks: only in user messages, each with a `base64` source
/// (media type, data checked as the API checks them) or a `url` one.
fn check_images(at: &str, role: Option<&str>, blocks: &[Value], violations: &mut Vec<String>) {
    for (k, block) in blocks.iter().enumerate() {
        if block_type(block) != Some("image") {
            continue;
        }
        let at = format!("{at}.content[{k}]");
        if role != Some("user") {
            violations.push(format!("{at}: image blocks belong in user messages"));
        }
        let source = block.get("source");
        match source.and_then(|s| s.get("type")).and_then(Value::as_str) {
            Some("base64") => {
                let field = |name: &str| source.and_then(|s| s.get(name)).and_then(Value::as_str);
                match (field("media_type"), field("data")) {
                    (Some(media_type), Some(data)) => {
                        super::check_image_data(&at, media_type, data, violations)
                    }
                    _ => violations.push(format!(
                        "{at}: a base64 image source needs string `media_type` and `data`"
                    )),
                }
            }
            Some("url")
                if source
                    .and_then(|s| s.get("url"))
                    .is_some_and(Value::is_string) => {}
            _ => violations.push(format!(
                "{at}: image block needs a `source` of type `base64` (or `url`)"
            )),
        }
    }
}

/// The content blocks of a message (none for string content); pushes a
/// violation when content is neither a string nor an array of typed blocks.
fn content_blocks<'a>(at: &str, message: &'a Value, violations: &mut Vec<String>) -> &'a [Value] {
    match message.get("content") {
        Some(Value::String(_)) => &[],
        Some(Value::Array(blocks)) => {
            if blocks.is_empty() {
                violations.push(format!("{at}: `content` is an empty array"));
            }
            for (k, block) in blocks.iter().enumerate() {
                if block_type(block).is_none() {
                    violations.push(format!("{at}.content[{k}]: block has no string `type`"));
                }
            }
            blocks
        }
        _ => {
            violations.push(format!(
                "{at}: `content` must be a string or an array of content blocks"
            ));
            &[]
        }
    }
}

/// The `tool_use` ids of an assistant message, checking each block's shape.
fn tool_uses(
    index: usize,
    at: &str,
    blocks: &[Value],
    violations: &mut Vec<String>,
) -> Option<(usize, Vec<(String, usize)>)> {
    let mut ids: Vec<(String, usize)> = Vec::new();
    for (k, block) in blocks.iter().enumerate() {
        if block_type(block) != Some("tool_use") {
            continue;
        }
        let at = format!("{at}.content[{k}]");
        if block
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            violations.push(format!("{at}: tool_use `name` is missing or empty"));
        }
        if !block.get("input").is_some_and(Value::is_object) {
            violations.push(format!("{at}: tool_use `input` must be an object"));
        }
        match block.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => {
                if ids.iter().any(|(seen, _)| seen == id) {
                    violations.push(format!("{at}: duplicate tool_use id `{id}`"));
                } else {
                    ids.push((id.to_owned(), 0));
                }
            }
            _ => violations.push(format!("{at}: tool_use `id` is missing or empty")),
        }
    }
    (!ids.is_empty()).then_some((index, ids))
}

/// Checks the `tool_result` blocks of a user message against the tool uses of
/// the assistant message right before it.
fn check_tool_results(
    at: &str,
    blocks: &[Value],
    mut pending: Option<(usize, Vec<(String, usize)>)>,
    violations: &mut Vec<String>,
) {
    let mut seen_other = false;
    for (k, block) in blocks.iter().enumerate() {
        if block_type(block) != Some("tool_result") {
            seen_other = true;
            continue;
        }
        let at = format!("{at}.content[{k}]");
        if seen_other {
            violations.push(format!(
                "{at}: tool_result blocks must come before any other content in the message"
            ));
        }
        if let Some(content) = block.get("content")
            && !matches!(content, Value::String(_) | Value::Array(_))
        {
            violations.push(format!(
                "{at}: tool_result `content` must be a string or an array of blocks"
            ));
        }
        let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
            violations.push(format!("{at}: tool_result has no string `tool_use_id`"));
            continue;
        };
        let slot = pending
            .as_mut()
            .and_then(|(_, ids)| ids.iter_mut().find(|(use_id, _)| use_id == id));
        match slot {
            Some((_, answers)) => {
                *answers += 1;
                if *answers > 1 {
                    violations.push(format!("{at}: tool_use `{id}` is answered more than once"));
                }
            }
            None => violations.push(format!(
                "{at}: tool_result for `{id}`, which is not a tool_use of the previous assistant message"
            )),
        }
    }
    report_unanswered(pending, violations);
}

fn report_unanswered(pending: Option<(usize, Vec<(String, usize)>)>, violations: &mut Vec<String>) {
    let Some((index, ids)) = pending else {
        return;
    };
    for (id, answers) in ids {
        if answers == 0 {
            violations.push(format!(
                "messages[{index}]: tool_use `{id}` has no tool_result in the immediately following user message"
            ));
        }
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
        match tool.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => {
                if names.contains(&name) {
                    violations.push(format!("{at}: duplicate tool name `{name}`"));
                }
                names.push(name);
            }
            _ => violations.push(format!("{at}: `name` is missing or empty")),
        }
        // Server tools (`type` like "web_search_20250305") carry no schema.
        let custom = matches!(
            tool.get("type").and_then(Value::as_str),
            None | Some("custom")
        );
        if custom && !tool.get("input_schema").is_some_and(Value::is_object) {
            violations.push(format!("{at}: `input_schema` must be a JSON Schema object"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::validate::validate;
    use crate::wire::Wire;

    fn violations(messages: Value) -> Vec<String> {
        validate(
            Wire::Anthropic,
            &json!({"model": "m", "max_tokens": 100, "system": "be brief", "stream": true,
                    "messages": messages, "tools": [
                {"name": "read_file", "input_schema": {"type": "object"}},
            ]}),
        )
    }

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "read_file", "input": {"path": "a"}})
    }

    fn tool_result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": "A"})
    }

    #[test]
    fn valid_tool_round_passes() {
        let found = violations(json!([
            {"role": "user", "content": "read both"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}, tool_use("a"), tool_use("b")]},
            {"role": "user", "content": [tool_result("b"), tool_result("a"), {"type": "text", "text": "go on"}]},
            {"role": "assistant", "content": "done"},
        ]));
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn flags_tool_result_without_tool_use() {
        let found = violations(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": [tool_result("ghost")]},
        ]));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("messages[2].content[0]: tool_result for `ghost`"));
    }

    #[test]
    fn flags_tool_use_without_result() {
        let found = violations(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
            {"role": "user", "content": [tool_result("a")]},
        ]));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("messages[1]: tool_use `b` has no tool_result"));
    }

    #[test]
    fn flags_structure_errors() {
        let found = validate(
            Wire::Anthropic,
            &json!({"model": "m", "messages": [
                {"role": "system", "content": "sys"},
                {"role": "assistant", "content": [tool_use("a")]},
                {"role": "assistant", "content": "again"},
                {"role": "user", "content": [{"type": "text", "text": "x"}, tool_result("a")]},
            ]}),
        );
        let joined = found.join("\n");
        for expected in [
            "`max_tokens` is missing",
            "messages[0]: role `system` is not allowed",
            "messages[2]: two `assistant` messages in a row",
            "messages[1]: tool_use `a` has no tool_result",
            "messages[3].content[1]: tool_result blocks must come before",
            "messages[3].content[1]: tool_result for `a`",
        ] {
            assert!(
                joined.contains(expected),
                "missing {expected:?} in\n{joined}"
            );
        }
    }

    #[test]
    fn first_message_must_be_user() {
        let found = violations(json!([{"role": "assistant", "content": "hi"}]));
        assert_eq!(
            found,
            ["messages[0]: the first message must be a user message"]
        );
    }
}
