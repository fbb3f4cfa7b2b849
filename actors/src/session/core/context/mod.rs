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
//!    then the `summarize` strategy asks for a compaction (when the older
//!    turns are worth a model call), and every strategy drops whole turns
//!    until the request fits — the recent turns too when they do not fit,
//!    and at last the current turn's own tool outputs are shortened
//!    ([`view`]);
//! 4. a request that cannot fit even so (the newest message alone is too
//!    long) is never sent: the turn ends saying so, with the sizes.
//!
//! Token figures are the [`Ledger`]'s: each message counted once, scaled by
//! the calibration learnt from the provider's own counts; a `safety_margin`
//! of the budget is held back for what calibration cannot know. When a
//! provider refuses a request as too long and states its figures, they win
//! ([`learn_refusal`]): its count calibrates the ledger and its window
//! bounds every later request.
//!
//! Pure like the rest of the core: it never does I/O and never awaits.

pub mod compaction;
pub mod custom;
pub mod ledger;
pub mod seqs;
pub mod state;
pub mod view;

use super::state::SessionState;
use crate::model::{ContextRefusal, ModelRequest};
use crate::protocol::context::{CacheShare, ContextReport, InstructionSource};
use crate::protocol::{ContentBlock, ContextConfig, Message, PermissionMode, Strategy};
use crate::tokens::{self, Encoding};
use ledger::{Counted, Ledger, Sent};
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
/// its context window minus its output cap — and never more than its
/// provider said it takes; `None` when none of these is known.
pub fn limit_for(state: &SessionState, profile: &str, config: &ContextConfig) -> Option<u64> {
    let configured = config.max_tokens.or_else(|| {
        let info = state.config.models.iter().find(|m| m.name == profile)?;
        let window = info.context_window?;
        Some(window.saturating_sub(u64::from(info.max_output_tokens.unwrap_or(0))))
    });
    let learnt = state.context.learnt.input_budgets.get(profile).copied();
    match (configured, learnt) {
        (Some(configured), Some(learnt)) => Some(configured.min(learnt)),
        (configured, learnt) => configured.or(learnt),
    }
}

/// The budget of the session's requests.
pub fn limit(state: &SessionState) -> Option<u64> {
    limit_for(state, &state.model, &config(state))
}

/// The output cap of `profile` (0 when it sets none).
fn output_cap(state: &SessionState, profile: &str) -> u64 {
    state
        .config
        .models
        .iter()
        .find(|m| m.name == profile)
        .and_then(|m| m.max_output_tokens)
        .map_or(0, u64::from)
}

/// The most a summary may take: a tenth of the budget (at least 128
/// tokens), and never more than the profile's output cap.
pub fn summary_cap(limit: u64, profile_cap: u64) -> u64 {
    let cap = (limit / 10).max(128);
    if profile_cap > 0 {
        cap.min(profile_cap)
    } else {
        cap
    }
}

/// The provider took a request to `profile` that it counted `tokens` long.
pub fn learn_accepted(state: &mut SessionState, profile: &str, tokens: u64) {
    let largest = state
        .context
        .learnt
        .accepted
        .entry(profile.to_string())
        .or_default();
    *largest = (*largest).max(tokens);
}

/// The provider refused the last request to `profile` as too long: what it
/// said wins over our estimates. Its window bounds every later request to
/// the profile, and its count of the request calibrates the ledger
/// (`counted`: what that request's count calibrates; `None` when it was not
/// counted, and then the history — unchanged since — is counted now).
/// Whether it said anything to learn from.
pub fn learn_refusal(
    state: &mut SessionState,
    profile: &str,
    refusal: &ContextRefusal,
    counted: Option<Counted>,
) -> bool {
    let stated = refusal.input_budget(output_cap(state, profile));
    let said = refusal.input_tokens.is_some() || stated.is_some();
    // What the refused request was by our count (the history is as it was
    // when the request was made).
    let assessment = assess(state, true);
    let estimate = assessment.fixed() + assessment.weighed.as_ref().map_or(0, |(_, p)| p.tokens);
    if let Some(tokens) = refusal.input_tokens {
        let counted = counted.unwrap_or_else(|| {
            let messages = assessment.weighed.as_ref().map_or(0, |(_, p)| p.tokens);
            assessment.counted(raw_messages(state, &assessment, messages))
        });
        state.context.ledger.observe(counted, tokens);
    }
    // Said or not, the window is smaller than that request. Without a
    // figure: the largest request the provider took, or a tenth less than
    // our count of this one when it took none.
    let accepted = state.context.learnt.accepted.get(profile).copied();
    let budget = stated.or(accepted).unwrap_or(estimate - estimate / 10);
    let budgets = &mut state.context.learnt.input_budgets;
    let known = budgets.entry(profile.to_string()).or_insert(budget);
    *known = (*known).min(budget);
    said
}

