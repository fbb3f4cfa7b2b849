// Tool calls and their results in the conversation: a call's name and
// arguments on one line (summarised as src/frontend/output/render.rs
// does), an edit or a write shown as its diff, a result's first lines with
// the whole output on demand.
//
// Never: put a tool's input or output into the page as HTML (text only).

import { $, append, el, keepScrolled } from './dom.js';
import { cut, firstLine } from './format.js';
import { diffLines, diffView, splitLines, unifiedDiff } from './diff.js';
import { languageOfPath } from './highlight.js';
import { copyButton } from './copy.js';

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
    el('summary', { 'data-testid': 'tool-call-summary', text: '\u25b8 ' + block.name + '(' + summarizeInput(block.name, block.input) + ')' }),
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
  // A command can be copied as it is (to run it in a terminal).
  const command = block.name === 'bash' && block.input && typeof block.input.command === 'string' ? block.input.command : null;
  if (command !== null) {
    node.querySelector('summary').append(copyButton('Copy command', () => command, 'copy-command'));
  }
  return node;
}

/** `tool_result`: the first lines, errors marked; the whole output on demand. */
export function renderToolResult(event) {
  const output = event.output || '';
  const marker = event.cancelled ? ' (cancelled)' : '';
  // An edit's output is a line and the diff as it was applied (with line
  // numbers): the diff replaces the one its call showed from the input.
  const applied = event.name === 'edit_file' && !event.is_error ? unifiedDiff(output) : null;
  if (applied) {
    const call = callNode(event.call_id);
    const shown = call && call.querySelector('[data-testid="tool-diff"]');
    if (shown) {
      const path = call.getAttribute('data-file');
      const diff = diffView(applied.rows, languageOfPath(path), path);
      diff.setAttribute('data-testid', 'tool-diff');
      diff.setAttribute('data-diff-source', 'result');
      keepScrolled(() => shown.replaceWith(diff));
    }
  }
  const summary = applied
    ? '\u2514 ' + (firstLine(applied.head.trim()) || 'edited')
    : '\u2514 ' + (event.is_error ? 'error' + marker + ': ' : '') + summarizeOutput(output);
  const node = el(
    'details',
    {
      class: 'tool-result' + (event.is_error ? ' error' : ''),
      'data-testid': 'tool-result',
      'data-error': event.is_error ? 'true' : 'false',
      'data-call-id': event.call_id,
      title: event.name + ' \u00b7 ' + event.duration_ms + ' ms',
    },
    el('summary', { text: summary }),
    el('pre', { text: output }),
  );
  append(node);
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

/** The first three lines of a tool's output, and how many more there are. */
function summarizeOutput(output) {
  const lines = output.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0) return '(no output)';
  let text = lines.slice(0, 3).map((l) => cut(l, 120)).join('\n  ');
  if (lines.length > 3) text += '\n  \u2026 +' + (lines.length - 3) + ' lines';
  return text;
}
