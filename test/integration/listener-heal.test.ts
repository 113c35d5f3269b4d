/**
 * Live replication across server processes survives a lost LISTEN connection: two sync server
 * processes on one PostgreSQL (a private instance this suite may stop and start), each serving a live
 * stream. When a process's LISTEN connection is killed (pg_terminate_backend) or the database
 * restarts, the process reconnects by itself, resyncs its streams, and a write through the other
 * process reaches its stream again within 5 s; requests while the database is down are answered 503
 * with Retry-After, never 500; caches fed by NOTIFY are flushed after the gap.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../sync-server/app.ts';
import { LISTEN_APPLICATION_NAME } from '../../sync-server/db.ts';
import { runCli, spawnServer } from './support/cli.ts';
import type { ServerProcess } from './support/cli.ts';
import { privatePostgresUnavailable, startPrivatePostgres } from './support/private-postgres.ts';
import type { PrivatePostgres } from './support/private-postgres.ts';
import { carriesName, openStream } from './support/sse.ts';
import type { LiveStream } from './support/sse.ts';
import { until } from '../support/until.ts';

const unavailable = privatePostgresUnavailable();

type Keys = { workspaceId: string; apiKey: string };

async function createTag(url: string, key: string, name: string): Promise<Response> {
  return fetch(`${url}/tags.create`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
}

/** Terminates the LISTEN backend of the server process `pid`; returns how many were terminated. */
async function killListener(url: string, pid: number): Promise<number> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const rows = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1', [`${LISTEN_APPLICATION_NAME}/${pid}`]);
    return rows.rows.filter((r) => r.ok).length;
  } finally {
    await admin.end();
  }
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

