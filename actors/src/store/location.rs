//! [`StoreLocation`]: where the session store is — a SQLite file (the
//! embedded default) or a Postgres database named by a URL — told from one
//! string, as `--store` and `[sessions] store` give it.
//!
//! Exists so that the choice of backend is made once, explicitly, from what
//! the user wrote: `postgres://` or `postgresql://` is a Postgres URL,
//! anything else a path. A URL may carry a password; [`PostgresUrl`] keeps
//! it for connecting and never shows it: its `Display`, `Debug` and
//! `Serialize` all print the URL with the password replaced by `***`, so a
//! log line, an error, `/debug` or a stored value cannot leak it.
//!
//! Pure: parsing and redacting text, no I/O. Whether the URL names a
//! reachable server is the backend's business when it opens.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// What a password in a shown URL becomes.
const HIDDEN: &str = "***";

/// The schemes that make a store location a Postgres URL.
const POSTGRES_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// Where the session store is.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// The embedded backend: this SQLite file (made when missing).
    Sqlite(PathBuf),
    /// A Postgres database (its schema made or migrated when opened).
    Postgres(PostgresUrl),
}

impl StoreLocation {
    /// The location as it may be shown: a path, or the URL without its
    /// password.
    pub fn shown(&self) -> String {
        match self {
            StoreLocation::Sqlite(path) => path.display().to_string(),
            StoreLocation::Postgres(url) => url.to_string(),
        }
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            StoreLocation::Postgres(url) => f.debug_tuple("Postgres").field(url).finish(),
        }
    }
}

/// Why a store location was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    #[error(
        "it is empty; give a SQLite file's path or a Postgres URL (postgres://USER@HOST:PORT/DATABASE)"
    )]
    Empty,
}

impl FromStr for StoreLocation {
    type Err = LocationError;

    /// `postgres://...` or `postgresql://...` is a Postgres URL; anything
    /// else is a path to a SQLite file.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.trim().is_empty() {
            return Err(LocationError::Empty);
        }
        if POSTGRES_SCHEMES
            .iter()
            .any(|scheme| text.starts_with(scheme))
        {
            return Ok(StoreLocation::Postgres(PostgresUrl(text.to_string())));
        }
        Ok(StoreLocation::Sqlite(PathBuf::from(text)))
    }
}

impl Serialize for StoreLocation {
    /// The shown form: a password never leaves in a serialised value.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.shown())
    }
}

impl<'de> Deserialize<'de> for StoreLocation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A Postgres connection URL as the user wrote it,
/// `postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE][?PARAMS]`. Shown
/// (`Display`, `Debug`) with the password — in the user part or a
/// `password=` parameter — replaced by `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl(String);

impl PostgresUrl {
    /// The whole URL, password included: for connecting, never for showing.
    pub(crate) fn secret_text(&self) -> &str {
        &self.0
    }

    /// The URL without its password.
    fn redacted(&self) -> String {
        redact(&self.0)
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgresUrl({:?})", self.redacted())
    }
}

/// `url` with every password hidden. Split the way tokio-postgres splits
/// it (the user part runs to the first `@`, the password from its first
/// `:`; parameters follow the first `?` after the host), so what it reads
/// as a password is what is hidden.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = POSTGRES_SCHEMES
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme).map(|rest| (*scheme, rest)))
    else {
        return url.to_string();
    };
    let mut shown = String::from(scheme);
    let after_user = match rest.split_once('@') {
        Some((credentials, after)) => {
            match credentials.split_once(':') {
                Some((user, _password)) => {
                    shown.push_str(user);
                    shown.push(':');
                    shown.push_str(HIDDEN);
                }
                None => shown.push_str(credentials),
            }
            shown.push('@');
            after
        }
        None => rest,
    };
    let (address, params) = match after_user.split_once('?') {
        Some((address, params)) => (address, Some(params)),
        None => (after_user, None),
    };
    shown.push_str(address);
    if let Some(params) = params {
        shown.push('?');
        let shown_params: Vec<String> = params
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if percent_decoded(key).eq_ignore_ascii_case("password") => {
                    format!("{key}={HIDDEN}")
                }
                _ => param.to_string(),
            })
            .collect();
        shown.push_str(&shown_params.join("&"));
    }
    shown
}

