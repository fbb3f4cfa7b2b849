// The HTTP API of `agentbus serve` (docs/api.md): api() for requests,
// a session's path, the URLs of the SSE streams. The page never sees the
// token: `/?token=` (the printed link) set an HttpOnly cookie that every
// request and stream carries, and redirected here without it.
//
// A refused or missing token (401) replaces the app with the token
// message, whatever the request. Never: put a token into a URL or into
// storage, nor draw what an answer says (the callers do).

import { $, hideBanner } from './dom.js';
import { unwatchLifecycle } from './sessions.js';
import { closeSessionStream } from './connection.js';

/**
 * Whether the server refused the token of the link this page was opened
 * from (it redirected to `/?refused=1`); the mark is taken out of the
 * address. A token an older page kept in this tab's storage is dropped.
 */
export function tokenRefusedInAddress() {
  try {
    sessionStorage.removeItem('agentbus.token');
  } catch (_) {
    /* storage disabled: nothing kept */
  }
  const params = new URLSearchParams(location.search);
  if (!params.has('refused')) return false;
  params.delete('refused');
  const query = params.toString();
  history.replaceState(null, '', location.pathname + (query ? '?' + query : '') + location.hash);
  return true;
}

/** Replace the app with a message about the token. */
export function showTokenProblem(refused) {
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

/** Call the API (the cookie carries the token); the parsed JSON answer, or null for 204. */
export async function api(method, path, body) {
  // Says "the page, not a cross-site form" to the server (docs/api.md).
  const headers = { 'X-Agentbus-Page': '1' };
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
  const text = await response.text();
  let json = null;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch (_) {
      json = null;
    }
  }
  if (response.status === 401) {
    const missing = !!(json && typeof json.error === 'string' && json.error.startsWith('missing token'));
    showTokenProblem(!missing);
    throw new ApiError(401, 'token refused');
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

/** URL for an EventSource (the cookie carries the token). */
export function streamUrl(path, params) {
  const query = new URLSearchParams(params || {}).toString();
  return query ? path + '?' + query : path;
}
