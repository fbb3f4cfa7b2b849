//! Pruning as a pure function: for any history, budget and strategy the
//! view fits the budget (or only the current turn alone, its tool outputs
//! shortened, exceeds it), keeps every tool call with its result, and keeps
//! the latest turn; each strategy on a fixture keeps the expected messages.

use super::compaction;
use super::view::{self, Limits, MARKER_TOKENS, Plan};
use crate::protocol::Strategy as Pruning;
use crate::protocol::{ContentBlock, Message};
use proptest::prelude::*;
use serde_json::json;

fn user(text: &str) -> Message {
    Message::user(text)
}

fn says(text: &str) -> Message {
    Message::Assistant {
        content: vec![ContentBlock::Text { text: text.into() }],
        interrupted: false,
    }
}

fn calls(ids: &[&str]) -> Message {
    Message::Assistant {
        content: ids
            .iter()
            .map(|id| ContentBlock::ToolUse {
                id: id.to_string(),
                name: "bash".into(),
                input: json!({}),
            })
            .collect(),
        interrupted: false,
    }
}

fn result(id: &str, output: &str) -> Message {
    Message::ToolResult {
        call_id: id.into(),
        name: "bash".into(),
        output: output.into(),
        is_error: false,
    }
}

fn limits(budget: u64, strategy: Pruning) -> Limits {
    Limits {
        budget,
        trim_at: budget,
        max_messages: None,
        min_recent_turns: 1,
        keep_tool_output_tokens: 0,
        strategy,
        anchors: Default::default(),
    }
}

/// Five turns; turn 1 (index 2..6) has a tool round with a big output.
fn fixture() -> Vec<Message> {
    vec![
        user("task: fix the build"),
        says("ok"),
        user("look at the log"),
        calls(&["a"]),
        result("a", "huge log"),
        says("the log says X"),
        user("and then?"),
        says("then Y"),
        user("try Z"),
        says("done Z"),
        user("thanks"),
        says("welcome"),
    ]
}

/// Each message costs 10, except the big tool output (index 4), 500.
fn fixture_costs() -> Vec<u64> {
    (0..12).map(|i| if i == 4 { 500 } else { 10 }).collect()
}

fn kept(history: &[Message], plan: &Plan) -> Vec<usize> {
    plan.keep
        .iter()
        .flat_map(|r| r.clone())
        .filter(|i| *i < history.len())
        .collect()
}

#[test]
fn a_conversation_that_fits_is_sent_whole() {
    let history = fixture();
    let plan = view::plan(
        &history,
        0,
        &fixture_costs(),
        &limits(10_000, Pruning::OldestFirst),
    );
    assert_eq!(kept(&history, &plan), (0..12).collect::<Vec<_>>());
    assert!(plan.elided.is_empty());
    assert_eq!(plan.tokens, 610);
}

#[test]
fn old_tool_outputs_become_markers_before_any_turn_is_dropped() {
    let history = fixture();
    let plan = view::plan(
        &history,
        0,
        &fixture_costs(),
        &limits(200, Pruning::OldestFirst),
    );
    assert_eq!(plan.elided, vec![4], "the old big output is the marker");
    assert_eq!(plan.dropped_turns, 0);
    assert_eq!(plan.tokens, 110 + MARKER_TOKENS);
    let sent = view::materialize(&history, &plan, 0, &fixture_costs());
    let Message::ToolResult { output, .. } = &sent[4] else {
        panic!("not a result: {:?}", sent[4]);
    };
    assert!(output.contains("omitted to save context"), "{output}");
    view::check_pairs(&sent).expect("pairs intact");
}

#[test]
fn outputs_within_the_allowance_become_markers_too_when_still_over_budget() {
    let history = fixture();
    let mut limits = limits(140, Pruning::OldestFirst);
    limits.keep_tool_output_tokens = 10_000;
    let plan = view::plan(&history, 0, &fixture_costs(), &limits);
    assert_eq!(plan.elided, vec![4]);
    assert_eq!(plan.dropped_turns, 0, "140 fits: no turn goes");
    assert_eq!(plan.anchors.elided_below, 5, "the next view marks it too");
}

