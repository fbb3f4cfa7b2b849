//! The conversation rules, each as a deterministic test with no I/O.

use super::turn::Phase;
use super::*;
use crate::model::{ModelEvent, ToolOrigin, ToolOutcome, ToolSpec};
use crate::protocol::{
    AgentMessage, BlockKind, ContentBlock, ControlCommand, InputId, Message, ModelInfo, SessionId,
    StopReason, StreamDelta, SystemSubtype, Usage, UserInput,
};
use proptest::prelude::*;
use serde_json::json;

/// A session driven by hand: inputs in, effects collected.
pub(crate) struct Harness {
    pub(crate) state: SessionState,
    pub(crate) effects: Vec<Effect>,
    now: u64,
    /// Answers report usage (10 in, 5 out). Off where the context is
    /// measured: a real provider's count would be much larger, and the
    /// session calibrates its estimates against what is reported.
    report_usage: bool,
}

impl Harness {
    pub(crate) fn new() -> Self {
        Self::with(3, true)
    }

    fn with(max_steps: u32, include_partial_messages: bool) -> Self {
        let models = vec![
            ModelInfo {
                name: "main".into(),
                provider: "openai".into(),
                model: "gpt-test".into(),
                base_url: "http://127.0.0.1:1/v1".into(),
                context_window: None,
                max_output_tokens: None,
                context: None,
                pricing: None,
                key_missing: None,
                images: true,
            },
            ModelInfo {
                name: "other".into(),
                provider: "openai".into(),
                model: "gpt-other".into(),
                base_url: "http://127.0.0.1:2/v1".into(),
                context_window: None,
                max_output_tokens: None,
                context: None,
                pricing: None,
                key_missing: None,
                images: false,
            },
        ];
        let config = SessionConfig {
            system_prompt: "be brief".into(),
            tool_prompts: String::new(),
            agents: Default::default(),
            commands: Default::default(),
            skills: Default::default(),
            task_tool: false,
            // Tests of the plan tool turn it on (`plan_tests.rs`).
            plan_tool: false,
            instructions: Default::default(),
            max_steps,
            include_partial_messages,
            models: models.into(),
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
        let tools = vec![ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            input_schema: std::sync::Arc::new(json!({"type": "object"})),
            origin: ToolOrigin::Builtin,
        }];
        Harness {
            state: SessionState::new(
                SessionId::from("s1"),
                config,
                "main".into(),
                std::sync::Arc::new(tools),
            ),
            effects: Vec::new(),
            now: 1_000,
            report_usage: true,
        }
    }

    pub(crate) fn state(&self) -> &SessionState {
        &self.state
    }

    pub(crate) fn feed(&mut self, input: Input) -> Vec<Effect> {
        self.now += 10;
        let fx = step(&mut self.state, input, self.now);
        self.effects.extend(fx.clone());
        fx
    }

    pub(crate) fn query(&mut self, text: &str) -> InputId {
        let input_id = self.state().next_input_id();
        self.feed(Input::Submit {
            input_id,
            input: UserInput::Query {
                text: text.into(),
                images: Vec::new(),
                by: None,
            },
        });
        input_id
    }

    fn model(&mut self, request_id: u64, event: ModelEvent) -> Vec<Effect> {
        self.feed(Input::Model { request_id, event })
    }

    /// Stream a whole message: text and tool calls, then finish.
    pub(crate) fn answer(
        &mut self,
        request_id: u64,
        text: &str,
        calls: &[(&str, &str, &str)],
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let mut index = 0;
        if !text.is_empty() {
            fx.extend(self.model(
                request_id,
                ModelEvent::BlockStart {
                    index,
                    block: BlockKind::Text,
                },
            ));
            fx.extend(self.model(
                request_id,
                ModelEvent::TextDelta {
                    index,
                    text: text.into(),
                },
            ));
            fx.extend(self.model(request_id, ModelEvent::BlockStop { index }));
            index += 1;
        }
        for (id, name, args) in calls {
            fx.extend(self.model(
                request_id,
                ModelEvent::BlockStart {
                    index,
                    block: BlockKind::ToolUse {
                        id: id.to_string(),
                        name: name.to_string(),
                    },
                },
            ));
            fx.extend(self.model(
                request_id,
                ModelEvent::ToolInputDelta {
                    index,
                    partial_json: args.to_string(),
                },
            ));
            index += 1;
        }
        if self.report_usage {
            fx.extend(self.model(
                request_id,
                ModelEvent::Usage(Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                    ..Default::default()
                }),
            ));
        }
        fx.extend(
            self.model(
                request_id,
                ModelEvent::Finished {
                    finish_reason: if calls.is_empty() {
                        "end_turn"
                    } else {
                        "tool_use"
                    }
                    .into(),
                },
            ),
        );
        fx
    }

    pub(crate) fn tool_done(&mut self, batch_id: u64, call_id: &str, output: &str) -> Vec<Effect> {
        self.feed(Input::ToolFinished {
            checkpoint: None,
            batch_id,
            call_id: call_id.into(),
            outcome: ToolOutcome {
                output: output.into(),
                is_error: false,
                duration_ms: 3,
            },
        })
    }

    pub(crate) fn events(&self) -> Vec<AgentMessage> {
        messages(&self.effects)
    }

    pub(crate) fn results(&self) -> Vec<crate::protocol::ResultEvent> {
        self.events()
            .into_iter()
            .filter_map(|m| match m {
                AgentMessage::Result(r) => Some(r),
                _ => None,
            })
            .collect()
    }
}

pub(crate) fn messages(fx: &[Effect]) -> Vec<AgentMessage> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Emit { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

pub(crate) fn model_calls(fx: &[Effect]) -> Vec<(u64, crate::model::ModelRequest)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::CallModel {
                request_id,
                request,
            } => Some((*request_id, request.clone())),
            _ => None,
        })
        .collect()
}

pub(crate) fn tool_batches(fx: &[Effect]) -> Vec<(u64, Vec<crate::model::ToolCall>)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::RunTools { batch_id, calls } => {
                Some((*batch_id, calls.iter().map(|c| c.call.clone()).collect()))
            }
            _ => None,
        })
        .collect()
}

/// Each emitted event's turn and type, in order.
fn emitted(fx: &[Effect]) -> Vec<(Option<InputId>, &'static str)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Emit { turn_id, message } => Some((*turn_id, message.type_name())),
            _ => None,
        })
        .collect()
}

fn type_names(events: &[AgentMessage]) -> Vec<&'static str> {
    events.iter().map(|m| m.type_name()).collect()
}

/// The invariant: every tool call has exactly one result after it, and no
/// result appears without its call.
pub(crate) fn assert_history_valid(history: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in history {
        match m {
            Message::User { .. } => assert!(
                open.is_empty(),
                "user message while calls {open:?} lack results"
            ),
            Message::Assistant { content, .. } => {
                assert!(
                    open.is_empty(),
                    "assistant message while calls {open:?} lack results"
                );
                for b in content {
                    if let ContentBlock::ToolUse { id, .. } = b {
                        open.push(id.clone());
                    }
                }
            }
            Message::ToolResult { call_id, .. } => {
                let pos = open.iter().position(|id| id == call_id);
                assert!(pos.is_some(), "result for {call_id} without its call");
                open.remove(pos.unwrap());
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} never got results");
}

#[test]
fn plain_reply_ends_the_turn_with_end_turn() {
    let mut h = Harness::new();
    let fx_start = h.feed(Input::Started { resumed: false });
    assert!(
        matches!(&messages(&fx_start)[0], AgentMessage::System(s) if s.subtype == SystemSubtype::SessionStarted)
    );

    let id = h.query("hello");
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1.messages, vec![Message::user("hello")]);
    assert_eq!(calls[0].1.system_prompt, "be brief");

    h.answer(calls[0].0, "Hi there", &[]);
    let names = type_names(&h.events());
    assert_eq!(
        names,
        [
            "system",
            "user",
            "stream_event",
            "stream_event",
            "stream_event",
            "assistant",
            "result"
        ]
    );
    let results = h.results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].stop_reason, StopReason::EndTurn);
    assert_eq!(results[0].text, "Hi there");
    assert_eq!(results[0].steps, 1);
    assert_eq!(results[0].usage.input_tokens, 10);
    assert!(!h.state().is_busy());
    // Every event of the turn carries the query's id.
    assert!(h.effects.iter().all(|e| match e {
        Effect::Emit { turn_id, message } =>
            message.type_name() == "system" || *turn_id == Some(id),
        _ => true,
    }));
}

