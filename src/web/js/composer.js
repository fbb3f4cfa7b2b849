// The input box and its buttons: sending (queries and slash commands
// alike, a query with the images waiting above the box), the inputs sent
// and waiting behind the running turn, Interrupt, which controls can be
// used now (one Send/Stop button: Send while idle, Stop while a turn
// runs), and the keys (Enter sends, Esc interrupts). The focus goes back
// to the input box after a send or a stop.
//
// An input the server did not take (its POST failed) stays in the
// conversation marked "Not sent", with Retry.
//
// Never: show a query in the conversation when it is sent: its `user`
// event does when its turn starts (only a command's typed line is added
// here, above its answer, and an input that could not be sent).

import { state } from './state.js';
import { $, append, el, hideBanner, keepScrolled, line, showBanner } from './dom.js';
import { api, sessionPath } from './api.js';
import { noteOwnInput } from './switches.js';
import { renderAttachments, showAttachProblem } from './images.js';
import { hideSuggestions, onSuggestionKey } from './suggestions.js';
import { sessionListCovers, showSessionList } from './layout.js';

/**
 * Post the input box's text (queries and slash commands alike), a query
 * with the images waiting above the box. Until its first event comes,
 * the input is listed as sent (shown while a turn runs, behind which it
 * waits); a command's line then goes above its answer, as the terminal
 * shows what was typed. A query shows as its `user` event when its turn
 * starts.
 */
export async function sendInput(typed, typedImages) {
  const box = $('input');
  // `typed`: a text sent without the box (a status menu's command, a Retry,
  // with `typedImages` the images of the message it sends again): the box
  // and the images waiting above it stay as they are.
  const fromBox = typeof typed !== 'string';
  const text = fromBox ? box.value : typed;
  const sessionId = state.selectedId;
  const view = state.view;
  if (!sessionId || !view) return false;
  if (text.trim() === '') {
    if (state.pendingImages.length) showAttachProblem('Type a message to go with the images, then send.');
    return false;
  }
  const images = fromBox ? takeImages(view, text) : typedImages || [];
  if (fromBox) {
    hideSuggestions();
    box.value = '';
    box.focus(); // after a click on Send, typing goes on in the box
  }
  const sent = { text, images: images.length, inputId: null };
  view.sent.push(sent);
  renderQueued();
  state.postsInFlight += 1;
  const body = { text };
  if (images.length) {
    body.images = images.map((image) => ({
      media_type: image.mediaType,
      data: image.data,
      // Its file name, kept with it (the server takes at most 255 characters, no control ones).
      source: Array.from(String(image.name || '').replace(/[\u0000-\u001f\u007f-\u009f]/g, '')).slice(0, 255).join(''),
    }));
  }
  try {
    const answer = await api('POST', sessionPath(sessionId) + '/input', body);
    hideBanner();
    if (answer && answer.input_id !== undefined) {
      sent.inputId = answer.input_id;
      const early = view.unclaimed.get(answer.input_id);
      if (early) settleSent(view, sent, early.event, early.anchor);
      noteOwnInput(sessionId, answer.input_id);
    }
    return true;
  } catch (e) {
    forgetSent(view, sent);
    if (e.status === 401) return false;
    // Not sent: marked so in the conversation, with Retry (the text and its images).
    if (state.view === view) {
      append(notSent(text, images, e.message));
    } else {
      showBanner(e.message, e.kind);
      if (images.length && state.pendingImages.length === 0) {
        state.pendingImages = images; // the images wait for the next message again
        renderAttachments('');
      }
    }
    return false;
  } finally {
    state.postsInFlight -= 1;
    if (state.postsInFlight === 0) state.earlySwitches.clear();
    if (!view.sent.some((s) => s.inputId === null)) view.unclaimed.clear();
    renderQueued();
  }
}

/**
 * An input whose POST failed: its text, "Not sent" and why, and Retry,
 * which sends it again with its images (the mark goes; a new one comes
 * when it fails again).
 */
function notSent(text, images, why) {
  const node = el('div', { class: 'msg user not-sent', 'data-testid': 'message-not-sent', role: 'alert' });
  const retry = el('button', {
    type: 'button',
    class: 'small',
    'data-testid': 'retry-send',
    text: 'Retry',
    onclick: async () => {
      retry.disabled = true;
      node.setAttribute('data-retrying', 'true');
      await sendInput(text, images);
      node.remove(); // sent, or a new mark at the end says it was not
    },
  });
  node.append(
    el('div', { class: 'not-sent-text', text: text + (images.length ? ' (+' + images.length + ' image' + (images.length === 1 ? '' : 's') + ')' : '') }),
    el('div', { class: 'not-sent-why' },
      el('span', { class: 'not-sent-mark', text: '\u26a0 Not sent' }),
      el('span', { class: 'dim', text: ' \u00b7 ' + why + ' ' }),
      retry),
  );
  return node;
}

