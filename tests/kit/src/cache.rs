//! Prompt caching, as the providers do it, so that a client's cache figures
//! can be tested: `PromptCache::serve` is the one entry point, called for
//! every streamed answer of a script that counts tokens (see the script's
//! `prompt_caching`), and says how many of the request's input tokens were
//! read from the cache and how many written to it.
//!
//! **Anthropic** (explicit breakpoints). A request is a sequence of blocks:
//! each tool definition, then each `system` block (a string is one), then
//! each content block of each message (string content is one). A block
//! marked `"cache_control": {"type": "ephemeral"}` is a breakpoint; the
//! prefix up to it (the blocks compared as canonical JSON without their
//! `cache_control`, with the message boundaries, the model and — for
//! prefixes that reach into the messages — the `thinking` setting) is
//! written to the cache when it is at least [`MIN_CACHEABLE_TOKENS`] long,
//! and kept five minutes (an hour with `"ttl": "1h"`) after it was last
//! written or read (reading a prefix also keeps the cached prefixes at the
//! request's breakpoints within it). A later request reads the longest
//! cached prefix that ends at one of its breakpoints or at a block up to
//! [`LOOKBACK_BLOCKS`] blocks before one; it reports that prefix as
//! `cache_read_input_tokens`, what it writes beyond it (up to its last
//! breakpoint) as `cache_creation_input_tokens` (split into
//! `ephemeral_5m_input_tokens` and `ephemeral_1h_input_tokens` by the
//! breakpoint that ends each part), and only the rest as `input_tokens`. More than [`MAX_BREAKPOINTS`]
//! breakpoints, or one on a thinking block, are refused with HTTP 400
//! (`refusal`).
//!
//! **OpenAI** (automatic). A request of at least [`MIN_CACHEABLE_TOKENS`]
//! tokens is cached whole, its prefix at every block (each tool, then each
//! message) under the request's `model` and `prompt_cache_key` (requests
//! with different keys, or none, never share); a later request under the
//! same key reads its longest cached prefix, reported in steps of
//! [`OPENAI_CACHE_STEP`] tokens as `prompt_tokens_details.cached_tokens`
//! (`prompt_tokens` includes them). Entries live five minutes after their
//! last use.
//!
//! Token counts are [`count_request`]'s, of the request (or of a prefix of
//! it, cut at a block) without its `cache_control` fields: a cached prefix
//! costs what it would cost uncached. Time is the server clock's: real time
//! since the server started plus what a test skipped with
//! [`ScriptedModel::advance_clock`](crate::ScriptedModel::advance_clock),
//! so that expiry is tested without sleeping.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::tokens::count_request;
use crate::wire::Wire;

/// The shortest prefix either provider caches (Anthropic: 2,048 for some
/// Haiku models; this kit uses 1,024 for all).
pub const MIN_CACHEABLE_TOKENS: u64 = 1024;
/// The most blocks one Anthropic request may mark with `cache_control`.
pub const MAX_BREAKPOINTS: usize = 4;
/// How many blocks before a breakpoint Anthropic looks for a cached prefix.
pub const LOOKBACK_BLOCKS: usize = 20;
/// OpenAI reports cached tokens in steps of this many.
pub const OPENAI_CACHE_STEP: u64 = 128;

/// How long an entry lives after its last use without `"ttl": "1h"`.
const FIVE_MINUTES: Duration = Duration::from_secs(5 * 60);
const ONE_HOUR: Duration = Duration::from_secs(60 * 60);

/// The scripted model's time: real time since the server started, plus
/// what tests skipped.
#[derive(Debug)]
pub(crate) struct Clock {
    start: Instant,
    skipped: Mutex<Duration>,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            start: Instant::now(),
            skipped: Mutex::new(Duration::ZERO),
        }
    }

    /// Time since the server started, skips included.
    pub(crate) fn now(&self) -> Duration {
        self.start.elapsed() + *self.skipped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Move the clock `by` forward at once.
    pub(crate) fn advance(&self, by: Duration) {
        *self.skipped.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }
}

