// Forms that say their rules up front and refuse what cannot work: the password rules on
// registration, name patterns Chromium can compile (no console errors), and a custom tool
// whose URL uses a placeholder that is not one of its parameters.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, apiLogin } from './harness.mjs';

let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));

test('registration shows the password rules before the first attempt', async () => {
  const page = await newPage(browser);
  await page.goto(server.url);
  await page.getByRole('button', { name: 'Register' }).click();
  await page.getByText(/At least 8 characters/).waitFor();
  const described = await page.getByLabel('Password').getAttribute('aria-describedby');
  assert.match(described, /rules/);
  // Signing in needs no rules.
  await page.getByRole('button', { name: 'Sign in' }).last().click();
  assert.equal(await page.getByText(/At least 8 characters/).isVisible(), false);
  await page.context().close();
});

test('name fields validate with patterns Chromium compiles: no console errors', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'forms-admin');
  const checks = [
    ['/admin/roles', 'New role name', 'Bad Name!', 'good-role_1'],
    ['/admin/tools', 'Name', 'bad name!', 'good-tool_1'],
    ['/admin/mcp', 'Name', 'Bad_Server', 'good-server'],
  ];
  for (const [path, label, bad, good] of checks) {
    await page.goto(`${server.url}${path}`);
    const input = page.getByLabel(label, { exact: true });
    await input.fill(bad);
    assert.equal(await input.evaluate((el) => el.validity.patternMismatch), true, `${path}: ${bad} should not match`);
    await input.fill(good);
    assert.equal(await input.evaluate((el) => el.validity.patternMismatch), false, `${path}: ${good} should match`);
  }
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('a custom tool whose URL names an unknown placeholder is refused with the reason', async () => {
  const page = await newPage(browser);
  await page.goto(server.url);
  await page.getByLabel('Username').fill('forms-admin');
  await page.getByLabel('Password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  await page.goto(`${server.url}/admin/tools`);
  await page.getByLabel('Name', { exact: true }).fill('weather');
  await page.getByLabel('Description').fill('Weather for a city');
  await page.getByLabel('URL template').fill('https://api.example.com/weather/{town}');
  await page.getByLabel('Parameters (JSON Schema)').fill(JSON.stringify({ type: 'object', properties: { city: { type: 'string' } } }));
  await page.getByRole('button', { name: 'Add tool' }).click();
  await page.getByRole('alert').filter({ hasText: /\{town\}.*not a parameter/ }).waitFor();
  const { call } = await apiLogin(server.url, 'forms-admin', undefined, { register: false });
  const tools = await call('GET', '/api/admin/tools/custom');
  assert.deepEqual(tools.json.items, []);
  await page.context().close();
});
