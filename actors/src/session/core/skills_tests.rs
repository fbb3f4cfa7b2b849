//! Skills in the session: the system prompt's listing (names and
//! descriptions, never bodies; within its budget), the `skill` tool offered
//! only with skills and answered by the core itself (the body and the base
//! directory; an unknown name an error listing the skills), a skill's
//! `allowed-tools` from its loading to the end of the turn, `/NAME`,
//! reads in a skill's folder, `/help` and `/context`. (How the files are
//! found and read is tested in `workspace_files::skill_files` and
//! `workspace_files::skill_markdown`.)

use super::custom_commands::CustomCommands;
use super::skills::{SKILL_TOOL, Scope, Skill, Skills};
use super::tests::{Harness, messages, model_calls, tool_batches};
use super::*;
use crate::model::{ToolOrigin, ToolSpec};
use crate::permissions::Rule;
use crate::protocol::{AgentMessage, ControlCommand, PermissionMode, SystemSubtype, UserInput};
use std::path::PathBuf;

const BODY: &str = "# Release notes\n\nRun `git log --oneline` and group by area; awk '{print $1}' gives the hashes.";

fn release_notes() -> Skill {
    Skill {
        name: "release-notes".into(),
        description: "Writes release notes from the git log".into(),
        body: BODY.into(),
        dir: "/home/me/.claude/skills/release-notes".into(),
        source: "/home/me/.claude/skills/release-notes/SKILL.md".into(),
        allowed_tools: vec![Rule::parse("bash(git log:*)").expect("a rule")],
        notes: Vec::new(),
    }
}

fn pdf() -> Skill {
    Skill {
        name: "pdf".into(),
        description: "Fills PDF forms".into(),
        body: "PDF-BODY: use scripts/fill.py".into(),
        dir: "/ws/.claude/skills/pdf".into(),
        source: "/ws/.claude/skills/pdf/SKILL.md".into(),
        ..Skill::default()
    }
}

/// A session in default mode with `skills`, configured as the loader does.
fn with(skills: Vec<Skill>) -> Harness {
    let mut h = Harness::new();
    let skills = Skills::with(
        skills.into_iter().map(|s| (Scope::User, s)).collect(),
        Vec::new(),
        skills::DEFAULT_PROMPT_CHARS,
    );
    h.state.config.commands =
        skills.join_commands(CustomCommands::default(), commands::is_built_in);
    h.state.config.permissions.roots = vec![PathBuf::from("/ws")];
    h.state.config.permissions.read_roots = skills.read_roots();
    h.state.config.permissions.sandboxed = true;
    h.state.config.skills = skills;
    h.state.permissions.mode = PermissionMode::Default;
    h.state.tools = std::sync::Arc::new(
        ["read_file", "bash"]
            .iter()
            .map(|name| ToolSpec {
                name: name.to_string(),
                description: String::new(),
                input_schema: std::sync::Arc::new(serde_json::json!({"type": "object"})),
                origin: ToolOrigin::Builtin,
            })
            .collect(),
    );
    h
}

fn tool_results(h: &Harness) -> Vec<crate::protocol::ToolResultEvent> {
    messages(&h.effects)
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn asked(h: &Harness) -> usize {
    messages(&h.effects)
        .iter()
        .filter(|m| matches!(m, AgentMessage::ApprovalRequest(_)))
        .count()
}

#[test]
fn the_system_prompt_lists_names_and_descriptions_never_bodies() {
    let mut h = with(vec![release_notes(), pdf()]);
    h.query("hello");
    let (_, request) = model_calls(&h.effects)[0].clone();
    let system = &request.system_prompt;
    assert!(
        system.contains(
            "\n- pdf: Fills PDF forms\n- release-notes: Writes release notes from the git log"
        ),
        "{system}"
    );
    assert!(
        !system.contains("PDF-BODY") && !system.contains("git log --oneline"),
        "{system}"
    );
    let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["read_file", "bash", SKILL_TOOL]);
}

#[test]
fn an_agent_not_given_the_skill_tool_is_not_told_of_skills() {
    let mut h = with(vec![release_notes()]);
    h.state
        .config
        .agents
        .insert(crate::protocol::AgentDefinition {
            name: "reader".into(),
            tools: Some(vec!["read_file".into()]),
            ..Default::default()
        });
    h.state.agent = "reader".into();
    h.query("hello");
    let (_, request) = model_calls(&h.effects)[0].clone();
    assert!(
        !request.system_prompt.contains("release-notes"),
        "{}",
        request.system_prompt
    );
    let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["read_file"]);
}

