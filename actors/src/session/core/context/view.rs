//! Pruning: from the whole conversation to what one request carries.
//!
//! [`plan`] is a pure function of the history, the cost of each message and
//! the limits. It works in whole turns (a turn starts at a user message), so
//! it never separates a tool call from its result and never cuts inside a
//! turn; the exceptions touch tool outputs only, never their calls, so the
//! pairs stay intact: the cheap tier shows an old tool output as a
//! one-line marker, and the last resort shortens the current turn's own
//! outputs, head and tail kept. In that order, until the request fits:
//!
//! 1. old tool outputs become markers (the newest kept whole up to an
//!    allowance);
//! 2. whole turns are dropped by the strategy, the `min_recent_turns` most
//!    recent kept;
//! 3. those recent turns go too, oldest first, down to the current turn
//!    alone (`min_recent_turns` is what is kept when it fits, not a floor);
//! 4. the current turn's tool outputs are shortened to their head and
//!    tail, with a note saying how much was cut.
//!
//! Only when the current turn cannot fit even so (its own message, or its
//! assistant messages, are too long) is the plan over budget: the session
//! then sends nothing. An assistant message is never changed: its thinking
//! blocks go with it as they came (a signed one must reach Anthropic
//! unaltered).
//!
//! The start of the view moves in steps, not at every turn ([`Anchors`]:
//! what a request keeps of the one before), so that the prefix a prompt
//! cache holds stays the same for several requests.

use crate::protocol::{Message, Strategy};
use std::ops::Range;

/// A one-line marker costs about this many tokens.
pub const MARKER_TOKENS: u64 = 30;

/// A shortened tool output keeps at least this many tokens (its note
/// included); below that a marker says as much.
pub const SHORTENED_MIN_TOKENS: u64 = 96;

/// What the note in a shortened tool output costs, about.
const SHORTENED_NOTE_TOKENS: u64 = 45;

/// What [`plan`] works from.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Tokens the messages may take (the budget minus system prompt, tools
    /// and summary).
    pub budget: u64,
    /// Above this many tokens the cheap tier starts (`auto_compact_at` of
    /// the budget).
    pub trim_at: u64,
    pub max_messages: Option<usize>,
    pub min_recent_turns: usize,
    pub keep_tool_output_tokens: u64,
    pub strategy: Strategy,
    /// Where the last request's view started (oldest-first: turns before
    /// it stay out) and below which its old tool outputs were markers:
    /// what a request keeps of the one before, so that the start of the
    /// view — what a prompt cache holds — moves in steps, not every turn.
    pub anchors: Anchors,
}

/// What a view keeps of the one before it (see [`Limits::anchors`]); both
/// history indices, 0 for none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Anchors {
    /// Turns that start before it are left out (oldest-first).
    pub floor: usize,
    /// Old tool outputs before it are markers.
    pub elided_below: usize,
}

/// When turns must be dropped, they are dropped until the request is back
/// under this share of the budget, so that several turns pass before the
/// next drop moves the start of the view again.
const DROP_TO: f64 = 0.7;

/// What a request carries: whole turns, some tool outputs as markers.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The history ranges sent, in order (each a run of whole turns).
    pub keep: Vec<Range<usize>>,
    /// Tool results shown as a marker, ascending.
    pub elided: Vec<usize>,
    /// Tool results of the current turn shortened to their head and tail,
    /// ascending: the index and the tokens kept (note included).
    pub shortened: Vec<(usize, u64)>,
    /// Estimated tokens of what is sent.
    pub tokens: u64,
    /// Estimated tokens after the cheap tier, before any turn was dropped.
    pub trimmed_tokens: u64,
    /// Turns left out.
    pub dropped_turns: usize,
    /// Of those, turns among the `min_recent_turns` most recent (they did
    /// not fit).
    pub dropped_recent: usize,
    /// The current turn alone exceeds the budget, even with its tool
    /// outputs shortened: nothing should be sent.
    pub over_budget: bool,
    /// What the next request keeps of this one.
    pub anchors: Anchors,
}

