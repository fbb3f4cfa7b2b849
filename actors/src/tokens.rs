//! Counting tokens locally, with the ranks of OpenAI's tokenizers compiled
//! in (tiktoken-rs; no network): o200k for OpenAI's current models, cl100k
//! as the estimate for every other model (no local tokenizer exists for
//! Anthropic's; the session calibrates against the provider's own counts).
//!
//! A pure computation the session core may use. The tables take a moment to
//! build, so they are built once per process and only when a count is asked
//! for: [`byte_bound`] is free and bounds every count from above, which lets
//! a caller skip counting when even the bound fits.
//!
//! The convention (the scripted model in `tests/kit` counts the same way): a
//! request is 3 tokens, plus the JSON of its tools, plus for the system
//! prompt and each message 4 tokens and the tokens of every text it holds.
//! Thinking counts when it is sent back: a signed thinking block's
//! reasoning (Anthropic's, which goes back with its message while the
//! profile enables thinking — without, the count is an estimate from
//! above); unsigned thinking (an OpenAI-compatible server's) never goes
//! back and counts nothing, nor does redacted thinking, which has no text
//! to count; an OpenAI reasoning item counts its summary texts (what goes
//! back with it besides the encrypted reasoning).

use crate::model::ToolSpec;
use crate::protocol::{ContentBlock, Message};
use tiktoken_rs::CoreBPE;

/// Tokens every request costs on top of its parts.
pub const REQUEST_OVERHEAD: u64 = 3;
/// Tokens every message (and the system prompt) costs on top of its text.
pub const MESSAGE_OVERHEAD: u64 = 4;

/// Which tokenizer counts for a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// OpenAI's gpt-4o, gpt-4.1, gpt-5 and o-series models.
    O200k,
    /// Everything else (an estimate).
    Cl100k,
}

impl Encoding {
    /// The tokenizer for the provider's model id.
    pub fn for_model(model: &str) -> Encoding {
        let model = model.to_ascii_lowercase();
        const O200K: [&str; 7] = ["gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt"];
        if O200K.iter().any(|prefix| model.starts_with(prefix)) {
            Encoding::O200k
        } else {
            Encoding::Cl100k
        }
    }

    fn bpe(self) -> &'static CoreBPE {
        match self {
            Encoding::O200k => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        }
    }

    /// The tokens of `text`.
    pub fn count(self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        self.bpe().encode_ordinary(text).len() as u64
    }

    /// The tokens of one message, overhead included.
    pub fn count_message(self, message: &Message) -> u64 {
        MESSAGE_OVERHEAD
            + images_of(message)
            + texts_of(message).map(|t| self.count(&t)).sum::<u64>()
    }

    /// The tokens of the tool definitions (their JSON).
    pub fn count_tools(self, tools: &[ToolSpec]) -> u64 {
        if tools.is_empty() {
            return 0;
        }
        self.count(&tools_json(tools))
    }

    /// The tokens of a system prompt, overhead included (0 when empty).
    pub fn count_system(self, prompt: &str) -> u64 {
        if prompt.is_empty() {
            0
        } else {
            MESSAGE_OVERHEAD + self.count(prompt)
        }
    }
}

/// An upper bound on a message's tokens that needs no tokenizer: every
/// token stands for at least one byte.
pub fn byte_bound(message: &Message) -> u64 {
    MESSAGE_OVERHEAD + images_of(message) + texts_of(message).map(|t| t.len() as u64).sum::<u64>()
}

/// An upper bound on the tool definitions' tokens: their JSON's length,
/// counted as it is written, without building it.
pub fn tools_byte_bound(tools: &[ToolSpec]) -> u64 {
    if tools.is_empty() {
        return 0;
    }
    let mut length = ByteCount(0);
    match serde_json::to_writer(&mut length, &listed(tools)) {
        Ok(()) => length.0,
        Err(_) => 0,
    }
}

/// The tools as a request lists them, for counting.
fn tools_json(tools: &[ToolSpec]) -> String {
    serde_json::to_string(&listed(tools)).unwrap_or_default()
}

/// The tools as a request lists them, borrowed from the specs.
fn listed(tools: &[ToolSpec]) -> Vec<ListedTool<'_>> {
    tools
        .iter()
        .map(|t| ListedTool {
            name: &t.name,
            description: &t.description,
            parameters: &t.input_schema,
        })
        .collect()
}

#[derive(serde::Serialize)]
struct ListedTool<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

/// A writer that only counts what is written to it.
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a message's images count for: [`crate::images::IMAGE_TOKENS`]
/// each, an estimate (their base64 is never counted as text).
fn images_of(message: &Message) -> u64 {
    match message {
        Message::User { images, .. } => images.len() as u64 * crate::images::IMAGE_TOKENS,
        _ => 0,
    }
}

