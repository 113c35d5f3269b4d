/**
 * The desktop benchmark's desktop-only child processes (test/bench/desktop.bench.ts bundles this file
 * with esbuild, as the app's backend is bundled, and runs it with plain node):
 *   sync-child URL KEY DIR                  an empty desktop syncs from the server; time and memory after
 *                                           (BENCH_HEAP_SNAPSHOT=path also writes a heap snapshot then;
 *                                           BENCH_PROFILE=dir writes the sync's CPU profile there,
 *                                           sync.cpuprofile, from startSync to in sync, and
 *                                           sync.long-tasks.json, the long tasks meanwhile: see
 *                                           profile-summary.ts --tasks)
 *   reopen-child DIR WORKSPACE MEMBER       a fresh process opens the synced desktop, first page of leads
 * Each prints one line `RESULT <json>`. Run as a worker thread (test/bench/support/desktop-worker-host.ts),
 * `workerData.args` is the mode and its arguments and the result is posted to the host thread.
 */
import { closeSync, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { openLocalDatabase } from '../../../electron/backend/local-db.ts';
import { startSync } from '../../../electron/backend/replication.ts';
import { sqliteInstanceOf } from '../../../electron/backend/storage/sqlite/storage.ts';
import type { StorageFile } from '../../../electron/backend/storage/sqlite/file.ts';
import { identifyKey } from '../../../electron/backend/server-client.ts';
import { keepWasmInBaseline } from '../../../electron/backend/wasm-tiering.ts';
import { execute } from '../../../shared/ops/execute.ts';
import { nodeSecrets } from '../../../sync-server/secrets.ts';
import { seededRandom } from '../../support/deterministic.ts';
import { cpuMs, PULL_BATCH } from './desktop-measure.ts';
import { startCpuProfile } from './cpu-profile.ts';
import { memoryBreakdown } from './process-memory.ts';
import type { MemoryBreakdown } from './process-memory.ts';
import { timeOrderedIds } from '../../../shared/ids.ts';


export type SyncResult = {
  leads: number;
  seconds: number;
  cpuSeconds: number;
  /** The main thread's part of cpuSeconds (the rest: the SQLite worker thread, V8's and libuv's). */
  mainCpuSeconds: number;
  indexedSeconds: number;
  /** A moment (0.5 s) after the sync, no forced collection. */
  rss: number;
  heap: number;
  /** What that rss is made of; null off Linux. */
  breakdown: MemoryBreakdown | null;
  /** Once the indexes a load leaves out are built and the process has been idle IDLE_MS (what the
   * app holds while the user works after a sync), still without a forced collection. */
  rssIdle: number;
  breakdownIdle: MemoryBreakdown | null;
  /** After a forced full collection, for reference (not a figure the app reaches by itself). */
  rssAfterGc: number;
  heapAfterGc: number;
  /** In a worker thread (desktop-worker-host.ts): the limits it ran with (0: V8's default), and the
   * host thread's own heap (its isolate's pages, which the breakdown's V8 figures, read in the
   * worker, leave out). */
  worker?: { youngMb: number; oldMb: number; mainHeapTotal: number; mainHeapUsed: number };
  /** The WAL during the sync, sampled every WAL_SAMPLE_MS (walSampler): the most it held, the mean,
   * the mean not yet copied into the file, at the end; and what the file's checkpoints did
   * (StorageFile.checkpointLog). */
  wal: { maxBytes: number; meanBytes: number; meanUncopiedBytes: number; endBytes: number; checkpoints: StorageFile['checkpointLog'] };
} & Responsiveness;
export type ReopenResult = { leads: number; openMs: number; firstRowsMs: number; firstRowsCpuMs: number; rows: number; rss: number; heap: number };

/** The event loop's longest blocks (monitorEventLoopDelay, ms) during the sync and during the index
 * builds after it, and a re-sort of the leads table by name asked for while the builds run. */
export type Responsiveness = {
  loopSync: LoopDelay;
  /** From the moment the file's worker thread starts the first index build the load left out to the
   * moment the last one is done (db.indexed()): the backend's loop while it builds, nothing of the
   * sync before it nor of the bench's own measuring (the memory read, the re-sort right after the
   * sync) before the builds begin. */
  loopBuilds: LoopDelay;
  /** How long that window was (ms). */
  buildsMs: number;
  /** campaigns.leads.search sorted by name (first 50), asked for right after the sync, and again
   * once the first index build has begun (LOAD_QUIET_MS later). */
  resortAfterSyncMs: number;
  resortDuringBuildsMs: number;
};
/** maxMs, p99Ms: monitorEventLoopDelay's, which on a loaded machine also counts the time the thread
 * waited for a core; cpuMaxMs: the most CPU time the main thread spent between two ticks of a 2 ms
 * timer (process.threadCpuUsage), the longest task whatever else runs on the machine. */
export type LoopDelay = { maxMs: number; p99Ms: number; cpuMaxMs: number; gcMaxMs: number };


const memory = () => {
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
};
/** A loop delay monitor sampling every 10 ms: its max is the longest block seen, within 10 ms. */
type Monitor = { h: ReturnType<typeof monitorEventLoopDelay>; timer: ReturnType<typeof setInterval>; cpuMaxUs: number; gc: PerformanceObserver; gcMaxMs: number; long: LongTask[] };
/** A stretch between two ticks of the 2 ms timer that took `cpuMs` of the main thread's CPU, from
 * `fromUs` to `toUs` (process.hrtime in µs: the clock of a V8 CPU profile's timestamps). */
export type LongTask = { fromUs: number; toUs: number; cpuMs: number };
/** With BENCH_PROFILE, the stretches of at least this much CPU (ms) are written beside the profile
 * (profile-summary.ts FILE --tasks TASKS says what ran in them). */
const LONG_TASK_MS = Number(process.env.BENCH_LONG_TASK_MS ?? 35);
const hrUs = (): number => Number(process.hrtime.bigint() / 1000n);
const threadCpuUs = (): number => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};
const loopMonitor = (): Monitor => {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let last = threadCpuUs();
  let lastAt = hrUs();
  const m: Monitor = {
    h,
    cpuMaxUs: 0,
    long: [],
    timer: setInterval(() => {
      const now = threadCpuUs();
      const at = hrUs();
      m.cpuMaxUs = Math.max(m.cpuMaxUs, now - last);
      if (now - last >= LONG_TASK_MS * 1000) m.long.push({ fromUs: lastAt, toUs: at, cpuMs: (now - last) / 1000 });
      last = now;
      lastAt = at;
    }, 2),
    // The longest garbage collection pause meanwhile (a block the backend's code did not ask for).
    gc: new PerformanceObserver((list) => {
      for (const e of list.getEntries()) m.gcMaxMs = Math.max(m.gcMaxMs, e.duration);
    }),
    gcMaxMs: 0,
  };
  m.gc.observe({ entryTypes: ['gc'] });
  return m;
};
const loopDelay = (m: Monitor): LoopDelay => {
  m.h.disable();
  clearInterval(m.timer);
  m.gc.disconnect();
  return { maxMs: m.h.max / 1e6, p99Ms: m.h.percentile(99) / 1e6, cpuMaxMs: m.cpuMaxUs / 1000, gcMaxMs: m.gcMaxMs };
};

