// The model's plan (its todo_write calls, as `plan` events) in a panel
// above the input box, replaced in place by each new one; hidden while
// there is none.
//
// Never: draw the plan in the conversation (the tool call there says when
// it changed).

import { state } from './state.js';
import { $, el, keepScrolled } from './dom.js';

/** Marks of a plan item's status, as the terminal draws them. */
const PLAN_MARKS = { pending: '\u2610', in_progress: '\u25d0', completed: '\u2611' };

/**
 * The selected session's plan above the input box, one item a line (the
 * one in progress in the words the model gave for it), replaced in place
 * by each `plan` event; hidden while there is none.
 */
export function renderPlan() {
  // The panel takes room from the conversation: one that was at its
  // end stays there.
  keepScrolled(() => fillPlan(state.view ? state.view.plan : []));
}

/** The panel showing `todos` (hidden when there are none). */
function fillPlan(todos) {
  $('plan').hidden = todos.length === 0;
  const done = todos.filter((t) => t && t.status === 'completed').length;
  $('plan-progress').textContent = todos.length ? done + ' of ' + todos.length + ' done' : '';
  $('plan-items').replaceChildren(...todos.map((todo) => {
    const status = todo && PLAN_MARKS[todo.status] ? todo.status : 'pending';
    const words = status === 'in_progress' && todo.active_form ? todo.active_form : (todo && todo.content) || '';
    return el('li', { class: 'plan-item ' + status, 'data-testid': 'plan-item', 'data-status': status },
      el('span', { class: 'plan-mark', 'aria-hidden': 'true', text: PLAN_MARKS[status] }),
      el('span', { class: 'plan-text', text: String(words) }));
  }));
}
