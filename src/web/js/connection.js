// The selected session's events: its newest turns first (GET
// /v1/sessions/{id}/history), older ones on demand as the user scrolls up,
// then its event stream (SSE GET /v1/sessions/{id}/events: stored events
// after those, then live ones): opened from a seq, reopened
// after a refused reconnect from the last seq rendered, closed; each of
// its events handed on once and in order (repeats dropped by seq), and
// which turns are open (a turn runs from its `user` event to its
// `result`).
//
// Never: draw an event here (transcript.js does), nor act on an event of
// a view that is no longer the selected one.

import { state } from './state.js';
import { $, announce, batch, showBanner } from './dom.js';
import { api, reached, sessionPath, streamUrl } from './api.js';
import { refreshSessionsSoon } from './sessions.js';
import { applyEarlier, renderEvent, renderOlder } from './transcript.js';
import { followSwitch } from './switches.js';
import { claimSent, updateControls } from './composer.js';

/** How many turns one page of history holds. */
const PAGE_TURNS = 30;

/**
 * Show a session: its newest turns (and the state the earlier ones set),
 * then its events from there on. Without the history route (an older
 * server), the whole log is replayed from the stream.
 */
export async function openSession(view) {
  let page;
  try {
    page = await api('GET', sessionPath(view.sessionId) + '/history?turns=' + PAGE_TURNS);
  } catch (e) {
    if (state.view !== view) return;
    if (e.status === 401) return;
    openSessionStream(view, 0);
    return;
  }
  if (state.view !== view) return;
  applyEarlier(view, page.earlier);
  const conv = $('conversation');
  batch(() => {
    for (const event of page.events || []) onSessionEvent(view, event);
  });
  view.nextBefore = page.next_before ?? null;
  setOlderMark(view, false);
  conv.scrollTop = conv.scrollHeight;
  openSessionStream(view, Math.max(view.lastSeq, page.last_seq || 0));
  fillUp(view);
}

/** Load older turns while the top of the conversation is in sight. */
export function onConversationScroll() {
  const view = state.view;
  if (view && $('conversation').scrollTop < 300) loadOlder(view);
}

/** While the conversation does not fill its box, older turns are fetched. */
function fillUp(view) {
  const conv = $('conversation');
  if (view.nextBefore !== null && conv.scrollHeight <= conv.clientHeight + 300) loadOlder(view);
}

/** The turns before the first one shown, put above it. */
async function loadOlder(view) {
  if (view.loadingOlder || view.nextBefore === null) return;
  view.loadingOlder = true;
  setOlderMark(view, true);
  try {
    const page = await api('GET', sessionPath(view.sessionId) + '/history?turns=' + PAGE_TURNS + '&before=' + view.nextBefore);
    if (state.view !== view) return;
    setOlderMark(view, false);
    renderOlder(view, page.events || []);
    view.nextBefore = page.next_before ?? null;
  } catch (e) {
    if (state.view === view && e.status !== 401) showBanner(e.message);
    return;
  } finally {
    view.loadingOlder = false;
    if (state.view === view) setOlderMark(view, false);
  }
  fillUp(view);
}

/** A line at the top while older turns load; the start of the session once all are shown. */
function setOlderMark(view, loading) {
  const conv = $('conversation');
  let mark = conv.querySelector(':scope > .older-mark');
  if (!mark) {
    mark = document.createElement('div');
    mark.className = 'older-mark dim';
    mark.setAttribute('data-testid', 'older-mark');
  }
  if (conv.firstChild !== mark) conv.prepend(mark);
  const start = view.nextBefore === null;
  mark.setAttribute('data-state', loading ? 'loading' : start ? 'start' : 'more');
  mark.textContent = loading ? 'Loading earlier messages\u2026' : start ? 'Start of the session' : 'Scroll up for earlier messages';
}

/**
 * Subscribe from `after`. EventSource reconnects by itself, sending the
 * last `id:` as Last-Event-ID; when the server refuses a reconnect the
 * stream is closed and we open a new one from the last seq we rendered.
 */
export function openSessionStream(view, after) {
  const stream = new EventSource(streamUrl(sessionPath(view.sessionId) + '/events', { after: String(after) }));
  view.stream = stream;
  stream.onopen = () => {
    if (view.stream !== stream) return;
    view.retryDelay = 1000;
    setSessionConn('');
    reached();
  };
  stream.onmessage = (message) => {
    if (view.stream !== stream) return;
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (_) {
      return;
    }
    onSessionEvent(view, event);
  };
  stream.onerror = () => {
    if (view.stream !== stream) return;
    setSessionConn('reconnecting\u2026');
    if (stream.readyState === EventSource.CLOSED) reopenSessionStream(view);
  };
}

/** After a refused reconnect: find out why, then subscribe again. */
function reopenSessionStream(view) {
  clearTimeout(view.retryTimer);
  view.retryTimer = setTimeout(async () => {
    if (state.view !== view) return;
    try {
      await api('GET', sessionPath(view.sessionId));
    } catch (e) {
      if (e.status === 401) return; // the token message is shown
      if (e.status === 404) {
        setSessionConn('');
        showBanner('The session ' + view.sessionId + ' no longer exists.');
        return;
      }
    }
    if (state.view !== view) return;
    view.retryDelay = Math.min(view.retryDelay * 2, 30000);
    openSessionStream(view, view.lastSeq);
  }, view.retryDelay);
}

export function closeSessionStream() {
  const view = state.view;
  if (!view) return;
  clearTimeout(view.retryTimer);
  if (view.stream) view.stream.close();
  view.stream = null;
  setSessionConn('');
}

function setSessionConn(text) {
  $('session-conn').textContent = text;
}

/** One event of the selected session: drop repeats, render, update buttons. */
function onSessionEvent(view, event) {
  if (state.view !== view || event.session_id !== view.sessionId) return;
  if (typeof event.seq === 'number') {
    if (event.seq <= view.lastSeq) return; // already rendered (replay after reconnect)
    view.lastSeq = event.seq;
  }
  trackTurns(view, event);
  announceEvent(event);
  const conv = $('conversation');
  const before = conv.lastElementChild;
  renderEvent(view, event);
  if (event.type === 'user' || event.type === 'system') {
    // What the event added first (null: nothing).
    const added = before ? before.nextElementSibling : conv.firstElementChild;
    claimSent(view, event, added && added.parentNode === conv ? added : null);
  }
  // A first query sets the title; every turn changes the update time.
  if (event.type === 'user' || event.type === 'result') refreshSessionsSoon();
  if (event.type === 'system' || event.type === 'result') followSwitch(event);
  updateControls();
}

/**
 * What a screen reader is told (js/dom.js announce): a turn started or
 * ended, an approval waits. Only for events of now, not a replayed history.
 */
function announceEvent(event) {
  if (!event.at || Date.now() - Date.parse(event.at) > 10000) return;
  if (event.type === 'user') announce('Working\u2026');
  else if (event.type === 'approval_request') announce('Approval needed: ' + (event.name || 'a tool call'));
  else if (event.type === 'result') announce(event.stop_reason === 'end_turn' ? 'Reply finished' : 'Turn ended: ' + String(event.stop_reason || '').replace(/_/g, ' '));
}

/** A turn runs from its `user` event to its `result`. */
function trackTurns(view, event) {
  const turn = event.turn_id !== undefined ? event.turn_id : 'seq' + event.seq;
  if (event.type === 'user') view.openTurns.add(turn);
  if (event.type === 'result') {
    if (event.turn_id === undefined) view.openTurns.clear();
    else view.openTurns.delete(event.turn_id);
    view.interrupting = false;
  }
}
