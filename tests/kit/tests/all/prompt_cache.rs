//! Prompt caching as the providers do it: Anthropic's prefixes up to
//! `cache_control` breakpoints, read back within a 20-block lookback and
//! kept five minutes (an hour with `"ttl": "1h"`) on a clock the test moves;
//! OpenAI's automatic prefix caching by `prompt_cache_key`, reported in
//! steps of 128, on both of its wires; and the 400s for what Anthropic refuses about caching and
//! thinking.

use std::time::Duration;

use crate::support::{Frame, post};
use agentbus_testkit::{CacheUsage, Script, ScriptedModel, Wire, count_request};
use serde_json::{Value, json};

/// A server answering `n` requests with "ok", caching prompts.
async fn caching_server(n: usize) -> ScriptedModel {
    let script = format!(
        "prompt_caching = true\n{}",
        "[[response]]\ntext = 'ok'\n".repeat(n)
    );
    ScriptedModel::start(Script::from_toml_str(&script).expect("script"))
        .await
        .expect("server")
}

fn mark() -> Value {
    json!({"type": "ephemeral"})
}

/// An Anthropic request with a tool and a long system prompt (both marked,
/// about 1,800 tokens together) and `messages`.
fn anthropic(messages: Value) -> Value {
    json!({
        "model": "claude-opus-4-7",
        "max_tokens": 1000,
        "stream": true,
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}, "cache_control": mark()}],
        "system": [{"type": "text", "text": "Read before you answer. ".repeat(300), "cache_control": mark()}],
        "messages": messages,
    })
}

/// The input usage of an Anthropic stream (its `message_start`).
fn usage_of(frames: &[Frame]) -> Value {
    let start = frames
        .iter()
        .find(|f| f.event.as_deref() == Some("message_start"))
        .expect("a message_start");
    start.json()["message"]["usage"].clone()
}

/// (input, cache read, cache written) of an Anthropic stream's usage.
fn figures(frames: &[Frame]) -> (u64, u64, u64) {
    let usage = usage_of(frames);
    let n = |key: &str| {
        usage[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {usage}"))
    };
    (
        n("input_tokens"),
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    )
}

/// The count of `body` without its marks, as the server counts it.
fn tokens(body: &Value) -> u64 {
    fn unmark(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(unmark);
            }
            Value::Array(items) => items.iter_mut().for_each(unmark),
            _ => {}
        }
    }
    let mut body = body.clone();
    unmark(&mut body);
    count_request(Wire::Anthropic, &body)
}

fn text(text: &str, marked: bool) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if marked {
        block["cache_control"] = mark();
    }
    block
}

/// The first turn of a conversation, and the request after its answer.
fn two_requests() -> (Value, Value) {
    let first = anthropic(json!([{"role": "user", "content": [text("what is in a.txt?", true)]}]));
    let second = anthropic(json!([
        {"role": "user", "content": [text("what is in a.txt?", false)]},
        {"role": "assistant", "content": [text("Let me look.", false)]},
        {"role": "user", "content": [text("go on", true)]},
    ]));
    (first, second)
}

#[tokio::test]
async fn anthropic_the_next_request_reads_what_the_last_one_wrote() {
    let server = caching_server(3).await;
    let (first, second) = two_requests();
    let reply = post(server.addr(), "/v1/messages", &first).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let written = tokens(&first);
    assert!(written > 1024, "a prefix worth caching: {written}");
    assert_eq!(
        figures(&reply.frames()),
        (0, 0, written),
        "the first request writes everything up to its last mark"
    );
    let usage = usage_of(&reply.frames());
    assert_eq!(
        usage["cache_creation"]["ephemeral_5m_input_tokens"],
        written
    );
    assert_eq!(usage["cache_creation"]["ephemeral_1h_input_tokens"], 0);

    let reply = post(server.addr(), "/v1/messages", &second).await;
    let whole = tokens(&second);
    assert_eq!(
        figures(&reply.frames()),
        (0, written, whole - written),
        "the second reads the first's prefix and writes only what it adds"
    );
    // The same request again reads it all.
    let reply = post(server.addr(), "/v1/messages", &second).await;
    assert_eq!(figures(&reply.frames()), (0, whole, 0));
    let recorded: Vec<Option<CacheUsage>> = server.requests().iter().map(|r| r.cache).collect();
    assert_eq!(recorded[2].map(|c| c.read), Some(whole));
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}

