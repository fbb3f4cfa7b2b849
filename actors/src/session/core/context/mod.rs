//! The context window: what of a long conversation each model request
//! carries, so that a session never overflows.
//!
//! The history (what the store keeps and front ends show) only grows; the
//! model's view is derived from it for every request:
//!
//! 1. a summary, once compacted, stands for the older turns (it is appended
//!    to the system prompt; [`compaction`]);
//! 2. while the request fits under `auto_compact_at` of the budget, it is
//!    sent whole — decided on a free byte bound, so short sessions never
//!    load the tokenizer;
//! 3. otherwise old tool outputs become one-line markers (the cheap tier),
//!    then the `summarize` strategy asks for a compaction, and every
//!    strategy drops whole turns until the request fits ([`view`]); the
//!    recent turns are always sent.
//!
//! Token figures are the [`Ledger`]'s: each message counted once, scaled by
//! the calibration learnt from the provider's own counts.
//!
//! Pure like the rest of the core: it never does I/O and never awaits.

pub mod compaction;
pub mod custom;
pub mod ledger;
pub mod seqs;
pub mod state;
pub mod view;

use super::state::SessionState;
use crate::model::ModelRequest;
use crate::protocol::context::{CacheShare, ContextReport, InstructionSource};
use crate::protocol::{ContentBlock, ContextConfig, Message, PermissionMode, Strategy};
use crate::tokens::{self, Encoding};
use ledger::Ledger;
use view::{Limits, Plan};

/// What the model is told while the session is in plan mode.
pub const PLAN_MODE_PROMPT: &str = "\n\nPLAN MODE IS ON: the user wants a plan, not changes. Investigate with the read-only tools (read_file, list_dir, glob, grep; bash runs in a read-only sandbox) and do not edit, write or otherwise change anything: such calls are denied. End your turn with a concrete plan: the steps, the files involved, the risks. The user switches the mode when the plan should be carried out.";

/// The `[context]` keys in force: global, then the profile's, then the
/// session's.
pub fn config(state: &SessionState) -> ContextConfig {
    let mut config = state.config.context.clone();
    if let Some(profile) = state.current_model().and_then(|m| m.context.as_ref()) {
        config = config.overridden_by(profile);
    }
    if let Some(session) = &state.context.session {
        config = config.overridden_by(session);
    }
    config
}

/// The token budget of a request to `profile`: `[context] max_tokens`, else
/// its context window minus its output cap; `None` when neither is known.
pub fn limit_for(state: &SessionState, profile: &str, config: &ContextConfig) -> Option<u64> {
    if let Some(max) = config.max_tokens {
        return Some(max);
    }
    let info = state.config.models.iter().find(|m| m.name == profile)?;
    let window = info.context_window?;
    Some(window.saturating_sub(u64::from(info.max_output_tokens.unwrap_or(0))))
}

/// The budget of the session's requests.
pub fn limit(state: &SessionState) -> Option<u64> {
    limit_for(state, &state.model, &config(state))
}

/// The next request, or the compaction to run before it.
#[derive(Debug)]
pub enum Next {
    Call(Prepared),
    Compact(CompactionPlan),
}

/// A request ready to send.
#[derive(Debug)]
pub struct Prepared {
    pub request: ModelRequest,
    /// What the provider's count of the request calibrates, when it was
    /// counted: its fingerprint and our count of its messages.
    pub counted: Option<(u64, u64)>,
    /// What the user should be told about it.
    pub notices: Vec<String>,
}

/// A compaction to run: the summarising request and what it will cover.
#[derive(Debug)]
pub struct CompactionPlan {
    pub request: ModelRequest,
    pub first_kept: usize,
    pub first_new: usize,
    pub tokens_before: u64,
    pub focus: Option<String>,
    /// Estimated tokens of the conversation the request quotes.
    pub quoted_tokens: u64,
}

/// How one request was weighed.
struct Assessment {
    config: ContextConfig,
    start: usize,
    system_prompt: String,
    /// Calibrated tokens of the system prompt and of the tool definitions,
    /// the request's own overhead (the provider's template), and the
    /// summary appended to the system prompt.
    system_tokens: u64,
    tool_tokens: u64,
    overhead: u64,
    summary_tokens: u64,
    /// What calibration keys on (system prompt and tools), and our own
    /// count of the summary.
    fingerprint: u64,
    summary_raw: u64,
    limits: Limits,
    /// `None`: the byte bound fits, nothing was counted.
    weighed: Option<(Vec<u64>, Plan)>,
}

