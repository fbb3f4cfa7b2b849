// agentbus web page: the session list on the left, the selected session's
// conversation on the right, an input box below it.
//
// Talks to the HTTP API of `agentbus serve` (docs/api.md):
//   GET/POST /v1/sessions, POST .../fork, DELETE /v1/sessions/{id},
//   POST .../input, POST .../interrupt, POST .../approvals/{request_id},
//   GET /v1/health,
//   SSE GET /v1/events (session lifecycle) and GET /v1/sessions/{id}/events
//   (one session's events: stored ones replayed, then live ones).
// Shows the same information as the terminal chat (src/frontend/output/render.rs).
//
// Every piece of text that comes from the server or the user is put into the
// page with textContent / text nodes, never as HTML.
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
  };

  /** What the right pane knows about the selected session's events. */
  function newView(sessionId) {
    return {
      sessionId,
      stream: null, // EventSource
      lastSeq: 0, // highest seq rendered; anything at or below it is dropped
      openTurns: new Set(), // turn ids with a `user` event and no `result` yet
      usage: { input: 0, output: 0, turns: 0 },
      context: null, // { used, limit? }: how full the context is, from the latest event that says
      live: null, // the assistant message being streamed, see liveMessage()
      retryDelay: 1000,
      retryTimer: null,
      interrupting: false,
      mode: null, // the permission mode, from session_started and `mode` events
      approvals: new Map(), // request_id -> approval card, see renderApprovalRequest()
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
    if (id === state.selectedId && state.view) return;
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
    renderMode();
    renderUsage();
    updateControls();
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
      if (session.model) meta.push('model ' + session.model);
      if (session.workspace) meta.push(session.workspace);
      if (Array.isArray(session.parent)) meta.push('forked from ' + session.parent[0] + ' at ' + session.parent[1]);
    }
    $('session-meta').textContent = meta.join(' \u00b7 ');
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
    renderEvent(view, event);
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
      case 'context': {
        // `/context`: a table, kept as the session aligned it.
        if (typeof data.used === 'number') setContext(view, { used: data.used, limit: data.limit });
        const node = el('pre', { class: 'notice reply context-report', 'data-testid': 'notice', title: fullTime(event.at), text });
        node.setAttribute('data-subtype', 'context');
        return append(node);
      }
      case 'usage':
        if (data.context) setContext(view, data.context);
        dim = false;
        break;
      case 'session_started': {
        const tools = Array.isArray(data.tools) ? data.tools.length : 0;
        if (data.permission_mode) setMode(view, data.permission_mode);
        text = '\u25cf session ' + event.session_id + ' \u00b7 model ' + (data.model || '?') + ' \u00b7 ' + tools + ' tools' +
          (data.agent && data.agent !== 'build' ? ' \u00b7 agent ' + data.agent : '') +
          (data.permission_mode ? ' \u00b7 mode ' + data.permission_mode : '') + (data.resumed ? ' \u00b7 resumed' : '');
        break;
      }
      case 'approval_resolved':
        // The card shows how it ended; a line only when there is no card.
        if (resolveApproval(view, event)) return undefined;
        text = '\u25cf ' + text;
        break;
      case 'mode':
        if (data.mode) setMode(view, data.mode);
        text = '\u25cf ' + text;
        break;
      case 'agent':
        if (data.permission_mode) setMode(view, data.permission_mode);
        text = '\u25cf ' + text;
        break;
      case 'retrying':
      case 'compacting':
      case 'notice':
      case 'mcp_server_status':
      case 'mcp_waiting':
        text = '\u25cf ' + text;
        break;
      default:
        dim = false; // a command's answer: shown like normal text
    }
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
          el('pre', { text: data.summary }),
        ),
      );
    }
    if (known && view.context) setContext(view, { used: data.tokens_after, limit: view.context.limit });
    append(node);
  }

  function renderUser(view, event) {
    finishLive(view);
    append(line('msg user', 'message-user', event.text, event));
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
      } else {
        block = { kind: 'text', text: document.createTextNode(''), node: el('div', { class: 'msg assistant', 'data-testid': 'message-assistant', 'data-streaming': 'true' }) };
      }
      if (block.text) block.node.append(block.text);
      live.blocks.set(index, block);
      keepScrolled(() => live.root.append(block.node));
    }
    return block;
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
        if (block.kind === 'text') keepScrolled(() => block.text.appendData(delta.text || ''));
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
        if (view.live) view.live.root.remove();
        view.live = null;
        append(line('notice dim', 'notice', '\u25cf partial output discarded (' + (delta.reason || 'retrying') + ')', event));
        break;
      default:
        break; // block_stop: nothing to do
    }
  }

  /** Leave whatever streamed on the page as it is (no `assistant` came). */
  function finishLive(view) {
    if (!view.live) return;
    for (const block of view.live.blocks.values()) block.node.setAttribute('data-streaming', 'false');
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
    if (text) {
      nodes.push(el('div', {
        class: 'msg assistant',
        'data-testid': 'message-assistant',
        'data-streaming': 'false',
        title: fullTime(event.at) + (event.model ? ' \u00b7 ' + event.model : ''),
        text,
      }));
    }
    for (const block of blocks) {
      if (block.type === 'tool_use') nodes.push(toolCall(block));
    }
    if (event.interrupted) nodes.push(el('div', { class: 'dim', 'data-testid': 'interrupted', text: '(interrupted)' }));
    keepScrolled(() => {
      if (view.live) {
        view.live.root.replaceWith(...nodes);
        view.live = null;
      } else {
        $('conversation').append(...nodes);
      }
    });
  }

  /** A tool call: name and a one-line summary; the whole input on demand. */
  function toolCall(block) {
    return el(
      'details',
      { class: 'tool-call', 'data-testid': 'tool-call', 'data-tool': block.name, 'data-call-id': block.id },
      el('summary', { text: '\u25b8 ' + block.name + '(' + summarizeInput(block.input) + ')' }),
      el('pre', { text: typeof block.input === 'string' ? block.input : JSON.stringify(block.input, null, 2) }),
    );
  }

  /** `tool_result`: the first lines, errors marked; the whole output on demand. */
  function renderToolResult(event) {
    const output = event.output || '';
    const marker = event.cancelled ? ' (cancelled)' : '';
    const node = el(
      'details',
      {
        class: 'tool-result' + (event.is_error ? ' error' : ''),
        'data-testid': 'tool-result',
        'data-error': event.is_error ? 'true' : 'false',
        'data-call-id': event.call_id,
        title: event.name + ' \u00b7 ' + event.duration_ms + ' ms',
      },
      el('summary', { text: '\u2514 ' + (event.is_error ? 'error' + marker + ': ' : '') + summarizeOutput(output) }),
      el('pre', { text: output }),
    );
    append(node);
  }

  /** `result`: stop reason, steps, tokens, duration; adds to the usage totals. */
  function renderResult(view, event) {
    finishLive(view);
    endApprovals(view, event.turn_id);
    const usage = event.usage || {};
    view.usage.input += usage.input_tokens || 0;
    view.usage.output += usage.output_tokens || 0;
    view.usage.turns += 1;
    if (event.context) setContext(view, event.context);
    renderUsage();

    const steps = event.steps || 0;
    const fill = event.context ? contextFill(event.context) : null;
    const figures = steps + ' step' + (steps === 1 ? '' : 's') + ' \u00b7 ' + (usage.input_tokens || 0) + ' in / ' +
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

  /** The session's token totals (sum of every `result.usage`), and how full its context is. */
  function renderUsage() {
    const view = state.view;
    $('usage').textContent = view && view.usage.turns
      ? 'Session usage: ' + view.usage.input + ' in / ' + view.usage.output + ' out tokens over ' +
        view.usage.turns + ' turn' + (view.usage.turns === 1 ? '' : 's')
      : '';
    renderContext();
  }

  /** `{used, limit?}` from an `assistant` or `result` event (or a reply): the latest wins. */
  function setContext(view, context) {
    if (!context || typeof context.used !== 'number') return;
    view.context = { used: context.used, limit: typeof context.limit === 'number' ? context.limit : null };
    if (state.view === view) renderContext();
  }

  /** `{percent, used, limit}` when the limit is known, else null. */
  function contextFill(context) {
    if (!context || typeof context.used !== 'number' || !(context.limit > 0)) return null;
    return { percent: Math.round((context.used * 100) / context.limit), used: context.used, limit: context.limit };
  }

  /** The header's context gauge: a bar and `Context 45% · 1,800 / 4,000 tokens`. */
  function renderContext() {
    const view = state.view;
    const box = $('context-usage');
    const context = view && view.context;
    if (!context) {
      box.hidden = true;
      return;
    }
    const fill = contextFill(context);
    box.hidden = false;
    box.setAttribute('data-level', !fill ? 'unknown' : fill.percent >= 95 ? 'full' : fill.percent >= 80 ? 'high' : 'ok');
    $('context-fill').style.width = fill ? Math.min(fill.percent, 100) + '%' : '0';
    $('context-text').textContent = fill
      ? 'Context ' + fill.percent + '% \u00b7 ' + thousands(fill.used) + ' / ' + thousands(fill.limit) + ' tokens'
      : 'Context ~' + thousands(context.used) + ' tokens (limit unknown)';
  }

  /** 12345 as `12,345`. */
  function thousands(n) {
    return Number(n).toLocaleString('en-US', { maximumFractionDigits: 0 });
  }

  // Text summaries, as in src/frontend/output/render.rs.

  /** `key: value, ...` for one line, long values cut. */
  function summarizeInput(input) {
    let text;
    if (input && typeof input === 'object' && !Array.isArray(input)) {
      text = Object.entries(input)
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
  // Approvals: a tool call that asks first, and the permission mode
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
    card.append(approvalDetail(event.name, event.input));
    const actions = el('div', { class: 'approval-actions', 'data-testid': 'approval-actions' });
    if (event.suggested_mode) {
      // Only while it can be answered: part of the choices.
      actions.append(el('div', { class: 'dim approval-hint', text: 'In ' + event.suggested_mode + ' mode this would run without asking (/mode ' + event.suggested_mode + ').' }));
    }
    const error = el('div', { class: 'approval-error', 'data-testid': 'approval-error', role: 'alert', hidden: true });
    const outcome = el('div', { class: 'approval-outcome', 'data-testid': 'approval-outcome', hidden: true });
    const entry = { card, actions, error, outcome, turnId: event.turn_id, buttons: [] };
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
    // Under its tool call when it is shown, else at the end.
    const call = [...$('conversation').querySelectorAll('[data-testid="tool-call"]')].find((n) => n.dataset.callId === event.call_id);
    if (call) {
      let after = call;
      while (after.nextElementSibling && after.nextElementSibling.classList.contains('approval-card')) after = after.nextElementSibling;
      keepScrolled(() => after.after(card));
    } else {
      append(card);
    }
  }

  /** What the call would do: the command, an edit as a diff, a file's first lines, else the input. */
  function approvalDetail(name, input) {
    const args = input && typeof input === 'object' ? input : {};
    if (name === 'bash' && typeof args.command === 'string') {
      return el('pre', { class: 'approval-command', 'data-testid': 'approval-command', text: args.command });
    }
    if (name === 'edit_file' && typeof args.old_string === 'string' && typeof args.new_string === 'string') {
      const diff = el('pre', { class: 'approval-diff', 'data-testid': 'approval-diff' });
      const lines = (text, sign, cls) => {
        for (const l of text.split('\n')) diff.append(el('span', { class: cls, text: sign + ' ' + l + '\n' }));
      };
      lines(args.old_string, '-', 'diff-del');
      lines(args.new_string, '+', 'diff-add');
      return el('div', {}, el('div', { class: 'approval-path', 'data-testid': 'approval-path', text: String(args.path || '') + (args.replace_all ? ' (every occurrence)' : '') }), diff);
    }
    if (name === 'write_file' && typeof args.content === 'string') {
      const all = args.content.split('\n');
      if (all.length && all[all.length - 1] === '') all.pop();
      const shown = all.slice(0, 12).join('\n') + (all.length > 12 ? '\n\u2026 +' + (all.length - 12) + ' lines' : '');
      return el('div', {},
        el('div', { class: 'approval-path', 'data-testid': 'approval-path', text: 'write ' + String(args.path || '') + ' (' + all.length + ' line' + (all.length === 1 ? '' : 's') + ')' }),
        el('pre', { class: 'approval-content', 'data-testid': 'approval-content', text: shown }));
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
    entry.card.dataset.outcome = outcome;
    entry.actions.remove();
    entry.error.hidden = true;
    entry.outcome.textContent = (outcome === 'allowed_once' || outcome === 'allowed_always' ? '\u2713 ' : '\u2717 ') + text;
    if (event) entry.outcome.title = fullTime(event.at);
    entry.outcome.hidden = false;
  }

  /** The permission mode now in force in the selected session. */
  function setMode(view, mode) {
    view.mode = String(mode);
    if (state.view === view) renderMode();
  }

  const MODE_TITLES = {
    default: 'Reads inside the workspace run; edits, writes, commands and MCP tools ask first',
    'accept-edits': 'Reads and edits inside the workspace run; commands and MCP tools ask first',
    plan: 'Read-only: nothing that writes runs',
    bypass: 'Nothing asks; deny rules and the sandbox still hold',
  };

  /** The header's mode badge (`/mode MODE` changes it). */
  function renderMode() {
    const badge = $('session-mode');
    const mode = state.view && state.view.mode;
    badge.hidden = !mode;
    badge.textContent = mode ? 'mode: ' + mode : '';
    badge.setAttribute('data-mode', mode || '');
    badge.title = mode ? (MODE_TITLES[mode] || '') + ' \u00b7 /mode MODE changes it' : '';
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
  // Input box and buttons
  // ---------------------------------------------------------------------

  /** Post the input box's text (queries and slash commands alike). */
  async function sendInput() {
    const box = $('input');
    const text = box.value;
    const sessionId = state.selectedId;
    if (!sessionId || text.trim() === '') return;
    box.value = '';
    state.postsInFlight += 1;
    try {
      const answer = await api('POST', sessionPath(sessionId) + '/input', { text });
      hideBanner();
      if (answer && answer.input_id !== undefined) noteOwnInput(sessionId, answer.input_id);
    } catch (e) {
      if (e.status === 401) return;
      showBanner(e.message);
      if (box.value === '' && state.selectedId === sessionId) box.value = text; // give the text back
    } finally {
      state.postsInFlight -= 1;
      if (state.postsInFlight === 0) state.earlySwitches.clear();
    }
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
    const running = !!view && view.openTurns.size > 0;
    $('interrupt').disabled = !running || view.interrupting;
    $('app').classList.toggle('running', running);
  }

  /** Enter sends, Shift+Enter is a new line (not while an IME composes). */
  function onInputKey(event) {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendInput();
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
    $('interrupt').addEventListener('click', interrupt);
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
    await loadSessions();
    if ($('app').hidden) return; // the token was refused
    const fromHash = decodeURIComponent(location.hash.slice(1));
    if (fromHash) selectSession(fromHash);
    watchLifecycle();
  }

  document.addEventListener('DOMContentLoaded', start);
})();
