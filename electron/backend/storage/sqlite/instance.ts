/**
 * One RxDB storage instance (a collection, RxDB's internal store, or a replication meta instance)
 * on its documents table. A write is checked against the stored documents (RxDB's own
 * categorizeBulkWriteRows: a stale `previous` is a 409 with the stored document), committed to
 * SQLite in one transaction (documents, index columns, text index), and only then put into the
 * cache and emitted on the change stream, all before the returned promise resolves; a failed
 * SQLite write rejects the whole write and changes nothing. Everything runs synchronously
 * (better-sqlite3 is synchronous), so no other write interleaves. Except a pulled page (a write
 * of pulled documents of SLICE_TUNING.rows or more, and then RxDB's write of their meta rows):
 * both are written in one transaction spread over turns of the event loop (file.ts, openPage),
 * other writes wait for its COMMIT, reads meanwhile see the committed file, and the documents'
 * write resolves before the COMMIT, which the meta rows' write makes (and only then are the cache
 * and change events of both applied).
 *
 * Attachments are not stored: no collection of this app has them, and a schema that declares
 * them is refused when the instance is created.
 */
import { categorizeBulkWriteRows, getPrimaryFieldOfPrimaryKey, now as rxNow } from 'rxdb';
import type { BulkWriteRow, CategorizeBulkWriteRowsOutput, EventBulk, PreparedQuery, RxDocumentData, RxJsonSchema, RxStorageBulkWriteResponse, RxStorageChangeEvent, RxStorageCountResult, RxStorageInstance, RxStorageQueryResult } from 'rxdb';
import type { Observable } from 'rxjs';
import { changedDocumentsSince, checkpointOf } from './changes.ts';
import { fileLoading, followedNow } from './doc-table.ts';
import type { ChangeBulk, Doc, DocTable, RowWrite, SqliteCheckpoint, Written } from './doc-table.ts';
import { isDownstreamWrite, isRefetchableWrite, needsNoFsync, RXDB_CONTEXT } from '../../rxdb-internals.ts';
import { SLICE_TUNING } from './file.ts';
import type { PageStep, StorageFile } from './file.ts';
import { forkOf } from './master-states.ts';
import { runCount, runQuery } from './query.ts';
import { storeCount, storeCountOffLoop, storeQuery, storeQueryOffLoop } from './store-query.ts';
import type { StoreAnswer, StoreRead } from './store-query.ts';
import type { Cond, DuplicatePage, DuplicatePageOptions } from '../../../../shared/store.ts';
import { KEY_FIELDS } from '../../../../shared/intake/identity.ts';
import type { IdentityKind } from '../../../../shared/intake/identity.ts';
import { storeDuplicateGroups } from './store-duplicates.ts';

export type SqliteInternals = { file: string; table: string };

/** Pulled documents new to a collection, with their replication meta rows (loadPulled). */
export type PulledLoad = {
  /** The collection's documents, as RxDB's replication would write them (with `_meta`, `_rev`). */
  docs: readonly RxDocumentData<unknown>[];
  /** The collection write's context: RxDB's downstream write flag. */
  context: string;
  /** The meta instance's rows of the documents (their assumed-master states). */
  metaDocs: readonly RxDocumentData<unknown>[];
  /** The meta instance's pull checkpoint row: its id, and the row to store after the stored one
   * (null: leave it). */
  checkpointId: string;
  checkpoint: (stored: RxDocumentData<unknown> | undefined) => RxDocumentData<unknown> | null;
};

/** A write checked against the stored documents, ready to commit; `pulled`: from the server. */
type Planned = { categorized: CategorizeBulkWriteRowsOutput<unknown>; rows: RowWrite[]; pulled: boolean };

const reject = (e: unknown): Promise<never> => Promise.reject(e instanceof Error ? e : new Error(String(e)));

export class SqliteStorageInstance<RxDocType> implements RxStorageInstance<RxDocType, SqliteInternals, object, SqliteCheckpoint> {
  readonly internals: SqliteInternals;
  readonly primaryPath: string;
  private closed = false;
  private removed = false;
  /** A pulled page of this collection was taken back (a failed COMMIT or slice: a full disk) after
   * RxDB may have been told its documents were written: pulled writes are refused until the
   * replication starts again from its stored checkpoint (acceptPulls), so no later page or live
   * change stores a checkpoint past the lost page (see pulledPageLost). */
  private pullsRefused = false;
  private readonly lostPageWatchers = new Set<(why: unknown) => void>();

