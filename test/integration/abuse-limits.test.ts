/** Abuse limits of the sync server: unknown keys throttled per address before any lookup, the per-key
 * limit shared by every process on one PostgreSQL with RateLimit headers, live streams capped and
 * dropped when a client does not read, logs without documents or keys, and log tables kept bounded. */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import nodemailer from 'nodemailer';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Channel } from '../../shared/engine/channel.ts';
import { DomainError } from '../../shared/errors.ts';
import type { Sender, Tag } from '../../shared/model/index.ts';
import { newLead } from '../../shared/model/factories.ts';
import { SELECTION_PAGE, resolveSelection } from '../../shared/ops/selection.ts';
import type { StoreReader } from '../../shared/store.ts';
import type { AdminDeps } from '../../sync-server/admin.ts';
import { buildServer } from '../../sync-server/app.ts';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { cappedStream, serializeError } from '../../sync-server/logging.ts';
import { Maintenance } from '../../sync-server/maintenance.ts';
import { createMetrics } from '../../sync-server/metrics.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { StreamHub } from '../../sync-server/stream-hub.ts';
import { SharedRateLimiter } from '../../sync-server/rate-limit.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { blockedReason, checkHost, guardChannelHost, guardedFetch, guardedLookup, guardedSmtpSocket } from '../../sync-server/sender-hosts.ts';
import { createImapChannel } from '../../channels/imap.ts';
import { FakeClock, makeHarness, seededRandom } from '../support/harness.ts';
import { BACKENDS, openMigrated, testDatabase } from './support/db.ts';
import { createTeam, startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const UNKNOWN_KEY = 'live_0000000000000000000000000000000000000000';

/** A database wrapper counting the API-key lookups that reach it. */
function countingLookups(sql: SqlDatabase): { sql: SqlDatabase; lookups: () => number } {
  let n = 0;
  const wrapped: SqlDatabase = Object.create(sql) as SqlDatabase;
  wrapped.query = (async (text: string, params?: unknown[]) => {
    if (text.includes("k.collection = 'apiKeys'")) n++;
    return sql.query(text, params);
  }) as SqlDatabase['query'];
  return { sql: wrapped, lookups: () => n };
}

describe('unknown keys are throttled per client address', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer('pglite', { operator: { authFailuresPerMinute: 5, trustProxy: true } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('refuses an address after its allowance of failed lookups, before looking the key up, and changes nothing', async () => {
    // A second server on the same database, whose lookups are counted.
    const { sql, lookups } = countingLookups(s.sql);
    const app = await buildServer({ database: sql, clock: s.clock, logLevel: 'silent', operator: { authFailuresPerMinute: 5, trustProxy: true } });
    try {
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const call = (key: string, from: string) => fetch(`${url}/tags.getAll`, { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': from } });
      const before = await s.snapshot(s.ours.workspaceId);
      for (let i = 0; i < 5; i++) expect((await call(UNKNOWN_KEY, '203.0.113.7')).status).toBe(401);
      expect(lookups()).toBe(5);
      const refused = await call(UNKNOWN_KEY, '203.0.113.7');
      expect(refused.status).toBe(429);
      const body = (await refused.json()) as { error: { code: string; details: Record<string, unknown> } };
      expect(body.error.code).toBe('RATE_LIMITED');
      expect(body.error.details.reason).toBe('auth_failures');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // No lookup for the refused request, not even with a valid key from that address.
      expect((await call(s.ours.ownerKey, '203.0.113.7')).status).toBe(429);
      expect(lookups()).toBe(5);
      // Other addresses are not affected; the workspace did not change.
      expect((await call(s.ours.ownerKey, '198.51.100.20')).status).toBe(200);
      expect((await call(UNKNOWN_KEY, '198.51.100.21')).status).toBe(401);
      expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
      // The allowance refills with time.
      s.clock.advance(60_000);
      expect((await call(s.ours.ownerKey, '203.0.113.7')).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe.each(BACKENDS)('per-key rate limit with RateLimit headers (%s)', (backend) => {
  it('sends RateLimit-Limit/Remaining/Reset on every answer and Retry-After on a refusal', async () => {
    const s = await startTestServer(backend, { rateLimitPerMinute: 4 });
    try {
      const remaining: string[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await s.call(s.ours.ownerKey, 'tags.getAll');
        expect(r.status).toBe(200);
        expect(r.headers.get('ratelimit-limit')).toBe('4');
        expect(r.headers.get('ratelimit-policy')).toBe('4;w=60');
        expect(Number(r.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
        remaining.push(r.headers.get('ratelimit-remaining') ?? '');
      }
      expect(remaining).toEqual(['3', '2', '1', '0']);
      const limited = await s.call(s.ours.ownerKey, 'tags.getAll');
      expect(limited.status).toBe(429);
      expect(limited.headers.get('ratelimit-remaining')).toBe('0');
      expect(Number(limited.headers.get('retry-after'))).toBe(15);
    } finally {
      await s.close();
    }
  });
});

describe.skipIf(!process.env.DATABASE_URL)('the per-key rate limit is shared by every process on one PostgreSQL', () => {
  /** Limiters of 5 a minute (one request every 12 s) on one fresh database, each on its own
   * connection as a server process would be, on a clock the test moves; no timers: a batch leaves
   * when the test says (a busy event loop, a slow database). Also the arrival time stored for a key. */
  async function withLimiters(count: number, run: (limiters: SharedRateLimiter[], clock: { now: number }, storedTat: (key: string) => Promise<number>) => Promise<void>): Promise<void> {
    const t = testDatabase('postgres');
    const sqls: Awaited<ReturnType<typeof openMigrated>>[] = [];
    for (let i = 0; i < count; i++) sqls.push(await openMigrated(t));
    const clock = { now: Date.parse('2026-11-16T10:00:00.000Z') };
    const limiters = sqls.map((sql) => new SharedRateLimiter(5, () => clock.now, sql, { syncEveryMs: 3_600_000 }));
    const storedTat = async (key: string): Promise<number> => Number((await (sqls[0] as (typeof sqls)[number]).query<{ tat_ms: string | number }>('SELECT tat_ms FROM rate_limits WHERE key = $1', [key]))[0]?.tat_ms);
    try {
      await run(limiters, clock, storedTat);
    } finally {
      for (const l of limiters) await l.stop();
      for (const sql of sqls) await sql.close();
      await t.cleanup();
    }
  }

  it('counts a key’s requests from when they were taken, however late their batch reaches the shared row', async () => {
    await withLimiters(1, async ([limiter], clock, storedTat) => {
      if (!limiter) throw new Error('no limiter');
      for (let i = 0; i < 5; i++) expect((await limiter.take('key-1')).allowed).toBe(true);
      const refused = await limiter.take('key-1');
      expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 12 });
      clock.now += refused.retryAfterSeconds * 1000;
      await limiter.sync();
      expect(await storedTat('key-1')).toBe(Date.parse('2026-11-16T10:01:00.000Z'));
      expect((await limiter.take('key-1')).allowed).toBe(true);
      expect((await limiter.take('key-1')).allowed).toBe(false);
    });
  });

  it('counts a key’s requests spread over one batch as taken one after the other, so another server sees what they used', async () => {
    await withLimiters(2, async ([a, b], clock, storedTat) => {
      if (!a || !b) throw new Error('no limiters');
      expect((await a.take('key-1')).allowed).toBe(true);
      clock.now += 50_000;
      expect((await a.take('key-1')).allowed).toBe(true);
      await a.sync();
      // The second request came after the first's 12 s had passed: the key's arrival time is
      // 10:00:50 + 12 s, as one process would count it (not 10:00:00 + 2 x 12 s).
      expect(await storedTat('key-1')).toBe(Date.parse('2026-11-16T10:01:02.000Z'));
      // Another server then allows the key what a single server would: 3 more now, not 4.
      expect(await b.take('key-1')).toMatchObject({ allowed: true, remaining: 3 });
    });
  });

  it('two servers on one database allow the limit once between them, not twice', async () => {
    const t = testDatabase('postgres');
    const sqlA = await openMigrated(t);
    const sqlB = await t.open();
    const clock = new FakeClock('2026-11-16T10:00:00.000Z');
    const deps: AdminDeps = { clock, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(5) };
    const team = await createTeam(new PgDatabase(sqlA), deps, 'Shared');
    const a = await buildServer({ database: sqlA, clock, logLevel: 'silent', rateLimitPerMinute: 10 });
    const b = await buildServer({ database: sqlB, clock, logLevel: 'silent', rateLimitPerMinute: 10 });
    try {
      const urls = [await a.listen({ port: 0, host: '127.0.0.1' }), await b.listen({ port: 0, host: '127.0.0.1' })];
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${urls[i % 2]}/tags.getAll`, { headers: { authorization: `Bearer ${team.ownerKey}` } });
        statuses.push(res.status);
        // Each process shares what it counted within ~100 ms.
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(statuses.filter((x) => x === 200)).toHaveLength(10);
      expect(statuses.slice(10).every((x) => x === 429)).toBe(true);
      const rows = await sqlA.query<{ n: string | number }>('SELECT count(*) AS n FROM rate_limits');
      expect(Number(rows[0]?.n)).toBe(1);
    } finally {
      await a.close();
      await b.close();
      await sqlB.close();
      await sqlA.close();
      await t.cleanup();
    }
  });
});

describe('live replication streams', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer('pglite', { operator: { streamsPerKey: 2, streamsPerProcess: 3 } });
  });
  afterAll(async () => {
    await s?.close();
  });

  const open = async (key: string, collection = 'tags') => {
    const ac = new AbortController();
    const res = await fetch(`${s.url}/replication/${collection}/stream`, { headers: { authorization: `Bearer ${key}` }, signal: ac.signal });
    if (res.status === 200) await (res.body as ReadableStream<Uint8Array>).getReader().read();
    return { res, close: () => ac.abort() };
  };

  it('refuses a key more streams than its cap, and the process more than its cap, with the contract body', async () => {
    const one = await open(s.ours.ownerKey, 'tags');
    const two = await open(s.ours.ownerKey, 'leads');
    expect([one.res.status, two.res.status]).toEqual([200, 200]);
    const three = await open(s.ours.ownerKey, 'tags');
    expect(three.res.status).toBe(429);
    const body = (await three.res.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
    expect(body.error).toMatchObject({ code: 'RATE_LIMITED', details: { reason: 'streams_per_key', limit: 2 } });

    // Another key gets one more: the process cap (3) is reached, then refused.
    const other = await open(s.ours.memberKey);
    expect(other.res.status).toBe(200);
    const over = await open(s.ours.adminKey);
    expect(over.res.status).toBe(429);
    expect(((await over.res.json()) as { error: { details: Record<string, unknown> } }).error.details.reason).toBe('streams_per_process');

    // Closing a stream frees its place.
    one.close();
    await expect.poll(async () => {
      const again = await open(s.ours.adminKey);
      again.close();
      return again.res.status;
    }).toBe(200);
    two.close();
    other.close();
  });
});

describe('a live stream that does not keep up is closed, not buffered without bound', () => {
  it('drops the subscriber whose unsent data exceeds the bound and keeps serving the others', async () => {
    const t = testDatabase('pglite');
    const sql = await openMigrated(t);
    const db = new PgDatabase(sql);
    const clock = new FakeClock('2026-11-16T10:00:00.000Z');
    const deps: AdminDeps = { clock, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(9) };
    const team = await createTeam(db, deps, 'Slow');
    const metrics = createMetrics({ defaultMetrics: false });
    const hub = new StreamHub(sql, pino({ level: 'silent' }), 60_000, { perKey: 10, perProcess: 10, bufferBytes: 4096, metrics });
    /** A client that never reads: its writes stay queued. */
    const stuck = new Writable({ highWaterMark: 1024, write: () => undefined });
    const received: string[] = [];
    const reader = new Writable({ write: (chunk: Buffer, _enc, done) => (received.push(chunk.toString()), done()) });
    try {
      for (const res of [stuck, reader]) {
        hub.admit(team.ownerId);
        hub.add({ workspaceId: team.workspaceId, keyId: team.ownerId, collection: 'tags', lastSeq: 0, res });
      }
      expect(await metrics.streamsOpen.get()).toMatchObject({ values: [{ value: 2 }] });
      const store = db.forWorkspace(team.workspaceId);
      for (let i = 0; i < 30; i++) {
        const id = randomUUID();
        const now = clock.now().toISOString();
        const tag = { id, workspaceId: team.workspaceId, name: `Tag ${i} ${'x'.repeat(90)}`, color: '#336699', createdAt: now, updatedAt: now } satisfies Tag;
        await store.commit([{ collection: 'tags', id, before: null, after: tag }]);
        hub.changed({ workspaceId: team.workspaceId, collections: ['tags'], maxSeq: 0, rows: 1 });
        await new Promise((r) => setTimeout(r, 20));
      }
      await expect.poll(() => stuck.destroyed).toBe(true);
      expect(reader.destroyed).toBe(false);
      // The reader got every document; the stuck one was dropped (it reconnects and resyncs).
      const ids = new Set(received.flatMap((c) => [...c.matchAll(/"name":"Tag (\d+) /g)].map((m) => m[1])));
      expect(ids.size).toBe(30);
      await expect.poll(async () => (await metrics.streamsOpen.get()).values[0]?.value).toBe(1);
      expect((await metrics.refused.get()).values.find((v) => v.labels.reason === 'stream_backpressure')?.value).toBe(1);
    } finally {
      await hub.close();
      await sql.close();
      await t.cleanup();
    }
  });
});

describe('logs carry ids, codes and sizes, never documents or keys', () => {
  it('leaves keys, bodies and query strings out of request logs', async () => {
    const s = await startTestServer('pglite', { logLevel: 'info' });
    try {
      await s.call(s.ours.ownerKey, 'campaigns.leads.search', { q: 'jane.secret@personal.test' });
      await s.call(s.ours.ownerKey, 'tags.create', { name: 'Private tag name' });
      await s.call('live_thisKeyIsNotRealButLooksLikeOneAbcdefgh', 'tags.getAll');
      const text = s.logs.join('');
      expect(s.logs.length).toBeGreaterThan(3);
      expect(text).not.toContain(s.ours.ownerKey);
      expect(text).not.toContain('live_thisKeyIsNotReal');
      expect(text).not.toContain('jane.secret');
      expect(text).not.toContain('Private tag name');
      expect(text).toContain('/campaigns.leads.search');
    } finally {
      await s.close();
    }
  });

  it('serializes errors without their documents and caps every line', () => {
    const doc = { id: 'lead-1', email: 'jane@personal.test', notes: 'x'.repeat(5000) };
    const e = new DomainError('INVALID_INPUT', 'A row is not valid.', { leadId: 'lead-1', document: doc, problems: [doc] });
    const out = JSON.stringify(serializeError(e));
    expect(out).toContain('lead-1');
    expect(out).toContain('INVALID_INPUT');
    expect(out).not.toContain('jane@personal.test');
    expect(out.length).toBeLessThan(3000);

    const lines: string[] = [];
    const capped = cappedStream({ write: (l) => lines.push(l) }, 1024);
    capped.write(`${JSON.stringify({ level: 50, time: 1, reqId: 'r-1', msg: 'request failed', body: 'y'.repeat(1_000_000) })}\n`);
    capped.write(`${JSON.stringify({ level: 30, time: 2, msg: 'short' })}\n`);
    expect(lines).toHaveLength(2);
    expect(lines[0]?.length).toBeLessThan(1024);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ level: 50, reqId: 'r-1', truncated: true });
    expect(JSON.parse(lines[1] ?? '')).toMatchObject({ msg: 'short' });
  });
});

describe.each(BACKENDS)('log tables are kept for a bounded time (%s)', (backend) => {
  it('sweeps refusals past the retention and rate-limit rows with nothing to remember, keeping the rest', async () => {
    const t = testDatabase(backend);
    const sql = await openMigrated(t);
    const now = new Date('2026-11-16T10:00:00.000Z');
    const daysAgo = (d: number) => new Date(now.getTime() - d * 86_400_000).toISOString();
    try {
      for (const [id, at] of [['old', daysAgo(10)], ['older', daysAgo(400)], ['recent', daysAgo(2)]] as const) {
        await sql.query(`INSERT INTO refusals (workspace_id, member_id, collection, document_id, code, message, at) VALUES ('w', 'm', 'tags', $1, 'NOT_FOUND', 'gone', $2::timestamptz)`, [id, at]);
      }
      await sql.query('INSERT INTO rate_limits (key, tat_ms) VALUES ($1, $2), ($3, $4)', ['spent', now.getTime() - 1, 'busy', now.getTime() + 30_000]);
      const m = new Maintenance(sql, { now: () => now, refusalsRetentionDays: 7 });
      try {
        expect(await m.sweep()).toEqual({ refusals: 2, rateLimits: 1 });
        expect(await m.sweep()).toEqual({ refusals: 0, rateLimits: 0 });
      } finally {
        await m.stop();
      }
      expect((await sql.query<{ document_id: string }>('SELECT document_id FROM refusals')).map((r) => r.document_id)).toEqual(['recent']);
      expect((await sql.query<{ key: string }>('SELECT key FROM rate_limits')).map((r) => r.key)).toEqual(['busy']);
    } finally {
      await sql.close();
      await t.cleanup();
    }
  });
});

describe('server-hosted senders cannot reach the server network', () => {
  const strict = { allowPrivate: false };

  it('refuses loopback, private, link-local, CGNAT, metadata and embedded addresses; allows public ones', () => {
    for (const ip of ['127.0.0.1', '127.8.9.10', '10.1.2.3', '100.64.0.1', '169.254.169.254', '172.16.0.1', '172.31.255.255', '192.168.1.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::5', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a9fe:a9fe', '2002:a00:1::', '224.0.0.1']) {
      expect(blockedReason(ip), ip).not.toBeNull();
    }
    for (const ip of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(blockedReason(ip), ip).toBeNull();
  });

  it('checks every address a host name resolves to', async () => {
    await expect(checkHost('mail.example.test', { ...strict, resolve: async () => ['93.184.216.34'] })).resolves.toBeUndefined();
    await expect(checkHost('mail.example.test', { ...strict, resolve: async () => ['93.184.216.34', '10.0.0.7'] })).rejects.toMatchObject({ kind: 'unauthorized', message: expect.stringMatching(/10\.0\.0\.7.*ALLOW_PRIVATE_SENDER_HOSTS/) });
    await expect(checkHost('169.254.169.254', strict)).rejects.toMatchObject({ kind: 'unauthorized' });
    await expect(checkHost('10.0.0.7', { allowPrivate: true })).resolves.toBeUndefined();
  });

  it('refuses a sender call before its channel runs, and changes nothing on the far side', async () => {
    let calls = 0;
    const channel: Channel = {
      send: async () => (calls++, { status: 'sent', externalId: 'x', chatId: 'y' }),
      poll: async () => (calls++, { events: [], cursor: 'c1' }),
      readPost: async () => (calls++, { items: [], total: 0, searchesUsed: 0, stoppedEarly: false }),
      canSendMessage: () => true,
    };
    const sender = (channelConfig: Record<string, unknown>) => ({ id: 's1', name: 'Rebound', channel: 'http', channelConfig }) as unknown as Sender;
    const guarded = guardChannelHost({ channelFor: () => channel }, strict).channelFor(sender({ baseUrl: 'http://127.0.0.1:9/connector', hostedBy: 'server' }));
    await expect(guarded?.poll(sender({ baseUrl: 'http://127.0.0.1:9/connector', hostedBy: 'server' }), null)).rejects.toMatchObject({ kind: 'unauthorized' });
    await expect(guarded?.poll(sender({ host: '192.168.0.10', hostedBy: 'server' }), null)).rejects.toMatchObject({ kind: 'unauthorized' });
    expect(calls).toBe(0);
    const open = guardChannelHost({ channelFor: () => channel }, { allowPrivate: true }).channelFor(sender({ baseUrl: 'http://127.0.0.1:9/connector' }));
    await open?.poll(sender({ baseUrl: 'http://127.0.0.1:9/connector' }), null);
    expect(calls).toBe(1);
  });

  it('checks again when connecting: a name that now resolves to loopback is refused (DNS rebinding)', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      // The name passed the first check with a public answer; at connect time it is loopback.
      await expect(checkHost('localhost', { ...strict, resolve: async () => ['93.184.216.34'] })).resolves.toBeUndefined();
      await expect(guardedFetch(strict)(`http://localhost:${port}/v1/accounts/a/events`)).rejects.toThrow();
      await expect(guardedFetch(strict)(`http://127.0.0.1:${port}/`)).rejects.toMatchObject({ kind: 'unauthorized' });
      const smtp = await new Promise<Error | null>((resolve) => guardedSmtpSocket(strict)({ host: 'localhost', port }, (err, s) => (s && s.connection.destroy(), resolve(err))));
      expect(smtp?.message).toMatch(/loopback/);
      expect(hits).toBe(0);
      // The operator setting allows it.
      expect((await guardedFetch({ allowPrivate: true })(`http://localhost:${port}/`)).status).toBe(200);
      expect(hits).toBe(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('the IMAP channel connects through the guarded lookup: a loopback mailbox gets no connection', async () => {
    let connections = 0;
    // Not an IMAP server: only whether a connection arrives is counted (the guard acts before any
    // protocol is spoken); the channel then gives up on the missing greeting.
    const tcp = createNetServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    const port = (tcp.address() as AddressInfo).port;
    const mailbox = { id: 's2', name: 'Mailbox', channel: 'email', channelConfig: { host: 'localhost', user: 'sdr', imapHost: 'localhost', imapPort: port, imapSecure: false, hostedBy: 'server' } } as unknown as Sender;
    const imap = (allowPrivate: boolean) =>
      createImapChannel({
        passwordFor: () => 'secret',
        matcher: { byMessageIds: async () => null, byAddress: async () => null, recorded: async () => false },
        timeoutMs: 2_000,
        lookup: guardedLookup({ allowPrivate }),
      });
    const strictImap = imap(false);
    const openImap = imap(true);
    try {
      await expect(strictImap.poll(mailbox, null)).rejects.toThrow(/loopback/);
      expect(connections).toBe(0);
      await expect(openImap.poll(mailbox, null)).rejects.toThrow();
      expect(connections).toBeGreaterThanOrEqual(1);
    } finally {
      await strictImap.close();
      await openImap.close();
      await new Promise((r) => tcp.close(r));
    }
  });

  it('nodemailer connects through the guarded socket: a loopback mail server gets no connection', async () => {
    let connections = 0;
    const smtp = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], onConnect: (_session, cb) => (connections++, cb()) });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
    const port = (smtp.server.address() as AddressInfo).port;
    const transport = (allowPrivate: boolean) =>
      nodemailer.createTransport({ host: 'localhost', port, secure: false, ignoreTLS: true, connectionTimeout: 5_000, getSocket: guardedSmtpSocket({ allowPrivate }) });
    try {
      await expect(transport(false).verify()).rejects.toThrow(/loopback/);
      expect(connections).toBe(0);
      await expect(transport(true).verify()).resolves.toBe(true);
      expect(connections).toBe(1);
    } finally {
      await new Promise<void>((r) => smtp.close(() => r()));
    }
  });
});

describe('every query is bounded by a page size', () => {
  it('campaigns.getEnrollments returns at most 200 rows; more is refused and changes nothing', async () => {
    const h = await makeHarness();
    const campaign = await h.addCampaign();
    await h.expectRefused(h.call('campaigns.getEnrollments', { campaignId: campaign.id, limit: 201 }), 'INVALID_INPUT');
    const ok = (await h.call('campaigns.getEnrollments', { campaignId: campaign.id, limit: 200 })) as { total: number };
    expect(ok.total).toBe(0);
  });

  it('a filter selection reads its leads in pages, never all at once', async () => {
    const h = await makeHarness();
    const n = SELECTION_PAGE * 2 + 37;
    const leads = Array.from({ length: n }, (_, i) => newLead(h.stamp(), h.main.leadGroupId, { firstName: `Pat ${i}`, email: `pat${i}@example.test` }));
    for (let i = 0; i < leads.length; i += 500) await h.store.commit(leads.slice(i, i + 500).map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })));
    const limits: (number | undefined)[] = [];
    const reader: StoreReader = {
      ...h.store,
      get: (c, id) => h.store.get(c, id),
      getMany: (c, ids) => h.store.getMany(c, ids),
      count: (c, where) => h.store.count(c, where),
      query: (c, q) => {
        if (c === 'leads') limits.push(q?.limit);
        return h.store.query(c, q);
      },
    };
    const out = await resolveSelection(reader, { kind: 'workspace' }, { mode: 'filter', query: 'pat', excludeLeadIds: [leads[0]?.id ?? ''] });
    expect(out.leads).toHaveLength(n - 1);
    expect(new Set(out.leads.map((l) => l.id)).size).toBe(n - 1);
    expect(limits.length).toBeGreaterThanOrEqual(3);
    expect(limits.every((l) => l !== undefined && l <= SELECTION_PAGE)).toBe(true);
  });
});
