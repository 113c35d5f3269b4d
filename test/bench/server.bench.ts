/**
 * Sync server benchmark, measured as a team meets the server: a fresh database, a new workspace, the
 * first import through `campaigns.leads.import` in calls of 5,000 rows exactly as the desktop's
 * import dialog sends them (BENCH_LEADS rows of an Apollo-like export, default 100k), then ordinary
 * traffic at 10 connections: campaigns.getBasic, campaigns.leads.updateTag on distinct leads spread
 * over the whole workspace, and the search box's text-only search (a surname of 1 lead in 10, and a
 * rare email fragment, a different lead each request). Nothing here runs VACUUM or ANALYZE or warms a
 * cache: whatever statistics the database has, the server gathered itself.
 *
 * Databases: embedded PGlite and, with DATABASE_URL, PostgreSQL in a fresh schema twice, once with
 * autovacuum off and once on (switched with ALTER SYSTEM for that run and put back afterwards; this
 * machine's PostgreSQL runs with it off). Baselines measured in the same run: a bare Fastify JSON
 * route for the HTTP rows, a raw multi-row INSERT of the same lead documents into another fresh
 * schema for the import rows. Each server runs in its own process (this file started with
 * BENCH_ROLE=bare|crm), so the load generator and the server do not share an event loop.
 * `npx tsx test/bench/server.bench.ts` runs it alone; test/bench/run.ts calls run(). BENCH_TARGETS
 * (e.g. `pglite,off`) picks databases, BENCH_VERBOSE=1 prints every import call, BENCH_KEEP=1 keeps
 * the PostgreSQL schemas (for EXPLAIN afterwards).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { suggestMapping } from '../../shared/import/fields.ts';
import { storedKeys } from '../../shared/intake/identity.ts';
import { MAX_IMPORT_ROWS, readCsvText } from '../../shared/import/file.ts';
import { newLead } from '../../shared/model/factories.ts';
import { createWorkspace } from '../../sync-server/admin.ts';
import { buildServer } from '../../sync-server/app.ts';
import { openDatabase } from '../../sync-server/db.ts';
import type { OpenOptions } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/deterministic.ts';
import { COMMON_SURNAME, emailLocalPart, exportRow, generatedExport } from './support/generated-export.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LEADS = Number(process.env.BENCH_LEADS ?? 100_000);
const CONNECTIONS = 10;
const SELF = fileURLToPath(import.meta.url);

type Scenario = { rps: number; p50: number; p99: number; failed: number };
type Row = { backend: string; title: string; value: string; baseline: string; target: string; met: boolean | null };

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
  const app = await buildServer({ open, logLevel: 'warn', rateLimitPerMinute: 1e9 });
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
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.on('close', r));
  proc.kill('SIGTERM');
  await exited;
}

async function cannon(opts: autocannon.Options): Promise<Scenario> {
  const result = await autocannon({ duration: SECONDS, connections: CONNECTIONS, ...opts });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failed: result.errors + result.timeouts + result.non2xx };
}

/** The import dialog's calls (renderer/src/screens/leads/csv-import.ts): the file read and mapped
 * once, then rows of the mapped columns as JSON objects with their row numbers, 5,000 a call. */
function importCalls(csv: string, leadGroupId: string): string[] {
  const file = readCsvText(csv);
  const mapping = suggestMapping(file.headers, file.records.slice(0, 50).map((r) => r.cells));
  const sent = file.headers.filter((h) => (mapping[h] ?? 'skip') !== 'skip');
  const columnOf = sent.map((h) => file.headers.indexOf(h));
  const calls: string[] = [];
  for (let at = 0; at < file.records.length; at += MAX_IMPORT_ROWS) {
    const part = file.records.slice(at, at + MAX_IMPORT_ROWS);
    const rows = part.map((r) => Object.fromEntries(sent.map((h, i) => [h, r.cells[columnOf[i] ?? -1] ?? ''])));
    calls.push(
      JSON.stringify({
        leadGroupId,
        rows,
        rowNumbers: part.map((r) => r.row),
        mapping: Object.fromEntries(sent.map((h) => [h, mapping[h] ?? 'skip'])),
        onExisting: 'fill_empty',
        onPossibleDuplicate: 'report',
        dryRun: false,
      }),
    );
  }
  return calls;
}

type Imported = { rate: number; slowest: number; slowestCall: number; calls: number; seconds: number; leadIds: string[]; failed: number };

