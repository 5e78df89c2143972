// Issue 42.8 and the usage part of 42.9: an approval decided elsewhere reaches the open chat
// (the card says who decided, the answer streams in without a reload), a message typed
// meanwhile is refused naming who must decide, and the admin usage view shows money and the
// assistants' lines beside the tokens. The fake model is priced in the catalogue.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, artifact, FakeUpstream } from './harness.mjs';

let upstream;
let server;
let browser;
let adminApi;

before(async () => {
  upstream = await new FakeUpstream().start();
  const providers = [{ name: 'oa', kind: 'openai', base_url: `${upstream.url}/v1`, api_key: 'test-key', max_retries: 0 }];
  const models = [{ name: 'fake', provider: 'oa', upstream_model: 'fake', prices: [{ currency: 'USD', input: '3.00', output: '15.00' }] }];
  [server, browser] = await Promise.all([
    startServer({ env: { AGENTCHAT_PROVIDERS: JSON.stringify(providers), AGENTCHAT_MODELS: JSON.stringify(models) } }),
    launchBrowser(),
  ]);
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'root'); // first user: admin
  await page.context().close();
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

async function pendingId(api, path) {
  for (let i = 0; i < 50; i += 1) {
    const r = await api.call('GET', path);
    const item = r.json?.items?.[0];
    if (item) return item.id;
    await new Promise((res) => { setTimeout(res, 100); });
  }
  throw new Error(`nothing pending at ${path}`);
}

test('an admin approval reaches the open chat: the card says so and the answer streams in', async () => {
  await policy('admin');
  const page = await memberPage('mia');
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '20+22' } }] });
  await send(page, 'add them');
  const card = page.locator('.approval-card');
  await card.getByText('Waiting for an admin').waitFor();
  await page.locator('.turn-note').filter({ hasText: /waits for approval/ }).waitFor();

  // Typed meanwhile: the refusal names who must decide (not "decide it above").
  await send(page, 'are you there?');
  const banner = page.locator('.banner-area .banner');
  await banner.filter({ hasText: 'An admin must decide it first' }).waitFor();
  assert.doesNotMatch(await banner.textContent(), /Decide it above/);
  await page.getByRole('button', { name: 'Dismiss' }).click();

  const id = await pendingId(adminApi, '/api/admin/approvals?state=pending');
  const r = await adminApi.call('POST', `/api/approvals/${id}`, { decision: 'approve' });
  assert.equal(r.status, 200, JSON.stringify(r.json));

  // No reload: the answer comes, and the card says who decided.
  const url = page.url();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'The tool answered' }).filter({ hasText: '42' }).waitFor({ timeout: 15000 });
  await card.locator('.approval-status').filter({ hasText: 'Approved by root' }).waitFor();
  assert.equal(await card.getByText('Waiting for an admin').count(), 0, 'the waiting line is gone');
  assert.equal(await page.locator('.tool-status.waiting').count(), 0, 'no tool card still says it waits');
  assert.equal(await page.locator('.turn-note').filter({ hasText: /waits for approval/ }).count(), 0, 'no stale pause note');
  await page.locator('.turn-note').filter({ hasText: 'once decided, the answer went on below' }).waitFor();
  assert.equal(page.url(), url);
  assert.equal(await page.locator('.msg-assistant .text-seg').filter({ hasText: 'The tool answered' }).count(), 1, 'the answer is shown once');
  await page.screenshot({ path: artifact('approval-followed.png'), fullPage: true });

  // The chat takes messages again.
  await send(page, 'thanks');
  await page.locator('.msg-assistant').last().locator('.text-seg').filter({ hasText: 'Hello from the fake model.' }).waitFor();
  await page.context().close();
});