#[test]
fn tool_round_feeds_results_back_to_the_model() {
    let mut h = Harness::new();
    h.query("list files");
    let (req1, _) = model_calls(&h.effects)[0].clone();
    h.answer(req1, "Looking.", &[("c1", "bash", r#"{"command":"ls"}"#)]);
    let batches = tool_batches(&h.effects);
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].1[0].input, json!({"command": "ls"}));

    h.tool_done(batches[0].0, "c1", "a.txt\n");
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 2);
    let msgs = &calls[1].1.messages;
    assert!(
        matches!(&msgs[2], Message::ToolResult { call_id, output, .. } if call_id == "c1" && output == "a.txt\n")
    );

    h.answer(calls[1].0, "There is a.txt.", &[]);
    let r = &h.results()[0];
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!(r.text, "There is a.txt.");
    assert_eq!(r.steps, 2);
    assert_eq!(r.usage.input_tokens, 20);
    assert_history_valid(&h.state().history);
}

#[test]
fn a_calls_checkpoint_is_named_on_its_result_and_a_limit_is_said_once() {
    use crate::protocol::checkpoint::{Change, ChangedFile, CheckpointRef};
    let mut h = Harness::new();
    h.query("edit twice");
    let (req1, _) = model_calls(&h.effects)[0].clone();
    h.answer(
        req1,
        "Editing.",
        &[
            ("c1", "bash", r#"{"command":"sed -i s/a/b/ x"}"#),
            ("c2", "bash", r#"{"command":"true"}"#),
        ],
    );
    let batch = tool_batches(&h.effects)[0].0;
    let limited = "the workspace has more than 3 files ([checkpoints] max_files)".to_string();
    let kept = CheckpointRef {
        id: "cp1".into(),
        files: vec![ChangedFile {
            path: "x".into(),
            change: Change::Modified,
            added: 1,
            removed: 1,
            binary: false,
        }],
        limited: Some(limited.clone()),
        session_bytes: 2048,
    };
    let outcome = |output: &str| ToolOutcome {
        output: output.into(),
        is_error: false,
        duration_ms: 1,
    };
    h.feed(Input::ToolFinished {
        batch_id: batch,
        call_id: "c1".into(),
        outcome: outcome("edited"),
        checkpoint: Some(kept.clone()),
    });
    // Nothing changed, but the look hit the limit again: no id, not named.
    h.feed(Input::ToolFinished {
        batch_id: batch,
        call_id: "c2".into(),
        outcome: outcome(""),
        checkpoint: Some(CheckpointRef {
            id: String::new(),
            files: Vec::new(),
            limited: Some(limited.clone()),
            session_bytes: 0,
        }),
    });
    let results: Vec<_> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentMessage::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results[0].checkpoint.as_ref(), Some(&kept));
    assert_eq!(results[1].checkpoint, None);
    let notices = system_events(&h, SystemSubtype::Notice);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].message.contains(&limited), "{notices:?}");
    assert_eq!(
        (h.state().checkpoints.kept, h.state().checkpoints.files),
        (1, 1)
    );
    // The fold counts what the events name.
    let mut restored = fresh();
    restore(&mut restored, &persisted(&h));
    assert_eq!(restored.checkpoints.kept, 1);
}

#[test]
fn parallel_results_are_recorded_in_call_order() {
    let mut h = Harness::new();
    h.query("two things");
    let req = model_calls(&h.effects)[0].0;
    h.answer(
        req,
        "",
        &[
            ("a", "bash", r#"{"command":"one"}"#),
            ("b", "bash", r#"{"command":"two"}"#),
        ],
    );
    let (batch, calls) = tool_batches(&h.effects)[0].clone();
    assert_eq!(calls.len(), 2, "both calls run in one batch");

    // The second call finishes first: nothing is emitted until the first is done.
    let fx = h.tool_done(batch, "b", "two");
    assert!(messages(&fx).is_empty());
    let fx = h.tool_done(batch, "a", "one");
    let ids: Vec<String> = messages(&fx)
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(t) => Some(t.call_id),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert_history_valid(&h.state().history);
}

#[test]
fn invalid_json_arguments_become_an_error_result_without_running() {
    let mut h = Harness::new();
    h.query("go");
    let req = model_calls(&h.effects)[0].0;
    let fx = h.answer(req, "", &[("bad", "bash", "{oops")]);
    assert!(tool_batches(&fx).is_empty(), "nothing to run");
    let result = messages(&fx)
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::ToolResult(t) => Some(t),
            _ => None,
        })
        .unwrap();
    assert!(result.is_error);
    assert!(
        result.output.contains("not valid JSON"),
        "{}",
        result.output
    );
    // ... and the loop goes on: the model is called again.
    assert_eq!(model_calls(&h.effects).len(), 2);
    assert_history_valid(&h.state().history);
}

