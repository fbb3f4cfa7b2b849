//! Thinking by model family: what a profile's `thinking` key may say, what
//! it defaults to, and which settings a Claude model would refuse.
//!
//! A profile writes `thinking = "adaptive" | "off" | { budget = N }` (the
//! older `thinking_budget = N` still means `{ budget = N }`) and
//! `effort = "low" | "medium" | "high" | "max"`. Anthropic's models differ
//! in what they take (2026):
//!
//! | family | takes | default here |
//! |---|---|---|
//! | Opus 4.7 and later, any Claude 5 or later | adaptive only (a budget is an HTTP 400) | adaptive |
//! | Opus 4.6, Sonnet 4.6 (and later 4.x Sonnets) | adaptive, or a budget (deprecated) | adaptive |
//! | Sonnet 4.5, Opus 4.5, Haiku 4.x and every older model | a budget only (adaptive is an HTTP 400) | off |
//! | another Claude 4.x family | adaptive, or a budget | adaptive |
//! | anything else (llama.cpp's `/v1/messages`, a Claude id without a version) | whatever the server does | off |
//!
//! The family is read from the model id as providers write it:
//! `claude-opus-4-7`, `claude-sonnet-4-6-20260101`, `claude-3-7-sonnet-latest`,
//! Bedrock's `us.anthropic.claude-opus-4-7-v1:0`, Vertex's
//! `claude-opus-4-7@20260101`, OpenRouter's `anthropic/claude-opus-4.7`.
//! Pure data and parsing; no I/O.

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A profile's thinking (`thinking = ...`, or the older `thinking_budget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thinking {
    /// No thinking is asked for.
    Off,
    /// `{"type": "adaptive"}`: the model decides when and how much to
    /// think (how hard: the profile's `effort`).
    Adaptive,
    /// `{"type": "enabled", "budget_tokens": N}`: extended thinking with
    /// this many tokens to think in.
    Budget(u32),
}

impl fmt::Display for Thinking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Thinking::Off => f.write_str("\"off\""),
            Thinking::Adaptive => f.write_str("\"adaptive\""),
            Thinking::Budget(n) => write!(f, "{{ budget = {n} }}"),
        }
    }
}

impl Serialize for Thinking {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Thinking::Off => serializer.serialize_str("off"),
            Thinking::Adaptive => serializer.serialize_str("adaptive"),
            Thinking::Budget(n) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("budget", n)?;
                map.end()
            }
        }
    }
}

/// What a `thinking` value may be, for error messages.
const EXPECTED: &str = "\"adaptive\", \"off\" or { budget = N }";

impl<'de> Deserialize<'de> for Thinking {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ThinkingVisitor;

        impl<'de> Visitor<'de> for ThinkingVisitor {
            type Value = Thinking;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED)
            }

            fn visit_str<E: de::Error>(self, word: &str) -> Result<Thinking, E> {
                match word {
                    "adaptive" => Ok(Thinking::Adaptive),
                    "off" => Ok(Thinking::Off),
                    other => Err(E::custom(format!(
                        "unknown thinking setting \"{other}\", expected {EXPECTED}"
                    ))),
                }
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Thinking, M::Error> {
                let mut budget = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "budget" {
                        return Err(de::Error::custom(format!(
                            "unknown key `{key}` in a thinking table, expected {{ budget = N }}"
                        )));
                    }
                    budget = Some(map.next_value::<u32>()?);
                }
                budget
                    .map(Thinking::Budget)
                    .ok_or_else(|| de::Error::custom("a thinking table needs `budget = N`"))
            }
        }

        deserializer.deserialize_any(ThinkingVisitor)
    }
}

/// What thinking a model takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingSupport {
    /// Adaptive thinking only: a budget is refused (Opus 4.7 and later,
    /// every Claude 5 and later).
    AdaptiveOnly,
    /// Adaptive thinking, or a budget (deprecated): Opus and Sonnet 4.6,
    /// and 4.x families not known here.
    Both,
    /// A budget only: adaptive thinking is refused (Sonnet 4.5, Opus 4.5,
    /// Haiku 4.x and every older Claude).
    BudgetOnly,
    /// Not a Claude model id (a local server's model), or one without a
    /// version: nothing is known, nothing is refused.
    Unknown,
}

