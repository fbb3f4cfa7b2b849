//! The mode, agent and model pickers: named agents as ACP modes and as a
//! config option, switched from the editor, reaching the model.

use super::editor::{Behaviour, prompt, with_editor};
use crate::support::{Fixture, system_message};
use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema::{
    NewSessionRequest, SessionConfigKind, SessionConfigOption, SessionConfigOptionValue,
    SessionModeId, SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest,
};

/// The current value of a select option.
fn current(option: &SessionConfigOption) -> String {
    match &option.kind {
        SessionConfigKind::Select(select) => select.current_value.0.to_string(),
        other => panic!("{other:?}"),
    }
}

/// The current value of option `id` in the last `config_option_update`.
fn last_update_of(updates: &[SessionUpdate], id: &str) -> Option<String> {
    updates.iter().rev().find_map(|u| match u {
        SessionUpdate::ConfigOptionUpdate(update) => update
            .config_options
            .iter()
            .find(|o| &*o.id.0 == id)
            .map(current),
        _ => None,
    })
}

#[tokio::test]
async fn an_agent_picked_in_the_editor_brings_its_prompt_and_its_mode() {
    let fx = Fixture::new("agents").await;
    let dir = fx.workspace().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code\n---\nREVIEWER-PROMPT: read, then judge.\n",
    )
    .unwrap();
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let session = cx
            .send_request(NewSessionRequest::new(ws.clone()))
            .block_task()
            .await?;
        let id = session.session_id;
        let modes = session.modes.expect("modes");
        let mode_ids: Vec<&str> = modes.available_modes.iter().map(|m| &*m.id.0).collect();
        for expected in ["default", "plan", "agent:build", "agent:plan", "agent:reviewer"] {
            assert!(mode_ids.contains(&expected), "{expected} in {mode_ids:?}");
        }
        let options = session.config_options.expect("config options");
        let ids: Vec<&str> = options.iter().map(|o| &*o.id.0).collect();
        assert_eq!(ids, ["mode", "agent", "model"]);
        assert_eq!(current(&options[1]), "build");
        assert_eq!(current(&options[2]), "scripted");

        // The agent picker: the next request carries the agent's prompt.
        let answer = cx
            .send_request(SetSessionConfigOptionRequest::new(
                id.clone(),
                "agent",
                SessionConfigOptionValue::from("reviewer"),
            ))
            .block_task()
            .await?;
        let agent = answer.config_options.iter().find(|o| &*o.id.0 == "agent");
        assert_eq!(agent.map(current).as_deref(), Some("reviewer"));
        editor
            .wait_until(|seen| last_update_of(&seen.updates, "agent").as_deref() == Some("reviewer"))
            .await;
        prompt(&cx, &id, "review it").await?;
        let calls = fx.server.model_calls();
        let system = system_message(&calls.last().expect("a model call").body);
        assert!(system.starts_with("REVIEWER-PROMPT"), "{system}");

        // The mode picker's agent entry: `plan` brings plan mode.
        cx.send_request(SetSessionModeRequest::new(id.clone(), SessionModeId::new("agent:plan")))
            .block_task()
            .await?;
        editor
            .wait_until(|seen| {
                seen.updates.iter().any(|u| {
                    matches!(u, SessionUpdate::CurrentModeUpdate(m) if &*m.current_mode_id.0 == "plan")
                }) && last_update_of(&seen.updates, "agent").as_deref() == Some("plan")
            })
            .await;
        // Picker switches say nothing in the conversation.
        assert!(!editor.seen().agent_text().contains("Agent"), "{}", editor.seen().agent_text());

        // Wrong values are refused, naming what is offered.
        let wrong = cx
            .send_request(SetSessionConfigOptionRequest::new(
                id.clone(),
                "model",
                SessionConfigOptionValue::from("huge"),
            ))
            .block_task()
            .await
            .expect_err("no such model");
        assert_eq!(wrong.code, ErrorCode::INVALID_PARAMS);
        assert!(wrong.message.contains("`huge`") && wrong.message.contains("scripted"), "{}", wrong.message);
        let wrong = cx
            .send_request(SetSessionModeRequest::new(id, SessionModeId::new("agent:nobody")))
            .block_task()
            .await
            .expect_err("no such agent");
        assert!(wrong.message.contains("agent:reviewer"), "{}", wrong.message);
        Ok(())
    })
    .await;
}
