//! `agentbus sessions list|show|export|import|fork|delete`: the stored
//! sessions, straight from the store (no model, no MCP servers started).

use crate::cli::SessionsCommand;
use crate::frontend::output::Output;
use crate::frontend::output::json::JsonLines;
use agentbus_actors::protocol::{AgentMessage, ContentBlock, EventEnvelope, SystemSubtype};
use agentbus_actors::runtime::{SessionDocument, SessionRecord};
use agentbus_actors::{Settings, StoredSessions};
use anyhow::Context as _;
use std::io::Write;
use std::process::ExitCode;

pub async fn run(settings: Settings, command: SessionsCommand) -> anyhow::Result<ExitCode> {
    let stored = StoredSessions::open(&settings).await?;
    let result = dispatch(&stored, command).await;
    stored.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

async fn dispatch(stored: &StoredSessions, command: SessionsCommand) -> anyhow::Result<()> {
    let mut out = std::io::stdout();
    match command {
        SessionsCommand::List { json } => {
            let records = stored.list(Default::default()).await?;
            if json {
                serde_json::to_writer_pretty(&mut out, &records)?;
                writeln!(out)?;
            } else if records.is_empty() {
                writeln!(out, "No stored sessions.")?;
            } else {
                writeln!(
                    out,
                    "{:<18}  {:<16}  {:>6}  {:<6}  {:<25}  TITLE",
                    "ID", "UPDATED", "EVENTS", "STATUS", "PARENT"
                )?;
                for r in &records {
                    writeln!(
                        out,
                        "{:<18}  {:<16}  {:>6}  {:<6}  {:<25}  {}",
                        r.id.short(),
                        r.updated_at.format("%Y-%m-%d %H:%M"),
                        r.event_count,
                        status(r),
                        parent(r),
                        r.title.as_deref().unwrap_or("(untitled)")
                    )?;
                }
            }
        }
        SessionsCommand::Show { id, json } => {
            let id = stored.resolve(&id).await?;
            let record = stored
                .get(&id)
                .await?
                .with_context(|| format!("session {id} vanished"))?;
            let events = stored.events(&id, 0, None).await?;
            let mut output: Box<dyn Output> = if json {
                Box::new(JsonLines(std::io::stdout()))
            } else {
                describe(&mut out, &record)?;
                Box::new(Conversation(std::io::stdout()))
            };
            for event in &events {
                output.event(event)?;
            }
        }
        SessionsCommand::Export { id, out: file } => {
            let id = stored.resolve(&id).await?;
            let document = stored.export(&id).await?;
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
            let document = SessionDocument::from_json(&text).with_context(|| {
                format!("{} cannot be imported; nothing was changed", file.display())
            })?;
            let events = document.events.len();
            let record = stored.import(document).await?;
            writeln!(out, "{}", record.id)?;
            eprintln!(
                "Imported {events} events from {} as session {}.",
                file.display(),
                record.id
            );
        }
        SessionsCommand::Fork { id, at } => {
            let id = stored.resolve(&id).await?;
            let record = stored.fork(&id, at).await?;
            writeln!(out, "{}", record.id)?;
            eprintln!(
                "Forked {id} at event {} into session {}.",
                record.forked_at(),
                record.id
            );
        }
        SessionsCommand::Delete { id } => {
            let id = stored.resolve(&id).await?;
            stored.delete(&id).await?;
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

/// The list's PARENT column: `-`, a fork's `ID (fork)`, a sub-agent's
/// `ID (task)`.
fn parent(r: &SessionRecord) -> String {
    match (&r.parent, &r.parent_call) {
        (None, _) => "-".into(),
        (Some((parent, _)), Some(_)) => format!("{} (task)", parent.short()),
        (Some((parent, _)), None) => format!("{} (fork)", parent.short()),
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
    match (&r.parent, &r.parent_call) {
        (Some((parent, seq)), Some(call)) => writeln!(
            out,
            "  sub-agent of {parent} (its task call {call}, at event {seq})"
        )?,
        (Some((parent, seq)), None) => writeln!(out, "  forked from {parent} at event {seq}")?,
        (None, _) => {}
    }
    writeln!(out)
}

/// The stored conversation as text, a line or two per event (the same for a
/// session and its export-import copy: no ids, no times).
struct Conversation<W: Write>(W);

impl<W: Write> Output for Conversation<W> {
    fn event(&mut self, event: &EventEnvelope) -> std::io::Result<()> {
        conversation_line(&mut self.0, event)
    }
}

/// One event as a line of the conversation.
fn conversation_line(out: &mut impl Write, event: &EventEnvelope) -> std::io::Result<()> {
    let seq = event.seq;
    match &event.message {
        AgentMessage::User(u) => writeln!(out, "[{seq}] user: {}", u.text),
        AgentMessage::Assistant(a) => {
            // The model's reasoning, on one short line of its own before
            // what it said.
            let thinking: String = a
                .content
                .iter()
                .filter_map(ContentBlock::as_thinking)
                .collect();
            if !thinking.trim().is_empty() {
                let line = thinking.split_whitespace().collect::<Vec<_>>().join(" ");
                writeln!(
                    out,
                    "[{seq}] thinking: {}",
                    agentbus_actors::text::ellipsize(&line, 200)
                )?;
            }
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
            SystemSubtype::SessionStarted | SystemSubtype::McpServerStatus => Ok(()),
            _ => writeln!(
                out,
                "[{seq}] {}",
                s.message.lines().next().unwrap_or_default()
            ),
        },
        AgentMessage::StreamEvent(_) | AgentMessage::ApprovalRequest(_) => Ok(()),
    }
}
