/**
 * The PREVIOUS desktop storage ("persisted-memory", the app's storage until issue 22), kept here
 * only so that tests can write data folders exactly as the previous release wrote them: the app
 * itself no longer opens this format, it moves it into the SQLite storage once
 * (electron/backend/storage/sqlite/migrate.ts reads the file with SQL, not with this code).
 * Used by the migration tests (sqlite-storage-migrate, local-db-migration, local-db-upgrade).
 * What follows is its description as it shipped.
 *
 * The desktop's RxDB storage, implemented directly over better-sqlite3 (one file per RxDB database,
 * one row per document: the whole RxDB document as JSON with `_rev`, `_meta` and `_deleted`). Every
 * successful write is committed to SQLite before the write resolves.
 *
 * Two kinds of storage instances share the file:
 * - Collections (and RxDB's internal store) keep ONE parsed copy of their documents in memory, in a
 *   Map by id, loaded at open. Reads, conflict checks and the desktop Store's views
 *   (../rxdb-store.ts) use these very objects: the view, the storage and the change events share
 *   them, so a document is in the heap once.
 * - Replication meta instances (RxDB's per-document "assumed master" states and checkpoints, schema
 *   title RxReplicationProtocolMetaData) live on disk only: RxDB reads them by id, which is a
 *   primary-key lookup in SQLite. They would otherwise be a second full copy of every document.
 *
 * Why not RxDB's memory storage (the previous design) or a pure SQL storage: the memory storage
 * kept a second copy of every document per schema index as sorted index strings, plus the meta
 * copies, ~3x the documents' size at 100k leads; the desktop Store answers its queries from its
 * own views, so RxDB-level indexes are not needed. RxDB queries (rare here: RxDB's own bookkeeping,
 * tests) are evaluated with RxDB's own query matcher and sort comparator over the documents.
 * Replication asks for changed documents through getChangedDocumentsSince(), answered from an
 * array kept in `[_meta.lwt, id]` order, built on first use.
 *
 * Pitfalls handled here:
 * - The write order: a bulk write is categorized (conflict check) against the current state, the
 *   accepted rows are committed to SQLite in one transaction, and only then applied to memory and
 *   emitted. All steps run synchronously (better-sqlite3 is synchronous), so no other write can
 *   interleave, and a failed SQLite write rejects the bulk write with memory untouched.
 * - Durability: synchronous=FULL (configurable) fsyncs every acknowledged local write. Writes of the
 *   replication's downstream (documents pulled from the server, their assumed-master rows and the
 *   checkpoints) are committed with synchronous=NORMAL: in WAL mode a power cut can only drop a
 *   suffix of transactions, so pulled documents and their checkpoint are lost together and pulled
 *   again; the next local write's fsync covers them anyway. A killed process loses nothing.
 * - A closed instance's memory is dropped when its last user closes: a reopen reads the disk.
 * - One process owns the file: SQLite runs in EXCLUSIVE locking mode and takes the write lock at
 *   open, so a second opener (another process, or another database object in this process) gets a
 *   StorageLockedError at once. The OS drops the lock when the owner dies, even by SIGKILL.
 *
 * This file implements the RxStorage interface of rxdb 17.6.0 (pinned exactly in package.json).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { Subject } from 'rxjs';
import type { Observable } from 'rxjs';
import {
  META_INSTANCE_SCHEMA_TITLE,
  RXDB_VERSION,
  categorizeBulkWriteRows,
  ensureRxStorageInstanceParamsAreCorrect,
  getPrimaryFieldOfPrimaryKey,
  getQueryMatcher,
  getSortComparator,
  now as rxNow,
} from 'rxdb';
import type {
  BulkWriteRow,
  CategorizeBulkWriteRowsOutput,
  EventBulk,
  PreparedQuery,
  RxDocumentData,
  RxJsonSchema,
  RxStorage,
  RxStorageBulkWriteResponse,
  RxStorageChangeEvent,
  RxStorageCountResult,
  RxStorageDefaultCheckpoint,
  RxStorageInstance,
  RxStorageInstanceCreationParams,
  RxStorageQueryResult,
} from 'rxdb';
import { isRefetchableWrite } from '../../electron/backend/rxdb-internals.ts';

export type PersistedMemorySettings = {
  /** Folder holding one SQLite file per RxDB database name. */
  directory: string;
  /**
   * FULL (default): every acknowledged local write is fsynced, so it survives a power cut or an OS
   * crash, not only a killed process. It costs one fsync per bulk write (per user action, never per
   * document), a few milliseconds on a laptop disk, which is invisible next to a click. NORMAL
   * skips that fsync in WAL mode: still safe against a crashed or killed app, but a power cut may
   * drop the last few acknowledged writes. Offline edits may exist nowhere else, so durability wins
   * by default. (Pulled documents are always written with NORMAL: see the file comment.)
   */
  synchronous?: 'FULL' | 'NORMAL';
};

