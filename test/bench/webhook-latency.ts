/**
 * Webhook latency: from a change's 200 to the receiver. A sync server on PGlite (and on PostgreSQL
 * in a fresh schema when DATABASE_URL is set), one endpoint on a loopback receiver that verifies
 * every request with the Standard Webhooks reference library, and CHANGES lead stage changes
 * (`campaigns.leads.updateLeadStage`, each raising `lead.stage_changed`) sent one after another,
 * each as soon as the previous one is answered. The latency of a change is the time from its answer
 * arriving at the client to its event arriving at the receiver; p50 and p99 are printed.
 *
 * The server runs in this process (the client sends one change at a time and the receiver only
 * records, so they take little of the event loop); server.bench.ts calls run() (`npm run bench --
 * server`), `npx tsx test/bench/webhook-latency.ts` runs it alone. WEBHOOK_BENCH_CHANGES sets the
 * number of changes (default 500).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createWorkspace } from '../../sync-server/admin.ts';
import { buildServer } from '../../sync-server/app.ts';
import { openDatabase } from '../../sync-server/db.ts';
import type { OpenOptions } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/deterministic.ts';

const CHANGES = Number(process.env.WEBHOOK_BENCH_CHANGES ?? 500);
const CLIENTS = Number(process.env.WEBHOOK_BENCH_CLIENTS ?? 1);

export type WebhookLatency = {
  store: string;
  changes: number;
  received: number;
  p50: number;
  p99: number;
  max: number;
  verifyFailures: number;
  /** How fast the changes were answered. */
  changesPerSecond: number;
  /** From the last change answered to the last event received. */
  drainedMs: number;
};

type Target = { store: string; open: () => OpenOptions; cleanup: () => Promise<void> };

const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

/** A loopback receiver: the arrival time of each event by lead id, verified with the library. */
async function startReceiver(): Promise<{ url: string; secret: { value: string }; arrivals: Map<string, number>; failures: () => number; close: () => Promise<void> }> {
  const arrivals = new Map<string, number>();
  const secret = { value: '' };
  let failures = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const event = new Webhook(secret.value).verify(body, req.headers as Record<string, string>) as { data?: { lead?: { id?: string } } };
        const leadId = event.data?.lead?.id;
        if (leadId && !arrivals.has(leadId)) arrivals.set(leadId, at);
        res.writeHead(204).end();
      } catch {
        failures++;
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, secret, arrivals, failures: () => failures, close: () => new Promise((r) => server.close(() => r())) };
}