impl Plan {
    /// Messages sent.
    pub fn len(&self) -> usize {
        self.keep.iter().map(|r| r.len()).sum()
    }
}

/// The turns of `history[start..]`: each starts at a user message (a
/// leading run without one counts as a turn of its own).
pub fn turns(history: &[Message], start: usize) -> Vec<Range<usize>> {
    let mut turns: Vec<Range<usize>> = Vec::new();
    for (i, message) in history.iter().enumerate().skip(start) {
        match (message, turns.last_mut()) {
            (Message::User { .. }, _) | (_, None) => turns.push(i..i + 1),
            (_, Some(last)) => last.end = i + 1,
        }
    }
    turns
}

/// Choose what of `history[start..]` a request carries. `costs[i]` is the
/// estimated tokens of `history[start + i]`.
pub fn plan(history: &[Message], start: usize, costs: &[u64], limits: &Limits) -> Plan {
    let end = history.len();
    let mut total: u64 = costs.iter().sum();
    let all = Plan {
        keep: if start < end {
            std::iter::once(start..end).collect()
        } else {
            vec![]
        },
        elided: Vec::new(),
        shortened: Vec::new(),
        tokens: total,
        trimmed_tokens: total,
        dropped_turns: 0,
        dropped_recent: 0,
        over_budget: false,
        anchors: limits.anchors,
    };
    let too_many = |n: usize| limits.max_messages.is_some_and(|max| n > max);
    let recent_only = matches!(limits.strategy, Strategy::RecentTurns(_));
    if total <= limits.trim_at && !too_many(end - start) && !recent_only {
        return all;
    }
    let cost = |i: usize| costs[i - start];

    // The cheap tier: old tool outputs become markers, the newest kept
    // whole up to the allowance. The markers reach as far as the last
    // request's did, and when they must reach further, they reach until
    // the outputs kept whole take half the allowance (a step).
    let mut elided = Vec::new();
    let mut elided_below = limits.anchors.elided_below;
    if total > limits.trim_at {
        let newest_batch = history
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .unwrap_or(0);
        // Old outputs worth a marker, newest first.
        let outputs: Vec<usize> = (start..end)
            .rev()
            .filter(|&i| {
                matches!(history[i], Message::ToolResult { .. })
                    && i <= newest_batch
                    && cost(i) > MARKER_TOKENS
            })
            .collect();
        let whole_cost = |below: usize| -> u64 {
            outputs
                .iter()
                .filter(|&&i| i >= below)
                .map(|&i| cost(i))
                .sum()
        };
        if whole_cost(elided_below) > limits.keep_tool_output_tokens {
            let mut kept = 0;
            elided_below = newest_batch + 1;
            for &i in &outputs {
                if kept + cost(i) > limits.keep_tool_output_tokens / 2 {
                    break;
                }
                kept += cost(i);
                elided_below = i;
            }
        }
        // Kept whole, newest first.
        let mut whole = Vec::new();
        for &i in &outputs {
            if i < elided_below {
                elided.push(i);
                total = total - cost(i) + MARKER_TOKENS;
            } else {
                whole.push(i);
            }
        }
        // Still over the budget: the outputs kept whole go too, oldest
        // first, before any turn is dropped.
        while total > limits.budget {
            let Some(i) = whole.pop() else { break };
            elided.push(i);
            total = total - cost(i) + MARKER_TOKENS;
            elided_below = elided_below.max(i + 1);
        }
        elided.sort_unstable();
    }
    let trimmed_tokens = total;
    let is_elided = |i: usize| elided.binary_search(&i).is_ok();

    let turns = turns(history, start);
    let turn_cost: Vec<u64> = turns
        .iter()
        .map(|t| {
            t.clone()
                .map(|i| if is_elided(i) { MARKER_TOKENS } else { cost(i) })
                .sum()
        })
        .collect();
    let protected = limits.min_recent_turns.max(1).min(turns.len());
    let droppable = turns.len() - protected;
    let mut keep = vec![true; turns.len()];
    let mut messages = end - start;
    let mut dropped = 0;
    let drop = |t: usize, keep: &mut [bool], total: &mut u64, messages: &mut usize| {
        keep[t] = false;
        *total -= turn_cost[t];
        *messages -= turns[t].len();
    };
    if let Strategy::RecentTurns(n) = limits.strategy {
        for t in 0..turns.len().saturating_sub(n.max(1)).min(droppable) {
            drop(t, &mut keep, &mut total, &mut messages);
            dropped += 1;
        }
    }
    let order: Vec<usize> = match limits.strategy {
        Strategy::MiddleOut if droppable > 1 => (1..droppable).chain([0]).collect(),
        _ => (0..droppable).collect(),
    };
    // Oldest first, the view starts where the last one did at the
    // earliest, and when it must start later, it moves until the request
    // is well under the budget (a step).
    let oldest_first = limits.strategy == Strategy::OldestFirst;
    let mut floor = limits.anchors.floor;
    if oldest_first {
        for t in 0..droppable {
            if turns[t].start >= floor {
                break;
            }
            if keep[t] {
                drop(t, &mut keep, &mut total, &mut messages);
                dropped += 1;
            }
        }
    }
    let low_water = (limits.budget as f64 * DROP_TO) as u64;
    let mut stepping = false;
    for t in order {
        let over = total > limits.budget || too_many(messages);
        stepping |= over && oldest_first;
        let step_on = stepping && total > low_water;
        if !over && !step_on {
            break;
        }
        if keep[t] {
            drop(t, &mut keep, &mut total, &mut messages);
            dropped += 1;
            if oldest_first {
                floor = floor.max(turns.get(t + 1).map_or(end, |next| next.start));
            }
        }
    }
    // The recent turns are kept when they fit, not at any price: oldest
    // first, down to the current turn alone.
    let mut dropped_recent = 0;
    for t in droppable..turns.len().saturating_sub(1) {
        if total <= limits.budget && !too_many(messages) {
            break;
        }
        drop(t, &mut keep, &mut total, &mut messages);
        dropped += 1;
        dropped_recent += 1;
    }
    // The current turn alone is too long: its own tool outputs are
    // shortened, the longest first, to what fits.
    let mut shortened = Vec::new();
    if total > limits.budget
        && let Some(current) = turns.last()
    {
        let outputs: Vec<(usize, u64)> = current
            .clone()
            .filter(|i| matches!(history[*i], Message::ToolResult { .. }) && !is_elided(*i))
            .map(|i| (i, cost(i)))
            .filter(|(_, cost)| *cost > SHORTENED_MIN_TOKENS)
            .collect();
        let excess = total - limits.budget;
        let cap = shortening_cap(&outputs, excess);
        for (i, cost) in outputs {
            if cost > cap {
                shortened.push((i, cap));
                total -= cost - cap;
            }
        }
    }
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for (t, range) in turns.iter().enumerate().filter(|(t, _)| keep[*t]) {
        match ranges.last_mut() {
            Some(last) if last.end == range.start && (t == 0 || keep[t - 1]) => {
                last.end = range.end
            }
            _ => ranges.push(range.clone()),
        }
    }
    let kept = |i: &usize| ranges.iter().any(|r| r.contains(i));
    let elided = elided.iter().copied().filter(kept).collect();
    Plan {
        keep: ranges,
        elided,
        shortened,
        tokens: total,
        trimmed_tokens,
        dropped_turns: dropped,
        dropped_recent,
        over_budget: total > limits.budget,
        anchors: Anchors {
            floor,
            elided_below,
        },
    }
}

