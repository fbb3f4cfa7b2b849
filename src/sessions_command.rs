//! `agentbus sessions list|show|export|import|fork|delete`: the stored
//! sessions, straight from the store (no model, no MCP servers started).

use crate::cli::SessionsCommand;
use agentbus_actors::Settings;
use agentbus_actors::commands::sessions::short_id;
use agentbus_actors::protocol::{AgentMessage, ContentBlock, EventEnvelope, SessionId};
use agentbus_actors::runtime::open_store;
use agentbus_actors::store::{
    DeleteSession, ExportSession, ForkSession, GetSession, ImportSession, ListSessions, LoadEvents,
    Owner, ResolveId, SessionDocument, SessionRecord, Store, StoreError,
};
use anyhow::Context as _;
use kameo::actor::ActorRef;
use std::io::Write;
use std::process::ExitCode;

/// A store message's answer, with the store's own words on failure.
macro_rules! ask {
    ($store:expr, $msg:expr) => {
        $store
            .ask($msg)
            .await
            .map_err(|e| anyhow::Error::new(agentbus_actors::SessionError::from(e)))
    };
}

pub async fn run(settings: Settings, command: SessionsCommand) -> anyhow::Result<ExitCode> {
    let store = open_store(&settings).await?;
    let result = dispatch(&store, command).await;
    let _ = store.stop_gracefully().await;
    store.wait_for_shutdown().await;
    result.map(|()| ExitCode::SUCCESS)
}

async fn resolve(store: &ActorRef<Store>, prefix: &str) -> anyhow::Result<SessionId> {
    ask!(
        store,
        ResolveId {
            prefix: prefix.to_string()
        }
    )
}

async fn dispatch(store: &ActorRef<Store>, command: SessionsCommand) -> anyhow::Result<()> {
    let mut out = std::io::stdout();
    match command {
        SessionsCommand::List { json } => {
            let records = ask!(store, ListSessions::default())?;
            if json {
                serde_json::to_writer_pretty(&mut out, &records)?;
                writeln!(out)?;
            } else if records.is_empty() {
                writeln!(out, "No stored sessions.")?;
            } else {
                writeln!(
                    out,
                    "{:<18}  {:<16}  {:>6}  {:<6}  TITLE",
                    "ID", "UPDATED", "EVENTS", "STATUS"
                )?;
                for r in &records {
                    writeln!(
                        out,
                        "{:<18}  {:<16}  {:>6}  {:<6}  {}",
                        short_id(&r.id.0),
                        r.updated_at.format("%Y-%m-%d %H:%M"),
                        r.event_count,
                        status(r),
                        r.title.as_deref().unwrap_or("(untitled)")
                    )?;
                }
            }
        }
        SessionsCommand::Show { id, json } => {
            let id = resolve(store, &id).await?;
            let record = ask!(store, GetSession { id: id.clone() })?
                .with_context(|| format!("session {id} vanished"))?;
            let events = ask!(
                store,
                LoadEvents {
                    id,
                    after_seq: 0,
                    up_to: None
                }
            )?;
            if json {
                for event in &events {
                    crate::frontend::json::print_event(&mut out, event)?;
                }
            } else {
                describe(&mut out, &record)?;
                for event in &events {
                    conversation_line(&mut out, event)?;
                }
            }
        }
        SessionsCommand::Export { id, out: file } => {
            let id = resolve(store, &id).await?;
            let document = ask!(store, ExportSession { id: id.clone() })?;
            let text = document.to_json_pretty();
            match file {
                Some(path) => {
                    std::fs::write(&path, text)
                        .with_context(|| format!("writing {}", path.display()))?;
                    eprintln!(
                        "Exported session {id} ({} events) to {}.",
                        document.events.len(),
                        path.display()
                    );
                }
                None => writeln!(out, "{text}")?,
            }
        }
        SessionsCommand::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let document = SessionDocument::from_json(&text)
                .map_err(StoreError::from)
                .with_context(|| {
                    format!("{} cannot be imported; nothing was changed", file.display())
                })?;
            let events = document.events.len();
            let record = ask!(
                store,
                ImportSession {
                    document,
                    new_id: SessionId::new(),
                    owner: None
                }
            )?;
            writeln!(out, "{}", record.id)?;
            eprintln!(
                "Imported {events} events from {} as session {}.",
                file.display(),
                record.id
            );
        }
        SessionsCommand::Fork { id, at } => {
            let id = resolve(store, &id).await?;
            let record = ask!(
                store,
                ForkSession {
                    id: id.clone(),
                    at_seq: at,
                    new_id: SessionId::new(),
                    owner: None
                }
            )?;
            writeln!(out, "{}", record.id)?;
            eprintln!(
                "Forked {id} at event {} into session {}.",
                record.forked_at(),
                record.id
            );
        }
        SessionsCommand::Delete { id } => {
            let id = resolve(store, &id).await?;
            ask!(
                store,
                DeleteSession {
                    id: id.clone(),
                    owner: Owner::current()
                }
            )?;
            eprintln!("Deleted session {id}.");
        }
    }
    out.flush()?;
    Ok(())
}

