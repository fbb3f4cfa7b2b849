//! Project instructions in the session: what every request's system prompt
//! carries, what the session says when it starts, what `/context`, `/debug`
//! and `/init` make of them. (How the files are chosen and read is tested
//! in `workspace_files::instruction_files`.)

use super::instructions::tests::file;
use super::instructions::{InstructionFile, Instructions, Scope};
use super::tests::{Harness, messages, model_calls, tool_batches};
use super::*;
use crate::protocol::context::ContextReport;
use crate::protocol::system::SessionStarted;
use crate::protocol::{AgentMessage, Message, PermissionMode, SystemEvent, SystemSubtype};

fn with(files: Vec<InstructionFile>, problems: Vec<String>) -> Harness {
    let mut h = Harness::new();
    h.state.config.instructions = Instructions { files, problems };
    h
}

fn both() -> Harness {
    with(
        vec![
            file(
                Scope::User,
                "/home/u/.config/agentbus/AGENTS.md",
                "USER-RULE",
            ),
            file(Scope::Project, "/ws/AGENTS.md", "PROJECT-RULE"),
        ],
        Vec::new(),
    )
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

fn first_request_prompt(h: &mut Harness) -> String {
    h.query("hello");
    model_calls(&h.effects)
        .first()
        .expect("a model call")
        .1
        .system_prompt
        .clone()
}

#[test]
fn without_instructions_the_request_carries_the_configured_prompt_alone() {
    let mut h = Harness::new();
    assert_eq!(first_request_prompt(&mut h), "be brief");
}

#[test]
fn every_request_carries_the_configured_prompt_then_user_then_project_instructions() {
    let mut h = both();
    let prompt = first_request_prompt(&mut h);
    assert_eq!(
        prompt,
        "be brief\
         \n\n# User instructions from /home/u/.config/agentbus/AGENTS.md\n\nUSER-RULE\
         \n\n# Project instructions from /ws/AGENTS.md\n\nPROJECT-RULE"
    );
    // The next call of the same turn too.
    let id = model_calls(&h.effects)[0].0;
    h.answer(id, "", &[("c1", "bash", "{}")]);
    let batch = tool_batches(&h.effects)[0].0;
    h.tool_done(batch, "c1", "done");
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].1.system_prompt, prompt);
}

#[test]
fn the_plan_mode_prompt_comes_after_the_instructions() {
    let mut h = both();
    h.state.permissions.mode = PermissionMode::Plan;
    let prompt = first_request_prompt(&mut h);
    let (rule, plan) = (prompt.find("PROJECT-RULE"), prompt.find("PLAN MODE IS ON"));
    assert!(rule.is_some() && plan.is_some() && rule < plan, "{prompt}");
}

#[test]
fn the_start_names_the_files_and_warns_of_each_problem() {
    let mut h = with(
        vec![InstructionFile {
            truncated_from: Some(70_000),
            ..file(Scope::Project, "/ws/CLAUDE.md", "rules")
        }],
        vec!["Instructions /cfg/AGENTS.md were not read: permission denied.".into()],
    );
    h.feed(Input::Started { resumed: false });
    let started = system(&h, SystemSubtype::SessionStarted);
    let payload = started[0].payload::<SessionStarted>().expect("payload");
    assert_eq!(payload.instructions, ["/ws/CLAUDE.md"]);
    assert!(
        started[0]
            .message
            .contains("Instructions from /ws/CLAUDE.md")
    );
    let notices: Vec<String> = system(&h, SystemSubtype::Notice)
        .into_iter()
        .map(|n| n.message)
        .collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].contains("/cfg/AGENTS.md") && notices[0].contains("permission denied"));
    assert!(notices[1].contains("/ws/CLAUDE.md") && notices[1].contains("64 KiB"));
}

#[test]
fn a_start_without_instructions_says_nothing_of_them() {
    let mut h = Harness::new();
    h.feed(Input::Started { resumed: false });
    assert!(system(&h, SystemSubtype::Notice).is_empty());
    let started = system(&h, SystemSubtype::SessionStarted);
    assert!(!started[0].message.contains("Instructions"));
}

