//! Custom commands in the session: what running one sends and shows, the
//! profile and the rules it brings for its turn alone, `/help`, the
//! session's first events, and the fold of a stored run. (How the files are
//! found and read is tested in `workspace_files::command_files` and
//! `workspace_files::command_markdown`; the expansion in `custom_commands`.)

use super::custom_commands::{CustomCommand, CustomCommands};
use super::tests::{Harness, fresh_like, messages, model_calls, persisted, tool_batches};
use super::*;
use crate::permissions::Rule;
use crate::protocol::system::{CommandList, SessionStarted};
use crate::protocol::{
    AgentMessage, ControlCommand, Message, PermissionMode, SystemEvent, SystemSubtype, UserEvent,
    UserInput,
};

fn review() -> CustomCommand {
    CustomCommand {
        name: "review".into(),
        description: "Review a file for bugs".into(),
        argument_hint: Some("[file]".into()),
        prompt: "Review $ARGUMENTS for bugs; start with $1.".into(),
        source: "/ws/.claude/commands/review.md".into(),
        ..CustomCommand::default()
    }
}

fn with(commands: Vec<CustomCommand>) -> Harness {
    let mut h = Harness::new();
    h.state.config.commands = CustomCommands::with(commands, Vec::new(), commands::is_built_in);
    h
}

fn users(h: &Harness) -> Vec<UserEvent> {
    messages(&h.effects)
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::User(u) => Some(u),
            _ => None,
        })
        .collect()
}

fn system(h: &Harness, subtype: SystemSubtype) -> Vec<SystemEvent> {
    messages(&h.effects)
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::System(s) if s.subtype == subtype => Some(s),
            _ => None,
        })
        .collect()
}

fn last_user_message(h: &Harness) -> String {
    let (_, request) = model_calls(&h.effects).last().cloned().expect("a call");
    match request.messages.last() {
        Some(Message::User { text, .. }) => text.clone(),
        other => panic!("the request ends with {other:?}"),
    }
}

#[test]
fn a_custom_command_shows_what_was_typed_and_sends_its_prompt() {
    let mut h = with(vec![review()]);
    let id = h.query("/review  src/main.rs lib.rs");
    let user = users(&h).pop().expect("a user event");
    assert_eq!(user.text, "/review src/main.rs lib.rs");
    let prompt = "Review src/main.rs lib.rs for bugs; start with src/main.rs.";
    assert_eq!(user.prompt.as_deref(), Some(prompt));
    assert_eq!(last_user_message(&h), prompt);
    assert_eq!(h.state.history, [Message::user(prompt)]);
    assert!(h.state.turn.as_ref().is_some_and(|t| t.id == id));
}

#[test]
fn a_stored_run_folds_to_the_prompt_the_model_received() {
    let mut h = with(vec![review()]);
    h.query("/review a.rs");
    let request = model_calls(&h.effects)[0].0;
    h.answer(request, "Looks fine.", &[]);
    let mut state = fresh_like(&h.state);
    restore(&mut state, &persisted(&h));
    assert_eq!(state.history, h.state.history);
    assert!(
        matches!(&state.history[0], Message::User { text, .. } if text.starts_with("Review a.rs"))
    );
}

#[test]
fn its_model_answers_that_query_alone() {
    let mut h = with(vec![CustomCommand {
        model: Some("other".into()),
        ..review()
    }]);
    h.query("/review a.rs");
    let (request, call) = model_calls(&h.effects)[0].clone();
    assert_eq!(call.profile, "other");
    h.answer(request, "Done.", &[]);
    assert_eq!(h.state.model, "main", "the session's model is back");
    h.query("next");
    assert_eq!(model_calls(&h.effects)[1].1.profile, "main");
    assert!(system(&h, SystemSubtype::ModelSwitched).is_empty());
}

#[test]
fn a_model_that_is_not_a_profile_is_a_notice_and_the_session_model_answers() {
    let mut h = with(vec![CustomCommand {
        model: Some("claude-3-5-haiku-20241022".into()),
        notes: vec!["fields not used by agentbus: color".into()],
        ..review()
    }]);
    h.query("/review a.rs");
    assert_eq!(model_calls(&h.effects)[0].1.profile, "main");
    let kinds: Vec<&str> = messages(&h.effects).iter().map(|m| m.type_name()).collect();
    assert_eq!(
        kinds,
        ["user", "system", "system"],
        "the notices belong to the turn: after its user event"
    );
    let notices: Vec<String> = system(&h, SystemSubtype::Notice)
        .into_iter()
        .map(|n| n.message)
        .collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(
        notices[0].contains("/review: fields not used"),
        "{notices:?}"
    );
    assert!(
        notices[1].contains("claude-3-5-haiku-20241022")
            && notices[1].contains("main, other")
            && notices[1].contains("review.md"),
        "{notices:?}"
    );
}

