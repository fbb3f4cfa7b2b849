//! Token counting, as a provider does before it accepts a request: what the
//! script's `context_window` is checked against, and what a streamed reply
//! reports as its usage when the script does not say.
//!
//! The convention is documented on [`count_request`]. It is deliberately
//! NOT agentbus's own estimator: a real provider counts with its own
//! tokenizer (Anthropic's counts more than `cl100k_base` for the same text,
//! a llama.cpp model uses its model's vocabulary), and a double that
//! counted the way agentbus estimates would hide every estimate that is too
//! low. Only OpenAI's model families are counted with the tokenizer OpenAI
//! really uses (`o200k_base`).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{LazyLock, Mutex, PoisonError};

use serde_json::Value;
use tiktoken_rs::CoreBPE;

use crate::wire::Wire;

/// Tokens every request costs on top of its parts.
const REQUEST_OVERHEAD: u64 = 3;
/// Tokens every message (and an Anthropic `system`) costs on top of its texts.
const MESSAGE_OVERHEAD: u64 = 4;

/// Model id prefixes (lowercase) that use `o200k_base`.
const O200K_PREFIXES: [&str; 7] = ["gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt"];

/// Characters per token of every other model: about what Claude's and
/// Gemma's tokenizers give for English prose, more tokens than
/// `cl100k_base` there and fewer on JSON and code.
const CHARS_PER_TOKEN: f64 = 3.5;