/// `text` with `%XX` escapes decoded (bytes that are not UTF-8 replaced):
/// enough to recognise a parameter's name however it is written.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn postgres(text: &str) -> PostgresUrl {
        match text.parse() {
            Ok(StoreLocation::Postgres(url)) => url,
            other => panic!("{text} is not a Postgres URL: {other:?}"),
        }
    }

    #[test]
    fn a_postgres_scheme_makes_a_url_and_anything_else_a_path() {
        assert!(matches!(
            "postgres://u@h/db".parse(),
            Ok(StoreLocation::Postgres(_))
        ));
        assert!(matches!(
            "postgresql://h".parse(),
            Ok(StoreLocation::Postgres(_))
        ));
        for path in [
            "sessions.db",
            "/var/lib/agentbus.db",
            "postgres.db",
            "./postgres:/x",
        ] {
            assert_eq!(
                path.parse(),
                Ok(StoreLocation::Sqlite(PathBuf::from(path))),
                "{path}"
            );
        }
        assert_eq!("".parse::<StoreLocation>(), Err(LocationError::Empty));
        assert_eq!("  ".parse::<StoreLocation>(), Err(LocationError::Empty));
    }

    #[test]
    fn the_password_is_hidden_wherever_the_url_is_shown() {
        let cases = [
            (
                "postgres://agentbus:s3cret@db.example:5433/sessions",
                "postgres://agentbus:***@db.example:5433/sessions",
            ),
            (
                "postgresql://me:p%40ss:w@h/db?sslmode=disable",
                "postgresql://me:***@h/db?sslmode=disable",
            ),
            (
                "postgres://h/db?user=me&password=s3cret&application_name=x",
                "postgres://h/db?user=me&password=***&application_name=x",
            ),
            (
                "postgres://h/db?pass%77ord=s3cret",
                "postgres://h/db?pass%77ord=***",
            ),
            ("postgres://me@h:5432/db", "postgres://me@h:5432/db"),
            ("postgres://h", "postgres://h"),
            // tokio-postgres takes the user part up to the first `@`,
            // even past a `/`: so does the redaction.
            ("postgres://u:a/b?c@h/db", "postgres://u:***@h/db"),
        ];
        for (url, shown) in cases {
            let parsed = postgres(url);
            assert_eq!(parsed.to_string(), shown, "{url}");
            assert_eq!(format!("{parsed:?}"), format!("PostgresUrl({shown:?})"));
            let location = StoreLocation::Postgres(parsed);
            assert_eq!(location.to_string(), shown);
            assert!(!format!("{location:?}").contains("s3cret"));
            let json = serde_json::to_string(&location).expect("serialises");
            assert_eq!(json, format!("{shown:?}"));
        }
    }

    #[test]
    fn the_whole_url_is_kept_for_connecting() {
        let url = "postgres://agentbus:s3cret@127.0.0.1:5432/db";
        assert_eq!(postgres(url).secret_text(), url);
    }

    #[test]
    fn a_location_reads_from_a_configuration_string() {
        let location: StoreLocation =
            serde_json::from_str("\"postgres://u:pw@h/db\"").expect("reads");
        assert_eq!(location.to_string(), "postgres://u:***@h/db");
        let e = serde_json::from_str::<StoreLocation>("\"\"").expect_err("empty");
        assert!(e.to_string().contains("it is empty"), "{e}");
    }

    proptest::proptest! {
        /// Whatever the password, the shown URL does not hold it.
        #[test]
        fn no_password_survives_redaction(
            user in "[a-z]{1,8}",
            password in "[A-Z0-9!$%^*()+,;/?#]{6,16}",
            host in "[a-z]{1,8}(:[0-9]{1,5})?",
            in_params in proptest::bool::ANY,
        ) {
            let url = if in_params {
                format!("postgres://{host}/db?user={user}&password={password}")
            } else {
                format!("postgres://{user}:{password}@{host}/db")
            };
            let shown = postgres(&url).to_string();
            proptest::prop_assert!(!shown.contains(&password), "{url} shown as {shown}");
        }
    }
}
