// The model catalogue in the browser: two OpenAI-compatible providers (two fake upstreams),
// two priced models and an unpriced one. The picker names each model's provider and price,
// a picked model answers from its own provider under its upstream id, the admin "Models" tab
// lists providers and models with the unpriced warning, the roles page takes a model away
// from members, a failing provider's model is answered by its fallback while the Models tab
// shows its open circuit, and at 360 px nothing scrolls sideways.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, artifact, layoutProblems, FakeUpstream,
} from './harness.mjs';

const PHONE = { width: 360, height: 740 };
const KEY = 'sk-browser-canary-0123456789';
let main; // provider `oa`: gpt-x and gpt-mini, with a key
let lab; // provider `lab`: llama-local, unpriced, no key
let server;
let browser;
let adminPage;

before(async () => {
  [main, lab] = await Promise.all([new FakeUpstream().start(), new FakeUpstream().start()]);
  main.respond = () => ({ text: 'Hello from the main provider.' });
  lab.respond = () => ({ text: 'Hello from the lab provider.' });
  const providers = [
    { name: 'oa', kind: 'openai', base_url: `${main.url}/v1`, api_key: KEY, max_retries: 0 },
    { name: 'lab', kind: 'openai', base_url: `${lab.url}/v1`, max_retries: 0 },
  ];
  const models = [
    { name: 'gpt-x', provider: 'oa', upstream_model: 'gpt-x-2025-01', context_window: 128000, max_output: 4096, prices: [{ currency: 'USD', input: '3.00', output: '15.00' }], fallbacks: ['llama-local'] },
    { name: 'gpt-mini', provider: 'oa', upstream_model: 'gpt-mini-2025-01', prices: [{ currency: 'USD', input: '0.15', output: '0.60' }] },
    { name: 'llama-local', provider: 'lab', upstream_model: 'llama-3.1-8b-instruct' },
  ];
  [server, browser] = await Promise.all([
    startServer({ env: { AGENTCHAT_PROVIDERS: JSON.stringify(providers), AGENTCHAT_MODELS: JSON.stringify(models), AGENTCHAT_LLM_BREAKER_FAILURES: '1', AGENTCHAT_LLM_BREAKER_MIN_USERS: '1' } }),
    launchBrowser(),
  ]);
  adminPage = await newPage(browser);
  await registerViaUi(adminPage, server.url, 'root'); // the first account: an admin
});
after(async () => {
  await browser?.close();
  await server?.stop();
  await Promise.all([main?.stop(), lab?.stop()]);
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));

async function memberPage(name, viewport) {
  await apiLogin(server.url, name).catch(() => null); // registers the member (once)
  const page = await newPage(browser, viewport ? { viewport } : undefined);
  await signInViaUi(page, server.url, name);
  return page;
}

