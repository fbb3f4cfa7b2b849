//! How the AgentLoop performs the session commands the core hands it
//! (`/new`, `/sessions`, `/resume`, `/fork`, `/save`, `/load`): each reads
//! or writes stored sessions and becomes the one `system` reply the user
//! sees. Failures become a notice naming what went wrong; nothing here
//! touches the session's state (the core does, with the reply).

use crate::bus::LifecycleTopic;
use crate::commands::sessions::SessionSummary;
use crate::commands::{self, fork, load, new, resume, save, sessions};
use crate::protocol::{LifecycleKind, SessionId, SystemEvent};
use crate::session::SessionCommand;
use crate::session_handle::SessionError;
use crate::store::{
    CreateSession, ExportSession, ForkSession, GetSession, ImportSession, ListSessions, NewSession,
    Owner, ResolveId, SessionDocument, SessionRecord, Store,
};
use kameo::actor::ActorRef;
use std::path::PathBuf;
use std::sync::Arc;

/// What a command may use (owned: a command runs on a task of its own, so
/// the session's actor stays free for an interrupt meanwhile).
pub struct CommandContext {
    pub store: ActorRef<Store>,
    /// Where new sessions (`/new`, `/fork`, `/load`) are announced.
    pub lifecycle: Arc<LifecycleTopic>,
    pub session_id: SessionId,
    pub workspace: PathBuf,
    /// The session's current model profile (a new session starts with it).
    pub model: String,
}

/// The summary `/sessions` and `/resume` show of a record.
pub fn summary(record: &SessionRecord) -> SessionSummary {
    SessionSummary {
        id: record.id.clone(),
        title: record.title.clone(),
        updated_at: record.updated_at,
        model: record.model.clone(),
        events: record.event_count,
        status: record.status.clone(),
    }
}

/// Copy session `id` (up to `at_seq`; `None`: every stored event) into a
/// new session, and announce it on the lifecycle topic.
pub async fn fork_session(
    store: &ActorRef<Store>,
    lifecycle: &LifecycleTopic,
    id: &SessionId,
    at_seq: Option<u64>,
) -> Result<SessionRecord, SessionError> {
    let record = store
        .ask(ForkSession {
            id: id.clone(),
            at_seq,
            new_id: SessionId::new(),
            owner: None,
        })
        .await?;
    lifecycle.announce(&record.id, LifecycleKind::Created);
    Ok(record)
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
    let store = &ctx.store;
    let text = |e: &dyn std::fmt::Display| e.to_string();
    match command {
        SessionCommand::New => {
            let id = SessionId::new();
            let new = NewSession {
                id: id.clone(),
                model: ctx.model.to_string(),
                workspace: ctx.workspace.display().to_string(),
            };
            store
                .ask(CreateSession {
                    new,
                    owner: Owner::current(),
                })
                .await
                .map_err(|e| text(&e))?;
            ctx.lifecycle.announce(&id, LifecycleKind::Created);
            Ok(new::created(&id))
        }
        SessionCommand::List => {
            let records = store
                .ask(ListSessions {
                    limit: Some(30),
                    after: None,
                })
                .await
                .map_err(|e| text(&e))?;
            let summaries: Vec<SessionSummary> = records.iter().map(summary).collect();
            Ok(sessions::listing(&summaries, &ctx.session_id.0))
        }
        SessionCommand::Resume { id } => {
            let id = store
                .ask(ResolveId { prefix: id })
                .await
                .map_err(|e| text(&e))?;
            let record = store
                .ask(GetSession { id: id.clone() })
                .await
                .map_err(|e| text(&e))?
                .ok_or_else(|| format!("session {id} disappeared"))?;
            Ok(resume::found(&summary(&record)))
        }
        SessionCommand::Fork { at_seq } => {
            let record = fork_session(store, &ctx.lifecycle, &ctx.session_id, at_seq)
                .await
                .map_err(|e| text(&e))?;
            Ok(fork::forked(
                &record.id,
                &ctx.session_id,
                record.forked_at(),
            ))
        }
        SessionCommand::Save { path } => {
            let document = store
                .ask(ExportSession {
                    id: ctx.session_id.clone(),
                })
                .await
                .map_err(|e| text(&e))?;
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
            let new_id = SessionId::new();
            store
                .ask(ImportSession {
                    document,
                    new_id: new_id.clone(),
                    owner: None,
                })
                .await
                .map_err(|e| text(&e))?;
            ctx.lifecycle.announce(&new_id, LifecycleKind::Created);
            Ok(load::loaded(&new_id, &path, events))
        }
    }
}
