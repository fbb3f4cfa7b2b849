//! The context window under every mix the issue names, through the real
//! binary on both wires: windows of 4k, 8k and 32k tokens, prompts of 50,
//! 200 and 800 words, tool outputs of none, 2,000 and 20,000 characters,
//! 45 turns each. The scripted model counts with its own tokenizer (not
//! agentbus's: see the test kit's `tokens` module), refuses any request
//! over its window with the provider's real error, and stops an answer at
//! the request's output cap, as a real model does.
//!
//! Every turn must end `end_turn`, no request may pass the window, every
//! answer must be its own prompt's, and the store must keep every prompt.

use crate::support::Fixture;
use crate::support::server::EventStream;
use agentbus_testkit::Script;
use serde_json::json;

const TURNS: usize = 45;
const PROMPT_WORDS: [usize; 3] = [50, 200, 800];
const OUTPUT_CHARS: [usize; 3] = [0, 2_000, 20_000];

/// What the scripted model answers a summarising request with; the
/// request ends with this sentence (the core's compaction request).
const SUMMARY_REQUEST: &str = "Write the summary now";

/// The tag of turn `n`'s prompt, which its answer repeats.
fn tag(n: usize) -> String {
    format!("[prompt-{n}]")
}

/// Turn `n`'s prompt: its tag, then `words` words of prose.
fn prompt(n: usize, words: usize) -> String {
    const VOCABULARY: [&str; 12] = [
        "the", "build", "failed", "again", "because", "a", "test", "timed", "out", "while",
        "reading", "logs",
    ];
    let mut text = format!("{} ", tag(n));
    for w in 0..words {
        text.push_str(VOCABULARY[(n * 7 + w * 5) % VOCABULARY.len()]);
        text.push(' ');
    }
    text
}

/// The script: summaries first (a summarising request quotes the tags, so
/// it must find its own responses before the turns'), then per turn a
/// `read_file` call when there is an output to read, and the answer.
fn script(window: u64, output_chars: usize) -> String {
    let mut script = format!("context_window = {window}\n");
    for k in 0..TURNS {
        script.push_str(&format!(
            "[[response]]\nmatch = \"{SUMMARY_REQUEST}\"\ntext = \"SUMMARY-{k}: the user sent tagged prompts about a failing build; each was answered.\"\n"
        ));
    }
    for n in 0..TURNS {
        if output_chars > 0 {
            script.push_str(&format!(
                "[[response]]\nmatch = \"{}\"\ntool_calls = [{{ name = \"read_file\", arguments = '{{\"path\":\"out{}.txt\"}}' }}]\n",
                tag(n),
                n % 3
            ));
        }
        script.push_str(&format!(
            "[[response]]\nmatch = \"{}\"\ntext = \"Answer to {}.\"\n",
            tag(n),
            tag(n)
        ));
    }
    script
}

/// Three files of `chars` characters of log lines.
fn write_outputs(fx: &Fixture, chars: usize) {
    for i in 0..3 {
        let mut text = String::with_capacity(chars);
        let mut line = 0;
        while text.len() < chars {
            text.push_str(&format!(
                "2026-11-27T10:{:02}:{:02} worker-{i} step {line}: compiled crate {line} in {} ms\n",
                line / 60 % 60,
                line % 60,
                line * 7 % 900
            ));
            line += 1;
        }
        text.truncate(chars);
        std::fs::write(fx.workspace().join(format!("out{i}.txt")), text).expect("write");
    }
}

/// One window on one wire, every prompt size and output size.
async fn matrix(profile: &str, window: u64) {
    let output_cap = window / 10;
    for words in PROMPT_WORDS {
        for chars in OUTPUT_CHARS {
            let script = Script::from_toml_str(&script(window, chars)).expect("script");
            let fx = Fixture::with_script(script).await;
            write_outputs(&fx, chars);
            // The project's configuration: the windows, and `read_file` the
            // one tool offered (all of them take 3,000 tokens of a 4k window,
            // and the prompts of 800 words would not fit beside
            // them: a message that cannot fit is refused, a separate test).
            std::fs::write(
                fx.workspace().join(".agentbus.toml"),
                format!(
                    "disallowed_tools = [\"write_file\", \"edit_file\", \"list_dir\", \"glob\", \"grep\", \"bash\", \"task\", \"bash_output\", \"kill_shell\", \"web_fetch\", \"todo_write\"]\n\
                     [models.scripted]\ncontext_window = {window}\nmax_output_tokens = {output_cap}\n\
                     [models.scripted-anthropic]\ncontext_window = {window}\nmax_output_tokens = {output_cap}\n"
                ),
            )
            .expect("write the project configuration");
            let case = format!("{profile}, window {window}, {words} words, {chars} characters");
            run_case(&fx, profile, words, &case).await;
        }
    }
}

async fn run_case(fx: &Fixture, profile: &str, words: usize, case: &str) {
    let server = fx.serve().await;
    let id = server
        .create_session_with(json!({ "model": profile }))
        .await;
    let mut stream: EventStream = server.sse(&id, None).await;
    for n in 0..TURNS {
        let input = server.input(&id, &prompt(n, words)).await;
        let result = server.result_of_resuming(&mut stream, &id, input).await;
        assert_eq!(
            result["stop_reason"], "end_turn",
            "{case}, turn {n}: {result}"
        );
        assert_eq!(
            result["text"],
            format!("Answer to {}.", tag(n)),
            "{case}, turn {n}: the answer to its own prompt"
        );
    }
    let calls = fx.server.model_calls();
    let refused = calls.iter().filter(|r| r.refused_for_length).count();
    assert_eq!(refused, 0, "{case}: requests over the window");
    fx.assert_requests_valid();
    let summaries = calls
        .iter()
        .filter(|r| {
            agentbus_testkit::last_user_text(&r.body)
                .is_some_and(|text| text.contains(SUMMARY_REQUEST))
        })
        .count();
    println!(
        "{case}: {} model requests, {summaries} compactions, largest request {} tokens",
        calls.len(),
        calls
            .iter()
            .filter_map(|r| r.input_tokens)
            .max()
            .unwrap_or(0)
    );
    let steps = calls.len() - summaries;
    assert!(
        calls.len() <= steps + steps / 10 + 1,
        "{case}: compactions add more than a tenth to the calls: {} for {steps} steps",
        calls.len()
    );
    server.terminate();
    server.wait().await;
    // The store keeps every prompt.
    let show = fx.run(&["sessions", "show", &id]).await.stdout_text();
    for n in 0..TURNS {
        assert!(
            show.contains(&tag(n)),
            "{case}: prompt {n} missing from the store"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_fits_a_4k_window_openai() {
    matrix("scripted", 4_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_fits_a_4k_window_anthropic() {
    matrix("scripted-anthropic", 4_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_fits_an_8k_window_openai() {
    matrix("scripted", 8_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_fits_an_8k_window_anthropic() {
    matrix("scripted-anthropic", 8_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_fits_a_32k_window_openai() {
    matrix("scripted", 32_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_fits_a_32k_window_anthropic() {
    matrix("scripted-anthropic", 32_000).await;
}
