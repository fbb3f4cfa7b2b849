//! Built-in tools: the file and shell tools every session has.
//!
//! Each tool is one file with a typed `Params` struct (its JSON Schema is
//! generated from the struct, and arguments are checked by deserialising into
//! it), implementing [`BuiltinTool`]. The blanket [`Tool`] impl turns argument
//! mismatches into clear errors the model can read.
//!
//! Tools never panic on bad input, never print, and never block the async
//! runtime: blocking file-system work runs on a blocking thread
//! ([`blocking`]). [`found`] says what is at a path before a tool acts on it;
//! [`walk`] walks directories the way `glob` and `grep` need.

pub mod bash;
pub mod edit_file;
pub mod glob;
pub mod grep;
pub mod list_dir;
pub mod read_file;
pub mod write_file;

mod found;
mod walk;

use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::session::core::model::{ToolOrigin, ToolSpec};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A built-in tool with typed parameters.
pub trait BuiltinTool: Clone + Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    type Params: DeserializeOwned + JsonSchema + Send + 'static;

    fn run(
        &self,
        params: Self::Params,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'static;
}

impl<T: BuiltinTool> Tool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_string(),
            description: T::DESCRIPTION.to_string(),
            input_schema: schema_of::<T::Params>(),
            origin: ToolOrigin::Builtin,
        }
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let params = parse_params::<T::Params>(T::NAME, input);
        let this = self.clone();
        Box::pin(async move { this.run(params?, ctx).await })
    }
}

/// The JSON Schema of a parameter struct, as sent to the model.
pub fn schema_of<P: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(P)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// Deserialise arguments into `P`, naming the offending field on failure.
pub fn parse_params<P: DeserializeOwned>(tool: &str, input: Value) -> Result<P, ToolError> {
    if !input.is_object() {
        return Err(ToolError::InvalidArguments {
            tool: tool.to_string(),
            detail: format!(
                "expected a JSON object of arguments, got {}",
                describe_json(&input)
            ),
        });
    }
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let detail = if path == "." || path.is_empty() {
            inner
        } else {
            format!("at `{path}`: {inner}")
        };
        ToolError::InvalidArguments {
            tool: tool.to_string(),
            detail,
        }
    })
}

fn describe_json(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Run a tool's file-system work on a blocking thread; the thread dying
/// (a panic) is the tool's error, named after the tool.
pub(crate) async fn blocking<T: Send + 'static>(
    tool: &str,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::failed(format!("{tool} stopped unexpectedly: {e}")))?
}

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
    ]
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
                "grep"
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
