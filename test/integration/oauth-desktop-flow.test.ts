/**
 * The desktop's OAuth sign-in end to end (RFC 8252): the backend begins (state and PKCE verifier
 * kept in its process) and listens on a loopback port; Chromium (Playwright) goes through a real
 * OpenID provider's sign-in and consent (oidc-provider on loopback) and is sent back to that port;
 * the backend checks the state, exchanges the code and connects the mailbox. A redirect with
 * another state is refused and the sign-in goes on waiting; the user cancelling, or nobody
 * answering in time, ends it; a replayed state is refused. Each refusal stores nothing: no sender,
 * no secret.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Backend } from '../../electron/backend/backend.ts';
import { desktopSenderCredentials, fileCredentialStore } from '../../electron/backend/credentials.ts';
import type { CredentialStore } from '../../electron/backend/credentials.ts';
import { openMemoryLocalDb } from '../../electron/backend/local-db-port.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import { desktopSenderVerifier } from '../../electron/backend/desktop.ts';
import { dnsResolver } from '../../channels/dns-check.ts';
import type { SenderVerifier } from '../../shared/context.ts';
import type { Sender } from '../../shared/model/index.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from '../support/harness.ts';
import { CHROMIUM_ARGS, authorize, loopbackContext, startOidc } from './support/oidc.ts';
import type { TestOidc } from './support/oidc.ts';
import { passingZone, startDns } from './support/dns-server.ts';
import { until } from '../support/until.ts';

const CHROMIUM = '/usr/bin/chromium';
const NOW = '2026-11-16T10:00:00.000Z';

let oidc: TestOidc;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium.`);
  oidc = await startOidc({ accessTokenTtl: 60 });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await oidc?.stop();
});

const opened: Backend[] = [];
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close();
});

/** A memory credential store that also says what it holds (the safeStorage file's stand-in). */
function memoryStore(): CredentialStore & { entries: Map<string, string> } {
  const entries = new Map<string, string>();
  return {
    entries,
    protection: 'memory (test)',
    get: async (name) => entries.get(name) ?? null,
    set: async (name, secret) => void entries.set(name, secret),
    delete: async (name) => void entries.delete(name),
  };
}

async function desktop(opts: { oauthTimeoutMs?: number; verifier?: (creds: ReturnType<typeof desktopSenderCredentials>) => SenderVerifier } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'crm-oauth-'));
  const session = new SessionManager({
    dataDir,
    openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }),
    credentials: fileCredentialStore(join(dataDir, 'credentials.json')),
    buildDemo: () => {
      const ws = workspaceCreation(sequentialIds(3), NOW, { name: 'Desk', owner: { name: 'Sam Sender', email: 'sam@acme.test' }, subscriptionStatus: 'active' });
      return { workspaceId: ws.workspaceId, workspaceName: 'Desk', member: { id: ws.ownerId, name: 'Sam Sender', role: 'owner' }, writes: ws.writes };
    },
  });
  const secrets = memoryStore();
  const lines: string[] = [];
  const senderCredentials = desktopSenderCredentials(secrets);
  const backend = new Backend({
    session, senderCredentials, log: (l) => lines.push(l), ...(opts.oauthTimeoutMs !== undefined ? { oauthTimeoutMs: opts.oauthTimeoutMs } : {}),
    // Without one the mailbox is not checked here (its check says so): the flow is what these tests are about.
    ...(opts.verifier ? { senderVerifier: opts.verifier(senderCredentials) } : {}),
  });
  opened.push(backend);
  await session.openDemo();
  const senders = async (): Promise<Sender[]> => {
    const r = await backend.call('sdrProfiles.list', {});
    if (!r.ok) throw new Error(r.error.message);
    return (r.value as { sdrProfiles: Sender[] }).sdrProfiles;
  };
  return { backend, secrets, lines, senders };
}

const provider = () => ({ issuer: oidc.issuer, clientId: oidc.clientId, clientSecret: oidc.clientSecret, scopes: ['mail'], smtp: { host: '127.0.0.1', port: 2525, secure: false }, imap: { host: '127.0.0.1', port: 1143, secure: false } });

type Begun = { authorizationUrl: string; state: string; redirectUri: string };

