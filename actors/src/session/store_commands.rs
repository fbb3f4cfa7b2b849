//! How the AgentLoop performs the session commands the core hands it
//! (`/new`, `/sessions`, `/resume`, `/fork`, `/save`, `/load`): each reads
//! or writes stored sessions and becomes the one `system` reply the user
//! sees. Failures become a notice naming what went wrong; nothing here
//! touches the session's state (the core does, with the reply).

use crate::protocol::system::SessionSummary;
use crate::protocol::{SessionId, SystemEvent};
use crate::session::core::SessionCommand;
use crate::session::core::commands::{self, fork, load, new, resume, save, sessions};
use crate::store::{ListPage, NewSession, SessionDocument, SessionRecord};
use crate::stored_sessions::StoredSessions;
use std::path::PathBuf;

/// What a command may use (owned: a command runs on a task of its own, so
/// the session's actor stays free for an interrupt meanwhile).
pub struct CommandContext {
    pub stored: StoredSessions,
    pub session_id: SessionId,
    pub workspace: PathBuf,
    /// The session's current model profile (a new session starts with it).
    pub model: String,
}

/// The summary `/sessions` and `/resume` show of a record.
fn summary(record: &SessionRecord) -> SessionSummary {
    SessionSummary {
        id: record.id.clone(),
        title: record.title.clone(),
        updated_at: record.updated_at,
        model: record.model.clone(),
        events: record.event_count,
        status: record.status.clone(),
    }
}

/// Perform `command`; the reply is what the user sees.
pub async fn perform(command: SessionCommand, ctx: CommandContext) -> SystemEvent {
    let name = match &command {
        SessionCommand::New => "new",
        SessionCommand::List => "sessions",
        SessionCommand::Resume { .. } => "resume",
        SessionCommand::Fork { .. } => "fork",
        SessionCommand::Save { .. } => "save",
        SessionCommand::Load { .. } => "load",
    };
    match run(command, &ctx).await {
        Ok(reply) => reply,
        Err(error) => commands::failed(name, error),
    }
}

async fn run(command: SessionCommand, ctx: &CommandContext) -> Result<SystemEvent, String> {
    let stored = &ctx.stored;
    let text = |e: crate::session::SessionError| e.to_string();
    match command {
        SessionCommand::New => {
            let new = NewSession {
                id: SessionId::new(),
                model: ctx.model.to_string(),
                workspace: ctx.workspace.display().to_string(),
            };
            let record = stored.create(new, None).await.map_err(text)?;
            Ok(new::created(&record.id))
        }
        SessionCommand::List => {
            let page = ListPage {
                limit: Some(30),
                after: None,
            };
            let records = stored.list(page).await.map_err(text)?;
            let summaries: Vec<SessionSummary> = records.iter().map(summary).collect();
            Ok(sessions::listing(&summaries, &ctx.session_id.0))
        }
        SessionCommand::Resume { id } => {
            let id = stored.resolve(&id).await.map_err(text)?;
            let record = stored
                .get(&id)
                .await
                .map_err(text)?
                .ok_or_else(|| format!("session {id} disappeared"))?;
            Ok(resume::found(&summary(&record)))
        }
        SessionCommand::Fork { at_seq } => {
            let record = stored.fork(&ctx.session_id, at_seq).await.map_err(text)?;
            Ok(fork::forked(
                &record.id,
                &ctx.session_id,
                record.forked_at(),
            ))
        }
        SessionCommand::Save { path } => {
            let document = stored.export(&ctx.session_id).await.map_err(text)?;
            let target = ctx.workspace.join(&path);
            tokio::fs::write(&target, document.to_json_pretty())
                .await
                .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
            Ok(save::saved(&path, document.events.len()))
        }
        SessionCommand::Load { path } => {
            let source = ctx.workspace.join(&path);
            let text_in = tokio::fs::read_to_string(&source)
                .await
                .map_err(|e| format!("cannot read {}: {e}", source.display()))?;
            let document = SessionDocument::from_json(&text_in)
                .map_err(|e| format!("{}: {e}", source.display()))?;
            let events = document.events.len();
            let record = stored.import(document).await.map_err(text)?;
            Ok(load::loaded(&record.id, &path, events))
        }
    }
}
