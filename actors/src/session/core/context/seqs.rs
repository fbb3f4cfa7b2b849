//! The seq of each history message's event, so that a `compacted` event
//! can name the span it covers. The driver that stamps events (and the fold
//! of a stored log) tells it every event in order.

use crate::protocol::{AgentMessage, SystemSubtype};
use serde::Serialize;

/// Seqs of `history[i]`, since the last `/clear`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HistorySeqs {
    #[serde(skip)]
    seqs: Vec<u64>,
}

/// Seqs are where events landed, not conversation state: a session folded
/// from its log equals the live one whatever they are.
impl PartialEq for HistorySeqs {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl HistorySeqs {
    /// `message` was stamped `seq`.
    pub fn observe(&mut self, message: &AgentMessage, seq: u64) {
        match message {
            AgentMessage::User(_) | AgentMessage::Assistant(_) | AgentMessage::ToolResult(_) => {
                self.seqs.push(seq)
            }
            AgentMessage::System(s) if s.subtype == SystemSubtype::Cleared => self.seqs.clear(),
            _ => {}
        }
    }

    /// The seqs of `history[from]` and `history[to - 1]` (0 where unknown).
    pub fn span(&self, from: usize, to: usize) -> (u64, u64) {
        let at = |i: Option<usize>| i.and_then(|i| self.seqs.get(i)).copied().unwrap_or(0);
        (at(Some(from)), at(to.checked_sub(1)))
    }
}
