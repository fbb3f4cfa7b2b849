//! OpenTelemetry traces end to end: the built binary sends its spans to a
//! real OTLP/HTTP receiver run by the test — `POST /v1/traces` with a
//! protobuf body, decoded with the official generated types of
//! `opentelemetry-proto` and answered like a collector would.
//!
//! Checked: one turn with a `bash` call is one trace, `turn` → `chat` →
//! `execute_tool bash` → `chat`, with token counts equal to the `result`'s,
//! `session.id` on every span, the turn's store commits beneath it; an MCP
//! tool call that waited for an approval given over HTTP has its approval
//! wait beneath the turn and its MCP request beneath the tool call; a
//! one-shot `run` sends its spans before it exits (told where by
//! `OTEL_EXPORTER_OTLP_ENDPOINT`); with nothing configured nothing is
//! sent, and a collector that is not there costs the turn nothing.
//!
//! The spans are waited for without sleeping: the daemon is stopped
//! gracefully (which sends what is left) and the receiver is then asked,
//! with [`GUARD`] as the bound only so a missing span fails instead of
//! hanging.

use crate::support::{Fixture, GUARD, SECRET, session_id, test_mcp_server, the_result};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::watch;

/// One span as the receiver got it, attributes as JSON values.
#[derive(Clone, Debug)]
struct Received {
    name: String,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_span_id: Vec<u8>,
    kind: i32,
    start: u64,
    /// The status code (0 unset, 1 ok, 2 error).
    status: i32,
    attributes: BTreeMap<String, Value>,
    /// The resource's `service.name`.
    service: String,
}

impl Received {
    fn attr(&self, key: &str) -> &Value {
        self.attributes.get(key).unwrap_or(&Value::Null)
    }

    fn int(&self, key: &str) -> i64 {
        self.attr(key)
            .as_i64()
            .unwrap_or_else(|| panic!("no integer `{key}` on {self:#?}"))
    }

    fn is_child_of(&self, parent: &Received) -> bool {
        self.parent_span_id == parent.span_id && self.trace_id == parent.trace_id
    }
}

fn value_of(value: &Option<AnyValue>) -> Value {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::IntValue(i)) => json!(i),
        Some(any_value::Value::DoubleValue(d)) => json!(d),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        Some(any_value::Value::ArrayValue(array)) => Value::Array(
            array
                .values
                .iter()
                .map(|v| value_of(&Some(v.clone())))
                .collect(),
        ),
        Some(other) => json!(format!("{other:?}")),
        None => Value::Null,
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, Value> {
    list.iter()
        .map(|kv| (kv.key.clone(), value_of(&kv.value)))
        .collect()
}

/// What the receiver has been sent: spans, and any request it could not
/// take (which fails the test).
#[derive(Default)]
struct Inbox {
    spans: Vec<Received>,
    refused: Vec<String>,
}

/// A real OTLP/HTTP receiver on a free port of 127.0.0.1.
struct Receiver {
    port: u16,
    inbox: watch::Receiver<Inbox>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let port = listener.local_addr().expect("its address").port();
        let (tx, inbox) = watch::channel(Inbox::default());
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(receive))
            .with_state(Arc::new(tx));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { port, inbox }
    }

    /// The base URL a configuration names (`/v1/traces` is added).
    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans received once `ready` holds for them (fails after
    /// [`GUARD`]).
    async fn spans_once(&self, ready: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let mut inbox = self.inbox.clone();
        let waited = tokio::time::timeout(GUARD, inbox.wait_for(|inbox| ready(&inbox.spans))).await;
        let inbox = self.inbox.borrow();
        assert!(inbox.refused.is_empty(), "refused: {:?}", inbox.refused);
        match waited {
            Ok(Ok(_)) => inbox.spans.clone(),
            _ => panic!(
                "the spans awaited did not arrive in {GUARD:?}; got {:#?}",
                inbox.spans
            ),
        }
    }

    /// Everything received so far.
    fn received(&self) -> Vec<Received> {
        let inbox = self.inbox.borrow();
        assert!(inbox.refused.is_empty(), "refused: {:?}", inbox.refused);
        inbox.spans.clone()
    }
}