  constructor(
    readonly databaseName: string,
    readonly collectionName: string,
    readonly schema: Readonly<RxJsonSchema<RxDocumentData<RxDocType>>>,
    readonly options: object,
    private readonly file: StorageFile,
    private readonly table: DocTable,
  ) {
    this.internals = { file: file.path, table: table.table };
    this.primaryPath = getPrimaryFieldOfPrimaryKey(schema.primaryKey);
  }

  private ensureOpen(): void {
    if (this.closed) throw new Error(`The storage instance ${this.databaseName}/${this.collectionName} is closed.`);
  }

  private get docSchema(): RxJsonSchema<Doc> {
    return this.schema as RxJsonSchema<Doc>;
  }

  /** Checked, committed and applied in one go once the file is free (StorageFile.whenFree: at once,
   * unless a worker thread is building an index; then after it, in the order asked). */
  bulkWrite(rows: BulkWriteRow<RxDocType>[], context: string): Promise<RxStorageBulkWriteResponse<RxDocType>> {
    const table = this.table;
    if (this.pullsRefused && isDownstreamWrite(context)) return reject(new Error(`${this.collectionName}: a pulled page was lost (its write failed); pulled documents are refused until the replication starts again from its stored checkpoint.`));
    // A pulled page over several turns of the event loop, in one transaction with the meta rows
    // RxDB writes next (StorageFile.openPage). A page taken back is lost to RxDB (pulledPageLost).
    if (this.joinsPage(context)) return this.file.inPage(() => this.pageSteps(rows as BulkWriteRow<unknown>[], context, context === RXDB_CONTEXT.downstreamMeta), () => table.rolledBack());
    if (isDownstreamWrite(context) && rows.length >= SLICE_TUNING.rows) {
      return this.file.openPage(table.table, () => this.pageSteps(rows as BulkWriteRow<unknown>[], context, false), (why) => {
        table.rolledBack();
        this.pulledPageLost(why);
      });
    }
    return this.file.whenFree(() => {
      const planned = this.plan(rows as BulkWriteRow<unknown>[], context);
      let written: Written | null = null;
      try {
        if (planned.rows.length > 0) written = this.file.write(!needsNoFsync(context), () => this.commit(planned));
      } catch (e) {
        if (isDownstreamWrite(context)) this.pulledPageLost(e);
        throw e;
      }
      this.apply(planned, written);
      return { error: planned.categorized.errors as RxStorageBulkWriteResponse<RxDocType>['error'] };
    });
  }

  /**
   * A pulled page of this collection was rolled back. Its documents' write may have resolved
   * already (it resolves with the page's transaction open, for the meta rows' write to join), and
   * RxDB's replication does not stop at a failed page: it stores the next page and a checkpoint
   * covering both, so the page would never be pulled again. From now on pulled writes of this
   * collection are refused (RxDB then stores no checkpoint for them) and the watchers are told,
   * in the same turn as the rollback, before the failed write's rejection reaches RxDB; the
   * replication starts again from its stored checkpoint and calls acceptPulls.
   */
  private pulledPageLost(why: unknown): void {
    this.pullsRefused = true;
    for (const w of this.lostPageWatchers) w(why);
  }

  /** Calls `watcher` with the error that lost it whenever a pulled page of this collection is lost
   * (pulledPageLost); returns the unsubscribe. */
  onPulledPageLost(watcher: (why: unknown) => void): () => void {
    this.lostPageWatchers.add(watcher);
    return () => this.lostPageWatchers.delete(watcher);
  }

  /** Takes pulled writes again: the replication that lost a page has stopped, and the one that
   * replaces it pulls from the stored checkpoint. */
  acceptPulls(): void {
    this.pullsRefused = false;
  }

  /** Whether a write joins the open pulled page: the pulled documents of its collection (RxDB
   * writes a page again when the storage refused some rows as conflicts), or their meta rows. */
  private joinsPage(context: string): boolean {
    const fork = this.file.pageOf;
    if (fork === null) return false;
    if (isDownstreamWrite(context)) return fork === this.table.table;
    return context === RXDB_CONTEXT.downstreamMeta && forkOf(this.file.db, this.table.table) === fork;
  }

  /** A write in the open page, as steps (StorageFile.inPage): checked, written row by row, applied
   * after the COMMIT. The page commits at its end (before it resolves) when it is the meta rows
   * (`meta`: RxDB's last write of a page), or when no meta write will follow: RxDB writes the
   * meta rows of the documents written, and only into an open meta table that follows the
   * collection (master-states.ts). So
   * the only time a resolved write is not yet committed is the few promise callbacks between
   * RxDB's two writes. */
  private *pageSteps(rows: BulkWriteRow<unknown>[], context: string, meta: boolean): Generator<void, PageStep<RxStorageBulkWriteResponse<RxDocType>>> {
    const planned = this.plan(rows, context);
    yield;
    const written = planned.rows.length > 0 ? yield* this.table.writing(planned.rows, planned.pulled) : null;
    const ends = meta || written === null || !followedNow(this.file, this.table.table);
    return { value: { error: planned.categorized.errors as RxStorageBulkWriteResponse<RxDocType>['error'] }, after: () => this.apply(planned, written), ends };
  }

