// Tool calls and their results in the conversation, kept quiet: a call's
// name and arguments on one line (summarised as src/frontend/output/render.rs
// does, paths relative to the session's workspace) with its open/closed
// state shown (\u25b8/\u25be, aria-expanded), an edit or a write shown as
// its diff, a result under its call as its first lines (a command's last
// lines and its exit code) or, opened, the whole output (never both), and
// the calls of one model step grouped in one row that opens.
//
// Never: put a tool's input or output into the page as HTML (text only).

import { $, append, el, keepScrolled } from './dom.js';
import { cut, firstLine } from './format.js';
import { diffLines, diffView, splitLines, unifiedDiff } from './diff.js';
import { languageOfPath } from './highlight.js';
import { copyButton } from './copy.js';
import { findSession, state } from './state.js';

/** Tools whose call is shown as the change it makes to a file. */
export const FILE_TOOLS = new Set(['edit_file', 'write_file']);

/**
 * A tool call: name and its arguments on one line (in the model's order;
 * for an edit or a write, `path` first), the whole input on demand. An
 * edit or a write shows its diff at once.
 */
export function toolCall(block) {
  const node = el(
    'details',
    { class: 'tool-call', 'data-testid': 'tool-call', 'data-tool': block.name, 'data-call-id': block.id, 'data-file': pathOf(block.input) },
    disclosureSummary(block.name + '(' + summarizeInput(block.name, block.input) + ')', { 'data-testid': 'tool-call-summary' }),
  );
  const diff = FILE_TOOLS.has(block.name) ? inputDiff(block.name, block.input) : null;
  if (diff) {
    node.classList.add('file-change');
    node.open = true;
    diff.setAttribute('data-testid', 'tool-diff');
    diff.setAttribute('data-diff-source', 'input');
    node.append(diff);
  } else {
    node.append(el('pre', { text: typeof block.input === 'string' ? block.input : JSON.stringify(block.input, null, 2) }));
  }
  // A command can be copied as it is (to run it in a terminal): the button
  // is in the opened call, not in its summary (a control inside a control
  // is out of reach for keyboards and screen readers).
  const command = block.name === 'bash' && block.input && typeof block.input.command === 'string' ? block.input.command : null;
  if (command !== null) {
    node.querySelector(':scope > summary').after(copyButton('Copy command', () => command, 'copy-command'));
  }
  // Started in the background, a command has not ended when its result comes.
  if (block.name === 'bash' && block.input && block.input.run_in_background === true) node.dataset.background = 'true';
  watchDisclosure(node);
  return node;
}

/**
 * The calls of one model step (two or more) as one closed row: "3 tool
 * calls: read_file, edit_file, bash", the calls (and their results, as
 * they come) inside.
 */
export function toolGroup(calls) {
  const names = calls.map((c) => c.dataset.tool);
  const node = el(
    'details',
    { class: 'tool-group', 'data-testid': 'tool-group', 'data-count': String(calls.length) },
    disclosureSummary(calls.length + ' tool calls: ' + names.join(', '), { 'data-testid': 'tool-group-summary' }),
    ...calls,
  );
  watchDisclosure(node);
  return node;
}

/** A <summary> starting with the open/closed sign (\u25b8 closed, \u25be open). */
function disclosureSummary(text, props) {
  return el('summary', props, el('span', { class: 'disclosure', 'aria-hidden': 'true', text: '\u25b8' }), ' ' + text);
}

/** Keep a <details>' sign and its summary's aria-expanded as it opens and closes. */
function watchDisclosure(node) {
  const show = () => {
    const summary = node.querySelector(':scope > summary');
    if (!summary) return;
    summary.setAttribute('aria-expanded', node.open ? 'true' : 'false');
    const sign = summary.querySelector(':scope > .disclosure');
    if (sign) sign.textContent = node.open ? '\u25be' : '\u25b8';
  };
  show();
  node.addEventListener('toggle', show);
}