impl ThinkingSupport {
    /// What a profile that says nothing about thinking gets.
    pub fn default_thinking(self) -> Thinking {
        match self {
            ThinkingSupport::AdaptiveOnly | ThinkingSupport::Both => Thinking::Adaptive,
            ThinkingSupport::BudgetOnly | ThinkingSupport::Unknown => Thinking::Off,
        }
    }
}

/// A Claude model id, as far as thinking goes: its family name and version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaudeModel {
    /// `opus`, `sonnet`, `haiku`, `instant`, or a newer name; `None` for ids
    /// such as `claude-2.1`.
    pub family: Option<String>,
    /// Major and minor version (`4-7` → (4, 7), `5` → (5, 0)); `None` when
    /// the id has none.
    pub version: Option<(u32, u32)>,
}

/// The family names of Claude models that predate adaptive thinking's
/// rules or have their own (Haiku stays budget-only in 4.x).
const KNOWN_FAMILIES: [&str; 4] = ["opus", "sonnet", "haiku", "instant"];

impl ClaudeModel {
    /// The family and version of a model id; `None` when it is not a Claude
    /// id. Dates (`20260101`), Bedrock's `-v1:0`, Vertex's `@...` and
    /// suffixes such as `-latest` or `[1m]` are skipped.
    pub fn parse(model: &str) -> Option<ClaudeModel> {
        let lower = model.to_ascii_lowercase();
        // `claude-...` itself, or after a provider's prefix
        // (`anthropic/`, `us.anthropic.`); not a local model named after it
        // (`qwen-claude-distill`).
        let at = lower
            .match_indices("claude")
            .map(|(at, _)| at)
            .find(|at| *at == 0 || matches!(lower.as_bytes()[at - 1], b'.' | b'/' | b':'))?;
        let rest = &lower[at + "claude".len()..];
        let tokens: Vec<&str> = rest
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|t| !t.is_empty())
            .collect();
        let is_number = |t: &str| t.len() <= 2 && t.bytes().all(|b| b.is_ascii_digit());
        let is_word = |t: &str| t.bytes().all(|b| b.is_ascii_alphabetic());
        let family = tokens
            .iter()
            .find(|t| is_word(t) && !matches!(**t, "latest" | "preview" | "v"))
            .map(|t| t.to_string());
        // The first run of small numbers is the version: `4-7`, `3-5`, `5`.
        let start = tokens.iter().position(|t| is_number(t));
        let version = start.and_then(|start| {
            let major: u32 = tokens[start].parse().ok()?;
            let minor = tokens
                .get(start + 1)
                .filter(|t| is_number(t))
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            Some((major, minor))
        });
        Some(ClaudeModel { family, version })
    }

    /// What thinking this model takes.
    pub fn support(&self) -> ThinkingSupport {
        let family = self.family.as_deref();
        let known = family.is_some_and(|f| KNOWN_FAMILIES.contains(&f));
        match self.version {
            Some((major, _)) if major >= 5 => ThinkingSupport::AdaptiveOnly,
            Some((4, minor)) => match family {
                Some("opus") if minor >= 7 => ThinkingSupport::AdaptiveOnly,
                Some("opus" | "sonnet") if minor >= 6 => ThinkingSupport::Both,
                Some(_) if !known => ThinkingSupport::Both,
                _ => ThinkingSupport::BudgetOnly,
            },
            Some(_) => ThinkingSupport::BudgetOnly,
            // `claude-mythos-preview`: no version to place it by.
            None => ThinkingSupport::Unknown,
        }
    }
}

