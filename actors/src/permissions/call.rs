//! What the matcher is told: a tool call as it stands, and where it runs.

use super::path;
use std::path::{Path, PathBuf};

/// The shell tool; its command is the `command` argument.
pub(super) const BASH: &str = "bash";
/// The file tools: their path is the `path` argument.
pub(super) const FILE_TOOLS: [&str; 6] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "glob",
    "grep",
];
/// File tools that search a whole directory tree, and whose `path` is the
/// workspace when absent.
pub(super) const SEARCHES: [&str; 2] = ["glob", "grep"];

/// A tool call, as the model made it.
#[derive(Clone, Copy, Debug)]
pub struct CallView<'a> {
    /// The tool's name (`bash`, `read_file`, `mcp__github__create_issue`).
    pub tool: &'a str,
    /// Its arguments, unchecked.
    pub input: &'a serde_json::Value,
}

/// Where the call runs: what relative paths and `~` mean.
#[derive(Clone, Copy, Debug)]
pub struct MatchEnv<'a> {
    /// The session's workspace (absolute): relative paths of calls and of
    /// rules are inside it.
    pub workspace: &'a Path,
    /// The home directory `~` stands for in rules.
    pub home: &'a Path,
}

impl CallView<'_> {
    /// The command of a `bash` call, if it has one.
    pub fn command(&self) -> Option<&str> {
        if self.tool != BASH {
            return None;
        }
        self.input.get("command")?.as_str()
    }

    /// The host a `web_fetch` call reaches (lower-case), if its `url` is
    /// an http(s) URL with one.
    pub fn host(&self) -> Option<String> {
        if self.tool != super::domain::WEB_FETCH {
            return None;
        }
        super::domain::host_of(self.input.get("url")?.as_str()?)
    }

    /// The absolute, normalised path a file tool call works on (the
    /// workspace for a search without one); `None` for other tools and for
    /// a path that is not a string.
    pub fn path(&self, env: &MatchEnv<'_>) -> Option<PathBuf> {
        if !FILE_TOOLS.contains(&self.tool) {
            return None;
        }
        match self.input.get("path") {
            Some(serde_json::Value::String(p)) => Some(path::resolve(p, env.workspace)),
            None | Some(serde_json::Value::Null) if SEARCHES.contains(&self.tool) => {
                Some(path::normalize(env.workspace))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> MatchEnv<'static> {
        MatchEnv {
            workspace: Path::new("/ws"),
            home: Path::new("/home/me"),
        }
    }

    #[test]
    fn command_of_bash_calls_only() {
        let input = json!({"command": "ls"});
        let call = |tool| CallView {
            tool,
            input: &input,
        };
        assert_eq!(call("bash").command(), Some("ls"));
        assert_eq!(call("read_file").command(), None);
        let input = json!({"command": 3});
        assert_eq!(
            CallView {
                tool: "bash",
                input: &input
            }
            .command(),
            None
        );
    }

    #[test]
    fn paths_of_file_tools() {
        let input = json!({"path": "src/../x"});
        let call = |tool| CallView {
            tool,
            input: &input,
        };
        assert_eq!(call("edit_file").path(&env()), Some(PathBuf::from("/ws/x")));
        assert_eq!(call("mcp__fs__read").path(&env()), None);
        let empty = json!({});
        let call = |tool| CallView {
            tool,
            input: &empty,
        };
        assert_eq!(call("grep").path(&env()), Some(PathBuf::from("/ws")));
        assert_eq!(call("glob").path(&env()), Some(PathBuf::from("/ws")));
        assert_eq!(call("read_file").path(&env()), None);
        let bad = json!({"path": ["a"]});
        assert_eq!(
            CallView {
                tool: "grep",
                input: &bad
            }
            .path(&env()),
            None
        );
    }
}