/// What the cache did for one request, in input tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Read from the cache.
    pub read: u64,
    /// Written with a five-minute lifetime (OpenAI: always 0).
    pub written_5m: u64,
    /// Written with a one-hour lifetime.
    pub written_1h: u64,
}

impl CacheUsage {
    /// Tokens written, whatever their lifetime.
    pub fn written(&self) -> u64 {
        self.written_5m + self.written_1h
    }
}

/// The cached prefixes, by key.
#[derive(Debug, Default)]
pub(crate) struct PromptCache {
    entries: HashMap<u64, Entry>,
    /// The tokens of prefixes counted before, by key (a prefix's count
    /// never changes): most requests repeat the last one's.
    counted: HashMap<u64, u64>,
}

/// The most counts [`PromptCache::counted`] keeps before it starts over.
const MAX_COUNTED: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Entry {
    expires: Duration,
    ttl: Duration,
}

/// One block of a request, for caching.
struct Block {
    /// Its canonical JSON (no `cache_control`).
    json: String,
    at: Position,
    /// Its breakpoint's lifetime, when it is one.
    breakpoint: Option<Duration>,
}

/// Where a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Position {
    Tool(usize),
    System(usize),
    /// Message, and block within it (0 for string content).
    Message(usize, usize),
    /// A message whole (OpenAI's blocks).
    WholeMessage(usize),
}

impl PromptCache {
    /// What caching does for a request of `wire` (its body as sent, marks
    /// included) whose whole input is `total` tokens, at time `now`:
    /// reads and refreshes the longest cached prefix the request may hit,
    /// writes what it asks to have cached.
    pub(crate) fn serve(
        &mut self,
        wire: Wire,
        body: &Value,
        total: u64,
        now: Duration,
    ) -> CacheUsage {
        self.entries.retain(|_, entry| entry.expires > now);
        match wire {
            Wire::Anthropic => self.serve_anthropic(body, total, now),
            Wire::OpenAi | Wire::Responses => self.serve_openai(wire, body, total, now),
        }
    }

