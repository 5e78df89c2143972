// The "API keys" page: create a key (secret shown once, copyable), use it with the
// OpenAI-compatible API, see it listed with its last use, revoke it (then it is refused).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, artifact, unnamedControls } from './harness.mjs';

let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

async function complete(key) {
  const models = await fetch(`${server.url}/v1/models`, { headers: { Authorization: `Bearer ${key}` } });
  if (models.status !== 200) return { status: models.status };
  const model = (await models.json()).data[0].id;
  const r = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }] }),
  });
  return { status: r.status, body: await r.json() };
}

test('create, copy, use, list and revoke an API key', async () => {
  const page = await newPage(browser);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  await registerViaUi(page, server.url, 'keyholder');
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByRole('heading', { name: 'API keys' }).waitFor();
  await page.getByText('No keys yet.').waitFor();
  assert.ok(await page.getByText(`${server.url}/v1`).isVisible(), 'the base URL is shown');

  // An empty name is refused without a request.
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('alert').filter({ hasText: /name/i }).waitFor();

  await page.getByLabel('Name').fill('my editor');
  // Every key expires: no "Never"; the server's default (90 days) is preselected.
  assert.equal(await page.getByLabel('Expires').inputValue(), '90');
  assert.equal(await page.getByLabel('Expires').locator('option', { hasText: 'Never' }).count(), 0);
  await page.getByLabel('Expires').selectOption('30');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secretBox = page.getByRole('textbox', { name: 'Secret of key my editor' });
  await secretBox.waitFor();
  const secret = await secretBox.inputValue();
  assert.match(secret, /^ack_[A-Za-z0-9_-]{43}$/);
  await page.getByText(/shown only this once/).waitFor();
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByText('Key copied.').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
  await page.screenshot({ path: artifact('api-keys.png') });

  // Listed by prefix, never the whole secret, with its scope; the key works on /v1.
  const row = page.getByRole('row').filter({ hasText: 'my editor' });
  await row.waitFor();
  assert.deepEqual(await row.locator('.key-scopes .pill').allInnerTexts(), ['chat']);
  assert.ok((await row.textContent()).includes(secret.slice(0, 12)));
  assert.ok(!(await page.locator('table').textContent()).includes(secret.slice(12)));
  const used = await complete(secret);
  assert.equal(used.status, 200, JSON.stringify(used.body));
  assert.equal(used.body.object, 'chat.completion');
  assert.ok(used.body.choices[0].message.content.length > 0);

  // After a reload the secret is gone from the page; the last use shows (it is recorded
  // off the request's path, so give it a moment).
  let lastUsed = '';
  for (let i = 0; i < 20 && !lastUsed; i += 1) {
    await page.reload();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    const cells = page.getByRole('row').filter({ hasText: 'my editor' }).getByRole('cell');
    await cells.first().waitFor();
    const text = await cells.nth(5).textContent();
    if (text !== 'Never') lastUsed = text;
    else await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(lastUsed, 'the last use is shown');
  assert.equal(await page.getByRole('textbox', { name: /Secret of key/ }).count(), 0);
  assert.deepEqual(await unnamedControls(page), []);

  // Revoke takes a second click; then the key is refused.
  await page.getByRole('button', { name: 'Revoke key my editor' }).click();
  await page.getByRole('button', { name: /Confirm: revoke key my editor/ }).click();
  await page.getByText('Key "my editor" revoked.').waitFor();
  await page.getByText('No keys yet.').waitFor();
  assert.equal((await complete(secret)).status, 401);
  assert.deepEqual(page.dialogs, []);
  assert.deepEqual(page.errors.filter((e) => !/401|Failed to load resource/.test(e)), []);
  await page.context().close();
});

test('on a phone the keys page is reached from the account dialog', async () => {
  const page = await newPage(browser, { viewport: { width: 360, height: 740 } });
  await registerViaUi(page, server.url, 'phoneuser');
  assert.equal(await page.getByRole('link', { name: 'API keys' }).isVisible(), false);
  await page.getByRole('button', { name: /Account phoneuser/ }).click();
  await page.getByRole('link', { name: 'Manage API keys' }).click();
  await page.getByRole('heading', { name: 'API keys' }).waitFor();
  assert.equal(await page.getByRole('dialog').count(), 0);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the keys page overflows by ${overflow}px`);
  await page.context().close();
});

test('a key with the files scope; an old sign-in is asked for the password', async () => {
  // A server whose sign-ins count as recent for one second only.
  const strict = await startServer({ env: { AGENTCHAT_REAUTH_SECS: '1' } });
  const page = await newPage(browser, { viewport: { width: 360, height: 740 } });
  try {
    await registerViaUi(page, strict.url, 'scoper');
    await page.goto(`${strict.url}/keys`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.waitForTimeout(1500);
    await page.getByLabel('Name').fill('files key');
    await page.getByLabel(/Workspace files/).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    // The sign-in is too old: the page asks for the password, and a wrong one is refused.
    const password = page.getByLabel('Confirm your password');
    await password.waitFor();
    await page.getByRole('alert').filter({ hasText: /confirm your password/ }).waitFor();
    await password.fill('not-my-password');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('alert').filter({ hasText: /not correct/ }).waitFor();
    await password.fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('textbox', { name: 'Secret of key files key' }).waitFor();
    assert.equal(await password.isVisible(), false, 'the password field goes away again');
    const row = page.getByRole('row').filter({ hasText: 'files key' });
    await row.waitFor();
    assert.deepEqual(await row.locator('.key-scopes .pill').allInnerTexts(), ['chat', 'files']);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `the keys page overflows by ${overflow}px at 360 px`);
    await page.screenshot({ path: artifact('api-keys-reauth-360.png') });

    // The password change offers to revoke the keys (ticked by default).
    await page.getByRole('button', { name: /Account scoper/ }).click();
    const revoke = page.getByLabel(/Also revoke my API keys/);
    assert.equal(await revoke.isChecked(), true);
    assert.deepEqual(await unnamedControls(page), []);
  } finally {
    await page.context().close();
    await strict.stop();
  }
});