/** `tool_result`: under its call, quietly (see resultNode). */
export function renderToolResult(event) {
  const output = event.output || '';
  // An edit's output is a line and the diff as it was applied (with line
  // numbers): the diff replaces the one its call showed from the input.
  const applied = event.name === 'edit_file' && !event.is_error ? unifiedDiff(output) : null;
  const call = callNode(event.call_id);
  if (applied) {
    const shown = call && call.querySelector('[data-testid="tool-diff"]');
    if (shown) {
      const path = call.getAttribute('data-file');
      const diff = diffView(applied.rows, languageOfPath(path), path);
      diff.setAttribute('data-testid', 'tool-diff');
      diff.setAttribute('data-diff-source', 'result');
      keepScrolled(() => shown.replaceWith(diff));
    }
  }
  const node = resultNode(event, output, applied, Boolean(call && call.dataset.background === 'true'));
  if (call) {
    // Right under its call (and a card still asking about it).
    let after = call;
    while (after.nextElementSibling && after.nextElementSibling.classList.contains('approval-card')) after = after.nextElementSibling;
    keepScrolled(() => after.after(node));
    const group = call.closest('details.tool-group');
    if (group && event.is_error) group.classList.add('has-error');
  } else {
    append(node);
  }
}

/**
 * A result: closed, its first lines (a command's last ones, and its exit
 * code); opened, the whole output instead. An applied edit says what it
 * did in one line (its call shows the diff). Nothing to open when the
 * first lines are all of it.
 */
function resultNode(event, output, applied, background) {
  const marker = event.cancelled ? ' (cancelled)' : '';
  const node = el('details', {
    class: 'tool-result' + (event.is_error ? ' error' : ''),
    'data-testid': 'tool-result',
    'data-error': event.is_error ? 'true' : 'false',
    'data-call-id': event.call_id,
    title: event.name + ' \u00b7 ' + event.duration_ms + ' ms',
  });
  const summary = el('summary', {});
  node.append(summary);
  if (applied) {
    summary.textContent = '\u2514 ' + relativePaths(firstLine(applied.head.trim()) || 'edited');
    return noMore(node);
  }
  const ran = event.name === 'bash' && !background ? commandEnd(output, event.is_error) : null;
  const lines = splitLines(ran ? ran.output : output);
  const preview = ran ? tailPreview(lines) : headPreview(lines);
  summary.append('\u2514 ');
  if (ran && ran.end) {
    summary.append(el('span', {
      class: 'exit-code' + (ran.code === 0 ? ' ok' : ''),
      'data-testid': 'exit-code',
      'data-exit-code': ran.code === null ? '' : String(ran.code),
      text: ran.end,
    }), ' ');
  }
  if (event.is_error && !(ran && ran.end)) summary.append('error' + marker + ': ');
  else if (marker) summary.append(marker.trim() + ': ');
  summary.append(el('span', { class: 'result-preview', 'data-testid': 'result-preview', text: relativePaths(preview.text) }));
  if (!preview.cut) return noMore(node);
  summary.append(el('span', {
    class: 'result-full-label dim',
    'data-testid': 'result-full-label',
    text: 'all ' + lines.length + ' lines',
  }));
  node.append(el('pre', { 'data-testid': 'result-output', text: ran ? lines.join('\n') : output }));
  watchDisclosure(node);
  return node;
}

/** A result with nothing more to show: its line does not open. */
function noMore(node) {
  node.classList.add('no-more');
  node.querySelector('summary').addEventListener('click', (e) => e.preventDefault());
  return node;
}

/**
 * How a `bash` call ended, read from the form its tool writes
 * (actors/src/tools/process.rs): a last line `Exit code: N` or `Killed by
 * signal N (NAME)` when it failed; nothing when it exited 0. Null when an
 * error says nothing of the kind (refused, timed out...).
 */
function commandEnd(output, isError) {
  const lines = output.split('\n');
  const last = lines[lines.length - 1];
  let m = /^Exit code: (-?\d+)$/.exec(last);
  if (m) return { code: Number(m[1]), end: 'exit ' + m[1], output: lines.slice(0, -1).join('\n') };
  m = /^Killed by signal (\d+) \(([^)]*)\)$/.exec(last);
  if (m) return { code: null, end: m[2] || 'signal ' + m[1], output: lines.slice(0, -1).join('\n') };
  if (isError) return { code: null, end: null, output };
  return { code: 0, end: 'exit 0', output };
}

