//! Anthropic's extended thinking, as the scripted model plays it: whether a
//! request enables it, the signature a scripted thinking block carries, and
//! the requests the real API refuses with HTTP 400 — a thinking budget out
//! of bounds, a thinking block sent back without its signature or with one
//! that does not seal its text, and a tool round continued with thinking
//! enabled whose assistant message does not start with its thinking. The
//! refusals carry the API's own messages, so that the test double is never
//! kinder than the real thing.

use serde_json::Value;

/// The smallest `budget_tokens` the API accepts.
const MIN_BUDGET: u64 = 1024;

/// Whether an Anthropic request body enables extended thinking.
pub(crate) fn enabled(body: &Value) -> bool {
    body.pointer("/thinking/type").and_then(Value::as_str) == Some("enabled")
}

/// The signature the scripted model seals `thinking` with (FNV-1a of the
/// text): a block sent back with other text, or another signature, is
/// refused as the real API refuses a tampered block.
pub(crate) fn signature(thinking: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in thinking.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("scripted-signature-{hash:016x}")
}

/// Why the real API would refuse this Anthropic request over thinking, in
/// its own words; `None` when it would not.
pub(crate) fn refusal(body: &Value) -> Option<String> {
    if enabled(body) {
        let budget = body
            .pointer("/thinking/budget_tokens")
            .and_then(Value::as_u64);
        match budget {
            Some(budget) if budget >= MIN_BUDGET => {
                let max_tokens = body.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
                if max_tokens <= budget {
                    return Some(
                        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
                            .to_owned(),
                    );
                }
            }
            Some(_) => {
                return Some(format!(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}"
                ));
            }
            None => return Some("thinking.enabled.budget_tokens: Field required".to_owned()),
        }
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, message) in messages.iter().enumerate() {
        for (k, block) in blocks(message).iter().enumerate() {
            if block.get("type").and_then(Value::as_str) != Some("thinking") {
                continue;
            }
            let text = block.get("thinking").and_then(Value::as_str).unwrap_or("");
            match block.get("signature").and_then(Value::as_str) {
                None => {
                    return Some(format!(
                        "messages.{i}.content.{k}.signature: Field required"
                    ));
                }
                Some(seal) if seal != signature(text) => {
                    return Some(format!(
                        "messages.{i}.content.{k}: Invalid `signature` in `thinking` block"
                    ));
                }
                Some(_) => {}
            }
        }
    }
    if enabled(body) {
        return unthought_tool_round(messages);
    }
    None
}

/// The content blocks of a message (none for string content).
fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// With thinking enabled, the last assistant message, when it used a tool,
/// must start with its thinking.
fn unthought_tool_round(messages: &[Value]) -> Option<String> {
    let (i, last) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.get("role").and_then(Value::as_str) == Some("assistant"))?;
    let content = blocks(last);
    let kind = |block: &Value| block.get("type").and_then(Value::as_str).map(str::to_owned);
    if !content
        .iter()
        .any(|b| kind(b).as_deref() == Some("tool_use"))
    {
        return None;
    }
    let first = content.first().and_then(kind).unwrap_or_default();
    if first == "thinking" || first == "redacted_thinking" {
        return None;
    }
    Some(format!(
        "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(thinking: Value, assistant: Value) -> Value {
        json!({
            "model": "m", "max_tokens": 4096, "stream": true, "thinking": thinking,
            "messages": [
                {"role": "user", "content": "list it"},
                {"role": "assistant", "content": assistant},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
            ],
        })
    }

    fn on(budget: u64) -> Value {
        json!({"type": "enabled", "budget_tokens": budget})
    }

    fn tool_use() -> Value {
        json!({"type": "tool_use", "id": "t1", "name": "list_dir", "input": {}})
    }

    fn thought(text: &str, seal: &str) -> Value {
        json!({"type": "thinking", "thinking": text, "signature": seal})
    }

    #[test]
    fn a_tool_round_continued_with_its_signed_thinking_passes() {
        let sealed = thought("list first", &signature("list first"));
        assert_eq!(
            refusal(&request(on(1024), json!([sealed, tool_use()]))),
            None
        );
        let redacted = json!({"type": "redacted_thinking", "data": "x"});
        assert_eq!(
            refusal(&request(on(1024), json!([redacted, tool_use()]))),
            None
        );
        // Without thinking enabled nothing is demanded.
        assert_eq!(refusal(&request(Value::Null, json!([tool_use()]))), None);
    }

    #[test]
    fn a_tool_round_without_its_thinking_is_refused_as_the_api_does() {
        let text = json!({"type": "text", "text": "looking"});
        let why = refusal(&request(on(1024), json!([text, tool_use()]))).expect("refused");
        assert!(
            why.starts_with("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`."),
            "{why}"
        );
    }

    #[test]
    fn a_tampered_or_unsigned_thinking_block_is_refused() {
        let tampered = thought("list LATER", &signature("list first"));
        assert_eq!(
            refusal(&request(on(1024), json!([tampered, tool_use()]))).as_deref(),
            Some("messages.1.content.0: Invalid `signature` in `thinking` block")
        );
        let unsigned = json!({"type": "thinking", "thinking": "list first"});
        assert_eq!(
            refusal(&request(Value::Null, json!([unsigned, tool_use()]))).as_deref(),
            Some("messages.1.content.0.signature: Field required")
        );
    }

    #[test]
    fn a_budget_out_of_bounds_is_refused() {
        let sealed = || thought("x", &signature("x"));
        let why = refusal(&request(on(1023), json!([sealed(), tool_use()]))).expect("refused");
        assert!(why.contains("greater than or equal to 1024"), "{why}");
        let why = refusal(&request(on(4096), json!([sealed(), tool_use()]))).expect("refused");
        assert!(
            why.starts_with("`max_tokens` must be greater than `thinking.budget_tokens`"),
            "{why}"
        );
    }
}
