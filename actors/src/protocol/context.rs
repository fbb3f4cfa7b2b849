//! The context window: how a session keeps its model requests inside it
//! ([`ContextConfig`], `[context]` in the configuration), and what it tells
//! front ends about it ([`ContextUsage`] on `assistant` and `result` events,
//! [`ContextReport`] for `/context`, [`Compacted`] when a summary replaced
//! part of the conversation in the model's view).
//!
//! Plain data: the rules live in `session::core::context`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// `[context]`: every key optional, so a profile's `[models.NAME.context]`
/// and a session's options can each override some keys of the global table
/// ([`ContextConfig::overridden_by`]); the getters give the defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    /// The token budget of a request (default: the profile's
    /// `context_window` minus its `max_output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Most messages a request may carry (whole turns are dropped first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_messages: Option<usize>,
    /// Keep the system prompt in every request (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_system: Option<bool>,
    /// The most recent turns kept whole when older ones are dropped or
    /// summarised (default 3) — when they fit: fewer are sent when they do
    /// not, down to the current turn alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_recent_turns: Option<usize>,
    /// What to do when the conversation does not fit (default `summarize`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// Compact when a request would use more than this share of the budget
    /// (default 0.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact_at: Option<f64>,
    /// The profile that writes summaries (default: the session's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_model: Option<String>,
    /// Tool outputs kept whole, newest first, up to this many tokens (default
    /// 8,000); older ones are replaced by a one-line marker before anything
    /// else is dropped or summarised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_tool_output_tokens: Option<u64>,
    /// The share of the budget held back because tokenizers differ: the
    /// provider's count of a request may be higher than agentbus's
    /// estimate (default 0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_margin: Option<f64>,
}

/// `auto_compact_at` when not configured.
pub const DEFAULT_AUTO_COMPACT_AT: f64 = 0.8;
/// `min_recent_turns` when not configured.
pub const DEFAULT_MIN_RECENT_TURNS: usize = 3;
/// `keep_tool_output_tokens` when not configured.
pub const DEFAULT_KEEP_TOOL_OUTPUT_TOKENS: u64 = 8_000;
/// `safety_margin` when not configured.
pub const DEFAULT_SAFETY_MARGIN: f64 = 0.1;

impl ContextConfig {
    /// `self` with every key `other` sets replaced by `other`'s.
    pub fn overridden_by(&self, other: &ContextConfig) -> ContextConfig {
        ContextConfig {
            max_tokens: other.max_tokens.or(self.max_tokens),
            max_messages: other.max_messages.or(self.max_messages),
            preserve_system: other.preserve_system.or(self.preserve_system),
            min_recent_turns: other.min_recent_turns.or(self.min_recent_turns),
            strategy: other.strategy.or(self.strategy),
            auto_compact_at: other.auto_compact_at.or(self.auto_compact_at),
            compact_model: other
                .compact_model
                .clone()
                .or_else(|| self.compact_model.clone()),
            keep_tool_output_tokens: other
                .keep_tool_output_tokens
                .or(self.keep_tool_output_tokens),
            safety_margin: other.safety_margin.or(self.safety_margin),
        }
    }

    /// `preserve_system`, default true.
    pub fn preserve_system(&self) -> bool {
        self.preserve_system.unwrap_or(true)
    }

    /// `min_recent_turns`, default 3.
    pub fn min_recent_turns(&self) -> usize {
        self.min_recent_turns.unwrap_or(DEFAULT_MIN_RECENT_TURNS)
    }

    /// `strategy`, default `summarize`.
    pub fn strategy(&self) -> Strategy {
        self.strategy.unwrap_or(Strategy::Summarize)
    }

    /// `auto_compact_at`, default 0.8, kept within (0, 1].
    pub fn auto_compact_at(&self) -> f64 {
        let at = self.auto_compact_at.unwrap_or(DEFAULT_AUTO_COMPACT_AT);
        if at.is_finite() && at > 0.0 {
            at.min(1.0)
        } else {
            DEFAULT_AUTO_COMPACT_AT
        }
    }