/** Another process (or another database object in this process) owns the database file. */
export class StorageLockedError extends Error {
  readonly code = 'DATABASE_LOCKED';
  constructor(readonly file: string, reason: string) {
    super(`The local database ${file} is already open ${reason}. Only one copy of the app may use a data folder at a time; close the other one (or pick another data folder) and try again.`);
    this.name = 'StorageLockedError';
  }
}

/** Version of the on-disk layout, so a future layout change is detected instead of misread. */
const FORMAT_VERSION = 1;

type Doc<T> = RxDocumentData<T>;
type ChangeBulk<T> = EventBulk<RxStorageChangeEvent<Doc<T>>, RxStorageDefaultCheckpoint>;

/** `[_meta.lwt, id]` order, the order of getChangedDocumentsSince. */
function lwtOrder(primaryPath: string): (a: Doc<unknown>, b: Doc<unknown>) => number {
  return (a, b) => {
    const d = a._meta.lwt - b._meta.lwt;
    if (d !== 0) return d;
    const ia = String((a as Record<string, unknown>)[primaryPath]);
    const ib = String((b as Record<string, unknown>)[primaryPath]);
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  };
}

/** Distinct strings an Interner keeps at most (beyond that, only strings it already has are shared). */
const MAX_INTERNED = 50_000;

/**
 * Shares equal reference strings between documents: a workspace's 100k leads all carry the same
 * workspaceId, and a handful of leadGroupId, tagId and pipelineStageId values, but JSON.parse and
 * the replication make a new string for each (~300 bytes per lead). Only top-level `...Id` fields
 * and `...Ids` arrays (never the primary key, which is unique): the values stay equal, only their
 * identity changes, so documents are changed in place (they are about to be stored and never
 * changed afterwards).
 */
class Interner {
  private readonly strings = new Map<string, string>();

  constructor(private readonly primaryPath: string) {}

  doc(doc: object): void {
    if (Object.isFrozen(doc)) return;
    const d = doc as Record<string, unknown>;
    for (const k of Object.keys(d)) {
      if (k === this.primaryPath) continue;
      const v = d[k];
      if (typeof v === 'string') {
        if (k.endsWith('Id') && v.length <= 64) d[k] = this.one(v);
      } else if (Array.isArray(v) && k.endsWith('Ids') && !Object.isFrozen(v)) {
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          if (typeof x === 'string' && x.length <= 64) v[i] = this.one(x);
        }
      }
    }
  }

  private one(s: string): string {
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    if (this.strings.size < MAX_INTERNED) this.strings.set(s, s);
    return s;
  }
}

/**
 * The shared state of one storage instance name (collection + schema version) in one file: the
 * documents in memory (null for disk-only instances), the change stream, and how many open
 * instances use it.
 */
class InstanceState<T> {
  refs = 0;
  readonly changes = new Subject<ChangeBulk<T>>();
  /** Documents in `[_meta.lwt, id]` order, built on the first getChangedDocumentsSince. */
  private byLwt: Doc<T>[] | null = null;
  private readonly order: (a: Doc<T>, b: Doc<T>) => number;
  private readonly interner: Interner;

  constructor(
    readonly primaryPath: string,
    readonly docs: Map<string, Doc<T>> | null,
  ) {
    this.order = lwtOrder(primaryPath);
    this.interner = new Interner(primaryPath);
  }

  /** Adds a document read from disk at open. */
  load(doc: Doc<T>): void {
    this.interner.doc(doc);
    this.docs?.set(String((doc as Record<string, unknown>)[this.primaryPath]), doc);
  }

