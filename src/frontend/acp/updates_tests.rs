//! The translation of events into `session/update`s, event by event.

use super::updates::{Models, Translator};
use crate::frontend::common::backend::Choices;
use agent_client_protocol::v1::schema::{
    self as acp, SessionConfigKind, SessionConfigOption, SessionUpdate, ToolCallStatus,
};
use agentbus_engine::protocol::system::{ModelSwitched, SessionStarted};
use agentbus_engine::protocol::{
    AgentInfo, AgentMessage, AgentSwitched, ApprovalChoice, ApprovalOutcome, ApprovalRequestEvent,
    ApprovalResolved, AssistantEvent, BlockKind, ContentBlock, ContextUsage, ErrorEvent, ErrorKind,
    EventEnvelope, InputId, ModeChanged, PermissionMode, Pricing, ResultEvent, SessionId,
    StopReason, StreamDelta, StreamEvent, SystemEvent, SystemSubtype, ToolResultEvent, Usage,
    UserEvent,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn envelope(seq: u64, turn: Option<InputId>, message: AgentMessage) -> EventEnvelope {
    EventEnvelope {
        session_id: SessionId::from("s"),
        seq,
        turn_id: turn,
        at: chrono::Utc::now(),
        message,
    }
}

/// Feeds events of turn 1 (or of no turn) and collects the updates.
struct Feed {
    translator: Translator,
    seq: u64,
}

impl Feed {
    fn new() -> Feed {
        Feed::with(Models::default())
    }

    fn with(models: Models) -> Feed {
        Feed {
            translator: Translator::new(PathBuf::from("/ws"), models, choices()),
            seq: 0,
        }
    }

    fn turn(&mut self, turn: InputId, message: AgentMessage) -> Vec<SessionUpdate> {
        self.seq += 1;
        self.translator
            .translate(&envelope(self.seq, Some(turn), message))
    }

    fn send(&mut self, message: AgentMessage) -> Vec<SessionUpdate> {
        self.turn(1, message)
    }

    fn outside(&mut self, message: AgentMessage) -> Vec<SessionUpdate> {
        self.seq += 1;
        self.translator
            .translate(&envelope(self.seq, None, message))
    }
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserEvent::new(text))
}

fn delta(event: StreamDelta) -> AgentMessage {
    AgentMessage::StreamEvent(StreamEvent { event })
}

fn assistant(content: Vec<ContentBlock>, finish: &str) -> AgentMessage {
    AgentMessage::Assistant(AssistantEvent {
        content,
        model: "main".into(),
        usage: Usage {
            input_tokens: 1_000,
            output_tokens: 100,
            ..Default::default()
        },
        finish_reason: finish.into(),
        interrupted: false,
        context: Some(ContextUsage {
            used: 1_100,
            limit: Some(8_000),
        }),
    })
}

fn text(text: &str) -> ContentBlock {
    ContentBlock::Text { text: text.into() }
}

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }
}

fn tool_result(id: &str, name: &str, output: &str, is_error: bool) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultEvent {
        checkpoint: None,
        call_id: id.into(),
        name: name.into(),
        is_error,
        output: output.into(),
        duration_ms: 3,
        cancelled: false,
    })
}

fn result(stop_reason: StopReason) -> AgentMessage {
    AgentMessage::Result(ResultEvent {
        stop_reason,
        text: String::new(),
        usage: Default::default(),
        steps: 1,
        duration_ms: 5,
        error: None,
        context: None,
    })
}

fn approval(request: &str, call: &str) -> AgentMessage {
    AgentMessage::ApprovalRequest(ApprovalRequestEvent {
        request_id: request.into(),
        call_id: call.into(),
        name: "bash".into(),
        input: json!({"command": "make"}),
        reason: "commands ask".into(),
        options: vec![ApprovalChoice::AllowOnce, ApprovalChoice::Reject],
        suggested_rule: None,
        suggested_mode: None,
        child_session: None,
    })
}

