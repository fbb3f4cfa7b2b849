//! The process's Prometheus figures: what an operator graphs and alerts on
//! (sessions, turns, model calls, tokens, tool calls, streaming clients).
//!
//! One registry per process ([`get`]), filled where things happen: the
//! session actor (turns, busy sessions), the model clients (calls, time to
//! first token, tokens), the tool runner (calls and their durations), the
//! server (stream clients). [`Metrics::encode`] writes it in the text
//! format of the `prometheus-client` crate (OpenMetrics), which
//! `GET /metrics` serves.
//!
//! Never takes a label whose values are unbounded — no session, turn or
//! call ids, no user text: labels are profile, wire, tool and outcome names,
//! which the configuration bounds. Never blocks or fails the work it
//! counts: recording is an atomic update.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use std::sync::OnceLock;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`Metrics::encode_classic`]: Prometheus's text
/// format 0.0.4, for a scraper that does not ask for OpenMetrics (and
/// `promtool check metrics`).
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether something ended well.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Outcome {
    /// It did what was asked (a tool's result that is not an error; a
    /// model answer that finished).
    Ok,
    /// It failed: a tool's error result, a model call's final error.
    Error,
    /// It was stopped before its end (an interrupt, a dropped stream).
    Cancelled,
}

impl Outcome {
    /// The label's value: `ok`, `error`, `cancelled`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
        }
    }
}

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

/// A turn's stop reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TurnLabels {
    pub stop_reason: &'static str,
}

/// A model call: the profile, its wire format, how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelCallLabels {
    pub profile: String,
    pub wire: &'static str,
    pub outcome: Outcome,
}

/// A model call's profile and wire (for its timings).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProfileLabels {
    pub profile: String,
    pub wire: &'static str,
}

/// A profile (for its cost).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CostLabels {
    pub profile: String,
}

/// Tokens of one kind spent through one profile.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabels {
    pub profile: String,
    /// `input` (uncached), `output`, `cache_read`, `cache_write`.
    pub kind: &'static str,
}

/// A tool call: the tool's name and how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    pub tool: String,
    pub outcome: Outcome,
}

/// A tool's name (for its durations).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolNameLabels {
    pub tool: String,
}

/// How an approval request ended (`allowed_once`, `allowed_always`,
/// `rejected`, `timed_out`, `cancelled`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApprovalLabels {
    pub outcome: String,
}

/// An event's type (`assistant`, `tool_result`, `stream_event`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EventLabels {
    pub kind: &'static str,
}

/// Whether a store commit succeeded.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CommitLabels {
    pub outcome: Outcome,
}

/// A configured MCP server in one of its states (`starting`, `ready`,
/// `restarting`, `failed`, `stopped`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct McpLabels {
    pub server: String,
    pub state: &'static str,
}

/// The states of an MCP server, as the `state` label names them.
const MCP_STATES: [&str; 5] = ["starting", "ready", "restarting", "failed", "stopped"];

/// Which stream a client follows events on.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StreamLabels {
    /// `sse` or `websocket`.
    pub transport: &'static str,
}

type Timings<L> = Family<L, Histogram, fn() -> Histogram>;

/// Seconds from 5 ms to about 10 minutes: model calls and tool calls.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 18))
}

/// Seconds from 0.1 ms to about 13 s: store commits.
fn commit_seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 18))
}

/// OpenMetrics text as Prometheus's classic text format (see
/// [`Metrics::encode_classic`]).
fn classic(open_metrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = open_metrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut text = String::with_capacity(open_metrics.len());
    for line in open_metrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find(|prefix| line.starts_with(prefix));
        match meta {
            Some(prefix) => {
                let rest = &line[prefix.len()..];
                let name = rest.split(' ').next().unwrap_or_default();
                text.push_str(prefix);
                text.push_str(name);
                if counters.contains(name) {
                    text.push_str("_total");
                }
                text.push_str(&rest[name.len()..]);
            }
            None => text.push_str(line),
        }
        text.push('\n');
    }
    text
}

/// Every figure of the process.
pub struct Metrics {
    registry: Registry,
    pub sessions_loaded: Gauge,
    pub sessions_busy: Gauge,
    pub turns: Family<TurnLabels, Counter>,
    pub model_calls: Family<ModelCallLabels, Counter>,
    pub model_call_duration: Timings<ProfileLabels>,
    pub model_first_token: Timings<ProfileLabels>,
    pub tokens: Family<TokenLabels, Counter>,
    pub cost: Family<CostLabels, Counter<f64, AtomicU64>>,
    pub tool_calls: Family<ToolLabels, Counter>,
    pub tool_call_duration: Timings<ToolNameLabels>,
    pub stream_clients: Family<StreamLabels, Gauge>,
    pub stream_clients_cut_off: Counter,
    pub approvals_asked: Counter,
    pub approvals_answered: Family<ApprovalLabels, Counter>,
    pub events_published: Family<EventLabels, Counter>,
    pub store_commit_duration: Timings<CommitLabels>,
    pub mcp_servers: Family<McpLabels, Gauge>,
    pub cluster_lease_held: Gauge,
    pub cluster_lease_renewals: Family<RenewalLabels, Counter>,
    pub cluster_fences: Counter,
    pub cluster_adoptions: Counter,
    pub cluster_fencing_refusals: Counter,
}

