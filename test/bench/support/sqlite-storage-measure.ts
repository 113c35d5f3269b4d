/**
 * Measures the SQLite storage (electron/backend/storage/sqlite/) at desktop scale, each step in a
 * fresh child process that holds only the storage (this file bundled by esbuild and run with
 * plain node, as the app runs its backend), against today's persisted-memory storage in the same
 * run as the baseline:
 *   write   N leads into an empty database in pull-sized pages (2,000, the replication's
 *           downstream write context, as an initial sync stores them): docs/s, rss, file size;
 *   reopen  a fresh process opens the database and reads the first 50 leads newest first through
 *           an RxDB query (`sort: createdAt desc, limit 50`): ms from the open call, rss after;
 *           plus an RxDB count() of the leads;
 *   search  lead text search (FTS5 trigram) newest first, 50 rows: a common last name, a rare
 *           email fragment, a one-letter text: p50/p99 over repeated runs;
 *   migrate the persisted-memory file of the baseline into this storage (migrate.ts), then reopen it.
 *   replicate  N leads written as RxDB's replication stores a pulled page: the page into the
 *           collection, then each document's assumed-master state into the replication's meta
 *           instance (rxdb's downstream.ts): seconds, CPU, and the file's bytes per lead by table
 *           and index (`npx tsx test/bench/support/sqlite-storage-measure.ts replicate-only [LEADS]`).
 * `npx tsx test/bench/support/sqlite-storage-measure.ts [LEADS]` (default 100000). Not part of
 * `npm run bench` yet: the desktop does not use this storage until the switch-over.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRxDatabase, getRxReplicationMetaInstanceSchema, now, randomToken } from 'rxdb';
import type { RxCollection, RxDatabase, RxDocumentData, RxJsonSchema, RxStorage } from 'rxdb';
import { RxDBMigrationSchemaPlugin } from 'rxdb/plugins/migration-schema';
import { addRxPlugin } from 'rxdb';
import { limitYoungGeneration, migrationStrategies } from '../../../electron/backend/local-db.ts';
import { getRxStoragePersistedMemory } from '../../support/persisted-memory.ts';
import { sqliteFilePath } from '../../../electron/backend/storage/sqlite/file.ts';
import { migrateFromPersistedMemory } from '../../../electron/backend/storage/sqlite/migrate.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../../electron/backend/storage/sqlite/storage.ts';
import { newLead } from '../../../shared/model/factories.ts';
import { COLLECTIONS } from '../../../shared/model/index.ts';
import type { Lead } from '../../../shared/model/index.ts';
import { LEAD_QUERY_FIELDS } from '../../../shared/ops/lead-search.ts';
import { seededRandom } from '../../support/deterministic.ts';
import { person } from './bench-people.ts';
import { STORE_LAYOUT, TEXT_SEARCH } from '../../../electron/backend/store-layout.ts';
import { spaceLines } from './sqlite-space.ts';

addRxPlugin(RxDBMigrationSchemaPlugin);

type Kind = 'sqlite' | 'persisted-memory';
type Db = RxDatabase<{ leads: RxCollection<Lead> }>;

const NAME = 'crm-bench';
const PAGE = 2000;
/** The leads schema with the index the leads table's default order needs (the real schema
 * declares none yet; the switch-over adds its indexes with a schema version). */
const LEADS_SCHEMA = { ...(COLLECTIONS.leads.schema as unknown as RxJsonSchema<Lead>), indexes: [['createdAt']] } as RxJsonSchema<Lead>;


function storageOf(kind: Kind, dir: string): RxStorage<unknown, object> {
  return (kind === 'sqlite' ? getRxStorageSqlite({ directory: dir, textSearch: { leads: LEAD_QUERY_FIELDS } }) : getRxStoragePersistedMemory({ directory: dir })) as RxStorage<unknown, object>;
}

