// A real OpenID Provider (panva's oidc-provider) for weaver's tests, started by
// weaver-testkit's `oidc` module:
//
//   node tools/oidc/provider.mjs --port N --key-dir DIR --keys kidA,kidB --config FILE
//
// It prints one line, {"ready":true,"issuer":"http://127.0.0.1:N"}, once it listens, and
// nothing else on stdout (the helper reads that line; oidc-provider's warnings go to stderr).
// Everything but the signing keys lives in memory: a restart forgets sessions, grants and
// tokens, which is what a test that restarts the provider to rotate keys wants.

import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';

// oidc-provider prints its notices ("default … function called, you SHOULD change it") with
// console.info, that is on stdout, where the only line must be the ready line.
console.info = console.error;
console.log = console.error;

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    'key-dir': { type: 'string' },
    keys: { type: 'string' },
    config: { type: 'string' },
  },
});
for (const name of ['port', 'key-dir', 'keys', 'config']) {
  if (!args[name]) {
    console.error(`provider.mjs: --${name} is required`);
    process.exit(2);
  }
}

const port = Number(args.port);
const issuer = `http://127.0.0.1:${port}`;
const config = JSON.parse(readFileSync(args.config, 'utf8'));
const kids = args.keys.split(',').map((kid) => kid.trim()).filter(Boolean);

// A key already in the key directory is reused, so that a restart with another list of kids
// publishes the same key material a test's tokens were signed with. The PEM files are for the
// test itself: to sign tokens of its own with the provider's key, or to configure a verifier
// with a public key instead of the JWKS.
function loadOrCreateKey(kid) {
  const jwkPath = join(args['key-dir'], `${kid}.jwk.json`);
  if (existsSync(jwkPath)) {
    return JSON.parse(readFileSync(jwkPath, 'utf8'));
  }
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  writeFileSync(join(args['key-dir'], `${kid}.pem`), privateKey.export({ format: 'pem', type: 'pkcs8' }));
  writeFileSync(join(args['key-dir'], `${kid}.pub.pem`), publicKey.export({ format: 'pem', type: 'spki' }));
  // Written last: its presence is what marks the key as complete.
  writeFileSync(jwkPath, JSON.stringify(jwk, null, 2));
  return jwk;
}

// Our `claims` field is not client metadata; oidc-provider would reject it.
const clientClaims = new Map();
const clients = config.clients.map(({ claims, ...metadata }) => {
  if (claims) clientClaims.set(metadata.client_id, claims);
  return metadata;
});
const accounts = config.accounts ?? {};

const provider = new Provider(issuer, {
  clients,
  // oidc-provider signs with the first key that fits, so the order given is the order of
  // preference: the first kid signs, the others are only published.
  jwks: { keys: kids.map(loadOrCreateKey) },
  // Fixed so that cookies a browser holds stay valid across a restart of the provider (the
  // sessions they name do not, as those live in memory).
  cookies: { keys: ['weaver-tests-only-not-a-secret'] },
  // Any login name is an account whose subject is that name; its extra claims come from the
  // configuration's `accounts`, and reach the access token through extraTokenClaims.
  findAccount(_ctx, id) {
    return { accountId: id, claims: async () => ({ sub: id }) };
  },
  // The console client asks for the refresh_token grant; issuing a refresh token whenever a
  // client may use it (rather than only with `offline_access`) lets a test refresh without
  // asking for offline access, which would need a `prompt=consent` of its own.
  issueRefreshToken(_ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  extraTokenClaims(_ctx, token) {
    // Client credentials tokens carry the client's claims; tokens issued to a user (an
    // authorization code, a refresh) carry the account's.
    if (token.kind === 'ClientCredentials') return clientClaims.get(token.clientId);
    return accounts[token.accountId]?.claims;
  },
  features: {
    // The dev login and consent pages are what the browser tests drive.
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // An authorization request without a `resource` parameter is still for the API, so the
      // console gets a JWT access token for it without knowing the indicator.
      defaultResource(_ctx, _client, oneOf) {
        if (Array.isArray(oneOf)) return oneOf.includes(config.resource) ? config.resource : oneOf[0];
        return config.resource;
      },
      // Without this a token request that names no resource (an authorization code or refresh
      // exchange) would get an opaque token for the userinfo endpoint instead of the API.
      useGrantedResource: () => true,
      getResourceServerInfo(_ctx, resource) {
        if (resource !== config.resource) throw new errors.InvalidTarget();
        return {
          scope: 'api',
          audience: config.resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: config.accessTokenTtl,
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});

// Counts JWKS fetches, so that a test can check a verifier's key cache (one fetch for many
// tokens, one more after an unknown kid).
let jwksRequests = 0;
provider.use(async (ctx, next) => {
  if (ctx.path === '/__stats') {
    ctx.body = { jwks: jwksRequests };
    return;
  }
  if (ctx.path === '/jwks') jwksRequests += 1;
  await next();
});

provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ ready: true, issuer })}\n`);
});