    fn serve_anthropic(&mut self, body: &Value, total: u64, now: Duration) -> CacheUsage {
        let blocks = anthropic_blocks(body);
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|i| blocks[*i].breakpoint.is_some())
            .collect();
        if breakpoints.is_empty() {
            return CacheUsage::default();
        }
        let keys = prefix_keys(body, Wire::Anthropic, &blocks);
        // The longest cached prefix within some breakpoint's lookback.
        let hit = breakpoints
            .iter()
            .filter_map(|&b| {
                (b.saturating_sub(LOOKBACK_BLOCKS)..=b)
                    .rev()
                    .find(|j| self.entries.contains_key(&keys[*j]))
            })
            .max();
        let last = blocks.len() - 1;
        let mut tokens_at = |i: usize| {
            self.counted(
                Wire::Anthropic,
                keys[i],
                i == last,
                total,
                body,
                blocks[i].at,
            )
        };
        let hit_tokens = hit.map(&mut tokens_at);
        // Breakpoints past what was read write to the cache (their counts
        // are needed); those within it were used too, and are kept as long
        // as the longer prefix when they are cached.
        let writing: Vec<(usize, u64)> = breakpoints
            .iter()
            .filter(|&&b| hit.is_none_or(|hit| b > hit))
            .map(|&b| (b, tokens_at(b)))
            .collect();
        let mut usage = CacheUsage::default();
        let mut covered = 0;
        if let (Some(hit), Some(tokens)) = (hit, hit_tokens) {
            covered = tokens;
            usage.read = covered;
            for &b in breakpoints.iter().filter(|&&b| b <= hit) {
                if let Some(entry) = self.entries.get_mut(&keys[b]) {
                    entry.expires = entry.expires.max(now + entry.ttl);
                }
            }
            if let Some(entry) = self.entries.get_mut(&keys[hit]) {
                entry.expires = now + entry.ttl;
            }
        }
        for (b, tokens) in writing {
            if tokens < MIN_CACHEABLE_TOKENS {
                continue;
            }
            let ttl = blocks[b].breakpoint.unwrap_or(FIVE_MINUTES);
            let written = tokens.saturating_sub(covered);
            if ttl == ONE_HOUR {
                usage.written_1h += written;
            } else {
                usage.written_5m += written;
            }
            covered = covered.max(tokens);
            self.entries.insert(
                keys[b],
                Entry {
                    expires: now + ttl,
                    ttl,
                },
            );
        }
        usage
    }

    fn serve_openai(&mut self, wire: Wire, body: &Value, total: u64, now: Duration) -> CacheUsage {
        if total < MIN_CACHEABLE_TOKENS {
            return CacheUsage::default();
        }
        let blocks = openai_blocks(wire, body);
        let keys = prefix_keys(body, wire, &blocks);
        let hit = (0..keys.len())
            .rev()
            .find(|j| self.entries.contains_key(&keys[*j]));
        let mut usage = CacheUsage::default();
        if let Some(hit) = hit {
            let whole = hit + 1 == blocks.len();
            let common = self.counted(wire, keys[hit], whole, total, body, blocks[hit].at);
            if common >= MIN_CACHEABLE_TOKENS {
                usage.read = common / OPENAI_CACHE_STEP * OPENAI_CACHE_STEP;
            }
        }
        if let Some(last) = keys.last() {
            self.remember(*last, total);
        }
        for key in keys {
            self.entries.insert(
                key,
                Entry {
                    expires: now + FIVE_MINUTES,
                    ttl: FIVE_MINUTES,
                },
            );
        }
        usage
    }
}

impl PromptCache {
    /// The tokens of the prefix of `body` (of `wire`) through the block at
    /// `at` (whose key is `key`): `total` when it is the whole request,
    /// else a count made once per prefix.
    fn counted(
        &mut self,
        wire: Wire,
        key: u64,
        whole: bool,
        total: u64,
        body: &Value,
        at: Position,
    ) -> u64 {
        if whole {
            self.remember(key, total);
            return total;
        }
        if let Some(tokens) = self.counted.get(&key) {
            return *tokens;
        }
        let tokens = prefix_tokens(wire, body, at);
        self.remember(key, tokens);
        tokens
    }

    /// Keep the count of the prefix whose key is `key`: the next request
    /// usually reads this request whole.
    fn remember(&mut self, key: u64, tokens: u64) {
        if self.counted.len() >= MAX_COUNTED {
            self.counted.clear();
        }
        self.counted.insert(key, tokens);
    }
}

/// Why Anthropic would refuse this request's cache marks, in its words:
/// more than [`MAX_BREAKPOINTS`] of them (the API's own message), or one
/// on a thinking block (the API refuses it; its wording is this kit's).
pub(crate) fn refusal(body: &Value) -> Option<String> {
    let mut found = 0;
    let mut on_thinking = None;
    let mut count = |block: &Value, at: String| {
        if block.get("cache_control").is_some() {
            found += 1;
            if matches!(
                block.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            ) && on_thinking.is_none()
            {
                on_thinking = Some(at);
            }
        }
    };
    for (k, tool) in array(body, "tools").iter().enumerate() {
        count(tool, format!("tools.{k}"));
    }
    for (k, block) in array(body, "system").iter().enumerate() {
        count(block, format!("system.{k}"));
    }
    for (i, message) in array(body, "messages").iter().enumerate() {
        for (k, block) in array(message, "content").iter().enumerate() {
            count(block, format!("messages.{i}.content.{k}"));
            for (n, inner) in array(block, "content").iter().enumerate() {
                count(inner, format!("messages.{i}.content.{k}.content.{n}"));
            }
        }
    }
    if found > MAX_BREAKPOINTS {
        return Some(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {found}."
        ));
    }
    on_thinking.map(|at| format!("{at}.cache_control: Thinking blocks cannot be cached directly"))
}

