//! What a built-in tool is: a [`Tool`] with typed parameters, whose JSON
//! Schema is generated from its `Params` struct and whose arguments are
//! checked by deserialising into it.

use crate::model::{ToolOrigin, ToolSpec};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;

/// A built-in tool with typed parameters.
pub trait BuiltinTool: Clone + Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    /// Its output is kept whole, never cut to the output limit (see
    /// [`Tool::whole_output`]).
    const WHOLE_OUTPUT: bool = false;
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
            input_schema: std::sync::Arc::new(schema_of::<T::Params>()),
            origin: ToolOrigin::Builtin,
        }
    }

    fn whole_output(&self) -> bool {
        T::WHOLE_OUTPUT
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
