//! What the OpenAPI document says beyond the handlers' own annotations: the
//! bearer-token scheme, the error answers every route shares (401 without
//! the token; 413 and 415 for routes that take a body), the document's
//! own route, and the model profiles this server has (known only when it
//! starts). Kept apart so each handler's annotation lists only what is
//! particular to it.

use utoipa::openapi::path::{HttpMethod, Operation, OperationBuilder, PathItem};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, OpenApi, Ref, RefOr};

/// The `token` security scheme the document requires everywhere.
pub struct BearerToken;

impl utoipa::Modify for BearerToken {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The token from `DATA_DIR/token` or `[server] token` (the web page sends its cookie instead; `?token=` is refused)",
                    ))
                    .build(),
            ),
        );
    }
}

/// The largest bodies the server reads, in bytes: `input`'s for
/// `POST .../input`, `other` for every other route.
pub struct BodyLimits {
    pub input: usize,
    pub other: usize,
}

/// Adds the shared error answers to every operation and describes
/// `GET /v1/openapi.json`. Run on the finished document (after the routes
/// are in).
pub fn complete(openapi: &mut OpenApi, limits: &BodyLimits) {
    for (path, item) in openapi.paths.paths.iter_mut() {
        let sessions = path.starts_with("/v1/sessions");
        let names_a_session = path.contains("{id}");
        for operation in operations(item) {
            add_error(operation, "401", "No token, or the wrong one");
            add_error(
                operation,
                "429",
                "The token's `requests_per_minute` is spent, or (an input) its `max_busy_sessions` run already; `Retry-After` says when to try again",
            );
            if sessions {
                add_error(
                    operation,
                    "403",
                    "The token's role does not allow this here (the error names the role that would): a `user` reaches only the sessions it created, and follows those it was given; a `viewer` follows those it was given",
                );
            }
            if names_a_session {
                add_error(
                    operation,
                    "409",
                    "The id prefix matches more than one session (the error lists some; type more of the id)",
                );
            }
            if sessions {
                add_error(
                    operation,
                    "503",
                    "agentbus is shutting down (no session can be started or loaded), \
                     another process keeps the session store locked past the busy timeout, \
                     or the store cannot keep what was sent (the disk is full): an input it \
                     cannot store is not accepted and nothing is queued",
                );
            }
            if operation.request_body.is_some() {
                let limit = if path.ends_with("/input") {
                    format!(
                        "The body is over the {} MiB limit of an input (its images included)",
                        limits.input / (1024 * 1024)
                    )
                } else {
                    format!(
                        "The body is over the {} MiB limit",
                        limits.other / (1024 * 1024)
                    )
                };
                add_error(operation, "413", &limit);
                add_error(
                    operation,
                    "415",
                    "The body is not sent as `application/json`",
                );
            }
        }
    }
    let document = OperationBuilder::new()
        .tag("server")
        .summary(Some("This document: the API described in OpenAPI 3.1"))
        .operation_id(Some("openapi"))
        .response(
            "200",
            ResponseBuilder::new()
                .description("The OpenAPI document")
                .content("application/json", Content::new(None::<Ref>)),
        )
        .build();
    let mut item = PathItem::new(HttpMethod::Get, document);
    if let Some(operation) = item.get.as_mut() {
        add_error(operation, "401", "No token, or the wrong one");
    }
    openapi.paths.paths.insert("/v1/openapi.json".into(), item);
}

/// Name the accepted values of body fields that take a name (the
/// configured model profiles; the agents known at start, those of the
/// server's workspace): any other name is refused, so the document lists
/// the ones accepted.
pub fn name_choices<'a>(
    openapi: &mut OpenApi,
    fields: &[(&str, &str)],
    names: impl IntoIterator<Item = &'a String>,
) {
    let mut values: Vec<serde_json::Value> = names.into_iter().map(|n| n.as_str().into()).collect();
    values.push(serde_json::Value::Null);
    let Some(components) = openapi.components.as_mut() else {
        return;
    };
    for &(schema, property) in fields {
        let field = match components.schemas.get_mut(schema) {
            Some(RefOr::T(Schema::Object(object))) => object.properties.get_mut(property),
            _ => None,
        };
        if let Some(RefOr::T(Schema::Object(field))) = field {
            field.enum_values = Some(values.clone());
        }
    }
}

fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// Document an error answer; where the operation already has one with
/// that status, add this reason to its description.
fn add_error(operation: &mut Operation, status: &str, description: &str) {
    let responses = &mut operation.responses.responses;
    if let Some(RefOr::T(response)) = responses.get_mut(status) {
        response.description = format!("{}; or: {description}", response.description);
        return;
    }
    responses.insert(
        status.to_string(),
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                Content::new(Some(Ref::from_schema_name("ErrorBody"))),
            )
            .into(),
    );
}
