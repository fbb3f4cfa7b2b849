//! The model's plan (a `system` `plan` event, from its `todo_write` calls)
//! as ACP's `plan` session update: `entries` of `{content, priority,
//! status}`, the whole plan each time (an editor replaces what it showed).
//!
//! Pure translation; never sends anything. Our plan has no priorities:
//! every entry is `medium`.

use agent_client_protocol::v1::schema::{
    Plan as AcpPlan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate,
};
use agentbus_engine::protocol::{Plan, PlanStatus};

/// The `plan` update showing `plan` (no entries: no plan any more).
pub fn update(plan: &Plan) -> SessionUpdate {
    let entries = plan
        .todos
        .iter()
        .map(|item| {
            let status = match item.status {
                PlanStatus::Pending => PlanEntryStatus::Pending,
                PlanStatus::InProgress => PlanEntryStatus::InProgress,
                PlanStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(item.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(AcpPlan::new(entries))
}
