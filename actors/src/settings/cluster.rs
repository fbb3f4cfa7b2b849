//! `[cluster]`: running `agentbus serve` as one node of several that share
//! one Postgres database (docs/cluster.md).
//!
//! Exists so that cluster mode is one section of plain data, checked where
//! it is written: the database every node keeps its sessions in
//! (`postgres_url`), the NATS server of the live plane (`nats_url`), the
//! node's name as operators see
//! it, and how long a node's lease lasts (`node_ttl_secs`) — from which
//! the heartbeat and sweep intervals follow unless a test sets them.
//!
//! Never shows a password: both URLs print with `***` in its place
//! (`Display`, `Debug`, `Serialize`). Pure data and checks; no I/O.

use super::PostgresUrl;
use crate::store::location::StoreLocation;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// The shortest lease a node may have: a heartbeat every third of it must
/// still be possible on a loaded machine.
pub const MIN_NODE_TTL_SECS: u64 = 2;
/// The longest: a dead node's sessions wait this long (and a sweep) to be
/// adopted.
pub const MAX_NODE_TTL_SECS: u64 = 3600;

/// `[cluster]`, as configured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterSettings {
    /// The database every node keeps its sessions, its lease and its
    /// claims in (`postgres://USER[:PASSWORD]@HOST:PORT/DATABASE`).
    #[serde(
        deserialize_with = "postgres_url",
        serialize_with = "shown_postgres_url"
    )]
    pub postgres_url: PostgresUrl,
    /// The NATS server of the live plane (`nats://HOST:PORT`): sessions
    /// followed from any node, inputs routed to the node that drives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nats_url: Option<NatsAddress>,
    /// The cluster's name in its NATS subjects (`ab.<nats_namespace>.…`;
    /// default `agentbus`): clusters sharing one NATS server (or account)
    /// need different ones, or they would hear each other's sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nats_namespace: Option<ClusterName>,
    /// How operators see this node (`GET /v1/health`, messages naming the
    /// node that drives a session). Default: the host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A node that has not renewed its lease for this long counts as gone:
    /// its busy sessions are adopted by the others, and it stops its own
    /// sessions before then when it cannot renew.
    #[serde(default = "default_node_ttl_secs")]
    pub node_ttl_secs: u64,
    /// How often the lease is renewed, in milliseconds (default: a third
    /// of the TTL). For tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_ms: Option<u64>,
    /// How often this node looks for sessions of gone nodes, in
    /// milliseconds (default: about a second, with jitter). For tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_ms: Option<u64>,
}

fn default_node_ttl_secs() -> u64 {
    10
}

impl ClusterSettings {
    /// A cluster on `postgres_url` with the defaults.
    pub fn new(postgres_url: PostgresUrl) -> Self {
        ClusterSettings {
            postgres_url,
            nats_url: None,
            nats_namespace: None,
            name: None,
            node_ttl_secs: default_node_ttl_secs(),
            heartbeat_ms: None,
            sweep_ms: None,
        }
    }

    /// Values that mean something: `Err((key, message))` names the key
    /// (within `[cluster]`) and says what is expected.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(MIN_NODE_TTL_SECS..=MAX_NODE_TTL_SECS).contains(&self.node_ttl_secs) {
            return Err((
                "node_ttl_secs",
                format!(
                    "node_ttl_secs is {}, expected {MIN_NODE_TTL_SECS} to {MAX_NODE_TTL_SECS} seconds",
                    self.node_ttl_secs
                ),
            ));
        }
        let ttl_ms = self.node_ttl_secs * 1000;
        if let Some(ms) = self.heartbeat_ms
            && (ms == 0 || ms * 2 > ttl_ms)
        {
            return Err((
                "heartbeat_ms",
                format!(
                    "heartbeat_ms is {ms}, expected 1 to {} (at most half of node_ttl_secs: a \
                     node must be able to renew its lease at least twice before it lapses)",
                    ttl_ms / 2
                ),
            ));
        }
        if let Some(ms) = self.sweep_ms
            && (ms == 0 || ms > ttl_ms)
        {
            return Err((
                "sweep_ms",
                format!("sweep_ms is {ms}, expected 1 to {ttl_ms} (node_ttl_secs in milliseconds)"),
            ));
        }
        if let Some(name) = &self.name
            && name.trim().is_empty()
        {
            return Err((
                "name",
                "the node's name is empty; leave it out to use the host name".to_string(),
            ));
        }
        Ok(())
    }

    /// The store every node shares.
    pub fn store(&self) -> StoreLocation {
        StoreLocation::Postgres(self.postgres_url.clone())
    }

    /// How long a node's lease lasts.
    pub fn node_ttl(&self) -> Duration {
        Duration::from_secs(self.node_ttl_secs)
    }

    /// How often the lease is renewed: a third of the TTL unless set.
    pub fn heartbeat(&self) -> Duration {
        self.heartbeat_ms
            .map(Duration::from_millis)
            .unwrap_or_else(|| self.node_ttl() / 3)
    }

    /// How often this node sweeps (before jitter): about a second, never
    /// more than a third of the TTL, unless set.
    pub fn sweep(&self) -> Duration {
        self.sweep_ms
            .map(Duration::from_millis)
            .unwrap_or_else(|| Duration::from_secs(1).min(self.node_ttl() / 3))
    }

    /// The cluster's name in its NATS subjects: as configured, else
    /// `agentbus`.
    pub fn namespace(&self) -> ClusterName {
        self.nats_namespace.clone().unwrap_or_default()
    }

    /// The node's name: as configured, else the host name, else `agentbus`.
    pub fn node_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.trim().to_string();
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|name| name.trim().to_string())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "agentbus".to_string())
    }
}

