// "Rewind to here" on a user message: a dialog with what the turns from
// that message on changed (the server's preview, POST .../rewind with
// `preview`), then the choice: take back the files, the conversation
// (continued in a fork) or both.
//
// Never: change anything before one of the dialog's buttons is pressed
// (the preview changes nothing).

import { $, el, showBanner } from './dom.js';
import { cut, firstLine } from './format.js';
import { api, sessionPath } from './api.js';
import { loadSessions, switchTo } from './sessions.js';
import { diffView, unifiedDiff } from './diff.js';

/** The "Rewind to here" action of a user message (the seq of its `user` event). */
export function rewindButton(view, event) {
  const label = 'Rewind to here: before \u201c' + cut(firstLine(String(event.text || '')), 60) + '\u201d';
  return el(
    'div',
    { class: 'msg-actions' },
    el('button', {
      type: 'button',
      class: 'small rewind-here',
      'data-testid': 'rewind-here',
      'data-seq': String(event.seq),
      'aria-label': label,
      'aria-haspopup': 'dialog',
      title: 'Take back the files and/or the conversation to before this message (shows what changes first)',
      text: '\u21b6 Rewind to here',
      onclick: (e) => openRewind(view.sessionId, event.seq, String(event.text || ''), e.currentTarget),
    }),
  );
}

/** What the open rewind dialog is about (null: closed). */
let rewinding = null;

const REWIND_MODES = ['both', 'conversation', 'code'];

/** How each action reads in the preview, and once done. */
const REWIND_ACTIONS = {
  restore: ['will be restored', 'restored'],
  remove: ['will be removed (created since)', 'removed'],
  recreate: ['will be recreated (deleted since)', 'recreated'],
  unchanged: ['already as it was', 'already as it was'],
  conflict: ['changed since by someone else', 'left as it is: changed since by someone else'],
};

/** Buttons of the dialog, enabled or not. */
function setRewindButtons(enabled, codeToo) {
  for (const mode of REWIND_MODES) $('rewind-' + mode).disabled = !enabled || (mode === 'code' && !codeToo);
}

/**
 * Open the dialog for the turn at `seq` of session `sessionId`: what the
 * turns from there on changed, from the server's preview (nothing is
 * changed yet), then the choices.
 */
async function openRewind(sessionId, seq, text, opener) {
  const dialog = $('rewind-dialog');
  const context = { sessionId, seq, text, opener, report: null, done: false };
  rewinding = context;
  $('rewind-prompt').textContent = '\u201c' + cut(text, 300) + '\u201d';
  $('rewind-status').textContent = 'Looking at what changed from this message on\u2026';
  $('rewind-files').replaceChildren();
  $('rewind-cannot').hidden = true;
  $('rewind-overwrite').checked = false;
  $('rewind-overwrite-row').hidden = true;
  $('rewind-result').hidden = true;
  $('rewind-error').hidden = true;
  $('rewind-actions').hidden = false;
  $('rewind-cancel').textContent = 'Cancel';
  setRewindButtons(false, false);
  if (!dialog.open) dialog.showModal();
  $('rewind-cancel').focus();
  let report;
  try {
    report = await api('POST', sessionPath(sessionId) + '/rewind', { seq, mode: 'both', preview: true });
  } catch (e) {
    if (rewinding !== context || e.status === 401) return;
    $('rewind-status').textContent = '';
    showRewindError(withoutRequest(e.message));
    return;
  }
  if (rewinding !== context) return;
  context.report = report;
  renderRewindPreview(report);
}

/** The preview: each file and what will happen to it, with its diff; what cannot be taken back. */
function renderRewindPreview(report) {
  const files = Array.isArray(report.files) ? report.files : [];
  const changing = files.filter((f) => f.action !== 'unchanged');
  const conflicts = files.filter((f) => f.action === 'conflict');
  $('rewind-status').textContent = changing.length === 0
    ? 'No file needs restoring: the files are as they were before this message.'
    : changing.length + ' file' + (changing.length === 1 ? '' : 's') + ' changed from this message on:';
  $('rewind-files').replaceChildren(...files.map((file) => rewindFile(file, 0)));
  const notes = Array.isArray(report.cannot_restore) ? report.cannot_restore : [];
  $('rewind-cannot-list').replaceChildren(...notes.map((note) => el('li', { text: note })));
  $('rewind-cannot').hidden = notes.length === 0;
  $('rewind-overwrite-row').hidden = conflicts.length === 0;
  setRewindButtons(true, changing.length > 0);
}

