//! The tool registry: every tool a session may call, by the name the model
//! sees, and the [`ToolCatalog`] sessions follow.
//!
//! Built-in tools come first, then each configured MCP server's (servers in
//! name order): those are offered to every session. An MCP server given
//! with a session (an editor's) is offered only to the sessions it was
//! given to ([`ToolRegistry::set_audience`]): each such session sees the
//! shared tools and then its own servers' ones ([`ToolRegistry::get`] and
//! [`ToolRegistry::specs_for`] answer per session), so another session can
//! neither see nor call them. A name already taken is given a hash suffix
//! ([`naming`]), so which tool keeps a contested name does not depend on
//! which server started first. Never runs a tool: that is the
//! [executor](super::executor)'s job.

use super::Tool;
use super::naming;
use crate::model::{ToolList, ToolSpec};
use crate::protocol::{McpServerStatus, SessionId};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// Which MCP server: a configured one, offered to every session, or one
/// given to some sessions only (an editor's), told apart from others of
/// the same name — given to other sessions with other settings — by its
/// instance number.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerId {
    /// The name the user gave it (tool names and status events use it).
    pub name: String,
    /// `None`: configured; `Some(n)`: the `n`-th server given to sessions.
    pub given: Option<u64>,
}

impl ServerId {
    pub fn configured(name: impl Into<String>) -> Self {
        ServerId {
            name: name.into(),
            given: None,
        }
    }

    pub fn given(name: impl Into<String>, instance: u64) -> Self {
        ServerId {
            name: name.into(),
            given: Some(instance),
        }
    }

    pub fn is_given(&self) -> bool {
        self.given.is_some()
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.given {
            None => f.write_str(&self.name),
            Some(n) => write!(f, "{} (given, #{n})", self.name),
        }
    }
}

/// What one session is offered: its tools, how its MCP servers are doing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolView {
    pub tools: ToolList,
    /// By name: the configured servers, and the session's own.
    pub servers: BTreeMap<String, McpServerStatus>,
    /// The servers on their first start: starting, and never ready,
    /// restarting or failed before. A session's first model call waits for
    /// them (`session::core::mcp_wait`); a restart is not a first start.
    pub first_start: BTreeSet<String>,
    /// The `prompt` of each of the session's own servers, each under a
    /// heading, for its system prompt (the configured servers' prompts are
    /// in every session's configuration already). Empty in the shared view.
    pub prompts: String,
}

/// What sessions need to know about tools: the shared view (built-in tools
/// and configured servers), and the view of each session given servers of
/// its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCatalog {
    pub shared: ToolView,
    /// Sessions given MCP servers of their own: the shared tools and
    /// servers, then theirs.
    pub sessions: BTreeMap<SessionId, ToolView>,
}

impl ToolCatalog {
    /// What session `session` is offered.
    pub fn view(&self, session: &SessionId) -> &ToolView {
        self.sessions.get(session).unwrap_or(&self.shared)
    }
}

/// Tools by the name they are shown and called by, in the order the model
/// sees them.
#[derive(Clone, Default)]
struct Names {
    index: BTreeMap<String, Arc<dyn Tool>>,
    order: Vec<String>,
}

impl Names {
    /// Add `tool` of `server` (`None`: built-in), renamed if its name is
    /// taken here or in `shared`.
    fn add(
        &mut self,
        server: Option<&str>,
        tool: Arc<dyn Tool>,
        disallowed: &[String],
        shared: Option<&Names>,
    ) {
        let name = tool.spec().name;
        if disallowed.contains(&name) {
            return;
        }
        let taken = |name: &str| {
            self.index.contains_key(name) || shared.is_some_and(|s| s.index.contains_key(name))
        };
        // The loser of a name clash is shown (and called) under another
        // name; the tool itself is unchanged.
        let name = if taken(&name) {
            let renamed = naming::disambiguated(&name, &format!("{}/{name}", server.unwrap_or("")));
            tracing::warn!(tool = %name, server = ?server, renamed = %renamed, "tool name already taken; renamed");
            renamed
        } else {
            name
        };
        self.order.push(name.clone());
        self.index.insert(name, tool);
    }

    fn specs(&self) -> impl Iterator<Item = ToolSpec> + '_ {
        self.order.iter().filter_map(|name| {
            let tool = self.index.get(name)?;
            Some(ToolSpec {
                name: name.clone(),
                ..tool.spec()
            })
        })
    }
}

/// The tools sessions may call, by name: the built-in ones first, then each
/// configured MCP server's (servers in name order), then — for a session
/// given servers of its own — each of those. A name already taken is given
/// a hash suffix (and a warning is logged), so the outcome of a clash does
/// not depend on which server started first. The lists are made when the
/// tools change (a change to a given server's tools remakes the lists of
/// its sessions alone), so a catalog is cheap to publish.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    builtin: Vec<Arc<dyn Tool>>,
    servers: BTreeMap<ServerId, Vec<Arc<dyn Tool>>>,
    /// The sessions each given server is offered to.
    audiences: BTreeMap<ServerId, BTreeSet<SessionId>>,
    disallowed: Vec<String>,
    /// What every session is offered.
    shared: Names,
    shared_specs: ToolList,
    /// What a session given servers of its own is offered beyond `shared`.
    own: BTreeMap<SessionId, Own>,
}

