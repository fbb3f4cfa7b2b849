//! `system` events: what they are about ([`SystemSubtype`]) and what their
//! `data` holds, as one typed payload per subtype.
//!
//! On the wire a `system` event is `{"type": "system", "subtype", "message",
//! "data"?}`; `data` is plain JSON so that scripts can read it. Inside
//! agentbus it is written and read only through the payload types below
//! ([`SystemEvent::new`], [`SystemEvent::payload`]), so the writer and every
//! reader agree on each field by construction: a misspelt key does not
//! compile.

use super::context::{Compacted, ContextReport, ContextUsage};
use super::{McpServerStatus, ModelInfo, SessionId, Usage};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of `system` event this is. Front ends show `message`; scripts may
/// read `data`, whose shape each variant documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemSubtype {
    /// The session started, or was loaded again (`data.resumed`).
    /// `data`: [`SessionStarted`].
    SessionStarted,
    /// `/clear` emptied the history.
    Cleared,
    /// `/new` made a new session. `data`: [`NewConversation`] — front ends
    /// switch to it.
    NewConversation,
    /// `/sessions`. `data`: [`SessionList`].
    Sessions,
    /// `/resume ID` found the session. `data`: [`Resumed`].
    Resumed,
    /// `/fork` copied this session. `data`: [`Forked`].
    Forked,
    /// `/save PATH` wrote an export. `data`: [`Saved`].
    Saved,
    /// `/load PATH` imported a session. `data`: [`Loaded`].
    Loaded,
    /// `/model NAME` switched the profile. `data`: [`ModelSwitched`].
    ModelSwitched,
    /// `/model` without a name. `data`: [`CurrentModel`].
    Model,
    /// `/models`. `data`: [`ModelList`].
    Models,
    /// `/tools`. `data`: [`ToolListing`].
    Tools,
    /// `/usage`. `data`: [`UsageReport`].
    Usage,
    /// `/debug`. `data`: [`DebugState`].
    Debug,
    /// `/help`. `data`: [`CommandList`].
    Help,
    /// `/quit`: the front end that sent it should exit.
    Quit,
    /// A model call failed and will be tried again; anything streamed since
    /// the last `assistant` event was discarded. `data`: [`Retrying`].
    Retrying,
    /// An MCP server changed state (also sent once per server when a
    /// session starts). `data`: [`McpServerChanged`].
    McpServerStatus,
    /// The session's first model call waits for MCP servers still on their
    /// first start, so that the model is offered their tools. Each server's
    /// `mcp_server_status` (ready, restarting, failed) ends its part of the
    /// wait; a `notice` says when the wait ran out first. Front ends show
    /// it as progress. `data`: [`McpWaiting`].
    McpWaiting,
    /// A summarising call starts (`/compact`, before a turn's model call,
    /// or again quoting less after it was too long itself). The `compacted`
    /// event, or a notice that it failed, follows.
    Compacting,
    /// A summary replaced the older part of the conversation in the
    /// model's view (`/compact`, or automatically). Persisted and folded on
    /// load. `data`: [`Compacted`].
    Compacted,
    /// `/context`: where the context budget goes. `data`: [`ContextReport`].
    Context,
    /// An approval request was settled (allowed, rejected, timed out,
    /// cancelled). `data`: [`ApprovalResolved`](super::ApprovalResolved).
    ApprovalResolved,
    /// The permission mode (`/mode`, and at session start when it is not
    /// `default`). `data`: [`ModeChanged`](super::ModeChanged).
    Mode,
    /// The session switched agents (`/agent NAME`). Persisted and folded
    /// on load. `data`: [`AgentSwitched`](super::AgentSwitched).
    Agent,
    /// `/agent` without a name: the agents and the active one. `data`:
    /// [`AgentList`](super::AgentList).
    Agents,
    /// A `task` call started a child session. `data`:
    /// [`SubagentStarted`](super::SubagentStarted).
    SubagentStarted,
    /// A child session of a `task` call ended. `data`:
    /// [`SubagentFinished`](super::SubagentFinished).
    SubagentFinished,
    /// What a query took along to the model, once read or run: the files
    /// and directories its `@` mentions named, or the output of the
    /// `!command` it was. Follows the query's `user` event (which keeps the
    /// text as typed); the model reads both as one message. Persisted and
    /// folded on load. `data`: [`Attachments`].
    Attached,
    /// A node of a cluster took the session over (claimed it with a new
    /// epoch, e.g. adopting it from a node that died): the first event of
    /// the new owner, whose seqs continue above every seq the old owner may
    /// have shown (a jump, not a loss: deltas are never stored). Persisted.
    /// `data`: [`OwnerChanged`].
    OwnerChanged,
    /// A hook ran (`hooks` in `.claude/settings.json` or `[hooks]`): which
    /// event, what ran, how long it took and what it decided. Persisted.
    /// `data`: [`HookRan`](super::hook::HookRan).
    Hook,
    /// A `Stop` hook kept the turn going: the model reads its reason as a
    /// new message. Persisted and folded into the history on load.
    /// `data`: [`HookContinued`](super::hook::HookContinued).
    HookContinued,
    /// The model's plan changed (a `todo_write` call): the whole checklist
    /// as it now stands, replacing the one before (empty: no plan, e.g.
    /// after `/clear`). Persisted and folded on load. Front ends show it
    /// as a checklist. `data`: [`Plan`](super::Plan).
    Plan,
    /// `/rewind` without a turn: the session's user turns and what each
    /// changed in the workspace. `data`:
    /// [`RewindList`](super::checkpoint::RewindList).
    Rewinds,
    /// `/rewind SEQ` or `/undo` was done: each file's action and diff,
    /// what cannot be taken back, and (modes `both`, `conversation`) the
    /// fork to switch to. `data`: [`Rewound`](super::checkpoint::Rewound).
    Rewound,
    /// Anything else worth telling the user, e.g. an unknown command.
    Notice,
}

