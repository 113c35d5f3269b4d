/** A runner process killed between an external action and its record (SIGKILL, no cleanup), then
 * restarted on the same database with the same identity: the email is never sent twice (the send is
 * marked "delivery unknown" when no mailbox lookup is configured), the connector action is asked
 * again with the same idempotency key and performed once, and the restarted runner takes its own
 * leases back at once instead of waiting for them to lapse. Real SMTP server and a mock HTTP
 * connector on loopback; PGlite always, PostgreSQL too when DATABASE_URL is set. */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCampaign, newEnrollment, newLead, newSender, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Sender, Step } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { parseCredentialsKey, serverCredentials } from '../../sync-server/credentials.ts';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { createServerRunner } from '../../sync-server/runner-host.ts';
import { BACKENDS, testDatabase } from './support/db.ts';
import { startRunnerChild } from './support/runner-process.ts';
import type { RunnerExit } from './support/runner-process.ts';
import type { TestDatabase } from './support/db.ts';

const KEY = randomBytes(32).toString('base64');

/** The child runner of the current test; the servers kill it at the moment the action is accepted. */
let child: ChildProcess | null = null;
const killChild = (): void => {
  child?.kill('SIGKILL');
};

// ---------------------------------------------------------------- SMTP server (counts what it accepts)
const mails: { to: string[]; messageId: string }[] = [];
let smtp: SMTPServer;
let smtpPort = 0;

// ---------------------------------------------------------------- mock HTTP connector (dedupes by key)
const connector = { performed: 0, requests: 0, byKey: new Map<string, unknown>(), keys: [] as string[] };
let http: Server;
let httpPort = 0;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let raw = '';
  for await (const chunk of req) raw += String(chunk);
  const url = new URL(req.url ?? '/', 'http://localhost');
  const reply = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.headers.authorization !== 'Bearer tok') return reply(401, { error: { code: 'BAD_TOKEN', message: 'no' } });
  if (req.method === 'POST' && url.pathname.endsWith('/actions')) {
    connector.requests++;
    const b = JSON.parse(raw) as { idempotencyKey: string; recipient: { leadId: string } };
    connector.keys.push(b.idempotencyKey);
    const known = connector.byKey.get(b.idempotencyKey);
    if (known) return reply(200, known);
    connector.performed++;
    const result = { status: 'sent', externalId: `ext-${connector.performed}`, chatId: `conv-${b.recipient.leadId.slice(-6)}` };
    connector.byKey.set(b.idempotencyKey, result);
    // The connector has performed the action; the runner dies before it hears the answer.
    killChild();
    return reply(201, result);
  }
  if (req.method === 'GET' && url.pathname.endsWith('/events')) return reply(200, { events: [], cursor: '0' });
  return reply(200, { canSendMessage: true, reason: null });
}

beforeAll(async () => {
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), messageId: /^Message-ID: (.*)$/im.exec(raw)?.[1]?.trim() ?? '' });
        // Accepted (the mail will be delivered): the runner is killed before it can record it.
        killChild();
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  http = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  httpPort = (http.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  await new Promise<void>((resolve) => http.close(() => resolve()));
});

/** Runs the child runner until it exits; resolves with its exit signal and output. */
function runChild(db: TestDatabase, runnerId: string): Promise<RunnerExit> {
  const started = startRunnerChild(db.env, runnerId, KEY);
  child = started.proc;
  return started.exited.finally(() => (child = null));
}

type World = { db: TestDatabase; workspaceId: string; sender: Sender; campaign: Campaign; step: Step; leadId: string; enrollmentId: string };

/** A workspace with one server-hosted sender, a running campaign of `step` then a profile visit,
 * and one enrolled lead, written straight into the database (then closed for the child). */
