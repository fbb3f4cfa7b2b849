//! The model's plan as data: the checklist the `todo_write` tool keeps
//! (Claude Code's TodoWrite, Codex's `update_plan`), and the payload of the
//! `system` `plan` event that carries each new version of it.
//!
//! Plain data. What a call to the tool does to a session (checking its
//! arguments, keeping the list, saying so) is the core's business
//! (`session::core::plan`); how a front end draws the list is its own.
//! Never holds logic beyond a count.

use serde::{Deserialize, Serialize};

/// The name the model calls the plan tool by.
pub const TODO_WRITE: &str = "todo_write";

/// Where one item of the plan stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on now (the model should keep one at a time).
    InProgress,
    /// Done.
    Completed,
}

impl PlanStatus {
    /// As written on the wire and in the tool's arguments.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Completed => "completed",
        }
    }
}

/// One item of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    pub status: PlanStatus,
    /// The same while it is being done ("Running the tests"), when the
    /// model gave one: front ends may show it for the item in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

/// A `system` `plan` event's `data`: the whole plan as it now stands (each
/// event replaces the one before; an empty list: no plan any more).
/// Persisted and folded on load, so a session loaded again, `/debug` and a
/// replaying client know it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub todos: Vec<PlanItem>,
}

impl Plan {
    /// How many items have `status`.
    pub fn count(&self, status: PlanStatus) -> usize {
        self.todos.iter().filter(|t| t.status == status).count()
    }
}
