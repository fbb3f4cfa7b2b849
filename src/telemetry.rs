//! OpenTelemetry traces: the spans of a session's work
//! (`agentbus_engine::spans`: turns, model calls, tool calls, MCP calls,
//! approval waits, store commits) sent to a collector as OTLP over HTTP
//! (protobuf), with the official exporter.
//!
//! Off unless something says where: `[telemetry] otlp_endpoint`, else
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL), else
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (a base: `/v1/traces` is added). Off,
//! nothing is installed and a span costs the check of a cached flag.
//!
//! On, spans are batched and sent by a task on the tokio runtime: a
//! collector that is slow or gone never holds up a turn (a full queue
//! drops spans), and a failed export is said in the log at `warn`, at
//! most once a minute. [`shutdown`] sends what is left when the process
//! stops (every command, `serve` and one-shot `run` alike), waiting a few
//! seconds at most.
//!
//! Never logs the headers (they carry a collector's credentials) nor a
//! URL's password; what a span may carry is `agentbus_engine::spans`'
//! rule: names, ids, counts and outcomes, never what was said.

use agentbus_engine::spans::TARGET;
use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Array, Value};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tracing_subscriber::Layer as _;

/// The signal path of traces under a collector's base URL.
const TRACES_PATH: &str = "/v1/traces";
/// The service name when none is configured.
const DEFAULT_SERVICE_NAME: &str = "agentbus";
/// How long the process waits for its last spans to be sent.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// At most one warning about failed exports per this long.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// `[telemetry]` in a configuration file (every key optional).
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The collector's OTLP/HTTP endpoint: a base URL
    /// (`http://127.0.0.1:4318`, `/v1/traces` is added) or the full URL
    /// of its traces (ending in `/v1/traces`). Unset: the
    /// `OTEL_EXPORTER_OTLP_*` variables, else no traces.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the traces (default `agentbus`, or
    /// `OTEL_SERVICE_NAME`).
    pub service_name: Option<String>,
    /// Headers sent with every export (e.g. a collector's token, as
    /// `"${VAR}"`); never logged.
    pub headers: Option<BTreeMap<String, String>>,
}

impl std::fmt::Debug for TelemetrySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetrySettings")
            .field("otlp_endpoint", &self.otlp_endpoint.as_deref().map(shown))
            .field("service_name", &self.service_name)
            .field(
                "headers",
                &self.headers.as_ref().map(|h| {
                    h.keys()
                        .map(|k| format!("{k}: [redacted]"))
                        .collect::<Vec<_>>()
                }),
            )
            .finish()
    }
}

impl TelemetrySettings {
    /// `later`'s keys over these (headers name by name).
    pub fn overridden_by(self, later: TelemetrySettings) -> TelemetrySettings {
        let headers = match (self.headers, later.headers) {
            (Some(mut mine), Some(theirs)) => {
                mine.extend(theirs);
                Some(mine)
            }
            (mine, theirs) => theirs.or(mine),
        };
        TelemetrySettings {
            otlp_endpoint: later.otlp_endpoint.or(self.otlp_endpoint),
            service_name: later.service_name.or(self.service_name),
            headers,
        }
    }
}

/// Where the traces go, resolved from the settings and the environment.
#[derive(Debug, PartialEq)]
pub enum Plan {
    /// Nowhere: nothing is installed.
    Off,
    /// An `OTEL_*` variable names no usable URL: said as a warning, and no
    /// traces (a variable meant for another program must not stop this one).
    Unusable(String),
    /// To this URL (the traces' own, `/v1/traces` included).
    To { endpoint: String },
}

impl Plan {
    /// Say in the log where the traces go, or why none are sent.
    pub fn announce(&self) {
        match self {
            Plan::Off => {}
            Plan::Unusable(why) => tracing::warn!("{why}"),
            Plan::To { endpoint } => {
                tracing::info!("traces go to {} (OTLP over HTTP)", shown(endpoint))
            }
        }
    }
}

/// Where the traces go: `[telemetry] otlp_endpoint` (an error when it is
/// not an http(s) URL), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it
/// is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` added. `env`
/// reads a variable (the process environment, or a test's).
pub fn plan(
    settings: &TelemetrySettings,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Plan> {
    let set = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    if let Some(endpoint) = set(settings.otlp_endpoint.clone()) {
        let full = with_traces_path(&endpoint);
        check_url(&full).map_err(|why| {
            anyhow::anyhow!(
                "`[telemetry] otlp_endpoint`: `{}` {why} (e.g. `http://127.0.0.1:4318`)",
                shown(&endpoint)
            )
        })?;
        return Ok(Plan::To { endpoint: full });
    }
    let from_env = [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", true),
    ]
    .into_iter()
    .find_map(|(name, base)| set(env(name)).map(|value| (name, base, value)));
    let Some((name, base, value)) = from_env else {
        return Ok(Plan::Off);
    };
    let full = if base {
        with_traces_path(&value)
    } else {
        value.clone()
    };
    Ok(match check_url(&full) {
        Ok(()) => Plan::To { endpoint: full },
        Err(why) => Plan::Unusable(format!(
            "{name}: `{}` {why}; no traces are sent",
            shown(&value)
        )),
    })
}

/// A base URL with `/v1/traces` added, unless it ends in it already.
fn with_traces_path(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    if trimmed.ends_with(TRACES_PATH) {
        trimmed.to_string()
    } else {
        format!("{trimmed}{TRACES_PATH}")
    }
}

/// Why `url` cannot take OTLP/HTTP exports, if it cannot.
fn check_url(url: &str) -> Result<(), &'static str> {
    let parsed = reqwest::Url::parse(url).map_err(|_| "is not a URL")?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("is not an http:// or https:// URL");
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("names no host");
    }
    Ok(())
}

