//! OpenAI's published request schemas: every body sent to an OpenAI wire
//! (Chat Completions, Responses) is checked against the schema OpenAI's own
//! OpenAPI document gives for it, `CreateChatCompletionRequest` or
//! `CreateResponse`, so that a field of the wrong shape fails an
//! end-to-end test even where the hand-written rules of [`crate::validate`]
//! say nothing about it.
//!
//! The schemas are `tests/fixtures/openapi/openai-2026-08-components.json`
//! (its README says where they come from), compiled in and compiled into
//! validators once per process. agentbus's provider tests use the same
//! check ([`schema_violations`]) on every body shape their `request_body`
//! can make.
//!
//! One liberty, and why: OpenAPI's `oneOf` is read as `anyOf`. OpenAI's
//! unions are discriminated by `type`, and some of their branches overlap:
//! a user message with content parts is both an `EasyInputMessage` and an
//! `InputMessage`, so under JSON Schema's `oneOf` (exactly one branch) no
//! message with an image could ever be valid. OpenAI's SDKs and server pick
//! the branch by `type`; a body is valid here when it matches at least one.

use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::{Map, Value, json};

/// A request schema of OpenAI's document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiSchema {
    /// `POST /v1/chat/completions`.
    CreateChatCompletionRequest,
    /// `POST /v1/responses`.
    CreateResponse,
    /// One event of a Responses stream (what the scripted model sends).
    ResponseStreamEvent,
}

impl OpenAiSchema {
    /// The schema's name in the document.
    pub fn name(self) -> &'static str {
        match self {
            OpenAiSchema::CreateChatCompletionRequest => "CreateChatCompletionRequest",
            OpenAiSchema::CreateResponse => "CreateResponse",
            OpenAiSchema::ResponseStreamEvent => "ResponseStreamEvent",
        }
    }
}

/// The document's component schemas, as copied into the tree.
const COMPONENTS: &str = include_str!("../../fixtures/openapi/openai-2026-08-components.json");

/// Longest stretch of a body quoted in one violation.
const QUOTED: usize = 240;

/// The two validators, or why they could not be built (never expected: the
/// file is compiled in; reported as a violation of every body rather than a
/// panic).
struct Validators {
    chat: Result<Validator, String>,
    responses: Result<Validator, String>,
    stream_events: Result<Validator, String>,
}

static VALIDATORS: LazyLock<Validators> = LazyLock::new(|| {
    let components = serde_json::from_str::<Value>(COMPONENTS)
        .map_err(|e| format!("the schema file is not JSON: {e}"))
        .and_then(|document| match document.get("components") {
            Some(components) => Ok(any_of(components.clone())),
            None => Err("the schema file has no `components`".to_owned()),
        });
    let build = |schema: OpenAiSchema| -> Result<Validator, String> {
        let components = components.clone()?;
        let root = json!({
            "$ref": format!("#/components/schemas/{}", schema.name()),
            "components": components,
        });
        jsonschema::options()
            .with_draft(Draft::Draft202012)
            .build(&root)
            .map_err(|e| format!("OpenAI's `{}` schema does not compile: {e}", schema.name()))
    };
    Validators {
        chat: build(OpenAiSchema::CreateChatCompletionRequest),
        responses: build(OpenAiSchema::CreateResponse),
        stream_events: build(OpenAiSchema::ResponseStreamEvent),
    }
});

/// `schema` with every `oneOf` keyword read as `anyOf` (see the module doc).
fn any_of(schema: Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let key = if key == "oneOf" {
                        "anyOf".to_owned()
                    } else {
                        key
                    };
                    (key, any_of(value))
                })
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(any_of).collect()),
        other => other,
    }
}

/// Where `body` breaks OpenAI's `schema`, one line each (e.g.
/// `/input/3: "call_id" is a required property`); empty when it is valid.
/// Where a union matches no branch, the line comes from the branch the body
/// meant (the one whose `type` it has, with the fewest errors).
pub fn schema_violations(schema: OpenAiSchema, body: &Value) -> Vec<String> {
    let validators = &*VALIDATORS;
    let validator = match schema {
        OpenAiSchema::CreateChatCompletionRequest => &validators.chat,
        OpenAiSchema::CreateResponse => &validators.responses,
        OpenAiSchema::ResponseStreamEvent => &validators.stream_events,
    };
    let validator = match validator {
        Ok(validator) => validator,
        Err(why) => return vec![why.clone()],
    };
    let mut lines = Vec::new();
    for error in validator.iter_errors(body) {
        describe(&error, &mut lines);
    }
    lines
        .into_iter()
        .map(|line| format!("{} (OpenAI's `{}` schema)", line, schema.name()))
        .collect()
}