  /**
   * Pulled documents that neither this collection nor its replication's meta instance `meta` holds
   * yet, written as one pulled page: the documents, their meta rows and the meta instance's pull
   * checkpoint row in one transaction (a kill loses all three or none), spread over turns of the
   * event loop as a page RxDB writes is, then the caches and the change events of both (the
   * collection's with `context`, RxDB's downstream write flag, as RxDB's own write of a pulled page
   * has). `load.checkpoint` gets the stored checkpoint row (or undefined) and returns the row to
   * store after it, or null to leave it. Resolves true once committed; false, with nothing written,
   * when a document or a meta row of the load is stored already (the caller then hands the page to
   * RxDB's replication, which compares them). A failed COMMIT is a lost pulled page
   * (pulledPageLost), as for RxDB's pages.
   */
  loadPulled(meta: SqliteStorageInstance<unknown>, load: PulledLoad): Promise<boolean> {
    if (this.pullsRefused) return reject(new Error(`${this.collectionName}: a pulled page was lost (its write failed); pulled documents are refused until the replication starts again from its stored checkpoint.`));
    if (meta.file !== this.file || meta === (this as SqliteStorageInstance<unknown>)) return Promise.resolve(false);
    return this.file.openPage(this.table.table, () => this.loadSteps(meta, load), (why) => {
      this.table.rolledBack();
      meta.table.rolledBack();
      this.pulledPageLost(why);
    });
  }

  private *loadSteps(meta: SqliteStorageInstance<unknown>, load: PulledLoad): Generator<void, PageStep<boolean>> {
    const nothing: PageStep<boolean> = { value: false, after: () => undefined, ends: true };
    const forkPlan = this.plan(load.docs.map((document) => ({ document })), load.context);
    if (forkPlan.categorized.errors.length > 0 || forkPlan.rows.some((r) => r.before !== undefined)) return nothing;
    const stored = meta.table.get([load.checkpointId]).get(load.checkpointId);
    const checkpoint = load.checkpoint(stored);
    const metaRows: BulkWriteRow<unknown>[] = load.metaDocs.map((document) => ({ document }));
    if (checkpoint) metaRows.push(stored ? { previous: stored, document: checkpoint } : { document: checkpoint });
    const metaPlan = meta.plan(metaRows, RXDB_CONTEXT.downstreamMeta);
    const newMetaRows = checkpoint ? metaPlan.rows.slice(0, -1) : metaPlan.rows;
    if (metaPlan.categorized.errors.length > 0 || newMetaRows.some((r) => r.before !== undefined)) return nothing;
    yield;
    const written = forkPlan.rows.length > 0 ? yield* this.table.writing(forkPlan.rows, true) : null;
    const metaWritten = metaPlan.rows.length > 0 ? yield* meta.table.writing(metaPlan.rows, true) : null;
    return {
      value: true,
      after: () => {
        this.apply(forkPlan, written);
        meta.apply(metaPlan, metaWritten);
      },
      ends: true,
    };
  }

  /** Whether a bulk load of this instance's file (any of its tables) still has indexes to build
   * (doc-table.ts, "loading"). */
  get fileLoading(): boolean {
    return fileLoading(this.file);
  }

  /** Holds this collection's next deferred index build past the load's quiet window (true, for at
   * most LOAD_HOLD_MS, renewed by each call) or releases it (false): see DocTable.holdLoad. The
   * replication holds while a pull has more pages coming. */
  holdLoad(held: boolean): void {
    if (!this.closed) this.table.holdLoad(held);
  }

  /** @internal The file this instance writes to (writeAtomically checks that parts share one). */
  get storageFile(): StorageFile {
    return this.file;
  }