/** How often the WAL is sampled during the sync. */
const WAL_SAMPLE_MS = 100;
/**
 * Samples a database file's WAL until stopped: the pages it holds (the wal-index header's mxFrame,
 * read from the `-shm` file: SQLite's shared memory, offset 16, native byte order) and how many of
 * them a checkpoint has not yet copied into the file (minus WalCkptInfo.nBackfill, offset 96), in
 * bytes. The WAL file's own size says little: it keeps its length (journal_size_limit) when it starts
 * over.
 */
const walSampler = (path: string): (() => { maxBytes: number; meanBytes: number; meanUncopiedBytes: number; endBytes: number }) => {
  const header = Buffer.alloc(100);
  let fd: number | null = null;
  let max = 0;
  let sum = 0;
  let uncopied = 0;
  let n = 0;
  let last = 0;
  const sample = (): void => {
    try {
      fd ??= openSync(`${path}-shm`, 'r');
      if (readSync(fd, header, 0, 100, 0) < 100) return;
    } catch {
      return;
    }
    // szPage: 1 stands for 65536. Read little-endian, the byte order of the machines the app runs on.
    const size = header.readUInt16LE(14);
    const page = size === 1 ? 65536 : size;
    const frames = header.readUInt32LE(16);
    const backfilled = header.readUInt32LE(96);
    last = frames * page;
    max = Math.max(max, last);
    sum += last;
    uncopied += Math.max(0, frames - backfilled) * page;
    n++;
  };
  const timer = setInterval(sample, WAL_SAMPLE_MS);
  return () => {
    clearInterval(timer);
    sample();
    if (fd !== null) closeSync(fd);
    return { maxBytes: max, meanBytes: n > 0 ? sum / n : 0, meanUncopiedBytes: n > 0 ? uncopied / n : 0, endBytes: last };
  };
};

