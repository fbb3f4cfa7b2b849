//! `/rewind` and `/undo` in an editor: offered, `/rewind` lists the turns
//! with what each changed, `/rewind SEQ` takes back the files alone (the
//! editor owns the conversation list), and naming a mode that forks says
//! the editor stays and how to open the fork.

use super::editor::{Behaviour, new_session, prompt, with_editor};
use crate::support::Fixture;
use agent_client_protocol::v1::schema::{SessionUpdate, StopReason};

/// A turn that edits notes.txt, then one that does not.
const SCRIPT: &str = r#"
[[response]]
match = "rework the notes"
tool_calls = [ { id = "r1", name = "edit_file", arguments = '{"path": "notes.txt", "old_string": "second line", "new_string": "second LINE"}' } ]

[[response]]
match = "rework the notes"
text = "Reworked."

[[response]]
match = "talk about it"
text = "Talked."
"#;

/// The seq of the turn whose prompt is `prompt`, from `/rewind`'s list
/// (`  SEQ  PROMPT`).
fn seq_of(list: &str, prompt: &str) -> u64 {
    list.lines()
        .find_map(|line| line.trim().strip_suffix(prompt))
        .and_then(|seq| seq.trim().parse().ok())
        .unwrap_or_else(|| panic!("no turn {prompt:?} in:\n{list}"))
}

#[tokio::test]
async fn rewind_in_the_editor_lists_the_turns_and_takes_back_the_code() {
    let fx = Fixture::with_script(agentbus_testkit::Script::from_toml_str(SCRIPT).unwrap()).await;
    let ws = fx.workspace().to_path_buf();
    let notes = ws.join("notes.txt");
    let before: &[u8] = b"first line\nsecond line\r\nno newline at the end";
    std::fs::write(&notes, before).unwrap();
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        // Offered among the commands.
        editor
            .wait_until(|seen| {
                seen.updates
                    .iter()
                    .any(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
            })
            .await;
        let offered: Vec<String> = editor
            .take()
            .updates
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::AvailableCommandsUpdate(c) => Some(
                    c.available_commands
                        .iter()
                        .map(|c| c.name.clone())
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(
            offered.iter().any(|n| n == "rewind") && offered.iter().any(|n| n == "undo"),
            "{offered:?}"
        );

        prompt(&cx, &id, "rework the notes").await?;
        prompt(&cx, &id, "talk about it").await?;
        assert_ne!(std::fs::read(&notes).unwrap(), before);
        editor.take();

        let listed = prompt(&cx, &id, "/rewind").await?;
        assert_eq!(listed.stop_reason, StopReason::EndTurn);
        let list = editor.take().agent_text();
        assert!(list.contains("+1 -1 notes.txt"), "{list}");
        assert!(list.contains("(no files changed)"), "{list}");
        let seq = seq_of(&list, "rework the notes");

        // `/rewind SEQ`: the code alone, byte for byte; no fork.
        prompt(&cx, &id, &format!("/rewind {seq}")).await?;
        let said = editor.take().agent_text();
        assert!(said.contains("restored notes.txt"), "{said}");
        assert!(!said.contains("new session"), "{said}");
        assert_eq!(std::fs::read(&notes).unwrap(), before);

        // Naming a mode that forks: done, and the editor is told how to
        // open the fork.
        prompt(&cx, &id, &format!("/rewind {seq} conversation")).await?;
        let said = editor.take().agent_text();
        assert!(
            said.contains("The conversation continues before turn")
                && said.contains("This editor stays in this session"),
            "{said}"
        );
        Ok(())
    })
    .await;
    assert_eq!(
        fx.request_messages().len(),
        3,
        "no command reached the model"
    );
}