async function openDb(kind: Kind, dir: string): Promise<Db> {
  const db: Db = await createRxDatabase({ name: NAME, storage: storageOf(kind, dir), multiInstance: false });
  await db.addCollections({ leads: { schema: LEADS_SCHEMA, migrationStrategies: migrationStrategies(LEADS_SCHEMA.version) } });
  return db;
}

/** The desktop benchmark's kind of lead (test/bench/desktop.bench.ts), as RxDB stores it. */
function* leadPages(count: number): Generator<RxDocumentData<Lead>[]> {
  const rnd = seededRandom(99);
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  for (let done = 0; done < count; done += PAGE) {
    const page: RxDocumentData<Lead>[] = [];
    for (let i = done; i < Math.min(count, done + PAGE); i++) {
      const lead = newLead({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, workspaceId: 'w-bench', now: new Date(start + i * 60_000).toISOString() }, 'g-bench', {
        ...person(i),
        leadFitScore: Math.floor(rnd() * 100),
        rankingScore: Math.round(rnd() * 1000) / 10,
      });
      page.push({ ...lead, _deleted: false, _rev: `1-${i.toString(16)}`, _meta: { lwt: now() }, _attachments: {} });
    }
    yield page;
  }
}

const mem = () => process.memoryUsage();
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const percentile = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;

