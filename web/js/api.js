// HTTP client: bearer access token kept in memory (mirrored in sessionStorage so a reload
// in the same tab does not need a round trip), refresh through the HttpOnly cookie,
// JSON errors turned into ApiError, and a streaming SSE reader for agent turns.

const AT_KEY = 'agentchat.access';
const HAD_SESSION_KEY = 'agentchat.had_session';

export class ApiError extends Error {
  constructor(status, code, message, retryAfter, details = null) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code || `http_${status}`;
    this.retryAfter = retryAfter;
    // The numbers behind some errors (a budget refusal's `needed` and `remaining`).
    this.details = details;
  }
}

let access = null; // {token, expiresAt}
let refreshing = null;
const listeners = { expired: [] };

export function onSessionExpired(fn) { listeners.expired.push(fn); }

function saveAccess(token, expiresIn) {
  access = { token, expiresAt: Date.now() + (Number(expiresIn) || 900) * 1000 };
  try { sessionStorage.setItem(AT_KEY, JSON.stringify(access)); } catch { /* private mode */ }
}

function loadAccess() {
  if (access) return access;
  try {
    const raw = sessionStorage.getItem(AT_KEY);
    if (raw) {
      const a = JSON.parse(raw);
      if (a && a.token && a.expiresAt > Date.now() + 15000) access = a;
    }
  } catch { /* ignore */ }
  return access;
}

function forget() {
  access = null;
  try { sessionStorage.removeItem(AT_KEY); } catch { /* ignore */ }
}

export function hadSession() {
  try { return localStorage.getItem(HAD_SESSION_KEY) === '1'; } catch { return false; }
}
function setHadSession(v) {
  try {
    if (v) localStorage.setItem(HAD_SESSION_KEY, '1');
    else localStorage.removeItem(HAD_SESSION_KEY);
  } catch { /* ignore */ }
}

async function errorFrom(resp) {
  let code;
  let message;
  let details = null;
  try {
    const body = await resp.json();
    code = body?.error?.code;
    message = body?.error?.message;
    details = body?.error?.details ?? null;
  } catch { /* not JSON */ }
  if (!message) {
    message = resp.status >= 500
      ? 'The server had a problem. Please try again.'
      : `Request failed (${resp.status})`;
  }
  return new ApiError(resp.status, code, message, resp.headers.get('Retry-After'), details);
}

async function postJson(path, body) {
  return fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify(body),
  });
}

/** Which sign-in methods the server offers (`GET /api/auth/providers`); null if unknown. */
export async function providers() {
  try {
    const resp = await fetch('/api/auth/providers', { headers: { Accept: 'application/json' } });
    return resp.ok ? await resp.json() : null;
  } catch { return null; }
}

export async function register(username, password) {
  const resp = await postJson('/api/auth/register', { username, password });
  if (!resp.ok) throw await errorFrom(resp);
  return resp.json();
}

export async function login(username, password) {
  // `session: "cookie"`: the refresh token stays in an HttpOnly SameSite=Strict cookie that
  // page script cannot read; only the short-lived access token reaches JavaScript.
  const resp = await postJson('/api/auth/login', { username, password, session: 'cookie' });
  if (!resp.ok) throw await errorFrom(resp);
  const body = await resp.json();
  saveAccess(body.access_token, body.expires_in);
  setHadSession(true);
  return body;
}

/** Gets a new access token from the refresh cookie. Single flight. Resolves to true on success. */
export function refresh() {
  if (!refreshing) {
    refreshing = (async () => {
      const resp = await postJson('/api/auth/refresh', {});
      if (!resp.ok) {
        forget();
        return false;
      }
      const body = await resp.json();
      saveAccess(body.access_token, body.expires_in);
      return true;
    })().catch(() => false).finally(() => { refreshing = null; });
  }
  return refreshing;
}

/** On page load: reuse the tab's access token or refresh via the cookie. */
export async function resume() {
  if (loadAccess()) return true;
  return refresh();
}

