// Web search in the browser: with a (fake) SearXNG configured, the demo model searches the
// web for the user, and the answer shows its `[W…]` citations as numbered links and a
// Sources list of page titles and sites that open in a new tab without a referrer; it all
// fits a 360 px phone, and survives a reload. The page of a shared link shows them too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, launchBrowser, newPage, signInViaUi, apiLogin, artifact, layoutProblems, unnamedControls } from './harness.mjs';

const PHONE = { width: 360, height: 740 };
const RESULTS = [
  { url: 'https://blog.rust-lang.org/2024/07/25/Rust-1.80.0.html', title: 'Announcing Rust 1.80.0 — a rather long title that has to wrap on a phone screen', content: 'The Rust team is happy to announce a new version of Rust, 1.80.0.' },
  { url: 'https://doc.rust-lang.org/releases.html', title: 'Rust release notes', content: 'LazyCell and LazyLock are now stable.' },
];

let searx;
let searxUrl;
let server;
let browser;
let seen = [];
let admin; // {token, call} of "wadmin"

before(async () => {
  searx = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    seen.push(u);
    if (u.pathname !== '/search' || u.searchParams.get('format') !== 'json') { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ query: u.searchParams.get('q'), number_of_results: 0, results: RESULTS.map((r) => ({ ...r, engine: 'duckduckgo', engines: ['duckduckgo'], score: 1, category: 'general', publishedDate: null })), answers: [], corrections: [], infoboxes: [], suggestions: [], unresponsive_engines: [] }));
  });
  await new Promise((r) => searx.listen(0, '127.0.0.1', r));
  searxUrl = `http://127.0.0.1:${searx.address().port}`;
  const env = { AGENTCHAT_SEARCH_PROVIDERS: JSON.stringify([{ name: 'searx', kind: 'searxng', base_url: searxUrl, timeout_secs: 5 }]) };
  [server, browser] = await Promise.all([startServer({ env }), launchBrowser()]);
  admin = await apiLogin(server.url, 'wadmin');
  const roles = await admin.call('GET', '/api/admin/roles');
  const role = roles.json.items.find((r) => r.name === 'admin');
  const put = await admin.call('PUT', '/api/admin/roles/admin', { tools: [...role.tools, 'web_search'] });
  assert.equal(put.status, 200, JSON.stringify(put.json));
});
after(async () => {
  await browser?.close();
  await server?.stop();
  await new Promise((r) => searx?.close(r));
});

const consoleErrors = (page) => page.errors.filter((e) => !/401|Failed to load resource/.test(e));
const noSideScroll = (page) => page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth
  && [...document.querySelectorAll('.messages')].every((el) => el.scrollWidth <= el.clientWidth + 1));

test('the demo model searches the web and its answer lists the pages as sources, on a 360 px phone', async () => {
  const page = await newPage(browser, { viewport: PHONE });
  await signInViaUi(page, server.url, 'wadmin');
  await page.getByRole('textbox', { name: 'Message' }).fill('search the web for rust 1.80 release notes');
  await page.getByRole('button', { name: 'Send' }).click();
  const answer = page.locator('.msg-assistant').last();
  await answer.locator('.tool-card[data-tool=web_search]').waitFor();
  const chip = answer.locator('a.cite-chip').first();
  await chip.waitFor({ timeout: 20000 });
  assert.equal(seen.at(-1).searchParams.get('q'), 'rust 1.80 release notes');
  assert.equal(await chip.innerText(), '1');
  assert.equal(await chip.getAttribute('href'), RESULTS[0].url);
  assert.doesNotMatch(await answer.locator('.segments').innerText(), /\[W\d+\]/, 'the markers became chips');
  const sources = answer.getByRole('list', { name: 'Sources' });
  const text = await sources.innerText();
  assert.match(text, /1\s*·\s*Announcing Rust 1\.80\.0/);
  assert.match(text, /blog\.rust-lang\.org/);
  assert.match(text, /2\s*·\s*Rust release notes/);
  const first = sources.getByRole('link', { name: /^Open source 1: Announcing Rust 1\.80\.0/ });
  assert.equal(await first.getAttribute('target'), '_blank');
  assert.match(await first.getAttribute('rel'), /noopener/);
  assert.match(await first.getAttribute('rel'), /noreferrer/);
  assert.deepEqual(await layoutProblems(page), [], 'layout problems at 360 px');
  assert.ok(await noSideScroll(page), 'the chat scrolls sideways at 360 px');
  assert.deepEqual(await unnamedControls(page), []);
  await page.screenshot({ path: artifact('web-search-sources-phone.png'), fullPage: true });

  // After a reload the stored citations are drawn again.
  await page.reload();
  const again = page.locator('.msg-assistant').last();
  await again.locator('a.cite-chip').first().waitFor();
  assert.match(await again.getByRole('list', { name: 'Sources' }).innerText(), /Rust release notes/);
  assert.deepEqual(consoleErrors(page), []);

  // The page of a link to the conversation shows the same links, on a phone too.
  const convId = decodeURIComponent(new URL(page.url()).pathname.split('/')[2] || '');
  assert.ok(convId, page.url());
  const made = await admin.call('POST', `/api/conversations/${convId}/shares`, { scope: 'org', redact_tools: true });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  await page.goto(`${server.url}/s/${encodeURIComponent(made.json.id)}`);
  const shared = page.locator('.share-log .msg-assistant').last();
  const sharedChip = shared.locator('a.cite-chip').first();
  await sharedChip.waitFor();
  assert.equal(await sharedChip.innerText(), '1');
  assert.equal(await sharedChip.getAttribute('href'), RESULTS[0].url);
  assert.equal(await sharedChip.getAttribute('target'), '_blank');
  assert.match(await sharedChip.getAttribute('rel'), /noreferrer/);
  assert.doesNotMatch(await shared.locator('.segments').innerText(), /\[W\d+\]/);
  const sharedSources = shared.getByRole('list', { name: 'Sources' });
  const listed = await sharedSources.innerText();
  assert.match(listed, /1\s*·\s*Announcing Rust 1\.80\.0/);
  assert.match(listed, /doc\.rust-lang\.org/);
  const second = sharedSources.getByRole('link', { name: /^Open source 2: Rust release notes/ });
  assert.equal(await second.getAttribute('href'), RESULTS[1].url);
  assert.equal(await second.getAttribute('target'), '_blank');
  assert.match(await second.getAttribute('rel'), /noopener/);
  assert.match(await second.getAttribute('rel'), /noreferrer/);
  // The link hides the tools' details: no snippet in the links' titles.
  assert.doesNotMatch(await second.getAttribute('title'), /LazyCell/);
  assert.equal(await shared.locator('.share-sources').count(), 0, 'no knowledge file line for web sources');
  assert.deepEqual(await layoutProblems(page), [], 'layout problems on the shared page at 360 px');
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth), 'the shared page scrolls sideways');
  assert.deepEqual(await unnamedControls(page), []);
  await page.screenshot({ path: artifact('web-search-share-phone.png'), fullPage: true });
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});
