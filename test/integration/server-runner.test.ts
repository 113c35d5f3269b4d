/** The sync server's runner and sender credentials: secrets stored encrypted and only by whom may,
 * never answered; the server-hosted email sender sends through a real SMTP server on loopback with the
 * stored password; two runner hosts over one database never both act for one sender. */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCampaign, newEnrollment, newLead, newLeadGroup, newSender, newStep } from '../../shared/model/factories.ts';
import type { Campaign, LeadGroup, Sender } from '../../shared/model/index.ts';
import { createMember } from '../../sync-server/admin.ts';
import { CredentialUnreadable, parseCredentialsKey, serverCredentials } from '../../sync-server/credentials.ts';
import { createServerRunner } from '../../sync-server/runner-host.ts';
import type { ServerRunner } from '../../sync-server/runner-host.ts';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type Mail = { to: string[]; subject: string; body: string };
type ErrorBody = { error: { code: string; message: string } };
type SenderOut = { id: string; status: string; warnings: string[] };

const GOOD = 's3cret-pass!';
const mails: Mail[] = [];
const logins: { username: string; password: string }[] = [];
let smtp: SMTPServer;
let smtpPort = 0;

beforeAll(async () => {
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      logins.push({ username: auth.username ?? '', password: auth.password ?? '' });
      if (auth.username === 'sam@acme.test' && auth.password === GOOD) cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), subject: /^Subject: (.*)$/m.exec(raw)?.[1]?.trim() ?? '', body: raw.slice(raw.indexOf('\r\n\r\n') + 4).trim() });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