/// `POST /v1/traces`: a protobuf `ExportTraceServiceRequest`, answered
/// with an empty `ExportTraceServiceResponse` (anything else is refused and
/// noted).
async fn receive(
    State(inbox): State<Arc<watch::Sender<Inbox>>>,
    headers: HeaderMap,
    body: bytes::Bytes,
) -> axum::response::Response {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if kind != "application/x-protobuf" {
        inbox.send_modify(|i| i.refused.push(format!("content type `{kind}`")));
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(e) => {
            inbox.send_modify(|i| i.refused.push(format!("not a trace export: {e}")));
            return StatusCode::BAD_REQUEST.into_response();
        }
    };
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = resource_spans
            .resource
            .map(|r| attributes(&r.attributes))
            .unwrap_or_default();
        let service = resource["service.name"].as_str().unwrap_or("").to_string();
        for scope_spans in resource_spans.scope_spans {
            for span in scope_spans.spans {
                spans.push(Received {
                    name: span.name,
                    trace_id: span.trace_id,
                    span_id: span.span_id,
                    parent_span_id: span.parent_span_id,
                    kind: span.kind,
                    start: span.start_time_unix_nano,
                    status: span.status.map(|s| s.code).unwrap_or(0),
                    attributes: attributes(&span.attributes),
                    service: service.clone(),
                });
            }
        }
    }
    inbox.send_modify(|i| i.spans.extend(spans));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

fn named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The one span named `name`.
fn the<'a>(spans: &'a [Received], name: &str) -> &'a Received {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one `{name}` span, got {spans:#?}");
    found[0]
}

/// Every span tells its session; none carries what was said or a secret.
fn assert_session_and_nothing_said(spans: &[Received], session: &str, said: &[&str]) {
    for span in spans {
        assert_eq!(span.attr("session.id"), session, "{span:#?}");
        assert_eq!(span.service, "agentbus", "{span:#?}");
        for (key, value) in &span.attributes {
            let text = value.to_string();
            for words in said.iter().chain([&SECRET]) {
                assert!(
                    !text.contains(words),
                    "`{key}` of `{}` carries `{words}`: {text}",
                    span.name
                );
            }
        }
    }
}

fn traces_to(receiver: &Receiver) -> String {
    format!("[telemetry]\notlp_endpoint = \"{}\"\n", receiver.base_url())
}

