// Images in the browser (issue 44 items 2, 5 and 6): a pasted, a dropped and a picked picture
// each get a thumbnail chip on the composer (object URLs given back when the chip goes); the
// sent message shows them as thumbnails fetched with the session, again after a reload; a
// click opens the full-size view (Esc closes it, focus comes back); a chart the code
// interpreter made opens the same view; a share link shows the thumbnails through the link;
// a model that cannot see images is named before Send and its refusal is said in plain words;
// upload refusals carry the server's words on the chip; all of it fits a 360 px phone.
//
// Where the server on this branch does not have the image pieces of the contract yet
// (images-contract: `input` in /api/models details, 422 model_cannot_see_images, the 415/422/413
// image upload refusals), those responses only are mocked with page.route; each place says so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, registerViaUi, signInViaUi, apiLogin, artifact, layoutProblems, unnamedControls, FakeUpstream } from './harness.mjs';

const PHONE = { width: 360, height: 740 };
const CSV = 'id,status,ms\n1,ok,12\n2,error,40\n3,ok,9\n4,timeout,300\n5,ok,15\n6,error,33\n';
let server;
let browser;

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  // The first user (an admin) may run Python, for the chart test.
  const admin = await apiLogin(server.url, 'painter');
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
const composerChips = (page) => page.locator('.composer .attach-chip');
const chip = (page, name) => composerChips(page).filter({ hasText: name });
const doneChip = (page, name) => chip(page, name).and(page.locator('[data-state=done]'));

/** The bytes of a `w`×`h` picture of one colour drawn in the page (PNG or JPEG). */
async function pictureBytes(page, w, h, color, type = 'image/png') {
  const dataUrl = await page.evaluate(({ w, h, color, type }) => {
    const c = document.createElement('canvas');
    c.width = w;
    c.height = h;
    const g = c.getContext('2d');
    g.fillStyle = color;
    g.fillRect(0, 0, w, h);
    return c.toDataURL(type, 0.9);
  }, { w, h, color, type });
  return Buffer.from(dataUrl.split(',')[1], 'base64');
}

