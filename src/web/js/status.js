// The status line under the input box, for the selected session: model
// profile, agent, permission mode, how full the context is, tokens, the
// prompt cache's share and the cost (at the profiles' prices, GET
// /v1/models).
//
// Model and mode are buttons that open a menu of the profiles (GET
// /v1/models) or the permission modes; picking one sends `/model NAME` or
// `/mode NAME` as the session's input (the line then follows the session's
// answer, as for a typed command).
//
// Shows what the session's events said. Never: change the session other
// than by sending a command the user picked, nor draw in the conversation.

import { findSession, state } from './state.js';
import { $, el } from './dom.js';
import { thousands } from './format.js';
import { api } from './api.js';

/** `{used, limit?}` from an `assistant` or `result` event (or a reply): the latest wins. */
export function setContext(view, context) {
  if (!context || typeof context.used !== 'number') return;
  view.context = { used: context.used, limit: typeof context.limit === 'number' ? context.limit : null };
  renderStatusOf(view);
}

/** `{percent, used, limit}` when the limit is known, else null. */
export function contextFill(context) {
  if (!context || typeof context.used !== 'number' || !(context.limit > 0)) return null;
  return { percent: Math.round((context.used * 100) / context.limit), used: context.used, limit: context.limit };
}

/** All input tokens of a `usage`: uncached, read from the prompt cache and written to it. */
export function allInput(usage) {
  return (usage.input_tokens || 0) + (usage.cache_read_input_tokens || 0) + (usage.cache_creation_input_tokens || 0);
}

/** What `usage` costs at `prices` (US dollars per million tokens), as the session counts it. */
export function costOf(prices, usage) {
  const per = (tokens, price) => ((tokens || 0) * price) / 1e6;
  return per(usage.input_tokens, prices.input_per_mtok) +
    per(usage.output_tokens, prices.output_per_mtok) +
    per(usage.cache_read_input_tokens, prices.cache_read_per_mtok ?? prices.input_per_mtok) +
    per(usage.cache_creation_input_tokens, prices.cache_write_per_mtok ?? prices.input_per_mtok);
}

/**
 * The session's cost in US dollars: the latest `/usage` reply's figure
 * plus the turns since, each at the prices of the profile it ran on; null
 * when no turn ran on a priced profile.
 */
function sessionCost(view) {
  let usd = view.reportedCost ? view.reportedCost.usd : 0;
  let priced = view.reportedCost !== null;
  for (const [profile, usage] of view.turnsByProfile.slice(view.reportedCost ? view.reportedCost.turns : 0)) {
    const prices = state.prices.get(profile);
    if (!prices) continue;
    usd += costOf(prices, usage);
    priced = true;
  }
  return priced ? usd : null;
}

export function renderStatusOf(view) {
  if (state.view === view) renderStatus();
}

const MODE_TITLES = {
  default: 'Reads inside the workspace run; edits, writes, commands and MCP tools ask first',
  'accept-edits': 'Reads and edits inside the workspace run; commands and MCP tools ask first',
  plan: 'Read-only: nothing that writes runs',
  bypass: 'Nothing asks; deny rules and the sandbox still hold',
};

/** The status line under the input, for the selected session. */
export function renderStatus() {
  const view = state.view;
  $('status-line').hidden = !view;
  if (!view) return;
  const session = findSession(view.sessionId);
  const model = view.model || (session && session.model) || null;
  $('status-model').textContent = model || '';
  $('status-model').hidden = !model;
  $('status-agent').textContent = view.agent ? 'agent ' + view.agent : '';
  $('status-agent').hidden = !view.agent;

  const badge = $('session-mode');
  badge.hidden = !view.mode;
  badge.textContent = view.mode ? 'mode ' + view.mode : '';
  badge.setAttribute('data-mode', view.mode || '');
  badge.title = view.mode ? (MODE_TITLES[view.mode] || '') + ' \u00b7 click to pick another (/mode MODE)' : '';

  const box = $('context-usage');
  const context = view.context;
  box.hidden = !context;
  if (context) {
    const fill = contextFill(context);
    box.setAttribute('data-level', !fill ? 'unknown' : fill.percent >= 95 ? 'full' : fill.percent >= 80 ? 'high' : 'ok');
    box.setAttribute('data-percent', fill ? String(fill.percent) : '');
    $('context-fill').style.width = fill ? Math.min(fill.percent, 100) + '%' : '0';
    $('context-text').textContent = fill ? 'context ' + fill.percent + '%' : 'context ~' + thousands(context.used) + ' tokens';
    box.title = (fill
      ? 'Context: ' + thousands(fill.used) + ' of ' + thousands(fill.limit) + ' tokens'
      : 'Context: ~' + thousands(context.used) + ' tokens (limit unknown)') + ' \u00b7 /context shows the breakdown';
  }

  const usage = $('usage');
  usage.textContent = view.usage.turns ? thousands(view.usage.input) + ' in / ' + thousands(view.usage.output) + ' out tokens' : '';
  usage.hidden = !view.usage.turns;
  usage.title = 'Session usage: ' + view.usage.input + ' in / ' + view.usage.output + ' out tokens over ' +
    view.usage.turns + ' turn' + (view.usage.turns === 1 ? '' : 's');
  usage.setAttribute('data-turns', String(view.usage.turns));

  // The prompt cache: the share of the session's input read from it.
  const cache = $('status-cache');
  const cachedAny = view.usage.cacheRead + view.usage.cacheWritten > 0 && view.usage.input > 0;
  cache.hidden = !cachedAny;
  const percent = cachedAny ? Math.round((view.usage.cacheRead * 100) / view.usage.input) : 0;
  cache.textContent = cachedAny ? 'cache ' + percent + '%' : '';
  cache.setAttribute('data-percent', cachedAny ? String(percent) : '');
  cache.title = cachedAny
    ? 'Prompt cache: ' + thousands(view.usage.cacheRead) + ' of ' + thousands(view.usage.input) +
      ' input tokens read from it, ' + thousands(view.usage.cacheWritten) + ' written (/usage, /context)'
    : '';

  const cost = sessionCost(view);
  $('status-cost').hidden = cost === null;
  $('status-cost').textContent = cost === null ? '' : '$' + cost.toFixed(4);
}