#[tokio::test]
async fn anthropic_a_prefix_is_kept_five_minutes_after_its_last_use_or_an_hour_with_ttl() {
    let server = caching_server(6).await;
    let (first, second) = two_requests();
    post(server.addr(), "/v1/messages", &first).await;
    server.advance_clock(Duration::from_secs(4 * 60));
    let reply = post(server.addr(), "/v1/messages", &first).await;
    assert_eq!(
        figures(&reply.frames()).1,
        tokens(&first),
        "read: and so kept"
    );
    server.advance_clock(Duration::from_secs(4 * 60));
    let reply = post(server.addr(), "/v1/messages", &second).await;
    assert_eq!(
        figures(&reply.frames()).1,
        tokens(&first),
        "eight minutes after writing, four after the last read"
    );
    server.advance_clock(Duration::from_secs(5 * 60 + 1));
    let reply = post(server.addr(), "/v1/messages", &second).await;
    assert_eq!(
        figures(&reply.frames()),
        (0, 0, tokens(&second)),
        "expired: written again"
    );

    // With "ttl": "1h" an hour goes by before it expires.
    let hourly = |body: &Value| {
        let text = body.to_string().replace(
            r#""cache_control":{"type":"ephemeral"}"#,
            r#""cache_control":{"type":"ephemeral","ttl":"1h"}"#,
        );
        serde_json::from_str::<Value>(&text).expect("JSON")
    };
    let third = hourly(
        &json!({"model": "claude-opus-4-7", "max_tokens": 10, "stream": true,
        "system": [{"type": "text", "text": "Hourly. ".repeat(700), "cache_control": mark()}],
        "messages": [{"role": "user", "content": "hi"}]}),
    );
    let reply = post(server.addr(), "/v1/messages", &third).await;
    let (_, read, written) = figures(&reply.frames());
    assert_eq!((read, written > 1024), (0, true));
    assert_eq!(
        usage_of(&reply.frames())["cache_creation"]["ephemeral_1h_input_tokens"],
        written
    );
    server.advance_clock(Duration::from_secs(50 * 60));
    let reply = post(server.addr(), "/v1/messages", &third).await;
    assert_eq!(figures(&reply.frames()).1, written, "fifty minutes later");
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}

#[tokio::test]
async fn anthropic_a_short_prefix_is_not_cached() {
    let server = caching_server(2).await;
    let short = json!({"model": "claude-opus-4-7", "max_tokens": 10, "stream": true,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": mark()}],
        "messages": [{"role": "user", "content": [text("hi", true)]}]});
    for _ in 0..2 {
        let reply = post(server.addr(), "/v1/messages", &short).await;
        assert_eq!(figures(&reply.frames()), (tokens(&short), 0, 0));
    }
}

/// A conversation whose last tool round adds `calls` calls and results;
/// `bridge` marks the end of the previous request too.
fn long_round(calls: usize, bridge: bool) -> (Value, Value) {
    let first = anthropic(json!([{"role": "user", "content": [text("look at everything", true)]}]));
    let uses: Vec<Value> = (0..calls)
        .map(|n| json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": "read_file", "input": {"path": format!("f{n}")}}))
        .collect();
    let mut results: Vec<Value> = (0..calls)
        .map(|n| json!({"type": "tool_result", "tool_use_id": format!("toolu_{n}"), "content": format!("file {n}")}))
        .collect();
    if let Some(last) = results.last_mut() {
        last["cache_control"] = mark();
    }
    let second = anthropic(json!([
        {"role": "user", "content": [text("look at everything", bridge)]},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]));
    (first, second)
}

#[tokio::test]
async fn anthropic_a_mark_looks_back_twenty_blocks_for_a_cached_prefix() {
    // 10 calls and 10 results: the previous prefix is 20 blocks back.
    let server = caching_server(2).await;
    let (first, second) = long_round(10, false);
    post(server.addr(), "/v1/messages", &first).await;
    let reply = post(server.addr(), "/v1/messages", &second).await;
    assert_eq!(
        figures(&reply.frames()).1,
        tokens(&first),
        "found by looking back"
    );

    // 11 and 11: 22 blocks back, out of reach without a mark there: only
    // the tools and the system prompt (marked themselves) are read...
    let server = caching_server(2).await;
    let (first, second) = long_round(11, false);
    post(server.addr(), "/v1/messages", &first).await;
    let reply = post(server.addr(), "/v1/messages", &second).await;
    let stable = tokens(&anthropic(json!([])));
    assert_eq!(
        figures(&reply.frames()),
        (0, stable, tokens(&second) - stable)
    );

    // ...and read again with one.
    let server = caching_server(2).await;
    let (first, second) = long_round(11, true);
    post(server.addr(), "/v1/messages", &first).await;
    let reply = post(server.addr(), "/v1/messages", &second).await;
    let (_, read, written) = figures(&reply.frames());
    assert_eq!(read, tokens(&first));
    assert_eq!(written, tokens(&second) - read);
}

#[tokio::test]
async fn anthropic_a_change_before_a_prefix_misses_it() {
    let server = caching_server(3).await;
    let (first, second) = two_requests();
    post(server.addr(), "/v1/messages", &first).await;
    // Another system prompt: nothing after it is the same prefix.
    let mut other = second.clone();
    other["system"][0]["text"] = json!("Think first. ".repeat(400));
    let reply = post(server.addr(), "/v1/messages", &other).await;
    assert_eq!(figures(&reply.frames()).1, 0);
    // Thinking switched on: the tools and the system prompt still hit,
    // the messages do not.
    let mut thinking = second.clone();
    thinking["thinking"] = json!({"type": "adaptive"});
    let reply = post(server.addr(), "/v1/messages", &thinking).await;
    let (_, read, _) = figures(&reply.frames());
    assert_eq!(read, tokens(&anthropic(json!([]))));
    assert!(read < tokens(&first));
}

#[tokio::test]
async fn anthropic_more_than_four_marks_are_refused_with_its_400() {
    let server = caching_server(1).await;
    let body = anthropic(json!([{"role": "user", "content": [
        text("a", true), text("b", true), text("c", true),
    ]}]));
    let reply = post(server.addr(), "/v1/messages", &body).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json(),
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "A maximum of 4 blocks with cache_control may be provided. Found 5."}})
    );
    let request = &server.requests()[0];
    assert_eq!(request.response, None, "no response consumed");
    assert!(
        request.violations[0].starts_with("cache_control: A maximum of 4"),
        "{:?}",
        request.violations
    );
    assert_eq!(server.remaining_responses(), 1);
}

