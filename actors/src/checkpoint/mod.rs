//! Checkpoints: what a session's tool calls changed in its workspace, kept
//! so it can be taken back.
//!
//! Exists because forking a conversation does not take back what the agent
//! did to the files. Before a tool call that can change files (`write_file`
//! and `edit_file`: the path named; `bash` and MCP tools marked as writing:
//! the whole workspace as git sees it), the versions of what it may touch
//! are kept in the session store as content-addressed blobs; after it, what
//! changed becomes a checkpoint, whose id and changed files are a field of
//! the call's `tool_result` event. A rewind returns the files a session
//! changed to their versions before a turn, refusing to overwrite a file
//! changed since by someone else.
//!
//! - [`scan`]: looking at the workspace (versions, the limits).
//! - [`stat_cache`]: what looks remember of each file's metadata, per
//!   workspace, kept between processes.
//! - [`recorder`]: a session's checkpoints, taken around its tool calls.
//! - [`rewind`]: what each turn changed, and taking it back.
//! - [`diff`]: line counts and unified diffs, for people.
//!
//! Never touches the user's `.git`, never writes outside the workspace
//! (no symlink is followed out), never fails a tool call.

pub mod diff;
pub mod recorder;
pub mod rewind;
pub mod scan;
pub mod stat_cache;

pub use recorder::{Recorder, Scope};
pub use scan::Limits;
pub use stat_cache::StatCaches;
