//! A flaky provider, seen by a user of `agentbus run`: the turn still ends
//! well, the user is told about each retry, and nothing is said twice.

use crate::support::*;
use agentbus_testkit::Script;
use serde_json::Value;

const PROFILES: [&str; 2] = ["scripted", "scripted-anthropic"];

/// A script whose first answer fails in the given way, then answers.
fn flaky(first: &str) -> Script {
    Script::from_toml_str(&format!(
        "[[response]]\n{first}\n[[response]]\ntext = \"The answer, said once.\"\nchunk_size = 6\n"
    ))
    .unwrap()
}

async fn run_flaky(first: &str, profile: &str) -> Vec<Value> {
    let fx = Fixture::with_script(flaky(first)).await;
    let out = fx
        .run(&["run", "--json", "--model", profile, "question"])
        .await;
    assert_eq!(out.code(), Some(0), "{first} via {profile}: {}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["text"], "The answer, said once.", "not duplicated");
    let retrying: Vec<&Value> = events
        .iter()
        .filter(|e| e["subtype"] == "retrying")
        .collect();
    assert_eq!(
        retrying.len(),
        1,
        "the user saw one retry notice: {first} via {profile}"
    );
    assert_eq!(retrying[0]["data"]["attempt"], 1);
    let assistants = of_type(&events, "assistant");
    assert_eq!(assistants.len(), 1, "one assistant message");
    assert_eq!(
        assistants[0]["content"][0]["text"],
        "The answer, said once."
    );
    assert_eq!(fx.server.requests().len(), 2);
    fx.assert_requests_valid();
    events
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out() {
    for profile in PROFILES {
        let events = run_flaky(
            "status = 429\nheaders = { \"retry-after\" = \"1\" }\nbody = 'rate limited'",
            profile,
        )
        .await;
        let notice = events.iter().find(|e| e["subtype"] == "retrying").unwrap();
        assert_eq!(notice["data"]["delay_ms"], 1000);
        assert!(notice["message"].as_str().unwrap().contains("HTTP 429"));
    }
}

#[tokio::test]
async fn a_500_is_retried() {
    for profile in PROFILES {
        run_flaky("status = 500\nbody = 'internal error'", profile).await;
    }
}

#[tokio::test]
async fn a_stream_dropped_midway_is_retried_and_its_text_discarded() {
    for profile in PROFILES {
        let events = run_flaky(
            "text = \"Partial words that never end\"\nchunk_size = 5\ndrop_after_chunks = 4",
            profile,
        )
        .await;
        let discard = events
            .iter()
            .position(|e| e["event"]["type"] == "discard")
            .expect("a discard event");
        let notice = events
            .iter()
            .position(|e| e["subtype"] == "retrying")
            .unwrap();
        let first_delta = events
            .iter()
            .position(|e| e["event"]["type"] == "text_delta")
            .unwrap();
        assert!(
            first_delta < discard && discard < notice,
            "partial text, then discard, then the notice"
        );
    }
}

#[tokio::test]
async fn retry_notices_go_to_stderr_in_plain_mode() {
    let fx = Fixture::with_script(flaky("status = 503\nbody = 'busy'")).await;
    let out = fx.run(&["run", "question"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, ["The answer, said once."]);
    assert!(out.stderr.contains("retrying: attempt 1"), "{}", out.stderr);
}

#[tokio::test]
async fn an_interrupt_during_backoff_ends_the_turn_at_once() {
    let fx = Fixture::with_script(flaky(
        "status = 429\nheaders = { \"retry-after\" = \"50\" }\nbody = 'later'",
    ))
    .await;
    let mut agent = fx.spawn(&["run", "--json", "question"]);
    agent.wait_for_event(|e| e["subtype"] == "retrying").await;
    agent.interrupt();
    let out = agent.finish().await;
    assert_eq!(out.code(), Some(130), "{}", out.stderr);
    assert_eq!(the_result(&out.events())["stop_reason"], "cancelled");
    assert_eq!(
        fx.server.requests().len(),
        1,
        "no retry after the interrupt"
    );
}

#[tokio::test]
async fn a_401_ends_the_turn_with_a_clear_error_naming_the_key() {
    let fx = Fixture::with_script(Script::from_toml_str("[[response]]\nstatus = 401\nbody = '{\"error\":{\"message\":\"invalid x-api-key\"}}'\n").unwrap()).await;
    let out = fx
        .run(&["run", "--json", "--model", "scripted-anthropic", "question"])
        .await;
    assert_eq!(out.code(), Some(1));
    let events = out.events();
    let error = of_type(&events, "error")[0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(error.contains("HTTP 401: invalid x-api-key"), "{error}");
    assert!(error.contains("scripted-anthropic"), "{error}");
    assert!(!error.contains(SECRET), "the key itself is never shown");
    assert_eq!(fx.server.requests().len(), 1, "401 is not retried");
}
