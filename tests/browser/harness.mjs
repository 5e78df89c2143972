// Test harness: starts the real AgentChat binary on a free port against a fresh database of
// its own, a fake OpenAI-compatible upstream (node `http`, real SSE wire format), and Debian's
// Chromium through playwright-core. Nothing here downloads a browser.

import { spawn, execFile } from 'node:child_process';
import { createServer } from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdirSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ARTIFACTS = path.resolve(here, '..', 'artifacts');
const BIN = process.env.AGENTCHAT_BIN || path.resolve(here, '..', '..', 'target', 'debug', 'agentchat');
const PG = process.env.AGENTCHAT_TEST_PG || 'postgres://postgres@127.0.0.1:5432';
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export function artifact(name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  return path.join(ARTIFACTS, name);
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function dropDatabase(name, pg = PG) {
  return new Promise((resolve) => {
    execFile('psql', ['-d', `${pg}/postgres`, '-v', 'ON_ERROR_STOP=1', '-c', `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`],
      { timeout: 20000 }, () => resolve());
  });
}

/**
 * Starts the server. `upstream`: a FakeUpstream (OpenAI provider pointed at it) or null for
 * the built-in demo model; `pg`: another Postgres (URL without a database) for its database,
 * e.g. one with pgvector. Returns {url, stop, logs, dbName}.
 */
export async function startServer({ upstream = null, env = {}, pg = PG } = {}) {
  if (!existsSync(BIN)) throw new Error(`server binary not found at ${BIN} (build it with cargo build -p agentchat, or set AGENTCHAT_BIN)`);
  const port = await freePort();
  const dbName = `agentchat_browser_${randomBytes(5).toString('hex')}`;
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'agentchat-browser-'));
  const childEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: `${pg}/${dbName}`,
    AGENTCHAT_BIND: `127.0.0.1:${port}`,
    AGENTCHAT_JWT_SECRET: randomBytes(32).toString('hex'),
    AGENTCHAT_WORKSPACE_DIR: path.join(workDir, 'workspaces'),
    RUST_LOG: process.env.AGENTCHAT_TEST_RUST_LOG || 'warn',
    ...(upstream ? {
      AGENTCHAT_LLM_PROVIDER: 'openai',
      AGENTCHAT_LLM_BASE_URL: `${upstream.url}/v1`,
      AGENTCHAT_LLM_MODEL: 'fake',
      AGENTCHAT_LLM_API_KEY: 'test-key',
      AGENTCHAT_LLM_MAX_RETRIES: '0',
    } : { AGENTCHAT_LLM_PROVIDER: 'demo' }),
    ...env,
  };
  const child = spawn(BIN, [], { env: childEnv, cwd: workDir, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs = [];
  const keep = (d) => { logs.push(d.toString()); if (logs.length > 400) logs.shift(); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = null;
  child.on('exit', (code, sig) => { exited = { code, sig }; });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (exited) throw new Error(`server exited early (${JSON.stringify(exited)}):\n${logs.join('')}`);
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not become ready:\n${logs.join('')}`);
    }
    await sleep(150);
  }
  return {
    url,
    dbName,
    logs,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM');
        const until = Date.now() + 8000;
        while (!exited && Date.now() < until) await sleep(50);
        if (!exited) child.kill('SIGKILL');
      }
      await dropDatabase(dbName, pg);
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}

function chunk(delta, finish = null) {
  return { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: 'fake', choices: [{ index: 0, delta, finish_reason: finish }] };
}

/**
 * A fake OpenAI-compatible upstream. `respond(body)` returns a script:
 *   {text: '...', chunkDelayMs?}                   streamed word by word, finish "stop"
 *   {toolCalls: [{name, arguments: {...}}]}        one message with tool calls, finish "tool_calls"
 *   {slow: true, chunkDelayMs?}                    endless text until the client goes away
 *   {status: 500, message?}                        an HTTP error from the provider
 * The default: after a tool result, summarise it; otherwise greet.
 */
export class FakeUpstream {
  constructor() {
    this.requests = [];
    this.respond = null;
    this.queue = [];
    // Title calls (after a chat's first answer) are kept apart from the scripted turn
    // calls: they never take a script, and answer `titleScript` (or "Fake title").
    this.titleRequests = [];
    this.titleScript = null;
  }

  push(script) { this.queue.push(script); }

  /** A conversation-title request (the server's system message for it), answered apart. */
  static isTitleRequest(body) {
    const first = body.messages?.[0];
    return first?.role === 'system' && String(first.content).startsWith('You name conversations.');
  }

  defaultScript(body) {
    const last = body.messages?.[body.messages.length - 1];
    if (last?.role === 'tool') return { text: `The tool answered: ${String(last.content).slice(0, 200)}` };
    return { text: 'Hello from the fake model.' };
  }

  async start() {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  async stop() {
    this.server.closeAllConnections?.();
    await new Promise((r) => this.server.close(r));
  }

  handle(req, res) {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      let body = {};
      try { body = JSON.parse(raw); } catch { /* keep empty */ }
      const titling = FakeUpstream.isTitleRequest(body);
      if (titling) this.titleRequests.push(body);
      else this.requests.push(body);
      const script = titling ? (this.titleScript || { text: 'Fake title' })
        : this.queue.shift() || (this.respond && this.respond(body)) || this.defaultScript(body);
      if (script.status) {
        res.writeHead(script.status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: script.message || 'upstream exploded', type: 'server_error' } }));
        return;
      }
      if (body.stream === false) {
        // Non-streaming fallback (not used by default).
        const message = script.toolCalls
          ? { role: 'assistant', content: null, tool_calls: script.toolCalls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments ?? {}) } })) }
          : { role: 'assistant', content: script.text ?? '' };
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ id: 'x', object: 'chat.completion', model: 'fake', choices: [{ index: 0, message, finish_reason: script.toolCalls ? 'tool_calls' : 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }));
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      let closed = false;
      res.on('close', () => { closed = true; });
      const send = (obj) => { if (!closed) res.write(`data: ${JSON.stringify(obj)}\n\n`); };
      const delay = script.chunkDelayMs ?? 5;
      send(chunk({ role: 'assistant', content: '' }));
      if (script.toolCalls) {
        script.toolCalls.forEach((c, i) => {
          send(chunk({ tool_calls: [{ index: i, id: `call_${Date.now()}_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments ?? {}) } }] }));
        });
        send(chunk({}, 'tool_calls'));
      } else if (script.slow) {
        let n = 0;
        while (!closed && n < 3000) {
          send(chunk({ content: `word${n} ` }));
          n += 1;
          await sleep(script.chunkDelayMs ?? 50);
        }
        send(chunk({}, 'stop'));
      } else {
        const parts = String(script.text ?? '').match(/\S+\s*|\s+/g) || [''];
        for (const p of parts) {
          send(chunk({ content: p }));
          if (delay) await sleep(delay);
        }
        send(chunk({}, 'stop'));
      }
      send({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', model: 'fake', choices: [], usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 } });
      if (!closed) res.write('data: [DONE]\n\n');
      res.end();
    });
  }
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
}