describe('the LISTEN connection heals (two server processes, one PostgreSQL)', () => {
  let db: PrivatePostgres | null = null;
  let root = '';
  let env: Record<string, string> = {};
  let ws: Keys;
  let a: ServerProcess | null = null;
  let b: ServerProcess | null = null;
  const streams: LiveStream[] = [];

  beforeAll(async () => {
    if (unavailable) return;
    db = await startPrivatePostgres();
    root = mkdtempSync(join(tmpdir(), 'crm-heal-'));
    env = { DATABASE_URL: db.url, DATA_DIR: root, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000' };
    const res = await runCli(['create-workspace', '--name', 'Heal', '--owner-email', 'owner@heal.test'], env);
    expect(res.code, res.stderr).toBe(0);
    ws = JSON.parse(res.stdout) as Keys;
    [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
  }, 90_000);

  afterAll(async () => {
    for (const s of streams) s.close();
    for (const s of [a, b]) {
      if (s && s.proc.exitCode === null) {
        s.proc.kill('SIGTERM');
        await s.exited;
      }
    }
    await db?.destroy();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  const servers = (): { a: ServerProcess; b: ServerProcess; db: PrivatePostgres } => {
    if (!a || !b || !db) throw new Error('The servers did not start (see beforeAll).');
    return { a, b, db };
  };

  const stream = async (s: ServerProcess): Promise<LiveStream> => {
    const live = await openStream(s.url, ws.apiKey, 'tags');
    streams.push(live);
    await live.waitFor((d) => d === 'RESYNC', 5_000);
    return live;
  };

  it('reconnects after pg_terminate_backend of its LISTEN backend: a write through A reaches B\'s stream within 5 s', async (ctx) => {
    if (unavailable) ctx.skip(unavailable);
    const { a, b, db } = servers();
    const live = await stream(b);
    expect(await killListener(db.url, b.proc.pid ?? 0)).toBe(1);
    const after = live.events.length;
    const res = await createTag(a.url, ws.apiKey, 'After terminate');
    expect(res.status).toBe(200);
    const t0 = Date.now();
    await live.waitFor(carriesName('After terminate'), 5_000, after);
    expect(Date.now() - t0).toBeLessThan(5_000);
    // The client was told to pull what it may have missed.
    expect(live.events.slice(after)).toContain('RESYNC');
    // Still live afterwards, through NOTIFY.
    const next = live.events.length;
    expect((await createTag(a.url, ws.apiKey, 'After reconnect')).status).toBe(200);
    await live.waitFor(carriesName('After reconnect'), 5_000, next);
    expect(await metric(b.url, 'outreach_change_listener_up')).toBe(1);
    expect(await metric(b.url, 'outreach_change_listener_reconnects_total')).toBeGreaterThanOrEqual(1);
    expect(b.output()).toContain('lost the connection that hears other server processes');
    expect(b.output()).toContain('listening for other server processes\' commits again');
  }, 30_000);

  it('flushes the API key cache after a gap: a revocation whose notification was lost applies once the listener is back', async (ctx) => {
    if (unavailable) ctx.skip(unavailable);
    const { db } = servers();
    const member = await runCli(['create-member', '--workspace', ws.workspaceId, '--name', 'Cached', '--email', 'cached@heal.test', '--role', 'member'], env);
    expect(member.code, member.stderr).toBe(0);
    const { memberId, apiKey } = JSON.parse(member.stdout) as { memberId: string; apiKey: string };
    // In this process (its LISTEN connection is the only one named with this pid), with lookups cached
    // for a minute: only the gap can make it look the key up again.
    const app = await buildServer({ open: { databaseUrl: db.url }, logLevel: 'silent', authCacheMs: 60_000 });
    try {
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const tags = () => fetch(`${url}/tags.getAll`, { headers: { authorization: `Bearer ${apiKey}` } }).then((r) => r.status);
      // The first use records lastUsedAt, a key change that clears the cache: the next use is cached.
      expect(await tags()).toBe(200);
      await new Promise((r) => setTimeout(r, 500));
      expect(await tags()).toBe(200);
      // Revoked by a write that announces nothing, as a write committed while the listener was down.
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        const revoked = await admin.query(
          `UPDATE documents SET doc = jsonb_set(doc, '{revokedAt}', to_jsonb('2026-01-01T00:00:00.000Z'::text))
            WHERE collection = 'apiKeys' AND workspace_id = $1 AND doc->>'memberId' = $2`,
          [ws.workspaceId, memberId],
        );
        expect(revoked.rowCount).toBe(1);
      } finally {
        await admin.end();
      }
      expect(await tags()).toBe(200);
      expect(await killListener(db.url, process.pid)).toBe(1);
      await until('the revoked key is refused', () => tags().then((status) => status === 401, () => false), 5_000);
    } finally {
      await app.close();
    }
  }, 30_000);

  it('survives a PostgreSQL restart: 503 with Retry-After meanwhile, then both processes recover by themselves and stream each other\'s writes', async (ctx) => {
    if (unavailable) ctx.skip(unavailable);
    const { a, b, db } = servers();
    const [liveA, liveB] = await Promise.all([stream(a), stream(b)]);
    const [beforeA, beforeB] = [liveA.events.length, liveB.events.length];
    await db.stop('fast');
    // Every kind of request while the database is down: an operation that writes, one that reads, the
    // health check and a new stream. Twice, so pooled connections that just broke are covered too.
    for (let round = 0; round < 2; round++) {
      for (const s of [a, b]) {
        const answers = await Promise.all([
          createTag(s.url, ws.apiKey, `During ${round}`),
          fetch(`${s.url}/tags.getAll`, { headers: { authorization: `Bearer ${ws.apiKey}` } }),
          fetch(`${s.url}/healthz`),
          fetch(`${s.url}/replication/tags/stream`, { headers: { authorization: `Bearer ${ws.apiKey}` } }),
        ]);
        for (const res of answers) {
          const body = (await res.json()) as { error?: { code?: string } };
          expect(`${res.url} ${res.status} ${body.error?.code}`).toBe(`${res.url} 503 UNAVAILABLE`);
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        }
      }
    }
    // The streams were told to resync when the listener dropped.
    await liveA.waitFor((d) => d === 'RESYNC', 5_000, beforeA);
    await liveB.waitFor((d) => d === 'RESYNC', 5_000, beforeB);
    expect(await metric(b.url, 'outreach_change_listener_up')).toBe(0);

    await db.start();
    const recovered = Date.now();
    const withinFiveSecondsOfRecovery = (): number => Math.max(0, recovered + 5_000 - Date.now());
    // The pools drop their broken connections: a query works again without restarting anything.
    for (const s of [a, b]) await until('healthz answers 200', () => fetch(`${s.url}/healthz`).then((r) => r.status === 200, () => false), 5_000);
    const [fromA, fromB] = [liveB.events.length, liveA.events.length];
    expect((await createTag(a.url, ws.apiKey, 'Through A after restart')).status).toBe(200);
    expect((await createTag(b.url, ws.apiKey, 'Through B after restart')).status).toBe(200);
    await Promise.all([
      liveB.waitFor(carriesName('Through A after restart'), withinFiveSecondsOfRecovery(), fromA),
      liveA.waitFor(carriesName('Through B after restart'), withinFiveSecondsOfRecovery(), fromB),
    ]);
    for (const s of [a, b]) {
      await until('the listener is up again', () => metric(s.url, 'outreach_change_listener_up').then((up) => up === 1, () => false), 5_000);
      expect(await metric(s.url, 'outreach_change_listener_reconnects_total')).toBeGreaterThanOrEqual(1);
      // Never a 500: no request failed as unexpected.
      expect(s.output()).not.toContain('"statusCode":500');
      expect(s.output()).not.toMatch(/"level":50[^\n]*"msg":"request failed"/);
    }
  }, 60_000);
});
