/**
 * Opens one workspace's local database: RxDB with the replicated collections of shared/model on the
 * SQLite storage (storage/sqlite/: one file in the data folder, documents on disk, queries through
 * indexes), and the Store port over it (sqlite-store.ts). A folder holding the previous storage's
 * file (persisted-memory, the app's storage until issue 22) is moved into it once, at its first open.
 */
import { setFlagsFromString } from 'node:v8';
import { addRxPlugin, createRxDatabase } from 'rxdb';
import type { MigrationStrategies, RxCollectionCreator, RxConflictHandler, RxDatabase, RxJsonSchema } from 'rxdb';
import { RxDBMigrationSchemaPlugin } from 'rxdb/plugins/migration-schema';
import type { Actor } from '../../shared/context.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import type { CollectionName } from '../../shared/model/index.ts';
import type { Store, StoreProvider } from '../../shared/store.ts';
import type { OpenLocalDb } from './local-db-port.ts';
import { mergeConflictHandler } from './replication-merge.ts';
import { boundChangeEventBuffer } from './rx-change-event-buffer.ts';
import { SqliteStoreProvider } from './sqlite-store.ts';
import type { Synchronous } from './storage/sqlite/file.ts';
import { migrateFromPersistedMemory } from './storage/sqlite/migrate.ts';
import type { MigrationProgress } from './storage/sqlite/migrate.ts';
import { getRxStorageSqlite } from './storage/sqlite/storage.ts';
import { upgradeStoreLayouts } from './storage/sqlite/layout-upgrade.ts';
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
  /** Resolves once every index a bulk load left out is built (storage/sqlite/doc-table.ts,
   * "loading"); at once when none is missing. */
  indexed(): Promise<void>;
  /** The index the database's file builds now, in words, to `watcher` (local-db-port.ts). */
  watchBuilds(watcher: (what: string | null) => void): () => void;
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
  /** FULL (default): every local write is fsynced before it resolves (storage/sqlite/file.ts). */
  synchronous?: Synchronous;
  /** Told how a one-time move of the folder's previous format into this storage advances. */
  onMigration?: (p: MigrationProgress) => void;
};

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

/** The current schema of each collection with a Store layout (the tables upgradeStoreLayouts brings
 * to that layout). */
const LAYOUT_SCHEMAS: Record<string, RxJsonSchema<Json>> = Object.fromEntries(
  Object.keys(STORE_LAYOUT).flatMap((c) => (c in COLLECTIONS ? [[c, COLLECTIONS[c as CollectionName].schema as unknown as RxJsonSchema<Json>]] : [])),
);

/** The RxDB database name of a workspace (also its file name). */
export const localDatabaseName = (workspaceId: string): string => `crm-${workspaceId.toLowerCase()}`;

export async function openLocalDatabase(opts: OpenLocalDatabaseOptions): Promise<LocalDatabase> {
  if (!/^[A-Za-z0-9-]{1,64}$/.test(opts.workspaceId)) throw new Error(`Not a workspace id: ${opts.workspaceId}`);
  limitYoungGeneration();
  if (opts.actor.workspaceId !== opts.workspaceId) {
    throw new Error(`The actor belongs to workspace ${opts.actor.workspaceId}, not ${opts.workspaceId}.`);
  }
  const name = localDatabaseName(opts.workspaceId);
  // A folder written by the previous storage moves into this one once; the old file stays where
  // it was (the new file's presence is what makes this happen once).
  await migrateFromPersistedMemory({ directory: opts.dir, databaseName: name, textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT, onProgress: opts.onMigration });
  // A file written with another Store layout (a version before the identity keys' columns) gets
  // the new columns and indexes here, batch by batch with progress, not in one synchronous step
  // at the first read of each collection.
  // Rows an earlier version wrote (documents as JSON objects, RxDB's index strings in every row) are
  // first rewritten in this version's smaller layout, the same way (upgradeRowFormats).
  await upgradeStoreLayouts({ directory: opts.dir, databaseName: name, storeLayout: STORE_LAYOUT, schemas: LAYOUT_SCHEMAS, onProgress: opts.onMigration, rowFormats: true });
  const rx = await createRxDatabase({
    name,
    storage: getRxStorageSqlite({ directory: opts.dir, synchronous: opts.synchronous, textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT }),
    // One process owns the file; there are no other tabs or processes to broadcast to.
    multiInstance: false,
    eventReduce: true,
  });
  let provider: SqliteStoreProvider;
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
    // Each collection keeps its latest 100 change events, not a whole pulled page (rx-change-event-buffer.ts).
    for (const c of Object.values(rx.collections)) boundChangeEventBuffer(c._changeEventBuffer);
    provider = new SqliteStoreProvider(rx, REPLICATED_COLLECTIONS);
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
    indexed: () => provider.indexed(),
    watchBuilds: (watcher) => provider.watchBuilds(watcher),
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
