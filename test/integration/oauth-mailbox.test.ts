/**
 * A mailbox connected with OAuth 2.0 and kept connected, on the sync server's runner, against real
 * servers on loopback: an OpenID provider (oidc-provider: PKCE, refresh tokens, introspection,
 * revocation, access tokens living 3 seconds), an SMTP server (smtp-server) that accepts only
 * XOAUTH2 and asks the provider's introspection endpoint about each token, and Dovecot with its
 * oauth2 passdb doing the same for IMAP. Chromium (Playwright) signs in at the provider and is sent
 * back to the server's GET /oauth/callback. Connect, send (with a copy in Sent over IMAP), read a
 * reply, see the expired access token renewed, revoke the grant and see the sender disconnected
 * with its reason and its lead waiting, reconnect (same sender) and see the lead go on. Then every
 * log line, document, error body and webhook payload of the run is searched for the refresh
 * token, the access tokens and the client secret.
 *
 * Long (~580 lines) because its cases share one set of real servers (provider, SMTP, Dovecot,
 * Chromium) that take seconds each to start; splitting the file would start them again.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseGrant } from '../../channels/oauth.ts';
import { Backend } from '../../electron/backend/backend.ts';
import { desktopSenderCredentials, fileCredentialStore } from '../../electron/backend/credentials.ts';
import type { CredentialStore } from '../../electron/backend/credentials.ts';
import { openMemoryLocalDb } from '../../electron/backend/local-db-port.ts';
import { startWorkspaceRunner } from '../../electron/backend/runner-host.ts';
import { desktopSenderVerifier } from '../../electron/backend/desktop.ts';
import { dnsResolver } from '../../channels/dns-check.ts';
import { passingZone, startDns } from './support/dns-server.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from '../support/harness.ts';
import { newCampaign, newEnrollment, newLead, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Lead, LeadGroup, Message } from '../../shared/model/index.ts';
import type { AnyWrite, Store } from '../../shared/store.ts';
import { WEBHOOK_EVENT_TYPES } from '../../shared/webhooks/events.ts';
import { parseCredentialsKey, serverCredentials } from '../../sync-server/credentials.ts';
import { createServerRunner } from '../../sync-server/runner-host.ts';
import type { ServerRunner } from '../../sync-server/runner-host.ts';
import { BACKENDS } from './support/db.ts';
import { startDovecot } from './support/dovecot.ts';
import type { Dovecot, DovecotUser } from './support/dovecot.ts';
import { CHROMIUM_ARGS, MAIL_SERVER_CLIENT, authorize, loopbackContext, startOidc } from './support/oidc.ts';
import type { TestOidc } from './support/oidc.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { startReceiver } from './support/webhook-receiver.ts';
import type { Receiver } from './support/webhook-receiver.ts';
import { until as pollUntil } from '../support/until.ts';

const CHROMIUM = '/usr/bin/chromium';
const MAILBOX = 'sam@acme.test';
/** The mailbox's password for the test's own deliveries (PLAIN); the sender never uses it. */
const DELIVERY: DovecotUser = { user: MAILBOX, password: 'delivery-only-password' };
const AT_TTL_SECONDS = 3;

