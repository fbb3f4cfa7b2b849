//! The library face through its public API, against [`ScriptedProvider`].

use super::{
    Agent, AgentBuilder, AgentError, AgentMessage, AgentState, ContextConfig, Message,
    ScriptedProvider, ScriptedReply, StopReason, Tool, ToolContext, ToolError, ToolOrigin,
    ToolOutput, ToolSpec,
};
use crate::model::ModelRequest;
use crate::protocol::{SystemSubtype, UserInput};
use crate::provider::ModelClient;
use crate::session::core::{Input, step};
use crate::tools::test_tools::Forever;
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Adds two numbers.
struct Add;

impl Tool for Add {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "add".into(),
            description: "Add two numbers.".into(),
            input_schema: std::sync::Arc::new(json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            })),
            origin: ToolOrigin::Builtin,
        }
    }

    fn call(
        &self,
        input: Value,
        _: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let number = |key: &str| {
                input[key]
                    .as_f64()
                    .ok_or_else(|| ToolError::InvalidArguments {
                        tool: "add".into(),
                        detail: format!("`{key}` must be a number"),
                    })
            };
            Ok(ToolOutput::ok((number("a")? + number("b")?).to_string()))
        })
    }
}

fn builder(provider: &Arc<ScriptedProvider>) -> AgentBuilder {
    Agent::builder()
        .provider(provider.clone())
        .workspace(std::env::temp_dir())
        .project_instructions(false)
        .tool(Add)
}

fn scripted(replies: impl IntoIterator<Item = ScriptedReply>) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::with_replies(replies))
}

fn types(events: &[crate::protocol::EventEnvelope]) -> Vec<&'static str> {
    events.iter().map(|e| e.message.type_name()).collect()
}

fn notices(state: &AgentState) -> Vec<String> {
    state
        .events()
        .iter()
        .filter_map(|e| match &e.message {
            AgentMessage::System(s) => Some(s.message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn run_answers_a_prompt_to_the_end() {
    let provider = scripted([ScriptedReply::text("Hello!")]);
    let agent = builder(&provider).build().unwrap();
    let state = agent.run("Hi").await.unwrap();
    assert_eq!(state.final_text(), Some("Hello!"));
    assert_eq!(state.last_text().as_deref(), Some("Hello!"));
    assert_eq!(state.history().len(), 2);
    assert_eq!(state.turns(), 1);
    assert_eq!(state.usage().output_tokens, 2, "`Hello!` is two tokens");
    assert_eq!(
        state.last_result().map(|r| r.stop_reason),
        Some(StopReason::EndTurn)
    );
    assert!(state.is_finished());
    assert_eq!(
        types(state.events()),
        ["system", "user", "assistant", "result"]
    );
}

#[tokio::test]
async fn run_with_events_yields_user_to_result_in_seq_order() {
    let provider = scripted([ScriptedReply::text("Hello!")]);
    let agent = builder(&provider).build().unwrap();
    let mut run = agent.run_with_events("Hi");
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        events.push(event);
    }
    assert_eq!(types(&events), ["user", "assistant", "result"]);
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [2, 3, 4], "session_started is seq 1");
    assert!(events.iter().all(|e| e.turn_id == Some(1)));
    let state = run.finish().await.unwrap();
    assert_eq!(&state.events()[1..], &events[..]);
}

/// An embedded agent has no MCP servers, so its first turn never waits
/// for one (above: `user`, `assistant`, `result`). Were its core ever to
/// wait (a state that says a server is on its first start), the driver
/// ends the wait at once — nothing can come up here — instead of stalling.
#[tokio::test]
async fn an_agent_never_stalls_waiting_for_mcp_servers() {
    let provider = scripted([ScriptedReply::text("Hello!")]);
    let agent = builder(&provider).build().unwrap();
    let mut state = agent.new_conversation();
    state.session.mcp_wait.first_start = ["elsewhere".to_string()].into();
    let mut run = agent.continue_with_events(&state, "Hi").unwrap();
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        events.push(event);
    }
    assert_eq!(
        types(&events),
        ["user", "system", "system", "assistant", "result"]
    );
    let subtypes: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.message {
            AgentMessage::System(s) => Some(s.subtype),
            _ => None,
        })
        .collect();
    assert_eq!(subtypes, [SystemSubtype::McpWaiting, SystemSubtype::Notice]);
    let state = run.finish().await.unwrap();
    assert_eq!(state.final_text(), Some("Hello!"));
}

