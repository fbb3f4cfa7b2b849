//! Token counts of the history: each message is counted once, when a count
//! is first needed, and the estimate is calibrated against what the
//! provider reports.
//!
//! Calibration learns from the provider's counts, which win over ours:
//!
//! - what it charges for everything but the messages (system prompt, tool
//!   definitions, its chat template — some servers leave the tools out
//!   altogether), read from a request whose messages are few;
//! - what it charges for each message: what is left of a request's count
//!   once the overhead and the messages it has counted before are taken
//!   off is what the others cost (the usual step adds an answer and a new
//!   question, or a tool call and its results), shared among them by our
//!   counts, and remembered;
//! - how many of its tokens one of ours is worth, from those remainders:
//!   the highest of the last few, so that a message whose text counts
//!   higher than the one before (prose after code, say) is not
//!   underestimated.
//!
//! A request is then estimated as that overhead, plus the provider's counts
//! of the messages it has counted, plus ours of the others scaled by that
//! ratio. Another profile (another provider) starts over.
//!
//! Counting is deferred behind a free upper bound (a token is at least one
//! byte): while the bound of a request fits, nothing is counted and the
//! tokenizer is never loaded.

use crate::model::ToolList;
use crate::protocol::Message;
use crate::tokens::{self, Encoding};
use serde::Serialize;

/// Per-message counts and the calibration of one session.
#[derive(Clone, Debug, Serialize)]
pub struct Ledger {
    /// The tokenizer the counts are in.
    encoding: Encoding,
    /// Exact counts of `history[i]`, filled when first needed.
    #[serde(skip)]
    counts: Vec<Option<u32>>,
    /// Byte bounds of `history[i]`, filled as messages arrive.
    #[serde(skip)]
    bounds: Vec<u32>,
    /// The last system prompt counted: its fingerprint and count.
    #[serde(skip)]
    system: Option<(u64, u64)>,
    /// The last tool list counted: its fingerprint and count.
    #[serde(skip)]
    tools: Option<(u64, u64)>,
    /// The provider's tokens per token of ours, learnt from the growth
    /// between two counted requests (1.0 until then).
    pub correction: f64,
    /// What the provider counts besides the messages, learnt from the last
    /// counted request, for the system prompt and tools it had (their
    /// fingerprint).
    overhead: Option<(u64, u64)>,
    /// The ratios of the last few counted differences (provider's tokens
    /// per token of ours), newest last.
    ratios: Vec<f64>,
    /// The provider's count of `history[i]` (whole), once learnt.
    #[serde(skip)]
    provider: Vec<Option<u32>>,
    /// The profile whose provider the figures above are from.
    profile: String,
    /// Counts by the provider of requests nothing of which was counted
    /// yet, oldest first (see [`Counted::uncounted`]).
    #[serde(skip)]
    unsettled: Vec<(Counted, u64)>,
}

/// Requests kept for counting later, at most.
const UNSETTLED_KEPT: usize = 64;

/// How many differences' ratios the correction is the highest of.
const RATIOS_KEPT: usize = 3;

/// What a counted request's count by the provider calibrates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counted {
    /// Its system prompt and tools (see [`Ledger::fingerprint`]).
    pub fingerprint: u64,
    /// Its summary (0: none): with the fingerprint, what must be the same
    /// for two requests' messages to be compared.
    pub summary: u64,
    /// Our uncalibrated counts of its fixed part, of its messages and
    /// summary, and of the summary alone.
    pub fixed: u64,
    pub messages: u64,
    pub summary_tokens: u64,
    /// The history messages it carried, in order, each as it went.
    #[serde(skip)]
    pub view: Vec<(usize, Sent)>,
    /// It went while the free byte bound fitted, so nothing of it was
    /// counted (`fixed` and `messages` are 0): the ledger counts it when it
    /// first needs counts ([`Ledger::settle`]).
    pub uncounted: bool,
}

/// How a history message went in a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    Whole,
    /// A tool output as a one-line marker.
    Marker,
    /// A tool output shortened to about this many tokens.
    Shortened(u64),
}

