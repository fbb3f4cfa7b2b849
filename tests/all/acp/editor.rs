//! An editor for the tests: the `agent-client-protocol` crate's client
//! side connected to a real `agentbus acp` process over its stdio. It
//! answers permission requests and `fs/*` as the test says, and keeps
//! every update it is sent.

use crate::support::{Fixture, GUARD};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest, NewSessionRequest,
    PermissionOptionId, PromptRequest, PromptResponse, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionId, SessionNotification, SessionUpdate, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// How the editor answers.
#[derive(Clone, Debug, Default)]
pub struct Behaviour {
    /// The option permission requests are answered with; `None`: never
    /// answered (the editor waits for the request to be cancelled, then
    /// answers `cancelled` as ACP asks).
    pub permission: Option<&'static str>,
    /// The editor's buffers, by absolute path: with them it offers
    /// `fs/read_text_file` and `fs/write_text_file` (a read of a path
    /// without a buffer is an error).
    pub buffers: Option<HashMap<PathBuf, String>>,
}

/// What the editor was sent.
#[derive(Debug, Default)]
pub struct Seen {
    pub updates: Vec<SessionUpdate>,
    pub permission_requests: Vec<RequestPermissionRequest>,
    /// Permission requests the agent cancelled.
    pub withdrawn: usize,
    pub reads: Vec<PathBuf>,
    pub writes: Vec<(PathBuf, String)>,
}

impl Seen {
    /// The text of every `agent_message_chunk`, joined.
    pub fn agent_text(&self) -> String {
        self.updates
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::AgentMessageChunk(c) => match &c.content {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }
}

/// The editor's side of the connection, shared with its handlers.
#[derive(Clone)]
pub struct Editor {
    seen: Arc<Mutex<Seen>>,
    changed: Arc<watch::Sender<u64>>,
    buffers: Arc<Mutex<HashMap<PathBuf, String>>>,
}

impl Editor {
    fn new(buffers: HashMap<PathBuf, String>) -> Editor {
        Editor {
            seen: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
            buffers: Arc::new(Mutex::new(buffers)),
        }
    }

    pub fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().expect("the editor's log")
    }

    /// Take what was seen so far (the log starts empty again).
    pub fn take(&self) -> Seen {
        std::mem::take(&mut *self.seen())
    }

    fn record(&self, write: impl FnOnce(&mut Seen)) {
        write(&mut self.seen());
        self.changed.send_modify(|n| *n += 1);
    }

    /// Wait until what was seen satisfies `pred`.
    pub async fn wait_until(&self, pred: impl Fn(&Seen) -> bool) {
        let mut changed = self.changed.subscribe();
        let waited = tokio::time::timeout(GUARD, changed.wait_for(|_| pred(&self.seen()))).await;
        assert!(
            matches!(waited, Ok(Ok(_))),
            "the editor waited in vain; it saw {:#?}",
            self.seen()
        );
    }
}

/// Run `test` as an editor connected to `agentbus acp AGENT_ARGS` (with the
/// fixture's config, workspace and data dir); then close the connection
/// and check the agent exits cleanly.
pub async fn with_editor<R>(
    fx: &Fixture,
    agent_args: &[&str],
    behaviour: Behaviour,
    test: impl AsyncFnOnce(ConnectionTo<Agent>, Editor) -> Result<R, Error>,
) -> R {
    let mut args = vec!["acp"];
    args.extend_from_slice(agent_args);
    let mut child = fx
        .command(&args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn agentbus acp");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text).await;
        text
    });
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let offers_files = behaviour.buffers.is_some();
    let editor = Editor::new(behaviour.buffers.clone().unwrap_or_default());
    let (on_update, on_permission, on_read, on_write) = (
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
    );
    let answer = behaviour.permission;
    let outcome = tokio::time::timeout(
        GUARD * 2,
        Client
            .v1()
            .name("test-editor")
            .on_receive_notification(
                async move |notification: SessionNotification, _cx| {
                    on_update.record(|seen| seen.updates.push(notification.update));
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest, responder, cx| {
                    on_permission.record(|seen| seen.permission_requests.push(request));
                    match answer {
                        Some(option) => responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                                PermissionOptionId::new(option),
                            )),
                        )),
                        None => {
                            let cancellation = responder.cancellation();
                            let editor = on_permission.clone();
                            cx.spawn(async move {
                                cancellation.cancelled().await;
                                editor.record(|seen| seen.withdrawn += 1);
                                responder.respond(RequestPermissionResponse::new(
                                    RequestPermissionOutcome::Cancelled,
                                ))
                            })
                        }
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ReadTextFileRequest, responder, _cx| {
                    on_read.record(|seen| seen.reads.push(request.path.clone()));
                    let text = on_read
                        .buffers
                        .lock()
                        .expect("buffers")
                        .get(&request.path)
                        .cloned();
                    match text {
                        Some(text) => responder.respond(ReadTextFileResponse::new(text)),
                        None => responder.respond_with_error(Error::new(
                            agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
                            format!("no buffer for {}", request.path.display()),
                        )),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: WriteTextFileRequest, responder, _cx| {
                    on_write.record(|seen| {
                        seen.writes
                            .push((request.path.clone(), request.content.clone()))
                    });
                    on_write
                        .buffers
                        .lock()
                        .expect("buffers")
                        .insert(request.path, request.content);
                    responder.respond(WriteTextFileResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(transport, async move |cx| {
                initialize(&cx, offers_files).await?;
                test(cx, editor).await
            }),
    )
    .await;
    let result = match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => panic!(
            "the editor's connection failed: {e:?}\nagentbus's stderr:\n{}",
            stderr.await.unwrap_or_default()
        ),
        Err(_) => panic!(
            "the editor's test did not finish\nagentbus's stderr:\n{}",
            stderr.await.unwrap_or_default()
        ),
    };
    // The connection is closed: agentbus acp ends, cleanly.
    let status = tokio::time::timeout(GUARD, child.wait())
        .await
        .expect("agentbus acp did not exit when its stdin closed")
        .expect("wait for agentbus acp");
    assert!(
        status.success(),
        "agentbus acp exited with {status}; stderr:\n{}",
        stderr.await.unwrap_or_default()
    );
    result
}

async fn initialize(cx: &ConnectionTo<Agent>, files: bool) -> Result<(), Error> {
    let fs = FileSystemCapabilities::new()
        .read_text_file(files)
        .write_text_file(files);
    cx.send_request(
        InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(ClientCapabilities::new().fs(fs)),
    )
    .block_task()
    .await?;
    Ok(())
}

/// A new session in `cwd`.
pub async fn new_session(
    cx: &ConnectionTo<Agent>,
    cwd: &std::path::Path,
) -> Result<SessionId, Error> {
    Ok(cx
        .send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await?
        .session_id)
}

/// A text prompt, to its answer.
pub async fn prompt(
    cx: &ConnectionTo<Agent>,
    session: &SessionId,
    text: &str,
) -> Result<PromptResponse, Error> {
    cx.send_request(PromptRequest::new(
        session.clone(),
        vec![ContentBlock::from(text)],
    ))
    .block_task()
    .await
}
