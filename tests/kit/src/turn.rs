//! One model turn ready to render: a scripted stream response with its
//! templates filled in from the request, plus the helpers both renderers
//! share (splitting into pieces, finish reasons per format). Keeping this
//! format-neutral is what makes one script serve both wire formats.

use serde_json::Value;

use crate::cache::CacheUsage;
use crate::script::{StreamSpec, ToolCall, Usage};
use crate::thinking;
use crate::tokens;
use crate::wire::{self, Wire};

/// What the scripted model "generated" for one request.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    /// Identifies the response (`chatcmpl-...` / `resp_...` / `msg_...`
    /// suffix).
    pub id: String,
    pub model: String,
    pub text: String,
    /// The reasoning streamed before the text: the script's `thinking`, on
    /// the Anthropic wire only when the request enabled thinking (on the
    /// Responses wire a reasoning item, its summary shown only when asked
    /// for).
    pub thinking: String,
    pub tool_calls: Vec<ToolCall>,
    pub chunk_size: Option<usize>,
    pub usage: Usage,
    /// Whether the usage reports cache figures (prompts are cached, or the
    /// script gave them): OpenAI's `prompt_tokens_details`.
    pub cache_reported: bool,
    pub finish_reason: Option<String>,
}

const LAST_TOOL_RESULT: &str = "{last_tool_result}";
const LAST_USER: &str = "{last_user}";

