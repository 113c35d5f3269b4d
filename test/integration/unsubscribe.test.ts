/**
 * Unsubscribe through the real channels: a sync server with a public address (PUBLIC_URL) stamps it
 * on its workspaces; its runner sends campaign emails through a real SMTP server on loopback, and
 * the bytes that went out carry List-Unsubscribe (the one-click https URL and a mailto: to the
 * sender's mailbox) and List-Unsubscribe-Post (RFC 8058). The one-click URL, served by the same
 * server without an API key: GET shows a page and changes nothing (mail scanners open links), POST
 * unsubscribes the lead; bad or forged tokens get a clear page and change nothing. The mailto: way:
 * a mail with the unsubscribe subject, delivered to the sender's INBOX on a real Dovecot and read
 * over IMAP, unsubscribes its lead. Either way the lead is Do Not Contact and gets no follow-up.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCampaign, newEnrollment, newLead, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Lead, LeadGroup, Sender } from '../../shared/model/index.ts';
import { verifyUnsubscribeToken } from '../../shared/replies/unsubscribe-token.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { parseCredentialsKey, serverCredentials } from '../../sync-server/credentials.ts';
import { createServerRunner } from '../../sync-server/runner-host.ts';
import type { ServerRunner } from '../../sync-server/runner-host.ts';
import { publicUrlSetting, stampPublicUrl } from '../../sync-server/unsubscribe.ts';
import { BACKENDS } from './support/db.ts';
import { startDovecot } from './support/dovecot.ts';
import type { Dovecot, DovecotUser } from './support/dovecot.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { until } from '../support/until.ts';

const USER: DovecotUser = { user: 'sam@acme.test', password: 'unsub-pass' };
const PUBLIC = 'https://crm.acme.example';
let dovecot: Dovecot;
let smtp: SMTPServer;
let smtpPort = 0;
const accepted: { to: string; raw: string }[] = [];
const privateHostsBefore = process.env.ALLOW_PRIVATE_SENDER_HOSTS;

beforeAll(async () => {
  // The test's mail servers are on loopback, which a server-hosted sender may not use by default.
  process.env.ALLOW_PRIVATE_SENDER_HOSTS = '1';
  dovecot = await startDovecot([USER]);
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === USER.user && auth.password === USER.password) cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        for (const r of session.envelope.rcptTo) accepted.push({ to: r.address, raw: Buffer.concat(chunks).toString('utf8') });
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

/** A header of raw message bytes, unfolded. */
function header(raw: string, name: string): string | null {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
  const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line === undefined ? null : line.slice(name.length + 1).trim();
}

describe('PUBLIC_URL', () => {
  it('is an https address or nothing: anything else turns one-click links off with a sentence', () => {
    expect(publicUrlSetting('https://crm.acme.example/')).toEqual({ url: 'https://crm.acme.example', problem: null });
    expect(publicUrlSetting('https://acme.example/crm/')).toEqual({ url: 'https://acme.example/crm', problem: null });
    expect(publicUrlSetting(undefined)).toEqual({ url: null, problem: null });
    expect(publicUrlSetting('http://crm.acme.example')).toEqual({ url: null, problem: expect.stringMatching(/must be an https:\/\/ address/) });
    expect(publicUrlSetting('crm.acme.example')).toEqual({ url: null, problem: expect.stringMatching(/not a URL/) });
  });
});

