//! Anthropic's thinking, as the scripted model plays it: whether a request
//! asks for it (extended thinking with a budget, or adaptive thinking), the
//! signature a scripted thinking block carries, and the requests the real
//! API refuses with HTTP 400 — a thinking budget out of bounds, a kind of
//! thinking the model's family does not take (a budget on Opus 4.7 and
//! later or any Claude 5, adaptive thinking on Sonnet 4.5, Opus 4.5, Haiku
//! 4.x and older models; ids that are not Claude's take anything), a
//! thinking block sent back without its signature or with one that does
//! not seal its text, and a tool round continued with a thinking budget
//! whose assistant message does not start with its thinking (adaptive
//! thinking has no such rule: the model may skip thinking). The refusals
//! carry the API's own messages where they are known (the budget-on-an-
//! adaptive-model and adaptive-on-an-older-model ones are quoted from
//! users' reports of the API's answers), so that the test double is never
//! kinder than the real thing.

use serde_json::Value;

/// The smallest `budget_tokens` the API accepts.
const MIN_BUDGET: u64 = 1024;

/// The kind of thinking a request asks for (`thinking.type`).
fn kind(body: &Value) -> Option<&str> {
    body.pointer("/thinking/type").and_then(Value::as_str)
}

/// Whether an Anthropic request body asks for thinking: extended thinking
/// (`"enabled"`, with a budget) or adaptive thinking.
pub(crate) fn enabled(body: &Value) -> bool {
    matches!(kind(body), Some("enabled" | "adaptive"))
}

/// What thinking a model takes, as read from its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Takes {
    AdaptiveOnly,
    Both,
    BudgetOnly,
    Anything,
}

/// What thinking the model of id `model` takes: the family and version in
/// ids such as `claude-opus-4-7`, `claude-sonnet-4-5-20250929`,
/// `claude-3-7-sonnet-latest`, `us.anthropic.claude-opus-4-7-v1:0`.
fn takes(model: &str) -> Takes {
    let model = model.to_ascii_lowercase();
    let Some(at) = model
        .match_indices("claude")
        .map(|(at, _)| at)
        .find(|at| *at == 0 || matches!(model.as_bytes()[at - 1], b'.' | b'/' | b':'))
    else {
        return Takes::Anything;
    };
    let words: Vec<&str> = model[at + "claude".len()..]
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let small_number = |w: &&str| w.len() <= 2 && w.bytes().all(|b| b.is_ascii_digit());
    let family = words
        .iter()
        .find(|w| w.bytes().all(|b| b.is_ascii_alphabetic()))
        .copied();
    let Some(start) = words.iter().position(small_number) else {
        return Takes::Anything;
    };
    let major: u32 = words[start].parse().unwrap_or(0);
    let minor: u32 = words
        .get(start + 1)
        .filter(|w| small_number(w))
        .and_then(|w| w.parse().ok())
        .unwrap_or(0);
    match (family, major, minor) {
        (_, 5.., _) => Takes::AdaptiveOnly,
        (Some("opus"), 4, 7..) => Takes::AdaptiveOnly,
        (Some("opus" | "sonnet"), 4, 6..) => Takes::Both,
        (Some("opus" | "sonnet" | "haiku" | "instant") | None, _, _) | (_, ..=3, _) => {
            Takes::BudgetOnly
        }
        (Some(_), _, _) => Takes::Both,
    }
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
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    match kind(body) {
        Some("enabled") if takes(model) == Takes::AdaptiveOnly => {
            return Some(
                "\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior."
                    .to_owned(),
            );
        }
        Some("enabled") => {
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
        Some("adaptive") if takes(model) == Takes::BudgetOnly => {
            return Some("adaptive thinking is not supported on this model".to_owned());
        }
        Some("adaptive") if body.pointer("/thinking/budget_tokens").is_some() => {
            return Some(
                "thinking.adaptive.budget_tokens: Extra inputs are not permitted".to_owned(),
            );
        }
        _ => {}
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
    if kind(body) == Some("enabled") {
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
    fn model_families_are_read_from_the_id() {
        for (model, expected) in [
            ("claude-opus-4-7", Takes::AdaptiveOnly),
            ("us.anthropic.claude-opus-4-7-v1:0", Takes::AdaptiveOnly),
            ("claude-opus-4-7@20260416", Takes::AdaptiveOnly),
            ("claude-opus-5", Takes::AdaptiveOnly),
            ("claude-fable-5-1", Takes::AdaptiveOnly),
            ("claude-opus-4-6", Takes::Both),
            ("claude-sonnet-4-6-20260101", Takes::Both),
            ("claude-sonnet-4-5-20250929", Takes::BudgetOnly),
            ("claude-opus-4-20250514", Takes::BudgetOnly),
            ("claude-haiku-4-5", Takes::BudgetOnly),
            ("claude-3-7-sonnet-latest", Takes::BudgetOnly),
            ("scripted-main", Takes::Anything),
            ("claude-mythos-preview", Takes::Anything),
        ] {
            assert_eq!(takes(model), expected, "{model}");
        }
    }

    fn for_model(model: &str, thinking: Value) -> Value {
        let mut body = request(thinking, json!([thought("x", &signature("x")), tool_use()]));
        body["model"] = json!(model);
        body
    }

    #[test]
    fn a_budget_for_an_adaptive_only_model_is_refused_as_the_api_does() {
        assert_eq!(
            refusal(&for_model("claude-opus-4-7", on(2048))).as_deref(),
            Some(
                "\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior."
            )
        );
        let adaptive = json!({"type": "adaptive"});
        assert_eq!(
            refusal(&for_model("claude-opus-4-7", adaptive.clone())),
            None
        );
        assert_eq!(refusal(&for_model("claude-opus-4-6", on(2048))), None);
        assert_eq!(refusal(&for_model("claude-opus-4-6", adaptive)), None);
    }

    #[test]
    fn adaptive_thinking_for_an_older_model_is_refused() {
        let adaptive = json!({"type": "adaptive"});
        assert_eq!(
            refusal(&for_model("claude-sonnet-4-5", adaptive.clone())).as_deref(),
            Some("adaptive thinking is not supported on this model")
        );
        assert_eq!(refusal(&for_model("scripted-main", adaptive)), None);
        let with_budget = json!({"type": "adaptive", "budget_tokens": 2048});
        assert!(refusal(&for_model("claude-opus-4-7", with_budget)).is_some());
    }

    #[test]
    fn adaptive_thinking_continues_a_tool_round_that_did_not_think() {
        let text = json!({"type": "text", "text": "looking"});
        let body = request(json!({"type": "adaptive"}), json!([text, tool_use()]));
        assert_eq!(refusal(&body), None);
        assert!(enabled(&body));
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