#[test]
fn the_newest_tool_batch_is_never_a_marker_but_is_shortened_to_fit() {
    let output: String = (0..300).map(|n| format!("line {n} of the log\n")).collect();
    let history = vec![user("q"), calls(&["a"]), result("a", &output)];
    let costs = [10, 10, 900];
    let plan = view::plan(&history, 0, &costs, &limits(300, Pruning::OldestFirst));
    assert!(plan.elided.is_empty());
    assert!(!plan.over_budget, "{plan:?}");
    assert_eq!(kept(&history, &plan), vec![0, 1, 2]);
    assert_eq!(plan.shortened, vec![(2, 280)], "what is left of the 300");
    assert_eq!(plan.tokens, 300);
    let sent = view::materialize(&history, &plan, 0, &costs);
    let Message::ToolResult { output: short, .. } = &sent[2] else {
        panic!("not a result: {:?}", sent[2]);
    };
    assert!(short.starts_with("line 0 of the log"), "the head: {short}");
    assert!(
        short.ends_with("line 299 of the log\n"),
        "the tail: {short}"
    );
    assert!(
        short.contains("left out here to fit the context window; run the tool again"),
        "{short}"
    );
    assert!(short.len() < output.len() / 2, "{} bytes", short.len());
    view::check_pairs(&sent).expect("pairs intact");
}

#[test]
fn a_turn_that_cannot_fit_even_shortened_is_over_budget() {
    let history = vec![
        user("a very long question"),
        calls(&["a"]),
        result("a", "big"),
    ];
    let costs = [400, 10, 900];
    let plan = view::plan(&history, 0, &costs, &limits(300, Pruning::OldestFirst));
    assert!(plan.over_budget);
    assert_eq!(plan.shortened, vec![(2, view::SHORTENED_MIN_TOKENS)]);
}

#[test]
fn oldest_first_drops_the_oldest_turns_in_a_step() {
    let history = fixture();
    let plan = view::plan(
        &history,
        0,
        &fixture_costs(),
        &limits(60, Pruning::OldestFirst),
    );
    // After the marker tier: 140 tokens; dropping turns 0 (20), 1 (70)
    // leaves 50, which fits; one more (20) goes to make room for the next
    // turns: 30, under 70 % of the budget.
    assert_eq!(kept(&history, &plan), (8..12).collect::<Vec<_>>());
    assert_eq!(plan.dropped_turns, 3);
    assert!(!plan.over_budget);
    assert_eq!(plan.anchors.floor, 8);
    // The next request, one turn longer, starts at the same place.
    let mut longer = history.clone();
    longer.extend([user("more"), says("sure")]);
    let mut costs = fixture_costs();
    costs.extend([10, 10]);
    let mut next = limits(60, Pruning::OldestFirst);
    next.anchors = plan.anchors;
    let plan = view::plan(&longer, 0, &costs, &next);
    assert_eq!(kept(&longer, &plan), (8..14).collect::<Vec<_>>());
    assert_eq!(plan.anchors.floor, 8, "the start stays");
}

#[test]
fn middle_out_keeps_the_task_and_the_recent_turns() {
    let history = fixture();
    let plan = view::plan(
        &history,
        0,
        &fixture_costs(),
        &limits(70, Pruning::MiddleOut),
    );
    assert_eq!(kept(&history, &plan), vec![0, 1, 8, 9, 10, 11]);
}

#[test]
fn recent_turns_keeps_only_the_last_n_turns_even_when_all_fit() {
    let history = fixture();
    let plan = view::plan(
        &history,
        0,
        &fixture_costs(),
        &limits(10_000, Pruning::RecentTurns(2)),
    );
    assert_eq!(kept(&history, &plan), (8..12).collect::<Vec<_>>());
}

#[test]
fn max_messages_drops_whole_turns() {
    let history = fixture();
    let mut limits = limits(10_000, Pruning::OldestFirst);
    limits.max_messages = Some(5);
    let plan = view::plan(&history, 0, &fixture_costs(), &limits);
    assert_eq!(kept(&history, &plan), (8..12).collect::<Vec<_>>());
}

#[test]
fn recent_turns_that_do_not_fit_go_too_down_to_the_current_turn() {
    let history = fixture();
    let mut limits = limits(30, Pruning::OldestFirst);
    limits.min_recent_turns = 3;
    let plan = view::plan(&history, 0, &fixture_costs(), &limits);
    assert_eq!(kept(&history, &plan), (10..12).collect::<Vec<_>>());
    assert_eq!(plan.dropped_recent, 2, "two of the three recent turns");
    assert!(!plan.over_budget);
    // When they fit, all three stay.
    let mut roomy = limits.clone();
    roomy.budget = 60;
    roomy.trim_at = 60;
    let plan = view::plan(&history, 0, &fixture_costs(), &roomy);
    assert_eq!(kept(&history, &plan), (6..12).collect::<Vec<_>>());
    assert_eq!(plan.dropped_recent, 0);
}

