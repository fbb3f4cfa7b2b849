// The session list on the left (GET /v1/sessions, kept current by the
// lifecycle stream GET /v1/events), the actions on a session (new, fork,
// delete), and which one is selected (remembered in the address's #),
// with its header.
//
// Selecting a session resets the right pane and opens its event stream
// (connection.js). Never: read a session's events or draw the
// conversation here.

import { findSession, newView, state } from './state.js';
import { $, el, showBanner } from './dom.js';
import { formatTime } from './format.js';
import { api, reached, sessionPath, streamUrl } from './api.js';
import { closeSessionStream, openSessionStream } from './connection.js';
import { renderStatus } from './status.js';
import { renderQueued, updateControls } from './composer.js';
import { renderPlan } from './plan.js';
import { focusInput, showSessionList } from './layout.js';
import { clearWaiting, markItem, renderAttention, sessionWaiting } from './attention.js';

// ---------------------------------------------------------------------
// Session list (left)
// ---------------------------------------------------------------------

/** Fetch the list and draw it. */
export async function loadSessions() {
  try {
    const answer = await api('GET', '/v1/sessions?limit=' + state.listLimit);
    state.sessions = (answer && answer.sessions) || [];
    state.moreSessions = Boolean(answer && answer.next);
    renderSessionList();
    renderSessionHeader();
  } catch (e) {
    if (e.status !== 401) showBanner(e.message, e.kind);
  }
}

/** Fetch the list again soon (several lifecycle events make one fetch). */
export function refreshSessionsSoon() {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(loadSessions, 250);
}

function renderSessionList() {
  const list = $('session-list');
  if (state.sessions.length === 0) {
    list.replaceChildren(el('li', { class: 'empty dim', text: 'No sessions yet.' }));
    return;
  }
  const items = state.sessions.map(sessionItem);
  if (state.moreSessions) {
    const more = () => {
      state.listLimit += 100;
      loadSessions();
    };
    items.push(
      el('li', { class: 'session-more' },
        el('button', { type: 'button', class: 'small', 'data-testid': 'more-sessions', text: 'Show more', onclick: more })),
    );
  }
  list.replaceChildren(...items);
  renderAttention(); // the title counts the list's waiting approvals too
}

/** One row: title, updated time, busy marker; Fork and Delete buttons. */
function sessionItem(session) {
  const selected = session.id === state.selectedId;
  const title = session.title || 'untitled';
  const item = el(
    'li',
    {
      class: 'session-item' + (selected ? ' selected' : ''),
      'data-testid': 'session-item',
      'data-session-id': session.id,
      'data-selected': selected ? 'true' : 'false',
      'data-busy': session.busy ? 'true' : 'false',
      'aria-current': selected ? 'true' : false,
    },
    el(
      'button',
      { type: 'button', class: 'session-open', title: title, onclick: () => selectSession(session.id) },
      el('span', { class: 'session-name' + (session.title ? '' : ' dim'), text: title }),
      el(
        'span',
        { class: 'session-when dim' },
        session.busy ? el('span', { class: 'busy', title: 'running', 'data-testid': 'busy', text: '\u25cf ' }) : null,
        formatTime(session.updated_at),
      ),
    ),
    el(
      'span',
      { class: 'session-actions' },
      el('button', { type: 'button', class: 'small', 'data-testid': 'fork', text: 'Fork', onclick: () => forkSession(session.id) }),
      el('button', {
        type: 'button',
        class: 'small danger',
        'data-testid': 'delete',
        text: 'Delete',
        onclick: () => deleteSession(session.id, title),
      }),
    ),
  );
  markItem(item, sessionWaiting(session.id));
  return item;
}

// ---------------------------------------------------------------------
// Lifecycle stream: GET /v1/events keeps the list current
// ---------------------------------------------------------------------

/** Subscribe to /v1/events; `resumed`: a later subscription (fetch the list on open). */
export function watchLifecycle(resumed) {
  const stream = new EventSource(streamUrl('/v1/events'));
  state.lifecycle = stream;
  let opened = !!resumed;
  // Reconnected: events may have been missed, so fetch the list again
  // (the first time, start() has just fetched it).
  stream.onopen = () => {
    $('lifecycle-status').textContent = '';
    reached();
    if (opened) loadSessions();
    opened = true;
  };
  stream.onmessage = (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (_) {
      return;
    }
    onLifecycle(event);
  };
  stream.onerror = () => {
    if (state.lifecycle !== stream) return;
    $('lifecycle-status').textContent = 'reconnecting\u2026';
    // EventSource retries by itself unless the server refused the request.
    if (stream.readyState === EventSource.CLOSED) {
      setTimeout(async () => {
        if (state.lifecycle !== stream) return;
        try {
          await api('GET', '/v1/health'); // a 401 shows the token message
        } catch (e) {
          if (e.status === 401) return;
        }
        watchLifecycle(true);
      }, 3000);
    }
  };
}

