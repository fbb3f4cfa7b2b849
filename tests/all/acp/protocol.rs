//! What acpx cannot show, with the crate's own client side as the editor:
//! the replay of `session/load`, `session/list`, the mode picker,
//! "allow always", a permission request withdrawn by a cancel, the file
//! tools going through the editor, embedded context, slash commands,
//! the editor's MCP servers belonging to the session given them, and
//! `--attach` to a running `agentbus serve`.

use super::editor::{Behaviour, new_session, prompt, with_editor};
use crate::support::{Fixture, session_id, test_mcp_server};
use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, EmbeddedResource, EmbeddedResourceResource,
    ListSessionsRequest, LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest,
    PromptRequest, SessionId, SessionModeId, SessionUpdate, SetSessionModeRequest, StopReason,
    TextContent, TextResourceContents, ToolCallContent, ToolCallStatus, ToolKind,
};
use agentbus_testkit::{last_user_text, offered_tools};
use std::collections::HashMap;

/// The editor's MCP server: the kit's test server, named `editor`.
fn editors_server() -> McpServer {
    McpServer::Stdio(McpServerStdio::new("editor", test_mcp_server()))
}

/// The tools offered by each model request whose last user text holds
/// `text`.
fn offered_for(fx: &Fixture, text: &str) -> Vec<Vec<String>> {
    let offered: Vec<Vec<String>> = fx
        .server
        .model_calls()
        .iter()
        .filter(|c| last_user_text(&c.body).is_some_and(|t| t.contains(text)))
        .map(|c| offered_tools(&c.body))
        .collect();
    assert!(!offered.is_empty(), "no request for {text:?}");
    offered
}

/// The text of a text block.
fn text_of(block: &ContentBlock) -> &str {
    match block {
        ContentBlock::Text(t) => &t.text,
        _ => "",
    }
}

#[tokio::test]
async fn session_load_replays_the_stored_conversation_before_answering() {
    let fx = Fixture::new("one_tool_round").await;
    std::fs::write(fx.workspace().join("a.txt"), "apple\n").unwrap();
    let ran = fx.run(&["run", "--json", "read a.txt"]).await;
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr);
    let id = session_id(&ran.events());
    let ws = fx.workspace().to_path_buf();
    let (replay, answer) = with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let answer = cx
            .send_request(LoadSessionRequest::new(SessionId::new(id.as_str()), ws))
            .block_task()
            .await?;
        // Everything sent before the answer was the replay.
        Ok((editor.take(), answer))
    })
    .await;
    let modes = answer.modes.expect("the modes");
    assert_eq!(&*modes.current_mode_id.0, "bypass");
    let kinds: Vec<&str> = replay
        .updates
        .iter()
        .map(|u| match u {
            SessionUpdate::UserMessageChunk(_) => "user",
            SessionUpdate::AgentMessageChunk(_) => "agent",
            SessionUpdate::ToolCall(_) => "tool_call",
            SessionUpdate::ToolCallUpdate(_) => "tool_call_update",
            _ => "other",
        })
        .filter(|k| *k != "other")
        .collect();
    assert_eq!(
        kinds,
        ["user", "agent", "tool_call", "tool_call_update", "agent"],
        "{replay:#?}"
    );
    let SessionUpdate::UserMessageChunk(user) = &replay.updates[0] else {
        panic!("{replay:#?}");
    };
    assert_eq!(text_of(&user.content), "read a.txt");
    let call = replay
        .updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (call.title.as_str(), call.kind),
        ("Read a.txt", ToolKind::Read)
    );
    let done = replay
        .updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCallUpdate(update) => Some(update),
            _ => None,
        })
        .unwrap();
    assert_eq!(done.fields.status, Some(ToolCallStatus::Completed));
    assert!(
        replay
            .agent_text()
            .starts_with("Let me look.The file says:")
            && replay.agent_text().contains("apple"),
        "{}",
        replay.agent_text()
    );
}

