//! What one item of a model's stream becomes for the core: the same for
//! every driver of a session (the AgentLoop, the library's driver).

use super::core::Input;
use crate::model::ModelEvent;
use crate::provider::ProviderError;

/// The core's input for the stream item `item` of model call `request_id`
/// (`None`: the stream ended), and whether it is the call's last.
pub fn model_input(
    request_id: u64,
    item: Option<Result<ModelEvent, ProviderError>>,
) -> (Input, bool) {
    match item {
        Some(Ok(event)) => {
            let finished = matches!(event, ModelEvent::Finished { .. });
            (Input::Model { request_id, event }, finished)
        }
        Some(Err(e)) => (
            Input::ModelFailed {
                request_id,
                too_long: e.context_refusal(),
                error: e.to_string(),
            },
            true,
        ),
        None => (
            Input::ModelFailed {
                request_id,
                error: "the model stream ended without finishing".to_string(),
                too_long: None,
            },
            true,
        ),
    }
}
