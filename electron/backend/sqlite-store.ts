/**
 * The Store port over the desktop's RxDB database on the SQLite storage, so every operation of
 * shared/ops runs locally and offline through the same rules, reading only what it asks for:
 * - get/getMany by id: the storage's bounded cache, else one SQLite look-up;
 * - query: the condition and order through the collection's Store columns and indexes
 *   (store-layout.ts; planning in storage/sqlite/store-query.ts), with keyset cursors;
 * - count: in SQL when the condition translates exactly;
 * - commit: every write checked against the stored document and written to every collection in
 *   one SQLite transaction (writeAtomically), durable before it resolves.
 * Answers are shared/query.ts's semantics, the same as the memory store's
 * (test/unit/rxdb-store.test.ts compares them query by query).
 *
 * Replicated writes land in the same storage; the storage's change stream (emitted inside the
 * write, before it resolves) tells listeners which collections changed.
 */
import type { RxDatabase, RxDocumentData } from 'rxdb';
import { now as rxNow } from 'rxdb';
import type { Subscription } from 'rxjs';
import { DomainError } from '../../shared/errors.ts';
import type { CollectionName, Docs } from '../../shared/model/index.ts';
import { decodeCursor, encodeCursor } from '../../shared/query.ts';
import type { AnyWrite, Cond, DuplicatePage, DuplicatePageOptions, Page, Query, Store, StoreProvider } from '../../shared/store.ts';
import type { IdentityKind } from '../../shared/intake/identity.ts';
import { AtomicWriteConflict, writeAtomically } from './storage/sqlite/instance.ts';
import type { SqliteStorageInstance } from './storage/sqlite/instance.ts';
import { sqliteInstanceOf } from './storage/sqlite/storage.ts';
import { commitRows, STORE_WRITE_CONTEXT, storeCopy, stripRxFields } from './store-documents.ts';

type Json = Record<string, unknown>;
type Instance = SqliteStorageInstance<Json>;

/**
 * Hands out workspace-scoped Stores over a local RxDB database on the SQLite storage, and tells
 * listeners which collections changed. `collections` are the RxDB collections to serve.
 */
export class SqliteStoreProvider implements StoreProvider {
  private readonly instances = new Map<CollectionName, Instance>();
  private readonly subs: Subscription[] = [];
  private readonly listeners = new Set<(collections: CollectionName[]) => void>();
  private pending = new Set<CollectionName>();
  private flushQueued = false;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(readonly rx: RxDatabase, collections: readonly CollectionName[]) {
    for (const name of collections) {
      const collection = rx.collections[name];
      if (!collection) throw new Error(`The local database has no ${name} collection.`);
      const instance = sqliteInstanceOf<Json>(collection.storageInstance);
      if (!instance) throw new Error(`The ${name} collection is not on the SQLite storage.`);
      this.instances.set(name, instance);
      this.subs.push(
        instance.changeStream().subscribe((bulk) => {
          if (bulk.events.length > 0) this.noteChange(name);
        }),
      );
    }
  }

