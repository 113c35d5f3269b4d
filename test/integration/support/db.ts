/** Test databases: a fresh PGlite folder, or (when DATABASE_URL is set) a fresh schema on the real
 * PostgreSQL server; each is removed again by `cleanup`. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../../../sync-server/db.ts';
import type { OpenOptions, SqlDatabase } from '../../../sync-server/db.ts';
import { migrate } from '../../../sync-server/migrate.ts';
import { PgDatabase } from '../../../sync-server/pg-database.ts';
import { copyMigratedTemplate } from '../../support/pglite-template.ts';
import { afterAll, beforeAll } from 'vitest';

export type Backend = 'pglite' | 'postgres';

/** PGlite always; the real server too whenever DATABASE_URL is set. */
export const BACKENDS: Backend[] = ['pglite', ...(process.env.DATABASE_URL ? (['postgres'] as const) : [])];

export type TestDatabase = {
  backend: Backend;
  /** How to open this database again (restart tests, CLI processes). */
  options: OpenOptions;
  /** Environment variables that point a child process at it. */
  env: Record<string, string>;
  open(): Promise<SqlDatabase>;
  cleanup(): Promise<void>;
};

export function testDatabase(backend: Backend): TestDatabase {
  if (backend === 'postgres') {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set');
    const schema = `t_${process.pid}_${randomBytes(4).toString('hex')}`;
    const options: OpenOptions = { databaseUrl: url, schema, poolSize: 4 };
    return {
      backend,
      options,
      env: { DATABASE_URL: url, DATABASE_SCHEMA: schema },
      open: () => openDatabase(options),
      async cleanup() {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        } finally {
          await client.end();
        }
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'crm-pglite-'));
  const options: OpenOptions = { dataDir: dir };
  return {
    backend,
    options,
    env: { DATA_DIR: dir },
    open: () => openDatabase(options),
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Opens and migrates. A new PGlite folder starts as a copy of the migrated template
 * (test/support/pglite-template.ts), which the migration then finds complete. */
export async function openMigrated(t: TestDatabase): Promise<SqlDatabase> {
  const dir = t.options.dataDir;
  if (t.backend === 'pglite' && dir && readdirSync(dir).length === 0) await copyMigratedTemplate(dir);
  const db = await t.open();
  await migrate(db);
  return db;
}

/** A PgDatabase on a fresh migrated database of `backend` for the enclosing describe block: opened
 * before its tests, closed and removed after them. Read `.db` inside the tests. */
export function freshPgDatabase(backend: Backend): { readonly db: PgDatabase } {
  let t: TestDatabase | undefined;
  let db: PgDatabase | undefined;
  beforeAll(async () => {
    t = testDatabase(backend);
    db = new PgDatabase(await openMigrated(t));
  });
  afterAll(async () => {
    await db?.close();
    await t?.cleanup();
  });
  return {
    get db(): PgDatabase {
      if (!db) throw new Error('The test database is not open (its beforeAll failed or has not run).');
      return db;
    },
  };
}