fn resolved(request: &str, call: &str, outcome: ApprovalOutcome) -> AgentMessage {
    AgentMessage::System(SystemEvent::new(
        "settled",
        &ApprovalResolved {
            request_id: request.into(),
            call_id: call.into(),
            outcome,
            message: None,
            rule: None,
            save: false,
            child_session: None,
            by: None,
        },
    ))
}

fn texts_of(updates: &[SessionUpdate]) -> Vec<(&'static str, String)> {
    updates
        .iter()
        .filter_map(|u| {
            let (kind, chunk) = match u {
                SessionUpdate::AgentMessageChunk(c) => ("agent", c),
                SessionUpdate::AgentThoughtChunk(c) => ("thought", c),
                SessionUpdate::UserMessageChunk(c) => ("user", c),
                _ => return None,
            };
            let acp::ContentBlock::Text(t) = &chunk.content else {
                return None;
            };
            Some((kind, t.text.clone()))
        })
        .collect()
}

#[test]
fn streamed_text_is_shown_once() {
    let mut feed = Feed::new();
    feed.translator.own(1);
    assert!(
        feed.send(user("hi")).is_empty(),
        "our own prompt is not echoed"
    );
    let chunks = [
        feed.send(delta(StreamDelta::BlockStart {
            index: 0,
            block: BlockKind::Text,
        })),
        feed.send(delta(StreamDelta::TextDelta {
            index: 0,
            text: "Hel".into(),
        })),
        feed.send(delta(StreamDelta::TextDelta {
            index: 0,
            text: "lo".into(),
        })),
    ]
    .concat();
    assert_eq!(
        texts_of(&chunks),
        [("agent", "Hel".into()), ("agent", "lo".into())]
    );
    let whole = feed.send(assistant(vec![text("Hello")], "stop"));
    assert!(texts_of(&whole).is_empty(), "{whole:?}");
}

fn thinking(thought: &str) -> ContentBlock {
    ContentBlock::Thinking {
        thinking: thought.into(),
        signature: Some("sig".into()),
    }
}

#[test]
fn streamed_thinking_is_a_thought_shown_once() {
    let mut feed = Feed::new();
    feed.translator.own(1);
    feed.send(user("2 + 2?"));
    let chunks = [
        feed.send(delta(StreamDelta::BlockStart {
            index: 0,
            block: BlockKind::Thinking,
        })),
        feed.send(delta(StreamDelta::ThinkingDelta {
            index: 0,
            text: "Two and two".into(),
        })),
        feed.send(delta(StreamDelta::ThinkingDelta {
            index: 0,
            text: " make four.".into(),
        })),
        feed.send(delta(StreamDelta::BlockStop { index: 0 })),
        feed.send(delta(StreamDelta::TextDelta {
            index: 1,
            text: "4".into(),
        })),
    ]
    .concat();
    assert_eq!(
        texts_of(&chunks),
        [
            ("thought", "Two and two".into()),
            ("thought", " make four.".into()),
            ("agent", "4".into())
        ]
    );
    let whole = feed.send(assistant(
        vec![
            thinking("Two and two make four."),
            ContentBlock::RedactedThinking {
                data: "opaque".into(),
            },
            text("4"),
        ],
        "stop",
    ));
    assert!(texts_of(&whole).is_empty(), "{whole:?}");
}

#[test]
fn replayed_thinking_is_a_thought_and_redacted_thinking_shows_nothing() {
    let mut feed = Feed::new();
    feed.send(user("2 + 2?"));
    let answer = feed.send(assistant(
        vec![
            thinking("Two and two make four."),
            ContentBlock::RedactedThinking {
                data: "opaque".into(),
            },
            text("4"),
        ],
        "stop",
    ));
    assert_eq!(
        texts_of(&answer),
        [
            ("thought", "Two and two make four.".into()),
            ("agent", "4".into())
        ]
    );
}