#[test]
fn a_summary_span_ends_before_the_recent_turns() {
    let history = fixture();
    assert_eq!(compaction::span_end(&history, 0, 2), Some(8));
    assert_eq!(compaction::span_end(&history, 0, 5), None);
    assert_eq!(compaction::span_end(&history, 8, 1), Some(10));
}

#[test]
fn the_pairing_check_names_what_is_broken() {
    let orphan = vec![user("q"), result("a", "x")];
    let error = view::check_pairs(&orphan).expect_err("orphan result");
    assert!(error.contains("`a`"), "{error}");
    let unanswered = vec![user("q"), calls(&["b"]), user("next")];
    let error = view::check_pairs(&unanswered).expect_err("unanswered call");
    assert!(error.contains("`b`"), "{error}");
}

/// A random valid history: turns of a user message, then rounds of tool
/// calls with their results, then (usually) a text answer.
fn history_strategy() -> impl proptest::strategy::Strategy<Value = (Vec<Message>, Vec<u64>)> {
    let turn = (0..3usize, 1..3usize, any::<bool>(), 1..400u64);
    proptest::collection::vec(turn, 1..25).prop_map(|turns| {
        let mut history = Vec::new();
        let mut costs = Vec::new();
        for (t, (rounds, width, answered, size)) in turns.into_iter().enumerate() {
            history.push(user(&format!("q{t}")));
            costs.push(5 + size % 40);
            for r in 0..rounds {
                let ids: Vec<String> = (0..width).map(|w| format!("c{t}_{r}_{w}")).collect();
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                history.push(calls(&refs));
                costs.push(12);
                for id in &ids {
                    history.push(result(id, "out"));
                    costs.push(size);
                }
            }
            if answered || rounds == 0 {
                history.push(says("a"));
                costs.push(8 + size % 30);
            }
        }
        (history, costs)
    })
}

fn strategy_strategy() -> impl proptest::strategy::Strategy<Value = Pruning> {
    prop_oneof![
        Just(Pruning::OldestFirst),
        Just(Pruning::MiddleOut),
        (1..5usize).prop_map(Pruning::RecentTurns),
    ]
}

proptest! {
    #[test]
    fn every_view_fits_keeps_pairs_and_the_latest_turn(
        (history, costs) in history_strategy(),
        budget in 20..3_000u64,
        trim_share in 50..=100u64,
        min_recent in 0..4usize,
        keep_tool in 0..800u64,
        max_messages in proptest::option::of(1..40usize),
        strategy in strategy_strategy(),
        anchors in (0..120usize, 0..120usize),
    ) {
        // What a last request kept (anywhere, even past this history).
        let limits = Limits {
            budget,
            trim_at: budget * trim_share / 100,
            max_messages,
            min_recent_turns: min_recent,
            keep_tool_output_tokens: keep_tool,
            strategy,
            anchors: view::Anchors { floor: anchors.0, elided_below: anchors.1 },
        };
        let plan = view::plan(&history, 0, &costs, &limits);
        let sent = view::materialize(&history, &plan, 0, &costs);
        prop_assert!(view::check_pairs(&sent).is_ok(), "{:?}", view::check_pairs(&sent));
        // The estimate is what is sent.
        let cost: u64 = plan.keep.iter().flat_map(|r| r.clone())
            .map(|i| match plan.shortened.iter().find(|(at, _)| *at == i) {
                _ if plan.elided.contains(&i) => MARKER_TOKENS,
                Some((_, keep)) => *keep,
                None => costs[i],
            })
            .sum();
        prop_assert_eq!(cost, plan.tokens);
        // The latest turn is always there, whole.
        let turns = view::turns(&history, 0);
        let last = turns.last().cloned().unwrap_or(0..0);
        prop_assert!(plan.keep.iter().any(|r| r.start <= last.start && r.end == last.end));
        // Only the current turn's outputs are ever shortened.
        for (i, _) in &plan.shortened {
            prop_assert!(last.contains(i));
        }
        // Over the budget (or the message count) only with the current
        // turn alone left.
        let kept_turns = turns.iter().filter(|t| plan.keep.iter().any(|r| r.contains(&t.start))).count();
        if plan.over_budget || max_messages.is_some_and(|m| plan.len() > m) {
            prop_assert_eq!(kept_turns, 1.min(turns.len()));
        } else {
            prop_assert!(plan.tokens <= budget);
        }
        // The recent turns go only when they did not fit.
        if plan.dropped_recent > 0 {
            prop_assert!(kept_turns < min_recent.max(1));
        }
        // Markers only ever stand for tool results.
        for i in &plan.elided {
            let is_result = matches!(history[*i], Message::ToolResult { .. });
            prop_assert!(is_result);
        }
    }
}

