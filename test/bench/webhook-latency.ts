/**
 * Webhook latency: from a change's 200 to the receiver. A sync server on PGlite (and on PostgreSQL
 * in a fresh schema when DATABASE_URL is set), in a process of its own as in production, with one
 * endpoint on a loopback receiver in this process that verifies every request with the Standard
 * Webhooks reference library. CHANGES lead stage changes (`campaigns.leads.updateLeadStage`, each
 * raising `lead.stage_changed`) are sent by 1 client (each change when the previous one is
 * answered) and then by 10 clients at once (the load of the other server scenarios). A change's
 * latency is the time from its answer arriving at the client to its event arriving at the
 * receiver; p50 and p99 are printed with the rate the server answered the changes at.
 *
 * server.bench.ts calls run() (`npm run bench -- server`); `npx tsx test/bench/webhook-latency.ts`
 * runs it alone. WEBHOOK_BENCH_CHANGES sets the number of changes (default 500),
 * WEBHOOK_BENCH_CLIENTS the client counts (default `1,10`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { createWorkspace } from '../../sync-server/admin.ts';
import { buildServer } from '../../sync-server/app.ts';
import { openDatabase } from '../../sync-server/db.ts';
import type { OpenOptions } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/deterministic.ts';
import { startChildServer, stopChildServer } from './support/child-server.ts';
import { scratchSchemas } from './support/scratch-schemas.ts';

const CHANGES = Number(process.env.WEBHOOK_BENCH_CHANGES ?? 500);
const CLIENT_COUNTS = (process.env.WEBHOOK_BENCH_CLIENTS ?? '1,10').split(',').map(Number).filter((n) => n > 0);
const SELF = fileURLToPath(import.meta.url);

export type WebhookLatency = {
  store: string;
  clients: number;
  changes: number;
  received: number;
  p50: number;
  p99: number;
  max: number;
  verifyFailures: number;
  /** How fast the changes were answered. */
  changesPerSecond: number;
  /** The baseline of the same run: p50 of the change's own round trip (request sent -> answer). */
  answerP50: number;
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

