/**
 * Email senders reading their mailbox over IMAP, against a real Dovecot (test/integration/support/
 * dovecot.ts) and a real SMTP server on loopback: mail is filed in the INBOX by IMAP APPEND, as a
 * mail server would file it, and the runner hosts (the desktop's and the sync server's `--runner`)
 * record what it says. A reply stops the sequence before the next step is due; an out-of-office
 * does not; a hard bounce stops email steps and counts in the metrics; a soft bounce marks nothing;
 * IDLE brings new mail to the next tick (the fallback polling is set to an hour, so only IDLE can);
 * a refused IMAP login disconnects the sender with the reason; each sent email is filed in Sent and
 * an interrupted send is found there.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyInbound, replyText } from '../../channels/inbound-mail.ts';
import { createHostChannels } from '../../channels/host.ts';
import { createImapChannel, imapConfig } from '../../channels/imap.ts';
import { desktopSenderCredentials } from '../../electron/backend/credentials.ts';
import type { CredentialStore } from '../../electron/backend/credentials.ts';
import type { LocalDb } from '../../electron/backend/local-db-port.ts';
import { startWorkspaceRunner } from '../../electron/backend/runner-host.ts';
import type { Actor } from '../../shared/context.ts';
import { campaignMetrics } from '../../shared/metrics.ts';
import { newCampaign, newEnrollment, newLead, newSender, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Lead, LeadGroup, Message, Sender } from '../../shared/model/index.ts';
import { imapCredentialId } from '../../shared/ops/credentials.ts';
import type { AnyWrite, Store } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { parseCredentialsKey, serverCredentials } from '../../sync-server/credentials.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { createServerRunner } from '../../sync-server/runner-host.ts';
import type { ServerRunner } from '../../sync-server/runner-host.ts';
import { makeHarness, testSecrets } from '../support/harness.ts';
import type { FakeClock } from '../support/harness.ts';
import { BACKENDS, testDatabase } from './support/db.ts';
import { startDovecot } from './support/dovecot.ts';
import type { Dovecot, DovecotUser } from './support/dovecot.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { startRunnerChild } from './support/runner-process.ts';
import { until as pollUntil } from '../support/until.ts';

// ---------------------------------------------------------------- what counts as what (no server)

/** The parsed message and its source, as the channel classifies them. */
const parse = async (raw: string): Promise<[Awaited<ReturnType<typeof simpleParser>>, string]> => {
  const source = raw.replace(/\r?\n/g, '\r\n');
  return [await simpleParser(source), source];
};

function dsn(opts: { to: string; action: 'failed' | 'delayed'; status: string; diagnostic: string; originalId: string }): string {
  return `From: Mail Delivery System <MAILER-DAEMON@mx.example.test>
To: sam@acme.test
Subject: Undelivered Mail Returned to Sender
Message-ID: <dsn-${randomUUID()}@mx.example.test>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/plain

This is the mail system at host mx.example.test. Your message could not be delivered.

--BOUNDARY
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.test
Arrival-Date: Mon, 16 Nov 2026 10:00:00 +0000

Final-Recipient: rfc822; ${opts.to}
Original-Recipient: rfc822;${opts.to}
Action: ${opts.action}
Status: ${opts.status}
Diagnostic-Code: smtp; ${opts.diagnostic}

--BOUNDARY
Content-Type: text/rfc822-headers

From: Sam Sender <sam@acme.test>
To: ${opts.to}
Subject: Idea
Message-ID: ${opts.originalId}

--BOUNDARY--
`;
}

