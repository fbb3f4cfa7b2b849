// agentbus web page: the session list on the left, the selected session's
// conversation on the right, an input box below it.
//
// Talks to the HTTP API of `agentbus serve` (docs/api.md):
//   GET/POST /v1/sessions, POST .../fork, DELETE /v1/sessions/{id},
//   POST .../input, POST .../interrupt, POST .../approvals/{request_id},
//   POST .../rewind (a preview, then the rewind: "Rewind to here"),
//   GET /v1/health, GET /v1/models (the profiles' prices, for the cost),
//   SSE GET /v1/events (session lifecycle) and GET /v1/sessions/{id}/events
//   (one session's events: stored ones replayed, then live ones); and the
//   page's own /commands.json (the built-in slash commands, for suggestions).
// Shows the same information as the terminal chat (src/frontend/output/render.rs).
//
// Every piece of text that comes from the server or the user is put into the
// page with textContent / text nodes, never as HTML — except the model's
// Markdown (replies, compaction summaries): marked (window.marked) turns it
// into HTML with any raw HTML in it escaped, and DOMPurify
// (window.DOMPurify) cleans that before it is parsed into the page
// (renderMarkdown). Both are copied from npm into src/web/vendor/. Images
// (a query's, pasted or dropped, and those its `user` event carries) are
// shown as <img> elements with `data:` URLs made here from their bytes.
'use strict';

