//! `agentbus acp`: an Agent Client Protocol agent on stdio, for editors
//! (Zed, JetBrains, Neovim plugins) and ACP clients such as `acpx`.
//!
//! Sessions run in this process (a [`Runtime`](agentbus_engine::Runtime)
//! of its own), or with `--attach URL` in a running `agentbus serve`, so an
//! editor's sessions are the same sessions the web page and `chat --attach`
//! see — through the same seam the terminal chat uses
//! ([`Backend`], [`Attached`](super::common::attached::Attached)).
//!
//! - [`handshake`]: `initialize` — the version and capabilities.
//! - [`sessions`]: `session/new`, `session/load`, `session/list`.
//! - [`session`]: one task per session — prompts and their answers,
//!   `session/cancel`, `session/set_mode`, and the editor's permission
//!   requests; [`prompt`] what a prompt becomes and how it answers.
//! - [`updates`]: our events as `session/update`s (pure), with
//!   [`tool_calls`] (how a call looks), [`modes`] (the mode picker),
//!   [`config_options`] (the mode, agent and model pickers) and
//!   [`commands`] (the slash commands offered).
//! - [`permission`]: approval requests as `session/request_permission`.
//! - [`client_fs`]: the editor's `fs/*` as the file tools' files.
//! - [`mcp_servers`]: the editor's MCP servers as ours.
//! - [`stdio`]: our stdin and stdout as the transport; an editor that
//!   closes while we still send has gone, which is no error.
//!
//! stdout carries protocol messages and nothing else: logs go to stderr
//! (tracing), and no code here prints. It never ends on SIGINT (a Ctrl-C in
//! the client's terminal reaches it too; the client sends
//! `session/cancel`): it ends when the client closes stdin, stopping the
//! sessions it runs (they stay stored).

mod client_fs;
mod commands;
mod config_options;
mod handshake;
mod mcp_servers;
mod modes;
mod permission;
mod plan;
mod prompt;
mod session;
mod sessions;
mod stdio;
mod tool_calls;
mod updates;
#[cfg(test)]
mod updates_tests;

use super::common::backend::{Attach, Backend, SessionFlags};
use agent_client_protocol::v1::schema::{
    CancelNotification, InitializeRequest, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{Agent, Error, ErrorCode};
use agentbus_engine::Settings;
use anyhow::Context as _;
use std::process::ExitCode;
use std::sync::Arc;

/// Serve ACP on stdio until the client closes it.
pub async fn run(
    settings: Settings,
    attach: Option<Attach>,
    flags: SessionFlags,
) -> anyhow::Result<ExitCode> {
    // Keep SIGINT from ending the process (see the module's doc); the
    // stream must live as long as the connection.
    let mut interrupts = super::common::interrupt_signals()?;
    tokio::spawn(async move {
        while interrupts.recv().await.is_some() {
            tracing::info!("SIGINT ignored: an ACP agent ends when its client closes stdin");
        }
    });
    let models = updates::Models::of(&settings);
    let backend = Backend::start(settings, attach).await?;
    let shared = Arc::new(sessions::Shared::new(backend, models, flags.agent));
    let served = serve(shared.clone()).await;
    shared.close().await;
    served.context("serving the Agent Client Protocol on stdio")?;
    Ok(ExitCode::SUCCESS)
}

/// The connection: one handler per method, each handing the work to a task
/// so that the dispatch loop is never held.
async fn serve(shared: Arc<sessions::Shared>) -> Result<(), Error> {
    let on_initialize = shared.clone();
    let on_new = shared.clone();
    let on_load = shared.clone();
    let on_list = shared.clone();
    let on_prompt = shared.clone();
    let on_mode = shared.clone();
    let on_option = shared.clone();
    let on_cancel = shared;
    Agent
        .v1()
        .name("agentbus")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                let (response, offers) = handshake::answer(&request);
                on_initialize.set_offers(offers);
                responded(responder.respond(response))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let shared = on_new.clone();
                tokio::spawn(async move { shared.new_session(request, responder, cx).await });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let shared = on_load.clone();
                tokio::spawn(async move { shared.load_session(request, responder, cx).await });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                let shared = on_list.clone();
                tokio::spawn(async move {
                    let answer = shared.list(request).await;
                    responded(responder.respond_with_result(answer))
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                let Some(task) = on_prompt.session(&request.session_id) else {
                    return responded(
                        responder.respond_with_error(unknown_session(&request.session_id.0)),
                    );
                };
                let _ = task.send(session::ToSession::Prompt {
                    prompt: request.prompt,
                    responder,
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let Some(task) = on_mode.session(&request.session_id) else {
                    return responded(
                        responder.respond_with_error(unknown_session(&request.session_id.0)),
                    );
                };
                let _ = task.send(session::ToSession::SetMode {
                    mode: request.mode_id,
                    responder,
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let Some(task) = on_option.session(&request.session_id) else {
                    return responded(
                        responder.respond_with_error(unknown_session(&request.session_id.0)),
                    );
                };
                let _ = task.send(session::ToSession::SetOption {
                    id: request.config_id,
                    value: request.value,
                    responder,
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                match on_cancel.session(&notification.session_id) {
                    Some(task) => {
                        let _ = task.send(session::ToSession::Cancel);
                    }
                    None => {
                        tracing::debug!(session = %notification.session_id.0, "session/cancel for a session not open here")
                    }
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(stdio::transport())
        .await
}

/// The error for a session this connection has not opened.
fn unknown_session(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!(
            "no session {id} is open on this connection; open it with session/new or session/load first"
        ),
    )
}

/// A failure to answer means the client is gone; the connection ends on
/// its own, so it is only logged.
fn responded(sent: Result<(), Error>) -> Result<(), Error> {
    if let Err(e) = sent {
        tracing::debug!("an answer was not sent: {}", e.message);
    }
    Ok(())
}