async function call<T>(url: string, key: string, name: string, body: Record<string, unknown>, method = 'POST'): Promise<T> {
  const res = await fetch(`${url}/${name}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
    ...(method === 'POST' ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`${name} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as T;
}

/** One measurement on one database. */
export async function measureWebhookLatency(store: string, open: OpenOptions, changes = CHANGES, clients = CLIENTS): Promise<WebhookLatency> {
  // The endpoint's secret is sealed with CREDENTIALS_KEY; a run without one uses a key of its own.
  process.env.CREDENTIALS_KEY ||= randomBytes(32).toString('hex');
  const sql = await openDatabase(open);
  const rx = await startReceiver();
  let app: Awaited<ReturnType<typeof buildServer>> | null = null;
  try {
    await migrate(sql);
    const ws = await createWorkspace(new PgDatabase(sql), { name: 'Webhook bench', ownerEmail: 'hooks@bench.test' }, { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(5) });
    app = await buildServer({ database: sql, logLevel: 'warn', rateLimitPerMinute: 1e9, webhooks: { allowHttp: true, policy: { allowPrivate: true } } });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const key = ws.apiKey;
    const { leadGroups } = await call<{ leadGroups: { id: string }[] }>(url, key, 'leadGroups.getAll', {}, 'GET');
    const groupId = leadGroups[0]?.id;
    if (!groupId) throw new Error('the new workspace has no lead group');
    const leadIds: string[] = [];
    for (let i = 0; i < changes; i += 500) {
      const batch = Array.from({ length: Math.min(500, changes - i) }, (_, j) => ({ firstName: `Lat${i + j}`, lastName: 'Bench', email: `lat${i + j}@bench.test` }));
      leadIds.push(...(await call<{ leadIds: string[] }>(url, key, 'campaigns.leads.create', { leadGroupId: groupId, leads: batch })).leadIds);
    }
    const { stages } = await call<{ stages: { id: string; category: string }[] }>(url, key, 'pipelineStages.getAll', {}, 'GET');
    const engaged = stages.find((s) => s.category === 'ENGAGED')?.id;
    if (!engaged) throw new Error('no ENGAGED stage');
    const endpoint = await call<{ secret: string }>(url, key, 'webhooks.create', { url: rx.url, events: ['lead.stage_changed'] });
    rx.secret.value = endpoint.secret;

    const answered = new Map<string, number>();
    let next = 0;
    const client = async (): Promise<void> => {
      for (let i = next++; i < leadIds.length; i = next++) {
        const leadId = leadIds[i] ?? '';
        await call(url, key, 'campaigns.leads.updateLeadStage', { leadId, pipelineStageId: engaged });
        answered.set(leadId, performance.now());
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: clients }, () => client()));
    const changesMs = performance.now() - started;
    const deadline = Date.now() + 60_000;
    while (rx.arrivals.size < leadIds.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const lastArrival = Math.max(...rx.arrivals.values());
    const latencies = leadIds.flatMap((id) => {
      const a = rx.arrivals.get(id);
      const t = answered.get(id);
      return a !== undefined && t !== undefined ? [a - t] : [];
    });
    latencies.sort((a, b) => a - b);
    return { store, changes: leadIds.length, received: latencies.length, p50: pct(latencies, 50), p99: pct(latencies, 99), max: latencies[latencies.length - 1] ?? Number.NaN, verifyFailures: rx.failures(), changesPerSecond: (leadIds.length / changesMs) * 1000, drainedMs: lastArrival - started - changesMs };
  } finally {
    await app?.close();
    await rx.close();
    await sql.close();
  }
}

function targets(): Target[] {
  const out: Target[] = [];
  const dirs: string[] = [];
  out.push({
    store: 'PGlite',
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'crm-hook-bench-'));
      dirs.push(dir);
      return { dataDir: dir };
    },
    cleanup: async () => {
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  });
  const url = process.env.DATABASE_URL;
  if (url) {
    const schemas: string[] = [];
    out.push({
      store: 'PostgreSQL',
      open: () => {
        const schema = `hookbench_${process.pid}_${randomBytes(3).toString('hex')}`;
        schemas.push(schema);
        return { databaseUrl: url, schema };
      },
      async cleanup() {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          for (const s of schemas.splice(0)) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
        } finally {
          await client.end();
        }
      },
    });
  }
  return out;
}

const f = (n: number): string => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : '-');

/** Measures every store and prints one line each; returns the figures. */
export async function run(): Promise<WebhookLatency[]> {
  const results: WebhookLatency[] = [];
  process.stdout.write(`\nwebhook latency: change answered (200) -> received by a loopback receiver, ${CHANGES} changes one after another\n`);
  for (const t of targets()) {
    try {
      const r = await measureWebhookLatency(t.store, t.open());
      results.push(r);
      const met = r.received === r.changes && r.p50 <= 250 && r.p99 <= 1000;
      process.stdout.write(
        `${t.store.padEnd(12)} p50 ${f(r.p50)} ms  p99 ${f(r.p99)} ms  max ${f(r.max)} ms  received ${r.received}/${r.changes}, changes at ${f(r.changesPerSecond)}/s, last one received ${f(r.drainedMs)} ms after the last change${r.verifyFailures ? `  (${r.verifyFailures} did not verify)` : ''}  target p50 <= 250 ms, p99 <= 1 s: ${met ? 'met' : 'NOT met'}  (load average ${loadavg()[0]?.toFixed(1)})\n`,
      );
    } finally {
      await t.cleanup();
    }
  }
  if (!process.env.DATABASE_URL) process.stdout.write('(set DATABASE_URL to measure PostgreSQL too)\n');
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