(function () {
  // ---------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------

  const TOKEN_KEY = 'agentbus.token';

  const state = {
    token: null,
    sessions: [], // Session records from GET /v1/sessions, most recent first
    listLimit: 100, // how many of them the list shows ("Show more" adds a page)
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
    pendingImages: [], // images to go with the next query: see readImage()
    builtInCommands: [], // the built-in slash commands (/commands.json), as `/help` lists them
    suggestions: null, // the slash commands offered for what is typed: { items, index }
  };

  /** What the right pane knows about the selected session's events. */
  function newView(sessionId) {
    return {
      sessionId,
      stream: null, // EventSource
      lastSeq: 0, // highest seq rendered; anything at or below it is dropped
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
      plan: [], // the model's plan ({content, status, active_form?}), from the latest `plan` event
    };
  }

  // ---------------------------------------------------------------------
  // DOM helpers
  // ---------------------------------------------------------------------

  const $ = (id) => document.getElementById(id);

  /**
   * Make an element. `props`: attributes (strings), plus `class`, `text`
   * (textContent) and `on<event>` handlers. Children: nodes or strings
   * (strings become text nodes, so they are never parsed as HTML).
   */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'text') node.textContent = String(value);
      else if (key === 'class') node.className = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  /** Run `fn` (which adds to the conversation) and keep the view at the
   *  bottom if it was there before. */
  function keepScrolled(fn) {
    const conv = $('conversation');
    const atBottom = conv.scrollHeight - conv.scrollTop - conv.clientHeight < 48;
    fn();
    if (atBottom) conv.scrollTop = conv.scrollHeight;
  }

  /** Add one node at the end of the conversation. */
  function append(node) {
    keepScrolled(() => $('conversation').append(node));
    return node;
  }

  /** Show an error above the conversation until dismissed or replaced. */
  function showBanner(message) {
    const banner = $('banner');
    banner.replaceChildren(
      el('span', { text: message }),
      el('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', text: '\u00d7', onclick: hideBanner }),
    );
    banner.hidden = false;
  }

  function hideBanner() {
    $('banner').hidden = true;
  }

  // ---------------------------------------------------------------------
  // Token: from ?token= in the page's address, kept in sessionStorage
  // ---------------------------------------------------------------------

  /** The token from the address (then taken out of it) or from this tab's storage. */
  function readToken() {
    const params = new URLSearchParams(location.search);
    const fromUrl = params.get('token');
    if (fromUrl) {
      try {
        sessionStorage.setItem(TOKEN_KEY, fromUrl);
      } catch (_) {
        /* storage disabled: the token lives in memory only */
      }
      // Keep the token out of the address bar, history and screenshots.
      params.delete('token');
      const query = params.toString();
      history.replaceState(null, '', location.pathname + (query ? '?' + query : '') + location.hash);
      return fromUrl;
    }
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch (_) {
      return null;
    }
  }

  /** Replace the app with a message about the token. */
  function showTokenProblem(refused) {
    try {
      sessionStorage.removeItem(TOKEN_KEY);
    } catch (_) {
      /* nothing stored */
    }
    closeStreams();
    $('token-missing-text').textContent = refused
      ? 'The server refused this page\u2019s token. Open the address that `agentbus serve` printed ' +
        '(http://\u2026/?token=\u2026) again.'
      : 'This page needs its access token. Open the address that `agentbus serve` printed ' +
        '(http://\u2026/?token=\u2026); the token is in the data dir\u2019s `token` file.';
    $('app').hidden = true;
    $('token-missing').hidden = false;
  }

  // ---------------------------------------------------------------------
  // HTTP API
  // ---------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /** Call the API with the token; the parsed JSON answer, or null for 204. */
  async function api(method, path, body) {
    const headers = { Authorization: 'Bearer ' + state.token };
    const init = { method, headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, 'agentbus serve is not reachable (' + e.message + ')');
    }
    if (response.status === 401) {
      showTokenProblem(true);
      throw new ApiError(401, 'token refused');
    }
    const text = await response.text();
    let json = null;
    if (text) {
      try {
        json = JSON.parse(text);
      } catch (_) {
        json = null;
      }
    }
    if (!response.ok) {
      const why = json && json.error ? json.error : text || response.statusText;
      throw new ApiError(response.status, method + ' ' + path + ': ' + response.status + ' ' + why);
    }
    return json;
  }

  const sessionPath = (id) => '/v1/sessions/' + encodeURIComponent(id);

  /** URL for an EventSource: the token goes in the query (no headers there). */
  function streamUrl(path, params) {
    const query = new URLSearchParams(params || {});
    query.set('token', state.token);
    return path + '?' + query.toString();
  }

  // ---------------------------------------------------------------------
  // Session list (left)
  // ---------------------------------------------------------------------

  /** Fetch the list and draw it. */
  async function loadSessions() {
    try {
      const answer = await api('GET', '/v1/sessions?limit=' + state.listLimit);
      state.sessions = (answer && answer.sessions) || [];
      state.moreSessions = Boolean(answer && answer.next);
      renderSessionList();
      renderSessionHeader();
    } catch (e) {
      if (e.status !== 401) showBanner(e.message);
    }
  }

  /** Fetch the list again soon (several lifecycle events make one fetch). */
  function refreshSessionsSoon() {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(loadSessions, 250);
  }

  /** Local time of an RFC 3339 timestamp: the time today, else the date too. */
  function formatTime(iso) {
    if (!iso) return '';
    const date = new Date(iso);
    if (isNaN(date)) return String(iso);
    const sameDay = date.toDateString() === new Date().toDateString();
    return sameDay
      ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
      : date.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' }) +
          ' ' + date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  }

  function renderSessionList() {
    const list = $('session-list');
    if (state.sessions.length === 0) {
      list.replaceChildren(el('li', { class: 'empty dim', text: 'No sessions yet.' }));
      return;
    }
    const items = state.sessions.map(sessionItem);
    if (state.moreSessions) {
      const more = () => {
        state.listLimit += 100;
        loadSessions();
      };
      items.push(
        el('li', { class: 'session-more' },
          el('button', { type: 'button', class: 'small', 'data-testid': 'more-sessions', text: 'Show more', onclick: more })),
      );
    }
    list.replaceChildren(...items);
  }

  /** One row: title, updated time, busy marker; Fork and Delete buttons. */
  function sessionItem(session) {
    const selected = session.id === state.selectedId;
    const title = session.title || 'untitled';
    return el(
      'li',
      {
        class: 'session-item' + (selected ? ' selected' : ''),
        'data-testid': 'session-item',
        'data-session-id': session.id,
        'data-selected': selected ? 'true' : 'false',
        'data-busy': session.busy ? 'true' : 'false',
        'aria-current': selected ? 'true' : false,
      },
      el(
        'button',
        { type: 'button', class: 'session-open', title: title, onclick: () => selectSession(session.id) },
        el('span', { class: 'session-name' + (session.title ? '' : ' dim'), text: title }),
        el(
          'span',
          { class: 'session-when dim' },
          session.busy ? el('span', { class: 'busy', title: 'running', 'data-testid': 'busy', text: '\u25cf ' }) : null,
          formatTime(session.updated_at),
        ),
      ),
      el(
        'span',
        { class: 'session-actions' },
        el('button', { type: 'button', class: 'small', 'data-testid': 'fork', text: 'Fork', onclick: () => forkSession(session.id) }),
        el('button', {
          type: 'button',
          class: 'small danger',
          'data-testid': 'delete',
          text: 'Delete',
          onclick: () => deleteSession(session.id, title),
        }),
      ),
    );
  }

  /** The record of a session in the list, if it is there. */
  const findSession = (id) => state.sessions.find((s) => s.id === id);

  // ---------------------------------------------------------------------
  // Lifecycle stream: GET /v1/events keeps the list current
  // ---------------------------------------------------------------------

  /** Subscribe to /v1/events; `resumed`: a later subscription (fetch the list on open). */
  function watchLifecycle(resumed) {
    const stream = new EventSource(streamUrl('/v1/events'));
    state.lifecycle = stream;
    let opened = !!resumed;
    // Reconnected: events may have been missed, so fetch the list again
    // (the first time, start() has just fetched it).
    stream.onopen = () => {
      $('lifecycle-status').textContent = '';
      if (opened) loadSessions();
      opened = true;
    };
    stream.onmessage = (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch (_) {
        return;
      }
      onLifecycle(event);
    };
    stream.onerror = () => {
      if (state.lifecycle !== stream) return;
      $('lifecycle-status').textContent = 'reconnecting\u2026';
      // EventSource retries by itself unless the server refused the request.
      if (stream.readyState === EventSource.CLOSED) {
        setTimeout(async () => {
          if (state.lifecycle !== stream) return;
          try {
            await api('GET', '/v1/health'); // a 401 shows the token message
          } catch (e) {
            if (e.status === 401) return;
          }
          watchLifecycle(true);
        }, 3000);
      }
    };
  }

  /** One lifecycle event: created, busy, idle, closed, deleted. */
  function onLifecycle(event) {
    const session = findSession(event.session_id);
    switch (event.kind) {
      case 'busy':
      case 'idle':
        if (session) {
          session.busy = event.kind === 'busy';
          renderSessionList();
        }
        break;
      case 'deleted':
        state.sessions = state.sessions.filter((s) => s.id !== event.session_id);
        renderSessionList();
        if (event.session_id === state.selectedId) {
          selectSession(null);
          showBanner('The session ' + event.session_id + ' was deleted.');
        }
        break;
      default:
        break;
    }
    // Titles, times and order change with every event kind: fetch again.
    refreshSessionsSoon();
  }

  // ---------------------------------------------------------------------
  // Session actions: new, fork, delete, select
  // ---------------------------------------------------------------------

  async function newSession() {
    try {
      const answer = await api('POST', '/v1/sessions', {});
      await loadSessions();
      selectSession(answer.id);
      $('input').focus();
    } catch (e) {
      if (e.status !== 401) showBanner(e.message);
    }
  }

  async function forkSession(id) {
    try {
      const answer = await api('POST', sessionPath(id) + '/fork', {});
      await loadSessions();
      selectSession(answer.id);
    } catch (e) {
      if (e.status !== 401) showBanner(e.message);
    }
  }

  async function deleteSession(id, title) {
    if (!window.confirm('Delete the session \u201c' + title + '\u201d (' + id + ')? This cannot be undone.')) return;
    try {
      await api('DELETE', sessionPath(id));
      state.sessions = state.sessions.filter((s) => s.id !== id);
      if (id === state.selectedId) selectSession(null);
      renderSessionList();
    } catch (e) {
      if (e.status !== 401) showBanner(e.message);
    }
  }

  /** Show a session on the right (null: none). Remembered in the address's #. */
  function selectSession(id) {
    if (id === state.selectedId && state.view) {
      showSessionList(false);
      return;
    }
    closeSessionStream();
    state.selectedId = id;
    history.replaceState(null, '', location.pathname + location.search + (id ? '#' + encodeURIComponent(id) : ''));
    $('conversation').replaceChildren();
    if (id) {
      state.view = newView(id);
      openSessionStream(state.view, 0);
      if (!findSession(id)) refreshSessionsSoon();
    } else {
      state.view = null;
      $('conversation').append(el('p', { class: 'empty dim', text: 'Pick a session on the left, or start a new one.' }));
    }
    renderSessionList();
    renderSessionHeader();
    renderQueued();
    renderPlan();
    renderStatus();
    updateControls();
    showSessionList(!id);
  }

  /** Title, id, model and workspace of the selected session. */
  function renderSessionHeader() {
    const session = state.selectedId ? findSession(state.selectedId) : null;
    $('session-title').textContent = !state.selectedId
      ? 'No session selected'
      : (session && session.title) || 'untitled';
    const meta = [];
    if (state.selectedId) meta.push(state.selectedId);
    if (session) {
      if (session.workspace) meta.push(session.workspace);
      if (Array.isArray(session.parent)) meta.push('forked from ' + session.parent[0] + ' at ' + session.parent[1]);
    }
    $('session-meta').textContent = meta.join(' \u00b7 ');
    // Until the session's own events say, its record names the profile.
    if (state.view && !state.view.model && session && session.model) renderStatus();
  }

  // ---------------------------------------------------------------------
  // The selected session's event stream (SSE, replay then live)
  // ---------------------------------------------------------------------

  /**
   * Subscribe from `after`. EventSource reconnects by itself, sending the
   * last `id:` as Last-Event-ID; when the server refuses a reconnect the
   * stream is closed and we open a new one from the last seq we rendered.
   */
  function openSessionStream(view, after) {
    const stream = new EventSource(streamUrl(sessionPath(view.sessionId) + '/events', { after: String(after) }));
    view.stream = stream;
    stream.onopen = () => {
      if (view.stream !== stream) return;
      view.retryDelay = 1000;
      setSessionConn('');
    };
    stream.onmessage = (message) => {
      if (view.stream !== stream) return;
      let event;
      try {
        event = JSON.parse(message.data);
      } catch (_) {
        return;
      }
      onSessionEvent(view, event);
    };
    stream.onerror = () => {
      if (view.stream !== stream) return;
      setSessionConn('reconnecting\u2026');
      if (stream.readyState === EventSource.CLOSED) reopenSessionStream(view);
    };
  }

  /** After a refused reconnect: find out why, then subscribe again. */
  function reopenSessionStream(view) {
    clearTimeout(view.retryTimer);
    view.retryTimer = setTimeout(async () => {
      if (state.view !== view) return;
      try {
        await api('GET', sessionPath(view.sessionId));
      } catch (e) {
        if (e.status === 401) return; // the token message is shown
        if (e.status === 404) {
          setSessionConn('');
          showBanner('The session ' + view.sessionId + ' no longer exists.');
          return;
        }
      }
      if (state.view !== view) return;
      view.retryDelay = Math.min(view.retryDelay * 2, 30000);
      openSessionStream(view, view.lastSeq);
    }, view.retryDelay);
  }

  function closeSessionStream() {
    const view = state.view;
    if (!view) return;
    clearTimeout(view.retryTimer);
    if (view.stream) view.stream.close();
    view.stream = null;
    setSessionConn('');
  }

  function closeStreams() {
    closeSessionStream();
    if (state.lifecycle) state.lifecycle.close();
    state.lifecycle = null;
  }

  function setSessionConn(text) {
    $('session-conn').textContent = text;
  }

  /** One event of the selected session: drop repeats, render, update buttons. */
  function onSessionEvent(view, event) {
    if (state.view !== view || event.session_id !== view.sessionId) return;
    if (typeof event.seq === 'number') {
      if (event.seq <= view.lastSeq) return; // already rendered (replay after reconnect)
      view.lastSeq = event.seq;
    }
    trackTurns(view, event);
    const conv = $('conversation');
    const before = conv.lastElementChild;
    renderEvent(view, event);
    if (event.type === 'user' || event.type === 'system') {
      // What the event added first (null: nothing).
      const added = before ? before.nextElementSibling : conv.firstElementChild;
      claimSent(view, event, added && added.parentNode === conv ? added : null);
    }
    // A first query sets the title; every turn changes the update time.
    if (event.type === 'user' || event.type === 'result') refreshSessionsSoon();
    if (event.type === 'system' || event.type === 'result') followSwitch(event);
    updateControls();
  }

  /** A turn runs from its `user` event to its `result`. */
  function trackTurns(view, event) {
    const turn = event.turn_id !== undefined ? event.turn_id : 'seq' + event.seq;
    if (event.type === 'user') view.openTurns.add(turn);
    if (event.type === 'result') {
      if (event.turn_id === undefined) view.openTurns.clear();
      else view.openTurns.delete(event.turn_id);
      view.interrupting = false;
    }
  }

  // ---------------------------------------------------------------------
  // Rendering events (the same information as the terminal chat)
  // ---------------------------------------------------------------------

  function renderEvent(view, event) {
    switch (event.type) {
      case 'system':
        return renderSystem(view, event);
      case 'user':
        return renderUser(view, event);
      case 'stream_event':
        return renderStreamEvent(view, event);
      case 'assistant':
        return renderAssistant(view, event);
      case 'tool_result':
        return renderToolResult(event);
      case 'approval_request':
        return renderApprovalRequest(view, event);
      case 'result':
        return renderResult(view, event);
      case 'error':
        return append(line('error', 'error', 'error' + (event.kind ? ' (' + event.kind + ')' : '') + ': ' + event.message, event));
      default:
        return undefined; // a newer server's event type: nothing to show
    }
  }

  /** A one-block line with a test id and the event's time as tooltip. */
  function line(className, testId, text, event) {
    return el('div', { class: className, 'data-testid': testId, title: event ? fullTime(event.at) : null, text });
  }

  /** Date and time of an event for a tooltip ('' when there is none). */
  function fullTime(iso) {
    const date = iso ? new Date(iso) : null;
    return date && !isNaN(date) ? date.toLocaleString() : '';
  }

  /** `system`: session start, command replies and notices. */
  function renderSystem(view, event) {
    const data = event.data || {};
    let text = event.message || '';
    let dim = true;
    switch (event.subtype) {
      case 'compacted':
        return renderCompacted(view, event);
      case 'plan':
        // The panel shows it; the tool call in the conversation says when.
        view.plan = Array.isArray(data.todos) ? data.todos : [];
        renderPlan();
        return undefined;
      case 'cleared':
        view.plan = [];
        renderPlan();
        dim = false; // a command's answer
        break;
      case 'context': {
        // `/context`: a table, kept as the session aligned it.
        if (typeof data.used === 'number') setContext(view, { used: data.used, limit: data.limit });
        const node = el('pre', { class: 'notice reply context-report', 'data-testid': 'notice', title: fullTime(event.at), text });
        node.setAttribute('data-subtype', 'context');
        return append(node);
      }
      case 'usage':
        if (data.context) setContext(view, data.context);
        if (typeof data.cost_usd === 'number') {
          view.reportedCost = { usd: data.cost_usd, turns: view.turnsByProfile.length };
          renderStatusOf(view);
        }
        dim = false;
        break;
      case 'session_started': {
        const tools = Array.isArray(data.tools) ? data.tools.length : 0;
        if (data.permission_mode) view.mode = String(data.permission_mode);
        if (data.model) view.model = String(data.model);
        view.agent = data.agent ? String(data.agent) : 'build';
        view.commands = Array.isArray(data.commands) ? data.commands : [];
        renderStatusOf(view);
        text = '\u25cf session ' + event.session_id + ' \u00b7 model ' + (data.model || '?') + ' \u00b7 ' + tools + ' tools' +
          (data.agent && data.agent !== 'build' ? ' \u00b7 agent ' + data.agent : '') +
          (data.permission_mode ? ' \u00b7 mode ' + data.permission_mode : '') +
          (data.sandboxed === false ? ' \u00b7 commands NOT sandboxed' : '') +
          (Array.isArray(data.instructions) && data.instructions.length ? ' \u00b7 instructions ' + data.instructions.join(', ') : '') +
          (data.resumed ? ' \u00b7 resumed' : '');
        break;
      }
      case 'approval_resolved':
        // The card shows how it ended; a line only when there is no card.
        if (resolveApproval(view, event)) return undefined;
        text = '\u25cf ' + text;
        break;
      case 'mode':
        if (data.mode) view.mode = String(data.mode);
        renderStatusOf(view);
        dim = false;
        break;
      case 'agent':
        if (data.agent) view.agent = String(data.agent);
        if (data.model) view.model = String(data.model);
        if (data.permission_mode) view.mode = String(data.permission_mode);
        renderStatusOf(view);
        dim = false;
        break;
      case 'model_switched':
        if (data.model) view.model = String(data.model);
        renderStatusOf(view);
        dim = false;
        break;
      case 'retrying':
      case 'compacting':
      case 'notice':
      case 'mcp_server_status':
      case 'mcp_waiting':
      case 'owner_changed':
        text = '\u25cf ' + text;
        break;
      default:
        dim = false; // a command's answer: shown like normal text
    }
    // A command's answer keeps its line breaks and alignment, as the terminal shows it.
    const node = line('notice' + (dim ? ' dim' : ' reply'), 'notice', text, event);
    node.setAttribute('data-subtype', event.subtype || '');
    append(node);
  }

  /**
   * `compacted`: a divider where a summary began to stand for the turns above
   * it in the model's view (they stay here, and stored); the summary on demand.
   */
  function renderCompacted(view, event) {
    const data = event.data || {};
    const known = typeof data.tokens_before === 'number' && typeof data.tokens_after === 'number';
    const why = { auto: 'auto', command: '/compact', overflow: 'request too long' }[data.trigger] || data.trigger;
    const text = known
      ? 'Conversation compacted here: ~' + thousands(data.tokens_before) + ' \u2192 ' + thousands(data.tokens_after) +
        ' tokens' + (why ? ' (' + why + ')' : '')
      : event.message || 'Conversation compacted here';
    const node = el(
      'div',
      { class: 'compacted', 'data-testid': 'compacted', 'data-trigger': data.trigger || '', title: fullTime(event.at) },
      el('div', { class: 'compacted-line' }, el('span', { 'data-testid': 'compacted-text', text })),
    );
    if (typeof data.summary === 'string' && data.summary) {
      node.append(
        el(
          'details',
          { class: 'compacted-summary', 'data-testid': 'compacted-summary' },
          el('summary', { text: 'Summary the model sees in place of the earlier turns' }),
          el('div', { class: 'markdown' }, renderMarkdown(data.summary)),
        ),
      );
    }
    if (known && view.context) setContext(view, { used: data.tokens_after, limit: view.context.limit });
    append(node);
  }

  /**
   * `user`: what was typed, the images it carries as thumbnails, and for a
   * command that runs as a query (`/init`, a custom command such as
   * `/review src/main.rs`) what the model received instead, on demand.
   */
  function renderUser(view, event) {
    finishLive(view);
    const node = line('msg user', 'message-user', event.text, event);
    if (typeof event.seq === 'number') node.setAttribute('data-seq', String(event.seq));
    const images = Array.isArray(event.images) ? event.images : [];
    if (images.length) node.append(messageImages(images));
    if (typeof event.prompt === 'string' && event.prompt) {
      node.append(
        el('details', { class: 'user-prompt', 'data-testid': 'message-prompt' },
          el('summary', { text: 'What the model received' }),
          el('pre', { text: event.prompt })),
      );
    }
    if (typeof event.seq === 'number') node.append(rewindButton(view, event));
    append(node);
  }

  /** A `user` event's images, each a thumbnail that a click shows larger. */
  function messageImages(images) {
    const row = el('div', { class: 'message-images', 'data-testid': 'message-images' });
    images.forEach((image, i) => {
      const label = (image && image.source) || 'image ' + (i + 1);
      const url = image ? imageUrl(image.media_type, image.data) : null;
      if (!url) {
        row.append(el('span', { class: 'thumb-missing dim', text: '[' + label + ']' }));
        return;
      }
      const thumb = el('img', {
        class: 'thumb',
        'data-testid': 'message-image',
        'data-media-type': image.media_type,
        alt: label,
        title: label + ' \u00b7 ' + image.media_type + ' \u00b7 ' + byteSize(base64Bytes(image.data)) + ' (click to enlarge)',
        src: url,
      });
      thumb.addEventListener('click', () => thumb.classList.toggle('enlarged'));
      row.append(thumb);
    });
    return row;
  }

  // ---------------------------------------------------------------------
  // Markdown: the model's text as HTML, sanitised
  // ---------------------------------------------------------------------

  /** `&`, `<`, `>` and quotes as entities. */
  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  }

  /**
   * The Markdown parser: GitHub's flavour (tables, fenced code, strikethrough),
   * with raw HTML in the text shown as text rather than made into elements
   * (a model writing "<div>" in prose means the word; a reply must never
   * bring its own elements, scripts or handlers into the page), and an
   * image as a link to it: the page loads nothing from an address a reply
   * names (nor could it: its Content-Security-Policy allows no image from
   * elsewhere).
   */
  const markdown = (() => {
    if (!window.marked || typeof window.marked.Marked !== 'function') return null;
    return new window.marked.Marked({
      gfm: true,
      breaks: false,
      renderer: {
        html(token) {
          const text = escapeHtml(token.text);
          return token.block ? '<p class="raw-html">' + text + '</p>\n' : text;
        },
        image(token) {
          const label = escapeHtml('[image: ' + (token.text || token.href || '') + ']');
          return /^https?:/i.test(token.href || '') ? '<a href="' + escapeHtml(token.href) + '">' + label + '</a>' : label;
        },
      },
    });
  })();

  /** The sanitiser, set up once: links open in a new tab, checkboxes are read-only. */
  const purifier = (() => {
    const purify = window.DOMPurify;
    if (!purify || typeof purify.sanitize !== 'function' || !purify.isSupported) return null;
    purify.addHook('afterSanitizeAttributes', (node) => {
      if (node.nodeName === 'A' && node.hasAttribute('href')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
      if (node.nodeName === 'INPUT') node.setAttribute('disabled', '');
    });
    return purify;
  })();

  const SANITIZE = {
    RETURN_DOM_FRAGMENT: true,
    // Nothing that loads, submits or styles (marked makes none of these;
    // this is the second wall), inline styles dropped.
    FORBID_TAGS: ['img', 'style', 'form', 'button', 'textarea', 'select', 'option', 'iframe', 'object', 'embed', 'video', 'audio', 'source', 'picture', 'svg', 'math'],
    FORBID_ATTR: ['style', 'id', 'name'],
    ALLOW_DATA_ATTR: false,
  };

  /**
   * Markdown as a fragment of the page: parsed by marked, cleaned by
   * DOMPurify. Plain text when either script is missing.
   */
  function renderMarkdown(text) {
    const fragment = document.createDocumentFragment();
    if (!markdown || !purifier) {
      fragment.append(el('p', { class: 'plain-text', text }));
      return fragment;
    }
    let clean;
    try {
      clean = purifier.sanitize(markdown.parse(String(text)), SANITIZE);
    } catch (_) {
      fragment.append(el('p', { class: 'plain-text', text }));
      return fragment;
    }
    // Wide tables scroll on their own instead of widening the page.
    for (const table of clean.querySelectorAll('table')) {
      const box = el('div', { class: 'table-box' });
      table.replaceWith(box);
      box.append(table);
    }
    fragment.append(clean);
    return fragment;
  }

  /** An assistant message element showing `text` as Markdown. */
  function assistantText(text, streaming, title) {
    const node = el('div', {
      class: 'msg assistant markdown',
      'data-testid': 'message-assistant',
      'data-streaming': streaming ? 'true' : 'false',
      title,
    });
    node.append(renderMarkdown(text));
    return node;
  }

  // ---------------------------------------------------------------------
  // The assistant message being streamed
  // ---------------------------------------------------------------------

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

  /** The thinking of a message, dimmed and cut to two lines: not the answer. */
  function thinkingNode(text) {
    return el('div', { class: 'thinking', 'data-testid': 'thinking', text: '\u273b ' + text });
  }

  /** The live block at `index`, made as `kind` ('text', 'thinking' or 'tool_use') if new. */
  function liveBlock(view, index, kind, name) {
    const live = liveMessage(view);
    let block = live.blocks.get(index);
    if (!block) {
      if (kind === 'tool_use') {
        block = { kind, name, json: '', node: el('div', { class: 'tool-call pending', text: '\u25b8 ' + name + '(\u2026' }) };
      } else if (kind === 'thinking') {
        block = { kind, text: document.createTextNode(''), node: thinkingNode('') };
        block.node.append(block.text);
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
  function renderStreamEvent(view, event) {
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
  function finishLive(view, stopReason) {
    if (!view.live) return;
    stopLive(view);
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
  function renderAssistant(view, event) {
    if (event.context) setContext(view, event.context);
    const blocks = Array.isArray(event.content) ? event.content : [];
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const thinking = blocks.filter((b) => b.type === 'thinking').map((b) => b.thinking || '').join('');
    const nodes = [];
    if (thinking.trim()) nodes.push(thinkingNode(thinking.trim()));
    if (text) nodes.push(assistantText(text, false, fullTime(event.at) + (event.model ? ' \u00b7 ' + event.model : '')));
    for (const block of blocks) {
      if (block.type === 'tool_use') nodes.push(toolCall(block));
    }
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

  // ---------------------------------------------------------------------
  // Tool calls and their results; edits as diffs
  // ---------------------------------------------------------------------

  /** Tools whose call is shown as the change it makes to a file. */
  const FILE_TOOLS = new Set(['edit_file', 'write_file']);

  /**
   * A tool call: name and its arguments on one line (in the model's order;
   * for an edit or a write, `path` first), the whole input on demand. An
   * edit or a write shows its diff at once.
   */
  function toolCall(block) {
    const node = el(
      'details',
      { class: 'tool-call', 'data-testid': 'tool-call', 'data-tool': block.name, 'data-call-id': block.id },
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
    return node;
  }

  /** `tool_result`: the first lines, errors marked; the whole output on demand. */
  function renderToolResult(event) {
    const output = event.output || '';
    const marker = event.cancelled ? ' (cancelled)' : '';
    // An edit's output is a line and the diff as it was applied (with line
    // numbers): the diff replaces the one its call showed from the input.
    const applied = event.name === 'edit_file' && !event.is_error ? unifiedDiff(output) : null;
    if (applied) {
      const call = callNode(event.call_id);
      const shown = call && call.querySelector('[data-testid="tool-diff"]');
      if (shown) {
        const diff = diffView(applied.rows);
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
  function callNode(callId) {
    return [...$('conversation').querySelectorAll('[data-testid="tool-call"]')].find((n) => n.dataset.callId === callId) || null;
  }

  /** The lines of a text, without the empty one after a final newline. */
  function splitLines(text) {
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
  function diffLines(oldText, newText) {
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

  /** An edit's or a write's change from its input, as a diff (null: not that shape). */
  function inputDiff(name, input) {
    const args = input && typeof input === 'object' ? input : {};
    if (name === 'edit_file' && typeof args.old_string === 'string' && typeof args.new_string === 'string') {
      return diffView(diffLines(args.old_string, args.new_string));
    }
    if (name === 'write_file' && typeof args.content === 'string') {
      return diffView(splitLines(args.content).map((text) => ({ kind: 'add', text })));
    }
    return null;
  }

  /**
   * A tool's unified diff (`--- a`, `+++ b`, `@@` hunks) after the text
   * before it: `{head, rows}`, the file header left out; null without one.
   */
  function unifiedDiff(output) {
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

  /** Diff rows as a block: one line each, removed and added lines coloured; long ones scroll. */
  function diffView(rows) {
    const pre = el('pre', { class: 'diff' });
    if (rows.length === 0) pre.append(el('span', { class: 'diff-note', text: '(no change)' }));
    for (const row of rows) {
      pre.append(el('span', { class: 'diff-' + row.kind, text: DIFF_SIGNS[row.kind] + row.text }));
    }
    return pre;
  }

  /** `result`: stop reason, steps, tokens, duration; adds to the usage totals. */
  function renderResult(view, event) {
    finishLive(view, event.stop_reason || 'ended');
    endApprovals(view, event.turn_id);
    const usage = event.usage || {};
    const input = allInput(usage);
    view.usage.input += input;
    view.usage.output += usage.output_tokens || 0;
    view.usage.cacheRead += usage.cache_read_input_tokens || 0;
    view.usage.cacheWritten += usage.cache_creation_input_tokens || 0;
    view.usage.turns += 1;
    const session = findSession(view.sessionId);
    view.turnsByProfile.push([view.model || (session && session.model), usage]);
    if (event.context) setContext(view, event.context);
    renderStatusOf(view);

    const steps = event.steps || 0;
    const fill = event.context ? contextFill(event.context) : null;
    const cached = usage.cache_read_input_tokens && input ? ' (' + Math.round((usage.cache_read_input_tokens * 100) / input) + '% cached)' : '';
    const figures = steps + ' step' + (steps === 1 ? '' : 's') + ' \u00b7 ' + input + ' in' + cached + ' / ' +
      (usage.output_tokens || 0) + ' out tokens \u00b7 ' + ((event.duration_ms || 0) / 1000).toFixed(1) + ' s' +
      (fill ? ' \u00b7 context ' + fill.percent + '% (' + thousands(fill.used) + '/' + thousands(fill.limit) + ')' : '');
    const heads = {
      end_turn: '\u2713 end_turn',
      cancelled: '\u25a0 cancelled (interrupted)',
      max_steps: '\u26a0 max_steps (stopped at the step limit)',
      error: '\u2717 error (the turn failed' + (event.error ? ': ' + event.error : '') + ')',
    };
    const head = heads[event.stop_reason] || String(event.stop_reason);
    const node = line('result-line ' + (event.stop_reason || ''), 'result-line', head + ' \u00b7 ' + figures, event);
    node.setAttribute('data-stop-reason', event.stop_reason || '');
    append(node);
  }

  // ---------------------------------------------------------------------
  // The status line: profile, agent, mode, context, tokens, cache, cost
  // ---------------------------------------------------------------------

  /** `{used, limit?}` from an `assistant` or `result` event (or a reply): the latest wins. */
  function setContext(view, context) {
    if (!context || typeof context.used !== 'number') return;
    view.context = { used: context.used, limit: typeof context.limit === 'number' ? context.limit : null };
    renderStatusOf(view);
  }

  /** `{percent, used, limit}` when the limit is known, else null. */
  function contextFill(context) {
    if (!context || typeof context.used !== 'number' || !(context.limit > 0)) return null;
    return { percent: Math.round((context.used * 100) / context.limit), used: context.used, limit: context.limit };
  }

  /** All input tokens of a `usage`: uncached, read from the prompt cache and written to it. */
  function allInput(usage) {
    return (usage.input_tokens || 0) + (usage.cache_read_input_tokens || 0) + (usage.cache_creation_input_tokens || 0);
  }

  /** What `usage` costs at `prices` (US dollars per million tokens), as the session counts it. */
  function costOf(prices, usage) {
    const per = (tokens, price) => ((tokens || 0) * price) / 1e6;
    return per(usage.input_tokens, prices.input_per_mtok) +
      per(usage.output_tokens, prices.output_per_mtok) +
      per(usage.cache_read_input_tokens, prices.cache_read_per_mtok ?? prices.input_per_mtok) +
      per(usage.cache_creation_input_tokens, prices.cache_write_per_mtok ?? prices.input_per_mtok);
  }

  /**
   * The session's cost in US dollars: the latest `/usage` reply's figure
   * plus the turns since, each at the prices of the profile it ran on; null
   * when no turn ran on a priced profile.
   */
  function sessionCost(view) {
    let usd = view.reportedCost ? view.reportedCost.usd : 0;
    let priced = view.reportedCost !== null;
    for (const [profile, usage] of view.turnsByProfile.slice(view.reportedCost ? view.reportedCost.turns : 0)) {
      const prices = state.prices.get(profile);
      if (!prices) continue;
      usd += costOf(prices, usage);
      priced = true;
    }
    return priced ? usd : null;
  }

  function renderStatusOf(view) {
    if (state.view === view) renderStatus();
  }

  const MODE_TITLES = {
    default: 'Reads inside the workspace run; edits, writes, commands and MCP tools ask first',
    'accept-edits': 'Reads and edits inside the workspace run; commands and MCP tools ask first',
    plan: 'Read-only: nothing that writes runs',
    bypass: 'Nothing asks; deny rules and the sandbox still hold',
  };

  /** The status line under the input, for the selected session. */
  function renderStatus() {
    const view = state.view;
    $('status-line').hidden = !view;
    if (!view) return;
    const session = findSession(view.sessionId);
    const model = view.model || (session && session.model) || null;
    $('status-model').textContent = model || '';
    $('status-model').hidden = !model;
    $('status-agent').textContent = view.agent ? 'agent ' + view.agent : '';
    $('status-agent').hidden = !view.agent;

    const badge = $('session-mode');
    badge.hidden = !view.mode;
    badge.textContent = view.mode ? 'mode ' + view.mode : '';
    badge.setAttribute('data-mode', view.mode || '');
    badge.title = view.mode ? (MODE_TITLES[view.mode] || '') + ' \u00b7 /mode MODE changes it' : '';

    const box = $('context-usage');
    const context = view.context;
    box.hidden = !context;
    if (context) {
      const fill = contextFill(context);
      box.setAttribute('data-level', !fill ? 'unknown' : fill.percent >= 95 ? 'full' : fill.percent >= 80 ? 'high' : 'ok');
      box.setAttribute('data-percent', fill ? String(fill.percent) : '');
      $('context-fill').style.width = fill ? Math.min(fill.percent, 100) + '%' : '0';
      $('context-text').textContent = fill ? 'context ' + fill.percent + '%' : 'context ~' + thousands(context.used) + ' tokens';
      box.title = (fill
        ? 'Context: ' + thousands(fill.used) + ' of ' + thousands(fill.limit) + ' tokens'
        : 'Context: ~' + thousands(context.used) + ' tokens (limit unknown)') + ' \u00b7 /context shows the breakdown';
    }

    const usage = $('usage');
    usage.textContent = view.usage.turns ? thousands(view.usage.input) + ' in / ' + thousands(view.usage.output) + ' out tokens' : '';
    usage.hidden = !view.usage.turns;
    usage.title = 'Session usage: ' + view.usage.input + ' in / ' + view.usage.output + ' out tokens over ' +
      view.usage.turns + ' turn' + (view.usage.turns === 1 ? '' : 's');
    usage.setAttribute('data-turns', String(view.usage.turns));

    // The prompt cache: the share of the session's input read from it.
    const cache = $('status-cache');
    const cachedAny = view.usage.cacheRead + view.usage.cacheWritten > 0 && view.usage.input > 0;
    cache.hidden = !cachedAny;
    const percent = cachedAny ? Math.round((view.usage.cacheRead * 100) / view.usage.input) : 0;
    cache.textContent = cachedAny ? 'cache ' + percent + '%' : '';
    cache.setAttribute('data-percent', cachedAny ? String(percent) : '');
    cache.title = cachedAny
      ? 'Prompt cache: ' + thousands(view.usage.cacheRead) + ' of ' + thousands(view.usage.input) +
        ' input tokens read from it, ' + thousands(view.usage.cacheWritten) + ' written (/usage, /context)'
      : '';

    const cost = sessionCost(view);
    $('status-cost').hidden = cost === null;
    $('status-cost').textContent = cost === null ? '' : '$' + cost.toFixed(4);
  }

  /** 12345 as `12,345`. */
  function thousands(n) {
    return Number(n).toLocaleString('en-US', { maximumFractionDigits: 0 });
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

  function firstLine(s) {
    const at = s.indexOf('\n');
    return at < 0 ? s : s.slice(0, at) + '\u2026';
  }

  function cut(s, max) {
    const chars = Array.from(s);
    return chars.length > max ? chars.slice(0, max).join('') + '\u2026' : s;
  }

  // ---------------------------------------------------------------------
  // Approvals: a tool call that asks first
  // ---------------------------------------------------------------------

  const CHOICE_LABELS = { allow_once: 'Allow once', allow_always: 'Always allow', reject: 'Reject' };

  /**
   * `approval_request`: a card under the tool call saying what it would do,
   * with a button per offered choice. It stays pending (after a reload too:
   * the replay shows it again) until an `approval_resolved` with its
   * request_id closes it, whichever client answered.
   */
  function renderApprovalRequest(view, event) {
    const options = Array.isArray(event.options) ? event.options : ['allow_once', 'reject'];
    const card = el('div', {
      class: 'approval-card',
      'data-testid': 'approval',
      'data-request-id': event.request_id,
      'data-call-id': event.call_id,
      'data-tool': event.name,
      'data-state': 'pending',
      title: fullTime(event.at),
    });
    card.append(
      el('div', { class: 'approval-head' },
        el('span', { class: 'approval-mark', text: '?' }),
        el('span', { 'data-testid': 'approval-title', text: event.name + ' wants approval' })),
    );
    if (event.reason) card.append(el('div', { class: 'approval-reason dim', 'data-testid': 'approval-reason', text: event.reason }));
    const detail = approvalDetail(event.name, event.input);
    detail.classList.add('approval-detail');
    card.append(detail);
    const actions = el('div', { class: 'approval-actions', 'data-testid': 'approval-actions' });
    if (event.suggested_mode) {
      // Only while it can be answered: part of the choices.
      actions.append(el('div', { class: 'dim approval-hint', text: 'In ' + event.suggested_mode + ' mode this would run without asking (/mode ' + event.suggested_mode + ').' }));
    }
    const error = el('div', { class: 'approval-error', 'data-testid': 'approval-error', role: 'alert', hidden: true });
    const outcome = el('div', { class: 'approval-outcome', 'data-testid': 'approval-outcome', hidden: true });
    const entry = { card, actions, error, outcome, turnId: event.turn_id, buttons: [], call: null };
    const message = el('input', {
      type: 'text',
      class: 'approval-message',
      'data-testid': 'approval-message',
      placeholder: 'Why not, or what instead (optional, for the model)',
      'aria-label': 'Message for the model with a rejection',
    });
    for (const choice of options) {
      let label = CHOICE_LABELS[choice] || choice;
      if (choice === 'allow_always' && event.suggested_rule) label += ' ' + event.suggested_rule;
      const button = el('button', {
        type: 'button',
        class: 'small' + (choice === 'reject' ? ' danger' : ' allow'),
        'data-testid': 'approval-' + choice.replace(/_/g, '-'),
        'data-choice': choice,
        text: label,
        onclick: () => decide(view, event.request_id, entry, choice, choice === 'reject' ? message.value : ''),
      });
      entry.buttons.push(button);
      if (choice === 'reject') {
        message.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' && !e.isComposing) {
            e.preventDefault();
            button.click();
          }
        });
        actions.append(el('span', { class: 'approval-reject' }, message, button));
      } else {
        actions.append(button);
      }
    }
    entry.buttons.push(message);
    card.append(actions, error, outcome);
    view.approvals.set(event.request_id, entry);
    // Under its tool call when it is shown, else at the end. While the card
    // waits it shows the change, and the call above does not repeat it.
    const call = callNode(event.call_id);
    if (call) {
      entry.call = call;
      card.classList.add('under-call');
      call.classList.add('asking');
      let after = call;
      while (after.nextElementSibling && after.nextElementSibling.classList.contains('approval-card')) after = after.nextElementSibling;
      keepScrolled(() => after.after(card));
    } else {
      append(card);
    }
  }

  /** What the call would do: the command, an edit or a write as a diff (path first, all of it), else the input. */
  function approvalDetail(name, input) {
    const args = input && typeof input === 'object' ? input : {};
    if (name === 'bash' && typeof args.command === 'string') {
      return el('pre', { class: 'approval-command', 'data-testid': 'approval-command', text: args.command });
    }
    const diff = FILE_TOOLS.has(name) ? inputDiff(name, args) : null;
    if (diff) {
      diff.classList.add('approval-diff');
      diff.setAttribute('data-testid', 'approval-diff');
      const what = name === 'write_file'
        ? 'write ' + String(args.path || '') + ' (' + splitLines(args.content).length + ' line' + (splitLines(args.content).length === 1 ? '' : 's') + ')'
        : 'edit ' + String(args.path || '') + (args.replace_all ? ' (every occurrence)' : '');
      return el('div', {}, el('div', { class: 'approval-path', 'data-testid': 'approval-path', text: what }), diff);
    }
    return el('pre', { class: 'approval-input', 'data-testid': 'approval-input', text: typeof input === 'string' ? input : JSON.stringify(input, null, 2) });
  }

  /** Post a decision. The card closes when the `approval_resolved` event arrives, not here. */
  async function decide(view, requestId, entry, choice, message) {
    const body = { decision: choice };
    if (choice === 'reject' && message && message.trim()) body.message = message.trim();
    for (const b of entry.buttons) b.disabled = true;
    entry.error.hidden = true;
    try {
      await api('POST', sessionPath(view.sessionId) + '/approvals/' + encodeURIComponent(requestId), body);
    } catch (e) {
      if (e.status === 401) return;
      if (entry.card.dataset.state !== 'pending') return; // settled meanwhile: the card says how
      entry.error.textContent = e.status === 409 ? 'Already answered (the first answer wins).' : e.message;
      entry.error.hidden = false;
      // 409: the answer that won is on its way; anything else may be tried again.
      if (e.status !== 409) for (const b of entry.buttons) b.disabled = false;
    }
  }

  const OUTCOMES = {
    allowed_once: 'Allowed once',
    allowed_always: 'Always allowed',
    rejected: 'Rejected',
    timed_out: 'Rejected: nobody answered in time',
    cancelled: 'Cancelled',
  };

  /** `approval_resolved`: close its card with the outcome. False when no card shows the request. */
  function resolveApproval(view, event) {
    const data = event.data || {};
    const entry = view.approvals.get(data.request_id);
    if (!entry) return false;
    let text = OUTCOMES[data.outcome] || String(data.outcome || 'settled');
    if (data.outcome === 'allowed_always' && data.rule) text += ': ' + data.rule + (data.save ? ' (saved to .agentbus.toml)' : '');
    if (data.outcome === 'rejected' && data.message) text += ': ' + data.message;
    closeApproval(entry, data.outcome || 'settled', text, event);
    return true;
  }

  /** The turn ended: a request still open there can no longer be answered. */
  function endApprovals(view, turnId) {
    if (turnId === undefined) return;
    for (const entry of view.approvals.values()) {
      if (entry.turnId === turnId && entry.card.dataset.state === 'pending') {
        closeApproval(entry, 'ended', 'Not answered: the turn ended', null);
      }
    }
  }

  function closeApproval(entry, outcome, text, event) {
    entry.card.dataset.state = 'resolved';
    // The call above shows the change again; the card keeps the outcome.
    if (entry.call) entry.call.classList.remove('asking');
    entry.card.dataset.outcome = outcome;
    entry.actions.remove();
    entry.error.hidden = true;
    entry.outcome.textContent = (outcome === 'allowed_once' || outcome === 'allowed_always' ? '\u2713 ' : '\u2717 ') + text;
    if (event) entry.outcome.title = fullTime(event.at);
    entry.outcome.hidden = false;
  }

  // ---------------------------------------------------------------------
  // Rewind: take back what the turns from a user message on did
  // ---------------------------------------------------------------------

  /** The "Rewind to here" action of a user message (the seq of its `user` event). */
  function rewindButton(view, event) {
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
  function watchRewindDialog() {
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

  // ---------------------------------------------------------------------
  // Following `data.switch_to` of our own commands (/new, /resume, /fork, /load)
  // ---------------------------------------------------------------------

  const inputKey = (sessionId, inputId) => sessionId + ':' + inputId;

  /**
   * A `system` event (a command's reply may name a session to switch to) or
   * a `result` (a query's turn is over). The server says which inputs are
   * commands; this page does not look at the text.
   */
  function followSwitch(event) {
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
  function noteOwnInput(sessionId, inputId) {
    const key = inputKey(sessionId, inputId);
    if (state.earlySwitches.has(key)) {
      const target = state.earlySwitches.get(key);
      state.earlySwitches.delete(key);
      if (target) switchTo(target);
    } else {
      state.ownInputs.add(key);
    }
  }

  function switchTo(id) {
    if (id === state.selectedId) return;
    refreshSessionsSoon();
    selectSession(id);
  }

  // ---------------------------------------------------------------------
  // Images with a query: pasted, dropped or attached; sent with the next query
  // ---------------------------------------------------------------------

  /** The kinds an image may be (README "Images"), told by its first bytes as the server tells them. */
  const IMAGE_KINDS = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
  /** The largest image the server takes (actors/src/images.rs, MAX_IMAGE_BYTES). */
  const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
  /**
   * The most base64 the images of one query may add up to: the server
   * takes an input of at most 32 MiB (src/serve/mod.rs, INPUT_BODY_LIMIT),
   * 1 MiB of which is left to the text.
   */
  const MAX_IMAGES_BASE64 = 31 * 1024 * 1024;

  /** The media type of an image's first bytes, or null when it is none of IMAGE_KINDS. */
  function imageKind(bytes) {
    const at = (offset, ...sig) => sig.every((b, i) => bytes[offset + i] === b);
    if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
    if (at(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
    if (at(0, 0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return 'image/gif';
    if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp';
    return null;
  }

  /** Bytes as base64 (standard alphabet, padded), in slices so a large image fits the call stack. */
  function toBase64(bytes) {
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(binary);
  }

  /** How many bytes a base64 string holds. */
  function base64Bytes(data) {
    const text = String(data || '').replace(/\s+/g, '');
    return Math.floor((text.replace(/=+$/, '').length * 3) / 4);
  }

  /** 1536 as `1.5 KB`, 5242880 as `5.0 MB` (1024-based, as the server counts). */
  function byteSize(n) {
    if (n < 1024) return n + ' bytes';
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KB';
    return (n / (1024 * 1024)).toFixed(1) + ' MB';
  }

  /** A `data:` URL showing an image, or null unless it is one of IMAGE_KINDS in clean base64. */
  function imageUrl(mediaType, data) {
    if (!IMAGE_KINDS.includes(mediaType) || typeof data !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(data.replace(/\s+/g, ''))) return null;
    return 'data:' + mediaType + ';base64,' + data.replace(/\s+/g, '');
  }

  /**
   * A file the user gave, checked as the server will check it: `{name,
   * mediaType, data, size}` (`data` base64), or an Error saying what is wrong.
   */
  async function readImage(file) {
    const name = file.name || 'pasted image';
    if (file.size > MAX_IMAGE_BYTES) {
      return new Error(name + ' is ' + thousands(file.size) + ' bytes; an image may be at most 5 MB (' + thousands(MAX_IMAGE_BYTES) + ' bytes), so it was not added.');
    }
    let bytes;
    try {
      bytes = new Uint8Array(await file.arrayBuffer());
    } catch (e) {
      return new Error(name + ' could not be read (' + e.message + ').');
    }
    const mediaType = imageKind(bytes);
    if (!mediaType) return new Error(name + ' is not a PNG, JPEG, GIF or WebP image, so it was not added.');
    return { name, mediaType, data: toBase64(bytes), size: bytes.length };
  }

  /** Add files to the images waiting for the next query; say which could not be. */
  async function addImages(files) {
    const problems = [];
    for (const file of files) {
      const image = await readImage(file);
      if (image instanceof Error) {
        problems.push(image.message);
        continue;
      }
      const total = state.pendingImages.reduce((sum, i) => sum + i.data.length, 0) + image.data.length;
      if (total > MAX_IMAGES_BASE64) {
        problems.push(image.name + ' was not added: with the images already here the message would be larger than the server takes (32 MB in all). Send these first.');
        continue;
      }
      state.pendingImages.push(image);
    }
    renderAttachments(problems.join(' '));
  }

  /** The chips of the waiting images above the input, each with its × button; `problem`: what could not be added. */
  function renderAttachments(problem) {
    const box = $('attachments');
    box.replaceChildren(...state.pendingImages.map(attachmentChip));
    box.hidden = state.pendingImages.length === 0;
    showAttachProblem(problem || '');
  }

  function showAttachProblem(text) {
    $('attach-error').textContent = text;
    $('attach-error').hidden = !text;
  }

  function attachmentChip(image) {
    const remove = () => {
      state.pendingImages = state.pendingImages.filter((i) => i !== image);
      renderAttachments('');
      $('input').focus();
    };
    return el(
      'span',
      { class: 'attachment', 'data-testid': 'attachment', 'data-media-type': image.mediaType, title: image.name + ' \u00b7 ' + byteSize(image.size) },
      el('img', { class: 'attachment-thumb', alt: image.name, src: imageUrl(image.mediaType, image.data) }),
      el('span', { class: 'attachment-name', text: image.name }),
      el('button', { type: 'button', class: 'attachment-remove', 'data-testid': 'attachment-remove', 'aria-label': 'Remove ' + image.name, title: 'Remove', text: '\u00d7', onclick: remove }),
    );
  }

  /** The files a paste or a drop carries (an image copied from a page or a screenshot tool is one). */
  function filesOf(transfer) {
    if (!transfer) return [];
    if (transfer.files && transfer.files.length) return [...transfer.files];
    return [...(transfer.items || [])].filter((item) => item.kind === 'file').map((item) => item.getAsFile()).filter(Boolean);
  }

  /** Ctrl+V of an image (a screenshot): it waits for the next query; text pastes as usual. */
  function onPaste(event) {
    const files = filesOf(event.clipboardData);
    if (files.length === 0 || !state.view) return;
    event.preventDefault(); // an image copied from a page brings its address as text too
    addImages(files);
  }

  /** Whether a drag carries files (not text being moved). */
  const dragsFiles = (event) => !!event.dataTransfer && [...event.dataTransfer.types].includes('Files');

  /** Image files dropped on the session's side of the page wait for the next query. */
  function watchDrops() {
    const target = $('main');
    const leave = () => target.classList.remove('dropping');
    target.addEventListener('dragover', (event) => {
      if (!dragsFiles(event) || !state.view) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
      target.classList.add('dropping');
    });
    target.addEventListener('dragleave', (event) => {
      if (!target.contains(event.relatedTarget)) leave();
    });
    target.addEventListener('drop', (event) => {
      leave();
      if (!dragsFiles(event) || !state.view) return;
      event.preventDefault();
      addImages(filesOf(event.dataTransfer));
      $('input').focus();
    });
    // A file dropped anywhere else must not replace the page with itself.
    for (const type of ['dragover', 'drop']) {
      document.addEventListener(type, (event) => {
        if (dragsFiles(event)) event.preventDefault();
      });
    }
  }

  /** The Image button: pick files, which wait for the next query. */
  function watchAttachButton() {
    const picker = $('attach-input');
    $('attach').addEventListener('click', () => picker.click());
    picker.addEventListener('change', () => {
      const files = [...picker.files];
      picker.value = '';
      addImages(files).then(() => $('input').focus());
    });
  }

  // ---------------------------------------------------------------------
  // Slash command suggestions: the built-in commands, then the session's own
  // ---------------------------------------------------------------------

  /** The built-in commands (`/commands.json`, the server's own table), for the suggestions. */
  async function loadBuiltInCommands() {
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
  function updateSuggestions() {
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

  function hideSuggestions() {
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
  function onSuggestionKey(event) {
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

  // ---------------------------------------------------------------------
  // Input box and buttons
  // ---------------------------------------------------------------------

  /**
   * Post the input box's text (queries and slash commands alike), a query
   * with the images waiting above the box. Until its first event comes,
   * the input is listed as sent (shown while a turn runs, behind which it
   * waits); a command's line then goes above its answer, as the terminal
   * shows what was typed. A query shows as its `user` event when its turn
   * starts.
   */
  async function sendInput() {
    const box = $('input');
    const text = box.value;
    const sessionId = state.selectedId;
    const view = state.view;
    if (!sessionId || !view) return;
    if (text.trim() === '') {
      if (state.pendingImages.length) showAttachProblem('Type a message to go with the images, then send.');
      return;
    }
    hideSuggestions();
    const images = takeImages(view, text);
    box.value = '';
    const sent = { text, images: images.length, inputId: null };
    view.sent.push(sent);
    renderQueued();
    state.postsInFlight += 1;
    const body = { text };
    if (images.length) {
      body.images = images.map((image) => ({
        media_type: image.mediaType,
        data: image.data,
        // Its file name, kept with it (the server takes at most 255 characters, no control ones).
        source: Array.from(String(image.name || '').replace(/[\u0000-\u001f\u007f-\u009f]/g, '')).slice(0, 255).join(''),
      }));
    }
    try {
      const answer = await api('POST', sessionPath(sessionId) + '/input', body);
      hideBanner();
      if (answer && answer.input_id !== undefined) {
        sent.inputId = answer.input_id;
        const early = view.unclaimed.get(answer.input_id);
        if (early) settleSent(view, sent, early.event, early.anchor);
        noteOwnInput(sessionId, answer.input_id);
      }
    } catch (e) {
      forgetSent(view, sent);
      if (e.status === 401) return;
      showBanner(e.message);
      if (box.value === '' && state.selectedId === sessionId) box.value = text; // give the text back
      if (images.length && state.pendingImages.length === 0) {
        state.pendingImages = images; // and the images
        renderAttachments('');
      }
    } finally {
      state.postsInFlight -= 1;
      if (state.postsInFlight === 0) state.earlySwitches.clear();
      if (!view.sent.some((s) => s.inputId === null)) view.unclaimed.clear();
      renderQueued();
    }
  }

  /**
   * The images waiting for a query, taken to go with `text`: none when it
   * is a slash command, which takes no images (they stay for the next query).
   */
  function takeImages(view, text) {
    if (state.pendingImages.length === 0) return [];
    if (isSlashCommand(view, text)) {
      showAttachProblem('A slash command takes no images: they stay here for your next message.');
      return [];
    }
    const images = state.pendingImages;
    state.pendingImages = [];
    renderAttachments('');
    return images;
  }

  /**
   * Whether the session reads `text` as a slash command, as it parses it
   * (actors/src/session/core/commands/mod.rs): `/` and a word of letters
   * and dashes, or the name of one of its custom commands.
   */
  function isSlashCommand(view, text) {
    const match = /^\/(\S+)/.exec(text.trimStart());
    if (!match) return false;
    return /^[A-Za-z-]+$/.test(match[1]) || view.commands.some((c) => c.name === match[1]);
  }

  /**
   * The first event of an input (its `user` event, or a command's answer),
   * `anchor` the element it added: settles the input this page sent, or is
   * kept until a POST still on its way answers with that input id.
   */
  function claimSent(view, event, anchor) {
    if (event.turn_id === undefined) return;
    const sent = view.sent.find((s) => s.inputId === event.turn_id);
    if (sent) settleSent(view, sent, event, anchor);
    else if (view.sent.some((s) => s.inputId === null) && !view.unclaimed.has(event.turn_id)) {
      view.unclaimed.set(event.turn_id, { event, anchor });
    }
  }

  /** An input's first event came: a command's typed line goes above its answer. */
  function settleSent(view, sent, event, anchor) {
    forgetSent(view, sent);
    view.unclaimed.delete(event.turn_id);
    if (event.type === 'system' && state.view === view) {
      const echo = line('msg user command', 'message-command', sent.text, event);
      if (anchor && anchor.isConnected) keepScrolled(() => anchor.before(echo));
      else append(echo);
    }
    renderQueued();
  }

  function forgetSent(view, sent) {
    const at = view.sent.indexOf(sent);
    if (at >= 0) view.sent.splice(at, 1);
  }

  /** Marks of a plan item's status, as the terminal draws them. */
  const PLAN_MARKS = { pending: '\u2610', in_progress: '\u25d0', completed: '\u2611' };

  /**
   * The selected session's plan above the input box, one item a line (the
   * one in progress in the words the model gave for it), replaced in place
   * by each `plan` event; hidden while there is none.
   */
  function renderPlan() {
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

  /** The inputs waiting behind the running turn, above the input box. */
  function renderQueued() {
    const view = state.view;
    const waiting = view && view.openTurns.size > 0 ? view.sent : [];
    const box = $('queued');
    box.hidden = waiting.length === 0;
    const label = (s) => s.text + (s.images ? ' (+' + s.images + ' image' + (s.images === 1 ? '' : 's') + ')' : '');
    box.replaceChildren(...waiting.map((s) => el('div', { class: 'queued-item', 'data-testid': 'queued-input', title: 'Sent; runs when the turn before it ends', text: label(s) })));
  }

  /** Cancel the running turn of the selected session. */
  async function interrupt() {
    const view = state.view;
    if (!view) return;
    view.interrupting = true;
    updateControls();
    try {
      await api('POST', sessionPath(view.sessionId) + '/interrupt');
    } catch (e) {
      view.interrupting = false;
      updateControls();
      if (e.status !== 401) showBanner(e.message);
    }
  }

  /** Enable what can be used now: input with a session, Interrupt while a turn runs. */
  function updateControls() {
    const view = state.view;
    $('input').disabled = !view;
    $('send').disabled = !view;
    $('attach').disabled = !view;
    const running = !!view && view.openTurns.size > 0;
    $('interrupt').disabled = !running || view.interrupting;
    $('app').classList.toggle('running', running);
    $('status-running').hidden = !running;
    $('status-running').textContent = view && view.interrupting ? '\u25cf interrupting\u2026' : '\u25cf running \u00b7 Esc interrupts';
    renderQueued();
  }

  /** Enter sends, Shift+Enter is a new line (not while an IME composes); keys for the command suggestions first. */
  function onInputKey(event) {
    if (onSuggestionKey(event)) return;
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendInput();
    }
  }

  /**
   * Esc anywhere on the page: closes the session list when it covers the
   * page (phone width), else interrupts the running turn, as in the terminal.
   */
  function onPageKey(event) {
    if (event.key !== 'Escape' || event.isComposing || event.defaultPrevented) return;
    if ($('rewind-dialog').open) return; // Esc closes the dialog, and only that
    if (sessionListCovers()) {
      event.preventDefault();
      showSessionList(false);
      return;
    }
    const view = state.view;
    if (view && view.openTurns.size > 0 && !view.interrupting) {
      event.preventDefault();
      interrupt();
    }
  }

  // ---------------------------------------------------------------------
  // Phone width: the session list is a panel over the page
  // ---------------------------------------------------------------------

  const narrow = window.matchMedia('(max-width: 700px)');

  /** Open or close the session list (it only covers the page at phone width). */
  function showSessionList(open) {
    $('app').classList.toggle('sessions-open', !!open);
    $('toggle-sessions').setAttribute('aria-expanded', open ? 'true' : 'false');
  }

  function sessionListCovers() {
    return narrow.matches && $('app').classList.contains('sessions-open');
  }

  /** The model profiles' prices, for the cost in the status line. */
  async function loadPrices() {
    try {
      const answer = await api('GET', '/v1/models');
      state.prices = new Map(((answer && answer.models) || []).filter((m) => m.pricing).map((m) => [m.name, m.pricing]));
      renderStatus();
    } catch (_) {
      /* no cost shown */
    }
  }

  // ---------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------

  async function start() {
    state.token = readToken();
    if (!state.token) {
      showTokenProblem(false);
      return;
    }
    $('app').hidden = false;
    $('new-session').addEventListener('click', newSession);
    $('composer').addEventListener('submit', (event) => {
      event.preventDefault();
      sendInput();
    });
    $('input').addEventListener('keydown', onInputKey);
    $('input').addEventListener('input', updateSuggestions);
    $('input').addEventListener('blur', hideSuggestions);
    $('input').addEventListener('paste', onPaste);
    watchDrops();
    watchAttachButton();
    $('interrupt').addEventListener('click', interrupt);
    watchRewindDialog();
    document.addEventListener('keydown', onPageKey);
    $('toggle-sessions').addEventListener('click', () => showSessionList(!$('app').classList.contains('sessions-open')));
    // At phone width, a tap beside the open session list closes it.
    $('app').addEventListener('click', (event) => {
      if (event.target === $('app') && sessionListCovers()) showSessionList(false);
    });
    window.addEventListener('hashchange', () => {
      const id = decodeURIComponent(location.hash.slice(1)) || null;
      if (id !== state.selectedId) selectSession(id);
    });
    updateControls();

    api('GET', '/v1/health')
      .then((health) => {
        $('server-version').textContent = health && health.version ? 'agentbus ' + health.version : '';
      })
      .catch(() => {});
    loadPrices();
    loadBuiltInCommands();
    await loadSessions();
    if ($('app').hidden) return; // the token was refused
    const fromHash = decodeURIComponent(location.hash.slice(1));
    if (fromHash) selectSession(fromHash);
    else showSessionList(true);
    watchLifecycle();
  }

  document.addEventListener('DOMContentLoaded', start);
})();
