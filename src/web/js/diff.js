// Line diffs: two texts compared line by line, a tool's unified diff
// read, and either drawn as a block with removed and added lines marked.
// Tool calls, approval cards and the rewind dialog show their changes
// with it.
//
// Never: know what a diff belongs to (its callers say), nor draw a line
// other than as text.

import { el } from './dom.js';
import { highlightedNodes } from './highlight.js';
import { copyButton } from './copy.js';

/** The lines of a text, without the empty one after a final newline. */
export function splitLines(text) {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * `old` and `new` line by line: `[{kind: 'ctx'|'del'|'add', text}]`, the
 * lines they share kept as context. The longest common subsequence of the
 * lines that differ; past a million line pairs, all removed then all added.
 */
export function diffLines(oldText, newText) {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const rows = a.slice(0, start).map((text) => ({ kind: 'ctx', text }));
  const x = a.slice(start, endA);
  const y = b.slice(start, endB);
  if (x.length * y.length > 1e6) {
    for (const text of x) rows.push({ kind: 'del', text });
    for (const text of y) rows.push({ kind: 'add', text });
  } else {
    // lcs[i][j]: the common subsequence of x[i..] and y[j..].
    const w = y.length + 1;
    const lcs = new Uint32Array((x.length + 1) * w);
    for (let i = x.length - 1; i >= 0; i--) {
      for (let j = y.length - 1; j >= 0; j--) {
        lcs[i * w + j] = x[i] === y[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i] === y[j]) {
        rows.push({ kind: 'ctx', text: x[i] });
        i++;
        j++;
      } else if (i < x.length && (j === y.length || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
        rows.push({ kind: 'del', text: x[i++] }); // removed lines before added ones, as in a unified diff
      } else {
        rows.push({ kind: 'add', text: y[j++] });
      }
    }
  }
  for (const text of a.slice(endA)) rows.push({ kind: 'ctx', text });
  return rows;
}

/**
 * A tool's unified diff (`--- a`, `+++ b`, `@@` hunks) after the text
 * before it: `{head, rows}`, the file header left out; null without one.
 */
export function unifiedDiff(output) {
  const at = output.startsWith('--- ') ? 0 : output.indexOf('\n--- ');
  if (at < 0) return null;
  const lines = splitLines(output.slice(at === 0 ? 0 : at + 1));
  if (lines.length < 2 || !lines[1].startsWith('+++ ')) return null;
  const rows = lines.slice(2).map((l) => {
    if (l.startsWith('@@')) return { kind: 'hunk', text: l };
    if (l.startsWith('-')) return { kind: 'del', text: l.slice(1) };
    if (l.startsWith('+')) return { kind: 'add', text: l.slice(1) };
    if (l.startsWith(' ')) return { kind: 'ctx', text: l.slice(1) };
    return { kind: 'note', text: l };
  });
  return { head: output.slice(0, at), rows };
}

const DIFF_SIGNS = { ctx: ' ', del: '-', add: '+', hunk: '', note: '' };

/** Diff rows as unified diff text (`--- a/PATH`, `+++ b/PATH` first when `path` is known). */
export function diffText(rows, path) {
  const head = path ? '--- a/' + path + '\n+++ b/' + path + '\n' : '';
  return head + rows.map((row) => (DIFF_SIGNS[row.kind] || '') + row.text + '\n').join('');
}

/**
 * Diff rows as a block: one line each, removed and added lines coloured;
 * long ones scroll. `lang` (highlight.js's name for the file's language)
 * adds token colours to the lines' text; a Copy button copies the diff as
 * unified diff text (`path` names the file in its header).
 */
export function diffView(rows, lang, path) {
  const pre = el('pre', { class: 'diff' });
  if (rows.length === 0) pre.append(el('span', { class: 'diff-note', text: '(no change)' }));
  else pre.append(copyButton('Copy diff', () => diffText(rows, path), 'copy-diff'));
  for (const row of rows) {
    const tokens = lang && (row.kind === 'ctx' || row.kind === 'del' || row.kind === 'add') ? highlightedNodes(row.text, lang) : null;
    if (tokens) pre.append(el('span', { class: 'diff-' + row.kind }, DIFF_SIGNS[row.kind], ...tokens));
    else pre.append(el('span', { class: 'diff-' + row.kind, text: DIFF_SIGNS[row.kind] + row.text }));
  }
  return pre;
}
