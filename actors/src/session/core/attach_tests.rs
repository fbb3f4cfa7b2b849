//! `@` mentions and `!commands` through `step`: what runs, what the model
//! reads, what the user is told, and that the fold agrees.

use super::permission::PermissionConfig;
use super::tests::{Harness, assert_history_valid, fresh_like, model_calls, persisted};
use super::{Effect, Input, restore};
use crate::model::{GrantedCall, ToolOutcome};
use crate::permissions::Rules;
use crate::protocol::system::{AttachmentKind, Attachments};
use crate::protocol::{AgentMessage, Message, PermissionMode, StopReason, SystemSubtype};
use std::path::PathBuf;

/// A session in `mode`, workspace `/ws`, home `/home/me`, commands
/// sandboxed, with `deny` rules.
fn session(mode: PermissionMode, deny: &[&str]) -> Harness {
    let mut h = Harness::new();
    let deny: Vec<String> = deny.iter().map(|s| s.to_string()).collect();
    h.state.config.permissions = PermissionConfig {
        mode,
        rules: Rules::parse(&[], &[], &deny).unwrap(),
        roots: vec![PathBuf::from("/ws")],
        home: PathBuf::from("/home/me"),
        sandboxed: true,
        approval_timeout_ms: None,
        read_roots: Vec::new(),
    };
    h.state.permissions.mode = mode;
    h
}

/// The calls started so far, with their batch.
fn started(fx: &[Effect]) -> Vec<(u64, GrantedCall)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::RunTools { batch_id, calls } => {
                Some(calls.iter().map(move |c| (*batch_id, c.clone())))
            }
            _ => None,
        })
        .flatten()
        .collect()
}

fn done(h: &mut Harness, batch_id: u64, call_id: &str, output: &str, is_error: bool) {
    h.feed(Input::ToolFinished {
        checkpoint: None,
        batch_id,
        call_id: call_id.into(),
        outcome: ToolOutcome {
            output: output.into(),
            is_error,
            duration_ms: 2,
        },
    });
}

fn notices(h: &Harness) -> Vec<String> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Notice => Some(s.message),
            _ => None,
        })
        .collect()
}

fn attached(h: &Harness) -> Vec<Attachments> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::System(s) => s.payload::<Attachments>(),
            _ => None,
        })
        .collect()
}

fn user_texts(h: &Harness) -> Vec<String> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::User(u) => Some(u.text),
            _ => None,
        })
        .collect()
}

/// The fold of what was persisted has the live history.
fn assert_fold_agrees(h: &Harness) {
    let mut restored = fresh_like(h.state());
    restore(&mut restored, &persisted(h));
    assert_eq!(restored.history, h.state().history);
    assert_history_valid(&restored.history);
}

#[test]
fn a_mentioned_file_is_read_and_the_model_gets_it_with_the_query() {
    let mut h = session(PermissionMode::Default, &[]);
    let id = h.query("@README.md summarise");
    let calls = started(&h.effects);
    assert_eq!(calls.len(), 1);
    let (batch, call) = &calls[0];
    assert_eq!(call.call.name, "read_file");
    assert_eq!(call.call.input["path"], "README.md");
    assert!(model_calls(&h.effects).is_empty(), "the file comes first");

    done(
        &mut h,
        *batch,
        &call.call.id,
        "     1\t# Title\n     2\tText\n",
        false,
    );
    let requests = model_calls(&h.effects);
    assert_eq!(requests.len(), 1);
    let Message::User { text, .. } = &requests[0].1.messages[0] else {
        panic!("{:?}", requests[0].1.messages);
    };
    assert!(
        text.starts_with(
            "@README.md summarise\n\n<attached-file path=\"README.md\">\n     1\t# Title"
        ),
        "{text}"
    );
    assert_eq!(
        user_texts(&h),
        ["@README.md summarise"],
        "the user event keeps what was typed"
    );
    let items = &attached(&h)[0].items;
    assert_eq!(items[0].kind, AttachmentKind::File);

    h.answer(requests[0].0, "A title and text.", &[]);
    assert_eq!(h.results()[0].stop_reason, StopReason::EndTurn);
    assert!(
        h.events()
            .iter()
            .all(|m| !matches!(m, AgentMessage::System(s) if s.subtype == SystemSubtype::Notice))
    );
    let _ = id;
    assert_fold_agrees(&h);
}

