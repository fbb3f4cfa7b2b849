//! The sessions this node drives, served to the other nodes: for each, a
//! [`Relay`] publishing its events and an [`InputRoute`] taking its inputs,
//! started when the session starts here (created, loaded, adopted) and
//! stopped when it stops here (released, unloaded, deleted, fenced,
//! drained) — the SessionManager's [`DrivenSessions`].
//!
//! Exists so that the SessionManager never knows about NATS: it says what
//! starts and stops, this module starts and stops what serves it. Each
//! relay publishes as the owner the store's claim names (this node, the
//! claim's epoch); a session this node holds no claim of is not relayed.
//! Never waits in the SessionManager's handler: the route is served from a
//! task of its own, which also ends both when the session's AgentLoop stops
//! by itself (a fenced commit).

use crate::cluster::live::LivePlane;
use crate::cluster::owner::{Epoch, Owner};
use crate::cluster::relay::{Relay, RelayMeter, RelayStats};
use crate::cluster::route::InputRoute;
use crate::protocol::SessionId;
use crate::session::SessionHandle;
use crate::sessions::driven::DrivenSessions;
use crate::store::cluster::ClusterStore;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long stopping a route may wait for the server while the connection
/// is lost (the route is dropped after it anyway).
const ROUTE_STOP: Duration = Duration::from_secs(2);

/// How long a stopped session's relay may take to send what the session
/// said last.
const RELAY_DRAIN: Duration = Duration::from_secs(2);

/// One session served: its task, and the token that ends it.
struct Served {
    stop: CancellationToken,
    task: JoinHandle<()>,
    meter: RelayMeter,
}

/// The live plane's side of the sessions this node drives.
pub struct LiveSessions {
    plane: LivePlane,
    cluster: Arc<dyn ClusterStore>,
    served: Mutex<HashMap<SessionId, Served>>,
    /// What the relays of sessions no longer served here did.
    ended: Mutex<RelayStats>,
}

impl LiveSessions {
    pub fn new(plane: LivePlane, cluster: Arc<dyn ClusterStore>) -> LiveSessions {
        LiveSessions {
            plane,
            cluster,
            served: Mutex::new(HashMap::new()),
            ended: Mutex::new(RelayStats::default()),
        }
    }

    /// What every relay of this node did so far: the sessions served now
    /// and those served before.
    pub fn relay_totals(&self) -> RelayStats {
        let mut totals = *self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        for served in self.lock().values() {
            totals.add(served.meter.stats());
        }
        totals
    }

    fn ended(&self, meter: &RelayMeter) {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(meter.stats());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Served>> {
        self.served.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl DrivenSessions for LiveSessions {
    fn started(&self, handle: &SessionHandle) {
        let id = handle.id().clone();
        let Some(epoch) = self.cluster.claim_epoch(&id) else {
            tracing::warn!(session = %id, "not served to other nodes: this node holds no claim of it");
            return;
        };
        let owner = Owner {
            epoch: Epoch(epoch),
            node: self.cluster.node(),
        };
        // Subscribed to the topic here, before the handler returns: every
        // event the session publishes from now on is relayed.
        let relay = Relay::for_session(&self.plane, handle, owner);
        let meter = relay.meter();
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(
            self.plane.clone(),
            handle.detached(),
            relay,
            stop.clone(),
        ));
        tracing::debug!(session = %id, %epoch, "serving the session to other nodes");
        let old = self.lock().insert(id, Served { stop, task, meter });
        if let Some(old) = old {
            // A load that took the place of a dead AgentLoop.
            old.stop.cancel();
            self.ended(&old.meter);
        }
    }

    async fn stopped(&self, id: &SessionId) {
        let Some(served) = self.lock().remove(id) else {
            return;
        };
        served.stop.cancel();
        if let Err(e) = served.task.await {
            tracing::warn!(session = %id, error = %e, "serving a session to other nodes failed");
        }
        self.ended(&served.meter);
    }
}

/// Serves `session`'s inputs while it runs here; ends with `relay` when
/// the session stops or `stop` is cancelled.
async fn serve(plane: LivePlane, session: SessionHandle, relay: Relay, stop: CancellationToken) {
    let route = tokio::select! {
        biased;
        () = stop.cancelled() => None,
        route = InputRoute::serve(&plane, &session) => match route {
            Ok(route) => Some(route),
            Err(e) => {
                tracing::warn!(session = %session.id(), error = %e, "inputs from other nodes are not served");
                None
            }
        },
    };
    // A session that stopped (released, drained, fenced: it stops before
    // it is said to) has its last events relayed; a session still running
    // when it is said to stop is cut off at once.
    let stopped_by_itself = tokio::select! {
        biased;
        () = session.wait_stopped() => true,
        () = stop.cancelled() => false,
    };
    // Inputs first: from now on another node gets *no responders*.
    if let Some(route) = route
        && let Err(e) = route.stop(ROUTE_STOP).await
    {
        tracing::warn!(session = %session.id(), error = %e, "stopping the input route");
    }
    let (end, stats) = if stopped_by_itself {
        // What it said last is on its topic, which closed: sent, then done.
        match tokio::time::timeout(RELAY_DRAIN, relay.finished()).await {
            Ok(ended) => ended,
            Err(_) => return,
        }
    } else {
        relay.stop().await
    };
    tracing::debug!(session = %session.id(), ?end, ?stats, "no longer serving the session to other nodes");
}
