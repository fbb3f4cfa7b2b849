// The model's message: streamed block by block as it arrives (its text as
// Markdown, its thinking, a tool call's arguments), then replaced by the
// complete `assistant` event. What streamed and never came complete stays,
// marked at the turn's end as not kept.
//
// Never: make HTML from the model's text except through markdown.js, nor
// parse a streaming text more often than scheduleLiveRender allows.

import { $, append, el, keepScrolled, line } from './dom.js';
import { cut, fullTime } from './format.js';
import { renderMarkdown } from './markdown.js';
import { toolCall, toolGroup } from './tools.js';
import { setContext } from './status.js';
import { copyButton } from './copy.js';

/** An assistant message element showing `text` as Markdown. */
function assistantText(text, streaming, title) {
  const node = el('div', {
    class: 'msg assistant markdown',
    'data-testid': 'message-assistant',
    'data-streaming': streaming ? 'true' : 'false',
    title,
  });
  node.append(renderMarkdown(text));
  // A complete message can be copied as the model wrote it (its Markdown).
  if (!streaming) node.append(el('div', { class: 'msg-actions' }, copyButton('Copy message', () => text, 'copy-message')));
  return node;
}

/**
 * The assistant message being streamed: a container with one element per
 * block (the model's thinking, text, or a tool call whose arguments are
 * still arriving).
 */
function liveMessage(view) {
  if (!view.live) {
    view.live = { root: append(el('div', { class: 'live' })), blocks: new Map() };
  }
  return view.live;
}

/**
 * The thinking of a message, apart from the answer: a collapsible block
 * "Thinking · 1.2 s" (how long it streamed, when this page saw it stream),
 * open while it streams, closed once the answer starts.
 */
function thinkingNode(text, open, ms) {
  const body = el('div', { class: 'thinking-text', text });
  const node = el('details', { class: 'thinking', 'data-testid': 'thinking' },
    el('summary', { class: 'thinking-head', 'data-testid': 'thinking-head', text: thinkingHead(ms, open) }),
    body);
  node.open = open;
  return { node, body };
}

function thinkingHead(ms, streaming) {
  if (streaming) return 'Thinking\u2026';
  return typeof ms === 'number' ? 'Thinking \u00b7 ' + (ms / 1000).toFixed(1) + ' s' : 'Thinking';
}

/** The answer starts (a text or a tool call after the thinking): the thinking closes, with its time. */
function closeThinking(view) {
  const live = view.live;
  if (!live) return;
  for (const block of live.blocks.values()) {
    if (block.kind !== 'thinking' || block.ms !== null) continue;
    block.ms = performance.now() - block.started;
    live.thinkingMs = (live.thinkingMs || 0) + block.ms;
    block.node.open = false;
    block.node.querySelector('summary').textContent = thinkingHead(block.ms, false);
  }
}

/** The live block at `index`, made as `kind` ('text', 'thinking' or 'tool_use') if new. */
function liveBlock(view, index, kind, name) {
  const live = liveMessage(view);
  let block = live.blocks.get(index);
  if (!block) {
    if (kind !== 'thinking') closeThinking(view);
    if (kind === 'tool_use') {
      block = { kind, name, json: '', node: el('div', { class: 'tool-call pending', text: '\u25b8 ' + name + '(\u2026' }) };
    } else if (kind === 'thinking') {
      const made = thinkingNode('', true);
      block = { kind, text: document.createTextNode(''), node: made.node, started: performance.now(), ms: null };
      made.body.append(block.text);
    } else {
      block = { kind: 'text', text: '', timer: null, renderedAt: 0, node: assistantText('', true) };
    }
    live.blocks.set(index, block);
    keepScrolled(() => live.root.append(block.node));
  }
  return block;
}

/**
 * Show a streaming text block's Markdown as it stands: at the next frame,
 * and for long texts at most every length/100 ms, so a long reply does not
 * spend its time parsing. Replacing the children in one go does not flicker.
 */
function scheduleLiveRender(block) {
  if (block.timer !== null) return;
  const wait = Math.max(0, Math.min(1000, block.text.length / 100) - (performance.now() - block.renderedAt));
  block.timer = setTimeout(() => {
    requestAnimationFrame(() => {
      block.timer = null;
      block.renderedAt = performance.now();
      if (block.node.isConnected) keepScrolled(() => block.node.replaceChildren(renderMarkdown(block.text)));
    });
  }, wait);
}

