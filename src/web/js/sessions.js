// The session list on the left (GET /v1/sessions, kept current by the
// lifecycle stream GET /v1/events), filtered by the search box and grouped
// by when each was last updated; the actions on a session (new, rename,
// fork, delete), and which one is selected (remembered in the address's
// #), with its header.
//
// Selecting a session resets the right pane and opens its event stream
// (connection.js). Never: read a session's events or draw the
// conversation here.

import { findSession, newView, state } from './state.js';
import { $, el, showBanner } from './dom.js';
import { formatTime, fullTime } from './format.js';
import { api, reached, sessionPath, streamUrl } from './api.js';
import { closeSessionStream, openSession } from './connection.js';
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

/** The search box changed: show the sessions that match it. */
export function filterSessions() {
  state.sessionFilter = $('session-search').value;
  renderSessionList();
}

/** Esc in the search box empties it (and interrupts nothing). */
export function onSearchKey(event) {
  if (event.key !== 'Escape' || !event.target.value) return;
  event.preventDefault();
  event.stopPropagation();
  event.target.value = '';
  filterSessions();
}

/** Whether `session` matches the search: its title holds the text, or its id starts with it. */
function matches(session, filter) {
  const text = filter.trim().toLowerCase();
  if (!text) return true;
  return (session.title || '').toLowerCase().includes(text) || session.id.toLowerCase().startsWith(text);
}

/** The group a session's last update falls in, by the local calendar. */
function dateGroup(updatedAt) {
  const when = new Date(updatedAt);
  const today = new Date();
  today.setHours(0, 0, 0, 0);
  const day = 24 * 60 * 60 * 1000;
  if (Number.isNaN(when.getTime()) || when >= today) return 'Today';
  const yesterday = new Date(today);
  yesterday.setDate(today.getDate() - 1);
  if (when >= yesterday) return 'Yesterday';
  if (when.getTime() >= today.getTime() - 7 * day) return 'Previous 7 days';
  return 'Older';
}

/** When a session was updated, as short as its group allows: the time today, else the day. */
function shortTime(updatedAt) {
  const when = new Date(updatedAt);
  if (Number.isNaN(when.getTime()) || dateGroup(updatedAt) === 'Today') return formatTime(updatedAt);
  const sameYear = when.getFullYear() === new Date().getFullYear();
  return when.toLocaleDateString([], sameYear ? { month: 'short', day: 'numeric' } : { year: 'numeric', month: 'short', day: 'numeric' });
}

function renderSessionList() {
  const list = $('session-list');
  if (state.sessions.length === 0) {
    list.replaceChildren(el('li', { class: 'empty dim', text: 'No sessions yet.' }));
    return;
  }
  const shown = state.sessions.filter((s) => matches(s, state.sessionFilter));
  const items = [];
  let group = null;
  for (const session of shown) {
    const its = dateGroup(session.updated_at);
    if (its !== group) {
      group = its;
      items.push(el('li', { class: 'session-group', 'data-testid': 'session-group', text: its }));
    }
    items.push(sessionItem(session));
  }
  if (shown.length === 0) {
    items.push(el('li', { class: 'empty dim', 'data-testid': 'no-match', text: 'No session matches \u201c' + state.sessionFilter.trim() + '\u201d.' }));
  }
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
  const focused = document.activeElement;
  const typing = focused && list.contains(focused) && focused.matches('.session-rename') ? focused : null;
  list.replaceChildren(...items);
  const box = typing && list.querySelector('.session-rename');
  if (box) {
    box.value = typing.value; // a refresh keeps what is being typed
    box.focus();
  }
  renderAttention(); // the title counts the list's waiting approvals too
}