/// The figures the README reports: `cargo test --release -p
/// agentbus-engine --lib context_benchmark_report -- --ignored --nocapture`.
/// Times are printed, not asserted (speed belongs in benchmarks).
#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn context_benchmark_report() {
    use crate::session::core::{SessionConfig, SessionState};
    use std::time::Instant;

    fn median(mut samples: Vec<f64>) -> f64 {
        samples.sort_by(|a, b| a.total_cmp(b));
        samples[samples.len() / 2]
    }
    // 10,000 messages: 2,500 turns of a question, a tool call, its output
    // and an answer.
    let mut history = Vec::new();
    for t in 0..2_500 {
        history.push(user(&format!(
            "question {t}: please look at file {t}.rs and fix it"
        )));
        history.push(calls(&[&format!("c{t}")]));
        history.push(result(
            &format!("c{t}"),
            &"fn main() { println!(\"hello\"); }\n".repeat(20),
        ));
        history.push(says(&format!("Fixed file {t}.rs: the call was wrong.")));
    }
    let costs: Vec<u64> = history.iter().map(crate::tokens::byte_bound).collect();
    let limits = Limits {
        budget: 100_000,
        trim_at: 80_000,
        max_messages: None,
        min_recent_turns: 3,
        keep_tool_output_tokens: 8_000,
        strategy: Pruning::OldestFirst,
        anchors: Default::default(),
    };
    let plan_ms = median(
        (0..51)
            .map(|_| {
                let start = Instant::now();
                let plan = view::plan(&history, 0, &costs, &limits);
                std::hint::black_box(&plan);
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    );
    println!("pruning plan, 10,000 messages: {plan_ms:.3} ms (median of 51)");

    let config = SessionConfig {
        system_prompt: "You are a coding agent.".into(),
        tool_prompts: String::new(),
        agents: Default::default(),
        commands: Default::default(),
        skills: Default::default(),
        task_tool: false,
        plan_tool: false,
        instructions: Default::default(),
        max_steps: 50,
        include_partial_messages: true,
        models: vec![crate::protocol::ModelInfo {
            name: "m".into(),
            provider: "openai".into(),
            model: "gpt-4.1-mini".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            context_window: Some(128_000),
            max_output_tokens: Some(8_000),
            context: None,
            pricing: None,
            key_missing: None,
            images: false,
        }]
        .into(),
        workspace: "/ws".into(),
        context: Default::default(),
        compact_prompt: "summarise".into(),
        // Rules of the conversation, not of permissions: every call runs.
        permissions: crate::session::core::permission::PermissionConfig {
            mode: crate::protocol::PermissionMode::Bypass,
            sandboxed: true,
            ..Default::default()
        },
        mcp_first_turn_wait_ms: 10_000,
        hooks: Default::default(),
    };
    let mut state = SessionState::new(
        crate::protocol::SessionId::from("bench"),
        config,
        "m".into(),
        Default::default(),
    );
    state.history = history;
    let start = Instant::now();
    let first = super::report(&mut state);
    let first_ms = start.elapsed().as_secs_f64() * 1000.0;
    println!(
        "first count (tokenizer load + 10,000 messages): {first_ms:.1} ms ({} tokens)",
        first.used
    );
    let estimate_ms = median(
        (0..51)
            .map(|_| {
                let start = Instant::now();
                let next = super::prepare(&mut state, false);
                std::hint::black_box(&next);
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    );
    println!(
        "per-request estimate and view, 10,000 messages, after the first count: {estimate_ms:.3} ms (median of 51; includes copying the messages sent)"
    );
    let assess_ms = median(
        (0..51)
            .map(|_| {
                let start = Instant::now();
                let report = super::report(&mut state);
                std::hint::black_box(&report);
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    );
    println!("per-request estimate alone (counts cached), 10,000 messages: {assess_ms:.3} ms");
}

#[test]
fn calibration_learns_the_overhead_from_the_first_request() {
    use super::ledger::{Counted, Ledger};
    let request = |fingerprint: u64, messages: u64| Counted {
        fingerprint,
        summary: 0,
        fixed: 2_000,
        messages,
        summary_tokens: 0,
        view: Vec::new(),
        uncounted: false,
    };
    let mut ledger = Ledger::default();
    // A server that ignores the tools (overhead 200, not our 2,000).
    ledger.observe(request(7, 10), 200 + 13);
    assert_eq!(
        ledger.overhead(7, 2_000),
        203,
        "first: the overhead, at ratio 1"
    );
    // Requests without a view (a custom strategy's) teach nothing more.
    ledger.observe(request(7, 3_000), 200 + 3_900);
    assert_eq!(ledger.correction, 1.0);
    assert_eq!(ledger.overhead(7, 2_000), 203);
    // Another system prompt or tool list: our own count, scaled.
    assert_eq!(ledger.overhead(8, 2_000), 2_000, "ours, at ratio 1");
    // First seen with many messages: shared out in proportion to our
    // counts.
    let mut ledger = Ledger::default();
    ledger.observe(request(9, 6_000), 4_000);
    assert_eq!(ledger.overhead(9, 2_000), 1_000);
    assert!(
        (ledger.correction - 0.5).abs() < 0.01,
        "{}",
        ledger.correction
    );
    // A refusal makes every figure count higher.
    let before = ledger.correction;
    ledger.distrust();
    assert!(ledger.correction > before);
    assert_eq!(ledger.overhead(9, 2_000), 1_250);
}

#[test]
fn what_is_left_of_a_count_teaches_what_the_new_messages_cost() {
    use super::ledger::{Counted, Ledger, Sent};
    let history = vec![
        user("the build failed on the release branch after the last merge of the parser work"),
        says("Looking at the log now."),
        user("and the tests too, the whole suite, every one of them"),
    ];
    let mut ledger = Ledger::default();
    let ours = ledger.estimates(&history, 0);
    assert!(ours[0] >= 16, "{ours:?}");
    let request = |view: Vec<(usize, Sent)>, messages: u64| Counted {
        fingerprint: 7,
        summary: 0,
        fixed: 500,
        messages,
        summary_tokens: 0,
        view,
        uncounted: false,
    };
    // First the question alone: the overhead, and the question at ratio 1.
    ledger.observe(request(vec![(0, Sent::Whole)], ours[0]), 400 + ours[0]);
    assert_eq!(ledger.overhead(7, 500), 400);
    // Then the answer and a second question: the provider counts those
    // two at twice ours.
    let appended = ours[1] + ours[2];
    let all = vec![(0, Sent::Whole), (1, Sent::Whole), (2, Sent::Whole)];
    ledger.observe(
        request(all.clone(), ours[0] + appended),
        400 + ours[0] + 2 * appended,
    );
    assert!(
        (ledger.correction - 2.0).abs() < 0.01,
        "{}",
        ledger.correction
    );
    let learnt = ledger.estimates(&history, 0);
    assert_eq!(learnt[0], ours[0], "counted at ratio 1 the first time");
    assert!(learnt[1].abs_diff(ours[1] * 2) <= 1, "{learnt:?} {ours:?}");
    assert!(learnt[2].abs_diff(ours[2] * 2) <= 1, "{learnt:?} {ours:?}");
    // When what we estimate (a long shortened output) outweighs the new
    // messages, nothing is learnt: its error would swamp them.
    let mut other = Ledger::default();
    other.estimates(&history, 0);
    other.observe(request(vec![(0, Sent::Whole)], ours[0]), 400 + ours[0]);
    let before = other.correction;
    other.observe(
        request(
            vec![
                (0, Sent::Shortened(5_000)),
                (1, Sent::Whole),
                (2, Sent::Whole),
            ],
            5_000 + appended,
        ),
        400 + 4_000 + 2 * appended,
    );
    assert_eq!(other.correction, before);
    // A request whose messages were all counted before reads the
    // overhead again, exactly.
    ledger.observe(
        request(all, ours[0] + appended),
        380 + ours[0] + 2 * appended,
    );
    assert_eq!(ledger.overhead(7, 500), 380);
    // Another profile starts over.
    ledger.use_profile("another");
    assert_eq!(ledger.estimates(&history, 0), ours);
}
