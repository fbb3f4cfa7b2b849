//! What a session keeps about its context window beyond the history: the
//! summary standing for older turns, the token counts, the calibration,
//! and what it learnt from its providers ([`Learnt`]: windows stated in
//! refusals, the largest request taken, where the last view started).
//! That last is not conversation state: a session folded from its log
//! starts without it and learns it again.

use super::compaction::Summary;
use super::custom::CustomStrategy;
use super::ledger::Ledger;
use super::seqs::HistorySeqs;
use crate::protocol::{ContextConfig, ContextUsage};
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// What the provider taught the session while it ran.
    pub learnt: Learnt,
}

/// What a session learnt from its providers while it ran. Not conversation
/// state: a session folded from its log starts without it (and equals the
/// live one), learning it again from the next refusal.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Learnt {
    /// The most input tokens a profile's provider takes, by profile name,
    /// as stated in a refusal for length (smaller than the profile says).
    pub input_budgets: BTreeMap<String, u64>,
    /// The largest request each profile's provider took (its own count of
    /// the input), by profile name.
    pub accepted: BTreeMap<String, u64>,
    /// The user was told the tool definitions crowd the window.
    pub tools_warned: bool,
    /// The session's model calls when the last summary was accepted.
    pub compacted_at_call: Option<u64>,
    /// What the next request keeps of the last one's view.
    pub anchors: super::view::Anchors,
}

impl PartialEq for Learnt {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl ContextState {
    /// Forget the summary and the counts (`/clear`).
    pub fn clear(&mut self) {
        self.summary = None;
        self.compactions = 0;
        self.last = None;
        self.ledger.reset();
        self.learnt.anchors = Default::default();
    }
}