/** Pastes a `w`×`h` PNG made with a canvas into the message box, as a copied screenshot is. */
async function pastePicture(page, w, h, color) {
  await page.getByRole('textbox', { name: 'Message' }).evaluate(async (box, { w, h, color }) => {
    const c = document.createElement('canvas');
    c.width = w;
    c.height = h;
    const g = c.getContext('2d');
    g.fillStyle = color;
    g.fillRect(0, 0, w, h);
    const blob = await new Promise((resolve) => c.toBlob(resolve, 'image/png'));
    const data = new DataTransfer();
    data.items.add(new File([blob], 'image.png', { type: 'image/png' }));
    box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, { w, h, color });
}

/** Drops a PNG made with a canvas onto the chat, as a file dragged from the desktop. */
async function dropPicture(page, name, w, h, color) {
  const data = await page.evaluateHandle(async ({ name, w, h, color }) => {
    const c = document.createElement('canvas');
    c.width = w;
    c.height = h;
    const g = c.getContext('2d');
    g.fillStyle = color;
    g.fillRect(0, 0, w, h);
    const blob = await new Promise((resolve) => c.toBlob(resolve, 'image/png'));
    const d = new DataTransfer();
    d.items.add(new File([blob], name, { type: 'image/png' }));
    return d;
  }, { name, w, h, color });
  await page.dispatchEvent('.chat-main', 'dragenter', { dataTransfer: data });
  await page.locator('.drop-zone').waitFor({ state: 'visible' });
  await page.dispatchEvent('.chat-main', 'drop', { dataTransfer: data });
  await page.locator('.drop-zone').waitFor({ state: 'hidden' });
}

async function pick(page, ...files) {
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles(files);
}

/** Waits until every <img> matched has decoded a real picture from a blob: URL. */
async function loaded(page, images, count) {
  await page.waitForFunction(({ sel, count }) => {
    const els = [...document.querySelectorAll(sel)];
    return els.length === count && els.every((e) => e.complete && e.naturalWidth > 0 && e.src.startsWith('blob:'));
  }, { sel: images, count }, { timeout: 30000 });
}

/** CRC-32 of `buf` (PNG chunks carry one). */
function crc32(buf) {
  let c = ~0;
  for (const byte of buf) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** Whether the object URL `url` still gives a picture (false once revoked). The page's CSP
 * lets images, not fetch, read blob: URLs. */
const urlAlive = (page, url) => page.evaluate((u) => new Promise((resolve) => {
  const img = new Image();
  img.onload = () => resolve(true);
  img.onerror = () => resolve(false);
  img.src = u;
}), url);

/** Waits until the object URL `url` has been revoked. */
async function revoked(page, url) {
  for (let i = 0; i < 200 && await urlAlive(page, url); i++) await page.evaluate(() => new Promise(requestAnimationFrame));
  assert.equal(await urlAlive(page, url), false, `${url} was revoked`);
}

/** The turn ended: the answer has its actions (Regenerate, or Retry after a failed step)
 * once nothing is generating. */
async function answered(page) {
  await page.locator('.msg-assistant').last().getByRole('button', { name: /^(Regenerate|Retry)$/ }).waitFor({ timeout: 60000 });
}

test('paste, drop and pick: thumbnail chips, sent as thumbnails that survive a reload, full size in a dialog', async () => {
  const page = await newPage(browser);
  const fileRequests = [];
  page.on('request', (r) => { if (r.url().includes('/api/files/') && r.method() === 'GET') fileRequests.push(new URL(r.url()).pathname); });
  await signInViaUi(page, server.url, 'painter');

  // Paste a copied screenshot: it gets a name of its own and a thumbnail on its chip.
  await pastePicture(page, 300, 200, '#d22');
  const pasted = composerChips(page).filter({ hasText: /^pasted .+\.png/ });
  await pasted.and(page.locator('[data-state=done]')).waitFor();
  const pastedName = (await pasted.locator('.attach-name').innerText()).trim();
  assert.match(pastedName, /^pasted \d{4}-\d\d-\d\d \d\d-\d\d-\d\d\.png$/);
  // Drop one and pick one.
  await dropPicture(page, 'blue.png', 64, 64, '#22d');
  await doneChip(page, 'blue.png').waitFor();
  await pick(page, { name: 'green.jpg', mimeType: 'image/jpeg', buffer: await pictureBytes(page, 120, 90, '#2a2', 'image/jpeg') });
  await doneChip(page, 'green.jpg').waitFor();
  await loaded(page, '.composer .attach-chip img.attach-thumb', 3);
  assert.equal(await page.locator('.composer .attach-chip.attach-image').count(), 3);
  await page.screenshot({ path: artifact('images-composer.png') });

  // Removing a chip gives its object URL back.
  const blueUrl = await chip(page, 'blue.png').locator('img.attach-thumb').getAttribute('src');
  assert.ok(await urlAlive(page, blueUrl));
  await chip(page, 'blue.png').getByRole('button', { name: 'Remove blue.png' }).click();
  await revoked(page, blueUrl);

  await page.getByRole('textbox', { name: 'Message' }).fill('What is in these pictures?');
  await page.getByRole('button', { name: 'Send' }).click();
  const sent = page.locator('.msg-user').last();
  await sent.getByRole('list', { name: 'Attached images' }).waitFor();
  await answered(page);
  await loaded(page, '.msg-user img.thumb-img', 2);
  assert.deepEqual(await sent.locator('img.thumb-img').evaluateAll((els) => els.map((e) => e.alt)), [pastedName, 'green.jpg']);
  const { call } = await apiLogin(server.url, 'painter', undefined, { register: false });
  if ((await call('GET', '/api/models')).json.details.some((d) => d.input?.includes('image'))) {
    // A demo model that looks at images says something true of them.
    const said = await page.locator('.msg-assistant').last().innerText();
    assert.match(said, /300 × 200 pixels, mostly red/);
    assert.match(said, /120 × 90 pixels, mostly green/);
  }
  assert.equal(await sent.locator('.msg-file').count(), 0, 'images are thumbnails, not download chips');

  // After a reload the stored message draws its thumbnails again, fetched with the session.
  fileRequests.length = 0;
  await page.reload();
  await loaded(page, '.msg-user img.thumb-img', 2);
  assert.ok(fileRequests.some((p) => p.endsWith('/green.jpg')), `fetched from the file route: ${fileRequests}`);
  const sizes = await page.locator('.msg-user img.thumb-img').evaluateAll((els) => els.map((e) => {
    const r = e.getBoundingClientRect();
    return [r.width, r.height];
  }));
  for (const [w, h] of sizes) assert.ok(w <= 160.5 && h <= 160.5 && w > 0, `thumbnail at most 160 px: ${w}×${h}`);

  // A click opens the full-size view: the picture at its own size, named by its file.
  const thumb = page.getByRole('button', { name: `Open image ${pastedName} full size` });
  await thumb.click();
  const dialog = page.getByRole('dialog', { name: `Image ${pastedName}` });
  await dialog.waitFor();
  const big = dialog.locator('img.image-viewer-img');
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await big.elementHandle());
  assert.equal(await big.getAttribute('alt'), pastedName);
  assert.deepEqual(await big.evaluate((e) => [e.naturalWidth, e.naturalHeight]), [300, 200]);
  await dialog.getByText('300 × 200').waitFor();
  const bigUrl = await big.getAttribute('src');
  await page.screenshot({ path: artifact('images-viewer.png') });
  // Esc closes it and the focus is back on the thumbnail; the view's URL is given back.
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), `Open image ${pastedName} full size`);
  await revoked(page, bigUrl);
  // The Close button does the same, by keyboard too.
  await page.keyboard.press('Enter');
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Close' }).click();
  await dialog.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), `Open image ${pastedName} full size`);

  // Editing the question takes the thumbnails out of the page (their URLs are given back);
  // cancelling puts them back, drawn from new URLs of the same bytes.
  const before = await page.locator('.msg-user img.thumb-img').evaluateAll((els) => els.map((e) => e.src));
  const question = page.locator('.msg-user').last();
  await question.getByRole('button', { name: 'Edit' }).click();
  await question.getByRole('textbox', { name: 'Edit your message' }).waitFor();
  await question.getByRole('button', { name: 'Cancel' }).click();
  await loaded(page, '.msg-user img.thumb-img', 2);
  await page.waitForFunction((old) => [...document.querySelectorAll('.msg-user img.thumb-img')].every((e) => !old.includes(e.src)), before);

  // Leaving the chat gives the thumbnails' object URLs back.
  const thumbUrls = await page.locator('.msg-user img.thumb-img').evaluateAll((els) => els.map((e) => e.src));
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.locator('.msg-user').first().waitFor({ state: 'detached' });
  for (const u of thumbUrls) await revoked(page, u);
  assert.deepEqual(await unnamedControls(page), []);
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('bytes that are no image are never drawn: a .png holding SVG shows as unavailable, not as a picture', async () => {
  // Stored before images were checked at upload (or by a tool): the page checks the bytes too.
  const owner = await apiLogin(server.url, 'sneaky');
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';
  const put = await fetch(`${server.url}/api/files/evil.png`, { method: 'PUT', headers: { Authorization: `Bearer ${owner.token}` }, body: svg });
  const conv = await owner.call('POST', '/api/conversations', {});
  const page = await newPage(browser);
  if (put.ok) {
    // This server stores it as is: send it with a message through the API.
    const sent = await fetch(`${server.url}/api/conversations/${conv.json.id}/messages`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${owner.token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'look', attachments: ['evil.png'] }),
    });
    await sent.text();
  } else {
    // The server refuses it at upload (415 unsupported_image): the stored message naming it
    // is mocked here so that the page's own check is still tried.
    assert.equal(put.status, 415);
    await page.route(`**/api/conversations/${conv.json.id}`, async (route) => {
      const resp = await route.fetch();
      const json = await resp.json();
      json.messages = [{ id: 'm1', role: 'user', content: 'look', attachments: [{ path: 'evil.png', bytes: svg.length }], created_at: new Date().toISOString() }];
      await route.fulfill({ response: resp, json });
    });
    await page.route('**/api/files/evil.png', (route) => route.fulfill({ status: 200, contentType: 'image/png', body: svg }));
  }
  await signInViaUi(page, server.url, 'sneaky');
  await page.goto(`${server.url}/c/${conv.json.id}`);
  const missing = page.locator('.msg-user .msg-image[data-state=missing]');
  await missing.waitFor();
  assert.match(await missing.innerText(), /evil\.png: not an image that can be shown/);
  assert.equal(await page.locator('.msg-user img').count(), 0);
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.context().close();
});