#[test]
fn max_steps_stops_after_the_last_tool_results() {
    let mut h = Harness::with(2, true);
    h.query("loop");
    for round in 0..2 {
        let req = model_calls(&h.effects).last().unwrap().0;
        let id = format!("c{round}");
        h.answer(req, "", &[(&id, "bash", r#"{"command":"true"}"#)]);
        let batch = tool_batches(&h.effects).last().unwrap().0;
        h.tool_done(batch, &id, "ok");
    }
    assert_eq!(model_calls(&h.effects).len(), 2, "no third call");
    let r = &h.results()[0];
    assert_eq!(r.stop_reason, StopReason::MaxSteps);
    assert_eq!(r.steps, 2);
    assert_history_valid(&h.state().history);
    assert!(!h.state().is_busy());
}

#[test]
fn interrupt_mid_stream_keeps_partial_message_and_cancels_its_calls() {
    let mut h = Harness::new();
    h.query("write a story");
    let req = model_calls(&h.effects)[0].0;
    h.model(
        req,
        ModelEvent::TextDelta {
            index: 0,
            text: "Once upon".into(),
        },
    );
    h.model(
        req,
        ModelEvent::BlockStart {
            index: 1,
            block: BlockKind::ToolUse {
                id: "t1".into(),
                name: "bash".into(),
            },
        },
    );
    h.model(
        req,
        ModelEvent::ToolInputDelta {
            index: 1,
            partial_json: "{\"comm".into(),
        },
    );
    let fx = h.feed(Input::Interrupt);
    assert!(fx.contains(&Effect::CancelModel { request_id: req }));
    let events = messages(&fx);
    assert_eq!(type_names(&events), ["assistant", "tool_result", "result"]);
    match &events[0] {
        AgentMessage::Assistant(a) => assert!(a.interrupted),
        other => panic!("{other:?}"),
    }
    match &events[1] {
        AgentMessage::ToolResult(t) => assert!(t.cancelled && t.is_error && t.call_id == "t1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.results()[0].stop_reason, StopReason::Cancelled);
    assert_eq!(h.results()[0].text, "Once upon");
    assert_history_valid(&h.state().history);
    assert!(matches!(
        &h.state().history[1],
        Message::Assistant {
            interrupted: true,
            ..
        }
    ));

    // Late events of the cancelled stream are ignored.
    let fx = h.model(
        req,
        ModelEvent::TextDelta {
            index: 0,
            text: " a time".into(),
        },
    );
    assert!(fx.is_empty());

    // The next query's request is protocol-valid.
    h.query("go on");
    let last = model_calls(&h.effects).last().unwrap().1.clone();
    assert_history_valid(&last.messages);
}

#[test]
fn interrupt_before_any_output_leaves_only_the_user_message() {
    let mut h = Harness::new();
    h.query("hi");
    h.feed(Input::Interrupt);
    assert_eq!(h.state().history, vec![Message::user("hi")]);
    assert_eq!(h.results()[0].stop_reason, StopReason::Cancelled);
}

#[test]
fn interrupt_mid_tool_cancels_unfinished_calls_and_keeps_finished_ones() {
    let mut h = Harness::new();
    h.query("two");
    let req = model_calls(&h.effects)[0].0;
    h.answer(
        req,
        "",
        &[
            ("a", "bash", r#"{"command":"fast"}"#),
            ("b", "bash", r#"{"command":"slow"}"#),
        ],
    );
    let batch = tool_batches(&h.effects)[0].0;
    h.tool_done(batch, "a", "fast done");
    let fx = h.feed(Input::Interrupt);
    assert!(fx.contains(&Effect::CancelTools { batch_id: batch }));
    let results: Vec<_> = messages(&fx)
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].call_id, "b");
    assert!(results[0].cancelled);
    // The late outcome of the cancelled call is ignored.
    assert!(h.tool_done(batch, "b", "too late").is_empty());
    assert_history_valid(&h.state().history);
    assert_eq!(h.results()[0].stop_reason, StopReason::Cancelled);
}

#[test]
fn interrupt_when_idle_does_nothing() {
    let mut h = Harness::new();
    assert!(h.feed(Input::Interrupt).is_empty());
}

#[test]
fn clear_waits_behind_running_query() {
    let mut h = Harness::new();
    h.query("first");
    let clear_id = h.query("/clear");
    h.query("second");
    // While the first turn runs, neither the clear nor the second query applied.
    assert_eq!(h.state().queue.len(), 2);
    assert_eq!(model_calls(&h.effects).len(), 1);

    let req = model_calls(&h.effects)[0].0;
    h.answer(req, "one", &[]);
    // The first turn ended, the clear applied, the second query started on an empty history.
    let cleared = h.effects.iter().any(|e| {
        matches!(e, Effect::Emit { turn_id: Some(t), message: AgentMessage::System(s) }
                 if *t == clear_id && s.subtype == SystemSubtype::Cleared)
    });
    assert!(cleared);
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].1.messages, vec![Message::user("second")]);
}

#[test]
fn every_accepted_query_gets_exactly_one_result() {
    let mut h = Harness::new();
    let ids: Vec<InputId> = (0..3).map(|i| h.query(&format!("q{i}"))).collect();
    // Finish, interrupt, fail.
    let r1 = model_calls(&h.effects)[0].0;
    h.answer(r1, "done", &[]);
    h.feed(Input::Interrupt);
    let r3 = model_calls(&h.effects).last().unwrap().0;
    h.feed(Input::ModelFailed {
        request_id: r3,
        too_long: None,
        error: "provider down".into(),
    });
    let mut result_turns: Vec<InputId> = h
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Emit {
                turn_id: Some(t),
                message: AgentMessage::Result(_),
            } => Some(*t),
            _ => None,
        })
        .collect();
    result_turns.sort();
    assert_eq!(result_turns, ids);
    let reasons: Vec<StopReason> = h.results().iter().map(|r| r.stop_reason).collect();
    assert_eq!(
        reasons,
        [
            StopReason::EndTurn,
            StopReason::Cancelled,
            StopReason::Error
        ]
    );
}

#[test]
fn provider_failure_emits_error_then_result_and_discards_partial_text() {
    let mut h = Harness::new();
    h.query("hi");
    let req = model_calls(&h.effects)[0].0;
    h.model(
        req,
        ModelEvent::TextDelta {
            index: 0,
            text: "Hal".into(),
        },
    );
    let fx = h.feed(Input::ModelFailed {
        request_id: req,
        too_long: None,
        error: "HTTP 401".into(),
    });
    let events = messages(&fx);
    assert_eq!(type_names(&events), ["stream_event", "error", "result"]);
    assert!(
        matches!(&events[0], AgentMessage::StreamEvent(s) if matches!(s.event, StreamDelta::Discard { .. }))
    );
    assert_eq!(h.results()[0].error.as_deref(), Some("HTTP 401"));
    assert_eq!(h.state().history, vec![Message::user("hi")]);
}

#[test]
fn retry_discards_partial_output_and_tells_the_user() {
    let mut h = Harness::new();
    h.query("hi");
    let req = model_calls(&h.effects)[0].0;
    h.model(
        req,
        ModelEvent::TextDelta {
            index: 0,
            text: "dup".into(),
        },
    );
    let fx = h.model(
        req,
        ModelEvent::Retrying {
            attempt: 1,
            delay_ms: 200,
            reason: "HTTP 500".into(),
        },
    );
    assert_eq!(type_names(&messages(&fx)), ["stream_event", "system"]);
    h.answer(req, "clean", &[]);
    assert_eq!(h.results()[0].text, "clean");
}

#[test]
fn without_partial_messages_no_stream_events_are_emitted() {
    let mut h = Harness::with(3, false);
    h.query("hi");
    let req = model_calls(&h.effects)[0].0;
    h.answer(req, "Hello", &[]);
    assert_eq!(type_names(&h.events()), ["user", "assistant", "result"]);
}

#[test]
fn unknown_command_is_a_notice_and_never_reaches_the_model() {
    let mut h = Harness::new();
    let id = h.query("/foo");
    assert!(model_calls(&h.effects).is_empty());
    assert!(h.state().history.is_empty());
    match &h.effects[..] {
        [
            Effect::Emit {
                turn_id: Some(t),
                message: AgentMessage::System(s),
            },
        ] => {
            assert_eq!(*t, id);
            assert_eq!(s.subtype, SystemSubtype::Notice);
            assert!(s.message.contains("/foo"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn switching_model_keeps_history_and_uses_the_new_profile() {
    let mut h = Harness::new();
    h.query("hi");
    let req = model_calls(&h.effects)[0].0;
    h.answer(req, "hello", &[]);
    h.query("/model other");
    assert_eq!(h.state().model, "other");
    h.query("again");
    let last = model_calls(&h.effects).last().unwrap().1.clone();
    assert_eq!(last.profile, "other");
    assert_eq!(last.messages.len(), 3);
    let req = model_calls(&h.effects).last().unwrap().0;
    h.answer(req, "hello again", &[]);

    h.query("/model nope");
    assert_eq!(h.state().model, "other");
    let notice = h.events().into_iter().rev().find_map(|m| match m {
        AgentMessage::System(s) => Some(s),
        _ => None,
    });
    assert!(
        notice
            .unwrap()
            .message
            .contains("Unknown model profile `nope`")
    );
}

#[test]
fn a_profile_without_its_key_is_refused_naming_the_variable_and_marked_in_models() {
    let mut h = Harness::new();
    let mut models = h.state.config.models.to_vec();
    models[1].key_missing = Some("OTHER_API_KEY".into());
    h.state.config.models = models.into();
    h.query("/model other");
    assert_eq!(h.state().model, "main", "the model stays");
    let last_system = |h: &Harness| {
        h.events()
            .into_iter()
            .rev()
            .find_map(|m| match m {
                AgentMessage::System(s) => Some(s),
                _ => None,
            })
            .unwrap()
    };
    let refusal = last_system(&h);
    assert_eq!(refusal.subtype, SystemSubtype::Notice);
    assert!(
        refusal.message.contains("OTHER_API_KEY")
            && refusal.message.contains("the model stays main"),
        "{}",
        refusal.message
    );
    h.query("/models");
    let listing = last_system(&h);
    assert!(
        listing
            .message
            .contains("other — gpt-other via openai at http://127.0.0.1:2/v1 (needs OTHER_API_KEY, which is not set)"),
        "{}",
        listing.message
    );
    assert!(
        model_calls(&h.effects).is_empty(),
        "nothing reached the model"
    );
}

#[test]
fn usage_accumulates_over_turns() {
    let mut h = Harness::new();
    for q in ["a", "b"] {
        h.query(q);
        let req = model_calls(&h.effects).last().unwrap().0;
        h.answer(req, "ok", &[]);
    }
    assert_eq!(h.state().usage.total.input_tokens, 20);
    assert_eq!(h.state().usage.turns, 2);
    h.feed(Input::Submit {
        input_id: 99,
        input: UserInput::Control {
            command: ControlCommand::Usage,
            by: None,
        },
    });
    let usage = h.events().into_iter().last().unwrap();
    assert!(
        matches!(usage, AgentMessage::System(s) if s.data.as_ref().unwrap()["session"]["input_tokens"] == 20)
    );
}

#[test]
fn debug_full_shows_the_whole_state() {
    let mut h = Harness::new();
    h.query("/debug full");
    let debug = h.events().into_iter().last().unwrap();
    let AgentMessage::System(s) = debug else {
        panic!()
    };
    assert_eq!(s.subtype, SystemSubtype::Debug);
    let data = s.data.unwrap();
    assert_eq!(data["model"], "main");
    assert_eq!(data["config"]["system_prompt"], "be brief");
    assert!(s.message.contains("\"system_prompt\""));
}

#[test]
fn debug_is_a_summary_of_what_matters_on_one_screen() {
    let mut h = Harness::new();
    h.query("hi");
    let req = model_calls(&h.effects)[0].0;
    h.answer(req, "hello", &[]);
    h.query("/debug");
    let AgentMessage::System(s) = h.events().into_iter().last().unwrap() else {
        panic!()
    };
    assert_eq!(s.subtype, SystemSubtype::Debug);
    let text = &s.message;
    for needle in [
        "model         main (gpt-test via openai at http://127.0.0.1:1/v1)",
        "agent         build · permission mode",
        "2 messages in the history",
        "over 1 model call in 1 turn",
        "tools         ",
        "MCP servers   none",
        "running       idle · 0 inputs queued",
        "/debug full",
    ] {
        assert!(text.contains(needle), "{needle:?} in:\n{text}");
    }
    assert!(text.lines().count() <= 12, "a summary, not a dump:\n{text}");
    assert!(!text.contains("be brief"), "no prompt text in the summary");
    let data = s.data.unwrap();
    assert_eq!(data["model"], "main");
    assert_eq!(data["turns"], 1);
}

#[test]
fn tools_changed_applies_to_the_next_model_call() {
    let mut h = Harness::new();
    h.feed(Input::CatalogChanged {
        tools: Default::default(),
        servers: Default::default(),
        first_start: Default::default(),
        prompts: String::new(),
    });
    h.query("hi");
    assert!(model_calls(&h.effects)[0].1.tools.is_empty());
}

#[test]
fn the_prompts_of_the_sessions_own_servers_join_its_system_prompt() {
    let mut h = Harness::new();
    let tools = h.state().tools.clone();
    h.feed(Input::CatalogChanged {
        tools,
        servers: Default::default(),
        first_start: Default::default(),
        prompts: "\n\n# MCP server `editor`\nAsk the editor.".into(),
    });
    h.query("hi");
    let request = &model_calls(&h.effects)[0].1;
    assert_eq!(
        request.system_prompt,
        "be brief\n\n# MCP server `editor`\nAsk the editor."
    );
}

#[test]
fn the_notices_about_the_servers_given_are_shown() {
    let mut h = Harness::new();
    let fx = h.feed(Input::ServersGiven {
        notices: vec!["MCP server `x`: not started".into()],
    });
    let [AgentMessage::System(notice)] = &messages(&fx)[..] else {
        panic!("{fx:?}")
    };
    assert_eq!(notice.subtype, SystemSubtype::Notice);
    assert_eq!(notice.message, "MCP server `x`: not started");
}

#[test]
fn mcp_server_changes_are_reported_once_each() {
    use crate::protocol::McpServerStatus;
    let mut h = Harness::new();
    let tools = h.state().tools.clone();
    let catalog = |status: McpServerStatus| Input::CatalogChanged {
        tools: tools.clone(),
        servers: [("files".to_string(), status)].into_iter().collect(),
        first_start: Default::default(),
        prompts: String::new(),
    };
    let fx = h.feed(catalog(McpServerStatus::Starting));
    assert_eq!(messages(&fx).len(), 1);
    assert!(
        h.feed(catalog(McpServerStatus::Starting)).is_empty(),
        "no change, no event"
    );
    let fx = h.feed(catalog(McpServerStatus::Failed {
        reason: "command not found".into(),
        stderr: vec!["boom".into()],
    }));
    let AgentMessage::System(s) = &messages(&fx)[0] else {
        panic!()
    };
    assert_eq!(s.subtype, SystemSubtype::McpServerStatus);
    assert!(
        s.message
            .contains("`files`: failed: command not found (stderr: boom)"),
        "{}",
        s.message
    );
    let data = s.data.clone().unwrap();
    assert_eq!(data["server"], "files");
    assert_eq!(data["state"], "failed");
    assert_eq!(data["stderr"][0], "boom");
}

#[test]
fn usage_cost_counts_turns_on_priced_profiles() {
    let mut h = Harness::new();
    let mut models = h.state.config.models.to_vec();
    models[1].pricing = Some(crate::protocol::Pricing {
        input_per_mtok: 2.0,
        output_per_mtok: 10.0,
        cache_read_per_mtok: None,
        cache_write_per_mtok: None,
    });
    h.state.config.models = models.into();
    h.query("unpriced");
    let req = model_calls(&h.effects).last().unwrap().0;
    h.answer(req, "a", &[]);
    assert_eq!(
        h.state().usage.cost_usd,
        None,
        "the main profile has no prices"
    );

    h.query("/model other");
    h.query("priced");
    let req = model_calls(&h.effects).last().unwrap().0;
    h.answer(req, "b", &[]); // 10 input, 5 output tokens
    let cost = h.state().usage.cost_usd.unwrap();
    assert!(
        (cost - (10.0 * 2.0 + 5.0 * 10.0) / 1_000_000.0).abs() < 1e-12,
        "{cost}"
    );
    h.query("/usage");
    let AgentMessage::System(usage) = h.events().into_iter().last().unwrap() else {
        panic!()
    };
    assert!(usage.message.contains("Cost: $0.0001"), "{}", usage.message);
}

/// The persisted events of everything the harness emitted so far, stamped
/// as the driver would.
pub(crate) fn persisted(h: &Harness) -> Vec<crate::protocol::EventEnvelope> {
    let mut seq = 0;
    h.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Emit { turn_id, message } => {
                seq += 1;
                Some(crate::protocol::EventEnvelope {
                    session_id: SessionId::from("s1"),
                    seq,
                    turn_id: *turn_id,
                    at: chrono::DateTime::UNIX_EPOCH,
                    message: message.clone(),
                })
            }
            _ => None,
        })
        .filter(|e| e.message.is_persisted())
        .collect()
}

fn fresh() -> SessionState {
    fresh_like(Harness::new().state())
}

/// A fresh state with `live`'s configuration, as the loader builds one
/// before folding the log into it.
pub(crate) fn fresh_like(live: &SessionState) -> SessionState {
    SessionState::new(
        live.session_id.clone(),
        live.config.clone(),
        "main".into(),
        live.tools.clone(),
    )
}

#[test]
fn restore_closes_a_turn_the_process_left_in_a_tool_call() {
    let mut h = Harness::new();
    h.query("run it");
    let req = model_calls(&h.effects)[0].0;
    h.answer(
        req,
        "Running.",
        &[
            ("c1", "bash", r#"{"command":"sleep 9"}"#),
            ("c2", "bash", "{}"),
        ],
    );
    let batch = tool_batches(&h.effects)[0].0;
    h.tool_done(batch, "c1", "done");
    // The process dies here: c2 never finished, no result was written.
    let log = persisted(&h);
    let mut state = fresh();
    let fx = restore(&mut state, &log);
    let closing = messages(&fx);
    assert_eq!(type_names(&closing), ["tool_result", "result"]);
    let AgentMessage::ToolResult(t) = &closing[0] else {
        panic!()
    };
    assert!(t.cancelled && t.call_id == "c2");
    let AgentMessage::Result(r) = &closing[1] else {
        panic!()
    };
    assert_eq!(r.stop_reason, StopReason::Error);
    assert_eq!(r.error.as_deref(), Some(super::restore::UNFINISHED_TURN));
    assert_eq!(r.text, "Running.");
    assert_history_valid(&state.history);
    assert!(!state.is_busy());
    assert_eq!(state.next_input_id(), 2);
}

#[test]
fn restore_of_a_turn_cut_while_streaming_keeps_only_the_user_message() {
    let mut h = Harness::new();
    h.query("story");
    let req = model_calls(&h.effects)[0].0;
    h.model(
        req,
        ModelEvent::TextDelta {
            index: 0,
            text: "Once".into(),
        },
    );
    let mut state = fresh();
    let fx = restore(&mut state, &persisted(&h));
    assert_eq!(type_names(&messages(&fx)), ["result"]);
    assert_eq!(state.history, vec![Message::user("story")]);
}

/// One step of a random conversation, chosen among what is possible now.
fn act(h: &mut Harness, choice: u8, n: usize) {
    let running = h.state().turn.clone();
    match running.map(|t| t.phase) {
        None => match choice % 8 {
            0 => {
                h.query("/clear");
            }
            1 => {
                h.query(if n.is_multiple_of(2) {
                    "/model other"
                } else {
                    "/model main"
                });
            }
            2 => {
                h.query(&format!("see @f{n}.txt and @d{n}"));
            }
            3 => {
                h.query(&format!("!echo {n}"));
            }
            _ => {
                h.query(&format!("question {n}"));
            }
        },
        Some(Phase::Streaming { request_id, .. }) => match choice % 7 {
            0 => {
                h.model(
                    request_id,
                    ModelEvent::TextDelta {
                        index: 0,
                        text: "partial".into(),
                    },
                );
                h.feed(Input::Interrupt);
            }
            1 => {
                h.feed(Input::ModelFailed {
                    request_id,
                    too_long: None,
                    error: "down".into(),
                });
            }
            2 => {
                h.answer(request_id, "", &[("x", "bash", "{broken")]);
            }
            3 | 4 => {
                let a = format!("a{n}");
                let b = format!("b{n}");
                h.answer(
                    request_id,
                    "tools",
                    &[(&a, "bash", "{}"), (&b, "bash", "{}")],
                );
            }
            _ => {
                h.answer(request_id, &format!("answer {n}"), &[]);
            }
        },
        Some(Phase::Compacting) => {
            let Some(request_id) = h.state().compacting.as_ref().map(|c| c.request_id) else {
                return;
            };
            match choice % 3 {
                0 => {
                    h.feed(Input::Interrupt);
                }
                1 => {
                    h.feed(Input::ModelFailed {
                        request_id,
                        too_long: None,
                        error: "down".into(),
                    });
                }
                _ => {
                    h.answer(request_id, &format!("summary {n}"), &[]);
                }
            }
        }
        // No hooks in these sessions: never waited for; an interrupt ends it.
        Some(Phase::PromptHook(_) | Phase::StopHook { .. }) => {
            h.feed(Input::Interrupt);
        }
        Some(Phase::WaitingForMcp) => {
            let turn_id = h.state().turn.as_ref().map_or(0, |t| t.id);
            if choice.is_multiple_of(2) {
                h.feed(Input::Interrupt);
            } else {
                h.feed(Input::McpWaitTimedOut { turn_id });
            }
        }
        Some(Phase::Attaching(attaching)) => {
            let Some(item) = attaching
                .items
                .iter()
                .find(|i| i.outcome.is_none() && i.refused.is_none())
            else {
                return;
            };
            let outcome = match choice % 4 {
                0 => {
                    h.feed(Input::Interrupt);
                    return;
                }
                1 => ToolOutcome::error(format!("/ws/x {}", crate::model::NOT_A_FILE)),
                2 => ToolOutcome::error("file not found"),
                _ => ToolOutcome {
                    output: format!("contents {n}"),
                    is_error: false,
                    duration_ms: 1,
                },
            };
            h.feed(Input::ToolFinished {
                checkpoint: None,
                batch_id: attaching.batch_id,
                call_id: item.call_id.clone(),
                outcome,
            });
        }
        Some(Phase::RunningTools { batch_id, calls }) => match choice % 4 {
            0 => {
                h.feed(Input::Interrupt);
            }
            _ => {
                if let Some(call) = calls.iter().rev().find(|c| c.outcome.is_none()) {
                    h.tool_done(batch_id, &call.id.clone(), "ok");
                }
            }
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A session loaded from its log is the session that wrote it.
    #[test]
    fn fold_of_the_persisted_events_equals_the_live_state(choices in proptest::collection::vec(any::<u8>(), 0..80)) {
        let mut h = Harness::with(4, true);
        for (n, choice) in choices.into_iter().enumerate() {
            act(&mut h, choice, n);
        }
        if h.state().turn.is_some() {
            h.feed(Input::Interrupt); // settle: a live session between turns
        }
        let mut restored = fresh();
    let fx = restore(&mut restored, &persisted(&h));
        prop_assert!(fx.is_empty(), "nothing to close: {fx:?}");
        let live = h.state();
        prop_assert_eq!(&restored.history, &live.history);
        prop_assert_eq!(&restored.model, &live.model);
        prop_assert_eq!(&restored.usage, &live.usage);
        prop_assert_eq!(restored.next_input_id(), live.next_input_id());
        assert_history_valid(&restored.history);
    }

    /// The same with a small context budget, so that the conversation is
    /// pruned and compacted: the summary and where it starts come back.
    #[test]
    fn fold_with_compactions_equals_the_live_state(choices in proptest::collection::vec(any::<u8>(), 0..80)) {
        let mut h = Harness::with(4, true);
        h.state.config.context.max_tokens = Some(160);
        h.state.config.context.min_recent_turns = Some(1);
        for (n, choice) in choices.into_iter().enumerate() {
            act(&mut h, choice, n);
        }
        if h.state().turn.is_some() || h.state().compacting.is_some() {
            h.feed(Input::Interrupt);
        }
        let live = h.state();
        let mut restored = fresh_like(live);
        let fx = restore(&mut restored, &persisted(&h));
        prop_assert!(fx.is_empty(), "nothing to close: {fx:?}");
        prop_assert_eq!(&restored.history, &live.history);
        prop_assert_eq!(&restored.context.summary, &live.context.summary);
        prop_assert_eq!(restored.context.compactions, live.context.compactions);
        prop_assert_eq!(&restored.usage, &live.usage);
        assert_history_valid(&restored.history);
    }
}

/// A harness whose requests may use `max_tokens` tokens, keeping one
/// recent turn verbatim.
fn limited(max_tokens: u64) -> Harness {
    let mut h = Harness::new();
    h.state.config.context.max_tokens = Some(max_tokens);
    h.state.config.context.min_recent_turns = Some(1);
    h.report_usage = false;
    h
}

fn words(tag: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{tag}{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn system_events(h: &Harness, subtype: SystemSubtype) -> Vec<crate::protocol::SystemEvent> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::System(s) if s.subtype == subtype => Some(s),
            _ => None,
        })
        .collect()
}

fn last_user_text(request: &crate::model::ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn passing_auto_compact_at_compacts_once_then_calls_with_the_summary() {
    let mut h = limited(800);
    h.query(&words("first", 300));
    let first = model_calls(&h.effects)[0].0;
    h.answer(first, "noted", &[]);
    let calls_before = model_calls(&h.effects).len();
    h.query(&format!("second {}", words("late", 10)));
    let calls = model_calls(&h.effects)[calls_before..].to_vec();
    assert_eq!(
        calls.len(),
        1,
        "one call: the compaction: {:#?}",
        h.events()
    );
    let (compaction_id, compaction) = &calls[0];
    assert!(
        compaction.tools.is_empty(),
        "a summary request offers no tools"
    );
    assert_eq!(compaction.system_prompt, "summarise");
    let transcript = last_user_text(compaction);
    assert!(
        transcript.contains("first0") && !transcript.contains("late0"),
        "{transcript}"
    );

    h.answer(*compaction_id, "SUMMARY: the user listed words", &[]);
    let compacted = system_events(&h, SystemSubtype::Compacted);
    assert_eq!(compacted.len(), 1);
    let payload = compacted[0]
        .payload::<crate::protocol::context::Compacted>()
        .expect("compacted payload");
    assert_eq!(payload.first_kept, 2);
    assert!(payload.tokens_after < payload.tokens_before, "{payload:?}");
    assert_eq!(
        payload.trigger,
        crate::protocol::context::CompactionTrigger::Auto
    );

    let (next_id, next) = model_calls(&h.effects)
        .last()
        .cloned()
        .expect("the real call");
    assert_ne!(next_id, *compaction_id);
    assert!(
        next.system_prompt
            .contains("SUMMARY: the user listed words")
    );
    assert!(
        next.system_prompt.starts_with("be brief"),
        "system prompt kept"
    );
    assert_eq!(next.messages.len(), 1, "{:?}", next.messages);
    assert!(
        last_user_text(&next).starts_with("second late0"),
        "latest request verbatim"
    );
    assert!(!next.tools.is_empty());
    h.answer(next_id, "done", &[]);
    let result = h.results().pop().expect("result");
    assert_eq!(result.stop_reason, StopReason::EndTurn);
    assert!(result.context.is_some_and(|c| c.limit == Some(800)));
    assert_eq!(h.state().history.len(), 4, "the history keeps everything");
    assert_history_valid(&h.state().history);
}

#[test]
fn a_context_length_refusal_compacts_and_retries_exactly_once() {
    let mut h = Harness::new(); // no limit known: only the provider can tell
    for n in 0..3 {
        h.query(&format!("turn {n}: {}", words("w", 300)));
        let id = model_calls(&h.effects).last().expect("call").0;
        h.answer(id, "ok", &[]);
    }
    let before = model_calls(&h.effects).len();
    h.query("turn 3");
    let (first, _) = model_calls(&h.effects).last().cloned().expect("call");
    h.feed(Input::ModelFailed {
        request_id: first,
        error: "prompt is too long: 3000 tokens > 2000 maximum".into(),
        too_long: Some(crate::model::ContextRefusal {
            input_tokens: Some(3000),
            window: Some(2000),
            ..Default::default()
        }),
    });
    let (compaction, request) = model_calls(&h.effects).last().cloned().expect("compaction");
    assert!(request.tools.is_empty());
    h.answer(compaction, "SUMMARY of turns 0-1", &[]);
    let payload = system_events(&h, SystemSubtype::Compacted)[0]
        .payload::<crate::protocol::context::Compacted>()
        .expect("payload");
    assert_eq!(
        payload.trigger,
        crate::protocol::context::CompactionTrigger::Overflow
    );
    let (retry, request) = model_calls(&h.effects).last().cloned().expect("retry");
    assert!(request.system_prompt.contains("SUMMARY of turns 0-1"));
    assert_eq!(last_user_text(&request), "turn 3");
    // A second refusal is not retried again: the turn fails.
    h.feed(Input::ModelFailed {
        request_id: retry,
        error: "prompt is too long".into(),
        too_long: Some(Default::default()),
    });
    assert_eq!(
        model_calls(&h.effects).len() - before,
        3,
        "call, compaction, one retry"
    );
    let result = h.results().pop().expect("result");
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(!h.state().is_busy());
}

#[test]
fn a_refusal_that_states_the_window_bounds_the_retry_and_every_later_turn() {
    let mut h = Harness::new(); // the profile says no window
    h.report_usage = false;
    for n in 0..4 {
        h.query(&format!("turn {n}: {}", words("w", 150)));
        let id = model_calls(&h.effects).last().expect("call").0;
        h.answer(id, "ok", &[]);
    }
    let estimate = crate::session::core::context::report(&mut h.state).used;
    h.query("turn 4");
    let (first, _) = model_calls(&h.effects).last().cloned().expect("call");
    // The provider counts a third more than we do, in a window of 1,200.
    let counted = estimate * 4 / 3;
    h.feed(Input::ModelFailed {
        request_id: first,
        error: format!("prompt is too long: {counted} tokens > 1200 maximum"),
        too_long: Some(crate::model::ContextRefusal {
            input_tokens: Some(counted),
            window: Some(1200),
            ..Default::default()
        }),
    });
    assert_eq!(crate::session::core::context::limit(h.state()), Some(1200));
    // However the retry is made (a compaction first, or fewer turns), the
    // provider's count of it fits now.
    let mut calls = model_calls(&h.effects).len();
    loop {
        let (id, request) = model_calls(&h.effects).last().cloned().expect("call");
        let report = crate::session::core::context::report(&mut h.state);
        assert!(report.used <= 1200, "{report:?}");
        if request.tools.is_empty() {
            h.answer(id, "SUMMARY: four turns of words", &[]);
        } else {
            assert_eq!(last_user_text(&request), "turn 4");
            h.answer(id, "done", &[]);
            break;
        }
        assert!(model_calls(&h.effects).len() > calls, "a call follows");
        calls = model_calls(&h.effects).len();
    }
    assert_eq!(
        h.results().pop().map(|r| r.stop_reason),
        Some(StopReason::EndTurn)
    );
    // The next turn is planned inside the learnt window at once.
    h.query(&format!("turn 5: {}", words("v", 150)));
    let (_, request) = model_calls(&h.effects).last().cloned().expect("call");
    assert!(!request.tools.is_empty());
    assert!(crate::session::core::context::report(&mut h.state).used <= 1200);
}

#[test]
fn a_message_too_long_for_the_window_is_refused_before_anything_is_sent() {
    let mut h = limited(300);
    h.query("hello");
    let id = model_calls(&h.effects).last().expect("call").0;
    h.answer(id, "hi", &[]);
    let calls = model_calls(&h.effects).len();
    h.query(&words("huge", 400));
    assert_eq!(model_calls(&h.effects).len(), calls, "nothing was sent");
    let error = h
        .events()
        .into_iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Error(e) => Some(e),
            _ => None,
        })
        .expect("an error event");
    assert_eq!(error.kind, crate::protocol::ErrorKind::Context);
    assert!(
        error.message.contains("This message does not fit")
            && error.message.contains("tool definitions")
            && error
                .message
                .contains("Ways out: a profile with a larger window"),
        "{}",
        error.message
    );
    let result = h.results().pop().expect("result");
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(!h.state().is_busy());
    // The session lives on: a message that fits is answered (the one that
    // did not is summarised with the older turns, or left out).
    h.query("short again");
    let (mut id, mut request) = model_calls(&h.effects).last().cloned().expect("call");
    if request.tools.is_empty() {
        h.answer(
            id,
            "SUMMARY: a greeting, then a message too long to send",
            &[],
        );
        (id, request) = model_calls(&h.effects).last().cloned().expect("call");
    }
    assert!(
        !request
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { text, .. } if text.starts_with("huge0"))),
        "{:?}",
        request.messages
    );
    assert_eq!(last_user_text(&request), "short again");
    h.answer(id, "fine", &[]);
    assert_eq!(
        h.results().pop().map(|r| r.stop_reason),
        Some(StopReason::EndTurn),
        "{:#?}",
        h.events()
    );
    assert_history_valid(&h.state().history);
}

#[test]
fn tool_definitions_over_half_the_window_are_said_once() {
    let mut h = limited(400);
    let tools = vec![ToolSpec {
        name: "bash".into(),
        description: words("describe", 120),
        input_schema: std::sync::Arc::new(json!({"type": "object"})),
        origin: ToolOrigin::Builtin,
    }];
    h.state.tools = std::sync::Arc::new(tools);
    for n in 0..2 {
        h.query(&format!("q{n}"));
        let id = model_calls(&h.effects).last().expect("call").0;
        h.answer(id, "ok", &[]);
    }
    let said: Vec<_> = system_events(&h, SystemSubtype::Notice)
        .into_iter()
        .filter(|n| n.message.contains("tool definitions take about"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].message.contains("`tools = [...]`"),
        "{}",
        said[0].message
    );
    let report = crate::session::core::context::report(&mut h.state);
    assert_eq!(report.warnings.len(), 1, "{report:?}");
    assert!(
        report.safety_margin > 0 && report.safety_margin < 40,
        "a tenth of what only we counted: {report:?}"
    );
}

#[test]
fn a_summary_that_would_not_shorten_the_request_is_not_kept() {
    let mut h = limited(800);
    h.query(&words("first", 300));
    let first = model_calls(&h.effects)[0].0;
    h.answer(first, "noted", &[]);
    h.query("second");
    let (compaction, request) = model_calls(&h.effects).last().cloned().expect("compaction");
    assert!(request.tools.is_empty());
    assert!(
        request.max_output_tokens.is_some_and(|cap| cap <= 128),
        "the summary is capped: {:?}",
        request.max_output_tokens
    );
    // A model that ignores the cap (a real one would stop at it).
    h.answer(compaction, &words("summary", 400), &[]);
    assert!(system_events(&h, SystemSubtype::Compacted).is_empty());
    assert!(h.state().context.summary.is_none());
    assert!(
        system_events(&h, SystemSubtype::Notice).iter().any(|n| n
            .message
            .contains("would not have made the request smaller")),
        "{:?}",
        system_events(&h, SystemSubtype::Notice)
    );
    let (next, request) = model_calls(&h.effects).last().cloned().expect("the call");
    assert!(!request.tools.is_empty());
    assert!(!request.system_prompt.contains("summary0"));
    assert_eq!(last_user_text(&request), "second");
    h.answer(next, "done", &[]);
    assert_eq!(
        h.results().pop().map(|r| r.stop_reason),
        Some(StopReason::EndTurn)
    );
}

#[test]
fn a_failed_compaction_falls_back_to_dropping_old_turns_and_says_so() {
    let mut h = limited(800);
    h.query(&words("first", 300));
    let first = model_calls(&h.effects)[0].0;
    h.answer(first, "noted", &[]);
    h.query("second");
    let (compaction, _) = model_calls(&h.effects).last().cloned().expect("compaction");
    h.feed(Input::ModelFailed {
        request_id: compaction,
        error: "prompt is too long".into(),
        too_long: Some(Default::default()),
    });
    // Too long itself: retried once, quoting less.
    let (shortened, request) = model_calls(&h.effects).last().cloned().expect("shortened");
    assert_ne!(shortened, compaction);
    assert!(request.tools.is_empty(), "still the summarising request");
    let notices = system_events(&h, SystemSubtype::Compacting);
    assert!(
        notices
            .iter()
            .any(|n| n.message.contains("too long as well")),
        "{notices:?}"
    );
    h.feed(Input::ModelFailed {
        request_id: shortened,
        error: "prompt is too long".into(),
        too_long: Some(Default::default()),
    });
    let compaction = shortened;
    let notices = system_events(&h, SystemSubtype::Notice);
    assert!(
        notices
            .iter()
            .any(|n| n.message.contains("Compaction failed") && n.message.contains("oldest-first")),
        "{notices:?}"
    );
    let (next, request) = model_calls(&h.effects)
        .last()
        .cloned()
        .expect("the real call");
    assert_ne!(next, compaction);
    assert_eq!(request.messages.len(), 1, "the old turn is left out");
    assert_eq!(last_user_text(&request), "second");
    h.answer(next, "done", &[]);
    assert_eq!(
        h.results().pop().map(|r| r.stop_reason),
        Some(StopReason::EndTurn)
    );
    assert!(system_events(&h, SystemSubtype::Compacted).is_empty());
}

#[test]
fn compact_command_summarises_with_its_focus_and_answers_the_command() {
    let mut h = Harness::new();
    // The harness's usage (10 tokens whatever is sent) would teach that
    // the turns cost nothing, and no summary is smaller than nothing.
    h.report_usage = false;
    for n in 0..2 {
        h.query(&format!("turn {n}: {}", words("w", 60)));
        let id = model_calls(&h.effects).last().expect("call").0;
        h.answer(id, "ok", &[]);
    }
    let command = h.query("/compact the API design");
    let (id, request) = model_calls(&h.effects).last().cloned().expect("compaction");
    assert!(last_user_text(&request).contains("Focus the summary on: the API design"));
    assert!(h.state().is_busy());
    h.query("after");
    assert_eq!(
        model_calls(&h.effects).last().map(|c| c.0),
        Some(id),
        "the query waits"
    );
    h.answer(id, "SUMMARY", &[]);
    let events: Vec<_> = h
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Emit {
                turn_id,
                message: AgentMessage::System(s),
            } if s.subtype == SystemSubtype::Compacted => Some(*turn_id),
            _ => None,
        })
        .collect();
    assert_eq!(events, vec![Some(command)]);
    let (_, next) = model_calls(&h.effects).last().cloned().expect("after");
    assert_eq!(last_user_text(&next), "after");
    assert!(next.system_prompt.contains("SUMMARY"));
    assert!(
        !next
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { text, .. } if text.starts_with("turn 0"))),
        "turn 0 is summarised"
    );
    assert_eq!(
        next.messages.len(),
        3,
        "turn 1 and the new query: {:?}",
        next.messages
    );
}

