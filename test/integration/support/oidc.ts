/**
 * A real OpenID provider for tests (the `oidc-provider` package, not a stub) on loopback: the app
 * "crm" (a native client with a secret, PKCE required, loopback redirects on any port as RFC 8252
 * 7.3 wants), refresh tokens, revocation, and introspection for the mail servers (client
 * "mailserver"). Access tokens are opaque, for the resource `urn:test:mail` with the scope `mail`,
 * and live `accessTokenTtl` seconds, so a test sees them expire. The dev interactions are the
 * sign-in and consent pages a browser (Playwright) goes through; `authorize` drives them.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { Browser, BrowserContext, Page } from 'playwright-core';

export type TestOidc = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Asks the introspection endpoint, as the mail servers do. */
  introspect(token: string): Promise<{ active: boolean; sub?: string }>;
  /** Revokes a refresh token (and with it the grant and its access tokens). */
  revoke(refreshToken: string): Promise<void>;
  stop(): Promise<void>;
};

export const MAIL_SERVER_CLIENT = { id: 'mailserver', secret: 'mailserver-introspection-secret' };

export async function startOidc(opts: { accessTokenTtl: number; clientSecret?: string; rotateRefreshToken?: boolean }): Promise<TestOidc> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server: Server = createServer((req, res) => handler(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const clientSecret = opts.clientSecret ?? `crm-client-secret-${Math.random().toString(36).slice(2)}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'crm', client_secret: clientSecret, application_type: 'native',
        redirect_uris: ['http://127.0.0.1/oauth/callback'],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
      { client_id: MAIL_SERVER_CLIENT.id, client_secret: MAIL_SERVER_CLIENT.secret, redirect_uris: [], grant_types: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic' },
    ],
    pkce: { required: () => true },
    scopes: ['openid', 'email', 'offline_access', 'mail'],
    claims: { email: ['email'] },
    // The email claim in the ID token itself (the access token is for the mail resource, not userinfo).
    conformIdTokenClaims: false,
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id, email: id }) }),
    features: {
      devInteractions: { enabled: true },
      // Only the mail servers may ask what a token is.
      introspection: { enabled: true, allowedPolicy: async (_ctx, client) => client.clientId === MAIL_SERVER_CLIENT.id },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:test:mail',
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: 'mail', accessTokenFormat: 'opaque', accessTokenTTL: opts.accessTokenTtl }),
      },
    },
    ttl: { AccessToken: opts.accessTokenTtl, IdToken: 600, AuthorizationCode: 60, RefreshToken: 3600, Interaction: 600, Session: 600, Grant: 3600 },
    // By default one refresh token, as Google keeps it. With rotation (Microsoft's way, and the OAuth
    // security BCP's), every refresh answers a new one, and a spent one coming back revokes the grant.
    rotateRefreshToken: opts.rotateRefreshToken ?? false,
  });
  handler = provider.callback();
  const basic = `Basic ${Buffer.from(`${MAIL_SERVER_CLIENT.id}:${MAIL_SERVER_CLIENT.secret}`).toString('base64')}`;
  return {
    issuer,
    clientId: 'crm',
    clientSecret,
    async introspect(token) {
      const res = await fetch(`${issuer}/token/introspection`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }) });
      return (await res.json()) as { active: boolean; sub?: string };
    },
    async revoke(refreshToken) {
      const res = await fetch(`${issuer}/token/revocation`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token', client_id: 'crm', client_secret: clientSecret }) });
      if (!res.ok) throw new Error(`revocation failed: HTTP ${res.status} ${await res.text()}`);
    },
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A browser context that reaches loopback only (the dev pages import a web font). */
export async function loopbackContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext();
  await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/]|localhost[:/])/, (route) => route.abort());
  return context;
}

/**
 * Goes through the provider's sign-in and consent as a person would: signs in as `login`, then
 * either continues (consent) or cancels. Resolves once the browser was sent to the redirect address
 * (its URL), whatever answered there.
 */
export async function authorize(page: Page, authorizationUrl: string, login: string, choice: 'consent' | 'cancel' = 'consent'): Promise<string> {
  await page.goto(authorizationUrl, { waitUntil: 'domcontentloaded' });
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await Promise.all([page.waitForURL(/\/interaction\//, { waitUntil: 'domcontentloaded' }), page.click('button[type=submit]')]);
  // A second page: the consent (Continue), or nothing more when consent was already given.
  const redirected = page.waitForURL((u) => u.pathname === '/oauth/callback', { waitUntil: 'domcontentloaded', timeout: 15_000 });
  if (choice === 'cancel') {
    await page.click('a[href*="/abort"]');
  } else {
    await page.waitForSelector('input[name=prompt][value=consent]', { state: 'attached', timeout: 10_000 });
    await page.click('button[type=submit]');
  }
  await redirected;
  return page.url();
}
