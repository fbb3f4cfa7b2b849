//! Prompt caching and thinking by model family, as a user meets them: a
//! session on the Anthropic wire against the scripted model, which caches
//! prompts as Anthropic does, reads most of its input from the cache from
//! its third turn on, and says so in `result`, `/usage` (with the cost at
//! the cache's prices) and `/context`; `agentbus run --model opus` with
//! `model = "claude-opus-4-7"` thinks adaptively, and a thinking budget on
//! that profile is refused at start, naming the file, the key and the fix.

use crate::support::server::{EventStream, Server};
use crate::support::*;
use agentbus_testkit::Script;
use serde_json::{Value, json};

const TURNS: usize = 8;

/// Each turn: read a file, then answer.
fn reading_script() -> String {
    let mut script = String::from("prompt_caching = true\n");
    for n in 0..TURNS {
        script.push_str(&format!(
            "[[response]]\ntool_calls = [{{ name = \"read_file\", arguments = '{{\"path\":\"notes{}.txt\"}}' }}]\n\
             [[response]]\ntext = \"Answer {n}: the notes are read.\"\n",
            n % 3
        ));
    }
    script
}

/// `text` as a turn; its `result`.
async fn turn(server: &Server, stream: &mut EventStream, id: &str, text: &str) -> Value {
    let input = server.input(id, text).await;
    server.result_of_resuming(stream, id, input).await
}

/// The reply to a slash command.
async fn command(server: &Server, stream: &mut EventStream, id: &str, text: &str) -> Value {
    let input = server.input(id, text).await;
    stream
        .until(|e| e["type"] == "system" && e["turn_id"] == input)
        .await
}

fn n(usage: &Value, key: &str) -> u64 {
    usage[key].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_session_reads_most_of_its_input_from_the_cache_from_the_third_turn_on() {
    let script = Script::from_toml_str(&reading_script()).expect("script");
    let fx = Fixture::with_script(script).await;
    for i in 0..3 {
        let text: String = (0..150).map(|w| format!("note{i}word{w} ")).collect();
        std::fs::write(fx.workspace().join(format!("notes{i}.txt")), text).expect("write");
    }
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "[models.scripted-anthropic]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
    )
    .expect("project config");
    let server = fx.serve().await;
    let id = server
        .create_session_with(json!({"model": "scripted-anthropic"}))
        .await;
    let mut stream = server.sse(&id, None).await;

    let mut usages = Vec::new();
    for n in 0..TURNS {
        let result = turn(
            &server,
            &mut stream,
            &id,
            &format!("question {n}: read the notes"),
        )
        .await;
        assert_eq!(result["stop_reason"], "end_turn", "turn {n}: {result}");
        usages.push(result["usage"].clone());
    }
    fx.assert_requests_valid();

    // What each turn read from the cache, of all its input.
    let mut total = json!({});
    for (turn, usage) in usages.iter().enumerate() {
        let (input, read, written) = (
            n(usage, "input_tokens"),
            n(usage, "cache_read_input_tokens"),
            n(usage, "cache_creation_input_tokens"),
        );
        let all = input + read + written;
        let share = read as f64 / all as f64;
        println!(
            "turn {}: {all} input tokens: {read} read from the cache ({:.1}%), {written} written, {input} uncached",
            turn + 1,
            share * 100.0
        );
        if turn >= 2 {
            assert!(
                share >= 0.8,
                "turn {}: only {:.1}% of the input read from the cache: {usage}",
                turn + 1,
                share * 100.0
            );
        }
        for key in [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ] {
            total[key] = json!(n(&total, key) + n(usage, key));
        }
    }

    // The server saw what agentbus reported: the same reads, call by call;
    // the first call found nothing cached and wrote its whole prompt.
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 2 * TURNS);
    let first = calls[0].cache.expect("cached prompts");
    assert_eq!(first.read, 0, "nothing cached yet");
    assert_eq!(Some(first.written()), calls[0].input_tokens);
    let recorded_read: u64 = calls
        .iter()
        .map(|c| c.cache.expect("cached prompts").read)
        .sum();
    assert_eq!(recorded_read, n(&total, "cache_read_input_tokens"));
    for call in &calls {
        let marks = call.body.to_string().matches("\"cache_control\"").count();
        assert!((1..=4).contains(&marks), "{marks} marks");
        // The stable prefix: the same tools, in the same order, and the
        // same system prompt in every call.
        assert_eq!(call.body["tools"], calls[0].body["tools"]);
        assert_eq!(call.body["system"], calls[0].body["system"]);
    }

    // `/usage`: the cache figures, and a cost at the cache's prices (reads
    // at 0.1x, writes at 1.25x the input price).
    let usage = command(&server, &mut stream, &id, "/usage").await;
    assert_eq!(usage["subtype"], "usage");
    let session = &usage["data"]["session"];
    assert_eq!(
        n(session, "cache_read_input_tokens"),
        n(&total, "cache_read_input_tokens")
    );
    let message = usage["message"].as_str().expect("message");
    assert!(
        message.contains("% of the input read from the cache"),
        "{message}"
    );
    let per = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
    let expected = per(n(&total, "input_tokens"), 3.0)
        + per(n(&total, "output_tokens"), 15.0)
        + per(n(&total, "cache_read_input_tokens"), 0.3)
        + per(n(&total, "cache_creation_input_tokens"), 3.75);
    let cost = usage["data"]["cost_usd"].as_f64().expect("a cost");
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    let uncached = per(
        n(&total, "input_tokens")
            + n(&total, "cache_read_input_tokens")
            + n(&total, "cache_creation_input_tokens"),
        3.0,
    ) + per(n(&total, "output_tokens"), 15.0);
    println!("cost: ${cost:.4} cached, ${uncached:.4} had nothing been cached");
    assert!(cost < uncached / 2.0, "{cost} vs {uncached}");

    // `/context`: the share read from the cache.
    let context = command(&server, &mut stream, &id, "/context").await;
    assert_eq!(context["subtype"], "context");
    let cache = &context["data"]["cache"];
    assert!(
        cache["last_turn"].as_f64().is_some_and(|s| s >= 0.8),
        "{cache}"
    );
    assert!(
        context["message"]
            .as_str()
            .is_some_and(|m| m.contains("Prompt cache: ")),
        "{context}"
    );
    server.terminate();
    server.wait().await;
}

