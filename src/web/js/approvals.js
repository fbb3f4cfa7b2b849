// A tool call that asks first: a card under the call with what it would
// do and a button per offered choice (POST .../approvals/{request_id}),
// closed with its outcome by the `approval_resolved` event, whichever
// client answered, or by the end of its turn.
//
// While it waits the card has the focus, and its keys answer: `y` allow
// once (the main button), `a` always allow, `n` reject. "Always allow" for
// a destructive command (rm -rf, git push --force, sudo...) first shows the
// rule it will add in a dialog. Answered, the card shrinks to a badge on
// its call ("allowed once", "rejected"...). What waits is counted for the
// tab's title, favicon and the session list (attention.js).
//
// Never: close a card when its answer is posted: the event closes it
// (the first answer wins).

import { append, el, keepScrolled } from './dom.js';
import { fullTime } from './format.js';
import { api, sessionPath } from './api.js';
import { callNode, FILE_TOOLS, inputDiff, relativePath } from './tools.js';
import { splitLines } from './diff.js';
import { setWaiting } from './attention.js';

const CHOICE_LABELS = { allow_once: 'Allow once', allow_always: 'Always allow', reject: 'Reject' };
const CHOICE_KEYS = { allow_once: 'y', allow_always: 'a', reject: 'n' };
// The main button first, whatever order the server offers them in.
const CHOICE_ORDER = ['allow_once', 'allow_always', 'reject'];

/**
 * Commands that destroy what they touch, for which "Always allow" asks
 * again: the server's permission rules keep no such list (actors/src/permissions),
 * so it is here. Matched on the command line's words.
 */
