//! The assistant message being streamed: model events folded into blocks.
//!
//! Pure bookkeeping. `finish` turns the blocks into content and tool calls;
//! tool arguments are parsed once, at the end, so a fragment split anywhere
//! (even inside a UTF-8 character's escape) is fine. Thinking is kept in
//! its place among the blocks, with its signature, because Anthropic wants
//! it back exactly as it came.

use crate::model::ModelEvent;
use crate::protocol::{BlockKind, ContentBlock, Usage};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A block under construction.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PartialBlock {
    Text {
        text: String,
    },
    Thinking {
        text: String,
        /// Empty until the provider signs the block.
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ReasoningItem {
        id: String,
        summary: Vec<String>,
        encrypted_content: String,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// The assistant message of one model call, as far as it has streamed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PartialMessage {
    pub blocks: BTreeMap<usize, PartialBlock>,
    pub usage: Usage,
}

/// A tool call of a finished message; `input` is `Err(reason)` when the
/// arguments were not a valid JSON object.
#[derive(Clone, Debug, PartialEq)]
pub struct AssembledCall {
    pub id: String,
    pub name: String,
    pub input: Result<Value, String>,
}

/// A finished (or cut-short) message.
#[derive(Clone, Debug, PartialEq)]
pub struct AssembledMessage {
    pub content: Vec<ContentBlock>,
    pub calls: Vec<AssembledCall>,
}

impl AssembledMessage {
    /// The text blocks joined, or an empty string.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join("")
    }
}

impl PartialMessage {
    /// Fold one streamed event in. Events for a block that never started
    /// open it implicitly; events that make no sense are ignored.
    pub fn apply(&mut self, event: &ModelEvent) {
        match event {
            ModelEvent::BlockStart { index, block } => {
                let b = match block {
                    BlockKind::Text => PartialBlock::Text {
                        text: String::new(),
                    },
                    BlockKind::Thinking => PartialBlock::Thinking {
                        text: String::new(),
                        signature: String::new(),
                    },
                    BlockKind::ToolUse { id, name } => PartialBlock::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        json: String::new(),
                    },
                };
                self.blocks.insert(*index, b);
            }
            ModelEvent::TextDelta { index, text } => {
                let block = self
                    .blocks
                    .entry(*index)
                    .or_insert_with(|| PartialBlock::Text {
                        text: String::new(),
                    });
                if let PartialBlock::Text { text: t } = block {
                    t.push_str(text);
                }
            }
            ModelEvent::ThinkingDelta { index, text } => {
                let block = self
                    .blocks
                    .entry(*index)
                    .or_insert_with(|| PartialBlock::Thinking {
                        text: String::new(),
                        signature: String::new(),
                    });
                if let PartialBlock::Thinking { text: t, .. } = block {
                    t.push_str(text);
                }
            }
            ModelEvent::ThinkingSignature { index, signature } => {
                if let Some(PartialBlock::Thinking { signature: s, .. }) =
                    self.blocks.get_mut(index)
                {
                    s.push_str(signature);
                }
            }
            ModelEvent::RedactedThinking { index, data } => {
                self.blocks.insert(
                    *index,
                    PartialBlock::RedactedThinking { data: data.clone() },
                );
            }
            ModelEvent::ReasoningItem {
                index,
                id,
                summary,
                encrypted_content,
            } => {
                self.blocks.insert(
                    *index,
                    PartialBlock::ReasoningItem {
                        id: id.clone(),
                        summary: summary.clone(),
                        encrypted_content: encrypted_content.clone(),
                    },
                );
            }
            ModelEvent::ToolInputDelta {
                index,
                partial_json,
            } => {
                if let Some(PartialBlock::ToolUse { json, .. }) = self.blocks.get_mut(index) {
                    json.push_str(partial_json);
                }
            }
            ModelEvent::Usage(u) => self.usage.overwrite_with(*u),
            ModelEvent::BlockStop { .. }
            | ModelEvent::Retrying { .. }
            | ModelEvent::Finished { .. } => {}
        }
    }

    /// Whether nothing has streamed yet.
    pub fn is_empty(&self) -> bool {
        self.blocks.values().all(|b| match b {
            PartialBlock::Text { text } => text.is_empty(),
            PartialBlock::Thinking { text, signature } => text.is_empty() && signature.is_empty(),
            PartialBlock::RedactedThinking { .. }
            | PartialBlock::ReasoningItem { .. }
            | PartialBlock::ToolUse { .. } => false,
        })
    }

    /// The blocks as content and tool calls. Empty text blocks are dropped
    /// (and thinking blocks with neither reasoning nor a signature); tool
    /// calls without an id get `fallback_id(index)`.
    pub fn finish(&self, fallback_id: impl Fn(usize) -> String) -> AssembledMessage {
        let mut content = Vec::new();
        let mut calls = Vec::new();
        for (index, block) in &self.blocks {
            match block {
                PartialBlock::Text { text } => {
                    if !text.is_empty() {
                        content.push(ContentBlock::Text { text: text.clone() });
                    }
                }
                PartialBlock::Thinking { text, signature } => {
                    if !text.is_empty() || !signature.is_empty() {
                        content.push(ContentBlock::Thinking {
                            thinking: text.clone(),
                            signature: Some(signature.clone()).filter(|s| !s.is_empty()),
                        });
                    }
                }
                PartialBlock::RedactedThinking { data } => {
                    content.push(ContentBlock::RedactedThinking { data: data.clone() });
                }
                PartialBlock::ReasoningItem {
                    id,
                    summary,
                    encrypted_content,
                } => {
                    content.push(ContentBlock::ReasoningItem {
                        id: id.clone(),
                        summary: summary.clone(),
                        encrypted_content: encrypted_content.clone(),
                    });
                }
                PartialBlock::ToolUse { id, name, json } => {
                    let id = if id.is_empty() {
                        fallback_id(*index)
                    } else {
                        id.clone()
                    };
                    let parsed = parse_arguments(json);
                    let input_value = match &parsed {
                        Ok(v) => v.clone(),
                        Err(_) => Value::String(json.clone()),
                    };
                    content.push(ContentBlock::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        input: input_value,
                    });
                    calls.push(AssembledCall {
                        id,
                        name: name.clone(),
                        input: parsed,
                    });
                }
            }
        }
        AssembledMessage { content, calls }
    }
}