async function writeChild(kind: Kind, dir: string, count: number) {
  const db = await openDb(kind, dir);
  const t0 = performance.now();
  for (const page of leadPages(count)) {
    const res = await db.leads.storageInstance.bulkWrite(page.map((document) => ({ document })), 'replication-downstream-bench');
    if (res.error.length > 0) throw new Error(`${res.error.length} write errors`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const m = mem();
  gc();
  const collected = mem();
  await db.close();
  return { seconds, docsPerSecond: Math.round(count / seconds), rss: m.rss, heap: m.heapUsed, rssAfterGc: collected.rss, heapAfterGc: collected.heapUsed };
}

async function replicateChild(dir: string, count: number) {
  // As the desktop stores leads: its schema, text search and Store layout (local-db.ts).
  const storage = getRxStorageSqlite({ directory: dir, textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT });
  const db: Db = await createRxDatabase({ name: NAME, storage, multiInstance: false });
  await db.addCollections({ leads: { schema: COLLECTIONS.leads.schema as unknown as RxJsonSchema<Lead> } });
  const schema = db.leads.storageInstance.schema;
  const meta = await storage.createStorageInstance<Record<string, unknown>>({
    databaseInstanceToken: randomToken(10),
    databaseName: NAME,
    collectionName: 'rx-replication-meta-bench',
    schema: getRxReplicationMetaInstanceSchema(schema, false) as never,
    options: {},
    multiInstance: false,
    devMode: false,
  });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (const page of leadPages(count)) {
    const res = await db.leads.storageInstance.bulkWrite(page.map((document) => ({ document })), 'replication-downstream-bench');
    if (res.error.length > 0) throw new Error(`${res.error.length} write errors`);
    const rows = page.map((d) => {
      const { _meta: _m, _rev: _r, _attachments: _a, ...docData } = d;
      return { document: { id: `${d.id}|0`, isCheckpoint: '0', itemId: d.id, docData, _attachments: {}, _deleted: false, _rev: `1-${d.id.slice(-8)}`, _meta: { lwt: now() } } };
    });
    const m = await meta.bulkWrite(rows as never, 'replication-down-write-meta');
    if (m.error.length > 0) throw new Error(`${m.error.length} meta write errors`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  await meta.close();
  await db.close();
  return { seconds, docsPerSecond: Math.round(count / seconds), cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

async function migrateChild(dir: string) {
  const t0 = performance.now();
  let calls = 0;
  const r = await migrateFromPersistedMemory({ directory: dir, databaseName: NAME, textSearch: { leads: LEAD_QUERY_FIELDS }, onProgress: () => calls++ });
  if (!r.migrated) throw new Error(r.reason);
  return { seconds: (performance.now() - t0) / 1000, documents: r.documents, progressCalls: calls, rss: mem().rss };
}

async function reopenChild(kind: Kind, dir: string) {
  const t0 = performance.now();
  const db = await openDb(kind, dir);
  const openMs = performance.now() - t0;
  const first = await db.leads.find({ selector: {}, sort: [{ createdAt: 'desc' }], limit: 50 }).exec();
  const firstRowsMs = performance.now() - t0;
  const m = mem();
  const t1 = performance.now();
  const count = await db.leads.count().exec();
  const countMs = performance.now() - t1;
  const t2 = performance.now();
  const page10 = await db.leads.find({ selector: {}, sort: [{ createdAt: 'desc' }], skip: 450, limit: 50 }).exec();
  const page10Ms = performance.now() - t2;
  await db.close();
  return { openMs, firstRowsMs, rows: first.length, newest: first[0]?.createdAt, rss: m.rss, heap: m.heapUsed, count, countMs, page10Ms, page10Rows: page10.length };
}

async function searchChild(dir: string) {
  const db = await openDb('sqlite', dir);
  const leads = sqliteInstanceOf<Lead>(db.leads.storageInstance);
  if (!leads) throw new Error('not the SQLite storage');
  const order = { index: ['createdAt'], direction: 'desc' as const };
  const out: Record<string, { p50: number; p99: number; rows: number }> = {};
  for (const text of ['smith', 'okafor-9', 'kowalski-4242', 'a', 'zq']) {
    leads.searchText(text, 50, order);
    const times: number[] = [];
    let rows = 0;
    for (let i = 0; i < 100; i++) {
      const t = performance.now();
      rows = leads.searchText(text, 50, order).length;
      times.push(performance.now() - t);
    }
    out[text] = { p50: percentile(times, 0.5), p99: percentile(times, 0.99), rows };
  }
  const m = mem();
  await db.close();
  return { ...out, rss: m.rss };
}

/** This file bundled as the app bundles its backend (packages stay imports). */
async function bundle(): Promise<string> {
  const { build } = await import('esbuild');
  const checkout = fileURLToPath(new URL('../../..', import.meta.url)).replace(/[^A-Za-z0-9]+/g, '-');
  const outfile = fileURLToPath(new URL(`../../../node_modules/.cache/outreach-crm-bench/${checkout}sqlite-storage-measure.mjs`, import.meta.url));
  await build({ entryPoints: [fileURLToPath(import.meta.url)], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node22.12', packages: 'external', logLevel: 'warning' });
  return outfile;
}

async function child<T>(script: string, args: readonly string[]): Promise<T> {
  const proc = spawn(process.execPath, ['--expose-gc', script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((r) => proc.once('exit', r));
  const line = out.split('\n').find((l) => l.startsWith('RESULT '));
  if (code !== 0 || !line) throw new Error(`child ${args.join(' ')} failed (${code}): ${out}`);
  return JSON.parse(line.slice('RESULT '.length)) as T;
}

const mb = (n: number) => `${Math.round(n / 1e6)} MB`;
const ms = (n: number) => `${n < 10 ? n.toFixed(2) : Math.round(n)} ms`;
const load = () => `load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`;

async function main(): Promise<void> {
  const replicateOnly = process.argv[2] === 'replicate-only';
  const count = Number(process.argv[replicateOnly ? 3 : 2] ?? 100_000);
  const script = await bundle();
  if (replicateOnly) {
    const dir = mkdtempSync(join(tmpdir(), 'sqlite-replicate-'));
    try {
      const r = await child<Awaited<ReturnType<typeof replicateChild>>>(script, ['replicate', dir, String(count)]);
      process.stdout.write(`sqlite: ${count} leads stored as pulled pages (collection, then meta instance): ${r.seconds.toFixed(1)} s, ${r.docsPerSecond} docs/s, CPU ${r.cpuSeconds.toFixed(1)} s (${load()})\n`);
      for (const l of spaceLines(sqliteFilePath(dir, NAME), count)) process.stdout.write(`  ${l}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  const root = mkdtempSync(join(tmpdir(), 'sqlite-measure-'));
  const line = (t: string) => process.stdout.write(`${t}\n`);
  try {
    for (const kind of ['sqlite', 'persisted-memory'] as const) {
      const dir = join(root, kind);
      const w = await child<Awaited<ReturnType<typeof writeChild>>>(script, ['write', kind, dir, String(count)]);
      const file = kind === 'sqlite' ? sqliteFilePath(dir, NAME) : join(dir, `${NAME}.sqlite`);
      line(`${kind}: wrote ${count} leads in pages of ${PAGE}: ${w.seconds.toFixed(1)} s, ${w.docsPerSecond} docs/s; then rss ${mb(w.rss)}, heap ${mb(w.heap)} (after a GC ${mb(w.rssAfterGc)}, ${mb(w.heapAfterGc)}); file ${mb(statSync(file).size)} (${load()})`);
      const r = await child<Awaited<ReturnType<typeof reopenChild>>>(script, ['reopen', kind, dir]);
      line(`${kind}: reopen in a fresh process to the first ${r.rows} leads newest first (RxDB query): ${ms(r.firstRowsMs)} (open ${ms(r.openMs)}), rss ${mb(r.rss)}, heap ${mb(r.heap)}; count() ${r.count} in ${ms(r.countMs)}; rows 451-500 ${ms(r.page10Ms)} (${load()})`);
      if (kind === 'sqlite') {
        const s = await child<Record<string, { p50: number; p99: number; rows: number } | number>>(script, ['search', dir]);
        for (const [text, v] of Object.entries(s)) if (typeof v === 'object') line(`${kind}: text search ${JSON.stringify(text)} newest first, 50 rows: p50 ${ms(v.p50)}, p99 ${ms(v.p99)} (${v.rows} rows)`);
      } else {
        const m = await child<Awaited<ReturnType<typeof migrateChild>>>(script, ['migrate', dir]);
        line(`migration of that persisted-memory file into the SQLite storage: ${m.documents} rows in ${m.seconds.toFixed(1)} s (${m.progressCalls} progress calls), rss ${mb(m.rss)} (${load()})`);
        const again = await child<Awaited<ReturnType<typeof reopenChild>>>(script, ['reopen', 'sqlite', dir]);
        line(`sqlite, migrated file: reopen to the first ${again.rows} leads newest first: ${ms(again.firstRowsMs)}, rss ${mb(again.rss)}; count() ${again.count}`);
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function childMain(mode: string, args: string[]): Promise<unknown> {
  const [a, b, c] = args;
  if (mode === 'write' && (a === 'sqlite' || a === 'persisted-memory') && b && c) return writeChild(a, b, Number(c));
  if (mode === 'reopen' && (a === 'sqlite' || a === 'persisted-memory') && b) return reopenChild(a, b);
  if (mode === 'search' && a) return searchChild(a);
  if (mode === 'migrate' && a) return migrateChild(a);
  if (mode === 'replicate' && a && b) return replicateChild(a, Number(b));
  throw new Error(`usage: sqlite-storage-measure [LEADS] | write KIND DIR N | reopen KIND DIR | search DIR | migrate DIR`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [mode, ...rest] = process.argv.slice(2);
  // As the desktop process does (local-db.ts): V8's young generation stays small while loading.
  limitYoungGeneration();
  const run = mode === 'write' || mode === 'reopen' || mode === 'search' || mode === 'migrate' || mode === 'replicate' ? childMain(mode, rest).then((r) => process.stdout.write(`RESULT ${JSON.stringify(r)}\n`)) : main();
  run.catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
