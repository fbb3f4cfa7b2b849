//! A front end's hold on one session, wherever it runs.
//!
//! [`Attached`] is a session's one door (`SessionDoor`) plus the channel
//! its events arrive on, fed by a UiSink, the same whether the session
//! lives in this process or in an `agentbus serve` daemon (whose door
//! follows its SSE stream: `remote/door.rs`). Inputs and interrupts go
//! through the door. A front end replaces its `Attached`
//! when a command switches sessions (`/new`, `/resume`, `/fork`, `/load`).

use super::input_ends::InputEnd;
use crate::remote::RemoteClient;
use crate::remote::door::DaemonSession;
use crate::remote::events::Connection;
use agentbus_engine::SessionHandle;
use agentbus_engine::protocol::{AgentMessage, EventEnvelope, InputId, SessionId, SystemSubtype};
use agentbus_engine::runtime::{
    ChannelFrontEnd, EventSource, Files, SessionDoor, UiSink, attach_channel,
};
use kameo::actor::ActorRef;
use std::sync::Arc;
use tokio::sync::mpsc::Receiver;
use tokio::sync::watch;

/// Which events an attach starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The whole story: what the session held, then what happens.
    Beginning,
    /// What this load does, and what happens from now on.
    ThisLoad,
}

/// Where the replay of what a session already held ends (for
/// [`Start::Beginning`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Catchup {
    /// At the `session_started` event after this seq: attaching loaded the
    /// session, and the load announces itself after the stored events.
    StartedAfter(u64),
    /// At this seq: the session was loaded already.
    Through(u64),
}

impl Catchup {
    /// The last seq that was history when attaching.
    pub fn history_until(self) -> u64 {
        match self {
            Catchup::StartedAfter(seq) | Catchup::Through(seq) => seq,
        }
    }

    /// Whether `event` is the last one of the replay.
    pub fn reached_by(self, event: &EventEnvelope) -> bool {
        match self {
            Catchup::StartedAfter(seq) => {
                event.seq > seq
                    && matches!(&event.message, AgentMessage::System(s) if s.subtype == SystemSubtype::SessionStarted)
            }
            Catchup::Through(seq) => event.seq >= seq,
        }
    }

    /// Whether there is nothing to replay.
    pub fn is_empty(self) -> bool {
        self == Catchup::Through(0)
    }
}

/// A session and the channel its events arrive on.
pub struct Attached {
    pub events: Receiver<Arc<EventEnvelope>>,
    pub catchup: Catchup,
    /// How the connection to the server is doing, once
    /// [`watch_connection`](Self::watch_connection) was called.
    pub connection: Option<watch::Receiver<Connection>>,
    /// The one way to the session, wherever it runs.
    door: Arc<dyn SessionDoor>,
    /// The session's handle when this process drives it: what only such a
    /// session does (file tools through this front end, its model read
    /// from its state).
    here: Option<SessionHandle>,
    /// The daemon's session, when it runs in a server: how the connection
    /// is doing.
    daemon: Option<Arc<DaemonSession>>,
    _sink: ActorRef<UiSink<Arc<dyn SessionDoor>, ChannelFrontEnd>>,
}

impl Attached {
    /// Follow an in-process session.
    pub fn local(session: SessionHandle, start: Start) -> Attached {
        let loaded_after = session.loaded_after();
        let after = match start {
            Start::Beginning => 0,
            Start::ThisLoad => loaded_after,
        };
        let door: Arc<dyn SessionDoor> = Arc::new(session.clone());
        Attached::through(
            door,
            after,
            Catchup::StartedAfter(loaded_after),
            Some(session),
            None,
        )
    }

    /// Follow a session of a server, from `after`, the replay ending as
    /// `catchup` says.
    pub fn remote(client: &RemoteClient, id: SessionId, after: u64, catchup: Catchup) -> Attached {
        let daemon = Arc::new(DaemonSession::follow(client, id, after));
        let door: Arc<dyn SessionDoor> = daemon.clone();
        Attached::through(door, after, catchup, None, Some(daemon))
    }

    /// The session's events after `after`, through a feed of its door.
    fn through(
        door: Arc<dyn SessionDoor>,
        after: u64,
        catchup: Catchup,
        here: Option<SessionHandle>,
        daemon: Option<Arc<DaemonSession>>,
    ) -> Attached {
        let (sink, events) = attach_channel(&door, after);
        Attached {
            events,
            catchup,
            connection: None,
            door,
            here,
            daemon,
            _sink: sink,
        }
    }

