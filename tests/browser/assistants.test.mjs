// Assistants in the browser: an admin creates one under Admin → Assistants (instructions, only
// the calculator), sees the server's refusal of a taken name in the form, edits it (version 2,
// with what changed, in its versions) and makes a second one only admins see; a member finds
// the first in the new chat's picker (not the second), starts a chat with it, sees its badge in
// the chat header and gets the demo model's answer through the calculator, while a tool the
// assistant leaves out is refused; the picker and the admin form fit 360 px; retiring one
// (after a confirmation) takes it out of the picker and its chat refuses new messages.
//
// Until the server has the assistants API (GET /api/admin/assistants answers 404), the tests
// report `# TODO`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, signInViaUi, apiLogin, artifact, layoutProblems, unnamedControls } from './harness.mjs';

const PHONE = { width: 360, height: 740 };

let server;
let browser;
let admin; // {token, call} of the first account (an admin)
let member;
let missing = false;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  admin = await apiLogin(server.url, 'aadmin');
  member = await apiLogin(server.url, 'amember');
  missing = (await admin.call('GET', '/api/admin/assistants')).status === 404;
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|409|Failed to load resource/.test(e));
const noSideScroll = (page) => page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);
const row = (page, name) => page.locator('.assistants-table tbody tr').filter({ has: page.locator('.assistant-name', { hasText: new RegExp(`^${name}$`) }) });

function skipWhenMissing(t) {
  if (missing) t.todo('the assistants API (GET /api/admin/assistants) is not on the server yet');
  return missing;
}

async function openAssistantsTab(page) {
  // The chat screen first finishes starting (app.js opens the chat after its init: leaving
  // before then makes it call open() on a chat view that is gone).
  await page.locator('.composer-input:enabled').waitFor();
  await page.getByRole('link', { name: 'Admin' }).click();
  await page.getByRole('navigation', { name: 'Admin sections' }).getByRole('link', { name: 'Assistants' }).click();
  await page.getByRole('heading', { name: 'Assistants', level: 2 }).waitFor();
}

