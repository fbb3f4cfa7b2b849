//! Prompt caching's figures (README, "Prompt caching figures"): the same 40-turn session
//! on each wire — OpenAI Chat Completions and Responses with `gpt-5.1`
//! (counted with `o200k_base`, as OpenAI counts), Anthropic Messages with
//! `claude-sonnet-4-6` — against the scripted model caching prompts as
//! each provider does, once with caching on (the default) and once with
//! `cache = "off"` on the profile. Each turn is a question, a `read_file`
//! of a ~200-line source file, and the answer.
//!
//! The figures are agentbus's own (each turn's `result` usage, `/usage`'s
//! cost), cross-checked with what the scripted model recorded call by call,
//! and the targets are asserted on every wire: from the third turn
//! on at least 80 % of each turn's input is read from the cache, and the
//! session's input costs at most a third of what it costs uncached.
//! `cargo test --test all caching_figures -- --nocapture` prints them.

use crate::support::server::{EventStream, Server};
use crate::support::*;
use agentbus_testkit::{RecordedRequest, Script};
use serde_json::{Value, json};
use std::fmt::Write as _;

const TURNS: usize = 40;
/// The workspace's source files; turn `n` reads file `n % FILES`.
const FILES: usize = 10;
/// Large enough that nothing is left out of a request in 40 turns.
const CONTEXT_WINDOW: u64 = 200_000;
/// The turn (1-based) from which the targets hold.
const FROM_TURN: usize = 3;

/// One wire, its model and the prices it is billed at (USD per million
/// tokens).
struct Wire {
    name: &'static str,
    provider: &'static str,
    model: &'static str,
    input: f64,
    output: f64,
    /// What a cache read costs: set on OpenAI's profiles (OpenAI's price
    /// for the model's cached input), Anthropic's default otherwise.
    cache_read: f64,
    /// What a cache write costs: OpenAI bills none (its usage has no
    /// writes); Anthropic's default for five-minute entries.
    cache_write: f64,
    /// Profile keys beyond the common ones.
    keys: &'static str,
}

/// `gpt-5.1`: $1.25 input, $0.125 cached input, $10 output per million
/// tokens (OpenAI's price list; cached input is a tenth of the input
/// price across the gpt-5 family).
const CHAT: Wire = Wire {
    name: "OpenAI Chat Completions",
    provider: "openai",
    model: "gpt-5.1",
    input: 1.25,
    output: 10.0,
    cache_read: 0.125,
    cache_write: 1.25,
    keys: "cache_read_per_mtok = 0.125\nmax_tokens_field = \"max_completion_tokens\"\n",
};

const RESPONSES: Wire = Wire {
    name: "OpenAI Responses",
    provider: "openai-responses",
    model: "gpt-5.1",
    input: 1.25,
    output: 10.0,
    cache_read: 0.125,
    cache_write: 1.25,
    keys: "cache_read_per_mtok = 0.125\n",
};

/// `claude-sonnet-4-6`: $3 input, $15 output; cache prices left unset, so
/// agentbus charges Anthropic's: reads 0.1x ($0.30), five-minute writes
/// 1.25x ($3.75) the input price.
const ANTHROPIC: Wire = Wire {
    name: "Anthropic Messages",
    provider: "anthropic",
    model: "claude-sonnet-4-6",
    input: 3.0,
    output: 15.0,
    cache_read: 0.3,
    cache_write: 3.75,
    keys: "",
};

/// Input tokens as billed: uncached, read from the cache, written to it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Billed {
    uncached: u64,
    read: u64,
    written: u64,
    output: u64,
}

impl Billed {
    fn of(usage: &Value) -> Billed {
        let n = |key: &str| usage[key].as_u64().unwrap_or(0);
        Billed {
            uncached: n("input_tokens"),
            read: n("cache_read_input_tokens"),
            written: n("cache_creation_input_tokens"),
            output: n("output_tokens"),
        }
    }

    /// All input tokens, however billed.
    fn input(&self) -> u64 {
        self.uncached + self.read + self.written
    }

    /// The share of the input read from the cache.
    fn share(&self) -> f64 {
        self.read as f64 / self.input() as f64
    }

    fn add(self, other: Billed) -> Billed {
        Billed {
            uncached: self.uncached + other.uncached,
            read: self.read + other.read,
            written: self.written + other.written,
            output: self.output + other.output,
        }
    }

    fn sum<'a>(all: impl IntoIterator<Item = &'a Billed>) -> Billed {
        all.into_iter().fold(Billed::default(), |a, b| a.add(*b))
    }

    /// The input's cost at `wire`'s prices, in USD.
    fn input_cost(&self, wire: &Wire) -> f64 {
        (self.uncached as f64 * wire.input
            + self.read as f64 * wire.cache_read
            + self.written as f64 * wire.cache_write)
            / 1e6
    }

    /// The input's cost had nothing been cached.
    fn uncached_cost(&self, wire: &Wire) -> f64 {
        self.input() as f64 * wire.input / 1e6
    }
}