#[tokio::test]
async fn partial_messages_stream_when_asked_for_and_are_not_kept() {
    let provider = scripted([ScriptedReply::text("Hello there")]);
    let agent = builder(&provider)
        .include_partial_messages(true)
        .build()
        .unwrap();
    let run = agent.run_with_events("Hi");
    let events: Vec<_> = run.collect().await;
    assert_eq!(events.first().map(|e| e.message.type_name()), Some("user"));
    assert!(
        events
            .iter()
            .any(|e| e.message.type_name() == "stream_event")
    );
    assert_eq!(events.last().map(|e| e.message.type_name()), Some("result"));
}

#[tokio::test]
async fn a_tool_round_runs_the_tool_and_feeds_its_result_back() {
    let provider = scripted([
        ScriptedReply::tool_call("add", json!({"a": 2, "b": 3})).with_text("Adding."),
        ScriptedReply::text("It is 5."),
    ]);
    let agent = builder(&provider).build().unwrap();
    let state = agent.run("What is 2 + 3?").await.unwrap();
    assert_eq!(
        types(state.events()),
        [
            "system",
            "user",
            "assistant",
            "tool_result",
            "assistant",
            "result"
        ]
    );
    match &state.history()[2] {
        Message::ToolResult {
            output, is_error, ..
        } => assert_eq!((output.as_str(), *is_error), ("5", false)),
        other => panic!("expected a tool result, got {other:?}"),
    }
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages.len(), 3, "the result went back");
    assert_eq!(state.final_text(), Some("It is 5."));
    assert_eq!(state.last_result().map(|r| r.steps), Some(2));
}

#[tokio::test]
async fn a_call_to_a_tool_not_offered_is_refused_like_a_real_model_would() {
    let provider = scripted([ScriptedReply::tool_call("rm_rf", json!({}))]);
    let agent = builder(&provider).build().unwrap();
    let error = agent.run("Clean up.").await.unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("`rm_rf`") && message.contains("did not offer"),
        "{message}"
    );
    let state = error.into_state().expect("a failed turn carries its state");
    assert!(state.is_finished(), "a failed turn can be continued");
    assert_eq!(
        state.last_result().map(|r| r.stop_reason),
        Some(StopReason::Error)
    );
}

