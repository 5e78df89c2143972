// Sharing a chat in the browser: the Share dialog makes an org link (public is offered only to
// roles that may, and says why not), another member opens it signed in and reads the
// conversation under its banner, "Continue as copy" opens a chat of their own, and the
// owner's dialog counts the views; a message's "Continue as copy from here" forks the open
// chat; the shared page fits a 360 px phone; revoked and expired links show the gone page;
// an org link opened signed out asks to sign in and comes back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { startServer, launchBrowser, newPage, signInViaUi, apiLogin, artifact, layoutProblems, unnamedControls } from './harness.mjs';

const PHONE = { width: 360, height: 740 };
const PG = process.env.AGENTCHAT_TEST_PG || 'postgres://postgres@127.0.0.1:5432';
let server;
let browser;
let owner; // {token, call} of "sharer" (a member)

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  await apiLogin(server.url, 'sadmin'); // the first account: the admin
  owner = await apiLogin(server.url, 'sharer');
  await apiLogin(server.url, 'reader');
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|410|404|Failed to load resource/.test(e));

/** A conversation of the owner's with one finished exchange, made through the API. */
async function conversation(question) {
  const conv = await owner.call('POST', '/api/conversations', {});
  const resp = await fetch(`${server.url}/api/conversations/${conv.json.id}/messages`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${owner.token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ content: question }),
  });
  assert.equal(resp.status, 200);
  await resp.text();
  return conv.json.id;
}

async function link(convId, body = { scope: 'org' }) {
  const r = await owner.call('POST', `/api/conversations/${convId}/shares`, body);
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json;
}

function sql(statement) {
  return new Promise((resolve, reject) => {
    execFile('psql', ['-d', `${PG}/${server.dbName}`, '-v', 'ON_ERROR_STOP=1', '-c', statement], { timeout: 20000 },
      (err, _out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve()));
  });
}

