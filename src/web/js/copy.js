// Copy buttons: a code block's text, an assistant message's Markdown
// source, a command's text, a diff as unified diff text, put on the
// clipboard with a visible "Copied" for a moment.
//
// The button's visible label comes from its data-label attribute (CSS
// ::before), so a copy button adds no text to what it sits in (a diff's
// or a message's textContent stays what it shows). Never: read the page
// to find what to copy (the caller hands the text), nor copy anything but
// on a click.

import { el } from './dom.js';

/** Put `text` on the clipboard: the Clipboard API, else a selected textarea and the copy command. */
async function writeClipboard(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = el('textarea', { class: 'copy-scratch', readonly: '', 'aria-hidden': 'true' });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('the browser refused to copy');
}

/**
 * A "Copy" button: `what` names it for screen readers ("Copy code"),
 * `text()` gives what it copies at the click. After a copy it says
 * "Copied" (data-copied="true") for two seconds; "Not copied" when the
 * browser refused.
 */
export function copyButton(what, text, testId) {
  let timer = null;
  const button = el('button', {
    type: 'button',
    class: 'copy-button',
    'data-testid': testId || 'copy',
    'data-label': 'Copy',
    'aria-label': what,
    title: what,
  });
  const show = (label, copied) => {
    button.setAttribute('data-label', label);
    button.setAttribute('aria-label', copied === null ? what : label);
    if (copied === null) button.removeAttribute('data-copied');
    else button.setAttribute('data-copied', copied ? 'true' : 'false');
  };
  button.addEventListener('click', async (event) => {
    event.preventDefault();
    event.stopPropagation();
    try {
      await writeClipboard(String(text()));
      show('Copied', true);
    } catch (_) {
      show('Not copied', false);
    }
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      show('Copy', null);
    }, 2000);
  });
  return button;
}