test('a model that cannot see images is named before Send, and its refusal is said in plain words', async () => {
  const page = await newPage(browser);
  // Mocked: this branch's GET /api/models has no `input` yet (images-contract); the demo
  // model is made text-only here.
  await page.route('**/api/models', async (route) => {
    const resp = await route.fetch();
    const json = await resp.json();
    json.details = json.details.map((d) => ({ ...d, input: ['text'], max_image_bytes: 0, max_images: 0 }));
    await route.fulfill({ response: resp, json });
  });
  // Mocked: the server's refusal of a message with images for that model (422
  // model_cannot_see_images); the real demo model takes images.
  let refused = 0;
  await page.route('**/api/conversations/*/messages', async (route) => {
    if (route.request().method() !== 'POST') { await route.fallback(); return; }
    refused += 1;
    await route.fulfill({ status: 422, json: { error: { code: 'model_cannot_see_images', message: `the model \`${model}\` cannot see images; pick a model that reads images, or send the message without them` } } });
  });
  await registerViaUi(page, server.url, 'textonly');
  const me = await apiLogin(server.url, 'textonly', undefined, { register: false });
  const model = (await me.call('GET', '/api/models')).json.default;
  const notice = page.locator('.image-model-note');
  assert.ok(await notice.isHidden());
  await pick(page, { name: 'chart.png', mimeType: 'image/png', buffer: await pictureBytes(page, 40, 30, '#999') });
  await notice.waitFor({ state: 'visible' });
  assert.match(await notice.innerText(), new RegExp(`^${model} cannot see images`));
  await doneChip(page, 'chart.png').waitFor();
  await page.getByRole('textbox', { name: 'Message' }).fill('What does this chart say?');
  await page.getByRole('button', { name: 'Send' }).click();
  const banner = page.locator('.banner').filter({ hasText: `Not sent: the model ${model} cannot see images` });
  await banner.waitFor();
  assert.match(await banner.innerText(), /pick a model that reads images, or send the message without them\.$/m);
  assert.equal(refused, 1);
  // Nothing was lost: the text and the image are back on the composer, no message stays.
  assert.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'What does this chart say?');
  await doneChip(page, 'chart.png').waitFor();
  await loaded(page, '.composer img.attach-thumb', 1); // drawn again, from the workspace
  assert.equal(await page.locator('.msg-user').count(), 0);
  // Removing the image takes the notice away.
  await chip(page, 'chart.png').getByRole('button', { name: 'Remove chart.png' }).click();
  await notice.waitFor({ state: 'hidden' });
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.context().close();
});

