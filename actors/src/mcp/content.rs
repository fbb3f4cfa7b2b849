//! An MCP tool result as the model reads it: text contents joined; images
//! and audio as a short placeholder (the providers here take text results);
//! embedded resources by their text or a placeholder; structured content as
//! JSON when the server sent no text. Works on the result's JSON (the MCP
//! spec's shape), so it does not depend on the SDK's content types.

use serde_json::Value;

/// The text for the model and whether the server flagged an error.
pub fn result_text(result: &Value) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(content_text).collect())
        .unwrap_or_default();
    let has_text = parts.iter().any(|p| !p.starts_with('['));
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
        && !has_text
    {
        parts.push(structured.to_string());
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    (text, is_error)
}

fn content_text(item: &Value) -> Option<String> {
    let field = |k: &str| item.get(k).and_then(Value::as_str);
    match field("type")? {
        "text" => field("text").map(String::from),
        "image" | "audio" => {
            let kind = field("type").unwrap_or("media");
            let mime = field("mimeType").unwrap_or("unknown type");
            let bytes = field("data").map(|d| d.len() * 3 / 4).unwrap_or(0);
            Some(format!("[{kind}: {mime}, about {bytes} bytes, not shown]"))
        }
        "resource" => {
            let resource = item.get("resource")?;
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => Some(text.to_string()),
                None => Some(format!("[resource: {uri}, binary, not shown]")),
            }
        }
        "resource_link" => Some(format!(
            "[resource link: {} ({})]",
            field("name").unwrap_or("?"),
            field("uri").unwrap_or("?")
        )),
        other => Some(format!("[{other} content, not shown]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_contents_are_joined() {
        let r = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
        assert_eq!(result_text(&r), ("a\nb".to_string(), false));
    }

    #[test]
    fn images_become_a_placeholder_and_errors_are_flagged() {
        let r = json!({"isError": true, "content": [
            {"type": "text", "text": "here"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
        ]});
        let (text, is_error) = result_text(&r);
        assert!(is_error);
        assert_eq!(text, "here\n[image: image/png, about 9 bytes, not shown]");
    }

    #[test]
    fn structured_content_is_used_when_there_is_no_text() {
        let r = json!({"content": [], "structuredContent": {"t": 21.5}});
        assert_eq!(result_text(&r).0, r#"{"t":21.5}"#);
        let both = json!({"content": [{"type": "text", "text": "21.5 C"}], "structuredContent": {"t": 21.5}});
        assert_eq!(result_text(&both).0, "21.5 C");
    }

    #[test]
    fn resources_and_empty_results_are_described() {
        let r = json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"}
        ]});
        assert_eq!(result_text(&r).0, "inside\n[resource link: b (file:///b)]");
        assert_eq!(result_text(&json!({})).0, "(the tool returned no content)");
    }
}