/** The first three lines, and how many more there are. */
function headPreview(lines) {
  if (lines.length === 0) return { text: '(no output)', cut: false };
  let cutLine = false;
  let text = lines.slice(0, 3).map((l) => {
    cutLine = cutLine || l.length > 120;
    return cut(l, 120);
  }).join('\n  ');
  if (lines.length > 3) text += '\n  \u2026 +' + (lines.length - 3) + ' lines';
  return { text, cut: lines.length > 3 || cutLine };
}

/** A command's last three lines (what it ended with), and how many came before. */
function tailPreview(lines) {
  if (lines.length === 0 || (lines.length === 1 && lines[0] === '(no output)')) return { text: '(no output)', cut: false };
  let cutLine = false;
  const tail = lines.slice(-3).map((l) => {
    cutLine = cutLine || l.length > 120;
    return cut(l, 120);
  });
  const text = (lines.length > 3 ? '\u2026 ' + (lines.length - 3) + ' earlier lines\n  ' : '') + tail.join('\n  ');
  return { text, cut: lines.length > 3 || cutLine };
}

/** The selected session's workspace (its record says), if known. */
function workspace() {
  const session = state.view ? findSession(state.view.sessionId) : null;
  return session && typeof session.workspace === 'string' && session.workspace.length > 1
    ? session.workspace.replace(/\/+$/, '')
    : null;
}

/** A path as the page shows it: relative to the session's workspace when inside it. */
export function relativePath(path) {
  const root = workspace();
  if (!root || typeof path !== 'string') return path;
  if (path === root) return '.';
  return path.startsWith(root + '/') ? path.slice(root.length + 1) : path;
}

/** A text with the workspace's absolute paths in it made relative. */
function relativePaths(text) {
  const root = workspace();
  return root ? text.split(root + '/').join('') : text;
}

/** The tool call element of `callId`, if it is shown. */
export function callNode(callId) {
  return [...$('conversation').querySelectorAll('[data-testid="tool-call"]')].find((n) => n.dataset.callId === callId) || null;
}

/** A tool input's `path`, when it has one. */
function pathOf(input) {
  return input && typeof input === 'object' && typeof input.path === 'string' ? input.path : null;
}

/** An edit's or a write's change from its input, as a diff (null: not that shape). */
export function inputDiff(name, input) {
  const args = input && typeof input === 'object' ? input : {};
  if (name === 'edit_file' && typeof args.old_string === 'string' && typeof args.new_string === 'string') {
    return diffView(diffLines(args.old_string, args.new_string), languageOfPath(args.path), pathOf(args));
  }
  if (name === 'write_file' && typeof args.content === 'string') {
    return diffView(splitLines(args.content).map((text) => ({ kind: 'add', text })), languageOfPath(args.path), pathOf(args));
  }
  return null;
}

// Text summaries, as in src/frontend/output/render.rs.

/**
 * `key: value, ...` for one line, long values cut, in the order the model
 * wrote them. An edit or a write names its `path` first and leaves out the
 * text it writes (its diff shows it).
 */
function summarizeInput(name, input) {
  // The plan panel shows what a todo_write call wrote.
  if (name === 'todo_write' && input && Array.isArray(input.todos)) {
    return input.todos.length + (input.todos.length === 1 ? ' item' : ' items');
  }
  let text;
  if (input && typeof input === 'object' && !Array.isArray(input)) {
    let entries = Object.entries(input);
    if (FILE_TOOLS.has(name)) {
      const written = new Set(['old_string', 'new_string', 'content']);
      entries = entries.filter(([key]) => key === 'path').concat(entries.filter(([key]) => key !== 'path' && !written.has(key)));
      if (typeof input.content === 'string') entries.push(['lines', splitLines(input.content).length]);
    }
    entries = entries.map(([key, value]) => [key, key === 'path' ? relativePath(value) : value]);
    text = entries
      .map(([key, value]) => key + ': ' + (typeof value === 'string' ? JSON.stringify(firstLine(value)) : JSON.stringify(value)))
      .join(', ');
  } else if (typeof input === 'string') {
    text = input;
  } else {
    text = JSON.stringify(input);
  }
  return cut(text || '', 100);
}
