//! What the scripted model knows of OpenAI's model ids: which ones OpenAI
//! serves on the Responses API alone. Sent to Chat Completions, such a
//! model is refused as OpenAI refuses it — HTTP 404 with
//! `{"error": {"message": "This model is only supported in v1/responses
//! and not in v1/chat/completions.", "type": "invalid_request_error",
//! "param": "model", "code": null}}` (the answer other tools report for
//! gpt-5-codex, codex-mini-latest, o3-pro and gpt-4o-deep-research).
//!
//! The list, by id (a router's `vendor/` prefix and a date suffix are
//! ignored):
//!
//! * every Codex model: `gpt-5-codex`, `gpt-5.1-codex`,
//!   `gpt-5.1-codex-max`, `gpt-5.1-codex-mini`, `gpt-5.2-codex`, ...,
//!   `codex-mini-latest` (any id containing `codex`);
//! * the `-pro` models: `o1-pro`, `o3-pro`, `gpt-5-pro`, `gpt-5.2-pro`, ...;
//! * the deep-research models (`o3-deep-research`, `o4-mini-deep-research`,
//!   `gpt-4o-deep-research`) and `computer-use-preview`.

/// OpenAI's message for a Responses-only model on Chat Completions.
pub(crate) const RESPONSES_ONLY: &str =
    "This model is only supported in v1/responses and not in v1/chat/completions.";

/// Whether OpenAI serves `model` on the Responses API alone.
pub(crate) fn responses_only(model: &str) -> bool {
    let id = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    id.contains("codex")
        || id.ends_with("-pro")
        || id.contains("-pro-")
        || id.contains("deep-research")
        || id.starts_with("computer-use-preview")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_pro_and_research_models_are_responses_only() {
        for model in [
            "gpt-5-codex",
            "gpt-5.1-codex",
            "gpt-5.1-codex-max",
            "codex-mini-latest",
            "o1-pro",
            "o3-pro",
            "o3-pro-2025-06-10",
            "gpt-5-pro",
            "openai/gpt-5.2-pro",
            "o3-deep-research",
            "computer-use-preview",
        ] {
            assert!(responses_only(model), "{model}");
        }
        for model in [
            "gpt-5.1",
            "gpt-4.1-mini",
            "o3",
            "o4-mini",
            "scripted-main",
            "gpt-5-chat-latest",
            "professional-model",
        ] {
            assert!(!responses_only(model), "{model}");
        }
    }
}