/// One line per leaf error under `error`.
fn describe(error: &ValidationError<'_>, lines: &mut Vec<String>) {
    if let ValidationErrorKind::AnyOf { context } = &error.kind
        && let Some(branch) = meant_branch(context)
    {
        for inner in branch {
            describe(inner, lines);
        }
        return;
    }
    let at = error.instance_path.to_string();
    let at = if at.is_empty() { "/".to_owned() } else { at };
    lines.push(format!("{at}: {}", shorten(&error.to_string())));
}

/// The branch of a union the body most likely meant: not one whose `type`
/// (or other constant) it contradicts, then the one with the fewest errors,
/// then the one that got deepest into the body.
fn meant_branch<'a, 'e>(
    branches: &'a [Vec<ValidationError<'e>>],
) -> Option<&'a Vec<ValidationError<'e>>> {
    branches
        .iter()
        .filter(|errors| !errors.is_empty())
        .min_by_key(|errors| {
            let contradicts_type = errors.iter().any(|e| {
                e.instance_path.as_str().ends_with("/type")
                    && matches!(
                        e.kind,
                        ValidationErrorKind::Enum { .. } | ValidationErrorKind::Constant { .. }
                    )
            });
            let deepest = errors
                .iter()
                .map(|e| e.instance_path.as_str().matches('/').count())
                .max()
                .unwrap_or(0);
            (contradicts_type, errors.len(), usize::MAX - deepest)
        })
}

/// A message quoting part of a body, cut to [`QUOTED`] characters.
fn shorten(text: &str) -> String {
    if text.chars().count() <= QUOTED {
        return text.to_owned();
    }
    let cut: String = text.chars().take(QUOTED).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn responses_body(input: Value) -> Value {
        json!({"model": "gpt-5.1-codex", "stream": true, "store": false, "input": input})
    }

    #[test]
    fn a_chat_request_like_agentbus_sends_is_valid() {
        let body = json!({
            "model": "gpt-4.1", "stream": true, "stream_options": {"include_usage": true},
            "max_tokens": 100, "prompt_cache_key": "session-1",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [
                    {"type": "text", "text": "what is it"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "out"},
            ],
            "tools": [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}],
        });
        assert_eq!(
            schema_violations(OpenAiSchema::CreateChatCompletionRequest, &body),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_user_message_with_an_image_is_valid_although_two_branches_match() {
        let body = responses_body(json!([{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is it"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
        ]}]));
        assert_eq!(
            schema_violations(OpenAiSchema::CreateResponse, &body),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_broken_item_is_named_by_its_place_and_its_own_branch() {
        let body = responses_body(json!([
            {"type": "message", "role": "user", "content": "read it"},
            {"type": "function_call", "name": "read_file", "arguments": "{}"},
        ]));
        let found = schema_violations(OpenAiSchema::CreateResponse, &body);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with("/input/1: \"call_id\" is a required property"),
            "{found:#?}"
        );
        assert!(found[0].ends_with("(OpenAI's `CreateResponse` schema)"));
    }

    #[test]
    fn wrong_values_and_missing_fields_are_violations() {
        let mut body = responses_body(json!("hi"));
        body["reasoning"] = json!({"effort": "ultra"});
        body["tools"] = json!([{"type": "function", "name": "f", "parameters": {}}]);
        let found = schema_violations(OpenAiSchema::CreateResponse, &body).join("\n");
        assert!(found.contains("/reasoning/effort"), "{found}");
        assert!(
            found.contains("/tools/0: \"strict\" is a required property"),
            "{found}"
        );
        let chat = json!({"model": "m", "messages": [{"role": "wizard", "content": "x"}]});
        assert!(
            !schema_violations(OpenAiSchema::CreateChatCompletionRequest, &chat).is_empty(),
            "an unknown role"
        );
    }

    #[test]
    fn long_quotes_are_cut() {
        let text = "x".repeat(QUOTED * 2);
        assert_eq!(shorten(&text).chars().count(), QUOTED + 1);
        assert_eq!(shorten("short"), "short");
    }
}
