// The account page (issue 22 item 7): theme light / dark / system stored on the account and
// applied before first paint, the default model for new chats, and a chat's own model and
// instructions from its header; and model-made titles (item 4) that reach the sidebar
// without a reload. Change password is covered in demo_chat.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, artifact, layoutProblems } from './harness.mjs';

let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([
    startServer({ env: { AGENTCHAT_LLM_MODELS: 'demo,demo-large' } }),
    launchBrowser(),
  ]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const bodyBackground = (page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
const DARK_BG = 'rgb(15, 17, 23)';
const LIGHT_BG = 'rgb(247, 247, 249)';

/** Visible elements painted pure white (a light-only colour left in a dark view). */
const whiteBoxes = (page) => page.evaluate(() => [...document.querySelectorAll('body *')]
  .filter((el) => el.getClientRects().length && getComputedStyle(el).backgroundColor === 'rgb(255, 255, 255)')
  .map((el) => el.outerHTML.slice(0, 100)));

async function openAccount(page, name) {
  await page.getByRole('button', { name: `Account ${name}` }).click();
  return page.getByRole('dialog', { name: 'Account' });
}

test('theme: stored on the account, applied before first paint, system follows the device', async () => {
  const page = await newPage(browser);
  await page.emulateMedia({ colorScheme: 'light' });
  await registerViaUi(page, server.url, 'tess');
  assert.equal(await bodyBackground(page), LIGHT_BG);
  let dialog = await openAccount(page, 'tess');
  await dialog.getByRole('radio', { name: 'Dark' }).check();
  await dialog.getByText('Saved.').waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  assert.equal(await bodyBackground(page), DARK_BG);
  await dialog.getByRole('button', { name: 'Close' }).click();

  // Before first paint: with /api/me held back, the loading screen is already dark.
  await page.route('**/api/me', async (route) => {
    await new Promise((r) => { setTimeout(r, 1500); });
    await route.continue().catch(() => {});
  }, { times: 1 });
  await page.reload();
  await page.locator('.boot').waitFor();
  assert.equal(await bodyBackground(page), DARK_BG, 'the theme waited for the server');
  await page.getByRole('textbox', { name: 'Message' }).waitFor();

  // Every view is dark: chat, API keys, and the admin console (tess is the first user).
  for (const [path, ready] of [['/', '.chat-header'], ['/keys', 'main h1, main h2'], ['/admin/users', '.admin-body .card'], ['/admin/roles', '.admin-body .card'], ['/admin/usage', '.admin-body .card, .admin-body .banner']]) {
    await page.goto(`${server.url}${path}`);
    await page.locator(ready).first().waitFor();
    assert.deepEqual(await whiteBoxes(page), [], `light boxes left on ${path}`);
  }
  await page.screenshot({ path: artifact('account-dark-admin.png') });

  // Another browser (fresh storage) gets the account's theme.
  const other = await newPage(browser);
  await other.emulateMedia({ colorScheme: 'light' });
  await signInViaUi(other, server.url, 'tess');
  assert.equal(await bodyBackground(other), DARK_BG);

  // System: follows the device's preference, both ways.
  await page.goto(server.url);
  dialog = await openAccount(page, 'tess');
  await dialog.getByRole('radio', { name: 'System' }).check();
  await dialog.getByText('Saved.').waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.hasAttribute('data-theme')), false);
  assert.equal(await bodyBackground(page), LIGHT_BG);
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.equal(await bodyBackground(page), DARK_BG);
  // Light wins over a dark device.
  await dialog.getByRole('radio', { name: 'Light' }).check();
  await dialog.getByText('Saved.').waitFor();
  assert.equal(await bodyBackground(page), LIGHT_BG);
  const stored = await (await apiLogin(server.url, 'tess', undefined, { register: false })).call('GET', '/api/me/preferences');
  assert.equal(stored.json.theme, 'light');
  assert.deepEqual(page.errors.filter((e) => !/401|Failed to load resource/.test(e)), []);
  await page.context().close();
  await other.context().close();
});