impl Assessment {
    fn fixed(&self) -> u64 {
        self.system_tokens + self.tool_tokens + self.overhead + self.summary_tokens
    }
}

/// Weigh the next request. `squeeze` shrinks the budget (after the
/// provider refused a request our estimate said would fit).
fn assess(state: &mut SessionState, squeeze: bool, force_count: bool) -> Assessment {
    let config = config(state);
    let encoding = Encoding::for_model(
        state
            .current_model()
            .map(|m| m.model.as_str())
            .unwrap_or_default(),
    );
    let ledger = &mut state.context.ledger;
    ledger.use_encoding(encoding);
    ledger.sync(&state.history);
    let start = state
        .context
        .summary
        .as_ref()
        .map_or(0, |s| s.first_kept.min(state.history.len()));
    let summary_block = state
        .context
        .summary
        .as_ref()
        .map(|summary| compaction::summary_block(&summary.text));
    // An agent made for planning says so in its own prompt.
    let planning_agent = state
        .current_agent()
        .is_some_and(|a| a.prompt.is_some() && a.permission_mode == Some(PermissionMode::Plan));
    let planning = (state.permissions.mode == PermissionMode::Plan && !planning_agent)
        .then_some(PLAN_MODE_PROMPT);
    let base = state
        .config
        .base_prompt(&state.agent, &state.server_prompts);
    let offered = state.offered_tools();
    let system_prompt = format!(
        "{base}{}{}",
        planning.unwrap_or_default(),
        summary_block.as_deref().unwrap_or_default()
    );
    let limit = limit(state).map(|l| if squeeze { l * 7 / 10 } else { l });
    let budget = limit.unwrap_or(u64::MAX);
    let trim_at = (budget as f64 * config.auto_compact_at()) as u64;
    let mut limits = Limits {
        budget,
        trim_at,
        max_messages: config.max_messages,
        min_recent_turns: config.min_recent_turns(),
        keep_tool_output_tokens: config.keep_tool_output_tokens(),
        strategy: match config.strategy() {
            Strategy::Summarize => Strategy::OldestFirst,
            other => other,
        },
    };
    let ledger = &mut state.context.ledger;
    let bound: u64 = ledger.bounds()[start..]
        .iter()
        .map(|b| u64::from(*b))
        .sum::<u64>()
        + system_prompt.len() as u64
        + tokens::tools_byte_bound(&offered)
        + tokens::REQUEST_OVERHEAD;
    let simple = state.context.custom.is_none()
        && config.max_messages.is_none()
        && !matches!(limits.strategy, Strategy::RecentTurns(_));
    if !force_count && (limit.is_none() || (simple && bound <= trim_at)) {
        return Assessment {
            config,
            start,
            system_prompt,
            system_tokens: 0,
            tool_tokens: 0,
            overhead: tokens::REQUEST_OVERHEAD,
            summary_tokens: 0,
            fingerprint: 0,
            summary_raw: 0,
            limits,
            weighed: None,
        };
    }
    // The fixed part: what the provider was seen to charge for this system
    // prompt and these tools, else our counts; shared out in proportion to
    // our counts for the breakdown.
    let fingerprint = Ledger::fingerprint(&base, &offered);
    let system_raw = ledger.system_tokens(&base);
    let tools_raw = ledger.tool_tokens(&offered);
    let counted = system_raw + tools_raw + tokens::REQUEST_OVERHEAD;
    let base_fixed = ledger.overhead(fingerprint, counted);
    let share = |raw: u64| (base_fixed as f64 * raw as f64 / counted as f64).round() as u64;
    let (system_tokens, tool_tokens) = (share(system_raw), share(tools_raw));
    let overhead = base_fixed.saturating_sub(system_tokens + tool_tokens);
    let summary_raw = summary_block
        .as_deref()
        .map_or(0, |block| ledger.raw_text_tokens(block));
    let summary_tokens = ledger.calibrated(summary_raw);
    let fixed = base_fixed + summary_tokens;
    limits.budget = budget.saturating_sub(fixed);
    limits.trim_at = trim_at.saturating_sub(fixed);
    let costs = ledger.estimates(&state.history, start);
    let plan = view::plan(&state.history, start, &costs, &limits);
    Assessment {
        config,
        start,
        system_prompt,
        system_tokens,
        tool_tokens,
        overhead,
        summary_tokens,
        fingerprint,
        summary_raw,
        limits,
        weighed: Some((costs, plan)),
    }
}

