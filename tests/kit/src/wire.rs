//! The three wire formats, and what the server reads out of a request body
//! beyond validating it: the texts that `match` routing and the `text`
//! templates (`{last_user}`, `{last_tool_result}`) are built from.

use serde_json::Value;

/// Which provider protocol a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// OpenAI Responses (`POST /v1/responses`).
    Responses,
}

/// The names of the tools a request offers, in any format (Chat
/// Completions nests the name under `function`).
pub fn offered_tools(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| {
                    tool.pointer("/function/name")
                        .or_else(|| tool.get("name"))
                        .and_then(Value::as_str)
                        .map(String::from)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn messages(body: &Value) -> &[Value] {
    body.get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A Responses request's input items (a string `input` is no list of
/// items: see [`last_user_text`]).
pub(crate) fn input_items(body: &Value) -> &[Value] {
    body.get("input")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The `type` of an item or part, if it has a string one.
fn kind(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// The text of a content value: a string, or the `text` of the text parts
/// of an array (`text`; the Responses wire's `input_text` and
/// `output_text`), joined with newlines. `None` when the content holds no
/// text at all.
pub(crate) fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|part| matches!(kind(part), Some("text" | "input_text" | "output_text")))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The text of the last user message that has any text, in any format (a
/// Responses request's `input` string is one user message). Anthropic user
/// messages holding only `tool_result` blocks have none and are skipped.
/// Each image the message carries adds a line `[image: MEDIA_TYPE]` after
/// its text, so that a script can match on "an image was attached"
/// (`match = "[image: "`).
pub fn last_user_text(body: &Value) -> Option<String> {
    if let Some(text) = body.get("input").and_then(Value::as_str) {
        return Some(text.to_owned());
    }
    let list = if body.get("input").is_some() {
        input_items(body)
    } else {
        messages(body)
    };
    list.iter()
        .rev()
        .filter(|message| role(message) == Some("user"))
        .find_map(|message| {
            let content = message.get("content")?;
            let text = text_of(content)?;
            let images: Vec<String> = content
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(image_media_type)
                .map(|media_type| format!("\n[image: {media_type}]"))
                .collect();
            Some(text + &images.concat())
        })
}

/// The media type of an image part (OpenAI's `image_url` with a `data:`
/// URL, the Responses wire's `input_image`, Anthropic's `image` block);
/// `url` for an image given by address.
fn image_media_type(part: &Value) -> Option<String> {
    let of_url = |url: &str| match url.strip_prefix("data:") {
        Some(rest) => rest.split(';').next().unwrap_or_default().to_string(),
        None => "url".to_string(),
    };
    match part.get("type").and_then(Value::as_str)? {
        "image_url" => Some(of_url(part.get("image_url")?.get("url")?.as_str()?)),
        "input_image" => Some(of_url(part.get("image_url")?.as_str()?)),
        "image" => {
            let source = part.get("source")?;
            Some(
                source
                    .get("media_type")
                    .and_then(Value::as_str)
                    .unwrap_or("url")
                    .to_string(),
            )
        }
        _ => None,
    }
}

/// The content of the last tool result: OpenAI's last `tool` message, the
/// Responses wire's last `function_call_output`, or the last `tool_result`
/// block of Anthropic's messages.
pub(crate) fn last_tool_result(wire: Wire, body: &Value) -> Option<String> {
    match wire {
        Wire::Responses => input_items(body)
            .iter()
            .rev()
            .find(|item| kind(item) == Some("function_call_output"))
            .map(|item| item.get("output").and_then(text_of).unwrap_or_default()),
        Wire::OpenAi => messages(body)
            .iter()
            .rev()
            .find(|message| role(message) == Some("tool"))
            .map(|message| message.get("content").and_then(text_of).unwrap_or_default()),
        Wire::Anthropic => messages(body)
            .iter()
            .rev()
            .filter(|message| role(message) == Some("user"))
            .filter_map(|message| message.get("content").and_then(Value::as_array))
            .flat_map(|blocks| blocks.iter().rev())
            .find(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|block| block.get("content").and_then(text_of).unwrap_or_default()),
    }
}

/// The `model` the request asked for, echoed back in the stream.
pub(crate) fn model(body: &Value) -> String {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted")
        .to_owned()
}

/// Whether an OpenAI request asked for the trailing usage chunk.
pub(crate) fn include_usage(body: &Value) -> bool {
    body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
}

/// Whether a Responses request asked for its reasoning encrypted
/// (`include: ["reasoning.encrypted_content"]`).
pub(crate) fn includes_encrypted_reasoning(body: &Value) -> bool {
    body.get("include")
        .and_then(Value::as_array)
        .is_some_and(|include| {
            include
                .iter()
                .any(|item| item.as_str() == Some("reasoning.encrypted_content"))
        })
}

/// Whether a Responses request asked for a reasoning summary
/// (`reasoning.summary`).
pub(crate) fn asks_reasoning_summary(body: &Value) -> bool {
    body.pointer("/reasoning/summary")
        .and_then(Value::as_str)
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_user_text_skips_tool_result_only_messages() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "find alpha"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "42"}]},
        ]});
        assert_eq!(last_user_text(&body).as_deref(), Some("find alpha"));
        assert_eq!(
            last_tool_result(Wire::Anthropic, &body).as_deref(),
            Some("42")
        );
    }

    #[test]
    fn openai_tool_result_and_user_text() {
        let body = json!({"messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        ]});
        assert_eq!(last_user_text(&body).as_deref(), Some("hello"));
        assert_eq!(
            last_tool_result(Wire::OpenAi, &body).as_deref(),
            Some("one\ntwo")
        );
        assert_eq!(last_tool_result(Wire::Anthropic, &body), None);
    }

    #[test]
    fn responses_input_items_give_user_text_images_and_tool_results() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "what is it"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
            ]},
            {"type": "function_call", "call_id": "c", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "alpha"},
        ]});
        assert_eq!(
            last_user_text(&body).as_deref(),
            Some("what is it\n[image: image/png]")
        );
        assert_eq!(
            last_tool_result(Wire::Responses, &body).as_deref(),
            Some("alpha")
        );
        assert_eq!(
            last_user_text(&json!({"input": "just text"})).as_deref(),
            Some("just text")
        );
        assert!(!includes_encrypted_reasoning(&body) && !asks_reasoning_summary(&body));
        let asked =
            json!({"include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}});
        assert!(includes_encrypted_reasoning(&asked) && asks_reasoning_summary(&asked));
    }

    #[test]
    fn missing_pieces_are_none() {
        let body = json!({"messages": "nope"});
        assert_eq!(last_user_text(&body), None);
        assert_eq!(last_tool_result(Wire::OpenAi, &body), None);
        assert_eq!(model(&body), "scripted");
        assert!(!include_usage(&body));
    }
}
