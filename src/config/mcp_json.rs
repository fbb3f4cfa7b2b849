//! Claude-style `.mcp.json` files: `{"mcpServers": {"NAME": {...}}}`.
//!
//! Each entry becomes the same table a `[mcp_servers.NAME]` section would
//! be (`command`/`args`/`env`/`cwd`, or `url`/`headers` for `"type":
//! "http"`), with `${VAR}` expanded, so the TOML configuration can override
//! single keys of it (e.g. `enabled = false`).

use super::ConfigError;
use super::expand::expand;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The servers of one `.mcp.json`, as config tables.
pub fn read(path: &Path) -> Result<BTreeMap<String, toml::Table>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|reason| ConfigError::Read {
        path: path.to_path_buf(),
        reason,
    })?;
    parse(&path.display().to_string(), &text)
}

/// The servers of a `.mcp.json` whose text is `text`; errors name `origin`
/// (the file) and the key.
pub fn parse(origin: &str, text: &str) -> Result<BTreeMap<String, toml::Table>, ConfigError> {
    let origin = origin.to_string();
    let document: Value = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
        origin: origin.clone(),
        message: format!("not valid JSON: {e}"),
    })?;
    let invalid = |key: String, message: &str| ConfigError::Invalid {
        origin: origin.clone(),
        key,
        message: message.to_string(),
    };
    let servers = document
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("mcpServers".into(), "expected an object of servers by name"))?;
    let mut tables = BTreeMap::new();
    for (name, entry) in servers {
        let key = |k: &str| format!("mcpServers.{name}.{k}");
        let entry = entry
            .as_object()
            .ok_or_else(|| invalid(format!("mcpServers.{name}"), "expected an object"))?;
        let string = |k: &str| -> Result<Option<String>, ConfigError> {
            match entry.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => {
                    expand(s)
                        .map(Some)
                        .map_err(|var| ConfigError::UndefinedVariable {
                            origin: origin.clone(),
                            key: key(k),
                            var,
                        })
                }
                Some(_) => Err(invalid(key(k), "expected a string")),
            }
        };
        let strings = |k: &str| -> Result<Vec<String>, ConfigError> {
            match entry.get(k) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => {
                            expand(s).map_err(|var| ConfigError::UndefinedVariable {
                                origin: origin.clone(),
                                key: key(k),
                                var,
                            })
                        }
                        _ => Err(invalid(key(k), "expected an array of strings")),
                    })
                    .collect(),
                Some(_) => Err(invalid(key(k), "expected an array of strings")),
            }
        };
        let map = |k: &str| -> Result<toml::Table, ConfigError> {
            let mut out = toml::Table::new();
            match entry.get(k) {
                None | Some(Value::Null) => {}
                Some(Value::Object(fields)) => {
                    for (field, value) in fields {
                        let Value::String(value) = value else {
                            return Err(invalid(key(k), "expected an object of strings"));
                        };
                        let value =
                            expand(value).map_err(|var| ConfigError::UndefinedVariable {
                                origin: origin.clone(),
                                key: format!("{}.{field}", key(k)),
                                var,
                            })?;
                        out.insert(field.clone(), toml::Value::String(value));
                    }
                }
                Some(_) => return Err(invalid(key(k), "expected an object of strings")),
            }
            Ok(out)
        };
        let kind = string("type")?.unwrap_or_else(|| {
            if entry.contains_key("url") {
                "http"
            } else {
                "stdio"
            }
            .to_string()
        });
        let mut table = toml::Table::new();
        match kind.as_str() {
            "stdio" => {
                if let Some(command) = string("command")? {
                    table.insert("command".into(), toml::Value::String(command));
                }
                let args = strings("args")?;
                if !args.is_empty() {
                    table.insert(
                        "args".into(),
                        toml::Value::Array(args.into_iter().map(toml::Value::String).collect()),
                    );
                }
                let env = map("env")?;
                if !env.is_empty() {
                    table.insert("env".into(), toml::Value::Table(env));
                }
                if let Some(cwd) = string("cwd")? {
                    table.insert("cwd".into(), toml::Value::String(cwd));
                }
            }
            "http" | "streamable-http" | "streamableHttp" => {
                if let Some(url) = string("url")? {
                    table.insert("url".into(), toml::Value::String(url));
                }
                let headers = map("headers")?;
                if !headers.is_empty() {
                    table.insert("headers".into(), toml::Value::Table(headers));
                }
            }
            other => {
                return Err(invalid(
                    key("type"),
                    &format!(
                        "`{other}` is not supported; expected \"stdio\" or \"http\" (streamable HTTP)"
                    ),
                ));
            }
        }
        tables.insert(name.clone(), table);
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_and_http_entries_become_tables() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server", "${HOME}"], "env": {"A": "b"}},
                "remote": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer t"}}
            }}"#,
        )
        .unwrap();
        let tables = read(&path).unwrap();
        assert_eq!(tables["files"]["command"].as_str(), Some("npx"));
        assert_eq!(
            tables["files"]["args"][2]
                .as_str()
                .map(|s| !s.contains('$')),
            Some(true)
        );
        assert_eq!(tables["files"]["env"]["A"].as_str(), Some("b"));
        assert_eq!(
            tables["remote"]["url"].as_str(),
            Some("http://127.0.0.1:1/mcp")
        );
        assert_eq!(
            tables["remote"]["headers"]["Authorization"].as_str(),
            Some("Bearer t")
        );
    }

    #[test]
    fn a_bad_file_names_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {"x": {"type": "sse", "url": "u"}}}"#,
        )
        .unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains(".mcp.json") && err.contains("mcpServers.x.type") && err.contains("sse"),
            "{err}"
        );
        std::fs::write(&path, r#"{"servers": {}}"#).unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("mcpServers"));
        std::fs::write(&path, "{oops").unwrap();
        assert!(
            read(&path)
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
    }
}