/// A `system` event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SystemEvent {
    pub subtype: SystemSubtype,
    /// Human-readable text for the user.
    pub message: String,
    /// Structured details; see [`SystemSubtype`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// For the answer to a control command: the name of the API token
    /// that sent the command (through `agentbus serve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl SystemEvent {
    /// A `system` event of `P`'s subtype, with `payload` as its `data`.
    pub fn new<P: SystemPayload>(message: impl Into<String>, payload: &P) -> SystemEvent {
        SystemEvent {
            subtype: P::SUBTYPE,
            message: message.into(),
            // Payloads are plain data: serialising them cannot fail.
            data: serde_json::to_value(payload).ok(),
            by: None,
        }
    }

    /// A `system` event that carries no `data` (`cleared`, `quit`,
    /// `notice`).
    pub fn bare(subtype: SystemSubtype, message: impl Into<String>) -> SystemEvent {
        SystemEvent {
            subtype,
            message: message.into(),
            data: None,
            by: None,
        }
    }

    /// The `data` as `P`, when the event is of `P`'s subtype and its data
    /// has `P`'s shape.
    pub fn payload<P: SystemPayload>(&self) -> Option<P> {
        if self.subtype != P::SUBTYPE {
            return None;
        }
        serde_json::from_value(self.data.clone()?).ok()
    }

    /// The session a command's reply tells front ends to switch to: the
    /// `data.switch_to` that the payloads of `/new`, `/resume`, `/fork` and
    /// `/load` share (their other fields are not needed for it).
    pub fn switch_to(&self) -> Option<SessionId> {
        /// The field the switching payloads share.
        #[derive(Deserialize)]
        struct SwitchTo {
            switch_to: SessionId,
        }
        let data = self.data.clone()?;
        serde_json::from_value::<SwitchTo>(data)
            .ok()
            .map(|p| p.switch_to)
    }
}

/// The `data` of one subtype of `system` event.
pub trait SystemPayload: Serialize + DeserializeOwned {
    /// The subtype whose `data` this is.
    const SUBTYPE: SystemSubtype;
}

macro_rules! payload_of {
    ($($payload:ty => $subtype:ident),* $(,)?) => {
        $(impl SystemPayload for $payload {
            const SUBTYPE: SystemSubtype = SystemSubtype::$subtype;
        })*
    };
}

payload_of! {
    SessionStarted => SessionStarted,
    NewConversation => NewConversation,
    SessionList => Sessions,
    Resumed => Resumed,
    Forked => Forked,
    Saved => Saved,
    Loaded => Loaded,
    ModelSwitched => ModelSwitched,
    CurrentModel => Model,
    ModelList => Models,
    ToolListing => Tools,
    UsageReport => Usage,
    DebugState => Debug,
    CommandList => Help,
    Retrying => Retrying,
    McpServerChanged => McpServerStatus,
    McpWaiting => McpWaiting,
    Compacted => Compacted,
    ContextReport => Context,
    super::ApprovalResolved => ApprovalResolved,
    super::ModeChanged => Mode,
    super::AgentSwitched => Agent,
    super::AgentList => Agents,
    super::SubagentStarted => SubagentStarted,
    super::SubagentFinished => SubagentFinished,
    Attachments => Attached,
    OwnerChanged => OwnerChanged,
    super::hook::HookRan => Hook,
    super::hook::HookContinued => HookContinued,
    super::Plan => Plan,
    super::checkpoint::RewindList => Rewinds,
    super::checkpoint::Rewound => Rewound,
}