/** `stream_event`: text as it arrives; `discard` erases it. */
export function renderStreamEvent(view, event) {
  const delta = event.event || {};
  switch (delta.type) {
    case 'block_start':
      if (delta.block && delta.block.type === 'tool_use') liveBlock(view, delta.index, 'tool_use', delta.block.name);
      else if (delta.block && delta.block.type === 'thinking') liveBlock(view, delta.index, 'thinking');
      else liveBlock(view, delta.index, 'text');
      break;
    case 'thinking_delta': {
      const block = liveBlock(view, delta.index, 'thinking');
      if (block.kind === 'thinking') keepScrolled(() => block.text.appendData(delta.text || ''));
      break;
    }
    case 'text_delta': {
      const block = liveBlock(view, delta.index, 'text');
      if (block.kind === 'text') {
        block.text += delta.text || '';
        scheduleLiveRender(block);
      }
      break;
    }
    case 'tool_input_delta': {
      const block = liveBlock(view, delta.index, 'tool_use', '?');
      if (block.kind === 'tool_use') {
        block.json += delta.partial_json;
        block.node.textContent = '\u25b8 ' + block.name + '(' + cut(block.json, 100);
      }
      break;
    }
    case 'discard':
      stopLive(view);
      if (view.live) view.live.root.remove();
      view.live = null;
      append(line('notice dim', 'notice', '\u25cf partial output discarded (' + (delta.reason || 'retrying') + ')', event));
      break;
    default:
      break; // block_stop: nothing to do
  }
}

/** Cancel the pending re-renders of the streaming blocks. */
function stopLive(view) {
  if (!view.live) return;
  for (const block of view.live.blocks.values()) {
    if (block.timer !== null) clearTimeout(block.timer);
    block.timer = null;
  }
}

/**
 * Leave whatever streamed on the page as it is (no `assistant` came). At
 * the turn's end (`stopReason`) it is marked as not kept: without its
 * `assistant` event the reply is in no history (interrupted, or its node
 * died mid-reply), and a reload will not show it.
 */
export function finishLive(view, stopReason) {
  if (!view.live) return;
  stopLive(view);
  closeThinking(view);
  let streamed = false;
  for (const block of view.live.blocks.values()) {
    if (block.kind === 'text') {
      block.node.replaceChildren(renderMarkdown(block.text));
      streamed = streamed || block.text.trim() !== '';
    }
    block.node.setAttribute('data-streaming', 'false');
  }
  if (stopReason && streamed) {
    view.live.root.classList.add('not-kept');
    view.live.root.append(el('div', {
      class: 'notice dim',
      'data-testid': 'not-kept',
      text: '\u25cf this partial reply was not kept: the turn ended (' + stopReason + ') before the model finished it',
    }));
  }
  view.live = null;
}

/** `assistant`: the complete message replaces what streamed. */
export function renderAssistant(view, event) {
  if (event.context) setContext(view, event.context);
  const blocks = Array.isArray(event.content) ? event.content : [];
  const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('');
  const thinking = blocks.filter((b) => b.type === 'thinking').map((b) => b.thinking || '').join('');
  const nodes = [];
  if (view.live) closeThinking(view);
  if (thinking.trim()) nodes.push(thinkingNode(thinking.trim(), false, view.live ? view.live.thinkingMs : undefined).node);
  if (text) nodes.push(assistantText(text, false, fullTime(event.at) + (event.model ? ' \u00b7 ' + event.model : '')));
  // One step's calls: one row when there are several.
  const calls = blocks.filter((b) => b.type === 'tool_use').map(toolCall);
  if (calls.length > 1) nodes.push(toolGroup(calls));
  else nodes.push(...calls);
  if (event.interrupted) nodes.push(el('div', { class: 'dim', 'data-testid': 'interrupted', text: '(interrupted)' }));
  stopLive(view);
  keepScrolled(() => {
    if (view.live) {
      view.live.root.replaceWith(...nodes);
      view.live = null;
    } else {
      $('conversation').append(...nodes);
    }
  });
}