describe.each(BACKENDS)('unsubscribe from a campaign email (%s)', (backend) => {
  const credentials = serverCredentials(parseCredentialsKey(randomBytes(32).toString('base64')));
  let s: TestServer;
  let r: ServerRunner;
  beforeAll(async () => {
    s = await startTestServer(backend, { credentials, operator: { publicUrl: `${PUBLIC}/` } });
    r = createServerRunner({ sql: s.sql, credentials, clock: s.clock, loops: false, spacing: { minSeconds: 0, jitterSeconds: 0 }, imap: { recheckMs: 3_600_000, pollMs: 3_600_000 } });
  }, 60_000);
  afterAll(async () => {
    await r?.stop();
    await s?.close();
  });

  it('the server keeps each workspace\'s publicUrl equal to its setting', async () => {
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const publicUrlOf = async (workspaceId: string) => (await s.db.forWorkspace(workspaceId).get('workspaces', workspaceId))?.publicUrl;
    // The server stamps one workspace after the other (stampPublicUrl): both, in time.
    await until('publicUrl stamped on both workspaces', async () => (await publicUrlOf(s.ours.workspaceId)) === PUBLIC && (await publicUrlOf(s.theirs.workspaceId)) === PUBLIC, 15_000);
    // Already equal: nothing is written again; a server without the setting takes it away.
    expect(await stampPublicUrl(s.db, s.sql, s.clock, PUBLIC)).toBe(0);
    expect(await stampPublicUrl(s.db, s.sql, s.clock, null)).toBe(2);
    expect((await store.get('workspaces', s.ours.workspaceId))?.publicUrl).toBeNull();
    expect(await stampPublicUrl(s.db, s.sql, s.clock, PUBLIC)).toBe(2);
  });

  async function world() {
    const res = await s.call<{ id: string }>(s.ours.ownerKey, 'sdrProfiles.create', {
      name: 'Sam Sender', channel: 'email',
      channelConfig: { host: '127.0.0.1', port: smtpPort, secure: false, user: USER.user, from: USER.user, hostedBy: 'server', password: USER.password, imap: { host: '127.0.0.1', port: dovecot.port, secure: false } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const created = await store.get('senders', res.body.id);
    if (!created) throw new Error('sender');
    // STARTTLS is off on the test SMTP server (a private network setting, not in the API).
    const sender: Sender = { ...created, channelConfig: { ...created.channelConfig, ignoreTLS: true } };
    await store.commit([{ collection: 'senders', id: sender.id, before: created, after: sender }]);

    const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
    const now = s.clock.now().toISOString();
    const stamp = () => ({ id: randomUUID(), workspaceId: s.ours.workspaceId, now });
    const first = newStep(randomUUID(), 'EMAIL', { subject: 'Idea for {{Company|your team}}', content: 'Hi {{First name|there}}, one idea.' });
    const wait = newStep(randomUUID(), 'WAIT', { waitTimeSeconds: 86_400 });
    const second = newStep(randomUUID(), 'EMAIL', { subject: 'unused', content: 'Following up.', emailThreading: 'same_thread' });
    const campaign: Campaign = { ...newCampaign(stamp(), `Unsubscribe run ${randomUUID().slice(0, 6)}`, group.id, randomUUID()), running: true, startedAt: now, senders: [{ sdrProfileId: sender.id, paused: false }], steps: [first, wait, second] };
    for (const d of Object.values(campaign.schedule.days)) Object.assign(d, { enabled: true, start: '00:00', end: '24:00' });
    const leads: Lead[] = ['ada', 'bo', 'cy'].map((n) => newLead(stamp(), group.id, { firstName: n, fullName: n, company: 'Analytical', email: `${n}-${randomUUID().slice(0, 6)}@example.test` }));
    const enrollments = leads.map((l) => newEnrollment(stamp(), l.id, campaign.id, { sdrProfileId: sender.id, currentStepId: first.id, nextActionAt: now }));
    const writes: AnyWrite[] = [
      { collection: 'campaigns', id: campaign.id, before: null, after: campaign },
      ...leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })),
      ...enrollments.map((e) => ({ collection: 'enrollments' as const, id: e.id, before: null, after: e })),
    ];
    await store.commit(writes);
    return { store, sender, campaign, leads, enrollments };
  }

  it('emails carry both ways; GET changes nothing, POST unsubscribes; a mail to the mailto: address unsubscribes; no follow-up for either', async () => {
    await until('publicUrl stamped', async () => (await s.db.forWorkspace(s.ours.workspaceId).get('workspaces', s.ours.workspaceId))?.publicUrl === PUBLIC, 15_000);
    const { store, sender, leads, enrollments } = await world();
    const [ada, bo, cy] = leads;
    if (!ada || !bo || !cy) throw new Error('three leads');
    await r.scan();
    await until('three first emails', async () => {
      await r.tickAll();
      return leads.every((l) => accepted.some((a) => a.to === l.email));
    }, 15_000);

    // The bytes that went out: the one-click URL under PUBLIC_URL and the mailto: of the sender's own mailbox.
    const mailOf = (l: Lead) => accepted.find((a) => a.to === l.email)?.raw ?? '';
    const key = (await store.get('senders', sender.id))?.unsubscribeKey ?? '';
    const ways = new Map<string, { url: string; mailtoSubject: string; token: string }>();
    for (const l of leads) {
      const raw = mailOf(l);
      expect(header(raw, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
      const m = /^<(https:\/\/crm\.acme\.example\/unsubscribe\/([A-Za-z0-9_-]+))>, <mailto:sam@acme\.test\?subject=([^>]+)>$/.exec(header(raw, 'List-Unsubscribe') ?? '');
      expect(m, header(raw, 'List-Unsubscribe') ?? 'no List-Unsubscribe').not.toBeNull();
      const [, url = '', token = '', subject = ''] = m ?? [];
      expect(decodeURIComponent(subject)).toBe(`unsubscribe ${token}`);
      expect(await verifyUnsubscribeToken(key, token)).toEqual({ workspaceId: s.ours.workspaceId, sdrProfileId: sender.id, leadId: l.id });
      ways.set(l.id, { url, mailtoSubject: decodeURIComponent(subject), token });
    }
    const local = (url: string) => url.replace(PUBLIC, s.url);
    const adaWay = ways.get(ada.id);
    const boWay = ways.get(bo.id);
    if (!adaWay || !boWay) throw new Error('ways');

    // A mail scanner (or the person) opens the link: a page with a button, nothing changed.
    const seq = await s.maxSeq(s.ours.workspaceId);
    const page = await fetch(local(adaWay.url));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-store');
    const html = await page.text();
    expect(html).toContain('Stop receiving emails from Sam Sender');
    expect(html).toMatch(/<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe<\/button><\/form>/);
    expect(await s.maxSeq(s.ours.workspaceId)).toBe(seq);
    expect((await store.get('leads', ada.id))?.doNotContact).toBe(false);

    // Bad and forged tokens: a clear page, nothing changed.
    const flipped = `${adaWay.token.slice(0, 80)}${adaWay.token[80] === 'A' ? 'B' : 'A'}${adaWay.token.slice(81)}`;
    for (const bad of ['not-a-token', flipped, ways.get(cy.id)?.token.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) ?? '']) {
      for (const method of ['GET', 'POST']) {
        const res = await fetch(`${s.url}/unsubscribe/${bad}`, { method, ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' } : {}) });
        expect(res.status, `${method} ${bad}`).toBe(404);
        expect(await res.text()).toContain('This unsubscribe link is not valid');
      }
    }
    expect(await s.maxSeq(s.ours.workspaceId)).toBe(seq);

    // The mail provider's one-click POST (RFC 8058): no API key, the token is the authority.
    const post = await fetch(local(adaWay.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
    expect(post.status).toBe(200);
    expect(await post.text()).toContain('You are unsubscribed');
    const adaNow = await store.get('leads', ada.id);
    expect(adaNow).toMatchObject({ doNotContact: true, unsubscribeSource: 'one_click', unsubscribedAt: s.clock.now().toISOString() });
    expect(await store.get('enrollments', enrollments[0]?.id ?? '')).toMatchObject({ status: 'STOPPED', stoppedReason: 'unsubscribed' });
    const events = (await store.query('activities', { where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: ada.id }, { op: 'eq', field: 'metadata.eventKind', value: 'lead_unsubscribed' }] } })).docs;
    expect(events.map((e) => e.content)).toEqual([expect.stringMatching(/^ada unsubscribed with the unsubscribe link of an email: marked Do Not Contact\. The sequence in "Unsubscribe run \w+" stopped\.$/)]);
    // Clicked again (or the page's button after the provider's POST): the same answer, nothing written.
    const again = await s.maxSeq(s.ours.workspaceId);
    expect((await fetch(local(adaWay.url), { method: 'POST' })).status).toBe(200);
    expect(await (await fetch(local(adaWay.url))).text()).toContain('You are unsubscribed');
    expect(await s.maxSeq(s.ours.workspaceId)).toBe(again);

    // Bo's mail client sends the mailto: (no thread headers, a forwarding address): read over IMAP.
    await dovecot.deliver(USER, `From: Bo <bo.alias@elsewhere.example>\r\nTo: ${USER.user}\r\nSubject: ${boWay.mailtoSubject}\r\nMessage-ID: <${randomUUID()}@elsewhere.example>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nThis message was automatically generated by Gmail.\r\n`);
    await until('Bo unsubscribed by mail', async () => {
      await r.tickAll();
      return (await store.get('leads', bo.id))?.doNotContact === true;
    }, 15_000);
    expect(await store.get('leads', bo.id)).toMatchObject({ unsubscribeSource: 'mailto' });
    expect(await store.get('enrollments', enrollments[1]?.id ?? '')).toMatchObject({ status: 'STOPPED', stoppedReason: 'unsubscribed' });
    // Not a reply: nothing in the inbox.
    expect(await store.count('messages', { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: bo.id }, { op: 'eq', field: 'direction', value: 'in' }] })).toBe(0);

    // A day later the follow-up goes to Cy only.
    const before = accepted.length;
    s.clock.advance(86_400_000 + 60_000);
    await until('the follow-up to Cy', async () => {
      await r.tickAll();
      return accepted.slice(before).some((a) => a.to === cy.email);
    }, 15_000);
    await r.tickAll();
    expect(accepted.slice(before).map((a) => a.to)).toEqual([cy.email]);
  }, 120_000);

  it('an address that sends many links that do not work is answered 429 for the rest of the minute, with no look-up', async () => {
    s.clock.advance(61_000);
    // Well-formed tokens (version 1, right length) that verify nowhere: each costs a look-up.
    const guess = () => Buffer.concat([Buffer.from([1]), Buffer.from(s.ours.workspaceId.replace(/-/g, ''), 'hex'), randomBytes(48)]).toString('base64url');
    for (let i = 0; i < 60; i++) expect((await fetch(`${s.url}/unsubscribe/${guess()}`)).status).toBe(404);
    const throttled = await fetch(`${s.url}/unsubscribe/${guess()}`, { method: 'POST' });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await throttled.text()).toContain('Too many unsubscribe links that do not work');
    s.clock.advance(60_000);
    expect((await fetch(`${s.url}/unsubscribe/${guess()}`)).status).toBe(404);
  });
});
