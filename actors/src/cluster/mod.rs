//! `agentbus serve` as one node of a cluster (docs/cluster.md): who drives
//! which session, and what the nodes say to each other.
//!
//! - `ownership/`: this process as a node — its lease kept in Postgres,
//!   the node fenced when the lease cannot be trusted, the sweeps that
//!   hand a gone node's sessions to the living (docs/cluster.md,
//!   "Ownership and failover"). The claims themselves are the store's
//!   (`store/postgres/claims.rs`).
//!
//! The rest is the live plane (docs/cluster.md, "The live plane (NATS)"):
//! what the nodes say to each other over NATS core — never what they keep
//! (Postgres holds that, in `store/`).
//!
//! - `subjects.rs`: the subject layout, `ab.<cluster>.…`, checked token by
//!   token.
//! - `owner.rs`: the owner (epoch, node) every live event carries in its
//!   headers.
//! - `follow.rs`: a follower's reconciliation of the store's replay with
//!   the owner's live messages, as a pure state machine.
//! - `live.rs`: a node's connection (async-nats, core only): publish a
//!   session's events with their owner, follow one session, the
//!   lifecycle; `inputs.rs`: inputs as request/reply to the owner, and the
//!   owner's side serving them; `link.rs`: the connection's state to
//!   watch (a node cut off from NATS must release its sessions);
//!   `nats_url.rs`: the server's address, never shown with its
//!   credentials; `error.rs`: what fails, naming subject and server.
//! - `relay.rs`: the owner's side — a session's local topic published on
//!   its `.ev` subject, as its owner.
//! - `remote_session.rs`: the follower's side — a session another node
//!   owns, mirrored into a local topic by the follow protocol, its inputs
//!   sent to the owner.
//! - `route.rs`: inputs across nodes — the owner serving `.in` with its
//!   local session (each `input_uuid` taken once), a non-owner sending
//!   there and telling *no responders* apart.
//! - `driven.rs`: the sessions this node drives, each served (relay and
//!   route) from its start here to its stop — the SessionManager's
//!   `DrivenSessions`; `node_plane.rs`: `NodePlane`, the live plane as
//!   `agentbus serve` runs it (connected from `[cluster] nats_url`; follow
//!   a session, send an input to its owner).
//! - `lifecycle.rs`: lifecycle events across nodes — this node's published
//!   on `ab.<cluster>.lifecycle`, the others' merged into the local
//!   lifecycle topic (`GET /v1/events`), none twice, none sent round.
//!
//! Nothing in the live plane owns a session, claims one or writes to the
//! store: it moves messages, reads the store to fill what the network
//! lost, and says what the connection is doing; the session manager
//! decides what to do about it.

mod driven;
mod error;
mod follow;
mod inputs;
mod lifecycle;
mod link;
mod live;
mod nats_url;
mod node_plane;
mod owner;
mod ownership;
mod relay;
mod remote_session;
mod route;
mod subjects;

pub use error::LiveError;
pub use lifecycle::LifecycleStats;
pub use link::{Link, LinkState};
pub use node_plane::{LiveStats, NodePlane};
pub use ownership::Node;
pub use relay::RelayStats;
pub use remote_session::FollowStats;

#[cfg(test)]
mod follow_tests;
#[cfg(test)]
mod lifecycle_tests;
#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod relay_tests;
#[cfg(test)]
mod route_tests;
#[cfg(test)]
mod test_nodes;