/** How long the synced desktop stays idle before its memory is read again: past V8's memory
 * reducer, which starts 8 s after an allocation-heavy phase ends (--gc-memory-reducer-start-delay-ms). */
const IDLE_MS = 10_000;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

/** Child mode: an empty desktop syncs from the server; prints the time and the memory after it. */
async function syncChild(url: string, key: string, dir: string): Promise<SyncResult> {
  const who = await identifyKey(url, key);
  const db = await openLocalDatabase({ dir, workspaceId: who.workspaceId, actor: who.actor });
  const stopProfile = await startCpuProfile(process.env.BENCH_PROFILE, 'sync');
  const file = sqliteInstanceOf(db.rx.collections['leads']?.storageInstance)?.storageFile;
  if (!file) throw new Error('desktop-child: the leads collection is not on the SQLite storage');
  // The loop during the index builds the load left out: from the first build's start (the file's
  // worker announces it) to the last one's end (db.indexed(), below).
  let buildsLoop: Monitor | null = null;
  let buildsFrom = 0;
  const unwatchBuilds = file.watchBuilds((what) => {
    if (what === null || buildsLoop) return;
    buildsLoop = loopMonitor();
    buildsFrom = performance.now();
  });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const m0 = threadCpuUs();
  const syncLoop = loopMonitor();
  const walDuringSync = walSampler(file.path);
  const sync = await startSync({ db, serverUrl: url, apiKey: key, pullBatchSize: PULL_BATCH });
  await sync.awaitInSync();
  const seconds = (performance.now() - t0) / 1000;
  const cpuSeconds = cpuMs(c0) / 1000;
  const mainCpuSeconds = (threadCpuUs() - m0) / 1e6;
  const loopSync = loopDelay(syncLoop);
  const wal = { ...walDuringSync(), checkpoints: { ...file.checkpointLog } };
  await stopProfile();
  if (process.env.BENCH_PROFILE) writeFileSync(join(process.env.BENCH_PROFILE, 'sync.long-tasks.json'), JSON.stringify(syncLoop.long));
  const leads = await db.store.count('leads');
  // Memory as the app would hold it a moment after the sync (no forced collection).
  await new Promise((r) => setTimeout(r, 500));
  const settled = memory();
  const breakdown = memoryBreakdown();
  // The re-sort a user makes right after the sync (before the index builds), and again once they
  // have begun (when bulk writes have been quiet for LOAD_QUIET_MS, 1.5 s).
  const env = { actor: who.actor, store: db.store, clock: { now: () => new Date() }, ids: timeOrderedIds, random: seededRandom(3), secrets: nodeSecrets, channels: null };
  const resort = async (): Promise<number> => {
    const t = performance.now();
    await execute('campaigns.leads.search', { sortBy: 'fullName', sortOrder: 'asc', limit: 50 }, env);
    return performance.now() - t;
  };
  const resortAfterSyncMs = await resort();
  const sinceSync = performance.now() - t0 - seconds * 1000;
  await new Promise((r) => setTimeout(r, Math.max(0, 1700 - sinceSync)));
  const resortDuringBuildsMs = await resort();
  // The indexes a bulk load leaves out are built once pulls have been quiet for a moment.
  await db.indexed();
  const indexedSeconds = (performance.now() - t0) / 1000 - seconds;
  unwatchBuilds();
  const builds = buildsLoop as Monitor | null;
  const buildsMs = builds ? performance.now() - buildsFrom : 0;
  const loopBuilds = builds ? loopDelay(builds) : { maxMs: 0, p99Ms: 0, cpuMaxMs: 0, gcMaxMs: 0 };
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idle = memory();
  const breakdownIdle = memoryBreakdown();
  gc();
  const collected = memory();
  const snapshot = process.env.BENCH_HEAP_SNAPSHOT;
  if (snapshot) writeHeapSnapshot(snapshot);
  await sync.stop();
  await db.close();
  return {
    leads, seconds, cpuSeconds, mainCpuSeconds, indexedSeconds, rss: settled.rss, heap: settled.heap, breakdown, rssIdle: idle.rss, breakdownIdle,
    rssAfterGc: collected.rss, heapAfterGc: collected.heap, loopSync, loopBuilds, buildsMs, resortAfterSyncMs, resortDuringBuildsMs, wal,
  };
}

