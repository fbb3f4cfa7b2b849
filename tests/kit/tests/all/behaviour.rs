//! The scripted behaviours beyond plain replies: stalls and drops, `match`
//! routing, templates, HTTP errors, raw fixtures, exhaustion, and the
//! recording/waiting API tests rely on.

use crate::support::{Frame, post, read_frames, send_request, within};
use agentbus_testkit::{Script, ScriptedModel, fixtures_dir};
use serde_json::{Value, json};

fn script(toml: &str) -> Script {
    Script::from_toml_str(toml).expect("valid script")
}

fn fixture_script(name: &str) -> Script {
    Script::from_file(fixtures_dir().join("scripts").join(name)).expect("valid fixture script")
}

/// Requests offer `read_file`, the tool the fixture scripts call (a model
/// only calls offered tools).
fn openai_request(messages: Value) -> Value {
    json!({"model": "m", "stream": true, "messages": messages,
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]})
}

fn anthropic_request(messages: Value) -> Value {
    json!({"model": "m", "max_tokens": 100, "stream": true, "messages": messages,
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}]})
}

/// The text of an OpenAI stream.
fn openai_text(frames: &[Frame]) -> String {
    frames
        .iter()
        .filter(|frame| frame.data != "[DONE]")
        .filter_map(|frame| {
            frame.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// The text of an Anthropic stream.
fn anthropic_text(frames: &[Frame]) -> String {
    frames
        .iter()
        .filter_map(|frame| frame.json()["delta"]["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn stall_after_chunks_records_client_disconnect() {
    let server = ScriptedModel::start(fixture_script("stall_then_reply.toml"))
        .await
        .unwrap();
    let body = openai_request(json!([{"role": "user", "content": "hi"}]));
    let mut stream = send_request(
        server.addr(),
        "POST",
        "/v1/chat/completions",
        &[],
        body.to_string().as_bytes(),
    )
    .await;
    let partial = read_frames(&mut stream, 2).await;
    assert_eq!(partial.status, 200);
    assert!(!partial.complete);
    assert_eq!(partial.frames().len(), 2);
    assert_eq!(server.disconnects(), 0, "the client is still there");

    drop(stream);
    within("the disconnect", server.wait_for_disconnects(1)).await;
    assert_eq!(server.disconnects(), 1);

    // The retry gets the next response.
    let reply = post(server.addr(), "/v1/chat/completions", &body).await;
    assert!(reply.complete);
    assert_eq!(openai_text(&reply.frames()), "Answer after the stall.");
}

#[tokio::test]
async fn drop_after_chunks_aborts_the_connection() {
    let server = ScriptedModel::start(script(
        "[[response]]\ntext = 'abcdef'\ndrop_after_chunks = 3",
    ))
    .await
    .unwrap();
    let body = anthropic_request(json!([{"role": "user", "content": "hi"}]));
    let reply = post(server.addr(), "/v1/messages", &body).await;
    assert_eq!(reply.status, 200);
    assert!(!reply.complete, "the stream must not end properly");
    let frames = reply.frames();
    let events: Vec<_> = frames
        .iter()
        .map(|frame| frame.event.as_deref().unwrap())
        .collect();
    assert_eq!(events, ["message_start", "content_block_start", "ping"]);
    assert_eq!(server.disconnects(), 0, "only stalls count disconnects");
}

#[tokio::test]
async fn match_routes_by_last_user_message() {
    let mut toml =
        std::fs::read_to_string(fixtures_dir().join("scripts/two_sessions.toml")).unwrap();
    toml.push_str("\n[[response]]\ntext = 'anything else'\n");
    let server = ScriptedModel::start(script(&toml)).await.unwrap();

    // beta first although its response comes second in the script.
    let beta = openai_request(json!([{"role": "user", "content": "session beta"}]));
    let reply = post(server.addr(), "/v1/chat/completions", &beta).await;
    assert_eq!(openai_text(&reply.frames()), "beta answer");

    let other = openai_request(json!([{"role": "user", "content": "gamma"}]));
    let reply = post(server.addr(), "/v1/chat/completions", &other).await;
    assert_eq!(openai_text(&reply.frames()), "anything else");

    // Anthropic, mid tool round: the last user message holds only a
    // tool_result, so routing uses the prompt before it.
    let alpha = anthropic_request(json!([
        {"role": "user", "content": [{"type": "text", "text": "session alpha"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]));
    let reply = post(server.addr(), "/v1/messages", &alpha).await;
    assert_eq!(anthropic_text(&reply.frames()), "alpha answer");

    let served: Vec<_> = server
        .requests()
        .iter()
        .map(|request| request.response)
        .collect();
    assert_eq!(served, [Some(1), Some(2), Some(0)]);
    assert_eq!(server.remaining_responses(), 0);
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}

#[tokio::test]
async fn exhausted_script_answers_500_and_records_a_problem() {
    let server = ScriptedModel::start(fixture_script("plain_reply.toml"))
        .await
        .unwrap();
    let body = openai_request(json!([{"role": "user", "content": "hi"}]));
    let reply = post(server.addr(), "/v1/chat/completions", &body).await;
    assert_eq!(
        openai_text(&reply.frames()),
        "Hello from the scripted model."
    );

    let reply = post(server.addr(), "/v1/chat/completions", &body).await;
    assert_eq!(reply.status, 500);
    assert_eq!(
        reply.json()["error"]["message"],
        "scripted model: script exhausted after 1 responses"
    );
    assert_eq!(
        server.problems(),
        [
            "request 1 (POST /v1/chat/completions): scripted model: script exhausted after 1 responses"
        ]
    );
    assert!(server.violations().is_empty());
}

#[tokio::test]
async fn template_uses_the_last_tool_result() {
    let server = ScriptedModel::start(fixture_script("one_tool_round.toml"))
        .await
        .unwrap();
    let first = openai_request(json!([{"role": "user", "content": "what is in a.txt?"}]));
    let reply = post(server.addr(), "/v1/chat/completions", &first).await;
    assert_eq!(openai_text(&reply.frames()), "Let me look.");

    let second = openai_request(json!([
        {"role": "user", "content": "what is in a.txt?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "forty-two"},
    ]));
    let reply = post(server.addr(), "/v1/chat/completions", &second).await;
    assert_eq!(openai_text(&reply.frames()), "The file says: forty-two");
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
    assert!(server.problems().is_empty(), "{:#?}", server.problems());
}

#[tokio::test]
async fn protocol_violations_are_recorded_per_request() {
    let server = ScriptedModel::start(script("[[response]]\ntext = 'a'\n[[response]]\ntext = 'b'"))
        .await
        .unwrap();
    let valid = openai_request(json!([{"role": "user", "content": "hi"}]));
    let orphan = openai_request(json!([
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "ghost", "content": "x"},
    ]));
    assert_eq!(
        post(server.addr(), "/v1/chat/completions", &valid)
            .await
            .status,
        200
    );
    // Violations are recorded, but the scripted model still answers.
    assert_eq!(
        post(server.addr(), "/v1/chat/completions", &orphan)
            .await
            .status,
        200
    );
    let requests = server.requests();
    assert!(requests[0].violations.is_empty());
    assert_eq!(requests[1].violations.len(), 1);
    assert_eq!(
        server.violations(),
        [
            "request 1 (POST /v1/chat/completions): messages[1]: tool message answers `ghost`, \
          which is not a tool call of the preceding assistant message"
        ]
    );
}

#[tokio::test]
async fn http_error_responses_are_served_verbatim() {
    let server = ScriptedModel::start(fixture_script("rate_limited_then_reply.toml"))
        .await
        .unwrap();
    let body = anthropic_request(json!([{"role": "user", "content": "hi"}]));
    let reply = post(server.addr(), "/v1/messages", &body).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.json()["error"]["message"], "rate limited");

    let reply = post(server.addr(), "/v1/messages", &body).await;
    assert_eq!(reply.status, 200);
    assert_eq!(anthropic_text(&reply.frames()), "Answer after the retry.");
}

#[tokio::test]
async fn fixtures_are_served_byte_for_byte() {
    let server = ScriptedModel::start(fixture_script("garbage_stream.toml"))
        .await
        .unwrap();
    let body = openai_request(json!([{"role": "user", "content": "hi"}]));
    let reply = post(server.addr(), "/v1/chat/completions", &body).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let expected = std::fs::read(fixtures_dir().join("openai/garbage.sse")).unwrap();
    assert_eq!(reply.body, expected);
}

#[tokio::test]
async fn wait_for_requests_sees_concurrent_calls() {
    let server = ScriptedModel::start(script("[[response]]\n[[response]]\n[[response]]\n"))
        .await
        .unwrap();
    let addr = server.addr();
    let clients: Vec<_> = (0..3)
        .map(|n| {
            tokio::spawn(async move {
                let body =
                    anthropic_request(json!([{"role": "user", "content": format!("client {n}")}]));
                post(addr, "/v1/messages", &body).await.status
            })
        })
        .collect();
    within("three requests", server.wait_for_requests(3)).await;
    for client in clients {
        assert_eq!(within("a client", client).await.unwrap(), 200);
    }
    let mut served: Vec<_> = server
        .requests()
        .iter()
        .filter_map(|request| request.response)
        .collect();
    served.sort_unstable();
    assert_eq!(served, [0, 1, 2]);
}

/// `after_requests = 2`: the first stream's first frame waits for the
/// second request, so its sent-at stamp is later than the moment just
/// before that request went out.
#[tokio::test]
async fn after_requests_holds_the_first_frame_until_enough_requests_arrived() {
    let server = ScriptedModel::start(script(
        "[[response]]\nstamped_chunks = 1\nafter_requests = 2\n[[response]]\ntext = 'second'\n",
    ))
    .await
    .unwrap();
    let addr = server.addr();
    let held = tokio::spawn(async move {
        let body = openai_request(json!([{"role": "user", "content": "first"}]));
        post(addr, "/v1/chat/completions", &body).await
    });
    within("the first request", server.wait_for_requests(1)).await;
    let before_second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros();
    let body = openai_request(json!([{"role": "user", "content": "second"}]));
    let second = post(addr, "/v1/chat/completions", &body).await;
    assert_eq!(openai_text(&second.frames()), "second");
    let first = within("the held stream", held).await.unwrap();
    assert!(first.complete);
    let sent_at: u128 = openai_text(&first.frames())
        .trim()
        .parse()
        .expect("a stamp");
    assert!(
        sent_at >= before_second,
        "the held frame went out at {sent_at}, before the second request ({before_second})"
    );
}
