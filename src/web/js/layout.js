// Phone width: the session list is a panel over the page, opened and
// closed here (style.css's `max-width: 700px` rule draws it so). And
// where the keyboard goes: the skip link to the input box, the input box
// focused when a session opens (not on a touch screen, where it would
// pop up the keyboard).
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

const touch = window.matchMedia('(hover: none) and (pointer: coarse)');

/** Focus the input box (if it can take it), unless on a touch screen. */
export function focusInput() {
  const box = $('input');
  if (!touch.matches && !box.disabled) box.focus();
}

/**
 * The skip link focuses the input box; following its `#input` would make
 * the address name a session called "input".
 */
export function watchSkipLink() {
  $('skip-link').addEventListener('click', (event) => {
    event.preventDefault();
    $('input').focus();
  });
}
