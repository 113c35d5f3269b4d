/**
 * One RxDB storage instance (a collection, RxDB's internal store, or a replication meta instance)
 * on its documents table. A write is checked against the stored documents (RxDB's own
 * categorizeBulkWriteRows: a stale `previous` is a 409 with the stored document), committed to
 * SQLite in one transaction (documents, index columns, text index), and only then put into the
 * cache and emitted on the change stream, all before the returned promise resolves; a failed
 * SQLite write rejects the whole write and changes nothing. Everything runs synchronously
 * (better-sqlite3 is synchronous), so no other write interleaves.
 *
 * Attachments are not stored: no collection of this app has them, and a schema that declares
 * them is refused when the instance is created.
 */
import { categorizeBulkWriteRows, getPrimaryFieldOfPrimaryKey, now as rxNow } from 'rxdb';
import type { BulkWriteRow, CategorizeBulkWriteRowsOutput, EventBulk, PreparedQuery, RxDocumentData, RxJsonSchema, RxStorageBulkWriteResponse, RxStorageChangeEvent, RxStorageCountResult, RxStorageInstance, RxStorageQueryResult } from 'rxdb';
import type { Observable } from 'rxjs';
import { changedDocumentsSince, checkpointOf } from './changes.ts';
import { fileLoading } from './doc-table.ts';
import type { ChangeBulk, Doc, DocTable, RowWrite, SqliteCheckpoint, Written } from './doc-table.ts';
import { isRefetchableWrite } from '../../rxdb-internals.ts';
import type { StorageFile } from './file.ts';
import { runCount, runQuery } from './query.ts';
import { storeCount, storeQuery } from './store-query.ts';
import type { StoreAnswer, StoreRead } from './store-query.ts';
import type { Cond, DuplicatePage, DuplicatePageOptions } from '../../../../shared/store.ts';
import { KEY_FIELDS } from '../../../../shared/intake/identity.ts';
import type { IdentityKind } from '../../../../shared/intake/identity.ts';
import { storeDuplicateGroups } from './store-duplicates.ts';

export type SqliteInternals = { file: string; table: string };

/** A write checked against the stored documents, ready to commit; `pulled`: from the server;
 * `whole`: rows of the bulk write it is part of (a write in turns plans and commits a slice at a time). */
type Planned = { categorized: CategorizeBulkWriteRowsOutput<unknown>; rows: RowWrite[]; pulled: boolean; whole: number };

/**
 * Rows a pulled write writes per turn of the event loop. A pulled page (2,000 documents) written in
 * one turn held the loop for its whole write (checking, JSON, index strings, SQLite rows, text rows:
 * the bench measured 266-323 ms); a longer write of documents the server also holds is one
 * transaction written a slice per turn (bulkWriteInTurns).
 */
export const TURN_ROWS = 250;

const reject = (e: unknown): Promise<never> => Promise.reject(e instanceof Error ? e : new Error(String(e)));

export class SqliteStorageInstance<RxDocType> implements RxStorageInstance<RxDocType, SqliteInternals, object, SqliteCheckpoint> {
  readonly internals: SqliteInternals;
  readonly primaryPath: string;
  private closed = false;
  private removed = false;
  /** Writes in turns under way (close waits for them). */
  private readonly inTurns = new Set<Promise<void>>();

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

  /** @internal Throws once the instance is closed (writeAtomically checks its parts). */
  ensureOpen(): void {
    if (this.closed) throw new Error(`The storage instance ${this.databaseName}/${this.collectionName} is closed.`);
  }

  private get docSchema(): RxJsonSchema<Doc> {
    return this.schema as RxJsonSchema<Doc>;
  }

  /** Checked, committed and applied in one go once the file is free (StorageFile.whenFree: at once,
   * unless a worker thread is building an index; then after it, in the order asked). */
  bulkWrite(rows: BulkWriteRow<RxDocType>[], context: string): Promise<RxStorageBulkWriteResponse<RxDocType>> {
    if (rows.length > TURN_ROWS && isRefetchableWrite(context)) return this.bulkWriteInTurns(rows as BulkWriteRow<unknown>[], context);
    return this.file.whenFree(() => {
      this.ensureOpen();
      return { error: this.writeSlice(rows as BulkWriteRow<unknown>[], context) as RxStorageBulkWriteResponse<RxDocType>['error'] };
    });
  }

