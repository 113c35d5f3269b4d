/**
 * Desktop benchmark, against a real sync server process (PGlite) filled through its API as a team
 * fills it (`seed`: the leads imported in 5,000-row calls, then stages, tags and scores pushed):
 * - initial sync of 100k leads into an empty desktop: documents per second, and the ratio to
 *   fetching and parsing the same pull pages raw over HTTP from the same server in the same run
 *   (what replication adds on top);
 * - the desktop's memory after that sync, and reopening the synced desktop to its first rows; both
 *   in a child process that is only the desktop, bundled and run with plain node as the app's
 *   backend is (test/bench/support/desktop-child.ts; this process also seeds the server through its
 *   API, whose memory must not count);
 * - local campaigns.leads.search in the synced desktop once its indexes are built (p50/p99; target
 *   p50 <= 5 ms and p99 <= 20 ms; a common last name and a rare email fragment among the variants);
 * - live propagation desktop A -> server -> desktop B (p50; target < 250 ms on loopback), with two
 *   headless desktops in their own processes.
 * Every line prints its target and the machine's load average (other work shares the cores).
 * 100,000 leads by default; `BENCH_LEADS=1000000 npm run bench -- desktop` runs the 1M targets
 * (issue 22: reopen <= 300 ms at 1M, <= 150 ms at 100k; issue 27: rss <= 300 MB at 1M, <= 250 MB at
 * 100k). The memory line says what the rss is made of (test/bench/support/process-memory.ts); the
 * hosting lines after it run the same sync with the backend in a worker thread with capped heap
 * generations, as the app's main process runs it (electron/backend/backend-thread.ts), and with
 * BENCH_DESKTOP_RSS_VARIANTS=1 the other ways measured (issue 27, item 5).
 * `npx tsx test/bench/desktop.bench.ts` runs it alone; test/bench/run.ts calls run().
 * `BENCH_DESKTOP_SYNC_ONLY=1` stops after the sync and the file's bytes per lead (comparing sync
 * speed before and after a change without the minutes of search and propagation).
 * `BENCH_KEEP_DIR=1` keeps the data folders and prints where (the synced file, to look into).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BACKEND_OLD_GENERATION_MB, BACKEND_YOUNG_GENERATION_MB } from '../../electron/backend/backend-thread.ts';
import { localDatabaseName, openLocalDatabase } from '../../electron/backend/local-db.ts';
import { sqliteFilePath } from '../../electron/backend/storage/sqlite/file.ts';
import { spaceLines } from './support/sqlite-space.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import type { ReopenResult, SyncResult } from './support/desktop-child.ts';
import { cpuMs, PULL_BATCH } from './support/desktop-measure.ts';
import { formatBreakdown } from './support/process-memory.ts';
import { processCpuMs } from './support/process-cpu.ts';
import { seededRandom } from '../support/deterministic.ts';
import { importAll, pushLeadEdits } from './support/http-seed.ts';
import { person } from './support/bench-people.ts';
import { identifyKey } from '../../electron/backend/server-client.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead, Stage, Tag } from '../../shared/model/index.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { timeOrderedIds } from '../../shared/ids.ts';
// The server's modules (PGlite among them) are imported where used, so the desktop-only child
// processes below do not load them.

const LEADS = Number(process.env.BENCH_LEADS ?? process.env.BENCH_DESKTOP_LEADS ?? 100_000);
/** The issue's targets, by scale (the 1M ones apply from 1M leads): the initial sync's share of the
 * raw pull, the reopen's first rows, the rss after the sync. */
const TARGET = LEADS >= 1_000_000 ? { syncOfRaw: 0.5, reopenMs: 300, rss: 300e6 } : { syncOfRaw: 0.6, reopenMs: 150, rss: 250e6 };
const pctOfRaw = `${TARGET.syncOfRaw * 100}% of raw`;
/** A lead number present at any scale, whose email fragment `-<n>@` matches that lead only. */
const rareLead = (leads: number): number => Math.floor(leads * 0.48213);
const SEARCH_RUNS = 300;
const PROPAGATIONS = 40;