let oidc: TestOidc;
let dovecot: Dovecot;
let smtp: SMTPServer;
let smtpPort = 0;
let browser: Browser;
/** What the SMTP server accepted, with the access token the session logged in with. */
const accepted: { to: string; raw: string; token: string }[] = [];
/** Every XOAUTH2 login the SMTP server saw: the token and whether the provider said it is active. */
const smtpLogins: { token: string; active: boolean }[] = [];
const privateHostsBefore = process.env.ALLOW_PRIVATE_SENDER_HOSTS;
/** The runners' last lines, for a failing wait's message. */
const trace: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium.`);
  process.env.ALLOW_PRIVATE_SENDER_HOSTS = '1';
  oidc = await startOidc({ accessTokenTtl: AT_TTL_SECONDS });
  const introspection = new URL(`${oidc.issuer}/token/introspection`);
  introspection.username = MAIL_SERVER_CLIENT.id;
  introspection.password = MAIL_SERVER_CLIENT.secret;
  dovecot = await startDovecot([DELIVERY], { oauth2: { introspectionUrl: introspection.toString() } });
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['XOAUTH2'],
    logger: false,
    onAuth(auth, _session, cb) {
      const token = auth.accessToken ?? '';
      // The mail server's own question to the provider, as Gmail's and Exchange's are.
      void oidc.introspect(token).then(
        (info) => {
          smtpLogins.push({ token, active: info.active });
          if (auth.method === 'XOAUTH2' && info.active && info.sub === auth.username) cb(null, { user: { name: auth.username, token } });
          else cb(null, { data: { status: '401', schemes: 'bearer', scope: 'mail' } });
        },
        (e: unknown) => cb(e instanceof Error ? e : new Error(String(e))),
      );
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const user = session.user as unknown as { token: string };
        for (const r of session.envelope.rcptTo) accepted.push({ to: r.address, raw, token: user.token });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => smtp?.close(() => resolve()));
  await dovecot?.stop();
  await oidc?.stop();
  if (privateHostsBefore === undefined) delete process.env.ALLOW_PRIVATE_SENDER_HOSTS;
  else process.env.ALLOW_PRIVATE_SENDER_HOSTS = privateHostsBefore;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (real time) until `check` holds; fails with `what` and the logs that say why after `ms`. */
const until = (what: string, check: () => Promise<boolean>, ms = 20_000): Promise<true> => pollUntil(what, check, ms, () => `runner:\n${trace.slice(-15).join('\n')}\ndovecot:\n${dovecot.log().split('\n').slice(-15).join('\n')}`);

const outEmails = async (store: Store, leadId: string): Promise<Message[]> =>
  (await store.query('messages', { where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: leadId }, { op: 'eq', field: 'direction', value: 'out' }] }, orderBy: [{ field: 'createdAt', dir: 'asc' }] })).docs;

/** A running campaign of this sender: email, wait a day, email (same thread). */
function campaignWrites(workspaceId: string, groupId: string, senderId: string, emails: string[], now: string) {
  const stamp = () => ({ id: randomUUID(), workspaceId, now });
  const first = newStep(randomUUID(), 'EMAIL', { subject: 'Idea for {{Company|your team}}', content: 'Hi {{First name|there}}, one idea.' });
  const wait = newStep(randomUUID(), 'WAIT', { waitTimeSeconds: 86_400 });
  const second = newStep(randomUUID(), 'EMAIL', { subject: 'unused', content: 'Following up, {{First name|there}}.', emailThreading: 'same_thread' });
  const campaign: Campaign = {
    ...newCampaign(stamp(), `OAuth run ${randomUUID().slice(0, 6)}`, groupId, randomUUID()),
    running: true, startedAt: now, senders: [{ sdrProfileId: senderId, paused: false }], steps: [first, wait, second],
  };
  for (const d of Object.values(campaign.schedule.days)) Object.assign(d, { enabled: true, start: '00:00', end: '24:00' });
  const leads: Lead[] = emails.map((email) => newLead(stamp(), groupId, { firstName: email.split('@')[0] ?? '', fullName: email.split('@')[0] ?? '', company: 'Analytical', email }));
  const enrollments = leads.map((l) => newEnrollment(stamp(), l.id, campaign.id, { sdrProfileId: senderId, currentStepId: first.id, nextActionAt: now }));
  const writes: AnyWrite[] = [
    { collection: 'campaigns', id: campaign.id, before: null, after: campaign },
    ...leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })),
    ...enrollments.map((e) => ({ collection: 'enrollments' as const, id: e.id, before: null, after: e })),
  ];
  return { campaign, leads, enrollments, writes };
}

function reply(from: string, inReplyTo: string): string {
  return `From: ${from}\nTo: ${MAILBOX}\nSubject: Re: Idea for Analytical\nMessage-ID: <${randomUUID()}@mail.example.test>\nDate: ${new Date().toUTCString()}\nIn-Reply-To: ${inReplyTo}\nReferences: ${inReplyTo}\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\nYes, let us talk on Tuesday.\n`;
}

describe.each(BACKENDS)('a mailbox signed in with OAuth on the sync server runner (%s)', (backend) => {
  const credentials = serverCredentials(parseCredentialsKey(randomBytes(32).toString('base64')));
  let s: TestServer;
  let rx: Receiver;
  let runner: ServerRunner | null = null;
  const runnerLog: string[] = [];
  /** Every error body an API call or callback page answered during the run. */
  const errorBodies: string[] = [];

  beforeAll(async () => {
    rx = await startReceiver();
    s = await startTestServer(backend, {
      credentials,
      // Every line the server writes, requests included, goes into the search for secrets.
      logLevel: 'info',
      webhooks: { allowHttp: true, policy: { allowPrivate: true }, delivery: { retryDelaysMs: [150], pollMs: 50, timeoutMs: 2_000, disableAfterMs: 60_000 } },
    });
  }, 60_000);
  afterAll(async () => {
    await runner?.stop();
    await s?.close();
    await rx?.close();
  });

  const providerInput = () => ({
    issuer: oidc.issuer, clientId: oidc.clientId, clientSecret: oidc.clientSecret, scopes: ['mail'],
    smtp: { host: '127.0.0.1', port: smtpPort, secure: false }, imap: { host: '127.0.0.1', port: dovecot.port, secure: false },
  });

  /** Begins on the server, signs in with Chromium, lands on the server's callback page. */
  async function signIn(extra: Record<string, unknown> = {}): Promise<{ state: string; page: string }> {
    const begun = await s.call<{ authorizationUrl: string; state: string; redirectUri: string }>(s.ours.ownerKey, 'sdrProfiles.oauth.begin', {
      provider: providerInput(), hostedBy: 'server', redirectUri: `${s.url}/oauth/callback`, ...extra,
    });
    expect(begun.status, JSON.stringify(begun.body)).toBe(200);
    const context = await loopbackContext(browser);
    try {
      const page = await context.newPage();
      const landed = await authorize(page, begun.body.authorizationUrl, MAILBOX);
      expect(landed.startsWith(`${s.url}/oauth/callback?`)).toBe(true);
      const text = (await page.textContent('body')) ?? '';
      if (!/Mailbox connected/.test(text)) errorBodies.push(text);
      return { state: begun.body.state, page: text };
    } finally {
      await context.close();
    }
  }

  const storedGrant = async (senderId: string) => {
    const g = parseGrant(await credentials.secretFor(s.sql, s.ours.workspaceId, senderId));
    if (!g) throw new Error('no grant stored');
    return g;
  };

  it('refuses an unknown, cancelled, expired, foreign or other member\'s sign-in, and another mailbox than the one reconnected, storing nothing', async () => {
    const ws = s.ours.workspaceId;
    const state = async () => JSON.stringify([await s.snapshot(ws), await s.sql.query('SELECT workspace_id, sender_id FROM sender_credentials ORDER BY sender_id')]);
    const pendingCount = async () => (await s.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM oauth_pending'))[0]?.n ?? 0;
    const begin = async (key: string, extra: Record<string, unknown> = {}) => {
      const r = await s.call<{ authorizationUrl: string; state: string }>(key, 'sdrProfiles.oauth.begin', { provider: providerInput(), hostedBy: 'server', redirectUri: `${s.url}/oauth/callback`, ...extra });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const before = await state();

    // Unknown state at the callback.
    const unknown = await fetch(`${s.url}/oauth/callback?state=${'u'.repeat(43)}&code=c`);
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toMatch(/Sign-in not recognised/);

    // The user cancels at the provider: the pending sign-in is forgotten.
    const cancelled = await begin(s.ours.ownerKey);
    const context = await loopbackContext(browser);
    try {
      await authorize(await context.newPage(), cancelled.authorizationUrl, MAILBOX, 'cancel');
    } finally {
      await context.close();
    }
    expect(await pendingCount()).toBe(0);

    // Over 10 minutes old (the server's clock), another member's, or another workspace's: refused.
    const old = await begin(s.ours.ownerKey);
    s.clock.advance(10 * 60_000 + 1_000);
    const expired = await s.call<{ error: { code: string; message: string } }>(s.ours.ownerKey, 'sdrProfiles.oauth.complete', { state: old.state, code: 'c' });
    expect(expired.status).toBe(400);
    expect(expired.body.error.message).toMatch(/more than 10 minutes ago|unknown here/);
    const mine = await begin(s.ours.ownerKey);
    const byMember = await s.call<{ error: { message: string } }>(s.ours.memberKey, 'sdrProfiles.oauth.complete', { state: mine.state, code: 'c' });
    expect(byMember.status).toBe(400);
    expect(byMember.body.error.message).toMatch(/another member/);
    const ours = await begin(s.ours.ownerKey);
    const foreign = await s.call<{ error: { message: string } }>(s.theirs.ownerKey, 'sdrProfiles.oauth.complete', { state: ours.state, code: 'c' });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.message).toMatch(/unknown here/);

    // Reconnecting another mailbox than the one signed in to.
    const wrong = await begin(s.ours.ownerKey, { email: 'someone-else@acme.test' });
    const ctx2 = await loopbackContext(browser);
    try {
      const page = await ctx2.newPage();
      await authorize(page, wrong.authorizationUrl, MAILBOX);
      expect(await page.textContent('body')).toMatch(/You signed in as sam@acme\.test, but this sender is someone-else@acme\.test/);
    } finally {
      await ctx2.close();
    }
    // A desktop-only sender cannot be begun on the server; a server without the app set up says which setting.
    const desktopOnly = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'sdrProfiles.oauth.begin', { provider: providerInput() });
    expect(desktopOnly.body.error.code).toBe('SERVER_ONLY');
    const google = await s.call<{ error: { message: string } }>(s.ours.ownerKey, 'sdrProfiles.oauth.begin', { provider: 'google', hostedBy: 'server' });
    expect(google.status).toBe(400);
    expect(google.body.error.message).toMatch(/GOOGLE_OAUTH_CLIENT_ID/);
    // No PUBLIC_URL here: without a redirectUri there is nowhere to come back to.
    const noRedirect = await s.call<{ error: { message: string } }>(s.ours.ownerKey, 'sdrProfiles.oauth.begin', { provider: providerInput(), hostedBy: 'server' });
    expect(noRedirect.body.error.message).toMatch(/PUBLIC_URL/);

    expect(await state()).toBe(before);
    // Each refused completion forgot its sign-in, so none can be presented again; another
    // workspace's key could not touch ours, which still waits for its owner.
    expect(await pendingCount()).toBe(1);
    const waiting = await s.call<{ status: string }>(s.ours.ownerKey, 'sdrProfiles.oauth.status', { state: ours.state });
    expect(waiting.body.status).toBe('waiting');
    const again = await s.call(s.ours.ownerKey, 'sdrProfiles.oauth.complete', { state: mine.state, code: 'c' });
    expect(again.status).toBe(400);
    await s.sql.query('DELETE FROM oauth_pending');
  }, 60_000);

  it('a sign-in whose mailbox refuses the login connects nothing: the callback page and the API say why (422 SENDER_CHECK_FAILED), nothing is stored, and the spent sign-in cannot be presented again', async () => {
    const ws = s.ours.workspaceId;
    const state = async () => JSON.stringify([await s.snapshot(ws), await s.sql.query('SELECT workspace_id, sender_id FROM sender_credentials ORDER BY sender_id')]);
    const pendingCount = async () => (await s.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM oauth_pending'))[0]?.n ?? 0;
    const before = await state();
    // What Exchange Online answers when SMTP AUTH is off for the mailbox: the token is good (Dovecot
    // takes it), the SMTP login is refused.
    const refusing = new SMTPServer({
      disabledCommands: ['STARTTLS'], allowInsecureAuth: true, authMethods: ['XOAUTH2'], logger: false,
      onAuth(_auth, _session, cb) {
        cb(new Error('5.7.139 Authentication unsuccessful, SmtpClientAuthentication is disabled for the Mailbox'));
      },
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    // A caller that receives the redirect itself (then calls sdrProfiles.oauth.complete over the API).
    const receiver = createServer((_req, res) => res.end('received'));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const provider = { ...providerInput(), smtp: { host: '127.0.0.1', port: (refusing.server.address() as AddressInfo).port, secure: false } };
    const begin = async (redirectUri: string) => {
      const r = await s.call<{ authorizationUrl: string; state: string }>(s.ours.ownerKey, 'sdrProfiles.oauth.begin', { provider, hostedBy: 'server', redirectUri });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    try {
      // Through the server's callback page.
      const viaPage = await begin(`${s.url}/oauth/callback`);
      const context = await loopbackContext(browser);
      let text = '';
      try {
        const page = await context.newPage();
        await authorize(page, viaPage.authorizationUrl, MAILBOX);
        text = (await page.textContent('body')) ?? '';
      } finally {
        await context.close();
      }
      errorBodies.push(text);
      expect(text).toMatch(/Mailbox not connected/);
      expect(text).toMatch(/sam@acme\.test was not connected: SMTP: 127\.0\.0\.1 refused the login of sam@acme\.test \(.*SmtpClientAuthentication is disabled.*\)\. Reconnect the mailbox/);
      expect(await pendingCount()).toBe(0);
      const replay = await fetch(`${s.url}/oauth/callback?state=${encodeURIComponent(viaPage.state)}&code=again`);
      expect(replay.status).toBe(400);
      expect(await replay.text()).toMatch(/Sign-in not recognised/);

      // Through the API: the check runs before the transaction; the answer has every line.
      const viaApi = await begin(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/oauth/callback`);
      const ctx2 = await loopbackContext(browser);
      let code = '';
      try {
        code = new URL(await authorize(await ctx2.newPage(), viaApi.authorizationUrl, MAILBOX)).searchParams.get('code') ?? '';
      } finally {
        await ctx2.close();
      }
      expect(code).not.toBe('');
      const refused = await s.call<{ error: { code: string; message: string; details: { lines: { check: string; status: string }[] } } }>(s.ours.ownerKey, 'sdrProfiles.oauth.complete', { state: viaApi.state, code });
      errorBodies.push(JSON.stringify(refused.body));
      expect(refused.status).toBe(422);
      expect(refused.body.error.code).toBe('SENDER_CHECK_FAILED');
      const statusOf = (check: string) => refused.body.error.details.lines.find((l) => l.check === check)?.status;
      // The SMTP login failed; the IMAP login with the same token (Dovecot asks the provider) passed.
      expect([statusOf('smtp'), statusOf('imap')]).toEqual(['fail', 'pass']);
      // The sign-in was spent by the exchange: presenting it again is refused as unknown.
      const again = await s.call<{ error: { message: string } }>(s.ours.ownerKey, 'sdrProfiles.oauth.complete', { state: viaApi.state, code });
      expect(again.status).toBe(400);
      expect(again.body.error.message).toMatch(/unknown here/);
      errorBodies.push(JSON.stringify(again.body));
      expect(await pendingCount()).toBe(0);
      expect(await state()).toBe(before);
    } finally {
      await new Promise<void>((resolve) => refusing.close(() => resolve()));
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  }, 60_000);

  it('a desktop connected to the server signs a server-run mailbox in: the server keeps the sign-in and the grant, the desktop only receives the redirect', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'crm-oauth-fwd-'));
    const session = new SessionManager({
      dataDir,
      openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }),
      credentials: fileCredentialStore(join(dataDir, 'credentials.json')),
      buildDemo: () => {
        throw new Error('not used');
      },
    });
    const entries = new Map<string, string>();
    const local: CredentialStore = { protection: 'memory (test)', get: async (n) => entries.get(n) ?? null, set: async (n, v) => void entries.set(n, v), delete: async (n) => void entries.delete(n) };
    const backend = new Backend({ session, senderCredentials: desktopSenderCredentials(local) });
    try {
      await session.connect({ url: s.url, apiKey: s.ours.adminKey });
      const begun = await backend.call('sdrProfiles.oauth.begin', { provider: providerInput(), hostedBy: 'server', email: 'fwd@acme.test' });
      if (!begun.ok) throw new Error(begun.error.message);
      const b = begun.value as { authorizationUrl: string; state: string; redirectUri: string };
      // The redirect comes to this desktop's loopback address; the pending sign-in is the server's.
      expect(b.redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/callback$/);
      expect(b.redirectUri.startsWith(s.url)).toBe(false);
      expect((await s.sql.query('SELECT 1 FROM oauth_pending')).length).toBe(1);
      const context = await loopbackContext(browser);
      try {
        const page = await context.newPage();
        await authorize(page, b.authorizationUrl, 'fwd@acme.test');
        expect(await page.textContent('h1')).toBe('Mailbox connected');
      } finally {
        await context.close();
      }
      const status = await backend.call('sdrProfiles.oauth.status', { state: b.state });
      const st = status.ok ? (status.value as { status: string; sdrProfileId: string }) : null;
      expect(st?.status).toBe('connected');
      const sender = await s.db.forWorkspace(s.ours.workspaceId).get('senders', st?.sdrProfileId ?? '');
      expect(sender).toMatchObject({ name: 'fwd@acme.test', channelConfig: { hostedBy: 'server', auth: 'oauth2' } });
      expect(parseGrant(await credentials.secretFor(s.sql, s.ours.workspaceId, sender?.id ?? ''))?.refreshToken).toBeTruthy();
      // Nothing of it on the desktop.
      expect(entries.size).toBe(0);
      // Out of the next test's way: the server's runner does not host it any more.
      if (sender) await s.db.forWorkspace(s.ours.workspaceId).commit([{ collection: 'senders', id: sender.id, before: sender, after: { ...sender, channelConfig: { ...sender.channelConfig, hostedBy: 'desktop' } } }]);
    } finally {
      await backend.close();
    }
  }, 60_000);

  it('connects, sends over XOAUTH2, reads a reply, renews the expired token, disconnects on a revoked grant, reconnects the same sender, and leaks no secret', async () => {
    const store = s.db.forWorkspace(s.ours.workspaceId);
    // The mail servers are shared by the backends' runs: start from what this run adds.
    accepted.length = 0;
    smtpLogins.length = 0;
    const sentBefore = (await dovecot.messages(DELIVERY, 'Sent')).length;
    const hook = await s.call<{ id: string; secret: string }>(s.ours.ownerKey, 'webhooks.create', { url: `${rx.url}/all`, events: [...WEBHOOK_EVENT_TYPES] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);

    // Connect: the sender is created from the signed-in mailbox.
    const first = await signIn();
    expect(first.page).toMatch(/Mailbox connected.*sam@acme\.test is connected/s);
    const senders = (await store.query('senders')).docs.filter((x) => x.channelConfig.from === MAILBOX);
    expect(senders).toHaveLength(1);
    const created = senders[0];
    if (!created) throw new Error('sender');
    expect(created.channelConfig).toMatchObject({ auth: 'oauth2', oauthProvider: 'oidc', hostedBy: 'server', host: '127.0.0.1', port: smtpPort, user: MAILBOX, imapHost: '127.0.0.1', imapPort: dovecot.port });
    // The state is taken once: the same callback again connects nothing.
    const pendingLeft = await s.sql.query('SELECT 1 FROM oauth_pending');
    expect(pendingLeft).toEqual([]);
    // The connect checked the mailbox with the new access token (XOAUTH2) and kept the check.
    const grant0 = await storedGrant(created.id);
    expect(created.lastCheck?.lines.filter((l) => l.check === 'smtp' || l.check === 'imap').map((l) => `${l.check} ${l.status}`)).toEqual(['smtp pass', 'imap pass']);
    expect(smtpLogins.some((l) => l.token === grant0.accessToken && l.active)).toBe(true);
    // Check again once the token is about to expire (the server's clock): the check renews it like
    // the runner does, keeps the new grant, and logs in to SMTP and IMAP with XOAUTH2.
    s.clock.advance(AT_TTL_SECONDS * 1000);
    const loginsBefore = smtpLogins.length;
    const checked = await s.call<{ ok: boolean; lines: { check: string; status: string; message: string }[] }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: created.id });
    expect(checked.status, JSON.stringify(checked.body)).toBe(200);
    expect(checked.body.lines.filter((l) => l.check === 'smtp' || l.check === 'imap').map((l) => `${l.check} ${l.status}`)).toEqual(['smtp pass', 'imap pass']);
    const grant1 = await storedGrant(created.id);
    expect(grant1.accessToken).not.toBe(grant0.accessToken);
    expect(grant1.refreshToken).toBe(grant0.refreshToken);
    expect(smtpLogins.slice(loginsBefore).map((l) => [l.token === grant1.accessToken, l.active])).toEqual([[true, true]]);
    const checkedSender = await store.get('senders', created.id);
    if (!checkedSender) throw new Error('sender');
    expect(checkedSender.lastCheck?.at).toBe(s.clock.now().toISOString());
    // STARTTLS is off on the test SMTP server (a private network setting, not in the API).
    await store.commit([{ collection: 'senders', id: created.id, before: checkedSender, after: { ...checkedSender, channelConfig: { ...checkedSender.channelConfig, ignoreTLS: true } } }]);

    runner = createServerRunner({
      sql: s.sql, credentials, clock: s.clock, loops: false, spacing: { minSeconds: 0, jitterSeconds: 0 }, imap: { recheckMs: 3_600_000, pollMs: 3_600_000 },
      log: {
        info: (o, m) => void runnerLog.push(`${m} ${JSON.stringify(o)}`),
        warn: (o, m) => void runnerLog.push(`${m} ${JSON.stringify(o, (_k, v: unknown) => (v instanceof Error ? { message: v.message, stack: v.stack } : v))}`),
      },
    });
    await runner.scan();
    const r = runner;
    const tick = async () => {
      const reports = await r.tickAll();
      for (const rep of reports.values()) for (const e of rep?.errors ?? []) runnerLog.push(`tick error: ${e.message}`);
      trace.push(...runnerLog.slice(trace.length));
    };

    // Send: two leads get the first email, over SMTP with the access token; copies filed in Sent over IMAP.
    const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
    const [adaEmail, boEmail] = [`ada-${randomUUID().slice(0, 6)}@example.test`, `bo-${randomUUID().slice(0, 6)}@example.test`];
    const w = campaignWrites(s.ours.workspaceId, group.id, created.id, [adaEmail, boEmail], s.clock.now().toISOString());
    await store.commit(w.writes);
    const [ada, bo] = w.leads;
    if (!ada || !bo) throw new Error('leads');
    await until('two first emails', async () => {
      await tick();
      return (await outEmails(store, ada.id)).length === 1 && (await outEmails(store, bo.id)).length === 1;
    });
    expect(accepted.map((a) => a.to).sort()).toEqual([adaEmail, boEmail].sort());
    // Each went out with a token the provider said was active (the first one, or, when the machine
    // was slow enough for it to expire first, the one the refused login made the runner renew).
    expect(accepted.every((a) => smtpLogins.some((l) => l.token === a.token && l.active))).toBe(true);
    expect(accepted.some((a) => a.token === grant1.accessToken) || smtpLogins.some((l) => l.token === grant1.accessToken && !l.active)).toBe(true);
    await until('the copies in Sent', async () => (await dovecot.messages(DELIVERY, 'Sent')).length === sentBefore + 2);
    // Dovecot let the sender in with its access token, checked through the provider's introspection.
    expect(dovecot.log(), dovecot.log().split('\n').slice(-20).join('\n')).toMatch(/Login: user=<sam@acme\.test>, method=XOAUTH2/);

    // Read a reply: Ada answers; the runner reads the INBOX over IMAP with XOAUTH2.
    const adaFirst = (await outEmails(store, ada.id))[0];
    await dovecot.deliver(DELIVERY, reply(adaEmail, adaFirst?.externalId ?? ''));
    await until('the reply recorded', async () => {
      await tick();
      return (await store.get('enrollments', w.enrollments[0]?.id ?? ''))?.status === 'REPLIED';
    });

    // The access token expires (3 s): the provider says so, and the runner renews it before it sends.
    await until('the first access token expired', async () => !(await oidc.introspect(grant1.accessToken)).active, 10_000);
    s.clock.advance(86_400_000 + 60_000);
    await until('the follow-up to Bo', async () => {
      await tick();
      return (await outEmails(store, bo.id)).length === 2;
    });
    const grant2 = await storedGrant(created.id);
    expect(grant2.accessToken).not.toBe(grant1.accessToken);
    expect(grant2.refreshToken).toBe(grant1.refreshToken);
    const followUp = accepted.find((a) => a.to === boEmail && /Following up/.test(a.raw));
    expect(followUp).toBeDefined();
    expect(followUp?.token).not.toBe(grant1.accessToken);
    expect(smtpLogins.some((l) => l.token === followUp?.token && l.active), 'the renewed token logged in').toBe(true);

    // Revoke the grant at the provider: the next renewal is refused (invalid_grant), the sender is
    // disconnected with the reason, and a new lead waits (not failed).
    await oidc.revoke(grant2.refreshToken);
    const ceeEmail = `cee-${randomUUID().slice(0, 6)}@example.test`;
    const w2 = campaignWrites(s.ours.workspaceId, group.id, created.id, [ceeEmail], s.clock.now().toISOString());
    await store.commit(w2.writes);
    s.clock.advance(3_600_000);
    await until('the sender disconnected', async () => {
      await tick();
      return (await store.get('senders', created.id))?.status === 'disconnected';
    });
    const disconnected = await store.get('senders', created.id);
    expect(disconnected?.statusReason).toMatch(/127\.0\.0\.1:\d+ no longer accepts sam@acme\.test's sign-in \(invalid_grant: the access was revoked.*Reconnect the mailbox/);
    for (let i = 0; i < 3; i++) {
      s.clock.advance(600_000);
      await tick();
    }
    const cee = w2.leads[0];
    if (!cee) throw new Error('lead');
    expect(await outEmails(store, cee.id)).toEqual([]);
    expect((await store.get('enrollments', w2.enrollments[0]?.id ?? ''))?.status).toBe('IN_PROGRESS');
    const activity = await s.call<{ items?: unknown[] }>(s.ours.ownerKey, 'campaigns.getActivity', { campaignId: w2.campaign.id });
    expect(JSON.stringify(activity.body)).toMatch(/sender_disconnected/);

    // A replayed callback (a state already used) is refused and changes nothing.
    const before = JSON.stringify(await s.snapshot(s.ours.workspaceId));
    const replay = await fetch(`${s.url}/oauth/callback?state=${encodeURIComponent(first.state)}&code=replayed`);
    expect(replay.status).toBe(400);
    errorBodies.push(await replay.text());
    const apiReplay = await s.call(s.ours.ownerKey, 'sdrProfiles.oauth.complete', { state: first.state, code: 'replayed' });
    expect(apiReplay.status).toBe(400);
    errorBodies.push(JSON.stringify(apiReplay.body));
    expect(JSON.stringify(await s.snapshot(s.ours.workspaceId))).toBe(before);

    // Check again on the revoked sign-in: the renewal's invalid_grant is the failing SMTP line, not an error.
    const revokedCheck = await s.call<{ ok: boolean; lines: { check: string; status: string; message: string; fix: string | null }[] }>(s.ours.ownerKey, 'sdrProfiles.verify', { sdrProfileId: created.id });
    expect(revokedCheck.status, JSON.stringify(revokedCheck.body)).toBe(200);
    expect(revokedCheck.body.ok).toBe(false);
    const smtpLine = revokedCheck.body.lines.find((l) => l.check === 'smtp');
    expect(smtpLine).toMatchObject({ status: 'fail', fix: 'Reconnect the mailbox (sign in again with your provider).' });
    expect(smtpLine?.message).toMatch(/no longer accepts sam@acme\.test's sign-in \(invalid_grant/);

    // Reconnect: signing in again as the same mailbox reconnects the same sender, and Cee's email goes out.
    const again = await signIn({ email: MAILBOX });
    expect(again.page).toMatch(/sam@acme\.test is reconnected/);
    const reconnected = await store.get('senders', created.id);
    expect(reconnected).toMatchObject({ status: 'available', statusReason: null });
    // Reconnecting checked the mailbox again with the new sign-in.
    expect(reconnected?.lastCheck?.lines.filter((l) => l.check === 'smtp' || l.check === 'imap').map((l) => `${l.check} ${l.status}`)).toEqual(['smtp pass', 'imap pass']);
    expect((await store.query('senders')).docs.filter((x) => x.channelConfig.from === MAILBOX)).toHaveLength(1);
    const grant3 = await storedGrant(created.id);
    expect(grant3.refreshToken).not.toBe(grant1.refreshToken);
    await until('Cee\'s email', async () => {
      s.clock.advance(60_000);
      await tick();
      return (await outEmails(store, cee.id)).length === 1;
    });
    expect(accepted.find((a) => a.to === ceeEmail)?.token).toBe((await storedGrant(created.id)).accessToken);
    await rx.waitFor('/all', 1, 10_000);

    // No secret anywhere people or other systems see: log lines (server and runner), the workspace's
    // documents, error bodies, webhook payloads.
    const secrets = [grant1.refreshToken, grant3.refreshToken, oidc.clientSecret, ...new Set([grant0.accessToken, grant1.accessToken, grant2.accessToken, grant3.accessToken, ...accepted.map((a) => a.token)])];
    const seen = {
      serverLogs: s.logs.join('\n'),
      runnerLogs: runnerLog.join('\n'),
      documents: JSON.stringify(await s.snapshot(s.ours.workspaceId)),
      errorBodies: errorBodies.join('\n'),
      webhooks: rx.received.map((x) => x.body).join('\n'),
    };
    expect(seen.documents.length).toBeGreaterThan(1000);
    // The refused replay was logged, the runner said what it did: there are lines to search.
    await until('the callback requests logged', async () => s.logs.some((l) => l.includes('/oauth/callback')), 5_000);
    expect(runnerLog.some((l) => l.includes('outreach runner acted')), 'runner log').toBe(true);
    expect(rx.received.length).toBeGreaterThan(0);
    for (const [where, text] of Object.entries(seen)) {
      for (const secret of secrets) expect(text.includes(secret), `a secret in ${where}`).toBe(false);
    }
  }, 120_000);
});