#[test]
fn a_replayed_turn_shows_the_user_the_answer_and_the_tool_call() {
    let mut feed = Feed::new();
    let asked = feed.send(user("read a.txt"));
    assert_eq!(texts_of(&asked), [("user", "read a.txt".into())]);
    let answer = feed.send(assistant(
        vec![
            text("Let me look."),
            tool_use("c1", "read_file", json!({"path": "a.txt"})),
        ],
        "tool_use",
    ));
    assert_eq!(texts_of(&answer), [("agent", "Let me look.".into())]);
    let call = answer
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call),
            _ => None,
        })
        .expect("a tool_call");
    assert_eq!(&*call.tool_call_id.0, "c1");
    assert_eq!(call.title, "Read a.txt");
    assert_eq!(call.kind, acp::ToolKind::Read);
    assert_eq!(call.status, ToolCallStatus::InProgress);
    assert_eq!(call.locations[0].path, PathBuf::from("/ws/a.txt"));
    assert_eq!(call.raw_input, Some(json!({"path": "a.txt"})));
    let done = feed.send(tool_result("c1", "read_file", "     1\thello\n", false));
    let [SessionUpdate::ToolCallUpdate(update)] = &done[..] else {
        panic!("one tool_call_update expected: {done:?}");
    };
    assert_eq!(update.fields.status, Some(ToolCallStatus::Completed));
    let Some([acp::ToolCallContent::Content(content)]) = update.fields.content.as_deref() else {
        panic!("the output expected: {update:?}");
    };
    assert_eq!(
        content.content,
        acp::ContentBlock::from("```\n     1\thello\n```")
    );
}

#[test]
fn a_streamed_tool_call_is_announced_then_completed_with_its_arguments() {
    let mut feed = Feed::new();
    let started = feed.send(delta(StreamDelta::BlockStart {
        index: 0,
        block: BlockKind::ToolUse {
            id: "c1".into(),
            name: "edit_file".into(),
        },
    }));
    let [SessionUpdate::ToolCall(call)] = &started[..] else {
        panic!("a tool_call expected: {started:?}");
    };
    assert_eq!(call.kind, acp::ToolKind::Edit);
    assert_eq!(call.status, ToolCallStatus::Pending);
    let input = json!({"path": "a.txt", "old_string": "x", "new_string": "y"});
    let whole = feed.send(assistant(
        vec![tool_use("c1", "edit_file", input)],
        "tool_use",
    ));
    let [
        SessionUpdate::ToolCallUpdate(update),
        SessionUpdate::UsageUpdate(_),
    ] = &whole[..]
    else {
        panic!("an update and the usage expected: {whole:?}");
    };
    assert_eq!(update.fields.title.as_deref(), Some("Edit a.txt"));
    assert_eq!(update.fields.status, Some(ToolCallStatus::InProgress));
    let Some([acp::ToolCallContent::Diff(diff)]) = update.fields.content.as_deref() else {
        panic!("the diff expected: {update:?}");
    };
    assert_eq!(
        (diff.old_text.as_deref(), diff.new_text.as_str()),
        (Some("x"), "y")
    );
    let done = feed.send(tool_result("c1", "edit_file", "Edited", false));
    let [SessionUpdate::ToolCallUpdate(done)] = &done[..] else {
        panic!("{done:?}");
    };
    assert!(
        matches!(
            done.fields.content.as_deref(),
            Some([acp::ToolCallContent::Diff(_)])
        ),
        "a finished edit keeps showing its diff: {done:?}"
    );
}

#[test]
fn a_failed_call_is_failed_with_its_error() {
    let mut feed = Feed::new();
    feed.send(assistant(
        vec![tool_use("c1", "bash", json!({"command": "false"}))],
        "tool_use",
    ));
    let done = feed.send(tool_result("c1", "bash", "exit 1", true));
    let [SessionUpdate::ToolCallUpdate(update)] = &done[..] else {
        panic!("{done:?}");
    };
    assert_eq!(update.fields.status, Some(ToolCallStatus::Failed));
}

