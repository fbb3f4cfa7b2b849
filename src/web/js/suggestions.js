// Slash command suggestions while a command's name is typed: the built-in
// commands (/commands.json), then the session's own (from its
// session_started), chosen with the arrow keys, Tab, Enter or the mouse.
//
// Never: decide what is a command: the session parses what is sent.

import { state } from './state.js';
import { $, el } from './dom.js';

/** The built-in commands (`/commands.json`, the server's own table), for the suggestions. */
export async function loadBuiltInCommands() {
  try {
    const response = await fetch('/commands.json');
    const list = response.ok ? await response.json() : [];
    state.builtInCommands = Array.isArray(list) ? list : [];
  } catch (_) {
    /* only the session's custom commands are suggested */
  }
}

/**
 * Every command the selected session takes, in `/help`'s order: the
 * built-in ones, then its custom ones (`{name, command, description,
 * source?}`, as `/help` and `session_started` list them).
 */
function sessionCommands() {
  const custom = state.view ? state.view.commands : [];
  return state.builtInCommands.concat(custom).filter((c) => c && typeof c.name === 'string' && c.name);
}

/** The commands whose name starts with what follows `/`, while the name is typed. */
function matchingCommands(text) {
  const match = /^\/(\S*)$/.exec(text);
  if (!match) return [];
  const typed = match[1].toLowerCase();
  return sessionCommands().filter((c) => c.name.toLowerCase().startsWith(typed));
}

/** Show the commands that fit what the input box holds (with the caret at its end), or none. */
export function updateSuggestions() {
  const box = $('input');
  const items = state.view && box.selectionStart === box.value.length ? matchingCommands(box.value) : [];
  if (items.length === 0) {
    hideSuggestions();
    return;
  }
  state.suggestions = { items, index: 0 };
  renderSuggestions();
}

function renderSuggestions() {
  const { items, index } = state.suggestions;
  const list = $('command-suggestions');
  list.replaceChildren(...items.map((command, i) => suggestionItem(command, i === index, i)));
  list.hidden = false;
  $('input').setAttribute('aria-activedescendant', 'suggestion-' + index);
  const selected = list.children[index];
  if (selected) selected.scrollIntoView({ block: 'nearest' });
}

/** One command offered: how it is typed, what it does, and whether it is one of the workspace's own. */
function suggestionItem(command, selected, i) {
  return el(
    'li',
    {
      id: 'suggestion-' + i,
      role: 'option',
      class: 'suggestion',
      'data-testid': 'command-suggestion',
      'data-name': command.name,
      'data-custom': command.source ? 'true' : 'false',
      'aria-selected': selected ? 'true' : 'false',
      title: command.source ? 'From ' + command.source : '',
      // Before the input box loses focus.
      onmousedown: (event) => {
        event.preventDefault();
        completeCommand(command);
      },
    },
    el('span', { class: 'suggestion-command', text: command.command || '/' + command.name }),
    el('span', { class: 'suggestion-description', text: command.description || '' }),
    command.source ? el('span', { class: 'suggestion-custom', text: 'custom' }) : null,
  );
}

export function hideSuggestions() {
  state.suggestions = null;
  $('command-suggestions').hidden = true;
  $('command-suggestions').replaceChildren();
  $('input').removeAttribute('aria-activedescendant');
}

/** `/name ` in the input box, ready for the arguments. */
function completeCommand(command) {
  const box = $('input');
  box.value = '/' + command.name + ' ';
  hideSuggestions();
  box.focus();
  box.setSelectionRange(box.value.length, box.value.length);
}

/**
 * A key while commands are offered: ↑/↓ choose, Tab completes, Enter
 * completes a name not typed in full (a whole name is sent), Esc closes
 * the list. True when the key was used here.
 */
export function onSuggestionKey(event) {
  const offered = state.suggestions;
  if (!offered || event.isComposing) return false;
  const move = { ArrowDown: 1, ArrowUp: -1 }[event.key];
  if (move) {
    offered.index = (offered.index + move + offered.items.length) % offered.items.length;
    renderSuggestions();
  } else if (event.key === 'Tab' && !event.shiftKey) {
    completeCommand(offered.items[offered.index]);
  } else if (event.key === 'Enter' && !event.shiftKey) {
    const typed = $('input').value.slice(1).toLowerCase();
    if (offered.items.some((c) => c.name.toLowerCase() === typed)) {
      hideSuggestions();
      return false; // sent as typed
    }
    completeCommand(offered.items[offered.index]);
  } else if (event.key === 'Escape') {
    hideSuggestions();
  } else {
    return false;
  }
  event.preventDefault();
  return true;
}