fn postgres_url<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PostgresUrl, D::Error> {
    match StoreLocation::deserialize(deserializer)? {
        StoreLocation::Postgres(url) => Ok(url),
        StoreLocation::Sqlite(_) => Err(serde::de::Error::custom(
            "expected a Postgres URL (postgres://USER[:PASSWORD]@HOST:PORT/DATABASE): every node \
             of a cluster keeps its sessions in one Postgres database",
        )),
    }
}

fn shown_postgres_url<S: Serializer>(url: &PostgresUrl, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&url.to_string())
}

/// A cluster's name as its NATS subjects carry it (`ab.<name>.…`),
/// checked to be one subject token: a name with a `.`, `*`, `>` or a space
/// would address other subjects, or many at once.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ClusterName(String);

/// A cluster name that cannot be one NATS subject token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cluster name {name:?} cannot be used: it must be 1 to {max} ASCII letters, digits, '-' or \
     '_' (it becomes one token of the NATS subjects ab.NAME.…, where '.', '*', '>' and spaces \
     have meanings of their own)",
    max = ClusterName::MAX_LEN
)]
pub struct ClusterNameError {
    pub name: String,
}

impl ClusterName {
    /// The longest name accepted: room to spare under NATS's subject limits.
    pub const MAX_LEN: usize = 64;

