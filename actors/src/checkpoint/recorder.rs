//! Recording a tool call's changes: before a call that can change files,
//! the versions of what it may touch are looked at and their bytes kept in
//! the store; after it, the same scope is looked at again and the paths
//! that differ become a [`Checkpoint`]. One `Recorder` per session (the
//! AgentLoop's), shared by its calls' tasks. A background command's
//! changes are looked at when its turn ends; a sub-agent's checkpoints
//! are kept under its parent's turn, so the parent's rewind of that turn
//! takes them back too.
//!
//! Never writes to the workspace and never fails a tool call: a look or a
//! store write that fails is logged and the call runs unrecorded.

use super::diff;
use super::scan::{self, Limits, Snapshot};
use super::stat_cache::StatCache;
use crate::protocol::SessionId;
use crate::protocol::checkpoint::CheckpointRef;
use crate::store::SessionStore;
use crate::store::checkpoint::{Checkpoint, FileChange, FileVersion};
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// Blobs are put in groups of about this many bytes.
const PUT_GROUP_BYTES: usize = 8 * 1024 * 1024;

/// Hashes the store was seen to hold are not asked about again for this
/// long: well inside the hour a blob marked used is kept
/// (`store::checkpoint::BLOB_GRACE`), so none is deleted while this
/// session counts on it.
const CONFIRMED_FOR: std::time::Duration = std::time::Duration::from_secs(20 * 60);

/// What a call may touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// These paths (relative to the workspace): a file tool's.
    Paths(Vec<String>),
    /// Anything in the workspace: a command's, an MCP tool's.
    Workspace,
}

/// What a call of `tool` with `input` may touch, if it can change files at
/// all. `writing_mcp`: the tool is an MCP tool marked as writing.
pub fn scope(
    tool: &str,
    input: &serde_json::Value,
    workspace: &std::path::Path,
    writing_mcp: bool,
) -> Option<Scope> {
    match tool {
        "write_file" | "edit_file" => {
            // The path as the permission rules see it (absolute, normal).
            let call = crate::permissions::CallView { tool, input };
            let env = crate::permissions::MatchEnv {
                workspace,
                home: workspace,
            };
            let rel = scan::relative(workspace, &call.path(&env)?)?;
            Some(Scope::Paths(vec![rel]))
        }
        "bash" => Some(Scope::Workspace),
        _ if writing_mcp => Some(Scope::Workspace),
        _ => None,
    }
}

/// A session's recorder of checkpoints.
pub struct Recorder {
    store: Arc<dyn SessionStore>,
    /// The session the checkpoints are kept under (a sub-agent's parent).
    session: SessionId,
    workspace: PathBuf,
    limits: Limits,
    /// The most bytes of blobs the session's checkpoints keep; older
    /// checkpoints are forgotten past it.
    max_session_bytes: u64,
    cache: Arc<StatCache>,
    /// The hashes the store holds (put, or found held) and since when the
    /// set is being kept.
    confirmed: std::sync::Mutex<(std::time::Instant, HashSet<String>)>,
    /// A sub-agent's: the parent's seq when it made the `task` call, which
    /// every checkpoint belongs to (so the parent's rewind of that turn
    /// takes the child's changes back too).
    parent_seq: Option<u64>,
}

/// The look before a call.
pub struct Before {
    scope: Scope,
    snapshot: Snapshot,
}

/// Why a look or its keeping failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("checkpoint: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("checkpoint: looking at the workspace failed: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("checkpoint: a look at the workspace panicked before")]
    Poisoned,
}

impl Recorder {
    /// A recorder of `session`'s checkpoints in `workspace`, whose looks
    /// share `cache` (the workspace's).
    pub fn new(
        store: Arc<dyn SessionStore>,
        session: SessionId,
        (workspace, cache): (PathBuf, Arc<StatCache>),
        limits: Limits,
        max_session_bytes: u64,
    ) -> Self {
        Recorder {
            store,
            session,
            workspace,
            limits,
            max_session_bytes,
            cache,
            confirmed: std::sync::Mutex::new((std::time::Instant::now(), HashSet::new())),
            parent_seq: None,
        }
    }

    /// Checkpoints kept under the parent's session at `seq` (a sub-agent's).
    pub fn for_parent_at(mut self, seq: u64) -> Self {
        self.parent_seq = Some(seq);
        self
    }

