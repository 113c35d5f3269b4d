/**
 * Child process for test/unit/sqlite-store-import-crash.test.ts (run with tsx): a desktop's local
 * database importing a file through campaigns.leads.import in calls of IMPORT_CALL rows, as the
 * import dialog does, until the parent kills it. `importer DIR`: the workspace, then `call <n>
 * <created>` after each call; the load's indexes are never built meanwhile (a quiet window longer
 * than the test), so the kill lands in the load.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { suggestMapping } from '../../shared/import/fields.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { OpInput } from '../../shared/ops/index.ts';
import type { Store } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { EXPORT_HEADERS, exportRow } from '../bench/support/generated-export.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { sequentialIds } from '../support/deterministic.ts';

/** Rows per call: a bulk write (BULK_ROWS or more new leads) each. */
export const IMPORT_CALL = 1500;
export const IMPORT_CALLS = 4;

/** The workspace both processes name (the parent computes it again, writes nothing). */
export const importWorkspace = () => workspaceCreation(sequentialIds(41), '2026-07-01T00:00:00.000Z', { name: 'Import crash', owner: { name: 'Owner', email: 'owner@crash.test' }, subscriptionStatus: 'active' });

/** Call `n` (0-based) of the file, as the dialog sends it. */
export function importCall(n: number, onExisting: 'fill_empty' | 'update'): OpInput<'campaigns.leads.import'> {
  const w = importWorkspace();
  const cells = Array.from({ length: IMPORT_CALL }, (_, i) => exportRow(n * IMPORT_CALL + i));
  const mapping = suggestMapping([...EXPORT_HEADERS], cells.slice(0, 50));
  const rows = cells.map((r) => Object.fromEntries(EXPORT_HEADERS.map((h, i) => [h, r[i] ?? ''])));
  return { leadGroupId: w.leadGroupId, rows, rowNumbers: rows.map((_, i) => n * IMPORT_CALL + i + 2), mapping, onExisting };
}

/** Runs one call of the import on `store`. */
export async function runImportCall(store: Store, n: number, onExisting: 'fill_empty' | 'update'): Promise<{ created: number; unchanged: number; updated: number }> {
  const w = importWorkspace();
  const actor = { workspaceId: w.workspaceId, memberId: w.ownerId, role: 'owner' as const };
  const env = { actor, store, clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, random: Math.random, secrets: nodeSecrets };
  const out = await execute('campaigns.leads.import', importCall(n, onExisting), env);
  return out.totals;
}

async function main(): Promise<void> {
  const [dir] = process.argv.slice(2);
  if (!dir) throw new Error('usage: sqlite-store-import.child.ts DIR');
  LOAD_TUNING.quietMs = 600_000;
  const w = importWorkspace();
  const db = await openLocalDatabase({ dir, workspaceId: w.workspaceId, actor: { workspaceId: w.workspaceId, memberId: w.ownerId, role: 'owner' } });
  await db.store.commit(w.writes);
  for (let n = 0; n < IMPORT_CALLS; n++) {
    const totals = await runImportCall(db.store, n, 'fill_empty');
    process.stdout.write(`call ${n} ${totals.created}\n`);
  }
  // Killed before it gets here.
  await new Promise(() => undefined);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}\n`);
    process.exit(1);
  });
}