/// The next model request: the model's view of the conversation, or a
/// compaction first when the strategy is `summarize`, compaction is
/// allowed for this call and the view passed `auto_compact_at`.
pub fn prepare(state: &mut SessionState, allow_compaction: bool, squeeze: bool) -> Next {
    let assessment = assess(state, squeeze, false);
    let fixed = assessment.fixed();
    let Some((costs, plan)) = &assessment.weighed else {
        let request = ModelRequest {
            profile: state.model.clone(),
            cache_key: state.session_id.to_string(),
            max_output_tokens: None,
            system_prompt: assessment.system_prompt,
            messages: state.history[assessment.start..].to_vec(),
            tools: state.offered_tools(),
        };
        return Next::Call(Prepared {
            request,
            counted: None,
            notices: Vec::new(),
        });
    };
    let summarize =
        assessment.config.strategy() == Strategy::Summarize && state.context.custom.is_none();
    if summarize && allow_compaction && plan.trimmed_tokens > assessment.limits.trim_at {
        let keep_turns = assessment.config.min_recent_turns();
        // Only when the older turns are worth a model call: a tenth of the
        // budget at least (else leaving them out does as well).
        let worth = |end: usize| {
            let older: u64 = (assessment.start..end)
                .map(|i| match plan.elided.binary_search(&i) {
                    Ok(_) => view::MARKER_TOKENS,
                    Err(_) => costs[i - assessment.start],
                })
                .sum();
            older >= assessment.limits.budget / 10
        };
        if let Some(end) = compaction::span_end(&state.history, assessment.start, keep_turns)
            .filter(|end| worth(*end))
        {
            return Next::Compact(compaction_plan(
                state,
                &assessment,
                costs,
                (end, None),
                None,
                fixed + plan.trimmed_tokens,
            ));
        }
    }
    let mut notices = Vec::new();
    let mut system_prompt = assessment.system_prompt.clone();
    let messages = match &state.context.custom {
        Some(custom) => {
            let messages = custom
                .0
                .view(&state.history[assessment.start..], assessment.limits.budget);
            match view::check_pairs(&messages) {
                Ok(()) => messages,
                Err(breach) => {
                    notices.push(format!(
                        "The custom context strategy `{}` returned a view that breaks the tool-call pairing ({breach}); sent the oldest-first view instead.",
                        custom.0.name()
                    ));
                    view::materialize(&state.history, plan)
                }
            }
        }
        None => view::materialize(&state.history, plan),
    };
    let tokens = if state.context.custom.is_some() {
        let ledger = &state.context.ledger;
        messages
            .iter()
            .map(|m| ledger.message_tokens(m))
            .sum::<u64>()
    } else {
        plan.tokens
    };
    if plan.over_budget && state.context.custom.is_none() {
        let recent = assessment.config.min_recent_turns().max(1);
        if !assessment.config.preserve_system() {
            system_prompt.clear();
        }
        notices.push(format!(
            "The {recent} most recent turns alone take about {} tokens, more than the {} left for messages in this request; they are sent whole (`min_recent_turns`), and the provider may refuse the request.",
            plan.tokens, assessment.limits.budget
        ));
    }
    let correction = state.context.ledger.correction;
    let messages_raw = (tokens as f64 / correction).round() as u64 + assessment.summary_raw;
    Next::Call(Prepared {
        request: ModelRequest {
            profile: state.model.clone(),
            cache_key: state.session_id.to_string(),
            max_output_tokens: None,
            system_prompt,
            messages,
            tools: state.offered_tools(),
        },
        counted: Some((assessment.fingerprint, messages_raw)),
        notices,
    })
}

/// A compaction of everything before the recent turns (`/compact`, or
/// after the provider refused a request as too long); `None` when there is
/// nothing older than the turns kept verbatim.
/// `quote_at_most` caps the tokens of conversation the request quotes
/// (after the provider refused a summarising request as too long).
pub fn plan_compaction(
    state: &mut SessionState,
    focus: Option<&str>,
    quote_at_most: Option<u64>,
) -> Option<CompactionPlan> {
    let assessment = assess(state, false, true);
    let (costs, plan) = assessment.weighed.as_ref()?;
    let turns = view::turns(&state.history, assessment.start).len();
    // Keep the configured recent turns when there is anything older;
    // otherwise all but the latest turn.
    let keep = assessment
        .config
        .min_recent_turns()
        .min(turns.saturating_sub(1));
    let end = compaction::span_end(&state.history, assessment.start, keep)?;
    let before = assessment.fixed() + plan.trimmed_tokens;
    Some(compaction_plan(
        state,
        &assessment,
        costs,
        (end, quote_at_most),
        focus,
        before,
    ))
}