#[test]
fn compact_with_one_turn_says_there_is_nothing_to_compact() {
    let mut h = Harness::new();
    h.query("only");
    let id = model_calls(&h.effects).last().expect("call").0;
    h.answer(id, "ok", &[]);
    h.query("/compact");
    assert_eq!(model_calls(&h.effects).len(), 1);
    let notices = system_events(&h, SystemSubtype::Notice);
    assert!(
        notices
            .iter()
            .any(|n| n.message.contains("Nothing to compact")),
        "{notices:?}"
    );
    assert!(!h.state().is_busy());
}

#[test]
fn context_command_breaks_the_budget_down() {
    let mut h = limited(4000);
    h.query("hello there");
    let id = model_calls(&h.effects).last().expect("call").0;
    h.answer(id, "hi", &[]);
    h.query("/context");
    let reply = system_events(&h, SystemSubtype::Context)
        .pop()
        .expect("reply");
    let report = reply
        .payload::<crate::protocol::context::ContextReport>()
        .expect("report");
    assert_eq!(report.limit, Some(4000));
    assert!(report.system_prompt > 0 && report.tool_definitions > 0 && report.messages > 0);
    assert_eq!(
        report.used,
        report.system_prompt + report.tool_definitions + report.messages + report.tool_outputs
    );
    assert_eq!(report.free, Some(4000 - report.used));
    assert!(
        reply.message.contains("tool definitions"),
        "{}",
        reply.message
    );
}

