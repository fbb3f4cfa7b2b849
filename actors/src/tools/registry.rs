//! The tool registry: every tool a session may call, by the name the model
//! sees, and the [`ToolCatalog`] sessions follow.
//!
//! Built-in tools come first, then each MCP server's (servers in name
//! order); a name already taken is given a hash suffix ([`naming`]), so
//! which tool keeps a contested name does not depend on which server
//! started first. Never runs a tool: that is the
//! [executor](super::executor)'s job.

use super::Tool;
use super::naming;
use crate::model::{ToolList, ToolSpec};
use crate::protocol::McpServerStatus;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What sessions need to know about tools: the list the model sees, and how
/// each MCP server is doing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCatalog {
    pub tools: ToolList,
    pub servers: BTreeMap<String, McpServerStatus>,
    /// The servers on their first start: starting, and never ready,
    /// restarting or failed before. A session's first model call waits for
    /// them (`session::core::mcp_wait`); a restart is not a first start.
    pub first_start: BTreeSet<String>,
}

/// The tools a session may call, by name: the built-in ones first, then each
/// MCP server's (servers in name order). A name already taken is given a
/// hash suffix (and a warning is logged), so the outcome of a clash does not
/// depend on which server started first.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    builtin: Vec<Arc<dyn Tool>>,
    servers: BTreeMap<String, Vec<Arc<dyn Tool>>>,
    disallowed: Vec<String>,
    index: BTreeMap<String, Arc<dyn Tool>>,
    order: Vec<String>,
}

impl ToolRegistry {
    /// A registry of `tools` without the names in `disallowed`.
    pub fn new(tools: Vec<Arc<dyn Tool>>, disallowed: &[String]) -> Self {
        let mut registry = ToolRegistry {
            builtin: tools,
            disallowed: disallowed.to_vec(),
            ..Default::default()
        };
        registry.rebuild();
        registry
    }

    /// Replace the tools of MCP server `server`.
    pub fn set_server_tools(&mut self, server: &str, tools: Vec<Arc<dyn Tool>>) {
        self.servers.insert(server.to_string(), tools);
        self.rebuild();
    }

    /// Forget the tools of MCP server `server`.
    pub fn remove_server(&mut self, server: &str) {
        if self.servers.remove(server).is_some() {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        self.index.clear();
        self.order.clear();
        let servers = self
            .servers
            .iter()
            .flat_map(|(server, tools)| tools.iter().map(move |t| (Some(server), t)));
        let all: Vec<(Option<&String>, Arc<dyn Tool>)> = self
            .builtin
            .iter()
            .map(|t| (None, t.clone()))
            .chain(servers.map(|(s, t)| (s, t.clone())))
            .collect();
        for (server, tool) in all {
            let name = tool.spec().name;
            if self.disallowed.contains(&name) {
                continue;
            }
            // The loser of a name clash is shown (and called) under another
            // name; the tool itself is unchanged.
            let name = if self.index.contains_key(&name) {
                let renamed =
                    naming::disambiguated(&name, &format!("{}/{name}", server.map_or("", |s| s)));
                tracing::warn!(tool = %name, server = ?server, renamed = %renamed, "tool name already taken; renamed");
                renamed
            } else {
                name
            };
            self.order.push(name.clone());
            self.index.insert(name, tool);
        }
    }

    /// The specs of the registered tools, each under the name it is shown
    /// and called by.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.order
            .iter()
            .filter_map(|name| {
                let tool = self.index.get(name)?;
                Some(ToolSpec {
                    name: name.clone(),
                    ..tool.spec()
                })
            })
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.index.get(name).cloned()
    }

    /// Every registered name, in the order the model sees them.
    pub fn names(&self) -> &[String] {
        &self.order
    }

    /// Whether MCP server `server` has listed its tools here.
    pub fn has_server(&self, server: &str) -> bool {
        self.servers.contains_key(server)
    }
}
