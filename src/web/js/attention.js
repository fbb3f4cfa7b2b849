// Approvals you cannot miss: while a tool call waits for an answer in a
// session the page knows of, the tab's title starts with "(N) approval",
// the favicon carries a mark (drawn on a canvas, as a data: URL), the
// session has a mark in the list, and — when the user turned it on with
// the bell and the tab is hidden — a desktop notification says so. All of
// it clears once the approvals are answered.
//
// What waits is state.waiting (session id -> request ids), which
// approvals.js fills from the open session's events and the session list
// from each session's `pending_approvals` (sessions.js).
//
// Never: ask for the notification permission except from a user's click
// (the bell), nor put a server's text into the page other than as text.

import { state } from './state.js';
import { $ } from './dom.js';

const NOTIFY_KEY = 'agentbus.notify';
const TITLE_MARK = /^\(\d+\) approvals? \u00b7 /;
let plainIcon = null; // the favicon's href without a mark
let markedIcon = null; // drawn once
const notices = new Map(); // request id -> Notification shown for it

/** How many approvals wait, in every session the page knows of. */
export function waitingCount() {
  const ids = new Set([...state.waiting.keys(), ...state.sessions.map((s) => s.id)]);
  let count = 0;
  for (const id of ids) count += sessionWaiting(id);
  return count;
}

/** How many approvals wait in session `id`, as the page knows. */
export function sessionWaiting(id) {
  const known = state.waiting.get(id);
  if (id === state.selectedId && known) return known.size;
  return Math.max(known ? known.size : 0, listedWaiting(id));
}

/** The list's figure (GET /v1/sessions' `pending_approvals`), when the server gives it. */
function listedWaiting(id) {
  const session = state.sessions.find((s) => s.id === id);
  return session && typeof session.pending_approvals === 'number' ? session.pending_approvals : 0;
}

/** A request of session `sessionId` waits (`waiting`) or no longer does. */
export function setWaiting(sessionId, requestId, waiting, about) {
  let requests = state.waiting.get(sessionId);
  if (waiting) {
    if (!requests) state.waiting.set(sessionId, (requests = new Set()));
    const fresh = !requests.has(requestId);
    requests.add(requestId);
    if (fresh) notify(requestId, about);
  } else {
    if (requests) requests.delete(requestId);
    if (requests && requests.size === 0) state.waiting.delete(sessionId);
    closeNotice(requestId);
  }
  renderAttention();
}

/** Nothing waits in session `sessionId` any more (its turn ended, it went idle or was deleted). */
export function clearWaiting(sessionId) {
  const requests = state.waiting.get(sessionId);
  if (!requests) return;
  for (const id of requests) closeNotice(id);
  state.waiting.delete(sessionId);
  renderAttention();
}

/** Title, favicon and the list's marks as state.waiting says. */
export function renderAttention() {
  const count = waitingCount();
  const base = document.title.replace(TITLE_MARK, '');
  document.title = count ? '(' + count + ') approval' + (count === 1 ? '' : 's') + ' \u00b7 ' + base : base;
  const icon = document.querySelector('link[rel="icon"]');
  if (icon) {
    if (plainIcon === null) plainIcon = icon.getAttribute('href');
    const href = count ? markIcon() : plainIcon;
    if (icon.getAttribute('href') !== href) icon.setAttribute('href', href);
    icon.dataset.marked = count ? 'true' : 'false';
  }
  for (const item of document.querySelectorAll('[data-testid="session-item"]')) {
    markItem(item, sessionWaiting(item.dataset.sessionId));
  }
}

/** Show or drop the mark on a session's row of the list (`count` approvals wait there). */
export function markItem(item, count) {
  const mark = item.querySelector('[data-testid="session-waiting"]');
  item.dataset.waiting = count ? 'true' : 'false';
  if (!count) {
    if (mark) mark.remove();
    return;
  }
  const text = count === 1 ? 'approval' : count + ' approvals';
  if (mark) {
    mark.textContent = text;
    return;
  }
  const badge = document.createElement('span');
  badge.className = 'session-waiting';
  badge.dataset.testid = 'session-waiting';
  badge.title = 'A tool call waits for your answer';
  badge.textContent = text;
  // On the row's second line, before its time (or first, in a row of another shape).
  const when = item.querySelector('.session-when');
  if (when) when.prepend(badge);
  else item.prepend(badge);
}

/** The favicon with a mark: an "a" on a dark square and a red dot, drawn once. */
function markIcon() {
  if (markedIcon) return markedIcon;
  const canvas = document.createElement('canvas');
  canvas.width = 32;
  canvas.height = 32;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#2b2f36';
  ctx.fillRect(0, 2, 28, 28);
  ctx.fillStyle = '#ffffff';
  ctx.font = 'bold 20px sans-serif';
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  ctx.fillText('a', 14, 16);
  ctx.fillStyle = '#e5484d';
  ctx.beginPath();
  ctx.arc(23, 9, 8, 0, 2 * Math.PI);
  ctx.fill();
  markedIcon = canvas.toDataURL('image/png');
  return markedIcon;
}

// ---------------------------------------------------------------------
// Desktop notifications (optional: the bell turns them on)
// ---------------------------------------------------------------------

function notificationsOn() {
  return typeof window.Notification === 'function' &&
    window.Notification.permission === 'granted' &&
    localStorage.getItem(NOTIFY_KEY) === 'on';
}

/** The bell: turns notifications on (asking for the permission then, after this click) or off. */
export function watchNotifyToggle() {
  const bell = $('notify-toggle');
  if (!bell) return;
  if (typeof window.Notification !== 'function') {
    bell.hidden = true;
    return;
  }
  renderBell();
  bell.addEventListener('click', async () => {
    if (notificationsOn()) {
      localStorage.setItem(NOTIFY_KEY, 'off');
      renderBell();
      return;
    }
    let permission = window.Notification.permission;
    if (permission !== 'granted') permission = await window.Notification.requestPermission();
    localStorage.setItem(NOTIFY_KEY, permission === 'granted' ? 'on' : 'off');
    renderBell(permission === 'denied');
  });
}

function renderBell(denied) {
  const bell = $('notify-toggle');
  const on = notificationsOn();
  bell.setAttribute('aria-pressed', on ? 'true' : 'false');
  bell.title = denied
    ? 'The browser blocks notifications for this page'
    : on ? 'Notify me of approvals while this tab is hidden (on)' : 'Notify me of approvals while this tab is hidden';
}

/** A desktop notification for a new request, when turned on and the tab is hidden. */
function notify(requestId, about) {
  if (!about || !notificationsOn() || document.visibilityState !== 'hidden') return;
  try {
    const notice = new window.Notification('agentbus: approval waiting', { body: about, tag: 'agentbus-' + requestId });
    notice.onclick = () => {
      window.focus();
      notice.close();
    };
    notices.set(requestId, notice);
  } catch (_) {
    // A browser that refuses notifications from a page: the title and favicon say it.
  }
}

function closeNotice(requestId) {
  const notice = notices.get(requestId);
  if (!notice) return;
  notices.delete(requestId);
  notice.close();
}
