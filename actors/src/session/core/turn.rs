//! The running turn: from an accepted query to its `result`.

use super::partial::PartialMessage;
use crate::model::{GrantedCall, ToolOutcome};
use crate::permissions::Rule;
use crate::protocol::{InputId, Usage};
use serde::Serialize;

/// A turn in progress.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Turn {
    /// The query's input id (the envelope's `turn_id`).
    pub id: InputId,
    pub started_at_ms: u64,
    /// Model calls made so far.
    pub steps: u32,
    /// Tokens summed over this turn's model calls.
    pub usage: Usage,
    /// Text of the latest assistant message that had text.
    pub last_text: String,
    pub phase: Phase,
    /// The user was told this turn's recent messages alone exceed the
    /// budget (said once per turn, not per model call).
    pub warned_over_budget: bool,
    /// What the next (or running) model call has been through: a
    /// compaction ran for it, the provider refused it as too long once.
    /// At most one of each per model call — never a loop.
    pub call: CallAttempt,
    /// The session's own model profile, put back when the turn ends: the
    /// turn runs on a custom command's `model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_model: Option<String>,
    /// How many times `Stop` hooks sent the model back to work this turn.
    #[serde(skip_serializing_if = "is_zero")]
    pub stop_continuations: u32,
}

impl Turn {
    /// Turn `id`, opened at `started_at_ms` in `phase`; `session_model`:
    /// the session's own profile, when the turn runs on another.
    pub fn open(
        id: InputId,
        started_at_ms: u64,
        phase: Phase,
        session_model: Option<String>,
    ) -> Turn {
        Turn {
            id,
            started_at_ms,
            steps: 0,
            usage: Usage::default(),
            last_text: String::new(),
            phase,
            warned_over_budget: false,
            call: CallAttempt::default(),
            session_model,
            stop_continuations: 0,
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The history of the model call being made.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CallAttempt {
    /// A compaction already ran for this call.
    pub compacted: bool,
    /// The provider refused it as too long; this is the one retry.
    pub retried_overflow: bool,
    /// What the provider's count of the request calibrates, when it was
    /// counted.
    pub counted: Option<super::context::ledger::Counted>,
}

/// What the turn is waiting for.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// A model call is streaming.
    Streaming {
        request_id: u64,
        partial: PartialMessage,
    },
    /// The tool calls of the last assistant message are running.
    RunningTools {
        batch_id: u64,
        calls: Vec<PendingCall>,
    },
    /// A compaction runs before the next model call (see
    /// `SessionState::compacting`).
    Compacting,
    /// The session's first model call waits for MCP servers on their first
    /// start (see `mcp_wait`); nothing runs.
    WaitingForMcp,
    /// The query's `@` mentions are read, or its `!command` runs, before
    /// anything else (see `attach`).
    Attaching(super::attach::Attaching),
    /// `UserPromptSubmit` hooks look at the query before anything else:
    /// it has not entered the history (nor been shown) yet.
    PromptHook(Box<PromptHook>),
    /// The model ended its answer; `Stop` hooks may keep the turn going.
    StopHook { hook_id: u64 },
}

/// A query waiting for its `UserPromptSubmit` hooks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptHook {
    pub hook_id: u64,
    pub user: crate::protocol::UserEvent,
    pub run_as: RunAs,
    /// Typed by a user: its `@` mentions and `!command` count.
    pub typed: bool,
}

/// What a turn runs with besides the session's own settings (a custom
/// command's front matter).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunAs {
    /// A model profile for this turn alone.
    pub model: Option<String>,
    /// Allow rules for this turn alone.
    pub allowed_tools: Vec<crate::permissions::Rule>,
    /// Said once the turn has begun (after its `user` event, so that front
    /// ends take them as part of the turn, not as a command's reply).
    pub notices: Vec<String>,
}

/// A tool call of the running batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub outcome: Option<ToolOutcome>,
    /// Its `tool_result` has been emitted and recorded.
    pub recorded: bool,
    /// It waits for the user's decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    /// What it changed in the workspace (once finished).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<crate::protocol::checkpoint::CheckpointRef>,
}

/// A call waiting for approval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Waiting {
    /// The `approval_request`'s id.
    pub request_id: String,
    /// What runs when it is allowed.
    pub call: GrantedCall,
    /// The rule `allow_always` adds.
    pub always: Option<Rule>,
}