#[tokio::test]
async fn a_turn_with_a_tool_call_is_one_trace_turn_chat_tool_chat_with_its_tokens() {
    let receiver = Receiver::start().await;
    let f = Fixture::new("telemetry").await;
    f.add_config(&traces_to(&receiver));
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "alpha").await;
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert!(status.success(), "{status}: {stderr}");
    assert!(!stderr.contains("could not send"), "{stderr}");
    // The log keeps to its own lines: a line logged inside the tool call's
    // span does not show the span.
    let inside = stderr
        .lines()
        .find(|l| l.contains("checkpoint: looked before a call"))
        .unwrap_or_else(|| panic!("the checkpoint's debug line: {stderr}"));
    assert!(!inside.contains("execute_tool"), "{inside}");
    assert!(!stderr.contains("gen_ai."), "{stderr}");

    // Stopping sent what was left: the turn is there, ended.
    let spans = receiver
        .spans_once(|spans| {
            spans
                .iter()
                .any(|s| s.name == "turn" && s.attr("agentbus.turn.stop_reason") == "end_turn")
        })
        .await;
    let turn = the(&spans, "turn");
    assert_eq!(turn.attr("gen_ai.conversation.id"), id.as_str());
    assert!(turn.parent_span_id.is_empty(), "the turn is a root");
    assert_eq!(turn.int("agentbus.turn.steps"), 2);
    assert!(turn.int("agentbus.turn.seq") > 0, "{turn:#?}");

    let mut models = named(&spans, "chat scripted-main");
    assert_eq!(models.len(), 2, "{spans:#?}");
    models.sort_by_key(|s| s.start);
    let tool = the(&spans, "execute_tool bash");
    for child in models.iter().copied().chain([tool]) {
        assert!(child.is_child_of(turn), "{child:#?} under {turn:#?}");
    }
    assert!(
        models[0].start <= tool.start && tool.start <= models[1].start,
        "model, tool, model: {models:#?} {tool:#?}"
    );

    for model in &models {
        assert_eq!(model.kind, SpanKind::Client as i32, "{model:#?}");
        assert_eq!(model.attr("gen_ai.operation.name"), "chat");
        assert_eq!(model.attr("gen_ai.provider.name"), "openai");
        assert_eq!(model.attr("gen_ai.request.model"), "scripted-main");
        assert_eq!(model.attr("agentbus.model.profile"), "scripted");
        assert_eq!(model.int("agentbus.model.attempts"), 1);
        assert!(model.int("gen_ai.usage.input_tokens") > 0, "{model:#?}");
        assert!(model.int("gen_ai.usage.output_tokens") > 0, "{model:#?}");
    }
    assert_eq!(
        models[0].attr("gen_ai.response.finish_reasons"),
        &json!(["tool_use"])
    );
    assert_eq!(
        models[1].attr("gen_ai.response.finish_reasons"),
        &json!(["end_turn"])
    );

    // The tokens are the result's: per call on the calls, summed on the turn.
    let usage = &result["usage"];
    let input_tokens = usage["input_tokens"].as_i64().unwrap()
        + usage["cache_read_input_tokens"].as_i64().unwrap_or(0)
        + usage["cache_creation_input_tokens"].as_i64().unwrap_or(0);
    let output_tokens = usage["output_tokens"].as_i64().unwrap();
    assert!(input_tokens > 0, "{result}");
    assert_eq!(turn.int("gen_ai.usage.input_tokens"), input_tokens);
    assert_eq!(turn.int("gen_ai.usage.output_tokens"), output_tokens);
    let summed = |key: &str| models.iter().map(|m| m.int(key)).sum::<i64>();
    assert_eq!(summed("gen_ai.usage.input_tokens"), input_tokens);
    assert_eq!(summed("gen_ai.usage.output_tokens"), output_tokens);

    assert_eq!(tool.attr("gen_ai.operation.name"), "execute_tool");
    assert_eq!(tool.attr("gen_ai.tool.name"), "bash");
    assert_eq!(tool.attr("gen_ai.tool.call.id"), "a1");
    assert_eq!(tool.attr("agentbus.outcome"), "ok");
    assert_eq!(tool.status, 0, "no error: {tool:#?}");

    let commits = named(&spans, "store commit");
    assert!(!commits.is_empty(), "{spans:#?}");
    for commit in &commits {
        assert!(commit.is_child_of(turn), "{commit:#?}");
        assert_eq!(commit.attr("agentbus.outcome"), "ok");
    }
    // Nothing else: the turn's trace is these spans.
    assert_eq!(spans.len(), 1 + 2 + 1 + commits.len(), "{spans:#?}");
    assert_session_and_nothing_said(&spans, &id, &["tool-ran", "alpha"]);
}

