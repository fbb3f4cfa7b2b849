//! A node's live plane as `agentbus serve` runs it: the connection made
//! from `[cluster] nats_url`, the sessions this node drives served on it,
//! the sessions other nodes drive followed and reached through it, and the
//! lifecycle events of every node merged (`lifecycle.rs`).
//!
//! Exists so that the runtime has one thing to start and to ask: "follow
//! this session", "send this input to its owner". A session is followed
//! once per node, however many of its clients are attached here (one NATS
//! subscription, one mirror; each client subscribes to the mirror from its
//! own seq), and no longer once the last of them has left. Never claims a
//! session:
//! when nobody answers for one, the caller claims it through the
//! SessionManager as for any session.

use crate::bus::LifecycleTopic;
use crate::cluster::driven::LiveSessions;
use crate::cluster::error::LiveError;
use crate::cluster::lifecycle::LifecycleBridge;
use crate::cluster::lifecycle::LifecycleStats;
use crate::cluster::link::Link;
use crate::cluster::live::{LiveOptions, LivePlane};
use crate::cluster::nats_url::NatsUrl;
use crate::cluster::relay::RelayStats;
use crate::cluster::remote_session::{
    FollowMeter, FollowOptions, FollowStats, RemoteSession, WeakRemoteSession,
};
use crate::cluster::route::{InputSender, RouteError, SendOptions};
use crate::cluster::subjects::Subjects;
use crate::protocol::{InputId, SessionId, SessionInput};
use crate::settings::ClusterSettings;
use crate::store::SessionStore;
use crate::store::cluster::ClusterStore;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A node's live plane.
pub struct NodePlane {
    plane: LivePlane,
    store: Arc<dyn SessionStore>,
    driven: Arc<LiveSessions>,
    follow: FollowOptions,
    /// The sessions followed from this node, while a client follows them.
    followed: Mutex<Followed>,
    /// This node's lifecycle events published, the others' merged.
    lifecycle: LifecycleBridge,
}

/// The followers of a node: those in use, and what the ended ones did.
#[derive(Default)]
struct Followed {
    now: HashMap<SessionId, (WeakRemoteSession, FollowMeter)>,
    ended: FollowStats,
}

impl Followed {
    /// The follower of session `id`, while a client uses it.
    fn get(&self, id: &SessionId) -> Option<RemoteSession> {
        self.now.get(id).and_then(|(session, _)| session.upgrade())
    }

    /// Forgets the followers nobody uses any more, keeping their counts.
    fn prune(&mut self) {
        let ended = &mut self.ended;
        self.now.retain(|_, (session, meter)| {
            let alive = session.upgrade().is_some();
            if !alive {
                ended.add(meter.stats());
            }
            alive
        });
    }
}

/// What a node's live plane did so far: its relays (the sessions it
/// drives, published), its followers (sessions other nodes drive, for its
/// clients) and its lifecycle bridge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// Sessions followed now.
    pub followed: usize,
    pub relays: RelayStats,
    pub followers: FollowStats,
    pub lifecycle: LifecycleStats,
}

impl NodePlane {
    /// Connects to `settings.nats_url` (`None` without one); an address
    /// that does not parse, or a server that does not answer, is an error
    /// naming the address (without its credentials). `lifecycle`, the
    /// runtime's, is merged with the other nodes'.
    pub async fn connect(
        settings: &ClusterSettings,
        cluster: Arc<dyn ClusterStore>,
        store: Arc<dyn SessionStore>,
        lifecycle: Arc<LifecycleTopic>,
    ) -> Result<Option<NodePlane>, LiveError> {
        let Some(address) = &settings.nats_url else {
            return Ok(None);
        };
        let url = NatsUrl::parse(address.secret_text())?;
        let subjects = Subjects::new(&settings.namespace());
        let options = LiveOptions {
            name: format!("agentbus {}", settings.node_name()),
            ..LiveOptions::default()
        };
        let plane = LivePlane::connect(&url, subjects, options).await?;
        tracing::info!(nats = %url, "connected to the live plane");
        let follow = FollowOptions {
            quiet: settings.node_ttl(),
            ..FollowOptions::default()
        };
        let current = cluster.clone();
        let lifecycle =
            LifecycleBridge::start(&plane, lifecycle, Arc::new(move || current.node())).await?;
        Ok(Some(NodePlane {
            driven: Arc::new(LiveSessions::new(plane.clone(), cluster)),
            plane,
            store,
            follow,
            followed: Mutex::new(Followed::default()),
            lifecycle,
        }))
    }

    /// The connection's state, to watch.
    pub fn link(&self) -> Link {
        self.plane.link()
    }

    /// What the SessionManager tells about the sessions it drives.
    pub fn driven(&self) -> Arc<LiveSessions> {
        self.driven.clone()
    }

    /// Follows session `id`, driven by another node, for a client that has
    /// seen its events up to `after_seq`: the follower this node already
    /// runs for it, or a new one starting there. (A client behind where a
    /// follower started gets the older events from the store, as from a
    /// local session's ring.)
    pub async fn follow(&self, id: &SessionId, after_seq: u64) -> Result<RemoteSession, LiveError> {
        if let Some(session) = self.followed(id) {
            return Ok(session);
        }
        let started = RemoteSession::start(
            &self.plane,
            self.store.clone(),
            id.clone(),
            after_seq,
            self.follow,
        )
        .await?;
        // Another client may have started one meanwhile: keep the first.
        let mut followed = self.table();
        if let Some(session) = followed.get(id) {
            return Ok(session);
        }
        followed.prune();
        followed
            .now
            .insert(id.clone(), (started.downgrade(), started.meter()));
        Ok(started)
    }

    /// The follower this node runs for session `id`, if a client uses it.
    fn followed(&self, id: &SessionId) -> Option<RemoteSession> {
        self.table().get(id)
    }

    /// What the live plane did so far.
    pub fn stats(&self) -> LiveStats {
        let (followed, followers) = {
            let mut table = self.table();
            table.prune();
            let mut followers = table.ended;
            for (_, meter) in table.now.values() {
                followers.add(meter.stats());
            }
            (table.now.len(), followers)
        };
        LiveStats {
            followed,
            relays: self.driven.relay_totals(),
            followers,
            lifecycle: *self.lifecycle.stats().borrow(),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Followed> {
        self.followed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `input` to the node that drives session `id`.
    pub async fn send(
        &self,
        id: &SessionId,
        input: SessionInput,
    ) -> Result<Option<InputId>, RouteError> {
        let sender = InputSender::new(self.plane.clone(), id.clone(), SendOptions::default());
        let input_id = sender.input(input).await?;
        if let (Some(input_id), Some(session)) = (input_id, self.followed(id)) {
            session.expect_turn(input_id);
        }
        Ok(input_id)
    }
}
