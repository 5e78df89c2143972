// The code interpreter in the browser (issue 47): with the demo model and a role granted
// run_python, "analyse data.csv by status" over an uploaded CSV runs Python in the jail; the
// tool card shows the highlighted code and what it printed, the saved files as download chips,
// and the chart inline under the card, fetched from the server's file route. It all fits a
// 360 px phone without overlap, and a reload draws it again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, signInViaUi, apiLogin, artifact, layoutProblems, unnamedControls } from './harness.mjs';

const PHONE = { width: 360, height: 740 };
const CSV = 'id,status,ms\n1,ok,12\n2,error,40\n3,ok,9\n4,timeout,300\n5,ok,15\n6,error,33\n';
let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  const admin = await apiLogin(server.url, 'cadmin');
  const roles = await admin.call('GET', '/api/admin/roles');
  const role = roles.json.items.find((r) => r.name === 'admin');
  const put = await admin.call('PUT', '/api/admin/roles/admin', { tools: [...new Set([...role.tools, 'run_python', 'read_file'])] });
  assert.equal(put.status, 200, JSON.stringify(put.json));
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));
const noSideScroll = (page) => page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth
  && [...document.querySelectorAll('.messages')].every((el) => el.scrollWidth <= el.clientWidth + 1));

/** The chart is drawn: its <img> has loaded a real picture. */
const imageLoaded = (img) => img.evaluate((el) => el.complete && el.naturalWidth > 0);

async function checkRun(page, answer, fileRequests) {
  const card = answer.locator('.tool-card[data-tool=run_python]');
  await card.waitFor();
  await card.locator('.tool-status.ok').waitFor({ timeout: 60000 });
  const out = answer.locator('.code-run-out');
  await out.waitFor();
  // The chart: inline, loaded from the file route (the image is fetched with the session
  // and shown from a blob of that response, never from a data: URL the page made up).
  const img = out.locator('img.code-run-image');
  await img.first().waitFor();
  assert.deepEqual(await img.evaluateAll((els) => els.map((e) => e.alt)), ['Chart chart.png'], 'one chart, not a second copy of the figure');
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await img.elementHandle(), { timeout: 20000 });
  assert.ok(await imageLoaded(img));
  const src = await img.getAttribute('src');
  assert.doesNotMatch(src, /^data:/);
  assert.ok(fileRequests.some((u) => /\/api\/files\/outputs\/.+\/chart\.png$/.test(u)), `chart fetched from the file route: ${fileRequests}`);
  assert.match(await img.getAttribute('alt'), /chart\.png/);
  // Download chips for both outputs.
  const chips = out.getByRole('list', { name: 'Files the code saved' });
  await chips.getByRole('button', { name: /Download outputs\/.+\/report\.csv/ }).waitFor();
  await chips.getByRole('button', { name: /Download outputs\/.+\/chart\.png/ }).waitFor();
  assert.equal(await chips.getByRole('button').count(), 2);
  // The code, highlighted, and what it printed (the card is opened to read them).
  assert.equal(await card.locator('.tool-args-summary').innerText(), 'path = "/mnt/data/data.csv"', 'the summary skips the imports');
  await card.locator('summary').click();
  const code = card.locator('.code-run-code code.py');
  await code.waitFor();
  assert.match(await code.innerText(), /import pandas as pd/);
  assert.ok(await code.locator('.py-keyword').count() > 0, 'keywords are highlighted');
  assert.ok(await code.locator('.py-string').count() > 0, 'strings are highlighted');
  const stdout = card.locator('.code-run-stdout');
  await stdout.waitFor();
  assert.match(await stdout.innerText(), /status/);
  assert.match(await card.locator('.code-run-facts').innerText(), /exit 0/);
  return { card, img, chips };
}