/// Our uncalibrated count of a request's messages and summary, from its
/// calibrated estimate: what the provider's count of it calibrates.
fn raw_messages(state: &SessionState, assessment: &Assessment, tokens: u64) -> u64 {
    let correction = state.context.ledger.correction;
    (tokens as f64 / correction).round() as u64 + assessment.summary_raw
}

/// The next request, the compaction to run before it, or why nothing can
/// be sent.
#[derive(Debug)]
pub enum Next {
    Call(Prepared),
    Compact(CompactionPlan),
    /// The current turn cannot fit even alone, its tool outputs
    /// shortened: what to tell the user (the sizes, and the ways out).
    TooLong(String),
}

/// A request ready to send.
#[derive(Debug)]
pub struct Prepared {
    pub request: ModelRequest,
    /// What the provider's count of the request calibrates, when it was
    /// counted.
    pub counted: Option<Counted>,
    /// What the user should be told about it, once per turn.
    pub notices: Vec<String>,
    /// What the user should be told about the session, once (the tool
    /// definitions crowd the window).
    pub warning: Option<String>,
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

/// Model calls between two automatic compactions, at least: summaries add
/// a tenth to a session's calls at most (in between, older turns are left
/// out of the view, which is free, and the next summary covers them).
pub const CALLS_PER_COMPACTION: u64 = 10;

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
    /// Our uncalibrated count of the system prompt, tools and request
    /// overhead.
    fixed_raw: u64,
    /// What tells the summary apart (0: none).
    summary_key: u64,
    summary_raw: u64,
    /// The budget before the fixed part and the margin came off.
    limit: Option<u64>,
    /// Tokens held back (`safety_margin` of what only we counted).
    margin: u64,
    limits: Limits,
    /// `None`: the byte bound fits, nothing was counted.
    weighed: Option<(Vec<u64>, Plan)>,
}

impl Assessment {
    /// What the provider's count of this request calibrates, `messages`
    /// being our uncalibrated count of its messages and summary.
    fn counted(&self, messages: u64) -> Counted {
        let view = self.weighed.as_ref().map_or_else(Vec::new, |(_, plan)| {
            plan.keep
                .iter()
                .flat_map(|range| range.clone())
                .map(|i| {
                    let shortened = plan.shortened.iter().find(|(at, _)| *at == i);
                    let sent = match (plan.elided.binary_search(&i), shortened) {
                        (Ok(_), _) => Sent::Marker,
                        (Err(_), Some((_, keep))) => Sent::Shortened(*keep),
                        (Err(_), None) => Sent::Whole,
                    };
                    (i, sent)
                })
                .collect()
        });
        Counted {
            fingerprint: self.fingerprint,
            summary: self.summary_key,
            fixed: self.fixed_raw,
            messages,
            summary_tokens: self.summary_raw,
            view,
            uncounted: false,
        }
    }

    /// What the provider's count of this request calibrates when nothing
    /// of it was counted (the byte bound fitted): it carried
    /// `history[start..end]` whole.
    fn uncounted(&self, end: usize) -> Counted {
        Counted {
            fingerprint: self.fingerprint,
            summary: self.summary_key,
            fixed: 0,
            messages: 0,
            summary_tokens: 0,
            view: (self.start..end).map(|i| (i, Sent::Whole)).collect(),
            uncounted: true,
        }
    }

    fn fixed(&self) -> u64 {
        self.system_tokens + self.tool_tokens + self.overhead + self.summary_tokens
    }
}