#[tokio::test]
async fn thinking_a_model_does_not_take_is_refused_with_its_400() {
    let server = ScriptedModel::start(
        Script::from_toml_str("[[response]]\nthinking = 'hmm'\ntext = 'ok'\n").expect("script"),
    )
    .await
    .expect("server");
    let request = |model: &str, thinking: Value| {
        json!({"model": model, "max_tokens": 4096, "stream": true, "thinking": thinking,
               "messages": [{"role": "user", "content": "hi"}]})
    };
    let budget = json!({"type": "enabled", "budget_tokens": 2048});
    let reply = post(
        server.addr(),
        "/v1/messages",
        &request("claude-opus-4-7", budget),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json()["error"]["message"],
        "\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior."
    );
    let adaptive = json!({"type": "adaptive"});
    let reply = post(
        server.addr(),
        "/v1/messages",
        &request("claude-sonnet-4-5-20250929", adaptive.clone()),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json()["error"]["message"],
        "adaptive thinking is not supported on this model"
    );
    // Adaptive thinking on a model that takes it thinks as scripted.
    let reply = post(
        server.addr(),
        "/v1/messages",
        &request("claude-opus-4-7", adaptive),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.text().contains(r#""type":"thinking_delta""#),
        "{}",
        reply.text()
    );
    assert_eq!(server.violations().len(), 2, "{:#?}", server.violations());
}

/// An OpenAI request: a long developer prompt, then `turns` questions and
/// answers, then a last question.
fn openai(turns: usize, key: Option<&str>) -> Value {
    let mut messages =
        vec![json!({"role": "developer", "content": "Answer from the files. ".repeat(300)})];
    for n in 0..turns {
        messages.push(json!({"role": "user", "content": format!("question {n}")}));
        messages.push(json!({"role": "assistant", "content": format!("answer {n}")}));
    }
    messages.push(json!({"role": "user", "content": "one more"}));
    let mut body = json!({"model": "gpt-4.1", "stream": true,
        "stream_options": {"include_usage": true}, "messages": messages});
    if let Some(key) = key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

/// OpenAI's prompt tokens and cached tokens.
fn openai_figures(frames: &[Frame]) -> (u64, u64) {
    let usage = frames
        .iter()
        .filter(|frame| frame.data != "[DONE]")
        .map(Frame::json)
        .rfind(|chunk| chunk["usage"].is_object())
        .expect("a usage chunk")["usage"]
        .clone();
    (
        usage["prompt_tokens"].as_u64().expect("prompt_tokens"),
        usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .expect("cached_tokens"),
    )
}

#[tokio::test]
async fn openai_caches_prefixes_by_key_and_reports_them_in_steps_of_128() {
    let server = caching_server(6).await;
    let first = openai(1, Some("session-1"));
    let reply = post(server.addr(), "/v1/chat/completions", &first).await;
    let whole = count_request(Wire::OpenAi, &first);
    assert_eq!(openai_figures(&reply.frames()), (whole, 0));

    let second = openai(2, Some("session-1"));
    let reply = post(server.addr(), "/v1/chat/completions", &second).await;
    let (prompt, cached) = openai_figures(&reply.frames());
    assert_eq!(
        prompt,
        count_request(Wire::OpenAi, &second),
        "cached tokens are prompt tokens"
    );
    // The common prefix: the first request but its last message.
    let mut common = first.clone();
    common["messages"].as_array_mut().expect("messages").pop();
    let common = count_request(Wire::OpenAi, &common);
    assert_eq!(cached, common / 128 * 128);
    assert!(cached >= 1024, "{cached}");

    // Another key (or none) shares nothing.
    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &openai(2, Some("session-2")),
    )
    .await;
    assert_eq!(openai_figures(&reply.frames()).1, 0);
    let reply = post(server.addr(), "/v1/chat/completions", &openai(2, None)).await;
    assert_eq!(openai_figures(&reply.frames()).1, 0);

    // Five idle minutes and it is gone.
    server.advance_clock(Duration::from_secs(5 * 60 + 1));
    let reply = post(server.addr(), "/v1/chat/completions", &second).await;
    assert_eq!(openai_figures(&reply.frames()).1, 0);
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}

#[tokio::test]
async fn a_scripts_usage_wins_and_prompt_caching_false_caches_nothing() {
    let script = "prompt_caching = true\n\
        [[response]]\ntext = 'a'\n\
        [[response]]\ntext = 'b'\nusage = { input_tokens = 7, cache_read_input_tokens = 3 }\n";
    let server = ScriptedModel::start(Script::from_toml_str(script).expect("script"))
        .await
        .expect("server");
    let (first, _) = two_requests();
    post(server.addr(), "/v1/messages", &first).await;
    let reply = post(server.addr(), "/v1/messages", &first).await;
    assert_eq!(figures(&reply.frames()), (7, 3, 0));
    assert_eq!(
        server.requests()[1].cache.map(|c| c.read),
        Some(tokens(&first)),
        "the cache itself was read"
    );

    let off = "context_window = 100000\nprompt_caching = false\n[[response]]\ntext = 'a'\n[[response]]\ntext = 'b'\n";
    let server = ScriptedModel::start(Script::from_toml_str(off).expect("script"))
        .await
        .expect("server");
    for _ in 0..2 {
        let reply = post(server.addr(), "/v1/messages", &first).await;
        assert_eq!(figures(&reply.frames()), (tokens(&first), 0, 0));
    }
    assert_eq!(server.requests()[1].cache, None);
}

/// A Responses request: long instructions, `turns` earlier exchanges, one
/// more question.
fn responses(turns: usize, key: &str) -> Value {
    let mut input = Vec::new();
    for n in 0..turns {
        input.push(json!({"role": "user", "content": format!("question {n}")}));
        input.push(json!({"role": "assistant", "content": format!("answer {n}")}));
    }
    input.push(json!({"role": "user", "content": "one more"}));
    json!({"model": "gpt-4.1", "stream": true, "store": false,
        "instructions": "Answer from the files. ".repeat(300),
        "input": input, "prompt_cache_key": key})
}

/// The Responses wire's input tokens and cached tokens, from
/// `response.completed`.
fn responses_figures(frames: &[Frame]) -> (u64, u64) {
    let usage = frames
        .iter()
        .map(Frame::json)
        .find(|event| event["type"] == "response.completed")
        .expect("response.completed")["response"]["usage"]
        .clone();
    (
        usage["input_tokens"].as_u64().expect("input_tokens"),
        usage["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .expect("cached_tokens"),
    )
}

#[tokio::test]
async fn responses_caches_prefixes_by_key_as_the_chat_wire_does() {
    let server = caching_server(3).await;
    let first = responses(1, "session-1");
    let reply = post(server.addr(), "/v1/responses", &first).await;
    let whole = count_request(Wire::Responses, &first);
    assert_eq!(responses_figures(&reply.frames()), (whole, 0));

    let second = responses(2, "session-1");
    let reply = post(server.addr(), "/v1/responses", &second).await;
    let (input, cached) = responses_figures(&reply.frames());
    assert_eq!(
        input,
        count_request(Wire::Responses, &second),
        "cached tokens are input tokens"
    );
    let mut common = first.clone();
    common["input"].as_array_mut().expect("input").pop();
    let common = count_request(Wire::Responses, &common);
    assert_eq!(cached, common / 128 * 128);
    assert!(cached >= 1024, "{cached}");

    let reply = post(server.addr(), "/v1/responses", &responses(2, "session-2")).await;
    assert_eq!(
        responses_figures(&reply.frames()).1,
        0,
        "another key shares nothing"
    );
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}