#[test]
fn context_counts_the_instructions_apart_and_names_their_files() {
    let long = "Always run the whole test suite before you commit. ".repeat(40);
    let mut h = with(
        vec![
            file(Scope::User, "/cfg/AGENTS.md", "Be terse."),
            file(Scope::Project, "/ws/AGENTS.md", &long),
        ],
        Vec::new(),
    );
    h.state.config.context.max_tokens = Some(100_000);
    let mut plain = Harness::new();
    plain.state.config.context.max_tokens = Some(100_000);
    let report = |h: &mut Harness| {
        h.query("/context");
        let reply = system(h, SystemSubtype::Context).pop().expect("reply");
        let report = reply.payload::<ContextReport>().expect("report");
        (reply.message, report)
    };
    let (text, with_files) = report(&mut h);
    let (_, without) = report(&mut plain);
    assert_eq!(with_files.instruction_files.len(), 2);
    assert_eq!(with_files.instruction_files[1].path, "/ws/AGENTS.md");
    assert!(with_files.instruction_files[1].tokens > with_files.instruction_files[0].tokens);
    assert_eq!(
        with_files.instructions,
        with_files
            .instruction_files
            .iter()
            .map(|f| f.tokens)
            .sum::<u64>()
    );
    assert!(with_files.instructions > 400, "{with_files:?}");
    // The configured prompt is counted as before; the instructions on top.
    assert!(with_files.system_prompt.abs_diff(without.system_prompt) <= 2);
    assert_eq!(
        with_files.used,
        with_files.system_prompt
            + with_files.instructions
            + with_files.tool_definitions
            + with_files.messages
            + with_files.tool_outputs
    );
    assert_eq!(without.instructions, 0);
    assert!(
        text.contains("instructions") && text.contains("/ws/AGENTS.md"),
        "{text}"
    );
}

#[test]
fn debug_shows_the_instructions() {
    let mut h = both();
    h.query("/debug");
    let reply = system(&h, SystemSubtype::Debug).pop().expect("reply");
    assert!(
        reply
            .message
            .contains("instructions  /home/u/.config/agentbus/AGENTS.md, /ws/AGENTS.md"),
        "the summary names the files: {}",
        reply.message
    );
    h.query("/debug full");
    let reply = system(&h, SystemSubtype::Debug).pop().expect("reply");
    assert!(reply.message.contains("PROJECT-RULE"), "{}", reply.message);
    assert!(reply.message.contains("/home/u/.config/agentbus/AGENTS.md"));
}

/// The request `/init` sends; its `user` event shows `/init`, as typed.
fn init_query(h: &mut Harness) -> String {
    let id = h.query("/init");
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 1, "/init makes a model call");
    let user = messages(&h.effects)
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::User(u) => Some(u),
            _ => None,
        })
        .expect("a user event");
    assert_eq!(user.text, "/init");
    let user = user.prompt.expect("the request");
    assert_eq!(h.state.history.first(), Some(&Message::user(user.clone())));
    assert!(h.state.turn.as_ref().is_some_and(|t| t.id == id));
    user
}

#[test]
fn init_without_agents_md_asks_for_one() {
    let mut h = Harness::new();
    let query = init_query(&mut h);
    assert!(query.starts_with(commands::init::OPENING), "{query}");
    assert!(
        query.contains("write an AGENTS.md") && query.contains("/ws"),
        "{query}"
    );
    assert!(query.contains("test"), "{query}");
}

#[test]
fn init_with_agents_md_asks_to_improve_it() {
    let mut h = both();
    let query = init_query(&mut h);
    assert!(
        query.contains("improve its AGENTS.md (/ws/AGENTS.md)"),
        "{query}"
    );
    assert!(!query.contains("write an AGENTS.md"), "{query}");
}

#[test]
fn init_with_claude_md_only_asks_for_agents_md_from_it() {
    let mut h = with(
        vec![file(Scope::Project, "/ws/CLAUDE.md", "rules")],
        Vec::new(),
    );
    let query = init_query(&mut h);
    assert!(query.contains("write an AGENTS.md"), "{query}");
    assert!(query.contains("CLAUDE.md (/ws/CLAUDE.md)"), "{query}");
}

#[test]
fn init_waits_in_the_queue_behind_a_running_turn() {
    let mut h = Harness::new();
    h.query("first");
    h.query("/init");
    assert_eq!(model_calls(&h.effects).len(), 1);
    let id = model_calls(&h.effects)[0].0;
    h.answer(id, "done", &[]);
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 2);
    let last = calls[1].1.messages.last().expect("message");
    assert!(
        matches!(last, Message::User { text, .. } if text.starts_with(commands::init::OPENING))
    );
}

#[test]
fn init_is_listed_in_help() {
    let mut h = Harness::new();
    h.query("/help");
    let reply = system(&h, SystemSubtype::Help).pop().expect("reply");
    assert!(reply.message.contains("/init"), "{}", reply.message);
}
