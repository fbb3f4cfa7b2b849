//! OpenAPI schemas for the API's fields whose types utoipa cannot derive:
//! protocol types of the actors crate (which knows nothing of OpenAPI) and
//! shapes the server checks by hand. Each says what the server accepts —
//! no less, so a client following the document is not refused, and no
//! more, so what the document calls invalid is refused (schemathesis checks
//! both ways: `scripts/api-fuzz.sh`).
//!
//! Values known only when the server starts (the configured model
//! profiles) are filled in by `serve::openapi::name_profiles`.

use serde_json::Value;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, ArrayItems, ObjectBuilder, OneOfBuilder, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// The permission modes as the API accepts them, Claude Code's spellings
/// included (see `PermissionMode`'s serde aliases).
pub const PERMISSION_MODES: [&str; 9] = [
    "default",
    "ask",
    "accept-edits",
    "acceptEdits",
    "accept_edits",
    "plan",
    "bypass",
    "bypassPermissions",
    "bypass_permissions",
];

/// A context strategy, written as the configuration writes it.
const STRATEGY_PATTERN: &str = "^(oldest-first|middle-out|summarize|recent-turns:[1-9][0-9]{0,8})$";

fn nullable(kind: Type) -> SchemaType {
    SchemaType::from_iter([kind, Type::Null])
}

fn closed() -> Option<AdditionalProperties<Schema>> {
    Some(AdditionalProperties::FreeForm(false))
}

/// A permission mode (`PermissionMode`).
pub struct PermissionModeName;

impl PartialSchema for PermissionModeName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(PERMISSION_MODES))
            .description(Some(
                "`default` (ask before edits, commands and MCP tools), `accept-edits`, `plan` (read-only) or `bypass`; `ask`, `acceptEdits`, `accept_edits`, `bypassPermissions` and `bypass_permissions` are accepted too",
            ))
            .into()
    }
}

impl ToSchema for PermissionModeName {}

/// A session's own `[context]` keys (`ContextConfig`): every one optional,
/// each with the range `ContextConfig::check` requires.
pub struct ContextOptions;

impl PartialSchema for ContextOptions {
    fn schema() -> RefOr<Schema> {
        let count = |kind: Type, minimum: u64, maximum: u64, description: &str| {
            ObjectBuilder::new()
                .schema_type(nullable(kind))
                .minimum(Some(minimum))
                .maximum(Some(maximum))
                .description(Some(description))
        };
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "A session's own `[context]` keys, over the profile's and the server's (README: Context)",
            ))
            .property(
                "max_tokens",
                count(Type::Integer, 1, u64::MAX, "The token budget of a request"),
            )
            .property(
                "max_messages",
                count(Type::Integer, 1, u64::MAX, "Most messages a request may carry"),
            )
            .property(
                "preserve_system",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::Boolean))
                    .description(Some("Keep the system prompt in every request")),
            )
            .property(
                "min_recent_turns",
                count(
                    Type::Integer,
                    0,
                    u64::MAX,
                    "The most recent turns kept whole when they fit",
                ),
            )
            .property(
                "strategy",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::String))
                    .pattern(Some(STRATEGY_PATTERN))
                    .description(Some(
                        "`oldest-first`, `middle-out`, `recent-turns:N` or `summarize`",
                    )),
            )
            .property(
                "auto_compact_at",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::Number))
                    .exclusive_minimum(Some(0))
                    .maximum(Some(1))
                    .description(Some("Compact past this share of the budget")),
            )
            .property(
                "compact_model",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::String))
                    .description(Some(
                        "The model profile that writes summaries (a configured one)",
                    )),
            )
            .property(
                "keep_tool_output_tokens",
                count(
                    Type::Integer,
                    0,
                    u64::MAX,
                    "Tool outputs kept whole, newest first, up to this many tokens",
                ),
            )
            .property(
                "safety_margin",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::Number))
                    .minimum(Some(0))
                    .maximum(Some(0.5))
                    .description(Some(
                        "The share of the budget held back because tokenizers differ",
                    )),
            )
            .additional_properties(closed())
            .into()
    }
}

