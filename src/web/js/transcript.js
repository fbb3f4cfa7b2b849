// The conversation: each event of the selected session, with the same
// information as the terminal chat (src/frontend/output/render.rs) —
// session start, command replies and notices, compaction, the user's
// messages, each turn's result line in words ("Done · 3.2 s · 1,234
// tokens · $0.004"), a failed turn's error once, as a card with Retry —
// and the others handed to the modules that draw them (assistant.js,
// tools.js, approvals.js).
//
// Never: put text from the server or the user into the page as HTML —
// only as text (el, line) — except the model's Markdown, through
// markdown.js.

import { findSession, state } from './state.js';
import { $, append, batch, el, line } from './dom.js';
import { fullTime, thousands } from './format.js';
import { finishLive, renderAssistant, renderStreamEvent } from './assistant.js';
import { renderMarkdown } from './markdown.js';
import { renderToolResult } from './tools.js';
import { allInput, contextFill, costOf, renderStatusOf, setContext } from './status.js';
import { sendInput } from './composer.js';
import { endApprovals, renderApprovalRequest, resolveApproval } from './approvals.js';
import { rewindButton } from './rewind.js';
import { messageImages } from './images.js';
import { renderPlan } from './plan.js';

export function renderEvent(view, event) {
  switch (event.type) {
    case 'system':
      return renderSystem(view, event);
    case 'user':
      return renderUser(view, event);
    case 'stream_event':
      return renderStreamEvent(view, event);
    case 'assistant':
      return renderAssistant(view, event);
    case 'tool_result':
      return renderToolResult(event);
    case 'approval_request':
      return renderApprovalRequest(view, event);
    case 'result':
      return renderResult(view, event);
    case 'error':
      view.errorShown = true; // the turn's `result` then says "Failed" without repeating it
      return append(errorCard(view, event.kind, event.message, event));
    default:
      return undefined; // a newer server's event type: nothing to show
  }
}

/** `system`: session start, command replies and notices. */
function renderSystem(view, event) {
  const data = event.data || {};
  let text = event.message || '';
  let dim = true;
  switch (event.subtype) {
    case 'compacted':
      return renderCompacted(view, event);
    case 'plan':
      // The panel shows it; the tool call in the conversation says when.
      view.plan = Array.isArray(data.todos) ? data.todos : [];
      renderPlan();
      return undefined;
    case 'cleared':
      view.plan = [];
      renderPlan();
      dim = false; // a command's answer
      break;
    case 'context': {
      // `/context`: a table, kept as the session aligned it.
      if (typeof data.used === 'number') setContext(view, { used: data.used, limit: data.limit });
      const node = el('pre', { class: 'notice reply context-report', 'data-testid': 'notice', title: fullTime(event.at), text });
      node.setAttribute('data-subtype', 'context');
      return append(node);
    }
    case 'usage':
      if (data.context) setContext(view, data.context);
      if (typeof data.cost_usd === 'number') {
        view.reportedCost = { usd: data.cost_usd, turns: view.turnsByProfile.length };
        renderStatusOf(view);
      }
      dim = false;
      break;
    case 'session_started': {
      const tools = Array.isArray(data.tools) ? data.tools.length : 0;
      if (data.permission_mode) view.mode = String(data.permission_mode);
      if (data.model) view.model = String(data.model);
      view.agent = data.agent ? String(data.agent) : 'build';
      view.commands = Array.isArray(data.commands) ? data.commands : [];
      renderStatusOf(view);
      text = '\u25cf session ' + event.session_id + ' \u00b7 model ' + (data.model || '?') + ' \u00b7 ' + tools + ' tools' +
        (data.agent && data.agent !== 'build' ? ' \u00b7 agent ' + data.agent : '') +
        (data.permission_mode ? ' \u00b7 mode ' + data.permission_mode : '') +
        (data.sandboxed === false ? ' \u00b7 commands NOT sandboxed' : '') +
        (Array.isArray(data.instructions) && data.instructions.length ? ' \u00b7 instructions ' + data.instructions.join(', ') : '') +
        (data.resumed ? ' \u00b7 resumed' : '');
      break;
    }
    case 'approval_resolved':
      // The card shows how it ended; a line only when there is no card.
      if (resolveApproval(view, event)) return undefined;
      text = '\u25cf ' + text;
      break;
    case 'mode':
      if (data.mode) view.mode = String(data.mode);
      renderStatusOf(view);
      dim = false;
      break;
    case 'agent':
      if (data.agent) view.agent = String(data.agent);
      if (data.model) view.model = String(data.model);
      if (data.permission_mode) view.mode = String(data.permission_mode);
      renderStatusOf(view);
      dim = false;
      break;
    case 'model_switched':
      if (data.model) view.model = String(data.model);
      renderStatusOf(view);
      dim = false;
      break;
    case 'retrying':
    case 'compacting':
    case 'notice':
    case 'mcp_server_status':
    case 'mcp_waiting':
    case 'owner_changed':
      text = '\u25cf ' + text;
      break;
    default:
      dim = false; // a command's answer: shown like normal text
  }
  // A command's answer keeps its line breaks and alignment, as the terminal shows it.
  const node = line('notice' + (dim ? ' dim' : ' reply'), 'notice', text, event);
  node.setAttribute('data-subtype', event.subtype || '');
  append(node);
}