#[tokio::test]
async fn an_mcp_call_that_waited_for_approval_has_its_wait_and_its_request_traced() {
    let receiver = Receiver::start().await;
    let f = Fixture::new("telemetry").await;
    f.set_permission_mode("default");
    f.add_config(&format!(
        "[mcp_servers.test]\ncommand = \"{}\"\n{}",
        test_mcp_server().display(),
        traces_to(&receiver)
    ));
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "echo through mcp").await;
    let request = sse.until(|e| e["type"] == "approval_request").await;
    assert_eq!(request["name"], "mcp__test__echo", "{request}");
    let request_id = request["request_id"].as_str().unwrap();
    let answer = server
        .post(&format!("/v1/sessions/{id}/approvals/{request_id}"))
        .json(&json!({"decision": "allow_once"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let result = sse.result_of(input).await;
    assert_eq!(result["text"], "The server said: hello", "{result}");
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert!(status.success(), "{status}: {stderr}");

    let spans = receiver
        .spans_once(|spans| spans.iter().any(|s| s.name == "tools/call echo"))
        .await;
    let turn = the(&spans, "turn");
    let wait = the(&spans, "approval wait");
    let tool = the(&spans, "execute_tool mcp__test__echo");
    let mcp = the(&spans, "tools/call echo");
    assert!(wait.is_child_of(turn), "{wait:#?}");
    assert!(tool.is_child_of(turn), "{tool:#?}");
    assert!(mcp.is_child_of(tool), "{mcp:#?} under {tool:#?}");
    assert!(wait.start <= tool.start, "the call ran once allowed");

    assert_eq!(wait.attr("agentbus.approval.outcome"), "allowed_once");
    assert_eq!(wait.attr("agentbus.approval.request_id"), request_id);
    assert_eq!(wait.attr("gen_ai.tool.name"), "mcp__test__echo");
    assert_eq!(wait.attr("gen_ai.tool.call.id"), "m1");

    assert_eq!(tool.attr("agentbus.mcp.server"), "test");
    assert_eq!(tool.attr("gen_ai.tool.type"), "extension");
    assert_eq!(tool.attr("agentbus.outcome"), "ok");

    assert_eq!(mcp.kind, SpanKind::Client as i32);
    assert_eq!(mcp.attr("mcp.method.name"), "tools/call");
    assert_eq!(mcp.attr("gen_ai.operation.name"), "execute_tool");
    assert_eq!(mcp.attr("gen_ai.tool.name"), "echo");
    assert_eq!(mcp.attr("agentbus.mcp.server"), "test");
    assert_eq!(mcp.attr("agentbus.outcome"), "ok");
    assert_session_and_nothing_said(&spans, &id, &["hello"]);
}

#[tokio::test]
async fn a_one_shot_run_sends_its_spans_before_it_exits_where_the_environment_says() {
    let receiver = Receiver::start().await;
    let f = Fixture::new("telemetry").await;
    let out = f
        .run_with_env(
            &["run", "--json", "alpha"],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base_url())],
        )
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    let id = session_id(&events);
    // The process is gone: what it sent is all there is.
    let spans = receiver.received();
    let turn = the(&spans, "turn");
    assert_eq!(turn.attr("agentbus.turn.stop_reason"), "end_turn");
    assert_eq!(named(&spans, "chat scripted-main").len(), 2, "{spans:#?}");
    assert!(
        spans.iter().all(|s| s.trace_id == turn.trace_id),
        "{spans:#?}"
    );
    assert_session_and_nothing_said(&spans, &id, &["tool-ran"]);
}

#[tokio::test]
async fn without_telemetry_nothing_is_sent_and_an_absent_collector_costs_the_turn_nothing() {
    // Nothing configured: a receiver listening gets nothing.
    let receiver = Receiver::start().await;
    let f = Fixture::new("telemetry").await;
    let out = f.run(&["run", "--json", "alpha"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(the_result(&out.events())["stop_reason"], "end_turn");
    assert!(receiver.received().is_empty());
    assert!(!out.stderr.contains("traces go to"), "{}", out.stderr);

    // A collector that is not there: the turn ends as usual, and the
    // failure to send is said once in the log.
    let closed = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let f = Fixture::new("telemetry").await;
    f.add_config(&format!(
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{closed}/v1/traces\"\n"
    ));
    let out = f.run(&["run", "--json", "alpha"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    assert_eq!(
        result["text"].as_str().map(str::trim),
        Some("Answer to alpha: tool-ran"),
        "{result}"
    );
    assert!(
        out.stderr.contains("traces go to http://127.0.0.1:"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr.matches("could not send").count()
            + out.stderr.matches("were not sent within").count(),
        1,
        "the failure is said once: {}",
        out.stderr
    );
}

#[tokio::test]
async fn a_model_call_that_fails_after_its_retries_says_its_attempts_and_the_status() {
    let receiver = Receiver::start().await;
    let f = Fixture::flaky_then_back().await;
    f.add_config(&traces_to(&receiver));
    let out = f
        .run(&["run", "--json", "--model", "flaky", "question"])
        .await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["stop_reason"], "error");
    let spans = receiver.received();
    let turn = the(&spans, "turn");
    assert_eq!(turn.attr("agentbus.turn.stop_reason"), "error");
    assert_eq!(turn.status, 2, "an error: {turn:#?}");
    let model = the(&spans, "chat scripted-main");
    assert!(model.is_child_of(turn));
    assert_eq!(model.attr("agentbus.model.profile"), "flaky");
    assert_eq!(
        model.int("agentbus.model.attempts"),
        2,
        "one try, one retry"
    );
    assert_eq!(model.attr("error.type"), "503");
    assert_eq!(model.attr("agentbus.outcome"), "error");
    assert_eq!(model.status, 2, "an error: {model:#?}");
    assert_session_and_nothing_said(&spans, &session_id(&events), &["still down"]);
}