/// A URL as it may be shown: without a password.
fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("****"));
            parsed.to_string()
        }
        Ok(_) => url.to_string(),
        Err(_) => match url.split_once('@') {
            Some((_, host)) => format!("****@{host}"),
            None => url.to_string(),
        },
    }
}

/// The headers, checked: a name or value HTTP cannot carry is an error
/// naming the header (never its value).
fn checked_headers(
    headers: &Option<BTreeMap<String, String>>,
) -> anyhow::Result<HashMap<String, String>> {
    let mut checked = HashMap::new();
    for (name, value) in headers.iter().flatten() {
        reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .with_context(|| format!("`[telemetry] headers`: `{name}` is not a header name"))?;
        reqwest::header::HeaderValue::from_str(value).map_err(|_| {
            anyhow::anyhow!(
                "`[telemetry] headers.{name}`: the value is not one HTTP can send (a line break or a control character?)"
            )
        })?;
        checked.insert(name.clone(), value.clone());
    }
    Ok(checked)
}

/// The tracer provider, kept to send what is left at [`shutdown`].
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Start exporting to `endpoint` (a [`Plan::To`]): the exporter, its
/// batch task on the current tokio runtime, and the layer that turns
/// `agentbus_engine::spans` into exported spans, for the process's
/// subscriber.
pub fn start(
    endpoint: &str,
    settings: &TelemetrySettings,
) -> anyhow::Result<crate::logging::BoxedLayer> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_headers(checked_headers(&settings.headers)?)
        .build()
        .context("`[telemetry]`: cannot make the OTLP exporter")?;
    let exporter = WarnOnFailure {
        inner: exporter,
        warned: Mutex::new(None),
    };
    let processor =
        BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
    let mut resource = opentelemetry_sdk::Resource::builder().with_attribute(
        opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    );
    let configured = settings.service_name.as_deref().map(str::trim);
    let from_env = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|v| !v.trim().is_empty());
    match configured.filter(|name| !name.is_empty()) {
        Some(name) => resource = resource.with_service_name(name.to_string()),
        None if from_env.is_some() => {} // the builder reads it
        None => resource = resource.with_service_name(DEFAULT_SERVICE_NAME),
    }
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("agentbus");
    if PROVIDER.set(provider).is_err() {
        anyhow::bail!("telemetry was started twice");
    }
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
            meta.target() == TARGET
        }));
    Ok(Box::new(layer))
}

/// Send the spans not sent yet and stop exporting (nothing when traces are
/// off). Waits [`SHUTDOWN_WAIT`] at most: a collector that does not
/// answer loses them, said in the log.
pub async fn shutdown() {
    let Some(provider) = PROVIDER.get().cloned() else {
        return;
    };
    // The provider blocks its caller until the batch task has sent the
    // rest: a blocking thread waits, the runtime's workers send.
    let stopping = tokio::task::spawn_blocking(move || provider.shutdown());
    match tokio::time::timeout(SHUTDOWN_WAIT, stopping).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!("the last traces may not all have been sent: {e}"),
        Ok(Err(e)) => tracing::warn!("the last traces were not sent: {e}"),
        Err(_) => tracing::warn!(
            "the last traces were not sent within {} s; the collector did not answer",
            SHUTDOWN_WAIT.as_secs()
        ),
    }
}

/// The OTLP exporter, with its failures said in the log at most once per
/// [`WARN_EVERY`] (the batch task would otherwise stay silent, or say each
/// one), and each span's `gen_ai.response.finish_reasons` made the list
/// the GenAI conventions ask for (a `tracing` field holds one string).
#[derive(Debug)]
struct WarnOnFailure<E> {
    inner: E,
    /// When a failure was last said.
    warned: Mutex<Option<Instant>>,
}

