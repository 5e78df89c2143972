// Reloading the page mid-answer: the conversation re-attaches to the running turn and the
// whole answer arrives, once; a dropped stream reconnects with the last id it saw; Stop still
// works on a re-attached turn.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, launchBrowser, newPage, registerViaUi, apiLogin, signInViaUi, artifact, FakeUpstream,
} from './harness.mjs';

let upstream;
let server;
let browser;

before(async () => {
  upstream = await new FakeUpstream().start();
  [server, browser] = await Promise.all([startServer({ upstream }), launchBrowser()]);
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'root'); // first user: admin
  await page.context().close();
});
after(async () => {
  await browser?.close();
  await server?.stop();
  await upstream?.stop();
});

async function memberPage(name) {
  await apiLogin(server.url, name);
  const page = await newPage(browser);
  await signInViaUi(page, server.url, name);
  return page;
}

async function send(page, text) {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

test('reloading mid-answer keeps the answer coming, whole and once', async () => {
  const page = await memberPage('reloader');
  const words = Array.from({ length: 40 }, (_, i) => `w${i}`);
  const full = words.join(' ');
  upstream.push({ text: full, chunkDelayMs: 60 });
  await send(page, 'count to forty slowly');
  const answer = () => page.locator('.msg-assistant').last().locator('.text-seg');
  await answer().filter({ hasText: 'w5' }).waitFor();
  await page.waitForURL(/\/c\//);
  await page.reload();
  try {
    // Re-attached while the server is still writing: the stream goes on after the reload.
    await answer().filter({ hasText: 'w20' }).waitFor({ timeout: 5000 });
    assert.ok(!(await answer().textContent()).includes('w39'), 'the answer was already complete: not re-attached live');
    await answer().filter({ hasText: 'w39' }).waitFor({ timeout: 10000 });
  } catch (e) {
    await page.screenshot({ path: artifact('debug-reattach.png') });
    console.log(server.logs.join('').slice(-3000));
    throw e;
  }
  await page.getByRole('button', { name: 'Send' }).waitFor();
  assert.equal((await answer().textContent()).trim(), full);
  assert.equal(await page.locator('.msg-assistant').count(), 1);
  assert.equal(await page.locator('.turn-note').count(), 0, 'no "interrupted" note');
  // What was stored is the same answer.
  await page.reload();
  await answer().filter({ hasText: 'w39' }).waitFor();
  assert.equal((await answer().textContent()).trim(), full);
  await page.context().close();
});

test('Stop works on a re-attached turn', async () => {
  const page = await memberPage('halter');
  upstream.push({ slow: true, chunkDelayMs: 40 });
  await send(page, 'talk forever');
  const answer = page.locator('.msg-assistant').last();
  await answer.locator('.text-seg').filter({ hasText: 'word3' }).waitFor();
  await page.waitForURL(/\/c\//);
  await page.reload();
  await page.locator('.msg-assistant').last().locator('.text-seg').filter({ hasText: 'word20' }).waitFor();
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
  await page.locator('.msg-assistant').last().locator('.turn-note').filter({ hasText: 'Stopped' }).waitFor({ timeout: 10000 });
  await page.getByRole('button', { name: 'Send' }).waitFor();
  await page.context().close();
});

test('a dropped stream reconnects with the last event id and nothing is repeated', async () => {
  const page = await memberPage('commuter');
  const words = Array.from({ length: 40 }, (_, i) => `v${i}`);
  const full = words.join(' ');
  upstream.push({ text: full, chunkDelayMs: 60 });
  const reattached = [];
  page.on('request', (r) => { if (r.url().includes('/turns/')) reattached.push(r.url()); });
  // The stream of the message is cut after its first few events, as a dropped network would.
  await page.route('**/api/conversations/*/messages', async (route) => {
    const resp = await route.fetch();
    const events = (await resp.text()).split('\n\n').filter((b) => b.includes('event:'));
    await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: `${events.slice(0, 6).join('\n\n')}\n\n` });
  }, { times: 1 });
  await send(page, 'count again');
  const answer = () => page.locator('.msg-assistant').last().locator('.text-seg');
  await answer().filter({ hasText: 'v39' }).waitFor({ timeout: 15000 });
  await page.getByRole('button', { name: 'Send' }).waitFor();
  assert.equal((await answer().textContent()).trim(), full);
  assert.ok(reattached.some((u) => /after=1\.\d+/.test(u)), `re-attached with the last id: ${reattached}`);
  assert.equal(await page.locator('.turn-note').count(), 0);
  await page.context().close();
});