  /** Puts accepted documents into memory (the conflict check already ran against `docs`). */
  put(accepted: readonly Doc<T>[]): void {
    const docs = this.docs;
    if (!docs) return;
    const list = this.byLwt;
    for (const doc of accepted) {
      const id = String((doc as Record<string, unknown>)[this.primaryPath]);
      this.interner.doc(doc);
      const old = docs.get(id);
      docs.set(id, doc);
      if (!list) continue;
      if (old) {
        const at = this.position(list, old);
        if (list[at] === old) list.splice(at, 1);
        else {
          const i = list.indexOf(old);
          if (i >= 0) list.splice(i, 1);
        }
      }
      const at = this.position(list, doc);
      if (at === list.length) list.push(doc);
      else list.splice(at, 0, doc);
    }
  }

  remove(ids: readonly string[]): void {
    const docs = this.docs;
    if (!docs) return;
    for (const id of ids) docs.delete(id);
    if (this.byLwt) this.byLwt = null;
  }

  /** First position whose document does not sort before `doc`. */
  private position(list: readonly Doc<T>[], doc: Doc<T>): number {
    let lo = 0;
    let hi = list.length;
    // Appends are the common case (new writes carry the newest lwt).
    const last = list[hi - 1];
    if (last === undefined || this.order(last, doc) < 0) return hi;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.order(list[mid] as Doc<T>, doc) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  changedSince(limit: number, checkpoint: RxStorageDefaultCheckpoint | undefined): { documents: Doc<T>[]; checkpoint: RxStorageDefaultCheckpoint } {
    const docs = this.docs ?? new Map<string, Doc<T>>();
    this.byLwt ??= [...docs.values()].sort(this.order);
    const list = this.byLwt;
    let start = 0;
    if (checkpoint) {
      const probe = { [this.primaryPath]: checkpoint.id, _meta: { lwt: checkpoint.lwt } } as unknown as Doc<T>;
      // First document strictly after the checkpoint.
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.order(list[mid] as Doc<T>, probe) <= 0) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
    const documents = list.slice(start, start + limit);
    const last = documents[documents.length - 1];
    return {
      documents,
      checkpoint: last ? { id: String((last as Record<string, unknown>)[this.primaryPath]), lwt: last._meta.lwt } : (checkpoint ?? { id: '', lwt: 0 }),
    };
  }
}

/** Documents to write, serialised only inside the transaction: each JSON text dies right after
 * SQLite copied it, instead of a whole page of them surviving young-generation collections (which
 * makes V8 grow its young generation, resident memory it keeps). */
type DiskRows = { inst: string; rows: { id: string; doc: object }[] };

/** One SQLite file shared by every storage instance of one RxDB database (collections, the internal
 * store, replication metadata): one connection, one lock, one transaction per bulk write. */
class SqliteFile {
  private refs = 0;
  readonly states = new Map<string, InstanceState<unknown>>();
  private readonly upsert: Statement<[string, string, string]>;
  private readonly deleteOne: Statement<[string, string]>;
  private readonly deleteInstance: Statement<[string]>;
  private readonly loadInstance: Statement<[string], string>;
  private readonly getOne: Statement<[string, string], string>;
  private readonly getMany: Statement<[string, string], { id: string; data: string }>;

  constructor(
    readonly path: string,
    readonly owner: string,
    private readonly db: SqliteDatabase,
    private readonly synchronous: 'FULL' | 'NORMAL',
  ) {
    this.upsert = db.prepare('INSERT INTO docs (inst, id, data) VALUES (?, ?, ?) ON CONFLICT (inst, id) DO UPDATE SET data = excluded.data');
    this.deleteOne = db.prepare('DELETE FROM docs WHERE inst = ? AND id = ?');
    this.deleteInstance = db.prepare('DELETE FROM docs WHERE inst = ?');
    this.loadInstance = db.prepare<[string], string>('SELECT data FROM docs WHERE inst = ?').pluck();
    this.getOne = db.prepare<[string, string], string>('SELECT data FROM docs WHERE inst = ? AND id = ?').pluck();
    this.getMany = db.prepare<[string, string], { id: string; data: string }>('SELECT id, data FROM docs WHERE inst = ? AND id IN (SELECT value FROM json_each(?))');
  }

  retain(): void {
    this.refs++;
  }

  /** Returns true when this was the last user (the connection is closed and the lock released). */
  release(): boolean {
    this.refs--;
    if (this.refs > 0) return false;
    OPEN_FILES.delete(this.path);
    this.db.close();
    return true;
  }