test('share a chat from the dialog; another member reads it and continues it as a copy', async () => {
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'sharer');
  await page.getByRole('textbox', { name: 'Message' }).fill('what is 2+2*3');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: '= 8' }).waitFor();
  await page.locator('.msg-assistant').last().getByRole('button', { name: 'More actions' }).waitFor();

  await page.getByRole('button', { name: 'Share this chat' }).click();
  const dialog = page.getByRole('dialog', { name: 'Share this chat' });
  await dialog.getByText('No links yet.').waitFor();
  // A member may not make public links, and is told why.
  assert.equal(await dialog.getByRole('radio', { name: 'Anyone with the link' }).isDisabled(), true);
  await dialog.getByText('Your role may not make public links').waitFor();
  assert.equal(await dialog.getByRole('radio', { name: 'People signed in to this server' }).isChecked(), true);
  await dialog.getByLabel('Link expires').selectOption({ label: 'In 7 days' });
  await dialog.getByRole('button', { name: 'Create link' }).click();
  const made = dialog.getByRole('textbox', { name: 'The new link' });
  await made.waitFor();
  const url = await made.inputValue();
  assert.match(url, /\/s\/[A-Za-z0-9_-]{22,}$/);
  await dialog.getByRole('button', { name: 'Copy link' }).waitFor();
  await dialog.locator('.share-item').filter({ hasText: '0 views' }).waitFor();
  await page.screenshot({ path: artifact('shares-dialog.png') });
  assert.deepEqual(await unnamedControls(page), []);
  await dialog.getByRole('button', { name: 'Close' }).click();

  // Another member, signed in in their own browser, opens the link.
  const reader = await newPage(browser);
  await signInViaUi(reader, server.url, 'reader');
  await reader.goto(url);
  const banner = reader.locator('.share-banner');
  await banner.waitFor();
  const text = await banner.innerText();
  assert.match(text, /Shared by sharer · snapshot of .+ · read-only/);
  assert.match(text, /The link works until/);
  await reader.locator('.msg-user').filter({ hasText: 'what is 2+2*3' }).waitFor();
  await reader.locator('.msg-assistant .text-seg').filter({ hasText: '= 8' }).waitFor();
  await reader.locator('.tool-card').first().waitFor();
  // Read-only: no composer, no message actions.
  assert.equal(await reader.getByRole('textbox', { name: 'Message' }).count(), 0);
  assert.equal(await reader.locator('.msg-actions').count(), 0);
  await reader.screenshot({ path: artifact('shares-page.png'), fullPage: true });
  assert.deepEqual(await unnamedControls(reader), []);
  assert.deepEqual(consoleErrors(reader), []);

  await reader.getByRole('button', { name: 'Continue as copy' }).click();
  await reader.waitForURL(/\/c\/[0-9a-f-]+$/);
  await reader.locator('.chat-title').filter({ hasText: '(copy)' }).waitFor();
  await reader.locator('.msg-user').filter({ hasText: 'what is 2+2*3' }).waitFor();
  // The copy is the reader's: it goes on.
  await reader.getByRole('textbox', { name: 'Message' }).fill('what is 6*7');
  await reader.getByRole('button', { name: 'Send' }).click();
  await reader.locator('.msg-assistant .text-seg').filter({ hasText: '= 42' }).waitFor();
  await reader.context().close();

  // The owner sees the views (the reading and the copy).
  await page.getByRole('button', { name: 'Share this chat' }).click();
  await page.getByRole('dialog', { name: 'Share this chat' }).locator('.share-item').filter({ hasText: '2 views' }).waitFor();
  await page.keyboard.press('Escape');

  // "Continue as copy from here" on the answer forks the open chat.
  const before = page.url();
  await page.locator('.msg-assistant').last().getByRole('button', { name: 'More actions' }).click();
  await page.getByRole('menuitem', { name: 'Continue as copy from here' }).click();
  await page.waitForURL((u) => u.toString() !== before && /\/c\//.test(u.toString()));
  await page.locator('.chat-title').filter({ hasText: '(copy)' }).waitFor();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: '= 8' }).waitFor();
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('the shared page fits a phone; revoked and expired links show the gone page', async () => {
  const conv = await conversation('what is 12*12');
  const live = await link(conv, { scope: 'org', redact_tools: true });
  const page = await newPage(browser, { viewport: PHONE });
  await signInViaUi(page, server.url, 'reader');
  await page.goto(live.url);
  const banner = page.locator('.share-banner');
  await banner.waitFor();
  assert.match(await banner.innerText(), /Tool outputs and arguments are hidden/);
  await page.locator('.msg-assistant .text-seg').filter({ hasText: '144' }).waitFor();
  assert.equal(await banner.isVisible(), true);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 360, `the page is ${width} px wide`);
  await page.screenshot({ path: artifact('shares-phone.png'), fullPage: true });
  assert.deepEqual(await layoutProblems(page), []);

  // Revoked: the gone page.
  assert.equal((await owner.call('DELETE', `/api/shares/${live.id}`)).status, 204);
  await page.reload();
  await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
  assert.match(await page.locator('.share-problem').innerText(), /revoked/);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 360);

  // Expired: the gone page too.
  const expiring = await link(conv, { scope: 'org', expires_at: new Date(Date.now() + 3600e3).toISOString() });
  await sql(`UPDATE conversation_shares SET expires_at = now() - interval '1 minute' WHERE id = '${expiring.id}'`);
  await page.goto(expiring.url);
  await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
  assert.match(await page.locator('.share-problem').innerText(), /expired/);

  // Unknown: not found.
  await page.goto(`${server.url}/s/${'x'.repeat(22)}`);
  await page.getByRole('heading', { name: 'Shared conversation not found' }).waitFor();
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('an org link opened signed out asks to sign in, then shows the conversation', async () => {
  const conv = await conversation('what is 3*3');
  const org = await link(conv);
  const page = await newPage(browser, { viewport: PHONE });
  await page.goto(org.url);
  await page.getByRole('heading', { name: 'Sign in to read this conversation' }).waitFor();
  await page.getByRole('button', { name: 'Sign in to read it' }).click();
  await page.getByLabel('Username').fill('reader');
  await page.getByLabel('Password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.locator('.share-banner').waitFor();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: '= 9' }).waitFor();
  assert.equal(page.url(), org.url);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 360);
  await page.context().close();
});