const DESTRUCTIVE = [
  /(^|[\s;&|(])rm\s+(.*\s)?(-\w*[rR]\w*|--recursive)(\s|$)/,
  /(^|[\s;&|(])git\s+push\b.*(\s--force\b|\s-f\b|\s--force-with-lease\b|\s\+\S)/,
  /(^|[\s;&|(])git\s+reset\s+.*--hard\b|(^|[\s;&|(])git\s+reset\s+--hard\b/,
  /(^|[\s;&|(])git\s+clean\s+-\w*f/,
  /(^|[\s;&|(])dd\s/,
  /(^|[\s;&|(])mkfs(\.\w+)?\s/,
  /(^|[\s;&|(])chmod\s+(-\w*R|--recursive)/,
  /(^|[\s;&|(])chown\s+(-\w*R|--recursive)/,
  /(^|[\s;&|(])sudo\s/,
  /(^|[\s;&|(])shred\s/,
];

/** Whether a bash command line is one "Always allow" should confirm. */
export function isDestructive(command) {
  return typeof command === 'string' && DESTRUCTIVE.some((re) => re.test(command));
}

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
  const entry = { card, actions, error, outcome, turnId: event.turn_id, buttons: [], choices: new Map(), call: null, sessionId: view.sessionId };
  const message = el('input', {
    type: 'text',
    class: 'approval-message',
    'data-testid': 'approval-message',
    placeholder: 'Why not, or what instead (optional, for the model)',
    'aria-label': 'Message for the model with a rejection',
  });
  const ordered = options.slice().sort((a, b) => order(a) - order(b));
  const command = event.name === 'bash' && event.input && typeof event.input.command === 'string' ? event.input.command : null;
  for (const choice of ordered) {
    let label = CHOICE_LABELS[choice] || choice;
    if (choice === 'allow_always' && event.suggested_rule) label += ' ' + event.suggested_rule;
    const confirmFirst = choice === 'allow_always' && isDestructive(command);
    const answer = () => {
      if (confirmFirst) {
        confirmAlways(event.suggested_rule || event.name, command, () => decide(view, event.request_id, entry, choice, ''), card);
        return;
      }
      decide(view, event.request_id, entry, choice, choice === 'reject' ? message.value : '');
    };
    const key = CHOICE_KEYS[choice];
    const button = el('button', {
      type: 'button',
      class: 'small' + (choice === 'reject' ? ' danger' : choice === 'allow_once' ? ' allow primary' : ' allow'),
      'data-testid': 'approval-' + choice.replace(/_/g, '-'),
      'data-choice': choice,
      'aria-keyshortcuts': key || null,
      'data-confirm': confirmFirst ? 'true' : null,
    }, label, key ? el('kbd', { class: 'approval-key', 'aria-hidden': 'true', text: key }) : null);
    button.addEventListener('click', answer);
    entry.buttons.push(button);
    entry.choices.set(choice, button);
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
  // Its keys, while the card (not the message box) has the focus.
  card.tabIndex = -1;
  card.setAttribute('role', 'group');
  card.setAttribute('aria-label', event.name + ' wants approval: y allow once, a always allow, n reject');
  card.addEventListener('keydown', (e) => {
    if (e.target === message || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const choice = { y: 'allow_once', a: 'allow_always', n: 'reject' }[e.key.toLowerCase()];
    const button = choice && entry.choices.get(choice);
    if (!button || button.disabled || card.dataset.state !== 'pending') return;
    e.preventDefault();
    button.click();
  });
  view.approvals.set(event.request_id, entry);
  setWaiting(view.sessionId, event.request_id, true, event.name + (command ? ': ' + command : ' wants approval'));
  // Under its tool call when it is shown, else at the end. While the card
  // waits it shows the change, and the call above does not repeat it.
  const call = callNode(event.call_id);
  if (call) {
    entry.call = call;
    card.classList.add('under-call');
    call.classList.add('asking');
    // A step's calls are one row, closed: open it to show the card.
    const group = call.closest('details.tool-group');
    if (group && !group.open) group.open = true;
    let after = call;
    while (after.nextElementSibling && after.nextElementSibling.classList.contains('approval-card')) after = after.nextElementSibling;
    keepScrolled(() => after.after(card));
  } else {
    append(card);
  }
  // The focus goes to the card once the events now arriving are drawn
  // (a replay may settle it at once), unless a dialog is open.
  requestAnimationFrame(() => {
    if (card.dataset.state !== 'pending' || !card.isConnected || document.querySelector('dialog[open]')) return;
    card.focus({ preventScroll: true });
    keepScrolled(() => card.scrollIntoView({ block: 'nearest' }));
  });
}

function order(choice) {
  const at = CHOICE_ORDER.indexOf(choice);
  return at < 0 ? CHOICE_ORDER.length : at;
}

/**
 * "Always allow" for a destructive command: a dialog showing the rule it
 * adds (`bash(rm -rf:*)`) and the command; `yes` runs only on "Add the
 * rule". Back to the card either way.
 */
function confirmAlways(rule, command, yes, card) {
  const dialog = el('dialog', { class: 'confirm-always', 'data-testid': 'confirm-always', 'aria-labelledby': 'confirm-always-title' });
  const close = () => {
    dialog.close();
    dialog.remove();
    if (card.isConnected && card.dataset.state === 'pending') card.focus({ preventScroll: true });
  };
  const add = el('button', { type: 'button', class: 'danger', 'data-testid': 'confirm-always-add', text: 'Add the rule and allow' });
  const cancel = el('button', { type: 'button', class: 'primary', 'data-testid': 'confirm-always-cancel', text: 'Cancel' });
  add.addEventListener('click', () => {
    close();
    yes();
  });
  cancel.addEventListener('click', close);
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    close();
  });
  dialog.append(
    el('h2', { id: 'confirm-always-title', text: 'Always allow a destructive command?' }),
    el('p', { text: 'This command destroys what it touches:' }),
    el('pre', { class: 'confirm-always-command', 'data-testid': 'confirm-always-command', text: command || '' }),
    el('p', { text: 'From now on the session will run, without asking, every command this rule covers:' }),
    el('pre', { class: 'confirm-always-rule', 'data-testid': 'confirm-always-rule', text: rule }),
    el('div', { class: 'confirm-always-actions' }, cancel, add),
  );
  document.body.append(dialog);
  dialog.showModal();
  cancel.focus();
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
      ? 'write ' + String(relativePath(args.path) || '') + ' (' + splitLines(args.content).length + ' line' + (splitLines(args.content).length === 1 ? '' : 's') + ')'
      : 'edit ' + String(relativePath(args.path) || '') + (args.replace_all ? ' (every occurrence)' : '');
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
  // Who answered, when a token of `agentbus serve` did.
  if (typeof data.by === 'string' && data.by) text += ' \u00b7 by ' + data.by;
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
  entry.card.dataset.outcome = outcome;
  entry.card.removeAttribute('tabindex');
  entry.card.removeAttribute('role');
  entry.card.removeAttribute('aria-label');
  setWaiting(entry.sessionId, entry.card.dataset.requestId, false);
  const hadFocus = entry.card.contains(document.activeElement);
  entry.actions.remove();
  entry.error.hidden = true;
  entry.outcome.textContent = (outcome === 'allowed_once' || outcome === 'allowed_always' ? '\u2713 ' : '\u2717 ') + text;
  if (event) entry.outcome.title = fullTime(event.at);
  entry.outcome.hidden = false;
  if (entry.call) {
    // The call above shows the change again; the card shrinks to a badge on it.
    entry.call.classList.remove('asking');
    entry.card.classList.add('approval-badge');
    entry.card.replaceChildren(entry.outcome);
    const summary = entry.call.querySelector(':scope > summary');
    keepScrolled(() => (summary || entry.call).append(entry.card));
  }
  if (hadFocus) {
    const input = document.getElementById('input');
    if (input && !input.disabled) input.focus({ preventScroll: true });
  }
}