test('a text-only model: the server\'s own refusal of a message with images', async (t) => {
  // A real provider's model reads text only unless configured otherwise (images-contract).
  const upstream = await new FakeUpstream().start();
  const textOnly = await startServer({ upstream });
  try {
    const me = await apiLogin(textOnly.url, 'plaintext');
    const details = (await me.call('GET', '/api/models')).json.details;
    if (!details.some((d) => Array.isArray(d.input))) {
      t.todo('this server does not say what its models read yet (images-contract)');
      return;
    }
    const page = await newPage(browser);
    await signInViaUi(page, textOnly.url, 'plaintext');
    await pick(page, { name: 'photo.png', mimeType: 'image/png', buffer: await pictureBytes(page, 64, 48, '#c33') });
    await page.locator('.image-model-note').filter({ hasText: 'fake cannot see images' }).waitFor();
    await doneChip(page, 'photo.png').waitFor();
    await page.getByRole('textbox', { name: 'Message' }).fill('What is this?');
    await page.getByRole('button', { name: 'Send' }).click();
    const banner = page.locator('.banner').filter({ hasText: /^Not sent: .*fake.*images/ });
    await banner.waitFor();
    assert.doesNotMatch(await banner.innerText(), /`/);
    assert.equal(upstream.requests.length, 0, 'nothing reached the provider');
    await doneChip(page, 'photo.png').waitFor();
    assert.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'What is this?');
    await page.context().close();
  } finally {
    await textOnly.stop();
    await upstream.stop();
  }
});

test('upload refusals of an image show the server\'s words on its chip', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'badpics');
  const png = await pictureBytes(page, 50, 50, '#123');
  const bomb = Buffer.from(png); // a PNG header claiming 40,000 × 40,000 pixels (its CRC right)
  bomb.writeUInt32BE(40000, 16);
  bomb.writeUInt32BE(40000, 20);
  bomb.writeUInt32BE(crc32(bomb.subarray(12, 29)), 29);
  const bad = [
    { name: 'drawing.png', buffer: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), status: 415, code: 'unsupported_image', message: 'drawing.png is not a PNG, JPEG, WebP or GIF image.' },
    { name: 'broken.png', buffer: png.subarray(0, 60), status: 422, code: 'invalid_image', message: 'broken.png is truncated or corrupt.' },
    { name: 'bomb.png', buffer: bomb, status: 413, code: 'image_too_large', message: 'bomb.png is 40000 × 40000 pixels; the limit is 50 megapixels.' },
  ];
  // Does this server check images at upload (the contract's `image` in the answer)?
  const me = await apiLogin(server.url, 'badpics', undefined, { register: false });
  const probe = await (await fetch(`${server.url}/api/files/probe.png`, { method: 'PUT', headers: { Authorization: `Bearer ${me.token}` }, body: png })).json();
  await me.call('DELETE', '/api/files/probe.png');
  if (!probe.image) {
    // Mocked: this branch stores image bytes as they come; the contract's refusals are
    // answered here for these three names only.
    for (const b of bad) {
      await page.route(`**/api/files/${b.name}`, (route) => (route.request().method() === 'PUT'
        ? route.fulfill({ status: b.status, json: { error: { code: b.code, message: b.message } } })
        : route.fallback()));
    }
  }
  const answers = bad.map((b) => page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/api/files/${b.name}`), { timeout: 60000 }));
  await pick(page, ...bad.map((b) => ({ name: b.name, mimeType: 'image/png', buffer: b.buffer })));
  for (const [i, b] of bad.entries()) {
    const resp = await answers[i];
    const answer = { status: resp.status(), body: await resp.json() };
    const c = chip(page, b.name).and(page.locator('[data-state=error]'));
    await c.waitFor();
    assert.equal(answer.status, b.status, `${b.name}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body.error.code, b.code);
    assert.equal((await c.locator('.attach-status').innerText()).trim(), answer.body.error.message, 'the server\'s own words');
  }
  assert.equal(await page.locator('#toasts .toast').count(), 0, 'errors stay on the chips');
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.context().close();
});

test('the chips say what the server stored: a GIF under its new name, a large picture at its new size', async () => {
  const page = await newPage(browser);
  await registerViaUi(page, server.url, 'storer');
  // The smallest GIF: one white pixel.
  const gif = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
  const wide = await pictureBytes(page, 3000, 200, '#4a4');
  const answers = ['tiny.gif', 'wide.png'].map((n) => page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/api/files/${n}`), { timeout: 60000 }));
  await pick(page, { name: 'tiny.gif', mimeType: 'image/gif', buffer: gif }, { name: 'wide.png', mimeType: 'image/png', buffer: wide });
  const [tiny, big] = await Promise.all(answers.map(async (a) => (await a).json()));
  // The chip carries the name the server stored it under (a GIF may come back as PNG).
  await doneChip(page, tiny.path).waitFor();
  await doneChip(page, 'wide.png').waitFor();
  await loaded(page, '.composer img.attach-thumb', 2);
  const status = (await chip(page, 'wide.png').locator('.attach-status').innerText()).trim();
  if (big.image) {
    // A server that normalises images says the new size, and the chip says it too.
    assert.match(status, new RegExp(`${big.image.width} × ${big.image.height} · resized from 3000 × 200$`));
    assert.ok(big.image.width <= 2048);
  } else {
    assert.doesNotMatch(status, /×/);
  }
  await page.context().close();
});