/// The updates that show text, as (kind, text): thoughts, the agent's
/// messages, the user's.
fn texts(updates: &[SessionUpdate]) -> Vec<(&'static str, String)> {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentThoughtChunk(c) => Some(("thought", text_of(&c.content))),
            SessionUpdate::AgentMessageChunk(c) => Some(("agent", text_of(&c.content))),
            SessionUpdate::UserMessageChunk(c) => Some(("user", text_of(&c.content))),
            _ => None,
        })
        .map(|(kind, text)| (kind, text.to_string()))
        .collect()
}

/// Adjacent chunks of one kind joined: what an editor shows.
fn joined(texts: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for (kind, text) in texts {
        match out.last_mut() {
            Some((last, joined)) if *last == kind => joined.push_str(&text),
            _ => out.push((kind, text)),
        }
    }
    out
}

#[tokio::test]
async fn a_prompts_thinking_arrives_as_thought_chunks_and_is_replayed_by_load() {
    let fx = Fixture::new("thinking").await;
    fx.add_thinking_profile();
    let ws = fx.workspace().to_path_buf();
    let id = with_editor(
        &fx,
        &["--model", "scripted-thinking"],
        Behaviour::default(),
        async |cx, editor| {
            let id = new_session(&cx, &ws).await?;
            editor.take();
            let answer = prompt(&cx, &id, "what is 2 + 2?").await?;
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let seen = editor.take();
            assert_eq!(
                joined(texts(&seen.updates)),
                [
                    ("thought", "Two and two make four.".to_string()),
                    ("agent", "4".to_string())
                ],
                "{seen:#?}"
            );
            Ok(id)
        },
    )
    .await;
    let replay = with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        cx.send_request(LoadSessionRequest::new(id, ws.clone()))
            .block_task()
            .await?;
        // The commands follow the answer: the connection stays open until
        // they came (agentbus acp fails when the editor hangs up on them).
        editor
            .wait_until(|seen| {
                seen.updates
                    .iter()
                    .any(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
            })
            .await;
        Ok(editor.take())
    })
    .await;
    assert_eq!(
        joined(texts(&replay.updates)),
        [
            ("user", "what is 2 + 2?".to_string()),
            ("thought", "Two and two make four.".to_string()),
            ("agent", "4".to_string())
        ],
        "{replay:#?}"
    );
}

