//! Checking one table of a configuration file against the shape it must
//! have, so that a refusal names the file and the key (`models.NAME.key`,
//! `agents.NAME.key`), shared by the loader and the parts it resolves.

use super::error::ConfigError;

/// Deserialise a table, naming the key that does not fit.
pub fn check<T: serde::de::DeserializeOwned>(
    table: &toml::Table,
    origin: &str,
) -> Result<T, ConfigError> {
    check_value(toml::Value::Table(table.clone()), origin)
}

/// Deserialise `value` — a TOML table, or a JSON object as the HTTP API
/// gets one — naming the key that does not fit.
pub fn check_value<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    value: D,
    origin: &str,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        ConfigError::Invalid {
            origin: origin.to_string(),
            key: if key == "." {
                "(top level)".into()
            } else {
                key
            },
            // The toml crate appends "in `key`" on a second line; the key is named already.
            message: e
                .into_inner()
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
        }
    })
}

/// Deserialise one named entry (`models.NAME`, `mcp_servers.NAME`), naming
/// the key within it on failure.
pub fn check_entry<T: serde::de::DeserializeOwned>(
    table: &toml::Table,
    origin: &str,
    prefix: &str,
) -> Result<T, ConfigError> {
    check_value_entry(toml::Value::Table(table.clone()), origin, prefix)
}

/// [`check_entry`] of any value (a JSON object as the HTTP API gets one).
pub fn check_value_entry<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    value: D,
    origin: &str,
    prefix: &str,
) -> Result<T, ConfigError> {
    check_value(value, origin).map_err(|e| match e {
        ConfigError::Invalid {
            origin,
            key,
            message,
        } => ConfigError::Invalid {
            origin,
            key: format!("{prefix}.{key}").replace(".(top level)", ""),
            message,
        },
        other => other,
    })
}