function mail(opts: { from: string; subject: string; body: string; inReplyTo?: string; headers?: Record<string, string> }): string {
  const extra = Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}\n`).join('');
  const thread = opts.inReplyTo ? `In-Reply-To: ${opts.inReplyTo}\nReferences: ${opts.inReplyTo}\n` : '';
  return `From: ${opts.from}\nTo: sam@acme.test\nSubject: ${opts.subject}\nMessage-ID: <${randomUUID()}@mail.example.test>\nDate: ${new Date().toUTCString()}\n${thread}${extra}MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n${opts.body}\n`;
}

describe('what an inbound email is', () => {
  it('a person\'s answer is a reply, and only its new part is kept', async () => {
    const [m, source] = await parse(mail({ from: 'ada@example.test', subject: 'Re: Idea', body: 'Sounds good, call me Tuesday.\n\nOn Mon, 16 Nov 2026 Sam wrote:\n> Hi Ada', inReplyTo: '<x@acme.test>' }));
    expect(classifyInbound(m, source)).toEqual({ kind: 'reply' });
    expect(replyText(m)).toBe('Sounds good, call me Tuesday.');
  });

  it('RFC 3834 and auto-responder headers, and out-of-office subjects, are automatic replies; Auto-Submitted: no is a person', async () => {
    const cases: [Record<string, string>, string, boolean][] = [
      [{ 'Auto-Submitted': 'auto-replied' }, 'Re: Idea', true],
      [{ 'Auto-Submitted': 'auto-generated' }, 'Re: Idea', true],
      [{ 'Auto-Submitted': 'no' }, 'Re: Idea', false],
      [{ 'X-Autoreply': 'yes' }, 'Re: Idea', true],
      [{ 'X-Autorespond': 'yes' }, 'Re: Idea', true],
      [{ Precedence: 'auto_reply' }, 'Re: Idea', true],
      [{ Precedence: 'bulk' }, 'Re: Idea', true],
      [{}, 'Out of Office: Re: Idea', true],
      [{}, 'Automatic reply: Idea', true],
      [{}, 'Re: Idea about the office move', false],
    ];
    for (const [headers, subject, auto] of cases) {
      const [m, source] = await parse(mail({ from: 'bo@example.test', subject, body: 'x', headers }));
      expect(classifyInbound(m, source).kind, JSON.stringify([headers, subject])).toBe(auto ? 'auto_reply' : 'reply');
    }
  });

  it('a delivery-status report is a bounce: failed + 5.x.x is hard, delayed or 4.x.x soft, with the original Message-ID and recipient', async () => {
    const hard = classifyInbound(...(await parse(dsn({ to: 'cy@example.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <cy@example.test>: Recipient address rejected: User unknown', originalId: '<orig-1@acme.test>' }))));
    expect(hard).toEqual({
      kind: 'bounce',
      bounce: { severity: 'hard', status: '5.1.1', recipient: 'cy@example.test', reason: '550 5.1.1 <cy@example.test>: Recipient address rejected: User unknown', originalMessageIds: ['<orig-1@acme.test>'] },
    });
    const delayed = classifyInbound(...(await parse(dsn({ to: 'dee@example.test', action: 'delayed', status: '4.4.1', diagnostic: 'connect to mx: Connection timed out', originalId: '<orig-2@acme.test>' }))));
    expect(delayed.kind === 'bounce' && delayed.bounce.severity).toBe('soft');
    const failed4 = classifyInbound(...(await parse(dsn({ to: 'dee@example.test', action: 'failed', status: '4.2.2', diagnostic: 'mailbox full', originalId: '<orig-3@acme.test>' }))));
    expect(failed4.kind === 'bounce' && failed4.bounce.severity).toBe('soft');
  });
});

// ---------------------------------------------------------------- servers shared by the host tests

const USER: DovecotUser = { user: 'sam@acme.test', password: 'imap-and-smtp-pass' };
const BATCH_USER: DovecotUser = { user: 'batch@acme.test', password: 'pw-batch' };
let dovecot: Dovecot;
let smtp: SMTPServer;
let smtpPort = 0;
/** What the SMTP server accepted: recipient and Message-ID. */
const accepted: { to: string; messageId: string; raw: string }[] = [];
/** Every recipient the SMTP server was asked to take, accepted or not. */
const rcptAttempts: string[] = [];

// The sync server refuses sender hosts in its own network unless the operator allows them: the
// mail servers of these tests are on loopback.
const privateHostsBefore = process.env.ALLOW_PRIVATE_SENDER_HOSTS;

beforeAll(async () => {
  process.env.ALLOW_PRIVATE_SENDER_HOSTS = '1';
  dovecot = await startDovecot([USER, BATCH_USER]);
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === USER.user && auth.password === USER.password) cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, cb) {
      rcptAttempts.push(address.address);
      if (address.address.startsWith('gone@')) cb(Object.assign(new Error('5.1.1 <gone@example.test>: Recipient address rejected: User unknown'), { responseCode: 550 }));
      else cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        for (const r of session.envelope.rcptTo) accepted.push({ to: r.address, messageId: /^Message-ID: (.*)$/im.exec(raw)?.[1]?.trim() ?? '', raw });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  await new Promise<void>((resolve) => smtp?.close(() => resolve()));
  await dovecot?.stop();
  if (privateHostsBefore === undefined) delete process.env.ALLOW_PRIVATE_SENDER_HOSTS;
  else process.env.ALLOW_PRIVATE_SENDER_HOSTS = privateHostsBefore;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (real time) until `check` holds; fails with `what` and the logs that say why after `ms`. */
const until = (what: string, check: () => Promise<boolean>, ms = 15_000): Promise<true> => pollUntil(what, check, ms, () => dovecot.log().split('\n').slice(-15).join('\n'));

const emailConfig = (extra: Record<string, string | number | boolean> = {}) => ({
  host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, user: USER.user, from: USER.user,
  imapHost: '127.0.0.1', imapPort: dovecot.port, imapSecure: false, ...extra,
});

/**
 * A running campaign: email, wait a day, email (same thread), for one lead per address; a schedule
 * open all week so only the wait decides when the follow-up is due.
 */
function campaignWrites(workspaceId: string, group: Pick<LeadGroup, 'id'>, sender: Sender, emails: string[], now: string) {
  const stamp = () => ({ id: randomUUID(), workspaceId, now });
  const first = newStep(randomUUID(), 'EMAIL', { subject: 'Idea for {{Company|your team}}', content: 'Hi {{First name|there}}, one idea.' });
  const wait = newStep(randomUUID(), 'WAIT', { waitTimeSeconds: 86_400 });
  const second = newStep(randomUUID(), 'EMAIL', { subject: 'unused', content: 'Following up, {{First name|there}}.', emailThreading: 'same_thread' });
  const campaign: Campaign = {
    ...newCampaign(stamp(), `IMAP run ${randomUUID().slice(0, 6)}`, group.id, randomUUID()),
    running: true, startedAt: now, senders: [{ sdrProfileId: sender.id, paused: false }], steps: [first, wait, second],
  };
  for (const d of Object.values(campaign.schedule.days)) Object.assign(d, { enabled: true, start: '00:00', end: '24:00' });
  const leads: Lead[] = emails.map((email) => newLead(stamp(), group.id, { firstName: email.split('@')[0] ?? '', fullName: email.split('@')[0] ?? '', company: 'Analytical', email }));
  const enrollments = leads.map((l) => newEnrollment(stamp(), l.id, campaign.id, { sdrProfileId: sender.id, currentStepId: first.id, nextActionAt: now }));
  const writes: AnyWrite[] = [
    { collection: 'campaigns', id: campaign.id, before: null, after: campaign },
    ...leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })),
    ...enrollments.map((e) => ({ collection: 'enrollments' as const, id: e.id, before: null, after: e })),
  ];
  return { campaign, leads, enrollments, writes };
}

const outEmails = async (store: Store, leadId: string): Promise<Message[]> =>
  (await store.query('messages', { where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: leadId }, { op: 'eq', field: 'direction', value: 'out' }] }, orderBy: [{ field: 'createdAt', dir: 'asc' }] })).docs;

/** The one scenario, on either host: `tick` runs (or waits for) one tick of the host's runner. */
async function scenario(store: Store, clock: FakeClock, sender: Sender, tick: () => Promise<void>): Promise<void> {
  const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
  const emails = [`ada-${randomUUID().slice(0, 6)}@example.test`, `bo-${randomUUID().slice(0, 6)}@example.test`, `cy-${randomUUID().slice(0, 6)}@example.test`, `dee-${randomUUID().slice(0, 6)}@example.test`];
  const w = campaignWrites(store.workspaceId, group, sender, emails, clock.now().toISOString());
  await store.commit(w.writes);
  const [ada, bo, cy, dee] = w.leads;
  if (!ada || !bo || !cy || !dee) throw new Error('four leads');
  const sentBefore = accepted.length;

  // Step 1 goes to everyone.
  await until('four first emails', async () => {
    await tick();
    const all = await Promise.all(w.leads.map((l) => outEmails(store, l.id)));
    return all.every((m) => m.length === 1 && m[0]?.status === 'sent');
  });
  expect(accepted.length - sentBefore).toBe(4);
  const firstOf = async (l: Lead) => (await outEmails(store, l.id))[0] as Message;
  // Each email is filed in Sent, the exact bytes that went out.
  const sentFolder = await dovecot.messages(USER, 'Sent');
  for (const l of w.leads) expect(sentFolder.some((raw) => raw.includes((l.email)) && raw.includes((`Message-ID: ${(accepted.find((a) => a.to === l.email)?.messageId ?? '?')}`)))).toBe(true);

  // The mailbox receives: Ada answers, Bo's out-of-office answers, Cy's address bounces, Dee's is delayed.
  await dovecot.deliver(USER, mail({ from: `Ada <${ada.email}>`, subject: 'Re: Idea for Analytical', body: 'Yes, let us talk on Tuesday.\n\nOn Mon, Sam wrote:\n> Hi ada, one idea.', inReplyTo: (await firstOf(ada)).externalId ?? '' }));
  await dovecot.deliver(USER, mail({ from: bo.email, subject: 'Out of Office: Idea for Analytical', body: 'I am away until December.', inReplyTo: (await firstOf(bo)).externalId ?? '', headers: { 'Auto-Submitted': 'auto-replied' } }));
  await dovecot.deliver(USER, dsn({ to: cy.email, action: 'failed', status: '5.1.1', diagnostic: `550 5.1.1 <${cy.email}>: Recipient address rejected: User unknown`, originalId: (await firstOf(cy)).externalId ?? '' }));
  await dovecot.deliver(USER, dsn({ to: dee.email, action: 'delayed', status: '4.4.1', diagnostic: 'connect to mx.example.test: Connection timed out', originalId: (await firstOf(dee)).externalId ?? '' }));

  // IDLE announces them; the fallback polling is an hour away, so only IDLE can bring them now.
  await until('the reply recorded', async () => {
    await tick();
    return (await store.get('enrollments', w.enrollments[0]?.id ?? ''))?.status === 'REPLIED';
  });
  await until('the bounce recorded', async () => {
    await tick();
    return (await store.get('leads', cy.id))?.emailBouncedAt != null;
  });
  await until('the delay recorded', async () => {
    await tick();
    return (await store.count('activities', { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: dee.id }, { op: 'eq', field: 'metadata.eventKind', value: 'email_delayed' }] })) === 1;
  });

  // Ada: sequence stopped, Engaged, the reply in her conversation and timeline.
  const adaNow = await store.get('leads', ada.id);
  const engaged = (await store.query('stages')).docs.find((s) => s.id === adaNow?.pipelineStageId);
  expect(engaged?.category).toBe('ENGAGED');
  const adaMessages = (await store.query('messages', { where: { op: 'eq', field: 'leadId', value: ada.id } })).docs;
  const reply = adaMessages.find((m) => m.direction === 'in');
  expect(reply?.text).toBe('Yes, let us talk on Tuesday.');
  expect(reply?.chatId).toBe((await firstOf(ada)).chatId);
  expect(reply?.subject).toBe('Re: Idea for Analytical');
  expect(await store.count('activities', { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: ada.id }, { op: 'eq', field: 'metadata.eventKind', value: 'reply_received' }] })).toBe(1);

  // Bo: an automatic reply on the timeline; not a reply, still in progress, stage unchanged.
  expect((await store.get('enrollments', w.enrollments[1]?.id ?? ''))?.status).toBe('IN_PROGRESS');
  expect((await store.query('messages', { where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: bo.id }, { op: 'eq', field: 'direction', value: 'in' }] } })).docs).toEqual([]);
  const auto = (await store.query('activities', { where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: bo.id }, { op: 'eq', field: 'metadata.eventKind', value: 'auto_reply_received' }] } })).docs;
  expect(auto).toHaveLength(1);
  expect(auto[0]?.content).toMatch(/Automatic reply.*Out of Office.*sequence goes on/);
  const boStageId = (await store.get('leads', bo.id))?.pipelineStageId;
  const boStage = (await store.query('stages')).docs.find((x) => x.id === boStageId);
  expect(boStage?.category).not.toBe('ENGAGED');

  // Cy: bounced with the reason, sequence stopped; the bounced message says so.
  const cyNow = await store.get('leads', cy.id);
  expect(cyNow?.emailBounceReason).toMatch(/^5\.1\.1 .*User unknown/);
  const cyEnrollment = await store.get('enrollments', w.enrollments[2]?.id ?? '');
  expect(cyEnrollment?.status).toBe('STOPPED');
  expect(cyEnrollment?.stoppedReason).toBe('email_bounced');
  expect((await firstOf(cy)).error).toMatch(/^Bounced: 5\.1\.1/);

  // Dee: soft bounce logged, nothing marked.
  expect((await store.get('leads', dee.id))?.emailBouncedAt ?? null).toBeNull();
  expect((await store.get('enrollments', w.enrollments[3]?.id ?? ''))?.status).toBe('IN_PROGRESS');

  // A day later the follow-up is due: Bo and Dee get it (threaded), Ada and Cy do not.
  clock.advance(86_400_000 + 60_000);
  const acceptedBefore = accepted.length;
  // A message is written before it is sent (the intent first) and marked sent after the mail server
  // accepts it: wait for both records to say sent, then for the mail server to have both.
  const followUpSent = async (l: Lead) => {
    const m = await outEmails(store, l.id);
    return m.length === 2 && m.every((x) => x.status === 'sent');
  };
  await until('two follow-ups sent', async () => {
    await tick();
    return (await followUpSent(bo)) && (await followUpSent(dee));
  });
  await until('the mail server to accept both follow-ups', async () => {
    if (accepted.length - acceptedBefore >= 2) return true;
    await sleep(50);
    return false;
  });
  expect(accepted.slice(acceptedBefore).map((a) => a.to).sort()).toEqual([bo.email, dee.email].sort());
  expect((await outEmails(store, ada.id))).toHaveLength(1);
  expect((await outEmails(store, cy.id))).toHaveLength(1);
  const boFollowUp = accepted.slice(acceptedBefore).find((a) => a.to === bo.email);
  expect(boFollowUp?.raw).toMatch(new RegExp(`In-Reply-To: ${((await firstOf(bo)).externalId ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));

  // Metrics: one reply of four contacted, one bounce.
  const [metrics] = await campaignMetrics(store, [w.campaign.id]);
  expect(metrics).toMatchObject({ enrolled: 4, messagesSent: 6, replies: 1, replyRate: 0.25, bounces: 1 });
}

