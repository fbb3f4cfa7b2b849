//! Protocol validation of recorded requests: the rules the real providers
//! enforce (and reject requests for), checked on every request so that an
//! end-to-end test fails when agentbus sends something OpenAI or Anthropic
//! would refuse, even though the scripted model itself would answer it.
//!
//! Each violation is one human-readable line naming where it is (e.g.
//! `messages[3]: ...`).
//!
//! Two checks, both run on every model call ([`request`]): the rules of
//! each wire, written by hand in the providers' own words ([`validate`]),
//! and, on the OpenAI wires, OpenAI's published schema of the request
//! ([`crate::openapi`]), which catches a field of the wrong shape that no
//! rule names.

mod anthropic;
mod openai;
mod responses;

use serde_json::Value;

use crate::openapi::{OpenAiSchema, schema_violations};
use crate::wire::Wire;

/// The protocol violations of a request body in the given wire format: the
/// wire's rules, then (OpenAI's wires) its schema.
pub(crate) fn request(wire: Wire, body: &Value) -> Vec<String> {
    let mut violations = validate(wire, body);
    let schema = match wire {
        Wire::OpenAi => Some(OpenAiSchema::CreateChatCompletionRequest),
        Wire::Responses => Some(OpenAiSchema::CreateResponse),
        Wire::Anthropic => None,
    };
    if let Some(schema) = schema {
        violations.extend(schema_violations(schema, body));
    }
    violations
}

/// The violations of a wire's hand-written rules alone.
pub(crate) fn validate(wire: Wire, body: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    match wire {
        Wire::OpenAi => openai::validate(body, &mut violations),
        Wire::Anthropic => anthropic::validate(body, &mut violations),
        Wire::Responses => responses::validate(body, &mut violations),
    }
    violations
}

/// The `type` of a content block or part, if it has a string one.
fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// Whether `content` is a string or an array of `{"type":"text","text":..}`.
fn is_text_content(content: &Value) -> bool {
    match content {
        Value::String(_) => true,
        Value::Array(parts) => parts.iter().all(|part| {
            block_type(part) == Some("text") && part.get("text").is_some_and(Value::is_string)
        }),
        _ => false,
    }
}

/// Pushes a violation unless `body.model` is a string.
fn check_model(body: &Value, violations: &mut Vec<String>) {
    if !body.get("model").is_some_and(Value::is_string) {
        violations.push("`model` is missing or not a string".into());
    }
}

/// `body.messages` when it is a non-empty array; pushes a violation otherwise.
fn messages<'a>(body: &'a Value, violations: &mut Vec<String>) -> Option<&'a [Value]> {
    match body.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => Some(messages),
        Some(Value::Array(_)) => {
            violations.push("`messages` is empty".into());
            None
        }
        _ => {
            violations.push("`messages` is missing or not an array".into());
            None
        }
    }
}

/// The media types both APIs take for images.
const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The media type an image's bytes say it is.
fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The largest image Anthropic takes (base64-decoded); OpenAI's cap is
/// higher, and agentbus holds both to this one.
const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// Checks base64 image data as both APIs do: a supported media type,
/// valid (standard, padded) base64, within the size cap, and bytes that
/// are an image of that type.
fn check_image_data(at: &str, media_type: &str, data: &str, violations: &mut Vec<String>) {
    use base64::Engine as _;
    if !IMAGE_MEDIA_TYPES.contains(&media_type) {
        violations.push(format!(
            "{at}: image media type `{media_type}` is not one of {IMAGE_MEDIA_TYPES:?}"
        ));
        return;
    }
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data) {
        Ok(bytes) => bytes,
        Err(e) => {
            violations.push(format!("{at}: image data is not valid base64 ({e})"));
            return;
        }
    };
    if bytes.len() > MAX_IMAGE_BYTES {
        violations.push(format!(
            "{at}: image is {} bytes, more than {MAX_IMAGE_BYTES}",
            bytes.len()
        ));
    }
    match sniff_image(&bytes) {
        Some(found) if found == media_type => {}
        Some(found) => violations.push(format!(
            "{at}: image data is {found} but the media type says {media_type}"
        )),
        None => violations.push(format!(
            "{at}: image data is not a PNG, JPEG, GIF or WebP image"
        )),
    }
}

