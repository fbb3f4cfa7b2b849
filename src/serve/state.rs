//! What every handler reaches: the runtime, and the signal that the server
//! is shutting down.

use agentbus_engine::Runtime;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The state behind every route.
#[derive(Clone)]
pub struct AppState {
    pub runtime: Arc<Runtime>,
    /// Cancelled when the server shuts down: streams end.
    pub shutdown: CancellationToken,
}
