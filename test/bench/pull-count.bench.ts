/**
 * What the pull's `count=true` costs the sync server (the "m" of a desktop's "Syncing leads: n of
 * m"): a workspace of BENCH_LEADS leads (default 100k; BENCH_LEADS=1000000 for the 1M figures) beside
 * a foreign one of a tenth as many, on embedded PGlite and, with DATABASE_URL, PostgreSQL in a fresh
 * schema, both filled through the sync server's import as teams fill them (`seed` below). Timed
 * straight on the database once the server has stopped, the two reads the pull route runs
 * (sync-server/replication-changes.ts): the first page (2,000 documents, from no checkpoint) without
 * and with the count, alternated, median of BENCH_REPEAT (default 5) each; the same from the middle
 * and from the end (a desktop that is up to date); right after the load, as a team meets it (the
 * benchmark runs no VACUUM: PostgreSQL's autovacuum is off on this machine, so no page is marked
 * all-visible and the count reads the table's rows, by whatever plan the statistics the server
 * gathered during the import choose). Prints the plan of the counting statement too.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createWorkspace } from '../../sync-server/admin.ts';
import { openDatabase } from '../../sync-server/db.ts';
import type { OpenOptions, SqlDatabase } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { changesSince, changesSinceCounted } from '../../sync-server/replication-changes.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/deterministic.ts';
import { startServer } from '../integration/sync-processes.ts';
import type { ServerEnv } from '../integration/sync-processes.ts';
import { EXPORT_HEADERS, exportRow } from './support/generated-export.ts';
import { importCalls, postImportCalls } from './support/http-seed.ts';
import { scratchSchemas } from './support/scratch-schemas.ts';

const LEADS = Number(process.env.BENCH_LEADS ?? 100_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);
const PAGE = 2000;

const line = (s: string) => process.stdout.write(`${s}\n`);
const load = () => `load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} on 2 cores`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** `n` calls of the dialog's import (fewer once none is left). */
function take(calls: Iterator<string>, n: number): string[] {
  const out: string[] = [];
  while (out.length < n) {
    const next = calls.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

/**
 * Two workspaces filled as teams fill them, through the sync server's API on a fresh database: the
 * workspaces made as the CLI's create-workspace makes them, then their leads (generated-export.ts
 * rows) through campaigns.leads.import in the dialog's 5,000-row calls, ten of ours to one of the
 * other team's (their documents interleaved in seq, as two teams importing at once would leave
 * them). The server runs in a process of its own and is stopped once the import ends.
 */
async function seed(name: string, open: OpenOptions, server: ServerEnv): Promise<{ ws: string }> {
  const sql = await openDatabase(open);
  const made: { workspaceId: string; apiKey: string }[] = [];
  try {
    await migrate(sql);
    const db = new PgDatabase(sql);
    const deps = { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(5) };
    made.push(await createWorkspace(db, { name: 'Counted', ownerEmail: 'count@bench.test' }, deps));
    made.push(await createWorkspace(db, { name: 'Foreign', ownerEmail: 'foreign@bench.test' }, deps));
  } finally {
    await sql.close();
  }
  const [ours, foreign] = made as [{ workspaceId: string; apiKey: string }, { workspaceId: string; apiKey: string }];
  const running = await startServer(server);
  try {
    const group = async (key: string): Promise<string> => {
      const res = await fetch(`${running.url}/leadGroups.getAll`, { headers: { authorization: `Bearer ${key}` } });
      const id = ((await res.json()) as { leadGroups?: { id: string }[] }).leadGroups?.[0]?.id;
      if (!id) throw new Error(`leadGroups.getAll answered ${res.status} without a list`);
      return id;
    };
    const file = (rows: number) => ({ headers: EXPORT_HEADERS, row: exportRow, rows });
    const foreignRows = Math.ceil(LEADS / 10);
    const ourCalls = importCalls(file(LEADS), await group(ours.apiKey), { onPossibleDuplicate: 'create' });
    const theirCalls = importCalls(file(foreignRows), await group(foreign.apiKey), { onPossibleDuplicate: 'create' });
    const t0 = performance.now();
    let created = 0;
    let theirs = 0;
    for (;;) {
      const mine = take(ourCalls, 10);
      const other = take(theirCalls, 1);
      if (mine.length === 0 && other.length === 0) break;
      for (const [key, calls] of [[ours.apiKey, mine], [foreign.apiKey, other]] as const) {
        const run = await postImportCalls(running.url, key, calls, { label: name, verbose: process.env.BENCH_VERBOSE === '1' });
        if (run.failed > 0) throw new Error(`[${name}] ${run.failed} import calls failed`);
        if (key === ours.apiKey) created += run.leadIds.length;
        else theirs += run.leadIds.length;
      }
    }
    if (created !== LEADS || theirs !== foreignRows) throw new Error(`[${name}] the import made ${created} and ${theirs} leads of ${LEADS} and ${foreignRows} rows`);
    line(`[${name}] seeded ${LEADS} leads (and ${foreignRows} of another workspace) through the server's import in 5,000-row calls in ${((performance.now() - t0) / 1000).toFixed(1)} s (${load()})`);
  } finally {
    await running.stop();
  }
  return { ws: ours.workspaceId };
}

async function measure(name: string, open: OpenOptions, server: ServerEnv, cleanup: () => Promise<void>): Promise<void> {
  try {
    const { ws } = await seed(name, open, server);
    const sql: SqlDatabase = await openDatabase(open);
    try {
      await timings(name, sql, ws);
    } finally {
      await sql.close();
    }
  } finally {
    await cleanup();
  }
}

/** The two reads of the pull route, straight on the database the server left. */
async function timings(name: string, sql: SqlDatabase, ws: string): Promise<void> {
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
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pull-count-'));
  await measure('PGlite', { dataDir: dir }, { dataDir: dir }, async () => rmSync(dir, { recursive: true, force: true }));
  const url = process.env.DATABASE_URL;
  if (url) {
    const schemas = scratchSchemas(url, 'pullcount');
    const schema = schemas.open();
    // The server keeps its credentials key file in a data folder, even on PostgreSQL.
    const keys = mkdtempSync(join(tmpdir(), 'bench-pull-count-keys-'));
    await measure('PostgreSQL', { ...schema, poolSize: 2 }, { dataDir: keys, ...schema }, async () => {
      rmSync(keys, { recursive: true, force: true });
      await schemas.cleanup();
    });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
