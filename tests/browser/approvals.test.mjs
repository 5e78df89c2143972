// Approval by policy in the browser: the approval card in the chat (arguments as they will
// run, Approve / Deny with a note), a pending card shown again after a reload, the approvals
// queue and the approval column of the roles matrix in the admin console.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, artifact, FakeUpstream, unnamedControls,
} from './harness.mjs';

let upstream;
let server;
let browser;
let adminPage;
let adminApi;

before(async () => {
  upstream = await new FakeUpstream().start();
  [server, browser] = await Promise.all([startServer({ upstream }), launchBrowser()]);
  adminPage = await newPage(browser);
  await registerViaUi(adminPage, server.url, 'root'); // first user: admin
  adminApi = await apiLogin(server.url, 'root', undefined, { register: false });
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

async function policy(approver) {
  const r = await adminApi.call('PUT', '/api/admin/roles/member', { tools: ['calculator'], approvals: { calculator: approver } });
  assert.equal(r.status, 200, JSON.stringify(r.json));
}

test('the chat shows an approval card with the arguments, again after a reload, and approving goes on', async () => {
  await policy('user');
  const page = await memberPage('ada');
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] });
  await send(page, 'what is six times seven?');
  const card = page.locator('.approval-card');
  await card.waitFor();
  assert.match(await card.textContent(), /calculator/);
  assert.match(await card.locator('.approval-args').textContent(), /"expression": "6\*7"/);
  await page.locator('.turn-note').filter({ hasText: /waits for approval/ }).waitFor();
  await page.locator('.tool-status.waiting').waitFor();
  const before = upstream.requests.length;

  await page.reload();
  const again = page.locator('.approval-card');
  await again.waitFor();
  assert.match(await again.locator('.approval-args').textContent(), /6\*7/);
  assert.deepEqual(await unnamedControls(page), []);
  await page.screenshot({ path: artifact('chat-approval-card.png'), fullPage: true });
  assert.equal(upstream.requests.length, before, 'nothing ran while waiting');

  await again.getByRole('button', { name: 'Approve' }).click();
  await page.locator('.msg-assistant').last().locator('.text-seg').filter({ hasText: 'The tool answered' }).waitFor();
  assert.match(await page.locator('.msg-assistant').last().textContent(), /42/);
  await again.locator('.approval-status').filter({ hasText: 'Approved' }).waitFor();
  // The chat takes messages again.
  await send(page, 'thanks');
  await page.locator('.msg-assistant').last().locator('.text-seg').filter({ hasText: 'Hello from the fake model.' }).waitFor();
  await page.context().close();
});

test('denying from the chat card tells the model why', async () => {
  await policy('user');
  const page = await memberPage('bea');
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '1/0' } }] });
  await send(page, 'divide by zero');
  const card = page.locator('.approval-card');
  await card.waitFor();
  await card.getByRole('textbox', { name: 'Note for calculator' }).fill('not today');
  await card.getByRole('button', { name: 'Deny' }).click();
  const answer = page.locator('.msg-assistant').last().locator('.text-seg').filter({ hasText: 'The tool answered' });
  // The answer streams word by word: read it once its last words (the note) are in.
  await answer.filter({ hasText: 'not today' }).waitFor();
  assert.match(await answer.textContent(), /bea denied/);
  assert.match(await answer.textContent(), /not today/);
  await page.context().close();
});

test('an admin approval waits in the console queue; the member sees who must decide', async () => {
  await policy('admin');
  const page = await memberPage('cyd');
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '20+22' } }] });
  await send(page, 'add them');
  const card = page.locator('.approval-card');
  await card.waitFor();
  await card.getByText('Waiting for an admin').waitFor();
  assert.equal(await card.getByRole('button', { name: 'Approve' }).count(), 0);

  await adminPage.goto(`${server.url}/admin/approvals`);
  await adminPage.getByRole('heading', { name: 'Approvals' }).waitFor();
  const row = adminPage.locator('.approvals-table tbody tr').filter({ hasText: 'cyd' });
  await row.waitFor();
  assert.match(await row.textContent(), /20\+22/);
  assert.deepEqual(await unnamedControls(adminPage), []);
  await adminPage.screenshot({ path: artifact('admin-approvals.png'), fullPage: true });
  await row.getByRole('button', { name: 'Approve' }).click();
  await adminPage.locator('.approvals-table').filter({ hasText: 'Nothing here' }).or(adminPage.getByText('Nothing here.')).first().waitFor();

  // The turn went on in the background: the member sees the answer after a reload.
  for (let i = 0; i < 50; i += 1) {
    await page.reload();
    const done = await page.locator('.text-seg').filter({ hasText: 'The tool answered' }).count();
    if (done) break;
    await page.waitForTimeout(200);
  }
  await page.locator('.text-seg').filter({ hasText: '42' }).first().waitFor();
  assert.equal(await page.locator('.approval-card').count(), 0, 'no pending card once decided');

  // The roles matrix shows the policy; the audit log filters by decision.
  await adminPage.goto(`${server.url}/admin/roles`);
  const select = adminPage.getByRole('combobox', { name: 'Approval of calculator for member' });
  assert.equal(await select.inputValue(), 'admin');
  await adminPage.goto(`${server.url}/admin/audit`);
  await adminPage.locator('#audit-decision').selectOption('approved');
  await adminPage.getByRole('button', { name: 'Apply filters' }).click();
  await adminPage.locator('.audit-table .pill').filter({ hasText: 'approved by root' }).waitFor();
  await page.context().close();
});

test('the roles matrix sets who approves a tool', async () => {
  await policy('user');
  await adminPage.goto(`${server.url}/admin/roles`);
  const select = adminPage.getByRole('combobox', { name: 'Approval of calculator for member' });
  assert.equal(await select.inputValue(), 'user');
  await select.selectOption('');
  await adminPage.getByRole('button', { name: 'Save changes' }).click();
  await adminPage.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
  const roles = await adminApi.call('GET', '/api/admin/roles');
  const member = roles.json.items.find((r) => r.name === 'member');
  assert.deepEqual(member.approvals, {});
  await adminPage.reload();
  await adminPage.getByRole('combobox', { name: 'Approval of calculator for member' }).selectOption('admin');
  await adminPage.getByRole('button', { name: 'Save changes' }).click();
  await adminPage.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
  const after = await adminApi.call('GET', '/api/admin/roles');
  assert.deepEqual(after.json.items.find((r) => r.name === 'member').approvals, { calculator: 'admin' });
});