const optionTexts = (picker) => picker.locator('option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));

test('the picker names each model with its provider and price; the picked one answers', async () => {
  const page = await memberPage('mia');
  const picker = page.getByRole('combobox', { name: 'Model' });
  await picker.waitFor();
  assert.deepEqual(await optionTexts(picker), [
    ['gpt-x', 'gpt-x · oa · $3 / $15 per 1M'],
    ['gpt-mini', 'gpt-mini · oa · $0.15 / $0.6 per 1M'],
    ['llama-local', 'llama-local · lab · unpriced'],
  ]);
  await picker.selectOption('llama-local');
  await page.getByRole('textbox', { name: 'Message' }).fill('which model are you?');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'Hello from the lab provider.' }).waitFor();
  assert.deepEqual(lab.requests.map((r) => r.model), ['llama-3.1-8b-instruct']);
  assert.equal(main.requests.length, 0, 'the other provider got no turn');
  const { call } = await apiLogin(server.url, 'mia', undefined, { register: false });
  const convs = await call('GET', '/api/conversations');
  assert.equal(convs.json.items[0].model, 'llama-local');
  // The chat's settings dialog names them the same way.
  await page.getByRole('button', { name: /^Chat settings: model llama-local/ }).click();
  const inDialog = page.getByRole('dialog', { name: 'Chat settings' }).getByLabel('Model');
  assert.equal(await inDialog.locator('option:checked').textContent(), 'llama-local · lab · unpriced');
  await page.keyboard.press('Escape');
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('the admin Models tab lists providers and models, and warns of the unpriced one', async () => {
  const page = adminPage;
  await page.goto(`${server.url}/admin/models`);
  await page.getByRole('link', { name: 'Models' }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'Models' }).getAttribute('aria-current'), 'page');
  const providers = page.getByRole('table', { name: 'Providers' });
  await providers.waitFor();
  const oa = providers.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'oa', exact: true }) });
  await oa.getByText('key set').waitFor();
  await oa.getByText(`${main.url}/v1`).waitFor();
  const labRow = providers.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'lab', exact: true }) });
  await labRow.getByText('no key').waitFor();
  assert.equal(await page.getByText(KEY).count(), 0, 'the key is never shown');

  const models = page.getByRole('table', { name: 'Models' });
  const row = (name) => models.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
  await row('gpt-x').getByText('$3 / $15 per 1M').waitFor();
  await row('gpt-x').getByText('gpt-x-2025-01').waitFor();
  await row('gpt-x').getByText('128,000').waitFor();
  await row('gpt-x').getByText('llama-local').waitFor(); // its fallback
  await row('gpt-mini').getByText('$0.15 / $0.6 per 1M').waitFor();
  await row('llama-local').getByText('unpriced — cannot be used under a money budget').waitFor();
  assert.equal(await models.getByText(/cannot be used under a money budget/).count(), 1, 'only the unpriced model warns');
  assert.deepEqual(await row('llama-local').locator('.pill').allTextContents(), ['admin', 'member']);
  await page.screenshot({ path: artifact('admin-models.png'), fullPage: true });
  assert.deepEqual(consoleErrors(page), []);
});

test('the roles page takes a model away from members; their picker no longer offers it', async () => {
  const page = adminPage;
  await page.goto(`${server.url}/admin/roles`);
  const all = page.getByRole('checkbox', { name: 'All models (*) for member', exact: true });
  await all.waitFor();
  assert.equal(await all.isChecked(), true);
  const llama = page.getByRole('checkbox', { name: 'Allow model llama-local for member', exact: true });
  assert.equal(await llama.isDisabled(), true, 'one model cannot be unticked while all are allowed');
  await all.uncheck();
  assert.equal(await llama.isChecked(), false);
  await page.getByRole('checkbox', { name: 'Allow model gpt-x for member', exact: true }).check();
  await page.getByRole('checkbox', { name: 'Allow model gpt-mini for member', exact: true }).check();
  await page.getByRole('table', { name: 'Tools and models allowed per role' }).screenshot({ path: artifact('admin-roles-models.png') });
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
  const { call } = await apiLogin(server.url, 'root', undefined, { register: false });
  const roles = await call('GET', '/api/admin/roles');
  const member = roles.json.items.find((r) => r.name === 'member');
  assert.deepEqual([...member.models].sort(), ['gpt-mini', 'gpt-x']);
  // The admin's own role still has all of them.
  assert.deepEqual(roles.json.items.find((r) => r.name === 'admin').models, ['*']);

  // The Models tab says who may use what now.
  await page.getByRole('link', { name: 'Models' }).click();
  const models = page.getByRole('table', { name: 'Models' });
  const row = (name) => models.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
  await row('llama-local').waitFor();
  assert.deepEqual(await row('llama-local').locator('.pill').allTextContents(), ['admin']);
  assert.deepEqual(await row('gpt-x').locator('.pill').allTextContents(), ['admin', 'member']);

  const memberView = await memberPage('mia');
  const picker = memberView.getByRole('combobox', { name: 'Model' });
  await picker.waitFor();
  assert.deepEqual((await optionTexts(picker)).map(([v]) => v), ['gpt-x', 'gpt-mini']);
  await picker.selectOption('gpt-mini');
  await memberView.getByRole('textbox', { name: 'Message' }).fill('hello');
  await memberView.getByRole('button', { name: 'Send' }).click();
  await memberView.locator('.msg-assistant .text-seg').filter({ hasText: 'Hello from the main provider.' }).waitFor();
  assert.deepEqual(main.requests.map((r) => r.model), ['gpt-mini-2025-01']);
  await memberView.context().close();
});