// ---------------------------------------------------------------- the desktop's runner host

function memoryCredentialStore(): CredentialStore {
  const map = new Map<string, string>();
  return {
    protection: 'memory (test)',
    get: async (name) => map.get(name) ?? null,
    set: async (name, secret) => void map.set(name, secret),
    delete: async (name) => void map.delete(name),
  };
}

describe('the desktop runner host reads an email sender\'s mailbox', () => {
  it('reply, out-of-office, hard and soft bounce, and the follow-up a day later', async () => {
    const h = await makeHarness();
    const creds = desktopSenderCredentials(memoryCredentialStore());
    const sender = await h.addSender({ name: 'Sam Sender', channel: 'email', capabilities: ['email'], channelConfig: emailConfig() });
    await creds.set(h.main.workspaceId, sender.id, USER.password, { at: h.now(), by: h.main.ownerId });
    const db: LocalDb = { store: h.store, withStore: (_ws, fn) => fn(h.store), onChange: () => () => undefined, close: async () => undefined };
    const actor: Actor = h.owner;
    const errors: string[] = [];
    const handle = startWorkspaceRunner({ db, actor, kind: 'connected' }, {
      clock: h.clock, intervalMs: 100, senderCredentials: creds, log: (l) => errors.push(l), imap: { recheckMs: 3_600_000, pollMs: 3_600_000 },
    });
    try {
      // The desktop spaces a sender's actions 1-3 minutes apart: each wait moves the clock past that.
      const tick = async (): Promise<void> => {
        h.clock.advance(200_000);
        await sleep(120);
      };
      await scenario(h.store, h.clock, sender, tick).catch((e: unknown) => {
        throw new Error(`${e instanceof Error ? e.message : String(e)}\nrunner log:\n${errors.join('\n')}`);
      });
      expect(errors).toEqual([]);
    } finally {
      await handle.stop();
    }
  }, 90_000);

  it('a wrong IMAP password disconnects the sender with the reason; its own IMAP password, when kept, is the one used', async () => {
    const h = await makeHarness();
    const store = memoryCredentialStore();
    const creds = desktopSenderCredentials(store);
    const sender = await h.addSender({ name: 'Sam Wrong', channel: 'email', capabilities: ['email'], channelConfig: emailConfig() });
    await creds.set(h.main.workspaceId, sender.id, USER.password, { at: h.now(), by: h.main.ownerId });
    await store.set(`sender:${h.main.workspaceId}:${imapCredentialId(sender.id)}`, 'not-the-imap-password');
    const db: LocalDb = { store: h.store, withStore: (_ws, fn) => fn(h.store), onChange: () => () => undefined, close: async () => undefined };
    const handle = startWorkspaceRunner({ db, actor: h.owner, kind: 'connected' }, { clock: h.clock, intervalMs: 100, senderCredentials: creds });
    try {
      await until('the sender disconnected', async () => (await h.store.get('senders', sender.id))?.status === 'disconnected');
      const s = await h.store.get('senders', sender.id);
      expect(s?.statusReason).toMatch(/IMAP\) refused the login/);
      expect(s?.statusReason).toMatch(/AUTHENTICATIONFAILED|Authentication failed/i);
    } finally {
      await handle.stop();
    }
  }, 60_000);
});

