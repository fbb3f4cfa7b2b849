// The model's Markdown (replies, compaction summaries) as part of the
// page: marked (window.marked) turns it into HTML with any raw HTML in it
// escaped, and DOMPurify (window.DOMPurify) cleans that before it is
// parsed into the page. Both are classic scripts copied from npm into
// src/web/vendor/, which index.html loads before the modules; they are
// set up at the first render.
//
// The only place where text from the server becomes HTML. Never: hand the
// page markup that did not go through the sanitiser, nor loosen what
// SANITIZE forbids (nothing that loads, submits or styles).

import { el } from './dom.js';
import { highlightInto, languageOf } from './highlight.js';
import { copyButton } from './copy.js';

/** `&`, `<`, `>` and quotes as entities. */
function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/**
 * The Markdown parser: GitHub's flavour (tables, fenced code, strikethrough),
 * with raw HTML in the text shown as text rather than made into elements
 * (a model writing "<div>" in prose means the word; a reply must never
 * bring its own elements, scripts or handlers into the page), and an
 * image as a link to it: the page loads nothing from an address a reply
 * names (nor could it: its Content-Security-Policy allows no image from
 * elsewhere). Null when marked is missing.
 */
function makeParser() {
  if (!window.marked || typeof window.marked.Marked !== 'function') return null;
  return new window.marked.Marked({
    gfm: true,
    breaks: false,
    renderer: {
      html(token) {
        const text = escapeHtml(token.text);
        return token.block ? '<p class="raw-html">' + text + '</p>\n' : text;
      },
      image(token) {
        const label = escapeHtml('[image: ' + (token.text || token.href || '') + ']');
        return /^https?:/i.test(token.href || '') ? '<a href="' + escapeHtml(token.href) + '">' + label + '</a>' : label;
      },
    },
  });
}

/** The sanitiser, set up once: links open in a new tab, checkboxes are read-only. Null when DOMPurify is missing. */
function makePurifier() {
  const purify = window.DOMPurify;
  if (!purify || typeof purify.sanitize !== 'function' || !purify.isSupported) return null;
  purify.addHook('afterSanitizeAttributes', (node) => {
    if (node.nodeName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
    if (node.nodeName === 'INPUT') node.setAttribute('disabled', '');
  });
  return purify;
}

/** `{markdown, purifier}`, made at the first render (the vendor scripts ran before any module). */
let renderers = null;

function markdownRenderers() {
  if (!renderers) renderers = { markdown: makeParser(), purifier: makePurifier() };
  return renderers;
}

const SANITIZE = {
  RETURN_DOM_FRAGMENT: true,
  // Nothing that loads, submits or styles (marked makes none of these;
  // this is the second wall), inline styles dropped.
  FORBID_TAGS: ['img', 'style', 'form', 'button', 'textarea', 'select', 'option', 'iframe', 'object', 'embed', 'video', 'audio', 'source', 'picture', 'svg', 'math'],
  FORBID_ATTR: ['style', 'id', 'name'],
  ALLOW_DATA_ATTR: false,
};

/**
 * Markdown as a fragment of the page: parsed by marked, cleaned by
 * DOMPurify. Plain text when either script is missing.
 */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  const { markdown, purifier } = markdownRenderers();
  if (!markdown || !purifier) {
    fragment.append(el('p', { class: 'plain-text', text }));
    return fragment;
  }
  let clean;
  try {
    clean = purifier.sanitize(markdown.parse(String(text)), SANITIZE);
  } catch (_) {
    fragment.append(el('p', { class: 'plain-text', text }));
    return fragment;
  }
  // Wide tables scroll on their own instead of widening the page.
  for (const table of clean.querySelectorAll('table')) {
    const box = el('div', { class: 'table-box' });
    table.replaceWith(box);
    box.append(table);
  }
  for (const pre of clean.querySelectorAll('pre')) codeBlock(pre);
  fragment.append(clean);
  return fragment;
}

/**
 * A fenced code block as a box: a header with its language (the fence's
 * info string, or "text") and a Copy button, and the code highlighted
 * (highlight.js: text nodes in classed spans, made after the sanitiser).
 */
function codeBlock(pre) {
  const code = pre.querySelector('code') || pre;
  const text = code.textContent;
  const fence = /(?:^|\s)language-(\S+)/.exec(code.getAttribute('class') || '');
  const label = fence ? fence[1] : 'text';
  const lang = languageOf(label);
  if (lang) highlightInto(code, text, lang);
  const box = el('div', { class: 'code-block', 'data-testid': 'code-block', 'data-language': label });
  pre.replaceWith(box);
  box.append(
    el('div', { class: 'code-head' },
      el('span', { class: 'code-language', 'data-testid': 'code-language', text: label }),
      copyButton('Copy code', () => text, 'copy-code')),
    pre,
  );
}