/** Stop following /v1/events (the token was refused). */
export function unwatchLifecycle() {
  if (state.lifecycle) state.lifecycle.close();
  state.lifecycle = null;
}

/** One lifecycle event: created, busy, idle, closed, deleted. */
function onLifecycle(event) {
  const session = findSession(event.session_id);
  switch (event.kind) {
    case 'busy':
    case 'idle':
      // Approvals wait within a turn: once idle, none does.
      if (event.kind === 'idle') {
        if (session) session.pending_approvals = 0;
        clearWaiting(event.session_id);
      }
      if (session) {
        session.busy = event.kind === 'busy';
        renderSessionList();
      }
      break;
    case 'approvals':
      // A tool call of a session started or stopped waiting: how many wait now.
      if (session && typeof event.pending_approvals === 'number') {
        session.pending_approvals = event.pending_approvals;
        renderSessionList();
      }
      break;
    case 'deleted':
      clearWaiting(event.session_id);
      state.sessions = state.sessions.filter((s) => s.id !== event.session_id);
      renderSessionList();
      if (event.session_id === state.selectedId) {
        selectSession(null);
        showBanner('The session ' + event.session_id + ' was deleted.');
      }
      break;
    default:
      break;
  }
  // Titles, times and order change with every event kind: fetch again.
  refreshSessionsSoon();
}

// ---------------------------------------------------------------------
// Session actions: new, fork, delete, select
// ---------------------------------------------------------------------

export async function newSession() {
  try {
    const answer = await api('POST', '/v1/sessions', {});
    await loadSessions();
    selectSession(answer.id);
    $('input').focus();
  } catch (e) {
    if (e.status !== 401) showBanner(e.message, e.kind);
  }
}

async function forkSession(id) {
  try {
    const answer = await api('POST', sessionPath(id) + '/fork', {});
    await loadSessions();
    selectSession(answer.id);
  } catch (e) {
    if (e.status !== 401) showBanner(e.message, e.kind);
  }
}

async function deleteSession(id, title) {
  if (!window.confirm('Delete the session \u201c' + title + '\u201d (' + id + ')? This cannot be undone.')) return;
  try {
    await api('DELETE', sessionPath(id));
    state.sessions = state.sessions.filter((s) => s.id !== id);
    if (id === state.selectedId) selectSession(null);
    renderSessionList();
  } catch (e) {
    if (e.status !== 401) showBanner(e.message, e.kind);
  }
}

/** Show a session on the right (null: none). Remembered in the address's #. */
export function selectSession(id) {
  if (id === state.selectedId && state.view) {
    showSessionList(false);
    return;
  }
  closeSessionStream();
  state.selectedId = id;
  history.replaceState(null, '', location.pathname + location.search + (id ? '#' + encodeURIComponent(id) : ''));
  $('conversation').replaceChildren();
  if (id) {
    state.view = newView(id);
    openSessionStream(state.view, 0);
    if (!findSession(id)) refreshSessionsSoon();
  } else {
    state.view = null;
    $('conversation').append(el('p', { class: 'empty dim', text: 'Pick a session on the left, or start a new one.' }));
  }
  renderSessionList();
  renderSessionHeader();
  renderQueued();
  renderPlan();
  renderStatus();
  updateControls();
  showSessionList(!id);
  if (id) focusInput(); // typing goes to the session just opened
}

export function switchTo(id) {
  if (id === state.selectedId) return;
  refreshSessionsSoon();
  selectSession(id);
}

/** Title, id, model and workspace of the selected session. */
function renderSessionHeader() {
  const session = state.selectedId ? findSession(state.selectedId) : null;
  $('session-title').textContent = !state.selectedId
    ? 'No session selected'
    : (session && session.title) || 'untitled';
  const meta = [];
  if (state.selectedId) meta.push(state.selectedId);
  if (session) {
    if (session.workspace) meta.push(session.workspace);
    if (Array.isArray(session.parent)) meta.push('forked from ' + session.parent[0] + ' at ' + session.parent[1]);
  }
  $('session-meta').textContent = meta.join(' \u00b7 ');
  // Until the session's own events say, its record names the profile.
  if (state.view && !state.view.model && session && session.model) renderStatus();
}