#[test]
fn approvals_wait_until_settled_and_an_allowed_call_runs() {
    let mut feed = Feed::new();
    feed.send(assistant(
        vec![tool_use("c1", "bash", json!({"command": "make"}))],
        "tool_use",
    ));
    let asked = feed.send(approval("r1", "c1"));
    let [SessionUpdate::ToolCallUpdate(pending)] = &asked[..] else {
        panic!("{asked:?}");
    };
    assert_eq!(pending.fields.status, Some(ToolCallStatus::Pending));
    assert_eq!(
        feed.translator
            .waiting()
            .map(|r| r.request_id.as_str())
            .collect::<Vec<_>>(),
        ["r1"]
    );
    let allowed = feed.send(resolved("r1", "c1", ApprovalOutcome::AllowedOnce));
    let [SessionUpdate::ToolCallUpdate(running)] = &allowed[..] else {
        panic!("{allowed:?}");
    };
    assert_eq!(running.fields.status, Some(ToolCallStatus::InProgress));
    assert_eq!(feed.translator.waiting().count(), 0);

    feed.send(approval("r2", "c2"));
    let rejected = feed.send(resolved("r2", "c2", ApprovalOutcome::Rejected));
    assert!(
        rejected.is_empty(),
        "the error result says it: {rejected:?}"
    );
    assert_eq!(feed.translator.waiting().count(), 0);
}

#[test]
fn an_approval_seen_without_its_call_announces_the_call() {
    let mut feed = Feed::new();
    let asked = feed.send(approval("r1", "c9"));
    let [SessionUpdate::ToolCall(call)] = &asked[..] else {
        panic!("{asked:?}");
    };
    assert_eq!(call.status, ToolCallStatus::Pending);
    assert_eq!(call.title, "`make`");
}

#[test]
fn the_mode_is_followed_and_shown() {
    let mut feed = Feed::new();
    let started = SystemEvent::new(
        "started",
        &SessionStarted {
            workspace: "/elsewhere".into(),
            permission_mode: Some(PermissionMode::Plan),
            ..Default::default()
        },
    );
    assert!(feed.outside(AgentMessage::System(started)).is_empty());
    assert_eq!(&*feed.translator.modes().current_mode_id.0, "plan");
    assert_eq!(feed.translator.workspace(), Path::new("/elsewhere"));
    let changed = |mode| {
        AgentMessage::System(SystemEvent::new(
            "Permission mode: accept-edits.",
            &ModeChanged {
                mode,
                previous: Some(PermissionMode::Plan),
            },
        ))
    };
    // `/mode` typed as a prompt: the picker follows and the reply shows.
    let typed = feed.turn(4, changed(PermissionMode::AcceptEdits));
    assert!(
        matches!(
            &typed[..],
            [
                SessionUpdate::CurrentModeUpdate(m),
                SessionUpdate::ConfigOptionUpdate(_),
                SessionUpdate::AgentMessageChunk(_)
            ]
                if &*m.current_mode_id.0 == "accept-edits"
        ),
        "{typed:?}"
    );
    // The picker's own switch: the pickers alone.
    feed.translator.quiet(5);
    let picked = feed.turn(5, changed(PermissionMode::Bypass));
    assert!(
        matches!(
            &picked[..],
            [
                SessionUpdate::CurrentModeUpdate(_),
                SessionUpdate::ConfigOptionUpdate(_)
            ]
        ),
        "{picked:?}"
    );
    assert_eq!(&*feed.translator.modes().current_mode_id.0, "bypass");
}

/// The agents and models the pickers offer in these tests.
fn choices() -> Choices {
    Choices {
        agents: ["build", "plan", "reviewer"]
            .into_iter()
            .map(|name| AgentInfo {
                name: name.into(),
                description: String::new(),
                source: "built-in".into(),
            })
            .collect(),
        models: vec!["fast".into(), "smart".into()],
    }
}