/** One row: title, updated time, busy marker; Rename, Fork and Delete buttons. */
function sessionItem(session) {
  const selected = session.id === state.selectedId;
  const title = session.title || 'untitled';
  const renaming = state.renaming === session.id;
  const name = renaming
    ? renameBox(session)
    : el(
      'button',
      { type: 'button', class: 'session-open', title: title, onclick: () => selectSession(session.id) },
      el(
        'span',
        { class: 'session-name' + (session.title ? '' : ' dim') },
        session.busy ? el('span', { class: 'busy-mark', title: 'running', 'aria-label': 'running', 'data-testid': 'busy' }) : null,
        el('span', { 'data-testid': 'session-name', text: title }),
      ),
      el('span', { class: 'session-when dim', title: fullTime(session.updated_at), text: shortTime(session.updated_at) }),
      // Whose it is: the token that created it (when one did).
      session.created_by
        ? el('span', { class: 'session-by dim', 'data-testid': 'session-by', text: String(session.created_by) })
        : null,
    );
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
    name,
    el(
      'span',
      { class: 'session-actions' },
      el('button', {
        type: 'button',
        class: 'small',
        'data-testid': 'rename',
        'aria-label': 'Rename \u201c' + title + '\u201d',
        text: 'Rename',
        onclick: () => startRename(session.id),
      }),
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
// Rename: the title edited in place, saved with PATCH /v1/sessions/{id}
// ---------------------------------------------------------------------

function startRename(id) {
  state.renaming = id;
  renderSessionList();
  const box = $('session-list').querySelector('.session-rename');
  if (box) {
    box.focus();
    box.select();
  }
}

/** The title as an input: Enter (or leaving it) saves, Esc gives up. */
function renameBox(session) {
  let done = false;
  const finish = (save, refocus) => {
    if (done) return;
    done = true;
    const title = box.value.trim();
    state.renaming = null;
    if (save && title && title !== (session.title || '')) saveTitle(session.id, title, refocus);
    else {
      renderSessionList();
      if (refocus) focusRow(session.id);
    }
  };
  const box = el('input', {
    type: 'text',
    class: 'session-rename',
    'data-testid': 'rename-input',
    'aria-label': 'New title',
    maxlength: '200',
    value: session.title || '',
    onkeydown: (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        finish(true, true);
      } else if (event.key === 'Escape') {
        event.preventDefault();
        event.stopPropagation();
        finish(false, true);
      }
    },
    onblur: () => {
      if (box.isConnected) finish(true, false); // not when a refresh of the list replaced it
    },
  });
  return box;
}

async function saveTitle(id, title, refocus) {
  try {
    const answer = await api('PATCH', sessionPath(id), { title });
    const session = findSession(id);
    if (session && answer) Object.assign(session, answer);
  } catch (e) {
    if (e.status !== 401) showBanner(e.message);
  }
  renderSessionList();
  renderSessionHeader();
  if (refocus) focusRow(id);
}

/** Keyboard focus back on a session's row (after its title was edited). */
function focusRow(id) {
  const row = [...$('session-list').querySelectorAll('[data-testid="session-item"]')].find((li) => li.dataset.sessionId === id);
  const button = row && row.querySelector('.session-open');
  if (button) button.focus();
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
    openSession(state.view);
    if (!findSession(id) && state.sessions.length) refreshSessionsSoon(); // (at boot the list is on its way)
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

/** The selected session's title; its workspace as its last folder (the whole path on hover). */
function renderSessionHeader() {
  const session = state.selectedId ? findSession(state.selectedId) : null;
  // (Until the list has come, a session's title is not known.)
  $('session-title').textContent = !state.selectedId
    ? 'No session selected'
    : session ? session.title || 'New session' : '';
  const meta = $('session-meta');
  meta.replaceChildren();
  if (session) {
    if (session.workspace) {
      const folder = session.workspace.replace(/[\\/]+$/, '').split(/[\\/]/).pop() || session.workspace;
      meta.append(el('span', { class: 'session-workspace', 'data-testid': 'session-workspace', title: session.workspace, text: folder }));
    }
    if (Array.isArray(session.parent)) {
      const parent = findSession(session.parent[0]);
      meta.append(' \u00b7 ', el('span', {
        title: 'forked from ' + session.parent[0] + ' at seq ' + session.parent[1],
        text: 'forked from ' + ((parent && parent.title) || 'another session'),
      }));
    }
  }
  // Until the session's own events say, its record names the profile.
  if (state.view && !state.view.model && session && session.model) renderStatus();
}