#[test]
fn a_missing_file_is_a_notice_and_the_query_still_goes() {
    let mut h = session(PermissionMode::Default, &[]);
    h.query("what about @nope.txt?");
    let (batch, call) = started(&h.effects).remove(0);
    done(
        &mut h,
        batch,
        &call.call.id,
        "file not found: /ws/nope.txt",
        true,
    );
    assert_eq!(
        notices(&h),
        ["@nope.txt was not attached: file not found: /ws/nope.txt"]
    );
    assert!(attached(&h).is_empty());
    let requests = model_calls(&h.effects);
    assert_eq!(
        requests[0].1.messages,
        [Message::user("what about @nope.txt?")]
    );
    assert_fold_agrees(&h);
}

#[test]
fn a_mentioned_directory_is_listed() {
    let mut h = session(PermissionMode::Default, &[]);
    h.query("look at @src/ and @docs");
    let calls = started(&h.effects);
    let names: Vec<&str> = calls.iter().map(|(_, c)| c.call.name.as_str()).collect();
    assert_eq!(
        names,
        ["list_dir", "read_file"],
        "a trailing / says directory"
    );
    let batch = calls[0].0;
    done(
        &mut h,
        batch,
        &calls[0].1.call.id,
        "main.rs (10 bytes)\n",
        false,
    );
    // `docs` turns out to be a directory: it is listed instead.
    done(
        &mut h,
        batch,
        &calls[1].1.call.id,
        &format!("/ws/docs {}; use list_dir", crate::model::NOT_A_FILE),
        true,
    );
    let calls = started(&h.effects);
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[2].1.call.name, "list_dir");
    assert_eq!(calls[2].1.call.input["path"], "docs");
    assert!(model_calls(&h.effects).is_empty());
    done(
        &mut h,
        batch,
        &calls[2].1.call.id,
        "api.md (3 bytes)\n",
        false,
    );
    let kinds: Vec<AttachmentKind> = attached(&h)[0].items.iter().map(|a| a.kind).collect();
    assert_eq!(
        kinds,
        [AttachmentKind::Directory, AttachmentKind::Directory]
    );
    assert!(notices(&h).is_empty(), "{:?}", notices(&h));
    assert_eq!(model_calls(&h.effects).len(), 1);
    assert_fold_agrees(&h);
}

#[test]
fn a_long_file_is_capped_with_a_notice() {
    let mut h = session(PermissionMode::Default, &[]);
    h.query("@big.log why?");
    let (batch, call) = started(&h.effects).remove(0);
    let output = format!(
        "     1\tx\n\n[Showing lines 1-1 of 9000. {}: to read on, call read_file with offset=2.]\n",
        crate::model::MORE_LINES_REMAIN
    );
    done(&mut h, batch, &call.call.id, &output, false);
    assert_eq!(notices(&h).len(), 1);
    assert!(
        notices(&h)[0].starts_with("@big.log is long"),
        "{:?}",
        notices(&h)
    );
    assert_eq!(attached(&h).len(), 1, "still attached, capped");
}

#[test]
fn reads_outside_the_workspace_follow_the_rules_for_reads() {
    // Default mode would ask: typing the path is the user's consent.
    let mut h = session(PermissionMode::Default, &["read_file(~/.ssh/**)"]);
    h.query("compare @/etc/hosts with @~/.ssh/id_rsa");
    let calls = started(&h.effects);
    assert_eq!(calls.len(), 1, "the denied one is never read");
    assert_eq!(calls[0].1.call.input["path"], "/etc/hosts");
    assert!(calls[0].1.grant.outside_roots);
    assert_eq!(notices(&h).len(), 0, "said once everything is read");
    done(
        &mut h,
        calls[0].0,
        &calls[0].1.call.id,
        "     1\t127.0.0.1 localhost\n",
        false,
    );
    let said = notices(&h);
    assert_eq!(said.len(), 1);
    assert!(
        said[0].starts_with(
            "@~/.ssh/id_rsa was not attached: Not run: the rule `read_file(~/.ssh/**)`"
        ),
        "{said:?}"
    );
    assert_eq!(model_calls(&h.effects).len(), 1);

    // Plan mode reads only inside the roots.
    let mut h = session(PermissionMode::Plan, &[]);
    h.query("see @/etc/hosts");
    assert!(started(&h.effects).is_empty());
    assert!(notices(&h)[0].contains("plan mode"), "{:?}", notices(&h));
    assert_eq!(model_calls(&h.effects).len(), 1, "the query still goes");
}