#[test]
fn thinking_streams_as_thinking_is_kept_signed_and_is_not_the_answer() {
    let mut h = limited(4000);
    h.query("what is 2 + 2?");
    let id = model_calls(&h.effects).last().expect("call").0;
    let thought = "Two and two make four, which is the answer.";
    for event in [
        ModelEvent::BlockStart {
            index: 0,
            block: BlockKind::Thinking,
        },
        ModelEvent::ThinkingDelta {
            index: 0,
            text: thought.into(),
        },
        ModelEvent::ThinkingSignature {
            index: 0,
            signature: "sig".into(),
        },
        ModelEvent::BlockStop { index: 0 },
        ModelEvent::RedactedThinking {
            index: 1,
            data: "opaque".into(),
        },
        ModelEvent::TextDelta {
            index: 2,
            text: "4".into(),
        },
        ModelEvent::Finished {
            finish_reason: "end_turn".into(),
        },
    ] {
        h.model(id, event);
    }
    let deltas: Vec<StreamDelta> = h
        .events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::StreamEvent(s) => Some(s.event),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas[..3],
        [
            StreamDelta::BlockStart {
                index: 0,
                block: BlockKind::Thinking
            },
            StreamDelta::ThinkingDelta {
                index: 0,
                text: thought.into()
            },
            StreamDelta::BlockStop { index: 0 },
        ],
        "the signature and the redacted block never stream"
    );
    let assistant = h
        .events()
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a),
            _ => None,
        })
        .expect("assistant");
    assert_eq!(
        assistant.content,
        vec![
            ContentBlock::Thinking {
                thinking: thought.into(),
                signature: Some("sig".into()),
            },
            ContentBlock::RedactedThinking {
                data: "opaque".into()
            },
            ContentBlock::Text { text: "4".into() },
        ]
    );
    assert_eq!(h.results()[0].text, "4", "thinking is not the answer");

    // What is sent back is counted apart.
    h.query("/context");
    let reply = system_events(&h, SystemSubtype::Context)
        .pop()
        .expect("reply");
    let report = reply
        .payload::<crate::protocol::context::ContextReport>()
        .expect("report");
    let ledger = &h.state().context.ledger;
    assert_eq!(report.thinking, ledger.text_tokens(thought));
    assert_eq!(
        report.used,
        report.system_prompt
            + report.tool_definitions
            + report.messages
            + report.thinking
            + report.tool_outputs
    );
    assert!(
        reply.message.contains("\n  thinking  "),
        "{}",
        reply.message
    );
}

