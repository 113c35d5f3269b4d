/**
 * One SQLite file per RxDB database (a workspace): opening it, owning it, and committing to it.
 *
 * - One owner: the connection runs in EXCLUSIVE locking mode and takes the write lock at open, so
 *   a second process that opens the file gets a StorageLockedError at once (the OS drops the lock
 *   when the owner dies, even by SIGKILL). Inside one process every storage instance of the file
 *   shares this one connection, as RxDB's storage contract expects (several instances, even of
 *   several RxDB database objects, on one database name); RxDB itself refuses a second
 *   RxDatabase of one name in a process.
 * - WAL; a write is durable before it resolves: synchronous=FULL fsyncs every commit of a local
 *   write. Writes the server also holds (pulled documents, their assumed-master rows, the pull
 *   checkpoint) commit with synchronous=NORMAL: in WAL mode a power cut can only drop a suffix of
 *   commits, and the pull checkpoint is written after the documents it covers, so what is lost is
 *   pulled again; the next local write's fsync covers them too. A killed process loses nothing in
 *   either mode (the WAL is in the OS's page cache).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Database as SqliteDatabase } from 'better-sqlite3';

/** Another process owns the database file. */
export class StorageLockedError extends Error {
  readonly code = 'DATABASE_LOCKED';
  constructor(readonly file: string) {
    super(`The local database ${file} is already open by another process. Only one copy of the app may use a data folder at a time; close the other one (or pick another data folder) and try again.`);
    this.name = 'StorageLockedError';
  }
}

export type Synchronous = 'FULL' | 'NORMAL';

/** The layout this code reads and writes; another value in a file is refused, not misread. */
export const STORAGE_FORMAT = 'rxdb-sqlite/1';

/** A file name for an RxDB database name. Distinct from the persisted-memory storage's
 * `<name>.sqlite`, so both can sit in one data folder while one is migrated into the other. */
export const sqliteFileName = (databaseName: string): string => `${databaseName.replace(/[^A-Za-z0-9_.-]/g, '_')}.rxdb.sqlite`;

export const sqliteFilePath = (directory: string, databaseName: string): string => join(resolve(directory), sqliteFileName(databaseName));

const isBusy = (e: unknown): boolean => {
  const code = e instanceof Error ? (e as { code?: unknown }).code : undefined;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
};

/** An open database file, shared by every storage instance of it in this process. */
export class StorageFile {
  private refs = 0;
  private readonly tx: (fn: () => unknown) => unknown;

  private constructor(
    readonly path: string,
    readonly db: SqliteDatabase,
    readonly synchronous: Synchronous,
  ) {
    this.tx = db.transaction((fn: () => unknown) => fn());
  }

  /** Opens (creating it if needed) and locks the file; throws StorageLockedError if another
   * process owns it. A file already open in this process is shared. */
  static open(path: string, synchronous: Synchronous): StorageFile {
    const existing = OPEN_FILES.get(path);
    if (existing) {
      existing.refs++;
      return existing;
    }
    mkdirSync(resolve(path, '..'), { recursive: true });
    const file = new StorageFile(path, openLocked(path, synchronous), synchronous);
    file.refs = 1;
    OPEN_FILES.set(path, file);
    return file;
  }

  retain(): void {
    this.refs++;
  }

  /** Drops one user; the last one closes the connection (releasing the lock) and, when no storage
   * instance is left in the file (every one was removed), deletes the file. */
  release(): void {
    this.refs--;
    if (this.refs > 0) return;
    OPEN_FILES.delete(this.path);
    const empty = (this.db.prepare('SELECT count(*) FROM instances').pluck().get() as number) === 0;
    this.db.close();
    if (empty) for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(this.path + suffix, { force: true });
  }

  /**
   * Runs `fn` in one transaction: all of it is committed, or (if it throws) nothing. `durable:
   * false` commits without fsync (writes the server also holds; see the file comment).
   */
  write<T>(durable: boolean, fn: () => T): T {
    const relax = !durable && this.synchronous === 'FULL';
    if (relax) this.db.pragma('synchronous = NORMAL');
    try {
      return this.tx(fn) as T;
    } finally {
      if (relax) this.db.pragma('synchronous = FULL');
    }
  }

  /** @internal The connection's synchronous setting now (1 NORMAL, 2 FULL), for tests. */
  synchronousNow(): number {
    return Number(this.db.pragma('synchronous', { simple: true }));
  }
}

const OPEN_FILES = new Map<string, StorageFile>();

function openLocked(path: string, synchronous: Synchronous): SqliteDatabase {
  // timeout 0: a file another process holds must fail at once, not after the busy timeout.
  const db = new Database(path, { timeout: 0 });
  try {
    // EXCLUSIVE before WAL: the lock is held from the first write until close, and WAL then needs
    // no shared-memory index (no other connection may read anyway).
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    // A checkpoint every ~32 MB of WAL instead of every 4 MB: each checkpoint fsyncs, and an
    // initial sync writes hundreds of MB; the WAL file is cut back after a checkpoint.
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    db.pragma(`wal_autocheckpoint = ${Math.max(1000, Math.round((32 * 1024 * 1024) / pageSize))}`);
    db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
    // 4 MiB of page cache instead of SQLite's 16: the cache stays resident (it counted ~20 MB of
    // the desktop's memory after a sync of 100k leads), while a page it misses comes from the
    // operating system's cache for a read call (no slower sync or page reads were measured).
    db.pragma('cache_size = -4096');
    // Take the write lock now, so a second opener is refused at open and not at its first write.
    db.exec('BEGIN EXCLUSIVE');
    db.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS instances (name TEXT PRIMARY KEY, tbl TEXT NOT NULL UNIQUE, columns TEXT NOT NULL, text_fields TEXT NOT NULL, layout TEXT NOT NULL DEFAULT '', loading INTEGER NOT NULL DEFAULT 0);`);
    // Files written before the Store layout existed: the registry gains its columns (no layout,
    // not loading).
    const registry = new Set(db.prepare<[], { name: string }>('PRAGMA table_info(instances)').all().map((c) => c.name));
    if (!registry.has('layout')) db.exec("ALTER TABLE instances ADD COLUMN layout TEXT NOT NULL DEFAULT ''");
    if (!registry.has('loading')) db.exec('ALTER TABLE instances ADD COLUMN loading INTEGER NOT NULL DEFAULT 0');
    const format = db.prepare<[], string>("SELECT value FROM meta WHERE key = 'format'").pluck().get();
    if (format === undefined) db.prepare("INSERT INTO meta (key, value) VALUES ('format', ?)").run(STORAGE_FORMAT);
    else if (format !== STORAGE_FORMAT) {
      throw new Error(`The local database ${path} has storage format ${format}; this version of the app reads ${STORAGE_FORMAT}. Update the app.`);
    }
    db.exec('COMMIT');
    return db;
  } catch (e) {
    db.close();
    if (isBusy(e)) throw new StorageLockedError(path);
    throw e;
  }
}
