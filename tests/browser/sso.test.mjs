// Single sign-on in Chromium against a real OpenID provider (npm's oidc-provider, run by
// tests/oidc/provider.mjs): the "Sign in with …" button, the provider's redirect back, the
// session restored from the refresh cookie, the role from the groups; a denied consent ends
// on a page that says so; with password sign-in off, no password form.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { startServer, launchBrowser, newPage, artifact } from './harness.mjs';

const oidcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'oidc');
let idp;
let issuer;
let server;
let browser;

async function startProvider() {
  execFileSync('bash', [path.join(oidcDir, 'install.sh')], { stdio: 'inherit' });
  const child = spawn('node', [path.join(oidcDir, 'provider.mjs')], { cwd: oidcDir, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    lines.on('line', (l) => { if (l.startsWith('READY ')) resolve(l.slice(6)); });
    child.on('exit', (code) => reject(new Error(`provider exited with ${code}`)));
  });
  return { child, url };
}

async function control(pathname, body) {
  const r = await fetch(`${issuer}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(r.status, 204, await r.text());
}

before(async () => {
  ({ child: idp, url: issuer } = await startProvider());
  [server, browser] = await Promise.all([
    startServer({
      env: {
        AGENTCHAT_OIDC_ISSUER: issuer,
        AGENTCHAT_OIDC_CLIENT_ID: 'agentchat',
        AGENTCHAT_OIDC_CLIENT_SECRET: 'agentchat-test-secret',
        AGENTCHAT_OIDC_ROLE_MAP: 'admins=admin,staff=member',
        AGENTCHAT_OIDC_DISPLAY_NAME: 'Test IdP',
        AGENTCHAT_PASSWORD_LOGIN: 'disabled',
      },
    }),
    launchBrowser(),
  ]);
  await control('/test/configure', { redirect_uris: [`${server.url}/api/auth/oidc/callback`] });
});

after(async () => {
  await browser?.close();
  await server?.stop();
  idp?.kill('SIGTERM');
});

test('sign in with the identity provider, reload, sign out', async () => {
  await control('/test/account', { sub: 'sub-ada', preferred_username: 'ada', groups: ['admins'] });
  const page = await newPage(browser);
  await page.goto(`${server.url}/login`);
  // Password sign-in is off: only the provider's button.
  const button = page.getByRole('link', { name: 'Sign in with Test IdP' });
  await button.waitFor();
  assert.equal(await page.getByLabel('Password').count(), 0);
  await page.screenshot({ path: artifact('sso-sign-in.png') });
  await button.click();
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  // The groups made this account an admin.
  await page.getByRole('link', { name: 'Admin' }).waitFor();
  await page.reload();
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  // The users view shows where the account comes from.
  await page.getByRole('link', { name: 'Admin' }).click();
  await page.getByRole('row', { name: /ada.*SSO/ }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
  assert.deepEqual(page.errors.filter((e) => !/401|Failed to load resource/.test(e)), []);
  await page.context().close();
});

test('a denied consent ends on a page that says what happened', async () => {
  await control('/test/account', { sub: 'sub-bea', deny: true });
  const page = await newPage(browser);
  await page.goto(`${server.url}/login`);
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
  await page.getByRole('heading', { name: 'Sign-in failed' }).waitFor();
  await page.getByRole('alert').filter({ hasText: /cancelled or access was denied/ }).waitFor();
  await page.screenshot({ path: artifact('sso-denied.png') });
  await page.getByRole('link', { name: 'Back to sign in' }).click();
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
  await page.context().close();
});