#[test]
fn session_commands_hold_the_queue_until_the_driver_answers() {
    let mut h = Harness::new();
    let new = h.query("/new");
    h.query("after");
    assert!(
        model_calls(&h.effects).is_empty(),
        "the query waits behind /new"
    );
    assert!(h.effects.contains(&Effect::SessionCommand {
        input_id: new,
        command: SessionCommand::New
    }));
    assert!(h.state().is_busy());
    // An answer for another input changes nothing.
    let stray = h.feed(Input::CommandDone {
        input_id: 999,
        reply: crate::session::core::commands::failed("new", "x"),
    });
    assert!(stray.is_empty());
    let fx = h.feed(Input::CommandDone {
        input_id: new,
        reply: crate::session::core::commands::new::created(&SessionId::from("s2")),
    });
    let AgentMessage::System(reply) = &messages(&fx)[0] else {
        panic!()
    };
    assert_eq!(reply.subtype, SystemSubtype::NewConversation);
    assert_eq!(reply.data.as_ref().unwrap()["switch_to"], "s2");
    assert_eq!(model_calls(&fx).len(), 1, "then the queued query runs");
    assert_eq!(
        h.state().history.len(),
        1,
        "/new leaves this session's history alone"
    );
}

#[test]
fn shutdown_answers_a_session_command_still_running() {
    let mut h = Harness::new();
    let new = h.query("/new");
    let queued = h.query("after");
    let fx = h.feed(Input::Shutdown);
    let answered = emitted(&fx);
    assert_eq!(answered, [(Some(new), "system"), (Some(queued), "result")]);
    assert!(!h.state().is_busy(), "nothing is left waiting");
    // Its reply, should it still come, changes nothing.
    let late = h.feed(Input::CommandDone {
        input_id: new,
        reply: crate::session::core::commands::new::created(&SessionId::from("s2")),
    });
    assert!(late.is_empty());
}