    /// `name` if it is 1 to [`MAX_LEN`](Self::MAX_LEN) ASCII letters,
    /// digits, `-` or `_`.
    pub fn new(name: impl Into<String>) -> Result<Self, ClusterNameError> {
        let name = name.into();
        let fits = !name.is_empty()
            && name.len() <= Self::MAX_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if fits {
            Ok(ClusterName(name))
        } else {
            Err(ClusterNameError { name })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for ClusterName {
    /// `agentbus`: one cluster per NATS server (or account).
    fn default() -> Self {
        ClusterName("agentbus".to_string())
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ClusterName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ClusterName::new(String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// A NATS server address as configured (`nats://[USER:PASSWORD@]HOST:PORT`,
/// or several separated by commas). Shown with whatever precedes an `@`
/// in each address (a user and password, or a token) replaced by `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct NatsAddress(String);

impl NatsAddress {
    /// The address as written, credentials included: for connecting only.
    pub fn secret_text(&self) -> &str {
        &self.0
    }

    fn redacted(&self) -> String {
        self.0
            .split(',')
            .map(|part| redact_nats_address(part.trim()))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// One NATS server address with whatever precedes an `@` in its authority
/// (a user and password, or a token) shown as `***`; the rest as given.
pub fn redact_nats_address(address: &str) -> String {
    let (scheme, rest) = match address.find("://") {
        Some(at) => address.split_at(at + 3),
        None => ("", address),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rfind('@') {
        Some(at) => format!("{scheme}***{}{tail}", &authority[at..]),
        None => address.to_string(),
    }
}

impl fmt::Display for NatsAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for NatsAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NatsAddress({:?})", self.redacted())
    }
}

impl Serialize for NatsAddress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.redacted())
    }
}

impl<'de> Deserialize<'de> for NatsAddress {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.split(',').all(|part| part.trim().is_empty()) {
            return Err(serde::de::Error::custom(
                "it is empty; give the NATS server's address, e.g. nats://127.0.0.1:4222",
            ));
        }
        Ok(NatsAddress(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[cluster]` from `key = value` lines (JSON values).
    fn settings(lines: &str) -> Result<ClusterSettings, String> {
        let fields: Vec<String> = lines
            .lines()
            .filter_map(|line| line.split_once(" = "))
            .map(|(key, value)| format!("\"{}\": {}", key.trim(), value.trim()))
            .collect();
        serde_json::from_str::<ClusterSettings>(&format!("{{{}}}", fields.join(",")))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn cluster_names_that_are_not_one_token_are_refused_saying_what_is_allowed() {
        for bad in [
            "", "a.b", "*", ">", "a b", "a\tb", "ab\n", "é", "a*", "a>", "a/b",
        ] {
            let err = ClusterName::new(bad).unwrap_err();
            assert_eq!(err, ClusterNameError { name: bad.into() });
            let text = err.to_string();
            assert!(text.contains("ASCII letters, digits, '-' or '_'"), "{text}");
        }
        assert_eq!(ClusterName::new("A-z_09").unwrap().as_str(), "A-z_09");
        let long = "a".repeat(ClusterName::MAX_LEN + 1);
        assert!(ClusterName::new(long).is_err());
        assert!(ClusterName::new("a".repeat(ClusterName::MAX_LEN)).is_ok());
    }

    #[test]
    fn the_nats_namespace_is_agentbus_unless_set_and_checked_where_it_is_read() {
        let s = settings("postgres_url = \"postgres://u@h/db\"").expect("reads");
        assert_eq!(s.namespace().as_str(), "agentbus");
        let s = settings("postgres_url = \"postgres://u@h/db\"\nnats_namespace = \"prod-eu\"")
            .expect("reads");
        assert_eq!(s.namespace().as_str(), "prod-eu");
        let err =
            settings("postgres_url = \"postgres://u@h/db\"\nnats_namespace = \"a.b\"").unwrap_err();
        assert!(err.contains("cluster name \"a.b\" cannot be used"), "{err}");
    }

    #[test]
    fn intervals_follow_the_ttl_unless_set() {
        let s = settings("postgres_url = \"postgres://u@h/db\"").expect("reads");
        assert_eq!(s.node_ttl(), Duration::from_secs(10));
        assert_eq!(s.heartbeat(), Duration::from_secs(10) / 3);
        assert_eq!(s.sweep(), Duration::from_secs(1));
        assert_eq!(s.check(), Ok(()));
        let s =
            settings("postgres_url = \"postgres://u@h/db\"\nnode_ttl_secs = 2\nheartbeat_ms = 300")
                .expect("reads");
        assert_eq!(s.heartbeat(), Duration::from_millis(300));
        assert_eq!(s.sweep(), Duration::from_secs(2) / 3);
    }

    #[test]
    fn values_that_cannot_work_name_their_key() {
        let base = "postgres_url = \"postgres://u@h/db\"\n";
        for (extra, key) in [
            ("node_ttl_secs = 1", "node_ttl_secs"),
            ("node_ttl_secs = 100000", "node_ttl_secs"),
            ("heartbeat_ms = 6000", "heartbeat_ms"),
            ("heartbeat_ms = 0", "heartbeat_ms"),
            ("sweep_ms = 20000", "sweep_ms"),
            ("name = \"  \"", "name"),
        ] {
            let s = settings(&format!("{base}{extra}")).expect("reads");
            assert_eq!(s.check().map_err(|(k, _)| k), Err(key), "{extra}");
        }
        let e = settings("postgres_url = \"sessions.db\"").expect_err("a path");
        assert!(e.contains("expected a Postgres URL"), "{e}");
        let e =
            settings("postgres_url = \"postgres://u@h/db\"\nnats_url = \"\"").expect_err("empty");
        assert!(e.contains("it is empty"), "{e}");
    }

    #[test]
    fn passwords_in_either_url_are_never_shown() {
        let s = settings(
            "postgres_url = \"postgres://u:pg-secret@h/db\"\n\
             nats_url = \"nats://me:nats-secret@h:4222, nats://tok-secret@g:4222,h2:4222\"",
        )
        .expect("reads");
        let shown = format!("{s:?} {}", serde_json::to_string(&s).expect("serialises"));
        for secret in ["pg-secret", "nats-secret", "tok-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert_eq!(
            s.nats_url.as_ref().map(ToString::to_string).as_deref(),
            Some("nats://***@h:4222,nats://***@g:4222,h2:4222")
        );
        assert!(
            s.nats_url
                .is_some_and(|n| n.secret_text().contains("nats-secret"))
        );
    }
}