// ---------------------------------------------------------------- the sync server's --runner

describe.each(BACKENDS)('the sync server runner reads an email sender\'s mailbox (%s)', (backend) => {
  const credentials = serverCredentials(parseCredentialsKey(randomBytes(32).toString('base64')));
  let s: TestServer;
  const runners: ServerRunner[] = [];
  beforeAll(async () => {
    s = await startTestServer(backend, { credentials });
  });
  afterAll(async () => {
    for (const r of runners) await r.stop();
    await s?.close();
  });

  async function serverSender(name: string, imap: Record<string, unknown> = {}): Promise<Sender> {
    const res = await s.call<{ id: string; warnings: string[] }>(s.ours.ownerKey, 'sdrProfiles.create', {
      name, channel: 'email',
      channelConfig: { host: '127.0.0.1', port: smtpPort, secure: false, user: USER.user, from: USER.user, hostedBy: 'server', password: USER.password, imap: { host: '127.0.0.1', port: dovecot.port, secure: false, ...imap } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.warnings).toEqual([]);
    const sender = await s.db.forWorkspace(s.ours.workspaceId).get('senders', res.body.id);
    if (!sender) throw new Error('sender');
    // STARTTLS is off on the test SMTP server (a private network setting, not in the API).
    const withTls = { ...sender, channelConfig: { ...sender.channelConfig, ignoreTLS: true } };
    await s.db.forWorkspace(s.ours.workspaceId).commit([{ collection: 'senders', id: sender.id, before: sender, after: withTls }]);
    return withTls;
  }

  function runner(): ServerRunner {
    const r = createServerRunner({ sql: s.sql, credentials, clock: s.clock, loops: false, spacing: { minSeconds: 0, jitterSeconds: 0 }, imap: { recheckMs: 3_600_000, pollMs: 3_600_000 } });
    runners.push(r);
    return r;
  }

  it('keeps the IMAP settings beside the SMTP ones and the password out of every document', async () => {
    // A mailbox whose IMAP login differs from the SMTP one (its login is checked at creation).
    dovecot.setUser('other-login@acme.test', 'separate-imap-pass');
    const sender = await serverSender('Sam Settings', { user: 'other-login@acme.test', password: 'separate-imap-pass', sentCopy: 'provider' });
    expect(sender.channelConfig).toMatchObject({ imapHost: '127.0.0.1', imapPort: dovecot.port, imapSecure: false, imapUser: 'other-login@acme.test', imapSentCopy: 'provider' });
    expect(imapConfig(sender)).toEqual({ host: '127.0.0.1', port: dovecot.port, secure: false, user: 'other-login@acme.test', sentCopy: 'provider' });
    expect(await credentials.secretFor(s.sql, s.ours.workspaceId, imapCredentialId(sender.id))).toBe('separate-imap-pass');
    expect(JSON.stringify(await s.snapshot(s.ours.workspaceId))).not.toContain('separate-imap-pass');
    // Defaults: port 993 implies TLS, the SMTP user logs in.
    const defaults = await s.call<{ id: string }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Sam Defaults', channel: 'email', channelConfig: { host: 'smtp.acme.test', port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', imap: { host: 'imap.acme.test' } } });
    const d = await s.db.forWorkspace(s.ours.workspaceId).get('senders', defaults.body.id);
    expect(d && imapConfig(d)).toEqual({ host: 'imap.acme.test', port: 993, secure: true, user: 'sam@acme.test', sentCopy: 'append' });
    // An IMAP password for a connector sender is refused, and nothing is stored.
    const http = await s.call<{ id: string }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Cora', channel: 'http', channelConfig: { baseUrl: 'http://127.0.0.1:9', hostedBy: 'server' } });
    const before = await s.sql.query('SELECT sender_id FROM sender_credentials ORDER BY sender_id');
    const refused = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: http.body.id, secret: 'x', imap: true });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('INVALID_INPUT');
    expect(await s.sql.query('SELECT sender_id FROM sender_credentials ORDER BY sender_id')).toEqual(before);
    // Unknown or malformed IMAP fields are refused at the boundary, and nothing is stored.
    const snapshot = JSON.stringify([await s.snapshot(s.ours.workspaceId), await s.sql.query('SELECT sender_id FROM sender_credentials ORDER BY sender_id')]);
    for (const imap of [{ host: 'h', folder: 'INBOX' }, { host: '', port: 993 }, { host: 'h', port: 70_000 }, { host: 'h', sentCopy: 'sometimes' }, { host: 'h', password: '' }]) {
      const bad = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'X', channel: 'email', channelConfig: { host: 'h', port: 25, secure: false, user: '', from: 'x@acme.test', password: 'p', imap } });
      expect(bad.status, JSON.stringify(imap)).toBe(400);
      expect(bad.body.error.code).toBe('INVALID_INPUT');
    }
    expect(JSON.stringify([await s.snapshot(s.ours.workspaceId), await s.sql.query('SELECT sender_id FROM sender_credentials ORDER BY sender_id')])).toBe(snapshot);
  });

  it('reply, out-of-office, hard and soft bounce, and the follow-up a day later', async () => {
    const sender = await serverSender('Sam Server');
    const r = runner();
    await r.scan();
    const store = s.db.forWorkspace(s.ours.workspaceId);
    await scenario(store, s.clock, sender, async () => {
      const reports = await r.tickAll();
      for (const rep of reports.values()) expect(rep?.errors ?? []).toEqual([]);
    });
    // Metrics over HTTP say the same.
    const campaigns = (await store.query('campaigns')).docs.filter((c) => c.senders.some((x) => x.sdrProfileId === sender.id));
    const res = await s.call<{ metrics: { bounces: number; replies: number }[] }>(s.ours.ownerKey, 'campaigns.getMetrics', { campaignIds: campaigns.map((c) => c.id).join(',') });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.metrics[0]).toMatchObject({ replies: 1, bounces: 1 });
    await r.stop();
  }, 120_000);

  it('IDLE: the first tick after a reply reaches the mailbox records it (the fallback look is an hour away)', async () => {
    const sender = await serverSender('Sam Idle');
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
    const w = campaignWrites(s.ours.workspaceId, group, sender, [`gil-${randomUUID().slice(0, 6)}@example.test`], s.clock.now().toISOString());
    await store.commit(w.writes);
    const r = runner();
    await r.scan();
    await r.tickAll();
    await r.tickAll();
    const [sent] = await outEmails(store, w.leads[0]?.id ?? '');
    expect(sent?.status).toBe('sent');
    // Let the connection settle into IDLE, then the reply arrives; give the server's push a moment.
    await sleep(1_500);
    await dovecot.deliver(USER, mail({ from: w.leads[0]?.email ?? '', subject: 'Re: Idea', body: 'Pushed to you.', inReplyTo: sent?.externalId ?? '' }));
    await sleep(1_000);
    await r.tickAll();
    expect((await store.get('enrollments', w.enrollments[0]?.id ?? ''))?.status).toBe('REPLIED');
    await r.stop();
  }, 60_000);

  it('a mailbox that cannot be reached backs the sender off with the reason; when the server is back the sender resumes and the mail that came meanwhile is read', async () => {
    const sender = await serverSender('Sam Outage');
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
    const w = campaignWrites(s.ours.workspaceId, group, sender, [`fay-${randomUUID().slice(0, 6)}@example.test`], s.clock.now().toISOString());
    await store.commit(w.writes);
    const r = runner();
    await r.scan();
    await r.tickAll();
    const [sent] = await outEmails(store, w.leads[0]?.id ?? '');
    expect(sent?.status).toBe('sent');

    await dovecot.down();
    try {
      // The dropped connection is noticed, the next poll cannot reconnect.
      await until('the sender backed off', async () => {
        await r.tickAll();
        return (await store.get('senders', sender.id))?.status !== 'available';
      }, 5_000);
      const down = await store.get('senders', sender.id);
      expect(down?.status).toBe('limited');
      expect(down?.statusReason).toMatch(/mail server \(IMAP\) could not be reached/);
      expect(down?.backoffUntil).not.toBeNull();
    } finally {
      await dovecot.up();
    }
    // The answer arrives while the runner waits out its backoff.
    await dovecot.deliver(USER, mail({ from: w.leads[0]?.email ?? '', subject: 'Re: Idea', body: 'Back from the outage: yes.', inReplyTo: sent?.externalId ?? '' }));
    s.clock.set(new Date(Date.parse((await store.get('senders', sender.id))?.backoffUntil ?? '') + 1_000).toISOString());
    await until('the reply read after the outage', async () => {
      await r.tickAll();
      return (await store.get('enrollments', w.enrollments[0]?.id ?? ''))?.status === 'REPLIED';
    });
    expect((await store.get('senders', sender.id))?.status).toBe('available');
    await r.stop();
  }, 60_000);

  it('a wrong IMAP password disconnects the sender with the reason; setting the right one reconnects it', async () => {
    // Created with the right password (a mailbox that cannot log in is not created), then given a wrong one.
    const sender = await serverSender('Sam Locked');
    expect((await s.call(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: 'wrong-imap-password', imap: true })).status).toBe(200);
    const r = runner();
    await r.scan();
    await r.tickAll();
    const s1 = await s.db.forWorkspace(s.ours.workspaceId).get('senders', sender.id);
    expect(s1?.status).toBe('disconnected');
    expect(s1?.statusReason).toMatch(/IMAP\) refused the login/);
    const fixed = await s.call<{ reconnected: boolean }>(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: USER.password, imap: true });
    expect(fixed.body.reconnected).toBe(true);
    await r.tickAll();
    expect((await s.db.forWorkspace(s.ours.workspaceId).get('senders', sender.id))?.status).toBe('available');
    await r.stop();
  }, 60_000);
});