#[test]
fn allowed_tools_run_without_asking_for_its_turn_alone() {
    let mut h = with(vec![CustomCommand {
        allowed_tools: vec![Rule::parse("bash(git status)").expect("a rule")],
        ..review()
    }]);
    h.state.permissions.mode = PermissionMode::Default;
    let git_status = [("c1", "bash", r#"{"command":"git status"}"#)];
    h.query("/review a.rs");
    let request = model_calls(&h.effects)[0].0;
    h.answer(request, "", &git_status);
    assert_eq!(tool_batches(&h.effects).len(), 1, "ran without asking");
    let batch = tool_batches(&h.effects)[0].0;
    h.tool_done(batch, "c1", "clean");
    let request = model_calls(&h.effects)[1].0;
    h.answer(request, "Clean.", &[]);
    assert!(h.state.permissions.for_turn.is_empty());

    h.query("and again");
    let request = model_calls(&h.effects)[2].0;
    h.answer(request, "", &git_status);
    assert_eq!(tool_batches(&h.effects).len(), 1, "the next turn asks");
    assert!(
        messages(&h.effects)
            .iter()
            .any(|m| matches!(m, AgentMessage::ApprovalRequest(_)))
    );
}

#[test]
fn a_custom_command_sent_by_name_runs_and_an_unknown_one_is_a_notice() {
    let mut h = with(vec![review()]);
    let input_id = h.state.next_input_id();
    h.feed(Input::Submit {
        input_id,
        input: UserInput::Control {
            command: ControlCommand::Custom {
                name: "review".into(),
                arguments: "x.rs".into(),
            },
            by: None,
        },
    });
    assert_eq!(users(&h)[0].text, "/review x.rs");
    let request = model_calls(&h.effects)[0].0;
    h.answer(request, "ok", &[]);
    let input_id = h.state.next_input_id();
    h.feed(Input::Submit {
        input_id,
        input: UserInput::Control {
            command: ControlCommand::Custom {
                name: "nope".into(),
                arguments: String::new(),
            },
            by: None,
        },
    });
    let notice = system(&h, SystemSubtype::Notice).pop().expect("a notice");
    assert!(
        notice.message.contains("Unknown command /nope"),
        "{}",
        notice.message
    );
    assert_eq!(model_calls(&h.effects).len(), 1);
}

#[test]
fn built_in_names_win_and_other_words_stay_queries() {
    let mut h = with(vec![review()]);
    assert_eq!(
        commands::parse_with("/Review x", &h.state.config.commands),
        Some(Err(
            "Unknown command /review. Type /help for the list of commands; it was not sent to the model."
                .into()
        )),
        "names are exact"
    );
    h.query("/etc/hosts looks odd");
    assert_eq!(users(&h)[0].text, "/etc/hosts looks odd");
    assert_eq!(users(&h)[0].prompt, None);
}

#[test]
fn help_lists_them_after_the_built_in_ones_with_their_files_and_problems() {
    let mut h = Harness::new();
    h.state.config.commands = CustomCommands::with(
        vec![review()],
        vec!["/ws/.claude/commands/bad.md: field `model`: expected text, got 3".into()],
        commands::is_built_in,
    );
    h.query("/help");
    let help = system(&h, SystemSubtype::Help).pop().expect("the reply");
    let custom = help
        .message
        .split("Custom commands:")
        .nth(1)
        .expect("a section");
    assert!(
        custom.contains("/review [file]")
            && custom.contains("Review a file for bugs (/ws/.claude/commands/review.md)"),
        "{}",
        help.message
    );
    assert!(
        help.message
            .contains("Command files not used:\n  /ws/.claude/commands/bad.md")
    );
    let listed = help.payload::<CommandList>().expect("data").0;
    let last = listed.last().expect("entries");
    assert_eq!(last.name, "review");
    assert_eq!(
        last.source.as_deref(),
        Some("/ws/.claude/commands/review.md")
    );
    assert!(
        listed
            .iter()
            .any(|c| c.name == "help" && c.source.is_none())
    );
}

#[test]
fn the_session_start_lists_them_and_names_the_files_not_used() {
    let mut h = Harness::new();
    h.state.config.commands = CustomCommands::with(
        vec![
            review(),
            CustomCommand {
                name: "clear".into(),
                ..review()
            },
        ],
        Vec::new(),
        commands::is_built_in,
    );
    h.feed(Input::Started { resumed: false });
    let started = system(&h, SystemSubtype::SessionStarted)
        .pop()
        .and_then(|s| s.payload::<SessionStarted>())
        .expect("started");
    let names: Vec<&str> = started.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["review"]);
    let notice = system(&h, SystemSubtype::Notice).pop().expect("a notice");
    assert!(
        notice.message.starts_with("Command file not used:")
            && notice.message.contains("`/clear` is a built-in command"),
        "{}",
        notice.message
    );
}