/// How the convention counts for one model.
#[derive(Clone, Copy)]
enum Tokenizer {
    /// OpenAI's model families: their real tokenizer.
    Bpe(&'static CoreBPE),
    /// Everything else: one token per [`CHARS_PER_TOKEN`] characters,
    /// rounded up, for each text.
    Chars,
}

/// The tokenizer the convention uses for `model`.
fn tokenizer(model: &str) -> Tokenizer {
    let model = model.to_lowercase();
    if O200K_PREFIXES
        .iter()
        .any(|prefix| model.starts_with(prefix))
    {
        Tokenizer::Bpe(tiktoken_rs::o200k_base_singleton())
    } else {
        Tokenizer::Chars
    }
}

/// Tokens of `text` as the convention counts them for `model`
/// (`o200k_base` for OpenAI model families, else characters / 3.5).
pub fn count_text(model: &str, text: &str) -> u64 {
    Counter {
        tokenizer: tokenizer(model),
    }
    .text(text)
}

/// The input tokens of a model call's JSON body in the given wire format.
///
/// The convention (not agentbus's: see the module doc):
///
/// * Tokenizer by the request's `model`: `o200k_base` for OpenAI model
///   families (the model id, lowercased, starts with `gpt-4o`, `gpt-4.1`,
///   `gpt-5`, `o1`, `o3`, `o4` or `chatgpt`), encoding text as ordinary
///   text (special-token spellings count like any other characters); for
///   everything else (including a missing model) each text is
///   `ceil(characters / 3.5)` tokens.
/// * A request's input tokens are 3, plus
///   * the tokens of the JSON text of the `tools` array
///     (`serde_json::to_string` of the array as parsed), when it is present
///     and not empty;
///   * for an Anthropic top-level `system` (a string or an array of text
///     blocks) 4 plus the tokens of each text;
///   * for every message (an OpenAI `system`/`developer` message is one of
///     them) 4 plus the tokens of each text it holds: string content, `text`
///     parts/blocks, `tool_result` contents (a string or text blocks), OpenAI
///     `tool_calls[].function.name` and `.arguments`, Anthropic `tool_use`
///     `name` plus the JSON text of its `input` (`serde_json::to_string`),
///     Anthropic `thinking` blocks the text of their `thinking`.
/// * A Responses request (`input` instead of `messages`) counts, after its
///   3 and its `tools`, its `instructions` (a string) as 4 plus its tokens
///   and then its `input`: a string is one message (4 plus its tokens); a
///   list of items counts 4 plus the texts for every user, system or
///   developer message and every `function_call_output` (its `output`, a
///   string or text parts), and 4 once for every run of consecutive items
///   the model produced — reasoning items, assistant messages and
///   `function_call`s, one answer in agentbus's history — plus their texts:
///   message text (a string, or `input_text`/`output_text` parts),
///   `function_call` `name` and `arguments`, reasoning `summary` texts.
///
/// Anything else (images, redacted thinking, OpenAI `reasoning_content`,
/// a reasoning item's `encrypted_content`, unknown fields) counts nothing.
/// Malformed pieces are skipped, never a panic: the count is made of
/// whatever a client sent.
pub fn count_request(wire: Wire, body: &Value) -> u64 {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let counter = Counter {
        tokenizer: tokenizer(model),
    };
    let mut total = REQUEST_OVERHEAD;
    if let Some(tools) = body.get("tools")
        && tools.as_array().is_some_and(|tools| !tools.is_empty())
    {
        total = total.saturating_add(counter.json(tools));
    }
    if wire == Wire::Anthropic
        && let Some(system) = body.get("system")
        && (system.is_string() || system.is_array())
    {
        total = total
            .saturating_add(MESSAGE_OVERHEAD)
            .saturating_add(counter.content(system));
    }
    if wire == Wire::Responses {
        return total.saturating_add(counter.responses(body));
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for message in messages {
        total = total
            .saturating_add(MESSAGE_OVERHEAD)
            .saturating_add(counter.message(wire, message));
    }
    total
}

/// `text` cut to its longest start of at most `max` tokens (as the
/// convention counts them for `model`), or `None` when it fits whole.
pub(crate) fn cut_to(model: &str, text: &str, max: u64) -> Option<String> {
    if count_text(model, text) <= max {
        return None;
    }
    // The first `k` characters end where character `k` starts.
    let starts: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
    let prefix = |k: usize| &text[..starts.get(k).copied().unwrap_or(text.len())];
    // The longest prefix that fits: count(prefix(low)) <= max always.
    let (mut low, mut high) = (0, starts.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        if count_text(model, prefix(mid)) <= max {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    Some(prefix(low).to_owned())
}

/// The most output tokens the request allows: `max_tokens`, or for OpenAI
/// `max_completion_tokens` (which wins when both are given), or on the
/// Responses wire `max_output_tokens`; 0 when absent or not a non-negative
/// integer.
pub(crate) fn max_output_tokens(wire: Wire, body: &Value) -> u64 {
    let field = |name: &str| body.get(name).and_then(Value::as_u64);
    match wire {
        Wire::OpenAi => field("max_completion_tokens").or_else(|| field("max_tokens")),
        Wire::Anthropic => field("max_tokens"),
        Wire::Responses => field("max_output_tokens"),
    }
    .unwrap_or(0)
}

/// Texts at least this long are encoded once per process: a session's
/// requests repeat their history, and encoding it again on every request
/// made a 40-turn session's counts quadratic (most of a minute in a debug
/// build).
const MEMO_MIN_BYTES: usize = 256;
/// The most counts [`BPE_COUNTS`] keeps before it starts over.
const MEMO_MAX: usize = 100_000;

/// `o200k_base` counts of long texts, by the text's hash.
static BPE_COUNTS: LazyLock<Mutex<HashMap<u64, u64>>> = LazyLock::new(Mutex::default);

/// The `o200k_base` count of `text`, encoded once per process when it is
/// long.
fn bpe_count(bpe: &CoreBPE, text: &str) -> u64 {
    let encode = || u64::try_from(bpe.encode_ordinary(text).len()).unwrap_or(u64::MAX);
    if text.len() < MEMO_MIN_BYTES {
        return encode();
    }
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    let key = hasher.finish();
    let known = BPE_COUNTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
        .copied();
    if let Some(tokens) = known {
        return tokens;
    }
    let tokens = encode();
    let mut counts = BPE_COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    if counts.len() >= MEMO_MAX {
        counts.clear();
    }
    counts.insert(key, tokens);
    tokens
}

/// Counts with one tokenizer.
struct Counter {
    tokenizer: Tokenizer,
}

impl Counter {
    fn text(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        match self.tokenizer {
            Tokenizer::Bpe(bpe) => bpe_count(bpe, text),
            Tokenizer::Chars => (text.chars().count() as f64 / CHARS_PER_TOKEN).ceil() as u64,
        }
    }

    /// Tokens of a value's compact JSON text.
    fn json(&self, value: &Value) -> u64 {
        serde_json::to_string(value).map_or(0, |text| self.text(&text))
    }

    /// The texts of one message, without its overhead.
    fn message(&self, wire: Wire, message: &Value) -> u64 {
        let mut total = message
            .get("content")
            .map_or(0, |content| self.content(content));
        if wire == Wire::OpenAi {
            let calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for call in calls {
                for field in ["name", "arguments"] {
                    if let Some(text) = call
                        .get("function")
                        .and_then(|function| function.get(field))
                        .and_then(Value::as_str)
                    {
                        total = total.saturating_add(self.text(text));
                    }
                }
            }
        }
        total
    }

    /// A Responses request's `instructions` and `input`, as documented on
    /// [`count_request`] (without the request's own 3 and its tools).
    fn responses(&self, body: &Value) -> u64 {
        let mut total: u64 = 0;
        if let Some(instructions) = body.get("instructions").and_then(Value::as_str) {
            total = total
                .saturating_add(MESSAGE_OVERHEAD)
                .saturating_add(self.text(instructions));
        }
        let items = match body.get("input") {
            Some(Value::String(text)) => {
                return total
                    .saturating_add(MESSAGE_OVERHEAD)
                    .saturating_add(self.text(text));
            }
            Some(Value::Array(items)) => items.as_slice(),
            _ => &[],
        };
        let mut in_answer = false;
        for item in items {
            let kind = item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message");
            let role = item.get("role").and_then(Value::as_str);
            let from_model = matches!(kind, "reasoning" | "function_call")
                || (kind == "message" && role == Some("assistant"));
            if !from_model || !in_answer {
                total = total.saturating_add(MESSAGE_OVERHEAD);
            }
            in_answer = from_model;
            let texts = match kind {
                "message" => item
                    .get("content")
                    .map_or(0, |content| self.response_content(content)),
                "function_call" => ["name", "arguments"]
                    .iter()
                    .filter_map(|field| item.get(*field).and_then(Value::as_str))
                    .fold(0, |sum: u64, text| sum.saturating_add(self.text(text))),
                "function_call_output" => item
                    .get("output")
                    .map_or(0, |output| self.response_content(output)),
                "reasoning" => item
                    .get("summary")
                    .and_then(Value::as_array)
                    .map_or(0, |parts| {
                        parts
                            .iter()
                            .filter_map(|part| part.get("text").and_then(Value::as_str))
                            .fold(0, |sum: u64, text| sum.saturating_add(self.text(text)))
                    }),
                _ => 0,
            };
            total = total.saturating_add(texts);
        }
        total
    }

    /// A Responses content value: a string, or the `text` of its text
    /// parts (`input_text`, `output_text`).
    fn response_content(&self, content: &Value) -> u64 {
        match content {
            Value::String(text) => self.text(text),
            Value::Array(parts) => parts
                .iter()
                .filter(|part| {
                    matches!(
                        part.get("type").and_then(Value::as_str),
                        Some("input_text" | "output_text")
                    )
                })
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .fold(0, |sum: u64, text| sum.saturating_add(self.text(text))),
            _ => 0,
        }
    }

    /// A content value: a string, or an array of parts/blocks.
    fn content(&self, content: &Value) -> u64 {
        match content {
            Value::String(text) => self.text(text),
            Value::Array(blocks) => blocks
                .iter()
                .fold(0, |total, block| total.saturating_add(self.block(block))),
            _ => 0,
        }
    }

    /// One content part or block.
    fn block(&self, block: &Value) -> u64 {
        let text_field = |name: &str| {
            block
                .get(name)
                .and_then(Value::as_str)
                .map_or(0, |text| self.text(text))
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text_field("text"),
            Some("tool_result") => block.get("content").map_or(0, |content| {
                // Only text blocks count inside a tool result (no nesting).
                match content {
                    Value::String(text) => self.text(text),
                    Value::Array(parts) => parts
                        .iter()
                        .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                        .fold(0, |total, part| {
                            total.saturating_add(
                                part.get("text")
                                    .and_then(Value::as_str)
                                    .map_or(0, |text| self.text(text)),
                            )
                        }),
                    _ => 0,
                }
            }),
            Some("tool_use") => text_field("name")
                .saturating_add(block.get("input").map_or(0, |input| self.json(input))),
            Some("thinking") => text_field("thinking"),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_tokenizer_follows_the_model_family() {
        let o200k = tiktoken_rs::o200k_base_singleton();
        for model in [
            "gpt-4o",
            "GPT-4o-mini",
            "gpt-4.1-nano",
            "gpt-5",
            "o1-preview",
            "o3-mini",
            "o4-mini",
            "chatgpt-4o-latest",
        ] {
            assert!(
                matches!(tokenizer(model), Tokenizer::Bpe(bpe) if std::ptr::eq(bpe, o200k)),
                "{model}"
            );
        }
        for model in ["gpt-4", "gpt-3.5-turbo", "claude-sonnet-4", "", "scripted"] {
            assert!(matches!(tokenizer(model), Tokenizer::Chars), "{model}");
        }
        // 39 characters (not bytes: the umlauts are one each).
        let text = "Übermäßig lange Wörter, 12345 — indeed!";
        assert_eq!(text.chars().count(), 39);
        assert_eq!(
            count_text("gpt-4o", text),
            o200k.encode_ordinary(text).len() as u64
        );
        assert_eq!(count_text("claude", text), 12);
        assert_eq!(count_text("gpt-4o", ""), 0);
        assert_eq!(count_text("claude", ""), 0);
    }

    #[test]
    fn a_long_text_counts_the_same_when_it_is_counted_again() {
        let o200k = tiktoken_rs::o200k_base_singleton();
        let long = "fn step(input: &Input) -> Output { Output::Value(1) }\n".repeat(20);
        assert!(long.len() >= MEMO_MIN_BYTES);
        let first = count_text("gpt-5.1", &long);
        assert_eq!(first, raw(o200k, &long));
        assert_eq!(count_text("gpt-5.1", &long), first, "remembered");
        // Another text of the same length is counted for itself.
        let other = long
            .replace("Value(1)", "Value(1234567)")
            .replace("fn step", "f");
        assert_eq!(other.len(), long.len());
        assert_eq!(count_text("gpt-5.1", &other), raw(o200k, &other));
        assert_ne!(raw(o200k, &other), first);
    }

    #[test]
    fn prose_counts_more_than_cl100k_and_code_less() {
        // What makes the double honest: agentbus estimates with cl100k, and
        // a real provider's count is sometimes higher, sometimes lower.
        let cl100k = tiktoken_rs::cl100k_base_singleton();
        let prose = "The quick brown fox jumps over the lazy dog, and then it rests by the river for a while.";
        let code = "x[i]=y[j]+z[k]*2; 3.14159 != 2.71828 && 0x1F << 4;";
        assert!(count_text("scripted", prose) > raw(cl100k, prose));
        assert!(count_text("scripted", code) < raw(cl100k, code));
    }

    /// Tokens by the raw tokenizer, a route independent of [`Counter`].
    fn raw(bpe: &CoreBPE, text: &str) -> u64 {
        bpe.encode_ordinary(text).len() as u64
    }

    /// Characters / 3.5 rounded up, a route independent of [`Counter`].
    fn chars(text: &str) -> u64 {
        (text.chars().count() as u64 * 2).div_ceil(7)
    }

    #[test]
    fn openai_request_counts_every_piece() {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let tools = json!([{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]);
        let body = json!({
            "model": "gpt-4o-mini",
            "stream": true,
            "max_completion_tokens": 50,
            "tools": tools,
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "read a"}, {"type": "text", "text": "and b"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]},
            ],
        });
        // The array's JSON text as serde_json writes it: its keys sorted,
        // or in the order written when a crate of the build enables
        // serde_json's `preserve_order` (the ACP crate does).
        let tools_json = tools.to_string();
        assert!(
            [
                r#"[{"function":{"name":"read_file","parameters":{"type":"object"}},"type":"function"}]"#,
                r#"[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}]"#,
            ]
            .contains(&tools_json.as_str()),
            "{tools_json}"
        );
        let expected = 3
            + raw(bpe, &tools_json)
            + (4 + raw(bpe, "Be brief."))
            + (4 + raw(bpe, "read a") + raw(bpe, "and b"))
            + (4 + raw(bpe, "read_file") + raw(bpe, r#"{"path":"a"}"#))
            + (4 + raw(bpe, "alpha"))
            + 4;
        assert_eq!(count_request(Wire::OpenAi, &body), expected);
        assert_eq!(max_output_tokens(Wire::OpenAi, &body), 50);
    }

    #[test]
    fn anthropic_request_counts_every_piece() {
        let body = json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "stream": true,
            "system": [{"type": "text", "text": "be brief"}, {"type": "text", "text": "and kind"}],
            "messages": [
                {"role": "user", "content": "read a"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a", "max": 3}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "alpha"}]},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "beta"},
                    {"type": "text", "text": "thanks"},
                ]},
            ],
        });
        let expected = 3
            + (4 + chars("be brief") + chars("and kind"))
            + (4 + chars("read a"))
            + (4 + chars("hmm")
                + chars("Reading.")
                + chars("read_file")
                + chars(r#"{"max":3,"path":"a"}"#))
            + (4 + chars("alpha") + chars("beta") + chars("thanks"));
        assert_eq!(count_request(Wire::Anthropic, &body), expected);
        assert_eq!(max_output_tokens(Wire::Anthropic, &body), 1024);
    }

    #[test]
    fn responses_request_counts_every_piece_and_one_overhead_per_answer() {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let tools = json!([{"type": "function", "name": "read_file", "parameters": {"type": "object"}, "strict": false}]);
        let body = json!({
            "model": "gpt-5.1-codex",
            "stream": true,
            "max_output_tokens": 4000,
            "instructions": "Be brief.",
            "tools": tools,
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "read a"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
                ]},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "read it"}],
                 "encrypted_content": "gAAAAA-never-counted"},
                {"type": "message", "role": "assistant", "content": "Reading."},
                {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\":\"a\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "alpha"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done.", "annotations": []}]},
                {"role": "user", "content": "thanks"},
            ],
        });
        let expected = 3
            + raw(bpe, &tools.to_string())
            + (4 + raw(bpe, "Be brief."))
            + (4 + raw(bpe, "read a"))
            + (4 + raw(bpe, "read it")
                + raw(bpe, "Reading.")
                + raw(bpe, "read_file")
                + raw(bpe, r#"{"path":"a"}"#))
            + (4 + raw(bpe, "alpha"))
            + (4 + raw(bpe, "Done."))
            + (4 + raw(bpe, "thanks"));
        assert_eq!(count_request(Wire::Responses, &body), expected);
        assert_eq!(max_output_tokens(Wire::Responses, &body), 4000);
        let plain = json!({"model": "gpt-5.1-codex", "input": "hello there"});
        assert_eq!(
            count_request(Wire::Responses, &plain),
            3 + 4 + raw(bpe, "hello there")
        );
    }

    #[test]
    fn string_system_and_empty_tools() {
        let body = json!({
            "model": "claude-test",
            "system": "be brief",
            "tools": [],
            "messages": [{"role": "user", "content": "hi"}],
        });
        assert_eq!(
            count_request(Wire::Anthropic, &body),
            3 + 4 + chars("be brief") + 4 + chars("hi")
        );
        // `system` is not a top-level key of OpenAI requests.
        assert_eq!(count_request(Wire::OpenAi, &body), 3 + 4 + chars("hi"));
        assert_eq!(max_output_tokens(Wire::OpenAi, &body), 0);
    }

    #[test]
    fn a_text_over_the_output_cap_is_cut_where_it_fits() {
        let text = "Grüße aus Köln, twelve words of text that go on and on.";
        assert_eq!(cut_to("claude", text, 100), None);
        let cut = cut_to("claude", text, 5).expect("cut");
        assert!(text.starts_with(&cut));
        assert_eq!(count_text("claude", &cut), 5);
        assert_eq!(cut.chars().count(), 17, "5 tokens of 3.5 characters");
        let cut = cut_to("gpt-4o", text, 3).expect("cut");
        assert!(count_text("gpt-4o", &cut) <= 3 && text.starts_with(&cut));
        assert_eq!(cut_to("claude", text, 0).as_deref(), Some(""));
    }

    #[test]
    fn garbage_counts_what_it_can_without_panicking() {
        for body in [
            json!(null),
            json!([1, 2]),
            json!({"messages": 7, "tools": "x", "system": 3}),
            json!({"model": 5, "messages": [7, {"content": {"a": 1}}, {"tool_calls": [1, {"function": 2}]}]}),
            json!({"messages": [{"content": [3, {"type": "tool_result", "content": 4}, {"type": "tool_use"}]}]}),
            json!({"input": [7, {"type": "reasoning", "summary": 3}, {"type": "function_call", "name": 2}, {"content": {"a": 1}}]}),
            json!({"input": 5, "instructions": []}),
        ] {
            let openai = count_request(Wire::OpenAi, &body);
            let anthropic = count_request(Wire::Anthropic, &body);
            let responses = count_request(Wire::Responses, &body);
            assert!(openai >= 3 && anthropic >= 3 && responses >= 3, "{body}");
        }
        assert_eq!(
            max_output_tokens(Wire::OpenAi, &json!({"max_tokens": -1})),
            0
        );
        assert_eq!(
            max_output_tokens(
                Wire::OpenAi,
                &json!({"max_tokens": 7, "max_completion_tokens": 9})
            ),
            9
        );
    }
}