/// A node of a cluster took the session over.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerChanged {
    /// The new owner's epoch (its fencing token: +1 at every claim).
    pub epoch: u64,
    /// The new owner's node id.
    pub node: String,
    /// The seq the session continues after: every stored seq and every
    /// seq the previous owner reserved (and may have shown) are at or
    /// below it.
    pub resumed_after: u64,
}

/// The session started, or was loaded again. (Each field may be missing
/// when read back, from a log written by hand.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStarted {
    /// The model profile it runs with.
    pub model: String,
    /// The names of the tools the model is offered.
    pub tools: Vec<String>,
    pub workspace: String,
    /// Loaded from the store (not new).
    pub resumed: bool,
    /// Messages in its history.
    pub messages: usize,
    /// The session's own `[context]` keys, when it was created with some
    /// (loading the session reads them back from here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<super::ContextConfig>,
    /// The permission mode it runs in (missing in logs written before
    /// there were modes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<super::PermissionMode>,
    /// Whether `bash` runs in the sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandboxed: Option<bool>,
    /// The instruction files (`AGENTS.md`, `CLAUDE.md`) appended to the
    /// system prompt, user-level first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<String>,
    /// The named agent it runs as (missing in logs written before there
    /// were agents: `build`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The session's custom commands (Markdown files read when it was
    /// created or loaded), for front ends that offer commands; `/help`
    /// lists them after the built-in ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandEntry>,
}

/// `/new` made a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewConversation {
    /// The new session: front ends switch to it.
    pub switch_to: SessionId,
}

/// `/sessions`: the stored sessions, most recent first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionList(pub Vec<SessionSummary>);

/// What `/sessions` and `/resume` show of a stored session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: SessionId,
    pub title: Option<String>,
    pub updated_at: DateTime<Utc>,
    /// Its model profile.
    pub model: String,
    /// How many events are stored.
    pub events: u64,
    /// `active` while a process holds it, else `idle`.
    pub status: String,
}

/// `/resume ID` found a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resumed {
    /// The session found: front ends switch to it.
    pub switch_to: SessionId,
    pub title: Option<String>,
}

/// `/fork` copied the session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Forked {
    /// The copy: front ends switch to it.
    pub switch_to: SessionId,
    /// The session it was copied from.
    pub parent: SessionId,
    /// The parent's last seq in the copy.
    pub at_seq: u64,
}

/// `/save PATH` wrote an export document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    pub path: String,
    /// Events written.
    pub events: usize,
}

/// `/load PATH` imported a document as a new session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Loaded {
    /// The new session: front ends switch to it.
    pub switch_to: SessionId,
    /// Events imported.
    pub events: usize,
}

/// `/model NAME` switched the profile (the history is kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSwitched {
    /// The profile now used.
    pub model: String,
    /// The profile used before (may be missing when read back).
    #[serde(default)]
    pub previous: String,
}

/// `/model`: the current profile, or only its name when it is not
/// configured (any more).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CurrentModel {
    Configured(Box<ModelInfo>),
    Unknown { name: String },
}

/// `/models`: every configured profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelList(pub Vec<ModelEntry>);

/// One profile of `/models`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    pub name: String,
    /// Wire format: `openai`, `openai-responses` or `anthropic`.
    pub provider: String,
    /// The provider's model id.
    pub model: String,
    pub base_url: String,
    /// The session uses it now.
    pub current: bool,
    /// The environment variable its key should be in, when agentbus's
    /// environment lacks it (the profile cannot be switched to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_missing: Option<String>,
}

/// `/tools`: the tools the model can call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolListing(pub Vec<ToolEntry>);

/// One tool of `/tools`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolEntry {
    pub name: String,
    pub description: String,
    /// `built-in`, or `mcp:SERVER`.
    pub origin: String,
}

/// `/usage`: tokens used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    /// All turns of the session.
    pub session: Usage,
    pub last_turn: Usage,
    pub model_calls: u64,
    pub turns: u64,
    /// US dollars, when the profiles used have prices.
    pub cost_usd: Option<f64>,
    /// How full the context is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
}

/// `/debug`: the session state as JSON, secrets redacted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DebugState(pub Value);

/// `/help`: the slash commands, the built-in ones first, then the
/// session's custom commands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommandList(pub Vec<CommandEntry>);