describe.each(BACKENDS)('sender credentials and the server runner (%s)', (backend) => {
  const key = parseCredentialsKey(randomBytes(32).toString('base64'));
  const credentials = serverCredentials(key);
  let s: TestServer;
  let plainMemberKey = '';
  const runners: ServerRunner[] = [];

  beforeAll(async () => {
    s = await startTestServer(backend, { credentials });
    const m = await createMember(s.db, { workspaceId: s.ours.workspaceId, name: 'Carl Member', email: 'carl@acme.test', role: 'member' }, s.deps);
    plainMemberKey = m.apiKey;
  });
  afterAll(async () => {
    for (const r of runners) await r.stop();
    await s?.close();
  });

  const smtpConfig = (extra: Record<string, unknown> = {}) => ({ host: '127.0.0.1', port: smtpPort, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', ...extra });

  /** A server-hosted sender is created with its password: its login is checked first (a refused one is not created). */
  async function createEmailSender(apiKey: string, extra: Record<string, unknown> = { hostedBy: 'server', password: GOOD }, name = 'Sam Server'): Promise<SenderOut> {
    const res = await s.call<SenderOut>(apiKey, 'sdrProfiles.create', { name, channel: 'email', channelConfig: smtpConfig(extra) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  const rows = () => s.sql.query<{ workspace_id: string; sender_id: string; secret: string; key_id: string; updated_by: string }>('SELECT * FROM sender_credentials ORDER BY sender_id');
  /** Every row a secret could leak into; API keys' lastUsedAt left out (every call touches it). */
  const everything = async () => JSON.stringify([await rows(), await s.snapshot(s.ours.workspaceId), await s.sql.query('SELECT * FROM refusals')]);

  function runner(id: string): ServerRunner {
    const r = createServerRunner({ sql: s.sql, credentials, clock: s.clock, runnerId: id, loops: false, spacing: { minSeconds: 0, jitterSeconds: 0 } });
    runners.push(r);
    return r;
  }

  /** A running campaign of one email step for `sender`, with one enrolled lead per address. */
  async function runningCampaign(senderId: string, emails: string[]): Promise<{ campaign: Campaign; leadIds: string[] }> {
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const now = s.clock.now().toISOString();
    const stamp = () => ({ id: randomUUID(), workspaceId: s.ours.workspaceId, now });
    // Its own lead group: a running campaign starts every lead of its group.
    const group: LeadGroup = newLeadGroup(stamp(), `Group ${randomUUID().slice(0, 6)}`, () => randomUUID());
    const step = newStep(randomUUID(), 'EMAIL', { subject: 'Idea for {{Company|your team}}', content: 'Hi {{First name|there}}, one idea.' });
    const campaign: Campaign = { ...newCampaign(stamp(), `Email run ${randomUUID().slice(0, 6)}`, group.id, randomUUID()), running: true, startedAt: now, senders: [{ sdrProfileId: senderId, paused: false }], steps: [step] };
    const leads = emails.map((email, i) => newLead(stamp(), group.id, { firstName: `Lead${i}`, company: 'Analytical', email }));
    const enrollments = leads.map((l) => newEnrollment(stamp(), l.id, campaign.id, { sdrProfileId: senderId, currentStepId: step.id }));
    await store.commit([
      { collection: 'leadGroups', id: group.id, before: null, after: group },
      { collection: 'campaigns', id: campaign.id, before: null, after: campaign },
      ...leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })),
      ...enrollments.map((e) => ({ collection: 'enrollments' as const, id: e.id, before: null, after: e })),
    ]);
    return { campaign, leadIds: leads.map((l) => l.id) };
  }

  const senderDoc = async (id: string): Promise<Sender | null> => s.db.forWorkspace(s.ours.workspaceId).get('senders', id);

  it('stores a secret encrypted, only for the sender owner or an owner/admin, and never answers it', async () => {
    const mine = await createEmailSender(s.ours.memberKey);
    const secret = `pw-${randomUUID()}`;
    const set = await s.call<Record<string, unknown>>(s.ours.memberKey, 'sdrProfiles.setCredentials', { sdrProfileId: mine.id, secret });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ sdrProfileId: mine.id, channel: 'email', storedOn: 'server', reconnected: false, status: 'available' });

    const stored = (await rows()).filter((r) => r.sender_id === mine.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.key_id).toBe(key.id);
    expect(stored[0]?.updated_by).toBe(s.ours.memberId);
    // Neither the credentials table nor any document nor any list answer holds the plaintext.
    expect(await everything()).not.toContain(secret);
    expect(await everything()).not.toContain(Buffer.from(secret).toString('base64'));
    expect(JSON.stringify((await s.call(s.ours.ownerKey, 'sdrProfiles.list')).body)).not.toContain(secret);
    expect(await credentials.secretFor(s.sql, s.ours.workspaceId, mine.id)).toBe(secret);

    // Another plain member may not set it: refused, nothing changed.
    const before = await everything();
    const refused = await s.call<ErrorBody>(plainMemberKey, 'sdrProfiles.setCredentials', { sdrProfileId: mine.id, secret: 'hijack' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('PERMISSION_DENIED');
    expect(await everything()).toBe(before);
    expect(await credentials.secretFor(s.sql, s.ours.workspaceId, mine.id)).toBe(secret);

    // An admin may replace it (a new ciphertext, another author).
    const byAdmin = await s.call(s.ours.adminKey, 'sdrProfiles.setCredentials', { sdrProfileId: mine.id, secret: 'replaced-by-admin' });
    expect(byAdmin.status).toBe(200);
    expect(await credentials.secretFor(s.sql, s.ours.workspaceId, mine.id)).toBe('replaced-by-admin');
    expect((await rows()).find((r) => r.sender_id === mine.id)?.updated_by).toBe(s.ours.adminId);

    // Another workspace's key does not see the sender at all.
    const foreign = await s.call<ErrorBody>(s.theirs.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: mine.id, secret: 'x' });
    expect(foreign.status).toBe(404);
    expect(await credentials.secretFor(s.sql, s.ours.workspaceId, mine.id)).toBe('replaced-by-admin');
  });

  it('keeps a desktop-hosted sender\'s secret off the server, refuses sandbox senders, and stores a password given at creation', async () => {
    const desktop = await createEmailSender(s.ours.ownerKey, {}, 'Sam Desktop');
    const before = await everything();
    const refused = await s.call<ErrorBody>(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: desktop.id, secret: 'on-the-desktop' });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('SERVER_ONLY');
    expect(refused.body.error.message).toContain('desktop');
    expect(await everything()).toBe(before);

    const sandbox = await s.call<SenderOut>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Sandy', channel: 'sandbox' });
    const sandboxRefused = await s.call<ErrorBody>(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: sandbox.body.id, secret: 'x' });
    expect(sandboxRefused.body.error.code).toBe('INVALID_INPUT');

    // At creation, the password of a server-hosted sender is checked (the SMTP login), then goes to
    // the credentials table, not the document. Without IMAP settings its mailbox is not read: a warning.
    const created = await createEmailSender(s.ours.ownerKey, { hostedBy: 'server', password: GOOD }, 'Sam Created');
    expect(created.warnings).toEqual([expect.stringContaining('IMAP: no mailbox settings, so replies, bounces and unsubscribe emails are not read')]);
    expect((await senderDoc(created.id))?.channelConfig).toEqual({ ...smtpConfig(), hostedBy: 'server' });
    expect(await credentials.secretFor(s.sql, s.ours.workspaceId, created.id)).toBe(GOOD);
    expect(await everything()).not.toContain(GOOD);

    // A ciphertext is bound to its sender: copied onto another sender it does not open.
    const row = (await rows()).find((r) => r.sender_id === created.id);
    await s.sql.query('INSERT INTO sender_credentials (workspace_id, sender_id, secret, key_id, updated_at, updated_by) VALUES ($1, $2, $3, $4, now(), $5)', [s.ours.workspaceId, desktop.id, row?.secret, row?.key_id, 'test']);
    await expect(credentials.secretFor(s.sql, s.ours.workspaceId, desktop.id)).rejects.toBeInstanceOf(CredentialUnreadable);
    await s.sql.query('DELETE FROM sender_credentials WHERE sender_id = $1', [desktop.id]);
    // And a server with another key says so instead of logging in with garbage.
    const otherKey = serverCredentials(parseCredentialsKey(randomBytes(32).toString('hex')));
    await expect(otherKey.secretFor(s.sql, s.ours.workspaceId, created.id)).rejects.toThrow(/another CREDENTIALS_KEY/);
  });

  it('sends a running campaign\'s email through SMTP with the stored password, and only for server-hosted senders', async () => {
    const sender = await createEmailSender(s.ours.ownerKey, { hostedBy: 'server', password: GOOD }, 'Sam Sends');
    expect((await s.call(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: GOOD })).status).toBe(200);
    const { leadIds } = await runningCampaign(sender.id, ['ada@example.test']);
    // A sandbox sender in the same workspace stays with the desktops.
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const sandbox = newSender({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: s.clock.now().toISOString() }, { name: 'Desk Sandbox', ownerMemberId: s.ours.ownerId, channel: 'sandbox' });
    await store.commit([{ collection: 'senders', id: sandbox.id, before: null, after: sandbox }]);

    mails.length = 0;
    logins.length = 0;
    const r = runner('server:one');
    expect(await r.scan()).toEqual([s.ours.workspaceId]);
    const report = (await r.tickAll()).get(s.ours.workspaceId);
    expect(report?.errors).toEqual([]);
    expect(report?.senders.held).toContain(sender.id);
    expect(report?.senders.held).not.toContain(sandbox.id);

    expect(logins).toEqual([{ username: 'sam@acme.test', password: GOOD }]);
    expect(mails).toHaveLength(1);
    expect(mails[0]?.to).toEqual(['ada@example.test']);
    expect(mails[0]?.subject).toBe('Idea for Analytical');
    expect(mails[0]?.body).toContain('Hi Lead0, one idea.');
    const { docs: sent } = await store.query('messages', { where: { op: 'eq', field: 'leadId', value: leadIds[0] ?? '' } });
    expect(sent.map((m) => [m.kind, m.status, m.sdrProfileId])).toEqual([['email', 'sent', sender.id]]);
    expect((await senderDoc(sender.id))?.runnerId).toBe('server:one');
    expect((await senderDoc(sandbox.id))?.runnerId ?? null).toBeNull();

    // Shutdown releases the lease at once.
    await r.stop();
    expect((await senderDoc(sender.id))?.runnerId).toBeNull();
    expect(r.workspaces()).toEqual([]);
  });

  it('a refused login disconnects the sender with the reason; new credentials reconnect it', async () => {
    const sender = await createEmailSender(s.ours.ownerKey, { hostedBy: 'server', password: GOOD }, 'Sam Wrong');
    await s.call(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: 'wrong-password' });
    await runningCampaign(sender.id, ['bo@example.test']);
    mails.length = 0;
    logins.length = 0;
    const r = runner('server:wrong');
    await r.scan();
    await r.tickAll();
    expect(logins).toContainEqual({ username: 'sam@acme.test', password: 'wrong-password' });
    expect(mails).toEqual([]);
    const down = await senderDoc(sender.id);
    expect(down?.status).toBe('disconnected');
    expect(down?.statusReason).toMatch(/refused/i);

    const fixed = await s.call<Record<string, unknown>>(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: GOOD });
    expect(fixed.body).toMatchObject({ reconnected: true, status: 'available' });
    const up = await senderDoc(sender.id);
    expect(up?.status).toBe('available');
    expect(up?.statusReason).toBeNull();
    s.clock.advance(60_000);
    await r.tickAll();
    expect(logins[logins.length - 1]).toEqual({ username: 'sam@acme.test', password: GOOD });
    expect(mails.map((m) => m.to)).toEqual([['bo@example.test']]);
    await r.stop();
  });

  it('two runner hosts over one database never both act for one sender; a stopped or crashed host hands over', async () => {
    const sender = await createEmailSender(s.ours.ownerKey, { hostedBy: 'server', password: GOOD }, 'Sam Shared');
    await s.call(s.ours.ownerKey, 'sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: GOOD });
    const addresses = Array.from({ length: 6 }, (_, i) => `shared${i}@example.test`);
    await runningCampaign(sender.id, addresses);
    mails.length = 0;
    const a = runner('server:A');
    const b = runner('server:B');
    await Promise.all([a.scan(), b.scan()]);
    for (let round = 0; round < 3; round++) {
      const [ra, rb] = await Promise.all([a.tickAll(), b.tickAll()]);
      const heldA = ra.get(s.ours.workspaceId)?.senders.held.includes(sender.id) ?? false;
      const heldB = rb.get(s.ours.workspaceId)?.senders.held.includes(sender.id) ?? false;
      expect(heldA && heldB, `round ${round}: both hosts held the sender`).toBe(false);
      expect(heldA || heldB).toBe(true);
      s.clock.advance(60_000);
    }
    // Every lead got exactly one email, from whichever host held the lease.
    expect(mails.map((m) => m.to[0]).sort()).toEqual([...addresses].sort());
    const holder = (await senderDoc(sender.id))?.runnerId;
    expect(['server:A', 'server:B']).toContain(holder);
    const [first, second] = holder === 'server:A' ? [a, b] : [b, a];

    // A clean stop releases the lease: the other host takes over on its next tick.
    const more = [`late@example.test`];
    await runningCampaign(sender.id, more);
    await first.stop();
    expect((await senderDoc(sender.id))?.runnerId).toBeNull();
    mails.length = 0;
    const taken = (await second.tickAll()).get(s.ours.workspaceId);
    expect(taken?.senders.held).toContain(sender.id);
    expect(mails.map((m) => m.to)).toEqual([['late@example.test']]);

    // A host that dies without releasing keeps the sender until its lease lapses (5 minutes).
    const c = runner('server:C');
    await c.scan();
    expect((await c.tickAll()).get(s.ours.workspaceId)?.senders.heldElsewhere).toContain(sender.id);
    s.clock.advance(6 * 60_000);
    expect((await c.tickAll()).get(s.ours.workspaceId)?.senders.held).toContain(sender.id);
    expect((await senderDoc(sender.id))?.runnerId).toBe('server:C');
    const back = (await second.tickAll()).get(s.ours.workspaceId);
    expect(back?.senders.held).not.toContain(sender.id);
    expect(back?.senders.heldElsewhere).toContain(sender.id);
  });
});
