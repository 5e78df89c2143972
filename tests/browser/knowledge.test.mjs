// Knowledge in the browser: the Knowledge page creates a collection, uploads a .md and a .txt
// that reach "ready" with their chunk counts (the page polls while they are processed, and
// stops), an unsupported file keeps its error on its own row; admins share a collection with
// a role, whose members see it read-only; a chat pins the collection, the demo model searches
// it and cites it, and the citation chip and the sources under the answer open the passage
// with the cited text highlighted (after a reload too); it all fits 360 px; and on a database
// without pgvector the page shows the server's reason and nothing breaks.
//
// The server runs against a Postgres with pgvector: $AGENTCHAT_PGVECTOR_URL, or the one
// `tests/pgvector/start.sh` starts (and prints). Until the server has the knowledge API
// (GET /api/knowledge answers 404), the tests report `# TODO`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, newPage, signInViaUi, apiLogin, artifact, layoutProblems, unnamedControls } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const PHONE = { width: 360, height: 740 };
const REFUNDS = '# Refunds\n\nRefunds take 30 days from the day the returned item reaches our warehouse.\n'
  + 'Customers who paid by card get the money back on the same card.\n\n## Exceptions\n\nGift cards are never refunded.\n';
const SHIPPING = 'Shipping\n\nOrders ship within two working days. Express delivery costs 9 euros and arrives the next day.\n';

let server; // on pgvector
let plain; // on the ordinary test Postgres (no pgvector)
let browser;
let admin; // {token, call} of the first account (an admin)
let missing = false; // the server has no knowledge API yet

/** The pgvector Postgres: its URL without a database name. */
function pgvectorUrl() {
  const fromEnv = process.env.AGENTCHAT_PGVECTOR_URL;
  const strip = (u) => { const x = new URL(u.trim()); x.pathname = ''; return x.toString().replace(/\/$/, ''); };
  if (fromEnv) return Promise.resolve(strip(fromEnv));
  return new Promise((resolve, reject) => {
    execFile('bash', [path.resolve(here, '..', 'pgvector', 'start.sh')], { timeout: 15 * 60 * 1000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const url = stdout.trim().split('\n').filter((l) => l.startsWith('postgres')).pop();
      if (err || !url) reject(new Error(`tests/pgvector/start.sh failed: ${err?.message || 'no URL printed'}\n${stderr}`));
      else resolve(strip(url));
    });
  });
}

before(async () => {
  const pg = await pgvectorUrl();
  // The demo embeddings (word hashes) score a whole short document low against a question:
  // with the default floor (0.2) the demo model can find nothing in it. These tests are about
  // the page, not the ranking: every passage counts.
  const env = { AGENTCHAT_KNOWLEDGE_MIN_SIMILARITY: '-1' };
  [server, plain, browser] = await Promise.all([startServer({ pg, env }), startServer(), launchBrowser()]);
  admin = await apiLogin(server.url, 'kadmin');
  missing = (await admin.call('GET', '/api/knowledge')).status === 404;
});
after(async () => {
  await browser?.close();
  await server?.stop();
  await plain?.stop();
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));
const file = (name, text, mimeType = 'text/plain') => ({ name, mimeType, buffer: Buffer.from(text) });
const row = (page, name) => page.locator('.kfile').filter({ has: page.locator('.kfile-name', { hasText: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) });
const noSideScroll = (page) => page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth
  && [...document.querySelectorAll('.admin, .messages, dialog[open]')].every((el) => el.scrollWidth <= el.clientWidth + 1));

function skipWhenMissing(t) {
  if (missing) t.todo('the knowledge API (GET /api/knowledge) is not on the server yet');
  return missing;
}

async function upload(page, ...files) {
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Upload files' }).click();
  await (await chooser).setFiles(files);
}