test('the demo model analyses an uploaded CSV: code, output, chips and the chart inline, on a 360 px phone', async () => {
  const page = await newPage(browser, { viewport: PHONE });
  const fileRequests = [];
  page.on('request', (r) => { if (r.url().includes('/api/files/')) fileRequests.push(new URL(r.url()).pathname); });
  await signInViaUi(page, server.url, 'cadmin');
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles([{ name: 'data.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) }]);
  await page.locator('.composer .attach-chip[data-state=done]').filter({ hasText: 'data.csv' }).waitFor();
  await page.getByRole('textbox', { name: 'Message' }).fill('analyse data.csv by status');
  await page.getByRole('button', { name: 'Send' }).click();
  const answer = page.locator('.msg-assistant').last();
  const { card, img } = await checkRun(page, answer, fileRequests);
  // The answer follows the card and the chart.
  await answer.locator('.text-seg').last().waitFor();
  assert.match(await answer.locator('.text-seg').last().innerText(), /status/);

  assert.deepEqual(await layoutProblems(page), [], 'layout problems at 360 px');
  assert.ok(await noSideScroll(page), 'the chat scrolls sideways at 360 px');
  const [cardBox, imgBox] = [await card.boundingBox(), await img.boundingBox()];
  assert.ok(imgBox.width <= PHONE.width, `chart fits the phone: ${imgBox.width}`);
  assert.ok(imgBox.y >= cardBox.y + cardBox.height - 1, 'the chart sits under the card, not over it');
  assert.deepEqual(await unnamedControls(page), []);
  await page.screenshot({ path: artifact('code-interpreter-phone.png'), fullPage: true });

  // A chip downloads the file with its name.
  const download = page.waitForEvent('download');
  await answer.getByRole('button', { name: /Download outputs\/.+\/report\.csv/ }).click();
  const file = await download;
  assert.equal(file.suggestedFilename(), 'report.csv');

  // After a reload the stored run is drawn again, chart and all.
  fileRequests.length = 0;
  await page.reload();
  await checkRun(page, page.locator('.msg-assistant').last(), fileRequests);
  assert.deepEqual(await layoutProblems(page), [], 'layout problems after the reload');
  assert.ok(await noSideScroll(page));
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('a link to the conversation shows the chart through the link, and hides it when the link hides tool outputs', async () => {
  const owner = await apiLogin(server.url, 'cadmin', undefined, { register: false });
  const conv = (await owner.call('GET', '/api/conversations')).json.items[0].id;
  const made = await owner.call('POST', `/api/conversations/${conv}/shares`, { scope: 'public' });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  // Someone without an account opens it on a phone.
  const page = await newPage(browser, { viewport: PHONE });
  const fileRequests = [];
  page.on('request', (r) => { if (r.url().includes('/files/')) fileRequests.push(new URL(r.url()).pathname); });
  await page.goto(`${server.url}/s/${made.json.id}`);
  const img = page.locator('.code-run-out img.code-run-image');
  await img.waitFor();
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await img.elementHandle(), { timeout: 20000 });
  assert.ok(fileRequests.length > 0 && fileRequests.every((u) => u.startsWith(`/api/shares/${made.json.id}/files/outputs/`)), `through the link only: ${fileRequests}`);
  await page.getByRole('button', { name: /Download outputs\/.+\/report\.csv/ }).waitFor();
  assert.deepEqual(await layoutProblems(page), [], 'layout problems on the shared page at 360 px');
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth));
  await page.screenshot({ path: artifact('code-interpreter-share-phone.png'), fullPage: true });

  // Hiding the tools' outputs hides the run's files too.
  const patched = await owner.call('PATCH', `/api/shares/${made.json.id}`, { redact_tools: true });
  assert.equal(patched.status, 200, JSON.stringify(patched.json));
  await page.reload();
  await page.locator('.share-banner').waitFor();
  await page.locator('.tool-card[data-tool=run_python] .tool-status').waitFor();
  assert.equal(await page.locator('.code-run-out').count(), 0);
  // (The answer's own words may still name the files: the link hides tools, not what was said.)
  assert.equal(await page.locator('img').and(page.locator('.code-run-image')).count(), 0);
  assert.equal(await page.getByRole('button', { name: /^Download outputs\// }).count(), 0);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});