/// The body as the providers count and compare it: without `cache_control`
/// fields (borrowed when it has none).
pub(crate) fn canonical(body: &Value) -> Cow<'_, Value> {
    if !has_marks(body) {
        return Cow::Borrowed(body);
    }
    let mut body = body.clone();
    for section in ["tools", "system"] {
        if let Some(blocks) = body.get_mut(section).and_then(Value::as_array_mut) {
            blocks.iter_mut().for_each(unmark);
        }
    }
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        for message in messages {
            if let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) {
                for block in blocks {
                    unmark(block);
                    if let Some(inner) = block.get_mut("content").and_then(Value::as_array_mut) {
                        inner.iter_mut().for_each(unmark);
                    }
                }
            }
        }
    }
    Cow::Owned(body)
}

/// Whether any block `canonical` unmarks carries a mark (looked up where
/// marks go: serialising a long body to search it was most of the kit's
/// time in long sessions).
fn has_marks(body: &Value) -> bool {
    let marked = |block: &Value| block.get("cache_control").is_some();
    let in_block = |block: &Value| marked(block) || array(block, "content").iter().any(marked);
    ["tools", "system"]
        .iter()
        .any(|section| array(body, section).iter().any(marked))
        || array(body, "messages")
            .iter()
            .any(|message| array(message, "content").iter().any(in_block))
}

fn unmark(block: &mut Value) {
    if let Some(map) = block.as_object_mut() {
        map.remove("cache_control");
    }
}

fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A breakpoint's lifetime, when `block` is one.
fn breakpoint(block: &Value) -> Option<Duration> {
    let mark = block.get("cache_control")?;
    Some(match mark.get("ttl").and_then(Value::as_str) {
        Some("1h") => ONE_HOUR,
        _ => FIVE_MINUTES,
    })
}

/// A block's canonical JSON: without its mark (nor its inner blocks').
fn canonical_json(block: &Value) -> String {
    let inner_marked = || {
        array(block, "content")
            .iter()
            .any(|inner| inner.get("cache_control").is_some())
    };
    if block.get("cache_control").is_none() && !inner_marked() {
        return block.to_string();
    }
    let mut block = block.clone();
    unmark(&mut block);
    if let Some(inner) = block.get_mut("content").and_then(Value::as_array_mut) {
        inner.iter_mut().for_each(unmark);
    }
    block.to_string()
}

/// The blocks of an Anthropic request: tools, system, messages' content.
fn anthropic_blocks(body: &Value) -> Vec<Block> {
    let mut blocks = Vec::new();
    let text = |text: &str| json!({"type": "text", "text": text});
    for (t, tool) in array(body, "tools").iter().enumerate() {
        blocks.push(Block {
            json: canonical_json(tool),
            at: Position::Tool(t),
            breakpoint: breakpoint(tool),
        });
    }
    match body.get("system") {
        Some(Value::String(system)) => blocks.push(Block {
            json: text(system).to_string(),
            at: Position::System(0),
            breakpoint: None,
        }),
        Some(Value::Array(system)) => {
            for (s, block) in system.iter().enumerate() {
                blocks.push(Block {
                    json: canonical_json(block),
                    at: Position::System(s),
                    breakpoint: breakpoint(block),
                });
            }
        }
        _ => {}
    }
    for (i, message) in array(body, "messages").iter().enumerate() {
        match message.get("content") {
            Some(Value::Array(content)) => {
                for (k, block) in content.iter().enumerate() {
                    blocks.push(Block {
                        json: canonical_json(block),
                        at: Position::Message(i, k),
                        breakpoint: breakpoint(block),
                    });
                }
            }
            Some(Value::String(content)) => blocks.push(Block {
                json: text(content).to_string(),
                at: Position::Message(i, 0),
                breakpoint: None,
            }),
            _ => {}
        }
    }
    blocks
}