const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
};
const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 0)} ms`;
const line = (s: string) => process.stdout.write(`${s}\n`);
const load = (): string => `load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} on ${navigator.hardwareConcurrency} cores`;
const mb = (n: number) => `${(n / 1e6).toFixed(0)} MB`;

/** The desktop-only child processes run the desktop as it ships: test/bench/support/desktop-child.ts
 * bundled by esbuild the way `npm run build` bundles the desktop backend (packages stay imports),
 * started with plain `node`. Under tsx the same process held ~47 MB more (the TypeScript loader)
 * and loaded its modules more slowly, which the app does not. desktop-worker-host.ts, bundled beside
 * it, runs its sync in a worker thread, as the app's main process runs the backend. */
async function buildChild(): Promise<{ child: string; host: string }> {
  const { build } = await import('esbuild');
  // Inside the project, so the bundle's package imports resolve from its node_modules.
  // Named after this checkout: worktrees share one node_modules, and two benches running at once
  // from two checkouts would otherwise run each other's bundle.
  const checkout = createHash('sha256').update(fileURLToPath(new URL('../..', import.meta.url))).digest('hex').slice(0, 12);
  const out = (name: string) => fileURLToPath(new URL(`../../node_modules/.cache/outreach-crm-bench/${name}-${checkout}.mjs`, import.meta.url));
  const bundles = { child: out('desktop-child'), host: out('desktop-worker-host') };
  for (const [name, outfile] of [['desktop-child', bundles.child], ['desktop-worker-host', bundles.host]] as const) {
    await build({
      entryPoints: [fileURLToPath(new URL(`./support/${name}.ts`, import.meta.url))],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22.12',
      packages: 'external',
      logLevel: 'warning',
    });
  }
  return bundles;
}

let childScripts: Promise<{ child: string; host: string }> | null = null;

/** Runs the bundled desktop child in one of its modes (with extra node flags), or with `host` the
 * worker host with these arguments after the child's path; returns its RESULT line. */
async function child<T>(args: readonly string[], nodeFlags: readonly string[] = [], host = false): Promise<T> {
  childScripts ??= buildChild();
  const scripts = await childScripts;
  const entry = host ? [scripts.host, scripts.child] : [scripts.child];
  const proc = spawn(process.execPath, ['--expose-gc', ...nodeFlags, ...entry, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (b: Buffer) => (out += b.toString()));
  proc.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const code = await new Promise<number | null>((r) => proc.once('exit', r));
  const result = out.split('\n').find((l) => l.startsWith('RESULT '));
  if (code !== 0 || !result) throw new Error(`desktop bench child ${args[0] ?? ''} failed (${code}): ${err}${out}`);
  return JSON.parse(result.slice('RESULT '.length)) as T;
}

type Seeded = { bigKey: string; smallKey: string };

const DAY0 = Date.parse('2026-01-01T00:00:00.000Z');

/** What the team made of a lead: half at an open stage, 3 in 10 tagged, every one scored. */
export function work(rnd: () => number, stages: readonly Pick<Stage, 'id' | 'category'>[], tags: readonly Pick<Tag, 'id'>[]): Pick<Lead, 'pipelineStageId' | 'tagId' | 'leadFitScore' | 'rankingScore'> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const open = stages.filter((s) => s.category !== 'LOST' && s.category !== 'ON_HOLD');
  return {
    pipelineStageId: rnd() < 0.5 ? null : pick(open).id,
    tagId: rnd() < 0.3 ? pick(tags).id : null,
    leadFitScore: Math.floor(rnd() * 100),
    rankingScore: Math.round(rnd() * 1000) / 10,
  };
}

/** The seed's leads as documents, in commits of 5000: for the desktop seeded locally only. */
function* leadBatches(workspaceId: string, groupId: string, stages: readonly Stage[], tags: readonly Tag[]): Generator<AnyWrite[]> {
  const rnd = seededRandom(99);
  for (let done = 0; done < LEADS; done += 5000) {
    const writes: AnyWrite[] = [];
    for (let i = done; i < Math.min(LEADS, done + 5000); i++) {
      const lead: Lead = newLead({ id: timeOrderedIds.uuid(), workspaceId, now: new Date(DAY0 + i * 60_000).toISOString() }, groupId, { ...person(i), ...work(rnd, stages, tags) });
      writes.push({ collection: 'leads', id: lead.id, before: null, after: lead });
    }
    yield writes;
  }
}

const TAGS = ['Hot', 'Warm', 'Cold'];
const TAG_COLOR = '#336699';

export const makeTags = (workspaceId: string): Tag[] =>
  TAGS.map((name) => ({ id: timeOrderedIds.uuid(), workspaceId, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', name, color: TAG_COLOR }));

/**
 * Two workspaces on the server's database, one with LEADS leads and one tiny, filled as a team fills
 * them: the workspaces and their subscriptions made as the operator's CLI makes them, then, through a
 * server started on that database, the tags (tags.create), the leads from a file through
 * campaigns.leads.import in the import dialog's 5,000-row calls, and the team's work on them (stages,
 * tags, scores) as a desktop pushes its edited leads (support/http-seed.ts). The server is stopped
 * afterwards; run() starts it again on the filled database.
 */
export async function seed(dataDir: string): Promise<Seeded> {
  const [{ createWorkspace, setSubscription }, { openDatabase }, { migrate }, { PgDatabase }, { startServer }] = await Promise.all([
    import('../../sync-server/admin.ts'),
    import('../../sync-server/db.ts'),
    import('../../sync-server/migrate.ts'),
    import('../../sync-server/pg-database.ts'),
    import('../integration/sync-processes.ts'),
  ]);
  const sql = await openDatabase({ dataDir });
  let big: { workspaceId: string; apiKey: string };
  let small: { workspaceId: string; apiKey: string };
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const deps = { clock: { now: () => new Date() }, ids: timeOrderedIds, secrets: nodeSecrets, random: seededRandom(7) };
    big = await createWorkspace(db, { name: 'Desktop bench', ownerEmail: 'bench@desktop.test' }, deps);
    small = await createWorkspace(db, { name: 'Propagation', ownerEmail: 'live@desktop.test' }, deps);
    for (const w of [big, small]) await setSubscription(db, { workspaceId: w.workspaceId, status: 'active' }, deps);
  } finally {
    await sql.close();
  }
  const server = await startServer({ dataDir });
  try {
    const api = async <T>(op: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${server.url}/${op}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${big.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!res.ok) throw new Error(`${op} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      return (await res.json()) as T;
    };
    const tags: { id: string }[] = [];
    for (const name of TAGS) tags.push(await api<{ id: string }>('tags.create', { name, color: TAG_COLOR }));
    const { stages } = await api<{ stages: { id: string; category: string }[] }>('pipelineStages.getAll');
    const group = (await api<{ leadGroups: { id: string }[] }>('leadGroups.getAll')).leadGroups[0];
    if (!group) throw new Error('The new workspace has no lead list.');
    const headers = ['First Name', 'Last Name', 'Email', 'Company', 'Title', 'Phone', 'Profile URL'];
    const row = (i: number): string[] => {
      const p = person(i);
      return [p.firstName, p.lastName, p.email, p.company, p.jobTitle, p.phone, p.socialUrl];
    };
    const t0 = performance.now();
    const imported = await importAll(server.url, big.apiKey, group.id, { headers, row, rows: LEADS }, 'desktop seed');
    const t1 = performance.now();
    const rnd = seededRandom(99);
    const now = new Date().toISOString();
    const edited = await pushLeadEdits(server.url, big.apiKey, (lead) => {
      const w = work(rnd, stages as Pick<Stage, 'id' | 'category'>[], tags);
      return { ...lead, ...w, stageSetManuallyAt: w.pipelineStageId === null ? lead.stageSetManuallyAt : now, updatedAt: now };
    });
    line(
      `seeded ${LEADS} leads on the server through its API in ${((performance.now() - t0) / 1000).toFixed(1)} s: the import in ${imported.calls} calls ${((t1 - t0) / 1000).toFixed(1)} s, ` +
        `the team's stages, tags and scores pushed for ${edited} leads ${((performance.now() - t1) / 1000).toFixed(1)} s (${load()})`,
    );
    return { bigKey: big.apiKey, smallKey: small.apiKey };
  } finally {
    await server.stop();
  }
}