/// A session's own tools, and the whole list it is offered.
#[derive(Clone, Default)]
struct Own {
    names: Names,
    specs: ToolList,
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
    pub fn set_server_tools(&mut self, server: &ServerId, tools: Vec<Arc<dyn Tool>>) {
        self.servers.insert(server.clone(), tools);
        self.rebuild_for(server);
    }

    /// Forget the tools of MCP server `server`.
    pub fn remove_server(&mut self, server: &ServerId) {
        if self.servers.remove(server).is_some() {
            self.rebuild_for(server);
        }
    }

    /// Offer given server `server` to `sessions` only (to none: it is
    /// forgotten, tools and all).
    pub fn set_audience(&mut self, server: &ServerId, sessions: BTreeSet<SessionId>) {
        let mut affected = sessions.clone();
        if sessions.is_empty() {
            self.servers.remove(server);
            affected.extend(self.audiences.remove(server).unwrap_or_default());
        } else {
            affected.extend(
                self.audiences
                    .insert(server.clone(), sessions)
                    .unwrap_or_default(),
            );
        }
        self.rebuild_sessions(affected);
    }

    /// Whether `server` is offered to `session` (`None`: a caller outside
    /// any session, which sees the shared tools). Configured servers are
    /// offered to every session.
    pub fn offers(&self, server: &ServerId, session: Option<&SessionId>) -> bool {
        if !server.is_given() {
            return true;
        }
        session.is_some_and(|s| self.audiences.get(server).is_some_and(|a| a.contains(s)))
    }

    /// Whether given server `server` is offered to any session.
    pub fn is_given_to_anyone(&self, server: &ServerId) -> bool {
        self.audiences.contains_key(server)
    }

    /// The given servers offered to `session`, in order.
    pub fn given_to<'a>(&'a self, session: &'a SessionId) -> impl Iterator<Item = &'a ServerId> {
        self.audiences
            .iter()
            .filter(move |(_, sessions)| sessions.contains(session))
            .map(|(server, _)| server)
    }

    /// The sessions given servers of their own.
    pub fn sessions_with_own_servers(&self) -> impl Iterator<Item = &SessionId> {
        self.own.keys()
    }

    /// Remake what a change to `server`'s tools changes: the lists of the
    /// sessions given it, or (a configured server) everything.
    fn rebuild_for(&mut self, server: &ServerId) {
        if server.is_given() {
            let sessions = self.audiences.get(server).cloned().unwrap_or_default();
            self.rebuild_sessions(sessions);
        } else {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        let mut shared = Names::default();
        for tool in &self.builtin {
            shared.add(None, tool.clone(), &self.disallowed, None);
        }
        for (server, tools) in self.servers.iter().filter(|(s, _)| !s.is_given()) {
            for tool in tools {
                shared.add(Some(&server.name), tool.clone(), &self.disallowed, None);
            }
        }
        self.shared_specs = Arc::new(shared.specs().collect());
        self.shared = shared;
        let sessions: BTreeSet<SessionId> = self.audiences.values().flatten().cloned().collect();
        self.own.clear();
        self.rebuild_sessions(sessions);
    }

    /// Remake the lists of `sessions` (after the shared one).
    fn rebuild_sessions(&mut self, sessions: BTreeSet<SessionId>) {
        for session in sessions {
            let mut names = Names::default();
            let mut given = false;
            for server in self
                .audiences
                .iter()
                .filter(|(_, audience)| audience.contains(&session))
                .map(|(server, _)| server)
            {
                given = true;
                for tool in self.servers.get(server).into_iter().flatten() {
                    names.add(
                        Some(&server.name),
                        tool.clone(),
                        &self.disallowed,
                        Some(&self.shared),
                    );
                }
            }
            if !given {
                self.own.remove(&session);
                continue;
            }
            let specs = self.shared_specs.iter().cloned().chain(names.specs());
            let specs = Arc::new(specs.collect());
            self.own.insert(session, Own { names, specs });
        }
    }

    /// The tools every session is offered, each under the name it is shown
    /// and called by.
    pub fn specs(&self) -> ToolList {
        self.shared_specs.clone()
    }

    /// The tools `session` is offered: the shared ones, then its own
    /// servers'.
    pub fn specs_for(&self, session: &SessionId) -> ToolList {
        self.own
            .get(session)
            .map_or_else(|| self.shared_specs.clone(), |own| own.specs.clone())
    }

    /// The tool `session` calls `name` (`None`: outside any session, the
    /// shared tools only).
    pub fn get(&self, session: Option<&SessionId>, name: &str) -> Option<Arc<dyn Tool>> {
        self.shared
            .index
            .get(name)
            .or_else(|| self.own.get(session?)?.names.index.get(name))
            .cloned()
    }

    /// Every name `session` may call, in the order the model sees them.
    pub fn names(&self, session: Option<&SessionId>) -> Vec<&str> {
        let own = session.and_then(|s| self.own.get(s));
        self.shared
            .order
            .iter()
            .chain(own.into_iter().flat_map(|o| o.names.order.iter()))
            .map(String::as_str)
            .collect()
    }

    /// Whether MCP server `server` has listed its tools here.
    pub fn has_server(&self, server: &ServerId) -> bool {
        self.servers.contains_key(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolOrigin;
    use crate::tools::test_tools::Forever;

    /// A tool of server `server` called `name` (as the model sees it).
    struct Named(String, String);
    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: self.1.clone(),
                origin: ToolOrigin::Mcp {
                    server: self.0.clone(),
                    writes: false,
                },
                ..Forever.spec()
            }
        }
        fn call(
            &self,
            input: serde_json::Value,
            ctx: crate::tools::ToolContext,
        ) -> futures::future::BoxFuture<
            'static,
            Result<crate::tools::ToolOutput, crate::tools::ToolError>,
        > {
            Forever.call(input, ctx)
        }
    }