// ---------------------------------------------------------------- the channel's cursor

describe('the IMAP channel\'s cursor', () => {
  it('a first poll looks back at mail already there; later polls read only new UIDs, a batch at a time, and nothing twice', async () => {
    const user = BATCH_USER;
    const matched = new Set<string>();
    const channel = createImapChannel({
      passwordFor: () => user.password,
      batch: 2,
      recheckMs: 0,
      matcher: {
        byMessageIds: async (_s, ids) => (ids.some((id) => id.startsWith('<ours-')) ? { leadId: 'lead-1', chatId: ids[0] ?? '' } : null),
        byAddress: async () => null,
        recorded: async (_s, id) => matched.has(id),
      },
    });
    const h = await makeHarness();
    const sender = await h.addSender({ name: 'Sam Batch', channel: 'email', capabilities: ['email'], channelConfig: { ...emailConfig(), user: user.user, from: user.user } });
    const replyTo = (n: number) => mail({ from: `p${n}@example.test`, subject: `Re: ${n}`, body: `answer ${n}`, inReplyTo: `<ours-${n}@acme.test>` });
    // Already in the mailbox before the first poll, plus one that is not about our outreach.
    await dovecot.deliver(user, replyTo(1));
    await dovecot.deliver(user, mail({ from: 'news@example.test', subject: 'Newsletter', body: 'unrelated' }));
    try {
      const first = await channel.poll(sender, null);
      expect(first.events.map((e) => e.kind === 'reply' && e.text)).toEqual(['answer 1']);
      expect(first.cursor).toMatch(/^imap:\d+:2$/);
      for (const n of [2, 3, 4, 5, 6]) await dovecot.deliver(user, replyTo(n));
      const texts: string[] = [];
      const recordedIds = first.events.map((e) => (e.kind === 'reply' ? e.externalId : ''));
      let cursor = first.cursor;
      for (let i = 0; i < 3; i++) {
        const r = await channel.poll(sender, cursor);
        expect(r.events.length).toBeLessThanOrEqual(2);
        texts.push(...r.events.map((e) => (e.kind === 'reply' ? e.text : '')));
        recordedIds.push(...r.events.map((e) => (e.kind === 'reply' ? e.externalId : '')));
        cursor = r.cursor;
      }
      expect(texts).toEqual(['answer 2', 'answer 3', 'answer 4', 'answer 5', 'answer 6']);
      expect(cursor).toMatch(/^imap:\d+:7$/);
      expect((await channel.poll(sender, cursor)).events).toEqual([]);
      // Another UIDVALIDITY (the mailbox was rebuilt): looked at again, and replies already
      // recorded are not recorded twice.
      const rebuilt = await channel.poll(sender, cursor.replace(/^imap:\d+:/, 'imap:1:'));
      expect(rebuilt.events.map((e) => e.kind === 'reply' && e.text)).toEqual(['answer 1']);
      for (const id of recordedIds) matched.add(id);
      const again = await channel.poll(sender, cursor.replace(/^imap:\d+:/, 'imap:1:'));
      expect(again.events).toEqual([]);
      expect(again.cursor).toMatch(/^imap:\d+:2$/);
    } finally {
      await channel.close();
    }
  });
});