/// A fixture with the profile `opus` (`claude-opus-4-7` on the Anthropic
/// wire) and `keys` added to it.
async fn opus(keys: &str) -> Fixture {
    let fx = Fixture::new("thinking").await;
    fx.add_config(&format!(
        "[models.opus]\nprovider = \"anthropic\"\nmodel = \"claude-opus-4-7\"\nbase_url = \"{}\"\napi_key = \"{SECRET}\"\nretry_base_delay_ms = 1\n{keys}",
        fx.server.anthropic_base_url()
    ));
    fx
}

#[tokio::test]
async fn run_with_opus_4_7_thinks_adaptively() {
    let fx = opus("effort = \"high\"\n").await;
    let out = fx.run(&["run", "--model", "opus", "what is 2 + 2?"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, ["4"], "thinking is not the answer");
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 1);
    let body = &calls[0].body;
    assert_eq!(body["model"], "claude-opus-4-7");
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "high"}));
    fx.assert_requests_valid();
}

#[tokio::test]
async fn a_thinking_budget_for_opus_4_7_is_refused_at_start_saying_what_to_write() {
    for keys in ["thinking = { budget = 4096 }\n", "thinking_budget = 4096\n"] {
        let fx = opus(keys).await;
        let out = fx.run(&["run", "--model", "opus", "what is 2 + 2?"]).await;
        assert_eq!(out.code(), Some(1), "{keys}: {}", out.stderr);
        let said = out.stderr.trim();
        println!("{said}");
        let key = keys.split(' ').next().expect("a key");
        assert!(
            said.starts_with("agentbus: configuration: ")
                && said.contains(&fx.config.display().to_string())
                && said.contains(&format!("`models.opus.{key}`"))
                && said.contains("`claude-opus-4-7` takes adaptive thinking only")
                && said.contains("write `thinking = \"adaptive\"` instead"),
            "{said}"
        );
        assert!(
            fx.server.requests().is_empty(),
            "nothing is sent to the model"
        );
    }
}