/** The model profiles' prices, for the cost in the status line. */
export async function loadPrices() {
  try {
    const answer = await api('GET', '/v1/models');
    const models = (answer && answer.models) || [];
    state.prices = new Map(models.filter((m) => m.pricing).map((m) => [m.name, m.pricing]));
    state.models = models.map((m) => String(m.name));
    renderStatus();
  } catch (_) {
    /* no cost shown */
  }
}

// ---- The model and mode menus ----

/** The permission modes, in the order `/mode` lists them. */
export const MODES = ['default', 'accept-edits', 'plan', 'bypass'];

/** The open menu: `{ kind: 'model'|'mode', button, items, index }`, or null. */
let menu = null;

/** The handler that sends a command as the session's input (composer.js's sendInput), set by watchStatusMenus. */
let sendCommand = null;

/**
 * Wire the model and mode buttons: a click, Enter, Space or ArrowDown opens
 * the menu; in it ArrowUp/ArrowDown/Home/End move, Enter or Space picks,
 * Esc or Tab closes it (the focus back on its button), as does a click elsewhere.
 * `send(text)` sends a command as the session's input.
 */
export function watchStatusMenus(send) {
  sendCommand = send;
  for (const [id, kind] of [['status-model', 'model'], ['session-mode', 'mode']]) {
    const button = $(id);
    button.addEventListener('click', () => (menu && menu.kind === kind ? closeMenu(true) : openMenu(kind, button)));
    button.addEventListener('keydown', (event) => {
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        openMenu(kind, button);
      }
    });
  }
  const list = $('status-menu');
  list.addEventListener('keydown', onMenuKey);
  document.addEventListener('mousedown', (event) => {
    if (menu && !list.contains(event.target) && event.target !== menu.button) closeMenu(false);
  });
}

/** Open the `kind` menu under `button`, the current value selected. */
function openMenu(kind, button) {
  const view = state.view;
  if (!view) return;
  const session = findSession(view.sessionId);
  const current = kind === 'model' ? view.model || (session && session.model) || '' : view.mode || '';
  let items = kind === 'model' ? state.models.slice() : MODES.slice();
  if (current && !items.includes(current)) items = [current, ...items];
  if (items.length === 0) return;
  closeMenu(false);
  const list = $('status-menu');
  list.setAttribute('aria-label', kind === 'model' ? 'Model profiles' : 'Permission modes');
  list.setAttribute('data-kind', kind);
  list.replaceChildren(...items.map((name, at) => el('li', {
    id: 'status-menu-' + at,
    class: 'status-menu-item',
    role: 'option',
    'data-testid': 'status-menu-item',
    'data-value': name,
    'aria-selected': name === current ? 'true' : 'false',
    title: kind === 'mode' ? MODE_TITLES[name] || '' : '',
    text: name,
    onmousedown: (event) => event.preventDefault(), // keep the focus in the list
    onclick: () => pick(at),
  })));
  menu = { kind, button, items, index: Math.max(0, items.indexOf(current)) };
  list.hidden = false;
  // Above its button (CSSOM, which the CSP allows; no style attribute is written as markup).
  list.style.left = Math.max(0, Math.min(button.offsetLeft, list.offsetParent ? list.offsetParent.clientWidth - list.offsetWidth : button.offsetLeft)) + 'px';
  button.setAttribute('aria-expanded', 'true');
  markActive();
  list.focus();
}

/** Close the menu; `refocus`: the focus back on its button. */
function closeMenu(refocus) {
  if (!menu) return;
  const { button } = menu;
  menu = null;
  $('status-menu').hidden = true;
  $('status-menu').removeAttribute('aria-activedescendant');
  button.setAttribute('aria-expanded', 'false');
  if (refocus) button.focus();
}

function markActive() {
  const list = $('status-menu');
  list.querySelectorAll('.status-menu-item').forEach((item, at) => item.classList.toggle('active', at === menu.index));
  list.setAttribute('aria-activedescendant', 'status-menu-' + menu.index);
  const active = list.querySelector('.status-menu-item.active');
  if (active) active.scrollIntoView({ block: 'nearest' });
}

function onMenuKey(event) {
  if (!menu) return;
  const last = menu.items.length - 1;
  const moves = { ArrowDown: Math.min(last, menu.index + 1), ArrowUp: Math.max(0, menu.index - 1), Home: 0, End: last };
  if (event.key in moves) {
    event.preventDefault();
    menu.index = moves[event.key];
    markActive();
  } else if (event.key === 'Enter' || event.key === ' ') {
    event.preventDefault();
    pick(menu.index);
  } else if (event.key === 'Escape') {
    event.preventDefault();
    event.stopPropagation(); // not an interrupt
    closeMenu(true);
  } else if (event.key === 'Tab') {
    closeMenu(false);
  }
}

/** Send `/model NAME` or `/mode NAME` for the item at `at` (nothing when it is the current one). */
function pick(at) {
  if (!menu) return;
  const { kind, items } = menu;
  const name = items[at];
  const item = $('status-menu').children[at];
  const current = item && item.getAttribute('aria-selected') === 'true';
  closeMenu(true);
  if (!current && sendCommand) sendCommand('/' + kind + ' ' + name);
}