    fn tool(server: &str, tool: &str) -> Arc<dyn Tool> {
        Arc::new(Named(server.into(), naming::tool_name(server, tool)))
    }

    fn names(registry: &ToolRegistry, session: &SessionId) -> Vec<String> {
        registry
            .specs_for(session)
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    #[test]
    fn a_given_server_is_offered_only_to_the_sessions_it_was_given_to() {
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        let mut registry = ToolRegistry::new(vec![Arc::new(Forever)], &[]);
        registry.set_server_tools(&ServerId::configured("shared"), vec![tool("shared", "x")]);
        let editor = ServerId::given("editor", 1);
        registry.set_audience(&editor, [a.clone()].into());
        registry.set_server_tools(&editor, vec![tool("editor", "echo")]);

        assert_eq!(
            names(&registry, &a),
            ["forever", "mcp__shared__x", "mcp__editor__echo"]
        );
        assert_eq!(names(&registry, &b), ["forever", "mcp__shared__x"]);
        assert!(registry.get(Some(&a), "mcp__editor__echo").is_some());
        assert!(registry.get(Some(&b), "mcp__editor__echo").is_none());
        assert!(registry.get(None, "mcp__editor__echo").is_none());
        assert!(registry.get(Some(&b), "mcp__shared__x").is_some());
        assert_eq!(
            registry.specs().len(),
            2,
            "the shared list has no given tool"
        );

        registry.set_audience(&editor, BTreeSet::new());
        assert_eq!(names(&registry, &a), names(&registry, &b));
        assert!(!registry.has_server(&editor), "forgotten with its audience");
    }

    #[test]
    fn two_sessions_may_each_have_their_own_server_of_one_name() {
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        let mut registry = ToolRegistry::new(vec![], &[]);
        let (first, second) = (ServerId::given("fs", 1), ServerId::given("fs", 2));
        registry.set_audience(&first, [a.clone()].into());
        registry.set_audience(&second, [b.clone()].into());
        let (one, two) = (tool("fs", "read"), tool("fs", "read"));
        registry.set_server_tools(&first, vec![one.clone()]);
        registry.set_server_tools(&second, vec![two.clone()]);
        // The same name in both sessions, each reaching its own server.
        assert_eq!(names(&registry, &a), ["mcp__fs__read"]);
        assert_eq!(names(&registry, &b), ["mcp__fs__read"]);
        let called = |s: &SessionId| registry.get(Some(s), "mcp__fs__read").unwrap();
        assert!(Arc::ptr_eq(&called(&a), &one));
        assert!(Arc::ptr_eq(&called(&b), &two));
    }

    #[test]
    fn a_given_tool_named_like_a_shared_one_is_renamed_in_its_session() {
        let a = SessionId::from("a");
        let mut registry = ToolRegistry::new(vec![], &[]);
        registry.set_server_tools(
            &ServerId::configured("my_server"),
            vec![tool("my_server", "x")],
        );
        let given = ServerId::given("my server", 1);
        registry.set_audience(&given, [a.clone()].into());
        registry.set_server_tools(&given, vec![tool("my server", "x")]);
        let seen = names(&registry, &a);
        assert_eq!(seen.len(), 2);
        assert_eq!(
            seen[0], "mcp__my_server__x",
            "the shared tool keeps its name"
        );
        assert_ne!(seen[1], seen[0]);
        assert!(registry.get(Some(&a), &seen[1]).is_some());
    }
}
