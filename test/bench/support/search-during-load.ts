/**
 * Lead search during a local bulk load (an import into an empty list, its index builds held back)
 * and after its builds: BENCH_LEADS (100k) leads committed in the import dialog's 5,000-lead calls
 * (as search-ties.ts writes them), then searched with the desktop bench's variants (p50/p99 of 20
 * runs each) before and after finishLoading. For a change to what a load leaves out: what a user
 * searching during an import meets (`npx tsx test/bench/support/search-during-load.ts`).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLocalDatabase } from '../../../electron/backend/local-db.ts';
import { LOAD_TUNING } from '../../../electron/backend/storage/sqlite/doc-table.ts';
import { sqliteInstanceOf } from '../../../electron/backend/storage/sqlite/storage.ts';
import type { Lead } from '../../../shared/model/index.ts';
import { execute } from '../../../shared/ops/execute.ts';
import { nodeSecrets } from '../../../sync-server/secrets.ts';
import { seededRandom } from '../../support/deterministic.ts';
import { searchVariants } from '../desktop.bench.ts';
import { benchWorkspace, CALL, fillLeads } from './local-leads.ts';

const LEADS = Number(process.env.BENCH_LEADS ?? 100_000);
const RUNS = 20;
const line = (s: string): void => void process.stdout.write(`${s}\n`);
const pct = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
LOAD_TUNING.quietMs = 1e9;
const dir = mkdtempSync(join(tmpdir(), 'sdl-'));
const c = benchWorkspace('Search during a load');
const actor = { workspaceId: c.workspaceId, memberId: c.ownerId, role: 'owner' as const };
const db = await openLocalDatabase({ dir, workspaceId: c.workspaceId, actor });
try {
  // One creation time per call, as the import gives its leads.
  await fillLeads(db, c, LEADS, (_i, done) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + (done / CALL) * 60_000).toISOString());
  const env = { actor: db.actor, store: db.store, clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, random: seededRandom(3), secrets: nodeSecrets, channels: null };
  const hot = (await db.store.query('tags', { where: { op: 'eq', field: 'name', value: 'Hot' } })).docs[0]?.id ?? 'all';
  const table = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance)?.internalsForTests.table;
  for (const when of ['during the load', 'after its builds']) {
    if (when !== 'during the load') await table?.finishLoading();
    const all: number[] = [];
    for (const [name, input] of searchVariants(hot, LEADS)) {
      await execute('campaigns.leads.search', input, env);
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await execute('campaigns.leads.search', input, env);
        times.push(performance.now() - t);
      }
      all.push(...times);
      line(`  ${when} ${name}: p50 ${pct(times, 0.5).toFixed(2)} ms, p99 ${pct(times, 0.99).toFixed(2)} ms`);
    }
    line(`${when}: all p50 ${pct(all, 0.5).toFixed(2)} ms, p99 ${pct(all, 0.99).toFixed(2)} ms (loading ${String(table?.isLoading)}, load ${loadavg()[0]?.toFixed(1)})`);
  }
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