/// `active` only while a live process holds the session.
fn status(record: &SessionRecord) -> &'static str {
    match record.owner {
        Some(owner) if owner.is_alive() => "active",
        _ => "idle",
    }
}

fn describe(out: &mut impl Write, r: &SessionRecord) -> std::io::Result<()> {
    writeln!(
        out,
        "Session {} — {}",
        r.id,
        r.title.as_deref().unwrap_or("(untitled)")
    )?;
    writeln!(
        out,
        "  model {} · workspace {} · {} events · {}",
        r.model,
        r.workspace,
        r.event_count,
        status(r)
    )?;
    writeln!(
        out,
        "  created {} · updated {}",
        r.created_at.format("%Y-%m-%d %H:%M:%S"),
        r.updated_at.format("%Y-%m-%d %H:%M:%S")
    )?;
    if let Some((parent, seq)) = &r.parent {
        writeln!(out, "  forked from {parent} at event {seq}")?;
    }
    writeln!(out)
}

/// One event as a line of the conversation (the same for a session and its
/// export-import copy: no ids, no times).
fn conversation_line(out: &mut impl Write, event: &EventEnvelope) -> std::io::Result<()> {
    let seq = event.seq;
    match &event.message {
        AgentMessage::User(u) => writeln!(out, "[{seq}] user: {}", u.text),
        AgentMessage::Assistant(a) => {
            let text: String = a.content.iter().filter_map(ContentBlock::as_text).collect();
            let mark = if a.interrupted { " (interrupted)" } else { "" };
            if !text.is_empty() {
                writeln!(out, "[{seq}] assistant{mark}: {text}")?;
            }
            for block in &a.content {
                if let ContentBlock::ToolUse { id, name, input } = block {
                    writeln!(out, "[{seq}] tool call {name} ({id}): {input}")?;
                }
            }
            Ok(())
        }
        AgentMessage::ToolResult(t) => {
            let first = t.output.lines().next().unwrap_or_default();
            let kind = if t.cancelled {
                "cancelled"
            } else if t.is_error {
                "error"
            } else {
                "ok"
            };
            writeln!(
                out,
                "[{seq}] tool result {} ({}, {kind}): {first}",
                t.name, t.call_id
            )
        }
        AgentMessage::Result(r) => writeln!(
            out,
            "[{seq}] result: {} ({} steps, {} in / {} out tokens){}",
            r.stop_reason.as_str(),
            r.steps,
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
        AgentMessage::Error(e) => writeln!(out, "[{seq}] error: {}", e.message),
        AgentMessage::System(s) => match s.subtype {
            agentbus_actors::protocol::SystemSubtype::SessionStarted
            | agentbus_actors::protocol::SystemSubtype::McpServerStatus => Ok(()),
            _ => writeln!(
                out,
                "[{seq}] {}",
                s.message.lines().next().unwrap_or_default()
            ),
        },
        AgentMessage::StreamEvent(_) | AgentMessage::ApprovalRequest(_) => Ok(()),
    }
}