#[test]
fn without_skills_there_is_no_listing_and_no_skill_tool() {
    let mut h = with(Vec::new());
    h.query("hello");
    let (_, request) = model_calls(&h.effects)[0].clone();
    assert!(!request.system_prompt.contains("# Skills"));
    assert!(request.tools.iter().all(|t| t.name != SKILL_TOOL));
    // A model that calls it anyway is told it is no tool of the session.
    let id = model_calls(&h.effects)[0].0;
    h.answer(id, "", &[("c1", SKILL_TOOL, r#"{"name":"pdf"}"#)]);
    let result = tool_results(&h).pop().expect("a result");
    assert!(
        result.is_error && result.output.contains("unknown tool `skill`"),
        "{}",
        result.output
    );
}

#[test]
fn skills_beyond_the_budget_are_left_out_of_the_listing_and_said() {
    let mut skills: Vec<(Scope, Skill)> = (0..30)
        .map(|i| {
            (
                Scope::Project,
                Skill {
                    name: format!("skill-{i:02}"),
                    description: "d".repeat(90),
                    ..pdf()
                },
            )
        })
        .collect();
    skills.push((Scope::Project, pdf()));
    let set = Skills::with(skills, Vec::new(), 1_000);
    let listed = set.listed();
    assert!(listed > 0 && listed < 31, "{listed}");
    let section = set.section();
    assert!(section.chars().count() <= 1_000, "{}", section.len());
    assert!(section.contains("- pdf: "), "sorted by name: pdf first");
    let left_out = set.left_out();
    assert_eq!(left_out.len(), 31 - listed);
    assert!(!section.contains(&format!("- {}:", left_out[0].name)));
    let line = set.left_out_line().expect("said");
    assert!(
        line.contains("1000 characters") && line.contains(&left_out[0].name),
        "{line}"
    );
    // The session says so as it starts, and /context too.
    let mut h = with(Vec::new());
    h.state.config.skills = set;
    h.feed(Input::Started { resumed: false });
    let notices: Vec<String> = messages(&h.effects)
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Notice => Some(s.message),
            _ => None,
        })
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("not listed to the model")),
        "{notices:?}"
    );
    h.query("/context");
    let context = messages(&h.effects)
        .into_iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::System(s) if s.message.starts_with("Context:") => Some(s.message),
            _ => None,
        })
        .expect("the /context reply");
    assert!(
        context.contains(&format!("skills listed: {listed} of 31")),
        "{context}"
    );
}