  /**
   * Calls `fn` with every stored document of the instance. Rows are parsed a few hundred KB at a
   * time, as one JSON array: V8 allocates what JSON.parse builds from a text that large directly
   * in the old generation, so loading 100k documents neither churns nor grows the young
   * generation; and the JSON text of all rows is never held at once.
   */
  forEach<T>(inst: string, fn: (doc: Doc<T>) => void): void {
    let texts: string[] = [];
    let size = 0;
    const flush = () => {
      const docs = JSON.parse(`[${texts.join(',')}]`) as Doc<T>[];
      texts = [];
      size = 0;
      for (const d of docs) fn(d);
    };
    // Synchronous to the end: the connection is busy while a statement iterates.
    for (const data of this.loadInstance.iterate(inst)) {
      texts.push(data);
      size += data.length;
      if (size >= LOAD_CHUNK_CHARS) flush();
    }
    if (texts.length > 0) flush();
  }

  /** The stored documents of these ids (deleted ones included), by id. */
  get<T>(inst: string, ids: readonly string[]): Map<string, Doc<T>> {
    const out = new Map<string, Doc<T>>();
    if (ids.length <= 4) {
      for (const id of ids) {
        if (out.has(id)) continue;
        const json = this.getOne.get(inst, id);
        if (json !== undefined) out.set(id, JSON.parse(json) as Doc<T>);
      }
      return out;
    }
    // A replication page asks for up to 2000 ids at once: one statement instead of one call each.
    for (const row of this.getMany.iterate(inst, JSON.stringify(ids))) out.set(row.id, JSON.parse(row.data) as Doc<T>);
    return out;
  }

  /** Writes every row of every instance in one transaction; throws (and writes nothing) if SQLite
   * fails. `durable: false` skips the fsync (see the file comment). */
  write(groups: readonly DiskRows[], durable: boolean): void {
    const relax = !durable && this.synchronous === 'FULL';
    if (relax) this.db.pragma('synchronous = NORMAL');
    try {
      this.db.transaction(() => {
        for (const g of groups) for (const r of g.rows) this.upsert.run(g.inst, r.id, JSON.stringify(r.doc));
      })();
    } finally {
      if (relax) this.db.pragma('synchronous = FULL');
    }
  }

  /** @internal The connection's current synchronous setting (0 OFF, 1 NORMAL, 2 FULL), for tests. */
  synchronousNow(): number {
    return Number(this.db.pragma('synchronous', { simple: true }));
  }

  purge(inst: string, ids: readonly string[]): void {
    this.db.transaction(() => {
      for (const id of ids) this.deleteOne.run(inst, id);
    })();
  }