/// How a renewal of a node's lease went: `renewed`, `failed` (the store
/// did not answer; tried again), `lapsed` (the store said it had expired).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RenewalLabels {
    pub outcome: &'static str,
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("agentbus");
        let metrics = Metrics {
            sessions_loaded: Gauge::default(),
            sessions_busy: Gauge::default(),
            turns: Family::default(),
            model_calls: Family::default(),
            model_call_duration: Family::new_with_constructor(seconds),
            model_first_token: Family::new_with_constructor(seconds),
            tokens: Family::default(),
            cost: Family::default(),
            tool_calls: Family::default(),
            tool_call_duration: Family::new_with_constructor(seconds),
            stream_clients: Family::default(),
            stream_clients_cut_off: Counter::default(),
            approvals_asked: Counter::default(),
            approvals_answered: Family::default(),
            events_published: Family::default(),
            store_commit_duration: Family::new_with_constructor(commit_seconds),
            mcp_servers: Family::default(),
            cluster_lease_held: Gauge::default(),
            cluster_lease_renewals: Family::default(),
            cluster_fences: Counter::default(),
            cluster_adoptions: Counter::default(),
            cluster_fencing_refusals: Counter::default(),
            registry: Registry::default(),
        };
        registry.register(
            "sessions_loaded",
            "Sessions loaded in this process (each an actor)",
            metrics.sessions_loaded.clone(),
        );
        registry.register(
            "sessions_busy",
            "Loaded sessions running a turn or waiting on an approval",
            metrics.sessions_busy.clone(),
        );
        registry.register(
            "turns",
            "Turns ended, by stop reason",
            metrics.turns.clone(),
        );
        registry.register(
            "model_calls",
            "Model calls ended, by profile, wire format and outcome (retries inside a call are one call)",
            metrics.model_calls.clone(),
        );
        registry.register_with_unit(
            "model_call_duration",
            "Model calls from request to their last event, by profile and wire format",
            Unit::Seconds,
            metrics.model_call_duration.clone(),
        );
        registry.register_with_unit(
            "model_time_to_first_token",
            "From a model call's request to its first streamed event, by profile and wire format",
            Unit::Seconds,
            metrics.model_first_token.clone(),
        );
        registry.register(
            "model_tokens",
            "Tokens the providers reported, by profile and kind (input, output, cache_read, cache_write)",
            metrics.tokens.clone(),
        );
        registry.register(
            "model_cost_usd",
            "US dollars the model calls cost, by profile (only profiles with prices)",
            metrics.cost.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool calls ended, by tool and outcome",
            metrics.tool_calls.clone(),
        );
        registry.register_with_unit(
            "tool_call_duration",
            "Tool calls from start to result, by tool",
            Unit::Seconds,
            metrics.tool_call_duration.clone(),
        );
        registry.register(
            "stream_clients",
            "Clients following events now, by transport (sse, websocket)",
            metrics.stream_clients.clone(),
        );
        registry.register(
            "stream_clients_cut_off",
            "Clients (SSE or WebSocket) whose stream the server ended because they fell further behind than the replay ring reaches",
            metrics.stream_clients_cut_off.clone(),
        );
        registry.register(
            "approvals_asked",
            "Approval requests the sessions published (a tool call waiting for the user)",
            metrics.approvals_asked.clone(),
        );
        registry.register(
            "approvals_answered",
            "Approval requests settled, by outcome (allowed_once, allowed_always, rejected, timed_out, cancelled)",
            metrics.approvals_answered.clone(),
        );
        registry.register(
            "events_published",
            "Events the sessions published to their followers, by type",
            metrics.events_published.clone(),
        );
        registry.register_with_unit(
            "store_commit_duration",
            "Commits of a session's events to the store, by outcome",
            Unit::Seconds,
            metrics.store_commit_duration.clone(),
        );
        registry.register(
            "mcp_servers",
            "Configured MCP servers by state: 1 for the state each is in, 0 for the others",
            metrics.mcp_servers.clone(),
        );
        registry.register(
            "cluster_lease_held",
            "On a node of a cluster: 1 while it holds its node lease, 0 once it fenced itself (until it rejoins)",
            metrics.cluster_lease_held.clone(),
        );
        registry.register(
            "cluster_lease_renewals",
            "On a node of a cluster: renewals of its node lease, by outcome (renewed, failed, lapsed)",
            metrics.cluster_lease_renewals.clone(),
        );
        registry.register(
            "cluster_fences",
            "On a node of a cluster: times it fenced itself (its lease lost or NATS cut off) and stopped its sessions",
            metrics.cluster_fences.clone(),
        );
        registry.register(
            "cluster_adoptions",
            "On a node of a cluster: busy sessions of gone nodes it adopted",
            metrics.cluster_adoptions.clone(),
        );
        registry.register(
            "cluster_fencing_refusals",
            "On a node of a cluster: sessions whose writes the store refused because another node had taken them over (each stopped here)",
            metrics.cluster_fencing_refusals.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// Every figure in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// A renewal of this node's lease ended `outcome`.
    pub fn lease_renewal(&self, outcome: &'static str) {
        self.cluster_lease_renewals
            .get_or_create(&RenewalLabels { outcome })
            .inc();
    }

    /// Every figure in Prometheus's classic text format
    /// ([`CLASSIC_CONTENT_TYPE`]): the OpenMetrics text with what that
    /// format lacks taken out (`# UNIT`, `# EOF`) and each counter's family
    /// named as its samples are (`x_total`).
    pub fn encode_classic(&self) -> String {
        classic(&self.encode())
    }

    /// A turn ended with `stop_reason` (its wire name).
    pub fn turn_ended(&self, stop_reason: &'static str) {
        self.turns.get_or_create(&TurnLabels { stop_reason }).inc();
    }

    /// A tool call named `tool` ended after `took`.
    pub fn tool_call(&self, tool: &str, outcome: Outcome, took: Duration) {
        let tool = tool.to_string();
        self.tool_calls
            .get_or_create(&ToolLabels {
                tool: tool.clone(),
                outcome,
            })
            .inc();
        self.tool_call_duration
            .get_or_create(&ToolNameLabels { tool })
            .observe(took.as_secs_f64());
    }

    /// A model call through `profile` (of `wire`) ended: how, after how
    /// long, its first event after how long (none when nothing came), and
    /// the tokens it reported.
    pub fn model_call(&self, call: ModelCall<'_>) {
        let ModelCall {
            profile,
            wire,
            outcome,
            took,
            first_event,
            usage,
            pricing,
        } = call;
        let labels = ProfileLabels {
            profile: profile.to_string(),
            wire,
        };
        self.model_calls
            .get_or_create(&ModelCallLabels {
                profile: profile.to_string(),
                wire,
                outcome,
            })
            .inc();
        self.model_call_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if let Some(first) = first_event {
            self.model_first_token
                .get_or_create(&labels)
                .observe(first.as_secs_f64());
        }
        if let Some(pricing) = pricing {
            self.cost
                .get_or_create(&CostLabels {
                    profile: profile.to_string(),
                })
                .inc_by(pricing.cost(&usage));
        }
        for (kind, n) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cache_read", usage.cache_read_input_tokens),
            ("cache_write", usage.cache_creation_input_tokens),
        ] {
            if n > 0 {
                self.tokens
                    .get_or_create(&TokenLabels {
                        profile: profile.to_string(),
                        kind,
                    })
                    .inc_by(n);
            }
        }
    }

    /// One more client following a `transport` stream, until the guard
    /// is dropped.
    pub fn stream_client(&self, transport: &'static str) -> GaugeGuard {
        let gauge = self
            .stream_clients
            .get_or_create(&StreamLabels { transport })
            .clone();
        gauge.inc();
        GaugeGuard(gauge)
    }

    /// Configured MCP server `server` is now in `state` (one of
    /// [`MCP_STATES`]).
    pub fn mcp_server_state(&self, server: &str, state: &'static str) {
        for each in MCP_STATES {
            self.mcp_servers
                .get_or_create(&McpLabels {
                    server: server.to_string(),
                    state: each,
                })
                .set(i64::from(each == state));
        }
    }

    /// One more busy session, until the guard is dropped.
    pub fn session_busy(&self) -> GaugeGuard {
        self.sessions_busy.inc();
        GaugeGuard(self.sessions_busy.clone())
    }
}

