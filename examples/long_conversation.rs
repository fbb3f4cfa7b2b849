//! A conversation longer than its context budget: with a small
//! `max_tokens`, first the oldest turns are pruned from the model's view
//! (`oldest-first`), then — with the default `summarize` strategy — the
//! model is asked for a summary that stands for the older turns
//! (compaction). The history itself always keeps everything.
//!
//! Talks to the OpenAI-compatible server at `AGENTBUS_EXAMPLE_BASE_URL`
//! (default `http://127.0.0.1:8080/v1`), model `AGENTBUS_EXAMPLE_MODEL`
//! (default `local`). `scripts/run-examples.sh` runs it against the
//! scripted model with `examples/scripts/long_conversation.toml`.

use agentbus_engine::embedded::{
    Agent, AgentMessage, AgentState, ContextConfig, Provider, Strategy,
};

type Error = Box<dyn std::error::Error>;

/// The request budget for pruning: small, so that a few turns overflow it.
const MAX_TOKENS: u64 = 300;

/// The request budget for compaction: a summary is only asked for when
/// the turns it replaces are worth a model call (three summaries' worth
/// and half the budget at least), so the budget holds a few chapters.
const COMPACTION_MAX_TOKENS: u64 = 700;

/// The chapters of a story the user tells, one per turn.
const CHAPTERS: [&str; 6] = [
    "Chapter one: the harbour town wakes before dawn, fishermen mend their nets, gulls argue over scraps, and a girl named Mira watches the grey sea and dreams of the islands beyond the horizon.",
    "Chapter two: Mira finds an old chart in her grandfather's chest, inked with currents and reefs, and a note in the margin promising a lighthouse that shines only for those who are lost.",
    "Chapter three: she repairs a leaking dinghy with pitch and canvas, trades her winter coat for a compass, and sets out at the turn of the tide while the town still sleeps.",
    "Chapter four: a storm drives her far off course, the compass spins, the chart is soaked, and through the rain she sees a faint light blinking on a rock that no map names.",
    "Chapter five: the lighthouse keeper is a woman who knew her grandfather; she tells Mira that he once sailed these waters, and that the light was lit every night waiting for him.",
    "Chapter six: Mira stays the winter, learns to tend the lamp, and in spring she sails home with a new chart of her own, the unnamed rock now marked with her grandfather's name.",
];

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (base_url, model) = server();

    println!("== pruning: oldest-first inside {MAX_TOKENS} tokens");
    let pruning = Agent::builder()
        .provider(Provider::openai(&base_url, &model)?)
        .context(ContextConfig {
            max_tokens: Some(MAX_TOKENS),
            strategy: Some(Strategy::OldestFirst),
            min_recent_turns: Some(1),
            ..Default::default()
        })
        .build()?;
    let mut state = pruning.new_conversation();
    for chapter in &CHAPTERS[..4] {
        state = pruning.continue_conversation(&state, *chapter).await?;
        print_context(&state);
    }
    let report = state.context_report();
    check(
        report.sent_messages < report.history_messages,
        "pruning the oldest turns",
    )?;

    println!("\n== compaction: summarize inside {COMPACTION_MAX_TOKENS} tokens");
    let summarizing = Agent::builder()
        .provider(Provider::openai(&base_url, &model)?)
        .context(ContextConfig {
            max_tokens: Some(COMPACTION_MAX_TOKENS),
            min_recent_turns: Some(1),
            ..Default::default()
        })
        .build()?;
    let mut state = summarizing.new_conversation();
    for chapter in CHAPTERS {
        let mut run = summarizing.continue_with_events(&state, chapter)?;
        while let Some(event) = run.next_event().await {
            // Notices tell what happened to the context: the compaction
            // starting, then its result.
            if let AgentMessage::System(system) = &event.message {
                println!("  [{:?}] {}", system.subtype, system.message);
            }
        }
        state = run.finish().await?;
        print_context(&state);
    }
    println!(
        "\nsummary standing for the older turns ({} compaction(s)):\n  {}",
        state.compactions(),
        state.summary().unwrap_or("(none)")
    );
    check(state.compactions() > 0, "a compaction")?;
    Ok(())
}

/// One line per turn: how full the context is and how much of the
/// history the model's view holds.
fn print_context(state: &AgentState) {
    let report = state.context_report();
    let usage = state
        .context_usage()
        .map(|u| match u.limit {
            Some(limit) => format!("{} of {limit} tokens", u.used),
            None => format!("{} tokens", u.used),
        })
        .unwrap_or_else(|| "unknown".into());
    println!(
        "turn {}: context {usage}; the next request carries {} of {} messages",
        state.turns(),
        report.sent_messages,
        report.history_messages
    );
}

/// The server and model to talk to.
fn server() -> (String, String) {
    let base_url = std::env::var("AGENTBUS_EXAMPLE_BASE_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8080/v1".into());
    let model = std::env::var("AGENTBUS_EXAMPLE_MODEL").unwrap_or_else(|_| "local".into());
    (base_url, model)
}

/// An expectation about what the model did. Against the scripted model
/// (`AGENTBUS_EXAMPLE_CHECK` set, as `scripts/run-examples.sh` does) a
/// failed one is an error; against a real model only a note.
fn check(ok: bool, what: &str) -> Result<(), Error> {
    match (ok, std::env::var_os("AGENTBUS_EXAMPLE_CHECK").is_some()) {
        (true, _) => Ok(()),
        (false, true) => Err(format!("check failed: {what}").into()),
        (false, false) => {
            println!(
                "note: {what} did not happen (the model decides; the scripted one would have)"
            );
            Ok(())
        }
    }
}
