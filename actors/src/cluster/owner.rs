//! Who published a live message: the owner's fencing epoch and node, as
//! every event on `…s.<sid>.ev` carries them in its headers (`Ab-Epoch`,
//! `Ab-Node`).
//!
//! Exists so that a follower can tell a stale owner's messages (a paused
//! node that woke up after its session was adopted) from the current
//! owner's without asking the store (docs/cluster.md, "Claims and fencing", "Publishing"). The
//! epoch is the store's fencing token (`sessions.epoch`, +1 at every
//! claim); nothing here hands one out. Pure: header text in, values out,
//! never a panic on what a peer sent.

use std::fmt;
use std::str::FromStr;

/// The header carrying the owner's epoch, in decimal.
pub const EPOCH_HEADER: &str = "Ab-Epoch";
/// The header carrying the owner's node id, a hyphenated UUID.
pub const NODE_HEADER: &str = "Ab-Node";

/// A session's fencing epoch: +1 at every claim, so a higher epoch is a
/// newer owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Epoch(pub u64);

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One incarnation of an agentbus process in a cluster: the store's
/// (`nodes.node_id`), whose hyphenated lower-case form is one NATS subject
/// token.
pub use crate::store::cluster::NodeId;

/// The owner that published a message: which claim (epoch) on which node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    pub epoch: Epoch,
    pub node: NodeId,
}

/// Why a message's owner headers could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnerHeaderError {
    #[error("header {name} is missing")]
    Missing { name: &'static str },
    #[error("header {name} is {value:?}, not {expected}")]
    Invalid {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
}

impl Owner {
    /// The owner from the two header values as received (`None`: absent).
    pub fn from_headers(
        epoch: Option<&str>,
        node: Option<&str>,
    ) -> Result<Owner, OwnerHeaderError> {
        let epoch = epoch.ok_or(OwnerHeaderError::Missing { name: EPOCH_HEADER })?;
        let node = node.ok_or(OwnerHeaderError::Missing { name: NODE_HEADER })?;
        let epoch = u64::from_str(epoch.trim()).map_err(|_| OwnerHeaderError::Invalid {
            name: EPOCH_HEADER,
            value: epoch.to_string(),
            expected: "a decimal number",
        })?;
        let node = uuid::Uuid::try_parse(node.trim()).map_err(|_| OwnerHeaderError::Invalid {
            name: NODE_HEADER,
            value: node.to_string(),
            expected: "a UUID",
        })?;
        Ok(Owner {
            epoch: Epoch(epoch),
            node: NodeId(node),
        })
    }

    /// The two header values, `(Ab-Epoch, Ab-Node)`.
    pub fn header_values(&self) -> (String, String) {
        (self.epoch.to_string(), self.node.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_headers_round_trip() {
        let owner = Owner {
            epoch: Epoch(42),
            node: NodeId::new(),
        };
        let (epoch, node) = owner.header_values();
        assert_eq!(epoch, "42");
        assert_eq!(
            Owner::from_headers(Some(&epoch), Some(&node)).unwrap(),
            owner
        );
    }

    #[test]
    fn missing_or_malformed_owner_headers_are_errors_naming_the_header() {
        let node = NodeId::new().to_string();
        assert_eq!(
            Owner::from_headers(None, Some(&node)).unwrap_err(),
            OwnerHeaderError::Missing { name: EPOCH_HEADER }
        );
        assert_eq!(
            Owner::from_headers(Some("1"), None).unwrap_err(),
            OwnerHeaderError::Missing { name: NODE_HEADER }
        );
        for bad in ["", "-1", "1.5", "x", "18446744073709551616"] {
            let err = Owner::from_headers(Some(bad), Some(&node)).unwrap_err();
            assert!(err.to_string().contains("Ab-Epoch"), "{err}");
        }
        for bad in ["", "node-1", "019ab2c4"] {
            let err = Owner::from_headers(Some("1"), Some(bad)).unwrap_err();
            assert!(err.to_string().contains("Ab-Node"), "{err}");
        }
    }
}