impl ToSchema for ContextOptions {}

/// Most MCP servers one request may give a session (each is a process).
pub const MAX_MCP_SERVERS: usize = 64;

/// The MCP servers given with a session (`McpServers`): `{NAME: settings}`,
/// each settings object a `[mcp_servers.NAME]` table of the configuration
/// (`McpServerConfig`, its unknown fields refused), with exactly one of
/// `command` and `url`.
pub struct McpServerMap;

impl PartialSchema for McpServerMap {
    fn schema() -> RefOr<Schema> {
        let described = |kind: SchemaType, description: &str| {
            ObjectBuilder::new()
                .schema_type(kind)
                .description(Some(description))
        };
        let text = || ObjectBuilder::new().schema_type(Type::String).build();
        let strings = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(Schema::Object(
                    text(),
                )))))
                .description(Some(description))
        };
        let seconds = |description: &str| {
            described(Type::Integer.into(), description)
                .minimum(Some(0))
                .maximum(Some(u64::MAX))
        };
        let fields = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "enabled",
                described(Type::Boolean.into(), "`false`: not started (default: true)"),
            )
            .property(
                "command",
                described(
                    nullable(Type::String),
                    "The program of a stdio server, run on the server's host as the daemon's user",
                ),
            )
            .property(
                "args",
                ArrayBuilder::new()
                    .items(text())
                    .description(Some("Its arguments")),
            )
            .property(
                "env",
                strings("Variables set for the program (values are never stored, shown or logged; `${VAR}` is not expanded)"),
            )
            .property(
                "cwd",
                described(
                    nullable(Type::String),
                    "The program's working directory (default: the session's workspace)",
                ),
            )
            .property(
                "url",
                described(
                    nullable(Type::String),
                    "The endpoint of a streamable HTTP server",
                ),
            )
            .property(
                "headers",
                strings("HTTP headers sent to it (values are never stored, shown or logged)"),
            )
            .property(
                "prompt",
                described(
                    nullable(Type::String),
                    "Text appended to this session's system prompt",
                ),
            )
            .property(
                "startup_timeout_secs",
                seconds("Starting may take this long (default: 30)"),
            )
            .property(
                "tool_timeout_secs",
                seconds("One tool call may take this long (default: 300)"),
            )
            .additional_properties(closed());
        let reached_by = |field: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property(field, text())
                .required(field)
        };
        let settings = utoipa::openapi::schema::AllOfBuilder::new()
            .item(fields)
            .item(
                OneOfBuilder::new()
                    .item(reached_by("command"))
                    .item(reached_by("url")),
            )
            .description(Some(
                "One MCP server, as a `[mcp_servers.NAME]` table of the configuration: exactly one of `command` (stdio) and `url` (streamable HTTP)",
            ));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(
                settings.build().into(),
            ))))
            .max_properties(Some(MAX_MCP_SERVERS))
            .description(Some(
                "MCP servers of this session's own, by name, joining the configured ones for it alone (a configured server's name is not started: that one is used). Never stored: a session opened again has what that request gives",
            ))
            .into()
    }
}

impl ToSchema for McpServerMap {}

/// A fork's parent: `[parent id, seq]`.
pub struct SessionParent;

impl PartialSchema for SessionParent {
    fn schema() -> RefOr<Schema> {
        let id = ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("The parent session's id"));
        let seq = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(0))
            .description(Some("The last event copied"));
        ArrayBuilder::new()
            .schema_type(Type::Array)
            .prefix_items([Schema::from(id.build()), Schema::from(seq.build())])
            .items(ArrayItems::False)
            .min_items(Some(2))
            .max_items(Some(2))
            .description(Some("`[parent id, seq]`"))
            .into()
    }
}

impl ToSchema for SessionParent {}

fn described(kind: Type, description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(kind)
        .description(Some(description))
}

fn one_of_words(words: &[&str], description: &str) -> ObjectBuilder {
    described(Type::String, description).enum_values(Some(words.iter().copied()))
}

