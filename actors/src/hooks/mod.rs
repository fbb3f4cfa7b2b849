//! Hooks: the user's own programs run at points of a session's life — a
//! tool call about to run or just run, a query submitted, a turn ending, a
//! session starting or ending — compatible with Claude Code's hook files.
//!
//! - [`files`] reads the `hooks` block of `~/.claude/settings.json`, the
//!   workspace's `.claude/settings.json` and `.claude/settings.local.json`,
//!   and `[hooks]` of agentbus's configuration, into a
//!   [`HookSet`](crate::protocol::hook::HookSet); the workspace's hooks
//!   only once the user trusted that exact set ([`trust`]).
//! - [`run`] runs the hooks of one event — a command with the event as
//!   JSON on stdin, or an HTTP POST of the same JSON — each with its
//!   timeout, in the secret-scrubbed environment of the tools' commands,
//!   and folds what they answered ([`answer`] reads one answer).
//!
//! Which hooks match an event is the session core's rule
//! (`session::core::hooks`), so that it knows without I/O whether to wait;
//! what an answer does to a session is the core's too. This module never
//! decides anything about a session and never panics on what a hook
//! prints: a hook that fails is a report, never a crash.
//!
//! Four events are waited for, as the core's `RunHook` effect:
//! `SessionStart`, `UserPromptSubmit`, `PreToolUse` and `Stop`. The
//! AgentLoop runs the others beside the session, waiting for none: after
//! a tool call (`PostToolUse`, what it says joins the result), on an
//! approval request, around a compaction, and at `SessionEnd`.

pub mod answer;
pub mod files;
pub mod run;
pub mod trust;