/// Calibration never moves the estimate further than this either way.
const CORRECTION_RANGE: (f64, f64) = (0.5, 4.0);

impl Default for Ledger {
    fn default() -> Self {
        Ledger::new(Encoding::Cl100k)
    }
}

/// The counts are a cache and the calibration is learnt from the provider:
/// neither is conversation state (a session folded from its log equals the
/// live one without them).
impl PartialEq for Ledger {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Ledger {
    pub fn new(encoding: Encoding) -> Self {
        Ledger {
            encoding,
            counts: Vec::new(),
            bounds: Vec::new(),
            system: None,
            tools: None,
            correction: 1.0,
            overhead: None,
            ratios: Vec::new(),
            provider: Vec::new(),
            profile: String::new(),
            unsettled: Vec::new(),
        }
    }

    /// Forget every count (the history was cleared).
    pub fn reset(&mut self) {
        self.counts.clear();
        self.bounds.clear();
        self.provider.clear();
        self.unsettled.clear();
    }

    /// Estimate for `profile` from now on: another profile's provider
    /// counts otherwise, so what was learnt from the last one is dropped.
    pub fn use_profile(&mut self, profile: &str) {
        if profile != self.profile {
            self.profile = profile.to_string();
            self.provider.clear();
            self.unsettled.clear();
            self.overhead = None;
            self.ratios.clear();
            self.correction = 1.0;
        }
    }

    /// Count in `encoding` from now on (the model changed).
    pub fn use_encoding(&mut self, encoding: Encoding) {
        if encoding != self.encoding {
            self.encoding = encoding;
            self.counts.iter_mut().for_each(|c| *c = None);
            self.system = None;
            self.tools = None;
        }
    }

    /// Take in messages appended to `history` since the last call.
    pub fn sync(&mut self, history: &[Message]) {
        if self.bounds.len() > history.len() {
            self.reset();
        }
        for message in &history[self.bounds.len()..] {
            self.bounds.push(clamp(tokens::byte_bound(message)));
            self.counts.push(None);
        }
        self.provider.resize(self.bounds.len(), None);
    }

    /// Upper bounds of `history[i]`, free to compute.
    pub fn bounds(&self) -> &[u32] {
        &self.bounds
    }

    /// Estimates of `history[from..]`: the provider's count where it is
    /// known, else ours (counting what was not counted yet) calibrated.
    /// Index `i` of the result is `history[from + i]`.
    pub fn estimates(&mut self, history: &[Message], from: usize) -> Vec<u64> {
        self.sync(history);
        let encoding = self.encoding;
        let correction = self.correction;
        history[from..]
            .iter()
            .zip(&mut self.counts[from..])
            .zip(&self.provider[from..])
            .map(|((message, slot), provider)| {
                let exact = *slot.get_or_insert_with(|| clamp(encoding.count_message(message)));
                provider.map_or_else(|| scale(u64::from(exact), correction), u64::from)
            })
            .collect()
    }

    /// Exact (uncalibrated) count of a system prompt; remembered.
    pub fn system_tokens(&mut self, prompt: &str) -> u64 {
        let key = fingerprint(prompt);
        match self.system {
            Some((k, n)) if k == key => n,
            _ => {
                let n = self.encoding.count_system(prompt);
                self.system = Some((key, n));
                n
            }
        }
    }

    /// Exact (uncalibrated) count of the tool definitions; remembered while
    /// the list is the same.
    pub fn tool_tokens(&mut self, tools: &ToolList) -> u64 {
        let key = tools_fingerprint(tools);
        match self.tools {
            Some((k, n)) if k == key => n,
            _ => {
                let n = self.encoding.count_tools(tools);
                self.tools = Some((key, n));
                n
            }
        }
    }

    /// Calibrated count of a message that is not in the history.
    pub fn message_tokens(&self, message: &Message) -> u64 {
        scale(self.encoding.count_message(message), self.correction)
    }

    /// Exact count of any text, uncalibrated.
    pub fn raw_text_tokens(&self, text: &str) -> u64 {
        self.encoding.count(text)
    }