/** The whole export through campaigns.leads.import, one call after the other, as the dialog does. */
async function importThroughApi(url: string, auth: Record<string, string>, leadGroupId: string, label: string): Promise<Imported> {
  const calls = importCalls(generatedExport(LEADS), leadGroupId);
  const leadIds: string[] = [];
  let slowest = 0;
  let slowestCall = 0;
  let failed = 0;
  const started = performance.now();
  for (const [i, body] of calls.entries()) {
    const t = performance.now();
    const res = await fetch(`${url}/campaigns.leads.import`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
    const out = (await res.json()) as { totals?: { created: number }; results?: { code: string; leadId?: string }[]; error?: unknown };
    const seconds = (performance.now() - t) / 1000;
    if (seconds > slowest) {
      slowest = seconds;
      slowestCall = i + 1;
    }
    if (!res.ok || !out.results) {
      failed++;
      process.stdout.write(`[${label}] import call ${i + 1} answered ${res.status}: ${JSON.stringify(out).slice(0, 300)}\n`);
      continue;
    }
    for (const r of out.results) if (r.code === 'CREATED' && r.leadId) leadIds.push(r.leadId);
    if (process.env.BENCH_VERBOSE) process.stdout.write(`[${label}] import call ${i + 1}: ${seconds.toFixed(2)} s\n`);
  }
  const seconds = (performance.now() - started) / 1000;
  return { rate: leadIds.length / seconds, slowest, slowestCall, calls: calls.length, seconds, leadIds, failed };
}

/** The baseline of the import rows: the same number of lead documents inserted raw into a fresh
 * database, 5,000 rows per multi-row INSERT and transaction (no operation, no rules, no lookups). */
async function rawInsert(open: OpenOptions): Promise<number> {
  const sql = await openDatabase(open);
  try {
    await migrate(sql);
    const workspaceId = randomUUID();
    const groupId = randomUUID();
    const now = new Date().toISOString();
    const batches: string[] = [];
    for (let at = 0; at < LEADS; at += MAX_IMPORT_ROWS) {
      const leads = Array.from({ length: Math.min(MAX_IMPORT_ROWS, LEADS - at) }, (_, k) => {
        const [firstName = '', lastName = '', jobTitle = '', company = '', email = '', , phone = '', socialUrl = ''] = exportRow(at + k);
        return newLead({ id: randomUUID(), workspaceId, now }, groupId, { firstName, lastName, jobTitle, company, email, phone, socialUrl });
      });
      // With the identity key columns every lead write fills (migration 017): the same rows.
      batches.push(JSON.stringify(leads.map((l) => ({ id: l.id, doc: l, ...storedKeys(l) }))));
    }
    const started = performance.now();
    for (const batch of batches) {
      await sql.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc, profile_key, email_key, name_company_key)
           SELECT 'leads', w.id, $2, nextval('documents_seq'), false, w.doc, w.profile, w.email, w."nameCompany"
             FROM jsonb_to_recordset($1::jsonb) AS w(id text, doc jsonb, profile text, email text, "nameCompany" text)`,
          [batch, workspaceId],
        );
      });
    }
    return LEADS / ((performance.now() - started) / 1000);
  } finally {
    await sql.close();
  }
}

const fmt = (n: number, digits = 0): string => n.toFixed(digits);

type Target = { name: string; open: () => OpenOptions; autovacuum?: 'on' | 'off'; importOnly?: boolean; cleanup(): Promise<void> };

/** Runs fn with PostgreSQL's autovacuum switched as asked, restoring the server's setting after. */
async function withAutovacuum<T>(url: string, want: 'on' | 'off', fn: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const before = ((await client.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]?.autovacuum ?? 'on') as string;
  const set = async (v: string) => {
    await client.query(`ALTER SYSTEM SET autovacuum = ${v === 'on' ? 'on' : 'off'}`);
    await client.query('SELECT pg_reload_conf()');
    for (let i = 0; i < 50 && ((await client.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]?.autovacuum ?? '') !== v; i++) await new Promise((r) => setTimeout(r, 100));
  };
  try {
    if (before !== want) await set(want);
    return await fn();
  } finally {
    // The configuration files may set it too (this machine: conf.d/90-ci.conf): RESET leaves them in charge.
    if (before !== want) {
      await client.query('ALTER SYSTEM RESET autovacuum');
      await client.query('SELECT pg_reload_conf()');
    }
    await client.end();
  }
}

function targets(): Target[] {
  const dirs: string[] = [];
  const out: Target[] = [
    {
      name: 'PGlite',
      open: () => {
        const dir = mkdtempSync(join(tmpdir(), 'crm-bench-'));
        dirs.push(dir);
        return { dataDir: dir };
      },
      importOnly: process.env.DATABASE_URL !== undefined && process.env.BENCH_PGLITE_ALL === undefined,
      cleanup: async () => {
        for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
      },
    },
  ];
  const url = process.env.DATABASE_URL;
  if (url) {
    for (const autovacuum of ['off', 'on'] as const) {
      const schemas: string[] = [];
      out.push({
        name: `PostgreSQL, autovacuum ${autovacuum}`,
        autovacuum,
        open: () => {
          const schema = `bench_${process.pid}_${randomBytes(3).toString('hex')}`;
          schemas.push(schema);
          return { databaseUrl: url, schema };
        },
        async cleanup() {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            // BENCH_KEEP=1 leaves them for a look with EXPLAIN afterwards (their names are printed).
            for (const s of schemas.splice(0)) {
              if (process.env.BENCH_KEEP) process.stdout.write(`kept schema ${s}\n`);
              else await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
            }
          } finally {
            await client.end();
          }
        },
      });
    }
  }
  // BENCH_TARGETS=pglite,off,on picks some of them (matched against their names).
  const wanted = process.env.BENCH_TARGETS?.split(',').map((w) => w.trim().toLowerCase()).filter(Boolean);
  return wanted ? out.filter((t) => wanted.some((w) => t.name.toLowerCase().includes(w))) : out;
}

/** A member's first steps on a fresh database: the workspace (the CLI's create-workspace) and its tags. */
async function newWorkspace(open: OpenOptions): Promise<{ apiKey: string }> {
  const sql = await openDatabase(open);
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const ws = await createWorkspace(db, { name: 'Bench', ownerEmail: 'bench@bench.test' }, { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(7) });
    return { apiKey: ws.apiKey };
  } finally {
    await sql.close();
  }
}

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`${res.url} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as T;
}

/** Every scenario of one database; rows are appended to `rows`. */
async function runOn(t: Target, bare: Scenario, rows: Row[]): Promise<void> {
  const raw = await rawInsert(t.open());
  const open = t.open();
  const { apiKey } = await newWorkspace(open);
  const c = await startChild('crm', { BENCH_OPEN: JSON.stringify(open) });
  try {
    const auth = { authorization: `Bearer ${apiKey}` };
    const post = { ...auth, 'content-type': 'application/json' };
    const { leadGroups } = await json<{ leadGroups: { id: string }[] }>(await fetch(`${c.url}/leadGroups.getAll`, { headers: auth }));
    const groupId = leadGroups[0]?.id;
    if (!groupId) throw new Error('The new workspace has no lead list.');

    const imported = await importThroughApi(c.url, auth, groupId, t.name);
    rows.push(
      {
        backend: t.name, title: `import ${LEADS.toLocaleString('en')} rows, calls of 5,000: slowest call`,
        value: `${fmt(imported.slowest, 2)} s (call ${imported.slowestCall} of ${imported.calls})${imported.failed ? `, ${imported.failed} failed calls` : ''}`,
        baseline: '', target: '<= 5 s', met: imported.slowest <= 5 && imported.failed === 0,
      },
      {
        backend: t.name, title: 'import: leads/s over the whole file',
        value: `${fmt(imported.rate)} leads/s (${fmt(imported.seconds, 1)} s) = ${fmt((imported.rate / raw) * 100)}% of raw`,
        baseline: `raw INSERT ${fmt(raw)} rows/s`, target: '>= 5,000 leads/s', met: imported.rate >= 5000 && imported.failed === 0,
      },
    );
    if (t.importOnly) return;

    const tags: string[] = [];
    for (const name of ['Hot', 'Warm', 'Cold', 'Partner']) tags.push((await json<{ id: string }>(await fetch(`${c.url}/tags.create`, { method: 'POST', headers: post, body: JSON.stringify({ name }) }))).id);
    // Distinct leads spread over the whole workspace, in a shuffled order.
    const rnd = seededRandom(11);
    const leadIds = [...imported.leadIds];
    for (let i = leadIds.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [leadIds[i], leadIds[j]] = [leadIds[j] as string, leadIds[i] as string];
    }
    const getBasic = await cannon({ url: `${c.url}/campaigns.getBasic`, headers: auth });
    let n = 0;
    const update = await cannon({
      url: `${c.url}/campaigns.leads.updateTag`,
      method: 'POST',
      headers: post,
      requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify({ leadGroupId: groupId, leadId: leadIds[n++ % leadIds.length], tagId: tags[n % tags.length] }) }) }],
    });
    const common = await cannon({ url: `${c.url}/campaigns.leads.search?query=${COMMON_SURNAME}`, headers: auth });
    const rare = await cannon({
      url: `${c.url}/campaigns.leads.search`,
      headers: auth,
      requests: [{ setupRequest: (req) => ({ ...req, path: `/campaigns.leads.search?query=${encodeURIComponent(emailLocalPart(Math.floor(rnd() * LEADS)))}` }) }],
    });
    const probe = await json<{ leads: unknown[] }>(await fetch(`${c.url}/campaigns.leads.search?query=${COMMON_SURNAME}`, { headers: auth }));
    const pct = (s: Scenario): number => (s.rps / bare.rps) * 100;
    const failed = (s: Scenario): string => (s.failed > 0 ? ` (${s.failed} failed)` : '');
    rows.push(
      { backend: t.name, title: 'campaigns.getBasic', value: `${fmt(getBasic.rps)} req/s = ${fmt(pct(getBasic), 1)}% of bare${failed(getBasic)}`, baseline: `bare ${fmt(bare.rps)} req/s`, target: '>= 25% of bare', met: pct(getBasic) >= 25 && getBasic.failed === 0 },
      {
        backend: t.name, title: `updateTag, distinct leads of ${LEADS.toLocaleString('en')}`, value: `p50 ${fmt(update.p50)} ms, p99 ${fmt(update.p99)} ms, ${fmt(update.rps)} req/s = ${fmt(pct(update), 1)}% of bare${failed(update)}`,
        baseline: `bare ${fmt(bare.rps)} req/s`, target: 'p50 <= 10 ms, >= 35% of bare', met: update.p50 <= 10 && pct(update) >= 35 && update.failed === 0,
      },
      { backend: t.name, title: `search "${COMMON_SURNAME}" (1 lead in 10), text only`, value: `p50 ${fmt(common.p50)} ms, p99 ${fmt(common.p99)} ms, ${fmt(common.rps)} req/s${failed(common)}`, baseline: `${probe.leads.length} leads a page`, target: 'p50 <= 20 ms, p99 <= 60 ms', met: common.p50 <= 20 && common.p99 <= 60 && common.failed === 0 },
      { backend: t.name, title: 'search a rare email fragment, another lead each time', value: `p50 ${fmt(rare.p50)} ms, p99 ${fmt(rare.p99)} ms, ${fmt(rare.rps)} req/s${failed(rare)}`, baseline: '', target: 'p50 <= 20 ms, p99 <= 60 ms', met: rare.p50 <= 20 && rare.p99 <= 60 && rare.failed === 0 },
    );
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
    const bare = await cannon({ url: `${b.url}/bare` });
    await stopChild(b.proc);
    bareProc = null;

    const rows: Row[] = [];
    for (const t of all) {
      const started = performance.now();
      const url = process.env.DATABASE_URL;
      if (t.autovacuum && url) await withAutovacuum(url, t.autovacuum, () => runOn(t, bare, rows));
      else await runOn(t, bare, rows);
      await t.cleanup();
      process.stdout.write(`[${t.name}] done in ${fmt((performance.now() - started) / 1000)} s, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
    }

    process.stdout.write(`\nbare Fastify JSON route: ${fmt(bare.rps)} req/s, p50 ${fmt(bare.p50)} ms (the HTTP baseline, measured in this run)\n\n`);
    const w = [28, 58, 62, 30, 30];
    process.stdout.write(`${'database'.padEnd(w[0] ?? 0)} ${'scenario'.padEnd(w[1] ?? 0)} ${'measured'.padEnd(w[2] ?? 0)} ${'baseline (same run)'.padEnd(w[3] ?? 0)} ${'target'.padEnd(w[4] ?? 0)} met\n`);
    for (const r of rows) {
      const met = r.met === null ? '-' : r.met ? 'yes' : 'NO';
      process.stdout.write(`${r.backend.padEnd(w[0] ?? 0)} ${r.title.padEnd(w[1] ?? 0)} ${r.value.padEnd(w[2] ?? 0)} ${r.baseline.padEnd(w[3] ?? 0)} ${r.target.padEnd(w[4] ?? 0)} ${met}\n`);
    }
    process.stdout.write(
      `(${CONNECTIONS} connections, ${SECONDS} s per HTTP scenario, rate limit lifted for the run, no VACUUM or ANALYZE by the benchmark; failed counts non-2xx answers and socket errors${process.env.DATABASE_URL ? '' : '; set DATABASE_URL to measure PostgreSQL too'})\n`,
    );
  } finally {
    if (bareProc) await stopChild(bareProc);
    for (const t of all) await t.cleanup().catch(() => undefined);
  }
}

const role = process.env.BENCH_ROLE;
if (role) await serveRole(role);
else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
