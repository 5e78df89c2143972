// The demo model in its slow mode (AGENTCHAT_DEMO_DELAY_MS): streaming can be watched and
// Stop tried offline, at any moment of a turn.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, apiLogin } from './harness.mjs';

let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([
    startServer({ env: { AGENTCHAT_DEMO_DELAY_MS: '150' } }),
    launchBrowser(),
  ]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** The stored messages of the user's only conversation. */
async function storedMessages(username) {
  const { call } = await apiLogin(server.url, username, undefined, { register: false });
  const list = await call('GET', '/api/conversations');
  const conv = await call('GET', `/api/conversations/${list.json.items[0].id}`);
  return conv.json.messages;
}

test('the slow demo streams word by word', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'slowpoke');
  await page.getByRole('textbox', { name: 'Message' }).fill('hello');
  await page.getByRole('button', { name: 'Send' }).click();
  const text = page.locator('.msg-assistant .text-seg').first();
  await text.waitFor();
  const early = (await text.textContent()).length;
  await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 30000 });
  const full = (await text.textContent()).length;
  assert.ok(early < full, `the answer arrived in pieces (${early} then ${full} characters)`);
  await page.context().close();
});

test('Stop pressed right after Send, before the first word, stops the turn and says so', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'hasty');
  // The first message of a new chat: the conversation is created and the turn started while
  // the user is already pressing Stop.
  await page.getByRole('textbox', { name: 'Message' }).fill('hello');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
  await page.getByText('Stopped.').waitFor({ timeout: 10000 });
  await page.getByRole('button', { name: 'Send' }).waitFor();
  const messages = await storedMessages('hasty');
  const reply = messages.find((m) => m.role === 'assistant');
  assert.ok(!reply || reply.status === 'incomplete', `the reply was not completed: ${JSON.stringify(reply)}`);
  // A second message in the same chat, stopped just as fast.
  await page.getByRole('textbox', { name: 'Message' }).fill('hello again');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
  await page.getByText('Stopped.').nth(1).waitFor({ timeout: 10000 });
  const after = await storedMessages('hasty');
  assert.ok(after.filter((m) => m.role === 'assistant').every((m) => m.status === 'incomplete'), JSON.stringify(after));
  await page.context().close();
});
