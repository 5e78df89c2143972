// Keeping chats in order: grouped by date, pinned on top, archived out of the way, found by
// what was written in them, exported as files; a first message refused up front leaves no
// empty chat behind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, layoutProblems } from './harness.mjs';

let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

async function chat(page, text, answered) {
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: answered }).first().waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();
}

const listed = (page) => page.locator('.conv-list .conv-title').allTextContents();

test('group by date, pin, archive, search message text, export', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'keeper');
  await chat(page, 'what is 6*7', '42');
  await chat(page, 'hello there', 'demo model');
  await chat(page, 'what is 10-3', '7');
  const sidebar = page.getByRole('complementary', { name: 'Conversations' });
  await sidebar.locator('.conv-group').filter({ hasText: 'Today' }).waitFor();
  assert.deepEqual(await listed(page), ['what is 10-3', 'hello there', 'what is 6*7']);

  // Pin the oldest: it goes on top, under "Pinned".
  await sidebar.getByRole('button', { name: 'Pin what is 6*7' }).click();
  await sidebar.locator('.conv-group').filter({ hasText: 'Pinned' }).waitFor();
  assert.deepEqual(await listed(page), ['what is 6*7', 'what is 10-3', 'hello there']);

  // Archive one: it leaves the list, and is found under "Archived chats".
  await sidebar.getByRole('button', { name: 'Archive hello there' }).click();
  await page.getByText(/^Archived\./).waitFor();
  assert.deepEqual(await listed(page), ['what is 6*7', 'what is 10-3']);
  await sidebar.getByRole('button', { name: 'Archived chats' }).click();
  await sidebar.getByRole('link', { name: /hello there/ }).waitFor();
  assert.deepEqual(await listed(page), ['hello there']);
  await sidebar.getByRole('button', { name: 'Back to chats' }).click();
  await sidebar.getByRole('link', { name: /what is 10-3/ }).waitFor();

  // Search what the assistant wrote (not the title), archived chats included.
  await sidebar.getByRole('searchbox', { name: 'Search chats' }).fill('offline');
  const hit = sidebar.locator('.conv-item').filter({ hasText: 'hello there' });
  await hit.locator('.conv-snippet mark').first().waitFor();
  assert.equal((await hit.locator('.conv-snippet mark').first().textContent()).toLowerCase(), 'offline');
  assert.deepEqual(await listed(page), ['hello there']);
  await sidebar.getByRole('searchbox', { name: 'Search chats' }).fill('zebra crossing');
  await sidebar.getByText('No chats match your search.').waitFor();
  await sidebar.getByRole('searchbox', { name: 'Search chats' }).fill('');

  // Export the open chat as Markdown and as JSON.
  await sidebar.getByRole('link', { name: /what is 6\*7/ }).click();
  await page.getByRole('heading', { name: 'what is 6*7' }).waitFor();
  for (const [label, check] of [
    ['Markdown', (text, name) => { assert.match(name, /\.md$/); assert.match(text, /^# what is 6\*7/); assert.match(text, /Tool call: `calculator`/); }],
    ['JSON', (text, name) => { assert.match(name, /\.json$/); assert.equal(JSON.parse(text).messages.length, 4); }],
  ]) {
    await page.locator('.export-menu summary').click();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('group', { name: 'Export as' }).getByRole('button', { name: label }).click(),
    ]);
    check(await readFile(await download.path(), 'utf8'), download.suggestedFilename());
  }
  await page.context().close();
});

test('a first message refused up front leaves no empty chat', async () => {
  const root = await apiLogin(server.url, 'keeper', undefined, { register: false });
  const member = await apiLogin(server.url, 'broke');
  const users = await root.call('GET', '/api/admin/users');
  const id = users.json.items.find((u) => u.username === 'broke').id;
  assert.equal((await root.call('PATCH', `/api/admin/users/${id}`, { token_budget: 1 })).status, 200);
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'broke');
  await page.getByRole('textbox', { name: 'Message' }).fill('anything at all');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByRole('alert').filter({ hasText: /budget/i }).waitFor();
  await page.getByText('No chats yet. Say hello!').waitFor();
  assert.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'anything at all');
  const stored = await member.call('GET', '/api/conversations');
  assert.deepEqual(stored.json.items, []);
  await page.context().close();
});

test('a long chat opens on its latest messages; earlier ones load above, in place', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'longtalker');
  await chat(page, 'hello there', 'demo model');
  const id = new URL(page.url()).pathname.split('/').pop();
  // 250 older exchanges (500 rows) written straight into the database, before the chat's own.
  execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', server.dbName, '-v', 'ON_ERROR_STOP=1', '-c',
    `INSERT INTO messages (id, conversation_id, role, content, created_at)
     SELECT gen_random_uuid(), '${id}', CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END,
            'older message ' || g, now() - interval '1 day' + g * interval '1 second'
       FROM generate_series(1, 500) g`]);
  // The seeded rows are newer by seq: move the chat's own two after them.
  execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', server.dbName, '-v', 'ON_ERROR_STOP=1', '-c',
    `INSERT INTO messages (id, conversation_id, role, content, status, created_at)
       SELECT gen_random_uuid(), conversation_id, role, content || ' (latest)', status, now()
         FROM messages WHERE conversation_id = '${id}' AND content NOT LIKE 'older message %' ORDER BY seq;
     DELETE FROM messages WHERE conversation_id = '${id}' AND content NOT LIKE 'older message %' AND content NOT LIKE '% (latest)';`]);
  // Read on a phone.
  await page.setViewportSize({ width: 360, height: 740 });
  await page.reload();
  await page.locator('.msg-user').filter({ hasText: 'hello there (latest)' }).waitFor();
  const earlier = page.getByRole('button', { name: 'Show earlier messages' });
  await earlier.waitFor();
  assert.equal(await page.getByText('older message 1', { exact: true }).count(), 0, 'the oldest are not loaded yet');
  assert.equal(await page.locator('.msg-user, .msg-assistant').count(), 200, 'a window of 200');
  // The reader's place is kept: what was on screen stays where it was.
  const fromBottom = () => page.evaluate(() => {
    const log = document.querySelector('.load-earlier').parentElement;
    return log.scrollHeight - log.scrollTop;
  });
  await earlier.scrollIntoViewIfNeeded();
  const before = await fromBottom();
  await earlier.click();
  await page.getByText('older message 103', { exact: true }).waitFor();
  const afterLoad = await fromBottom();
  assert.ok(Math.abs(afterLoad - before) <= 2, `the view jumped: ${before} from the bottom before, ${afterLoad} after`);
  assert.equal(await page.getByText('older message 102', { exact: true }).count(), 0);
  assert.equal(await page.locator('.msg-user, .msg-assistant').count(), 400);
  await earlier.click();
  await page.getByText('older message 1', { exact: true }).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Show earlier messages' }).count(), 0, 'all loaded');
  assert.equal(await page.locator('.msg-user, .msg-assistant').count(), 502);
  const order = await page.locator('.msg-user, .msg-assistant').allTextContents();
  assert.ok(order[0].includes('older message 1') && order[501].includes('(latest)'), 'oldest first');
  assert.deepEqual(await layoutProblems(page), []);
  await page.context().close();
});