    /// Follow how the connection to the server is doing in
    /// [`connection`](Self::connection), for a front end that shows it
    /// (breaks are then not logged as warnings). Nothing for a session in
    /// this process. A break already under way shows as a change.
    pub fn watch_connection(&mut self) {
        if let Some(daemon) = &self.daemon {
            let mut connection = daemon.connection();
            if *connection.borrow() != Connection::Up {
                connection.mark_changed();
            }
            self.connection = Some(connection);
        }
    }

    /// Send a query with images (`run --image`).
    pub async fn submit_query(
        &self,
        text: String,
        images: Vec<agentbus_engine::protocol::Image>,
    ) -> anyhow::Result<InputId> {
        Ok(self.door.submit_query(text, images).await?)
    }

    /// Queue text typed by the user (slash commands included).
    pub async fn submit_text(&self, text: String) -> anyhow::Result<InputId> {
        Ok(self.door.submit_text(&text).await?)
    }

    /// Queue a control command (what a picker chose), as typed commands
    /// are: it waits its turn in the session's queue.
    pub async fn submit_control(
        &self,
        command: agentbus_engine::protocol::ControlCommand,
    ) -> anyhow::Result<InputId> {
        Ok(self.door.submit_control(command).await?)
    }

    /// Answer approval request `request_id` (the first answer wins).
    pub async fn decide(
        &self,
        request_id: &str,
        decision: agentbus_engine::protocol::ApprovalDecision,
    ) -> anyhow::Result<()> {
        Ok(self.door.decide(request_id, decision).await?)
    }

    /// Make the session's file tools read and write through `files` (a
    /// front end that holds the files). `false` when that cannot be: the
    /// session runs in a server, whose tools cannot reach this front end.
    pub async fn use_files(&self, files: Files) -> anyhow::Result<bool> {
        match &self.here {
            Some(session) => {
                session.use_files(files).await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The model profile the session uses now, when it runs in this
    /// process (`None` for a server's session).
    pub async fn local_model(&self) -> Option<String> {
        let session = self.here.as_ref()?;
        session.snapshot().await.ok().map(|state| state.model)
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        self.door.session_id()
    }

    /// Cancel the running turn.
    pub async fn interrupt(&self) -> anyhow::Result<()> {
        Ok(self.door.interrupt().await?)
    }
}

/// The session a command's reply says to switch to (`data.switch_to`).
pub fn switch_target(end: &InputEnd) -> Option<SessionId> {
    match end {
        InputEnd::Reply(reply) => reply.switch_to(),
        InputEnd::Result(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::sse::{Event, Sse};
    use std::convert::Infallible;
    use std::time::Duration;

    /// Only so a broken build fails instead of hanging.
    const GUARD: Duration = Duration::from_secs(30);

    /// Counts a daemon's open event streams: one while it lives.
    struct Open(Arc<watch::Sender<usize>>);

    impl Open {
        fn new(count: &Arc<watch::Sender<usize>>) -> Open {
            count.send_modify(|n| *n += 1);
            Open(count.clone())
        }
    }

    impl Drop for Open {
        fn drop(&mut self) {
            self.0.send_modify(|n| *n -= 1);
        }
    }

    #[tokio::test]
    async fn a_dropped_hold_on_a_daemons_session_ends_its_event_stream() {
        let count = Arc::new(watch::Sender::new(0usize));
        let streams = count.clone();
        let app = axum::Router::new().route(
            "/v1/sessions/s1/events",
            axum::routing::get(move || {
                let open = Open::new(&streams);
                // Nothing to say, ever: the stream lives as long as the
                // client keeps its connection.
                let stream = futures::stream::pending::<Result<Event, Infallible>>();
                let stream = futures::StreamExt::map(stream, move |e| {
                    let _ = &open;
                    e
                });
                async move { Sse::new(stream) }
            }),
        );
        let url = crate::remote::fake_daemon(app).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let client = RemoteClient::new(&url, dir.path()).expect("client");
        let mut open = count.subscribe();

        let attached = Attached::remote(&client, SessionId("s1".into()), 0, Catchup::Through(0));
        tokio::time::timeout(GUARD, open.wait_for(|n| *n == 1))
            .await
            .expect("the stream opened in time")
            .expect("the count lives");
        drop(attached);
        tokio::time::timeout(GUARD, open.wait_for(|n| *n == 0))
            .await
            .expect("the stream closed once the hold on the session was dropped")
            .expect("the count lives");
    }
}