/// Every text a message holds, as the provider reads it.
fn texts_of(message: &Message) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    let texts: Vec<Cow<'_, str>> = match message {
        Message::User { text, .. } => vec![Cow::Borrowed(text)],
        Message::ToolResult { output, .. } => vec![Cow::Borrowed(output)],
        Message::Assistant { content, .. } => content
            .iter()
            .flat_map(|block| match block {
                ContentBlock::Text { text } => vec![Cow::Borrowed(text.as_str())],
                ContentBlock::Thinking {
                    thinking,
                    signature: Some(_),
                } => vec![Cow::Borrowed(thinking.as_str())],
                ContentBlock::Thinking {
                    signature: None, ..
                }
                | ContentBlock::RedactedThinking { .. } => Vec::new(),
                // Its summary goes back with it; the encrypted reasoning
                // has no text to count.
                ContentBlock::ReasoningItem { summary, .. } => {
                    summary.iter().map(|s| Cow::Borrowed(s.as_str())).collect()
                }
                ContentBlock::ToolUse { name, input, .. } => vec![
                    Cow::Borrowed(name.as_str()),
                    Cow::Owned(match input {
                        serde_json::Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    }),
                ],
            })
            .collect(),
    };
    texts.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_get_o200k_and_others_cl100k() {
        assert_eq!(Encoding::for_model("gpt-4.1-mini"), Encoding::O200k);
        assert_eq!(Encoding::for_model("o3-mini"), Encoding::O200k);
        assert_eq!(Encoding::for_model("claude-sonnet-4"), Encoding::Cl100k);
        assert_eq!(Encoding::for_model("qwen2.5-0.5b"), Encoding::Cl100k);
    }

    #[test]
    fn a_message_costs_its_texts_plus_overhead_and_the_bound_holds() {
        let message = Message::Assistant {
            content: vec![
                ContentBlock::Text {
                    text: "Let me read the file.".into(),
                },
                ContentBlock::ToolUse {
                    id: "c1".into(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": "src/main.rs"}),
                },
            ],
            interrupted: false,
        };
        for encoding in [Encoding::O200k, Encoding::Cl100k] {
            let parts = encoding.count("Let me read the file.")
                + encoding.count("read_file")
                + encoding.count(r#"{"path":"src/main.rs"}"#);
            assert_eq!(encoding.count_message(&message), MESSAGE_OVERHEAD + parts);
            assert!(encoding.count_message(&message) <= byte_bound(&message));
        }
    }

    #[test]
    fn signed_thinking_counts_and_unsigned_or_redacted_thinking_does_not() {
        let thinking = |signature: Option<&str>| Message::Assistant {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "Let me think about the file first.".into(),
                    signature: signature.map(String::from),
                },
                ContentBlock::RedactedThinking {
                    data: "EmwKAhgBEgy3va3pzix".into(),
                },
                ContentBlock::Text {
                    text: "Done.".into(),
                },
            ],
            interrupted: false,
        };
        let encoding = Encoding::Cl100k;
        let text = encoding.count("Done.");
        assert_eq!(
            encoding.count_message(&thinking(None)),
            MESSAGE_OVERHEAD + text
        );
        assert_eq!(
            encoding.count_message(&thinking(Some("sig"))),
            MESSAGE_OVERHEAD + text + encoding.count("Let me think about the file first.")
        );
        assert!(
            encoding.count_message(&thinking(Some("sig"))) <= byte_bound(&thinking(Some("sig")))
        );
    }

    #[test]
    fn a_reasoning_item_counts_its_summary_and_not_its_encrypted_reasoning() {
        let message = |summary: Vec<String>| Message::Assistant {
            content: vec![
                ContentBlock::ReasoningItem {
                    id: "rs_1".into(),
                    summary,
                    encrypted_content: "gAAAAABo-encrypted-reasoning".repeat(20),
                },
                ContentBlock::Text {
                    text: "Done.".into(),
                },
            ],
            interrupted: false,
        };
        let encoding = Encoding::O200k;
        let text = encoding.count("Done.");
        assert_eq!(
            encoding.count_message(&message(Vec::new())),
            MESSAGE_OVERHEAD + text
        );
        let summarised = message(vec!["Read the file first.".into(), "Then answer.".into()]);
        assert_eq!(
            encoding.count_message(&summarised),
            MESSAGE_OVERHEAD
                + text
                + encoding.count("Read the file first.")
                + encoding.count("Then answer.")
        );
        assert!(encoding.count_message(&summarised) <= byte_bound(&summarised));
    }
}
