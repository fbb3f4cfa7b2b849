//! Reading the fields of a stream frame's JSON with the types the wire
//! format promises. Both decoders use it so that a frame of the wrong shape
//! is an error naming the field, what it held and what was expected
//! (`choices[0].delta.content is a number; expected a string`) instead of
//! being skipped in silence or read as zero.
//!
//! A missing field and a `null` one are the same: absent. Fields a decoder
//! does not read are never looked at, so a server may add its own.

use serde_json::{Map, Value};

/// What kind of JSON value `value` is, as error messages say it.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() => "a whole number",
        Value::Number(n) if n.is_i64() => "a negative number",
        Value::Number(_) => "a fractional number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `value` as an object; `name` says where it is (`the frame`,
/// `choices[0]`).
pub fn object<'v>(value: &'v Value, name: &str) -> Result<&'v Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{name} is {}; expected an object", kind(value)))
}

/// The field `key` of `parent`, read by `read`; `None` when it is missing
/// or null, an error naming `path` when `read` does not accept it.
fn field<'v, T>(
    parent: &'v Map<String, Value>,
    key: &str,
    path: &str,
    expected: &str,
    read: impl FnOnce(&'v Value) -> Option<T>,
) -> Result<Option<T>, String> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => read(value)
            .map(Some)
            .ok_or_else(|| format!("{path}{key} is {}; expected {expected}", kind(value))),
    }
}

/// A string field. `path` is the parent's place with a trailing dot
/// (`choices[0].delta.`), or empty at the top level.
pub fn text<'v>(
    parent: &'v Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'v str>, String> {
    field(parent, key, path, "a string", Value::as_str)
}

/// A whole-number field (token counts, block indexes).
pub fn whole(parent: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u64>, String> {
    field(parent, key, path, "a whole number", Value::as_u64)
}

/// An array field.
pub fn list<'v>(
    parent: &'v Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'v Vec<Value>>, String> {
    field(parent, key, path, "an array", Value::as_array)
}

/// An object field.
pub fn table<'v>(
    parent: &'v Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'v Map<String, Value>>, String> {
    field(parent, key, path, "an object", Value::as_object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_and_null_are_none_and_a_wrong_type_is_named() {
        let value = json!({"a": null, "n": 3, "s": "x"});
        let map = object(&value, "the frame").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text(map, "a", "x."), Ok(None));
        assert_eq!(text(map, "missing", "x."), Ok(None));
        assert_eq!(text(map, "s", "x."), Ok(Some("x")));
        assert_eq!(whole(map, "n", ""), Ok(Some(3)));
        assert_eq!(
            text(map, "n", "choices[0].delta."),
            Err("choices[0].delta.n is a whole number; expected a string".into())
        );
        assert_eq!(
            object(&json!([1]), "the frame"),
            Err("the frame is an array; expected an object".into())
        );
    }
}
