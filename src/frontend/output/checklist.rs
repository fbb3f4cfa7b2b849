//! The model's plan (a `system` `plan` event, from its `todo_write` calls)
//! as checklist lines for the terminal: `☐ pending`, `◐ in progress` (in
//! the words the model gave for it while it is being done), `☑ completed`.
//!
//! Pure text, one line per item, no styling (the renderer styles each line
//! by its status) and no control characters from the model's words.

use super::markdown::styled::sanitize;
use agentbus_engine::protocol::{PlanItem, PlanStatus};

/// One item as a line: its box, then what it says.
pub fn line(item: &PlanItem) -> String {
    let (mark, words) = match item.status {
        PlanStatus::Pending => ("☐", item.content.as_str()),
        PlanStatus::InProgress => ("◐", item.active_form.as_deref().unwrap_or(&item.content)),
        PlanStatus::Completed => ("☑", item.content.as_str()),
    };
    let flat = words.replace(['\n', '\r', '\t'], " ");
    format!("{mark} {}", sanitize(&flat))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: PlanStatus, active: Option<&str>) -> PlanItem {
        PlanItem {
            content: content.into(),
            status,
            active_form: active.map(Into::into),
        }
    }

    #[test]
    fn each_status_has_its_box_and_the_item_in_progress_its_active_form() {
        assert_eq!(
            line(&item("Run the tests", PlanStatus::Pending, Some("Running"))),
            "☐ Run the tests"
        );
        assert_eq!(
            line(&item("Fix it", PlanStatus::InProgress, Some("Fixing it"))),
            "◐ Fixing it"
        );
        assert_eq!(
            line(&item("Fix it", PlanStatus::InProgress, None)),
            "◐ Fix it"
        );
        assert_eq!(
            line(&item("Read\nthe code", PlanStatus::Completed, None)),
            "☑ Read the code"
        );
    }
}