test('an admin creates an assistant with restricted tools, sees a refusal inline, edits it, and reads version 2 in its versions', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'aadmin');
  await openAssistantsTab(page);
  await page.getByText('No assistants yet.').waitFor();

  await page.getByRole('button', { name: 'New assistant' }).click();
  let form = page.getByRole('form', { name: 'New assistant' });
  await form.getByLabel('Name', { exact: true }).fill('math-helper');
  await form.getByText('assistant:math-helper').waitFor(); // its /v1 model name, as typed
  await form.getByLabel(/^Description/).fill('Does your sums, step by step');
  await form.getByLabel('Instructions').fill('You only do arithmetic. Use the calculator for every sum.');
  const tools = form.getByRole('group', { name: 'Tools' });
  await tools.getByLabel('calculator', { exact: true }).check();
  await form.getByLabel('Temperature (0 to 2)').fill('0.2');
  assert.equal(await form.getByRole('group', { name: 'Visible to roles' }).getByRole('checkbox', { checked: true }).count(), 0, 'every role by default');
  assert.deepEqual(await unnamedControls(page), []);
  await form.getByRole('button', { name: 'Create assistant' }).click();
  const helper = row(page, 'math-helper');
  await helper.waitFor();
  assert.match(await helper.innerText(), /Does your sums/);
  const cellText = (r, label) => r.locator(`td[data-label="${label}"]`).innerText().then((x) => x.trim());
  assert.equal(await cellText(helper, 'Version'), '1');
  assert.equal(await cellText(helper, 'Tools'), 'calculator');
  assert.equal(await cellText(helper, 'Visible to'), 'every role');
  assert.equal(await cellText(helper, 'Model'), 'server default');

  // A name the form accepts but the server refuses: its message, inline.
  await page.getByRole('button', { name: 'New assistant' }).click();
  form = page.getByRole('form', { name: 'New assistant' });
  await form.getByLabel('Name', { exact: true }).fill('bad name!');
  await form.getByLabel('Instructions').fill('Anything.');
  await form.getByRole('button', { name: 'Create assistant' }).click();
  await form.getByRole('alert').filter({ hasText: /1 to 64 letters/ }).waitFor();
  await form.getByLabel('Name', { exact: true }).fill('math-helper');
  const refused = page.waitForResponse((r) => r.url().endsWith('/api/admin/assistants') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Create assistant' }).click();
  const res = await refused;
  assert.equal(res.status(), 409);
  const message = (await res.json()).error.message;
  await form.getByRole('alert').filter({ hasText: message }).waitFor();
  await form.getByRole('button', { name: 'Cancel' }).click();

  // Edit: new instructions and temperature; the tools stay restricted.
  await page.getByRole('button', { name: 'Edit math-helper' }).click();
  form = page.getByRole('form', { name: 'Edit math-helper' });
  assert.equal(await form.getByLabel('Temperature (0 to 2)').inputValue(), '0.2');
  assert.equal(await form.getByRole('group', { name: 'Tools' }).getByLabel('calculator', { exact: true }).isChecked(), true);
  await form.getByLabel('Instructions').fill('You only do arithmetic. Show the calculation.');
  await form.getByLabel('Temperature (0 to 2)').fill('0.5');
  await form.getByRole('button', { name: 'Save as version 2' }).click();
  await page.getByText('math-helper saved as version 2.').waitFor();
  assert.equal(await cellText(helper, 'Version'), '2');

  await page.getByRole('button', { name: 'Versions of math-helper' }).click();
  const versions = page.getByRole('list', { name: 'Versions of math-helper' });
  await versions.waitFor();
  const v2 = versions.locator('.assistant-version[data-version="2"]');
  const v1 = versions.locator('.assistant-version[data-version="1"]');
  assert.match(await v2.innerText(), /Version 2\s*current/);
  assert.match(await v2.innerText(), /by aadmin/);
  assert.match(await v2.innerText(), /Instructions changed/);
  assert.match(await v2.innerText(), /Temperature: 0\.2 → 0\.5/);
  assert.doesNotMatch(await v2.innerText(), /Tools:/, 'the tools did not change');
  assert.match(await v1.innerText(), /Created: model server default; tools calculator; visible to every role/);
  await v2.getByText('Show the new instructions').click();
  await v2.getByText('You only do arithmetic. Show the calculation.').waitFor();
  await page.screenshot({ path: artifact('assistants-admin.png'), fullPage: true });

  // One only admins see.
  await page.getByRole('button', { name: 'New assistant' }).click();
  form = page.getByRole('form', { name: 'New assistant' });
  await form.getByLabel('Name', { exact: true }).fill('admins-only');
  await form.getByLabel('Instructions').fill('For admins.');
  await form.getByRole('group', { name: 'Visible to roles' }).getByLabel('admin', { exact: true }).check();
  await form.getByRole('button', { name: 'Create assistant' }).click();
  await row(page, 'admins-only').waitFor();
  assert.equal(await cellText(row(page, 'admins-only'), 'Visible to'), 'admin');

  // The admin change trail has each save.
  const changes = await admin.call('GET', '/api/admin/changes?kind=assistant.');
  assert.deepEqual(changes.json.items.map((c) => c.kind).sort(), ['assistant.create', 'assistant.create', 'assistant.update']);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('a member picks the assistant in a new chat, sees its badge and gets an answer through its tools; others are not listed', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'amember');
  const picker = page.getByRole('region', { name: 'Chat with an assistant' });
  const card = picker.getByRole('button', { name: 'Chat with math-helper' });
  await card.waitFor();
  assert.match(await card.innerText(), /Does your sums, step by step/);
  assert.match(await card.innerText(), /Tools: calculator/);
  assert.equal(await picker.getByRole('button', { name: 'Chat with admins-only' }).count(), 0, 'not visible to members');
  assert.equal(await page.locator('.assistant-badge:not([hidden])').count(), 0, 'no badge in a new chat');

  await card.click();
  await page.waitForURL(/\/c\//);
  const badge = page.locator('.chat-header .assistant-badge .assistant-badge-name');
  await badge.waitFor();
  assert.equal((await badge.innerText()).trim(), 'math-helper');
  await page.getByText('You are chatting with the assistant math-helper.').waitFor();
  const convId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
  // Listed in the sidebar at once.
  assert.equal(await page.locator(`.conv-link[href="/c/${convId}"]`).count(), 1);

  await page.getByRole('textbox', { name: 'Message' }).fill('what is 2+3*4?');
  await page.getByRole('button', { name: 'Send' }).click();
  const answer = page.locator('.msg-assistant').last();
  await answer.locator('.tool-card[data-tool=calculator]').waitFor();
  await answer.locator('.text-seg').filter({ hasText: /= 14/ }).waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();

  // The member's role allows current_time, the assistant does not.
  await page.getByRole('textbox', { name: 'Message' }).fill('what time is it?');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant').last().locator('.text-seg').filter({ hasText: /current_time/ }).waitFor();
  assert.equal(await page.locator('.tool-card[data-tool=current_time]').count(), 0);

  const conv = await member.call('GET', `/api/conversations/${convId}`);
  assert.equal(conv.json.assistant?.name, 'math-helper');
  await page.reload();
  await badge.waitFor();
  assert.equal((await badge.innerText()).trim(), 'math-helper');
  await page.screenshot({ path: artifact('assistants-chat.png') });
  // The admin sees both in their picker.
  const adminPage = await newPage(browser);
  await signInViaUi(adminPage, server.url, 'aadmin');
  await adminPage.getByRole('button', { name: 'Chat with admins-only' }).waitFor();
  assert.deepEqual(consoleErrors(page), []);
  await adminPage.context().close();
  await page.context().close();
});