/** Fetches and parses every leads pull page, storing nothing: the floor under replication. */
export async function rawPull(url: string, key: string): Promise<{ docs: number; bytes: number; seconds: number; cpuSeconds: number }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let checkpoint: unknown = null;
  let docs = 0;
  let bytes = 0;
  for (;;) {
    const q = new URLSearchParams({ limit: String(PULL_BATCH) });
    if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
    const res = await fetch(`${url}/replication/leads/pull?${q.toString()}`, { headers: { authorization: `Bearer ${key}`, 'x-schema-version': String(COLLECTIONS.leads.schema.version) } });
    const text = await res.text();
    bytes += text.length;
    const page = JSON.parse(text) as { documents: unknown[]; checkpoint: unknown };
    docs += page.documents.length;
    checkpoint = page.checkpoint;
    if (page.documents.length < PULL_BATCH) break;
  }
  return { docs, bytes, seconds: (performance.now() - t0) / 1000, cpuSeconds: cpuMs(c0) / 1000 };
}

/** The searches measured (name, campaigns.leads.search input) in a workspace of `leads` leads whose
 * tag "Hot" has id `hot` (also test/bench/support/search-ties.ts). */
export function searchVariants(hot: string, leads: number): [string, Record<string, unknown>][] {
  const rare = rareLead(leads);
  return [
    ['first page (newest first)', {}],
    ['text "smith" (common last name)', { query: 'smith' }],
    [`text "-${rare}@" (rare email fragment)`, { query: `-${rare}@` }],
    ['text "ann"', { query: 'ann' }],
    ['text "okafor-9"', { query: 'okafor-9' }],
    ['tag + stage', { tagId: hot, pipelineStage: 'CONTACTED' }],
    ['text + stage, by ranking', { query: 'acme', pipelineStage: 'NEW', sortBy: 'rankingScore', sortOrder: 'desc' }],
  ];
}

