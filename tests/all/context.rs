//! Long conversations against the scripted model, which counts every
//! request's tokens with the same tokenizer and refuses one over its window
//! with the provider's real error: the requests stay inside the window,
//! compaction summarises older turns, a refusal is answered by compaction
//! and one retry, and the store keeps the whole conversation.

use crate::support::server::Server;
use crate::support::{Fixture, of_type};
use agentbus_testkit::{Script, ScriptedModel};
use serde_json::{Value, json};

/// What the scripted model answers a summarising request with; the
/// request ends with this sentence (the core's compaction request).
const SUMMARY_REQUEST: &str = "Write the summary now";

/// `turns` turns of: read a big file, then answer; plus summaries for
/// every compaction that may come.
fn reading_script(window: u64, turns: usize) -> String {
    let mut script = format!("context_window = {window}\n");
    for n in 0..turns {
        script.push_str(&format!(
            "[[response]]\ntool_calls = [{{ name = \"read_file\", arguments = '{{\"path\":\"big{}.txt\"}}' }}]\n\
             [[response]]\ntext = \"Answer {n}: read it.\"\n",
            n % 5
        ));
    }
    for k in 0..turns {
        script.push_str(&format!(
            "[[response]]\nmatch = \"{SUMMARY_REQUEST}\"\ntext = \"SUMMARY-{k}: the user asks, turn by turn, to read big files; each was read.\"\n"
        ));
    }
    script
}

/// Five files of about 400 tokens each in the workspace.
fn write_big_files(fx: &Fixture) {
    for i in 0..5 {
        let text: String = (0..300).map(|w| format!("file{i}word{w} ")).collect();
        std::fs::write(fx.workspace().join(format!("big{i}.txt")), text).expect("write");
    }
}

/// The project configuration: windows and context keys for the profiles.
fn project_config(fx: &Fixture, toml: &str) {
    std::fs::write(fx.workspace().join(".agentbus.toml"), toml).expect("write project config");
}