test('a money budget set on the roles page shows in the top bar and refuses a message it cannot pay for', async () => {
  const page = adminPage;
  await page.goto(`${server.url}/admin/roles`);
  const amount = page.getByRole('textbox', { name: 'Money budget for member', exact: true });
  await amount.waitFor();
  assert.deepEqual(await page.getByRole('combobox', { name: 'Budget currency for member' }).locator('option').allTextContents(), ['USD']);
  await amount.fill('0.50');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
  const { call } = await apiLogin(server.url, 'root', undefined, { register: false });
  const member = (await call('GET', '/api/admin/roles')).json.items.find((r) => r.name === 'member');
  assert.equal(member.budget_amount, '0.5');
  assert.equal(member.budget_currency, 'USD');

  const memberView = await memberPage('mia');
  const budget = memberView.locator('#budget .budget-text');
  await budget.filter({ hasText: '$0.50 left' }).waitFor();
  assert.match(await memberView.locator('#budget').getAttribute('title'), /^\$0\.50 of \$0\.50 left this month\./);
  const picker = memberView.getByRole('combobox', { name: 'Model' });
  await picker.selectOption('gpt-mini');
  await memberView.getByRole('textbox', { name: 'Message' }).fill('hello again');
  await memberView.getByRole('button', { name: 'Send' }).click();
  await memberView.locator('.msg-assistant .text-seg').filter({ hasText: 'Hello from the main provider.' }).last().waitFor();
  // The reply cost a fraction of a cent at gpt-mini's price, charged exactly.
  const mia = await apiLogin(server.url, 'mia', undefined, { register: false });
  // The text shows before the turn is stored, and the chat's title is one more short call
  // after it: wait (bounded) until nothing is held any more.
  let money;
  for (let i = 0; i < 50; i += 1) {
    money = (await mia.call('GET', '/api/me')).json.budget.money;
    if (money.reserved === '0') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(money.currency, 'USD');
  assert.ok(Number(money.used) > 0 && Number(money.used) < 0.001, `spent ${money.used}`);
  assert.equal(money.reserved, '0');

  // A budget too small for any reply: the send is refused with the money worded.
  await page.reload();
  await amount.waitFor();
  await amount.fill('0.000001');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
  await memberView.getByRole('textbox', { name: 'Message' }).fill('one more');
  await memberView.getByRole('button', { name: 'Send' }).click();
  await memberView.getByText(/^Your USD budget is used up until /).first().waitFor();
  await budget.filter({ hasText: 'Budget used up' }).waitFor();
  await memberView.screenshot({ path: artifact('money-budget-refused.png') });
  assert.deepEqual(consoleErrors(memberView), []);
  await memberView.context().close();

  // Cleared again for the next test: the field empty means no money budget.
  await page.reload();
  await amount.waitFor();
  await amount.fill('');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
  const cleared = (await call('GET', '/api/admin/roles')).json.items.find((r) => r.name === 'member');
  assert.equal(cleared.budget_amount, null);
});

test('at 360 px the Models tab and the picker do not scroll sideways', async () => {
  const page = await newPage(browser, { viewport: PHONE });
  await signInViaUi(page, server.url, 'root');
  // The admin may use all three: the picker holds the longest labels.
  const picker = page.getByRole('combobox', { name: 'Model' });
  await picker.waitFor();
  assert.equal(await picker.locator('option').count(), 3);
  const width = () => page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(await width() <= 360, `the chat scrolls sideways: ${await width()}px`);
  assert.deepEqual(await layoutProblems(page), [], 'chat with the picker at 360 px');
  await page.screenshot({ path: artifact('models-picker-360.png') });

  await page.goto(`${server.url}/admin/models`);
  await page.getByRole('table', { name: 'Models' }).waitFor();
  await page.getByText('unpriced — cannot be used under a money budget').waitFor();
  assert.ok(await width() <= 360, `the Models tab scrolls sideways: ${await width()}px`);
  assert.deepEqual(await layoutProblems(page), [], 'Models tab at 360 px');
  await page.screenshot({ path: artifact('admin-models-360.png') });
  await page.getByRole('table', { name: 'Models' }).screenshot({ path: artifact('admin-models-360-table.png') });

  await page.goto(`${server.url}/admin/roles`);
  await page.getByRole('checkbox', { name: 'All models (*) for admin', exact: true }).waitFor();
  assert.ok(await width() <= 360, `the roles page scrolls sideways: ${await width()}px`);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

const EXTRA_KEY = 'sk-extra-canary-9876543210';
const tableRow = (page, table, name) => page.getByRole('table', { name: table }).getByRole('row')
  .filter({ has: page.getByRole('rowheader', { name, exact: true }) });

test('the admin adds a provider and a model at run time, chats with it and edits its price; at 360 px the forms fit', async () => {
  const page = adminPage;
  await page.goto(`${server.url}/admin/models`);
  await page.getByRole('table', { name: 'Providers' }).waitFor();

  // A provider on the lab fake, with a key of its own.
  await page.getByRole('button', { name: 'Add provider' }).click();
  const pform = page.getByRole('form', { name: 'Add a provider' });
  await pform.getByLabel('Name', { exact: true }).fill('extra');
  assert.equal(await pform.getByLabel('Kind', { exact: true }).inputValue(), 'openai');
  await pform.getByLabel('Base URL', { exact: true }).fill(`${lab.url}/v1`);
  const key = pform.getByLabel('API key', { exact: true });
  assert.equal(await key.getAttribute('type'), 'password');
  assert.equal(await key.getAttribute('autocomplete'), 'off');
  await key.fill(EXTRA_KEY);
  await pform.getByLabel('Max retries', { exact: true }).fill('0');
  await pform.getByRole('button', { name: 'Create provider' }).click();
  const extra = tableRow(page, 'Providers', 'extra');
  await extra.getByText('key set').waitFor();
  await extra.getByText(`${lab.url}/v1`).waitFor();
  assert.equal(await pform.count(), 0, 'the form closes once saved');
  assert.equal((await page.content()).includes(EXTRA_KEY), false, 'the key is never shown back');

  // A model on it, priced 1 / 2 per million tokens.
  await page.getByRole('button', { name: 'Add model' }).click();
  const mform = page.getByRole('form', { name: 'Add a model' });
  await mform.getByLabel('Name', { exact: true }).fill('lab-2');
  await mform.getByLabel('Provider', { exact: true }).selectOption('extra');
  await mform.getByLabel('Upstream id', { exact: true }).fill('lab-model-2');
  await mform.getByLabel('Input price', { exact: true }).fill('1');
  await mform.getByLabel('Output price', { exact: true }).fill('2');
  await mform.getByRole('button', { name: 'Create model' }).click();
  const lab2 = tableRow(page, 'Models', 'lab-2');
  await lab2.getByText('$1 / $2 per 1M').waitFor();
  await lab2.getByText('lab-model-2').waitFor();
  assert.equal(await tableRow(page, 'Models', 'lab-2').getByRole('cell').filter({ hasText: /^extra$/ }).count(), 1);
  const { call } = await apiLogin(server.url, 'root', undefined, { register: false });
  const cat = (await call('GET', '/api/admin/models')).json;
  const saved = cat.models.find((m) => m.name === 'lab-2');
  assert.deepEqual([saved.provider, saved.upstream_model, saved.source], ['extra', 'lab-model-2', 'api']);
  assert.deepEqual([saved.price_in_force.input, saved.price_in_force.output], ['1', '2']);
  assert.equal(JSON.stringify(cat).includes(EXTRA_KEY), false);
  await page.screenshot({ path: artifact('admin-models-added.png'), fullPage: true });

  // The admin's role allows every model: the picker offers it, and the lab fake answers it.
  await page.goto(server.url);
  const picker = page.getByRole('combobox', { name: 'Model' });
  await picker.waitFor();
  assert.deepEqual((await optionTexts(picker)).find(([v]) => v === 'lab-2'), ['lab-2', 'lab-2 · extra · $1 / $2 per 1M']);
  await picker.selectOption('lab-2');
  lab.push({ text: 'Hello from lab-2.' });
  await page.getByRole('textbox', { name: 'Message' }).fill('are you the new one?');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: 'Hello from lab-2.' }).waitFor();
  assert.equal(lab.requests.at(-1).model, 'lab-model-2');

  // Edit: the form is filled in; the output price goes up to 3.
  await page.goto(`${server.url}/admin/models`);
  await page.getByRole('button', { name: 'Edit model lab-2' }).click();
  const eform = page.getByRole('form', { name: 'Edit model lab-2' });
  assert.equal(await eform.getByLabel('Name', { exact: true }).getAttribute('readonly'), '');
  assert.equal(await eform.getByLabel('Provider', { exact: true }).inputValue(), 'extra');
  assert.equal(await eform.getByLabel('Upstream id', { exact: true }).inputValue(), 'lab-model-2');
  assert.equal(await eform.getByLabel('Input price', { exact: true }).inputValue(), '1');
  assert.equal(await eform.getByLabel('Output price', { exact: true }).inputValue(), '2');
  await eform.getByLabel('Output price', { exact: true }).fill('3');
  await eform.getByRole('button', { name: 'Save model' }).click();
  await tableRow(page, 'Models', 'lab-2').getByText('$1 / $3 per 1M').waitFor();

  // Editing the provider keeps its key unless a new one is typed; moving it to another origin
  // without the key is refused, with the server's reason next to the form.
  await page.getByRole('button', { name: 'Edit provider extra' }).click();
  const eprov = page.getByRole('form', { name: 'Edit provider extra' });
  const ekey = eprov.getByLabel('API key', { exact: true });
  assert.equal(await ekey.inputValue(), '');
  assert.match(await ekey.getAttribute('placeholder'), /kept unless a new one is typed/i);
  assert.equal(await eprov.getByRole('checkbox', { name: 'Remove the stored key' }).isChecked(), false);
  await eprov.getByLabel('Base URL', { exact: true }).fill('http://127.0.0.1:9/v1');
  await eprov.getByRole('button', { name: 'Save provider' }).click();
  await eprov.getByRole('alert').filter({ hasText: /another endpoint.*api_key/ }).waitFor();
  await eprov.getByLabel('Base URL', { exact: true }).fill(`${lab.url}/v1`);
  await eprov.getByLabel('Max retries', { exact: true }).fill('1');
  await eprov.getByRole('button', { name: 'Save provider' }).click();
  await eprov.waitFor({ state: 'detached' });
  await tableRow(page, 'Providers', 'extra').getByText('key set').waitFor();
  const extraNow = (await call('GET', '/api/admin/models')).json.providers.find((p) => p.name === 'extra');
  assert.deepEqual([extraNow.api_key_set, extraNow.max_retries], [true, 1]);
  assert.deepEqual(consoleErrors(page), []);

  // At 360 px: the rows with their buttons and the add-model form fit without scrolling sideways.
  const phone = await newPage(browser, { viewport: PHONE });
  await signInViaUi(phone, server.url, 'root');
  await phone.goto(`${server.url}/admin/models`);
  await phone.getByRole('button', { name: 'Remove model lab-2' }).waitFor();
  await phone.getByRole('button', { name: 'Add model' }).click();
  const pf = phone.getByRole('form', { name: 'Add a model' });
  await pf.getByLabel('Cache write price', { exact: true }).waitFor();
  const width = () => phone.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(await width() <= 360, `the Models tab scrolls sideways: ${await width()}px`);
  assert.deepEqual(await layoutProblems(phone), [], 'the add-model form at 360 px');
  await pf.screenshot({ path: artifact('admin-model-form-360.png') });
  await phone.screenshot({ path: artifact('admin-models-forms-360.png'), fullPage: true });
  await phone.getByRole('button', { name: 'Edit provider extra' }).click();
  await phone.getByRole('form', { name: 'Edit provider extra' }).waitFor();
  assert.ok(await width() <= 360, `the provider form scrolls sideways: ${await width()}px`);
  assert.deepEqual(await layoutProblems(phone), [], 'the edit-provider form at 360 px');
  await phone.getByRole('form', { name: 'Edit provider extra' }).screenshot({ path: artifact('admin-provider-form-360.png') });
  assert.deepEqual(consoleErrors(phone), []);
  await phone.context().close();
});

test('a provider in use cannot be removed (the server says why); the model then the provider are removed; configured rows are read-only', async () => {
  const page = adminPage;
  await page.goto(`${server.url}/admin/models`);
  await page.getByRole('table', { name: 'Models' }).waitFor();
  // The configuration's entries have no Edit or Remove.
  for (const [table, name] of [['Providers', 'oa'], ['Providers', 'lab'], ['Models', 'gpt-x'], ['Models', 'llama-local']]) {
    const row = tableRow(page, table, name);
    await row.getByText('from configuration').waitFor();
    assert.equal(await row.getByRole('button').count(), 0, `${name} has no buttons`);
  }

  await page.getByRole('button', { name: 'Remove provider extra' }).click();
  let dialog = page.getByRole('dialog', { name: 'Remove provider extra?' });
  await dialog.getByRole('button', { name: 'Remove provider' }).click();
  await dialog.getByRole('alert').filter({ hasText: /models use `extra`: lab-2/ }).waitFor();
  await dialog.screenshot({ path: artifact('admin-provider-in-use.png') });
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  await tableRow(page, 'Providers', 'extra').waitFor();

  await page.getByRole('button', { name: 'Remove model lab-2' }).click();
  dialog = page.getByRole('dialog', { name: 'Remove model lab-2?' });
  await dialog.getByRole('button', { name: 'Remove model' }).click();
  await tableRow(page, 'Models', 'lab-2').waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Remove provider extra' }).click();
  dialog = page.getByRole('dialog', { name: 'Remove provider extra?' });
  await dialog.getByRole('button', { name: 'Remove provider' }).click();
  await tableRow(page, 'Providers', 'extra').waitFor({ state: 'detached' });
  assert.equal(await page.getByRole('button', { name: /^(Edit|Remove) / }).count(), 0, 'only configured rows are left');

  const { call } = await apiLogin(server.url, 'root', undefined, { register: false });
  const cat = (await call('GET', '/api/admin/models')).json;
  assert.deepEqual(cat.providers.map((p) => p.name), ['oa', 'lab']);
  assert.deepEqual(cat.models.map((m) => m.name), ['gpt-x', 'gpt-mini', 'llama-local']);
  assert.deepEqual(consoleErrors(page), []);
});

test('a failing provider: its fallback answers, and the Models tab shows its open circuit, also at 360 px', async () => {
  main.respond = () => ({ status: 503, message: 'overloaded' });
  try {
    // Members lost llama-local above; the admin may use every model, fallbacks included.
    const page = await newPage(browser, { viewport: PHONE });
    await signInViaUi(page, server.url, 'root');
    const picker = page.getByRole('combobox', { name: 'Model' });
    await picker.waitFor();
    await picker.selectOption('gpt-x');
    const calls = lab.requests.length;
    await page.getByRole('textbox', { name: 'Message' }).fill('anyone there?');
    await page.getByRole('button', { name: 'Send' }).click();
    // gpt-x failed before its first token: its fallback answered in the same turn.
    await page.locator('.msg-assistant .text-seg').filter({ hasText: 'Hello from the lab provider.' }).waitFor();
    assert.deepEqual(lab.requests.slice(calls).map((r) => r.model), ['llama-3.1-8b-instruct']);

    // One failure opens the circuit on this server (AGENTCHAT_LLM_BREAKER_FAILURES=1).
    await page.goto(`${server.url}/admin/models`);
    const providers = page.getByRole('table', { name: 'Providers' });
    await providers.waitFor();
    const oa = providers.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'oa', exact: true }) });
    await oa.locator('.breaker-open').filter({ hasText: 'open' }).waitFor();
    await oa.getByText(/upstream_error/).waitFor();
    const labRow = providers.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'lab', exact: true }) });
    await labRow.locator('.breaker-closed').waitFor();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 360, `the Models tab scrolls sideways: ${width}px`);
    assert.deepEqual(await layoutProblems(page), [], 'Models tab with an open circuit at 360 px');
    await page.screenshot({ path: artifact('admin-models-breaker-360.png'), fullPage: true });
    assert.deepEqual(consoleErrors(page), []);
    await page.context().close();
  } finally {
    main.respond = () => ({ text: 'Hello from the main provider.' });
  }
});
