//! A node's live plane as `agentbus serve` runs it: the connection made
//! from `[cluster] nats_url`, the sessions this node drives served on it,
//! and the sessions other nodes drive followed and reached through it.
//!
//! Exists so that the runtime has one thing to start and to ask: "follow
//! this session", "send this input to its owner". Never claims a session:
//! when nobody answers for one, the caller claims it through the
//! SessionManager as for any session.

use crate::cluster::driven::LiveSessions;
use crate::cluster::error::LiveError;
use crate::cluster::link::Link;
use crate::cluster::live::{LiveOptions, LivePlane};
use crate::cluster::nats_url::NatsUrl;
use crate::cluster::remote_session::{FollowOptions, RemoteSession};
use crate::cluster::route::{InputSender, RouteError, SendOptions};
use crate::cluster::subjects::{ClusterName, Subjects};
use crate::protocol::{InputId, SessionId, SessionInput};
use crate::settings::ClusterSettings;
use crate::store::SessionStore;
use crate::store::cluster::ClusterStore;
use std::sync::Arc;

/// The cluster name in every subject (`ab.agentbus.…`): one deployment per
/// NATS server (or account).
pub const CLUSTER_NAME: &str = "agentbus";

/// A node's live plane.
pub struct NodePlane {
    plane: LivePlane,
    store: Arc<dyn SessionStore>,
    driven: Arc<LiveSessions>,
    follow: FollowOptions,
}

impl NodePlane {
    /// Connects to `settings.nats_url` (`None` without one); an address
    /// that does not parse, or a server that does not answer, is an error
    /// naming the address (without its credentials).
    pub async fn connect(
        settings: &ClusterSettings,
        cluster: Arc<dyn ClusterStore>,
        store: Arc<dyn SessionStore>,
    ) -> Result<Option<NodePlane>, LiveError> {
        let Some(address) = &settings.nats_url else {
            return Ok(None);
        };
        let url = NatsUrl::parse(address.secret_text())?;
        let subjects = Subjects::new(&ClusterName::new(CLUSTER_NAME)?);
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
        Ok(Some(NodePlane {
            driven: Arc::new(LiveSessions::new(plane.clone(), cluster)),
            plane,
            store,
            follow,
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

    /// Follows session `id`, driven by another node, from after
    /// `after_seq`.
    pub async fn follow(&self, id: &SessionId, after_seq: u64) -> Result<RemoteSession, LiveError> {
        RemoteSession::start(
            &self.plane,
            self.store.clone(),
            id.clone(),
            after_seq,
            self.follow,
        )
        .await
    }

    /// Sends `input` to the node that drives session `id`.
    pub async fn send(
        &self,
        id: &SessionId,
        input: SessionInput,
    ) -> Result<Option<InputId>, RouteError> {
        let sender = InputSender::new(self.plane.clone(), id.clone(), SendOptions::default());
        sender.input(input).await
    }
}