fn compaction_plan(
    state: &SessionState,
    assessment: &Assessment,
    costs: &[u64],
    (end, quote_at_most): (usize, Option<u64>),
    focus: Option<&str>,
    tokens_before: u64,
) -> CompactionPlan {
    let profile = assessment
        .config
        .compact_model
        .clone()
        .filter(|name| state.config.models.iter().any(|m| &m.name == name))
        .unwrap_or_else(|| state.model.clone());
    let prompt = &state.config.compact_prompt;
    let limit = limit_for(state, &profile, &assessment.config).unwrap_or(u64::MAX);
    let prompt_tokens = state.context.ledger.text_tokens(prompt) + 200;
    let budget = ((limit as f64 * 0.9) as u64)
        .saturating_sub(prompt_tokens)
        .min(quote_at_most.unwrap_or(u64::MAX));
    let (mut request, quoted_tokens) = compaction::request(
        profile,
        prompt,
        state.context.summary.as_ref().map(|s| s.text.as_str()),
        &state.history,
        (assessment.start, end),
        &costs[..end - assessment.start],
        budget,
        focus,
    );
    request.cache_key = state.session_id.to_string();
    CompactionPlan {
        request,
        first_kept: end,
        first_new: assessment.start,
        tokens_before,
        focus: focus.map(str::to_string),
        quoted_tokens,
    }
}

/// Estimated tokens of the next request once `summary` stands for
/// `history[..first_kept]`.
pub fn tokens_after(state: &mut SessionState) -> u64 {
    let assessment = assess(state, false, true);
    let plan_tokens = assessment.weighed.as_ref().map_or(0, |(_, p)| p.tokens);
    assessment.fixed() + plan_tokens
}

/// `/context`: where the budget of the next request goes.
pub fn report(state: &mut SessionState) -> ContextReport {
    let assessment = assess(state, false, true);
    let instruction_files: Vec<InstructionSource> = state
        .config
        .instructions
        .files
        .iter()
        .map(|file| InstructionSource {
            path: file.path.clone(),
            tokens: state.context.ledger.text_tokens(&file.block()),
            truncated: file.truncated_from.is_some(),
        })
        .collect();
    let instructions = instruction_files
        .iter()
        .map(|f| f.tokens)
        .sum::<u64>()
        .min(assessment.system_tokens);
    let fixed_system = assessment.system_tokens - instructions;
    let mut report = ContextReport {
        system_prompt: fixed_system + assessment.overhead,
        instructions,
        instruction_files,
        tool_definitions: assessment.tool_tokens,
        messages: assessment.summary_tokens,
        strategy: match &state.context.custom {
            Some(custom) => custom.0.name(),
            None => assessment.config.strategy().to_string(),
        },
        history_messages: state.history.len(),
        compactions: state.context.compactions,
        calibration: state.context.ledger.correction,
        limit: limit(state),
        cache: CacheShare::of(&state.usage.last_turn, &state.usage.total),
        ..Default::default()
    };
    if let Some((costs, plan)) = &assessment.weighed {
        for range in &plan.keep {
            for i in range.clone() {
                let elided = plan.elided.binary_search(&i).is_ok();
                let cost = if elided {
                    view::MARKER_TOKENS
                } else {
                    costs[i - assessment.start]
                };
                match &state.history[i] {
                    Message::ToolResult { .. } => report.tool_outputs += cost,
                    Message::Assistant { content, .. } => {
                        let thinking = content
                            .iter()
                            .filter_map(|block| match block {
                                ContentBlock::Thinking {
                                    thinking,
                                    signature: Some(_),
                                } => Some(state.context.ledger.text_tokens(thinking)),
                                _ => None,
                            })
                            .sum::<u64>()
                            .min(cost);
                        report.thinking += thinking;
                        report.messages += cost - thinking;
                    }
                    Message::User { .. } => report.messages += cost,
                }
            }
        }
        report.sent_messages = plan.len();
        report.elided_tool_outputs = plan.elided.len();
    }
    report.used = report.system_prompt
        + report.instructions
        + report.tool_definitions
        + report.messages
        + report.thinking
        + report.tool_outputs;
    report.free = report.limit.map(|l| l.saturating_sub(report.used));
    report
}

#[cfg(test)]
mod tests;
