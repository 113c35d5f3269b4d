/**
 * Opens one workspace's local database: RxDB with the replicated collections of shared/model on one
 * SQLite file in the data folder, and the Store port over it. Two storages: the SQLite storage
 * (storage/sqlite/: documents on disk, queries through indexes) and the persisted-memory storage
 * (every document in memory); a folder holding the persisted-memory file is migrated into the
 * SQLite storage once when it is opened on the SQLite storage.
 */
import { setFlagsFromString } from 'node:v8';
import { addRxPlugin, createRxDatabase } from 'rxdb';
import type { MigrationStrategies, RxCollectionCreator, RxConflictHandler, RxDatabase, RxJsonSchema, RxStorage } from 'rxdb';
import { RxDBMigrationSchemaPlugin } from 'rxdb/plugins/migration-schema';
import type { Actor } from '../../shared/context.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import type { CollectionName } from '../../shared/model/index.ts';
import type { Store, StoreProvider } from '../../shared/store.ts';
import type { OpenLocalDb } from './local-db-port.ts';
import { mergeConflictHandler } from './replication-merge.ts';
import { RxdbStoreProvider } from './rxdb-store.ts';
import { SqliteStoreProvider } from './sqlite-store.ts';
import { getRxStoragePersistedMemory } from './storage/persisted-memory.ts';
import type { PersistedMemorySettings } from './storage/persisted-memory.ts';
import { migrateFromPersistedMemory } from './storage/sqlite/migrate.ts';
import type { MigrationProgress } from './storage/sqlite/migrate.ts';
import { getRxStorageSqlite } from './storage/sqlite/storage.ts';
import { STORE_LAYOUT, TEXT_SEARCH } from './store-layout.ts';

type Json = Record<string, unknown>;

export type LocalDatabase = StoreProvider & {
  workspaceId: string;
  actor: Actor;
  /** The workspace's Store (what operations run against). */
  store: Store;
  /** Called once per burst of writes (local commits and replicated pulls) with the collections touched. */
  onChange(listener: (collections: CollectionName[]) => void): () => void;
  /** The RxDB database, for replication. */
  rx: RxDatabase;
  close(): Promise<void>;
};

export type OpenLocalDatabaseOptions = {
  /** Data folder; the workspace's file is `<dir>/crm-<workspaceId>.sqlite`. */
  dir: string;
  workspaceId: string;
  /** The member this desktop acts for. */
  actor: Actor;
  /** Conflict handler per collection (default: replication-merge.ts's refusal-aware three-way merge). */
  conflictHandler?: (collection: CollectionName) => RxConflictHandler<Json>;
  synchronous?: PersistedMemorySettings['synchronous'];
  /** The storage (default: defaultStorage()). */
  storage?: LocalStorageKind;
  /** Told how a migration into the SQLite storage advances (only when one runs). */
  onMigration?: (p: MigrationProgress) => void;
};

export type LocalStorageKind = 'sqlite' | 'persisted-memory';

/** The storage a desktop opens when none is named: the SQLite storage, unless
 * LOCAL_STORAGE=persisted-memory (the previous storage, kept until its removal). */
export function defaultStorage(env: NodeJS.ProcessEnv = process.env): LocalStorageKind {
  return env.LOCAL_STORAGE === 'persisted-memory' ? 'persisted-memory' : 'sqlite';
}

/**
 * Keeps V8's young generation from growing while a workspace loads or syncs. Loading or pulling
 * 100k documents makes almost every young object survive, and V8 answers by growing the young
 * generation to its maximum (~130 MB here), memory it keeps resident afterwards: a third of the
 * desktop's footprint at 100k leads, for no measurable speed (measured: the same sync time with
 * and without). Process-wide: a process that opens a local database is a desktop process (Electron
 * main, the headless backend), so openLocalDatabase calls it; calling it again changes nothing.
 */
export function limitYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

addRxPlugin(RxDBMigrationSchemaPlugin);