#[test]
fn the_core_answers_a_skill_call_with_the_body_and_its_folder() {
    let mut h = with(vec![release_notes(), pdf()]);
    h.query("write the release notes");
    let id = model_calls(&h.effects)[0].0;
    h.answer(id, "", &[("c1", SKILL_TOOL, r#"{"name":"release-notes"}"#)]);
    assert!(tool_batches(&h.effects).is_empty(), "nothing is run");
    assert_eq!(asked(&h), 0, "nothing is asked");
    let result = tool_results(&h).pop().expect("a result");
    assert!(!result.is_error);
    assert!(
        result.output.contains(BODY),
        "the whole body: {}",
        result.output
    );
    assert!(
        result
            .output
            .contains("Base directory for this skill: /home/me/.claude/skills/release-notes"),
        "{}",
        result.output
    );
    // The model goes on with the skill's instructions in its history.
    let (_, request) = model_calls(&h.effects)[1].clone();
    let history = serde_json::to_string(&request.messages).expect("json");
    assert!(history.contains("group by area"), "{history}");
}

#[test]
fn an_unknown_skill_is_an_error_listing_the_skills() {
    let mut h = with(vec![release_notes(), pdf()]);
    h.query("go");
    let id = model_calls(&h.effects)[0].0;
    h.answer(
        id,
        "",
        &[
            ("c1", SKILL_TOOL, r#"{"name":"changelog"}"#),
            ("c2", SKILL_TOOL, r#"{}"#),
        ],
    );
    let results = tool_results(&h);
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r.is_error));
    assert!(
        results[0].output.contains("unknown skill `changelog`")
            && results[0].output.contains("pdf, release-notes"),
        "{}",
        results[0].output
    );
    assert!(
        results[1].output.contains("`name`"),
        "{}",
        results[1].output
    );
}

#[test]
fn allowed_tools_hold_from_the_loading_to_the_end_of_the_turn() {
    let mut h = with(vec![release_notes()]);
    let git_log = ("c2", "bash", r#"{"command":"git log --oneline"}"#);
    h.query("notes please");
    let id = model_calls(&h.effects)[0].0;
    // Before the skill is loaded, the command asks.
    h.answer(id, "", &[git_log]);
    assert_eq!(asked(&h), 1);
    h.feed(Input::Interrupt);

    h.query("notes please, with the skill");
    let id = model_calls(&h.effects).last().expect("a call").0;
    h.answer(
        id,
        "",
        &[("c1", SKILL_TOOL, r#"{"name":"release-notes"}"#), git_log],
    );
    assert_eq!(
        asked(&h),
        1,
        "the same reply's later call runs without asking"
    );
    let (batch, calls) = tool_batches(&h.effects).pop().expect("ran");
    assert_eq!(calls[0].name, "bash");
    h.tool_done(batch, "c2", "abc fix");
    let id = model_calls(&h.effects).last().expect("a call").0;
    h.answer(id, "Notes.", &[]);
    assert!(h.state.permissions.for_turn.is_empty(), "the turn ended");

    h.query("and the log again");
    let id = model_calls(&h.effects).last().expect("a call").0;
    h.answer(id, "", &[git_log]);
    assert_eq!(asked(&h), 2, "the next turn asks again");
}

#[test]
fn reads_in_a_skills_folder_run_without_asking_and_writes_do_not() {
    let mut h = with(vec![release_notes()]);
    h.query("read it");
    let id = model_calls(&h.effects)[0].0;
    h.answer(
        id,
        "",
        &[(
            "c1",
            "read_file",
            r#"{"path":"/home/me/.claude/skills/release-notes/template.md"}"#,
        )],
    );
    assert_eq!(asked(&h), 0);
    let (_, calls) = tool_batches(&h.effects).pop().expect("ran");
    assert_eq!(calls[0].name, "read_file");
    let granted = h.effects.iter().find_map(|e| match e {
        Effect::RunTools { calls, .. } => Some(calls[0].grant),
        _ => None,
    });
    assert!(
        granted.is_some_and(|g| g.outside_roots),
        "the tool may open it"
    );

    let verdict = |tool: &str, path: &str| {
        permission::policy::decide(
            &h.state.config.permissions,
            &h.state.permissions,
            std::path::Path::new("/ws"),
            tool,
            &serde_json::json!({"path": path, "content": "x"}),
        )
    };
    use permission::policy::Verdict;
    assert!(matches!(
        verdict("write_file", "/home/me/.claude/skills/release-notes/x.md"),
        Verdict::Ask(_)
    ));
    assert!(matches!(
        verdict("read_file", "/home/me/.claude/skills/other/x.md"),
        Verdict::Ask(_)
    ));
    assert!(matches!(
        verdict(
            "read_file",
            "/home/me/.claude/skills/release-notes/../../../.ssh/id_rsa"
        ),
        Verdict::Ask(_)
    ));
}

#[test]
fn typing_a_skill_loads_it_like_a_custom_command() {
    let mut h = with(vec![release_notes()]);
    h.query("/release-notes since v1.2");
    let (_, request) = model_calls(&h.effects)[0].clone();
    let sent = match request.messages.last() {
        Some(crate::protocol::Message::User { text, .. }) => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        sent.contains(BODY),
        "the body whole, `$1` untouched: {sent}"
    );
    assert!(
        sent.contains("/home/me/.claude/skills/release-notes"),
        "{sent}"
    );
    assert!(sent.ends_with("ARGUMENTS: since v1.2"), "{sent}");
    assert_eq!(
        h.state.permissions.for_turn,
        [Rule::parse("bash(git log:*)").expect("a rule")]
    );
    // A built-in name always wins: `/help` stays /help and lists the skill.
    let mut h = with(vec![
        release_notes(),
        Skill {
            name: "help".into(),
            ..pdf()
        },
    ]);
    let input_id = h.state.next_input_id();
    h.feed(Input::Submit {
        input_id,
        input: UserInput::Control {
            command: ControlCommand::Help,
            by: None,
        },
    });
    let help = messages(&h.effects)
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::System(s) if s.message.starts_with("Commands:") => Some(s.message),
            _ => None,
        })
        .expect("the /help reply");
    assert!(
        help.contains("Skills (")
            && help.contains("/release-notes")
            && help.contains("/home/me/.claude/skills/release-notes/SKILL.md"),
        "{help}"
    );
    assert!(
        help.contains("help/SKILL.md") || help.contains("`/help` is a built-in"),
        "{help}"
    );
    assert!(model_calls(&h.effects).is_empty(), "/help is not sent");
}

#[test]
fn a_command_file_of_the_same_name_keeps_its_name() {
    let skills = Skills::with(
        vec![(Scope::Project, release_notes()), (Scope::Project, pdf())],
        Vec::new(),
        skills::DEFAULT_PROMPT_CHARS,
    );
    let commands = CustomCommands::with(
        vec![super::custom_commands::CustomCommand {
            name: "pdf".into(),
            prompt: "COMMAND-PDF".into(),
            source: "/ws/.claude/commands/pdf.md".into(),
            ..Default::default()
        }],
        Vec::new(),
        commands::is_built_in,
    );
    let joined = skills.join_commands(commands, commands::is_built_in);
    let names: Vec<(&str, bool)> = joined
        .commands
        .iter()
        .map(|c| (c.name.as_str(), c.skill))
        .collect();
    assert_eq!(names, [("pdf", false), ("release-notes", true)]);
    assert_eq!(
        joined.find("pdf").map(|c| c.prompt.as_str()),
        Some("COMMAND-PDF")
    );
}