    /// `keep_tool_output_tokens`, default 8,000.
    pub fn keep_tool_output_tokens(&self) -> u64 {
        self.keep_tool_output_tokens
            .unwrap_or(DEFAULT_KEEP_TOOL_OUTPUT_TOKENS)
    }

    /// `safety_margin`, default 0.1, kept within [0, 0.5].
    pub fn safety_margin(&self) -> f64 {
        match self.safety_margin {
            Some(margin) if (0.0..=0.5).contains(&margin) => margin,
            _ => DEFAULT_SAFETY_MARGIN,
        }
    }

    /// What is wrong with the values, if anything (ranges the types allow
    /// but that mean nothing).
    pub fn check(&self) -> Result<(), String> {
        if let Some(margin) = self.safety_margin
            && !(0.0..=0.5).contains(&margin)
        {
            return Err(format!(
                "`safety_margin` is {margin}; expected a share of the budget from 0 to 0.5, e.g. 0.1"
            ));
        }
        if let Some(at) = self.auto_compact_at
            && !(at > 0.0 && at <= 1.0)
        {
            return Err(format!(
                "`auto_compact_at` is {at}; expected a share of the budget above 0 and at most 1, e.g. 0.8"
            ));
        }
        if self.max_tokens == Some(0) {
            return Err("`max_tokens` is 0; expected a token budget above 0".into());
        }
        if self.max_messages == Some(0) {
            return Err("`max_messages` is 0; expected at least 1".into());
        }
        Ok(())
    }
}

/// How a conversation that does not fit is made to fit. Written as text:
/// `oldest-first`, `middle-out`, `recent-turns:N`, `summarize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Drop the oldest turns.
    OldestFirst,
    /// Keep the first turn (the task) and the recent ones; drop from the
    /// middle.
    MiddleOut,
    /// Send only the last N turns (and fewer when they do not fit).
    RecentTurns(usize),
    /// Summarise older turns with the model; the recent turns stay verbatim.
    Summarize,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::OldestFirst => f.write_str("oldest-first"),
            Strategy::MiddleOut => f.write_str("middle-out"),
            Strategy::RecentTurns(n) => write!(f, "recent-turns:{n}"),
            Strategy::Summarize => f.write_str("summarize"),
        }
    }
}

impl std::str::FromStr for Strategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected =
            "expected `oldest-first`, `middle-out`, `recent-turns:N` (N at least 1) or `summarize`";
        match s.trim() {
            "oldest-first" => Ok(Strategy::OldestFirst),
            "middle-out" => Ok(Strategy::MiddleOut),
            "summarize" => Ok(Strategy::Summarize),
            other => match other
                .strip_prefix("recent-turns:")
                .map(|n| n.trim().parse::<usize>())
            {
                Some(Ok(n)) if n > 0 => Ok(Strategy::RecentTurns(n)),
                _ => Err(format!("unknown context strategy `{other}`; {expected}")),
            },
        }
    }
}

impl Serialize for Strategy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Strategy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How full the context is: on `assistant` and `result` events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUsage {
    /// Tokens the conversation takes in the model's view now: the provider's
    /// count of the last request plus its answer when it reported one, else
    /// agentbus's estimate.
    pub used: u64,
    /// The budget of a request, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// `/context`: where the budget goes. Token figures are estimates
/// calibrated against the provider's own counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextReport {
    /// The configured system prompt (instructions not included) and the
    /// request's own overhead.
    pub system_prompt: u64,
    /// The instruction files (`AGENTS.md`, `CLAUDE.md`) appended to the
    /// system prompt.
    #[serde(default)]
    pub instructions: u64,
    /// Where they came from, user-level first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction_files: Vec<InstructionSource>,
    pub tool_definitions: u64,
    /// User and assistant messages (and the summary of compacted turns).
    pub messages: u64,
    /// The model's signed thinking, sent back with its assistant messages
    /// (not part of `messages`).
    #[serde(default, skip_serializing_if = "no_thinking")]
    pub thinking: u64,
    pub tool_outputs: u64,
    /// Sum of the above.
    pub used: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// `limit - used`, when there is a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free: Option<u64>,
    pub strategy: String,
    /// Messages in the whole conversation, and how many the model sees.
    pub history_messages: usize,
    pub sent_messages: usize,
    /// Tool outputs shown to the model as a one-line marker.
    pub elided_tool_outputs: usize,
    /// How many compactions shaped the model's view.
    pub compactions: u64,
    /// The provider's count over agentbus's estimate, learnt from the last
    /// counted request (1.0 until then).
    pub calibration: f64,
    /// Tokens of the limit held back (`safety_margin`): requests are
    /// planned to fit `limit - safety_margin`.
    #[serde(default)]
    pub safety_margin: u64,
    /// Where the limit comes from when the provider said it (a refusal
    /// stated a smaller window than the profile's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learnt_limit: Option<u64>,
    /// What crowds the window, said with the ways out (e.g. the tool
    /// definitions take more than half of it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// How much of the input the provider read from its prompt cache; none
    /// until a provider reported cache reads or writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheShare>,
}

