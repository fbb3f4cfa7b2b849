//! How one process stops, in the one order that loses nothing:
//!
//! 1. sessions: running turns end with a stored `cancelled` result, queued
//!    inputs are answered, each session is released (it stays stored), and
//!    the SessionManager stops — after it, nothing is created or loaded;
//!    a node of a cluster then leaves it (its sweeps stopped first, every
//!    session it still owns released, its lease row deleted), so the other
//!    nodes take over at once;
//! 2. MCP servers, configured and given to sessions: each child process is
//!    stopped and reaped (all at once);
//! 3. the ToolExecutor (no session is left to call it);
//! 4. the store, last: every event above was committed through it.
//!
//! `agentbus serve` runs step 1 first on its own (`Runtime::stop_sessions`)
//! so its streams can deliver the final events before the rest stops.

use crate::cluster::Node;
use crate::mcp::given::GivenServers;
use crate::mcp::server::{McpServer, StopServer};
use crate::sessions::manager::{SessionManager, StopAll};
use crate::sessions::stored::StoredSessions;
use crate::tools::executor::ToolExecutor;
use kameo::actor::ActorRef;

/// Stop everything, in order.
pub(super) async fn stop(
    manager: &ActorRef<SessionManager>,
    node: Option<&Node>,
    mcp_servers: &[ActorRef<McpServer>],
    given: &GivenServers,
    tools: &ActorRef<ToolExecutor>,
    stored: &StoredSessions,
) {
    if let Some(node) = node {
        node.stop_sweeping();
    }
    let _ = manager.ask(StopAll).await;
    let _ = manager.stop_gracefully().await;
    manager.wait_for_shutdown().await;
    if let Some(node) = node {
        node.leave().await;
    }
    let configured = futures::future::join_all(mcp_servers.iter().map(|server| async move {
        let _ = server.ask(StopServer).await;
        let _ = server.stop_gracefully().await;
        server.wait_for_shutdown().await;
    }));
    futures::future::join(configured, given.stop_all()).await;
    let _ = tools.stop_gracefully().await;
    tools.wait_for_shutdown().await;
    stored.close().await;
}
