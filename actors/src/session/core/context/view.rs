//! Pruning: from the whole conversation to what one request carries.
//!
//! [`plan`] is a pure function of the history, the cost of each message and
//! the limits. It works in whole turns (a turn starts at a user message), so
//! it never separates a tool call from its result and never cuts inside a
//! turn; the one exception is the cheap tier, which shows an old tool
//! output as a one-line marker (its call stays, so the pair stays intact).
//! The most recent turns are protected and sent even when they alone exceed
//! the budget — the plan says so, and the session tells the user. An
//! assistant message is never changed: its thinking blocks go with it as
//! they came (a signed one must reach Anthropic unaltered).

use crate::protocol::{Message, Strategy};
use std::ops::Range;

/// A one-line marker costs about this many tokens.
pub const MARKER_TOKENS: u64 = 30;

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
}

/// What a request carries: whole turns, some tool outputs as markers.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The history ranges sent, in order (each a run of whole turns).
    pub keep: Vec<Range<usize>>,
    /// Tool results shown as a marker, ascending.
    pub elided: Vec<usize>,
    /// Estimated tokens of what is sent.
    pub tokens: u64,
    /// Estimated tokens after the cheap tier, before any turn was dropped.
    pub trimmed_tokens: u64,
    /// Turns left out.
    pub dropped_turns: usize,
    /// The protected recent turns alone exceed the budget.
    pub over_budget: bool,
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
        tokens: total,
        trimmed_tokens: total,
        dropped_turns: 0,
        over_budget: false,
    };
    let too_many = |n: usize| limits.max_messages.is_some_and(|max| n > max);
    let recent_only = matches!(limits.strategy, Strategy::RecentTurns(_));
    if total <= limits.trim_at && !too_many(end - start) && !recent_only {
        return all;
    }
    let cost = |i: usize| costs[i - start];

    // The cheap tier: old tool outputs become markers, newest kept whole.
    let mut elided = Vec::new();
    if total > limits.trim_at {
        let newest_batch = history
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .unwrap_or(0);
        let mut kept = 0;
        let mut whole = Vec::new();
        for i in (start..end).rev() {
            if !matches!(history[i], Message::ToolResult { .. }) || i > newest_batch {
                continue;
            }
            if cost(i) <= MARKER_TOKENS {
                continue;
            }
            if kept + cost(i) <= limits.keep_tool_output_tokens {
                kept += cost(i);
                whole.push(i);
            } else {
                elided.push(i);
                total = total - cost(i) + MARKER_TOKENS;
            }
        }
        // Still over the budget: the outputs kept whole go too, oldest
        // first, before any turn is dropped.
        while total > limits.budget {
            let Some(i) = whole.pop() else { break };
            elided.push(i);
            total = total - cost(i) + MARKER_TOKENS;
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
    for t in order {
        if total <= limits.budget && !too_many(messages) {
            break;
        }
        if keep[t] {
            drop(t, &mut keep, &mut total, &mut messages);
            dropped += 1;
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
        tokens: total,
        trimmed_tokens,
        dropped_turns: dropped,
        over_budget: total > limits.budget,
    }
}

/// The messages a plan sends, elided tool outputs replaced by a marker.
pub fn materialize(history: &[Message], plan: &Plan) -> Vec<Message> {
    let mut messages = Vec::with_capacity(plan.len());
    for range in &plan.keep {
        for i in range.clone() {
            let message = &history[i];
            match message {
                Message::ToolResult {
                    call_id,
                    name,
                    output,
                    is_error,
                } if plan.elided.binary_search(&i).is_ok() => messages.push(Message::ToolResult {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    output: marker(name, output),
                    is_error: *is_error,
                }),
                other => messages.push(other.clone()),
            }
        }
    }
    messages
}

/// What the model reads in place of an old tool output.
pub fn marker(tool: &str, output: &str) -> String {
    let lines = output.lines().count();
    format!(
        "[older output of {tool} omitted to save context: {lines} lines, {} bytes; run the tool again if it is needed]",
        output.len()
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
