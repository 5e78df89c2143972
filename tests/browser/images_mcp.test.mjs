// An MCP tool's image in the chat (issue 44 item 4): the server keeps it as a workspace file
// and lists it in the tool result; the chat shows it under the tool card, fetched with the
// session, again after a reload; a click opens the full-size view; at 360 px it fits. The
// MCP peer is tests/mcp/image_server.py (official `mcp` SDK, stdio), from the config file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, newPage, signInViaUi, apiLogin, artifact, layoutProblems, FakeUpstream } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = path.resolve(here, '..', 'mcp');
const TOOL = 'pics__pictures';

let upstream;
let server;
let browser;

before(async () => {
  execFileSync('bash', [path.join(peers, 'install.sh')], { stdio: 'inherit' });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agentchat-mcp-images-'));
  const config = path.join(dir, 'agentchat.toml');
  writeFileSync(config, [
    '[[mcp_servers]]',
    'name = "pics"',
    `command = ${JSON.stringify(path.join(peers, '.venv', 'bin', 'python'))}`,
    `args = [${JSON.stringify(path.join(peers, 'image_server.py'))}]`,
    'timeout_ms = 20000',
    '',
  ].join('\n'));
  upstream = await new FakeUpstream().start();
  [server, browser] = await Promise.all([startServer({ upstream, env: { AGENTCHAT_CONFIG: config } }), launchBrowser()]);
  const admin = await apiLogin(server.url, 'viewer'); // the first user: an admin
  for (let i = 0; i < 60; i += 1) {
    const s = await admin.call('GET', '/api/admin/mcp-servers/pics');
    if (s.json?.status?.state === 'connected' && s.json.tools?.some((t) => t.name === TOOL)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const roles = await admin.call('GET', '/api/admin/roles');
  const role = roles.json.items.find((r) => r.name === 'admin');
  const put = await admin.call('PUT', '/api/admin/roles/admin', { tools: [...new Set([...role.tools, 'pics__*'])] });
  assert.equal(put.status, 200, JSON.stringify(put.json));
});
after(async () => {
  await browser?.close();
  await server?.stop();
  await upstream?.stop();
});

async function loaded(page, sel, count) {
  await page.waitForFunction(({ sel, count }) => {
    const els = [...document.querySelectorAll(sel)];
    return els.length === count && els.every((e) => e.complete && e.naturalWidth > 0 && e.src.startsWith('blob:'));
  }, { sel, count }, { timeout: 30000 });
}

test('an MCP tool\'s image shows under its card, survives a reload, opens full size, fits 360 px', async () => {
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'viewer');
  const fileRequests = [];
  page.on('request', (r) => { if (r.url().includes('/api/files/')) fileRequests.push(new URL(r.url()).pathname); });
  upstream.push({ toolCalls: [{ name: TOOL, arguments: { kinds: ['ok', 'svg'] } }] });
  await page.getByRole('textbox', { name: 'Message' }).fill('a picture, please');
  await page.getByRole('button', { name: 'Send' }).click();
  const card = page.locator(`.tool-card[data-tool="${TOOL}"]`);
  await card.locator('.tool-status.ok').waitFor({ timeout: 30000 });
  const images = '.tool-images-out img.code-run-image';
  await loaded(page, images, 1);
  assert.equal(fileRequests.length, 1, `one file fetched: ${fileRequests}`);
  assert.match(fileRequests[0], /^\/api\/files\/outputs\/[0-9a-f-]+\/mcp\/pics__pictures-[0-9a-f]+\.png$/);
  const name = fileRequests[0].split('/').pop();
  // The SVG was refused by the server: the result says so, and nothing else is drawn.
  await card.locator('summary').click();
  assert.match(await card.locator('.tool-result').innerText(), /the image was not kept: its type `image\/svg\+xml` is not accepted/);

  // After a reload the stored result draws it again.
  fileRequests.length = 0;
  await page.reload();
  await loaded(page, images, 1);
  assert.deepEqual(fileRequests.map((p) => p.split('/').pop()), [name]);

  const opener = page.getByRole('button', { name: `Open image ${name} full size` });
  await opener.click();
  const dialog = page.getByRole('dialog', { name: `Image ${name}` });
  await dialog.waitFor();
  const big = dialog.locator('img.image-viewer-img');
  await page.waitForFunction((el) => el.complete && el.naturalWidth === 30, await big.elementHandle());
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });

  assert.deepEqual(page.errors.filter((e) => !/401|Failed to load resource/.test(e)), []);
  const chatUrl = page.url();
  await page.context().close();

  // On a phone: the picture fits the screen, nothing is wider than it.
  const phone = await newPage(browser, { viewport: { width: 360, height: 740 } });
  await signInViaUi(phone, server.url, 'viewer');
  await phone.goto(chatUrl);
  await loaded(phone, images, 1);
  const img = phone.locator(images);
  await img.scrollIntoViewIfNeeded();
  const box = await img.boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 360, `the picture fits: ${JSON.stringify(box)}`);
  assert.deepEqual(await layoutProblems(phone), [], 'layout problems at 360 px');
  await phone.screenshot({ path: artifact('chat-mcp-image-360.png'), fullPage: false });
  await phone.context().close();
});