/// What one session reported and what the scripted model saw.
struct Run {
    /// Each turn's `result` usage.
    turns: Vec<Billed>,
    /// `/usage`'s `cost_usd`.
    cost: f64,
    calls: Vec<RecordedRequest>,
}

impl Run {
    fn total(&self) -> Billed {
        Billed::sum(&self.turns)
    }

    /// The turns from [`FROM_TURN`] on, together.
    fn late_turns(&self) -> Billed {
        Billed::sum(&self.turns[FROM_TURN - 1..])
    }

    /// `/usage`'s cost less the output's: what the input cost.
    fn input_cost(&self, wire: &Wire) -> f64 {
        self.cost - self.total().output as f64 * wire.output / 1e6
    }
}

/// The source file turn `i % FILES` reads: 16 functions, ~200 lines.
fn source_file(i: usize) -> String {
    let mut text = format!(
        "//! Stage {i} of the pipeline: sixteen steps over the input's values.\n\n\
         use crate::pipeline::{{Input, Output, Stage}};\n\n"
    );
    for f in 0..16 {
        let (k, limit) = (7 + 3 * i + f, 1000 * (i + 1) + 37 * f);
        write!(
            text,
            "/// Step {f} of stage {i}: scales each value by {k} and stops past {limit}.\n\
             pub fn step_{i}_{f}(input: &Input, stage: &mut Stage) -> Output {{\n    \
             let mut total = 0u64;\n    \
             for (n, value) in input.values.iter().enumerate() {{\n        \
             total += value * {k} + n as u64;\n        \
             stage.seen += 1;\n    \
             }}\n    \
             if total > {limit} {{\n        \
             return Output::Overflow(total - {limit});\n    \
             }}\n    \
             Output::Value(total)\n\
             }}\n\n"
        )
        .expect("write to a string");
    }
    text
}

/// Each turn: the model thinks, reads the file the question is about,
/// thinks again and answers (thinking: Anthropic's signed blocks and the
/// Responses wire's reasoning items go back with every later request).
fn script() -> String {
    let mut script = format!("prompt_caching = true\ncontext_window = {CONTEXT_WINDOW}\n");
    for n in 0..TURNS {
        let i = n % FILES;
        let f = n % 16;
        script.push_str(&format!(
            "[[response]]\nthinking = \"The question is about step_{i}_{f}; its body is in src/stage{i}.rs, which I have to read first.\"\n\
             text = \"Let me read src/stage{i}.rs.\"\n\
             tool_calls = [{{ name = \"read_file\", arguments = '{{\"path\":\"src/stage{i}.rs\"}}' }}]\n\
             [[response]]\nthinking = \"step_{i}_{f} scales by {k} and compares the total with {limit}.\"\n\
             text = \"`step_{i}_{f}` multiplies each input value by {k}, adds its index and counts it in `stage.seen`; \
             once the total passes {limit} it returns `Output::Overflow` with the excess instead of `Output::Value`. \
             Nothing else in src/stage{i}.rs calls it: the pipeline calls the steps in order.\"\n",
            k = 7 + 3 * i + f,
            limit = 1000 * (i + 1) + 37 * f,
        ));
    }
    script
}

/// The `n`th question (0-based).
fn question(n: usize) -> String {
    format!(
        "Question {}: what does step_{}_{} in src/stage{}.rs do, and when does it overflow?",
        n + 1,
        n % FILES,
        n % 16,
        n % FILES
    )
}

/// `wire`'s profile `figures`, caching on or off.
fn profile(fx: &Fixture, wire: &Wire, caching: bool) -> String {
    let base = match wire.provider {
        "anthropic" => fx.server.anthropic_base_url(),
        _ => fx.server.openai_base_url(),
    };
    format!(
        "[models.figures]\nprovider = \"{}\"\nmodel = \"{}\"\nbase_url = \"{base}\"\napi_key = \"{SECRET}\"\n\
         retry_base_delay_ms = 1\ncontext_window = {CONTEXT_WINDOW}\nmax_output_tokens = 8192\n\
         input_per_mtok = {}\noutput_per_mtok = {}\n{}{}",
        wire.provider,
        wire.model,
        wire.input,
        wire.output,
        wire.keys,
        if caching { "" } else { "cache = \"off\"\n" },
    )
}

/// The reply to a slash command.
async fn command(server: &Server, stream: &mut EventStream, id: &str, text: &str) -> Value {
    let input = server.input(id, text).await;
    stream
        .until(|e| e["type"] == "system" && e["turn_id"] == input)
        .await
}