/// Replaces each template token of `template` by `value_of(token)`, in one
/// pass so that substituted text is never itself expanded.
fn fill(template: &str, value_of: &mut dyn FnMut(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some((at, token)) = [LAST_TOOL_RESULT, LAST_USER]
        .into_iter()
        .filter_map(|token| rest.find(token).map(|at| (at, token)))
        .min()
    {
        out.push_str(&rest[..at]);
        out.push_str(&value_of(token));
        rest = &rest[at + token.len()..];
    }
    out.push_str(rest);
    out
}

/// Number of pieces text and arguments are split into without `chunk_size`.
const DEFAULT_PIECES: usize = 3;

/// Usage reported when neither the script nor a token count gives one.
const DEFAULT_USAGE: Usage = Usage {
    input_tokens: 10,
    output_tokens: 5,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_creation_1h: 0,
};

impl Turn {
    /// Fills `spec`'s templates from the request `body`. Returns the turn and
    /// the problems met (a template with nothing to fill it).
    ///
    /// `counted` is the request's input token count when the script counts
    /// tokens (a `context_window`, or prompt caching): then the usage the
    /// script leaves out is the count — less what `cache` says the prompt
    /// cache read and wrote (`cache`, when prompts are cached), which are
    /// its cache figures — and a count of
    /// the streamed text and arguments (at least 1) rather than the fixed
    /// defaults. A script's `input_tokens` replaces the count and the
    /// cache's figures together.
    pub(crate) fn resolve(
        spec: &StreamSpec,
        wire: Wire,
        body: &Value,
        request_index: usize,
        counted: Option<u64>,
        cache: Option<CacheUsage>,
    ) -> (Turn, Vec<String>) {
        let cache_reported = cache.is_some()
            || spec.usage.cache_read_input_tokens.is_some()
            || spec.usage.cache_creation_input_tokens.is_some();
        let cache = cache.unwrap_or_default();
        let mut problems = Vec::new();
        let mut value_of = |token: &str| -> String {
            let (value, missing) = match token {
                LAST_TOOL_RESULT => (wire::last_tool_result(wire, body), "no tool result"),
                _ => (wire::last_user_text(body), "no user text"),
            };
            value.unwrap_or_else(|| {
                let problem = format!("`{token}` used but the request has {missing}");
                if !problems.contains(&problem) {
                    problems.push(problem);
                }
                String::new()
            })
        };
        let text = fill(&spec.text, &mut value_of);
        let thinking = match wire {
            Wire::Anthropic if !thinking::enabled(body) => String::new(),
            _ => fill(&spec.thinking, &mut value_of),
        };
        let model = wire::model(body);
        // A real model stops at the request's output cap: with a
        // `context_window` (the kit counting tokens) the text is cut there
        // and the answer ends for its length, without its tool calls.
        let mut text = text;
        let mut tool_calls = spec.tool_calls.clone();
        let mut finish_reason = spec.finish_reason.clone();
        let cap = tokens::max_output_tokens(wire, body);
        if counted.is_some()
            && cap > 0
            && let Some(cut) = tokens::cut_to(&model, &text, cap)
        {
            text = cut;
            tool_calls.clear();
            finish_reason = Some("length".to_owned());
        }
        let given = spec.usage;
        let usage = match counted {
            None => Usage {
                input_tokens: given.input_tokens.unwrap_or(DEFAULT_USAGE.input_tokens),
                output_tokens: given.output_tokens.unwrap_or(DEFAULT_USAGE.output_tokens),
                cache_read_input_tokens: given.cache_read_input_tokens.unwrap_or(0),
                cache_creation_input_tokens: given.cache_creation_input_tokens.unwrap_or(0),
                cache_creation_1h: 0,
            },
            Some(input_tokens) => {
                let output_tokens = given.output_tokens.unwrap_or_else(|| {
                    tool_calls
                        .iter()
                        .map(|call| tokens::count_text(&model, &call.arguments))
                        .fold(
                            tokens::count_text(&model, &text)
                                .saturating_add(tokens::count_text(&model, &thinking)),
                            u64::saturating_add,
                        )
                        .max(1)
                });
                match given.input_tokens {
                    Some(input_tokens) => Usage {
                        input_tokens,
                        output_tokens,
                        cache_read_input_tokens: given.cache_read_input_tokens.unwrap_or(0),
                        cache_creation_input_tokens: given.cache_creation_input_tokens.unwrap_or(0),
                        cache_creation_1h: 0,
                    },
                    None => Usage {
                        input_tokens: input_tokens
                            .saturating_sub(cache.read)
                            .saturating_sub(cache.written()),
                        output_tokens,
                        cache_read_input_tokens: given
                            .cache_read_input_tokens
                            .unwrap_or(cache.read),
                        cache_creation_input_tokens: given
                            .cache_creation_input_tokens
                            .unwrap_or(cache.written()),
                        cache_creation_1h: cache.written_1h,
                    },
                }
            }
        };
        let turn = Turn {
            id: format!("scripted{request_index}"),
            model,
            text,
            thinking,
            tool_calls,
            chunk_size: spec.chunk_size,
            usage,
            cache_reported,
            finish_reason,
        };
        (turn, problems)
    }

    /// The text split into streamed pieces.
    pub(crate) fn pieces<'a>(&self, text: &'a str) -> Vec<&'a str> {
        pieces(text, self.chunk_size)
    }

    /// How many of the input tokens were read from a prompt cache (see
    /// `cache`). The Responses wire reports it as
    /// `input_tokens_details.cached_tokens`.
    pub(crate) fn cached_input_tokens(&self) -> u64 {
        self.usage.cache_read_input_tokens
    }

    /// The output tokens that were reasoning (the thinking's count, within
    /// the output).
    pub(crate) fn reasoning_tokens(&self) -> u64 {
        tokens::count_text(&self.model, &self.thinking).min(self.usage.output_tokens)
    }

    /// Whether the answer was cut at its length (`finish_reason` `length`
    /// or `max_tokens`).
    pub(crate) fn cut_at_length(&self) -> bool {
        matches!(self.finish_reason.as_deref(), Some("length" | "max_tokens"))
    }

    /// OpenAI `finish_reason`.
    pub(crate) fn openai_finish_reason(&self) -> String {
        match self.finish_reason.as_deref() {
            None if self.tool_calls.is_empty() => "stop".into(),
            None => "tool_calls".into(),
            Some("end_turn") => "stop".into(),
            Some("tool_use") => "tool_calls".into(),
            Some("max_tokens") => "length".into(),
            Some(other) => other.into(),
        }
    }

    /// Anthropic `stop_reason`.
    pub(crate) fn anthropic_stop_reason(&self) -> String {
        match self.finish_reason.as_deref() {
            None if self.tool_calls.is_empty() => "end_turn".into(),
            None => "tool_use".into(),
            Some("stop") => "end_turn".into(),
            Some("tool_calls") => "tool_use".into(),
            Some("length") => "max_tokens".into(),
            Some(other) => other.into(),
        }
    }
}

