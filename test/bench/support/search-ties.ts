/**
 * Local lead search on a desktop file whose leads share their creation time by import call (the
 * desktop bench's seed goes through the import: a call's 5,000 leads share one `createdAt`) against
 * the same leads with distinct creation times. Both files are written in the same row order (rowid =
 * the import's row order, ids random as the server makes them), then each is reopened and searched
 * with the desktop bench's variants (desktop.bench.ts searchVariants), p50/p99, and per search the
 * read() calls SQLite made (/proc/self/io syscr: pages it did not find in its own cache).
 *
 * `npx tsx test/bench/support/search-ties.ts` (BENCH_LEADS, default 100000; TIES=ties|distinct|both);
 * `... build DIR` writes the files into DIR and keeps them, `... search DIR` searches them again (a
 * change measured before and after on the same files).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { localDatabaseName, openLocalDatabase } from '../../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../../electron/backend/local-db.ts';
import { sqliteFilePath } from '../../../electron/backend/storage/sqlite/file.ts';
import { execute } from '../../../shared/ops/execute.ts';
import { nodeSecrets } from '../../../sync-server/secrets.ts';
import { seededRandom } from '../../support/deterministic.ts';
import { searchVariants } from '../desktop.bench.ts';
import { benchWorkspace, CALL, fillLeads } from './local-leads.ts';

const LEADS = Number(process.env.BENCH_LEADS ?? 100_000);
/** Which files to write: `ties`, `distinct` or `both`. */
const WHICH = process.env.TIES ?? 'both';
const RUNS = Number(process.env.SEARCH_RUNS ?? 42);
const DAY0 = Date.parse('2026-01-01T00:00:00.000Z');

const line = (s: string): void => void process.stdout.write(`${s}\n`);
const load = (): string => `load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`;
const percentile = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
const readCalls = (): number => Number(/syscr: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? NaN);
/** The read() calls of readCalls itself, left out of each count. */
const ownReads = ((): number => {
  const a = readCalls();
  return readCalls() - a;
})();

type Made = { dir: string; workspaceId: string; actor: LocalDatabase['actor'] };

async function build(root: string, ties: boolean): Promise<Made> {
  const dir = join(root, ties ? 'ties' : 'distinct');
  const c = benchWorkspace('Ties bench');
  const actor = { workspaceId: c.workspaceId, memberId: c.ownerId, role: 'owner' as const };
  const db = await openLocalDatabase({ dir, workspaceId: c.workspaceId, actor, synchronous: 'NORMAL' });
  try {
    // One creation time per call (the server's clock when the call ran), or one per lead.
    const edited = new Date(DAY0 + 400 * 86_400_000).toISOString();
    await fillLeads(db, c, LEADS, (i, done) => new Date(ties ? DAY0 + (done / CALL) * 60_000 : DAY0 + i * 1000).toISOString(), edited);
    await db.indexed();
  } finally {
    await db.close();
  }
  return { dir, workspaceId: c.workspaceId, actor };
}

async function search(m: Made, label: string): Promise<void> {
  const db = await openLocalDatabase({ dir: m.dir, workspaceId: m.workspaceId, actor: m.actor });
  try {
    await db.indexed();
    const env = { actor: db.actor, store: db.store, clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, random: seededRandom(3), secrets: nodeSecrets, channels: null };
    const hot = (await db.store.query('tags', { where: { op: 'eq', field: 'name', value: 'Hot' } })).docs[0]?.id ?? 'all';
    const all: number[] = [];
    const c0 = process.cpuUsage();
    for (const [name, input] of searchVariants(hot, LEADS)) {
      await execute('campaigns.leads.search', input, env);
      const times: number[] = [];
      const cpus: number[] = [];
      let reads = 0;
      let rows = 0;
      const v0 = process.cpuUsage();
      for (let i = 0; i < RUNS; i++) {
        const r0 = readCalls();
        const c = process.cpuUsage();
        const t = performance.now();
        const out = (await execute('campaigns.leads.search', input, env)) as { leads: unknown[] };
        times.push(performance.now() - t);
        const used = process.cpuUsage(c);
        cpus.push((used.user + used.system) / 1000);
        reads += readCalls() - r0 - ownReads;
        rows = out.leads.length;
      }
      const v = process.cpuUsage(v0);
      all.push(...times);
      line(`  ${label} search ${name}: p50 ${percentile(times, 0.5).toFixed(2)} ms, p99 ${percentile(times, 0.99).toFixed(2)} ms, CPU p50 ${percentile(cpus, 0.5).toFixed(2)} ms, mean ${((v.user + v.system) / 1000 / RUNS).toFixed(2)} ms (system ${(v.system / 1000 / RUNS).toFixed(2)}), ${(reads / RUNS).toFixed(0)} read() a search (${rows} rows)`);
    }
    const cpu = process.cpuUsage(c0);
    line(`${label}: all variants p50 ${percentile(all, 0.5).toFixed(2)} ms, p99 ${percentile(all, 0.99).toFixed(2)} ms, CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms (${load()})`);
  } finally {
    await db.close();
  }
}

/** Searches one file (`TIES=ties` or `distinct`) in this process; both, each in a fresh process of
 * its own, so neither search runs with the other file's pages or the other run's heap around. (This
 * once said a second database opened in the same process never answered: that was the storage's close
 * racing its worker thread, fixed since; both files of 5,000 leads searched in one process answered,
 * 2026-11-29 16:30 UTC.) */
async function searchFiles(root: string): Promise<void> {
  const made = JSON.parse(readFileSync(join(root, 'made.json'), 'utf8')) as [string, Made][];
  if (WHICH !== 'both') {
    for (const [label, m] of made) if (label.startsWith(WHICH)) await search(m, label);
    return;
  }
  for (const which of ['ties', 'distinct']) {
    const proc = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), 'search', root], { stdio: 'inherit', env: { ...process.env, TIES: which } });
    const code = await new Promise<number | null>((r) => proc.once('exit', r));
    if (code !== 0) throw new Error(`the search of the ${which} file failed (${code})`);
  }
}

async function main(): Promise<void> {
  // `build DIR` writes the files and keeps them, `search DIR` searches them (before and after a
  // change on the same files); without either, a temporary folder for both steps.
  const [mode, kept] = process.argv.slice(2);
  const root = (mode === 'build' || mode === 'search') && kept ? kept : mkdtempSync(join(tmpdir(), 'search-ties-'));
  try {
    if (mode !== 'search') {
      const made: [string, Made][] = [];
      for (const ties of WHICH === 'both' ? [true, false] : [WHICH === 'ties']) {
        const t0 = performance.now();
        const m = await build(root, ties);
        const label = ties ? `ties of ${CALL}` : 'distinct createdAt';
        line(`${label}: ${LEADS} leads written in ${((performance.now() - t0) / 1000).toFixed(1)} s, file ${(statSync(sqliteFilePath(m.dir, localDatabaseName(m.workspaceId))).size / 1e6).toFixed(0)} MB (${load()})`);
        made.push([label, m]);
      }
      writeFileSync(join(root, 'made.json'), JSON.stringify(made));
    }
    if (mode !== 'build') await searchFiles(root);
  } finally {
    if (mode !== 'build' && mode !== 'search') rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