/** Creates collection `name` through the page; leaves the page on it. */
async function createCollection(page, name, description = '') {
  await page.goto(`${server.url}/knowledge`);
  await page.getByRole('heading', { name: 'Knowledge', level: 1 }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill(name);
  if (description) await page.getByLabel('Description (optional)').fill(description);
  await page.getByRole('button', { name: 'Create collection' }).click();
  await page.getByRole('heading', { name, level: 1 }).waitFor();
  return decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
}

test('a collection: create, upload a .md and a .txt that reach ready with chunk counts, an unsupported file keeps its error, rename', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'kadmin');
  // Reached from the main navigation.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Knowledge' }).click();
  await page.getByRole('heading', { name: 'Knowledge', level: 1 }).waitFor();
  await page.getByText('No collections yet').waitFor();
  const id = await createCollection(page, 'Support handbook', 'What support answers customers');
  assert.match(await page.locator('.collection-meta').innerText(), /0 documents · 0 chunks · personal/);

  // Watch the collection's GETs: the page polls while files are processed, then stops.
  const polls = [];
  page.on('request', (r) => { if (r.method() === 'GET' && new URL(r.url()).pathname === `/api/collections/${id}`) polls.push(Date.now()); });
  await upload(page, file('refunds.md', REFUNDS, 'text/markdown'), file('shipping.txt', SHIPPING));
  for (const name of ['refunds.md', 'shipping.txt']) {
    const r = row(page, name);
    await r.and(page.locator('[data-state=ready]')).waitFor({ timeout: 60000 });
    assert.match(await r.locator('.kfile-state').innerText(), /^Ready · [1-9]\d* chunks?$/);
  }
  assert.ok(polls.length >= 1, 'the page asked for the collection while its files were processed');
  await page.locator('.kfile-summary').filter({ hasText: 'All 2 files are ready.' }).waitFor();
  const settled = polls.length;
  await page.waitForTimeout(2500);
  assert.equal(polls.length, settled, 'no polling once every file is ready');

  // A type collections do not read: refused, with the reason on its own row; the others stay.
  await upload(page, file('contract.docx', 'PK\u0003\u0004 not really a docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'));
  const docx = row(page, 'contract.docx');
  await docx.and(page.locator('[data-state=refused], [data-state=failed]')).waitFor({ timeout: 30000 });
  assert.match(await docx.locator('.kfile-state').innerText(), /support|type|docx|accepted/i);
  assert.equal(await docx.locator('.kfile-error').count(), 1);
  assert.equal(await page.locator('.kfile[data-state=ready]').count(), 2);

  // A PDF without readable text is taken, then fails in extraction: the error and Retry on its row.
  await upload(page, file('broken.pdf', '%PDF-1.4\nthis is not really a pdf\n%%EOF\n', 'application/pdf'));
  const pdf = row(page, 'broken.pdf');
  await pdf.and(page.locator('[data-state=failed]')).waitFor({ timeout: 60000 });
  assert.match(await pdf.locator('.kfile-state').innerText(), /^Failed: \S/);
  const retried = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/retry'));
  await pdf.getByRole('button', { name: 'Retry broken.pdf' }).click();
  assert.equal((await retried).status(), 202);
  // Queued again (the old button goes), then failed again: a new, enabled Retry.
  await page.waitForFunction(() => [...document.querySelectorAll('.kfile[data-state=failed]')]
    .some((r) => r.querySelector('.kfile-name').textContent === 'broken.pdf' && r.querySelector('button[aria-label="Retry broken.pdf"]:not(:disabled)')), null, { timeout: 60000 });
  await pdf.getByRole('button', { name: 'Delete broken.pdf' }).click();
  await pdf.getByRole('button', { name: 'Confirm: delete broken.pdf from the collection' }).click();
  await pdf.waitFor({ state: 'detached' });

  // Rename and describe.
  await page.getByRole('button', { name: 'Edit Support handbook' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit Support handbook' });
  await dialog.getByLabel('Name').fill('Support docs');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'Support docs', level: 1 }).waitFor();
  assert.match(await page.locator('.collection-meta').innerText(), /2 documents · [1-9]\d* chunks/);
  // The list shows it with its counts.
  await page.getByRole('link', { name: '← All collections' }).click();
  const item = page.locator('.collection-item').filter({ hasText: 'Support docs' });
  await item.waitFor();
  assert.match(await item.innerText(), /What support answers customers/);
  assert.match(await item.innerText(), /2 documents/);
  assert.deepEqual(await unnamedControls(page), []);
  await page.screenshot({ path: artifact('knowledge-list.png'), fullPage: true });
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('a chat with the collection pinned: the demo model cites it; the chip and the sources open the passage', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'kadmin');
  // Pinned in the new chat before its first message (the chat does not exist yet).
  const pins = page.getByRole('button', { name: /^Knowledge/ });
  await pins.click();
  const dialog = page.getByRole('dialog', { name: 'Knowledge for this chat' });
  await dialog.getByLabel(/Support docs/).check();
  await dialog.getByRole('button', { name: 'Save' }).click();
  assert.equal(await pins.getAttribute('aria-label'), 'Knowledge pinned to this chat: Support docs');

  await page.getByRole('textbox', { name: 'Message' }).fill('what do our docs say about refunds?');
  await page.getByRole('button', { name: 'Send' }).click();
  const answer = page.locator('.msg-assistant').last();
  await answer.locator('.tool-card[data-tool=search_knowledge]').waitFor();
  // Citations come with the stored answer, once the turn is done.
  const chip = answer.locator('.cite-chip').first();
  await chip.waitFor({ timeout: 20000 });
  assert.equal(await chip.innerText(), '1');
  assert.doesNotMatch(await answer.locator('.segments').innerText(), /\[K\d+\]/, 'the markers with a citation became chips');
  const sources = answer.getByRole('list', { name: 'Sources' });
  assert.match(await sources.innerText(), /1 · (refunds\.md|shipping\.txt)/);
  assert.match(await sources.innerText(), /refunds\.md/);

  // The pin is stored with the chat.
  const convId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
  const pinned = await admin.call('GET', `/api/conversations/${convId}/collections`);
  assert.deepEqual(pinned.json.items.map((c) => c.name), ['Support docs']);

  // The chip opens the passage, the cited text highlighted.
  const file1 = (await chip.getAttribute('aria-label')).replace(/^Source 1: /, '');
  await chip.click();
  const viewer = page.getByRole('dialog', { name: new RegExp(`Source 1 · ${file1.replace('.', '\\.')}`) });
  const hit = viewer.locator('mark.passage-hit');
  await hit.waitFor();
  const cited = (await hit.innerText()).trim();
  assert.ok(cited.length > 10, `a passage is highlighted: ${cited}`);
  assert.ok((file1 === 'refunds.md' ? REFUNDS : SHIPPING).includes(cited.split('\n')[0].trim()), `the highlight is text of ${file1}: ${cited}`);
  await page.screenshot({ path: artifact('knowledge-passage.png') });
  await viewer.getByRole('button', { name: 'Close' }).click();
  await viewer.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('cite-chip')), true, 'focus back on the chip');

  // After a reload the stored citations are drawn again; the sources open the passage too.
  await page.reload();
  const again = page.locator('.msg-assistant').last();
  await again.locator('.cite-chip').first().waitFor();
  await again.getByRole('button', { name: /^Open source 1: / }).click();
  await page.locator('dialog[open] mark.passage-hit').waitFor();
  await page.keyboard.press('Escape');
  await page.locator('dialog[open]').waitFor({ state: 'detached' });
  assert.equal(await page.getByRole('button', { name: 'Knowledge pinned to this chat: Support docs' }).count(), 1);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('an admin shares a collection with a role: its members see it read-only and may pin it', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'kadmin');
  await createCollection(page, 'Team policies');
  await page.getByRole('button', { name: 'Share Team policies with roles' }).click();
  const dialog = page.getByRole('dialog', { name: 'Share Team policies' });
  await dialog.getByLabel('member', { exact: true }).check();
  await dialog.getByRole('button', { name: 'Save sharing' }).click();
  await page.locator('.collection-meta .collection-sharing').filter({ hasText: 'shared with member' }).waitFor();
  await upload(page, file('leave.md', '# Leave\n\nEveryone has 25 days of paid leave a year.\n', 'text/markdown'));
  await row(page, 'leave.md').and(page.locator('[data-state=ready]')).waitFor({ timeout: 60000 });
  await page.context().close();

  await apiLogin(server.url, 'kmember');
  const member = await newPage(browser);
  await signInViaUi(member, server.url, 'kmember');
  await member.goto(`${server.url}/knowledge`);
  const item = member.locator('.collection-item').filter({ hasText: 'Team policies' });
  await item.waitFor();
  assert.match(await item.innerText(), /kadmin's · shared with member/);
  assert.equal(await member.locator('.collection-item').filter({ hasText: 'Support docs' }).count(), 0, 'a personal collection stays personal');
  assert.equal(await item.getByRole('button').count(), 0, 'no Edit, Share or Delete for a member');
  await item.getByRole('link', { name: 'Team policies' }).click();
  await row(member, 'leave.md').waitFor();
  assert.equal(await member.getByRole('button', { name: 'Upload files' }).count(), 0);
  assert.equal(await row(member, 'leave.md').getByRole('button').count(), 0);
  // Members may pin it to their chats.
  await member.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Chat' }).click();
  await member.getByRole('button', { name: /^Knowledge/ }).click();
  await member.getByRole('dialog', { name: 'Knowledge for this chat' }).getByLabel(/Team policies/).waitFor();
  await member.keyboard.press('Escape');
  assert.deepEqual(consoleErrors(member), []);
  await member.context().close();
});