test('a chart the code interpreter made opens in the same full-size view', async () => {
  const page = await newPage(browser);
  await signInViaUi(page, server.url, 'painter');
  await pick(page, { name: 'data.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) });
  await doneChip(page, 'data.csv').waitFor();
  await page.getByRole('textbox', { name: 'Message' }).fill('analyse data.csv by status');
  await page.getByRole('button', { name: 'Send' }).click();
  const chart = page.locator('.msg-assistant').last().locator('.code-run-out img.code-run-image');
  await chart.waitFor({ timeout: 90000 });
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await chart.elementHandle(), { timeout: 30000 });
  const opener = page.getByRole('button', { name: /^Open image Chart .+\.png full size$/ });
  await opener.click();
  const dialog = page.getByRole('dialog', { name: /^Image Chart / });
  await dialog.waitFor();
  const big = dialog.locator('img.image-viewer-img');
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await big.elementHandle());
  assert.match(await big.getAttribute('alt'), /^Chart .+\.png$/);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  assert.match(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), /^Open image Chart .+ full size$/);
  await page.context().close();
});

test('a share link shows the attached images through the link; at 360 px nothing is wider than the screen', async () => {
  const owner = await apiLogin(server.url, 'painter', undefined, { register: false });
  // The chat of the first test: its question attached green.jpg.
  let conv = null;
  for (const c of (await owner.call('GET', '/api/conversations')).json.items) {
    const detail = (await owner.call('GET', `/api/conversations/${c.id}`)).json;
    if (detail.messages.some((m) => (m.attachments || []).some((a) => a.path === 'green.jpg'))) conv = c;
  }
  assert.ok(conv, 'the chat with the pictures');
  const made = await owner.call('POST', `/api/conversations/${conv.id}/shares`, { scope: 'public' });
  assert.equal(made.status, 201, JSON.stringify(made.json));

  // Someone without an account, on a phone.
  const reader = await newPage(browser, { viewport: PHONE });
  const fileRequests = [];
  reader.on('request', (r) => { if (r.url().includes('/files/')) fileRequests.push(new URL(r.url()).pathname); });
  await reader.goto(`${server.url}/s/${made.json.id}`);
  await loaded(reader, '.msg-user img.thumb-img', 2);
  assert.ok(fileRequests.length >= 2 && fileRequests.every((p) => p.startsWith(`/api/shares/${made.json.id}/files/`)), `through the link only: ${fileRequests}`);
  assert.deepEqual(await layoutProblems(reader), [], 'layout problems on the shared page at 360 px');
  await reader.getByRole('button', { name: 'Open image green.jpg full size' }).click();
  const dialog = reader.getByRole('dialog', { name: 'Image green.jpg' });
  await dialog.waitFor();
  const box = await dialog.boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= PHONE.width, `the view fits the phone: ${JSON.stringify(box)}`);
  await reader.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  assert.deepEqual(consoleErrors(reader), []);
  await reader.context().close();

  // The owner's chat at 360 px: thumbnails, a composer full of image chips and the full-size view fit.
  const page = await newPage(browser, { viewport: PHONE });
  await signInViaUi(page, server.url, 'painter');
  await page.goto(`${server.url}/c/${conv.id}`);
  await loaded(page, '.msg-user img.thumb-img', 2);
  await pastePicture(page, 1600, 400, '#e80');
  await pick(page, { name: 'a-very-long-name-of-a-holiday-photo-that-never-fits-on-a-phone.png', mimeType: 'image/png', buffer: await pictureBytes(page, 30, 900, '#08e') });
  await doneChip(page, 'a-very-long-name').waitFor();
  await composerChips(page).filter({ hasText: /^pasted / }).and(page.locator('[data-state=done]')).waitFor();
  await loaded(page, '.composer img.attach-thumb', 2);
  assert.deepEqual(await layoutProblems(page), [], 'layout problems in the chat at 360 px');
  const widest = await page.evaluate(() => Math.max(...[...document.querySelectorAll('.chat-main *')].map((e) => e.getBoundingClientRect().right)));
  assert.ok(widest <= PHONE.width + 0.5, `nothing in the chat reaches past ${PHONE.width}px: ${widest}`);
  for (const [w, h] of await page.locator('.msg-user img.thumb-img').evaluateAll((els) => els.map((e) => [e.getBoundingClientRect().width, e.getBoundingClientRect().height]))) {
    assert.ok(w <= 160.5 && h <= 160.5, `thumbnail at most 160 px: ${w}×${h}`);
  }
  await page.screenshot({ path: artifact('images-phone.png'), fullPage: true });
  await page.getByRole('button', { name: 'Open image green.jpg full size' }).click();
  const own = page.getByRole('dialog', { name: 'Image green.jpg' });
  await own.waitFor();
  const ownBox = await own.boundingBox();
  assert.ok(ownBox.x >= 0 && ownBox.x + ownBox.width <= PHONE.width, `the view fits the phone: ${JSON.stringify(ownBox)}`);
  await page.screenshot({ path: artifact('images-viewer-phone.png') });
  await page.keyboard.press('Escape');
  await own.waitFor({ state: 'detached' });
  assert.deepEqual(consoleErrors(page), []);
  await page.context().close();
});