/// The system prompt of a request in any format.
fn system_of(body: &Value) -> String {
    if let Some(system) = body["system"].as_str().or(body["instructions"].as_str()) {
        return system.to_string();
    }
    if let Some(blocks) = body["system"].as_array() {
        return blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
    }
    body["messages"]
        .as_array()
        .and_then(|m| m.first())
        .filter(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The text of the last user message that has text, in either format.
fn last_user_text(body: &Value) -> String {
    agentbus_testkit::last_user_text(body).unwrap_or_default()
}

fn offers_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// Send `text` and wait for its `result`.
async fn turn(
    server: &Server,
    stream: &mut crate::support::server::EventStream,
    id: &str,
    text: &str,
) -> Value {
    let input = server.input(id, text).await;
    server.result_of_resuming(stream, id, input).await
}

/// `tools`: `all` the built-in file and command tools (they take most of
/// the window, so nothing is left to summarise into), or `read_file` alone.
async fn three_hundred_turns_stay_inside_a_4000_token_window(profile: &str, tools: &str) {
    const TURNS: usize = 300;
    let script = Script::from_toml_str(&reading_script(4000, TURNS)).expect("script");
    let fx = Fixture::with_script(script).await;
    write_big_files(&fx);
    let disallowed = match tools {
        "all" => {
            "disallowed_tools = [\"bash_output\", \"kill_shell\", \"web_fetch\", \"todo_write\"]\n"
        }
        _ => {
            "disallowed_tools = [\"write_file\", \"edit_file\", \"list_dir\", \"glob\", \"grep\", \"bash\", \"task\", \"bash_output\", \"kill_shell\", \"web_fetch\", \"todo_write\", \"skill\"]\n"
        }
    };
    project_config(
        &fx,
        &format!(
            "{disallowed}[models.scripted]\ncontext_window = 4000\nmax_output_tokens = 500\n\
             [models.scripted-anthropic]\ncontext_window = 4000\nmax_output_tokens = 500\n\
             [context]\nkeep_tool_output_tokens = 500\n"
        ),
    );
    let server = fx.serve().await;
    let id = server
        .create_session_with(json!({ "model": profile }))
        .await;
    let mut stream = server.sse(&id, None).await;
    for n in 0..TURNS {
        let question = format!("question {n}: read big{}.txt", n % 5);
        let result = turn(&server, &mut stream, &id, &question).await;
        assert_eq!(result["stop_reason"], "end_turn", "turn {n}: {result}");
        assert_eq!(result["context"]["limit"], 3500, "turn {n}: {result}");
    }

    let calls = fx.server.model_calls();
    let refused: Vec<_> = calls.iter().filter(|r| r.refused_for_length).collect();
    assert!(
        refused.is_empty(),
        "{} requests were over the window",
        refused.len()
    );
    let largest = calls
        .iter()
        .filter_map(|r| r.input_tokens)
        .max()
        .unwrap_or(0);
    assert!(largest + 500 <= 4000, "largest request: {largest} tokens");
    fx.assert_requests_valid(); // no orphan tool call or result, in the provider's own rules
    let summaries = calls.iter().filter(|r| !offers_tools(&r.body)).count();
    let steps = calls.len() - summaries;
    // The figures of the README's context report.
    println!(
        "{profile}, {tools} tools: {TURNS} turns, {} model requests for {steps} model steps ({:.3} per step), {summaries} compactions ({:.1} per 100 turns), largest request {largest} tokens, 0 refused",
        calls.len(),
        calls.len() as f64 / steps as f64,
        summaries as f64 * 100.0 / TURNS as f64,
    );
    if tools != "all" {
        assert!(summaries > 0, "the conversation was never summarised");
    }
    assert!(
        calls.len() as f64 <= steps as f64 * 1.1,
        "compactions must not add more than a tenth of the calls: {} for {steps}",
        calls.len()
    );

    let last = &calls.last().expect("a request").body;
    assert!(last_user_text(last).starts_with(&format!("question {}:", TURNS - 1)));
    if summaries > 0 {
        let system = system_of(last);
        assert!(
            system.contains("Summary of the conversation so far") && system.contains("SUMMARY-"),
            "{system}"
        );
    }
    let compacted: Vec<_> = stream
        .events
        .iter()
        .filter(|e| e["type"] == "system" && e["subtype"] == "compacted")
        .collect();
    assert_eq!(
        compacted.len(),
        summaries,
        "one compacted event per summary"
    );
    for event in &compacted {
        let data = &event["data"];
        assert!(
            data["tokens_after"].as_u64() < data["tokens_before"].as_u64(),
            "{event}"
        );
        assert!(
            data["first_seq"].as_u64() <= data["last_seq"].as_u64(),
            "{event}"
        );
        assert!(data["first_seq"].as_u64() > Some(0), "{event}");
    }
    server.terminate();
    server.wait().await;

    // The store holds everything: every question, and every answer.
    let show = fx.run(&["sessions", "show", &id]).await.stdout_text();
    for n in 0..TURNS {
        assert!(
            show.contains(&format!("question {n}:")),
            "question {n} missing from sessions show"
        );
        assert!(
            show.contains(&format!("Answer {n}: read it.")),
            "answer {n} missing"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_turns_stay_inside_the_window_openai() {
    three_hundred_turns_stay_inside_a_4000_token_window("scripted", "all").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_turns_with_one_tool_are_summarised_and_stay_inside_the_window() {
    three_hundred_turns_stay_inside_a_4000_token_window("scripted", "read_file").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_turns_stay_inside_the_window_anthropic() {
    three_hundred_turns_stay_inside_a_4000_token_window("scripted-anthropic", "all").await;
}

/// No window is configured, so only the provider can say the request is
/// too long: it does, stating its window and its count (not on the
/// Responses wire); the session learns them (or, told nothing, plans to
/// the largest request the provider took), shortens its view (compacting
/// first when the older turns are worth it) and tries exactly once more —
/// and every later turn fits at once.
async fn a_refusal_for_length_is_learnt_from_and_retried_once(profile: &str) {
    let script = Script::from_toml_str(&reading_script(3400, 12)).expect("script");
    let fx = Fixture::with_script(script).await;
    fx.add_responses_profile("scripted-responses", "scripted-main");
    write_big_files(&fx);
    project_config(
        &fx,
        // `read_file` alone: the refusal comes after a few turns, when the
        // provider has taken requests (and the conversation gives the
        // retry something to leave out).
        "disallowed_tools = [\"write_file\", \"edit_file\", \"list_dir\", \"glob\", \"grep\", \"bash\", \"task\", \"todo_write\", \"bash_output\", \"kill_shell\", \"web_fetch\"]\n\
         [models.scripted]\nmax_output_tokens = 300\n\
         [models.scripted-anthropic]\nmax_output_tokens = 300\n\
         [models.scripted-responses]\nmax_output_tokens = 300\n",
    );
    let server = fx.serve().await;
    let id = server
        .create_session_with(json!({ "model": profile }))
        .await;
    let mut stream = server.sse(&id, None).await;
    let mut n = 0;
    let mut after_refusal = 0;
    while after_refusal < 4 {
        assert!(n < 12, "the window was never reached");
        let result = turn(
            &server,
            &mut stream,
            &id,
            &format!("question {n}: read big{}.txt", n % 5),
        )
        .await;
        assert_eq!(result["stop_reason"], "end_turn", "turn {n}: {result}");
        if fx.server.model_calls().iter().any(|r| r.refused_for_length) {
            after_refusal += 1;
        }
        n += 1;
    }
    let calls = fx.server.model_calls();
    let refused = calls
        .iter()
        .position(|r| r.refused_for_length)
        .expect("refused");
    assert_eq!(
        calls.iter().filter(|r| r.refused_for_length).count(),
        1,
        "one refusal, and none in the turns after it"
    );
    // The retry (after a summary, if one was worth it) offers the tools,
    // carries the same question, and fits.
    let after = &calls[refused + 1..];
    let retry = after
        .iter()
        .find(|r| offers_tools(&r.body))
        .expect("the retry");
    assert_eq!(
        last_user_text(&retry.body),
        last_user_text(&calls[refused].body)
    );
    assert!(!retry.refused_for_length);
    let summaries = after.iter().take_while(|r| !offers_tools(&r.body)).count();
    assert!(summaries <= 1, "at most one compaction before the retry");
    let notices: Vec<String> = of_type(&stream.events, "system")
        .iter()
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        notices
            .iter()
            .any(|m| m.contains("refused the request as too long")),
        "{notices:#?}"
    );
    // A compaction before the retry says the refusal was why.
    let refusal = stream
        .events
        .iter()
        .position(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("refused the request as too long"))
        })
        .expect("the refusal's notice");
    let before_retry = stream.events[refusal..]
        .iter()
        .take_while(|e| e["type"] != "result")
        .find(|e| e["subtype"] == "compacted");
    assert_eq!(summaries, usize::from(before_retry.is_some()));
    if let Some(compacted) = before_retry {
        assert_eq!(compacted["data"]["trigger"], "overflow");
    }
    // What the session learnt shows in `/context`: the provider's limit.
    let input = server.input(&id, "/context").await;
    let context = loop {
        let event = stream.next().await.expect("the /context reply");
        if event["turn_id"] == input && event["subtype"] == "context" {
            break event;
        }
    };
    let learnt = context["data"]["learnt_limit"]
        .as_u64()
        .expect("a learnt limit");
    if profile == "scripted-responses" {
        // No figure stated: the largest request the provider took.
        let largest = calls[..refused]
            .iter()
            .filter_map(|r| r.input_tokens)
            .max()
            .expect("requests before the refusal");
        assert_eq!(learnt, largest, "{context}");
    } else {
        assert_eq!(learnt, 3100, "the window less the output cap: {context}");
    }
    fx.assert_requests_valid();
    server.terminate();
    server.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_for_length_is_learnt_from_and_retried_once_openai() {
    a_refusal_for_length_is_learnt_from_and_retried_once("scripted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_for_length_is_learnt_from_and_retried_once_anthropic() {
    a_refusal_for_length_is_learnt_from_and_retried_once("scripted-anthropic").await;
}

/// OpenAI's Responses wire refuses in the stream (an `error` event with
/// `context_length_exceeded`), not with an HTTP status, and states no
/// figures: the same path, the window taken as smaller than the refused
/// request by our count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_for_length_is_learnt_from_and_retried_once_responses() {
    a_refusal_for_length_is_learnt_from_and_retried_once("scripted-responses").await;
}

/// The summarising model (`compact_model`) has a smaller window than its
/// profile says: its request is refused, quoted shorter, and summarised;
/// the turn goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summarising_request_that_overflows_is_pruned_then_summarised() {
    let script = Script::from_toml_str(&reading_script(8000, 40)).expect("script");
    let fx = Fixture::with_script(script).await;
    let small = ScriptedModel::start(
        Script::from_toml_str(&format!(
            "context_window = 1800\n[[response]]\nmatch = \"{SUMMARY_REQUEST}\"\ntext = \"SMALL-SUMMARY of the reading.\"\n"
        ))
        .expect("script"),
    )
    .await
    .expect("start the small model");
    write_big_files(&fx);
    project_config(
        &fx,
        &format!(
            "[models.scripted]\ncontext_window = 8000\nmax_output_tokens = 500\n\
             [models.small]\nprovider = \"openai\"\nmodel = \"small\"\nbase_url = \"{}\"\ncontext_window = 3000\nmax_output_tokens = 300\n\
             [context]\ncompact_model = \"small\"\n",
            small.openai_base_url()
        ),
    );
    let server = fx.serve().await;
    let id = server.create_session().await;
    let mut stream = server.sse(&id, None).await;
    let mut n = 0;
    while !stream.events.iter().any(|e| e["subtype"] == "compacted") {
        assert!(n < 40, "never compacted");
        let result = turn(
            &server,
            &mut stream,
            &id,
            &format!("question {n}: read big{}.txt", n % 5),
        )
        .await;
        assert_eq!(result["stop_reason"], "end_turn", "turn {n}: {result}");
        n += 1;
    }
    let summaries = small.model_calls();
    let counts: Vec<_> = summaries
        .iter()
        .map(|r| (r.input_tokens, r.refused_for_length))
        .collect();
    assert_eq!(
        summaries.len(),
        2,
        "refused once, then the shorter request: {counts:?}"
    );
    assert!(summaries[0].refused_for_length);
    assert!(!summaries[1].refused_for_length);
    assert!(summaries[1].input_tokens < summaries[0].input_tokens);
    let retried = fx.server.model_calls();
    assert!(system_of(&retried.last().expect("request").body).contains("SMALL-SUMMARY"));
    assert!(
        fx.server
            .model_calls()
            .iter()
            .all(|r| !r.refused_for_length)
    );
    server.terminate();
    server.wait().await;
}

/// A profile that claims a window of 200,000 tokens in front of a server
/// whose window is 4,000 (a mis-set profile, or a provider that counts
/// more than we do): 25 turns of ~180-word prompts, echoed, with the
/// built-in file and command tools offered. The first refusal states the window; from then
/// on every request fits it.
async fn a_mis_set_window_costs_one_refusal_at_most(profile: &str) {
    const TURNS: usize = 25;
    let mut script = String::from("context_window = 4000\n");
    for _ in 0..TURNS + 1 {
        script.push_str("[[response]]\ntext = \"You said: {last_user}\"\n");
    }
    let fx = Fixture::with_script(Script::from_toml_str(&script).expect("script")).await;
    project_config(
        &fx,
        // The seven file and command tools.
        "disallowed_tools = [\"task\", \"bash_output\", \"kill_shell\", \"web_fetch\", \"todo_write\"]\n\
         [models.scripted]\ncontext_window = 200000\nmax_output_tokens = 400\n\
         [models.scripted-anthropic]\ncontext_window = 200000\nmax_output_tokens = 400\n",
    );
    let server = fx.serve().await;
    let id = server
        .create_session_with(json!({ "model": profile }))
        .await;
    let mut stream = server.sse(&id, None).await;
    const WORDS: [&str; 8] = [
        "river", "stone", "cloud", "forest", "ocean", "mountain", "delta", "kilo",
    ];
    for n in 0..TURNS {
        let prompt: Vec<&str> = (0..180).map(|w| WORDS[(n * 3 + w * 5) % 8]).collect();
        let prompt = format!("Prompt {n}: {}", prompt.join(" "));
        let result = turn(&server, &mut stream, &id, &prompt).await;
        assert_eq!(result["stop_reason"], "end_turn", "turn {n}: {result}");
        assert!(
            result["text"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("You said: Prompt {n}:"))),
            "turn {n}: {result}"
        );
    }
    let refused = fx
        .server
        .model_calls()
        .iter()
        .filter(|r| r.refused_for_length)
        .count();
    let counts: Vec<(Option<u64>, bool)> = fx
        .server
        .model_calls()
        .iter()
        .map(|r| (r.input_tokens, r.refused_for_length))
        .collect();
    assert!(
        refused <= 1,
        "{refused} refusals (count, refused): {counts:?}"
    );
    fx.assert_requests_valid();
    server.terminate();
    server.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mis_set_window_costs_one_refusal_at_most_openai() {
    a_mis_set_window_costs_one_refusal_at_most("scripted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mis_set_window_costs_one_refusal_at_most_anthropic() {
    a_mis_set_window_costs_one_refusal_at_most("scripted-anthropic").await;
}