    /// Exact count of any text (e.g. a summary), calibrated.
    pub fn text_tokens(&self, text: &str) -> u64 {
        scale(self.encoding.count(text), self.correction)
    }

    /// Calibrate: a request (see [`Counted`]) was counted `reported` by the
    /// provider.
    ///
    /// The overhead is read from the first request with a system prompt
    /// and tools: all of its count but its messages at the ratio known so
    /// far when they are fewer than the fixed part, else its count shared
    /// out in proportion to our counts; and again, exactly, from a request
    /// whose messages the provider has all counted before. Then what is
    /// left of the count teaches what the messages it has not counted yet
    /// cost.
    pub fn observe(&mut self, counted: Counted, reported: u64) {
        if reported == 0 {
            return;
        }
        if counted.uncounted {
            if self.unsettled.len() == UNSETTLED_KEPT {
                self.unsettled.remove(0);
            }
            self.unsettled.push((counted, reported));
            return;
        }
        let (fingerprint, fixed, messages) = (counted.fingerprint, counted.fixed, counted.messages);
        let known = matches!(self.overhead, Some((key, _)) if key == fingerprint);
        if !known && messages <= fixed {
            let overhead = reported as f64 - messages as f64 * self.correction;
            self.overhead = Some((fingerprint, overhead.max(0.0).round() as u64));
        } else if !known {
            let ratio = reported as f64 / (fixed + messages) as f64;
            self.overhead = Some((fingerprint, (fixed as f64 * ratio).round() as u64));
            self.push_ratio(ratio);
        } else if let Some(counted_before) = self.provider_total(&counted) {
            // Every message of it counted before: the rest is the overhead.
            self.overhead = Some((fingerprint, reported.saturating_sub(counted_before)));
        }
        self.learn_messages(&counted, reported);
    }

    /// Learn now from the requests that went uncounted (see
    /// [`Counted::uncounted`]), in order, those made with the system prompt
    /// and tools of `fingerprint` (our count `fixed`) and the summary of
    /// `summary` (our count `summary_tokens`); the others are dropped.
    pub fn settle(
        &mut self,
        history: &[Message],
        (fingerprint, fixed): (u64, u64),
        (summary, summary_tokens): (u64, u64),
    ) {
        if self.unsettled.is_empty() {
            return;
        }
        self.sync(history);
        for (mut counted, reported) in std::mem::take(&mut self.unsettled) {
            if counted.fingerprint != fingerprint || counted.summary != summary {
                continue;
            }
            let mut messages = summary_tokens;
            for (i, _) in &counted.view {
                let (Some(message), Some(slot)) = (history.get(*i), self.counts.get_mut(*i)) else {
                    continue;
                };
                let n = *slot.get_or_insert_with(|| clamp(self.encoding.count_message(message)));
                messages += u64::from(n);
            }
            counted.fixed = fixed;
            counted.messages = messages;
            counted.summary_tokens = summary_tokens;
            counted.uncounted = false;
            self.observe(counted, reported);
        }
    }

    /// The provider's count of all of `counted`'s messages, when it has
    /// counted every one of them whole before and there is no summary.
    fn provider_total(&self, counted: &Counted) -> Option<u64> {
        if counted.view.is_empty() || counted.summary_tokens > 0 {
            return None;
        }
        counted.view.iter().try_fold(0u64, |total, (i, sent)| {
            let provider = self.provider.get(*i).copied().flatten()?;
            (*sent == Sent::Whole).then_some(total + u64::from(provider))
        })
    }