#[tokio::test]
async fn continue_conversation_refuses_an_unfinished_state_and_accepts_it_once_closed() {
    let provider = scripted([
        ScriptedReply::tool_call("forever", json!({})),
        ScriptedReply::text("Done waiting."),
        ScriptedReply::text("Next."),
    ]);
    let agent = builder(&provider).tool(Forever).build().unwrap();
    let mut run = agent.run_with_events("Wait for it.");
    // Up to the assistant message that calls the tool: the tool now runs.
    while let Some(event) = run.next_event().await {
        if event.message.type_name() == "assistant" {
            break;
        }
    }
    let snapshot = run.snapshot().expect("between events");
    assert!(!snapshot.is_finished());
    let error = agent
        .continue_conversation(&snapshot, "Are you done?")
        .await
        .unwrap_err();
    match &error {
        AgentError::TurnNotFinished {
            input_id,
            waiting_for,
        } => {
            assert_eq!(*input_id, 1);
            assert!(waiting_for.contains("`forever`"), "{waiting_for}");
        }
        other => panic!("expected TurnNotFinished, got {other}"),
    }
    assert!(error.to_string().contains("has not finished"), "{error}");

    // A second query sent to that session waits in its queue: still
    // unfinished. Without the running turn, the queue alone refuses it.
    let mut queued = snapshot.clone();
    let input_id = queued.session.next_input_id();
    step(
        &mut queued.session,
        Input::Submit {
            input_id,
            input: UserInput::Query {
                text: "and then?".into(),
                images: Vec::new(),
                by: None,
            },
        },
        0,
    );
    assert!(matches!(
        agent.continue_conversation(&queued, "x").await,
        Err(AgentError::TurnNotFinished { .. })
    ));
    queued.session.turn = None;
    match agent.continue_conversation(&queued, "x").await {
        Err(AgentError::InputsQueued { queued, first }) => assert_eq!((queued, first), (1, 2)),
        other => panic!("expected InputsQueued, got {other:?}"),
    }

    // Saved and loaded, the unfinished turn is closed as failed (its tool
    // call cancelled), and the conversation goes on.
    let loaded = AgentState::from_json(&snapshot.to_json().unwrap(), agent.tools()).unwrap();
    assert!(loaded.is_finished());
    assert_eq!(
        loaded.last_result().map(|r| r.stop_reason),
        Some(StopReason::Error)
    );
    assert!(matches!(
        loaded.history().last(),
        Some(Message::ToolResult { is_error: true, .. })
    ));
    drop(run); // cancels the waiting tool
    let next = agent
        .continue_conversation(&loaded, "Are you done?")
        .await
        .unwrap();
    assert_eq!(next.final_text(), Some("Done waiting."));
}

#[tokio::test]
async fn run_multi_turn_is_a_fold_of_continue_conversation() {
    let provider = scripted([
        ScriptedReply::text("Hi Ada."),
        ScriptedReply::text("Your name is Ada."),
        ScriptedReply::text("Bye."),
    ]);
    let agent = builder(&provider).build().unwrap();
    let state = agent
        .run_multi_turn("I am Ada.", ["What is my name?", "Goodbye."])
        .await
        .unwrap();
    assert_eq!(state.turns(), 3);
    assert_eq!(state.history().len(), 6);
    assert_eq!(state.final_text(), Some("Bye."));
    let requests = provider.requests();
    let sizes: Vec<usize> = requests.iter().map(|r| r.messages.len()).collect();
    assert_eq!(sizes, [1, 3, 5], "each turn sees the ones before");
    let turn_ids: Vec<Option<u64>> = state
        .events()
        .iter()
        .filter(|e| e.message.type_name() == "result")
        .map(|e| e.turn_id)
        .collect();
    assert_eq!(turn_ids, [Some(1), Some(2), Some(3)]);
}