#[test]
fn a_bang_command_runs_through_bash_and_no_model_call_follows() {
    let mut h = session(PermissionMode::Default, &[]);
    let id = h.query("!ls");
    let calls = started(&h.effects);
    assert_eq!(calls.len(), 1);
    let (batch, call) = &calls[0];
    assert_eq!(call.call.name, "bash");
    assert_eq!(call.call.input["command"], "ls");
    assert!(
        !call.grant.unsandboxed && !call.grant.read_only,
        "in the sandbox"
    );

    done(&mut h, *batch, &call.call.id, "README.md\nsrc\n", false);
    assert!(model_calls(&h.effects).is_empty(), "no model call");
    let results = h.results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].stop_reason, StopReason::EndTurn);
    assert_eq!(results[0].steps, 0);
    let event = h
        .events()
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Attached => Some(s),
            _ => None,
        })
        .unwrap();
    assert_eq!(event.message, "$ ls\nREADME.md\nsrc");
    assert_eq!(user_texts(&h), ["!ls"]);
    assert!(
        h.effects
            .iter()
            .any(|e| matches!(e, Effect::Emit { turn_id: Some(t), .. } if *t == id))
    );

    // The next query's request carries the command and its output.
    h.query("which of these is the docs?");
    let requests = model_calls(&h.effects);
    assert_eq!(requests.len(), 1);
    let Message::User { text, .. } = &requests[0].1.messages[0] else {
        panic!()
    };
    assert!(
        text.starts_with("!ls\n\nThe user ran this command"),
        "{text}"
    );
    assert!(
        text.contains("<command>ls</command>\n<output>\nREADME.md\nsrc\n</output>"),
        "{text}"
    );
    assert_eq!(
        requests[0].1.messages[1],
        Message::user("which of these is the docs?")
    );
    assert_fold_agrees(&h);
}

#[test]
fn a_bang_command_follows_deny_rules_and_plan_mode() {
    let mut h = session(PermissionMode::Default, &["bash(rm:*)"]);
    h.query("!rm -rf build");
    assert!(started(&h.effects).is_empty(), "never run");
    assert!(
        notices(&h)[0].starts_with("`!rm -rf build` was not run: Not run: the rule `bash(rm:*)`"),
        "{:?}",
        notices(&h)
    );
    assert_eq!(h.results()[0].stop_reason, StopReason::Error);
    assert!(model_calls(&h.effects).is_empty());
    assert_fold_agrees(&h);

    // Plan mode: in a read-only sandbox.
    let mut h = session(PermissionMode::Plan, &[]);
    h.query("!make");
    let calls = started(&h.effects);
    assert!(calls[0].1.grant.read_only);
    // ... and not at all without a sandbox.
    let mut h = session(PermissionMode::Plan, &[]);
    h.state.config.permissions.sandboxed = false;
    h.query("!make");
    assert!(started(&h.effects).is_empty());
    assert!(notices(&h)[0].contains("plan mode"), "{:?}", notices(&h));
}

#[test]
fn an_interrupt_stops_the_command_and_keeps_the_history_valid() {
    let mut h = session(PermissionMode::Default, &[]);
    h.query("!sleep 100");
    let (batch, call) = started(&h.effects).remove(0);
    // A query typed meanwhile waits.
    h.query("next");
    h.feed(Input::Interrupt);
    assert!(
        h.effects
            .iter()
            .any(|e| matches!(e, Effect::CancelTools { batch_id } if *batch_id == batch))
    );
    assert_eq!(h.results()[0].stop_reason, StopReason::Cancelled);
    let items = &attached(&h)[0].items;
    assert!(items[0].is_error && items[0].content.contains("interrupted"));
    // A late outcome of the cancelled call changes nothing.
    done(&mut h, batch, &call.call.id, "late", false);
    assert_eq!(attached(&h).len(), 1);
    // The queued query ran after it, with a valid history.
    let requests = model_calls(&h.effects);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].1.messages.len(), 2);
    assert_fold_agrees(&h);
}

