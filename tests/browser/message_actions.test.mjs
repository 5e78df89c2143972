// Copy a message, edit a question and send it again, regenerate the last answer, and retry
// after an error: the later answers are replaced, never duplicated.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, apiLogin, FakeUpstream } from './harness.mjs';

let demo;
let upstream;
let faked;
let browser;

before(async () => {
  upstream = await new FakeUpstream().start();
  [demo, faked, browser] = await Promise.all([startServer(), startServer({ upstream }), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await demo?.stop();
  await faked?.stop();
  await upstream?.stop();
});

async function storedContents(server, username) {
  const { call } = await apiLogin(server.url, username, undefined, { register: false });
  const list = await call('GET', '/api/conversations');
  const conv = await call('GET', `/api/conversations/${list.json.items[0].id}`);
  return conv.json.messages.filter((m) => m.role !== 'tool').map((m) => `${m.role}: ${m.content}`);
}

test('copy, edit and resend, regenerate', async () => {
  const page = await newPage(browser);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: demo.url });
  await registerViaUi(page, demo.url, 'editor');
  await page.getByRole('textbox', { name: 'Message' }).fill('what is 6*7');
  await page.getByRole('button', { name: 'Send' }).click();
  const answer = page.locator('.msg-assistant').last();
  await answer.locator('.text-seg').filter({ hasText: '42' }).waitFor();
  await answer.getByRole('button', { name: 'Regenerate' }).waitFor();

  await answer.getByRole('button', { name: 'Copy' }).click();
  assert.match(await page.evaluate(() => navigator.clipboard.readText()), /6\*7 = 42/);

  // Edit the question: the old answer is replaced by the new one.
  const question = page.locator('.msg-user').last();
  await question.getByRole('button', { name: 'Edit' }).click();
  await question.getByRole('textbox', { name: 'Edit your message' }).fill('what is 6*8');
  await question.getByRole('button', { name: 'Save and send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: '48' }).waitFor();
  await page.locator('.msg-assistant').last().getByRole('button', { name: 'Regenerate' }).waitFor();
  assert.equal(await page.locator('.msg-assistant .text-seg').filter({ hasText: '42' }).count(), 0);
  // The actions show while the answer is still being stored: wait for its end.
  const expected = ['user: what is 6*8', 'assistant: ', 'assistant: [demo] 6*8 = 48'];
  const stored = async () => {
    let got = await storedContents(demo, 'editor');
    for (let i = 0; i < 50 && JSON.stringify(got) !== JSON.stringify(expected); i++) {
      await page.waitForTimeout(100);
      got = await storedContents(demo, 'editor');
    }
    return got;
  };
  assert.deepEqual(await stored(), expected);

  // Regenerate: one answer again, not two.
  await page.locator('.msg-assistant').last().getByRole('button', { name: 'Regenerate' }).click();
  await page.locator('.msg-assistant').last().getByRole('button', { name: 'Regenerate' }).waitFor();
  assert.equal(await page.locator('.msg-user').count(), 1);
  assert.deepEqual(await stored(), expected);
  await page.context().close();
});

test('retry after an upstream error', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, faked.url, 'retrier');
  upstream.push({ status: 500 });
  await page.getByRole('textbox', { name: 'Message' }).fill('hello');
  await page.getByRole('button', { name: 'Send' }).click();
  const retry = page.locator('.msg-assistant').last().getByRole('button', { name: 'Retry' });
  await retry.waitFor();
  await retry.click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'Hello from the fake model.' }).waitFor();
  await page.locator('.msg-assistant').last().getByRole('button', { name: 'Regenerate' }).waitFor();
  assert.equal(await page.locator('.msg-user').count(), 1);
  const stored = await storedContents(faked, 'retrier');
  assert.deepEqual(stored, ['user: hello', 'assistant: Hello from the fake model.']);
  await page.context().close();
});