/// Weigh the next request (`force_count`: count even when the free byte
/// bound fits).
fn assess(state: &mut SessionState, force_count: bool) -> Assessment {
    let config = config(state);
    let encoding = Encoding::for_model(
        state
            .current_model()
            .map(|m| m.model.as_str())
            .unwrap_or_default(),
    );
    let ledger = &mut state.context.ledger;
    ledger.use_profile(&state.model);
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
    let base = state.base_prompt().into_owned();
    let offered = state.offered_tools();
    let system_prompt = format!(
        "{base}{}{}",
        planning.unwrap_or_default(),
        summary_block.as_deref().unwrap_or_default()
    );
    let full = limit(state);
    let limit = full;
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
        anchors: state.context.learnt.anchors,
    };
    let fingerprint = Ledger::fingerprint(&base, &offered);
    let summary_key = Ledger::summary_key(state.context.summary.as_ref().map(|s| s.text.as_str()));
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
            fingerprint,
            fixed_raw: 0,
            summary_key,
            summary_raw: 0,
            limit: full,
            margin: 0,
            limits,
            weighed: None,
        };
    }
    // The fixed part: what the provider was seen to charge for this system
    // prompt and these tools, else our counts; shared out in proportion to
    // our counts for the breakdown.
    let system_raw = ledger.system_tokens(&base);
    let tools_raw = ledger.tool_tokens(&offered);
    let counted = system_raw + tools_raw + tokens::REQUEST_OVERHEAD;
    let summary_raw = summary_block
        .as_deref()
        .map_or(0, |block| ledger.raw_text_tokens(block));
    // What the provider counted of requests made before anything was
    // counted is learnt now, first.
    ledger.settle(
        &state.history,
        (fingerprint, counted),
        (summary_key, summary_raw),
    );
    let base_fixed = ledger.overhead(fingerprint, counted);
    let share = |raw: u64| (base_fixed as f64 * raw as f64 / counted as f64).round() as u64;
    let (system_tokens, tool_tokens) = (share(system_raw), share(tools_raw));
    let overhead = base_fixed.saturating_sub(system_tokens + tool_tokens);
    let summary_tokens = ledger.calibrated(summary_raw);
    // The safety margin covers what only we counted: the messages, the
    // summary, and the system prompt and tools until the provider has
    // counted them.
    let share = config.safety_margin();
    let ours = |tokens: u64| tokens + (tokens as f64 * share).ceil() as u64;
    let fixed = if ledger.knows_overhead(fingerprint) {
        base_fixed + ours(summary_tokens)
    } else {
        ours(base_fixed + summary_tokens)
    };
    let room = |total: u64| (total.saturating_sub(fixed) as f64 / (1.0 + share)) as u64;
    limits.budget = room(budget);
    limits.trim_at = room(trim_at);
    let margin = limit.map_or(0, |l| {
        l.saturating_sub(base_fixed + summary_tokens + limits.budget)
    });
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
        fixed_raw: counted,
        summary_key,
        summary_raw,
        limit: full,
        margin,
        limits,
        weighed: Some((costs, plan)),
    }
}

/// The next model request: the model's view of the conversation, or a
/// compaction first when the strategy is `summarize`, compaction is
/// allowed for this call, the view passed `auto_compact_at` and the older
/// turns are worth summarising — or, when even the current turn alone
/// cannot fit, why nothing is sent.
pub fn prepare(state: &mut SessionState, allow_compaction: bool) -> Next {
    let assessment = assess(state, false);
    let warning = tools_warning(state, &assessment);
    let fixed = assessment.fixed();
    let Some((costs, plan)) = &assessment.weighed else {
        let counted = assessment.uncounted(state.history.len());
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
            counted: Some(counted),
            notices: Vec::new(),
            warning,
        });
    };
    let summarize =
        assessment.config.strategy() == Strategy::Summarize && state.context.custom.is_none();
    let due = state
        .context
        .learnt
        .compacted_at_call
        .is_none_or(|at| state.usage.model_calls >= at + CALLS_PER_COMPACTION);
    if summarize && allow_compaction && due && plan.trimmed_tokens > assessment.limits.trim_at {
        let wanted = assessment.config.min_recent_turns();
        let end = recent_span_end(state, &assessment, costs, plan, wanted);
        let cap = summary_cap(
            assessment.limit.unwrap_or(u64::MAX),
            output_cap(state, &state.model),
        );
        if let Some(end) = end.filter(|end| worth_summarising(&assessment, costs, plan, *end, cap))
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
    // Without the system prompt (`preserve_system = false`), the room it
    // took may be what the current turn needs.
    let drop_system = plan.over_budget
        && !assessment.config.preserve_system()
        && plan.tokens <= assessment.limits.budget + assessment.system_tokens;
    if plan.over_budget && state.context.custom.is_none() && !drop_system {
        return Next::TooLong(too_long(state, &assessment, plan));
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
                    view::materialize(&state.history, plan, assessment.start, costs)
                }
            }
        }
        None => fit_shortened(
            &state.context.ledger,
            &state.history,
            view::materialize(&state.history, plan, assessment.start, costs),
            plan,
            costs,
            assessment.start,
        ),
    };
    let tokens = if state.context.custom.is_some() || !plan.shortened.is_empty() {
        let ledger = &state.context.ledger;
        messages
            .iter()
            .map(|m| ledger.message_tokens(m))
            .sum::<u64>()
    } else {
        plan.tokens
    };
    if drop_system {
        system_prompt.clear();
        notices.push(
            "The current turn fits only without the system prompt (`preserve_system = false`): it is left out of this request.".to_string(),
        );
    }
    if !plan.shortened.is_empty() {
        notices.push(format!(
            "The current turn alone is longer than the context window allows: {} shortened to {} (head and tail kept) for this request; the whole output stays stored.",
            crate::text::count(plan.shortened.len() as u64, "tool output"),
            if plan.shortened.len() == 1 {
                "fit"
            } else {
                "fit, each"
            }
        ));
    }
    let messages_raw = raw_messages(state, &assessment, tokens);
    state.context.learnt.anchors = plan.anchors;
    Next::Call(Prepared {
        request: ModelRequest {
            profile: state.model.clone(),
            cache_key: state.session_id.to_string(),
            max_output_tokens: None,
            system_prompt,
            messages,
            tools: state.offered_tools(),
        },
        counted: Some(Counted {
            // A custom strategy's view is not the plan's: nothing of it is
            // learnt message by message.
            view: if state.context.custom.is_some() {
                Vec::new()
            } else {
                assessment.counted(0).view
            },
            ..assessment.counted(messages_raw)
        }),
        notices,
        warning,
    })
}

