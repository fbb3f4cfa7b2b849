//! What a session keeps about its context window beyond the history: the
//! summary standing for older turns, the token counts, the calibration.

use super::compaction::Summary;
use super::custom::CustomStrategy;
use super::ledger::Ledger;
use super::seqs::HistorySeqs;
use crate::protocol::{ContextConfig, ContextUsage};
use serde::Serialize;

/// What the session knows about its context beyond the history.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ContextState {
    /// The summary standing for the older turns, if compacted.
    pub summary: Option<Summary>,
    /// Compactions since the last `/clear`.
    pub compactions: u64,
    /// This session's own `[context]` keys (over the profile's and the
    /// global ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<ContextConfig>,
    /// How full the context was after the last model call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<ContextUsage>,
    pub ledger: Ledger,
    /// The seq of each history message's event.
    pub seqs: HistorySeqs,
    /// A library user's strategy, replacing `strategy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom: Option<CustomStrategy>,
}

impl ContextState {
    /// Forget the summary and the counts (`/clear`).
    pub fn clear(&mut self) {
        self.summary = None;
        self.compactions = 0;
        self.last = None;
        self.ledger.reset();
    }
}
