// Issue 42.9, a default install (the demo model) tried at 1366 and 360 px: no stray "null"
// on the roles page; at 360 px the roles x tools matrix keeps the tool names in view when
// scrolled to the member column, audit rows are compact cards inside the screen, and the
// admin sections are one menu row; a copy says it is one in the sidebar; a chat with an
// attachment is titled by its words; an assistant name may have a space; chat search finds
// "Tokyo" in "Asia/Tokyo". Layout is asserted on bounding boxes (screenshots are for people).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, artifact, layoutProblems } from './harness.mjs';

const PHONE = { width: 360, height: 740 };
const WIDE = { width: 1366, height: 800 };
let server;
let browser;
let admin;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  const page = await newPage(browser, { viewport: WIDE });
  await registerViaUi(page, server.url, 'root'); // first account: an admin
  await page.context().close();
  admin = await apiLogin(server.url, 'root', undefined, { register: false });
  // A tool call or two for the audit log.
  const conv = await admin.call('POST', '/api/conversations', {});
  await chat(conv.json.id, 'what is 2+2*3');
  await chat(conv.json.id, 'what is 17*23');
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Sends a message through the API and reads its stream to the end. */
async function chat(convId, content, attachments) {
  const resp = await fetch(`${server.url}/api/conversations/${convId}/messages`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${admin.token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify(attachments ? { content, attachments } : { content }),
  });
  assert.equal(resp.status, 200, await resp.clone().text());
  await resp.text();
}

async function rootPage(viewport) {
  const page = await newPage(browser, { viewport });
  await signInViaUi(page, server.url, 'root');
  await page.locator('.composer-input:enabled').waitFor();
  return page;
}

const box = (loc) => loc.evaluate((el) => { const r = el.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, height: r.height }; });

test('the roles page of a default install shows no stray "null"', async () => {
  const page = await rootPage(WIDE);
  await page.goto(`${server.url}/admin/roles`);
  const matrix = page.locator('table.matrix');
  await matrix.getByRole('rowheader', { name: 'Budget period' }).waitFor();
  const stray = await matrix.evaluate((t) => [...t.querySelectorAll('tbody')].flatMap((b) => [...b.childNodes]
    .filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim()).map((n) => n.textContent)));
  assert.deepEqual(stray, []);
  assert.doesNotMatch(await matrix.innerText(), /\bnull\b/);
  // At 1366 px the admin sections are one row of tabs.
  const tops = await page.locator('.admin-tab').evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().top)));
  assert.equal(new Set(tops).size, 1, `tabs on ${new Set(tops).size} rows`);
  await page.context().close();
});

test('at 360 px the roles matrix keeps the tool names in view when scrolled to the member column', async () => {
  const page = await rootPage(PHONE);
  await page.goto(`${server.url}/admin/roles`);
  const member = page.getByRole('checkbox', { name: 'Allow calculator for member' });
  await member.waitFor();
  const wrap = page.locator('.table-wrap').filter({ has: page.locator('table.matrix') });
  await wrap.evaluate((el) => { el.scrollLeft = el.scrollWidth; });
  await page.waitForTimeout(100);
  const name = page.locator('table.matrix th[scope=row]').filter({ hasText: /^calculator/ });
  const n = await box(name);
  assert.ok(n.left >= 0 && n.right <= PHONE.width, `the tool name spans ${n.left}..${n.right}`);
  const head = await box(page.locator('table.matrix thead th').filter({ hasText: /^member$/ }));
  assert.ok(head.left >= n.right - 1 && head.right <= PHONE.width + 0.5, `member column at ${head.left}..${head.right}`);
  // Its checkbox is on top (not under the sticky tool column) and can be ticked.
  const onTop = await member.evaluate((el) => {
    const r = el.getBoundingClientRect();
    return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === el;
  });
  assert.ok(onTop, 'the member checkbox is covered');
  await page.screenshot({ path: artifact('phone-roles-scrolled.png'), fullPage: true });
  await page.context().close();
});

