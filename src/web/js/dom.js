// Making the page's elements, and the places every part of the page
// writes to: the end of the conversation (kept at the bottom when it was
// there), the error banner (a banner of a kind, such as 'unreachable', is
// taken down when that trouble ends) and the small live status a screen
// reader reads out (the conversation is not a live region).
//
// el() puts strings into the page as text nodes, never parsed as HTML:
// the rule the whole page keeps (main.js). Never: set innerHTML, or know
// about sessions, events or the API.

import { fullTime } from './format.js';

/** The element with this id. */
export function $(id) {
  return document.getElementById(id);
}

/**
 * Make an element. `props`: attributes (strings), plus `class`, `text`
 * (textContent) and `on<event>` handlers. Children: nodes or strings
 * (strings become text nodes, so they are never parsed as HTML).
 */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/** Inside batch(): the conversation is being filled at once (no measuring per node). */
let batching = false;

/** Run `fn`, which adds many nodes to the conversation, without measuring
 *  the conversation for each one (the caller places the scroll after). */
export function batch(fn) {
  const was = batching;
  batching = true;
  try {
    fn();
  } finally {
    batching = was;
  }
}

/** Run `fn` (which adds to the conversation) and keep the view at the
 *  bottom if it was there before. */
export function keepScrolled(fn) {
  if (batching) {
    fn();
    return;
  }
  const conv = $('conversation');
  const atBottom = conv.scrollHeight - conv.scrollTop - conv.clientHeight < 48;
  fn();
  if (atBottom) conv.scrollTop = conv.scrollHeight;
}

/** Add one node at the end of the conversation. */
export function append(node) {
  keepScrolled(() => $('conversation').append(node));
  return node;
}

/** A one-block line with a test id and the event's time as tooltip. */
export function line(className, testId, text, event) {
  return el('div', { class: className, 'data-testid': testId, title: event ? fullTime(event.at) : null, text });
}

/**
 * Show an error above the conversation until dismissed or replaced;
 * `kind` (optional) names the trouble, for hideBanner(kind).
 */
export function showBanner(message, kind) {
  const banner = $('banner');
  banner.replaceChildren(
    el('span', { text: message }),
    el('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', text: '\u00d7', onclick: () => hideBanner() }),
  );
  banner.dataset.kind = kind || '';
  banner.hidden = false;
}

/** Take the banner down; with `kind`, only a banner of that kind. */
export function hideBanner(kind) {
  const banner = $('banner');
  if (kind && banner.dataset.kind !== kind) return;
  banner.hidden = true;
}

/** Say `text` to a screen reader (the page's one polite live region). */
export function announce(text) {
  const status = $('live-status');
  if (status.textContent !== text) status.textContent = text;
}