/**
 * `compacted`: a divider where a summary began to stand for the turns above
 * it in the model's view (they stay here, and stored); the summary on demand.
 */
function renderCompacted(view, event) {
  const data = event.data || {};
  const known = typeof data.tokens_before === 'number' && typeof data.tokens_after === 'number';
  const why = { auto: 'auto', command: '/compact', overflow: 'request too long' }[data.trigger] || data.trigger;
  const text = known
    ? 'Conversation compacted here: ~' + thousands(data.tokens_before) + ' \u2192 ' + thousands(data.tokens_after) +
      ' tokens' + (why ? ' (' + why + ')' : '')
    : event.message || 'Conversation compacted here';
  const node = el(
    'div',
    { class: 'compacted', 'data-testid': 'compacted', 'data-trigger': data.trigger || '', title: fullTime(event.at) },
    el('div', { class: 'compacted-line' }, el('span', { 'data-testid': 'compacted-text', text })),
  );
  if (typeof data.summary === 'string' && data.summary) {
    node.append(
      el(
        'details',
        { class: 'compacted-summary', 'data-testid': 'compacted-summary' },
        el('summary', { text: 'Summary the model sees in place of the earlier turns' }),
        el('div', { class: 'markdown' }, renderMarkdown(data.summary)),
      ),
    );
  }
  if (known && view.context) setContext(view, { used: data.tokens_after, limit: view.context.limit });
  append(node);
}

/**
 * `user`: what was typed, the images it carries as thumbnails, and for a
 * command that runs as a query (`/init`, a custom command such as
 * `/review src/main.rs`) what the model received instead, on demand.
 */
function renderUser(view, event) {
  finishLive(view);
  view.lastQuery = typeof event.text === 'string' ? event.text : view.lastQuery;
  view.errorShown = false;
  const node = line('msg user', 'message-user', event.text, event);
  if (typeof event.seq === 'number') node.setAttribute('data-seq', String(event.seq));
  const images = Array.isArray(event.images) ? event.images : [];
  if (images.length) node.append(messageImages(images));
  if (typeof event.prompt === 'string' && event.prompt) {
    node.append(
      el('details', { class: 'user-prompt', 'data-testid': 'message-prompt' },
        el('summary', { text: 'What the model received' }),
        el('pre', { text: event.prompt })),
    );
  }
  // Who sent it: the name of the API token, when one did.
  if (typeof event.by === 'string' && event.by) {
    node.append(el('span', { class: 'msg-by dim', 'data-testid': 'message-by', text: 'by ' + event.by }));
  }
  if (typeof event.seq === 'number') node.append(rewindButton(view, event));
  append(node);
}

/**
 * A failed turn's error (an `error` event, or a `result` that failed with
 * none before it): what went wrong, and Retry, which sends the last query
 * of the session again.
 */
