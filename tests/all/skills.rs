//! Agent Skills end to end, through the real binary and the scripted model
//! (which records every request and, like the real APIs, only calls tools
//! it was offered): a workspace's `.claude/skills/release-notes/SKILL.md`,
//! a user's `~/.claude/skills/` and a folder of `[skills] paths`. The
//! first request's system prompt lists each skill by name and description
//! only; the model calls `skill` and the result holds the whole body and
//! the skill's folder; it then reads a file of a skill outside the
//! workspace without anyone approving (the session runs in default mode,
//! where `run` rejects what would ask); `/release-notes` typed by the user
//! loads the skill too; a bad skill file is a notice naming file and field.

use crate::support::*;
use agentbus_testkit::{Script, last_user_text, offered_tools};
use std::path::Path;

const BODY: &str = "# Release notes\n\nRELEASE-STEP-1: list the changes with `git log --oneline LAST..HEAD`.\nRELEASE-STEP-2: group them by area; `awk '{print $1}'` gives the hashes.";

fn write(root: &Path, file: &str, text: &str) -> std::path::PathBuf {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("skill folder");
    std::fs::write(&path, text).expect("write skill file");
    path
}

#[tokio::test]
async fn a_skill_is_listed_then_loaded_by_the_model_and_by_the_user() {
    // A folder of `[skills] paths`, outside the workspace: its files are
    // read without asking.
    let extra = tempfile::tempdir().expect("skills folder");
    write(
        extra.path(),
        "style-guide/SKILL.md",
        "---\nname: style-guide\ndescription: The house style for prose. Use when writing user-facing text.\n---\nSTYLE-BODY: see template.md.\n",
    );
    let template = extra.path().join("style-guide/template.md");
    std::fs::write(&template, "TEMPLATE-TEXT: one line per change.").expect("template");
    let script = format!(
        r#"
[[response]]
match = "please write release notes"
tool_calls = [ {{ id = "s1", name = "skill", arguments = {{ name = "release-notes" }} }} ]

[[response]]
match = "please write release notes"
tool_calls = [ {{ id = "r1", name = "read_file", arguments = {{ path = "{}" }} }} ]

[[response]]
match = "please write release notes"
text = "Read: {{last_tool_result}}"

[[response]]
text = "Notes written."
"#,
        template.display()
    );
    let fx = Fixture::with_script(Script::from_toml_str(&script).expect("script")).await;
    fx.set_permission_mode("default");
    fx.add_config(&format!(
        "[skills]\npaths = [\"{}\"]\n",
        extra.path().display()
    ));
    let skill_md = write(
        fx.workspace(),
        ".claude/skills/release-notes/SKILL.md",
        &format!(
            "---\nname: release-notes\ndescription: Writes release notes from the git log. Use when asked for release notes.\nallowed-tools: Bash(git log:*) Read\n---\n{BODY}\n"
        ),
    );
    write(
        fx.home.path(),
        ".claude/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Fills PDF forms.\n---\nPDF-BODY\n",
    );
    let broken = write(
        fx.workspace(),
        ".claude/skills/broken/SKILL.md",
        "---\nname: Broken\ndescription: d\n---\nb\n",
    );

    let out = fx
        .run(&["run", "--json", "please write release notes"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 3);

    // The first request lists the skills, names and descriptions only.
    let system = system_message(&calls[0].body);
    for line in [
        "- pdf: Fills PDF forms.",
        "- release-notes: Writes release notes from the git log. Use when asked for release notes.",
        "- style-guide: The house style for prose. Use when writing user-facing text.",
    ] {
        assert!(system.contains(line), "{line} not in:\n{system}");
    }
    for body in ["RELEASE-STEP", "PDF-BODY", "STYLE-BODY", "Broken"] {
        assert!(!system.contains(body), "{body} in:\n{system}");
    }
    assert!(offered_tools(&calls[0].body).contains(&"skill".to_string()));

    // The skill tool's result: the whole body and the skill's folder.
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["name"], "skill");
    assert_eq!(results[0]["is_error"], false);
    let loaded = results[0]["output"].as_str().expect("output");
    assert!(loaded.contains(BODY), "{loaded}");
    let folder = skill_md.parent().expect("folder").display().to_string();
    assert!(loaded.contains(&folder), "{loaded}");
    // The model received it as the call's result.
    let second = serde_json::to_string(&calls[1].body["messages"]).expect("json");
    assert!(second.contains("RELEASE-STEP-2"), "{second}");

    // The file of a skill outside the workspace was read without asking.
    assert_eq!(results[1]["name"], "read_file");
    assert_eq!(results[1]["is_error"], false, "{}", results[1]["output"]);
    assert!(
        results[1]["output"]
            .as_str()
            .is_some_and(|o| o.contains("TEMPLATE-TEXT")),
        "{}",
        results[1]["output"]
    );
    assert!(of_type(&events, "approval_request").is_empty());
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");

    // The bad file is a notice naming the file and the field.
    let notices: Vec<&str> = events
        .iter()
        .filter(|e| e["subtype"] == "notice")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains(&broken.display().to_string()) && n.contains("field `name`")),
        "{notices:?}"
    );

    // The user types it: the model receives the body, the arguments after.
    let out = fx
        .run(&["run", "--json", "/release-notes since v1.2"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_eq!(
        of_type(&events, "user")[0]["text"],
        "/release-notes since v1.2"
    );
    let calls = fx.server.model_calls();
    let sent = last_user_text(&calls[3].body).unwrap_or_default();
    assert!(sent.contains(BODY), "{sent}");
    assert!(sent.ends_with("ARGUMENTS: since v1.2"), "{sent}");
    assert_eq!(the_result(&events)["text"], "Notes written.");
    fx.assert_requests_valid();
}