  /** @internal The rows of a write that RxDB's conflict check accepts, in the order given (which
   * is the order of their sequence numbers), each with the stored document it replaces. */
  plan(rows: BulkWriteRow<unknown>[], context: string): Planned {
    this.ensureOpen();
    const ids = rows.map((r) => String((r.document as Record<string, unknown>)[this.primaryPath]));
    const stored = this.table.get(ids);
    const categorized = categorizeBulkWriteRows<unknown>(this, this.primaryPath as never, stored, rows, context);
    const refused = new Set<BulkWriteRow<unknown>>(categorized.errors.map((e) => e.writeRow));
    const out: RowWrite[] = [];
    // Two rows of one id in one write (RxDB never sends them) each count, the later one last.
    const latest = new Map(stored);
    rows.forEach((r, i) => {
      if (refused.has(r)) return;
      const id = ids[i] as string;
      out.push({ before: latest.get(id), doc: r.document });
      latest.set(id, r.document);
    });
    return { categorized, rows: out, pulled: isRefetchableWrite(context) };
  }

  /** @internal Writes a planned write to SQLite; runs inside the file's transaction. */
  commit(planned: Planned): Written {
    return this.table.write(planned.rows, planned.pulled);
  }

  /** @internal After the commit: the cache and the sequence counter, then the change event. */
  apply(planned: Planned, written: Written | null): void {
    if (!written) return;
    this.table.committed(written);
    const bulk = planned.categorized.eventBulk as ChangeBulk;
    const last = planned.rows[planned.rows.length - 1];
    if (bulk.events.length === 0 || !last) return;
    bulk.checkpoint = checkpointOf(this.primaryPath, last.doc, written.lastSeq);
    this.table.changes.next(bulk);
  }

  findDocumentsById(ids: string[], withDeleted: boolean): Promise<RxDocumentData<RxDocType>[]> {
    try {
      this.ensureOpen();
      const found = this.table.get(ids);
      const out: RxDocumentData<RxDocType>[] = [];
      for (const id of ids) {
        const d = found.get(id);
        if (d && (withDeleted || !d._deleted)) out.push(d as RxDocumentData<RxDocType>);
      }
      return Promise.resolve(out);
    } catch (e) {
      return reject(e);
    }
  }

  query(preparedQuery: PreparedQuery<RxDocType>): Promise<RxStorageQueryResult<RxDocType>> {
    try {
      this.ensureOpen();
      return Promise.resolve({ documents: runQuery(this.table, this.docSchema, preparedQuery as PreparedQuery<unknown>) as RxDocumentData<RxDocType>[] });
    } catch (e) {
      return reject(e);
    }
  }

  count(preparedQuery: PreparedQuery<RxDocType>): Promise<RxStorageCountResult> {
    try {
      this.ensureOpen();
      return Promise.resolve(runCount(this.table, this.docSchema, preparedQuery as PreparedQuery<unknown>));
    } catch (e) {
      return reject(e);
    }
  }

  getChangedDocumentsSince(limit: number, checkpoint?: SqliteCheckpoint): Promise<{ documents: RxDocumentData<RxDocType>[]; checkpoint: SqliteCheckpoint }> {
    try {
      this.ensureOpen();
      const page = changedDocumentsSince(this.table, limit, checkpoint);
      return Promise.resolve(page as { documents: RxDocumentData<RxDocType>[]; checkpoint: SqliteCheckpoint });
    } catch (e) {
      return reject(e);
    }
  }

  /** Ids of live documents whose text-search fields contain `text` (case-insensitive substring),
   * at most `limit`, ordered by one of the collection's RxDB indexes (as declared, e.g.
   * `['createdAt']`, or as RxDB fills it in) either way, or in storage order without `orderBy`.
   * Only for collections named in the storage's `textSearch` setting. */
  searchText(text: string, limit: number, orderBy?: { index: readonly string[]; direction: 'asc' | 'desc' }): string[] {
    this.ensureOpen();
    return this.table.search(text, limit, orderBy && { index: this.filledIndex(orderBy.index), direction: orderBy.direction });
  }

  /** The desktop Store's read (shared/store.ts's language) on this collection's live documents,
   * through its Store columns (store-query.ts). Synchronous, like every read here. */
  storeQuery(read: StoreRead): StoreAnswer {
    this.ensureOpen();
    return storeQuery(this.table, read);
  }

  /** storeQuery, reading a page that would sort a large table (its order's index missing during a
   * bulk load), and the texts waiting for the text index after a load, in the file's reader thread
   * instead of on the event loop. */
  storeQueryOffLoop(read: StoreRead): Promise<StoreAnswer> {
    this.ensureOpen();
    return storeQueryOffLoop(this.table, read);
  }

  /** storeCount, reading the texts waiting for the text index after a load in the file's reader
   * thread instead of on the event loop (store-query.ts findWaitingTexts). */
  storeCountOffLoop(where: Cond | undefined): Promise<number> {
    this.ensureOpen();
    return storeCountOffLoop(this.table, where);
  }

