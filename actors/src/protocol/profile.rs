//! A model profile as sessions and front ends see it: its name, wire
//! format, model and prices — never its key (`/model`, `/models`, `/usage`
//! and `GET /v1/models` show these).

use super::{ContextConfig, Usage};
use serde::{Deserialize, Serialize};

/// What the session needs to know about a model profile (never its key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Profile name, as used by `/model NAME`.
    pub name: String,
    /// Wire format: `openai`, `openai-responses` or `anthropic`.
    pub provider: String,
    /// The provider's model id.
    pub model: String,
    pub base_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Cap on output tokens per model call (taken from the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// The profile's own `[context]` keys, over the global ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextConfig>,
    /// Prices, if configured (for the cost in `/usage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// The environment variable that should hold this profile's API key,
    /// when agentbus's environment does not have it: the profile cannot be
    /// used until agentbus is started with it set (`/model` refuses it,
    /// `/models` says so). The name only, never a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_missing: Option<String>,
    /// Whether the model takes images (the profile's `images`, or its
    /// default): a query's images are refused with a notice otherwise.
    #[serde(default)]
    pub images: bool,
}

/// Prices of a model profile in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Input read from the prompt cache; unset, the input price. (A
    /// profile on Anthropic's wire always sets it: unconfigured, 0.1× the
    /// input price, see `ModelProfile::pricing`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_per_mtok: Option<f64>,
    /// Input written to the prompt cache; unset, the input price (OpenAI
    /// charges no more). (Anthropic's wire: unconfigured, 1.25× the input
    /// price, 2× for one-hour writes.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
}

impl Pricing {
    /// What `usage` costs, in US dollars: uncached input, cache reads,
    /// cache writes and output, each at its price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.input_tokens, self.input_per_mtok)
            + per(usage.output_tokens, self.output_per_mtok)
            + per(
                usage.cache_read_input_tokens,
                self.cache_read_per_mtok.unwrap_or(self.input_per_mtok),
            )
            + per(
                usage.cache_creation_input_tokens,
                self.cache_write_per_mtok.unwrap_or(self.input_per_mtok),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_and_writes_cost_their_own_prices() {
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 100,
            cache_read_input_tokens: 10_000,
            cache_creation_input_tokens: 2_000,
        };
        let anthropic = Pricing {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
            cache_read_per_mtok: Some(0.3),
            cache_write_per_mtok: Some(3.75),
        };
        let expected = (1_000.0 * 3.0 + 100.0 * 15.0 + 10_000.0 * 0.3 + 2_000.0 * 3.75) / 1e6;
        assert!((anthropic.cost(&usage) - expected).abs() < 1e-12);
        let unset = Pricing {
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
            ..anthropic
        };
        let at_input = (13_000.0 * 3.0 + 100.0 * 15.0) / 1e6;
        assert!((unset.cost(&usage) - at_input).abs() < 1e-12);
    }
}