/// The shortened tool outputs of `messages` (materialised from `plan`) as
/// they really count: a cut made by the bytes per token of the whole output
/// comes out long where the output is denser than its average, so such an
/// output is cut again from the original, once, by what the first cut
/// taught.
fn fit_shortened(
    ledger: &Ledger,
    history: &[Message],
    mut messages: Vec<Message>,
    plan: &view::Plan,
    costs: &[u64],
    start: usize,
) -> Vec<Message> {
    let positions: Vec<usize> = plan.keep.iter().flat_map(|range| range.clone()).collect();
    for (index, keep) in &plan.shortened {
        let (Some(at), Some(Message::ToolResult { output, .. })) = (
            positions.iter().position(|i| i == index),
            history.get(*index),
        ) else {
            continue;
        };
        let actual = ledger.message_tokens(&messages[at]);
        if actual > *keep {
            let cost = costs[*index - start].max(1);
            let denser =
                (u128::from(cost) * u128::from(actual) / u128::from((*keep).max(1))) as u64;
            if let Message::ToolResult { output: sent, .. } = &mut messages[at] {
                *sent = view::shorten(output, *keep, denser);
            }
        }
    }
    messages
}

/// Where a summary should end: before the `min_recent_turns` most recent
/// turns when they take at most half of the budget (room for the summary
/// and for the conversation to grow), else before fewer of them, down to
/// the current turn alone; `None` when nothing is older.
fn recent_span_end(
    state: &SessionState,
    assessment: &Assessment,
    costs: &[u64],
    plan: &view::Plan,
    wanted: usize,
) -> Option<usize> {
    let turns = view::turns(&state.history, assessment.start);
    let cost = |i: usize| match plan.elided.binary_search(&i) {
        Ok(_) => view::MARKER_TOKENS,
        Err(_) => costs[i - assessment.start],
    };
    let wanted = wanted.max(1);
    let mut keep = 1;
    let mut recent: u64 = turns.last()?.clone().map(cost).sum();
    for turn in turns.iter().rev().skip(1).take(wanted - 1) {
        let more: u64 = turn.clone().map(cost).sum();
        if recent + more > assessment.limits.budget / 2 {
            break;
        }
        recent += more;
        keep += 1;
    }
    compaction::span_end(&state.history, assessment.start, keep)
}

/// Whether the turns before `end` are worth a model call: what of them the
/// view still carries must cost three summaries at least, and half the
/// budget for messages — so that a compaction is followed by many calls
/// without one (turns the view already leaves out cost the request
/// nothing, and leaving them out is free) — and a summary must leave room:
/// at most a third of the budget for messages (in a window the tool
/// definitions nearly fill, the turns are left out instead).
fn worth_summarising(
    assessment: &Assessment,
    costs: &[u64],
    plan: &view::Plan,
    end: usize,
    cap: u64,
) -> bool {
    let older: u64 = plan
        .keep
        .iter()
        .flat_map(|range| range.start..range.end.min(end))
        .map(|i| match plan.elided.binary_search(&i) {
            Ok(_) => view::MARKER_TOKENS,
            Err(_) => costs[i - assessment.start],
        })
        .sum();
    3 * cap <= assessment.limits.budget && older >= (3 * cap).max(assessment.limits.budget / 2)
}

