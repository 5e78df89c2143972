// A real OpenID provider for the SSO tests: the certified `oidc-provider` package, run on a
// free port of 127.0.0.1. Prints `READY <issuer>` when it listens. The tests steer it over
// plain HTTP under /test/ (never part of a real provider):
//   POST /test/configure {redirect_uris, id_token_ttl?, token_delay_ms?}   (re)builds the client
//   POST /test/account   {sub, groups, email?, preferred_username?, deny?} who the next sign-in is
//   POST /test/rotate                                                  a new signing key; the old one is gone
// The login and consent prompts finish on their own for that account (no form), or end in
// `access_denied` when `deny` is set.
import { createServer } from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';

const CLIENT_ID = process.env.OIDC_CLIENT_ID || 'agentchat';
const CLIENT_SECRET = process.env.OIDC_CLIENT_SECRET || 'agentchat-test-secret';

let settings = { redirect_uris: ['http://127.0.0.1/unset'], id_token_ttl: 3600, token_delay_ms: 0 };
let account = { sub: 'user-1', groups: [], email: 'user1@example.com', preferred_username: 'user1', deny: false };
const accounts = new Map();
let signingKey = newKey();
let provider;
let issuer;

function newKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };
}

function build() {
  const p = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: settings.redirect_uris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys: [signingKey] },
    pkce: { required: () => true },
    conformIdTokenClaims: false,
    claims: {
      openid: ['sub', 'groups'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name'],
    },
    features: { devInteractions: { enabled: false } },
    ttl: { IdToken: () => settings.id_token_ttl, AccessToken: 600, AuthorizationCode: 60, Interaction: 600, Session: 3600, Grant: 3600 },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['test-cookie-key'] },
    findAccount: async (ctx, sub) => {
      const a = accounts.get(sub);
      if (!a) return undefined;
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          groups: a.groups,
          email: a.email,
          email_verified: true,
          preferred_username: a.preferred_username,
          name: a.preferred_username,
        }),
      };
    },
  });
  p.proxy = false;
  // An ID token that arrives after it expired: the token response is held back.
  p.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/token' && settings.token_delay_ms > 0) {
      await new Promise((r) => setTimeout(r, settings.token_delay_ms));
    }
  });
  return p;
}

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (account.deny) {
    await provider.interactionFinished(req, res,
      { error: 'access_denied', error_description: 'the user did not consent' },
      { mergeWithLastSubmission: false });
    return;
  }
  if (details.prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: account.sub } },
      { mergeWithLastSubmission: false });
    return;
  }
  const grant = new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  grant.addOIDCScope(String(details.params.scope || 'openid'));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => { try { resolve(body ? JSON.parse(body) : {}); } catch (e) { reject(e); } });
  });
}

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (url.pathname === '/test/configure' && req.method === 'POST') {
      settings = { ...settings, ...(await readJson(req)) };
      provider = build();
    } else if (url.pathname === '/test/account' && req.method === 'POST') {
      account = { groups: [], deny: false, ...(await readJson(req)) };
      account.email ??= `${account.sub}@example.com`;
      account.preferred_username ??= account.sub;
      accounts.set(account.sub, account);
    } else if (url.pathname === '/test/rotate' && req.method === 'POST') {
      signingKey = newKey();
      provider = build();
    } else if (url.pathname.startsWith('/interaction/')) {
      await interaction(req, res);
      return;
    } else {
      provider.callback()(req, res);
      return;
    }
    res.writeHead(204).end();
  } catch (e) {
    console.error(e);
    if (!res.headersSent) res.writeHead(500).end(String(e));
  }
});

server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  accounts.set(account.sub, account);
  provider = build();
  console.log(`READY ${issuer}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