    /// What the whole messages of `counted` that the provider has not
    /// counted before cost: what is left of `reported` once the overhead,
    /// the messages it has counted and our estimate of the rest (markers,
    /// shortened outputs, the summary) are taken off — when those new
    /// messages are at least as much as that rest, so that an error in the
    /// rest cannot swamp them.
    fn learn_messages(&mut self, counted: &Counted, reported: u64) {
        let Some((key, overhead)) = self.overhead else {
            return;
        };
        if key != counted.fingerprint || counted.view.is_empty() {
            return;
        }
        let correction = self.correction;
        let mut known = 0u64;
        let mut rest = counted.summary_tokens as f64 * correction;
        let mut fresh: Vec<(usize, u64)> = Vec::new();
        for (i, sent) in &counted.view {
            match sent {
                Sent::Whole => match (
                    self.provider.get(*i).copied().flatten(),
                    self.counts.get(*i),
                ) {
                    (Some(provider), _) => known += u64::from(provider),
                    (None, Some(Some(ours))) => fresh.push((*i, u64::from(*ours))),
                    (None, _) => return,
                },
                Sent::Marker => rest += super::view::MARKER_TOKENS as f64,
                Sent::Shortened(keep) => rest += *keep as f64,
            }
        }
        let ours: u64 = fresh.iter().map(|(_, n)| n).sum();
        let left = reported as f64 - overhead as f64 - known as f64 - rest;
        if ours < 16 || left <= 0.0 || (ours as f64 * correction) < rest {
            return;
        }
        self.push_ratio(left / ours as f64);
        for (i, n) in fresh {
            if let Some(slot) = self.provider.get_mut(i) {
                *slot = Some(clamp((left * n as f64 / ours as f64).round() as u64));
            }
        }
    }

    /// One request's ratio: the correction is the highest of the last few.
    fn push_ratio(&mut self, ratio: f64) {
        if !ratio.is_finite() {
            return;
        }
        if self.ratios.len() == RATIOS_KEPT {
            self.ratios.remove(0);
        }
        self.ratios
            .push(ratio.clamp(CORRECTION_RANGE.0, CORRECTION_RANGE.1));
        self.correction = self.ratios.iter().copied().fold(f64::MIN, f64::max);
    }

    /// What a request with `fingerprint` costs besides its messages: the
    /// learnt overhead, or `counted` (our count of the system prompt, tools
    /// and request overhead) scaled.
    pub fn overhead(&self, fingerprint: u64, counted: u64) -> u64 {
        match self.overhead {
            Some((key, overhead)) if key == fingerprint => overhead,
            _ => self.calibrated(counted),
        }
    }

    /// Whether the provider's count of a request with `fingerprint` is
    /// known (its system prompt and tools are then counted as it counts).
    pub fn knows_overhead(&self, fingerprint: u64) -> bool {
        matches!(self.overhead, Some((key, _)) if key == fingerprint)
    }

    /// The provider refused a request our estimate said would fit: count
    /// higher from now on.
    pub fn distrust(&mut self) {
        self.correction = (self.correction * 1.25).min(CORRECTION_RANGE.1);
        if let Some((_, overhead)) = &mut self.overhead {
            *overhead += *overhead / 4;
        }
    }

    /// What identifies the fixed part of a request: its system prompt (the
    /// base one, without a summary) and its tool list.
    pub fn fingerprint(system_prompt: &str, tools: &ToolList) -> u64 {
        fingerprint(system_prompt) ^ tools_fingerprint(tools).rotate_left(17)
    }

    /// What tells summaries apart (0 for none).
    pub fn summary_key(summary: Option<&str>) -> u64 {
        summary.map_or(0, fingerprint)
    }

    /// Scale an uncalibrated count by the calibration.
    pub fn calibrated(&self, tokens: u64) -> u64 {
        scale(tokens, self.correction)
    }
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn scale(tokens: u64, correction: f64) -> u64 {
    (tokens as f64 * correction).ceil() as u64
}

/// What tells tool lists apart: their names and descriptions (a list is
/// replaced, not changed, when a server's tools change; its address may
/// be reused, so it is not a key).
fn tools_fingerprint(tools: &ToolList) -> u64 {
    tools.iter().fold(tools.len() as u64, |key, tool| {
        key.rotate_left(7)
            ^ fingerprint(&tool.name)
            ^ fingerprint(&tool.description).rotate_left(29)
    })
}

/// Length and FNV-1a hash of a text: enough to tell system prompts apart.
fn fingerprint(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash ^ (text.len() as u64).rotate_left(32)
}