impl<E: SpanExporter> SpanExporter for WarnOnFailure<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        for span in &mut batch {
            for attribute in &mut span.attributes {
                if attribute.key.as_str() == "gen_ai.response.finish_reasons"
                    && let Value::String(reason) = &attribute.value
                {
                    attribute.value = Value::Array(Array::String(vec![reason.clone()]));
                }
            }
        }
        let spans = batch.len();
        if let Err(error) = self.inner.export(batch).await {
            let now = Instant::now();
            let say = match self.warned.lock() {
                Ok(mut last) => {
                    let due = last.is_none_or(|at| now.duration_since(at) >= WARN_EVERY);
                    if due {
                        *last = Some(now);
                    }
                    due
                }
                Err(_) => false,
            };
            if say {
                tracing::warn!(
                    "could not send {spans} spans to the OTLP collector ({error}); they are dropped (said at most once a minute)"
                );
            }
        }
        // Said here; the batch task has nothing more to do about it.
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn configured(endpoint: &str) -> TelemetrySettings {
        TelemetrySettings {
            otlp_endpoint: Some(endpoint.into()),
            ..TelemetrySettings::default()
        }
    }

    fn to(endpoint: &str) -> Plan {
        Plan::To {
            endpoint: endpoint.into(),
        }
    }

    #[test]
    fn nothing_set_is_off() {
        let plan = plan(&TelemetrySettings::default(), env(&[])).unwrap();
        assert_eq!(plan, Plan::Off);
        let blank = plan_of(&configured("  "), &[]);
        assert_eq!(blank, Plan::Off);
    }

    fn plan_of(settings: &TelemetrySettings, vars: &[(&str, &str)]) -> Plan {
        plan(settings, env(vars)).unwrap()
    }

    #[test]
    fn a_base_url_gets_the_traces_path_and_a_full_one_is_kept() {
        for (written, meant) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otel.example/v1/traces",
                "https://otel.example/v1/traces",
            ),
            (
                "https://otel.example/tenant",
                "https://otel.example/tenant/v1/traces",
            ),
        ] {
            assert_eq!(plan_of(&configured(written), &[]), to(meant), "{written}");
        }
    }

    #[test]
    fn the_configuration_wins_over_the_environment_and_the_traces_variable_over_the_base() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:9999/custom",
            ),
        ];
        assert_eq!(
            plan_of(&configured("http://config:4318"), &vars),
            to("http://config:4318/v1/traces")
        );
        assert_eq!(
            plan_of(&TelemetrySettings::default(), &vars),
            to("http://traces:9999/custom"),
            "the signal's own variable is a full URL, taken as it is"
        );
        assert_eq!(
            plan_of(&TelemetrySettings::default(), &vars[..1]),
            to("http://base:4318/v1/traces")
        );
    }

    #[test]
    fn a_bad_configured_endpoint_is_an_error_and_a_bad_variable_a_warning() {
        let error = plan(&configured("127.0.0.1:4318"), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("`[telemetry] otlp_endpoint`"), "{error}");
        let error = plan(&configured("http://user:hunter2@/"), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "no password shown: {error}");
        match plan_of(
            &TelemetrySettings::default(),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://collector:4317")],
        ) {
            Plan::Unusable(why) => assert!(why.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn headers_are_checked_without_showing_their_values_and_never_printed() {
        let mut headers = BTreeMap::new();
        headers.insert("authorization".to_string(), "Bearer s3cret\n".to_string());
        let error = checked_headers(&Some(headers.clone()))
            .unwrap_err()
            .to_string();
        assert!(error.contains("headers.authorization"), "{error}");
        assert!(!error.contains("s3cret"), "{error}");
        headers.insert("authorization".to_string(), "Bearer s3cret".to_string());
        assert!(checked_headers(&Some(headers.clone())).is_ok());
        let settings = TelemetrySettings {
            otlp_endpoint: Some("http://u:pw@collector:4318".into()),
            headers: Some(headers),
            ..TelemetrySettings::default()
        };
        let printed = format!("{settings:?}");
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(!printed.contains(":pw@"), "{printed}");
        assert!(printed.contains("authorization"), "{printed}");
    }

    #[test]
    fn later_files_win_key_by_key_and_headers_name_by_name() {
        let earlier = TelemetrySettings {
            otlp_endpoint: Some("http://a:4318".into()),
            service_name: Some("one".into()),
            headers: Some(BTreeMap::from([
                ("x-a".to_string(), "1".to_string()),
                ("x-b".to_string(), "2".to_string()),
            ])),
        };
        let later = TelemetrySettings {
            service_name: Some("two".into()),
            headers: Some(BTreeMap::from([("x-b".to_string(), "3".to_string())])),
            ..TelemetrySettings::default()
        };
        let merged = earlier.overridden_by(later);
        assert_eq!(merged.otlp_endpoint.as_deref(), Some("http://a:4318"));
        assert_eq!(merged.service_name.as_deref(), Some("two"));
        let headers = merged.headers.unwrap();
        assert_eq!(headers["x-a"], "1");
        assert_eq!(headers["x-b"], "3");
    }
}
