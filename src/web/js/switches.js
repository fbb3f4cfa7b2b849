// Following `data.switch_to` of this page's own commands (/new, /resume,
// /fork, /load): the server says which inputs are commands and where they
// switch to; a command's reply may come before the answer to the POST
// that sent it.
//
// Never: follow the switch of an input this page did not send (another
// client's, or a reply replayed from the store), nor look at the text
// that was typed.

import { state } from './state.js';
import { switchTo } from './sessions.js';

const inputKey = (sessionId, inputId) => sessionId + ':' + inputId;

/**
 * A `system` event (a command's reply may name a session to switch to) or
 * a `result` (a query's turn is over). The server says which inputs are
 * commands; this page does not look at the text.
 */
export function followSwitch(event) {
  if (event.turn_id === undefined) return;
  const key = inputKey(event.session_id, event.turn_id);
  const target = event.type === 'system' && event.data && typeof event.data.switch_to === 'string' ? event.data.switch_to : null;
  // Forget it at its first reply or result (a query is never followed).
  const ours = state.ownInputs.delete(key);
  if (ours) {
    if (target) switchTo(target);
  } else if (state.postsInFlight > 0) {
    state.earlySwitches.set(key, target); // the reply to our POST may come before its answer
  }
}

/** The POST answered with `input_id`: remember it, and switch if its reply already came. */
export function noteOwnInput(sessionId, inputId) {
  const key = inputKey(sessionId, inputId);
  if (state.earlySwitches.has(key)) {
    const target = state.earlySwitches.get(key);
    state.earlySwitches.delete(key);
    if (target) switchTo(target);
  } else {
    state.ownInputs.add(key);
  }
}
