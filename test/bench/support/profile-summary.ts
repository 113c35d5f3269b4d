/**
 * Where a V8 CPU profile's time went (a `.cpuprofile` as `node --cpu-prof` or the inspector's
 * Profiler writes it; BENCH_PROFILE of the desktop bench's sync child):
 *   npx tsx test/bench/support/profile-summary.ts FILE [TOP]
 *   npx tsx test/bench/support/profile-summary.ts FILE import   (the import bench's categories)
 *   npx tsx test/bench/support/profile-summary.ts FILE --tasks TASKS [TOP]   (what ran in each long
 *     task of the sync child's TASKS file, sync.long-tasks.json beside its profile, and in all)
 * prints the sampled time, the functions with the most self time, the functions with the most
 * total time (self and callees, each sample counted once per function however deep it recurses),
 * and self time by source (package or project file). Native calls (a better-sqlite3 statement, a
 * JSON.parse) count where V8 shows them: as their own frames, under the caller's name.
 */
import { readFileSync } from 'node:fs';

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

const short = (url: string): string => {
  if (!url) return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const at = url.search(/(electron|shared|sync-server|test)\//);
  return at >= 0 ? url.slice(at) : url.replace(/^file:\/\//, '');
};

/** A source for the by-source totals: a package name, a project file, or V8's own entries. */
const source = (n: Node): string => {
  const { url, functionName } = n.callFrame;
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName || '(anonymous)'}`;
  const s = short(url);
  if (s.startsWith('node:') || s.startsWith('internal')) return 'node internals';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 'node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? s);
  }
  return s;
};

/** A profile's nodes by id, each node's parent, and the sampled time (µs) of each node itself. */
function sampled(profile: Profile, keep: (atUs: number) => boolean = () => true): { byId: Map<number, Node>; parent: Map<number, number>; selfUs: Map<number, number>; totalUs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  let totalUs = 0;
  let atUs = profile.startTime;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    atUs += dt;
    if (!keep(atUs)) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
    totalUs += dt;
  });
  return { byId, parent, selfUs, totalUs };
}

/** `us` as milliseconds and as a share of `totalUs`, aligned for a table. */
const share = (us: number, totalUs: number): string => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / totalUs).toFixed(1).padStart(5)}%`;

export function summarize(profile: Profile, top = 30, keep?: (atUs: number) => boolean): string[] {
  const { byId, parent, selfUs, totalUs } = sampled(profile, keep);
  const key = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const bySource = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id);
    if (!n) continue;
    self.set(key(n), (self.get(key(n)) ?? 0) + us);
    bySource.set(source(n), (bySource.get(source(n)) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const a = byId.get(at);
      if (!a) break;
      const k = key(a);
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + us);
    }
  }
  const list = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${share(us, totalUs)}  ${k}`);
  return [
    `sampled ${(totalUs / 1000).toFixed(0)} ms`,
    'self time:',
    ...list(self, top),
    'total time (self and callees):',
    ...list(total, top * 2),
    'self time by source:',
    ...list(bySource, top),
  ];
}

/** A frame of a sample's stack, leaf first: its function, its file (as `short` gives it). */
type Frame = { fn: string; file: string };
/** A category of the by-category totals: the first whose test passes for a sample's stack. */
type Category = { name: string; test: (stack: readonly Frame[]) => boolean };

const inStack = (fn: string | null, file: string) => (stack: readonly Frame[]) => stack.some((f) => f.file.endsWith(file) && (fn === null || f.fn === fn));
/** A native call (a SQLite statement: better-sqlite3's functions have no script) made right from `fn` of `file`. */
const nativeFrom = (fn: string | null, file: string) => (stack: readonly Frame[]) => {
  const [leaf, caller] = stack;
  return leaf !== undefined && leaf.file === '' && !leaf.fn.startsWith('(') && caller !== undefined && caller.file.endsWith(file) && (fn === null || caller.fn === fn);
};

/** Where a 5,000-row call of campaigns.leads.import on the desktop's SQLite Store spends its time
 * (the import bench's BENCH_PROFILE profiles). */
export const IMPORT_CATEGORIES: readonly Category[] = [
  { name: 'garbage collection', test: (s) => s[0]?.fn === '(garbage collector)' },
  { name: 'storage: text index rows (FTS5 trigram inserts)', test: inStack('put', 'storage/sqlite/fts.ts') },
  { name: 'storage: COMMIT (WAL pages, fsync, FTS5 flush)', test: nativeFrom('sqliteTransaction', 'better-sqlite3/lib/methods/transaction.js') },
  // DocTable.write runs its rows in `writing` (the steps a pulled page spreads over turns of the loop).
  { name: 'storage: row writes in SQLite (row, Store columns, kept indexes, member rows)', test: (s) => inStack('write', 'storage/sqlite/doc-table.ts')(s) && (nativeFrom('writing', 'storage/sqlite/doc-table.ts')(s) || nativeFrom('write', 'storage/sqlite/doc-table.ts')(s) || nativeFrom('', 'storage/sqlite/doc-table.ts')(s)) },
  { name: 'storage: encode documents (doc-codec)', test: inStack('encode', 'storage/sqlite/doc-codec.ts') },
  { name: 'storage: reads (statements, decoding documents)', test: (s) => nativeFrom(null, 'storage/sqlite/doc-table.ts')(s) || nativeFrom(null, 'storage/sqlite/store-query.ts')(s) || inStack('decode', 'storage/sqlite/doc-codec.ts')(s) },
  { name: 'storage: Store column values and identity keys', test: (s) => inStack(null, 'storage/sqlite/store-columns.ts')(s) || inStack(null, 'storage/sqlite/index-columns.ts')(s) },
  { name: 'storage: load heads', test: inStack(null, 'storage/sqlite/load-heads.ts') },
  { name: 'storage: RxDB conflict check and stored reads (plan)', test: inStack('plan', 'storage/sqlite/instance.ts') },
  { name: "storage: the write's own JavaScript (row values, odd bits, cache, change event)", test: inStack('commitAtomically', 'storage/sqlite/instance.ts') },
  { name: 'Store commit: RxDB rows (revision, copy) and stored reads', test: inStack('commitNow', 'electron/backend/sqlite-store.ts') },
  { name: 'rules (schema, limits, references)', test: inStack('validateWrites', 'shared/rules/index.ts') },
  { name: 'look-ups of existing people (findLeads)', test: inStack('findLeads', 'shared/intake/find.ts') },
  { name: 'identity keys of the rows', test: (s) => inStack('keysOf', 'shared/intake/find.ts')(s) || inStack(null, 'shared/intake/identity.ts')(s) },
  { name: 'reading and mapping rows', test: (s) => inStack(null, 'shared/import/rows.ts')(s) || inStack(null, 'shared/import/fields.ts')(s) },
  { name: 'input check', test: inStack('admitted', 'shared/ops/execute.ts') },
  { name: 'Tx (staging, settle, writes)', test: inStack(null, 'shared/tx.ts') },
  { name: 'import loop (results, new leads, updates)', test: inStack('handler', 'shared/ops/campaigns.leads.import.ts') },
  { name: 'CSV parse (readCsvBytes, once per pass)', test: (s) => inStack(null, 'shared/import/file.ts')(s) || inStack(null, 'shared/import/csv.ts')(s) },
  { name: 'bench: rows as objects, JSON round trip of input and answer', test: inStack(null, 'test/bench/import.bench.ts') },
];

/** Sampled time by category (the first category whose test passes for the sample's stack). */
export function byCategory(profile: Profile, categories: readonly Category[]): string[] {
  const { byId, parent, selfUs, totalUs } = sampled(profile);
  const sums = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const stack: Frame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at);
      if (!n) break;
      stack.push({ fn: n.callFrame.functionName, file: short(n.callFrame.url) });
    }
    const name = categories.find((c) => c.test(stack))?.name ?? 'other';
    sums.set(name, (sums.get(name) ?? 0) + us);
  }
  return [...sums]
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => `  ${share(us, totalUs)}  ${name}`);
}

/** A stretch of the main thread's CPU between two ticks of the sync child's 2 ms timer (its
 * sync.long-tasks.json: hrtime µs, the profile's clock). */
type LongTask = { fromUs: number; toUs: number; cpuMs: number };

/** What the profile sampled within each long task, and within all of them together. */
export function summarizeTasks(profile: Profile, tasks: readonly LongTask[], top = 12): string[] {
  const out: string[] = [];
  const within = (t: LongTask) => (atUs: number) => atUs > t.fromUs && atUs <= t.toUs;
  for (const t of tasks) {
    out.push(`== task of ${t.cpuMs.toFixed(1)} ms CPU, ${((t.toUs - t.fromUs) / 1000).toFixed(1)} ms wall, ${((t.fromUs - profile.startTime) / 1e6).toFixed(2)} s into the profile`);
    out.push(...summarize(profile, top, within(t)).slice(0, 2 + top * 3 + 1));
  }
  out.push('== all long tasks together');
  out.push(...summarize(profile, top * 2, (atUs) => tasks.some((t) => within(t)(atUs))));
  return out;
}

const file = process.argv[2];
if (file) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  // `import` instead of a number: the import's categories (IMPORT_CATEGORIES); `--tasks FILE`:
  // what ran in the long tasks the sync child wrote beside its profile (sync.long-tasks.json).
  if (process.argv[3] === '--tasks') for (const l of summarizeTasks(profile, JSON.parse(readFileSync(process.argv[4] ?? '', 'utf8')) as LongTask[], Number(process.argv[5] ?? 12))) process.stdout.write(`${l}\n`);
  else if (process.argv[3] === 'import') for (const l of byCategory(profile, IMPORT_CATEGORIES)) process.stdout.write(`${l}\n`);
  else for (const l of summarize(profile, Number(process.argv[3] ?? 30))) process.stdout.write(`${l}\n`);
}