    /// The turn seq a checkpoint of this session's turn `own` is kept
    /// under.
    pub fn turn_seq(&self, own: u64) -> u64 {
        self.parent_seq.unwrap_or(own)
    }

    async fn look(&self, scope: &Scope) -> Result<Snapshot, RecordError> {
        let (root, limits, cache, scope) = (
            self.workspace.clone(),
            self.limits,
            self.cache.clone(),
            scope.clone(),
        );
        Ok(tokio::task::spawn_blocking(move || {
            let snapshot = match scope {
                Scope::Paths(paths) => scan::paths(&root, &paths, &cache),
                Scope::Workspace => scan::workspace(&root, &limits, &cache),
            };
            cache.save();
            snapshot
        })
        .await?)
    }

    /// Look at `scope` and keep the bytes of every version the store lacks.
    pub async fn before(&self, scope: Scope) -> Result<Before, RecordError> {
        let started = std::time::Instant::now();
        let mut snapshot = self.look(&scope).await?;
        let looked = started.elapsed();
        self.keep(&mut snapshot, None).await?;
        tracing::debug!(
            files = snapshot.files.len(),
            look_ms = looked.as_millis() as u64,
            keep_ms = (started.elapsed() - looked).as_millis() as u64,
            "checkpoint: looked before a call"
        );
        Ok(Before { scope, snapshot })
    }

    /// Keep the blobs of `snapshot` the store lacks (of `only` these paths,
    /// if given). A file changed since its look is read as it is now.
    async fn keep(
        &self,
        snapshot: &mut Snapshot,
        only: Option<&BTreeSet<String>>,
    ) -> Result<(), RecordError> {
        let wanted: Vec<(String, String)> = snapshot
            .files
            .iter()
            .filter(|(path, _)| only.is_none_or(|o| o.contains(*path)))
            .map(|(path, v)| (path.clone(), v.hash.clone()))
            .collect();
        let hashes: Vec<String> = {
            let mut confirmed = self.confirmed.lock().map_err(|_| RecordError::Poisoned)?;
            if confirmed.0.elapsed() > CONFIRMED_FOR {
                *confirmed = (std::time::Instant::now(), HashSet::new());
            }
            wanted
                .iter()
                .map(|(_, h)| h.clone())
                .filter(|h| !confirmed.1.contains(h))
                .collect::<HashSet<_>>()
                .into_iter()
                .collect()
        };
        if hashes.is_empty() {
            return Ok(());
        }
        let missing: HashSet<String> = self
            .store
            .missing_blobs(hashes.clone())
            .await?
            .into_iter()
            .collect();
        let mut todo: Vec<String> = wanted
            .into_iter()
            .filter(|(_, h)| missing.contains(h))
            .map(|(p, _)| p)
            .collect();
        let mut done: HashSet<String> = HashSet::new();
        while !todo.is_empty() {
            let root = self.workspace.clone();
            let mut group_bytes = 0usize;
            let mut group: Vec<String> = Vec::new();
            while let Some(path) = todo.pop() {
                group_bytes += snapshot.files.get(&path).map_or(0, |v| v.size as usize);
                group.push(path);
                if group_bytes >= PUT_GROUP_BYTES {
                    break;
                }
            }
            let read = tokio::task::spawn_blocking(move || {
                group
                    .into_iter()
                    .map(|path| {
                        let now = scan::read_now(&root, &path).ok().flatten();
                        (path, now)
                    })
                    .collect::<Vec<_>>()
            })
            .await?;
            let mut blobs = Vec::new();
            for (path, now) in read {
                match now {
                    Some((version, bytes)) => {
                        if done.insert(version.hash.clone()) {
                            blobs.push((version.hash.clone(), bytes));
                        }
                        snapshot.files.insert(path, version);
                    }
                    None => {
                        snapshot.files.remove(&path);
                    }
                }
            }
            if !blobs.is_empty() {
                self.store.put_blobs(blobs).await?;
            }
        }
        if let Ok(mut confirmed) = self.confirmed.lock() {
            confirmed
                .1
                .extend(hashes.into_iter().filter(|h| !missing.contains(h)));
            confirmed.1.extend(done);
        }
        Ok(())
    }

