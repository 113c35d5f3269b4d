/**
 * What the replication needs from a collection's storage instance: the change stream (with RxDB's
 * write contexts, to tell local writes from pulled ones), the stored document of an id,
 * synchronously, the index builds under way, a hold on a bulk load's index builds while a pull
 * goes on, and word of a pulled write that failed (the lane then starts over from its checkpoint).
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
  /** Holds the collection's deferred index builds while a pull has more pages coming (true: for a
   * bounded time from now, renewed by each call), or releases them (false). */
  holdLoad(held: boolean): void;
  /** Resolves once the database has no pulled page's transaction open and none waiting to open
   * (at once when so). */
  pagesWritten(): Promise<void>;
  /** Calls `watcher` with the error when a pulled write of the collection failed (a full disk) and
   * pulled writes are refused from then on, until acceptPulls; returns the unsubscribe. */
  onPulledPageLost(watcher: (why: unknown) => void): () => void;
  acceptPulls(): void;
};

/** The local storage instance behind an RxDB collection's (wrapped) storage instance, or null. */
export function localInstanceOf(storageInstance: unknown): LocalInstance | null {
  const sqlite = sqliteInstanceOf<Json>(storageInstance);
  return sqlite && { changeStream: () => sqlite.changeStream(), current: (id) => sqlite.currentDocuments([id]).get(id), watchBuilds: (watcher) => sqlite.storageFile.watchBuilds(watcher), holdLoad: (held) => sqlite.holdLoad(held), pagesWritten: () => sqlite.storageFile.whenPagesWritten(), onPulledPageLost: (watcher) => sqlite.onPulledPageLost(watcher), acceptPulls: () => sqlite.acceptPulls() };
}