/// The blocks of an OpenAI request: each tool, then (on the Responses
/// wire) the `instructions`, then each message (input item) whole.
fn openai_blocks(wire: Wire, body: &Value) -> Vec<Block> {
    let tools = array(body, "tools")
        .iter()
        .enumerate()
        .map(|(t, tool)| Block {
            json: tool.to_string(),
            at: Position::Tool(t),
            breakpoint: None,
        });
    let instructions = body
        .get("instructions")
        .filter(|_| wire == Wire::Responses)
        .map(|instructions| Block {
            json: instructions.to_string(),
            at: Position::System(0),
            breakpoint: None,
        });
    let messages = messages(wire, body)
        .iter()
        .enumerate()
        .map(|(i, message)| Block {
            json: message.to_string(),
            at: Position::WholeMessage(i),
            breakpoint: None,
        });
    tools.chain(instructions).chain(messages).collect()
}

/// The messages of a request: the Responses wire's are its `input` items.
fn messages(wire: Wire, body: &Value) -> &[Value] {
    match wire {
        Wire::Responses => array(body, "input"),
        Wire::OpenAi | Wire::Anthropic => array(body, "messages"),
    }
}

/// The cache key of each prefix: the request's scope (model; OpenAI's
/// `prompt_cache_key`), then the blocks through that one, with message
/// boundaries and roles, and the `thinking` setting ahead of the first
/// message block (changing it invalidates the messages' cache, not the
/// tools' or the system prompt's).
fn prefix_keys(body: &Value, wire: Wire, blocks: &[Block]) -> Vec<u64> {
    let mut hasher = DefaultHasher::new();
    body.get("model").map(Value::to_string).hash(&mut hasher);
    if wire != Wire::Anthropic {
        body.get("prompt_cache_key")
            .map(Value::to_string)
            .hash(&mut hasher);
    }
    let mut in_messages = false;
    let mut message = None;
    let mut keys = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block.at {
            Position::Tool(_) => 0u8.hash(&mut hasher),
            Position::System(_) => 1u8.hash(&mut hasher),
            Position::Message(i, _) | Position::WholeMessage(i) => {
                if !in_messages && wire == Wire::Anthropic {
                    body.get("thinking").map(Value::to_string).hash(&mut hasher);
                }
                in_messages = true;
                if message != Some(i) {
                    message = Some(i);
                    2u8.hash(&mut hasher);
                    messages(wire, body)
                        .get(i)
                        .and_then(|m| m.get("role").or_else(|| m.get("type")))
                        .map(Value::to_string)
                        .hash(&mut hasher);
                }
                3u8.hash(&mut hasher);
            }
        }
        block.json.hash(&mut hasher);
        keys.push(hasher.clone().finish());
    }
    keys
}