  drop(inst: string): void {
    this.deleteInstance.run(inst);
  }
}

/** Above V8's JSON.parse pretenuring threshold (100 KiB of source text). */
const LOAD_CHUNK_CHARS = 256 * 1024;

/** Open files by absolute path. A second database object in this process must not share one. */
const OPEN_FILES = new Map<string, SqliteFile>();

const isBusy = (e: unknown): boolean =>
  e instanceof Error && ((e as { code?: unknown }).code === 'SQLITE_BUSY' || (e as { code?: unknown }).code === 'SQLITE_LOCKED');

function openFile(path: string, owner: string, synchronous: 'FULL' | 'NORMAL'): SqliteFile {
  const existing = OPEN_FILES.get(path);
  if (existing) {
    if (existing.owner !== owner) throw new StorageLockedError(path, 'by another database object in this process');
    existing.retain();
    return existing;
  }
  // timeout 0: a locked file must fail at once with a clear error, not hang for the busy timeout.
  const db = new Database(path, { timeout: 0 });
  try {
    // EXCLUSIVE before WAL: the lock is held from the first write until close, and WAL then needs
    // no shared-memory index (no other connection may read anyway).
    db.pragma('locking_mode = EXCLUSIVE');
    // 16 KB pages for a new file (an existing file keeps its size): a document row is ~1 KB, and
    // bigger pages mean fewer B-tree pages and WAL frames per pulled page; measured ~25% faster
    // bulk writes of 1 KB rows here. Must precede WAL mode.
    db.pragma('page_size = 16384');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    // Checkpoint the WAL every ~32 MB instead of every 1000 pages: each checkpoint fsyncs, and a
    // 100k-document pull writes ~250 MB; the WAL file is truncated back after a checkpoint.
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    db.pragma(`wal_autocheckpoint = ${Math.max(1000, Math.round((32 * 1024 * 1024) / pageSize))}`);
    db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
    // Take the write lock now, so the second opener is refused at open and not at its first write.
    db.exec('BEGIN EXCLUSIVE');
    db.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS docs (inst TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (inst, id));`);
    const row = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'format'").get();
    if (!row) db.prepare("INSERT INTO meta (key, value) VALUES ('format', ?)").run(String(FORMAT_VERSION));
    else if (Number(row.value) !== FORMAT_VERSION) {
      throw new Error(`The local database ${path} has storage format ${row.value}; this version of the app reads format ${FORMAT_VERSION}. Update the app.`);
    }
    db.exec('COMMIT');
  } catch (e) {
    db.close();
    if (isBusy(e)) throw new StorageLockedError(path, 'by another process');
    throw e;
  }
  const file = new SqliteFile(path, owner, db, synchronous);
  file.retain();
  OPEN_FILES.set(path, file);
  return file;
}

/** A file name for an RxDB database name (RxDB names are already tame; this keeps paths safe). */
const fileNameFor = (databaseName: string): string => `${databaseName.replace(/[^A-Za-z0-9_.-]/g, '_')}.sqlite`;

export type PersistedMemoryInternals = { file: string; inst: string; inMemory: boolean };

/** A bulk write checked against the current state, ready for disk and memory. */
type Planned<T> = { categorized: CategorizeBulkWriteRowsOutput<T>; disk: DiskRows };

export class PersistedMemoryInstance<RxDocType> implements RxStorageInstance<RxDocType, PersistedMemoryInternals, object, RxStorageDefaultCheckpoint> {
  readonly internals: PersistedMemoryInternals;
  private readonly primaryPath: string;
  private closed = false;
  /** Only on in-memory instances; RxDB falls back to a query on the others. */
  readonly getChangedDocumentsSince?: (limit: number, checkpoint?: RxStorageDefaultCheckpoint) => Promise<{ documents: Doc<RxDocType>[]; checkpoint: RxStorageDefaultCheckpoint }>;

  constructor(
    readonly databaseName: string,
    readonly collectionName: string,
    readonly schema: Readonly<RxJsonSchema<Doc<RxDocType>>>,
    readonly options: object,
    private readonly file: SqliteFile,
    private readonly state: InstanceState<RxDocType>,
    inst: string,
  ) {
    this.internals = { file: file.path, inst, inMemory: state.docs !== null };
    this.primaryPath = getPrimaryFieldOfPrimaryKey(schema.primaryKey);
    if (state.docs) {
      this.getChangedDocumentsSince = (limit, checkpoint) => {
        this.ensureOpen();
        return Promise.resolve(this.state.changedSince(limit, checkpoint));
      };
    }
  }

  private ensureOpen(): void {
    if (this.closed) throw new Error(`The storage instance ${this.databaseName}/${this.collectionName} is closed.`);
  }

  private idOf(doc: Doc<RxDocType>): string {
    return String((doc as Record<string, unknown>)[this.primaryPath]);
  }

  bulkWrite(rows: BulkWriteRow<RxDocType>[], context: string): Promise<RxStorageBulkWriteResponse<RxDocType>> {
    try {
      const planned = this.plan(rows, context);
      // Throws on failure: the write is rejected and memory was not touched.
      if (planned.disk.rows.length > 0) this.file.write([planned.disk], !isRefetchableWrite(context));
      this.apply(planned);
      return Promise.resolve({ error: planned.categorized.errors });
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  /** @internal The rows this write will accept (conflict check against the current state) and
   * their disk form. Synchronous, so a caller can plan, write to disk and apply within one tick. */
  plan(rows: BulkWriteRow<RxDocType>[], context: string): Planned<RxDocType> {
    this.ensureOpen();
    const current = this.state.docs ?? this.file.get<RxDocType>(this.internals.inst, rows.map((r) => this.idOf(r.document)));
    const categorized = categorizeBulkWriteRows<RxDocType>(this, this.primaryPath as never, current, rows, context);
    const diskRows: DiskRows['rows'] = [];
    for (const r of categorized.bulkInsertDocs) diskRows.push({ id: this.idOf(r.document), doc: r.document });
    for (const r of categorized.bulkUpdateDocs) diskRows.push({ id: this.idOf(r.document), doc: r.document });
    return { categorized, disk: { inst: this.internals.inst, rows: diskRows } };
  }

  /** @internal Applies a plan already written to disk: memory, then the change event. */
  apply(planned: Planned<RxDocType>): void {
    const c = planned.categorized;
    const accepted: Doc<RxDocType>[] = [];
    for (const r of c.bulkInsertDocs) accepted.push(r.document);
    for (const r of c.bulkUpdateDocs) accepted.push(r.document);
    this.state.put(accepted);
    if (c.eventBulk.events.length > 0 && c.newestRow) {
      const last = c.newestRow.document;
      c.eventBulk.checkpoint = { id: this.idOf(last), lwt: last._meta.lwt };
      this.state.changes.next(c.eventBulk);
    }
  }

  /** @internal */
  get sqliteFile(): SqliteFile {
    return this.file;
  }

  /** Every stored document (deleted ones included) by id, as it is now: the very objects the
   * storage holds, so callers must not change them. Synchronous access for the desktop Store,
   * which must read and write within one tick. Only in-memory instances have it. */
  currentDocuments(): ReadonlyMap<string, Doc<RxDocType>> {
    this.ensureOpen();
    if (!this.state.docs) throw new Error(`${this.collectionName} is kept on disk only.`);
    return this.state.docs;
  }

  findDocumentsById(ids: string[], withDeleted: boolean): Promise<Doc<RxDocType>[]> {
    this.ensureOpen();
    const docs = this.state.docs ?? this.file.get<RxDocType>(this.internals.inst, ids);
    const out: Doc<RxDocType>[] = [];
    for (const id of ids) {
      const d = docs.get(id);
      if (d && (withDeleted || !d._deleted)) out.push(d);
    }
    return Promise.resolve(out);
  }

  /** Every stored document, for RxDB queries (rare here: RxDB's bookkeeping and small collections). */
  private all(): Iterable<Doc<RxDocType>> {
    if (this.state.docs) return this.state.docs.values();
    const out: Doc<RxDocType>[] = [];
    this.file.forEach<RxDocType>(this.internals.inst, (d) => out.push(d));
    return out;
  }

  query(preparedQuery: PreparedQuery<RxDocType>): Promise<RxStorageQueryResult<RxDocType>> {
    this.ensureOpen();
    const q = preparedQuery.query;
    const matches = getQueryMatcher(this.schema, q);
    let rows: Doc<RxDocType>[] = [];
    for (const d of this.all()) if (matches(d)) rows.push(d);
    rows.sort(getSortComparator(this.schema, q));
    const skip = q.skip ?? 0;
    const limit = typeof q.limit === 'number' ? q.limit : Infinity;
    if (skip > 0 || rows.length > skip + limit) rows = rows.slice(skip, skip + limit);
    return Promise.resolve({ documents: rows });
  }

  count(preparedQuery: PreparedQuery<RxDocType>): Promise<RxStorageCountResult> {
    this.ensureOpen();
    const matches = getQueryMatcher(this.schema, preparedQuery.query);
    let count = 0;
    for (const d of this.all()) if (matches(d)) count++;
    return Promise.resolve({ count, mode: 'fast' });
  }

  getAttachmentData(): Promise<Blob> {
    return Promise.reject(new Error('The persisted-memory storage does not store attachments.'));
  }

  changeStream(): Observable<ChangeBulk<RxDocType>> {
    this.ensureOpen();
    return this.state.changes.asObservable();
  }

  /** Purges tombstones older than `minimumDeletedTime` ms: disk first, so a failed purge changes
   * nothing. */
  cleanup(minimumDeletedTime: number): Promise<boolean> {
    this.ensureOpen();
    const maxDeletionTime = rxNow() - minimumDeletedTime;
    const ids: string[] = [];
    for (const d of this.all()) if (d._deleted && d._meta.lwt <= maxDeletionTime) ids.push(this.idOf(d));
    if (ids.length > 0) {
      this.file.purge(this.internals.inst, ids);
      this.state.remove(ids);
    }
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.releaseState();
    this.file.release();
    return Promise.resolve();
  }

  remove(): Promise<void> {
    this.ensureOpen();
    this.file.drop(this.internals.inst);
    this.state.docs?.clear();
    return this.close();
  }

  /** The last user of a state drops it: the next open reads the disk. */
  private releaseState(): void {
    this.state.refs--;
    if (this.state.refs > 0) return;
    if (this.file.states.get(this.internals.inst) === this.state) this.file.states.delete(this.internals.inst);
    this.state.changes.complete();
  }
}

/** The persisted-memory instance behind an RxDB collection's (wrapped) storage instance, or null. */
export function persistedInstanceOf<RxDocType>(instance: unknown): PersistedMemoryInstance<RxDocType> | null {
  let cur: unknown = instance;
  for (let i = 0; i < 4 && cur !== null && typeof cur === 'object'; i++) {
    if (cur instanceof PersistedMemoryInstance) return cur as PersistedMemoryInstance<RxDocType>;
    cur = (cur as { originalStorageInstance?: unknown }).originalStorageInstance;
  }
  return null;
}

/** A write found a document in another state than its `previous` row: nothing was written. */
export class AtomicWriteConflict extends Error {
  constructor(readonly conflicts: number) {
    super(`${conflicts} document(s) changed since they were read; nothing was written.`);
    this.name = 'AtomicWriteConflict';
  }
}

/**
 * Writes rows to several storage instances of one database all-or-nothing: one conflict check over
 * all of them, one SQLite transaction, then memory. Synchronous, so no other write (a replication
 * pull, another commit) can land in between (the returned promise only reports the outcome).
 * Throws AtomicWriteConflict or the disk error; in both cases nothing was written anywhere.
 */
export async function writeAtomically<RxDocType>(parts: readonly { instance: PersistedMemoryInstance<RxDocType>; rows: BulkWriteRow<RxDocType>[] }[], context: string): Promise<void> {
  const first = parts[0];
  if (!first) return;
  const file = first.instance.sqliteFile;
  if (new Set(parts.map((p) => p.instance)).size !== parts.length) throw new Error('writeAtomically takes one part per storage instance.');
  let conflicts = 0;
  const planned: Planned<RxDocType>[] = [];
  for (const p of parts) {
    if (p.instance.sqliteFile !== file) throw new Error('writeAtomically needs storage instances of one database.');
    const plan = p.instance.plan(p.rows, context);
    conflicts += plan.categorized.errors.length;
    planned.push(plan);
  }
  if (conflicts > 0) throw new AtomicWriteConflict(conflicts);
  file.write(
    planned.map((p) => p.disk),
    true,
  );
  parts.forEach((p, i) => p.instance.apply(planned[i] as Planned<RxDocType>));
}

export type RxStoragePersistedMemory = RxStorage<PersistedMemoryInternals, object> & { readonly directory: string };

/** Creates the storage; pass it to createRxDatabase. */
export function getRxStoragePersistedMemory(settings: PersistedMemorySettings): RxStoragePersistedMemory {
  const directory = resolve(settings.directory);
  const synchronous = settings.synchronous ?? 'FULL';

  function createStorageInstance<RxDocType>(params: RxStorageInstanceCreationParams<RxDocType, object>): Promise<RxStorageInstance<RxDocType, PersistedMemoryInternals, object>> {
    try {
      ensureRxStorageInstanceParamsAreCorrect(params);
      if (params.schema.attachments) throw new Error(`Collection ${params.collectionName}: the persisted-memory storage does not store attachments.`);
      mkdirSync(directory, { recursive: true });
      const file = openFile(join(directory, fileNameFor(params.databaseName)), params.databaseInstanceToken, synchronous);
      try {
        const inst = `${params.collectionName}-${params.schema.version}`;
        const primaryPath = getPrimaryFieldOfPrimaryKey(params.schema.primaryKey);
        // A live state belongs to another instance of this same database (same owner, checked by
        // openFile) and already mirrors the disk.
        let state = file.states.get(inst) as InstanceState<RxDocType> | undefined;
        if (!state) {
          const inMemory = params.schema.title !== META_INSTANCE_SCHEMA_TITLE;
          const loaded = new InstanceState<RxDocType>(primaryPath, inMemory ? new Map<string, Doc<RxDocType>>() : null);
          if (inMemory) file.forEach<RxDocType>(inst, (d) => loaded.load(d));
          state = loaded;
          file.states.set(inst, state as InstanceState<unknown>);
        }
        state.refs++;
        return Promise.resolve(new PersistedMemoryInstance<RxDocType>(params.databaseName, params.collectionName, params.schema, params.options, file, state, inst));
      } catch (e) {
        file.release();
        throw e;
      }
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  return { name: 'persisted-memory', rxdbVersion: RXDB_VERSION, directory, createStorageInstance };
}