/// What the user is told when the current turn cannot fit: the sizes and
/// the ways out.
fn too_long(state: &SessionState, assessment: &Assessment, plan: &view::Plan) -> String {
    let limit = assessment.limit.unwrap_or(0);
    let first_call = state.turn.as_ref().is_none_or(|t| t.steps == 0);
    let what = if first_call {
        "This message does not fit the model's context window"
    } else {
        "This turn has grown too long for the model's context window"
    };
    let tokens = if first_call {
        "the message"
    } else {
        "the turn so far (tool outputs shortened)"
    };
    format!(
        "{what}, so nothing was sent: the system prompt takes about {} tokens, the tool definitions {}, {tokens} {} — about {} in all, and with a safety margin of {} (tokenizers differ) that is more than the {limit}-token budget of profile `{}`. Ways out: a profile with a larger window (`/model NAME`), fewer tools (an agent with `tools = [...]`, or `disallowed_tools`), or a shorter message.",
        assessment.system_tokens + assessment.overhead + assessment.summary_tokens,
        assessment.tool_tokens,
        plan.tokens,
        assessment.fixed() + plan.tokens,
        format_args!("{:.0} %", assessment.config.safety_margin() * 100.0),
        state.model,
    )
}

/// Said once a session: the tool definitions take more than half of the
/// window, with the ways out.
fn tools_warning(state: &mut SessionState, assessment: &Assessment) -> Option<String> {
    if state.context.learnt.tools_warned {
        return None;
    }
    let text = tools_crowd(state, assessment)?;
    state.context.learnt.tools_warned = true;
    Some(text)
}

/// Whether the tool definitions take more than half of the budget, and
/// then what to say about it.
fn tools_crowd(state: &mut SessionState, assessment: &Assessment) -> Option<String> {
    let limit = assessment.limit?;
    let offered = state.offered_tools();
    // The byte bound is free; the count only when the bound is over half.
    if tokens::tools_byte_bound(&offered) <= limit / 2 {
        return None;
    }
    // The provider's count when it has counted these tools, else ours.
    let tools = match assessment.tool_tokens {
        0 => {
            let ledger = &mut state.context.ledger;
            let raw = ledger.tool_tokens(&offered);
            ledger.calibrated(raw)
        }
        counted => counted,
    };
    (tools > limit / 2).then(|| {
        format!(
            "The {} tool definitions take about {tools} tokens, more than half of the {limit}-token budget of profile `{}`: little is left for the conversation, which will be summarised or cut often. Ways out: a profile with a larger window (`/model NAME`), or fewer tools (an agent with `tools = [...]`, `disallowed_tools`, or fewer MCP servers).",
            offered.len(),
            state.model
        )
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
    let assessment = assess(state, true);
    let (costs, plan) = assessment.weighed.as_ref()?;
    let turns = view::turns(&state.history, assessment.start).len();
    // The recent turns that fit when there is anything older; otherwise
    // all but the latest turn.
    let end = if turns > 1 {
        let wanted = assessment.config.min_recent_turns().min(turns - 1);
        recent_span_end(state, &assessment, costs, plan, wanted)?
    } else {
        return None;
    };
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
    let cap = summary_cap(limit, output_cap(state, &profile));
    let prompt_tokens = state.context.ledger.text_tokens(prompt) + 200;
    let budget = ((limit as f64 * (1.0 - assessment.config.safety_margin())) as u64)
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
    request.max_output_tokens = Some(u32::try_from(cap).unwrap_or(u32::MAX));
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
    let assessment = assess(state, true);
    let plan_tokens = assessment.weighed.as_ref().map_or(0, |(_, p)| p.tokens);
    assessment.fixed() + plan_tokens
}

/// `/context`: where the budget of the next request goes.
pub fn report(state: &mut SessionState) -> ContextReport {
    let assessment = assess(state, true);
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
        limit: assessment.limit,
        safety_margin: assessment.margin,
        learnt_limit: state
            .context
            .learnt
            .input_budgets
            .get(&state.model)
            .copied(),
        warnings: tools_crowd(state, &assessment).into_iter().collect(),
        cache: CacheShare::of(&state.usage.last_turn, &state.usage.total),
        ..Default::default()
    };
    if let Some((costs, plan)) = &assessment.weighed {
        for range in &plan.keep {
            for i in range.clone() {
                let elided = plan.elided.binary_search(&i).is_ok();
                let shortened = plan.shortened.iter().find(|(at, _)| *at == i);
                let cost = match (elided, shortened) {
                    (true, _) => view::MARKER_TOKENS,
                    (false, Some((_, keep))) => *keep,
                    (false, None) => costs[i - assessment.start],
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