test('the knowledge pages, the pins dialog and the passage viewer fit 360 px', async (t) => {
  if (skipWhenMissing(t)) return;
  const page = await newPage(browser, { viewport: PHONE });
  await signInViaUi(page, server.url, 'kadmin');
  const check = async (what) => {
    await page.screenshot({ path: artifact(`knowledge-phone-${what}.png`), fullPage: true });
    assert.deepEqual(await layoutProblems(page), [], `layout problems on ${what}`);
    assert.ok(await noSideScroll(page), `${what} scrolls sideways`);
  };
  // The navigation link is there on a phone too.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Knowledge' }).click();
  await page.locator('.collection-item').first().waitFor();
  await check('list');
  await page.locator('.collection-item').filter({ hasText: 'Support docs' }).getByRole('link', { name: 'Support docs' }).click();
  await row(page, 'refunds.md').waitFor();
  await check('collection');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Chat' }).click();
  await page.getByRole('button', { name: 'Show conversations' }).click();
  await page.locator('.conv-link').first().click(); // the chat of the test above
  const chip = page.locator('.msg-assistant .cite-chip').first();
  await chip.waitFor();
  await check('chat');
  await page.getByRole('button', { name: /^Knowledge pinned/ }).click();
  await page.getByRole('dialog', { name: 'Knowledge for this chat' }).getByLabel(/Support docs/).waitFor();
  await check('pins');
  await page.keyboard.press('Escape');
  await chip.click();
  await page.locator('dialog[open] mark.passage-hit').waitFor();
  await check('passage');
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('without pgvector the knowledge page shows the reason, and the chat goes on without it', async (t) => {
  const { call } = await apiLogin(plain.url, 'plainadmin');
  const info = await call('GET', '/api/knowledge');
  if (info.status === 404) { t.todo('the knowledge API (GET /api/knowledge) is not on the server yet'); return; }
  assert.equal(info.json.available, false);
  assert.ok(info.json.reason, 'the server says why');
  const page = await newPage(browser, { viewport: PHONE });
  await signInViaUi(page, plain.url, 'plainadmin');
  await page.goto(`${plain.url}/knowledge`);
  const banner = page.locator('.knowledge-unavailable');
  await banner.waitFor();
  assert.equal((await banner.innerText()).trim(), info.json.reason);
  assert.equal(await page.getByRole('button', { name: 'Create collection' }).count(), 0);
  assert.deepEqual(await layoutProblems(page), []);
  await page.screenshot({ path: artifact('knowledge-unavailable.png') });
  // The chat has no Knowledge button, and answers as ever.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Chat' }).click();
  await page.getByRole('textbox', { name: 'Message' }).fill('what time is it');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.msg-assistant .text-seg').filter({ hasText: /It is \d\d:\d\d on / }).first().waitFor();
  assert.equal(await page.getByRole('button', { name: /^Knowledge/ }).count(), 0);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});