#[test]
fn shutdown_cancels_the_turn_and_answers_every_queued_input() {
    let mut h = Harness::new();
    let running = h.query("running");
    let queued = h.query("queued");
    let command = h.query("/usage");
    let fx = h.feed(Input::Shutdown);
    let ends = emitted(&fx);
    assert_eq!(
        ends,
        [
            (Some(running), "result"),
            (Some(queued), "result"),
            (Some(command), "system")
        ]
    );
    assert!(model_calls(&fx).is_empty(), "nothing new starts");
    assert!(h.state().is_idle());
    assert!(
        h.results()
            .iter()
            .all(|r| r.stop_reason == StopReason::Cancelled)
    );
}

#[test]
fn a_fork_before_the_compaction_folds_to_the_uncompacted_conversation() {
    let mut h = limited(800);
    h.query(&words("first", 300));
    let first = model_calls(&h.effects)[0].0;
    h.answer(first, "noted", &[]);
    h.query("second");
    let (compaction, _) = model_calls(&h.effects).last().cloned().expect("compaction");
    h.answer(compaction, "SUMMARY", &[]);
    let (call, _) = model_calls(&h.effects).last().cloned().expect("call");
    h.answer(call, "done", &[]);
    let events = persisted(&h);
    let at = events
        .iter()
        .position(|e| matches!(&e.message, AgentMessage::System(s) if s.subtype == SystemSubtype::Compacted))
        .expect("a compacted event");
    let fold = |events: &[crate::protocol::EventEnvelope]| {
        let mut state = fresh_like(h.state());
        restore(&mut state, events);
        state
    };
    // Everything: the summary stands for the first turn.
    let whole = fold(&events);
    assert_eq!(
        whole.context.summary.as_ref().map(|s| s.first_kept),
        Some(2)
    );
    // Up to just before it (what `/fork AT` copies): no summary.
    let forked = fold(&events[..at]);
    assert_eq!(forked.context.summary, None);
    assert_eq!(forked.history[..3], whole.history[..3]);
}