/**
 * The images waiting for a query, taken to go with `text`: none when it
 * is a slash command, which takes no images (they stay for the next query).
 */
function takeImages(view, text) {
  if (state.pendingImages.length === 0) return [];
  if (isSlashCommand(view, text)) {
    showAttachProblem('A slash command takes no images: they stay here for your next message.');
    return [];
  }
  const images = state.pendingImages;
  state.pendingImages = [];
  renderAttachments('');
  return images;
}

/**
 * Whether the session reads `text` as a slash command, as it parses it
 * (actors/src/session/core/commands/mod.rs): `/` and a word of letters
 * and dashes, or the name of one of its custom commands.
 */
function isSlashCommand(view, text) {
  const match = /^\/(\S+)/.exec(text.trimStart());
  if (!match) return false;
  return /^[A-Za-z-]+$/.test(match[1]) || view.commands.some((c) => c.name === match[1]);
}

/**
 * The first event of an input (its `user` event, or a command's answer),
 * `anchor` the element it added: settles the input this page sent, or is
 * kept until a POST still on its way answers with that input id.
 */
export function claimSent(view, event, anchor) {
  if (event.turn_id === undefined) return;
  const sent = view.sent.find((s) => s.inputId === event.turn_id);
  if (sent) settleSent(view, sent, event, anchor);
  else if (view.sent.some((s) => s.inputId === null) && !view.unclaimed.has(event.turn_id)) {
    view.unclaimed.set(event.turn_id, { event, anchor });
  }
}

/** An input's first event came: a command's typed line goes above its answer. */
function settleSent(view, sent, event, anchor) {
  forgetSent(view, sent);
  view.unclaimed.delete(event.turn_id);
  if (event.type === 'system' && state.view === view) {
    const echo = line('msg user command', 'message-command', sent.text, event);
    if (anchor && anchor.isConnected) keepScrolled(() => anchor.before(echo));
    else append(echo);
  }
  renderQueued();
}

function forgetSent(view, sent) {
  const at = view.sent.indexOf(sent);
  if (at >= 0) view.sent.splice(at, 1);
}

/** The inputs waiting behind the running turn, above the input box. */
export function renderQueued() {
  const view = state.view;
  const waiting = view && view.openTurns.size > 0 ? view.sent : [];
  const box = $('queued');
  box.hidden = waiting.length === 0;
  const label = (s) => s.text + (s.images ? ' (+' + s.images + ' image' + (s.images === 1 ? '' : 's') + ')' : '');
  box.replaceChildren(...waiting.map((s) => el('div', { class: 'queued-item', 'data-testid': 'queued-input', title: 'Sent; runs when the turn before it ends', text: label(s) })));
}

/** Cancel the running turn of the selected session. */
export async function interrupt() {
  const view = state.view;
  if (!view) return;
  view.interrupting = true;
  const fromButton = document.activeElement === $('interrupt');
  updateControls();
  if (fromButton) $('input').focus(); // the Stop button goes away with the turn
  try {
    await api('POST', sessionPath(view.sessionId) + '/interrupt');
  } catch (e) {
    view.interrupting = false;
    updateControls();
    if (e.status !== 401) showBanner(e.message, e.kind);
  }
}

/**
 * Enable what can be used now: input with a session; one of Send (idle)
 * and Stop (a turn runs; disabled while it stops) is shown.
 */
export function updateControls() {
  const view = state.view;
  $('input').disabled = !view;
  $('send').disabled = !view;
  $('attach').disabled = !view;
  const running = !!view && view.openTurns.size > 0;
  $('interrupt').disabled = !running || view.interrupting;
  $('interrupt').textContent = running && view.interrupting ? 'Stopping\u2026' : 'Stop';
  $('send').hidden = running;
  $('interrupt').hidden = !running;
  $('app').classList.toggle('running', running);
  $('status-running').hidden = !running;
  $('status-running').textContent = view && view.interrupting ? '\u25cf interrupting\u2026' : '\u25cf running \u00b7 Esc interrupts';
  renderQueued();
}

/** Enter sends, Shift+Enter is a new line (not while an IME composes); keys for the command suggestions first. */
export function onInputKey(event) {
  if (onSuggestionKey(event)) return;
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    sendInput();
  }
}

/**
 * Esc anywhere on the page: closes the session list when it covers the
 * page (phone width), else interrupts the running turn, as in the terminal.
 */
export function onPageKey(event) {
  if (event.key !== 'Escape' || event.isComposing || event.defaultPrevented) return;
  if ($('rewind-dialog').open) return; // Esc closes the dialog, and only that
  if (sessionListCovers()) {
    event.preventDefault();
    showSessionList(false);
    return;
  }
  const view = state.view;
  if (view && view.openTurns.size > 0 && !view.interrupting) {
    event.preventDefault();
    interrupt();
  }
}