async function begin(backend: Backend, extra: Record<string, unknown> = {}): Promise<Begun> {
  const r = await backend.call('sdrProfiles.oauth.begin', { provider: provider(), ...extra });
  if (!r.ok) throw new Error(r.error.message);
  return r.value as Begun;
}

const status = async (backend: Backend, state: string) => {
  const r = await backend.call('sdrProfiles.oauth.status', { state });
  if (!r.ok) throw new Error(r.error.message);
  return r.value as { status: string; sdrProfileId: string | null; message: string | null };
};

describe('the desktop signs a mailbox in through the system browser and a loopback redirect', () => {
  it('begins with PKCE and a loopback redirect on a free port; a wrong state is refused; Chromium signs in and the mailbox is connected', async () => {
    const d = await desktop();
    const b = await begin(d.backend);
    const url = new URL(b.authorizationUrl);
    expect(url.origin).toBe(oidc.issuer);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('state')).toBe(b.state);
    expect(b.redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/callback$/);
    expect(url.searchParams.get('redirect_uri')).toBe(b.redirectUri);
    // The verifier never leaves the backend.
    expect(b.authorizationUrl).not.toMatch(/code_verifier/);

    // Another state on the loopback address: refused, nothing stored, the sign-in still waits.
    const forged = await fetch(`${b.redirectUri}?state=${'x'.repeat(43)}&code=forged-code`);
    expect(forged.status).toBe(400);
    expect(await forged.text()).toMatch(/does not match/);
    expect(await d.senders()).toEqual([]);
    expect(d.secrets.entries.size).toBe(0);
    expect((await status(d.backend, b.state)).status).toBe('waiting');

    const context = await loopbackContext(browser);
    try {
      const page = await context.newPage();
      const landed = await authorize(page, b.authorizationUrl, 'sam@acme.test');
      expect(landed.startsWith(b.redirectUri)).toBe(true);
      expect(await page.textContent('h1')).toBe('Mailbox connected');
      const done = await until('connected', async () => {
        const s = await status(d.backend, b.state);
        return s.status === 'waiting' ? null : s;
      }, 15_000);
      expect(done).toMatchObject({ status: 'connected', message: null });
      const [sender] = await d.senders();
      expect(sender).toMatchObject({ id: done.sdrProfileId, name: 'sam@acme.test', channel: 'email', status: 'available', hostedBy: 'desktop' });
      // The grant is kept in the credential store like a password, never in the document.
      const stored = [...d.secrets.entries.values()];
      expect(stored).toHaveLength(1);
      const grant = JSON.parse(stored[0] ?? '{}') as { refreshToken: string; accessToken: string; clientSecret: string };
      expect(grant.refreshToken.length).toBeGreaterThan(20);
      expect((await oidc.introspect(grant.accessToken)).active).toBe(true);
      const r = await d.backend.call('sdrProfiles.list', {});
      const doc = JSON.stringify(r);
      for (const secret of [grant.refreshToken, grant.accessToken, oidc.clientSecret]) expect(doc).not.toContain(secret);

      // The same state again (a replay): refused, nothing more stored.
      const replay = await d.backend.call('sdrProfiles.oauth.complete', { state: b.state, code: 'whatever-code' });
      expect(replay.ok).toBe(false);
      expect(!replay.ok && replay.error.message).toMatch(/unknown here, was already used/);
      expect(d.secrets.entries.size).toBe(1);
      expect(await d.senders()).toHaveLength(1);

      // Everything the desktop logged or answered is free of the secrets.
      const said = JSON.stringify([d.lines, replay, await status(d.backend, b.state)]);
      for (const secret of [grant.refreshToken, grant.accessToken, oidc.clientSecret]) expect(said).not.toContain(secret);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('the user cancelling at the provider connects nothing and says so', async () => {
    const d = await desktop();
    const b = await begin(d.backend);
    const context = await loopbackContext(browser);
    try {
      const page = await context.newPage();
      await authorize(page, b.authorizationUrl, 'sam@acme.test', 'cancel');
      expect(await page.textContent('h1')).toBe('Mailbox not connected');
      const s = await until('failed', async () => {
        const x = await status(d.backend, b.state);
        return x.status === 'waiting' ? null : x;
      }, 15_000);
      expect(s.status).toBe('failed');
      expect(s.message).toMatch(/cancelled.*nothing was connected/);
      expect(await d.senders()).toEqual([]);
      expect(d.secrets.entries.size).toBe(0);
      // The listener is gone: nothing else can answer for this sign-in.
      await until('the listener closed', async () => (await fetch(`${b.redirectUri}?state=${b.state}&code=late`).then(() => null, () => true)), 15_000);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('a mailbox whose servers cannot be logged in to is not connected: the check runs before anything is stored', async () => {
    // Ports where nothing listens: taken from the system, then let go.
    const freePort = () => new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const { port } = srv.address() as AddressInfo;
        srv.close(() => resolve(port));
      });
    });
    const dns = await startDns(passingZone('acme.test'));
    try {
      const d = await desktop({ verifier: (creds) => desktopSenderVerifier(creds, () => undefined, { resolve: dnsResolver(dns.servers), timeoutMs: 5_000 }) });
      const r = await d.backend.call('sdrProfiles.oauth.begin', { provider: { ...provider(), smtp: { host: '127.0.0.1', port: await freePort(), secure: false }, imap: { host: '127.0.0.1', port: await freePort(), secure: false } } });
      if (!r.ok) throw new Error(r.error.message);
      const b = r.value as Begun;
      const context = await loopbackContext(browser);
      try {
        const page = await context.newPage();
        await authorize(page, b.authorizationUrl, 'sam@acme.test');
        expect(await page.textContent('h1')).toBe('Mailbox not connected');
      } finally {
        await context.close();
      }
      const s = await until('failed', async () => {
        const x = await status(d.backend, b.state);
        return x.status === 'waiting' ? null : x;
      }, 15_000);
      expect(s.status).toBe('failed');
      expect(s.message).toMatch(/sam@acme\.test was not connected: SMTP: 127\.0\.0\.1:\d+ could not be reached .* IMAP: 127\.0\.0\.1:\d+ could not be reached/);
      expect(await d.senders()).toEqual([]);
      expect(d.secrets.entries.size).toBe(0);
    } finally {
      await dns.close();
    }
  }, 60_000);

  it('nobody answering in time ends the sign-in with nothing stored; an expired code is not exchanged', async () => {
    const d = await desktop({ oauthTimeoutMs: 300 });
    const b = await begin(d.backend);
    const s = await until('timed out', async () => {
      const x = await status(d.backend, b.state);
      return x.status === 'failed' ? x : null;
    }, 15_000);
    expect(s.message).toMatch(/not finished within 10 minutes/);
    const late = await d.backend.call('sdrProfiles.oauth.complete', { state: b.state, code: 'late-code' });
    expect(!late.ok && late.error.code).toBe('INVALID_INPUT');
    expect(await d.senders()).toEqual([]);
    expect(d.secrets.entries.size).toBe(0);
  }, 30_000);

  it('refuses an http issuer off loopback and a redirect that is neither https nor loopback, storing nothing', async () => {
    const d = await desktop();
    const http = await d.backend.call('sdrProfiles.oauth.begin', { provider: { ...provider(), issuer: 'http://idp.example.test' } });
    expect(!http.ok && http.error.message).toMatch(/https address \(http is accepted only on this machine's loopback/);
    const redirect = await d.backend.call('sdrProfiles.oauth.begin', { provider: provider(), redirectUri: 'http://evil.example.test/cb' });
    expect(!redirect.ok && redirect.error.code).toBe('INVALID_INPUT');
    const notSetUp = await d.backend.call('sdrProfiles.oauth.begin', { provider: 'microsoft' });
    expect(!notSetUp.ok && notSetUp.error.message).toMatch(/MICROSOFT_OAUTH_CLIENT_ID/);
    const server = await d.backend.call('sdrProfiles.oauth.begin', { provider: provider(), hostedBy: 'server' });
    expect(!server.ok && server.error.code).toBe('SERVER_ONLY');
    expect(await d.senders()).toEqual([]);
    expect(d.secrets.entries.size).toBe(0);
  });
});