async function searchBench(db: LocalDatabase): Promise<void> {
  const env = {
    actor: db.actor,
    store: db.store,
    clock: { now: () => new Date() },
    ids: timeOrderedIds,
    random: seededRandom(3),
    secrets: nodeSecrets,
    channels: null,
  };
  // As a user meets it a while after the sync: the indexes a bulk load leaves out are built by then.
  const t0 = performance.now();
  await db.indexed();
  line(`  indexes left out by the sync built ${ms(performance.now() - t0)} after this process opened the desktop`);
  const hot = (await db.store.query('tags', { where: { op: 'eq', field: 'name', value: 'Hot' } })).docs[0]?.id ?? 'all';
  const variants = searchVariants(hot, LEADS);
  const all: number[] = [];
  for (const [name, input] of variants) {
    const times: number[] = [];
    let rows = 0;
    // Warm-up builds the indexes a variant needs (once per session, then maintained).
    await execute('campaigns.leads.search', input, env);
    for (let i = 0; i < SEARCH_RUNS / variants.length; i++) {
      const t = performance.now();
      const out = (await execute('campaigns.leads.search', input, env)) as { leads: unknown[] };
      times.push(performance.now() - t);
      rows = out.leads.length;
    }
    all.push(...times);
    line(`  search ${name}: p50 ${ms(percentile(times, 0.5))}, p99 ${ms(percentile(times, 0.99))} (${rows} rows)`);
  }
  // Right after an edit, as when a user changes a lead and the list refreshes.
  const after: number[] = [];
  const { docs } = await db.store.query('leads', { limit: 60 });
  for (const lead of docs) {
    await db.store.commit([{ collection: 'leads', id: lead.id, before: lead, after: { ...lead, jobTitle: `${lead.jobTitle}.` } }]);
    const t = performance.now();
    await execute('campaigns.leads.search', { query: 'okafor-9' }, env);
    after.push(performance.now() - t);
  }
  line(`  search right after an edit: p50 ${ms(percentile(after, 0.5))}, p99 ${ms(percentile(after, 0.99))}`);
  const ok = percentile(all, 0.5) <= 5 && percentile(all, 0.99) <= 20;
  line(`desktop: local campaigns.leads.search at ${LEADS} leads: p50 ${ms(percentile(all, 0.5))}, p99 ${ms(percentile(all, 0.99))} (target p50 <= 5 ms, p99 <= 20 ms: ${ok ? 'target met' : 'target NOT met'})`);
}