#[cfg(test)]
mod image_tests {
    use super::validate;
    use crate::wire::{Wire, last_user_text};
    use serde_json::json;

    const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUg==";

    #[test]
    fn openai_image_parts_are_checked_and_matched() {
        let body = |url: &str| {
            json!({"model": "m", "messages": [{"role": "user", "content": [
                {"type": "text", "text": "what is it"},
                {"type": "image_url", "image_url": {"url": url}},
            ]}]})
        };
        let good = body(&format!("data:image/png;base64,{PNG_B64}"));
        assert_eq!(validate(Wire::OpenAi, &good), Vec::<String>::new());
        assert_eq!(
            last_user_text(&good).as_deref(),
            Some("what is it\n[image: image/png]")
        );
        let wrong = validate(
            Wire::OpenAi,
            &body(&format!("data:image/jpeg;base64,{PNG_B64}")),
        );
        assert!(
            wrong[0].contains("is image/png but the media type says image/jpeg"),
            "{wrong:?}"
        );
        let bad = validate(Wire::OpenAi, &body("data:image/png;base64,@@@"));
        assert!(bad[0].contains("not valid base64"), "{bad:?}");
        let bmp = validate(Wire::OpenAi, &body("data:image/bmp;base64,Qk0="));
        assert!(bmp[0].contains("media type `image/bmp`"), "{bmp:?}");
    }

    #[test]
    fn anthropic_image_blocks_are_checked_and_matched() {
        let body = |source: serde_json::Value| {
            json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
                {"type": "image", "source": source},
                {"type": "text", "text": "what is it"},
            ]}]})
        };
        let good = body(json!({"type": "base64", "media_type": "image/png", "data": PNG_B64}));
        assert_eq!(validate(Wire::Anthropic, &good), Vec::<String>::new());
        assert_eq!(
            last_user_text(&good).as_deref(),
            Some("what is it\n[image: image/png]")
        );
        let no_data = validate(
            Wire::Anthropic,
            &body(json!({"type": "base64", "media_type": "image/png"})),
        );
        assert!(
            no_data[0].contains("needs string `media_type` and `data`"),
            "{no_data:?}"
        );
        let not_image = validate(
            Wire::Anthropic,
            &body(json!({"type": "base64", "media_type": "image/gif", "data": "aGVsbG8="})),
        );
        assert!(
            not_image[0].contains("not a PNG, JPEG, GIF or WebP"),
            "{not_image:?}"
        );
    }
}

#[cfg(test)]
mod schema_tests {
    use super::{request, validate};
    use crate::wire::Wire;
    use serde_json::json;

    #[test]
    fn openai_bodies_are_checked_against_the_schema_too_and_anthropic_ones_are_not() {
        // Right by the hand-written rules, wrong by OpenAI's schema.
        let chat = json!({"model": "m", "stream": true, "stream_options": {"include_usage": "yes"},
                          "messages": [{"role": "user", "content": "hi"}]});
        assert!(validate(Wire::OpenAi, &chat).is_empty());
        let found = request(Wire::OpenAi, &chat);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with("/stream_options/include_usage: ")
                && found[0].ends_with("(OpenAI's `CreateChatCompletionRequest` schema)"),
            "{found:#?}"
        );
        let responses = json!({"model": "m", "input": "hi", "max_output_tokens": "lots"});
        assert!(validate(Wire::Responses, &responses).is_empty());
        assert_eq!(request(Wire::Responses, &responses).len(), 1);
        let anthropic = json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}], "stream_options": 3});
        assert!(request(Wire::Anthropic, &anthropic).is_empty());
    }
}