async function setUp(backend: (typeof BACKENDS)[number], kind: 'email' | 'http'): Promise<World> {
  const db = testDatabase(backend);
  const sql = await db.open();
  try {
    await migrate(sql);
    const now = new Date().toISOString();
    const ids = { uuid: () => randomUUID() };
    const w = workspaceCreation(ids, now, { name: 'Crash', owner: { name: 'Owner', email: 'owner@crash.test' }, subscriptionStatus: 'active' });
    const stamp = () => ({ id: randomUUID(), workspaceId: w.workspaceId, now });
    const sender = newSender(stamp(), {
      name: kind === 'email' ? 'Sam Mail' : 'Cora Connector', ownerMemberId: w.ownerId, channel: kind, timeZone: 'UTC',
      capabilities: kind === 'email' ? ['email'] : ['message', 'connection_request', 'profile_visit'],
      channelConfig: kind === 'email'
        ? { host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, from: 'sam@acme.test', hostedBy: 'server' }
        : { baseUrl: `http://127.0.0.1:${httpPort}`, hostedBy: 'server' },
    });
    const step = kind === 'email' ? newStep(randomUUID(), 'EMAIL', { subject: 'Hello', content: 'Hi {{First name|there}}.' }) : newStep(randomUUID(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}.' });
    const campaign: Campaign = {
      ...newCampaign(stamp(), 'Crash run', w.leadGroupId, randomUUID()),
      running: true, startedAt: now, senders: [{ sdrProfileId: sender.id, paused: false }], steps: [step, newStep(randomUUID(), 'WAIT', { waitTimeSeconds: 3 * 86_400 }), kind === 'email' ? newStep(randomUUID(), 'EMAIL', { subject: 'Again', content: 'Following up.' }) : newStep(randomUUID(), 'PROFILE_VISIT')],
    };
    for (const d of Object.values(campaign.schedule.days)) Object.assign(d, { enabled: true, start: '00:00', end: '24:00' });
    const lead = newLead(stamp(), w.leadGroupId, { firstName: 'Ada', email: 'ada@example.test', socialUrl: 'https://social.example/in/ada' });
    const e = newEnrollment(stamp(), lead.id, campaign.id, { sdrProfileId: sender.id, currentStepId: step.id, nextActionAt: now });
    const writes: AnyWrite[] = [
      ...w.writes,
      { collection: 'senders', id: sender.id, before: null, after: sender },
      { collection: 'campaigns', id: campaign.id, before: null, after: campaign },
      { collection: 'leads', id: lead.id, before: null, after: lead },
      { collection: 'enrollments', id: e.id, before: null, after: e },
    ];
    await new PgDatabase(sql).forWorkspace(w.workspaceId).commit(writes);
    if (kind === 'http') await serverCredentials(parseCredentialsKey(KEY)).port(sql).set(w.workspaceId, sender.id, 'tok', { at: now, by: w.ownerId });
    return { db, workspaceId: w.workspaceId, sender, campaign, step, leadId: lead.id, enrollmentId: e.id };
  } finally {
    await sql.close();
  }
}

async function restart(world: World, runnerId: string): Promise<{ sql: SqlDatabase; tick: () => Promise<void>; stop: () => Promise<void> }> {
  const sql = await world.db.open();
  const runner = createServerRunner({ sql, credentials: serverCredentials(parseCredentialsKey(KEY)), runnerId, loops: false, spacing: { minSeconds: 0, jitterSeconds: 0 } });
  await runner.scan();
  return {
    sql,
    tick: async () => void (await runner.tickAll()),
    stop: async () => {
      await runner.stop();
      await sql.close();
    },
  };
}

describe.each(BACKENDS)('a runner killed between an action and its record (%s)', (backend) => {
  it('email: exactly one email, the lead marked "delivery unknown", nothing sent again by itself; another identity waits for the lease, the same one takes it at once', async () => {
    mails.length = 0;
    const world = await setUp(backend, 'email');
    try {
      const run = await runChild(world.db, 'runner-a');
      expect(run.signal, run.out).toBe('SIGKILL');
      expect(mails).toHaveLength(1);

      // A different runner finds the dead runner's lease still valid: it does not touch the sender.
      const other = await restart(world, 'runner-b');
      await other.tick();
      const storeB = new PgDatabase(other.sql).forWorkspace(world.workspaceId);
      expect((await storeB.query('messages')).docs.map((m) => m.status)).toEqual(['sending']);
      await other.stop();
      expect(mails).toHaveLength(1);

      // The same runner identity restarted: takes its lease back at once and settles the intent.
      const again = await restart(world, 'runner-a');
      await again.tick();
      await again.tick();
      const store = new PgDatabase(again.sql).forWorkspace(world.workspaceId);
      const sender = await store.get('senders', world.sender.id);
      expect(sender?.runnerId).toBe('runner-a');
      const { docs: messages } = await store.query('messages');
      expect(messages).toHaveLength(1);
      expect(messages[0]?.status).toBe('unknown');
      expect(messages[0]?.error).toMatch(/Delivery unknown/);
      expect(mails).toHaveLength(1);
      expect(mails[0]?.messageId).toBe(`<${messages[0]?.id}@acme.test>`);
      const e = await store.get('enrollments', world.enrollmentId);
      expect(e?.status).toBe('IN_PROGRESS');
      expect(e?.waitReason).toBe('delivery_unknown');
      expect(e?.nextActionAt).toBeNull();
      expect(e?.doneSteps).toEqual([]);
      const { docs: events } = await store.query('activities', { where: { op: 'eq', field: 'metadata.eventKind', value: 'delivery_unknown' } });
      expect(events).toHaveLength(1);
      expect(events[0]?.leadId).toBe(world.leadId);
      await again.stop();
    } finally {
      await world.db.cleanup();
    }
  }, 120_000);

  it('HTTP connector: the restarted runner asks again with the same idempotency key and the connector performs the action once', async () => {
    connector.performed = 0;
    connector.requests = 0;
    connector.byKey.clear();
    connector.keys = [];
    const world = await setUp(backend, 'http');
    try {
      const run = await runChild(world.db, 'runner-c');
      expect(run.signal, run.out).toBe('SIGKILL');
      expect(connector.performed).toBe(1);

      const again = await restart(world, 'runner-c');
      await again.tick();
      const store = new PgDatabase(again.sql).forWorkspace(world.workspaceId);
      const { docs: messages } = await store.query('messages');
      expect(messages).toHaveLength(1);
      expect(messages[0]?.status).toBe('sent');
      expect(messages[0]?.externalId).toBe('ext-1');
      expect(connector.requests).toBe(2);
      expect(new Set(connector.keys)).toEqual(new Set([messages[0]?.id]));
      expect(connector.performed).toBe(1);
      const e = await store.get('enrollments', world.enrollmentId);
      expect(e?.doneSteps.map((d) => d.outcome)).toEqual(['sent', 'waited']);
      expect(e?.doneSteps[0]?.stepId).toBe(world.step.id);
      expect((await store.query('usage')).docs.map((u) => u.counts.messages)).toEqual([1]);
      await again.stop();
    } finally {
      await world.db.cleanup();
    }
  }, 120_000);
});