test('the picker, the chat with its badge and the admin form fit 360 px', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser, { viewport: PHONE });
  const check = async (what) => {
    await page.screenshot({ path: artifact(`assistants-phone-${what}.png`), fullPage: true });
    assert.deepEqual(await layoutProblems(page), [], `layout problems on ${what}`);
    assert.ok(await noSideScroll(page), `${what} scrolls sideways`);
  };
  await signInViaUi(page, server.url, 'amember');
  await page.getByRole('button', { name: 'Chat with math-helper' }).scrollIntoViewIfNeeded();
  await check('picker');
  await page.getByRole('button', { name: 'Show conversations' }).click();
  await page.locator('.conv-link').first().click();
  await page.locator('.chat-header .assistant-badge').waitFor();
  await page.waitForTimeout(300); // the sidebar slides away
  await check('chat');
  await page.context().close();

  const adminPage = await newPage(browser, { viewport: PHONE });
  await signInViaUi(adminPage, server.url, 'aadmin');
  await adminPage.goto(`${server.url}/admin/assistants`);
  await row(adminPage, 'math-helper').waitFor();
  const checkAdmin = async (what) => {
    await adminPage.screenshot({ path: artifact(`assistants-phone-${what}.png`), fullPage: true });
    assert.deepEqual(await layoutProblems(adminPage), [], `layout problems on ${what}`);
    assert.ok(await noSideScroll(adminPage), `${what} scrolls sideways`);
  };
  await checkAdmin('admin-list');
  await adminPage.getByRole('button', { name: 'Edit math-helper' }).click();
  await adminPage.getByRole('form', { name: 'Edit math-helper' }).waitFor();
  await checkAdmin('admin-form');
  await adminPage.getByRole('button', { name: 'Versions of math-helper' }).click();
  await adminPage.getByRole('list', { name: 'Versions of math-helper' }).waitFor();
  await checkAdmin('admin-versions');
  await adminPage.context().close();
});

test('retiring an assistant (confirmed) takes it out of the picker; its chat refuses new messages', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'aadmin');
  await page.goto(`${server.url}/admin/assistants`);
  await page.getByRole('button', { name: 'Retire math-helper' }).click();
  const dialog = page.getByRole('dialog', { name: 'Retire math-helper?' });
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  await row(page, 'math-helper').waitFor();
  await page.getByRole('button', { name: 'Retire math-helper' }).click();
  await dialog.getByRole('button', { name: 'Retire assistant' }).click();
  await page.getByText('math-helper retired.').waitFor();
  await row(page, 'math-helper').waitFor({ state: 'detached' });
  await page.context().close();

  const mpage = await newPage(browser);
  const listed = mpage.waitForResponse((r) => r.url().endsWith('/api/assistants'));
  await signInViaUi(mpage, server.url, 'amember');
  // Nothing left for members: the picker stays hidden.
  assert.deepEqual((await (await listed).json()).items, []);
  await mpage.waitForTimeout(100);
  assert.equal(await mpage.locator('.assistant-picker:not([hidden])').count(), 0);
  await mpage.locator('.conv-link').first().click();
  await mpage.locator('.chat-header .assistant-badge').filter({ hasText: 'math-helper' }).waitFor();
  await mpage.getByRole('textbox', { name: 'Message' }).fill('what is 1+1?');
  await mpage.getByRole('button', { name: 'Send' }).click();
  await mpage.locator('.banner-error').waitFor();
  assert.match(await mpage.locator('.banner-error').innerText(), /retired|no longer|unavailable|assistant/i);
  await mpage.context().close();
});