test('the Models tab says which models take images, and a model added there can be made to', async () => {
  const page = await newPage(browser);
  const { call } = await apiLogin(server.url, 'painter', undefined, { register: false });
  const real = (await call('GET', '/api/admin/models')).json;
  const serverHasInput = real.models.some((m) => Array.isArray(m.input));
  if (!serverHasInput) {
    // Mocked: this branch's catalogue has no `input` yet (images-contract); the demo
    // model's entry gets the contract's fields, as the server says them.
    await page.route('**/api/admin/models', async (route) => {
      if (route.request().method() !== 'GET') { await route.fallback(); return; }
      const resp = await route.fetch();
      const json = await resp.json();
      json.models = json.models.map((m) => ({ ...m, input: ['text', 'image'], max_image_bytes: 5 * 1024 * 1024, max_images: 20 }));
      await route.fulfill({ response: resp, json });
    });
  }
  const posted = [];
  await page.route('**/api/admin/models', async (route) => {
    if (route.request().method() !== 'POST') { await route.fallback(); return; }
    const body = route.request().postDataJSON();
    posted.push(body);
    // Mocked where the server would refuse the contract's fields as unknown.
    if (!serverHasInput) await route.fulfill({ status: 201, json: { ...body, source: 'api' } });
    else await route.fallback();
  });
  await signInViaUi(page, server.url, 'painter');
  await page.goto(`${server.url}/admin/models`);
  const models = page.getByRole('table', { name: 'Models' });
  await models.waitFor();
  const demoName = real.models[0].name;
  const row = models.getByRole('row').filter({ has: page.getByRole('rowheader', { name: demoName, exact: true }) });
  const expected = serverHasInput ? null : 'text, images (≤ 20 per request, ≤ 5.0 MB each)';
  const input = row.getByRole('cell').filter({ hasText: /^text/ });
  await input.waitFor();
  if (expected) assert.equal((await input.innerText()).trim(), expected);
  else assert.match(await input.innerText(), /^text, images/);

  await page.getByRole('button', { name: 'Add model' }).click();
  const form = page.getByRole('form', { name: 'Add a model' });
  await form.getByLabel('Name', { exact: true }).fill('seer');
  const most = form.getByLabel('Most images per request', { exact: true });
  assert.ok(await most.isHidden(), 'the limits show once the box is ticked');
  await form.getByLabel('Takes images', { exact: true }).check();
  await most.fill('4');
  await form.getByRole('button', { name: 'Create model' }).click();
  await form.waitFor({ state: 'detached' });
  assert.equal(posted.length, 1);
  assert.deepEqual([posted[0].name, posted[0].input, posted[0].max_images], ['seer', ['text', 'image'], 4]);
  assert.equal(posted[0].max_image_bytes, undefined, 'left empty: the server default');
  if (serverHasInput) {
    const seer = models.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'seer', exact: true }) });
    await seer.getByRole('cell').filter({ hasText: /^text, images \(≤ 4 per request/ }).waitFor();
  }
  await page.getByText('Model seer added.').waitFor();
  assert.deepEqual(consoleErrors(page), []);
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.context().close();
});