describe('a mailbox signed in with OAuth on the desktop runner', () => {
  it('the desktop keeps the grant in its credential store, renews it there, and disconnects on a revoked grant', async () => {
    accepted.length = 0;
    smtpLogins.length = 0;
    const entries = new Map<string, string>();
    const store: CredentialStore = { protection: 'memory (test)', get: async (n) => entries.get(n) ?? null, set: async (n, v) => void entries.set(n, v), delete: async (n) => void entries.delete(n) };
    const senderCredentials = desktopSenderCredentials(store);
    const lines: string[] = [];
    const dataDir = mkdtempSync(join(tmpdir(), 'crm-oauth-desk-'));
    const session = new SessionManager({
      dataDir,
      openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }),
      credentials: fileCredentialStore(join(dataDir, 'credentials.json')),
      buildDemo: () => {
        const ws = workspaceCreation(sequentialIds(3), new Date().toISOString(), { name: 'Desk', owner: { name: 'Sam Sender', email: MAILBOX }, subscriptionStatus: 'active' });
        return { workspaceId: ws.workspaceId, workspaceName: 'Desk', member: { id: ws.ownerId, name: 'Sam Sender', role: 'owner' }, writes: ws.writes };
      },
      startRunner: (args) => startWorkspaceRunner(args, { senderCredentials, intervalMs: 100, log: (l) => lines.push(l), spacing: { minSeconds: 0, jitterSeconds: 0 }, imap: { recheckMs: 3_600_000, pollMs: 3_600_000 } }),
    });
    // The desktop's own check of the mailboxes it runs, its DNS a dns2 server on loopback.
    const dns = await startDns(passingZone('acme.test'));
    const senderVerifier = desktopSenderVerifier(senderCredentials, (l) => lines.push(l), { resolve: dnsResolver(dns.servers), timeoutMs: 5_000 });
    const backend = new Backend({ session, senderCredentials, senderVerifier, log: (l) => lines.push(l) });
    try {
      await session.openDemo();
      const begun = await backend.call('sdrProfiles.oauth.begin', {
        provider: { issuer: oidc.issuer, clientId: oidc.clientId, clientSecret: oidc.clientSecret, scopes: ['mail'], smtp: { host: '127.0.0.1', port: smtpPort, secure: false }, imap: { host: '127.0.0.1', port: dovecot.port, secure: false } },
      });
      if (!begun.ok) throw new Error(begun.error.message);
      const { authorizationUrl, state } = begun.value as { authorizationUrl: string; state: string };
      const context = await loopbackContext(browser);
      try {
        await authorize(await context.newPage(), authorizationUrl, MAILBOX);
      } finally {
        await context.close();
      }
      let senderId = '';
      await until('connected', async () => {
        const st = await backend.call('sdrProfiles.oauth.status', { state });
        const v = st.ok ? (st.value as { status: string; sdrProfileId: string | null }) : null;
        senderId = v?.sdrProfileId ?? '';
        return v?.status === 'connected';
      });
      const open = session.current();
      if (!open) throw new Error('no workspace');
      const local = open.db.store;
      const connected = await local.get('senders', senderId);
      // The sign-in checked the mailbox from this computer with its new access token (XOAUTH2).
      expect(connected?.lastCheck?.lines.filter((l) => l.check === 'smtp' || l.check === 'imap').map((l) => `${l.check} ${l.status}`)).toEqual(['smtp pass', 'imap pass']);
      // Check again logs in with XOAUTH2 too, with the kept grant's (renewed if due) access token.
      const loginsBefore = smtpLogins.length;
      const checked = await backend.call('sdrProfiles.verify', { sdrProfileId: senderId });
      if (!checked.ok) throw new Error(checked.error.message);
      const checkedLines = (checked.value as { lines: { check: string; status: string }[] }).lines;
      expect(checkedLines.filter((l) => l.check === 'smtp' || l.check === 'imap').map((l) => `${l.check} ${l.status}`)).toEqual(['smtp pass', 'imap pass']);
      const kept = parseGrant(await senderCredentials.secretFor(session.current()?.actor.workspaceId ?? '', senderId));
      expect(smtpLogins.slice(loginsBefore).some((l) => l.token === kept?.accessToken && l.active)).toBe(true);
      const sender = await local.get('senders', senderId);
      if (!sender) throw new Error('sender');
      await local.commit([{ collection: 'senders', id: sender.id, before: sender, after: { ...sender, channelConfig: { ...sender.channelConfig, ignoreTLS: true } } }]);
      const grantOf = async () => {
        const g = parseGrant(await senderCredentials.secretFor(open.actor.workspaceId, sender.id));
        if (!g) throw new Error('no grant');
        return g;
      };
      const grant1 = await grantOf();
      const group = (await local.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
      const send = async (who: string) => {
        const w = campaignWrites(open.actor.workspaceId, group.id, sender.id, [`${who}-${randomUUID().slice(0, 6)}@example.test`], new Date().toISOString());
        await local.commit(w.writes);
        return w;
      };

      const a = await send('ada');
      await until('Ada emailed', async () => accepted.some((x) => x.to === a.leads[0]?.email)).catch((e: unknown) => {
        throw new Error(`${e instanceof Error ? e.message : String(e)}\ndesktop log:\n${lines.join('\n')}`);
      });
      expect(smtpLogins.some((l) => l.token === accepted.find((x) => x.to === a.leads[0]?.email)?.token && l.active)).toBe(true);

      // The access token expires; the desktop renews it, writes the new grant to its store, and sends.
      await until('the first access token expired', async () => !(await oidc.introspect(grant1.accessToken)).active, 10_000);
      const b = await send('bo');
      await until('Bo emailed', async () => accepted.some((x) => x.to === b.leads[0]?.email));
      const grant2 = await grantOf();
      expect(grant2.accessToken).not.toBe(grant1.accessToken);
      expect(grant2.refreshToken).toBe(grant1.refreshToken);
      expect(accepted.find((x) => x.to === b.leads[0]?.email)?.token).toBe(grant2.accessToken);

      // Revoked: the next renewal is refused, the sender is disconnected, Cee waits.
      await oidc.revoke(grant2.refreshToken);
      // Revoking the grant ends its access token at once, before its expiry: the mail server refuses it,
      // the desktop renews, and the provider's invalid_grant is the reason shown.
      await until('the access token revoked with the grant', async () => !(await oidc.introspect(grant2.accessToken)).active, 10_000);
      const c = await send('cee');
      await until('the sender disconnected', async () => (await local.get('senders', sender.id))?.status === 'disconnected');
      expect((await local.get('senders', sender.id))?.statusReason).toMatch(/no longer accepts sam@acme\.test's sign-in \(invalid_grant/);
      await sleep(500);
      expect(accepted.some((x) => x.to === c.leads[0]?.email)).toBe(false);
      expect((await local.get('enrollments', c.enrollments[0]?.id ?? ''))?.status).toBe('IN_PROGRESS');

      // Nothing the desktop logged, answered or keeps in its documents holds a secret.
      const list = await backend.call('sdrProfiles.list', {});
      const docs = JSON.stringify(await local.query('senders'));
      const said = JSON.stringify([lines, list, docs]);
      for (const secret of [grant1.refreshToken, grant1.accessToken, grant2.accessToken, oidc.clientSecret]) expect(said.includes(secret)).toBe(false);
    } finally {
      await backend.close();
      await dns.close();
    }
  }, 90_000);
});