    /// Look at the call's scope again: what changed since `before` becomes
    /// a checkpoint of turn `turn_seq` (nothing changed: none, or only the
    /// limit a look hit, with no id and no files).
    pub async fn after(
        &self,
        before: Before,
        turn_seq: u64,
        call_id: Option<String>,
        tool: &str,
    ) -> Result<Option<CheckpointRef>, RecordError> {
        let mut now = self.look(&before.scope).await?;
        let limited = now.limited.clone().or(before.snapshot.limited.clone());
        let paths: BTreeSet<String> = before
            .snapshot
            .files
            .keys()
            .chain(now.files.keys())
            .filter(|p| before.snapshot.files.get(*p) != now.files.get(*p))
            .cloned()
            .collect();
        // Nothing changed: nothing kept, but a limit hit is still said.
        let only_limit = || {
            limited.clone().map(|limited| CheckpointRef {
                id: String::new(),
                files: Vec::new(),
                limited: Some(limited),
                session_bytes: 0,
            })
        };
        if paths.is_empty() {
            return Ok(only_limit());
        }
        self.keep(&mut now, Some(&paths)).await?;
        let changes: Vec<FileChange> = paths
            .iter()
            .map(|path| FileChange {
                path: path.clone(),
                before: before.snapshot.files.get(path).cloned(),
                after: now.files.get(path).cloned(),
            })
            .filter(|c| c.before != c.after)
            .collect();
        if changes.is_empty() {
            return Ok(only_limit());
        }
        let checkpoint = Checkpoint {
            id: uuid::Uuid::now_v7().to_string(),
            session_id: self.session.clone(),
            turn_seq: self.turn_seq(turn_seq),
            call_id,
            tool: tool.to_string(),
            created_at: chrono::Utc::now(),
            changes,
            undone: false,
        };
        let files = self.summarise(&checkpoint.changes).await?;
        let id = checkpoint.id.clone();
        self.store.add_checkpoint(checkpoint).await?;
        let session_bytes = self.trim().await?;
        Ok(Some(CheckpointRef {
            id,
            files,
            limited,
            session_bytes,
        }))
    }

    /// Each change with its line counts.
    async fn summarise(
        &self,
        changes: &[FileChange],
    ) -> Result<Vec<crate::protocol::checkpoint::ChangedFile>, RecordError> {
        let mut files = Vec::with_capacity(changes.len());
        for change in changes {
            let old = self.bytes(change.before.as_ref()).await?;
            let new = self.bytes(change.after.as_ref()).await?;
            files.push(diff::changed(&change.path, old.as_deref(), new.as_deref()));
        }
        Ok(files)
    }

    async fn bytes(&self, version: Option<&FileVersion>) -> Result<Option<Vec<u8>>, RecordError> {
        match version {
            Some(v) => Ok(self.store.blob(&v.hash).await?),
            None => Ok(None),
        }
    }

    /// Forget the oldest checkpoints while the session's keep more than
    /// `max_session_bytes` of blobs; the bytes they keep then.
    async fn trim(&self) -> Result<u64, RecordError> {
        let checkpoints = self.store.checkpoints(&self.session).await?;
        let mut sizes: Vec<(String, u64)> = Vec::new();
        let mut seen = HashSet::new();
        let mut total = 0u64;
        for checkpoint in checkpoints.iter().rev() {
            let mut own = 0u64;
            for version in checkpoint
                .changes
                .iter()
                .flat_map(|c| c.before.iter().chain(c.after.iter()))
            {
                if seen.insert(version.hash.clone()) {
                    own += version.size;
                }
            }
            total += own;
            sizes.push((checkpoint.id.clone(), total));
        }
        // Newest first with the running total: drop those past the limit,
        // but never the newest.
        let drop: Vec<String> = sizes
            .iter()
            .skip(1)
            .filter(|(_, running)| *running > self.max_session_bytes)
            .map(|(id, _)| id.clone())
            .collect();
        if !drop.is_empty() {
            tracing::info!(
                session = %self.session,
                dropped = drop.len(),
                "checkpoints over [checkpoints] max_session_bytes forgotten, oldest first"
            );
            self.store.drop_checkpoints(&self.session, drop).await?;
        }
        let kept = sizes
            .iter()
            .take_while(|(_, running)| *running <= self.max_session_bytes)
            .last()
            .or(sizes.first())
            .map_or(0, |(_, running)| *running);
        Ok(kept)
    }
}
