//! The approval flow and the modes, driven through `step` with no I/O.

use super::config::PermissionConfig;
use crate::model::{Grant, GrantedCall};
use crate::permissions::{Rule, Rules};
use crate::protocol::{
    AgentMessage, ApprovalChoice, ApprovalDecision, ApprovalOutcome, ApprovalRequestEvent,
    ApprovalResolved, ControlCommand, Message, PermissionMode, StopReason, SystemSubtype,
    UserInput,
};
use crate::session::core::tests::{
    Harness, assert_history_valid, fresh_like, model_calls, persisted,
};
use crate::session::core::{Effect, Input, restore};
use std::path::PathBuf;

/// A session in `mode`, workspace `/ws`, home `/home/me`, commands
/// sandboxed, with `rules`.
fn session(mode: PermissionMode, rules: Rules) -> Harness {
    let mut h = Harness::new();
    h.state.config.permissions = PermissionConfig {
        mode,
        rules,
        roots: vec![PathBuf::from("/ws"), PathBuf::from("/data")],
        home: PathBuf::from("/home/me"),
        sandboxed: true,
        approval_timeout_ms: None,
        read_roots: Vec::new(),
    };
    h.state.permissions.mode = mode;
    // The model is offered the built-in tools, as a real session's is.
    h.state.tools = std::sync::Arc::new(
        crate::tools::builtin::builtin_tools()
            .iter()
            .map(|tool| tool.spec())
            .collect(),
    );
    h
}

fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
    let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Rules::parse(&list(allow), &list(ask), &list(deny)).unwrap()
}

fn requests(h: &Harness) -> Vec<ApprovalRequestEvent> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::ApprovalRequest(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn resolutions(h: &Harness) -> Vec<ApprovalResolved> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::System(s) => s.payload::<ApprovalResolved>(),
            _ => None,
        })
        .collect()
}

