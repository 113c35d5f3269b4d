/**
 * The desktop's RxDB storage: RxDB's free memory storage answers every read, query and index, and
 * every successful write is also committed to a better-sqlite3 file (one row per document, the whole
 * RxDB document as JSON with `_rev`, `_meta` and `_deleted`) before the write resolves. Opening a
 * storage instance loads its rows back into memory.
 *
 * Why a wrapper of our own: RxDB's open edition has no free persistent storage for Node, and the
 * memory storage is fast enough to hold one workspace (100k leads). This file touches the storage
 * interface of rxdb 17.6.0 (pinned exactly in package.json).
 *
 * Pitfalls handled here:
 * - The memory storage keeps each collection's state in a module-level map after close. A reopen
 *   would silently reuse that RAM (and hide a disk that lost data), so a closed instance's state is
 *   dropped, and a stale state found at open is discarded before loading from disk.
 * - The write order: a bulk write is first categorized (conflict check) against the memory state,
 *   then the accepted rows are committed to SQLite in one transaction, and only then applied to
 *   memory. All three steps run synchronously (better-sqlite3 is synchronous, and the memory
 *   storage categorizes and applies synchronously), so no other write can interleave, and a failed
 *   SQLite write rejects the bulk write with memory untouched: memory is never ahead of disk.
 * - cleanup() purges tombstones from memory without a bulkWrite; the purged ids are mirrored on disk.
 * - RxDB's internal store and the replication meta instances are storage instances created through
 *   this storage too, so checkpoints and collection metadata persist like documents.
 * - One process owns the file: SQLite runs in EXCLUSIVE locking mode and takes the write lock at
 *   open, so a second opener (another process, or another database object in this process) gets a
 *   StorageLockedError at once. The OS drops the lock when the owner dies, even by SIGKILL.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import type { Observable } from 'rxjs';
import { RXDB_VERSION, categorizeBulkWriteRows, ensureRxStorageInstanceParamsAreCorrect, getPrimaryFieldOfPrimaryKey } from 'rxdb';
import type {
  BulkWriteRow,
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
import { getMemoryCollectionKey, getRxStorageMemory } from 'rxdb/plugins/storage-memory';
import type { RxStorageInstanceMemory } from 'rxdb/plugins/storage-memory';

export type PersistedMemorySettings = {
  /** Folder holding one SQLite file per RxDB database name. */
  directory: string;
  /**
   * FULL (default): every acknowledged write is fsynced, so it survives a power cut or an OS crash,
   * not only a killed process. It costs one fsync per bulk write (per user action or per
   * replication batch, never per document), a few milliseconds on a laptop disk, which is invisible
   * next to a click. NORMAL skips that fsync in WAL mode: still safe against a crashed or killed
   * app, but a power cut may drop the last few acknowledged writes. Offline edits may exist nowhere
   * else, so durability wins by default.
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

/** One SQLite file shared by every storage instance of one RxDB database (collections, the internal
 * store, replication metadata): one connection, one lock, one transaction per bulk write. */
class SqliteFile {
  private refs = 0;
  private readonly upsert: Statement<[string, string, string]>;
  private readonly deleteOne: Statement<[string, string]>;
  private readonly deleteInstance: Statement<[string]>;
  private readonly loadInstance: Statement<[string], string>;

