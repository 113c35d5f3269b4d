/** Applies sync-server/migrations/*.sql in name order, once each, recorded in schema_migrations. */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SqlDatabase } from './db.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** Arbitrary constant: the advisory lock that keeps two starting servers from migrating at once. */
const MIGRATION_LOCK = 727_001;

export type Migration = { name: string; sql: string };

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_[\w-]+\.sql$/.test(f))
    .sort()
    .map((name) => ({ name, sql: readFileSync(`${dir}/${name}`, 'utf8') }));
}

/** Returns the names applied by this call. */
export async function migrate(db: SqlDatabase, migrations = loadMigrations()): Promise<string[]> {
  await db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  const applied: string[] = [];
  for (const m of migrations) {
    const done = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const rows = await tx.query('SELECT 1 FROM schema_migrations WHERE name = $1', [m.name]);
      if (rows.length > 0) return false;
      // Statement by statement: the extended protocol runs one statement per call on both engines.
      for (const stmt of splitStatements(m.sql)) await tx.query(stmt);
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [m.name]);
      return true;
    });
    if (done) applied.push(m.name);
  }
  // Existing leads' identity key columns (migration 017) are filled in the background while the
  // server serves (identity-backfill.ts; migration 020 lists the workspaces to do).
  return applied;
}

/** Splits a migration on semicolons that end a line, skipping comment lines outside function
 * bodies; a `$$`-quoted body (a PL/pgSQL function) is kept whole. Migrations keep to that shape,
 * which keeps this simple and predictable. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  let inBody = false;
  for (const line of sql.split('\n')) {
    if (!inBody && /^\s*--/.test(line)) continue;
    cur.push(line);
    // Each `$$` opens or closes a body.
    if ((line.match(/\$\$/g) ?? []).length % 2 === 1) inBody = !inBody;
    if (!inBody && /;\s*$/.test(line)) {
      const stmt = cur.join('\n').trim().replace(/;\s*$/, '');
      if (stmt) out.push(stmt);
      cur = [];
    }
  }
  const rest = cur.join('\n').trim();
  if (rest) out.push(rest);
  return out;
}