test('a member approving their own call elsewhere: the open card settles and the answer comes', async () => {
  await policy('user');
  const page = await memberPage('ned');
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] });
  await send(page, 'six times seven');
  const card = page.locator('.approval-card');
  await card.getByRole('button', { name: 'Approve' }).waitFor();
  // Typed meanwhile: the user is told to decide on the card.
  await send(page, 'hello?');
  await page.locator('.banner-area .banner').filter({ hasText: 'Approve or deny it on its card above' }).waitFor();

  const ned = await apiLogin(server.url, 'ned', undefined, { register: false });
  const id = await pendingId(ned, '/api/approvals?state=pending');
  const r = await ned.call('POST', `/api/approvals/${id}`, { decision: 'approve' });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'The tool answered' }).filter({ hasText: '42' }).waitFor({ timeout: 15000 });
  await card.locator('.approval-status').filter({ hasText: 'Approved by ned' }).waitFor();
  assert.equal(await card.getByRole('button', { name: 'Approve' }).count(), 0, 'no stale buttons above the answer');
  assert.equal(await page.locator('.tool-status.waiting').count(), 0);
  await page.context().close();
});

test('a pending card shown after a reload follows the decision too', async () => {
  await policy('admin');
  const page = await memberPage('ola');
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '2*21' } }] });
  await send(page, 'double it');
  await page.locator('.approval-card').getByText('Waiting for an admin').waitFor();
  await page.reload();
  await page.locator('.approval-card').getByText('Waiting for an admin').waitFor();
  const id = await pendingId(adminApi, '/api/admin/approvals?state=pending');
  assert.equal((await adminApi.call('POST', `/api/approvals/${id}`, { decision: 'approve' })).status, 200);
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'The tool answered' }).filter({ hasText: '42' }).waitFor({ timeout: 15000 });
  assert.equal(await page.locator('.approval-card:not(.is-decided)').count(), 0);
  await page.context().close();
});

test('a turn that asks again after a decision shows the new card and follows that one too', async () => {
  await policy('admin');
  const page = await memberPage('pia');
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '1+1' } }] });
  upstream.push({ toolCalls: [{ name: 'calculator', arguments: { expression: '40+2' } }] });
  await send(page, 'two sums');
  await page.locator('.approval-card').first().getByText('Waiting for an admin').waitFor();
  let id = await pendingId(adminApi, '/api/admin/approvals?state=pending');
  assert.equal((await adminApi.call('POST', `/api/approvals/${id}`, { decision: 'approve' })).status, 200);
  const second = page.locator('.approval-card').filter({ hasText: '40+2' });
  await second.getByText('Waiting for an admin').waitFor({ timeout: 15000 });
  id = await pendingId(adminApi, '/api/admin/approvals?state=pending');
  assert.equal((await adminApi.call('POST', `/api/approvals/${id}`, { decision: 'approve' })).status, 200);
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'The tool answered' }).filter({ hasText: '42' }).waitFor({ timeout: 15000 });
  await second.locator('.approval-status').filter({ hasText: 'Approved by root' }).waitFor();
  assert.equal(await page.locator('.approval-card:not(.is-decided)').count(), 0);
  await page.context().close();
});

test('the usage view shows what the period cost and one line per assistant', async () => {
  await policy('none');
  const made = await adminApi.call('POST', '/api/admin/assistants', { name: 'Trip planner', instructions: 'Plan trips.' });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  const conv = await adminApi.call('POST', '/api/conversations', { assistant_id: made.json.id });
  assert.equal(conv.status, 201, JSON.stringify(conv.json));
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'root');
  await page.goto(`${server.url}/c/${conv.json.id}`);
  await send(page, 'plan a weekend');
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'Hello from the fake model.' }).waitFor();

  await page.goto(`${server.url}/admin/usage`);
  const cost = page.locator('.stat').filter({ hasText: 'Cost (USD)' });
  await cost.waitFor();
  const spent = await cost.locator('.stat-value').textContent();
  assert.match(spent, /^\d+\.\d+ USD$/);
  assert.ok(parseFloat(spent) > 0, spent);
  const perUser = page.getByRole('table', { name: 'Cost per user' });
  assert.match(await perUser.getByRole('row').filter({ hasText: 'root' }).textContent(), /USD/);
  const assistants = page.getByRole('table', { name: 'Usage per assistant' });
  const line = assistants.getByRole('row').filter({ hasText: 'Trip planner' });
  await line.waitFor();
  assert.match(await line.textContent(), /USD/);
  await page.screenshot({ path: artifact('usage-money.png'), fullPage: true });
  await page.context().close();
});
