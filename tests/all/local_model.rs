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

/// How close the session's token estimate is to what llama.cpp counts,
/// once calibrated: before each query, `/context` says what the next
/// request takes; the query's own tokens are added, and the sum is compared
/// with the `input_tokens` the server reports for that request. Prints the
/// figures for the README; fails only if the calibrated estimate is off by
/// more than a fifth.
#[tokio::test]
#[ignore = "needs a real llama.cpp server: run scripts/local-model.sh start, set AGENTBUS_TEST_LOCAL_MODEL_URL, pass --ignored"]
async fn the_calibrated_estimate_is_close_to_the_real_count() {
    let fx = Fixture::new("plain_reply").await; // only for the workspace and home
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        format!(
            "model = \"real\"\n[models.real]\nprovider = \"openai\"\nmodel = \"local\"\nbase_url = \"{}/v1\"\nmax_output_tokens = 48\ncontext_window = 4096\n",
            server_url()
        ),
    )
    .unwrap();
    let server = fx.serve_with(&[]).await;
    let id = server
        .create_session_with(serde_json::json!({"model": "real"}))
        .await;
    let mut stream = server.sse(&id, None).await;
    let mut errors = Vec::new();
    for n in 0..6 {
        let context = server.input(&id, "/context").await;
        let reply = stream
            .until(|e| e["type"] == "system" && e["turn_id"] == context)
            .await;
        let used = reply["data"]["used"].as_u64().expect("used");
        let query = format!("Question {n}: name one colour, in one word.");
        let estimate = used + agentbus_testkit::count_text("local", &query) + 4;
        let input = server.input(&id, &query).await;
        let result = stream.result_of(input).await;
        // The whole prompt: the uncached part and the part read from the cache.
        let usage = &result["usage"];
        let real = usage["input_tokens"].as_u64().expect("input tokens")
            + usage["cache_read_input_tokens"].as_u64().unwrap_or(0);
        let error = (estimate as f64 - real as f64) / real as f64;
        println!(
            "turn {n}: estimate {estimate}, llama.cpp counted {real}: {:+.1}%",
            error * 100.0
        );
        errors.push(error);
    }
    server.terminate();
    server.wait().await;
    let calibrated = &errors[1..];
    let worst = calibrated.iter().fold(0.0f64, |w, e| w.max(e.abs()));
    println!(
        "first (uncalibrated) {:+.1}%, then at most {:.1}% off",
        errors[0] * 100.0,
        worst * 100.0
    );
    assert!(
        worst < 0.2,
        "calibrated estimates off by up to {:.1}%",
        worst * 100.0
    );
}

/// A 30-turn conversation with the real model at llama.cpp's default
/// window (4,096 tokens, `-c 4096`), every other turn reading a file into
/// the conversation (`@notes.txt`, read by the `read_file` tool: this small
/// model makes no tool calls of its own), through a profile that does not
/// say the window: the server's refusal tells it (llama.cpp states its
/// context size), and every turn is answered.
#[tokio::test]
#[ignore = "needs a real llama.cpp server: run scripts/local-model.sh start, set AGENTBUS_TEST_LOCAL_MODEL_URL, pass --ignored"]
async fn a_thirty_turn_conversation_fits_the_default_window() {
    let fx = Fixture::new("plain_reply").await; // only for the workspace and home
    let notes: String = (0..25)
        .map(|n| {
            format!(
                "- note {n}: the build of module {n} takes {} seconds\n",
                n * 7 % 90
            )
        })
        .collect();
    std::fs::write(fx.workspace().join("notes.txt"), notes).unwrap();
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        format!(
            "model = \"real\"\n[models.real]\nprovider = \"openai\"\nmodel = \"local\"\nbase_url = \"{}/v1\"\nmax_output_tokens = 40\n",
            server_url()
        ),
    )
    .unwrap();
    let server = fx.serve_with(&[]).await;
    let id = server
        .create_session_with(serde_json::json!({"model": "real"}))
        .await;
    let mut stream = server.sse(&id, None).await;
    let mut refusals = 0;
    for n in 0..30 {
        let query = if n % 2 == 0 {
            format!("Turn {n}: @notes.txt which module takes longest to build?")
        } else {
            format!("Turn {n}: and which one is the quickest? Answer in a sentence.")
        };
        let input = server.input(&id, &query).await;
        // Streamed token by token: a client that falls behind is cut off
        // and comes back after its last event, as real ones do.
        let result = server.result_of_resuming(&mut stream, &id, input).await;
        assert_eq!(result["stop_reason"], "end_turn", "turn {n}: {result}");
        refusals += stream
            .events
            .iter()
            .filter(|e| {
                e["turn_id"] == input
                    && e["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("refused the request as too long"))
            })
            .count();
        println!(
            "turn {n}: {} input tokens, {refusals} refusals so far",
            result["usage"]["input_tokens"]
        );
    }
    server.terminate();
    server.wait().await;
    assert!(refusals <= 1, "{refusals} refusals");
}