describe('the IMAP channel\'s connections', () => {
  it('one stays open per polled sender; a sender nobody polls any more has its connection closed', async () => {
    let clock = Date.now();
    const channel = createImapChannel({
      passwordFor: (x) => (x.name === 'Batch' ? BATCH_USER.password : USER.password),
      now: () => clock,
      matcher: { byMessageIds: async () => null, byAddress: async () => null, recorded: async () => false },
    });
    const h = await makeHarness();
    const a = await h.addSender({ name: 'Sam', channel: 'email', capabilities: ['email'], channelConfig: emailConfig() });
    const b = await h.addSender({ name: 'Batch', channel: 'email', capabilities: ['email'], channelConfig: { ...emailConfig(), user: BATCH_USER.user, from: BATCH_USER.user } });
    try {
      await channel.poll(a, null);
      await channel.poll(b, null);
      expect(await dovecot.sessions(BATCH_USER.user)).toBe(1);
      await channel.poll(b, null);
      expect(await dovecot.sessions(BATCH_USER.user)).toBe(1);
      // Half an hour later only Sam is still polled: Batch's connection is closed.
      clock += 30 * 60_000;
      await channel.poll(a, null);
      await until('the idle connection closed', async () => (await dovecot.sessions(BATCH_USER.user)) === 0, 5_000);
    } finally {
      await channel.close();
    }
  });
});