/// Arguments text to a JSON object: empty means `{}`.
fn parse_arguments(json: &str) -> Result<Value, String> {
    if json.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, got `{}`",
            abbreviate(&other.to_string())
        )),
        Err(e) => Err(format!(
            "the arguments are not valid JSON ({e}): `{}`",
            abbreviate(json)
        )),
    }
}

/// Arguments as quoted in an error: at most 200 characters.
fn abbreviate(s: &str) -> String {
    crate::text::ellipsize(s, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start_tool(p: &mut PartialMessage, index: usize, id: &str, name: &str) {
        p.apply(&ModelEvent::BlockStart {
            index,
            block: BlockKind::ToolUse {
                id: id.into(),
                name: name.into(),
            },
        });
    }

    #[test]
    fn arguments_split_at_every_byte_boundary_reassemble() {
        let args = r#"{"path":"naïve ☃ file.txt","n":3}"#;
        for cut in 0..=args.len() {
            if !args.is_char_boundary(cut) {
                continue;
            }
            let mut p = PartialMessage::default();
            start_tool(&mut p, 0, "c1", "read_file");
            for piece in [&args[..cut], &args[cut..]] {
                p.apply(&ModelEvent::ToolInputDelta {
                    index: 0,
                    partial_json: piece.into(),
                });
            }
            let m = p.finish(|i| format!("gen{i}"));
            assert_eq!(
                m.calls[0].input,
                Ok(serde_json::json!({"path":"naïve ☃ file.txt","n":3}))
            );
        }
    }

    #[test]
    fn parallel_tool_calls_accumulate_by_index() {
        let mut p = PartialMessage::default();
        start_tool(&mut p, 1, "a", "bash");
        start_tool(&mut p, 2, "b", "glob");
        for (i, s) in [
            (1, "{\"command\":"),
            (2, "{\"pattern\""),
            (1, "\"ls\"}"),
            (2, ":\"*\"}"),
        ] {
            p.apply(&ModelEvent::ToolInputDelta {
                index: i,
                partial_json: s.into(),
            });
        }
        let m = p.finish(|i| format!("gen{i}"));
        assert_eq!(m.calls.len(), 2);
        assert_eq!(m.calls[0].input, Ok(serde_json::json!({"command":"ls"})));
        assert_eq!(m.calls[1].input, Ok(serde_json::json!({"pattern":"*"})));
    }

    #[test]
    fn empty_arguments_are_an_empty_object_and_garbage_is_an_error() {
        let mut p = PartialMessage::default();
        start_tool(&mut p, 0, "", "list_dir");
        start_tool(&mut p, 1, "x", "bash");
        p.apply(&ModelEvent::ToolInputDelta {
            index: 1,
            partial_json: "{not json".into(),
        });
        let m = p.finish(|i| format!("gen{i}"));
        assert_eq!(m.calls[0].id, "gen0");
        assert_eq!(m.calls[0].input, Ok(serde_json::json!({})));
        let err = m.calls[1].input.clone().unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        assert_eq!(
            m.content[1],
            ContentBlock::ToolUse {
                id: "x".into(),
                name: "bash".into(),
                input: Value::String("{not json".into())
            }
        );
    }

    #[test]
    fn thinking_keeps_its_place_and_signature_and_is_not_text() {
        let mut p = PartialMessage::default();
        p.apply(&ModelEvent::BlockStart {
            index: 0,
            block: BlockKind::Thinking,
        });
        assert!(p.is_empty(), "an empty thinking block is nothing yet");
        for piece in ["2 + 2", " is 4."] {
            p.apply(&ModelEvent::ThinkingDelta {
                index: 0,
                text: piece.into(),
            });
        }
        assert!(
            !p.is_empty(),
            "streamed thinking was shown: a retry discards it"
        );
        for piece in ["sig", "ned"] {
            p.apply(&ModelEvent::ThinkingSignature {
                index: 0,
                signature: piece.into(),
            });
        }
        p.apply(&ModelEvent::RedactedThinking {
            index: 1,
            data: "opaque".into(),
        });
        // An unsigned thinking block (a server's reasoning_content) stays
        // unsigned; an empty one vanishes.
        p.apply(&ModelEvent::ThinkingDelta {
            index: 2,
            text: "hmm".into(),
        });
        p.apply(&ModelEvent::BlockStart {
            index: 3,
            block: BlockKind::Thinking,
        });
        p.apply(&ModelEvent::TextDelta {
            index: 4,
            text: "4".into(),
        });
        let m = p.finish(|i| format!("gen{i}"));
        assert_eq!(m.text(), "4", "thinking is not the answer");
        assert_eq!(
            m.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "2 + 2 is 4.".into(),
                    signature: Some("signed".into()),
                },
                ContentBlock::RedactedThinking {
                    data: "opaque".into()
                },
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    signature: None,
                },
                ContentBlock::Text { text: "4".into() },
            ]
        );
    }

    #[test]
    fn text_deltas_join_and_empty_text_blocks_vanish() {
        let mut p = PartialMessage::default();
        assert!(p.is_empty());
        p.apply(&ModelEvent::BlockStart {
            index: 0,
            block: BlockKind::Text,
        });
        assert!(p.is_empty());
        p.apply(&ModelEvent::TextDelta {
            index: 0,
            text: "Hel".into(),
        });
        p.apply(&ModelEvent::TextDelta {
            index: 0,
            text: "lo".into(),
        });
        p.apply(&ModelEvent::BlockStart {
            index: 1,
            block: BlockKind::Text,
        });
        let m = p.finish(|i| format!("gen{i}"));
        assert_eq!(m.text(), "Hello");
        assert_eq!(m.content.len(), 1);
    }
}