fn count(description: &str) -> ObjectBuilder {
    described(Type::Integer, description)
        .minimum(Some(0))
        .maximum(Some(u64::MAX))
}

fn flag(description: &str) -> ObjectBuilder {
    described(Type::Boolean, description)
}

/// One path a turn changed (`protocol::checkpoint::ChangedFile`).
pub struct ChangedFile;

impl PartialSchema for ChangedFile {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some("One path a turn changed, with its line counts"))
            .property(
                "path",
                described(Type::String, "Relative to the workspace, `/` separated"),
            )
            .required("path")
            .property(
                "change",
                one_of_words(&["created", "modified", "deleted"], "How it changed"),
            )
            .required("change")
            .property("added", count("Lines added (0 for a binary file)"))
            .required("added")
            .property("removed", count("Lines removed (0 for a binary file)"))
            .required("removed")
            .property(
                "binary",
                flag("Not text: no line counts, no diff (absent: false)"),
            )
            .additional_properties(closed())
            .into()
    }
}

impl ToSchema for ChangedFile {}

/// One user turn and what it changed (`protocol::checkpoint::TurnChanges`).
pub struct TurnChanges;

impl PartialSchema for TurnChanges {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "One user turn of the session and what it changed in the workspace",
            ))
            .property(
                "seq",
                count("The seq of the turn's `user` event: what a rewind names"),
            )
            .required("seq")
            .property("prompt", described(Type::String, "The query, shortened"))
            .required("prompt")
            .property(
                "files",
                ArrayBuilder::new()
                    .items(Ref::from_schema_name("ChangedFile"))
                    .description(Some(
                        "Every path the turn changed (its first version before the turn, its last after)",
                    )),
            )
            .required("files")
            .property(
                "undone",
                flag("Its changes were taken back already (absent: false)"),
            )
            .additional_properties(closed())
            .into()
    }
}

impl ToSchema for TurnChanges {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("ChangedFile".into(), ChangedFile::schema()));
    }
}

/// One path of a rewind (`protocol::checkpoint::RewindFile`).
pub struct RewindFile;

impl PartialSchema for RewindFile {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some("What a rewind does (or would do) with one path"))
            .property(
                "path",
                described(
                    Type::String,
                    "Relative to the workspace, `/` separated",
                ),
            )
            .required("path")
            .property(
                "action",
                one_of_words(
                    &["restore", "remove", "recreate", "unchanged", "conflict"],
                    "`restore` (written back as it was), `remove` (created since), `recreate` (deleted since), `unchanged` (already as it was), `conflict` (changed since by someone else: left alone unless `overwrite`)",
                ),
            )
            .required("action")
            .property(
                "diff",
                described(
                    Type::String,
                    "A unified diff from what is on disk to what it becomes (for a conflict: from what this session left to what is there now), shortened when long; empty for a binary file",
                ),
            )
            .required("diff")
            .property("binary", flag("Not text: no diff (absent: false)"))
            .additional_properties(closed())
            .into()
    }
}

impl ToSchema for RewindFile {}

/// What a rewind did or would do (`protocol::checkpoint::RewindReport`).
pub struct RewindReport;

impl PartialSchema for RewindReport {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "What a rewind would do (a preview) or did",
            ))
            .property(
                "seq",
                count("The turn rewound to: the seq of its `user` event"),
            )
            .required("seq")
            .property(
                "mode",
                one_of_words(&["both", "conversation", "code"], "What was taken back"),
            )
            .required("mode")
            .property(
                "preview",
                flag("Only a preview: nothing was changed (absent: false)"),
            )
            .property(
                "files",
                ArrayBuilder::new()
                    .items(Ref::from_schema_name("RewindFile"))
                    .description(Some(
                        "The paths the turns from `seq` on changed, in path order (none in mode `conversation`)",
                    )),
            )
            .required("files")
            .property(
                "overwrote",
                flag("Conflicts were overwritten, as asked (absent: false)"),
            )
            .property(
                "forked",
                described(
                    Type::String,
                    "The session the conversation continues in (modes `both` and `conversation`, when not a preview)",
                ),
            )
            .property(
                "cannot_restore",
                ArrayBuilder::new()
                    .items(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some(
                        "What no rewind takes back, said plainly (commands' effects outside the workspace, pages fetched, MCP tools' effects)",
                    )),
            )
            .required("cannot_restore")
            .property(
                "prompt",
                described(
                    Type::String,
                    "The query of the turn rewound to (a front end may offer it again)",
                ),
            )
            .required("prompt")
            .additional_properties(closed())
            .into()
    }
}

