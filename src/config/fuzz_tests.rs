//! Property tests of the configuration loader and the `.mcp.json` reader:
//! whatever one file holds, loading it never panics, and a file that is
//! refused is refused with an error naming that file (and, for a value
//! that does not fit, the key).
//!
//! Inputs: random text; random TOML-looking lines; the built-in defaults
//! written out as a user's file with one value replaced by a value of
//! another type (which must be refused, naming the key) or by any value
//! (which may be accepted); and `.mcp.json` documents, random and
//! near-valid.

use super::{Layer, LoadOptions, mcp_json, parse_layer, resolve};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

const FILE: &str = "/cfg/fuzz.toml";

/// One file's text over the built-in defaults: the settings, or the error
/// as the user reads it.
fn load(text: &str) -> Result<(), String> {
    let defaults = parse_layer("built-in defaults".into(), None, super::DEFAULT_TOML)
        .map_err(|e| format!("the defaults do not load: {e}"))?;
    let layer: Layer =
        parse_layer(FILE.into(), Some(Path::new("/cfg")), text).map_err(|e| e.to_string())?;
    resolve(
        vec![defaults, layer],
        &LoadOptions::default(),
        PathBuf::from("/nonexistent-workspace"),
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// A refusal must say which file it is about.
fn check_names_the_file(result: &Result<(), String>) -> Result<(), TestCaseError> {
    if let Err(error) = result {
        prop_assert!(
            error.contains(FILE),
            "the error does not name the file: {error}"
        );
        prop_assert!(!error.contains("the defaults do not load"), "{error}");
    }
    Ok(())
}

/// The built-in defaults as a table, to mutate.
fn defaults() -> toml::Table {
    super::DEFAULT_TOML.parse().unwrap_or_default()
}

/// Every leaf of `table` (not tables themselves), as paths of keys.
fn leaves(table: &toml::Table, prefix: &[String], out: &mut Vec<Vec<String>>) {
    for (key, value) in table {
        let mut path = prefix.to_vec();
        path.push(key.clone());
        match value {
            toml::Value::Table(inner) => leaves(inner, &path, out),
            _ => out.push(path),
        }
    }
}

fn leaf_mut<'t>(table: &'t mut toml::Table, path: &[String]) -> Option<&'t mut toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut at = table;
    for key in parents {
        at = at.get_mut(key)?.as_table_mut()?;
    }
    at.get_mut(last)
}

/// A value no field of the same path accepts: a string where the file had
/// something else, a boolean where it had a string. (An integer is not
/// wrong for a float, so numbers are never the replacement.)
fn wrong_type(value: &toml::Value) -> toml::Value {
    match value {
        toml::Value::String(_) => toml::Value::Boolean(true),
        _ => toml::Value::String("wrong".into()),
    }
}

fn toml_value() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(toml::Value::Boolean),
        any::<i64>().prop_map(toml::Value::Integer),
        any::<f64>().prop_map(toml::Value::Float),
        "[ -~é]{0,12}".prop_map(toml::Value::String),
        Just(toml::Value::String(
            "${AGENTBUS_FUZZ_UNSET_VARIABLE}".into()
        )),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(toml::Value::Array),
            proptest::collection::btree_map("[a-z_]{1,6}", inner, 0..3)
                .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
        ]
    })
}