  private noteChange(c: CollectionName): void {
    this.pending.add(c);
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => {
      this.flushQueued = false;
      const touched = [...this.pending];
      this.pending = new Set();
      for (const l of this.listeners) l(touched);
    });
  }

  /** Called (once per burst of writes, local or replicated) with the collections that changed. */
  onChange(listener: (collections: CollectionName[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  instance(c: CollectionName): Instance | null {
    return this.instances.get(c) ?? null;
  }

  forWorkspace(workspaceId: string): Store {
    return new SqliteStore(this, workspaceId);
  }

  async withStore<T>(workspaceId: string, fn: (store: Store) => Promise<T>): Promise<T> {
    return fn(this.forWorkspace(workspaceId));
  }

  /** Resolves once no table of the database has indexes a bulk load left out (they are built a
   * moment after the load; benchmarks and tools wait for them). */
  async indexed(): Promise<void> {
    const any = this.instances.values().next();
    if (any.done) return;
    while (any.value.fileLoading) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  /** Calls `watcher` with the index the database's file builds now (in words), or null; at once
   * with the current state. Returns the unsubscribe. */
  watchBuilds(watcher: (what: string | null) => void): () => void {
    const any = this.instances.values().next();
    if (any.done) {
      watcher(null);
      return () => undefined;
    }
    return any.value.storageFile.watchBuilds(watcher);
  }

  /** Runs commits one after another, so each sees the previous one's result. */
  serialize<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  close(): void {
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
    this.listeners.clear();
  }
}

/** A stored document as the Store hands it out: a copy, unless nobody else holds it. */
const handOut = (raw: RxDocumentData<Json>, fresh: boolean): Json => (fresh ? stripRxFields(raw) : storeCopy(raw));

class SqliteStore implements Store {
  constructor(
    private readonly provider: SqliteStoreProvider,
    readonly workspaceId: string,
  ) {}

  /** The condition scoped to this workspace. */
  private scoped(where: Cond | undefined): Cond {
    const ws: Cond = { op: 'eq', field: 'workspaceId', value: this.workspaceId };
    return where ? { op: 'and', conds: [ws, where] } : ws;
  }

  private live(raw: RxDocumentData<Json> | undefined): raw is RxDocumentData<Json> {
    return raw !== undefined && !raw._deleted && raw.workspaceId === this.workspaceId;
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const raw = this.provider.instance(c)?.currentDocuments([id]).get(id);
    return this.live(raw) ? (storeCopy(raw) as Docs[C]) : null;
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    const instance = this.provider.instance(c);
    if (!instance) return [];
    const found = instance.currentDocuments(ids);
    const out: Docs[C][] = [];
    for (const id of ids) {
      const raw = found.get(id);
      if (this.live(raw)) out.push(storeCopy(raw) as Docs[C]);
    }
    return out;
  }

  async query<C extends CollectionName>(c: C, q: Query = {}): Promise<Page<Docs[C]>> {
    const orderBy = q.orderBy ?? [];
    const cursor = q.cursor ? decodeCursor(q.cursor, orderBy) : null;
    const instance = this.provider.instance(c);
    const limit = q.limit;
    if (!instance || (limit !== undefined && limit <= 0)) return { docs: [], nextCursor: null };
    // One more than the page, to know whether another page follows.
    const want = limit === undefined ? Infinity : limit + 1;
    const { docs, fresh } = await instance.storeQueryOffLoop({ where: this.scoped(q.where), orderBy, cursor, limit: want, cache: limit !== undefined });
    const more = limit !== undefined && docs.length > limit;
    const page = more ? docs.slice(0, limit) : docs;
    const last = page[page.length - 1];
    return {
      docs: page.map((d, i) => handOut(d, fresh[i] === true) as Docs[C]),
      nextCursor: more && last ? encodeCursor(last, orderBy) : null,
    };
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    return (await this.provider.instance(c)?.storeCountOffLoop(this.scoped(where))) ?? 0;
  }

  async duplicateGroups(kind: IdentityKind, opts: DuplicatePageOptions): Promise<DuplicatePage> {
    const instance = this.provider.instance('leads');
    if (!instance) return { groups: [], nextCursor: null };
    return instance.storeDuplicates(kind, this.workspaceId, opts);
  }

  commit(writes: readonly AnyWrite[]): Promise<void> {
    return this.provider.serialize(() => this.commitNow(writes));
  }

  /** Checks and writes in one synchronous step (see writeAtomically): nothing can change in between. */
  private async commitNow(writes: readonly AnyWrite[]): Promise<void> {
    // The stored documents of the written ids, one read per collection: read one id at a time, an
    // import's 5,000 new leads were 5,000 look-ups of ids that are not there.
    const ids = new Map<CollectionName, string[]>();
    for (const w of writes) {
      const list = ids.get(w.collection);
      if (list) list.push(w.id);
      else ids.set(w.collection, [w.id]);
    }
    const stored = new Map<Instance, Map<string, RxDocumentData<Json>>>();
    for (const [c, list] of ids) {
      const instance = this.provider.instance(c);
      if (instance) stored.set(instance, instance.currentDocuments(list));
    }
    const rows = commitRows(writes, this.workspaceId, {
      token: this.provider.rx.token,
      now: rxNow(),
      instance: (c) => this.provider.instance(c),
      stored: (instance, id) => stored.get(instance)?.get(id),
    });
    if (rows.size === 0) return;
    try {
      await writeAtomically([...rows].map(([instance, r]) => ({ instance: instance as SqliteStorageInstance<unknown>, rows: r })), STORE_WRITE_CONTEXT);
    } catch (e) {
      if (e instanceof AtomicWriteConflict) throw new DomainError('CONFLICT', 'Some documents changed while saving; try again.');
      throw e;
    }
  }
}