  /** Checks, commits and applies a write; returns the refused rows. */
  private writeSlice(rows: BulkWriteRow<unknown>[], context: string): CategorizeBulkWriteRowsOutput<unknown>['errors'] {
    const planned = this.plan(rows, context);
    let written: Written | null = null;
    if (planned.rows.length > 0) written = this.file.write(!isRefetchableWrite(context), () => this.commit(planned));
    this.apply(planned, written);
    return planned.categorized.errors;
  }

  /**
   * A long write of documents the server also holds (a pulled page and its assumed-master states)
   * in one transaction spread over turns of the event loop (StorageFile.writeInTurns), TURN_ROWS
   * rows a turn, each slice checked against what the slices before it wrote: every other write
   * waits until it has committed, so the order of writes is kept, and the page is committed whole or
   * not at all, as in one turn. The cache, the counters and the change stream (one event bulk per
   * slice, in order) are updated once SQLite committed. If it failed, the cache is emptied (a read
   * between two slices may have cached a document the rollback took back). Started while the
   * instance was open, it runs to its end even if the instance closes meanwhile (close waits).
   */
  private bulkWriteInTurns(rows: BulkWriteRow<unknown>[], context: string): Promise<RxStorageBulkWriteResponse<RxDocType>> {
    const run = this.file.writeInTurns(false, () => this.slices(rows, context)).catch((e: unknown) => {
      this.table.cache.clear();
      throw e;
    });
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.inTurns.add(settled);
    void settled.then(() => this.inTurns.delete(settled));
    return run;
  }

  /** The turns of bulkWriteInTurns, one slice each; returns what to apply once committed. */
  private *slices(rows: BulkWriteRow<unknown>[], context: string): Generator<void, () => RxStorageBulkWriteResponse<RxDocType>> {
    this.ensureOpen();
    const done: { planned: Planned; written: Written | null }[] = [];
    let lastSeq: number | undefined;
    for (let at = 0; at < rows.length; at += TURN_ROWS) {
      if (at > 0) yield;
      const planned = this.plan(rows.slice(at, at + TURN_ROWS), context, rows.length);
      const written = planned.rows.length > 0 ? this.table.write(planned.rows, planned.pulled, planned.whole, lastSeq) : null;
      if (written) lastSeq = written.lastSeq;
      done.push({ planned, written });
    }
    return () => {
      for (const d of done) this.apply(d.planned, d.written);
      return { error: done.flatMap((d) => d.planned.categorized.errors) as RxStorageBulkWriteResponse<RxDocType>['error'] };
    };
  }

  /** Whether a bulk load of this instance's file (any of its tables) still has indexes to build
   * (doc-table.ts, "loading"). */
  get fileLoading(): boolean {
    return fileLoading(this.file);
  }

  /** @internal The file this instance writes to (writeAtomically checks that parts share one). */
  get storageFile(): StorageFile {
    return this.file;
  }

  /** @internal The rows of a write that RxDB's conflict check accepts, in the order given (which
   * is the order of their sequence numbers), each with the stored document it replaces. */
  plan(rows: BulkWriteRow<unknown>[], context: string, whole = rows.length): Planned {
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
    return { categorized, rows: out, pulled: isRefetchableWrite(context), whole };
  }

  /** @internal Writes a planned write to SQLite; runs inside the file's transaction. */
  commit(planned: Planned): Written {
    return this.table.write(planned.rows, planned.pulled, planned.whole);
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.inTurns);
    this.table.release();
    await this.file.release();
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
  for (const p of parts) p.instance.ensureOpen();
  const planned = parts.map((p) => p.instance.plan(p.rows, context));
  const conflicts = planned.reduce((n, p) => n + p.categorized.errors.length, 0);
  if (conflicts > 0) throw new AtomicWriteConflict(conflicts);
  const written = file.write(!isRefetchableWrite(context), () =>
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
