/**
 * Moves a workspace from the persisted-memory storage's file (`<name>.sqlite`: one `docs` table of
 * `(inst, id, data)` rows, `inst` = `<collection>-<schema version>`, format 1) into this storage's
 * file (`<name>.rxdb.sqlite`), once, losing nothing:
 * - every row of every storage instance is copied as it is (the RxDB document with `_rev`, `_meta`
 *   and `_deleted`): collections, RxDB's internal store, and the replication's meta instances
 *   (assumed-master states and both checkpoints), so replication resumes where it stopped;
 * - each instance's schema comes from the file itself: RxDB's internal store holds every
 *   collection's schema and the schemas of the storages connected to it (the meta instances);
 *   rows of an instance no schema describes are kept verbatim in a `legacy_documents` table;
 * - rows are written in `[_meta.lwt, id]` order, so the sequence numbers follow the order the old
 *   storage's changes feed had, and an upstream checkpoint of the old storage (`{id, lwt}`)
 *   continues correctly (changes.ts);
 * - the new file is written under a temporary name, synced, and renamed into place: a crash
 *   leaves either no new file (the migration runs again) or a complete one. The old file is left
 *   untouched; the new file's existence is what makes the migration happen once;
 * - the event loop turns after every batch, so the desktop can show the progress while it runs.
 */
// A turn of the event loop between batches lets the progress reach the window.
import { setImmediate as turn } from 'node:timers/promises';
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { INTERNAL_CONTEXT_COLLECTION, INTERNAL_STORAGE_NAME, INTERNAL_STORE_SCHEMA } from 'rxdb';
import type { InternalStoreCollectionDocType, RxDocumentData, RxJsonSchema } from 'rxdb';
import { DocTable } from './doc-table.ts';
import type { Doc } from './doc-table.ts';
import { LOCK_SUFFIX, sqliteFilePath, StorageFile, StorageLockedError } from './file.ts';
import type { StoreLayout } from './store-columns.ts';

/** The persisted-memory storage's file name for an RxDB database name (its fileNameFor). */
export const persistedMemoryFilePath = (directory: string, databaseName: string): string =>
  join(resolve(directory), `${databaseName.replace(/[^A-Za-z0-9_.-]/g, '_')}.sqlite`);

/** The persisted-memory layout this migration reads. */
const PERSISTED_MEMORY_FORMAT = '1';

/** How far a migration is: `done` of `total` documents copied; then, with `indexing`, the
 * indexes a bulk load builds at its end (storage/sqlite/doc-table.ts, "loading"). */
export type MigrationProgress = { instance: string; done: number; total: number; indexing?: boolean };

export type MigrationResult =
  | { migrated: false; reason: 'nothing to migrate' | 'already migrated' }
  | { migrated: true; documents: number; instances: string[]; unrecognized: string[]; from: string; to: string };

export type MigrationOptions = {
  directory: string;
  databaseName: string;
  /** The storage's textSearch and storeLayout settings, so the new file's text indexes and Store
   * columns are built on the way. */
  textSearch?: Readonly<Record<string, readonly string[]>>;
  storeLayout?: Readonly<Record<string, StoreLayout>>;
  /** Called after each batch of rows, and once at the end with done = total. */
  onProgress?: (p: MigrationProgress) => void;
};

/** Rows per transaction of the new file. */
const BATCH = 2000;

type Internal = RxDocumentData<InternalStoreCollectionDocType>;

/** The instance name of RxDB's internal store. */
export const INTERNAL_INSTANCE = `${INTERNAL_STORAGE_NAME}-${INTERNAL_STORE_SCHEMA.version}`;

/** Schemas by instance name, from the old file's internal store. */
function schemasOf(old: Database.Database): Map<string, RxJsonSchema<Doc>> {
  const rows = old.prepare<[string], string>('SELECT data FROM docs WHERE inst = ?').pluck().all(INTERNAL_INSTANCE);
  return schemasFromInternalStore(rows.map((r) => JSON.parse(r) as Doc));
}

/** Schemas by instance name, from the documents of a database's internal store: every collection's
 * and those of the storages connected to it (replication meta instances); live collection documents
 * win over deleted ones. */
export function schemasFromInternalStore(internalDocs: readonly Doc[]): Map<string, RxJsonSchema<Doc>> {
  const out = new Map<string, RxJsonSchema<Doc>>();
  out.set(INTERNAL_INSTANCE, INTERNAL_STORE_SCHEMA as RxJsonSchema<Doc>);
  const docs = (internalDocs as Internal[]).filter((d) => d.context === INTERNAL_CONTEXT_COLLECTION);
  docs.sort((a, b) => Number(b._deleted) - Number(a._deleted));
  for (const d of docs) {
    out.set(`${d.data.name}-${d.data.schema.version}`, d.data.schema as RxJsonSchema<Doc>);
    for (const s of d.data.connectedStorages ?? []) out.set(`${s.collectionName}-${s.schema.version}`, s.schema as RxJsonSchema<Doc>);
  }
  return out;
}

