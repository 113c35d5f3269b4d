/**
 * What the sync status needs from a collection's storage instance: the change stream (with RxDB's
 * write contexts, to tell local writes from pulled ones) and the stored document of an id,
 * synchronously.
 */
import type { EventBulk, RxDocumentData, RxStorageChangeEvent } from 'rxdb';
import type { Observable } from 'rxjs';
import { sqliteInstanceOf } from './sqlite/storage.ts';

type Json = Record<string, unknown>;

export type LocalInstance = {
  changeStream(): Observable<EventBulk<RxStorageChangeEvent<Json>, unknown>>;
  /** The stored document (deleted ones included), or undefined. */
  current(id: string): RxDocumentData<Json> | undefined;
  /** Calls `watcher` with the index the database builds now (in words), or null; returns the
   * unsubscribe. */
  watchBuilds(watcher: (what: string | null) => void): () => void;
};

/** The local storage instance behind an RxDB collection's (wrapped) storage instance, or null. */
export function localInstanceOf(storageInstance: unknown): LocalInstance | null {
  const sqlite = sqliteInstanceOf<Json>(storageInstance);
  return sqlite && { changeStream: () => sqlite.changeStream(), current: (id) => sqlite.currentDocuments([id]).get(id), watchBuilds: (watcher) => sqlite.storageFile.watchBuilds(watcher) };
}
