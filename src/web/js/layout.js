// Phone width: the session list is a panel over the page, opened and
// closed here (style.css's `max-width: 700px` rule draws it so).
//
// Never: decide what the list shows (sessions.js does).

import { $ } from './dom.js';

const narrow = window.matchMedia('(max-width: 700px)');

/** Open or close the session list (it only covers the page at phone width). */
export function showSessionList(open) {
  $('app').classList.toggle('sessions-open', !!open);
  $('toggle-sessions').setAttribute('aria-expanded', open ? 'true' : 'false');
}

export function sessionListCovers() {
  return narrow.matches && $('app').classList.contains('sessions-open');
}
