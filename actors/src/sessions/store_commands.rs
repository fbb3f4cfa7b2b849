//! The session commands the core hands its AgentLoop (`/new`,
//! `/sessions`, `/resume`, `/fork`, `/rewind`, `/undo`, `/save`, `/load`), performed on the
//! stored sessions: [`StoredSessions`] is the AgentLoop's
//! [`SessionCommands`]. Each becomes the one `system` reply the user sees.
//! Failures become a notice naming what went wrong; nothing here touches
//! the session's state (the core does, with the reply).

use super::checkpoints::RewindOptions;
use super::stored::StoredSessions;
use crate::protocol::system::SessionSummary;
use crate::protocol::{SessionId, SystemEvent};
use crate::session::SessionError;
use crate::session::actor::{CommandContext, SessionCommands};
use crate::session::core::SessionCommand;
use crate::session::core::commands::{self, fork, load, new, resume, rewind, save, sessions};
use crate::store::{ListPage, NewSession, SessionDocument, SessionRecord};
use futures::future::BoxFuture;

impl SessionCommands for StoredSessions {
    fn perform(
        &self,
        command: SessionCommand,
        context: CommandContext,
    ) -> BoxFuture<'static, SystemEvent> {
        let stored = self.clone();
        Box::pin(async move { perform(command, &stored, &context).await })
    }
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
async fn perform(
    command: SessionCommand,
    stored: &StoredSessions,
    ctx: &CommandContext,
) -> SystemEvent {
    let name = command.name();
    match run(command, stored, ctx).await {
        Ok(reply) => reply,
        Err(error) => commands::failed(name, error),
    }
}

async fn run(
    command: SessionCommand,
    stored: &StoredSessions,
    ctx: &CommandContext,
) -> Result<SystemEvent, String> {
    let text = |e: SessionError| e.to_string();
    match command {
        SessionCommand::New => {
            // Made from a session, on its creator's behalf.
            let created_by = stored.creator_of(&ctx.session_id).await.map_err(text)?;
            let new = NewSession {
                id: SessionId::new(),
                model: ctx.model.to_string(),
                workspace: ctx.workspace.display().to_string(),
                parent: None,
                parent_call: None,
                created_by,
            };
            let record = stored.create(new, None).await.map_err(text)?;
            Ok(new::created(&record.id))
        }
        SessionCommand::List => {
            let page = ListPage {
                limit: Some(30),
                after: None,
                visible_to: None,
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
            // The fork belongs to the session's creator, as `/new`'s does.
            let by = stored.creator_of(&ctx.session_id).await.map_err(text)?;
            let record = stored
                .fork(&ctx.session_id, at_seq, by)
                .await
                .map_err(text)?;
            Ok(fork::forked(
                &record.id,
                &ctx.session_id,
                record.forked_at(),
            ))
        }
        SessionCommand::Rewind { seq: None, .. } => {
            let turns = stored.changes(&ctx.session_id).await.map_err(text)?;
            Ok(rewind::listed(turns))
        }
        SessionCommand::Rewind {
            seq: Some(seq),
            mode,
            overwrite,
        } => {
            let options = RewindOptions {
                mode,
                preview: false,
                overwrite,
            };
            let report = stored
                .rewind(&ctx.session_id, seq, options)
                .await
                .map_err(text)?;
            Ok(rewind::rewound(report))
        }
        SessionCommand::Undo { overwrite } => {
            let report = stored
                .undo(&ctx.session_id, false, overwrite)
                .await
                .map_err(text)?;
            Ok(rewind::rewound(report))
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