/** Changes the password; the server ends every other session and sends this tab a new pair. */
export async function changePassword(currentPassword, newPassword, { revokeApiKeys = true } = {}) {
  const body = await api('POST', '/api/me/password', {
    current_password: currentPassword, new_password: newPassword, revoke_api_keys: revokeApiKeys, session: 'cookie',
  });
  saveAccess(body.access_token, body.expires_in);
  return body;
}

export async function logout() {
  try {
    await postJson('/api/auth/logout', {});
  } catch { /* offline: still forget locally */ }
  forget();
  setHadSession(false);
}

function expired(message) {
  forget();
  for (const fn of listeners.expired) fn(message);
}

/**
 * Authenticated request. `body` is JSON unless `raw` is set (then sent as is).
 * Returns parsed JSON (or null for 204), or the Response itself with {response:true}.
 */
export async function api(method, path, body, opts = {}) {
  const doFetch = async () => {
    const a = loadAccess();
    const headers = { Accept: opts.accept || 'application/json' };
    if (a) headers.Authorization = `Bearer ${a.token}`;
    let payload;
    if (opts.raw !== undefined) {
      payload = opts.raw;
      headers['Content-Type'] = opts.contentType || 'application/octet-stream';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    }
    return fetch(path, { method, headers, body: payload, credentials: 'same-origin', signal: opts.signal });
  };
  if (!loadAccess()) await refresh();
  let resp = await doFetch();
  if (resp.status === 401) {
    const ok = await refresh();
    if (ok) resp = await doFetch();
    if (resp.status === 401 || !ok) {
      const err = await errorFrom(resp);
      expired('Your session has expired or was signed out. Please sign in again.');
      throw err;
    }
  }
  if (!resp.ok) throw await errorFrom(resp);
  if (opts.response) return resp;
  if (resp.status === 204) return null;
  const type = resp.headers.get('Content-Type') || '';
  if (type.includes('application/json')) return resp.json();
  return resp.text();
}

/**
 * Uploads `file` to the workspace (`PUT /api/files/{path}`) with XMLHttpRequest, whose upload
 * progress fetch does not report: `onProgress(sentBytes, totalBytes)`. Resolves to the
 * server's answer ({path, size, replaced}); rejects with ApiError, or an AbortError when
 * `signal` aborts. A 401 refreshes the session once and tries again.
 */
export async function upload(path, file, opts = {}) {
  return uploadTo(`/api/files/${path.split('/').map(encodeURIComponent).join('/')}`, file, opts);
}

/** `upload` to any URL taking the raw bytes with PUT (a knowledge collection's files). */
export async function uploadTo(url, file, { onProgress, signal } = {}) {
  const once = () => new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    const a = loadAccess();
    if (a) xhr.setRequestHeader('Authorization', `Bearer ${a.token}`);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.upload.onprogress = (ev) => { if (onProgress) onProgress(ev.loaded, ev.lengthComputable ? ev.total : file.size); };
    const abort = () => xhr.abort();
    signal?.addEventListener('abort', abort, { once: true });
    xhr.onabort = () => reject(new DOMException('aborted', 'AbortError'));
    xhr.onerror = () => reject(new ApiError(0, 'network_error', 'The upload could not reach the server. Check the connection and try again.'));
    xhr.onload = () => {
      signal?.removeEventListener('abort', abort);
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) { resolve(body); return; }
      const message = body?.error?.message || (xhr.status >= 500
        ? 'The server had a problem. Please try again.' : `Upload failed (${xhr.status})`);
      reject(new ApiError(xhr.status, body?.error?.code, message, xhr.getResponseHeader('Retry-After')));
    };
    if (signal?.aborted) { xhr.abort(); return; }
    xhr.send(file);
  });
  if (!loadAccess()) await refresh();
  try {
    return await once();
  } catch (err) {
    if (err.status !== 401) throw err;
    if (!(await refresh())) {
      expired('Your session has expired or was signed out. Please sign in again.');
      throw err;
    }
    return once();
  }
}

export const get = (p, o) => api('GET', p, undefined, o);
export const post = (p, b, o) => api('POST', p, b === undefined ? {} : b, o);
export const patch = (p, b) => api('PATCH', p, b);
export const put = (p, b, o) => api('PUT', p, b, o);
export const del = (p) => api('DELETE', p);