/// What [`Metrics::model_call`] records of one call.
pub struct ModelCall<'a> {
    pub profile: &'a str,
    pub wire: &'static str,
    pub outcome: Outcome,
    pub took: Duration,
    pub first_event: Option<Duration>,
    pub usage: crate::protocol::Usage,
    /// The profile's prices, when it has them.
    pub pricing: Option<crate::protocol::Pricing>,
}

/// Holds a gauge one higher while it lives: whatever ends the thing it
/// counts (an early return, a panic, a dropped task), the gauge comes down.
#[must_use = "the gauge comes down when this is dropped"]
pub struct GaugeGuard(Gauge);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The process's figures.
pub fn get() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_is_counted_by_name_and_outcome() {
        let metrics = Metrics::new();
        metrics.tool_call("read_file", Outcome::Ok, Duration::from_millis(20));
        metrics.tool_call("read_file", Outcome::Error, Duration::from_millis(1));
        let text = metrics.encode();
        assert!(
            text.contains(r#"agentbus_tool_calls_total{tool="read_file",outcome="ok"} 1"#),
            "{text}"
        );
        assert!(
            text.contains("agentbus_tool_call_duration_seconds_count{tool=\"read_file\"} 2"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn a_guard_brings_its_gauge_back_down() {
        let metrics = Metrics::new();
        let guard = metrics.session_busy();
        assert_eq!(metrics.sessions_busy.get(), 1);
        drop(guard);
        assert_eq!(metrics.sessions_busy.get(), 0);
    }
}