#[tokio::test]
async fn session_list_shows_the_stored_sessions_and_prompts_need_an_open_one() {
    let fx = Fixture::new("plain_reply").await;
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, _editor| {
        let first = new_session(&cx, &ws).await?;
        let second = new_session(&cx, &ws).await?;
        let listed = cx
            .send_request(ListSessionsRequest::new().cwd(ws.clone()))
            .block_task()
            .await?;
        let mut ids: Vec<String> = listed
            .sessions
            .iter()
            .map(|s| s.session_id.0.to_string())
            .collect();
        ids.sort();
        let mut expected = vec![first.0.to_string(), second.0.to_string()];
        expected.sort();
        assert_eq!(ids, expected);
        assert!(
            listed
                .sessions
                .iter()
                .all(|s| s.cwd == ws && s.updated_at.is_some())
        );
        let elsewhere = cx
            .send_request(ListSessionsRequest::new().cwd("/nowhere/else"))
            .block_task()
            .await?;
        assert!(elsewhere.sessions.is_empty());
        let unknown = prompt(&cx, &SessionId::new("no-such-session"), "hi")
            .await
            .expect_err("a prompt needs an open session");
        assert_eq!(unknown.code, ErrorCode::RESOURCE_NOT_FOUND);
        assert!(
            unknown.message.contains("no-such-session"),
            "{}",
            unknown.message
        );
        let relative = cx
            .send_request(agent_client_protocol::v1::schema::NewSessionRequest::new(
                "relative/dir",
            ))
            .block_task()
            .await
            .expect_err("cwd must be absolute");
        assert!(
            relative.message.contains("absolute"),
            "{}",
            relative.message
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn set_mode_switches_the_permission_mode_and_the_editor_follows() {
    let fx = Fixture::new("acp_approvals").await;
    fx.set_permission_mode("default");
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let session = cx
            .send_request(agent_client_protocol::v1::schema::NewSessionRequest::new(ws.clone()))
            .block_task()
            .await?;
        let modes = session.modes.expect("modes");
        assert_eq!(&*modes.current_mode_id.0, "default");
        let id = session.session_id;
        cx.send_request(SetSessionModeRequest::new(id.clone(), SessionModeId::new("plan")))
            .block_task()
            .await?;
        editor
            .wait_until(|seen| {
                seen.updates.iter().any(|u| {
                    matches!(u, SessionUpdate::CurrentModeUpdate(m) if &*m.current_mode_id.0 == "plan")
                })
            })
            .await;
        // The picker's switch says nothing else.
        assert_eq!(editor.seen().agent_text(), "");
        // In plan mode the write is refused without asking.
        let answer = prompt(&cx, &id, "plan: write it").await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let seen = editor.take();
        assert!(seen.permission_requests.is_empty());
        assert!(seen.updates.iter().any(|u| matches!(
            u,
            SessionUpdate::ToolCallUpdate(c) if c.fields.status == Some(ToolCallStatus::Failed)
        )));
        assert!(!ws.join("planned.txt").exists());
        let wrong = cx
            .send_request(SetSessionModeRequest::new(id, SessionModeId::new("yolo")))
            .block_task()
            .await
            .expect_err("no such mode");
        assert_eq!(wrong.code, ErrorCode::INVALID_PARAMS);
        assert!(wrong.message.contains("yolo"), "{}", wrong.message);
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn allow_always_in_the_editor_asks_once() {
    let fx = Fixture::new("acp_approvals").await;
    fx.set_permission_mode("default");
    let ws = fx.workspace().to_path_buf();
    let behaviour = Behaviour {
        permission: Some("allow_always"),
        ..Default::default()
    };
    with_editor(&fx, &[], behaviour, async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        let first = prompt(&cx, &id, "always").await?;
        assert_eq!(first.stop_reason, StopReason::EndTurn);
        let asked = editor.take();
        assert_eq!(asked.permission_requests.len(), 1);
        let options: Vec<String> = asked.permission_requests[0]
            .options
            .iter()
            .map(|o| o.name.clone())
            .collect();
        assert_eq!(
            options,
            [
                "Allow once",
                "Always allow bash(echo always-ok:*)",
                "Reject"
            ]
        );
        assert!(asked.agent_text().contains("First: always-ok"));
        let second = prompt(&cx, &id, "again").await?;
        assert_eq!(second.stop_reason, StopReason::EndTurn);
        let again = editor.take();
        assert!(
            again.permission_requests.is_empty(),
            "asked again: {again:#?}"
        );
        assert!(again.agent_text().contains("Second: always-ok"));
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn a_cancel_withdraws_the_permission_request_and_answers_cancelled() {
    let fx = Fixture::new("acp_approvals").await;
    fx.set_permission_mode("default");
    let ws = fx.workspace().to_path_buf();
    // The editor never answers: its user presses stop instead.
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        let asking = cx.send_request(PromptRequest::new(
            id.clone(),
            vec![ContentBlock::from("run the command")],
        ));
        editor
            .wait_until(|seen| seen.permission_requests.len() == 1)
            .await;
        cx.send_notification(CancelNotification::new(id))?;
        let answer = asking.block_task().await?;
        assert_eq!(answer.stop_reason, StopReason::Cancelled);
        editor.wait_until(|seen| seen.withdrawn == 1).await;
        assert!(!ws.join("ran.txt").exists());
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn the_file_tools_read_and_write_through_the_editor() {
    let fx = Fixture::new("acp_client_files").await;
    let ws = fx.workspace().to_path_buf();
    std::fs::write(ws.join("notes.txt"), "saved text\n").unwrap();
    let behaviour = Behaviour {
        buffers: Some(HashMap::from([(
            ws.join("notes.txt"),
            "unsaved text\n".to_string(),
        )])),
        ..Default::default()
    };
    with_editor(&fx, &[], behaviour, async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        prompt(&cx, &id, "read the notes").await?;
        let read = editor.take();
        assert_eq!(read.reads, [ws.join("notes.txt")]);
        assert!(
            read.agent_text().contains("It says:      1\tunsaved text"),
            "the buffer, not the disk: {}",
            read.agent_text()
        );
        prompt(&cx, &id, "write the file").await?;
        let written = editor.take();
        assert_eq!(
            written.writes,
            [(ws.join("out.txt"), "written by the agent\n".to_string())]
        );
        assert!(!ws.join("out.txt").exists(), "nothing written on the disk");
        prompt(&cx, &id, "edit the notes").await?;
        let edited = editor.take();
        assert_eq!(
            edited.writes,
            [(ws.join("notes.txt"), "edited text\n".to_string())]
        );
        let diff = edited
            .updates
            .iter()
            .find_map(|u| match u {
                SessionUpdate::ToolCallUpdate(c) => match c.fields.content.as_deref() {
                    Some([ToolCallContent::Diff(diff)]) => Some(diff.clone()),
                    _ => None,
                },
                _ => None,
            })
            .expect("the edit's diff");
        assert_eq!(diff.old_text.as_deref(), Some("unsaved"));
        assert_eq!(diff.new_text, "edited");
        assert_eq!(
            std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
            "saved text\n"
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn embedded_context_and_mentions_reach_the_model() {
    let fx = Fixture::new("plain_reply").await;
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, _editor| {
        let id = new_session(&cx, &ws).await?;
        let context = EmbeddedResource::new(EmbeddedResourceResource::TextResourceContents(
            TextResourceContents::new("fn main() {}\n", "file:///ws/src/main.rs"),
        ));
        let answer = cx
            .send_request(PromptRequest::new(
                id,
                vec![
                    ContentBlock::Text(TextContent::new("explain ")),
                    ContentBlock::Resource(context),
                ],
            ))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        Ok(())
    })
    .await;
    let requests = fx.request_messages();
    let user = requests[0]
        .iter()
        .rfind(|m| m["role"] == "user")
        .expect("a user message")
        .to_string();
    assert!(
        user.contains("explain @/ws/src/main.rs")
            && user.contains(
                "<context ref=\\\"file:///ws/src/main.rs\\\">\\nfn main() {}\\n</context>"
            ),
        "{user}"
    );
}

#[tokio::test]
async fn slash_commands_answer_and_those_that_switch_sessions_are_refused() {
    let fx = Fixture::new("plain_reply").await;
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        let mode = prompt(&cx, &id, "/mode").await?;
        assert_eq!(mode.stop_reason, StopReason::EndTurn);
        assert!(editor.take().agent_text().contains("bypass"));
        let new = prompt(&cx, &id, "/new").await?;
        assert_eq!(new.stop_reason, StopReason::EndTurn);
        assert!(
            editor
                .take()
                .agent_text()
                .contains("not available in an editor")
        );
        Ok(())
    })
    .await;
    assert!(
        fx.request_messages().is_empty(),
        "no command reached the model"
    );
}

#[tokio::test]
async fn an_attached_editors_session_lives_in_the_server_and_streams_there() {
    let fx = Fixture::new("acp_client_files").await;
    let ws = fx.workspace().to_path_buf();
    std::fs::write(ws.join("notes.txt"), "saved text\n").unwrap();
    let server = fx.serve().await;
    // The editor offers its files; with --attach the tools run in the
    // server, which cannot reach them: the disk is read.
    let behaviour = Behaviour {
        buffers: Some(HashMap::from([(
            ws.join("notes.txt"),
            "unsaved text\n".to_string(),
        )])),
        ..Default::default()
    };
    let url = server.url.clone();
    with_editor(&fx, &["--attach", &url], behaviour, async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        let listed = server.get_json("/v1/sessions").await;
        let entry = listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == *id.0)
            .unwrap_or_else(|| panic!("the editor's session is not the server's: {listed}"));
        assert_eq!(entry["workspace"], ws.display().to_string());
        assert_eq!(entry["loaded"], true);
        // The web page follows the session while the editor prompts.
        let mut page = server.sse(&id.0, None).await;
        let answer = prompt(&cx, &id, "read the notes").await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let user = page.until(|e| e["type"] == "user").await;
        assert_eq!(user["text"], "read the notes");
        let result = page.until(|e| e["type"] == "result").await;
        assert_eq!(result["stop_reason"], "end_turn");
        assert!(result["text"].as_str().unwrap().contains("saved text"));
        let seen = editor.take();
        assert!(seen.reads.is_empty(), "{:?}", seen.reads);
        assert!(seen.agent_text().contains("It says:      1\tsaved text"));
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn an_editors_mcp_server_is_offered_to_the_session_given_it_alone() {
    let fx = Fixture::new("acp_mcp_two_sessions").await;
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let first = cx
            .send_request(NewSessionRequest::new(ws.clone()).mcp_servers(vec![editors_server()]))
            .block_task()
            .await?
            .session_id;
        let second = new_session(&cx, &ws).await?;
        let answer = prompt(&cx, &first, "first: echo it").await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let seen = editor.take();
        assert!(
            seen.agent_text()
                .contains("echoed: only the first session's"),
            "{}",
            seen.agent_text()
        );
        // The server is up now; the other session still does not see it.
        prompt(&cx, &second, "second: anything").await?;
        Ok(())
    })
    .await;
    for tools in offered_for(&fx, "first") {
        assert!(
            tools.contains(&"mcp__editor__echo".to_string()),
            "{tools:?}"
        );
    }
    for tools in offered_for(&fx, "second") {
        assert!(
            tools.iter().all(|t| !t.starts_with("mcp__editor__")),
            "the other session was offered the editor's tools: {tools:?}"
        );
        assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
    }
}

#[tokio::test]
async fn a_session_loaded_again_has_the_servers_that_load_gives() {
    let fx = Fixture::new("acp_mcp_two_sessions").await;
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        prompt(&cx, &id, "second: before the load").await?;
        // Loaded (and running) already: the load gives it the server.
        cx.send_request(
            LoadSessionRequest::new(id.clone(), ws.clone()).mcp_servers(vec![editors_server()]),
        )
        .block_task()
        .await?;
        editor.take();
        let answer = prompt(&cx, &id, "first: after the load").await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let seen = editor.take();
        assert!(
            seen.agent_text()
                .contains("echoed: only the first session's"),
            "{seen:#?}"
        );
        // Only the load's task follows the session now: nothing twice.
        let calls = seen
            .updates
            .iter()
            .filter(|u| matches!(u, SessionUpdate::ToolCall(_)))
            .count();
        assert_eq!(calls, 1, "{seen:#?}");
        Ok(())
    })
    .await;
    for tools in offered_for(&fx, "before the load") {
        assert!(tools.iter().all(|t| !t.starts_with("mcp__")), "{tools:?}");
    }
    for tools in offered_for(&fx, "after the load") {
        assert!(
            tools.contains(&"mcp__editor__echo".to_string()),
            "{tools:?}"
        );
    }
}

#[tokio::test]
async fn an_attached_editors_mcp_server_runs_in_the_server_for_its_session() {
    let fx = Fixture::new("acp_mcp_attached").await;
    let ws = fx.workspace().to_path_buf();
    // A stored session the server has not loaded.
    let ran = fx.run(&["run", "--json", "hello"]).await;
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr);
    let stored = session_id(&ran.events());
    let server = fx.serve().await;
    let url = server.url.clone();
    with_editor(
        &fx,
        &["--attach", &url],
        Behaviour::default(),
        async |cx, editor| {
            cx.send_request(
                LoadSessionRequest::new(SessionId::new(stored.as_str()), ws.clone())
                    .mcp_servers(vec![editors_server()]),
            )
            .block_task()
            .await?;
            let loaded = prompt(&cx, &SessionId::new(stored.as_str()), "echo, loaded").await?;
            assert_eq!(loaded.stop_reason, StopReason::EndTurn);
            let seen = editor.take();
            assert!(
                seen.agent_text().contains("echoed: in the loaded session"),
                "{}",
                seen.agent_text()
            );
            let new = cx
                .send_request(
                    NewSessionRequest::new(ws.clone()).mcp_servers(vec![editors_server()]),
                )
                .block_task()
                .await?
                .session_id;
            let answer = prompt(&cx, &new, "echo, new").await?;
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            assert!(
                editor
                    .take()
                    .agent_text()
                    .contains("echoed: in the new session")
            );
            // The server's own tool list (every session's) does not have it.
            let tools = server.get_json("/v1/tools").await.to_string();
            assert!(!tools.contains("mcp__editor__"), "{tools}");
            Ok(())
        },
    )
    .await;
    for tools in offered_for(&fx, "echo") {
        assert!(
            tools.contains(&"mcp__editor__echo".to_string()),
            "{tools:?}"
        );
    }
    for tools in offered_for(&fx, "hello") {
        assert!(tools.iter().all(|t| !t.starts_with("mcp__")), "{tools:?}");
    }
}

#[tokio::test]
async fn a_reply_cut_at_the_limit_or_refused_says_so_in_its_stop_reason() {
    let fx = Fixture::new("acp_stop_reasons").await;
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, _editor| {
        let id = new_session(&cx, &ws).await?;
        let cut = prompt(&cx, &id, "something long").await?;
        assert_eq!(cut.stop_reason, StopReason::MaxTokens);
        let refused = prompt(&cx, &id, "something forbidden").await?;
        assert_eq!(refused.stop_reason, StopReason::Refusal);
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn usage_follows_each_reply_with_the_window_and_the_cost() {
    let fx = Fixture::new("plain_reply").await;
    let config = std::fs::read_to_string(&fx.config).unwrap().replacen(
        "[models.scripted]\n",
        "[models.scripted]\ncontext_window = 100000\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
        1,
    );
    std::fs::write(&fx.config, config).unwrap();
    let ws = fx.workspace().to_path_buf();
    let seen = with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        prompt(&cx, &id, "hello").await?;
        Ok(editor.take())
    })
    .await;
    let usage = seen
        .updates
        .iter()
        .rev()
        .find_map(|u| match u {
            SessionUpdate::UsageUpdate(usage) => Some(usage),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no usage_update: {seen:#?}"));
    // The provider's count: 12 tokens in, 7 out (plain_reply.toml).
    assert_eq!(usage.used, 19);
    assert!(usage.size > 0 && usage.size <= 100_000, "{}", usage.size);
    let cost = usage.cost.as_ref().expect("the profile has prices");
    assert!(
        (cost.amount - (12.0 * 3.0 + 7.0 * 15.0) / 1e6).abs() < 1e-12,
        "{}",
        cost.amount
    );
}

#[tokio::test]
async fn a_failed_turn_is_an_error_answer_and_the_session_goes_on() {
    let fx = Fixture::flaky_then_back().await;
    let ws = fx.workspace().to_path_buf();
    with_editor(
        &fx,
        &["--model", "flaky"],
        Behaviour::default(),
        async |cx, editor| {
            let id = new_session(&cx, &ws).await?;
            let failed = prompt(&cx, &id, "question")
                .await
                .expect_err("the turn failed");
            assert!(
                failed.message.contains("HTTP 503: still down"),
                "{}",
                failed.message
            );
            let seen = editor.take();
            // The retry was progress; the failure is said in the answer too.
            assert!(
                seen.updates
                    .iter()
                    .any(|u| matches!(u, SessionUpdate::AgentThoughtChunk(_)))
            );
            assert!(
                seen.agent_text().contains("still down"),
                "{}",
                seen.agent_text()
            );
            let again = prompt(&cx, &id, "and now?").await?;
            assert_eq!(again.stop_reason, StopReason::EndTurn);
            assert!(editor.take().agent_text().contains("Back."));
            Ok(())
        },
    )
    .await;
}

#[tokio::test]
async fn closing_the_connection_mid_turn_stores_the_turn_cancelled() {
    let fx = Fixture::new("acp_slow_reply").await;
    let ws = fx.workspace().to_path_buf();
    let id = with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        let asking = cx.send_request(PromptRequest::new(
            id.clone(),
            vec![ContentBlock::from("tell me a long story")],
        ));
        editor
            .wait_until(|seen| !seen.agent_text().is_empty())
            .await;
        // The editor goes away without waiting for the answer.
        asking.detach();
        Ok(id)
    })
    .await;
    let shown = fx.run(&["sessions", "show", &id.0, "--json"]).await;
    assert_eq!(shown.code(), Some(0), "{}", shown.stderr);
    let events = shown.events();
    let result = crate::support::the_result(&events);
    assert_eq!(result["stop_reason"], "cancelled", "{result}");
}

#[tokio::test]
async fn sigint_does_not_end_the_agent_closing_stdin_does() {
    let fx = Fixture::new("plain_reply").await;
    let mut agent = fx.spawn_with_stdin(&["acp"]);
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;
    agent.send(&format!("{initialize}\n")).await;
    let answer = agent.next_line().await.expect("an answer");
    assert!(answer.contains(r#""protocolVersion":1"#), "{answer}");
    // A Ctrl-C in the client's terminal reaches the agent too.
    agent.interrupt();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}"#;
    agent.send(&format!("{list}\n")).await;
    let listed = agent
        .next_line()
        .await
        .expect("still answering after SIGINT");
    assert!(listed.contains(r#""sessions":[]"#), "{listed}");
    let done = agent.finish().await;
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    // stdout held the protocol and nothing else.
    assert!(
        done.stdout.iter().all(|l| l.starts_with('{')),
        "{:?}",
        done.stdout
    );
}

/// The entries of a `plan` update as (content, status).
fn plan_entries(update: &SessionUpdate) -> Option<Vec<(String, String)>> {
    let SessionUpdate::Plan(plan) = update else {
        return None;
    };
    let value = serde_json::to_value(plan).expect("a plan as JSON");
    Some(
        value["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| {
                assert_eq!(e["priority"], "medium", "{e}");
                (
                    e["content"].as_str().unwrap_or_default().to_string(),
                    e["status"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
    )
}

#[tokio::test]
async fn the_models_plan_is_a_plan_update_and_load_replays_it() {
    let fx = Fixture::new("plan").await;
    let ws = fx.workspace().to_path_buf();
    let entries = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(c, s)| (c.to_string(), s.to_string()))
            .collect()
    };
    let first = entries(&[
        ("Read the notes", "in_progress"),
        ("Count the lines", "pending"),
        ("Report back", "pending"),
    ]);
    let second = entries(&[
        ("Read the notes", "completed"),
        ("Count the lines", "in_progress"),
        ("Report back", "pending"),
    ]);
    let id = with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        editor.take();
        let answer = prompt(&cx, &id, "count the lines").await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let seen = editor.take();
        let plans: Vec<Vec<(String, String)>> =
            seen.updates.iter().filter_map(plan_entries).collect();
        assert_eq!(plans, [first.clone(), second.clone()], "{seen:#?}");
        // The plan stands for the todo_write calls: none is a tool call.
        assert!(
            !seen.updates.iter().any(|u| matches!(
                u,
                SessionUpdate::ToolCall(_) | SessionUpdate::ToolCallUpdate(_)
            )),
            "{seen:#?}"
        );
        assert!(seen.agent_text().contains("All done: two lines."));
        Ok(id)
    })
    .await;
    let replay = with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        cx.send_request(LoadSessionRequest::new(id, ws.clone()))
            .block_task()
            .await?;
        // The commands follow the answer: wait for them before hanging up.
        editor
            .wait_until(|seen| {
                seen.updates
                    .iter()
                    .any(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
            })
            .await;
        Ok(editor.take())
    })
    .await;
    let plans: Vec<Vec<(String, String)>> =
        replay.updates.iter().filter_map(plan_entries).collect();
    assert_eq!(plans.last(), Some(&second), "{replay:#?}");
}