/// The 40 turns on `wire`, caching on or off, each against a scripted
/// model of its own (so that nothing cached by one run is read by another).
async fn session(wire: &Wire, caching: bool) -> Run {
    let fx = Fixture::with_script(Script::from_toml_str(&script()).expect("script")).await;
    std::fs::create_dir(fx.workspace().join("src")).expect("mkdir src");
    for i in 0..FILES {
        std::fs::write(
            fx.workspace().join(format!("src/stage{i}.rs")),
            source_file(i),
        )
        .expect("write a source file");
    }
    fx.add_config(&profile(&fx, wire, caching));
    let server = fx.serve().await;
    let id = server
        .create_session_with(json!({"model": "figures"}))
        .await;
    let mut stream = server.sse(&id, None).await;
    let mut turns = Vec::with_capacity(TURNS);
    for n in 0..TURNS {
        let input = server.input(&id, &question(n)).await;
        let result = server.result_of_resuming(&mut stream, &id, input).await;
        assert_eq!(
            result["stop_reason"],
            "end_turn",
            "{}, turn {}: {result}",
            wire.name,
            n + 1
        );
        turns.push(Billed::of(&result["usage"]));
    }
    let usage = command(&server, &mut stream, &id, "/usage").await;
    assert_eq!(usage["subtype"], "usage", "{usage}");
    assert_eq!(
        Billed::of(&usage["data"]["session"]),
        Billed::sum(&turns),
        "{}: /usage's totals are the turns'",
        wire.name
    );
    let cost = usage["data"]["cost_usd"].as_f64().expect("a cost");
    server.terminate();
    server.wait().await;
    fx.assert_requests_valid();
    Run {
        turns,
        cost,
        calls: fx.server.model_calls(),
    }
}

/// What the scripted model billed `calls`: the input it counted, what
/// its cache read and what it wrote.
fn recorded(calls: &[RecordedRequest]) -> (u64, u64, u64) {
    calls
        .iter()
        .fold((0, 0, 0), |(input, read, written), call| {
            let cache = call.cache.unwrap_or_default();
            (
                input + call.input_tokens.expect("counted"),
                read + cache.read,
                written + cache.written(),
            )
        })
}

/// How many `cache_control` marks `value` carries, wherever they are.
fn marks(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            usize::from(map.contains_key("cache_control")) + map.values().map(marks).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(marks).sum(),
        _ => 0,
    }
}