function errorCard(view, kind, message, event) {
  const node = el('div', { class: 'error error-card', 'data-testid': 'error', 'data-kind': kind || '', title: fullTime(event.at) });
  node.append(el('div', { class: 'error-text', 'data-testid': 'error-text', text: '\u2717 Error' + (kind ? ' (' + kind + ')' : '') + ': ' + (message || 'the turn failed') }));
  const query = view.lastQuery;
  if (typeof query === 'string' && query.trim() !== '') {
    const retry = el('button', {
      type: 'button',
      class: 'small',
      'data-testid': 'retry',
      title: 'Send the last message again: ' + query,
      text: 'Retry',
      onclick: async () => {
        retry.disabled = true;
        if (!(await sendInput(query))) retry.disabled = false;
      },
    });
    node.append(el('div', { class: 'error-actions' }, retry));
  }
  return node;
}

/** Why a turn ended, in words (the stop reasons of actors/src/protocol/content.rs). */
const STOP_WORDS = {
  end_turn: 'Done',
  cancelled: 'Stopped',
  max_steps: 'Stopped at the step limit',
  max_tokens: 'Stopped at the output token limit',
  error: 'Failed',
};

function stopWords(reason) {
  if (!reason) return 'Ended';
  if (STOP_WORDS[reason]) return STOP_WORDS[reason];
  const words = String(reason).replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** US dollars: $1.23, $0.042, $0.0081. */
function dollars(usd) {
  return '$' + (usd >= 1 ? usd.toFixed(2) : usd >= 0.01 ? usd.toFixed(3) : usd.toFixed(4));
}

/**
 * `result`: the turn's end in words, its duration, tokens and cost (at
 * the prices of the profile it ran on, when it has them); steps, the
 * tokens in and out, the cache's share and the context in its tooltip.
 * Adds to the usage totals. A failed turn's error shows once: the `error`
 * event's card, or a card from the result's own message when none came.
 */
function renderResult(view, event) {
  finishLive(view, event.stop_reason || 'ended');
  endApprovals(view, event.turn_id);
  const usage = event.usage || {};
  const input = allInput(usage);
  view.usage.input += input;
  view.usage.output += usage.output_tokens || 0;
  view.usage.cacheRead += usage.cache_read_input_tokens || 0;
  view.usage.cacheWritten += usage.cache_creation_input_tokens || 0;
  view.usage.turns += 1;
  const session = findSession(view.sessionId);
  const profile = view.model || (session && session.model);
  view.turnsByProfile.push([profile, usage]);
  if (event.context) setContext(view, event.context);
  renderStatusOf(view);

  if (event.stop_reason === 'error' && !view.errorShown) append(errorCard(view, null, event.error, event));
  view.errorShown = false;

  const steps = event.steps || 0;
  const fill = event.context ? contextFill(event.context) : null;
  const cached = usage.cache_read_input_tokens && input ? ' (' + Math.round((usage.cache_read_input_tokens * 100) / input) + '% cached)' : '';
  const prices = profile ? state.prices.get(profile) : null;
  const head = stopWords(event.stop_reason);
  const text = head + ' \u00b7 ' + ((event.duration_ms || 0) / 1000).toFixed(1) + ' s \u00b7 ' +
    thousands(input + (usage.output_tokens || 0)) + ' tokens' + (prices && input + (usage.output_tokens || 0) > 0 ? ' \u00b7 ' + dollars(costOf(prices, usage)) : '');
  const node = line('result-line ' + (event.stop_reason || ''), 'result-line', text, event);
  node.title = head + ' (' + (event.stop_reason || 'ended') + ') \u00b7 ' + steps + ' step' + (steps === 1 ? '' : 's') + ' \u00b7 ' +
    thousands(input) + ' in' + cached + ' / ' + thousands(usage.output_tokens || 0) + ' out tokens' +
    (fill ? ' \u00b7 context ' + fill.percent + '% (' + thousands(fill.used) + '/' + thousands(fill.limit) + ')' : '') +
    (event.at ? ' \u00b7 ' + fullTime(event.at) : '');
  node.setAttribute('data-stop-reason', event.stop_reason || '');
  append(node);
}

// ---------------------------------------------------------------------
// Long sessions: only the newest turns are rendered at first (GET
// .../history); the state the earlier ones set comes from the page's
// `earlier`, and older turns are put above on demand.
// ---------------------------------------------------------------------

/**
 * What the events before the first loaded turn say (`earlier` of GET
 * .../history): the state-changing `system` events and the turns'
 * `result`s summed per run between them, applied in seq order to the
 * view's state as renderSystem/renderResult would, drawing nothing.
 */
export function applyEarlier(view, earlier) {
  if (!earlier) return;
  const items = [
    ...(earlier.events || []).map((event) => ({ seq: event.seq, event })),
    ...(earlier.results || []).map((sum) => ({ seq: sum.from_seq, sum })),
  ].sort((a, b) => a.seq - b.seq);
  const session = findSession(view.sessionId);
  for (const { event, sum } of items) {
    if (sum) {
      const usage = sum.usage || {};
      view.usage.input += allInput(usage);
      view.usage.output += usage.output_tokens || 0;
      view.usage.cacheRead += usage.cache_read_input_tokens || 0;
      view.usage.cacheWritten += usage.cache_creation_input_tokens || 0;
      view.usage.turns += sum.turns || 0;
      // The cost is linear in the tokens: one entry stands for the run.
      view.turnsByProfile.push([view.model || (session && session.model), usage]);
      if (sum.context) view.context = { used: sum.context.used, limit: sum.context.limit ?? null };
      continue;
    }
    const data = event.data || {};
    switch (event.subtype) {
      case 'session_started':
        if (data.permission_mode) view.mode = String(data.permission_mode);
        if (data.model) view.model = String(data.model);
        view.agent = data.agent ? String(data.agent) : 'build';
        view.commands = Array.isArray(data.commands) ? data.commands : [];
        break;
      case 'mode':
        if (data.mode) view.mode = String(data.mode);
        break;
      case 'agent':
        if (data.agent) view.agent = String(data.agent);
        if (data.model) view.model = String(data.model);
        if (data.permission_mode) view.mode = String(data.permission_mode);
        break;
      case 'model_switched':
        if (data.model) view.model = String(data.model);
        break;
      case 'plan':
        view.plan = Array.isArray(data.todos) ? data.todos : [];
        break;
      case 'cleared':
        view.plan = [];
        break;
      case 'usage':
        if (data.context && typeof data.context.used === 'number') view.context = { used: data.context.used, limit: data.context.limit ?? null };
        if (typeof data.cost_usd === 'number') view.reportedCost = { usd: data.cost_usd, turns: view.turnsByProfile.length };
        break;
      case 'context':
        if (typeof data.used === 'number') view.context = { used: data.used, limit: data.limit ?? null };
        break;
      default:
        break;
    }
  }
  renderPlan();
  renderStatusOf(view);
}

/** The view's state that rendering older turns must leave as it is. */
const KEPT = ['usage', 'context', 'live', 'mode', 'model', 'agent', 'turnsByProfile', 'reportedCost', 'approvals', 'commands', 'plan'];

/**
 * Put the stored events of older turns above what is shown, keeping what
 * the user looks at where it is. They are drawn as a replay draws them;
 * the view's state (usage, cost, context, mode, plan, approvals, the
 * message being streamed) stays as the newer events made it.
 */
export function renderOlder(view, events) {
  const conv = $('conversation');
  const height = conv.scrollHeight;
  const top = conv.scrollTop;
  const kept = {};
  for (const key of KEPT) kept[key] = view[key];
  view.usage = { input: 0, output: 0, turns: 0, cacheRead: 0, cacheWritten: 0 };
  view.turnsByProfile = [];
  view.approvals = new Map();
  view.live = null;
  const newer = document.createDocumentFragment();
  newer.append(...conv.childNodes);
  try {
    batch(() => {
      for (const event of events) renderEvent(view, event);
      finishLive(view);
    });
  } finally {
    conv.append(newer);
    for (const key of KEPT) view[key] = kept[key];
  }
  conv.scrollTop = top + (conv.scrollHeight - height);
  if (state.view === view) {
    renderPlan();
    renderStatusOf(view);
  }
}
