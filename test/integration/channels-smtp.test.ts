/** The SMTP channel against a real SMTP server on loopback (smtp-server): what arrives is read back
 * from the wire, headers included. */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHarness, seededRandom, testSecrets } from '../support/harness.ts';
import { createSmtpChannel } from '../../channels/smtp.ts';
import { channelHostOf } from '../../shared/engine/channel.ts';
import { createRunner } from '../../shared/engine/runner.ts';
import { newEnrollment, newMessage, newStep } from '../../shared/model/factories.ts';
import type { Sender } from '../../shared/model/index.ts';

type Received = { from: string; to: string[]; raw: string; headers: Map<string, string>; body: string };

function parse(raw: string): { headers: Map<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const headers = new Map<string, string>();
  for (const line of head.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers.set(line.slice(0, i).toLowerCase(), line.slice(i + 1).trim());
  }
  return { headers, body: raw.slice(split + 4).trim() };
}

const received: Received[] = [];
let server: SMTPServer;
let port = 0;

beforeAll(async () => {
  server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === 'sam@acme.test' && auth.password === 'right-password') cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, cb) {
      if (address.address.startsWith('nobody@')) cb(Object.assign(new Error('No such mailbox'), { responseCode: 550 }));
      else if (address.address.startsWith('busy@')) cb(Object.assign(new Error('Mailbox busy, try later'), { responseCode: 451 }));
      else cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          ...parse(raw),
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function world(password = 'right-password') {
  const h = await makeHarness();
  const smtp = createSmtpChannel({ passwordFor: () => password, now: () => h.clock.now().getTime() });
  const sender: Sender = await h.addSender({
    name: 'Sam Sender', channel: 'email', capabilities: ['email'],
    channelConfig: { host: '127.0.0.1', port, secure: false, ignoreTLS: true, user: 'sam@acme.test', from: 'sam@acme.test' },
  });
  const runner = createRunner({
    store: h.store, clock: h.clock, random: seededRandom(1), ids: h.ids, randomBytes: testSecrets.randomBytes, channels: channelHostOf({ email: smtp }),
    actor: { ...h.owner, isSystem: true }, spacing: { minSeconds: 0, jitterSeconds: 0 },
  });
  return { h, smtp, sender, runner };
}

describe('SMTP channel', () => {
  it('delivers a sequence of emails with rendered merge fields, and threads the follow-up (In-Reply-To, References, Re:)', async () => {
    received.length = 0;
    const { h, smtp, sender, runner } = await world();
    const first = newStep(h.ids.uuid(), 'EMAIL', { subject: 'Idea for {{Company|your team}}', content: 'Hi {{First name|there}}, a short idea for you.' });
    const second = newStep(h.ids.uuid(), 'EMAIL', { subject: 'unused', content: 'Following up on my note, {{First name}}.', emailThreading: 'same_thread' });
    const campaign = await h.addCampaign({ senderIds: [sender.id], steps: [first, second], running: true });
    const lead = await h.addLead({ firstName: 'Ada', lastName: 'Lovelace', company: 'Analytical', email: 'ada@example.test' });
    const e = newEnrollment(h.stamp(), lead.id, campaign.id, { sdrProfileId: sender.id, currentStepId: first.id });
    await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);

    const r1 = await runner.tick();
    expect(r1.errors).toEqual([]);
    expect(r1.actions).toBe(1);
    await runner.tick();
    smtp.close();

    expect(received.length).toBe(2);
    const [a, b] = received;
    expect(a?.from).toBe('sam@acme.test');
    expect(a?.to).toEqual(['ada@example.test']);
    expect(a?.headers.get('from')).toBe('Sam Sender <sam@acme.test>');
    expect(a?.headers.get('to')).toBe('Ada Lovelace <ada@example.test>');
    expect(a?.headers.get('subject')).toBe('Idea for Analytical');
    expect(a?.body).toContain('Hi Ada, a short idea for you.');
    const { docs: sent } = await h.store.query('messages', { orderBy: [{ field: 'createdAt', dir: 'asc' }] });
    const firstId = `<${sent[0]?.id}@acme.test>`;
    expect(a?.headers.get('message-id')).toBe(firstId);
    expect(a?.headers.has('in-reply-to')).toBe(false);
    expect(b?.headers.get('subject')).toBe('Re: Idea for Analytical');
    expect(b?.headers.get('in-reply-to')).toBe(firstId);
    expect(b?.headers.get('references')).toBe(firstId);
    expect(b?.headers.get('message-id')).toBe(`<${sent[1]?.id}@acme.test>`);
    expect(b?.body).toContain('Following up on my note, Ada.');
    expect(sent.map((m) => [m.kind, m.status, m.externalId, m.chatId])).toEqual([
      ['email', 'sent', firstId, firstId],
      ['email', 'sent', `<${sent[1]?.id}@acme.test>`, firstId],
    ]);
    expect((await h.store.get('usage', `${sender.id}:2026-11-16`))?.counts.emails).toBe(2);
  });

  it('delivers a queued direct email in the conversation thread', async () => {
    received.length = 0;
    const { h, smtp, sender, runner } = await world();
    const lead = await h.addLead({ firstName: 'Bo', email: 'bo@example.test' });
    const earlier = newMessage(h.stamp(), { leadId: lead.id, sdrProfileId: sender.id, chatId: '<root@acme.test>', direction: 'out', kind: 'email', text: 'first', subject: 'Hello', status: 'sent', externalId: '<root@acme.test>', sentAt: h.now() });
    const queued = newMessage(h.stamp(), { leadId: lead.id, sdrProfileId: sender.id, chatId: '<root@acme.test>', direction: 'out', kind: 'email', text: 'A direct note', subject: 'Re: Hello', status: 'queued' });
    await h.seed([earlier, queued].map((m) => ({ collection: 'messages' as const, id: m.id, before: null, after: m })));
    const r = await runner.tick();
    smtp.close();
    expect(r.directMessages).toBe(1);
    expect(received.length).toBe(1);
    expect(received[0]?.headers.get('subject')).toBe('Re: Hello');
    expect(received[0]?.headers.get('in-reply-to')).toBe('<root@acme.test>');
    // Dated by the runner's clock (the harness's, in 2026), not the machine's.
    expect(new Date(received[0]?.headers.get('date') ?? '').toISOString()).toBe(new Date(h.clock.now().getTime() - (h.clock.now().getTime() % 1000)).toISOString());
    expect((await h.store.get('messages', queued.id))?.status).toBe('sent');
  });

  it('a refused recipient fails the step and stops the sequence; a refused login disconnects the sender; 451 backs off', async () => {
    received.length = 0;
    const { h, smtp, sender, runner } = await world();
    const step = newStep(h.ids.uuid(), 'EMAIL', { subject: 'Hi', content: 'Hello' });
    const campaign = await h.addCampaign({ senderIds: [sender.id], steps: [step], running: true });
    const nobody = await h.addLead({ firstName: 'No', email: 'nobody@example.test' });
    const e = newEnrollment(h.stamp(), nobody.id, campaign.id, { sdrProfileId: sender.id, currentStepId: step.id });
    await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
    await runner.tick();
    expect(received).toEqual([]);
    const stopped = await h.store.get('enrollments', e.id);
    expect(stopped?.status).toBe('STOPPED');
    expect(stopped?.stoppedReason).toMatch(/refused the recipient/);
    expect((await h.store.query('messages')).docs.map((m) => m.status)).toEqual(['failed']);

    const busy = await h.addLead({ firstName: 'Busy', email: 'busy@example.test' });
    const e2 = newEnrollment(h.stamp(), busy.id, campaign.id, { sdrProfileId: sender.id, currentStepId: step.id });
    await h.seed([{ collection: 'enrollments', id: e2.id, before: null, after: e2 }]);
    const r = await runner.tick();
    expect(r.senders.limited).toEqual([sender.id]);
    expect((await h.store.get('senders', sender.id))?.statusReason).toMatch(/retry later/);
    smtp.close();

    const bad = await world('wrong-password');
    const lead = await bad.h.addLead({ firstName: 'Ok', email: 'ok@example.test' });
    const c2 = await bad.h.addCampaign({ senderIds: [bad.sender.id], steps: [newStep(bad.h.ids.uuid(), 'EMAIL', { subject: 'Hi', content: 'Hello' })], running: true });
    const e3 = newEnrollment(bad.h.stamp(), lead.id, c2.id, { sdrProfileId: bad.sender.id, currentStepId: c2.steps[0]?.id ?? null });
    await bad.h.seed([{ collection: 'enrollments', id: e3.id, before: null, after: e3 }]);
    const r3 = await bad.runner.tick();
    bad.smtp.close();
    expect(r3.senders.disconnected).toEqual([bad.sender.id]);
    const s = await bad.h.store.get('senders', bad.sender.id);
    expect(s?.status).toBe('disconnected');
    expect(s?.statusReason).toMatch(/refused the login/);
    expect((await bad.h.store.get('enrollments', e3.id))?.status).toBe('IN_PROGRESS');
  });

  it('verifies an account against the server', async () => {
    const good = await world();
    expect(await good.smtp.accountInfo?.(good.sender)).toEqual({ canSendMessage: true, reason: null });
    good.smtp.close();
    const bad = await world('nope');
    expect((await bad.smtp.accountInfo?.(bad.sender))?.canSendMessage).toBe(false);
    bad.smtp.close();
  });
});