#[test]
fn a_turn_cut_while_attaching_closes_on_load() {
    let mut h = session(PermissionMode::Default, &[]);
    h.query("@a.txt hi");
    let mut restored = fresh_like(h.state());
    let fx = restore(&mut restored, &persisted(&h));
    assert_eq!(restored.history, [Message::user("@a.txt hi")]);
    assert!(fx.iter().any(|e| matches!(e, Effect::Emit { message: AgentMessage::Result(r), .. } if r.stop_reason == StopReason::Error)));
}

#[test]
fn task_prompts_and_commands_are_never_expanded() {
    let mut h = session(PermissionMode::Default, &[]);
    let input_id = h.state().next_input_id();
    h.feed(Input::Submit {
        input_id,
        input: crate::protocol::UserInput::Prompt {
            text: "!rm it and read @x".into(),
        },
    });
    assert!(started(&h.effects).is_empty());
    assert_eq!(model_calls(&h.effects).len(), 1);
}

fn png(source: &str) -> crate::protocol::Image {
    crate::images::from_bytes(source, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap()
}

#[test]
fn a_mentioned_image_is_read_whole_and_sent_as_image_content() {
    let mut h = session(PermissionMode::Default, &[]);
    h.query("what is in @shot.png?");
    let calls = started(&h.effects);
    assert_eq!(calls.len(), 1);
    let (batch, call) = &calls[0];
    assert_eq!(call.call.name, crate::model::READ_IMAGE);
    assert_eq!(call.call.input["path"], "shot.png");

    let image = png("shot.png");
    let output = serde_json::to_string(&image).unwrap();
    done(&mut h, *batch, &call.call.id, &output, false);
    let requests = model_calls(&h.effects);
    assert_eq!(requests.len(), 1);
    let Message::User { text, images } = &requests[0].1.messages[0] else {
        panic!("{:?}", requests[0].1.messages);
    };
    assert_eq!(
        images,
        std::slice::from_ref(&image),
        "the image goes as image content"
    );
    assert!(
        text.starts_with("what is in @shot.png?\n\n<attached-image path=\"shot.png\" />"),
        "{text}"
    );
    let attachments = attached(&h);
    assert_eq!(attachments[0].items[0].kind, AttachmentKind::Image);
    assert_eq!(attachments[0].items[0].image, Some(image));
    let described = h
        .events()
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Attached => Some(s.message),
            _ => None,
        })
        .unwrap();
    assert_eq!(described, "Attached shot.png (image/png, 16 bytes).");
    assert!(notices(&h).is_empty(), "{:?}", notices(&h));
    h.answer(requests[0].0, "A screenshot.", &[]);
    assert_fold_agrees(&h);
}

#[test]
fn an_image_for_a_profile_without_images_is_not_read_and_the_query_goes() {
    let mut h = session(PermissionMode::Default, &[]);
    h.state.model = "other".into();
    h.query("what is in @shot.png?");
    assert!(started(&h.effects).is_empty(), "nothing is read");
    let said = notices(&h);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0]
            .starts_with("@shot.png was not attached: model profile `other` does not take images")
            && said[0].contains("images = true"),
        "{said:?}"
    );
    let requests = model_calls(&h.effects);
    assert_eq!(requests.len(), 1, "the query still goes");
    assert_eq!(
        requests[0].1.messages,
        [Message::user("what is in @shot.png?")]
    );
}

#[test]
fn an_image_mention_follows_the_deny_rules_for_reads() {
    let mut h = session(PermissionMode::Default, &["read_file(secret/**)"]);
    h.query("look at @secret/shot.png");
    assert!(started(&h.effects).is_empty());
    let said = notices(&h);
    assert!(
        said[0].starts_with(
            "@secret/shot.png was not attached: Not run: the rule `read_file(secret/**)`"
        ),
        "{said:?}"
    );
}

#[test]
fn a_model_calling_the_sessions_image_reader_is_refused() {
    let mut h = session(PermissionMode::Default, &[]);
    h.query("hello");
    let request = model_calls(&h.effects)[0].0;
    h.answer(
        request,
        "",
        &[("c1", crate::model::READ_IMAGE, r#"{"path":"/etc/passwd"}"#)],
    );
    assert!(started(&h.effects).is_empty(), "nothing runs");
    let result = h
        .events()
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::ToolResult(t) => Some(t),
            _ => None,
        })
        .unwrap();
    assert!(result.is_error);
    assert!(
        result.output.contains("unknown tool `read_image`"),
        "{result:?}"
    );
}
