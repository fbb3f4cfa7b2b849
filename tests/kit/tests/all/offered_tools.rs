//! The scripted model calls only tools the request offered, as a real
//! model does: a scripted call to any other tool is a protocol violation of
//! that request (the response is still served, so the run goes on as
//! scripted and the test that checks violations says what went wrong),
//! unless the response says the model makes the tool up.

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
async fn a_call_to_a_tool_the_request_did_not_offer_is_a_violation() {
    let model = ScriptedModel::start(Script::from_toml_str(CALLS_READ_FILE).expect("script"))
        .await
        .expect("start");
    let offers_bash = json!([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]);
    let reply = post(model.addr(), "/v1/chat/completions", &request(offers_bash)).await;
    assert_eq!(reply.status, 200, "served as scripted");
    let violations = model.violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].starts_with(
            "request 0 (POST /v1/chat/completions): tools: response 0 calls the tool `read_file`"
        ) && violations[0].contains("did not offer (offered: [\"bash\"])"),
        "{violations:?}"
    );
    assert!(model.problems().is_empty(), "{:?}", model.problems());
}

#[tokio::test]
async fn an_offered_tool_is_called_and_a_made_up_one_only_when_scripted() {
    let offered = json!([{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]);
    let model = ScriptedModel::start(Script::from_toml_str(CALLS_READ_FILE).expect("script"))
        .await
        .expect("start");
    let reply = post(model.addr(), "/v1/chat/completions", &request(offered)).await;
    assert_eq!(reply.status, 200);
    assert!(model.violations().is_empty(), "{:?}", model.violations());

    let made_up = format!("{CALLS_READ_FILE}unoffered_tools = true\n");
    let model = ScriptedModel::start(Script::from_toml_str(&made_up).expect("script"))
        .await
        .expect("start");
    let mut anthropic = request(json!([]));
    anthropic["max_tokens"] = json!(100);
    let reply = post(model.addr(), "/v1/messages", &anthropic).await;
    assert_eq!(reply.status, 200);
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}
