// agentbus web page: the session list on the left, the selected session's
// conversation on the right, an input box below it. This is its entry
// point (index.html loads it as a module, after the two vendor scripts):
// start() wires the page's controls to the modules beside it and boots.
// Every module does nothing when it is loaded; only start() does, at
// DOMContentLoaded. Never: put logic here beyond wiring and booting.
//
// Talks to the HTTP API of `agentbus serve` (docs/api.md, api.js):
//   GET/POST /v1/sessions, POST .../fork, DELETE /v1/sessions/{id},
//   POST .../input, POST .../interrupt, POST .../approvals/{request_id},
//   POST .../rewind (a preview, then the rewind: "Rewind to here"),
//   GET /v1/health, GET /v1/models (the profiles' prices, for the cost),
//   SSE GET /v1/events (session lifecycle) and GET /v1/sessions/{id}/events
//   (one session's events: stored ones replayed, then live ones); and the
//   page's own /commands.json (the built-in slash commands, for suggestions).
// Shows the same information as the terminal chat (src/frontend/output/render.rs).
//
// Every piece of text that comes from the server or the user is put into the
// page with textContent / text nodes, never as HTML — except the model's
// Markdown (replies, compaction summaries): marked (window.marked) turns it
// into HTML with any raw HTML in it escaped, and DOMPurify
// (window.DOMPurify) cleans that before it is parsed into the page
// (markdown.js, renderMarkdown). Both are copied from npm into
// src/web/vendor/. Images (a query's, pasted or dropped, and those its
// `user` event carries) are shown as <img> elements with `data:` URLs made
// here from their bytes (images.js).

import { state } from './state.js';
import { $ } from './dom.js';
import { api, showTokenProblem, tokenRefusedInAddress } from './api.js';
import { filterSessions, loadSessions, newSession, onSearchKey, selectSession, watchLifecycle } from './sessions.js';
import { onConversationScroll } from './connection.js';
import { loadPrices, watchStatusMenus } from './status.js';
import { watchRewindDialog } from './rewind.js';
import { onPaste, watchAttachButton, watchDrops } from './images.js';
import { hideSuggestions, loadBuiltInCommands, updateSuggestions } from './suggestions.js';
import { interrupt, onInputKey, onPageKey, sendInput, updateControls } from './composer.js';
import { sessionListCovers, showSessionList, watchSkipLink } from './layout.js';
import { watchNotifyToggle } from './attention.js';

async function start() {
  if (tokenRefusedInAddress()) {
    showTokenProblem(true);
    return;
  }
  $('app').hidden = false;
  watchSkipLink();
  $('new-session').addEventListener('click', newSession);
  $('session-search').addEventListener('input', filterSessions);
  $('session-search').addEventListener('keydown', onSearchKey);
  $('conversation').addEventListener('scroll', onConversationScroll, { passive: true });
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    sendInput();
  });
  $('input').addEventListener('keydown', onInputKey);
  $('input').addEventListener('input', updateSuggestions);
  $('input').addEventListener('blur', hideSuggestions);
  $('input').addEventListener('paste', onPaste);
  watchDrops();
  watchAttachButton();
  $('interrupt').addEventListener('click', interrupt);
  watchRewindDialog();
  watchStatusMenus((text) => sendInput(text));
  watchNotifyToggle();
  document.addEventListener('keydown', onPageKey);
  $('toggle-sessions').addEventListener('click', () => showSessionList(!$('app').classList.contains('sessions-open')));
  // At phone width, a tap beside the open session list closes it.
  $('app').addEventListener('click', (event) => {
    if (event.target === $('app') && sessionListCovers()) showSessionList(false);
  });
  window.addEventListener('hashchange', () => {
    const id = decodeURIComponent(location.hash.slice(1)) || null;
    if (id !== state.selectedId) selectSession(id);
  });
  updateControls();

  api('GET', '/v1/health')
    .then((health) => {
      $('server-version').textContent = health && health.version ? 'agentbus ' + health.version : '';
    })
    .catch(() => {});
  loadPrices();
  loadBuiltInCommands();
  // The session in the address opens while the list loads.
  const listed = loadSessions();
  const fromHash = decodeURIComponent(location.hash.slice(1));
  if (fromHash) selectSession(fromHash);
  await listed;
  if ($('app').hidden) return; // the token was refused
  if (!fromHash) showSessionList(true);
  watchLifecycle();
}

document.addEventListener('DOMContentLoaded', start);
