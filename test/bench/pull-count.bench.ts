/**
 * What the pull's `count=true` costs the sync server (the "m" of a desktop's "Syncing leads: n of
 * m"): a workspace of BENCH_LEADS leads (default 100k; BENCH_LEADS=1000000 for the 1M figures) beside
 * a foreign one of a tenth as many, on embedded PGlite and, with DATABASE_URL, PostgreSQL in a fresh
 * schema. Timed straight on the database, the two reads the pull route runs
 * (sync-server/replication-changes.ts): the first page (2,000 documents, from no checkpoint) without
 * and with the count, alternated, median of BENCH_REPEAT (default 5) each; the same from the middle
 * and from the end (a desktop that is up to date); right after the load, as a team meets it (the
 * benchmark runs no VACUUM: PostgreSQL's autovacuum is off on this machine, so no page is marked
 * all-visible and the count reads the table's rows beside the index). Prints the plan of the
 * counting statement too.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { newLead } from '../../shared/model/factories.ts';
import type { LeadGroup } from '../../shared/model/index.ts';
import { createWorkspace } from '../../sync-server/admin.ts';
import { openDatabase } from '../../sync-server/db.ts';
import type { OpenOptions, SqlDatabase } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { changesSince, changesSinceCounted } from '../../sync-server/replication-changes.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/deterministic.ts';
import { scratchSchemas } from './support/scratch-schemas.ts';

const LEADS = Number(process.env.BENCH_LEADS ?? 100_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);
const PAGE = 2000;

const line = (s: string) => process.stdout.write(`${s}\n`);
const load = () => `load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} on 2 cores`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** `n` leads for `workspaceId`, in commits of 5,000. */
async function addLeads(db: PgDatabase, workspaceId: string, n: number): Promise<void> {
  const store = db.forWorkspace(workspaceId);
  const group = (await store.query('leadGroups', { limit: 1 })).docs[0] as LeadGroup;
  const now = '2026-11-29T00:00:00.000Z';
  for (let done = 0; done < n; done += 5000) {
    const leads = Array.from({ length: Math.min(5000, n - done) }, (_, k) => {
      const i = done + k;
      return newLead({ id: randomUUID(), workspaceId, now }, group.id, {
        firstName: `First${i % 500}`,
        lastName: `Last${i % 977}`,
        email: `lead${i}@company${i % 997}.example`,
        company: `Company ${i % 997}`,
        jobTitle: 'VP Sales',
        socialUrl: `https://social.example/in/lead-${i}`,
      });
    });
    await store.commit(leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })));
  }
}

async function measure(name: string, open: OpenOptions, cleanup: () => Promise<void>): Promise<void> {
  const sql: SqlDatabase = await openDatabase(open);
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const deps = { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(5) };
    const ours = await createWorkspace(db, { name: 'Counted', ownerEmail: 'count@bench.test' }, deps);
    const foreign = await createWorkspace(db, { name: 'Foreign', ownerEmail: 'foreign@bench.test' }, deps);
    const t0 = performance.now();
    // Interleaved in seq with the foreign workspace's leads, as two teams writing at once would be.
    for (let done = 0; done < LEADS; done += 50_000) {
      await addLeads(db, ours.workspaceId, Math.min(50_000, LEADS - done));
      await addLeads(db, foreign.workspaceId, Math.min(5_000, Math.ceil((LEADS - done) / 10)));
    }
    line(`[${name}] seeded ${LEADS} leads (and ${Math.ceil(LEADS / 10)} of another workspace) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const ws = ours.workspaceId;
    const seqs = await sql.query<{ mid: string | number; top: string | number }>(
      `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY seq) AS mid, max(seq) AS top FROM documents WHERE collection = 'leads' AND workspace_id = $1`,
      [ws],
    );
    const from: [string, number][] = [
      ['no checkpoint', 0],
      ['the middle', Number(seqs[0]?.mid ?? 0)],
      ['the end (up to date)', Number(seqs[0]?.top ?? 0)],
    ];
    for (const state of ['as loaded'] as const) {
      for (const [label, after] of from) {
        const plain: number[] = [];
        const counted: number[] = [];
        let remaining = -1;
        for (let i = 0; i < REPEAT; i++) {
          let t = performance.now();
          await changesSince(sql, ws, 'leads', after, PAGE);
          plain.push(performance.now() - t);
          t = performance.now();
          remaining = (await changesSinceCounted(sql, ws, 'leads', after, PAGE)).remaining;
          counted.push(performance.now() - t);
        }
        const extra = median(counted) - median(plain);
        line(
          `[${name}] ${state}, a page of ${PAGE} from ${label}: ${median(plain).toFixed(1)} ms, with count=true ${median(counted).toFixed(1)} ms ` +
            `(the count: ${extra.toFixed(1)} ms for ${remaining} remaining; ${load()})`,
        );
      }
      const plan = await sql.query<Record<string, string>>(
        `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT count(*) FROM documents WHERE collection = 'leads' AND workspace_id = $1 AND seq > $2::bigint`,
        [ws, 0],
      );
      for (const row of plan) line(`[${name}] ${state} plan: ${Object.values(row)[0] ?? ''}`);
    }
  } finally {
    await sql.close();
    await cleanup();
  }
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pull-count-'));
  await measure('PGlite', { dataDir: dir }, async () => rmSync(dir, { recursive: true, force: true }));
  const url = process.env.DATABASE_URL;
  if (url) {
    const schemas = scratchSchemas(url, 'pullcount');
    await measure('PostgreSQL', { ...schemas.open(), poolSize: 2 }, schemas.cleanup);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