test('default model for new chats, and a chat\'s own model and instructions from its header', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'mona');
  const dialog = await openAccount(page, 'mona');
  const pick = dialog.getByLabel('Default model for new chats');
  assert.deepEqual(await pick.locator('option').allTextContents(), ['Server default (demo)', 'demo · default · unpriced', 'demo-large · default · unpriced']);
  await pick.selectOption('demo-large');
  await dialog.getByText('Saved.').waitFor();
  await dialog.getByRole('button', { name: 'Close' }).click();
  // The new chat's picker follows at once, and after a reload.
  assert.equal(await page.getByRole('combobox', { name: 'Model' }).inputValue(), 'demo-large');
  await page.reload();
  assert.equal(await page.getByRole('combobox', { name: 'Model' }).inputValue(), 'demo-large');
  await page.getByRole('textbox', { name: 'Message' }).fill('hello there');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').first().waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();
  const settings = page.getByRole('button', { name: /^Chat settings: model demo-large/ });
  await settings.waitFor();

  // Switch this chat's model and give it instructions.
  await settings.click();
  const form = page.getByRole('dialog', { name: 'Chat settings' });
  await form.getByLabel('Model').selectOption('demo');
  await form.getByLabel(/Instructions for this chat/).fill('Answer like a pirate.');
  await form.getByText('21 / 4000').waitFor();
  await form.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Chat settings: model demo, with its own instructions' }).waitFor();
  const id = page.url().split('/c/')[1];
  const api = await apiLogin(server.url, 'mona', undefined, { register: false });
  const conv = await api.call('GET', `/api/conversations/${id}`);
  assert.equal(conv.json.model, 'demo');
  assert.equal(conv.json.system_prompt, 'Answer like a pirate.');
  // Kept over a reload, and removable.
  await page.reload();
  await page.getByRole('button', { name: 'Chat settings: model demo, with its own instructions' }).click();
  assert.equal(await form.getByLabel(/Instructions for this chat/).inputValue(), 'Answer like a pirate.');
  await form.getByLabel(/Instructions for this chat/).fill('');
  await form.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Chat settings: model demo' }).waitFor();
  assert.equal((await api.call('GET', `/api/conversations/${id}`)).json.system_prompt, null);
  await page.context().close();
});

test('the chat header and its settings fit a phone', async () => {
  const page = await newPage(browser, { viewport: { width: 360, height: 740 } });
  await registerViaUi(page, server.url, 'phil-with-a-long-name');
  const api = await apiLogin(server.url, 'phil-with-a-long-name', undefined, { register: false });
  await api.call('PATCH', '/api/me/preferences', { default_model: 'demo-large' });
  await page.reload();
  await page.getByRole('textbox', { name: 'Message' }).fill('a question with a rather long first line that will not fit');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').first().waitFor();
  const settings = page.getByRole('button', { name: /^Chat settings/ });
  await settings.waitFor();
  assert.deepEqual(await layoutProblems(page), [], 'chat header at 360 px');
  await settings.click();
  await page.getByRole('dialog', { name: 'Chat settings' }).getByLabel('Model').waitFor();
  await page.screenshot({ path: artifact('phone-chat-settings.png') });
  assert.deepEqual(await layoutProblems(page), [], 'chat settings at 360 px');
  await page.keyboard.press('Escape');
  const dialog = await openAccount(page, 'phil-with-a-long-name');
  await dialog.getByRole('radio', { name: 'Dark' }).waitFor();
  await page.screenshot({ path: artifact('phone-account.png') });
  assert.deepEqual(await layoutProblems(page), [], 'account dialog at 360 px');
  await page.context().close();
});

test('a new chat gets its model-made title in the sidebar without a reload', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'tom');
  await page.getByRole('textbox', { name: 'Message' }).fill('what is 2+3*4? I need it for homework today');
  await page.getByRole('button', { name: 'Send' }).click();
  const sidebar = page.getByRole('complementary', { name: 'Conversations' });
  // The demo model's title: the first six words of the question.
  await sidebar.locator('.conv-title').filter({ hasText: /^what is 2\+3\*4 I need it$/ }).waitFor({ timeout: 15000 });
  await page.getByRole('heading', { name: 'what is 2+3*4 I need it' }).waitFor();
  // No longer the default: later answers keep it.
  const api = await apiLogin(server.url, 'tom', undefined, { register: false });
  const id = page.url().split('/c/')[1];
  assert.equal((await api.call('GET', `/api/conversations/${id}`)).json.title_auto, false);
  await page.context().close();
});
