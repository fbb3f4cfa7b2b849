//! Property tests of the slash-command parser ([`super::parse`], the
//! facade's `runtime::parse_command`) and of the commands applied: any
//! text is a query or a command, never a panic; a command that cannot be
//! run says so, naming the command (and, when unknown, pointing at
//! `/help`); what parses, applied through the session core, never panics
//! either. With custom commands (`parse_with`): their names parse to
//! them whatever follows, and running one with any arguments sends a
//! query.

use super::{COMMANDS, is_built_in, parse, parse_with};
use crate::protocol::{ControlCommand, UserInput};
use crate::session::core::Input;
use crate::session::core::custom_commands::{CustomCommand, CustomCommands, expand};
use crate::session::core::tests::Harness;
use proptest::prelude::*;

/// What any parse must satisfy.
fn check(text: &str) -> Result<(), TestCaseError> {
    let looks_like_a_command = text
        .trim_start()
        .strip_prefix('/')
        .and_then(|rest| rest.split(char::is_whitespace).next())
        .is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
        });
    match parse(text) {
        None => prop_assert!(!looks_like_a_command, "{text:?} was taken for a query"),
        Some(parsed) => {
            prop_assert!(looks_like_a_command, "{text:?} was taken for a command");
            if let Err(notice) = parsed {
                let name = text
                    .trim_start()
                    .trim_start_matches('/')
                    .split(char::is_whitespace)
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                prop_assert!(
                    notice.contains(&format!("/{name}")),
                    "the notice for {text:?} does not name /{name}: {notice}"
                );
                if !COMMANDS.iter().any(|c| c.name == name) {
                    prop_assert!(notice.contains("/help"), "{notice}");
                }
            }
        }
    }
    Ok(())
}

/// Arguments a user might type: words, numbers, paths, modes, odd spacing.
fn arguments() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        "[a-z]{1,8}",
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[ -~]{0,10}",
        "\\PC{0,8}",
        Just("plan".to_string()),
        Just("accept-edits".to_string()),
        Just("bypass".to_string()),
        Just("other".to_string()),
        Just("/tmp/x.json".to_string()),
        Just("18446744073709551616".to_string()),
    ];
    (
        proptest::collection::vec(word, 0..4),
        prop_oneof![Just(" "), Just("  "), Just("\t"), Just(" \u{3000} ")],
    )
        .prop_map(|(words, gap)| words.join(gap))
}

fn command_name() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(COMMANDS.iter().map(|c| c.name).collect::<Vec<_>>())
}

/// Commands the session core can apply without a store or the model
/// (those needing a store or a summary are performed by the driver).
fn applies_in_the_core(command: &ControlCommand) -> bool {
    !matches!(
        command,
        ControlCommand::Quit
            | ControlCommand::NewConversation
            | ControlCommand::ListSessions
            | ControlCommand::Resume { .. }
            | ControlCommand::Fork { .. }
            | ControlCommand::Save { .. }
            | ControlCommand::Load { .. }
    )
}

proptest! {
    #[test]
    fn any_text_is_a_query_or_a_command_never_a_panic(text in "\\PC{0,40}") {
        check(&text)?;
        check(&format!("/{text}"))?;
    }

    #[test]
    fn every_command_with_any_arguments_parses_or_explains(
        command in command_name(),
        upper in any::<bool>(),
        lead in prop_oneof![Just(""), Just("  "), Just("\n")],
        args in arguments(),
    ) {
        let name = if upper { command.to_ascii_uppercase() } else { command.to_string() };
        let text = format!("{lead}/{name} {args}");
        check(&text)?;
        prop_assert!(parse(&text).is_some(), "/{command} is a command");
    }

    #[test]
    fn what_parses_applies_without_a_panic(
        command in command_name(),
        args in arguments(),
    ) {
        let text = format!("/{command} {args}");
        let Some(Ok(parsed)) = parse(&text) else { return Ok(()) };
        if !applies_in_the_core(&parsed) {
            return Ok(());
        }
        let mut h = Harness::new();
        let input_id = h.state().next_input_id();
        let effects = h.feed(Input::Submit { input_id, input: UserInput::Control { command: parsed, by: None } });
        prop_assert!(!effects.is_empty(), "{text:?} had no effect");
        // Typed as a query, the same text goes the same way.
        let mut h = Harness::new();
        h.query(&text);
        prop_assert!(!h.effects.is_empty());
    }
}

/// A command file's name: words, digits, `_`, `.`, namespaces.
fn custom_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9_.-]{0,10}",
        "[a-z]{1,6}:[a-z0-9-]{1,8}",
        "[0-9]{1,4}",
        Just("fix_issue".to_string()),
    ]
}

proptest! {
    #[test]
    fn a_custom_command_parses_and_runs_with_any_arguments(
        name in custom_name(),
        prompt in "\\PC{0,60}",
        args in arguments(),
    ) {
        prop_assume!(!is_built_in(&name));
        let prompt = format!("{prompt} $ARGUMENTS $1 $2");
        let set = CustomCommands::with(
            vec![CustomCommand {
                name: name.clone(),
                prompt: prompt.clone(),
                source: "x.md".into(),
                ..CustomCommand::default()
            }],
            Vec::new(),
            is_built_in,
        );
        prop_assert!(set.problems.is_empty(), "{:?}", set.problems);
        let text = format!("/{name} {args}");
        let parsed = parse_with(&text, &set);
        prop_assert_eq!(
            parsed,
            Some(Ok(ControlCommand::Custom { name: name.clone(), arguments: args.trim().to_string() }))
        );
        let mut h = Harness::new();
        h.state.config.commands = set;
        h.query(&text);
        let calls = crate::session::core::tests::model_calls(&h.effects);
        prop_assert_eq!(calls.len(), 1);
        let expected = expand(&prompt, args.trim());
        prop_assert!(
            matches!(calls[0].1.messages.last(), Some(crate::protocol::Message::User { text, .. }) if *text == expected),
            "{:?}", calls[0].1.messages.last()
        );
    }

    #[test]
    fn any_prompt_and_arguments_expand_without_a_panic(
        prompt in "[$A-Z0-9 a-z]{0,40}|\\PC{0,40}",
        args in arguments(),
    ) {
        let expanded = expand(&prompt, &args);
        if !args.is_empty() && !prompt.contains('$') {
            let appended = format!("ARGUMENTS: {args}");
            prop_assert!(expanded.ends_with(&appended), "{:?}", expanded);
        }
    }
}

/// Cases the properties cover, as a reader would write them.
#[test]
fn an_event_number_too_large_is_explained() {
    let notice = parse("/fork 18446744073709551616")
        .and_then(Result::err)
        .unwrap_or_default();
    assert!(notice.contains("/fork takes an event number"), "{notice}");
}