/// The checks every run passes: two model calls per turn, each turn's
/// figures the scripted model's for its calls, `/usage`'s cost the
/// figures at the stated prices.
fn check_run(wire: &Wire, run: &Run, caching: bool) {
    let label = format!(
        "{} (caching {})",
        wire.name,
        if caching { "on" } else { "off" }
    );
    assert_eq!(
        run.calls.len(),
        2 * TURNS,
        "{label}: a tool round and an answer per turn"
    );
    // Nothing left out: every request is the one before it and more.
    for pair in run.calls.windows(2) {
        assert!(
            pair[1].input_tokens > pair[0].input_tokens,
            "{label}: a request shorter than the one before it: {:?} after {:?}",
            pair[1].input_tokens,
            pair[0].input_tokens
        );
    }
    for (n, turn) in run.turns.iter().enumerate() {
        let (input, read, written) = recorded(&run.calls[2 * n..2 * n + 2]);
        assert_eq!(
            (turn.input(), turn.read, turn.written),
            (input, read, written),
            "{label}, turn {}: agentbus reported what the provider billed",
            n + 1
        );
    }
    // The model's thinking goes back with every later request: the last
    // carries that of every answer before it (Chat Completions sends none
    // back).
    let last = &run.calls[2 * TURNS - 1].body;
    let sent_back = match wire.provider {
        "anthropic" => last["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "thinking")
            .count(),
        "openai-responses" => last["input"]
            .as_array()
            .expect("input")
            .iter()
            .filter(|item| item["type"] == "reasoning")
            .count(),
        _ => 0,
    };
    let expected = if wire.provider == "openai" {
        0
    } else {
        2 * TURNS - 1
    };
    assert_eq!(sent_back, expected, "{label}: thinking sent back");
    let total = run.total();
    let expected = total.input_cost(wire) + total.output as f64 * wire.output / 1e6;
    assert!(
        (run.cost - expected).abs() < 1e-9,
        "{label}: /usage's cost {} != {expected} at the stated prices",
        run.cost
    );
    for call in &run.calls {
        let marks = marks(&call.body);
        let key = call.body.get("prompt_cache_key").is_some();
        match (wire.provider, caching) {
            ("anthropic", true) => assert!((1..=4).contains(&marks), "{label}: {marks} marks"),
            ("openai-responses", true) => assert!(key, "{label}: the session is the cache key"),
            // Chat Completions sends the key to https://api.openai.com only.
            _ => assert!(marks == 0 && !key, "{label}: nothing asks for caching"),
        }
    }
}

/// The figures of a wire, on and off, as printed.
fn report(wire: &Wire, on: &Run, off: &Run) -> String {
    let mut out = format!(
        "\n== {} ({}; ${}/${}/${}/${} per MTok input/cache read/cache write/output) ==\n",
        wire.name, wire.model, wire.input, wire.cache_read, wire.cache_write, wire.output
    );
    for (label, run) in [("on", on), ("off", off)] {
        let total = run.total();
        let third = run.late_turns();
        writeln!(
            out,
            "caching {label:>3}: {} input tokens: {} uncached, {} cache reads, {} cache writes ({:.1}% read; {:.1}% from turn {FROM_TURN} on); {} output",
            total.input(),
            total.uncached,
            total.read,
            total.written,
            total.share() * 100.0,
            third.share() * 100.0,
            total.output,
        )
        .expect("write to a string");
        writeln!(
            out,
            "             input cost ${:.4} (uncached ${:.4}: {:.1}%); /usage ${:.4} with output",
            run.input_cost(wire),
            total.uncached_cost(wire),
            run.input_cost(wire) / total.uncached_cost(wire) * 100.0,
            run.cost,
        )
        .expect("write to a string");
    }
    writeln!(
        out,
        "last request: {} input tokens (context window {CONTEXT_WINDOW}: nothing left out)",
        on.calls.last().and_then(|c| c.input_tokens).unwrap_or(0)
    )
    .expect("write to a string");
    let shares: Vec<String> = on
        .turns
        .iter()
        .map(|t| format!("{:.0}", t.share() * 100.0))
        .collect();
    writeln!(
        out,
        "share read per turn, caching on (%): {}",
        shares.join(" ")
    )
    .expect("write to a string");
    out
}

/// Both runs on `wire`, their figures printed and the targets asserted.
async fn figures(wire: Wire) {
    let (on, off) = tokio::join!(session(&wire, true), session(&wire, false));
    check_run(&wire, &on, true);
    check_run(&wire, &off, false);
    println!("{}", report(&wire, &on, &off));

    // The same conversation both times, whole in every request: the same
    // input, give or take the workspace's path in the system prompt.
    let (a, b) = (on.total().input() as f64, off.total().input() as f64);
    assert!(
        (a - b).abs() / a < 0.001,
        "{}: {a} vs {b} input tokens",
        wire.name
    );

    // The targets, on every wire: from the third turn on, each turn reads
    // at least 80 % of its input from the cache; the input costs at most a
    // third of its price uncached.
    for (n, turn) in on.turns.iter().enumerate().skip(FROM_TURN - 1) {
        assert!(
            turn.share() >= 0.8,
            "{}, turn {}: only {:.1}% of the input read from the cache: {turn:?}",
            wire.name,
            n + 1,
            turn.share() * 100.0
        );
    }
    let input_cost = on.input_cost(&wire);
    let uncached = on.total().uncached_cost(&wire);
    assert!(
        input_cost <= uncached / 3.0,
        "{}: the input cost ${input_cost:.4} with caching, ${uncached:.4} uncached",
        wire.name
    );

    // With `cache = "off"`: Anthropic caches nothing that is not marked,
    // so the input is billed whole at the input price. OpenAI caches every
    // prompt of 1,024 tokens or more whatever the request says: `off` only
    // leaves out the session's `prompt_cache_key`, and the bill is the same.
    let (off_total, off_cost) = (off.total(), off.input_cost(&wire));
    if wire.provider == "anthropic" {
        assert_eq!((off_total.read, off_total.written), (0, 0), "{off_total:?}");
        assert!((off_cost - off_total.uncached_cost(&wire)).abs() < 1e-9);
        assert!(
            input_cost <= off_cost / 3.0,
            "{}: the input cost ${input_cost:.4} with caching on, ${off_cost:.4} with it off",
            wire.name
        );
    } else {
        assert!(
            (off_cost - input_cost).abs() / input_cost < 0.01,
            "{}: OpenAI caches with `cache = \"off\"` too: ${off_cost:.4} off, ${input_cost:.4} on",
            wire.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_reads_most_of_its_input_from_the_cache_at_a_third_of_the_cost() {
    figures(CHAT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_reads_most_of_its_input_from_the_cache_at_a_third_of_the_cost() {
    figures(RESPONSES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_reads_most_of_its_input_from_the_cache_at_a_third_of_the_cost() {
    figures(ANTHROPIC).await;
}