  constructor(
    readonly path: string,
    readonly owner: string,
    private readonly db: SqliteDatabase,
  ) {
    this.upsert = db.prepare('INSERT INTO docs (inst, id, data) VALUES (?, ?, ?) ON CONFLICT (inst, id) DO UPDATE SET data = excluded.data');
    this.deleteOne = db.prepare('DELETE FROM docs WHERE inst = ? AND id = ?');
    this.deleteInstance = db.prepare('DELETE FROM docs WHERE inst = ?');
    this.loadInstance = db.prepare<[string], string>('SELECT data FROM docs WHERE inst = ?').pluck();
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

  /** The instance's stored documents, parsed row by row so their JSON text is never all held at once. */
  load<T>(inst: string): T[] {
    const docs: T[] = [];
    // Synchronous to the end: the connection is busy while a statement iterates.
    for (const json of this.loadInstance.iterate(inst)) docs.push(JSON.parse(json) as T);
    return docs;
  }

  /** Writes every row of every instance in one transaction; throws (and writes nothing) if SQLite fails. */
  write(groups: readonly DiskRows[]): void {
    this.db.transaction(() => {
      for (const g of groups) for (const r of g.rows) this.upsert.run(g.inst, r.id, r.json);
    })();
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

type DiskRows = { inst: string; rows: { id: string; json: string }[] };

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
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
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
  const file = new SqliteFile(path, owner, db);
  file.retain();
  OPEN_FILES.set(path, file);
  return file;
}

/** A file name for an RxDB database name (RxDB names are already tame; this keeps paths safe). */
const fileNameFor = (databaseName: string): string => `${databaseName.replace(/[^A-Za-z0-9_.-]/g, '_')}.sqlite`;

type MemoryStorage = ReturnType<typeof getRxStorageMemory>;

export type PersistedMemoryInternals = { file: string; inst: string };

const LOAD_CONTEXT = 'persisted-memory-load';

export class PersistedMemoryInstance<RxDocType> implements RxStorageInstance<RxDocType, PersistedMemoryInternals, object, RxStorageDefaultCheckpoint> {
  readonly databaseName: string;
  readonly collectionName: string;
  readonly schema: Readonly<RxJsonSchema<RxDocumentData<RxDocType>>>;
  readonly options: object;
  readonly internals: PersistedMemoryInternals;
  private readonly primaryPath: string;
  private closed = false;

  constructor(
    private readonly memoryStorage: MemoryStorage,
    private readonly memory: RxStorageInstanceMemory<RxDocType>,
    private readonly file: SqliteFile,
    private readonly memoryKey: string,
    inst: string,
  ) {
    this.databaseName = memory.databaseName;
    this.collectionName = memory.collectionName;
    this.schema = memory.schema;
    this.options = memory.options;
    this.internals = { file: file.path, inst };
    this.primaryPath = getPrimaryFieldOfPrimaryKey(memory.schema.primaryKey);
  }

  private ensureOpen(): void {
    if (this.closed) throw new Error(`The storage instance ${this.databaseName}/${this.collectionName} is closed.`);
  }

  bulkWrite(rows: BulkWriteRow<RxDocType>[], context: string): Promise<RxStorageBulkWriteResponse<RxDocType>> {
    this.ensureOpen();
    // Everything up to memory.bulkWrite's synchronous part runs in this tick: the categorization in
    // plan() is exactly the one the memory storage repeats, since nothing can change in between.
    const { disk } = this.plan(rows, context);
    // Throws on failure: the write is rejected and memory was not touched.
    if (disk.rows.length > 0) this.file.write([disk]);
    return this.memory.bulkWrite(rows, context);
  }

  /** @internal The rows the memory storage will accept (conflict check against memory) and their
   * disk form. Synchronous, so a caller can plan, write to disk and apply within one tick. */
  plan(rows: BulkWriteRow<RxDocType>[], context: string): { disk: DiskRows; conflicts: number } {
    this.memory.ensurePersistence();
    const categorized = categorizeBulkWriteRows<RxDocType>(this, this.primaryPath as never, this.memory.internals.documents, rows, context);
    const accepted = [...categorized.bulkInsertDocs, ...categorized.bulkUpdateDocs];
    const diskRows = accepted.map((r) => ({ id: String((r.document as Record<string, unknown>)[this.primaryPath]), json: JSON.stringify(r.document) }));
    return { disk: { inst: this.internals.inst, rows: diskRows }, conflicts: categorized.errors.length };
  }

  /** @internal */
  get sqliteFile(): SqliteFile {
    return this.file;
  }

  /** @internal Applies rows already planned and written to disk (see writeAtomically). */
  applyToMemory(rows: BulkWriteRow<RxDocType>[], context: string): Promise<RxStorageBulkWriteResponse<RxDocType>> {
    return this.memory.bulkWrite(rows, context);
  }

  /** Every stored document (deleted ones included) by id, as it is now. Read-only: synchronous
   * access for the desktop Store, which must read and write within one tick. */
  currentDocuments(): ReadonlyMap<string, RxDocumentData<RxDocType>> {
    this.ensureOpen();
    this.memory.ensurePersistence();
    return this.memory.internals.documents;
  }

  findDocumentsById(ids: string[], withDeleted: boolean): Promise<RxDocumentData<RxDocType>[]> {
    this.ensureOpen();
    return this.memory.findDocumentsById(ids, withDeleted);
  }

  query(preparedQuery: PreparedQuery<RxDocType>): Promise<RxStorageQueryResult<RxDocType>> {
    this.ensureOpen();
    return this.memory.query(preparedQuery);
  }

  count(preparedQuery: PreparedQuery<RxDocType>): Promise<RxStorageCountResult> {
    this.ensureOpen();
    return this.memory.count(preparedQuery);
  }

  getAttachmentData(): Promise<Blob> {
    return Promise.reject(new Error('The persisted-memory storage does not store attachments.'));
  }

  changeStream(): Observable<EventBulk<RxStorageChangeEvent<RxDocumentData<RxDocType>>, RxStorageDefaultCheckpoint>> {
    this.ensureOpen();
    return this.memory.changeStream();
  }

  async cleanup(minimumDeletedTime: number): Promise<boolean> {
    this.ensureOpen();
    this.memory.ensurePersistence();
    const docs = this.memory.internals.documents;
    const tombstones: string[] = [];
    for (const [id, doc] of docs) if (doc._deleted) tombstones.push(id);
    const done = await this.memory.cleanup(minimumDeletedTime);
    const purged = tombstones.filter((id) => !docs.has(id));
    // Memory first here: if the disk purge failed, the disk would keep tombstones memory no longer
    // has, and a reopen would merely bring back deleted documents, which a later cleanup purges.
    if (purged.length > 0) this.file.purge(this.internals.inst, purged);
    return done;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.memory.close();
    this.dropMemoryStateIfUnused();
    this.file.release();
  }

  async remove(): Promise<void> {
    this.ensureOpen();
    this.file.drop(this.internals.inst);
    this.closed = true;
    await this.memory.remove();
    this.dropMemoryStateIfUnused();
    this.file.release();
  }

  /** The memory storage would keep the state for the next open; the disk is the truth instead. */
  private dropMemoryStateIfUnused(): void {
    const state = this.memoryStorage.collectionStates.get(this.memoryKey);
    if (state && state.refCount <= 0) this.memoryStorage.collectionStates.delete(this.memoryKey);
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
  const disk: DiskRows[] = [];
  for (const p of parts) {
    if (p.instance.sqliteFile !== file) throw new Error('writeAtomically needs storage instances of one database.');
    const planned = p.instance.plan(p.rows, context);
    conflicts += planned.conflicts;
    disk.push(planned.disk);
  }
  if (conflicts > 0) throw new AtomicWriteConflict(conflicts);
  file.write(disk);
  // Applied in this same tick (the memory storage applies synchronously and resolves later).
  const applied = parts.map((p) => p.instance.applyToMemory(p.rows, context));
  const results = await Promise.all(applied);
  const failed = results.reduce((n, r) => n + r.error.length, 0);
  // Cannot happen (planned in the same tick); if it did, memory would now be behind the disk.
  if (failed > 0) throw new Error(`Memory refused ${failed} row(s) the disk accepted; reopen the database.`);
}

export type RxStoragePersistedMemory = RxStorage<PersistedMemoryInternals, object> & { readonly directory: string };

/** Creates the storage; pass it to createRxDatabase. */
export function getRxStoragePersistedMemory(settings: PersistedMemorySettings): RxStoragePersistedMemory {
  const directory = resolve(settings.directory);
  const synchronous = settings.synchronous ?? 'FULL';
  const memoryStorage = getRxStorageMemory();

  async function createStorageInstance<RxDocType>(
    params: RxStorageInstanceCreationParams<RxDocType, object>,
  ): Promise<RxStorageInstance<RxDocType, PersistedMemoryInternals, object>> {
    ensureRxStorageInstanceParamsAreCorrect(params);
    if (params.schema.attachments) throw new Error(`Collection ${params.collectionName}: the persisted-memory storage does not store attachments.`);
    mkdirSync(directory, { recursive: true });
    const file = openFile(join(directory, fileNameFor(params.databaseName)), params.databaseInstanceToken, synchronous);
    try {
      const memoryKey = getMemoryCollectionKey(params.databaseName, params.collectionName, params.schema.version);
      const state = memoryStorage.collectionStates.get(memoryKey);
      // A live state belongs to another instance of this same database (same owner, checked by
      // openFile) and already mirrors the disk; a dead one is left over and must not be trusted.
      const shared = state !== undefined && state.refCount > 0;
      if (state && !shared) memoryStorage.collectionStates.delete(memoryKey);
      const memory = (await memoryStorage.createStorageInstance(params)) as RxStorageInstanceMemory<RxDocType>;
      const inst = `${params.collectionName}-${params.schema.version}`;
      if (!shared) {
        const docs = file.load<RxDocumentData<RxDocType>>(inst);
        if (docs.length > 0) {
          const result = await memory.bulkWrite(docs.map((document) => ({ document })), LOAD_CONTEXT);
          if (result.error.length > 0) {
            await memory.close();
            throw new Error(`Loading ${params.collectionName} from ${file.path} failed for ${result.error.length} documents (first: ${result.error[0]?.documentId ?? '?'}).`);
          }
        }
      }
      return new PersistedMemoryInstance<RxDocType>(memoryStorage, memory, file, memoryKey, inst);
    } catch (e) {
      file.release();
      throw e;
    }
  }

  return { name: 'persisted-memory', rxdbVersion: RXDB_VERSION, directory, createStorageInstance };
}
