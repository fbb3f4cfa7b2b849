//! What happens to sessions as a whole, on the runtime's lifecycle topic
//! (`GET /v1/events`): one event per change, with its own gap-free `seq`.
//!
//! On a node of a cluster the topic also carries the other nodes' events
//! (merged from the live plane, `cluster/lifecycle.rs`), each naming the
//! node that drives the session; seqs are the receiving node's own.

use super::SessionId;
use serde::{Deserialize, Serialize};

/// One change of one session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LifecycleEvent {
    /// This node's seq: gap-free on one node, and each node has its own
    /// (the same change has another seq on another node's stream).
    pub seq: u64,
    pub session_id: SessionId,
    pub kind: LifecycleKind,
    /// On a node of a cluster: the name (`[cluster] name`) of the node that
    /// said it — the one that drives the session (for `created` and
    /// `deleted`: the one that made or deleted it). Absent without a
    /// cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// With `approvals`: how many tool calls of the session wait for the
    /// user's answer now (0: none any more). Absent with the other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approvals: Option<u32>,
    /// Who did it: the name of the API token that created (or forked) the
    /// session with `created`, deleted it with `deleted`, renamed it with
    /// `renamed`. Absent with the other kinds, and when it was done without
    /// a token (the command line, ACP, the agent itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleKind {
    /// A new session exists.
    Created,
    /// A turn or command started running.
    Busy,
    /// Nothing runs and nothing is queued any more.
    Idle,
    /// Unloaded from memory (it stays stored).
    Closed,
    /// Deleted from the store.
    Deleted,
    /// Its title changed (`PATCH /v1/sessions/{id}`).
    Renamed,
    /// On a node of a cluster: the node named took the session over —
    /// claimed it (opened, or sent an input, while no live node drove it)
    /// or adopted it from a gone node — and drives it from now on. Nothing
    /// runs then (a turn the previous owner left open was closed by the
    /// load): a `busy` follows if inputs were waiting. The session's log
    /// opens the same epoch with its `system` `owner_changed` event.
    OwnerChanged,
    /// A tool call started or stopped waiting for the user's approval:
    /// `pending_approvals` says how many wait now.
    Approvals,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_node_the_json_is_what_it_always_was() {
        let id = SessionId::new();
        let event = LifecycleEvent {
            seq: 7,
            session_id: id.clone(),
            kind: LifecycleKind::Busy,
            node: None,
            pending_approvals: None,
            by: None,
        };
        let json = serde_json::to_string(&event).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"seq":7,"session_id":"{id}","kind":"busy"}}"#)
        );
        let back: LifecycleEvent = serde_json::from_str(&json).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn on_a_cluster_the_node_is_named() {
        let id = SessionId::new();
        let event = LifecycleEvent {
            seq: 8,
            session_id: id.clone(),
            kind: LifecycleKind::OwnerChanged,
            node: Some("node-b".into()),
            pending_approvals: None,
            by: None,
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["kind"], "owner_changed");
        assert_eq!(json["node"], "node-b");
        assert_eq!(
            serde_json::from_value::<LifecycleEvent>(json).unwrap(),
            event
        );
    }

    #[test]
    fn who_did_it_is_named_when_a_token_did() {
        let id = SessionId::new();
        let event = LifecycleEvent {
            seq: 9,
            session_id: id.clone(),
            kind: LifecycleKind::Deleted,
            node: None,
            pending_approvals: None,
            by: Some("ci-bot".into()),
        };
        let json = serde_json::to_string(&event).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"seq":9,"session_id":"{id}","kind":"deleted","by":"ci-bot"}}"#)
        );
        let back: LifecycleEvent = serde_json::from_str(&json).unwrap();
        assert_eq!(back, event);
    }
}
