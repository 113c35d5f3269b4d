/**
 * Two renewers of one mailbox's OAuth grant at the same moment (channels/oauth-tokens.ts), against
 * a real OpenID provider on loopback (oidc-provider) that rotates refresh tokens and, as the OAuth
 * security BCP asks, revokes the whole grant when a spent refresh token comes back. On one host
 * the runner and the mailbox check each keep a token keeper; every sync server process has both.
 *
 * - Unserialized, the two refresh with the same refresh token and the provider revokes the grant:
 *   a good sender would be disconnected (the case the lock exists for, shown against the provider).
 * - With the process's renewal lock, the second renewer waits, reads the grant the first stored,
 *   and uses it: one refresh at the provider, the grant alive.
 * - Across server processes (two PostgreSQL pools standing for two processes), the advisory lock
 *   does the same.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizationUrl, exchangeCode, newPkce, parseGrant, refreshGrant, resolveProvider } from '../../channels/oauth.ts';
import { createOAuthTokens } from '../../channels/oauth-tokens.ts';
import type { RenewalLock } from '../../channels/oauth-tokens.ts';
import { ChannelFailure } from '../../shared/engine/channel.ts';
import { newSender } from '../../shared/model/factories.ts';
import { advisoryRenewalLock } from '../../sync-server/oauth.ts';
import { testDatabase } from './support/db.ts';
import { CHROMIUM_ARGS, authorize, loopbackContext, startOidc } from './support/oidc.ts';
import type { TestOidc } from './support/oidc.ts';

const CHROMIUM = '/usr/bin/chromium';
const AT_TTL_SECONDS = 2;
const MAIL = { host: '127.0.0.1', port: 1, secure: false };

let oidc: TestOidc;
let browser: Browser;
let callback: Server;
let redirectUri = '';
/** Refresh requests the provider answered (grant_type=refresh_token at its token endpoint). */
let refreshes = 0;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium.`);
  oidc = await startOidc({ accessTokenTtl: AT_TTL_SECONDS, rotateRefreshToken: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  // Where the provider sends the browser back: a page that answers, the code is read from its URL.
  callback = createServer((_req, res) => res.end('signed in'));
  await new Promise<void>((r) => callback.listen(0, '127.0.0.1', () => r()));
  redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/oauth/callback`;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await oidc?.stop();
  await new Promise<void>((r) => (callback ? callback.close(() => r()) : r()));
});

/** A fresh grant for `login`, signed in through the provider's pages as a person would. */
async function signIn(login: string): Promise<string> {
  const provider = await resolveProvider({ issuer: oidc.issuer, clientId: oidc.clientId, clientSecret: oidc.clientSecret, smtp: MAIL, imap: MAIL }, { google: null, microsoft: null });
  const { verifier, challenge, state } = newPkce();
  const context = await loopbackContext(browser);
  try {
    const page = await context.newPage();
    const back = new URL(await authorize(page, authorizationUrl(provider, { redirectUri, state, challenge, email: null }), login));
    expect(back.searchParams.get('state')).toBe(state);
    const code = back.searchParams.get('code');
    if (!code) throw new Error(`the provider sent no code: ${back.toString()}`);
    const pending = { state, workspaceId: 'w', memberId: 'm', verifier, redirectUri, email: null, hostedBy: 'server' as const, provider, expiresAt: Date.now() + 60_000 };
    return (await exchangeCode(pending, code, { now: Date.now() })).secret;
  } finally {
    await context.close();
  }
}

/** The secret store both renewers share (a host's credential store), counting writes. */
function sharedSecret(first: string) {
  let secret = first;
  let writes = 0;
  return {
    read: () => secret,
    save: (_s: unknown, next: string) => {
      secret = next;
      writes++;
      return Promise.resolve();
    },
    get secret() {
      return secret;
    },
    get writes() {
      return writes;
    },
  };
}

/** Counts the provider's refresh answers, passing every request on unchanged; a refresh goes out
 * 300 ms late, as over a real network, so two unserialized renewers surely overlap. */
const countingFetch: typeof fetch = async (input, init) => {
  const body = init?.body;
  if (body instanceof URLSearchParams && body.get('grant_type') === 'refresh_token') {
    refreshes++;
    await new Promise((r) => setTimeout(r, 300));
  }
  return fetch(input, init);
};

const sender = (email: string) => newSender({ id: `s-${email}`, workspaceId: 'w', now: new Date().toISOString() }, { name: email, ownerMemberId: 'm', channel: 'email' });

/** Waits until the grant's access token is inside its renewal margin (both keepers will renew). */
async function untilExpired(secret: string): Promise<void> {
  await new Promise((r) => setTimeout(r, Math.max(0, grantOf(secret).expiresAt - Date.now()) + 50));
}