/**
 * How a desktop's documents written under an older schema version become current ones. Every
 * change so far only added optional fields or enum values, so each step keeps the document as it is;
 * a change that needs a real conversion adds its function here under its new version number.
 * A collection's schema version must go up whenever its RxDB schema changes: RxDB refuses to open a
 * file whose schema differs under the same version (error DB6), which would strand a user's data.
 */
export function migrationStrategies(version: number): MigrationStrategies {
  const out: MigrationStrategies = {};
  for (let v = 1; v <= version; v++) out[v] = (doc: Json) => doc;
  return out;
}

/** The RxDB database name of a workspace (also its file name). */
export const localDatabaseName = (workspaceId: string): string => `crm-${workspaceId.toLowerCase()}`;

export async function openLocalDatabase(opts: OpenLocalDatabaseOptions): Promise<LocalDatabase> {
  if (!/^[A-Za-z0-9-]{1,64}$/.test(opts.workspaceId)) throw new Error(`Not a workspace id: ${opts.workspaceId}`);
  limitYoungGeneration();
  if (opts.actor.workspaceId !== opts.workspaceId) {
    throw new Error(`The actor belongs to workspace ${opts.actor.workspaceId}, not ${opts.workspaceId}.`);
  }
  const kind = opts.storage ?? defaultStorage();
  const name = localDatabaseName(opts.workspaceId);
  if (kind === 'sqlite') {
    // A folder written by the persisted-memory storage moves into the SQLite storage once; the
    // old file stays where it was (the new file's presence is what makes this happen once).
    await migrateFromPersistedMemory({ directory: opts.dir, databaseName: name, textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT, onProgress: opts.onMigration });
  }
  const create = <Internals,>(storage: RxStorage<Internals, object>): Promise<RxDatabase> =>
    // One process owns the file; there are no other tabs or processes to broadcast to.
    createRxDatabase({ name, storage, multiInstance: false, eventReduce: true });
  const rx = kind === 'sqlite'
    ? await create(getRxStorageSqlite({ directory: opts.dir, synchronous: opts.synchronous, textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT }))
    : await create(getRxStoragePersistedMemory({ directory: opts.dir, synchronous: opts.synchronous }));
  let provider: RxdbStoreProvider | SqliteStoreProvider;
  try {
    const creators: Record<string, RxCollectionCreator> = {};
    for (const c of REPLICATED_COLLECTIONS) {
      creators[c] = {
        // Our schemas are RxDB JSON schemas declared `as const` (readonly) for json-schema-to-ts.
        schema: COLLECTIONS[c].schema as unknown as RxJsonSchema<Json>,
        migrationStrategies: migrationStrategies(COLLECTIONS[c].schema.version),
        // Documents from an older version are converted before the collection answers.
        autoMigrate: true,
        // Replication's policy for documents changed on both sides (see replication-merge.ts).
        conflictHandler: opts.conflictHandler?.(c) ?? mergeConflictHandler,
      };
    }
    await rx.addCollections(creators);
    provider = kind === 'sqlite' ? new SqliteStoreProvider(rx, REPLICATED_COLLECTIONS) : new RxdbStoreProvider(rx, REPLICATED_COLLECTIONS);
  } catch (e) {
    await rx.close();
    throw e;
  }
  const store = provider.forWorkspace(opts.workspaceId);
  return {
    workspaceId: opts.workspaceId,
    actor: opts.actor,
    store,
    rx,
    onChange: (listener) => provider.onChange(listener),
    async withStore<T>(workspaceId: string, fn: (s: Store) => Promise<T>): Promise<T> {
      if (workspaceId !== opts.workspaceId) throw new Error(`This local database holds workspace ${opts.workspaceId}, not ${workspaceId}.`);
      return fn(store);
    },
    async close() {
      provider.close();
      await rx.close();
    },
  };
}

// The desktop backend is written against local-db-port.ts; this must stay a drop-in for it.
const _fitsPort: OpenLocalDb = openLocalDatabase;