fn toml_lines() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("model".to_string()),
        Just("max_steps".to_string()),
        Just("context.max_tokens".to_string()),
        Just("context.auto_compact_at".to_string()),
        Just("context.strategy".to_string()),
        Just("models.x.provider".to_string()),
        Just("models.x.base_url".to_string()),
        Just("mcp_servers.m.command".to_string()),
        Just("permissions.allow".to_string()),
        Just("sandbox.write_roots".to_string()),
        Just("permission_mode".to_string()),
        "[a-z_.]{1,16}",
    ];
    let value = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        "[ -~]{0,10}".prop_map(|t| format!("{t:?}")),
        Just("true".to_string()),
        Just("[\"bash(*)\", 3]".to_string()),
        Just("\"recent-turns:0\"".to_string()),
        Just("1.5".to_string()),
        Just("nan".to_string()),
        "[ -~]{0,10}",
    ];
    let line = prop_oneof![
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "[a-z_.]{1,12}".prop_map(|t| format!("[{t}]")),
        "[ -~]{0,20}",
    ];
    proptest::collection::vec(line, 0..8).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #[test]
    fn any_text_loads_or_is_refused_naming_the_file(text in "\\PC{0,200}") {
        check_names_the_file(&load(&text))?;
    }

    #[test]
    fn toml_looking_text_loads_or_is_refused_naming_the_file(text in toml_lines()) {
        check_names_the_file(&load(&text))?;
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused_naming_file_and_key(pick in any::<prop::sample::Index>()) {
        let mut table = defaults();
        let mut paths = Vec::new();
        leaves(&table, &[], &mut paths);
        let path = pick.get(&paths).clone();
        let Some(value) = leaf_mut(&mut table, &path) else {
            return Err(TestCaseError::fail(format!("no leaf at {path:?}")));
        };
        *value = wrong_type(value);
        let written = value.to_string();
        let result = load(&table.to_string());
        let Err(error) = result else {
            return Err(TestCaseError::fail(format!("{} = {written} was accepted", path.join("."))));
        };
        prop_assert!(error.contains(FILE), "{error}");
        let last = path.last().cloned().unwrap_or_default();
        prop_assert!(error.contains(&last), "the error does not name `{}`: {error}", path.join("."));
    }

    #[test]
    fn any_value_anywhere_loads_or_is_refused_naming_the_file(
        pick in any::<prop::sample::Index>(),
        replacement in toml_value(),
    ) {
        let mut table = defaults();
        let mut paths = Vec::new();
        leaves(&table, &[], &mut paths);
        let path = pick.get(&paths).clone();
        if let Some(value) = leaf_mut(&mut table, &path) {
            *value = replacement;
        }
        check_names_the_file(&load(&table.to_string()))?;
    }

    #[test]
    fn any_mcp_json_is_read_or_refused_naming_the_file(text in "\\PC{0,120}") {
        if let Err(e) = mcp_json::parse("/ws/.mcp.json", &text) {
            prop_assert!(e.to_string().contains("/ws/.mcp.json"), "{e}");
        }
    }

    #[test]
    fn near_valid_mcp_json_is_read_or_refused_naming_file_and_server(
        kind in prop_oneof![Just(None), Just(Some("stdio")), Just(Some("http")), Just(Some("sse"))],
        command in json_value(),
        args in json_value(),
        env in json_value(),
        url in json_value(),
    ) {
        let mut entry = serde_json::Map::new();
        if let Some(kind) = kind {
            entry.insert("type".into(), kind.into());
        }
        for (key, value) in [("command", command), ("args", args), ("env", env), ("url", url)] {
            if !value.is_null() {
                entry.insert(key.into(), value);
            }
        }
        let text = serde_json::json!({"mcpServers": {"srv": entry}}).to_string();
        if let Err(e) = mcp_json::parse("/ws/.mcp.json", &text) {
            let e = e.to_string();
            prop_assert!(e.contains("/ws/.mcp.json") && e.contains("mcpServers.srv"), "{e}");
        }
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~]{0,10}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[A-Z_]{1,6}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Inputs the properties found, kept as plain tests.
#[test]
fn a_bad_context_value_names_the_file_it_is_in() {
    let error = load("[context]\nauto_compact_at = 5.0\n")
        .err()
        .unwrap_or_default();
    assert!(
        error.contains(FILE) && error.contains("context") && error.contains("auto_compact_at"),
        "{error}"
    );
}

#[test]
fn an_unreadable_prompt_file_names_the_file_that_set_it() {
    let error = load("system_prompt_file = \"missing.md\"\n")
        .err()
        .unwrap_or_default();
    assert!(
        error.starts_with(&format!("{FILE}: key `system_prompt_file`")),
        "{error}"
    );
}