/// The input tokens of the request cut after the block at `at`, without
/// marks, counted as [`count_request`] counts a whole one.
fn prefix_tokens(wire: Wire, body: &Value, at: Position) -> u64 {
    let mut prefix = Map::new();
    if let Some(model) = body.get("model") {
        prefix.insert("model".into(), model.clone());
    }
    let tools = array(body, "tools");
    let messages = messages(wire, body);
    let first = |values: &[Value], n: usize| Value::Array(values.iter().take(n).cloned().collect());
    // The Responses wire: instructions and input items.
    if wire == Wire::Responses {
        prefix.insert("tools".into(), Value::from(tools));
        if let (Some(instructions), false) =
            (body.get("instructions"), matches!(at, Position::Tool(_)))
        {
            prefix.insert("instructions".into(), instructions.clone());
        }
        match at {
            Position::Tool(t) => {
                prefix.insert("tools".into(), first(tools, t + 1));
            }
            Position::Message(i, _) | Position::WholeMessage(i) => {
                prefix.insert("input".into(), first(messages, i + 1));
            }
            Position::System(_) => {}
        }
        return count_request(wire, &Value::Object(prefix));
    }
    match at {
        Position::Tool(t) => {
            prefix.insert("tools".into(), first(tools, t + 1));
        }
        Position::System(s) => {
            prefix.insert("tools".into(), Value::from(tools));
            let system = match body.get("system") {
                Some(Value::Array(system)) => first(system, s + 1),
                Some(other) => other.clone(),
                None => Value::Null,
            };
            prefix.insert("system".into(), system);
        }
        Position::Message(i, _) | Position::WholeMessage(i) => {
            prefix.insert("tools".into(), Value::from(tools));
            if let Some(system) = body.get("system") {
                prefix.insert("system".into(), system.clone());
            }
            let mut kept = first(messages, i);
            if let (Some(message), Value::Array(kept)) = (messages.get(i), &mut kept) {
                let mut message = message.clone();
                if let (Position::Message(_, k), Some(content)) =
                    (at, message.get_mut("content").and_then(Value::as_array_mut))
                {
                    content.truncate(k + 1);
                }
                kept.push(message);
            }
            prefix.insert("messages".into(), kept);
        }
    }
    count_request(wire, &canonical(&Value::Object(prefix)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Anthropic request: `tools` tools, a long system prompt, and the
    /// given messages; every block `marks` names gets a mark.
    fn request(messages: Value) -> Value {
        json!({
            "model": "claude-test",
            "max_tokens": 1000,
            "stream": true,
            "tools": [{"name": "read_file", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
            "system": [{"type": "text", "text": "be careful ".repeat(600), "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        })
    }

    #[test]
    fn the_canonical_body_has_no_marks_and_counts_as_the_unmarked_one() {
        let marked = request(json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
        ]}]));
        let canonical = canonical(&marked);
        assert!(!canonical.to_string().contains("cache_control"));
        let unmarked = json!({
            "model": "claude-test", "max_tokens": 1000, "stream": true,
            "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
            "system": [{"type": "text", "text": "be careful ".repeat(600)}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        });
        assert_eq!(*canonical, unmarked);
        let plain = json!({"messages": []});
        assert!(matches!(super::canonical(&plain), Cow::Borrowed(_)));
    }

    #[test]
    fn prefixes_count_what_a_whole_request_cut_there_counts() {
        let body = request(json!([
            {"role": "user", "content": "question"},
            {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
        ]));
        let whole = count_request(Wire::Anthropic, &canonical(&body));
        let last = prefix_tokens(Wire::Anthropic, &body, Position::Message(1, 0));
        assert_eq!(last, whole);
        let system = prefix_tokens(Wire::Anthropic, &body, Position::System(0));
        let tools = prefix_tokens(Wire::Anthropic, &body, Position::Tool(0));
        assert!(tools < system && system < last, "{tools} {system} {last}");
    }

    #[test]
    fn more_than_four_marks_are_refused_in_the_apis_words() {
        let mark = json!({"type": "ephemeral"});
        let body = request(json!([
            {"role": "user", "content": [
                {"type": "text", "text": "a", "cache_control": mark},
                {"type": "text", "text": "b", "cache_control": mark},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "c"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": [
                {"type": "text", "text": "d", "cache_control": mark},
            ]}]},
        ]));
        assert_eq!(
            refusal(&body).as_deref(),
            Some("A maximum of 4 blocks with cache_control may be provided. Found 5.")
        );
        let four = request(json!([{"role": "user", "content": [
            {"type": "text", "text": "a", "cache_control": mark},
            {"type": "text", "text": "b", "cache_control": mark},
        ]}]));
        assert_eq!(refusal(&four), None);
    }

    #[test]
    fn the_clock_moves_when_told() {
        let clock = Clock::new();
        let before = clock.now();
        clock.advance(Duration::from_secs(600));
        assert!(clock.now() >= before + Duration::from_secs(600));
    }
}