/** One file of a rewind: its path, what happens to it (`when`: 0 preview, 1 done), its diff. */
function rewindFile(file, when) {
  const action = REWIND_ACTIONS[file.action] ? file.action : 'restore';
  const conflict = action === 'conflict';
  const overwrote = when === 1 && conflict && rewinding && rewinding.report && rewinding.report.overwrote;
  const words = overwrote ? 'overwritten (it had been changed since by someone else)' : REWIND_ACTIONS[action][when];
  const node = el(
    'div',
    { class: 'rewind-file' + (conflict ? ' conflict' : ''), 'data-testid': 'rewind-file', 'data-path': file.path, 'data-action': action },
    el('div', { class: 'rewind-file-head' },
      conflict ? el('span', { class: 'rewind-conflict-mark', 'aria-hidden': 'true', text: '\u26a0' }) : null,
      el('span', { class: 'rewind-path', text: file.path }),
      el('span', { class: 'rewind-action', text: words })),
  );
  if (when === 0 && conflict) {
    node.append(el('div', { class: 'rewind-conflict-note', 'data-testid': 'rewind-conflict', text: 'Someone else (an editor, another session) changed this file after this session did: it is left as it is unless you overwrite it. Their change:' }));
  }
  if (when === 0 && file.binary) {
    node.append(el('div', { class: 'dim', text: '(a binary file: no diff)' }));
  } else if (when === 0 && file.diff) {
    const parsed = unifiedDiff(file.diff);
    const diff = parsed ? diffView(parsed.rows) : el('pre', { class: 'diff', text: file.diff });
    diff.setAttribute('data-testid', 'rewind-diff');
    node.append(diff);
  }
  return node;
}

/** An API error's message without the request it names (`POST /v1/...: 409 `): the dialog says which. */
const withoutRequest = (message) => String(message).replace(/^[A-Z]+ \S+: \d+ /, '');

function showRewindError(message) {
  $('rewind-error').textContent = message;
  $('rewind-error').hidden = false;
}

/** One of the three buttons: do the rewind, then follow the fork or show what was done. */
async function doRewind(mode) {
  const context = rewinding;
  if (!context || !context.report || context.done) return;
  const overwrite = $('rewind-overwrite').checked;
  setRewindButtons(false, false);
  $('rewind-error').hidden = true;
  $('rewind-status').textContent = mode === 'code' ? 'Restoring the files\u2026' : 'Rewinding\u2026';
  let report;
  try {
    report = await api('POST', sessionPath(context.sessionId) + '/rewind', { seq: context.seq, mode, overwrite });
  } catch (e) {
    if (rewinding !== context || e.status === 401) return;
    renderRewindPreview(context.report);
    showRewindError(withoutRequest(e.message));
    return;
  }
  if (rewinding !== context) return;
  context.done = true;
  context.report = report;
  const left = (Array.isArray(report.files) ? report.files : []).filter((f) => f.action === 'conflict' && !report.overwrote);
  if (report.forked) {
    // The conversation continues in the fork, as after /fork; the turn's
    // text waits in the input box to be sent again (or changed).
    closeRewind();
    await loadSessions();
    switchTo(report.forked);
    const box = $('input');
    if (box.value === '' && typeof report.prompt === 'string') box.value = report.prompt;
    box.focus();
    if (left.length) {
      showBanner('Rewound; left as they are, changed since by someone else: ' + left.map((f) => f.path).join(', ') + '.');
    }
    return;
  }
  showRewindResult(report, left);
}

/** Code only: the dialog says what was done, the conversation stays here. */
function showRewindResult(report, left) {
  const files = (Array.isArray(report.files) ? report.files : []).filter((f) => f.action !== 'unchanged');
  $('rewind-status').textContent = '';
  $('rewind-overwrite-row').hidden = true;
  $('rewind-cannot').hidden = true;
  $('rewind-files').replaceChildren();
  const result = $('rewind-result');
  result.replaceChildren(
    el('p', { class: 'rewind-done', text: files.length === 0
      ? 'Nothing needed restoring.'
      : left.length === files.length
        ? 'No file was changed.'
        : 'The files are back as they were before this message. The conversation stays as it is.' }),
    ...files.map((file) => rewindFile(file, 1)),
  );
  result.hidden = false;
  for (const mode of REWIND_MODES) $('rewind-' + mode).hidden = true;
  $('rewind-cancel').textContent = 'Close';
  $('rewind-cancel').focus();
}

function closeRewind() {
  const dialog = $('rewind-dialog');
  if (dialog.open) dialog.close();
}

/** The dialog's buttons; closing it (Cancel, Close, Esc) forgets what it was about. */
export function watchRewindDialog() {
  const dialog = $('rewind-dialog');
  for (const mode of REWIND_MODES) $('rewind-' + mode).addEventListener('click', () => doRewind(mode));
  $('rewind-cancel').addEventListener('click', closeRewind);
  dialog.addEventListener('close', () => {
    const context = rewinding;
    rewinding = null;
    for (const mode of REWIND_MODES) $('rewind-' + mode).hidden = false;
    if (context && !context.report?.forked && context.opener && context.opener.isConnected) context.opener.focus();
  });
}