test('at 360 px audit rows are compact cards inside the screen and the admin sections are one menu row', async () => {
  const page = await rootPage(PHONE);
  await page.goto(`${server.url}/admin/audit`);
  const rows = page.locator('.audit-table tbody tr');
  await rows.first().waitFor();
  const boxes = await rows.evaluateAll((trs) => trs.map((tr) => ({
    height: tr.getBoundingClientRect().height,
    cells: [...tr.children].map((c) => { const r = c.getBoundingClientRect(); return [r.left, r.right]; }),
  })));
  assert.ok(boxes.length >= 2, `${boxes.length} audit rows`);
  for (const b of boxes) {
    assert.ok(b.height <= 140, `an audit row is ${Math.round(b.height)}px tall`);
    for (const [l, r] of b.cells) assert.ok(l >= 0 && r <= PHONE.width, `a cell spans ${l}..${r}`);
  }
  assert.deepEqual(await layoutProblems(page), []);
  await page.screenshot({ path: artifact('phone-audit-cards.png'), fullPage: true });

  // One row: a "Section" menu instead of the tabs.
  assert.equal(await page.locator('.admin-tabs').isVisible(), false);
  const menu = page.getByRole('combobox', { name: 'Section' });
  const m = await box(page.locator('.admin-menu'));
  assert.ok(m.height <= 56 && m.right <= PHONE.width, `the menu is ${m.height}px tall`);
  assert.equal(await menu.locator('option').count(), 10);
  assert.equal(await menu.inputValue(), 'audit');
  await menu.selectOption('usage');
  await page.waitForURL(/\/admin\/usage$/);
  await page.getByRole('img', { name: 'Tokens per user' }).waitFor();
  assert.equal(await page.getByRole('combobox', { name: 'Section' }).inputValue(), 'usage');
  await page.context().close();
});

test('a copy is marked in the sidebar, titles keep two lines, and search finds Tokyo in Asia/Tokyo', async () => {
  const conv = await admin.call('POST', '/api/conversations', {});
  await chat(conv.json.id, 'Which meeting rooms are free in the Asia/Tokyo office next week?');
  const stored = await admin.call('GET', `/api/conversations/${conv.json.id}`);
  const last = stored.json.messages.at(-1).id;
  const copy = await admin.call('POST', `/api/conversations/${conv.json.id}/fork`, { at_message_id: last });
  assert.equal(copy.status, 201, JSON.stringify(copy.json));

  const page = await rootPage(PHONE);
  await page.getByRole('button', { name: 'Show conversations' }).click();
  await page.getByRole('button', { name: 'New chat' }).waitFor({ state: 'visible' });
  const items = page.locator('.conv-item').filter({ hasText: 'Which meeting rooms' });
  await items.nth(1).waitFor();
  const copyItem = page.locator('.conv-item').filter({ has: page.locator('.fork-badge') });
  assert.equal(await copyItem.count(), 1, 'only the copy has the badge');
  assert.match(await copyItem.locator('.conv-title').innerText(), /^copy/);
  const title = copyItem.locator('.conv-title');
  const lines = await title.evaluate((el) => Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight || '20')));
  assert.ok(lines >= 2, `the title takes ${lines} line(s)`);

  await page.getByRole('searchbox', { name: 'Search chats' }).fill('Tokyo');
  await page.locator('.conv-snippet').filter({ hasText: 'Asia/Tokyo' }).first().waitFor();
  await page.screenshot({ path: artifact('phone-sidebar-copy.png'), fullPage: true });
  await page.context().close();
});

test('a chat with an attachment is titled by its words, not "Attached"', async () => {
  const up = await fetch(`${server.url}/api/files/notes/q3.txt`, { method: 'PUT', headers: { Authorization: `Bearer ${admin.token}` }, body: 'ship the importer' });
  assert.ok(up.ok, `upload: ${up.status}`);
  const conv = await admin.call('POST', '/api/conversations', {});
  await chat(conv.json.id, 'summarise this report please', ['notes/q3.txt']);
  let title = '';
  for (let i = 0; i < 50; i += 1) {
    const c = await admin.call('GET', `/api/conversations/${conv.json.id}`);
    if (!c.json.title_auto) { title = c.json.title; break; }
    await new Promise((r) => { setTimeout(r, 100); });
  }
  assert.equal(title, 'summarise this report please');
  const page = await rootPage(WIDE);
  const item = page.locator('.conv-item .conv-title').filter({ hasText: 'summarise this report please' });
  await item.waitFor();
  assert.doesNotMatch(await item.innerText(), /Attached/);
  await page.context().close();
});

test('an assistant name may have a space; the form shows its /v1 model name', async () => {
  const page = await rootPage(WIDE);
  await page.goto(`${server.url}/admin/assistants`);
  await page.getByRole('button', { name: 'New assistant' }).click();
  const form = page.getByRole('form', { name: 'New assistant' });
  await form.getByLabel('Name', { exact: true }).fill('Trip planner');
  await form.getByText('assistant:Trip-planner').waitFor();
  await form.getByLabel('Instructions').fill('Plan trips.');
  await form.getByRole('button', { name: 'Create assistant' }).click();
  await page.locator('tr').filter({ hasText: 'Trip planner' }).first().waitFor();
  const listed = await admin.call('GET', '/api/admin/assistants');
  assert.ok(listed.json.items.some((a) => a.name === 'Trip planner'), JSON.stringify(listed.json));
  await page.context().close();
});
