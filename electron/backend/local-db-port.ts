/**
 * What the backend needs from a workspace's local database, and an in-memory implementation over
 * MemoryDatabase. The persistent one is electron/backend/local-db.ts (RxDB); both have this shape, so
 * the backend does not care which it runs on (tests and the UI benchmark can use either).
 */
import type { CollectionName } from '../../shared/model/index.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import type { AnyWrite, Store, StoreProvider } from '../../shared/store.ts';
import type { MigrationProgress } from './storage/sqlite/migrate.ts';

export type LocalDb = StoreProvider & {
  store: Store;
  /** Called after every commit (local or replicated) with the collections it touched. */
  onChange(listener: (collections: CollectionName[]) => void): () => void;
  /** Resolves once every index a bulk load left out is built (storage/sqlite/doc-table.ts,
   * "loading"); at once when none is missing. */
  indexed?(): Promise<void>;
  /** Calls `watcher` with the index the database builds now (in words: "leads by full name"), or
   * null, at once and whenever that changes; returns the unsubscribe. Absent: it builds none. */
  watchBuilds?(watcher: (what: string | null) => void): () => void;
  close(): Promise<void>;
};

export type OpenLocalDb = (opts: {
  dir: string;
  workspaceId: string;
  actor: { workspaceId: string; memberId: string; role: 'owner' | 'admin' | 'member' };
  /** Told how a one-time migration of the folder's data into the current storage advances. */
  onMigration?: (p: MigrationProgress) => void;
}) => Promise<LocalDb>;

/** A LocalDb that lives only in memory: nothing survives a restart. */
export async function openMemoryLocalDb(opts: { workspaceId: string }): Promise<LocalDb> {
  const db = new MemoryDatabase();
  const inner = db.forWorkspace(opts.workspaceId);
  const listeners = new Set<(c: CollectionName[]) => void>();
  const store: Store = {
    workspaceId: inner.workspaceId,
    get: (c, id) => inner.get(c, id),
    getMany: (c, ids) => inner.getMany(c, ids),
    query: (c, q) => inner.query(c, q),
    count: (c, w) => inner.count(c, w),
    duplicateGroups: (kind, o) => inner.duplicateGroups(kind, o),
    async commit(writes: readonly AnyWrite[]) {
      await inner.commit(writes);
      const touched = [...new Set(writes.map((w) => w.collection))];
      for (const l of listeners) l(touched);
    },
  };
  return {
    store,
    withStore: (workspaceId, fn) => {
      if (workspaceId !== opts.workspaceId) throw new Error(`This local database holds workspace ${opts.workspaceId}, not ${workspaceId}.`);
      return fn(store);
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
    },
  };
}