#[tokio::test]
async fn a_saved_state_round_trips_and_needs_its_tools() {
    let provider = scripted([
        ScriptedReply::tool_call("add", json!({"a": 1, "b": 1})),
        ScriptedReply::text("2."),
        ScriptedReply::text("Still 2."),
    ]);
    let agent = builder(&provider).build().unwrap();
    let state = agent.run("1 + 1?").await.unwrap();
    let json = state.to_json().unwrap();

    let loaded = AgentState::from_json(&json, agent.tools()).unwrap();
    assert_eq!(loaded.session_id(), state.session_id());
    assert_eq!(loaded.history(), state.history());
    assert_eq!(loaded.events(), state.events());
    assert_eq!(loaded.usage(), state.usage());
    assert_eq!(loaded.turns(), state.turns());
    assert_eq!(loaded.model_calls(), state.model_calls());
    assert_eq!(loaded.context_usage(), state.context_usage());
    assert_eq!(loaded.model(), state.model());
    assert_eq!(
        loaded.to_json().unwrap(),
        json,
        "saving again changes nothing"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    state.save_to_file(&path).unwrap();
    let from_file = AgentState::load_from_file(&path, agent.tools()).unwrap();
    assert_eq!(from_file.history(), state.history());

    let next = agent.continue_conversation(&loaded, "Sure?").await.unwrap();
    assert_eq!(next.final_text(), Some("Still 2."));
    assert_eq!(
        next.events().first().map(|e| e.seq),
        Some(1),
        "the old events stay"
    );

    let error = AgentState::from_json(&json, &[]).unwrap_err();
    assert!(
        matches!(&error, AgentError::MissingTool { name, .. } if name == "add"),
        "{error}"
    );
    assert!(error.to_string().contains("`add`"), "{error}");

    let error = AgentState::from_json("{\"format\": 1}", agent.tools()).unwrap_err();
    assert!(matches!(error, AgentError::StateFormat(_)), "{error}");
    let error =
        AgentState::load_from_file(dir.path().join("nope.json"), agent.tools()).unwrap_err();
    assert!(matches!(error, AgentError::Io { .. }), "{error}");
}

#[tokio::test]
async fn a_custom_strategy_chooses_what_requests_carry() {
    let provider = scripted([ScriptedReply::text("One."), ScriptedReply::text("Two.")]);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let agent = builder(&provider)
        .context_window(100_000)
        .context_strategy(move |history: &[Message], _budget: u64| {
            counted.fetch_add(1, Ordering::SeqCst);
            history.last().cloned().into_iter().collect()
        })
        .build()
        .unwrap();
    let state = agent.run_multi_turn("first", ["second"]).await.unwrap();
    assert!(calls.load(Ordering::SeqCst) >= 2);
    let requests = provider.requests();
    assert_eq!(requests[1].messages, [Message::user("second")]);
    assert_eq!(state.history().len(), 4, "the history keeps everything");
    assert_eq!(state.context_report().strategy, "custom");
}

#[tokio::test]
async fn a_custom_strategy_that_orphans_a_tool_result_is_not_sent() {
    let provider = scripted([
        ScriptedReply::tool_call("add", json!({"a": 1, "b": 2})),
        ScriptedReply::text("3."),
    ]);
    let agent = builder(&provider)
        .context_window(100_000)
        .context_strategy(|history: &[Message], _: u64| {
            history
                .iter()
                .filter(|m| !matches!(m, Message::Assistant { .. }))
                .cloned()
                .collect()
        })
        .build()
        .unwrap();
    let state = agent.run("1 + 2?").await.unwrap();
    let refused: Vec<String> = notices(&state)
        .into_iter()
        .filter(|n| n.contains("breaks the tool-call pairing"))
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", notices(&state));
    let requests = provider.requests();
    assert_eq!(
        requests[1].messages,
        state.history()[..3],
        "the oldest-first view was sent instead"
    );
}

#[tokio::test]
async fn an_oversize_request_is_refused_as_a_context_overflow() {
    let provider = Arc::new(ScriptedProvider::new().with_context_window(10));
    provider.push(ScriptedReply::text("never"));
    let request = ModelRequest {
        profile: "default".into(),
        cache_key: String::new(),
        max_output_tokens: None,
        system_prompt: String::new(),
        messages: vec![Message::user(
            "a request much longer than ten tokens, counted as a provider counts it",
        )],
        tools: Default::default(),
    };
    let mut stream = provider.stream(request);
    let error = stream.next().await.unwrap().unwrap_err();
    assert!(error.is_context_overflow(), "{error}");
    assert_eq!(provider.remaining(), 1, "nothing consumed");

    // The agent does not know the window: the provider's refusal says it,
    // and the retry would not fit it, so it is not sent; the turn fails
    // saying why.
    let agent = builder(&provider).build().unwrap();
    let error = agent.run("Hello, how long is too long?").await.unwrap_err();
    assert!(
        error.to_string().contains("This message does not fit")
            && error.to_string().contains("10-token budget"),
        "{error}"
    );
    let state = error.into_state().unwrap();
    assert!(
        notices(&state)
            .iter()
            .any(|n| n.contains("refused the request as too long"))
    );
    assert_eq!(
        provider.requests().len(),
        2,
        "the direct one, the refused one"
    );
}

#[tokio::test]
async fn a_long_conversation_is_compacted_with_a_summary() {
    let provider = scripted([]);
    for _ in 0..3 {
        provider.push(
            ScriptedReply::text("SUMMARY: the user told a long story about boats.")
                .matching("Write the summary now"),
        );
    }
    let long = "word ".repeat(60);
    for i in 0..6 {
        provider.push(ScriptedReply::text(format!("Reply {i}: {long}")));
    }
    let agent = builder(&provider)
        .context(ContextConfig {
            max_tokens: Some(700),
            min_recent_turns: Some(1),
            ..Default::default()
        })
        .build()
        .unwrap();
    let follow_ups: Vec<String> = (1..6).map(|i| format!("Part {i}: {long}")).collect();
    let state = agent
        .run_multi_turn(format!("Part 0: {long}"), follow_ups)
        .await
        .unwrap();
    assert!(state.compactions() >= 1, "{:?}", notices(&state));
    assert_eq!(
        state.summary(),
        Some("SUMMARY: the user told a long story about boats.")
    );
    assert!(state.events().iter().any(|e| matches!(
        &e.message,
        AgentMessage::System(s) if s.subtype == SystemSubtype::Compacted
    )));
    let usage = state.context_usage().expect("known after a call");
    assert_eq!(usage.limit, Some(700));
    // The summary comes back on load.
    let loaded = AgentState::from_json(&state.to_json().unwrap(), agent.tools()).unwrap();
    assert_eq!(loaded.summary(), state.summary());
    assert_eq!(loaded.compactions(), state.compactions());
}

#[tokio::test]
async fn slash_commands_are_applied_and_store_commands_answered_with_a_notice() {
    let provider = scripted([ScriptedReply::text("Hi.")]);
    let agent = builder(&provider).build().unwrap();
    let state = agent.run("Hello").await.unwrap();
    let state = agent.continue_conversation(&state, "/usage").await.unwrap();
    assert_eq!(
        state.events().last().map(|e| e.message.type_name()),
        Some("system")
    );
    let state = agent
        .continue_conversation(&state, "/save here.json")
        .await
        .unwrap();
    let last = notices(&state).pop().unwrap_or_default();
    assert!(
        last.contains("/save failed") && last.contains("no stored sessions"),
        "{last}"
    );
    assert!(state.is_finished());
}

#[tokio::test]
async fn the_builder_refuses_what_cannot_work() {
    assert!(matches!(
        Agent::builder().build(),
        Err(AgentError::NoProvider)
    ));
    let provider = scripted([]);
    assert!(matches!(
        builder(&provider).tool(Add).build(),
        Err(AgentError::DuplicateTool { name }) if name == "add"
    ));
    assert!(matches!(
        builder(&provider).max_steps(0).build(),
        Err(AgentError::InvalidConfig(_))
    ));
    assert!(matches!(
        builder(&provider).workspace("/surely/not/a/dir").build(),
        Err(AgentError::Workspace { .. })
    ));
    let agent = builder(&provider)
        .context_window(4096)
        .model("small")
        .build()
        .unwrap();
    assert_eq!(agent.model(), "small");
    let state = agent.new_conversation();
    assert_eq!(
        state
            .session()
            .current_model()
            .and_then(|m| m.context_window),
        Some(4096)
    );
}

#[tokio::test]
async fn max_steps_ends_a_turn_that_keeps_calling_tools() {
    let provider =
        scripted((0..5).map(|_| ScriptedReply::tool_call("add", json!({"a": 1, "b": 1}))));
    let agent = builder(&provider).max_steps(2).build().unwrap();
    let state = agent.run("Loop.").await.unwrap();
    assert_eq!(
        state.last_result().map(|r| (r.stop_reason, r.steps)),
        Some((StopReason::MaxSteps, 2))
    );
    assert_eq!(provider.remaining(), 3);
}

#[tokio::test]
async fn a_provider_names_the_model_and_what_is_known_of_it() {
    let mut profile = crate::settings::ModelProfile::new(
        crate::settings::ProviderKind::Openai,
        "gpt-4.1-mini",
        "http://127.0.0.1:9/v1",
    );
    profile.context_window = Some(32_000);
    let provider = super::Provider::from_profile("fast", profile).unwrap();
    assert_eq!(provider.info().and_then(|i| i.context_window), Some(32_000));
    let agent = Agent::builder()
        .provider(provider)
        .workspace(std::env::temp_dir())
        .build()
        .unwrap();
    assert_eq!(agent.model(), "fast");
    let state = agent.new_conversation();
    let info = state.session().current_model().cloned().unwrap();
    assert_eq!(
        (info.model.as_str(), info.context_window),
        ("gpt-4.1-mini", Some(32_000))
    );

    let openai = super::Provider::openai("http://127.0.0.1:9/v1", "local").unwrap();
    assert_eq!(openai.name(), "local");
    let mut settings_models = std::collections::BTreeMap::new();
    settings_models.insert(
        "a".to_string(),
        crate::settings::ModelProfile::new(crate::settings::ProviderKind::Openai, "m", "http://x"),
    );
    let error = super::Provider::from_settings(&crate::settings::Settings {
        model: "b".into(),
        models: settings_models,
        ..settings_for_tests()
    })
    .unwrap_err();
    assert!(error.to_string().contains("`b`"), "{error}");
}

fn settings_for_tests() -> crate::settings::Settings {
    crate::settings::Settings {
        model: String::new(),
        system_prompt: String::new(),
        max_steps: 1,
        include_partial_messages: false,
        disallowed_tools: Vec::new(),
        workspace: std::env::temp_dir(),
        models: Default::default(),
        tools: Default::default(),
        mcp_servers: Default::default(),
        mcp: Default::default(),
        data_dir: std::env::temp_dir(),
        config_dir: None,
        sessions: Default::default(),
        server: Default::default(),
        permissions: Default::default(),
        sandbox: Default::default(),
        agents: Vec::new(),
        subagents: Default::default(),
        hooks: Vec::new(),
        skills: Default::default(),
        checkpoints: Default::default(),
        context: Default::default(),
        compact_prompt: String::new(),
        unreachable_hint: None,
        cluster: None,
    }
}

#[test]
fn agents_runs_and_states_cross_threads() {
    fn send<T: Send>(_: &T) {}
    fn send_sync<T: Send + Sync>(_: &T) {}
    let provider = scripted([]);
    let agent = builder(&provider).build().unwrap();
    send_sync(&agent);
    let state = agent.new_conversation();
    send_sync(&state);
    send(&agent.run("x"));
    send(&agent.continue_conversation(&state, "x"));
    send(&agent.run_with_events("x"));
}

#[tokio::test]
async fn a_workspace_brings_its_agents_md_into_every_request() {
    let workspace = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("AGENTS.md"), "PROJECT-RULE").unwrap();
    std::fs::write(user.path().join("AGENTS.md"), "USER-RULE").unwrap();
    let provider = scripted([ScriptedReply::text("One."), ScriptedReply::text("Two.")]);
    let agent = Agent::builder()
        .provider(provider.clone())
        .system_prompt("Be terse.")
        .workspace(workspace.path())
        .user_instructions_dir(user.path())
        .build()
        .unwrap();
    let state = agent.run("Hi").await.unwrap();
    let prompt = &provider.requests()[0].system_prompt;
    assert!(
        prompt.starts_with("Be terse.\n\n# User instructions from "),
        "{prompt}"
    );
    let (user_at, project_at) = (prompt.find("USER-RULE"), prompt.find("PROJECT-RULE"));
    assert!(user_at.is_some() && user_at < project_at, "{prompt}");
    let started = state.events()[0].message.clone();
    assert!(
        matches!(&started, AgentMessage::System(s) if s.message.contains("AGENTS.md")),
        "{started:?}"
    );

    let off = Agent::builder()
        .provider(provider.clone())
        .system_prompt("Be terse.")
        .workspace(workspace.path())
        .project_instructions(false)
        .build()
        .unwrap();
    off.run("Hi").await.unwrap();
    assert_eq!(provider.requests()[1].system_prompt, "Be terse.");
}
