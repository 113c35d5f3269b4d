/**
 * A migrated PGlite data folder made once and copied into each test's fresh folder, instead of an
 * initdb and every migration per test database (the suite opens a hundred and more of them).
 *
 * The template is what `migrate` leaves in a new folder, closed cleanly (PGlite checkpoints on
 * close), so a copy is the same database a test would have made itself. It lives in the system's
 * temporary folder under a name derived from everything that decides its contents (PGlite's
 * version and the migrations' text): a change of either makes a new one, and runs of the suite
 * after the first reuse it. Two workers that need it at once each build one and the first rename
 * wins; the other's is thrown away.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { openDatabase } from '../../sync-server/db.ts';
import { loadMigrations, migrate } from '../../sync-server/migrate.ts';

/** PGlite's version, from the package.json above its entry (the package exports no such path). */
const pgliteVersion = (): string => {
  let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('@electric-sql/pglite: no package.json above its entry');
    dir = up;
  }
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
};

/** The template's folder for this PGlite and these migrations. */
export function templateDir(): string {
  const hash = createHash('sha256').update(pgliteVersion());
  for (const m of loadMigrations()) hash.update('\0').update(m.name).update('\0').update(m.sql);
  return join(tmpdir(), `crm-pglite-template-${hash.digest('hex').slice(0, 16)}`);
}

let built: Promise<string> | undefined;

async function ensureTemplate(): Promise<string> {
  const dir = templateDir();
  if (existsSync(join(dir, 'PG_VERSION'))) return dir;
  const work = mkdtempSync(`${dir}.building-`);
  try {
    const db = await openDatabase({ dataDir: work });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    // The data folder's own lock file (db.ts lockDataDir) is released on close; nothing else of
    // ours is in it.
    try {
      renameSync(work, dir);
    } catch (e) {
      // Another worker's template got there first: it is the same database.
      if (!existsSync(join(dir, 'PG_VERSION'))) throw e;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}

/** Fills the empty folder `dataDir` with a copy of the migrated template. */
export async function copyMigratedTemplate(dataDir: string): Promise<void> {
  if (readdirSync(dataDir).length > 0) throw new Error(`${dataDir} is not empty: the template is copied only into a new folder.`);
  built ??= ensureTemplate();
  const template = await built.catch((e: unknown) => {
    built = undefined;
    throw e;
  });
  cpSync(template, dataDir, { recursive: true });
}