/** Child mode: a fresh process opens the synced desktop and asks for the leads table's first page. */
async function reopenChild(dir: string, workspaceId: string, memberId: string): Promise<ReopenResult> {
  const actor = { workspaceId, memberId, role: 'owner' as const };
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const db = await openLocalDatabase({ dir, workspaceId, actor });
  const openMs = performance.now() - t0;
  const env = { actor, store: db.store, clock: { now: () => new Date() }, ids: timeOrderedIds, random: seededRandom(3), secrets: nodeSecrets, channels: null };
  const first = (await execute('campaigns.leads.search', { limit: 50 }, env)) as { leads: unknown[] };
  const firstRowsMs = performance.now() - t0;
  const firstRowsCpuMs = cpuMs(c0);
  const leads = await db.store.count('leads');
  const m = memory();
  await db.close();
  return { leads, openMs, firstRowsMs, firstRowsCpuMs, rows: first.leads.length, rss: m.rss, heap: m.heap };
}

async function main(argv: readonly string[]): Promise<unknown> {
  const [mode, ...args] = argv;
  if (mode === 'sync-child') {
    const [url, key, dir] = args;
    if (!url || !key || !dir) throw new Error('usage: desktop-child sync-child URL KEY DIR');
    return syncChild(url, key, dir);
  }
  if (mode === 'reopen-child') {
    const [dir, workspaceId, memberId] = args;
    if (!dir || !workspaceId || !memberId) throw new Error('usage: desktop-child reopen-child DIR WORKSPACE MEMBER');
    return reopenChild(dir, workspaceId, memberId);
  }
  throw new Error(`desktop-child: unknown mode ${mode ?? '(none)'}`);
}

// The app's backend thread keeps wasm in V8's baseline compiler (backend-worker.ts); so does this
// backend, whichever way the bench hosts it.
keepWasmInBaseline();

if (!isMainThread) {
  // A worker of desktop-worker-host.ts: the result goes to the thread that started it, an error too
  // (the worker's 'error' event).
  const { args } = workerData as { args: string[] };
  void main(args).then((result) => parentPort?.postMessage(result));
} else main(process.argv.slice(2)).then(
  (result) => process.stdout.write(`RESULT ${JSON.stringify(result)}\n`),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
