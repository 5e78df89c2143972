// Issue 22 items 8 and 5 in the browser: an admin resets passwords, disables and deletes
// accounts (each after a confirmation), reads the admin changes and exports both audits as
// CSV, opens a conversation from the tool-call audit read-only; the budget banner and the
// top bar say the same thing, with numbers and times in the user's time zone. At 360 px
// nothing sticks out or overlaps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, layoutProblems, artifact } from './harness.mjs';

let server;
let browser;
let admin; // API helper of the admin (registered first)

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  admin = await apiLogin(server.url, 'boss');
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d/;
const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));

async function userByName(name) {
  const list = await admin.call('GET', '/api/admin/users');
  return list.json.items.find((u) => u.username === name) || null;
}

async function signInAsBoss(page) {
  await signInViaUi(page, server.url, 'boss');
  await page.goto(`${server.url}/admin/users`);
}

test('an admin resets a password, disables and deletes accounts, each after confirming', async () => {
  await apiLogin(server.url, 'bob');
  await apiLogin(server.url, 'carol');
  const page = await newPage(browser);
  await signInAsBoss(page);
  const row = (name) => page.locator('tr').filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${name}`) }) });
  await row('bob').waitFor();

  // One's own account cannot be disabled, reset or deleted from here.
  const own = row('boss');
  assert.equal(await own.getByRole('button', { name: 'Delete boss' }).isDisabled(), true);
  assert.equal(await own.getByRole('button', { name: 'Reset password of boss' }).isDisabled(), true);
  assert.equal(await own.getByRole('checkbox', { name: 'Disable boss' }).isDisabled(), true);

  // Reset: the server generates a password, shown once.
  await page.getByRole('button', { name: 'Reset password of bob' }).click();
  const dialog = page.getByRole('dialog', { name: 'Reset the password of bob?' });
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Reset password' }).click();
  const shown = dialog.locator('output.secret-once');
  await shown.waitFor();
  const generated = (await shown.textContent()).trim();
  assert.ok(generated.length >= 16, generated);
  await dialog.getByRole('button', { name: 'Done' }).click();
  await apiLogin(server.url, 'bob', generated, { register: false });
  await assert.rejects(apiLogin(server.url, 'bob', undefined, { register: false }));

  // Disable asks first; cancelling changes nothing.
  const disable = page.getByRole('checkbox', { name: 'Disable carol' });
  await disable.check();
  const ask = page.getByRole('dialog', { name: 'Disable carol?' });
  await ask.getByText(/signed out everywhere/).waitFor();
  await ask.getByRole('button', { name: 'Cancel' }).click();
  for (let i = 0; i < 50 && await disable.isChecked(); i++) await page.waitForTimeout(20);
  assert.equal(await disable.isChecked(), false);
  assert.equal((await userByName('carol')).disabled, false);
  await disable.check();
  await ask.getByRole('button', { name: 'Disable account' }).click();
  await page.getByText('carol disabled.').waitFor();
  assert.equal((await userByName('carol')).disabled, true);

  // Delete asks first, then the row goes.
  await page.getByRole('button', { name: 'Delete bob' }).click();
  const del = page.getByRole('dialog', { name: 'Delete bob?' });
  await del.getByText(/cannot be undone/).waitFor();
  await del.getByRole('button', { name: 'Cancel' }).click();
  assert.ok(await userByName('bob'));
  await page.getByRole('button', { name: 'Delete bob' }).click();
  await del.getByRole('button', { name: 'Delete account' }).click();
  await page.getByText('bob deleted.').waitFor();
  await row('bob').waitFor({ state: 'detached' });
  assert.equal(await userByName('bob'), null);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('the admin changes list every change, filter, link and export as CSV', async () => {
  await apiLogin(server.url, 'dave');
  const dave = await userByName('dave');
  await admin.call('PATCH', `/api/admin/users/${dave.id}`, { token_budget: 12345 });
  await admin.call('PUT', '/api/admin/roles/member', { tools: ['calculator', 'current_time', 'list_files'] });
  const page = await newPage(browser);
  await signInAsBoss(page);
  await page.getByRole('link', { name: 'Admin changes' }).click();
  const rows = page.locator('.changes-table tbody tr');
  await rows.first().waitFor();
  const budget = rows.filter({ hasText: 'dave' }).filter({ hasText: 'token_budget' });
  await budget.getByText('token_budget: none → 12345').waitFor();
  await rows.filter({ hasText: 'Changed a role' }).filter({ hasText: 'member' }).first().waitFor();
  const text = await page.locator('.changes-table').textContent();
  assert.doesNotMatch(text, ISO, 'times are shown in the user\'s time zone, not as ISO strings');

  await page.getByLabel('Action').selectOption('user.');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForFunction(() => {
    const trs = [...document.querySelectorAll('.changes-table tbody tr')];
    return trs.length > 0 && trs.every((tr) => tr.dataset.kind.startsWith('user.'));
  });
  const kinds = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.kind));
  assert.ok(kinds.length > 0 && kinds.every((k) => k.startsWith('user.')), kinds.join());

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
  assert.equal(download.suggestedFilename(), 'admin-changes.csv');
  const csv = await readFile(await download.path(), 'utf8');
  assert.match(csv.split('\r\n')[0], /^id,time_utc,actor,actor_id,kind,target/);
  assert.match(csv, /user\.update/);
  assert.doesNotMatch(csv, /role\.update/, 'the export applies the filters');
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('a conversation id in the tool-call audit opens it read-only, and the reading is recorded', async () => {
  const erin = await apiLogin(server.url, 'erin');
  const conv = await erin.call('POST', '/api/conversations', {});
  await erin.call('POST', `/api/conversations/${conv.json.id}/messages`, { content: 'what time is it?' });
  const page = await newPage(browser);
  await signInAsBoss(page);
  await page.getByRole('link', { name: 'Audit log' }).click();
  const link = page.getByRole('link', { name: /^Open conversation/ }).first();
  await link.waitFor();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
  assert.equal(download.suggestedFilename(), 'tool-call-audit.csv');
  assert.match(await readFile(await download.path(), 'utf8'), /current_time/);
  await link.click();
  await page.locator('.admin-conversation h2').waitFor();
  await page.getByText(/Read-only: you cannot post here/).waitFor();
  await page.getByRole('article', { name: 'erin said' }).getByText('what time is it?').waitFor();
  await page.locator('.tool-card').filter({ hasText: 'current_time' }).waitFor();
  assert.equal(await page.getByRole('textbox', { name: 'Message' }).count(), 0, 'no composer');
  assert.equal(await page.getByRole('button', { name: 'Send' }).count(), 0);
  const changes = await admin.call('GET', '/api/admin/changes?kind=conversation.view');
  assert.equal(changes.json.items[0].target_id, conv.json.id);
  assert.equal(changes.json.items[0].actor_name, 'boss');
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('at 360 px the users table, its dialogs, the admin changes and a read conversation fit', async () => {
  await apiLogin(server.url, 'frank');
  const page = await newPage(browser, { viewport: { width: 360, height: 740 } });
  await signInAsBoss(page);
  await page.getByRole('button', { name: 'Delete frank' }).waitFor();
  assert.deepEqual(await layoutProblems(page), [], 'users');
  await page.getByRole('button', { name: 'Reset password of frank' }).click();
  const dialog = page.getByRole('dialog', { name: 'Reset the password of frank?' });
  await dialog.getByText('Choose a password').click();
  await dialog.getByLabel('New password').waitFor();
  assert.deepEqual(await layoutProblems(page), [], 'reset dialog');
  await page.screenshot({ path: artifact('admin-reset-360.png') });
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await page.goto(`${server.url}/admin/changes`);
  await page.locator('.changes-table tbody tr').first().waitFor();
  assert.deepEqual(await layoutProblems(page), [], 'admin changes');
  await page.screenshot({ path: artifact('admin-changes-360.png'), fullPage: true });
  const viewed = await admin.call('GET', '/api/admin/changes?kind=conversation.view');
  const id = viewed.json.items[0]?.target_id;
  if (id) {
    await page.goto(`${server.url}/admin/conversations/${id}`);
    await page.getByText(/Read-only/).waitFor();
    assert.deepEqual(await layoutProblems(page), [], 'read-only conversation');
  }
  await page.context().close();
});

test('a refused message says what it needs and what is left, as the top bar does, in local time', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, timezoneId: 'Asia/Tokyo', locale: 'en-US' });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(String(e)));
  await apiLogin(server.url, 'gina');
  const gina = await userByName('gina');
  await admin.call('PATCH', `/api/admin/users/${gina.id}`, { token_budget: 50 });
  await signInViaUi(page, server.url, 'gina');
  const bar = page.locator('#budget');
  await bar.getByText('50 tokens left').waitFor();
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('hello there');
  await box.press('Enter');
  const banner = page.locator('.banner-area .banner-text');
  await banner.getByText(/needs about/).waitFor();
  const said = await banner.textContent();
  assert.match(said, /This message needs about [\d,]+ tokens, but your token budget has 50 tokens left until /);
  assert.doesNotMatch(said, /used up/);
  assert.doesNotMatch(said, ISO);
  // The reset time is in the user's time zone (Tokyo: a month starts at 9:00 AM there).
  const me = await (await fetch(`${server.url}/api/me`, { headers: { Authorization: `Bearer ${(await apiLogin(server.url, 'gina', undefined, { register: false })).token}` } })).json();
  const local = await page.evaluate((t) => new Date(t).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }), me.budget.resets_at);
  assert.ok(said.includes(local), `${said} should name ${local}`);
  assert.match(local, /9:00\s?AM/);
  await bar.getByText('50 tokens left').waitFor();

  // Nothing left: both say used up.
  await admin.call('PATCH', `/api/admin/users/${gina.id}`, { token_budget: 0 });
  await box.fill('hello again');
  await box.press('Enter');
  await banner.getByText(/used up/).waitFor();
  assert.match(await banner.textContent(), /^Your token budget is used up until .+\.$/);
  await bar.getByText('Budget used up').waitFor();
  assert.deepEqual(page.errors, []);
  await context.close();
});
