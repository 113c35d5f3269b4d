/**
 * The desktop's RxDB storage on SQLite, with the documents on disk (electron/backend/storage/
 * sqlite/): one file per RxDB database (`<name>.rxdb.sqlite` in the data folder), one table per
 * storage instance with a column and a SQLite index per RxDB index, an FTS5 text index for the
 * collections named in `textSearch`, and a bounded cache of parsed documents. Implements the
 * RxStorage interface of rxdb 17.6.0 (pinned exactly in package.json). Every storage instance
 * RxDB makes is one of these, so RxDB's internal store and the replication's meta instances
 * (checkpoints, assumed-master states) are on disk like the collections.
 */
import { ensureRxStorageInstanceParamsAreCorrect, RXDB_VERSION } from 'rxdb';
import type { RxStorage, RxStorageInstanceCreationParams } from 'rxdb';
import { DocTable } from './doc-table.ts';
import type { Doc } from './doc-table.ts';
import { sqliteFilePath, StorageFile } from './file.ts';
import type { Synchronous } from './file.ts';
import { SqliteStorageInstance } from './instance.ts';
import type { SqliteInternals } from './instance.ts';
import type { RxJsonSchema } from 'rxdb';
import type { StoreLayout } from './store-columns.ts';

export type SqliteStorageSettings = {
  /** Folder holding one SQLite file per RxDB database name. */
  directory: string;
  /**
   * FULL (default): every acknowledged local write is fsynced, so it survives a power cut or an OS
   * crash, not only a killed app; one fsync per bulk write (per user action, never per document).
   * NORMAL skips it: still safe against a crashed or killed app. Writes the server also holds are
   * always committed without fsync (see file.ts).
   */
  synchronous?: Synchronous;
  /** Parsed documents kept in memory per collection (the most recently read or written). */
  documentCache?: number;
  /** Collections with a full-text index, and the top-level string fields it covers. */
  textSearch?: Readonly<Record<string, readonly string[]>>;
  /** Collections with columns for the desktop Store's queries (store-columns.ts). */
  storeLayout?: Readonly<Record<string, StoreLayout>>;
};

export const DEFAULT_DOCUMENT_CACHE = 2000;

export type RxStorageSqlite = RxStorage<SqliteInternals, object> & { readonly settings: Readonly<SqliteStorageSettings> };

/** Creates the storage; pass it to createRxDatabase. */
export function getRxStorageSqlite(settings: SqliteStorageSettings): RxStorageSqlite {
  const synchronous = settings.synchronous ?? 'FULL';
  const cacheSize = settings.documentCache ?? DEFAULT_DOCUMENT_CACHE;

  async function createStorageInstance<RxDocType>(params: RxStorageInstanceCreationParams<RxDocType, object>): Promise<SqliteStorageInstance<RxDocType>> {
    ensureRxStorageInstanceParamsAreCorrect(params);
    if (params.schema.attachments) throw new Error(`Collection ${params.collectionName}: this storage does not store attachments (the schema declares them).`);
    const file = await StorageFile.opened(sqliteFilePath(settings.directory, params.databaseName), synchronous);
    try {
      // Creating a table writes: after an index build under way in the file's worker, if any.
      const table = await file.whenFree(() =>
        DocTable.open(file, {
          name: `${params.collectionName}-${params.schema.version}`,
          schema: params.schema as RxJsonSchema<Doc>,
          textFields: settings.textSearch?.[params.collectionName] ?? [],
          cacheSize,
          layout: settings.storeLayout?.[params.collectionName],
        }),
      );
      return new SqliteStorageInstance<RxDocType>(params.databaseName, params.collectionName, params.schema, params.options, file, table);
    } catch (e) {
      await file.release();
      throw e;
    }
  }

  return { name: 'sqlite-documents', rxdbVersion: RXDB_VERSION, settings, createStorageInstance };
}

/** The SQLite instance behind an RxDB collection's (wrapped) storage instance, or null. */
export function sqliteInstanceOf<RxDocType>(instance: unknown): SqliteStorageInstance<RxDocType> | null {
  let cur: unknown = instance;
  for (let i = 0; i < 4 && cur !== null && typeof cur === 'object'; i++) {
    if (cur instanceof SqliteStorageInstance) return cur as SqliteStorageInstance<RxDocType>;
    cur = (cur as { originalStorageInstance?: unknown }).originalStorageInstance;
  }
  return null;
}