/**
 * Posts a message (with the workspace paths of its `attachments`) and reads the SSE stream,
 * calling onEvent({type, ...data}, id) per event (`id` is the event's place in the turn, for
 * re-attaching). Resolves when the stream ends. Rejects with ApiError for a refusal before
 * streaming.
 */
export async function streamTurn(conversationId, content, onEvent, signal, attachments = []) {
  const body = attachments.length ? { content, attachments } : { content };
  const resp = await api('POST', `/api/conversations/${encodeURIComponent(conversationId)}/messages`,
    body, { accept: 'text/event-stream', response: true, signal });
  await readSse(resp, onEvent);
}

/**
 * Re-attaches to a turn (after a reload or a dropped connection): the events after `lastId`
 * (all of them when null), then the live turn until it ends.
 */
export async function followTurn(conversationId, turnId, lastId, onEvent, signal) {
  const path = `/api/conversations/${encodeURIComponent(conversationId)}/turns/${encodeURIComponent(turnId)}/events`;
  const query = lastId ? `?after=${encodeURIComponent(lastId)}` : '';
  const resp = await api('GET', path + query, undefined, { accept: 'text/event-stream', response: true, signal });
  await readSse(resp, onEvent);
}

/**
 * Reads an SSE response to its end, calling onEvent({type, ...data}, id) per event
 * (also used by approval_card.js for the turn a decision resumes).
 */
export async function readSse(resp, onEvent) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const dispatch = (block) => {
    let event = 'message';
    let id = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue; // keep-alive comment
      const idx = line.indexOf(':');
      const name = idx === -1 ? line : line.slice(0, idx);
      let value = idx === -1 ? '' : line.slice(idx + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (name === 'event') event = value;
      else if (name === 'data') data.push(value);
      else if (name === 'id') id = value;
    }
    if (!data.length) return;
    let parsed;
    try { parsed = JSON.parse(data.join('\n')); } catch { return; }
    if (!parsed.type) parsed.type = event;
    onEvent(parsed, id);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let sep;
    while ((sep = buf.indexOf('\n\n')) !== -1) {
      const block = buf.slice(0, sep);
      buf = buf.slice(sep + 2);
      dispatch(block);
    }
  }
  if (buf.trim()) dispatch(buf);
}

// ---- Assistants (assistants_*.js) and memory (memory_*.js) ----

const assistantPath = (id) => `/api/admin/assistants/${encodeURIComponent(id)}`;

/** Admin: every live assistant (`{items}`). */
export const adminAssistants = () => get('/api/admin/assistants');
/** Admin: creates (no `id`) or saves a new version of assistant `id`. */
export const saveAssistant = (id, body) => (id ? put(assistantPath(id), body) : post('/api/admin/assistants', body));
/** Admin: the versions of one assistant, newest first (`{items}`). */
export const assistantVersions = (id) => get(`${assistantPath(id)}/versions`);
/** Admin: retires an assistant (no new chats; its chats take no new messages). */
export const retireAssistant = (id) => del(assistantPath(id));
/** The assistants the caller's role may chat with (`{items}`). */
export const myAssistants = () => get('/api/assistants');
/** Starts a chat with assistant `id`: the new conversation. */
export const startAssistantChat = (id) => post('/api/conversations', { assistant_id: id });

/** The caller's memory: `{enabled, notes, limits, used_tokens}`. */
export const memory = () => get('/api/me/memory');
export const addMemoryNote = (text) => post('/api/me/memory', { text });
export const editMemoryNote = (id, text) => put(`/api/me/memory/${encodeURIComponent(id)}`, { text });
export const deleteMemoryNote = (id) => del(`/api/me/memory/${encodeURIComponent(id)}`);
export const setMemoryEnabled = (enabled) => put('/api/me/memory/settings', { enabled });
/** Whether the memory notes go into conversation `id`'s prompt: the conversation saved. */
export const setChatMemory = (id, enabled) => patch(`/api/conversations/${encodeURIComponent(id)}`, { memory_enabled: enabled });
