// A tool call that asks first: a card under the call with what it would
// do and a button per offered choice (POST .../approvals/{request_id}),
// closed with its outcome by the `approval_resolved` event, whichever
// client answered, or by the end of its turn.
//
// Never: close a card when its answer is posted: the event closes it
// (the first answer wins).

import { append, el, keepScrolled } from './dom.js';
import { fullTime } from './format.js';
import { api, sessionPath } from './api.js';
import { callNode, FILE_TOOLS, inputDiff } from './tools.js';
import { splitLines } from './diff.js';

const CHOICE_LABELS = { allow_once: 'Allow once', allow_always: 'Always allow', reject: 'Reject' };

/**
 * `approval_request`: a card under the tool call saying what it would do,
 * with a button per offered choice. It stays pending (after a reload too:
 * the replay shows it again) until an `approval_resolved` with its
 * request_id closes it, whichever client answered.
 */
export function renderApprovalRequest(view, event) {
  const options = Array.isArray(event.options) ? event.options : ['allow_once', 'reject'];
  const card = el('div', {
    class: 'approval-card',
    'data-testid': 'approval',
    'data-request-id': event.request_id,
    'data-call-id': event.call_id,
    'data-tool': event.name,
    'data-state': 'pending',
    title: fullTime(event.at),
  });
  card.append(
    el('div', { class: 'approval-head' },
      el('span', { class: 'approval-mark', text: '?' }),
      el('span', { 'data-testid': 'approval-title', text: event.name + ' wants approval' })),
  );
  if (event.reason) card.append(el('div', { class: 'approval-reason dim', 'data-testid': 'approval-reason', text: event.reason }));
  const detail = approvalDetail(event.name, event.input);
  detail.classList.add('approval-detail');
  card.append(detail);
  const actions = el('div', { class: 'approval-actions', 'data-testid': 'approval-actions' });
  if (event.suggested_mode) {
    // Only while it can be answered: part of the choices.
    actions.append(el('div', { class: 'dim approval-hint', text: 'In ' + event.suggested_mode + ' mode this would run without asking (/mode ' + event.suggested_mode + ').' }));
  }
  const error = el('div', { class: 'approval-error', 'data-testid': 'approval-error', role: 'alert', hidden: true });
  const outcome = el('div', { class: 'approval-outcome', 'data-testid': 'approval-outcome', hidden: true });
  const entry = { card, actions, error, outcome, turnId: event.turn_id, buttons: [], call: null };
  const message = el('input', {
    type: 'text',
    class: 'approval-message',
    'data-testid': 'approval-message',
    placeholder: 'Why not, or what instead (optional, for the model)',
    'aria-label': 'Message for the model with a rejection',
  });
  for (const choice of options) {
    let label = CHOICE_LABELS[choice] || choice;
    if (choice === 'allow_always' && event.suggested_rule) label += ' ' + event.suggested_rule;
    const button = el('button', {
      type: 'button',
      class: 'small' + (choice === 'reject' ? ' danger' : ' allow'),
      'data-testid': 'approval-' + choice.replace(/_/g, '-'),
      'data-choice': choice,
      text: label,
      onclick: () => decide(view, event.request_id, entry, choice, choice === 'reject' ? message.value : ''),
    });
    entry.buttons.push(button);
    if (choice === 'reject') {
      message.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' && !e.isComposing) {
          e.preventDefault();
          button.click();
        }
      });
      actions.append(el('span', { class: 'approval-reject' }, message, button));
    } else {
      actions.append(button);
    }
  }
  entry.buttons.push(message);
  card.append(actions, error, outcome);
  view.approvals.set(event.request_id, entry);
  // Under its tool call when it is shown, else at the end. While the card
  // waits it shows the change, and the call above does not repeat it.
  const call = callNode(event.call_id);
  if (call) {
    entry.call = call;
    card.classList.add('under-call');
    call.classList.add('asking');
    let after = call;
    while (after.nextElementSibling && after.nextElementSibling.classList.contains('approval-card')) after = after.nextElementSibling;
    keepScrolled(() => after.after(card));
  } else {
    append(card);
  }
}

