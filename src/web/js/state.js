// What the page knows, in one object every module reads and changes: the
// session list, the selected session's view (newView: what was rendered
// from its event stream), the inputs this page sent, the images waiting
// for the next query.
//
// Holds data only. Never: touch the page, call the API, or import another
// module (everything imports this one).

export const state = {
  sessions: [], // Session records from GET /v1/sessions, most recent first
  listLimit: 100, // how many of them the list shows ("Show more" adds a page)
  sessionFilter: '', // what the search box above the list holds
  renaming: null, // the id of the session whose title is being edited in the list
  moreSessions: false, // the server has more than listLimit
  selectedId: null,
  // The selected session's event stream and what was rendered from it.
  view: null, // see newView()
  // Inputs this page sent, to follow `data.switch_to` only for our own
  // commands (not for old replies replayed from the store).
  ownInputs: new Set(), // "sessionId:inputId"
  earlySwitches: new Map(), // "sessionId:turnId" -> target or null: a reply seen before its POST answered
  postsInFlight: 0,
  lifecycle: null, // EventSource of /v1/events
  refreshTimer: null,
  prices: new Map(), // model profile name -> its prices (GET /v1/models), for the cost
  models: [], // the model profiles' names (GET /v1/models), for the status line's model menu
  pendingImages: [], // images to go with the next query: see readImage()
  builtInCommands: [], // the built-in slash commands (/commands.json), as `/help` lists them
  suggestions: null, // the slash commands offered for what is typed: { items, index }
  waiting: new Map(), // session id -> Set of request ids waiting for an answer, as the page saw them (attention.js)
};

/** What the right pane knows about the selected session's events. */
export function newView(sessionId) {
  return {
    sessionId,
    stream: null, // EventSource
    lastSeq: 0, // highest seq rendered; anything at or below it is dropped
    nextBefore: null, // the seq to ask GET .../history?before= for older turns; null: all shown
    loadingOlder: false, // older turns are being fetched
    openTurns: new Set(), // turn ids with a `user` event and no `result` yet
    usage: { input: 0, output: 0, turns: 0, cacheRead: 0, cacheWritten: 0 }, // input: all of it, cached or not
    context: null, // { used, limit? }: how full the context is, from the latest event that says
    live: null, // the assistant message being streamed, see liveMessage()
    retryDelay: 1000,
    retryTimer: null,
    interrupting: false,
    mode: null, // the permission mode, from session_started and `mode` events
    model: null, // the model profile, from session_started, `model_switched` and `agent` events
    agent: null, // the named agent, from session_started and `agent` events
    turnsByProfile: [], // [profile, usage] of every finished turn, for the cost
    reportedCost: null, // { usd, turns }: the latest `/usage` reply's cost, and how many turns it counted
    approvals: new Map(), // request_id -> approval card, see renderApprovalRequest()
    sent: [], // inputs this page sent that have not started or been answered, see sendInput()
    unclaimed: new Map(), // turn_id -> first event of an input whose POST has not answered yet
    commands: [], // the session's custom commands, from its latest session_started
    lastQuery: null, // the text of the latest `user` event: what an error card's Retry sends again
    errorShown: false, // an `error` event was shown for the running turn (its `result` does not repeat it)
    plan: [], // the model's plan ({content, status, active_form?}), from the latest `plan` event
  };
}

/** The record of a session in the list, if it is there. */
export function findSession(id) {
  return state.sessions.find((s) => s.id === id);
}
