//! `agentbus sessions list|show|export|import|fork|delete|rewind|undo|gc`:
//! the stored sessions, straight from the store (no model, no MCP servers
//! started). `list` shows the sessions of the workspace (`--workspace`,
//! else the current directory); `--all` every workspace's, with a
//! WORKSPACE column. `rewind`, `undo` and `gc` are the checkpoints'
//! ([`rewind`](super::rewind)).

use super::rewind;
use crate::cli::SessionsCommand;
use crate::frontend::output::Output;
use crate::frontend::output::json::JsonLines;
use agentbus_engine::protocol::{AgentMessage, ContentBlock, EventEnvelope, SystemSubtype};
use agentbus_engine::runtime::{RewindOptions, SessionDocument, SessionRecord};
use agentbus_engine::{Settings, StoredSessions};
use anyhow::Context as _;
use std::io::Write;
use std::process::ExitCode;

pub async fn run(settings: Settings, command: SessionsCommand) -> anyhow::Result<ExitCode> {
    let stored = StoredSessions::open(&settings).await?;
    let workspace = settings.workspace.display().to_string();
    let result = dispatch(&stored, &workspace, &settings.data_dir, command).await;
    stored.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

async fn dispatch(
    stored: &StoredSessions,
    workspace: &str,
    data_dir: &std::path::Path,
    command: SessionsCommand,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout();
    match command {
        SessionsCommand::List { json, all } => {
            let every = stored.list(Default::default()).await?;
            let total = every.len();
            let records: Vec<SessionRecord> = if all {
                every
            } else {
                every
                    .into_iter()
                    .filter(|r| r.workspace == workspace)
                    .collect()
            };
            if json {
                serde_json::to_writer_pretty(&mut out, &records)?;
                writeln!(out)?;
            } else if records.is_empty() && (all || total == 0) {
                writeln!(out, "No stored sessions.")?;
            } else if records.is_empty() {
                writeln!(
                    out,
                    "No stored sessions in {workspace}; `agentbus sessions list --all` lists every workspace's ({}).",
                    agentbus_engine::text::count(total as u64, "session")
                )?;
            } else {
                write_list(&mut out, &records, all)?;
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
                        "Exported session {id} ({}) to {}.",
                        agentbus_engine::text::count(document.events.len() as u64, "event"),
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
                "Imported {} from {} as session {}.",
                agentbus_engine::text::count(events as u64, "event"),
                file.display(),
                record.id
            );
        }
        SessionsCommand::Fork { id, at } => {
            let id = stored.resolve(&id).await?;
            let record = stored.fork(&id, at, None).await?;
            writeln!(out, "{}", record.id)?;
            eprintln!(
                "Forked {id} at event {} into session {}.",
                record.forked_at(),
                record.id
            );
        }
        SessionsCommand::Delete { id } => {
            let id = stored.resolve(&id).await?;
            stored.delete(&id, None).await?;
            eprintln!("Deleted session {id}.");
        }
        SessionsCommand::Rewind {
            id,
            seq,
            mode,
            force,
            preview,
            json,
        } => {
            let id = stored.resolve(&id).await?;
            match seq {
                None => rewind::list(&mut out, stored, &id, json).await?,
                Some(seq) => {
                    let options = RewindOptions {
                        mode,
                        preview,
                        overwrite: force,
                    };
                    rewind::rewind(&mut out, stored, data_dir, &id, seq, options, json).await?
                }
            }
        }
        SessionsCommand::Undo {
            id,
            force,
            preview,
            json,
        } => {
            let id = stored.resolve(&id).await?;
            rewind::undo(&mut out, stored, data_dir, &id, preview, force, json).await?;
        }
        SessionsCommand::Gc { json } => rewind::gc(&mut out, stored, json).await?,
    }
    out.flush()?;
    Ok(())
}

/// The list as a table; with `workspaces`, a WORKSPACE column before the
/// title (`~` for the home directory).
fn write_list(
    out: &mut impl Write,
    records: &[SessionRecord],
    workspaces: bool,
) -> std::io::Result<()> {
    let home = agentbus_engine::settings::home_dir().map(|h| h.display().to_string());
    let place = |r: &SessionRecord| match &home {
        Some(home) if r.workspace == *home => "~".to_string(),
        Some(home) => match r.workspace.strip_prefix(home.as_str()) {
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => r.workspace.clone(),
        },
        None => r.workspace.clone(),
    };
    let width = records
        .iter()
        .map(|r| place(r).chars().count())
        .max()
        .unwrap_or(0)
        .max("WORKSPACE".len());
    let workspace_header = if workspaces {
        format!("{:<width$}  ", "WORKSPACE")
    } else {
        String::new()
    };
    writeln!(
        out,
        "{:<18}  {:<16}  {:>6}  {:<6}  {:<25}  {workspace_header}TITLE",
        "ID", "UPDATED", "EVENTS", "STATUS", "PARENT"
    )?;
    for r in records {
        let workspace = if workspaces {
            format!("{:<width$}  ", place(r))
        } else {
            String::new()
        };
        writeln!(
            out,
            "{:<18}  {:<16}  {:>6}  {:<6}  {:<25}  {workspace}{}",
            r.id.short(),
            r.updated_at.format("%Y-%m-%d %H:%M"),
            r.event_count,
            status(r),
            parent(r),
            r.title.as_deref().unwrap_or("(untitled)")
        )?;
    }
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
        "  model {} · workspace {} · {} · {}",
        r.model,
        r.workspace,
        agentbus_engine::text::count(r.event_count, "event"),
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
                    agentbus_engine::text::ellipsize(&line, 200)
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
            "[{seq}] result: {} ({}, {} in / {} out tokens){}",
            r.stop_reason.as_str(),
            agentbus_engine::text::count(r.steps, "step"),
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