  /** Groups of live documents sharing an identity key (store-duplicates.ts). */
  storeDuplicates(kind: IdentityKind, workspaceId: string, opts: DuplicatePageOptions): DuplicatePage {
    this.ensureOpen();
    return storeDuplicateGroups(this.table, KEY_FIELDS[kind], kind, workspaceId, opts);
  }

  /** How many live documents match a Store condition. */
  storeCount(where: Cond | undefined): number {
    this.ensureOpen();
    return storeCount(this.table, where);
  }

  /** The stored documents of these ids (deleted ones included), by id, synchronously: the cached
   * copies when there (the same objects RxDB was given; not to be changed). */
  currentDocuments(ids: readonly string[]): Map<string, RxDocumentData<RxDocType>> {
    this.ensureOpen();
    return this.table.get(ids) as Map<string, RxDocumentData<RxDocType>>;
  }

  /** An index as declared in a schema, as fillWithDefaultSettings stores it. */
  private filledIndex(index: readonly string[]): string[] {
    const out = [...index];
    if (!out.includes(this.primaryPath)) out.push(this.primaryPath);
    if (out[0] !== '_deleted' && !this.table.column(out)) out.unshift('_deleted');
    return out;
  }

  /** @internal The file and the documents table, for tests and benchmarks. */
  get internalsForTests(): { file: StorageFile; table: DocTable } {
    return { file: this.file, table: this.table };
  }

  getAttachmentData(): Promise<Blob> {
    return reject(new Error(`${this.collectionName}: this storage does not store attachments.`));
  }

  changeStream(): Observable<EventBulk<RxStorageChangeEvent<RxDocType>, SqliteCheckpoint>> {
    this.ensureOpen();
    return this.table.changes.asObservable() as Observable<EventBulk<RxStorageChangeEvent<RxDocType>, SqliteCheckpoint>>;
  }

  /** Purges tombstones whose last write is `minimumDeletedTime` ms old or older, all at once. */
  cleanup(minimumDeletedTime: number): Promise<boolean> {
    return this.file.whenFree(() => {
      this.ensureOpen();
      const maxLwt = rxNow() - minimumDeletedTime;
      const purged = this.file.write(true, () => this.table.purge(maxLwt));
      this.table.purged(purged);
      return true;
    });
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.table.release();
    return this.file.release();
  }

  async remove(): Promise<void> {
    await this.file.whenFree(() => {
      this.ensureOpen();
      if (!this.removed) this.file.write(true, () => this.table.drop());
      this.removed = true;
    });
    return this.close();
  }
}

/** A write found a document in another state than its `previous` row: nothing was written. */
export class AtomicWriteConflict extends Error {
  constructor(readonly conflicts: number) {
    super(`${conflicts} document(s) changed since they were read; nothing was written.`);
    this.name = 'AtomicWriteConflict';
  }
}

/**
 * Writes rows to several storage instances of one database all-or-nothing (the desktop Store's
 * commit spans collections): RxDB's conflict check over every part, one SQLite transaction, then
 * the caches and change events, all in one synchronous run once the file is free (StorageFile.
 * whenFree), so no other write lands in between. Rejects with AtomicWriteConflict or the disk
 * error; either way nothing was written.
 */
export function writeAtomically(parts: readonly { instance: SqliteStorageInstance<unknown>; rows: BulkWriteRow<unknown>[] }[], context: string): Promise<void> {
  try {
    const first = parts[0];
    if (!first) return Promise.resolve();
    const file = first.instance.storageFile;
    if (new Set(parts.map((p) => p.instance)).size !== parts.length) throw new Error('writeAtomically takes one part per storage instance.');
    if (parts.some((p) => p.instance.storageFile !== file)) throw new Error('writeAtomically needs storage instances of one database.');
    return file.whenFree(() => commitAtomically(file, parts, context));
  } catch (e) {
    return reject(e);
  }
}

function commitAtomically(file: StorageFile, parts: readonly { instance: SqliteStorageInstance<unknown>; rows: BulkWriteRow<unknown>[] }[], context: string): void {
  const planned = parts.map((p) => p.instance.plan(p.rows, context));
  const conflicts = planned.reduce((n, p) => n + p.categorized.errors.length, 0);
  if (conflicts > 0) throw new AtomicWriteConflict(conflicts);
  const written = file.write(!needsNoFsync(context), () =>
    parts.map((p, i) => {
      const plan = planned[i];
      return plan && plan.rows.length > 0 ? p.instance.commit(plan) : null;
    }),
  );
  parts.forEach((p, i) => {
    const plan = planned[i];
    if (plan) p.instance.apply(plan, written[i] ?? null);
  });
}