/// What thinking the model of id `model` takes (any id: not a Claude one is
/// [`ThinkingSupport::Unknown`]).
pub fn support(model: &str) -> ThinkingSupport {
    ClaudeModel::parse(model).map_or(ThinkingSupport::Unknown, |m| m.support())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_are_read_as_providers_write_them() {
        let parsed = |id: &str| ClaudeModel::parse(id).expect(id);
        let opus47 = ClaudeModel {
            family: Some("opus".into()),
            version: Some((4, 7)),
        };
        for id in [
            "claude-opus-4-7",
            "claude-opus-4-7-20260416",
            "claude-opus-4-7@20260416",
            "claude-opus-4-7@bedrock",
            "us.anthropic.claude-opus-4-7-v1:0",
            "anthropic/claude-opus-4.7",
            "Claude-Opus-4-7[1m]",
            "claude-4.7-opus",
        ] {
            assert_eq!(parsed(id), opus47, "{id}");
        }
        assert_eq!(
            parsed("claude-3-7-sonnet-20250219"),
            ClaudeModel {
                family: Some("sonnet".into()),
                version: Some((3, 7))
            }
        );
        assert_eq!(parsed("claude-opus-4-20250514").version, Some((4, 0)));
        assert_eq!(parsed("claude-opus-5").version, Some((5, 0)));
        assert_eq!(parsed("claude-2.1").family, None);
        assert_eq!(parsed("claude-mythos-preview").version, None);
        assert_eq!(ClaudeModel::parse("llama-3.1-8b"), None);
        assert_eq!(ClaudeModel::parse("local"), None);
    }

    #[test]
    fn each_family_takes_what_anthropic_documents() {
        use ThinkingSupport::*;
        for (id, takes) in [
            ("claude-opus-4-7", AdaptiveOnly),
            ("claude-opus-4-8-20260601", AdaptiveOnly),
            ("claude-opus-5", AdaptiveOnly),
            ("claude-sonnet-5", AdaptiveOnly),
            ("claude-fable-5-1", AdaptiveOnly),
            ("claude-opus-4-6", Both),
            ("claude-sonnet-4-6-20260101", Both),
            ("claude-mythos-preview", Unknown),
            ("qwen-claude-4.5-distill", Unknown),
            ("claude-sonnet-4-5", BudgetOnly),
            ("claude-opus-4-5-20251101", BudgetOnly),
            ("claude-opus-4-1", BudgetOnly),
            ("claude-haiku-4-5", BudgetOnly),
            ("claude-3-7-sonnet-latest", BudgetOnly),
            ("claude-2.1", BudgetOnly),
            ("scripted-main", Unknown),
            ("qwen2.5-coder-7b", Unknown),
        ] {
            assert_eq!(support(id), takes, "{id}");
        }
        assert_eq!(
            support("claude-opus-4-6").default_thinking(),
            Thinking::Adaptive
        );
        assert_eq!(
            support("claude-sonnet-4-5").default_thinking(),
            Thinking::Off
        );
        assert_eq!(support("local").default_thinking(), Thinking::Off);
    }

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    struct Profile {
        thinking: Thinking,
    }

    /// A profile as JSON (the configuration's TOML reads the same way: the
    /// binary's config tests read it from files).
    fn read(thinking: &str) -> Result<Profile, String> {
        serde_json::from_str(&format!("{{\"thinking\": {thinking}}}")).map_err(|e| e.to_string())
    }

    #[test]
    fn thinking_reads_and_writes_as_a_word_or_a_budget_table() {
        for (text, thinking) in [
            ("\"adaptive\"", Thinking::Adaptive),
            ("\"off\"", Thinking::Off),
            ("{\"budget\": 4096}", Thinking::Budget(4096)),
        ] {
            let profile = read(text).expect(text);
            assert_eq!(profile.thinking, thinking);
            let written = serde_json::to_string(&profile).expect("written");
            let again: Profile = serde_json::from_str(&written).expect(&written);
            assert_eq!(again, profile, "{written}");
        }
        for (text, says) in [
            ("\"on\"", "unknown thinking setting \"on\""),
            ("{\"tokens\": 4096}", "unknown key `tokens`"),
            ("{}", "needs `budget = N`"),
            ("4096", "expected \"adaptive\", \"off\" or { budget = N }"),
        ] {
            let error = read(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}
