/**
 * Sync server benchmark on embedded PGlite, loopback, autocannon, 5 s per scenario:
 * a bare Fastify JSON route (the baseline), campaigns.getBasic, campaigns.leads.search with a query
 * and a stage filter over 100k leads, and a POST campaigns.leads.updateTag that really writes.
 * Targets on a 2-core machine: search p50 under 20 ms at 100k leads; getBasic at least 30% of the
 * bare route's throughput. Each server runs in its own process (this file, started with
 * BENCH_ROLE=bare|crm), so autocannon and the server do not share an event loop.
 * `npx tsx test/bench/server.bench.ts` runs it alone; test/bench/run.ts calls run().
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead, LeadGroup, Stage, Tag } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { createWorkspace, seedDemo } from '../../sync-server/admin.ts';
import { buildServer } from '../../sync-server/app.ts';
import { openDatabase } from '../../sync-server/db.ts';
import { Maintenance } from '../../sync-server/maintenance.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-store.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LEADS = Number(process.env.BENCH_LEADS ?? 100_000);
const CONNECTIONS = 10;
const SELF = fileURLToPath(import.meta.url);

const FIRST = ['Olivia', 'Liam', 'Emma', 'Noah', 'Ava', 'Elijah', 'Sophia', 'James', 'Mia', 'Lucas', 'Priya', 'Arjun', 'Mei', 'Omar', 'Layla', 'Lars', 'Giulia', 'Hugo', 'Diego', 'Amara', 'Sean', 'Elena', 'Rafael', 'Grace', 'Henry', 'Nora', 'Ravi', 'Ines', 'Jonas', 'Hana'];
const LAST = ['Smith', 'Johnson', 'Williams', 'Brown', 'Garcia', 'Miller', 'Davis', 'Martinez', 'Lopez', 'Wilson', 'Anderson', 'Taylor', 'Thomas', 'Moore', 'Jackson', 'Lee', 'Nguyen', 'Patel', 'Kim', 'Chen', 'Tanaka', 'Haddad', 'Kowalski', 'Larsen', 'Rossi', 'Schmidt', 'Dubois', 'Silva', 'Okafor', 'Murphy', 'Ivanov', 'Fernandez', 'Cohen', 'Walker', 'Hughes', 'Bennett', 'Reyes', 'Novak', 'Weber', 'Laurent', 'Romero', 'Shah', 'Khan', 'Young', 'King', 'Wright', 'Scott', 'Green', 'Baker', 'Adams', 'Nelson', 'Hill', 'Campbell', 'Mitchell', 'Roberts', 'Carter', 'Phillips', 'Evans', 'Turner', 'Torres'];
const COMPANY = ['North', 'Blue', 'Iron', 'Silver', 'Bright', 'Cedar', 'Harbor', 'Summit', 'Nimbus', 'Quartz', 'Atlas', 'Beacon', 'Copper', 'Delta', 'Falcon', 'Granite'];
const KIND = ['Analytics', 'Logistics', 'Health', 'Robotics', 'Software', 'Capital', 'Foods', 'Energy', 'Labs', 'Systems'];

type Scenario = { title: string; rps: number; p50: number; p99: number; errors: number; non2xx: number };

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Child process roles: a server on the given port until SIGTERM. */
async function serveRole(role: string): Promise<void> {
  const port = Number(process.env.PORT);
  if (role === 'bare') {
    const app = Fastify({ logger: { level: 'warn' } });
    app.get('/bare', async () => ({ ok: true, items: [{ id: 'a', name: 'bare route' }] }));
    await app.listen({ port, host: '127.0.0.1' });
    process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
    return;
  }
  const app = await buildServer({ open: { dataDir: process.env.DATA_DIR ?? '' }, logLevel: 'warn', rateLimitPerMinute: 1e9 });
  await app.listen({ port, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

async function startChild(role: string, env: Record<string, string>): Promise<{ proc: ChildProcess; url: string }> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const proc = spawn(process.execPath, ['--import', 'tsx', SELF], { env: { ...process.env, ...env, BENCH_ROLE: role, PORT: String(port) }, stdio: ['ignore', 'inherit', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  const probe = role === 'bare' ? '/bare' : '/healthz';
  for (let i = 0; i < 600; i++) {
    if (proc.exitCode !== null) throw new Error(`${role} server exited with ${proc.exitCode}`);
    try {
      if ((await fetch(url + probe)).ok) return { proc, url };
    } catch {
      // Not up yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error(`${role} server did not start`);
}

async function stopChild(proc: ChildProcess): Promise<void> {
  const exited = new Promise((r) => proc.on('close', r));
  proc.kill('SIGTERM');
  await exited;
}

async function cannon(title: string, opts: autocannon.Options): Promise<Scenario> {
  const result = await autocannon({ duration: SECONDS, connections: CONNECTIONS, ...opts, title });
  return { title, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.timeouts, non2xx: result.non2xx };
}

/** Seeds a workspace with the demo data plus generated leads up to LEADS, straight through the store. */
async function seed(dataDir: string): Promise<{ apiKey: string; leadIds: string[]; groupId: string; tagIds: string[] }> {
  const sql = await openDatabase({ dataDir });
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const deps = { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: mulberry32(7) };
    const ws = await createWorkspace(db, { name: 'Bench', ownerEmail: 'bench@bench.test' }, deps);
    await seedDemo(db, { workspaceId: ws.workspaceId }, deps);
    const store = db.forWorkspace(ws.workspaceId);
    const group = (await store.query('leadGroups', { orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 1 })).docs[0] as LeadGroup;
    const stages = (await store.query('stages')).docs as Stage[];
    const tags = (await store.query('tags')).docs as Tag[];
    const existing = await store.count('leads');
    const rnd = mulberry32(99);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const start = Date.parse('2026-01-01T00:00:00.000Z');
    const started = performance.now();
    const leadIds: string[] = [];
    const batch = 5000;
    for (let done = existing; done < LEADS; done += batch) {
      const writes: AnyWrite[] = [];
      for (let i = done; i < Math.min(LEADS, done + batch); i++) {
        const firstName = pick(FIRST);
        const lastName = pick(LAST);
        const company = `${pick(COMPANY)} ${pick(KIND)}`;
        const slug = `${firstName}-${lastName}-${i}`.toLowerCase();
        const stage = rnd() < 0.5 ? null : pick(stages);
        const lead: Lead = newLead({ id: randomUUID(), workspaceId: ws.workspaceId, now: new Date(start + i * 60_000).toISOString() }, group.id, {
          firstName,
          lastName,
          email: `${slug}@${company.toLowerCase().replace(/\s+/g, '')}.example`,
          company,
          jobTitle: pick(['VP Sales', 'CTO', 'Head of Growth', 'SDR', 'RevOps Manager']),
          socialUrl: `https://social.example/in/${slug}`,
          pipelineStageId: stage && stage.category !== 'LOST' && stage.category !== 'ON_HOLD' ? stage.id : null,
          tagId: rnd() < 0.3 ? pick(tags).id : null,
          leadFitScore: Math.floor(rnd() * 100),
          rankingScore: Math.round(rnd() * 1000) / 10,
        });
        if (leadIds.length < 2000) leadIds.push(lead.id);
        writes.push({ collection: 'leads', id: lead.id, before: null, after: lead });
      }
      await store.commit(writes);
    }
    const total = await store.count('leads');
    process.stdout.write(`seeded ${total} leads in ${((performance.now() - started) / 1000).toFixed(1)} s (${Math.round((total - existing) / ((performance.now() - started) / 1000))} leads/s through Store.commit)\n`);
    const vacuum = performance.now();
    await new Maintenance(sql).run();
    process.stdout.write(`VACUUM ANALYZE (the server's PGlite maintenance) took ${((performance.now() - vacuum) / 1000).toFixed(1)} s\n`);
    return { apiKey: ws.apiKey, leadIds, groupId: group.id, tagIds: tags.map((t) => t.id) };
  } finally {
    await sql.close();
  }
}

const fmt = (n: number, digits = 0): string => n.toFixed(digits);

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'crm-bench-'));
  let crm: ChildProcess | null = null;
  let bare: ChildProcess | null = null;
  try {
    const seeded = await seed(dir);
    const results: Scenario[] = [];

    const b = await startChild('bare', {});
    bare = b.proc;
    results.push(await cannon('bare Fastify JSON route', { url: `${b.url}/bare` }));
    await stopChild(b.proc);
    bare = null;

    const c = await startChild('crm', { DATA_DIR: dir });
    crm = c.proc;
    const auth = { authorization: `Bearer ${seeded.apiKey}` };
    const searchPath = '/campaigns.leads.search?query=smith&pipelineStage=Contacted';
    const probe = (await (await fetch(c.url + searchPath, { headers: auth })).json()) as { leads?: unknown[] };
    process.stdout.write(`search probe: ${probe.leads?.length ?? 0} leads on the first page for query=smith&pipelineStage=Contacted\n`);
    const basic = (await (await fetch(`${c.url}/campaigns.getBasic`, { headers: auth })).json()) as { totalCount?: number };
    process.stdout.write(`getBasic probe: ${basic.totalCount ?? 0} campaigns\n`);

    results.push(await cannon('campaigns.getBasic', { url: `${c.url}/campaigns.getBasic`, headers: auth }));
    results.push(await cannon(`campaigns.leads.search (query + stage, ${LEADS} leads)`, { url: c.url + searchPath, headers: auth }));
    const unloaded = await cannon('campaigns.leads.search, one connection', { url: c.url + searchPath, headers: auth, connections: 1 });
    let n = 0;
    results.push(
      await cannon('POST campaigns.leads.updateTag', {
        url: `${c.url}/campaigns.leads.updateTag`,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (req) => {
              n++;
              const leadId = seeded.leadIds[n % seeded.leadIds.length];
              const tagId = seeded.tagIds[Math.floor(n / seeded.leadIds.length) % seeded.tagIds.length];
              return { ...req, body: JSON.stringify({ leadGroupId: seeded.groupId, leadId, tagId }) };
            },
          },
        ],
      }),
    );
    results.push(unloaded);
    await stopChild(c.proc);
    crm = null;

    const base = results[0] as Scenario;
    process.stdout.write(`\n${'scenario'.padEnd(52)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'vs bare'.padStart(8)}  errors\n`);
    for (const r of results) {
      process.stdout.write(
        `${r.title.padEnd(52)} ${fmt(r.rps).padStart(8)} ${fmt(r.p50).padStart(7)} ${fmt(r.p99).padStart(7)} ${`${fmt((r.rps / base.rps) * 100, 1)}%`.padStart(8)}  ${r.errors + r.non2xx}\n`,
      );
    }
    const search = results.find((r) => r.title.startsWith('campaigns.leads.search (')) as Scenario;
    const getBasic = results.find((r) => r.title === 'campaigns.getBasic') as Scenario;
    process.stdout.write(
      `\ntargets: search p50 < 20 ms at ${LEADS} leads: ${fmt(unloaded.p50)} ms on one connection, ${fmt(search.p50)} ms at ${CONNECTIONS} connections (${unloaded.p50 < 20 ? 'met' : 'MISSED'} unloaded)` +
        `; getBasic >= 30% of the bare route: ${fmt((getBasic.rps / base.rps) * 100, 1)}% (${getBasic.rps / base.rps >= 0.3 ? 'met' : 'MISSED'})\n`,
    );
    process.stdout.write(`(${CONNECTIONS} connections, ${SECONDS} s per scenario, PGlite, rate limit lifted for the run; errors counts non-2xx answers and socket errors)\n`);
  } finally {
    if (bare) await stopChild(bare);
    if (crm) await stopChild(crm);
    rmSync(dir, { recursive: true, force: true });
  }
}

const role = process.env.BENCH_ROLE;
if (role) await serveRole(role);
else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