/// Every call started, with its batch and grant.
fn started(fx: &[Effect]) -> Vec<(u64, GrantedCall)> {
    fx.iter()
        .flat_map(|e| match e {
            Effect::RunTools { batch_id, calls } => {
                calls.iter().map(|c| (*batch_id, c.clone())).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

fn tool_results(h: &Harness) -> Vec<crate::protocol::ToolResultEvent> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn decide(h: &mut Harness, request_id: &str, decision: ApprovalDecision) -> Vec<Effect> {
    h.feed(Input::Approval {
        request_id: request_id.into(),
        decision,
    })
}

/// One model call asking for `calls`; returns the request's id.
fn turn_with_calls(h: &mut Harness, query: &str, calls: &[(&str, &str, &str)]) {
    h.query(query);
    let (request, _) = model_calls(&h.effects).last().cloned().unwrap();
    h.answer(request, "", calls);
}

#[test]
fn a_call_that_asks_waits_while_the_rest_of_its_batch_runs() {
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(
        &mut h,
        "clean up",
        &[
            ("c1", "read_file", r#"{"path":"notes.txt"}"#),
            ("c2", "bash", r#"{"command":"rm -rf build"}"#),
        ],
    );
    let runs = started(&h.effects);
    assert_eq!(runs.len(), 1, "only the read runs: {runs:?}");
    assert_eq!(runs[0].1.call.id, "c1");
    let asked = requests(&h);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].call_id, "c2");
    assert_eq!(asked[0].suggested_rule.as_deref(), Some("bash(rm -rf:*)"));
    assert_eq!(
        asked[0].options,
        [
            ApprovalChoice::AllowOnce,
            ApprovalChoice::AllowAlways,
            ApprovalChoice::Reject
        ]
    );
    assert!(
        asked[0].reason.contains("default mode"),
        "{}",
        asked[0].reason
    );

    // The read finishes: its result is recorded, the batch still waits.
    let batch = runs[0].0;
    h.tool_done(batch, "c1", "hello\n");
    assert_eq!(tool_results(&h).len(), 1);
    assert_eq!(
        model_calls(&h.effects).len(),
        1,
        "no model call while one waits"
    );
}

#[test]
fn a_rejection_reaches_the_model_with_the_users_message_and_the_turn_ends() {
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(
        &mut h,
        "clean up",
        &[("c1", "bash", r#"{"command":"rm -rf build"}"#)],
    );
    let id = requests(&h)[0].request_id.clone();
    decide(
        &mut h,
        &id,
        ApprovalDecision::reject("use trash-cli instead"),
    );
    let resolved = resolutions(&h);
    assert_eq!(resolved[0].outcome, ApprovalOutcome::Rejected);
    assert_eq!(
        resolved[0].message.as_deref(),
        Some("use trash-cli instead")
    );
    let result = &tool_results(&h)[0];
    assert!(result.is_error && result.output.contains("use trash-cli instead"));
    assert!(started(&h.effects).is_empty(), "a rejected call never runs");

    let calls = model_calls(&h.effects);
    assert_eq!(
        calls.len(),
        2,
        "the model is called again with the rejection"
    );
    let sent = &calls[1].1.messages;
    assert!(sent.iter().any(|m| matches!(m,
        Message::ToolResult { output, is_error: true, .. } if output.contains("use trash-cli instead"))));
    h.answer(calls[1].0, "Understood, I will not delete it.", &[]);
    assert_eq!(h.results()[0].stop_reason, StopReason::EndTurn);
    assert_history_valid(&h.state().history);
}

#[test]
fn the_first_answer_wins() {
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(&mut h, "go", &[("c1", "bash", r#"{"command":"make"}"#)]);
    let id = requests(&h)[0].request_id.clone();
    let first = decide(
        &mut h,
        &id,
        ApprovalDecision::new(ApprovalChoice::AllowOnce),
    );
    assert_eq!(started(&first).len(), 1);
    let second = decide(&mut h, &id, ApprovalDecision::reject("no"));
    assert!(
        second.is_empty(),
        "a late answer changes nothing: {second:?}"
    );
    assert_eq!(resolutions(&h).len(), 1);
    assert!(crate::session::core::permission::approval::waiting(&h.state).is_empty());
}

#[test]
fn allow_always_adds_a_session_rule_and_the_same_command_runs_next_time() {
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(
        &mut h,
        "go",
        &[("c1", "bash", r#"{"command":"cargo test -q"}"#)],
    );
    let id = requests(&h)[0].request_id.clone();
    let fx = decide(
        &mut h,
        &id,
        ApprovalDecision {
            decision: ApprovalChoice::AllowAlways,
            message: None,
            save: true,
            by: None,
        },
    );
    assert!(fx.contains(&Effect::SaveRule {
        rule: "bash(cargo test:*)".into()
    }));
    let (batch, run) = started(&fx)[0].clone();
    assert_eq!(run.grant, Grant::default(), "allowed, and still sandboxed");
    let resolved = &resolutions(&h)[0];
    assert_eq!(resolved.outcome, ApprovalOutcome::AllowedAlways);
    assert_eq!(resolved.rule.as_deref(), Some("bash(cargo test:*)"));
    h.tool_done(batch, "c1", "ok");
    let (request, _) = model_calls(&h.effects).last().cloned().unwrap();
    h.answer(request, "Done.", &[]);

    let before = h.effects.len();
    turn_with_calls(
        &mut h,
        "again",
        &[("c2", "bash", r#"{"command":"cargo test --all"}"#)],
    );
    assert_eq!(requests(&h).len(), 1, "no second request");
    assert_eq!(started(&h.effects[before..]).len(), 1);
}

#[test]
fn an_interrupt_cancels_the_pending_request() {
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(&mut h, "go", &[("c1", "bash", r#"{"command":"make"}"#)]);
    let id = requests(&h)[0].request_id.clone();
    h.feed(Input::Interrupt);
    assert_eq!(resolutions(&h)[0].outcome, ApprovalOutcome::Cancelled);
    assert!(tool_results(&h)[0].cancelled);
    assert_eq!(h.results()[0].stop_reason, StopReason::Cancelled);
    assert!(
        decide(
            &mut h,
            &id,
            ApprovalDecision::new(ApprovalChoice::AllowOnce)
        )
        .is_empty()
    );
    assert_history_valid(&h.state().history);
}

#[test]
fn an_unanswered_request_is_rejected_when_the_timeout_passes() {
    let mut h = session(PermissionMode::Default, Rules::default());
    h.state.config.permissions.approval_timeout_ms = Some(30_000);
    turn_with_calls(&mut h, "go", &[("c1", "bash", r#"{"command":"make"}"#)]);
    let id = requests(&h)[0].request_id.clone();
    assert!(h.effects.contains(&Effect::ApprovalTimer {
        request_id: id.clone(),
        after_ms: 30_000
    }));
    h.feed(Input::ApprovalTimedOut {
        request_id: id.clone(),
    });
    assert_eq!(resolutions(&h)[0].outcome, ApprovalOutcome::TimedOut);
    assert!(tool_results(&h)[0].output.contains("within 30 s"));
    assert_eq!(model_calls(&h.effects).len(), 2, "the turn goes on");
    // A timer for a request answered in time does nothing.
    let late = h.feed(Input::ApprovalTimedOut { request_id: id });
    assert!(late.is_empty());
}

#[test]
fn plan_mode_denies_writes_asks_for_read_only_commands_and_tells_the_model() {
    let mut h = session(PermissionMode::Plan, rules(&["write_file"], &[], &[]));
    turn_with_calls(
        &mut h,
        "plan it",
        &[
            ("c1", "write_file", r#"{"path":"a.txt","content":"x"}"#),
            ("c2", "bash", r#"{"command":"ls"}"#),
            ("c3", "read_file", r#"{"path":"/etc/passwd"}"#),
        ],
    );
    let request = &model_calls(&h.effects)[0].1;
    assert!(request.system_prompt.contains("PLAN MODE"));
    let asked = requests(&h);
    assert_eq!(asked.len(), 1, "only bash asks: {asked:?}");
    assert_eq!(asked[0].call_id, "c2");
    let id = asked[0].request_id.clone();
    let fx = decide(
        &mut h,
        &id,
        ApprovalDecision::new(ApprovalChoice::AllowOnce),
    );
    let (batch, run) = started(&fx)[0].clone();
    assert!(run.grant.read_only, "commands run read-only");
    h.tool_done(batch, "c2", "a.txt");
    let denied: Vec<_> = tool_results(&h)
        .into_iter()
        .filter(|t| t.call_id != "c2")
        .collect();
    assert_eq!(denied.len(), 2);
    assert!(denied[0].is_error && denied[0].output.contains("plan mode"));
    assert!(denied[1].output.contains("outside"), "{}", denied[1].output);
}

#[test]
fn accept_edits_runs_edits_inside_the_roots_and_asks_outside() {
    let mut h = session(PermissionMode::AcceptEdits, Rules::default());
    turn_with_calls(
        &mut h,
        "edit",
        &[
            (
                "c1",
                "edit_file",
                r#"{"path":"src/a.rs","old_string":"a","new_string":"b"}"#,
            ),
            (
                "c2",
                "write_file",
                r#"{"path":"/data/out.txt","content":"x"}"#,
            ),
            ("c3", "write_file", r#"{"path":"/etc/x","content":"x"}"#),
            ("c4", "bash", r#"{"command":"cargo build"}"#),
        ],
    );
    let ran: Vec<String> = started(&h.effects)
        .iter()
        .map(|(_, c)| c.call.id.clone())
        .collect();
    assert_eq!(ran, ["c1", "c2"]);
    let asked: Vec<String> = requests(&h).iter().map(|r| r.call_id.clone()).collect();
    assert_eq!(asked, ["c3", "c4"]);
    let outside = &requests(&h)[0];
    let fx = decide(
        &mut h,
        &outside.request_id.clone(),
        ApprovalDecision::new(ApprovalChoice::AllowOnce),
    );
    assert!(
        started(&fx)[0].1.grant.outside_roots,
        "the user allowed that path"
    );
}

#[test]
fn rules_decide_before_the_mode_deny_first() {
    let mut h = session(
        PermissionMode::Bypass,
        rules(
            &["bash(git:*)"],
            &["bash(git push:*)"],
            &["bash(git push --force:*)", "read_file(~/.ssh/**)"],
        ),
    );
    turn_with_calls(
        &mut h,
        "go",
        &[
            (
                "c1",
                "bash",
                r#"{"command":"git status && git push --force"}"#,
            ),
            ("c2", "bash", r#"{"command":"git push origin main"}"#),
            ("c3", "read_file", r#"{"path":"/home/me/.ssh/id_rsa"}"#),
            ("c4", "bash", r#"{"command":"npm test"}"#),
        ],
    );
    let results = tool_results(&h);
    assert!(
        results[0].output.contains("git push --force"),
        "{}",
        results[0].output
    );
    let asked = requests(&h);
    assert_eq!(asked.len(), 1, "the ask rule asks even in bypass mode");
    assert_eq!(asked[0].call_id, "c2");
    assert_eq!(asked[0].options.len(), 2, "no 'always' for an ask rule");
    let ran: Vec<String> = started(&h.effects)
        .iter()
        .map(|(_, c)| c.call.id.clone())
        .collect();
    assert_eq!(
        ran,
        ["c4"],
        "c3 is denied by its rule although bypass reads anywhere"
    );
}

#[test]
fn leaving_the_sandbox_asks_every_time_and_never_in_bypass() {
    let escalate =
        r#"{"command":"echo x > /etc/x","outside_sandbox":true,"justification":"needs /etc"}"#;
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(&mut h, "go", &[("c1", "bash", escalate)]);
    let asked = &requests(&h)[0];
    assert!(asked.reason.contains("OUTSIDE the sandbox: needs /etc"));
    assert_eq!(
        asked.options,
        [ApprovalChoice::AllowOnce, ApprovalChoice::Reject]
    );
    let fx = decide(
        &mut h,
        &asked.request_id.clone(),
        ApprovalDecision::new(ApprovalChoice::AllowAlways),
    );
    assert!(started(&fx)[0].1.grant.unsandboxed);
    assert_eq!(resolutions(&h)[0].outcome, ApprovalOutcome::AllowedOnce);

    let mut h = session(PermissionMode::Bypass, Rules::default());
    turn_with_calls(&mut h, "go", &[("c1", "bash", escalate)]);
    assert!(requests(&h).is_empty());
    assert!(
        tool_results(&h)[0]
            .output
            .contains("sandbox holds in bypass")
    );
}

#[test]
fn mode_switches_and_rules_come_back_when_the_session_is_loaded() {
    let mut h = session(PermissionMode::Default, Rules::default());
    h.feed(Input::Started { resumed: false });
    turn_with_calls(&mut h, "go", &[("c1", "bash", r#"{"command":"make all"}"#)]);
    let id = requests(&h)[0].request_id.clone();
    let fx = decide(
        &mut h,
        &id,
        ApprovalDecision::new(ApprovalChoice::AllowAlways),
    );
    let batch = started(&fx)[0].0;
    h.tool_done(batch, "c1", "ok");
    let (request, _) = model_calls(&h.effects).last().cloned().unwrap();
    h.answer(request, "Done.", &[]);
    h.feed(Input::Submit {
        input_id: h.state.next_input_id(),
        input: UserInput::Control {
            command: ControlCommand::SetMode {
                mode: PermissionMode::AcceptEdits,
            },
            by: None,
        },
    });
    let mode = h.events().into_iter().any(|m| {
        matches!(m, AgentMessage::System(s) if s.subtype == SystemSubtype::Mode && s.message.contains("accept-edits"))
    });
    assert!(mode);

    let mut loaded = fresh_like(&h.state);
    let closing = restore(&mut loaded, &persisted(&h));
    assert!(closing.is_empty());
    assert_eq!(loaded.permissions, h.state.permissions);
    assert_eq!(
        loaded.permissions.added,
        [Rule::parse("bash(make all:*)").unwrap()]
    );
}

#[test]
fn a_request_left_open_by_a_dead_process_is_closed_on_load() {
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(&mut h, "go", &[("c1", "bash", r#"{"command":"make"}"#)]);
    let mut loaded = fresh_like(&h.state);
    let closing = restore(&mut loaded, &persisted(&h));
    let closed: Vec<ApprovalResolved> = closing
        .iter()
        .filter_map(|e| match e {
            Effect::Emit {
                message: AgentMessage::System(s),
                ..
            } => s.payload::<ApprovalResolved>(),
            _ => None,
        })
        .collect();
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].outcome, ApprovalOutcome::Cancelled);
    assert_history_valid(&loaded.history);
}

#[test]
fn a_childs_settled_request_is_retold_on_the_parent_and_its_rule_stays_the_childs() {
    use crate::session::core::input::SubagentUpdate;
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(&mut h, "go", &[("c1", "read_file", r#"{"path":"a.txt"}"#)]);
    let batch_id = started(&h.effects)[0].0;
    let child = crate::protocol::SessionId("child-1".into());
    // What the child's own stream said: its request, then its settling.
    let asked = ApprovalRequestEvent {
        request_id: "r1".into(),
        call_id: "k1".into(),
        name: "bash".into(),
        input: serde_json::json!({"command": "rm -rf build"}),
        reason: "default mode asks".into(),
        options: vec![ApprovalChoice::AllowAlways],
        suggested_rule: Some("bash(rm:*)".into()),
        suggested_mode: None,
        child_session: None,
    };
    let settled = crate::protocol::SystemEvent::new(
        "Always allowed bash(rm:*).",
        &ApprovalResolved {
            request_id: "r1".into(),
            call_id: "k1".into(),
            outcome: ApprovalOutcome::AllowedAlways,
            message: None,
            rule: Some("bash(rm:*)".into()),
            save: false,
            child_session: None,
            by: None,
        },
    );
    for update in [
        SubagentUpdate::Approval {
            child: child.clone(),
            agent: "general".into(),
            request: asked,
        },
        SubagentUpdate::Resolved {
            child: child.clone(),
            event: settled,
        },
    ] {
        h.feed(Input::Subagent { batch_id, update });
    }
    let retold = resolutions(&h);
    assert_eq!(retold.len(), 1);
    assert_eq!(
        retold[0].request_id, "child-1/r1",
        "as the request was told"
    );
    assert_eq!(retold[0].child_session, Some(child));
    assert_eq!(retold[0].outcome, ApprovalOutcome::AllowedAlways);
    assert!(
        h.state.permissions.added.is_empty(),
        "the rule is the child's"
    );

    // Loaded again (the turn still open): the child's rule stays the
    // child's, and its settled request is not cancelled a second time.
    let mut loaded = fresh_like(&h.state);
    let closing = restore(&mut loaded, &persisted(&h));
    assert!(
        loaded.permissions.added.is_empty(),
        "{:?}",
        loaded.permissions
    );
    let cancelled = closing.iter().any(|e| {
        matches!(e, Effect::Emit { message: AgentMessage::System(s), .. }
            if s.subtype == SystemSubtype::ApprovalResolved)
    });
    assert!(!cancelled, "{closing:?}");
}

#[test]
fn web_fetch_asks_per_domain_and_domain_rules_allow_or_deny_it() {
    let mut h = session(
        PermissionMode::Default,
        rules(
            &["web_fetch(domain:docs.rs)"],
            &[],
            &["web_fetch(domain:*.evil.test)"],
        ),
    );
    turn_with_calls(
        &mut h,
        "read up",
        &[
            ("c1", "web_fetch", r#"{"url":"https://docs.rs/serde"}"#),
            ("c2", "web_fetch", r#"{"url":"https://cdn.evil.test/x"}"#),
            ("c3", "web_fetch", r#"{"url":"https://Example.com/a"}"#),
        ],
    );
    let ran: Vec<String> = started(&h.effects)
        .iter()
        .map(|(_, c)| c.call.id.clone())
        .collect();
    assert_eq!(ran, ["c1"], "the allow rule runs docs.rs");
    // Results come in call order: c2's denial once c1 is done.
    let batch = started(&h.effects)[0].0;
    h.tool_done(batch, "c1", "# serde");
    let results = tool_results(&h);
    assert_eq!(results.len(), 2);
    assert_eq!(results[1].call_id, "c2");
    assert!(
        results[1].output.contains("web_fetch(domain:*.evil.test)"),
        "{}",
        results[1].output
    );
    let asked = requests(&h);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].call_id, "c3");
    assert_eq!(
        asked[0].suggested_rule.as_deref(),
        Some("web_fetch(domain:example.com)")
    );
    assert!(
        asked[0].reason.contains("example.com"),
        "{}",
        asked[0].reason
    );
}

#[test]
fn plan_mode_asks_before_web_fetch_as_default_mode_does() {
    let mut h = session(PermissionMode::Plan, Rules::default());
    turn_with_calls(
        &mut h,
        "plan it",
        &[("c1", "web_fetch", r#"{"url":"https://docs.rs/"}"#)],
    );
    assert!(started(&h.effects).is_empty());
    assert_eq!(requests(&h).len(), 1);
}

#[test]
fn a_background_bash_call_is_a_bash_call_for_the_rules_but_plan_mode_refuses_it() {
    let background = r#"{"command":"npm run dev","run_in_background":true}"#;
    // Default mode: it asks as bash does, with bash's rule to suggest.
    let mut h = session(PermissionMode::Default, Rules::default());
    turn_with_calls(&mut h, "serve", &[("c1", "bash", background)]);
    let asked = requests(&h);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].suggested_rule.as_deref(), Some("bash(npm run:*)"));
    // A bash rule allows or denies it like the same command in the
    // foreground.
    let mut h = session(
        PermissionMode::Default,
        rules(&["bash(npm run:*)"], &[], &[]),
    );
    turn_with_calls(&mut h, "serve", &[("c1", "bash", background)]);
    assert_eq!(started(&h.effects).len(), 1);
    let mut h = session(PermissionMode::Bypass, rules(&[], &[], &["bash(npm:*)"]));
    turn_with_calls(&mut h, "serve", &[("c1", "bash", background)]);
    assert!(started(&h.effects).is_empty());
    assert!(tool_results(&h)[0].output.contains("bash(npm:*)"));
    // Plan mode: refused without asking, even with the rule.
    let mut h = session(PermissionMode::Plan, rules(&["bash(npm run:*)"], &[], &[]));
    turn_with_calls(&mut h, "serve", &[("c1", "bash", background)]);
    assert!(requests(&h).is_empty());
    assert!(started(&h.effects).is_empty());
    let refused = &tool_results(&h)[0];
    assert!(refused.is_error);
    assert!(
        refused
            .output
            .contains("plan mode, which starts no background commands"),
        "{}",
        refused.output
    );
}

#[test]
fn bash_output_and_kill_shell_run_without_asking_in_every_mode() {
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Bypass,
    ] {
        let mut h = session(mode, Rules::default());
        turn_with_calls(
            &mut h,
            "check",
            &[
                ("c1", "bash_output", r#"{"id":"bash_1"}"#),
                ("c2", "kill_shell", r#"{"id":"bash_1"}"#),
            ],
        );
        assert!(requests(&h).is_empty(), "{mode}");
        assert_eq!(started(&h.effects).len(), 2, "{mode}");
    }
}
