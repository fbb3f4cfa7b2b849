//! One ACP session: the task that follows a session's events and carries
//! what the editor asks of it.
//!
//! It owns the session's [`Attached`] (the same hold the terminal chat has,
//! on a session in this process or in a server), its [`Translator`], the
//! running prompt's responder and the permission requests sent to the
//! editor. One task per session, so everything it writes to the client
//! leaves in the order it happened: a load's replay before the load's
//! answer, a turn's updates before the prompt's answer. A `session/load`
//! of a session open already replaces its task (the earlier one is told
//! [`ToSession::Replaced`] and ends), so no update is sent twice.
//!
//! It never answers a prompt with an error for a cancellation (the turn's
//! `cancelled` result is the answer), never asks the editor about an
//! approval request that a replay shows settled, and never blocks the
//! connection's dispatch loop (it runs on a task of its own; handlers only
//! hand it messages).

use super::config_options;
use super::modes;
use super::permission;
use super::prompt::{self, Answer};
use super::updates::Translator;
use crate::frontend::common::attached::Attached;
use crate::frontend::common::input_ends::InputEnds;
use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, ContentBlock, ContentChunk, LoadSessionResponse, NewSessionResponse,
    PromptResponse, SessionConfigId, SessionConfigOptionValue, SessionId, SessionModeId,
    SessionNotification, SessionUpdate, SetSessionConfigOptionResponse, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode, RequestCancellationHandle};
use agentbus_engine::protocol::{
    AgentMessage, ApprovalDecision, ApprovalRequestEvent, ApprovalResolved, EventEnvelope, InputId,
};
use std::collections::HashMap;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// What the handlers (and the task's own permission requests) tell a
/// session's task.
pub enum ToSession {
    /// `session/prompt`.
    Prompt {
        prompt: Vec<ContentBlock>,
        responder: Responder<PromptResponse>,
    },
    /// `session/cancel`.
    Cancel,
    /// `session/set_mode`.
    SetMode {
        mode: SessionModeId,
        responder: Responder<SetSessionModeResponse>,
    },
    /// `session/set_config_option`: the mode, agent or model picker.
    SetOption {
        id: SessionConfigId,
        value: SessionConfigOptionValue,
        responder: Responder<SetSessionConfigOptionResponse>,
    },
    /// The editor answered (or cancelled) a permission request.
    Decided {
        request_id: String,
        decision: Option<ApprovalDecision>,
    },
    /// The editor opened the session again (`session/load` of an open
    /// session): a new task follows it from now on, and this one ends.
    Replaced,
}

/// The request that opened the session, answered once its replay is
/// through.
pub enum Opening {
    New(Responder<NewSessionResponse>),
    Load(Responder<LoadSessionResponse>),
}

/// The prompt running.
struct Running {
    input: InputId,
    responder: Responder<PromptResponse>,
    /// `session/cancel` came before the turn started (it waited behind
    /// another front end's turn): interrupt it when it starts.
    cancel: bool,
}

/// The task of one session.
pub struct SessionTask {
    id: SessionId,
    attached: Attached,
    translator: Translator,
    ends: InputEnds,
    connection: ConnectionTo<Client>,
    inbox: UnboundedReceiver<ToSession>,
    /// For the permission requests' answers.
    me: UnboundedSender<ToSession>,
    opening: Option<Opening>,
    running: Option<Running>,
    /// Permission requests the editor has not answered, by request id.
    asked: HashMap<String, RequestCancellationHandle>,
}

impl SessionTask {
    pub fn new(
        attached: Attached,
        translator: Translator,
        connection: ConnectionTo<Client>,
        opening: Opening,
    ) -> (SessionTask, UnboundedSender<ToSession>) {
        let (me, inbox) = tokio::sync::mpsc::unbounded_channel();
        let task = SessionTask {
            id: SessionId::new(attached.id().0.as_str()),
            attached,
            translator,
            ends: InputEnds::default(),
            connection,
            inbox,
            me: me.clone(),
            opening: Some(opening),
            running: None,
            asked: HashMap::new(),
        };
        (task, me)
    }

    /// Follow the session until the editor lets go of it (its sender is
    /// dropped) or the session ends.
    pub async fn run(mut self) {
        if self.attached.catchup.is_empty() {
            self.opened();
        }
        loop {
            tokio::select! {
                event = self.attached.events.recv() => match event {
                    Some(event) => self.event(&event).await,
                    None => {
                        self.end("the session stopped (its process is shutting down, or the server went away)");
                        return;
                    }
                },
                message = self.inbox.recv() => match message {
                    Some(ToSession::Replaced) => {
                        self.end("the session was loaded again; the new load follows it");
                        return;
                    }
                    Some(message) => self.message(message).await,
                    None => return,
                },
            }
        }
    }

    fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.id.clone(), update);
        if let Err(e) = self.connection.send_notification(notification) {
            tracing::debug!(session = %self.id.0, "an update was not sent: {}", e.message);
        }
    }

    async fn event(&mut self, event: &EventEnvelope) {
        for update in self.translator.translate(event) {
            self.send(update);
        }
        match &event.message {
            AgentMessage::ApprovalRequest(request) if self.opening.is_none() => {
                self.ask(request.clone())
            }
            AgentMessage::System(system) => {
                if let Some(resolved) = system.payload::<ApprovalResolved>()
                    && let Some(asked) = self.asked.remove(&resolved.request_id)
                {
                    // Settled elsewhere (another front end, a timeout, an
                    // interrupt): the editor need not answer any more.
                    let _ = asked.cancel();
                }
            }
            _ => {}
        }
        self.ends.observe(event);
        if let Some(running) = &mut self.running
            && running.cancel
            && event.turn_id == Some(running.input)
            && matches!(event.message, AgentMessage::User(_))
        {
            running.cancel = false;
            if let Err(e) = self.attached.interrupt().await {
                tracing::warn!(session = %self.id.0, "could not interrupt the turn: {e:#}");
            }
        }
        if let Some(running) = &self.running
            && let Some(end) = self.ends.ended(event, running.input)
        {
            let answer = prompt::answer(&end, self.translator.finish_reason(running.input));
            if let Some(running) = self.running.take() {
                respond_prompt(running.responder, answer);
            }
        }
        if self.opening.is_some() && self.attached.catchup.reached_by(event) {
            self.opened();
        }
    }

    /// The replay is through: answer the request that opened the session,
    /// then tell the editor the commands, and ask about the approval
    /// requests still waiting.
    fn opened(&mut self) {
        let Some(opening) = self.opening.take() else {
            return;
        };
        let modes = self.translator.modes();
        let options = self.translator.config_options();
        let sent = match opening {
            Opening::New(responder) => responder.respond(
                NewSessionResponse::new(self.id.clone())
                    .modes(modes)
                    .config_options(options),
            ),
            Opening::Load(responder) => responder.respond(
                LoadSessionResponse::new()
                    .modes(modes)
                    .config_options(options),
            ),
        };
        if let Err(e) = sent {
            tracing::debug!(session = %self.id.0, "the session's opening was not answered: {}", e.message);
        }
        self.send(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(super::commands::available(self.translator.commands())),
        ));
        let waiting: Vec<ApprovalRequestEvent> = self.translator.waiting().cloned().collect();
        for request in waiting {
            self.ask(request);
        }
    }

    /// This task stops following the session (it stopped, the server is
    /// gone, or a new load follows it): what waits for it is answered with
    /// the reason `why`, and the permission requests still asked are
    /// withdrawn.
    fn end(&mut self, why: &str) {
        for (_, asked) in self.asked.drain() {
            let _ = asked.cancel();
        }
        if let Some(running) = self.running.take() {
            respond_prompt(running.responder, Answer::Failed(why.to_string()));
        }
        match self.opening.take() {
            Some(Opening::New(responder)) => {
                let _ = responder.respond_with_error(Error::new(ErrorCode::INTERNAL_ERROR, why));
            }
            Some(Opening::Load(responder)) => {
                let _ = responder.respond_with_error(Error::new(ErrorCode::INTERNAL_ERROR, why));
            }
            None => {}
        }
    }

    async fn message(&mut self, message: ToSession) {
        match message {
            ToSession::Prompt { prompt, responder } => self.prompt(prompt, responder).await,
            ToSession::Cancel => self.cancel().await,
            ToSession::SetMode { mode, responder } => {
                let input = modes::switch_input(&mode, self.translator.choices());
                let answer = self
                    .switch(input)
                    .await
                    .map(|()| SetSessionModeResponse::new());
                let _ = responder.respond_with_result(answer);
            }
            ToSession::SetOption {
                id,
                value,
                responder,
            } => {
                let input = config_options::switch_input(&id, &value, self.translator.choices());
                // The answer is the state the switch makes (it was checked,
                // and inputs run in order); the session confirms with a
                // `config_option_update` when it makes it.
                let answer = self.switch(input).await.map(|()| {
                    let value = value.as_value_id().map(|v| &*v.0).unwrap_or_default();
                    SetSessionConfigOptionResponse::new(
                        self.translator.config_options_after(&id.0, value),
                    )
                });
                let _ = responder.respond_with_result(answer);
            }
            ToSession::Decided {
                request_id,
                decision,
            } => {
                self.asked.remove(&request_id);
                let Some(decision) = decision else { return };
                // Another answer may have come first: the session says so,
                // and that is fine.
                if let Err(e) = self.attached.decide(&request_id, decision).await {
                    tracing::debug!(session = %self.id.0, "the editor's answer to {request_id} was not taken: {e:#}");
                }
            }
            // Taken in `run`: the task ends.
            ToSession::Replaced => {}
        }
    }

    /// Send a picker's switch (`/mode`, `/agent`, `/model`) without showing
    /// its reply; what it changes is shown when the session makes it.
    async fn switch(&mut self, input: Result<String, String>) -> Result<(), Error> {
        let text = input.map_err(|why| Error::new(ErrorCode::INVALID_PARAMS, why))?;
        let input = self
            .attached
            .submit_text(text)
            .await
            .map_err(|e| Error::new(ErrorCode::INTERNAL_ERROR, format!("{e:#}")))?;
        self.translator.quiet(input);
        Ok(())
    }

    async fn prompt(&mut self, blocks: Vec<ContentBlock>, responder: Responder<PromptResponse>) {
        if self.opening.is_some() || self.running.is_some() {
            let _ = responder.respond_with_error(Error::new(
                ErrorCode::INVALID_REQUEST,
                "a prompt is running in this session already; cancel it or wait for its answer",
            ));
            return;
        }
        let text = prompt::text_of(&blocks);
        if let Some(why) = prompt::refused_command(&text) {
            self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                ContentBlock::from(why),
            )));
            respond_prompt(
                responder,
                Answer::Stop(agent_client_protocol::v1::schema::StopReason::EndTurn),
            );
            return;
        }
        let submitted = match prompt::as_command(&text) {
            Some(command) => self.attached.submit_control(command).await,
            None => self.attached.submit_text(text).await,
        };
        match submitted {
            Ok(input) => {
                self.translator.own(input);
                self.running = Some(Running {
                    input,
                    responder,
                    cancel: false,
                });
            }
            Err(e) => {
                let _ = responder.respond_with_error(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("the prompt was not accepted: {e:#}"),
                ));
            }
        }
    }

    /// Interrupt the prompt's turn (now, or when it starts), and withdraw
    /// the permission requests the editor has not answered.
    async fn cancel(&mut self) {
        for asked in self.asked.values() {
            let _ = asked.cancel();
        }
        let Some(running) = &mut self.running else {
            return;
        };
        if self.translator.running(running.input) {
            if let Err(e) = self.attached.interrupt().await {
                tracing::warn!(session = %self.id.0, "could not interrupt the turn: {e:#}");
            }
        } else {
            running.cancel = true;
        }
    }

    /// Ask the editor about `request`; its answer comes back as
    /// [`ToSession::Decided`].
    fn ask(&mut self, request: ApprovalRequestEvent) {
        if self.asked.contains_key(&request.request_id) {
            return;
        }
        let asking = permission::request(&self.id, &request, self.translator.workspace());
        let sent = self.connection.send_request(asking);
        self.asked
            .insert(request.request_id.clone(), sent.cancellation_handle());
        let me = self.me.clone();
        tokio::spawn(async move {
            let decision = match sent.block_task().await {
                Ok(response) => permission::decision(&response.outcome),
                Err(e) => {
                    tracing::debug!(
                        "a permission request ended without an answer: {}",
                        e.message
                    );
                    None
                }
            };
            let _ = me.send(ToSession::Decided {
                request_id: request.request_id,
                decision,
            });
        });
    }
}

/// Answer a prompt.
fn respond_prompt(responder: Responder<PromptResponse>, answer: Answer) {
    let sent = match answer {
        Answer::Stop(stop) => responder.respond(PromptResponse::new(stop)),
        Answer::Failed(why) => {
            responder.respond_with_error(Error::new(ErrorCode::INTERNAL_ERROR, why))
        }
    };
    if let Err(e) = sent {
        tracing::debug!("a prompt's answer was not sent: {}", e.message);
    }
}