impl ToSchema for RewindReport {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("RewindFile".into(), RewindFile::schema()));
    }
}

/// One control command's body: `{"command": NAME}` and its fields
/// (`ControlCommand`, tagged by `command`).
fn command(name: &str, description: &str, fields: &[(&str, Schema, bool)]) -> Schema {
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .property(
            "command",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some([name])),
        )
        .required("command")
        .additional_properties(closed());
    for (field, schema, required) in fields {
        object = object.property(*field, schema.clone());
        if *required {
            object = object.required(*field);
        }
    }
    object.build().into()
}

fn text(description: &str) -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .build()
        .into()
}

/// `POST .../input`: a query or a control command.
pub fn input() -> RefOr<Schema> {
    let query = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("text", ObjectBuilder::new().schema_type(Type::String))
        .property(
            "images",
            utoipa::openapi::schema::ArrayBuilder::new()
                .items(
                    ObjectBuilder::new()
                        .schema_type(Type::Object)
                        .property(
                            "media_type",
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .enum_values(Some(agentbus_engine::images::MEDIA_TYPES)),
                        )
                        .property(
                            "data",
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .description(Some(
                                    "The image's bytes, base64 (at most 5 MB decoded)",
                                )),
                        )
                        .property(
                            "source",
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .max_length(Some(255))
                                .pattern(Some("^[^\\x00-\\x1f\\x7f-\\x9f]*$"))
                                .description(Some(
                                    "The image's file name, shown with it and kept (optional)",
                                )),
                        )
                        .required("data")
                        .additional_properties(closed()),
                )
                .description(Some("Images sent with the query (PNG, JPEG, GIF or WebP)")),
        )
        .required("text")
        .additional_properties(closed())
        .description(Some("A query; text starting with `/` is a slash command"));
    let mode: Schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(PERMISSION_MODES))
        .build()
        .into();
    let at_seq: Schema = ObjectBuilder::new()
        .schema_type(nullable(Type::Integer))
        .minimum(Some(0))
        .maximum(Some(u64::MAX))
        .description(Some("Copy events up to this seq (default: all)"))
        .build()
        .into();
    let focus: Schema = ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .description(Some("What the summary keeps above all"))
        .build()
        .into();
    let bare: [(&str, &str); 15] = [
        ("help", "List the slash commands"),
        ("quit", "The front end that sent it should exit"),
        ("clear", "Empty the history"),
        ("new_conversation", "Start a new session"),
        ("list_sessions", "List the stored sessions"),
        ("show_model", "Show the model profile"),
        ("list_models", "List the model profiles"),
        ("list_tools", "List the tools"),
        ("usage", "Show token usage"),
        ("context", "Show where the context budget goes"),
        (
            "debug",
            "Show what the session is doing (full: the whole state as JSON)",
        ),
        ("show_mode", "Show the permission mode and rules"),
        ("list_agents", "List the named agents and the active one"),
        ("compact", "Summarise older turns now"),
        (
            "init",
            "Ask the model to write or improve AGENTS.md (answers with a turn)",
        ),
    ];
    let full: Schema = ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .description(Some(
            "The whole state as JSON instead of a summary (default: false)",
        ))
        .build()
        .into();
    let mut one_of = OneOfBuilder::new().item(query);
    for (name, description) in bare {
        let fields: Vec<(&str, Schema, bool)> = match name {
            "compact" => vec![("focus", focus.clone(), false)],
            "debug" => vec![("full", full.clone(), false)],
            _ => Vec::new(),
        };
        one_of = one_of.item(command(name, description, &fields));
    }
    let with_fields: [(&str, &str, &str, Schema); 7] = [
        (
            "resume",
            "Switch to a stored session",
            "id",
            text("A session id or a unique prefix"),
        ),
        ("fork", "Copy this session into a new one", "at_seq", at_seq),
        (
            "save",
            "Export this session to a file on the server",
            "path",
            text("Relative to the workspace"),
        ),
        (
            "load",
            "Import a session file as a new session",
            "path",
            text("Relative to the workspace"),
        ),
        (
            "switch_model",
            "Switch to another model profile",
            "name",
            text("A model profile"),
        ),
        ("set_mode", "Switch the permission mode", "mode", mode),
        (
            "switch_agent",
            "Switch to another named agent (prompt, tools, model, permission mode)",
            "name",
            text("An agent: build, plan, or a configured or workspace agent"),
        ),
    ];
    for (name, description, field, schema) in with_fields {
        let required = name != "fork";
        one_of = one_of.item(command(name, description, &[(field, schema, required)]));
    }
    let rewind_seq: Schema = ObjectBuilder::new()
        .schema_type(nullable(Type::Integer))
        .minimum(Some(0))
        .maximum(Some(u64::MAX))
        .description(Some(
            "The turn to go back to before: the seq of its `user` event (absent: list the turns)",
        ))
        .build()
        .into();
    let rewind_mode: Schema = one_of_words(
        &["both", "conversation", "code"],
        "What to take back: the files and the conversation (a fork to switch to), one of them (default: both)",
    )
    .build()
    .into();
    let overwrite: Schema =
        flag("Also overwrite files changed since by someone else (default: false)")
            .build()
            .into();
    one_of = one_of.item(command(
        "rewind",
        "Take back the files and/or the conversation to before a turn (without `seq`: list the turns and what each changed)",
        &[
            ("seq", rewind_seq, false),
            ("mode", rewind_mode, false),
            ("overwrite", overwrite.clone(), false),
        ],
    ));
    one_of = one_of.item(command(
        "undo",
        "Take back the file changes of the last turn that made some",
        &[("overwrite", overwrite, false)],
    ));
    one_of = one_of.item(command(
        "custom",
        "Run one of the session's custom commands (a command file): an ordinary turn on its prompt",
        &[
            (
                "name",
                text("The command's name (`review`, `frontend:component`)"),
                true,
            ),
            (
                "arguments",
                text(
                    "What follows the name, filling `$ARGUMENTS`, `$1`, `$2`, ... (default: none)",
                ),
                false,
            ),
        ],
    ));
    one_of.into()
}

