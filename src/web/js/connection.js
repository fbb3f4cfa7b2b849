// The selected session's event stream (SSE GET /v1/sessions/{id}/events:
// stored events replayed, then live ones): opened from a seq, reopened
// after a refused reconnect from the last seq rendered, closed; each of
// its events handed on once and in order (repeats dropped by seq), and
// which turns are open (a turn runs from its `user` event to its
// `result`).
//
// Never: draw an event here (transcript.js does), nor act on an event of
// a view that is no longer the selected one.

import { state } from './state.js';
import { $, announce, showBanner } from './dom.js';
import { api, reached, sessionPath, streamUrl } from './api.js';
import { refreshSessionsSoon } from './sessions.js';
import { renderEvent } from './transcript.js';
import { followSwitch } from './switches.js';
import { claimSent, updateControls } from './composer.js';

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