/** Two token keepers (the runner's and the mailbox check's) over one stored grant. */
function twoKeepers(store: ReturnType<typeof sharedSecret>, locks: [RenewalLock | undefined, RenewalLock | undefined]) {
  const keeper = (lock: RenewalLock | undefined) => createOAuthTokens({ read: store.read, save: store.save, fetch: countingFetch, ...(lock ? { lock } : {}) });
  return [keeper(locks[0]), keeper(locks[1])] as const;
}

/** The grant a stored secret holds. */
function grantOf(secret: string) {
  const g = parseGrant(secret);
  if (!g) throw new Error('the stored secret is not a grant');
  return g;
}

describe('two renewers of one grant, provider with refresh-token rotation and replay detection', () => {
  it('unserialized, the second refresh reuses the spent token and the provider revokes the grant', async () => {
    const store = sharedSecret(await signIn('race-unserialized@acme.test'));
    const s = sender('race-unserialized@acme.test');
    const none: RenewalLock = (_id, work) => work();
    const [a, b] = twoKeepers(store, [none, none]);
    await untilExpired(store.secret);
    const results = await Promise.allSettled([a.auth(s), b.auth(s)]);
    const failed = results.filter((r) => r.status === 'rejected');
    expect(failed).toHaveLength(1);
    const reason = (failed[0] as PromiseRejectedResult).reason as unknown;
    expect(reason).toBeInstanceOf(ChannelFailure);
    expect((reason as ChannelFailure).kind).toBe('unauthorized');
    // The provider revoked the grant: even the refresh token the winner stored is dead now.
    await expect(refreshGrant(grantOf(store.secret), { now: Date.now() })).rejects.toMatchObject({ code: 'invalid_grant' });
  }, 60_000);

  it('with the process lock, one refreshes, the other uses the grant it stored, and the grant stays alive', async () => {
    const store = sharedSecret(await signIn('race-process@acme.test'));
    const s = sender('race-process@acme.test');
    const [a, b] = twoKeepers(store, [undefined, undefined]);
    await untilExpired(store.secret);
    const before = refreshes;
    const [ta, tb] = await Promise.all([a.auth(s), b.auth(s)]);
    expect(refreshes - before).toBe(1);
    expect(store.writes).toBe(1);
    expect(ta.accessToken).toBe(tb.accessToken);
    expect(ta.accessToken).toBe(parseGrant(store.secret)?.accessToken);
    expect((await oidc.introspect(ta.accessToken)).active).toBe(true);
    // The stored (rotated) refresh token still works: nothing was revoked.
    await expect(refreshGrant(grantOf(store.secret), { now: Date.now() })).resolves.toMatchObject({ kind: 'oauth2' });
  }, 60_000);

  it('a mail server refusing the token makes one renewal, and the other keeper takes its result', async () => {
    const store = sharedSecret(await signIn('race-refused@acme.test'));
    const s = sender('race-refused@acme.test');
    const [a, b] = twoKeepers(store, [undefined, undefined]);
    const first = await a.auth(s);
    // Both were told the (unexpired) token was refused, e.g. after the mailbox's password changed.
    a.refusedToken(s);
    b.refusedToken(s);
    const before = refreshes;
    const [ta, tb] = await Promise.all([a.auth(s), b.auth(s)]);
    expect(refreshes - before).toBe(1);
    expect(ta.accessToken).not.toBe(first.accessToken);
    expect(tb.accessToken).toBe(ta.accessToken);
  }, 60_000);

  it.runIf(Boolean(process.env.DATABASE_URL))('across server processes (two PostgreSQL pools), the advisory lock serializes them', async () => {
    const db = testDatabase('postgres');
    const [one, two] = [await db.open(), await db.open()];
    try {
      // Both pools connected before the race, so neither waits for its first connection.
      await Promise.all([one.query('SELECT 1'), two.query('SELECT 1')]);
      const store = sharedSecret(await signIn('race-servers@acme.test'));
      const s = sender('race-servers@acme.test');
      const [a, b] = twoKeepers(store, [advisoryRenewalLock(one), advisoryRenewalLock(two)]);
      await untilExpired(store.secret);
      const before = refreshes;
      const [ta, tb] = await Promise.all([a.auth(s), b.auth(s)]);
      expect(refreshes - before).toBe(1);
      expect(ta.accessToken).toBe(tb.accessToken);
      await expect(refreshGrant(grantOf(store.secret), { now: Date.now() })).resolves.toMatchObject({ kind: 'oauth2' });
    } finally {
      await one.close();
      await two.close();
      await db.cleanup();
    }
  }, 60_000);
});