/** A new page that records dialogs, console errors and CSP violations. */
export async function newPage(browser, { viewport = { width: 1280, height: 860 } } = {}) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.dialogs = [];
  page.errors = [];
  // File choosers are intercepted from the start: a `waitForEvent('filechooser')` made just before a
  // key press turns interception on asynchronously, and a press that wins that race opens a native
  // picker no test can see (seen once in CI on a loaded machine).
  page.on('filechooser', () => {});
  page.on('dialog', (d) => { page.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
  return page;
}

/** Registers (first user becomes admin) and signs in through the UI. */
export async function registerViaUi(page, base, username, password = 'correct horse battery staple') {
  await page.goto(base);
  await page.getByRole('button', { name: 'Register' }).click(); // switch the form to registration
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Register' }).click(); // the submit button, now named Register
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
}

export async function signInViaUi(page, base, username, password = 'correct horse battery staple') {
  await page.goto(base);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
}

/** API helper for setup (register/login via fetch from node). */
export async function apiLogin(base, username, password = 'correct horse battery staple', { register = true } = {}) {
  if (register) {
    const r = await fetch(`${base}/api/auth/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username, password }) });
    if (r.status !== 201) throw new Error(`register ${username}: ${r.status} ${await r.text()}`);
  }
  const r = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username, password }) });
  if (!r.ok) throw new Error(`login ${username}: ${r.status}`);
  const { access_token: token } = await r.json();
  const call = async (method, p, body) => {
    const resp = await fetch(`${base}${p}`, { method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await resp.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { json = text; }
    return { status: resp.status, json };
  };
  return { token, call };
}

/** Visible form controls and buttons without an accessible name (a cheap a11y lint). */
export async function unnamedControls(page) {
  return page.evaluate(() => {
    const bad = [];
    for (const el of document.querySelectorAll('button, input, select, textarea, a[href]')) {
      if (el.type === 'hidden' || el.closest('[hidden]')) continue;
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') continue;
      const name = (el.getAttribute('aria-label') || '').trim()
        || (el.labels && [...el.labels].map((l) => l.textContent.trim()).join(' '))
        || (['button', 'a'].includes(el.tagName.toLowerCase()) ? el.textContent.trim() : '')
        || (el.getAttribute('title') || '').trim();
      if (!name) bad.push(el.outerHTML.slice(0, 120));
    }
    return bad;
  });
}

/**
 * What a person would see as broken at the current viewport: elements that stick out of the
 * viewport (unless a horizontal scroll container that itself fits holds them), interactive
 * controls that overlap each other, and controls or labels whose text is cut off. Returns a
 * list of human-readable problems (empty when the layout is sound).
 */
export async function layoutProblems(page) {
  return page.evaluate(() => {
    const vw = document.documentElement.clientWidth;
    const problems = [];
    const describe = (el) => {
      const cls = typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
      const text = (el.getAttribute('aria-label') || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 30);
      return `<${el.tagName.toLowerCase()}${cls}>${text ? ` "${text}"` : ''}`;
    };
    const visible = (el) => {
      if (el.closest('[hidden], [inert]')) return false;
      // The content of a closed <details> (all but its summary) is not shown.
      const shut = el.closest('details:not([open])');
      if (shut && shut !== el && !shut.querySelector(':scope > summary')?.contains(el)) return false;
      const st = getComputedStyle(el);
      if (st.display === 'none' || st.visibility === 'hidden' || Number(st.opacity) === 0) return false;
      const r = el.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0) return false;
      // Scrolled (even partly) out of a scrolling list (a long chat's log): not on screen
      // where its box says, so it neither overlaps nor sticks out.
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const oy = getComputedStyle(p).overflowY;
        if (oy === 'auto' || oy === 'scroll') {
          const pr = p.getBoundingClientRect();
          if (r.top < pr.top - 0.5 || r.bottom > pr.bottom + 0.5) return false;
        }
      }
      return true;
    };
    // Inside an element that scrolls sideways (and fits the viewport) sticking out is fine:
    // the user can scroll to it. Anything clipped by overflow: hidden is not.
    const scrollHost = (el) => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const ox = getComputedStyle(p).overflowX;
        if (ox === 'auto' || ox === 'scroll') return p;
      }
      return null;
    };
    // Off-canvas panels (a closed sidebar) are moved out of view on purpose.
    const offCanvas = (el) => !!el.closest('[aria-hidden="true"], .sidebar:not(.open)');
    for (const el of document.body.querySelectorAll('*')) {
      if (!visible(el) || offCanvas(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.right <= vw + 0.5 && r.left >= -0.5) continue;
      if (r.right <= 0) continue; // visually hidden on purpose (the skip link until focused)
      const host = scrollHost(el);
      if (host) {
        const hr = host.getBoundingClientRect();
        if (hr.right <= vw + 0.5 && hr.left >= -0.5) continue;
      }
      // Report the outermost offender only.
      const parent = el.parentElement;
      const pr = parent && parent.getBoundingClientRect();
      if (parent && parent !== document.body && visible(parent) && (pr.right > vw + 0.5 || pr.left < -0.5) && !scrollHost(parent)) continue;
      problems.push(`${describe(el)} spans ${Math.round(r.left)}..${Math.round(r.right)}px of a ${vw}px viewport`);
    }
    const CONTROL = 'button, a[href], input:not([type=hidden]), select, textarea, [role=tab]';
    // A control under an open panel or dialog is out of play, not overlapping: the panel is
    // on top at its centre. One whose centre another control covers is a problem.
    const underOverlay = (el) => {
      const r = el.getBoundingClientRect();
      const x = r.left + r.width / 2;
      const y = r.top + r.height / 2;
      if (x < 0 || y < 0 || x > vw || y > window.innerHeight) return false;
      const top = document.elementFromPoint(x, y);
      if (!top || el === top || el.contains(top) || top.contains(el)) return false;
      // An open panel (aside, dialog) lies over the page: what it covers is out of play.
      const layer = top.closest('dialog, aside, [role=dialog], [role=complementary]');
      if (layer && !layer.contains(el)) return true;
      const other = top.closest(CONTROL);
      if (other && other !== el) {
        problems.push(`${describe(other)} covers ${describe(el)}`);
        return false;
      }
      return true;
    };
    const controls = [...document.body.querySelectorAll(CONTROL)]
      .filter((el) => visible(el) && !offCanvas(el) && !underOverlay(el));
    const rects = controls.map((el) => el.getBoundingClientRect());
    for (let i = 0; i < controls.length; i++) {
      for (let j = i + 1; j < controls.length; j++) {
        const a = rects[i];
        const b = rects[j];
        if (controls[i].contains(controls[j]) || controls[j].contains(controls[i])) continue;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const hgt = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && hgt > 1) problems.push(`${describe(controls[i])} overlaps ${describe(controls[j])}`);
      }
    }
    for (const el of controls) {
      if (['checkbox', 'radio'].includes(el.type)) continue;
      if (['input', 'select', 'textarea'].includes(el.tagName.toLowerCase())) {
        const w = el.getBoundingClientRect().width;
        // 1 px wide: visually hidden on purpose (a file input behind a button).
        if (w > 2 && w < 44) problems.push(`${describe(el)} is only ${Math.round(w)}px wide`);
        continue;
      }
      const st = getComputedStyle(el);
      if ((st.overflowX === 'hidden' || st.overflow === 'hidden') && el.scrollWidth > el.clientWidth + 1) {
        problems.push(`${describe(el)} has its text cut off`);
      }
    }
    // Drawn text (charts) scaled down below what anyone can read.
    for (const t of document.body.querySelectorAll('svg text')) {
      if (!visible(t) || offCanvas(t)) continue;
      const hgt = t.getBoundingClientRect().height;
      if (hgt < 10) problems.push(`${describe(t)} is drawn ${hgt.toFixed(1)}px tall`);
    }
    return problems;
  });
}

/** Problems with a row of tabs: each must be in view and on top at its centre, no scrolling. */
export async function unreachableTabs(page, selector) {
  return page.evaluate((sel) => {
    const vw = document.documentElement.clientWidth;
    return [...document.querySelectorAll(sel)].flatMap((el) => {
      const r = el.getBoundingClientRect();
      if (r.left < 0 || r.right > vw) return [`tab "${el.textContent.trim()}" is out of view (${Math.round(r.left)}..${Math.round(r.right)}px)`];
      const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return top && (top === el || el.contains(top)) ? [] : [`tab "${el.textContent.trim()}" is covered`];
    });
  }, selector);
}