/// Splits `text` into pieces of `chunk_size` characters (never inside a
/// character), or into [`DEFAULT_PIECES`] near-equal pieces. Empty text has
/// no pieces.
pub(crate) fn pieces(text: &str, chunk_size: Option<usize>) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let size = chunk_size
        .unwrap_or_else(|| chars.div_ceil(DEFAULT_PIECES))
        .max(1);
    let mut boundaries: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .step_by(size)
        .collect();
    boundaries.push(text.len());
    boundaries
        .windows(2)
        .map(|pair| &text[pair[0]..pair[1]])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{Ending, ScriptUsage};
    use serde_json::json;

    #[test]
    fn pieces_respect_size_and_chars() {
        assert_eq!(pieces("abcdefghij", Some(4)), ["abcd", "efgh", "ij"]);
        assert_eq!(pieces("abcdefg", None), ["abc", "def", "g"]);
        assert_eq!(pieces("ab", None), ["a", "b"]);
        assert_eq!(pieces("héllo", Some(2)), ["hé", "ll", "o"]);
        assert!(pieces("", Some(3)).is_empty());
    }

    fn spec(text: &str) -> StreamSpec {
        StreamSpec {
            text: text.into(),
            thinking: String::new(),
            tool_calls: Vec::new(),
            chunk_size: None,
            usage: ScriptUsage::default(),
            finish_reason: None,
            ending: Ending::Complete,
            chunk_interval: None,
            after_requests: None,
            unoffered_tools: false,
        }
    }

    #[test]
    fn templates_fill_from_request() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "question"},
            {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "the answer"},
        ]});
        let (turn, problems) = Turn::resolve(
            &spec("{last_user}: {last_tool_result}"),
            Wire::OpenAi,
            &body,
            3,
            None,
            None,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(turn.text, "question: the answer");
        assert_eq!(turn.model, "m");
        assert_eq!(turn.id, "scripted3");
        assert_eq!(turn.usage, DEFAULT_USAGE, "no count, no script usage");
    }

    #[test]
    fn counted_usage_fills_what_the_script_leaves_out() {
        let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]});
        let mut spec = spec("Hello there, {last_user}.");
        spec.tool_calls.push(ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.txt"}"#.into(),
        });
        let (turn, _) = Turn::resolve(&spec, Wire::OpenAi, &body, 0, Some(77), None);
        let expected = tokens::count_text("gpt-4o", "Hello there, q.")
            + tokens::count_text("gpt-4o", r#"{"path":"a.txt"}"#);
        assert_eq!(
            turn.usage,
            Usage {
                input_tokens: 77,
                output_tokens: expected,
                ..Usage::default()
            }
        );

        // Nothing streamed still reports one output token.
        let (turn, _) = Turn::resolve(&self::spec(""), Wire::OpenAi, &body, 0, Some(5), None);
        assert_eq!(turn.usage.output_tokens, 1);

        // What the script gives wins.
        spec.usage.input_tokens = Some(3);
        let (turn, _) = Turn::resolve(&spec, Wire::OpenAi, &body, 0, Some(77), None);
        assert_eq!(turn.usage.input_tokens, 3);
        assert_eq!(turn.usage.output_tokens, expected);
    }

    #[test]
    fn cache_figures_come_out_of_the_counted_input_unless_the_script_says() {
        let body = json!({"model": "claude-x", "messages": [{"role": "user", "content": "q"}]});
        let cache = CacheUsage {
            read: 2000,
            written_5m: 300,
            written_1h: 100,
        };
        let (turn, _) = Turn::resolve(
            &spec("a"),
            Wire::Anthropic,
            &body,
            0,
            Some(2500),
            Some(cache),
        );
        assert!(turn.cache_reported);
        assert_eq!(turn.usage.input_tokens, 100, "the rest of the 2,500");
        assert_eq!(turn.usage.cache_read_input_tokens, 2000);
        assert_eq!(turn.usage.cache_creation_input_tokens, 400);
        assert_eq!(turn.usage.cache_creation_1h, 100);
        let mut given = spec("a");
        given.usage.input_tokens = Some(12);
        let (turn, _) = Turn::resolve(&given, Wire::Anthropic, &body, 0, Some(2500), Some(cache));
        assert_eq!(
            (
                turn.usage.input_tokens,
                turn.usage.cache_read_input_tokens,
                turn.usage.cache_creation_input_tokens
            ),
            (12, 0, 0),
            "the script's usage wins, cache figures and all"
        );
    }

    #[test]
    fn anthropic_thinking_needs_the_request_to_enable_it() {
        let mut spec = spec("4");
        spec.thinking = "2 + 2 = {last_user}".into();
        let plain = json!({"model": "m", "messages": [{"role": "user", "content": "4"}]});
        let (turn, _) = Turn::resolve(&spec, Wire::OpenAi, &plain, 0, None, None);
        assert_eq!(
            turn.thinking, "2 + 2 = 4",
            "OpenAI-compatible servers think unasked"
        );
        let (turn, _) = Turn::resolve(&spec, Wire::Anthropic, &plain, 0, None, None);
        assert_eq!(turn.thinking, "", "Anthropic thinks only when asked");
        let mut enabled = plain.clone();
        enabled["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
        let (turn, _) = Turn::resolve(&spec, Wire::Anthropic, &enabled, 0, Some(9), None);
        assert_eq!(turn.thinking, "2 + 2 = 4");
        assert_eq!(
            turn.usage.output_tokens,
            tokens::count_text("m", "4") + tokens::count_text("m", "2 + 2 = 4"),
            "thinking is output"
        );
    }

    #[test]
    fn substituted_text_is_not_expanded_again() {
        let body = json!({"messages": [
            {"role": "user", "content": "say {last_tool_result}"},
        ]});
        let (turn, problems) =
            Turn::resolve(&spec("[{last_user}]"), Wire::OpenAi, &body, 0, None, None);
        assert!(problems.is_empty());
        assert_eq!(turn.text, "[say {last_tool_result}]");
    }

    #[test]
    fn template_without_source_is_a_problem() {
        let body = json!({"messages": [{"role": "user", "content": "q"}]});
        let (turn, problems) = Turn::resolve(
            &spec("<{last_tool_result}>"),
            Wire::OpenAi,
            &body,
            0,
            None,
            None,
        );
        assert_eq!(turn.text, "<>");
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn finish_reasons_translate() {
        let body = json!({});
        let (mut turn, _) = Turn::resolve(&spec("x"), Wire::OpenAi, &body, 0, None, None);
        assert_eq!(turn.openai_finish_reason(), "stop");
        assert_eq!(turn.anthropic_stop_reason(), "end_turn");
        turn.finish_reason = Some("length".into());
        assert_eq!(turn.openai_finish_reason(), "length");
        assert_eq!(turn.anthropic_stop_reason(), "max_tokens");
        turn.finish_reason = Some("weird".into());
        assert_eq!(turn.anthropic_stop_reason(), "weird");
    }
}