/** The collection name of an instance name (`<collection>-<version>`). */
const collectionOf = (inst: string): string => inst.slice(0, inst.lastIndexOf('-'));

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Makes a rename durable where the platform allows syncing a folder (Windows does not open one). */
function syncFolder(path: string): void {
  try {
    syncFile(path);
  } catch {
    // NTFS journals the rename itself.
  }
}

/**
 * Migrates `databaseName` in `directory` if it has a persisted-memory file and no file of this
 * storage yet. Throws StorageLockedError if another process holds the old file; on any failure
 * the old file is as it was and no new file exists.
 */
export async function migrateFromPersistedMemory(opts: MigrationOptions): Promise<MigrationResult> {
  const from = persistedMemoryFilePath(opts.directory, opts.databaseName);
  const to = sqliteFilePath(opts.directory, opts.databaseName);
  if (existsSync(to)) return { migrated: false, reason: 'already migrated' };
  if (!existsSync(from)) return { migrated: false, reason: 'nothing to migrate' };

  const old = new Database(from, { timeout: 0 });
  try {
    // The old storage's owner takes this lock too: a running older app is refused, not raced.
    old.pragma('locking_mode = EXCLUSIVE');
    try {
      old.exec('BEGIN EXCLUSIVE');
    } catch (e) {
      const code = e instanceof Error ? (e as { code?: unknown }).code : undefined;
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') throw new StorageLockedError(from);
      throw e;
    }
    const format = old.prepare<[], string>("SELECT value FROM meta WHERE key = 'format'").pluck().get();
    if (format !== PERSISTED_MEMORY_FORMAT) throw new Error(`${from} has persisted-memory format ${format ?? '(none)'}; this migration reads format ${PERSISTED_MEMORY_FORMAT}.`);
    const counts = old.prepare<[], { inst: string; n: number }>('SELECT inst, count(*) AS n FROM docs GROUP BY inst ORDER BY inst').all();
    const total = counts.reduce((s, c) => s + c.n, 0);
    if (total === 0) return { migrated: false, reason: 'nothing to migrate' };
    const schemas = schemasOf(old);
    if (!counts.some((c) => schemas.has(c.inst))) throw new Error(`${from} holds no RxDB storage instance this migration recognizes (${counts.map((c) => c.inst).join(', ')}).`);

    const tmp = `${to}.migrating`;
    for (const suffix of ['', '-wal', '-shm', LOCK_SUFFIX]) rmSync(tmp + suffix, { force: true });
    let done = 0;
    const unrecognized: string[] = [];
    const file = await StorageFile.opened(tmp, 'NORMAL');
    try {
      for (const { inst } of counts) {
        const schema = schemas.get(inst);
        const rows = old.prepare<[string], { id: string; data: string }>("SELECT id, data FROM docs WHERE inst = ? ORDER BY json_extract(data, '$._meta.lwt'), id");
        if (!schema) {
          unrecognized.push(inst);
          file.write(false, () => {
            file.db.exec('CREATE TABLE IF NOT EXISTS legacy_documents (inst TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (inst, id))');
            const put = file.db.prepare('INSERT INTO legacy_documents (inst, id, data) VALUES (?, ?, ?)');
            for (const r of rows.iterate(inst)) put.run(inst, r.id, r.data);
          });
          done += counts.find((c) => c.inst === inst)?.n ?? 0;
          opts.onProgress?.({ instance: inst, done, total });
          continue;
        }
        const table = DocTable.open(file, { name: inst, schema, textFields: opts.textSearch?.[collectionOf(inst)] ?? [], cacheSize: 0, layout: opts.storeLayout?.[collectionOf(inst)] });
        try {
          let batch: Doc[] = [];
          const flush = () => {
            const docs = batch;
            batch = [];
            // As pulled documents: every index a load leaves out is built once, at the end.
            const written = file.write(false, () => table.write(docs.map((doc) => ({ before: undefined, doc })), true));
            table.committed(written);
            done += docs.length;
            opts.onProgress?.({ instance: inst, done, total });
          };
          for (const r of rows.iterate(inst)) {
            batch.push(JSON.parse(r.data) as Doc);
            if (batch.length >= BATCH) {
              flush();
              await turn();
            }
          }
          if (batch.length > 0) flush();
          if (table.isLoading) {
            opts.onProgress?.({ instance: inst, done, total, indexing: true });
            await table.finishLoading();
          }
        } finally {
          table.release();
        }
      }
      file.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch (e) {
      await file.release();
      for (const suffix of ['', '-wal', '-shm', LOCK_SUFFIX]) rmSync(tmp + suffix, { force: true });
      throw e;
    }
    await file.release();
    // The temporary name's lock file; the file's own is made at its first open.
    rmSync(tmp + LOCK_SUFFIX, { force: true });
    syncFile(tmp);
    renameSync(tmp, to);
    syncFolder(dirname(to));
    return { migrated: true, documents: total, instances: counts.map((c) => c.inst).filter((i) => !unrecognized.includes(i)), unrecognized, from, to };
  } finally {
    if (old.inTransaction) old.exec('ROLLBACK');
    old.close();
  }
}