/// The current value of each config option, by id.
fn option_values(options: &[SessionConfigOption]) -> Vec<(String, String)> {
    options
        .iter()
        .map(|o| match &o.kind {
            SessionConfigKind::Select(select) => {
                (o.id.0.to_string(), select.current_value.0.to_string())
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn agent_and_model_switches_move_the_pickers() {
    let mut feed = Feed::new();
    let started = SystemEvent::new(
        "started",
        &SessionStarted {
            model: "fast".into(),
            ..Default::default()
        },
    );
    feed.outside(AgentMessage::System(started));
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        option_values(&feed.translator.config_options()),
        pairs(&[("mode", "default"), ("agent", "build"), ("model", "fast")])
    );
    // `/agent plan` from the picker: plan brings its mode, so the mode
    // picker moves too, and no reply shows.
    feed.translator.quiet(2);
    let switched = feed.turn(
        2,
        AgentMessage::System(SystemEvent::new(
            "Agent: plan.",
            &AgentSwitched {
                agent: "plan".into(),
                previous: Some("build".into()),
                model: "fast".into(),
                permission_mode: PermissionMode::Plan,
            },
        )),
    );
    let [
        SessionUpdate::CurrentModeUpdate(mode),
        SessionUpdate::ConfigOptionUpdate(options),
    ] = &switched[..]
    else {
        panic!("{switched:?}");
    };
    assert_eq!(&*mode.current_mode_id.0, "plan");
    assert_eq!(
        option_values(&options.config_options),
        pairs(&[("mode", "plan"), ("agent", "plan"), ("model", "fast")])
    );
    // `/model smart` typed as a prompt: the model picker moves and the
    // reply shows; the mode did not change, so no mode update.
    let typed = feed.turn(
        3,
        AgentMessage::System(SystemEvent::new(
            "Model: smart.",
            &ModelSwitched {
                model: "smart".into(),
                previous: "fast".into(),
            },
        )),
    );
    let [
        SessionUpdate::ConfigOptionUpdate(options),
        SessionUpdate::AgentMessageChunk(_),
    ] = &typed[..]
    else {
        panic!("{typed:?}");
    };
    assert_eq!(
        option_values(&options.config_options)[2],
        pairs(&[("model", "smart")])[0]
    );
    assert!(
        feed.translator
            .modes()
            .available_modes
            .iter()
            .any(|m| &*m.id.0 == "agent:reviewer")
    );
}

#[test]
fn a_commands_reply_is_the_answer_and_progress_in_a_turn_a_thought() {
    let mut feed = Feed::new();
    let reply = feed.turn(
        2,
        AgentMessage::System(SystemEvent::bare(SystemSubtype::Usage, "12 tokens")),
    );
    assert_eq!(texts_of(&reply), [("agent", "12 tokens".into())]);
    feed.turn(3, user("go"));
    assert!(feed.translator.running(3));
    let progress = feed.turn(
        3,
        AgentMessage::System(SystemEvent::bare(SystemSubtype::Compacting, "Compacting.")),
    );
    assert_eq!(texts_of(&progress), [("thought", "Compacting.\n".into())]);
    feed.turn(3, result(StopReason::EndTurn));
    assert!(!feed.translator.running(3));
    let status = feed.outside(AgentMessage::System(SystemEvent::bare(
        SystemSubtype::McpServerStatus,
        "fs is ready",
    )));
    assert!(status.is_empty(), "{status:?}");
}

#[test]
fn an_error_is_shown() {
    let mut feed = Feed::new();
    let shown = feed.send(AgentMessage::Error(ErrorEvent {
        kind: ErrorKind::Provider,
        message: "the provider is down".into(),
    }));
    assert_eq!(texts_of(&shown).len(), 1);
    assert!(texts_of(&shown)[0].1.contains("the provider is down"));
}

#[test]
fn usage_says_how_full_the_context_is_and_what_it_cost() {
    let mut priced = Models::default();
    priced.pricing.insert(
        "main".into(),
        Pricing {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        },
    );
    let mut feed = Feed::with(priced);
    let updates = feed.send(assistant(vec![text("a")], "stop"));
    let Some(SessionUpdate::UsageUpdate(usage)) = updates.last() else {
        panic!("{updates:?}");
    };
    assert_eq!((usage.used, usage.size), (1_100, 8_000));
    let cost = usage.cost.as_ref().expect("priced");
    assert!((cost.amount - 0.0045).abs() < 1e-9, "{}", cost.amount);
    assert_eq!(cost.currency, "USD");
    // A second call adds up.
    let updates = feed.send(assistant(vec![text("b")], "stop"));
    let Some(SessionUpdate::UsageUpdate(usage)) = updates.last() else {
        panic!("{updates:?}");
    };
    assert!((usage.cost.as_ref().unwrap().amount - 0.009).abs() < 1e-9);
}

#[test]
fn usage_needs_a_size_and_takes_the_window_when_no_budget_is_reported() {
    let no_limit = |feed: &mut Feed| {
        feed.send(AgentMessage::Assistant(AssistantEvent {
            content: vec![text("a")],
            model: "main".into(),
            usage: Default::default(),
            finish_reason: "stop".into(),
            interrupted: false,
            context: Some(ContextUsage {
                used: 10,
                limit: None,
            }),
        }))
    };
    let mut unknown = Feed::new();
    assert!(
        !no_limit(&mut unknown)
            .iter()
            .any(|u| matches!(u, SessionUpdate::UsageUpdate(_)))
    );
    let mut windowed = Models::default();
    windowed.windows.insert("main".into(), 32_000);
    let mut known = Feed::with(windowed);
    let updates = no_limit(&mut known);
    let Some(SessionUpdate::UsageUpdate(usage)) = updates.last() else {
        panic!("{updates:?}");
    };
    assert_eq!(
        (usage.used, usage.size, usage.cost.is_none()),
        (10, 32_000, true)
    );
}

#[test]
fn a_discarded_attempt_is_said_and_its_calls_fail() {
    let mut feed = Feed::new();
    feed.send(delta(StreamDelta::TextDelta {
        index: 0,
        text: "Half an ans".into(),
    }));
    feed.send(delta(StreamDelta::BlockStart {
        index: 1,
        block: BlockKind::ToolUse {
            id: "c1".into(),
            name: "bash".into(),
        },
    }));
    let discarded = feed.send(delta(StreamDelta::Discard {
        reason: "the stream broke".into(),
    }));
    assert!(texts_of(&discarded)[0].1.contains("the stream broke"));
    assert!(discarded.iter().any(|u| matches!(
        u,
        SessionUpdate::ToolCallUpdate(c) if c.fields.status == Some(ToolCallStatus::Failed)
    )));
    // The next attempt's whole message is not shown twice.
    feed.send(delta(StreamDelta::TextDelta {
        index: 0,
        text: "A whole answer".into(),
    }));
    let whole = feed.send(assistant(vec![text("A whole answer")], "stop"));
    assert!(texts_of(&whole).is_empty());
}

#[test]
fn each_turn_keeps_how_its_last_reply_finished() {
    let mut feed = Feed::new();
    feed.turn(1, assistant(vec![text("no")], "refusal"));
    feed.turn(2, assistant(vec![text("cut")], "length"));
    assert_eq!(feed.translator.finish_reason(1), Some("refusal"));
    assert_eq!(feed.translator.finish_reason(2), Some("length"));
    assert_eq!(feed.translator.finish_reason(3), None);
}

#[test]
fn another_front_ends_prompt_is_shown_as_the_users() {
    let mut feed = Feed::new();
    feed.translator.own(1);
    assert!(feed.turn(1, user("mine")).is_empty());
    assert_eq!(
        texts_of(&feed.turn(2, user("from the web page"))),
        [("user", "from the web page".into())]
    );
}

#[test]
fn the_same_usage_is_not_shown_twice() {
    let mut feed = Feed::new();
    let usage_of = |updates: &[SessionUpdate]| {
        updates
            .iter()
            .filter(|u| matches!(u, SessionUpdate::UsageUpdate(_)))
            .count()
    };
    assert_eq!(usage_of(&feed.send(assistant(vec![text("a")], "stop"))), 1);
    let same = AgentMessage::Result(ResultEvent {
        context: Some(ContextUsage {
            used: 1_100,
            limit: Some(8_000),
        }),
        ..match result(StopReason::EndTurn) {
            AgentMessage::Result(r) => r,
            _ => unreachable!(),
        }
    });
    assert_eq!(usage_of(&feed.send(same)), 0);
}

#[test]
fn the_plan_is_a_plan_update_and_its_calls_are_not_tool_calls() {
    let mut feed = Feed::new();
    let started = feed.send(delta(StreamDelta::BlockStart {
        index: 0,
        block: BlockKind::ToolUse {
            id: "p1".into(),
            name: "todo_write".into(),
        },
    }));
    assert!(started.is_empty(), "{started:?}");
    let input = json!({"todos": [{"content": "Fix it", "status": "in_progress"}]});
    let whole = feed.send(assistant(
        vec![tool_use("p1", "todo_write", input)],
        "tool_use",
    ));
    assert!(
        !whole.iter().any(|u| matches!(
            u,
            SessionUpdate::ToolCall(_) | SessionUpdate::ToolCallUpdate(_)
        )),
        "{whole:?}"
    );
    let plan: agentbus_engine::protocol::Plan = serde_json::from_value(json!({"todos": [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix it", "status": "in_progress", "active_form": "Fixing it"},
        {"content": "Test it", "status": "pending"}
    ]}))
    .unwrap();
    let shown = feed.send(AgentMessage::System(SystemEvent::new("Plan", &plan)));
    let [SessionUpdate::Plan(acp_plan)] = &shown[..] else {
        panic!("a plan expected: {shown:?}");
    };
    assert_eq!(
        serde_json::to_value(acp_plan).unwrap(),
        json!({"entries": [
            {"content": "Read the code", "priority": "medium", "status": "completed"},
            {"content": "Fix it", "priority": "medium", "status": "in_progress"},
            {"content": "Test it", "priority": "medium", "status": "pending"}
        ]})
    );
    let done = feed.send(tool_result("p1", "todo_write", "Plan saved", false));
    assert!(done.is_empty(), "{done:?}");
    // `/clear` drops the plan: the editor is sent an empty one.
    let cleared = feed.turn(
        2,
        AgentMessage::System(SystemEvent::bare(SystemSubtype::Cleared, "Cleared.")),
    );
    assert!(
        matches!(&cleared[0], SessionUpdate::Plan(p) if p.entries.is_empty()),
        "{cleared:?}"
    );
    let again = feed.turn(
        3,
        AgentMessage::System(SystemEvent::bare(SystemSubtype::Cleared, "Cleared.")),
    );
    assert!(
        !again.iter().any(|u| matches!(u, SessionUpdate::Plan(_))),
        "{again:?}"
    );
}

#[test]
fn a_rewind_that_forked_says_the_editor_stays_and_how_to_open_the_fork() {
    use agentbus_engine::protocol::checkpoint::{RewindMode, RewindReport, Rewound};
    let mut feed = Feed::new();
    let rewound = |mode, forked: Option<&str>| {
        let report = RewindReport {
            seq: 4,
            mode,
            forked: forked.map(SessionId::from),
            ..RewindReport::default()
        };
        let switch_to = report.forked.clone();
        AgentMessage::System(SystemEvent::new(
            "restored a.txt",
            &Rewound { report, switch_to },
        ))
    };
    let code = feed.turn(2, rewound(RewindMode::Code, None));
    assert_eq!(texts_of(&code), [("agent", "restored a.txt".into())]);
    let both = feed.turn(3, rewound(RewindMode::Both, Some("fork-1")));
    let texts = texts_of(&both);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts[1].1.contains("stays in this session") && texts[1].1.contains("fork-1"),
        "{texts:?}"
    );
}
