//! Checkpoints of stored sessions as a service: what each turn changed,
//! rewinding a session's files and conversation to before a turn, `/undo`,
//! and collecting blobs no checkpoint needs.
//!
//! The one implementation behind `/rewind` and `/undo`, the HTTP API and
//! `agentbus sessions rewind|gc`. The files are the session's workspace as
//! stored; the conversation side of a rewind is a fork, as `/fork` makes.
//! Never called while the session runs a turn (its callers see to that: the
//! slash commands wait in the session's queue, the API refuses a busy
//! session).

use super::stored::StoredSessions;
use crate::checkpoint::rewind::{self, RewindError};
use crate::protocol::SessionId;
use crate::protocol::checkpoint::{RewindMode, RewindReport, TurnChanges};
use crate::session::SessionError;
use crate::store::checkpoint::{CheckpointUsage, Collected};
use std::path::PathBuf;

use crate::store::checkpoint::BLOB_GRACE;

/// How a rewind is done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewindOptions {
    pub mode: RewindMode,
    /// Only say what would happen.
    pub preview: bool,
    /// Overwrite files changed since by someone else.
    pub overwrite: bool,
}

impl StoredSessions {
    async fn workspace_and_events(
        &self,
        id: &SessionId,
    ) -> Result<(PathBuf, Vec<crate::protocol::EventEnvelope>), SessionError> {
        let record = self
            .get(id)
            .await?
            .ok_or_else(|| crate::store::StoreError::NotFound { id: id.to_string() })?;
        let events = self.events(id, 0, None).await?;
        Ok((PathBuf::from(record.workspace), events))
    }

    /// Session `id`'s user turns, each with what it changed in the
    /// workspace, oldest first.
    pub async fn changes(&self, id: &SessionId) -> Result<Vec<TurnChanges>, SessionError> {
        let (_, events) = self.workspace_and_events(id).await?;
        Ok(rewind::turns(self.store().as_ref(), id, &events).await?)
    }

    /// Rewind session `id` to before its turn `seq` (the seq of the turn's
    /// `user` event): its files (modes `both`, `code`) and its
    /// conversation (`both`, `conversation`: a fork before the turn, which
    /// the report names).
    pub async fn rewind(
        &self,
        id: &SessionId,
        seq: u64,
        options: RewindOptions,
    ) -> Result<RewindReport, SessionError> {
        let (workspace, events) = self.workspace_and_events(id).await?;
        let store = self.store().as_ref();
        let mut report = if options.mode == RewindMode::Conversation {
            // The files stay: nothing to look at but the turn itself.
            let Some((_, prompt)) = rewind::user_turns(&events)
                .into_iter()
                .find(|(s, _)| *s == seq)
            else {
                return Err(RewindError::NotATurn { seq }.into());
            };
            RewindReport {
                seq,
                prompt,
                preview: options.preview,
                ..RewindReport::default()
            }
        } else {
            rewind::files(
                store,
                id,
                &workspace,
                seq,
                &events,
                !options.preview,
                options.overwrite,
            )
            .await?
        };
        report.mode = options.mode;
        if options.mode == RewindMode::Conversation {
            report.cannot_restore.clear();
        }
        if options.mode != RewindMode::Code && !options.preview {
            // The conversation taken back is a fork of the session's creator.
            let by = self.creator_of(id).await?;
            let record = self.fork(id, Some(seq.saturating_sub(1)), by).await?;
            report.forked = Some(record.id);
        }
        Ok(report)
    }

    /// Take back the file changes of session `id`'s last turn that changed
    /// files and is not taken back already (preview: only say what would
    /// happen).
    pub async fn undo(
        &self,
        id: &SessionId,
        preview: bool,
        overwrite: bool,
    ) -> Result<RewindReport, SessionError> {
        let turns = self.changes(id).await?;
        let Some(last) = turns
            .iter()
            .rev()
            .find(|t| !t.files.is_empty() && !t.undone)
        else {
            return Err(RewindError::NothingToUndo.into());
        };
        let options = RewindOptions {
            mode: RewindMode::Code,
            preview,
            overwrite,
        };
        self.rewind(id, last.seq, options).await
    }

    /// Delete the blobs no checkpoint needs and nobody used for an hour.
    pub async fn collect_blobs(&self) -> Result<Collected, SessionError> {
        Ok(self
            .store()
            .collect_blobs(chrono::Utc::now() - BLOB_GRACE)
            .await?)
    }

    /// What the store's checkpoints hold.
    pub async fn checkpoint_usage(&self) -> Result<CheckpointUsage, SessionError> {
        Ok(self.store().checkpoint_usage().await?)
    }
}
