//! Built-in tools: the file, shell and web tools every session has.
//!
//! Each tool is one file with a typed `Params` struct (its JSON Schema is
//! generated from the struct, and arguments are checked by deserialising into
//! it), implementing [`BuiltinTool`] (`typed`). The blanket [`Tool`] impl
//! turns argument mismatches into clear errors the model can read.
//!
//! Tools never panic on bad input, never print, and never block the async
//! runtime: blocking file-system work runs on a blocking thread
//! ([`blocking()`]). They open paths through `tools/confine.rs`, which
//! keeps them inside the workspace and the write roots; `found` words the
//! refusals they share (devices, FIFOs and sockets; plan mode); `walk`
//! walks directories the way `glob` and `grep` need; `listing` words the
//! capped output of `list_dir` and `glob`; `held` reads and writes through
//! a front end that holds the files (`tools/files.rs`). `bash_output`
//! and `kill_shell` read and stop the commands `bash` started in the
//! background (the session's `tools/background.rs`); `web_fetch` reads a
//! web page as Markdown. `read_image` is
//! the one tool a session runs for its user alone ([`session_tool`]): it
//! reads an `@pic.png` mention and is never offered to a model.

pub mod bash;
pub mod bash_output;
pub mod edit_file;
pub mod glob;
pub mod grep;
pub mod kill_shell;
pub mod list_dir;
pub mod read_file;
pub mod read_image;
pub mod web_fetch;
pub mod write_file;

mod blocking;
mod found;
mod held;
mod listing;
mod typed;
mod walk;
#[cfg(test)]
mod web_fetch_tests;

pub use blocking::blocking;
pub use typed::BuiltinTool;

use super::{Tool, ToolContext, ToolError, ToolOutput};
use std::sync::Arc;

/// Every built-in tool, in the order they are shown to the model.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile),
        Arc::new(write_file::WriteFile),
        Arc::new(edit_file::EditFile),
        Arc::new(bash::Bash),
        Arc::new(list_dir::ListDir),
        Arc::new(glob::Glob),
        Arc::new(grep::Grep),
        Arc::new(bash_output::BashOutput),
        Arc::new(kill_shell::KillShell),
        Arc::new(web_fetch::WebFetch),
    ]
}

/// The tools a session runs for its user, never offered to a model: found
/// by name when a session asks (see `read_image`), refused when a model
/// does.
pub fn session_tool(name: &str) -> Option<Arc<dyn Tool>> {
    (name == read_image::ReadImage::NAME).then(|| Arc::new(read_image::ReadImage) as Arc<dyn Tool>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_tools_have_the_fixed_names_in_order() {
        let names: Vec<String> = builtin_tools().iter().map(|t| t.spec().name).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "write_file",
                "edit_file",
                "bash",
                "list_dir",
                "glob",
                "grep",
                "bash_output",
                "kill_shell",
                "web_fetch"
            ]
        );
    }

    #[test]
    fn every_builtin_tool_documents_every_parameter_and_forbids_unknown_ones() {
        for tool in builtin_tools() {
            let spec = tool.spec();
            assert!(
                spec.description.len() > 100,
                "{}: description too short",
                spec.name
            );
            let schema = &spec.input_schema;
            assert_eq!(schema["type"], json!("object"), "{}: {schema}", spec.name);
            assert_eq!(
                schema["additionalProperties"],
                json!(false),
                "{}: {schema}",
                spec.name
            );
            let props = schema["properties"].as_object().expect("properties");
            assert!(!props.is_empty(), "{}", spec.name);
            for (field, prop) in props {
                assert!(
                    prop["description"].as_str().is_some_and(|d| !d.is_empty()),
                    "{}.{field} has no description: {schema}",
                    spec.name
                );
            }
        }
    }

    #[tokio::test]
    async fn arguments_that_are_not_an_object_are_invalid_arguments() {
        let dir = tempfile::tempdir().unwrap();
        for tool in builtin_tools() {
            let err = tool
                .call(json!(["x"]), ToolContext::new(dir.path()))
                .await
                .unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments { .. }),
                "{}: {err}",
                tool.spec().name
            );
            assert!(err.to_string().contains("an array"), "{err}");
        }
    }
}
