//! Permission rules: which tool calls run, ask first, or never run.
//!
//! Users write rules as they do for Claude Code, in `[permissions]` lists
//! `allow`, `ask` and `deny`: `bash`, `bash(git status)`,
//! `bash(npm test:*)`, `edit_file(src/**)`, `read_file(~/.ssh/**)`,
//! `web_fetch(domain:docs.rs)`, `mcp__github__*`. This module is the rule language and its evaluation,
//! and nothing else: a rule parses into data ([`Rule`]), three lists of them
//! ([`Rules`]) decide a call ([`Rules::evaluate`] gives a [`Decision`]
//! naming the rule), and [`Rule::for_call`] is the rule an "allow always"
//! answer adds. What the session does with a decision (and with
//! [`Decision::NoRule`], which its mode settles) lives elsewhere.
//!
//! It is pure, and must stay so: no I/O of any kind. It does not touch the
//! file system — paths are compared lexically, never canonicalised, and
//! symlinks are checked later, when a tool opens the file — and it reads no
//! environment: the workspace and the home directory are given
//! ([`MatchEnv`]). So it can be tested exhaustively and called anywhere,
//! the pure session core included.
//!
//! Shell commands are parsed with `brush-parser`, a maintained bash parser
//! (the brush shell's), rather than split by hand: a compound command is
//! allowed only when every simple command in it is, and anything the walk
//! cannot vouch for never matches an allow rule (`shell` says what).
//!
//! - `rule.rs` — the syntax, the canonical text, serde.
//! - `word.rs` — one shell word: quotes removed, literal or expanded.
//! - `shell.rs` — a command line split into simple commands.
//! - `path.rs` — paths resolved and normalised, globs made absolute.
//! - `domain.rs` — `web_fetch(domain:HOST)`: a call's host and the rules.
//! - `call.rs` — the call and its surroundings, as the matcher is told.
//! - `evaluate.rs` — deny, then ask, then allow.
//! - `suggest.rs` — the rule for "allow always".

mod call;
mod domain;
mod evaluate;
mod path;
mod rule;
mod shell;
mod suggest;
mod word;

#[cfg(test)]
mod tests;

pub use call::{CallView, MatchEnv};
pub use evaluate::{Decision, Rules};
/// Lexical path normalising, shared with the tools' path confinement.
pub(crate) use path::normalize;
pub use rule::{Rule, RuleError};
