//! What front ends send into a session.
//!
//! Queries and control commands share ONE first-in-first-out queue per
//! session: a control command waits behind the queries queued before it
//! (`/clear` sent during a turn applies after that turn). `Interrupt` is the
//! one exception: it bypasses the queue and cancels the running turn at once.

use serde::{Deserialize, Serialize};

/// The id a session gives each accepted input (query or control command).
/// Events caused by the input carry it as the envelope's `turn_id`.
pub type InputId = u64;

/// Everything a front end can send to a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionInput {
    /// A user message. Text starting with `/` is parsed as a slash command
    /// before it is queued (by the session, which knows its custom
    /// commands too; `runtime::parse_command` is the same parser for the
    /// built-in ones). `images` go with it (see [`Image`](super::Image)).
    Query {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<super::Image>,
        /// The name of the API token that sent it (`agentbus serve` sets
        /// it; a front end in the same process leaves it out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// A typed control command, queued like a query.
    Control {
        #[serde(flatten)]
        command: ControlCommand,
        /// As for `Query`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// Cancel the running turn now: the model stream and running tools stop,
    /// the turn ends with `stop_reason: cancelled`. Queued inputs stay queued.
    Interrupt,
    /// Answer an `approval_request`. Like `Interrupt`, it bypasses the
    /// queue; the first answer to a request wins.
    Approval {
        request_id: String,
        #[serde(flatten)]
        decision: super::ApprovalDecision,
    },
}

/// A queued input: what the session's FIFO holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UserInput {
    /// A query for the model (text starting with `/` is a slash command),
    /// with the images attached to it.
    Query {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<super::Image>,
        /// The name of the API token that sent it, if one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// A query for the model taken as written, never read as a slash
    /// command: what a model wrote for another session (a `task` call's
    /// prompt for its child).
    Prompt { text: String },
    /// A control command.
    Control {
        command: ControlCommand,
        /// The name of the API token that sent it, if one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
}

/// Control commands. Each one answers with exactly one `system` event whose
/// envelope carries the command's input id as `turn_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum ControlCommand {
    /// List the slash commands.
    Help,
    /// The front end that sent it should exit; the session is untouched.
    Quit,
    /// Empty the history back to the system prompt; usage totals stay.
    Clear,
    /// Start a new session (the current one stays stored); front ends switch
    /// to it.
    NewConversation,
    /// List the stored sessions.
    ListSessions,
    /// Switch to a stored session (id or unique prefix).
    Resume { id: String },
    /// Copy this session (up to `at_seq`, default: now) into a new session
    /// and switch to it.
    Fork { at_seq: Option<u64> },
    /// Export this session to a file (relative paths: the workspace).
    Save { path: String },
    /// Import a session file as a new session and switch to it.
    Load { path: String },
    /// Switch to another named model profile; the history is kept.
    SwitchModel { name: String },
    /// Show the current model profile.
    ShowModel,
    /// List the configured model profiles.
    ListModels,
    /// List the tools the model can call, with their origin.
    ListTools,
    /// Show token usage for this session.
    Usage,
    /// Show where the context budget goes.
    Context,
    /// Summarise the conversation so far into the model's view now;
    /// `focus` says what the summary should keep above all.
    Compact { focus: Option<String> },
    /// Show what the session is doing: a summary, or with `full` the
    /// whole state as JSON (secrets redacted either way).
    Debug {
        #[serde(default)]
        full: bool,
    },
    /// Switch the permission mode (applies to the next tool call).
    SetMode { mode: super::PermissionMode },
    /// Show the permission mode and the rules in force.
    ShowMode,
    /// Switch to another named agent (its prompt, tools, model and
    /// permission mode apply from the next model call); the history is
    /// kept.
    SwitchAgent { name: String },
    /// List the named agents and show the active one.
    ListAgents,
    /// Ask the model to look at the workspace and write its `AGENTS.md`
    /// (or improve the one there). Unlike the other commands it answers
    /// with a turn, not a `system` event: a `user` event carrying the
    /// request, the model's work, then a `result`.
    Init,
    /// `/rewind`: without `seq`, list the user turns and what each changed;
    /// with it, take back what the turns from `seq` (a `user` event's seq)
    /// on did — the files, the conversation (a fork to switch to) or both.
    /// A file changed since by someone else is left alone unless
    /// `overwrite`.
    Rewind {
        #[serde(default)]
        seq: Option<u64>,
        /// `None`: not named (`both`, unless the front end says otherwise:
        /// an editor takes back the code alone).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<super::checkpoint::RewindMode>,
        #[serde(default)]
        overwrite: bool,
    },
    /// `/undo`: take back the file changes of the last turn that changed
    /// files (not taken back already); the conversation stays.
    Undo {
        #[serde(default)]
        overwrite: bool,
    },
    /// Run the session's custom command `name` (a Markdown file of the
    /// workspace's or the user's `.agentbus/commands` or `.claude/commands`)
    /// with `arguments`, what followed its name. Like `Init` it answers with
    /// a turn: a `user` event whose `text` is the command line and whose
    /// `prompt` is what the model receives, then a `result`; an unknown
    /// name answers with a notice.
    Custom {
        name: String,
        #[serde(default)]
        arguments: String,
    },
}

impl ControlCommand {
    /// Whether its answer may move the front end to another session (the
    /// answer's `data.switch_to`): a front end reading ahead waits for it.
    pub fn switches_session(&self) -> bool {
        matches!(
            self,
            ControlCommand::NewConversation
                | ControlCommand::Resume { .. }
                | ControlCommand::Fork { .. }
                | ControlCommand::Load { .. }
        ) || matches!(
            self,
            ControlCommand::Rewind { seq: Some(_), mode, .. }
                if *mode != Some(super::checkpoint::RewindMode::Code)
        )
    }

    /// The command's name as the user types it after `/`.
    pub fn name(&self) -> &str {
        match self {
            ControlCommand::Help => "help",
            ControlCommand::Quit => "quit",
            ControlCommand::Clear => "clear",
            ControlCommand::NewConversation => "new",
            ControlCommand::SwitchModel { .. } | ControlCommand::ShowModel => "model",
            ControlCommand::ListModels => "models",
            ControlCommand::ListTools => "tools",
            ControlCommand::Usage => "usage",
            ControlCommand::Context => "context",
            ControlCommand::Compact { .. } => "compact",
            ControlCommand::Debug { .. } => "debug",
            ControlCommand::ListSessions => "sessions",
            ControlCommand::Resume { .. } => "resume",
            ControlCommand::Fork { .. } => "fork",
            ControlCommand::Save { .. } => "save",
            ControlCommand::Load { .. } => "load",
            ControlCommand::SetMode { .. } | ControlCommand::ShowMode => "mode",
            ControlCommand::Init => "init",
            ControlCommand::SwitchAgent { .. } | ControlCommand::ListAgents => "agent",
            ControlCommand::Rewind { .. } => "rewind",
            ControlCommand::Undo { .. } => "undo",
            ControlCommand::Custom { name, .. } => name,
        }
    }
}