#[test]
fn a_prompt_is_never_read_as_a_slash_command() {
    let mut h = Harness::new();
    h.query("first");
    let req = model_calls(&h.effects).last().unwrap().0;
    h.answer(req, "ok", &[]);
    // As typed, `/clear` would empty the history; as a task's prompt it is
    // text for the model.
    h.feed(Input::Submit {
        input_id: 7,
        input: UserInput::Prompt {
            text: "/clear the cache, then report".into(),
        },
    });
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 2, "the prompt started a turn");
    assert_eq!(
        h.state().history.len(),
        3,
        "the first question and answer kept, the prompt added"
    );
    assert!(
        h.events().iter().any(
            |e| matches!(e, AgentMessage::User(u) if u.text == "/clear the cache, then report")
        )
    );
}

#[test]
fn usage_and_context_show_how_much_input_the_prompt_cache_read() {
    let mut h = Harness::new();
    h.query("hello");
    let req = model_calls(&h.effects).last().expect("call").0;
    h.model(
        req,
        ModelEvent::Usage(Usage {
            input_tokens: 100,
            output_tokens: 1,
            cache_read_input_tokens: 900,
            cache_creation_input_tokens: 90,
        }),
    );
    h.report_usage = false;
    h.answer(req, "hi", &[]);
    assert_eq!(h.results()[0].usage.cache_read_input_tokens, 900);
    h.query("/usage");
    let usage = system_events(&h, SystemSubtype::Usage)
        .pop()
        .expect("usage");
    assert!(
        usage
            .message
            .contains("(cache: 900 read, 90 written; 83% of the input read from the cache)"),
        "{}",
        usage.message
    );
    h.query("/context");
    let reply = system_events(&h, SystemSubtype::Context)
        .pop()
        .expect("reply");
    let cache = reply
        .payload::<crate::protocol::context::ContextReport>()
        .expect("report")
        .cache
        .expect("cache figures");
    assert!((cache.last_turn - 900.0 / 1090.0).abs() < 1e-9, "{cache:?}");
    assert_eq!((cache.read_tokens, cache.written_tokens), (900, 90));
    assert!(
        reply
            .message
            .contains("Prompt cache: 83% of the last turn's input read from it"),
        "{}",
        reply.message
    );
}

#[test]
fn pruning_moves_the_start_of_the_view_in_steps_so_prompt_caches_survive() {
    // Oldest-first in a small budget: every turn is ~100 tokens, the
    // budget holds about ten of them.
    let mut h = limited(1_500);
    h.state.config.context.strategy = Some(crate::protocol::Strategy::OldestFirst);
    let mut firsts = Vec::new();
    for n in 0..60 {
        h.query(&format!("turn {n}: {}", words("w", 40)));
        let (id, request) = model_calls(&h.effects).last().cloned().expect("call");
        firsts.push(request.messages.first().cloned());
        h.answer(id, &words("answer", 30), &[]);
    }
    let moves = firsts.windows(2).filter(|pair| pair[0] != pair[1]).count();
    // Dropping one turn at a time would move it on nearly every call once
    // the budget is full (about fifty times here).
    assert!(moves > 0, "the budget was never reached");
    assert!(moves <= 60 / 4, "the start moved on {moves} of 60 calls");
}