/// Prompt caching in a [`ContextReport`]: the share of input tokens read
/// from the provider's cache (reads over reads, writes and uncached input).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheShare {
    /// Of the last turn's input, 0 to 1.
    pub last_turn: f64,
    /// Of the whole session's input, 0 to 1.
    pub session: f64,
    /// The session's tokens read from the cache.
    pub read_tokens: u64,
    /// The session's tokens written to the cache.
    pub written_tokens: u64,
}

impl CacheShare {
    /// The figures of a session whose last turn used `last_turn` and which
    /// used `session` in all; `None` when nothing was read or written.
    pub fn of(last_turn: &super::Usage, session: &super::Usage) -> Option<CacheShare> {
        if session.cache_read_input_tokens == 0 && session.cache_creation_input_tokens == 0 {
            return None;
        }
        Some(CacheShare {
            last_turn: last_turn.cache_read_share().unwrap_or(0.0),
            session: session.cache_read_share().unwrap_or(0.0),
            read_tokens: session.cache_read_input_tokens,
            written_tokens: session.cache_creation_input_tokens,
        })
    }
}

fn no_thinking(tokens: &u64) -> bool {
    *tokens == 0
}

/// One instruction file in a [`ContextReport`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionSource {
    pub path: String,
    /// Its share of the request, heading included.
    pub tokens: u64,
    /// Only its start is sent (it passed the size cap).
    #[serde(default)]
    pub truncated: bool,
}

/// Why a compaction ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// `/compact`.
    Command,
    /// The next request would have passed `auto_compact_at`.
    Auto,
    /// The provider refused a request as too long.
    Overflow,
}

/// A `system` event of subtype `compacted`: a summary now stands for the
/// conversation before `first_kept` in the model's view. Persisted;
/// loading the session applies it again, forking before it does not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compacted {
    pub trigger: CompactionTrigger,
    /// Seq of the first and last event the summary newly covers (0 when the
    /// driver could not tell).
    pub first_seq: u64,
    pub last_seq: u64,
    /// History messages (since the last `/clear`) the summary stands for:
    /// the model's view starts at this index.
    pub first_kept: usize,
    pub summary: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Tokens the summarising call used (counted in the session's usage).
    #[serde(default)]
    pub usage: super::Usage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_read_and_write_as_text() {
        for text in ["oldest-first", "middle-out", "recent-turns:4", "summarize"] {
            let strategy: Strategy = text.parse().expect(text);
            assert_eq!(strategy.to_string(), text);
        }
        let error = "recent-turns:0".parse::<Strategy>().unwrap_err();
        assert!(error.contains("recent-turns:N"), "{error}");
        assert!("newest".parse::<Strategy>().is_err());
    }

    #[test]
    fn overrides_replace_only_what_they_set() {
        let global = ContextConfig {
            max_tokens: Some(1000),
            strategy: Some(Strategy::MiddleOut),
            ..Default::default()
        };
        let session = ContextConfig {
            strategy: Some(Strategy::OldestFirst),
            ..Default::default()
        };
        let merged = global.overridden_by(&session);
        assert_eq!(merged.max_tokens, Some(1000));
        assert_eq!(merged.strategy(), Strategy::OldestFirst);
        assert_eq!(merged.min_recent_turns(), DEFAULT_MIN_RECENT_TURNS);
    }
}
