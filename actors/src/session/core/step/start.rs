//! The session's start: what it announces (model, tools, mode, the files
//! it read and what it could not use) and how a new tool catalog is taken.

use super::{Step, notice};
use crate::protocol::system::{McpServerChanged, SessionStarted};
use crate::protocol::{AgentMessage, SystemEvent};

impl Step<'_> {
    /// The `init` event: model, tools, mode and sandbox, the files the
    /// session read; then a notice for each file it could not use.
    pub(super) fn announce_start(&mut self, resumed: bool) {
        let tools: Vec<String> = self
            .state
            .offered_tools()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        let mode = self.state.permissions.mode;
        let sandbox = if self.state.config.permissions.sandboxed {
            ""
        } else {
            "; commands run WITHOUT a sandbox"
        };
        let agent = &self.state.agent;
        let message = if resumed {
            format!(
                "Session {} resumed as agent {agent} with model {} ({}), permission mode {mode}{sandbox}.",
                self.state.session_id,
                self.state.model,
                crate::text::count(self.state.history.len() as u64, "message")
            )
        } else {
            format!(
                "Session {} started as agent {agent} with model {}, permission mode {mode}{sandbox}.",
                self.state.session_id, self.state.model
            )
        };
        let instructions = &self.state.config.instructions.files;
        let message = if instructions.is_empty() {
            message
        } else {
            let paths: Vec<&str> = instructions.iter().map(|f| f.path.as_str()).collect();
            format!("{message} Instructions from {}.", paths.join(", "))
        };
        let started = SessionStarted {
            model: self.state.model.clone(),
            tools,
            workspace: self.state.config.workspace.clone(),
            resumed,
            messages: self.state.history.len(),
            context: self.state.context.session.clone(),
            permission_mode: Some(self.state.permissions.mode),
            sandboxed: Some(self.state.config.permissions.sandboxed),
            instructions: instructions.iter().map(|f| f.path.clone()).collect(),
            agent: Some(self.state.agent.clone()),
            commands: self.state.config.commands.entries(),
        };
        self.fx.emit(
            None,
            AgentMessage::System(SystemEvent::new(message, &started)),
        );
        for text in self.state.config.instructions.notices() {
            self.fx.emit(None, notice(text));
        }
        for text in &self.state.config.hooks.notices {
            self.fx.emit(None, notice(text.clone()));
        }
        for problem in &self.state.config.agents.problems {
            self.fx
                .emit(None, notice(format!("Agent file not used: {problem}")));
        }
        for problem in &self.state.config.commands.problems {
            self.fx
                .emit(None, notice(format!("Command file not used: {problem}")));
        }
        for text in self.state.config.skills.notices() {
            self.fx.emit(None, notice(text));
        }
        if self.state.current_agent().is_none() {
            self.fx.emit(None,
            notice(format!(
                "The agent `{agent}` is no longer defined; the session runs like `build` until /agent switches. Agents: {}.",
                self.state.config.agents.names()
            )),
        );
        }
    }

    /// New tools apply to the next model call; each MCP server whose state
    /// changed is reported to the user.
    pub(super) fn apply_catalog(
        &mut self,
        tools: crate::model::ToolList,
        servers: std::collections::BTreeMap<String, crate::protocol::McpServerStatus>,
    ) {
        self.state.tools = tools;
        for (name, status) in &servers {
            if self.state.mcp_servers.get(name) == Some(status) {
                continue;
            }
            let changed = McpServerChanged {
                server: name.clone(),
                status: status.clone(),
            };
            let message = format!("MCP server `{name}`: {}", status.describe());
            self.fx.emit(
                None,
                AgentMessage::System(SystemEvent::new(message, &changed)),
            );
        }
        self.state.mcp_servers = servers;
    }
}
