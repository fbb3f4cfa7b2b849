// The HTTP API of `agentbus serve` (docs/api.md): the token (from ?token=
// in the page's address, then kept in this tab's sessionStorage), api()
// for requests with it, a session's path, the URLs of the SSE streams.
//
// A refused token (401) replaces the app with the token message, whatever
// the request. Never: send the token anywhere but the Authorization header
// and an EventSource URL's query (it cannot send headers), nor draw what
// an answer says (the callers do).

import { state } from './state.js';
import { $, hideBanner } from './dom.js';
import { unwatchLifecycle } from './sessions.js';
import { closeSessionStream } from './connection.js';

const TOKEN_KEY = 'agentbus.token';

/** The token from the address (then taken out of it) or from this tab's storage. */
export function readToken() {
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
export function showTokenProblem(refused) {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch (_) {
    /* nothing stored */
  }
  closeSessionStream();
  unwatchLifecycle();
  $('token-missing-text').textContent = refused
    ? 'The server refused this page\u2019s token. Open the address that `agentbus serve` printed ' +
      '(http://\u2026/?token=\u2026) again.'
    : 'This page needs its access token. Open the address that `agentbus serve` printed ' +
      '(http://\u2026/?token=\u2026); the token is in the data dir\u2019s `token` file.';
  $('app').hidden = true;
  $('token-missing').hidden = false;
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
    // For showBanner(e.message, e.kind): the server could not be reached.
    this.kind = status === 0 ? 'unreachable' : undefined;
  }
}

/** The server answered (a request, or a stream opened): a "not reachable" banner is out of date. */
export function reached() {
  hideBanner('unreachable');
}

/** Call the API with the token; the parsed JSON answer, or null for 204. */
export async function api(method, path, body) {
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
  reached();
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

/** A session's path in the API. */
export function sessionPath(id) {
  return '/v1/sessions/' + encodeURIComponent(id);
}

/** URL for an EventSource: the token goes in the query (no headers there). */
export function streamUrl(path, params) {
  const query = new URLSearchParams(params || {});
  query.set('token', state.token);
  return path + '?' + query.toString();
}