/// One slash command, as `/help` lists it and front ends offer it
/// (completion, an editor's command menu).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandEntry {
    /// How to type it, e.g. `/model [NAME]`, `/review [file]`.
    pub command: String,
    pub description: String,
    /// The word typed after `/` (`model`, `frontend:component`); missing in
    /// logs written before custom commands.
    #[serde(default)]
    pub name: String,
    /// Where a custom command comes from: the Markdown file that defines
    /// it. `None` for the built-in commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl CommandEntry {
    /// What follows the name in [`command`](Self::command): how its
    /// arguments are typed (`/model [NAME]` → `[NAME]`), if it takes any.
    pub fn argument_hint(&self) -> Option<&str> {
        let (_, args) = self.command.trim().split_once(char::is_whitespace)?;
        Some(args.trim()).filter(|a| !a.is_empty())
    }
}

/// A model call failed and will be tried again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Retrying {
    /// The attempt about to be made (1: the first retry).
    pub attempt: u32,
    pub delay_ms: u64,
    /// Why the last attempt failed.
    pub reason: String,
}

/// An MCP server changed state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McpServerChanged {
    pub server: String,
    /// The new state, its fields inline (`state`, `tools`, `reason`, ...).
    #[serde(flatten)]
    pub status: McpServerStatus,
}

/// The first model call waits for MCP servers on their first start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McpWaiting {
    /// The servers waited for, by name.
    pub servers: Vec<String>,
    /// The longest the call waits (`[mcp] first_turn_wait_secs`); a server
    /// that fails, or gives up at its own `startup_timeout_secs`, ends its
    /// part sooner.
    pub max_wait_ms: u64,
}

/// What a query took along to the model (`attached`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attachments {
    pub items: Vec<Attachment>,
}

/// One file, directory or command output a query took along.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    pub kind: AttachmentKind,
    /// The path as written after `@` (quotes removed), or the command
    /// after `!`.
    pub source: String,
    /// What the model reads: the file as `read_file` shows it, the
    /// directory as `list_dir` does, the command's output as `bash` does.
    pub content: String,
    /// The command failed (a non-zero exit, a signal, could not start) or
    /// was interrupted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The image an `@pic.png` mention attached (its `content` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<super::Image>,
}

/// What an [`Attachment`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// A file's contents (`@path`).
    File,
    /// A directory's listing (`@dir/`).
    Directory,
    /// A command's output (`!command`).
    Command,
    /// An image (`@pic.png`), sent to the model as image content.
    Image,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_payload_is_read_back_only_from_its_own_subtype() {
        let switched = ModelSwitched {
            model: "fast".into(),
            previous: "main".into(),
        };
        let event = SystemEvent::new("switched", &switched);
        assert_eq!(event.subtype, SystemSubtype::ModelSwitched);
        assert_eq!(
            event.data,
            Some(json!({"model": "fast", "previous": "main"}))
        );
        assert_eq!(event.payload::<ModelSwitched>(), Some(switched));
        assert_eq!(event.payload::<Saved>(), None);
        assert_eq!(event.switch_to(), None);
    }

    #[test]
    fn mcp_status_fields_sit_beside_the_server_name() {
        let changed = McpServerChanged {
            server: "fs".into(),
            status: McpServerStatus::Ready { tools: 3 },
        };
        let event = SystemEvent::new("ready", &changed);
        assert_eq!(
            event.data,
            Some(json!({"server": "fs", "state": "ready", "tools": 3}))
        );
        assert_eq!(event.payload::<McpServerChanged>(), Some(changed));
    }

    #[test]
    fn readers_need_only_the_fields_they_read() {
        let bare = |subtype, data| SystemEvent {
            subtype,
            message: String::new(),
            data: Some(data),
            by: None,
        };
        let forked = bare(SystemSubtype::Forked, json!({"switch_to": "s2"}));
        assert_eq!(forked.switch_to(), Some(SessionId::from("s2")));
        let switched = bare(SystemSubtype::ModelSwitched, json!({"model": "fast"}));
        assert_eq!(
            switched.payload::<ModelSwitched>().map(|p| p.model),
            Some("fast".to_string())
        );
        let saved = bare(SystemSubtype::Saved, json!({"path": "x.json", "events": 3}));
        assert_eq!(saved.switch_to(), None);
    }

    #[test]
    fn every_switching_reply_names_its_target() {
        let id = SessionId::from("s2");
        let replies = [
            SystemEvent::new(
                "",
                &NewConversation {
                    switch_to: id.clone(),
                },
            ),
            SystemEvent::new(
                "",
                &Resumed {
                    switch_to: id.clone(),
                    title: None,
                },
            ),
            SystemEvent::new(
                "",
                &Forked {
                    switch_to: id.clone(),
                    parent: "s1".into(),
                    at_seq: 4,
                },
            ),
            SystemEvent::new(
                "",
                &Loaded {
                    switch_to: id.clone(),
                    events: 9,
                },
            ),
        ];
        for reply in replies {
            assert_eq!(reply.switch_to(), Some(id.clone()), "{reply:?}");
        }
    }
}