/// The most tokens each of `outputs` (index, cost) may keep so that
/// together they shed `excess`: the highest cap that does, at least
/// [`SHORTENED_MIN_TOKENS`] (which may not shed enough).
fn shortening_cap(outputs: &[(usize, u64)], excess: u64) -> u64 {
    let shed = |cap: u64| -> u64 { outputs.iter().map(|(_, c)| c.saturating_sub(cap)).sum() };
    let (mut low, mut high) = (
        SHORTENED_MIN_TOKENS,
        outputs.iter().map(|(_, c)| *c).max().unwrap_or(0),
    );
    if high <= low || shed(low) <= excess {
        return low;
    }
    // shed(low) > excess >= shed(high): find the highest cap shedding enough.
    while low + 1 < high {
        let mid = low + (high - low) / 2;
        if shed(mid) >= excess {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

/// The messages a plan sends, elided tool outputs replaced by a marker,
/// shortened ones by their head and tail. `costs[i]` is the estimate of
/// `history[start + i]` (how many bytes a kept token stands for).
pub fn materialize(history: &[Message], plan: &Plan, start: usize, costs: &[u64]) -> Vec<Message> {
    let mut messages = Vec::with_capacity(plan.len());
    for range in &plan.keep {
        for i in range.clone() {
            let message = &history[i];
            let shortened = plan
                .shortened
                .binary_search_by_key(&i, |(at, _)| *at)
                .ok()
                .map(|at| plan.shortened[at].1);
            match message {
                Message::ToolResult {
                    call_id,
                    name,
                    output,
                    is_error,
                } if plan.elided.binary_search(&i).is_ok() || shortened.is_some() => {
                    let output = match shortened {
                        Some(keep) => {
                            let cost = costs.get(i - start).copied().unwrap_or(keep).max(1);
                            shorten(output, keep, cost)
                        }
                        None => marker(name, output),
                    };
                    messages.push(Message::ToolResult {
                        call_id: call_id.clone(),
                        name: name.clone(),
                        output,
                        is_error: *is_error,
                    })
                }
                other => messages.push(other.clone()),
            }
        }
    }
    messages
}

/// A tool output of about `cost` tokens cut to about `keep`: its head and
/// its tail, and between them a note saying what was left out and how to
/// see it.
pub fn shorten(output: &str, keep: u64, cost: u64) -> String {
    let room = keep.saturating_sub(SHORTENED_NOTE_TOKENS);
    // Bytes per token of this very output, with a tenth to spare.
    let bytes = (output.len() as u128 * u128::from(room) * 9 / (u128::from(cost) * 10)) as usize;
    if bytes >= output.len() {
        return output.to_string();
    }
    let head_end = floor_char_boundary(output, bytes * 2 / 3);
    let tail_start = ceil_char_boundary(output, output.len() - (bytes - bytes * 2 / 3));
    let (head, cut, tail) = (
        &output[..head_end],
        &output[head_end..tail_start.max(head_end)],
        &output[tail_start.max(head_end)..],
    );
    format!(
        "{head}\n[… {}, {} of this output left out here to fit the context window; run the tool again, on a narrower range, to see them …]\n{tail}",
        crate::text::count(cut.lines().count().max(1) as u64, "line"),
        crate::text::count(cut.len() as u64, "byte"),
    )
}

fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// What the model reads in place of an old tool output.
pub fn marker(tool: &str, output: &str) -> String {
    let lines = crate::text::count(output.lines().count() as u64, "line");
    format!(
        "[older output of {tool} omitted to save context: {lines}, {}; run the tool again if it is needed]",
        crate::text::count(output.len() as u64, "byte")
    )
}

/// Whether `messages` keeps the pairing rule: every tool call is answered
/// by exactly one result before the next user or assistant message, and no
/// result appears without its call. The error names the first breach.
pub fn check_pairs(messages: &[Message]) -> Result<(), String> {
    use crate::protocol::ContentBlock;
    let mut open: Vec<&str> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match message {
            Message::User { .. } | Message::Assistant { .. } if !open.is_empty() => {
                return Err(format!(
                    "message {i}: tool call `{}` has no result before it",
                    open[0]
                ));
            }
            Message::Assistant { content, .. } => {
                open = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                        _ => None,
                    })
                    .collect();
            }
            Message::User { .. } => {}
            Message::ToolResult { call_id, .. } => match open.iter().position(|id| id == call_id) {
                Some(at) => {
                    open.remove(at);
                }
                None => {
                    return Err(format!(
                        "message {i}: tool result `{call_id}` answers no open tool call"
                    ));
                }
            },
        }
    }
    match open.first() {
        Some(id) => Err(format!("tool call `{id}` has no result")),
        None => Ok(()),
    }
}
