// Every view at 360 x 740 (a small phone): nothing sticks out of the viewport or is cut off,
// no controls overlap, every admin section is one choice away in one menu row, and the charts stay readable.
// The checks are in harness.mjs (layoutProblems, unreachableTabs); screenshots go to
// tests/artifacts for a person to look at, but the assertions decide.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, artifact, layoutProblems, unreachableTabs } from './harness.mjs';

const PHONE = { width: 360, height: 740 };
let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Console errors other than the expected 401 of the session probe before sign-in. */
const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));

async function assertSound(page, what) {
  await page.screenshot({ path: artifact(`phone-${what}.png`), fullPage: true });
  assert.deepEqual(await layoutProblems(page), [], `layout problems on ${what}`);
  assert.deepEqual(consoleErrors(page), [], `console errors on ${what}`);
}

test('sign-in and registration fit a phone', async () => {
  const page = await newPage(browser, { viewport: PHONE });
  await page.goto(server.url);
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  await assertSound(page, 'sign-in');
  await page.getByRole('button', { name: 'Register' }).click();
  await assertSound(page, 'register');
  await page.context().close();
});

test('chat, sidebar, files and the account dialog fit a phone; sign out is in the account dialog', async () => {
  const page = await newPage(browser, { viewport: PHONE });
  await registerViaUi(page, server.url, 'phoebe'); // the first account: an admin
  await page.getByRole('textbox', { name: 'Message' }).fill('what time is it');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: /It is \d\d:\d\d on / }).first().waitFor();
  await assertSound(page, 'chat');
  // The top bar has no room for a second sign-out button: it must not be on screen at all.
  assert.equal(await page.locator('.topbar').getByRole('button', { name: 'Sign out' }).isVisible(), false);

  await page.getByRole('button', { name: 'Show conversations' }).click();
  await page.getByRole('button', { name: 'New chat' }).waitFor({ state: 'visible' });
  await page.waitForTimeout(300); // slide-in transition
  await assertSound(page, 'sidebar');
  await page.getByRole('button', { name: 'New chat' }).click();

  await page.getByRole('button', { name: 'Files', exact: true }).click();
  await page.getByRole('heading', { name: 'Workspace files' }).waitFor();
  await page.waitForTimeout(300);
  await assertSound(page, 'files');
  await page.getByRole('button', { name: 'Close files' }).click();

  await page.getByRole('button', { name: /Account phoebe/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Account' });
  await dialog.getByRole('button', { name: 'Sign out' }).waitFor();
  await assertSound(page, 'account');
  await dialog.getByRole('button', { name: 'Sign out' }).click();
  await page.getByText('You have signed out.').waitFor();
  await page.context().close();
});

test('every admin section fits a phone and every section is one choice away', async () => {
  const page = await newPage(browser, { viewport: PHONE });
  await page.goto(server.url);
  await page.getByLabel('Username').fill('phoebe');
  await page.getByLabel('Password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  for (const section of ['users', 'roles', 'tools', 'mcp', 'audit', 'usage']) {
    await page.goto(`${server.url}/admin/${section}`);
    await page.locator('.admin-body').locator('.card, .banner').first().waitFor();
    await page.waitForTimeout(200);
    await assertSound(page, `admin-${section}`);
    // The sections are one "Section" menu in one row (ten wrapped tabs took four rows).
    assert.deepEqual(await unreachableTabs(page, '.admin-menu select'), [], `admin menu on ${section}`);
    assert.equal(await page.getByRole('combobox', { name: 'Section' }).inputValue(), section);
  }
  // The usage charts are drawn with the page's own text size, not scaled down.
  const chart = page.getByRole('img', { name: 'Tokens per user' });
  await chart.waitFor();
  const labelPx = await chart.locator('.hbar-label').first().evaluate((el) => parseFloat(getComputedStyle(el).fontSize));
  assert.ok(labelPx >= 12, `chart labels are ${labelPx}px`);
  // Each section is one choice away.
  await page.getByRole('combobox', { name: 'Section' }).selectOption('users');
  await page.getByRole('heading', { name: 'Create user' }).waitFor();
  // The users table is one card per user: the budget field keeps a usable width.
  const budgetWidth = await page.getByRole('spinbutton', { name: 'Token budget for phoebe' }).evaluate((el) => el.getBoundingClientRect().width);
  assert.ok(budgetWidth >= 80, `budget field is ${budgetWidth}px wide`);
  await page.context().close();
});

test('on a wide screen sign out stays in the top bar', async () => {
  const page = await newPage(browser);
  await page.goto(server.url);
  await page.getByLabel('Username').fill('phoebe');
  await page.getByLabel('Password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('.topbar').getByRole('button', { name: 'Sign out' }).waitFor({ state: 'visible' });
  assert.deepEqual(await layoutProblems(page), []);
  await page.context().close();
});
