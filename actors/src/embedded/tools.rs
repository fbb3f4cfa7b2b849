//! The tools one agent offers, by the name the model calls them, and how a
//! call is run: with the ToolExecutor's rules (its own task, time limit,
//! cancellation, output limit, every failure an error outcome), without the
//! actor.

use crate::model::{GrantedCall, ToolList, ToolOutcome};
use crate::settings::ToolSettings;
use crate::tools::executor::{self, RunTool};
use crate::tools::{BackgroundCommands, Tool};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// An agent's tools, their specs (computed once) and where they run.
pub(super) struct ToolBox {
    /// In the order they were given (the order the model sees them).
    tools: Vec<Arc<dyn Tool>>,
    by_name: BTreeMap<String, Arc<dyn Tool>>,
    specs: ToolList,
    settings: ToolSettings,
    workspace: PathBuf,
    /// The commands the agent's `bash` calls started in the background:
    /// killed when the agent (its last clone) is dropped.
    background: BackgroundCommands,
}

impl ToolBox {
    /// `tools` by name; `Err(name)` when two share one.
    pub(super) fn new(
        tools: Vec<Arc<dyn Tool>>,
        settings: ToolSettings,
        workspace: PathBuf,
    ) -> Result<ToolBox, String> {
        let mut by_name = BTreeMap::new();
        let mut specs = Vec::with_capacity(tools.len());
        for tool in &tools {
            let spec = tool.spec();
            if by_name.insert(spec.name.clone(), tool.clone()).is_some() {
                return Err(spec.name);
            }
            specs.push(spec);
        }
        Ok(ToolBox {
            tools,
            by_name,
            specs: Arc::new(specs),
            settings,
            workspace,
            background: BackgroundCommands::default(),
        })
    }

    /// The tools, in the order the model sees them.
    pub(super) fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// What the model is offered.
    pub(super) fn specs(&self) -> ToolList {
        self.specs.clone()
    }

    /// Where the tools work.
    pub(super) fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// Run one call to its end; `cancel` stops it. Never fails: an unknown
    /// tool, an error, a panic or a timeout is an error outcome the model
    /// reads.
    pub(super) fn run(
        &self,
        call: GrantedCall,
        cancel: CancellationToken,
    ) -> impl Future<Output = ToolOutcome> + Send + 'static {
        let tool = self
            .by_name
            .get(&call.call.name)
            .cloned()
            .or_else(|| crate::tools::builtin::session_tool(&call.call.name));
        let ready = match tool {
            Some(tool) => Ok((
                tool,
                RunTool::new(
                    call,
                    self.workspace.clone(),
                    cancel,
                    Default::default(),
                    self.background.clone(),
                ),
                self.settings.clone(),
            )),
            None => {
                let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
                Err(ToolOutcome::error(format!(
                    "unknown tool `{}`; the available tools are: {}",
                    call.call.name,
                    names.join(", ")
                )))
            }
        };
        async move {
            match ready {
                Ok((tool, run, settings)) => executor::run(tool, run, settings).await,
                Err(unknown) => unknown,
            }
        }
    }
}