/** The server process (WEBHOOK_BENCH_ROLE=server): listens on PORT until SIGTERM. */
async function serve(): Promise<void> {
  const open = JSON.parse(process.env.BENCH_OPEN ?? '{}') as OpenOptions;
  const app = await buildServer({ open, logLevel: 'warn', rateLimitPerMinute: 1e9, webhooks: { allowHttp: true, policy: { allowPrivate: true } } });
  await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

/** Measurements on one database: a new workspace, CHANGES leads, one endpoint, then each client count in turn. */
export async function measureWebhookLatency(store: string, open: OpenOptions, changes = CHANGES, clientCounts = CLIENT_COUNTS): Promise<WebhookLatency[]> {
  // The endpoint's secret is sealed with CREDENTIALS_KEY; a run without one uses a key of its own.
  process.env.CREDENTIALS_KEY ||= randomBytes(32).toString('hex');
  const sql = await openDatabase(open);
  let apiKey: string;
  try {
    await migrate(sql);
    apiKey = (await createWorkspace(new PgDatabase(sql), { name: 'Webhook bench', ownerEmail: 'hooks@bench.test' }, { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(5) })).apiKey;
  } finally {
    await sql.close();
  }
  const rx = await startReceiver();
  const server = await startChildServer(SELF, { WEBHOOK_BENCH_ROLE: 'server', BENCH_OPEN: JSON.stringify(open) }, '/healthz');
  try {
    const { url } = server;
    const key = apiKey;
    const { leadGroups } = await call<{ leadGroups: { id: string }[] }>(url, key, 'leadGroups.getAll', {}, 'GET');
    const groupId = leadGroups[0]?.id;
    if (!groupId) throw new Error('the new workspace has no lead group');
    const leadIds: string[] = [];
    for (let i = 0; i < changes; i += 500) {
      const batch = Array.from({ length: Math.min(500, changes - i) }, (_, j) => ({ firstName: `Lat${i + j}`, lastName: 'Bench', email: `lat${i + j}@bench.test` }));
      leadIds.push(...(await call<{ leadIds: string[] }>(url, key, 'campaigns.leads.create', { leadGroupId: groupId, leads: batch })).leadIds);
    }
    const { stages } = await call<{ stages: { id: string; category: string }[] }>(url, key, 'pipelineStages.getAll', {}, 'GET');
    const endpoint = await call<{ secret: string }>(url, key, 'webhooks.create', { url: rx.url, events: ['lead.stage_changed'] });
    rx.secret.value = endpoint.secret;

    const out: WebhookLatency[] = [];
    // Each round moves every lead to another stage, so every change raises an event.
    const rounds = ['ENGAGED', 'CONTACTED', 'MEETING_BOOKED', 'WON'];
    for (const [round, clients] of clientCounts.entries()) {
      const stageId = stages.find((st) => st.category === rounds[round % rounds.length])?.id;
      if (!stageId) throw new Error(`no ${rounds[round % rounds.length]} stage`);
      rx.arrivals.clear();
      const answered = new Map<string, number>();
      const roundTrips: number[] = [];
      let next = 0;
      const client = async (): Promise<void> => {
        for (let i = next++; i < leadIds.length; i = next++) {
          const leadId = leadIds[i] ?? '';
          const sentAt = performance.now();
          await call(url, key, 'campaigns.leads.updateLeadStage', { leadId, pipelineStageId: stageId });
          const at = performance.now();
          answered.set(leadId, at);
          roundTrips.push(at - sentAt);
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
      out.push({
        store,
        clients,
        changes: leadIds.length,
        received: latencies.length,
        p50: pct(latencies, 50),
        p99: pct(latencies, 99),
        max: latencies[latencies.length - 1] ?? Number.NaN,
        verifyFailures: rx.failures(),
        changesPerSecond: (leadIds.length / changesMs) * 1000,
        answerP50: pct(roundTrips.sort((a, b) => a - b), 50),
        drainedMs: lastArrival - started - changesMs,
      });
      // The queue is empty before the next round (the last event arrived).
      await new Promise((r) => setTimeout(r, 200));
    }
    return out;
  } finally {
    await stopChildServer(server.proc);
    await rx.close();
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
    out.push({ store: 'PostgreSQL', ...scratchSchemas(url, 'hookbench') });
  }
  return out;
}

const f = (n: number): string => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : '-');

/** Measures every store and prints one line per store and client count; returns the figures. */
export async function run(): Promise<WebhookLatency[]> {
  const results: WebhookLatency[] = [];
  process.stdout.write(`\nwebhook latency: change answered (200) -> received by a loopback receiver, ${CHANGES} changes per row, server in its own process (target p50 <= 250 ms, p99 <= 1 s)\n`);
  for (const t of targets()) {
    try {
      for (const r of await measureWebhookLatency(t.store, t.open())) {
        results.push(r);
        const met = r.received === r.changes && r.p50 <= 250 && r.p99 <= 1000;
        process.stdout.write(
          `${t.store.padEnd(11)} ${String(r.clients).padStart(2)} client${r.clients === 1 ? ' ' : 's'}  p50 ${f(r.p50).padStart(5)} ms  p99 ${f(r.p99).padStart(5)} ms  max ${f(r.max).padStart(5)} ms  received ${r.received}/${r.changes}  (the change itself: p50 ${f(r.answerP50)} ms, ${f(r.changesPerSecond)}/s; webhook p50 = ${f(r.p50 / r.answerP50)}x it), last event ${f(r.drainedMs)} ms after the last answer${r.verifyFailures ? `  (${r.verifyFailures} did not verify)` : ''}  ${met ? 'met' : 'NOT met'}  (load average ${loadavg()[0]?.toFixed(1)})\n`,
        );
      }
    } finally {
      await t.cleanup();
    }
  }
  if (!process.env.DATABASE_URL) process.stdout.write('(set DATABASE_URL to measure PostgreSQL too)\n');
  return results;
}

if (process.env.WEBHOOK_BENCH_ROLE === 'server') await serve();
else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