/// The fields a control command may carry besides `command`, from the
/// command itself (serialised, every field appears, `null` when unset).
pub fn command_fields(command: &agentbus_engine::protocol::ControlCommand) -> Vec<String> {
    match serde_json::to_value(command) {
        Ok(Value::Object(fields)) => fields.into_iter().map(|(k, _)| k).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::ControlCommand;

    /// Every control command has a schema, and no schema names a command
    /// that does not exist.
    #[test]
    fn every_control_command_is_described() {
        let schema = serde_json::to_value(input()).unwrap_or_default();
        let described: Vec<String> = schema["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["properties"]["command"]["enum"][0].as_str())
            .map(String::from)
            .collect();
        for name in &described {
            let mode = if name == "rewind" { "code" } else { "plan" };
            let body = serde_json::json!({"command": name, "id": "x", "path": "p", "name": "n", "mode": mode, "seq": 3, "overwrite": true});
            let mut body = body.as_object().cloned().unwrap_or_default();
            body.retain(|k, _| k == "command" || schema_fields(&schema, name).contains(k));
            let parsed: Result<ControlCommand, _> = serde_json::from_value(Value::Object(body));
            assert!(parsed.is_ok(), "{name}: {parsed:?}");
        }
        assert_eq!(described.len(), 25, "{described:?}");
    }

    fn schema_fields(schema: &Value, name: &str) -> Vec<String> {
        schema["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["properties"]["command"]["enum"][0] == name)
            .and_then(|s| s["properties"].as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }
}
