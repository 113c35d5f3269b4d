/** The migrated template the PGlite test databases are copied from (test/support/pglite-template.ts)
 * is the database a new folder gets from `migrate`: same tables, columns, indexes, functions,
 * extensions and applied migrations. A template left from other migrations would fail here. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../sync-server/db.ts';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { migrate } from '../../sync-server/migrate.ts';
import { copyMigratedTemplate } from '../support/pglite-template.ts';

const CATALOG = [
  `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2`,
  `SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2`,
  `SELECT conrelid::regclass::text AS rel, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`,
  `SELECT proname, pg_get_functiondef(oid) AS def FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND prokind = 'f' ORDER BY 1, 2`,
  `SELECT extname FROM pg_extension ORDER BY 1`,
  `SELECT name FROM schema_migrations ORDER BY 1`,
];

async function catalog(db: SqlDatabase): Promise<unknown[][]> {
  const out: unknown[][] = [];
  for (const q of CATALOG) out.push(await db.query(q));
  return out;
}

const dirs: string[] = [];
const folder = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'crm-pglite-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the migrated PGlite template', () => {
  it('is the database migrate makes in a new folder, and migrate finds nothing left to do in a copy', async () => {
    const fresh = await openDatabase({ dataDir: folder() });
    let made: unknown[][];
    try {
      expect((await migrate(fresh)).length).toBeGreaterThan(0);
      made = await catalog(fresh);
    } finally {
      await fresh.close();
    }
    const dir = folder();
    await copyMigratedTemplate(dir);
    const copy = await openDatabase({ dataDir: dir });
    try {
      expect(await migrate(copy)).toEqual([]);
      expect(await catalog(copy)).toEqual(made);
      expect(made.map((rows) => rows.length > 0)).toEqual(CATALOG.map(() => true));
    } finally {
      await copy.close();
    }
  });

  it('is copied only into a new, empty folder', async () => {
    const dir = folder();
    await copyMigratedTemplate(dir);
    await expect(copyMigratedTemplate(dir)).rejects.toThrow(/not empty/);
  });
});
