/**
 * Sync server benchmark, loopback, autocannon, 10 connections, BENCH_SECONDS (default 5) per scenario,
 * on embedded PGlite and, when DATABASE_URL is set, on PostgreSQL (a fresh schema, dropped after):
 * a bare Fastify JSON route (the baseline of every HTTP row), campaigns.getBasic, campaigns.leads.search
 * with a query and a stage filter over BENCH_LEADS (default 100k) leads, a POST
 * campaigns.leads.updateTag that really writes, and an API import (campaigns.leads.create, 1,000 rows
 * a call; campaigns.leads.import too when the registry has it) against a raw multi-row INSERT of the
 * same rows as its baseline. Every row prints its target and whether it was met.
 * Each server runs in its own process (this file, started with BENCH_ROLE=bare|crm), so autocannon
 * and the server do not share an event loop.
 * `npx tsx test/bench/server.bench.ts` runs it alone; test/bench/run.ts calls run().
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead, LeadGroup, Stage, Tag } from '../../shared/model/index.ts';
import { operations } from '../../shared/ops/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { createWorkspace, seedDemo } from '../../sync-server/admin.ts';
import { buildServer } from '../../sync-server/app.ts';
import { openDatabase } from '../../sync-server/db.ts';
import type { OpenOptions } from '../../sync-server/db.ts';
import { Maintenance } from '../../sync-server/maintenance.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-store.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/deterministic.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LEADS = Number(process.env.BENCH_LEADS ?? 100_000);
const CONNECTIONS = 10;
const SELF = fileURLToPath(import.meta.url);

const FIRST = ['Olivia', 'Liam', 'Emma', 'Noah', 'Ava', 'Elijah', 'Sophia', 'James', 'Mia', 'Lucas', 'Priya', 'Arjun', 'Mei', 'Omar', 'Layla', 'Lars', 'Giulia', 'Hugo', 'Diego', 'Amara', 'Sean', 'Elena', 'Rafael', 'Grace', 'Henry', 'Nora', 'Ravi', 'Ines', 'Jonas', 'Hana'];
const LAST = ['Smith', 'Johnson', 'Williams', 'Brown', 'Garcia', 'Miller', 'Davis', 'Martinez', 'Lopez', 'Wilson', 'Anderson', 'Taylor', 'Thomas', 'Moore', 'Jackson', 'Lee', 'Nguyen', 'Patel', 'Kim', 'Chen', 'Tanaka', 'Haddad', 'Kowalski', 'Larsen', 'Rossi', 'Schmidt', 'Dubois', 'Silva', 'Okafor', 'Murphy', 'Ivanov', 'Fernandez', 'Cohen', 'Walker', 'Hughes', 'Bennett', 'Reyes', 'Novak', 'Weber', 'Laurent', 'Romero', 'Shah', 'Khan', 'Young', 'King', 'Wright', 'Scott', 'Green', 'Baker', 'Adams', 'Nelson', 'Hill', 'Campbell', 'Mitchell', 'Roberts', 'Carter', 'Phillips', 'Evans', 'Turner', 'Torres'];
const COMPANY = ['North', 'Blue', 'Iron', 'Silver', 'Bright', 'Cedar', 'Harbor', 'Summit', 'Nimbus', 'Quartz', 'Atlas', 'Beacon', 'Copper', 'Delta', 'Falcon', 'Granite'];
const KIND = ['Analytics', 'Logistics', 'Health', 'Robotics', 'Software', 'Capital', 'Foods', 'Energy', 'Labs', 'Systems'];

type Scenario = { title: string; rps: number; p50: number; p99: number; errors: number; non2xx: number };
type Row = { backend: string; title: string; value: string; baseline: string; target: string; met: boolean | null };

const IMPORT_CALLS = Number(process.env.BENCH_IMPORT_CALLS ?? 10);
const IMPORT_BATCH = 1000;

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
  const open = JSON.parse(process.env.BENCH_OPEN ?? '{}') as OpenOptions;
  const app = await buildServer({ open, logLevel: 'warn', rateLimitPerMinute: 1e9, bodyLimit: 50 * 1024 * 1024 });
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

/** A generated person (the same generator for the seed and the import rows). */
function person(rnd: () => number, i: number, prefix: string): { firstName: string; lastName: string; email: string; company: string; jobTitle: string; socialUrl: string } {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const firstName = pick(FIRST);
  const lastName = pick(LAST);
  const company = `${pick(COMPANY)} ${pick(KIND)}`;
  const slug = `${prefix}${firstName}-${lastName}-${i}`.toLowerCase();
  return {
    firstName,
    // Imported people are new people: a seeded name and company would be reported as a possible
    // duplicate of a seeded lead instead of created.
    lastName: prefix ? `${lastName} ${prefix}${i}` : lastName,
    email: `${slug}@${company.toLowerCase().replace(/\s+/g, '')}.example`,
    company,
    jobTitle: pick(['VP Sales', 'CTO', 'Head of Growth', 'SDR', 'RevOps Manager']),
    socialUrl: `https://social.example/in/${slug}`,
  };
}

