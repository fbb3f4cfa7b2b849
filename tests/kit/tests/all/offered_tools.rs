//! The scripted model only calls tools the request offered, as a real
//! model does: a scripted call to any other tool is refused (HTTP 500,
//! recorded as a problem) unless the response says the model makes it up.

use crate::support::post;
use agentbus_testkit::{Script, ScriptedModel};
use serde_json::{Value, json};

fn request(tools: Value) -> Value {
    json!({
        "model": "m",
        "stream": true,
        "tools": tools,
        "messages": [{"role": "user", "content": "go"}],
    })
}

const CALLS_READ_FILE: &str =
    "[[response]]\ntool_calls = [{ name = \"read_file\", arguments = '{\"path\":\"a\"}' }]\n";

#[tokio::test]
async fn a_call_to_a_tool_the_request_did_not_offer_is_refused() {
    let model = ScriptedModel::start(Script::from_toml_str(CALLS_READ_FILE).expect("script"))
        .await
        .expect("start");
    let reply = post(model.addr(), "/v1/chat/completions", &request(json!([]))).await;
    assert_eq!(reply.status, 500);
    let body = String::from_utf8_lossy(&reply.body).to_string();
    assert!(
        body.contains("`read_file`") && body.contains("did not offer"),
        "{body}"
    );
    let problems = model.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
}

#[tokio::test]
async fn an_offered_tool_is_called_and_a_made_up_one_only_when_scripted() {
    let offered = json!([{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]);
    let model = ScriptedModel::start(Script::from_toml_str(CALLS_READ_FILE).expect("script"))
        .await
        .expect("start");
    let reply = post(model.addr(), "/v1/chat/completions", &request(offered)).await;
    assert_eq!(reply.status, 200);
    assert!(model.problems().is_empty());

    let made_up = format!("{CALLS_READ_FILE}unoffered_tools = true\n");
    let model = ScriptedModel::start(Script::from_toml_str(&made_up).expect("script"))
        .await
        .expect("start");
    let reply = post(model.addr(), "/v1/messages", &request(json!([]))).await;
    assert_eq!(reply.status, 200);
    assert!(model.problems().is_empty());
}