/** What the call would do: the command, an edit or a write as a diff (path first, all of it), else the input. */
function approvalDetail(name, input) {
  const args = input && typeof input === 'object' ? input : {};
  if (name === 'bash' && typeof args.command === 'string') {
    return el('pre', { class: 'approval-command', 'data-testid': 'approval-command', text: args.command });
  }
  const diff = FILE_TOOLS.has(name) ? inputDiff(name, args) : null;
  if (diff) {
    diff.classList.add('approval-diff');
    diff.setAttribute('data-testid', 'approval-diff');
    const what = name === 'write_file'
      ? 'write ' + String(args.path || '') + ' (' + splitLines(args.content).length + ' line' + (splitLines(args.content).length === 1 ? '' : 's') + ')'
      : 'edit ' + String(args.path || '') + (args.replace_all ? ' (every occurrence)' : '');
    return el('div', {}, el('div', { class: 'approval-path', 'data-testid': 'approval-path', text: what }), diff);
  }
  return el('pre', { class: 'approval-input', 'data-testid': 'approval-input', text: typeof input === 'string' ? input : JSON.stringify(input, null, 2) });
}

/** Post a decision. The card closes when the `approval_resolved` event arrives, not here. */
async function decide(view, requestId, entry, choice, message) {
  const body = { decision: choice };
  if (choice === 'reject' && message && message.trim()) body.message = message.trim();
  for (const b of entry.buttons) b.disabled = true;
  entry.error.hidden = true;
  try {
    await api('POST', sessionPath(view.sessionId) + '/approvals/' + encodeURIComponent(requestId), body);
  } catch (e) {
    if (e.status === 401) return;
    if (entry.card.dataset.state !== 'pending') return; // settled meanwhile: the card says how
    entry.error.textContent = e.status === 409 ? 'Already answered (the first answer wins).' : e.message;
    entry.error.hidden = false;
    // 409: the answer that won is on its way; anything else may be tried again.
    if (e.status !== 409) for (const b of entry.buttons) b.disabled = false;
  }
}

const OUTCOMES = {
  allowed_once: 'Allowed once',
  allowed_always: 'Always allowed',
  rejected: 'Rejected',
  timed_out: 'Rejected: nobody answered in time',
  cancelled: 'Cancelled',
};

/** `approval_resolved`: close its card with the outcome. False when no card shows the request. */
export function resolveApproval(view, event) {
  const data = event.data || {};
  const entry = view.approvals.get(data.request_id);
  if (!entry) return false;
  let text = OUTCOMES[data.outcome] || String(data.outcome || 'settled');
  if (data.outcome === 'allowed_always' && data.rule) text += ': ' + data.rule + (data.save ? ' (saved to .agentbus.toml)' : '');
  if (data.outcome === 'rejected' && data.message) text += ': ' + data.message;
  closeApproval(entry, data.outcome || 'settled', text, event);
  return true;
}

/** The turn ended: a request still open there can no longer be answered. */
export function endApprovals(view, turnId) {
  if (turnId === undefined) return;
  for (const entry of view.approvals.values()) {
    if (entry.turnId === turnId && entry.card.dataset.state === 'pending') {
      closeApproval(entry, 'ended', 'Not answered: the turn ended', null);
    }
  }
}

function closeApproval(entry, outcome, text, event) {
  entry.card.dataset.state = 'resolved';
  // The call above shows the change again; the card keeps the outcome.
  if (entry.call) entry.call.classList.remove('asking');
  entry.card.dataset.outcome = outcome;
  entry.actions.remove();
  entry.error.hidden = true;
  entry.outcome.textContent = (outcome === 'allowed_once' || outcome === 'allowed_always' ? '\u2713 ' : '\u2717 ') + text;
  if (event) entry.outcome.title = fullTime(event.at);
  entry.outcome.hidden = false;
}