// ---------------------------------------------------------------- Sent folder and send-time bounces

describe('the Sent folder and refusals at send time', () => {
  it('files each sent email in Sent and finds an interrupted send there by its Message-ID; without a copy it cannot tell', async () => {
    const h = await makeHarness();
    const channels = createHostChannels({ store: h.store, smtpPasswordFor: () => USER.password, tokenFor: () => null });
    const sender = await h.addSender({ name: 'Sam Sent', channel: 'email', capabilities: ['email'], channelConfig: emailConfig() });
    const lead = await h.addLead({ firstName: 'Eve', email: 'eve@example.test' });
    const ref = randomUUID();
    const result = await channels.email.send(sender, lead, { kind: 'email', subject: 'Filed', text: 'A copy goes to Sent.', thread: null }, ref);
    expect(result.externalId).toBe(`<${ref}@acme.test>`);
    expect(await channels.email.findSent?.(sender, ref)).toEqual({ status: 'sent', externalId: `<${ref}@acme.test>`, chatId: `<${ref}@acme.test>` });
    const sentRaw = accepted.find((a) => a.messageId === result.externalId)?.raw ?? '';
    const filed = (await dovecot.messages(USER, 'Sent')).find((raw) => raw.includes(result.externalId));
    expect(filed?.replace(/\r\n/g, '\n').trim()).toBe(sentRaw.replace(/\r\n/g, '\n').trim());
    // Never sent: no copy, and a missing copy proves nothing (the crash may precede the filing).
    expect(await channels.email.findSent?.(sender, randomUUID())).toEqual({ status: 'unknown' });
    // No IMAP settings, or no copies kept: cannot tell.
    const plain = await h.addSender({ name: 'Sam Plain', channel: 'email', capabilities: ['email'], channelConfig: { host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, user: USER.user, from: USER.user } });
    expect(await channels.email.findSent?.(plain, ref)).toEqual({ status: 'unknown' });
    const none = { ...sender, channelConfig: { ...sender.channelConfig, imapSentCopy: 'none' } };
    expect(await channels.email.findSent?.(none, ref)).toEqual({ status: 'unknown' });
    await channels.close();
  });

  it('a 5xx refusal of the address while sending marks the lead\'s email bounced and counts as a bounce', async () => {
    const h = await makeHarness();
    const channels = createHostChannels({ store: h.store, smtpPasswordFor: () => USER.password, tokenFor: () => null });
    const sender = await h.addSender({ name: 'Sam Refused', channel: 'email', capabilities: ['email'], channelConfig: emailConfig({ imapSentCopy: 'none' }) });
    const { createRunner } = await import('../../shared/engine/runner.ts');
    const runner = createRunner({
      store: h.store, clock: h.clock, random: () => 0, ids: h.ids, randomBytes: testSecrets.randomBytes, channels: { channelFor: (x) => (x.channel === 'email' ? channels.email : null) },
      actor: { ...h.owner, isSystem: true }, spacing: { minSeconds: 0, jitterSeconds: 0 },
    });
    const group = (await h.store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
    const w = campaignWrites(h.main.workspaceId, group, sender, ['gone@example.test'], h.now());
    await h.store.commit(w.writes);
    const attemptsBefore = rcptAttempts.filter((a) => a === 'gone@example.test').length;
    const r = await runner.tick();
    expect(rcptAttempts.filter((a) => a === 'gone@example.test').length).toBe(attemptsBefore + 1);
    expect(r.failed).toBe(1);
    const lead = await h.store.get('leads', w.leads[0]?.id ?? '');
    expect(lead?.emailBouncedAt).toBe(h.now());
    expect(lead?.emailBounceReason).toMatch(/^5\.1\.1 .*User unknown/);
    expect((await h.store.get('enrollments', w.enrollments[0]?.id ?? ''))?.status).toBe('STOPPED');
    const [m] = await campaignMetrics(h.store, [w.campaign.id]);
    expect(m?.bounces).toBe(1);
    // Enrolled again later (another campaign): its email step is skipped, the server is not asked again.
    const again = campaignWrites(h.main.workspaceId, group, sender, [], h.now());
    const e2 = newEnrollment(h.stamp(), w.leads[0]?.id ?? '', again.campaign.id, { sdrProfileId: sender.id, currentStepId: again.campaign.steps[0]?.id ?? null, nextActionAt: h.now() });
    await h.store.commit([...again.writes, { collection: 'enrollments', id: e2.id, before: null, after: e2 }]);
    await runner.tick();
    await runner.release();
    await channels.close();
    expect(rcptAttempts.filter((a) => a === 'gone@example.test').length).toBe(attemptsBefore + 1);
    expect((await h.store.get('enrollments', e2.id))?.doneSteps[0]?.outcome).toMatch(/^skipped: the lead's email bounced \(5\.1\.1/);
  });
});

// ---------------------------------------------------------------- a crash between the send and its record

describe.each(BACKENDS)('a runner killed as the mail server accepts an email, with IMAP configured (%s)', (backend) => {
  const KEY = randomBytes(32).toString('base64');
  let child: ChildProcess | null = null;
  let provider: SMTPServer;
  let providerPort = 0;
  const took: string[] = [];

  // A mail provider that files each accepted email in the sender's Sent folder itself (as Gmail
  // does: imapSentCopy 'provider'), then the runner dies before it hears the answer.
  beforeAll(async () => {
    provider = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, cb) => cb(auth.password === USER.password ? null : new Error('no'), { user: auth.username }),
      onData(stream, _session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          took.push(/^Message-ID: (.*)$/im.exec(raw)?.[1]?.trim() ?? '');
          void dovecot.deliver(USER, raw, 'Sent').then(() => {
            child?.kill('SIGKILL');
            cb();
          });
        });
      },
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    providerPort = (provider.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => provider.close(() => resolve()));
  });

  it('exactly one email: the restarted runner finds it in Sent by its Message-ID and records it as sent, without sending again', async () => {
    const db = testDatabase(backend);
    const sql = await db.open();
    const now = new Date().toISOString();
    let workspaceId = '';
    let enrollmentId = '';
    try {
      await migrate(sql);
      const w = workspaceCreation({ uuid: () => randomUUID() }, now, { name: 'Crash', owner: { name: 'Owner', email: 'owner@crash.test' }, subscriptionStatus: 'active' });
      workspaceId = w.workspaceId;
      const sender = newSender({ id: randomUUID(), workspaceId, now }, {
        name: 'Sam Mail', ownerMemberId: w.ownerId, channel: 'email', timeZone: 'UTC', capabilities: ['email'],
        channelConfig: {
          host: '127.0.0.1', port: providerPort, secure: false, ignoreTLS: true, user: USER.user, from: USER.user, hostedBy: 'server',
          imapHost: '127.0.0.1', imapPort: dovecot.port, imapSecure: false, imapSentCopy: 'provider',
        },
      });
      const c = campaignWrites(workspaceId, { id: w.leadGroupId }, sender, [`eve-${randomUUID().slice(0, 6)}@example.test`], now);
      enrollmentId = c.enrollments[0]?.id ?? '';
      await new PgDatabase(sql).forWorkspace(workspaceId).commit([...w.writes, { collection: 'senders', id: sender.id, before: null, after: sender }, ...c.writes]);
      await serverCredentials(parseCredentialsKey(KEY)).port(sql).set(workspaceId, sender.id, USER.password, { at: now, by: w.ownerId });
    } finally {
      await sql.close();
    }
    try {
      took.length = 0;
      const started = startRunnerChild(db.env, 'runner-imap', KEY);
      child = started.proc;
      const run = await started.exited.finally(() => (child = null));
      expect(run.signal, run.out).toBe('SIGKILL');
      expect(took).toHaveLength(1);

      const sql2 = await db.open();
      const runner = createServerRunner({ sql: sql2, credentials: serverCredentials(parseCredentialsKey(KEY)), runnerId: 'runner-imap', loops: false, spacing: { minSeconds: 0, jitterSeconds: 0 } });
      try {
        const store = new PgDatabase(sql2).forWorkspace(workspaceId);
        // The record never happened: the intent is all there is.
        expect((await store.query('messages')).docs.map((m) => m.status)).toEqual(['sending']);
        await runner.scan();
        const reports = await runner.tickAll();
        await runner.tickAll();
        const report = reports.get(workspaceId);
        expect(report?.settled).toMatchObject({ sent: 1, unknown: 0, resent: 0 });
        const { docs: messages } = await store.query('messages');
        expect(messages).toHaveLength(1);
        expect(messages[0]?.status).toBe('sent');
        expect(messages[0]?.externalId).toBe(`<${messages[0]?.id}@acme.test>`);
        expect(took).toEqual([messages[0]?.externalId]);
        const e = await store.get('enrollments', enrollmentId);
        expect(e?.doneSteps.map((d) => d.outcome)).toEqual(['sent', 'waited']);
        expect(e?.status).toBe('IN_PROGRESS');
      } finally {
        await runner.stop();
        await sql2.close();
      }
    } finally {
      await db.cleanup();
    }
  }, 120_000);
});