async function propagation(url: string, key: string, root: string): Promise<void> {
  const { HeadlessDesktop } = await import('../integration/sync-processes.ts');
  const [a, b] = await Promise.all([
    HeadlessDesktop.start({ server: url, key, dataDir: join(root, 'live-a') }),
    HeadlessDesktop.start({ server: url, key, dataDir: join(root, 'live-b') }),
  ]);
  try {
    await Promise.all([a.awaitSync(), b.awaitSync()]);
    const group = (await a.call<{ docs: { id: string }[] }>('$query', { collection: 'leadGroups', query: { limit: 1 } })).docs[0]?.id;
    const created = await a.call<{ leadIds: string[] }>('campaigns.leads.create', { leadGroupId: group, leads: [{ firstName: 'Live', email: 'live@example.test' }] });
    const leadId = created.leadIds[0] ?? '';
    await a.awaitSync();
    await b.call('$waitFor', { collection: 'leads', id: leadId, field: 'firstName', value: 'Live' });
    const times: number[] = [];
    for (let i = 0; i < PROPAGATIONS; i++) {
      const value = new Date(Date.UTC(2027, 0, 1) + i * 86_400_000).toISOString();
      const seen = b.call('$waitFor', { collection: 'leads', id: leadId, field: 'followUpAt', value, timeoutMs: 10_000 });
      await b.call('$status'); // the wait is registered once this answers
      const t = performance.now();
      await a.call('campaigns.leads.setLeadFollowUp', { leadId, followUpAt: value });
      await seen;
      times.push(performance.now() - t);
    }
    line(`desktop: live propagation A -> server -> B: p50 ${ms(percentile(times, 0.5))}, p99 ${ms(percentile(times, 0.99))} over ${PROPAGATIONS} edits (target p50 < 250 ms; includes the operation on A and two RPC hops)`);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

/**
 * The same sync again, right after the in-process one, with the backend hosted otherwise: in a worker
 * thread with its isolate's generations capped, as the app's main process hosts it
 * (electron/backend/backend-thread.ts), from a host thread that loads nothing of the backend
 * (desktop-worker-host.ts); with BENCH_DESKTOP_RSS_VARIANTS=1 also a worker with V8's default
 * limits (what the thread itself costs), with only the young generation capped, with the old one
 * capped at 512 MB, and a process of its own started with `--max-semi-space-size=8` (what
 * `utilityProcess.fork(..., { execArgv })` would run). rss and CPU are the whole process's, as for
 * the in-process line.
 */
async function hostingVariants(url: string, key: string, root: string, base: SyncResult): Promise<void> {
  type Variant = { name: string; args: string[]; flags?: string[]; host?: boolean };
  const worker = (young: number, old: number): string[] => [String(young), String(old)];
  const app = `worker thread as the app runs it (young generation ${BACKEND_YOUNG_GENERATION_MB} MB, old ${BACKEND_OLD_GENERATION_MB} MB)`;
  const variants: Variant[] = [{ name: app, args: worker(BACKEND_YOUNG_GENERATION_MB, BACKEND_OLD_GENERATION_MB), host: true }];
  if (process.env.BENCH_DESKTOP_RSS_VARIANTS === '1') {
    variants.push(
      { name: "worker thread, V8's default limits", args: worker(0, 0), host: true },
      { name: `worker thread, young generation ${BACKEND_YOUNG_GENERATION_MB} MB, old default`, args: worker(BACKEND_YOUNG_GENERATION_MB, 0), host: true },
      { name: `worker thread, young generation ${BACKEND_YOUNG_GENERATION_MB} MB, old 512 MB`, args: worker(BACKEND_YOUNG_GENERATION_MB, 512), host: true },
      { name: 'own process, --max-semi-space-size=8 (as utilityProcess.fork with execArgv would start it)', args: [], flags: ['--max-semi-space-size=8'] },
    );
  }
  const row = (name: string, r: SyncResult) =>
    `  ${name}: ${r.seconds.toFixed(1)} s, CPU ${r.cpuSeconds.toFixed(1)} s; rss 0.5 s after ${mb(r.rss)} (heap ${mb(r.heap)}), idle ${mb(r.rssIdle)}, after a forced GC ${mb(r.rssAfterGc)}` +
    (r.worker ? `; the main thread's own heap ${mb(r.worker.mainHeapTotal)} (${mb(r.worker.mainHeapUsed)} used)` : '');
  line(`desktop: memory after the same sync by how the backend is hosted, one run after the other (${load()}; target rss <= ${mb(TARGET.rss)}):`);
  line(row('in-process (above)', base));
  for (const [i, v] of variants.entries()) {
    const dir = join(root, `desktop-hosting-${i}`);
    try {
      const r = await child<SyncResult>(v.host ? [...v.args, url, key, dir] : ['sync-child', url, key, dir], v.flags, v.host);
      line(row(v.name, r));
      if (r.breakdownIdle) line(`    memory when idle: ${formatBreakdown(r.breakdownIdle)}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** Without the server's replication routes, the search is measured on a desktop seeded locally. */
async function localOnlySearch(root: string): Promise<void> {
  const c = workspaceCreation(timeOrderedIds, '2026-01-01T00:00:00.000Z', { name: 'Local bench', owner: { name: 'Bench', email: 'bench@local.test' }, subscriptionStatus: 'active' });
  const db = await openLocalDatabase({ dir: join(root, 'local-only'), workspaceId: c.workspaceId, actor: { workspaceId: c.workspaceId, memberId: c.ownerId, role: 'owner' } });
  try {
    await db.store.commit(c.writes);
    const stages = (await db.store.query('stages')).docs;
    const tags = makeTags(c.workspaceId);
    await db.store.commit(tags.map((t) => ({ collection: 'tags', id: t.id, before: null, after: t })));
    for (const writes of leadBatches(c.workspaceId, c.leadGroupId, stages, tags)) await db.store.commit(writes);
    await searchBench(db);
  } finally {
    await db.close();
  }
}

const secondsBetween = (before: number | null, after: number | null): number | null => (before === null || after === null ? null : (after - before) / 1000);

/** Whether the machine's cores could give the sync the CPU it used, at the target's rate: the
 * desktop's CPU for the sync and the server's for serving it (both on this machine's cores, as in
 * the bench) against the core-seconds the target leaves (the target's time times the cores). */
function cpuBudget(synced: SyncResult, serverSeconds: number, rawRate: number): string {
  const cores = availableParallelism();
  const targetSeconds = synced.leads / (TARGET.syncOfRaw * rawRate);
  const needed = synced.cpuSeconds + serverSeconds;
  return (
    `CPU budget at ${pctOfRaw}: the sync would take ${targetSeconds.toFixed(1)} s, ${(targetSeconds * cores).toFixed(1)} core-seconds on ${cores} cores; it used ${needed.toFixed(1)} ` +
    `(the desktop ${synced.cpuSeconds.toFixed(1)}, of which its main thread ${synced.mainCpuSeconds.toFixed(1)}, and the server ${serverSeconds.toFixed(1)}): ` +
    (needed > targetSeconds * cores
      ? `more than the cores give even if every thread ran in parallel, so the target needs less CPU, not only more parallelism`
      : `${synced.mainCpuSeconds > targetSeconds ? `within the cores, but the desktop's main thread alone needs more than the target's time` : 'within the cores'}`)
  );
}

export async function run(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'desktop-bench-'));
  const serverDir = join(root, 'server');
  let db: LocalDatabase | null = null;
  const seeded = await seed(serverDir);
  const { startServer } = await import('../integration/sync-processes.ts');
  const server = await startServer({ dataDir: serverDir });
  try {
    const routes = await fetch(`${server.url}/replication/collections`, { headers: { authorization: `Bearer ${seeded.bigKey}` } });
    if (!routes.ok) {
      line(`desktop: the sync server answers ${routes.status} to GET /replication/collections: initial sync and live propagation NOT measured; local search measured on a desktop seeded directly`);
      await localOnlySearch(root);
      return;
    }
    // The server's CPU (its process, from /proc) around the raw pull and around the sync's child:
    // the server serves nothing else meanwhile, so it is what serving the pages cost.
    const serverCpu = (): number | null => processCpuMs(server.process.pid);
    const rawServer0 = serverCpu();
    const raw = await rawPull(server.url, seeded.bigKey);
    const rawServerSeconds = secondsBetween(rawServer0, serverCpu());
    const rawRate = raw.docs / raw.seconds;
    line(
      `desktop: baseline, fetching and parsing the ${raw.docs} leads' pull pages (${PULL_BATCH} per page, ${mb(raw.bytes)}) raw over HTTP from the same server: ${raw.seconds.toFixed(1)} s, ${Math.round(rawRate)} docs/s; ` +
        `this process's CPU ${raw.cpuSeconds.toFixed(1)} s, the server's ${rawServerSeconds?.toFixed(1) ?? '?'} s (${load()})`,
    );
    const who = await identifyKey(server.url, seeded.bigKey);
    const dir = join(root, 'desktop');
    const syncServer0 = serverCpu();
    const synced = await child<SyncResult>(['sync-child', server.url, seeded.bigKey, dir]);
    const syncServerSeconds = secondsBetween(syncServer0, serverCpu());
    const rate = synced.leads / synced.seconds;
    const ok = (b: boolean) => (b ? 'target met' : 'target NOT met');
    line(
      `desktop: initial sync of ${synced.leads} leads into an empty desktop: ${synced.seconds.toFixed(1)} s, ${Math.round(rate)} docs/s = ${Math.round((100 * rate) / rawRate)}% of raw ` +
        `(target >= ${pctOfRaw}: ${ok(rate >= TARGET.syncOfRaw * rawRate)}; the desktop process's CPU ${synced.cpuSeconds.toFixed(1)} s, its main thread's ${synced.mainCpuSeconds.toFixed(1)} s; ` +
        `the indexes the load left out built ${synced.indexedSeconds.toFixed(1)} s later; ${load()})`,
    );
    if (syncServerSeconds !== null) line(`  ${cpuBudget(synced, syncServerSeconds, rawRate)}`);
    line(
      `desktop: memory of the desktop process 0.5 s after that sync: rss ${mb(synced.rss)}, heap ${mb(synced.heap)} (target rss <= ${mb(TARGET.rss)}: ${ok(synced.rss <= TARGET.rss)}); ` +
        `once its indexes were built and it sat idle 10 s: rss ${mb(synced.rssIdle)}; after a forced GC (for reference) rss ${mb(synced.rssAfterGc)}, heap ${mb(synced.heapAfterGc)}`,
    );
    if (synced.breakdown) line(`  memory 0.5 s after the sync: ${formatBreakdown(synced.breakdown)}`);
    if (synced.breakdownIdle) line(`  memory when idle: ${formatBreakdown(synced.breakdownIdle)}`);
    const blocked = (d: SyncResult['loopSync']) => `longest ${ms(d.maxMs)}, p99 ${ms(d.p99Ms)}, longest task in the main thread's CPU time ${ms(d.cpuMaxMs)}, longest GC pause ${ms(d.gcMaxMs)}`;
    line(
      `desktop: the desktop process's event loop blocked during that sync: ${blocked(synced.loopSync)}; ` +
        `during the index builds after it (${(synced.buildsMs / 1000).toFixed(1)} s from the worker's first index build to the last one's end, nothing before it): ${blocked(synced.loopBuilds)} ` +
        `(monitorEventLoopDelay, and process.threadCpuUsage between ticks of a 2 ms timer, which a loaded machine does not inflate; target longest <= 50 ms: ${ok(Math.max(synced.loopSync.maxMs, synced.loopBuilds.maxMs) <= 50)}; ${load()})`,
    );
    const cp = synced.wal.checkpoints;
    line(
      `desktop: the WAL during that sync (its pages, sampled every 100 ms from SQLite's shared memory): largest ${mb(synced.wal.maxBytes)}, mean ${mb(synced.wal.meanBytes)} (not yet copied into the file: ${mb(synced.wal.meanUncopiedBytes)}), ${mb(synced.wal.endBytes)} at the end; ` +
        `checkpoints: ${cp.passive} passive (${cp.passiveComplete} of them copied every page they found), ${cp.restart} RESTART holding the writes ${(cp.restartMs / 1000).toFixed(1)} s in all; largest WAL a checkpoint found ${mb(cp.maxWalBytes)}`,
    );
    line(
      `desktop: re-sort of the leads table by name (first 50) right after that sync: ${ms(synced.resortAfterSyncMs)}; during the index builds: ${ms(synced.resortDuringBuildsMs)} ` +
        `(target <= 300 ms: ${ok(Math.max(synced.resortAfterSyncMs, synced.resortDuringBuildsMs) <= 300)})`,
    );
    await hostingVariants(server.url, seeded.bigKey, root, synced);
    line(`desktop: bytes of the synced desktop's file by storage instance, table and index (SQLite's dbstat), per lead of ${synced.leads}:`);
    for (const l of spaceLines(sqliteFilePath(dir, localDatabaseName(who.workspaceId)), synced.leads)) line(`  ${l}`);
    if (process.env.BENCH_DESKTOP_SYNC_ONLY === '1') return;
    const reopened = await child<ReopenResult>(['reopen-child', dir, who.workspaceId, who.actor.memberId]);
    line(
      `desktop: reopening the synced desktop (${reopened.leads} leads) in a fresh process: open ${ms(reopened.openMs)}, first ${reopened.rows} rows of campaigns.leads.search ${ms(reopened.firstRowsMs)} ` +
        `(target <= ${TARGET.reopenMs} ms: ${ok(reopened.firstRowsMs <= TARGET.reopenMs)}; CPU ${ms(reopened.firstRowsCpuMs)}); rss then ${mb(reopened.rss)}, heap ${mb(reopened.heap)} (${load()})`,
    );
    db = await openLocalDatabase({ dir, workspaceId: who.workspaceId, actor: who.actor });
    await searchBench(db);
    await db.close();
    db = null;
    await propagation(server.url, seeded.smallKey, root);
  } finally {
    await db?.close();
    await server.stop();
    // BENCH_KEEP_DIR=1 keeps the data folders (the synced desktop's file, to look into).
    if (process.env.BENCH_KEEP_DIR === '1') line(`desktop: data kept in ${root}`);
    else rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
