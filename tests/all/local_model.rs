//! agentbus against a real LLM: llama.cpp's server with a small real model,
//! through both of its wire formats. Needs the server: run
//! `scripts/local-model.sh start`, set AGENTBUS_TEST_LOCAL_MODEL_URL to the
//! URL it prints, then `cargo test --test all local_model:: -- --ignored`
//! (`.ci/run` does this when the server's build is cached on the machine).

use crate::support::*;
use serde_json::Value;

const SKIP: &str = "needs a real llama.cpp server: run scripts/local-model.sh start, set AGENTBUS_TEST_LOCAL_MODEL_URL, pass --ignored";

fn server_url() -> String {
    std::env::var("AGENTBUS_TEST_LOCAL_MODEL_URL")
        .unwrap_or_else(|_| panic!("AGENTBUS_TEST_LOCAL_MODEL_URL is not set; {SKIP}"))
}

async fn say_hello(provider: &str, base_url: &str) {
    let fx = Fixture::new("plain_reply").await; // only for the workspace and home
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        format!(
            "model = \"real\"\n[models.real]\nprovider = \"{provider}\"\nmodel = \"local\"\nbase_url = \"{base_url}\"\nmax_output_tokens = 48\n"
        ),
    )
    .unwrap();
    let out = fx
        .run(&["run", "--json", "--model", "real", "Say hello"])
        .await;
    assert_eq!(out.code(), Some(0), "{provider}: {}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);
    let deltas = events
        .iter()
        .filter(|e| e["type"] == "stream_event" && e["event"]["type"] == "text_delta")
        .count();
    assert!(deltas > 0, "{provider}: the reply was streamed");
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn");
    assert!(
        result["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0,
        "{provider}: {result}"
    );
    assert!(
        result["usage"]["output_tokens"].as_u64().unwrap_or(0) > 0,
        "{provider}: {result}"
    );
    let assistant: &Value = of_type(&events, "assistant")[0];
    assert!(
        !assistant["content"].as_array().unwrap().is_empty(),
        "{provider}: {assistant}"
    );
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server: run scripts/local-model.sh start, set AGENTBUS_TEST_LOCAL_MODEL_URL, pass --ignored"]
async fn a_real_model_streams_through_the_openai_endpoint() {
    say_hello("openai", &format!("{}/v1", server_url())).await;
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server: run scripts/local-model.sh start, set AGENTBUS_TEST_LOCAL_MODEL_URL, pass --ignored"]
async fn a_real_model_streams_through_the_anthropic_endpoint() {
    say_hello("anthropic", &server_url()).await;
}