type Seeded = { apiKey: string; workspaceId: string; leadIds: string[]; groupId: string; tagIds: string[] };

/** Seeds a workspace with the demo data plus generated leads up to LEADS, straight through the store. */
export async function seed(open: OpenOptions, label: string): Promise<Seeded> {
  const sql = await openDatabase(open);
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const deps = { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(7) };
    const ws = await createWorkspace(db, { name: 'Bench', ownerEmail: 'bench@bench.test' }, deps);
    await seedDemo(db, { workspaceId: ws.workspaceId }, deps);
    const store = db.forWorkspace(ws.workspaceId);
    const group = (await store.query('leadGroups', { orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 1 })).docs[0] as LeadGroup;
    const stages = (await store.query('stages')).docs as Stage[];
    const tags = (await store.query('tags')).docs as Tag[];
    const existing = await store.count('leads');
    const rnd = seededRandom(99);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const start = Date.parse('2026-01-01T00:00:00.000Z');
    const started = performance.now();
    const leadIds: string[] = [];
    const batch = 5000;
    for (let done = existing; done < LEADS; done += batch) {
      const writes: AnyWrite[] = [];
      for (let i = done; i < Math.min(LEADS, done + batch); i++) {
        const stage = rnd() < 0.5 ? null : pick(stages);
        const lead: Lead = newLead({ id: randomUUID(), workspaceId: ws.workspaceId, now: new Date(start + i * 60_000).toISOString() }, group.id, {
          ...person(rnd, i, ''),
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
    process.stdout.write(`[${label}] seeded ${total} leads in ${((performance.now() - started) / 1000).toFixed(1)} s (${Math.round((total - existing) / ((performance.now() - started) / 1000))} leads/s through Store.commit)\n`);
    const vacuum = performance.now();
    if (sql.kind === 'pglite') await new Maintenance(sql).run();
    else await sql.exec('VACUUM ANALYZE documents');
    process.stdout.write(`[${label}] VACUUM ANALYZE took ${((performance.now() - vacuum) / 1000).toFixed(1)} s\n`);
    return { apiKey: ws.apiKey, workspaceId: ws.workspaceId, leadIds, groupId: group.id, tagIds: tags.map((t) => t.id) };
  } finally {
    await sql.close();
  }
}

/** The baseline of the import rows: the same lead documents inserted raw, 1,000 rows per multi-row
 * INSERT, all in one transaction (no operation, no rules, no checks). Leads/s. */
async function rawInsert(open: OpenOptions, workspaceId: string, groupId: string, calls: number): Promise<number> {
  const sql = await openDatabase(open);
  try {
    const rnd = seededRandom(5);
    const now = new Date().toISOString();
    const batches = Array.from({ length: calls }, (_, c) =>
      Array.from({ length: IMPORT_BATCH }, (_, i) => newLead({ id: randomUUID(), workspaceId, now }, groupId, person(rnd, c * IMPORT_BATCH + i, 'raw-'))),
    );
    const started = performance.now();
    await sql.transaction(async (tx) => {
      for (const leads of batches) {
        await tx.query(
          `INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc)
           SELECT 'leads', w.id, $2, nextval('documents_seq'), false, w.doc FROM jsonb_to_recordset($1::jsonb) AS w(id text, doc jsonb)`,
          [JSON.stringify(leads.map((l) => ({ id: l.id, doc: l }))), workspaceId],
        );
      }
    });
    const rate = (calls * IMPORT_BATCH) / ((performance.now() - started) / 1000);
    // Out of the workspace again, so the scenarios after this one see the seeded data only.
    await sql.query(`DELETE FROM documents WHERE collection = 'leads' AND id = ANY($1::text[])`, [batches.flat().map((l) => l.id)]);
    return rate;
  } finally {
    await sql.close();
  }
}

/** Imports IMPORT_CALLS x 1,000 new people through an operation, one call after the other. Leads/s. */
async function importThrough(url: string, auth: Record<string, string>, name: string, body: (rows: ReturnType<typeof person>[]) => Record<string, unknown>, prefix: string): Promise<{ rate: number; errors: number }> {
  const rnd = seededRandom(17);
  const calls = Array.from({ length: IMPORT_CALLS }, (_, c) => JSON.stringify(body(Array.from({ length: IMPORT_BATCH }, (_, i) => person(rnd, c * IMPORT_BATCH + i, prefix)))));
  let errors = 0;
  const started = performance.now();
  for (const payload of calls) {
    const res = await fetch(`${url}/${name}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: payload });
    // campaigns.leads.create answers {created}, campaigns.leads.import {totals: {created}}.
    const out = (await res.json()) as { created?: number; totals?: { created?: number }; error?: { message: string } };
    if (!res.ok || (out.created ?? out.totals?.created) !== IMPORT_BATCH) {
      errors++;
      if (errors === 1) process.stdout.write(`${name} answered ${res.status}: ${JSON.stringify(out).slice(0, 300)}\n`);
    }
  }
  return { rate: (IMPORT_CALLS * IMPORT_BATCH) / ((performance.now() - started) / 1000), errors };
}

const fmt = (n: number, digits = 0): string => n.toFixed(digits);

type Target = { name: 'PGlite' | 'PostgreSQL'; open: OpenOptions; cleanup(): Promise<void> };

function targets(): Target[] {
  const dir = mkdtempSync(join(tmpdir(), 'crm-bench-'));
  const out: Target[] = [
    { name: 'PGlite', open: { dataDir: dir }, cleanup: async () => rmSync(dir, { recursive: true, force: true }) },
  ];
  const url = process.env.DATABASE_URL;
  if (url) {
    const schema = `bench_${process.pid}_${randomBytes(3).toString('hex')}`;
    out.push({
      name: 'PostgreSQL',
      open: { databaseUrl: url, schema },
      async cleanup() {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        } finally {
          await client.end();
        }
      },
    });
  }
  return out;
}

/** Every scenario of one database; rows are appended to `rows`. */
async function runOn(t: Target, bare: Scenario, rows: Row[]): Promise<void> {
  const seeded = await seed(t.open, t.name);
  // Before the server starts: an embedded database has one owner process at a time.
  const raw = await rawInsert(t.open, `raw-${seeded.workspaceId}`, seeded.groupId, IMPORT_CALLS);
  const c = await startChild('crm', { BENCH_OPEN: JSON.stringify(t.open) });
  try {
    const auth = { authorization: `Bearer ${seeded.apiKey}` };
    const searchPath = '/campaigns.leads.search?query=Smith&pipelineStage=Contacted';
    const probe = (await (await fetch(c.url + searchPath, { headers: auth })).json()) as { leads?: unknown[] };
    process.stdout.write(`[${t.name}] search probe: ${probe.leads?.length ?? 0} leads on the first page for query=Smith&pipelineStage=Contacted\n`);
    const basic = (await (await fetch(`${c.url}/campaigns.getBasic`, { headers: auth })).json()) as { totalCount?: number };
    process.stdout.write(`[${t.name}] getBasic probe: ${basic.totalCount ?? 0} campaigns\n`);

    const getBasic = await cannon('campaigns.getBasic', { url: `${c.url}/campaigns.getBasic`, headers: auth });
    const search = await cannon('search', { url: c.url + searchPath, headers: auth });
    const unloaded = await cannon('search, one connection', { url: c.url + searchPath, headers: auth, connections: 1 });
    let n = 0;
    const update = await cannon('POST campaigns.leads.updateTag', {
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
    });
    const created = await importThrough(c.url, auth, 'campaigns.leads.create', (leads) => ({ leadGroupId: seeded.groupId, leads }), 'api-');
    const hasImport = Object.prototype.hasOwnProperty.call(operations, 'campaigns.leads.import');
    const imported = hasImport ? await importThrough(c.url, auth, 'campaigns.leads.import', (leads) => ({ leadGroupId: seeded.groupId, rows: leads }), 'imp-') : null;

    const pct = (s: Scenario): number => (s.rps / bare.rps) * 100;
    const errs = (s: Scenario): string => (s.errors + s.non2xx > 0 ? ` (${s.errors + s.non2xx} errors)` : '');
    rows.push(
      { backend: t.name, title: 'campaigns.getBasic', value: `${fmt(getBasic.rps)} req/s = ${fmt(pct(getBasic), 1)}% of bare${errs(getBasic)}`, baseline: `bare ${fmt(bare.rps)} req/s`, target: '>= 50% of bare', met: pct(getBasic) >= 50 && getBasic.non2xx === 0 },
      { backend: t.name, title: `search query=Smith + stage, ${LEADS} leads, ${CONNECTIONS} conn`, value: `p50 ${fmt(search.p50)} ms, p99 ${fmt(search.p99)} ms, ${fmt(search.rps)} req/s${errs(search)}`, baseline: `one connection p50 ${fmt(unloaded.p50)} ms`, target: 'p50 <= 20 ms, p99 <= 60 ms', met: search.p50 <= 20 && search.p99 <= 60 && search.non2xx === 0 },
      { backend: t.name, title: `POST updateTag, ${CONNECTIONS} conn`, value: `${fmt(update.rps)} req/s, p50 ${fmt(update.p50)} ms, p99 ${fmt(update.p99)} ms${errs(update)}`, baseline: `bare ${fmt(bare.rps)} req/s`, target: '>= 2,000 req/s, p50 <= 5 ms (PostgreSQL)', met: update.rps >= 2000 && update.p50 <= 5 && update.non2xx === 0 },
      { backend: t.name, title: `API import campaigns.leads.create, ${IMPORT_CALLS} x ${IMPORT_BATCH}`, value: `${fmt(created.rate)} leads/s${created.errors ? ` (${created.errors} failed calls)` : ''}`, baseline: `raw multi-row INSERT ${fmt(raw)} rows/s`, target: '>= 20,000 leads/s', met: created.rate >= 20_000 && created.errors === 0 },
    );
    if (imported) {
      rows.push({ backend: t.name, title: `bulk import campaigns.leads.import, ${IMPORT_CALLS} x ${IMPORT_BATCH}`, value: `${fmt(imported.rate)} leads/s${imported.errors ? ` (${imported.errors} failed calls)` : ''}`, baseline: `raw multi-row INSERT ${fmt(raw)} rows/s`, target: '>= 20,000 leads/s', met: imported.rate >= 20_000 && imported.errors === 0 });
    } else {
      rows.push({ backend: t.name, title: 'bulk import campaigns.leads.import', value: 'not in the registry yet', baseline: '', target: '>= 20,000 leads/s', met: null });
    }
  } finally {
    await stopChild(c.proc);
  }
}

export async function run(): Promise<void> {
  const all = targets();
  let bareProc: ChildProcess | null = null;
  try {
    const b = await startChild('bare', {});
    bareProc = b.proc;
    const bare = await cannon('bare Fastify JSON route', { url: `${b.url}/bare` });
    await stopChild(b.proc);
    bareProc = null;

    const rows: Row[] = [];
    for (const t of all) await runOn(t, bare, rows);

    process.stdout.write(`\nbare Fastify JSON route: ${fmt(bare.rps)} req/s, p50 ${fmt(bare.p50)} ms (the HTTP baseline, measured in this run)\n\n`);
    const w = [10, 48, 50, 34, 40];
    process.stdout.write(`${'database'.padEnd(w[0] ?? 0)} ${'scenario'.padEnd(w[1] ?? 0)} ${'measured'.padEnd(w[2] ?? 0)} ${'baseline (same run)'.padEnd(w[3] ?? 0)} ${'target'.padEnd(w[4] ?? 0)} met\n`);
    for (const r of rows) {
      const met = r.met === null ? '-' : r.met ? 'yes' : 'NO';
      process.stdout.write(`${r.backend.padEnd(w[0] ?? 0)} ${r.title.padEnd(w[1] ?? 0)} ${r.value.padEnd(w[2] ?? 0)} ${r.baseline.padEnd(w[3] ?? 0)} ${r.target.padEnd(w[4] ?? 0)} ${met}\n`);
    }
    process.stdout.write(`(${CONNECTIONS} connections, ${SECONDS} s per HTTP scenario, rate limit lifted for the run; errors count non-2xx answers and socket errors${process.env.DATABASE_URL ? '' : '; set DATABASE_URL to measure PostgreSQL too'})\n`);
  } finally {
    if (bareProc) await stopChild(bareProc);
    for (const t of all) await t.cleanup().catch(() => undefined);
  }
}

const role = process.env.BENCH_ROLE;
if (role) await serveRole(role);
else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
