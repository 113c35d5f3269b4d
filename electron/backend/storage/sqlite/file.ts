/**
 * One SQLite file per RxDB database (a workspace): opening it, owning it, and committing to it.
 *
 * - One owner: a small lock database beside the file (`<file>-lock`) is opened in SQLite's
 *   EXCLUSIVE locking mode and written once, so its connection holds the lock until it closes; a
 *   second process that opens the folder gets a StorageLockedError at once (the OS drops the lock
 *   when the owner dies, even by SIGKILL). The lock is on a separate file so that the documents'
 *   file itself can have a second connection, in a worker thread, for the long statements (below).
 *   Inside one process every storage instance of the file shares this one main connection, as
 *   RxDB's storage contract expects (several instances, even of several RxDB database objects, on
 *   one database name); RxDB itself refuses a second RxDatabase of one name in a process.
 * - WAL; a write is durable before it resolves: synchronous=FULL fsyncs every commit of a local
 *   write. Writes the server also holds (pulled documents, their assumed-master rows, the pull
 *   checkpoint) commit with synchronous=NORMAL: in WAL mode a power cut can only drop a suffix of
 *   commits, and the pull checkpoint is written after the documents it covers, so what is lost is
 *   pulled again; the next local write's fsync covers them too. A killed process loses nothing in
 *   either mode (the WAL is in the OS's page cache).
 * - Long statements off the event loop: building an index over a large table (a bulk load's
 *   deferred indexes, doc-table.ts "loading") takes one statement of 0.1-3 s that cannot be cut
 *   into slices, and better-sqlite3 runs a statement on the calling thread. `build` runs such a
 *   statement in a worker thread on its own connection to the file; the event loop goes on, reads
 *   on the main connection see the file as it was before the statement (WAL readers are not blocked
 *   by a writer), and writes asked for meanwhile (`whenFree`) wait in a queue, in order, instead of
 *   meeting the worker's write lock (the main connection never busy-waits): each runs when the
 *   statement has committed, and its promise resolves then.
 * - Checkpoints off the event loop: the main connection does not checkpoint (wal_autocheckpoint
 *   0). A checkpoint copies the WAL's pages into the file and fsyncs both; run by SQLite inside the
 *   commit that crossed the threshold, it held the event loop for that commit (an initial sync of
 *   100k leads writes ~0.5 GB of WAL: a profile put ~15% of the sync's samples in its COMMITs). A
 *   commit schedules a PASSIVE checkpoint in the worker thread CHECKPOINT_TUNING.delayMs later,
 *   which runs beside the main connection's writes (a passive checkpoint never waits for, nor
 *   blocks, a writer). A passive checkpoint copies the pages, but the WAL only starts over when a
 *   write begins while every page in it is copied, which a writer that never pauses (an initial
 *   sync) never does: the passive checkpoints of a 300k sync all copied what they found and the WAL
 *   still grew to 217 MB. So a WAL holding more than CHECKPOINT_TUNING.walLimitBytes after a passive
 *   checkpoint gets a RESTART one that, like an index build, holds the file's write queue until it
 *   is done (short: the passive one copied most of it), so the next write starts the WAL from its
 *   beginning. The limit is journal_size_limit, so the WAL file is longer than the limit only while
 *   the WAL holds more; a commit that finds it so starts the checkpoint at once, and past twice the
 *   limit queues the RESTART at once (`committed`): a load committing in one chain of promise
 *   callbacks gives neither the timer nor the worker's answer a turn.
 * - Pulled pages written over several turns of the event loop (`openPage`, `inPage`): a page of an
 *   initial sync (2,000 documents, then RxDB's 2,000 assumed-master rows) took 250 ms or more of
 *   the loop as one transaction. Its writes now run in one transaction on this connection spread
 *   over turns, SLICE_TUNING.ms of work a turn, and commit together (a kill takes back all of the
 *   page, never the documents without their meta rows). While it is open, reads that are not part
 *   of the page's writes (`reads`: RxDB's queries, the Store's, the changes feed, text search) go
 *   to a second, read-only connection on this thread, which sees the file as committed (WAL), so
 *   they see none of the page or all of it; other writes and worker statements wait in the queue
 *   (`whenFree`) until it commits; the writes' caches, counters and change events are applied
 *   after the COMMIT.
 */
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';

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
  /** Work waiting for a worker statement to end (writes, and further worker statements), in order. */
  private readonly queue: (() => void)[] = [];
  /** A worker statement holds the write lock now. */
  private busy = false;
  private drainScheduled = false;
  private worker: StatementWorker | null = null;
  /** A second thread for reads that would hold the event loop (readInWorker). */
  private reader: StatementWorker | null = null;
  /** A checkpoint is asked for (timer) or runs in the worker (settles when it, and the RESTART one
   * it may start, are over). */
  private checkpointTimer: ReturnType<typeof setTimeout> | null = null;
  private checkpointing: Promise<void> | null = null;
  /** A RESTART checkpoint waits in the queue or runs (restartWal), or null. */
  private restarting: Promise<void> | null = null;
  /** Commits since the last checkpoint began. */
  private dirty = false;
  private closing = false;
  /** A pulled page's transaction, open over several turns (see the file comment), or null. */
  private page: OpenPage | null = null;
  /** Waiting for no page to be open and no work to wait in the queue (whenPagesWritten). */
  private pageWaiters: (() => void)[] = [];
  /** Work of the open page runs now (its reads see its own rows: they go to this connection). */
  private writing = false;
  /** The read-only connection answering reads while a page is open; opened at the first page. */
  private readerDb: SqliteDatabase | null = null;
  /** What the worker builds now, in words, and who wants to know. */
  private buildingNow: string | null = null;
  private readonly buildWatchers = new Set<(what: string | null) => void>();
  /** @internal What the checkpoints have done since the file opened (the desktop bench prints it):
   * passive ones run and how many of those copied every page the WAL held when they began (pages
   * written meanwhile are not counted: that alone does not start the WAL over), RESTART ones and
   * the time the write queue waited for them, the largest WAL (bytes) a checkpoint found. */
  readonly checkpointLog = { passive: 0, passiveComplete: 0, restart: 0, restartMs: 0, maxWalBytes: 0 };

  private constructor(
    readonly path: string,
    readonly db: SqliteDatabase,
    private readonly lock: SqliteDatabase,
    readonly synchronous: Synchronous,
  ) {
    this.tx = db.transaction((fn: () => unknown) => fn());
  }

  /** Opens (creating it if needed) and locks the file, once a close of it under way in this
   * process has ended (its connection holds the lock until then: the backend restarted by the app
   * opens its folder again while the last one closes); throws StorageLockedError if another process
   * owns it. A file already open in this process is shared. */
  static async opened(path: string, synchronous: Synchronous): Promise<StorageFile> {
    for (let closing = CLOSING_FILES.get(path); closing && !OPEN_FILES.has(path); closing = CLOSING_FILES.get(path)) await closing;
    return StorageFile.open(path, synchronous);
  }

  /** StorageFile.opened where no close of the path can be under way (the tests' direct opens);
   * refuses, saying so, while one is. */
  static open(path: string, synchronous: Synchronous): StorageFile {
    const existing = OPEN_FILES.get(path);
    if (existing) {
      existing.refs++;
      return existing;
    }
    if (CLOSING_FILES.has(path)) throw new Error(`${path} is still closing in this process: StorageFile.opened waits for the close.`);
    mkdirSync(resolve(path, '..'), { recursive: true });
    const lock = takeLock(path);
    let db: SqliteDatabase;
    try {
      db = openFile(path, synchronous);
    } catch (e) {
      lock.close();
      throw e;
    }
    const file = new StorageFile(path, db, lock, synchronous);
    file.refs = 1;
    OPEN_FILES.set(path, file);
    return file;
  }

  retain(): void {
    this.refs++;
  }

  /** Drops one user; the last one closes the connection (releasing the lock) once the work queued
   * before (writes, index builds: a build under way is waited for, it cannot be cut) and a
   * checkpoint under way have ended, and, when no storage instance is left in the file (every one
   * was removed), deletes the file. From then on nothing starts: an asked-for checkpoint is
   * dropped, and work asked for later (a load's next build, a read in the reader thread) is
   * refused; the worker threads close their connections and end before the main connection
   * closes. An open of the same path meanwhile keeps it open. */
  async release(): Promise<void> {
    this.refs--;
    if (this.refs > 0) return;
    await this.whenFree(() => undefined);
    if (this.refs > 0 || OPEN_FILES.get(this.path) !== this) return;
    OPEN_FILES.delete(this.path);
    this.closing = true;
    let closed = (): void => undefined;
    CLOSING_FILES.set(this.path, new Promise<void>((r) => (closed = r)));
    try {
      if (this.checkpointTimer) clearTimeout(this.checkpointTimer);
      this.checkpointTimer = null;
      // Settles after the RESTART checkpoint it may have started before the file began closing.
      await this.checkpointing;
      await this.worker?.close();
      this.worker = null;
      await this.reader?.close();
      this.reader = null;
      const empty = (this.db.prepare('SELECT count(*) FROM instances').pluck().get() as number) === 0;
      this.readerDb?.close();
      this.readerDb = null;
      this.db.close();
      this.lock.close();
      if (empty) for (const suffix of ['', '-wal', '-shm', '-journal', LOCK_SUFFIX]) rmSync(this.path + suffix, { force: true });
    } finally {
      CLOSING_FILES.delete(this.path);
      closed();
    }
  }

  /**
   * Runs `fn` in one transaction: all of it is committed, or (if it throws) nothing. `durable:
   * false` commits without fsync (writes the server also holds; see the file comment). Only while
   * the file is free (inside `whenFree`, or where no worker statement can run: opening, tests).
   */
  write<T>(durable: boolean, fn: () => T): T {
    if (this.busy) throw new Error(`${this.path}: a write was started while a worker statement holds the file (it must wait in whenFree).`);
    if (this.page) throw new Error(`${this.path}: a write was started while a pulled page's transaction is open (it must wait in whenFree).`);
    const relax = !durable && this.synchronous === 'FULL';
    if (relax) this.db.pragma('synchronous = NORMAL');
    try {
      const out = this.tx(fn) as T;
      this.committed();
      return out;
    } finally {
      if (relax) this.db.pragma('synchronous = FULL');
    }
  }

  /**
   * After a commit: a checkpoint in the worker soon (see the file comment). The timer alone is not
   * enough: a load that commits in one chain of promise callbacks (a seed, a fill, any loop of
   * commits that never waits for I/O) gives neither the timer nor the worker's answer a turn, and
   * its WAL held the whole load (a 1M-lead seed: 2.9 GB, the file itself 4 KB). So the commit also
   * looks at the WAL file: past the limit, the checkpoint starts now; past twice the limit, a
   * RESTART one is queued at once and holds the writes (as an index build does), so the load's
   * next write waits for it, which gives the event loop its turns.
   */
  private committed(): void {
    this.dirty = true;
    if (this.closing) return;
    const wal = this.walFileBytes();
    if (wal > 2 * CHECKPOINT_TUNING.walLimitBytes) {
      this.restartWal();
      return;
    }
    if (this.checkpointing) return;
    if (wal > CHECKPOINT_TUNING.walLimitBytes) {
      if (this.checkpointTimer) clearTimeout(this.checkpointTimer);
      this.checkpoint();
      return;
    }
    if (this.checkpointTimer) return;
    this.checkpointTimer = setTimeout(() => this.checkpoint(), CHECKPOINT_TUNING.delayMs);
    this.checkpointTimer.unref();
  }

  /** The WAL file's length: past CHECKPOINT_TUNING.walLimitBytes only while the WAL holds more than
   * that (journal_size_limit cuts it back to the limit when it starts over). */
  private walFileBytes(): number {
    try {
      return statSync(this.path + '-wal').size;
    } catch {
      return 0;
    }
  }

  /** A RESTART checkpoint in the worker, holding the file's write queue until it is done (once: a
   * RESTART asked for while one waits or runs is that one). */
  private restartWal(): Promise<void> {
    if (this.restarting) return this.restarting;
    const log = this.checkpointLog;
    const t = performance.now();
    const run = this.inWorker('PRAGMA wal_checkpoint(RESTART)', null)
      .then(() => {
        log.restart++;
        log.restartMs += performance.now() - t;
      })
      // A failed RESTART (a full disk, the file closing) leaves the WAL as it is; the next commit
      // asks again.
      .catch(() => undefined)
      .finally(() => {
        if (this.restarting === run) this.restarting = null;
      });
    this.restarting = run;
    return run;
  }

  /** A passive checkpoint in the worker; a RESTART one, holding the write queue, if the WAL
   * holds more than CHECKPOINT_TUNING.walLimitBytes (copied or not: see the file comment). Then
   * another one if commits came meanwhile. */
  private checkpoint(): void {
    this.checkpointTimer = null;
    if (this.closing) return;
    this.dirty = false;
    const again = (): void => {
      this.checkpointing = null;
      if (this.dirty) this.committed();
    };
    const log = this.checkpointLog;
    this.checkpointing = this.statementWorker()
      .checkpoint('PASSIVE')
      .then((wal) => {
        log.passive++;
        if (wal.backfilled === wal.frames) log.passiveComplete++;
        log.maxWalBytes = Math.max(log.maxWalBytes, wal.frames * this.pageSize);
        // A file closing meanwhile gets no RESTART (its connections close next).
        if (this.closing || wal.frames * this.pageSize <= CHECKPOINT_TUNING.walLimitBytes) return undefined;
        return this.restartWal();
      })
      // A failed checkpoint (a full disk, the file closing) leaves the WAL as it is; the next
      // commit asks for another.
      .catch(() => undefined)
      .finally(again);
  }

  private get pageSize(): number {
    return (this.pageBytes ??= Number(this.db.pragma('page_size', { simple: true })));
  }

  private pageBytes: number | undefined;

  /** The worker thread, started if none runs; never for a closing file (its connections close,
   * and a new one would open the file again behind them). */
  private statementWorker(): StatementWorker {
    this.ensureOpen();
    if (!this.worker || this.worker.ended) this.worker = new StatementWorker(this.path, this.synchronous);
    return this.worker;
  }

  private ensureOpen(): void {
    if (this.closing) throw this.closedError();
  }

  private closedError(): Error {
    return new Error(`The database file ${this.path} is closed.`);
  }

  /**
   * Runs `fn` (synchronously, on this thread) once no worker statement holds the file and the work
   * queued before it has run: at once when the file is free, so a write stays synchronous up to its
   * returned promise as long as nothing is being built. The promise settles with fn's result.
   */
  whenFree<T>(fn: () => T): Promise<T> {
    if (this.free) {
      try {
        this.ensureOpen();
        return Promise.resolve(fn());
      } catch (e) {
        return Promise.reject(e instanceof Error ? e : new Error(String(e)));
      }
    }
    return new Promise<T>((resolveRun, rejectRun) =>
      this.queue.push(() => {
        try {
          this.ensureOpen();
          resolveRun(fn());
        } catch (e) {
          rejectRun(e instanceof Error ? e : new Error(String(e)));
        }
      }),
    );
  }

  /** Nothing holds the file and nothing waits for it: work asked for now runs at once. */
  private get free(): boolean {
    return !this.busy && this.page === null && this.queue.length === 0;
  }

  /** Whether a worker statement runs or work waits for one. */
  get building(): boolean {
    return this.busy || this.queue.length > 0;
  }

  /**
   * The connection a read goes to now: this thread's main one, unless a pulled page's transaction
   * is open and the read is not part of its writes; then the read-only connection, which sees the
   * file as last committed (see the file comment). Statements are prepared per connection.
   */
  get reads(): SqliteDatabase {
    if (this.page === null || this.writing) return this.db;
    return (this.readerDb ??= openReader(this.path));
  }

  /** Whether a pulled page's transaction is open. */
  get pageOpen(): boolean {
    return this.page !== null;
  }

  /**
   * Resolves once no pulled page's transaction is open and no work waits in the queue: at once when
   * so, else when the open page has committed or rolled back (its writes applied or undone) and
   * the work queued meanwhile has run. A page asked for behind queued work (other writes that came
   * while a page was open: another collection's, a user's, a replication's start) has not opened
   * yet; until it has ended, its write is not over, though no page is open.
   */
  whenPagesWritten(): Promise<void> {
    if (this.pagesWritten) return Promise.resolve();
    return new Promise((resolveEnd) => this.pageWaiters.push(resolveEnd));
  }

  private get pagesWritten(): boolean {
    return this.page === null && this.queue.length === 0;
  }

  /** Resolves the waiters of whenPagesWritten once it holds. */
  private settlePageWaiters(): void {
    if (!this.pagesWritten || this.pageWaiters.length === 0) return;
    const waiters = this.pageWaiters;
    this.pageWaiters = [];
    for (const w of waiters) w();
  }

  /** The documents table of the open page's first write (the collection), or null. */
  get pageOf(): string | null {
    return this.page?.fork ?? null;
  }

  /**
   * Opens a pulled page's transaction once the file is free (after the work queued before it), for
   * the documents table `fork`, and runs `steps` in it over turns of the event loop (inPage); the
   * transaction stays open for the writes that join it (the replication's meta rows), and commits
   * at the end of the write that ends it (PageStep.ends) or, failing that, one turn after the last
   * joined write resolved with nothing joining meanwhile.
   */
  openPage<T>(fork: string, steps: () => Iterator<unknown, PageStep<T>>, undo: (why: unknown) => void): Promise<T> {
    return this.whenFree(() => {
      const relax = this.synchronous === 'FULL';
      if (relax) this.db.pragma('synchronous = NORMAL');
      try {
        this.db.exec('BEGIN IMMEDIATE');
      } catch (e) {
        if (relax) this.db.pragma('synchronous = FULL');
        throw e;
      }
      this.page = { fork, relax, after: [], undo: [], running: 0, chain: Promise.resolve(), endCheck: null };
      return this.inPage(steps, undo);
    }).then((p) => p);
  }

  /**
   * Runs `steps` in the open page's transaction after the page's writes before it, SLICE_TUNING.ms
   * of them a turn; its reads meanwhile see the transaction's rows (`reads`). `steps` ends with what
   * to apply after the COMMIT, whether this write ends the page (commits it before the promise
   * resolves), and the value; `undo` forgets in memory what its steps did, after a ROLLBACK. A step
   * that throws rolls the whole page back (the writes that resolved before included: nothing of
   * the page is kept) and rejects.
   */
  inPage<T>(steps: () => Iterator<unknown, PageStep<T>>, undo: (why: unknown) => void): Promise<T> {
    const page = this.page;
    if (!page) return Promise.reject(new Error(`${this.path}: no pulled page is open.`));
    page.running++;
    page.undo.push(undo);
    if (page.endCheck) clearImmediate(page.endCheck);
    page.endCheck = null;
    // The COMMIT and what it applies (caches, change events and their subscribers), and then
    // the caller's continuation (RxDB's work on the page written, on the next page), each in a
    // turn of their own, not in the last slice's.
    const run = page.chain.then(() => this.slices(page, steps)).then(
      (step) =>
        new Promise<T>((resolveRun, rejectRun) => {
          page.running--;
          page.after.push(step.after);
          if (step.ends) {
            setImmediate(() => {
              try {
                this.endPage(true);
              } catch (e) {
                rejectRun(e instanceof Error ? e : new Error(String(e)));
                return;
              }
              setImmediate(() => resolveRun(step.value));
            });
            return;
          }
          setImmediate(() => {
            resolveRun(step.value);
            // Nothing joined by the next turn (the caller's continuation runs before it): the page
            // is over (see openPage).
            if (page.running === 0 && this.page === page) page.endCheck = setImmediate(() => this.endIdlePage(page));
          });
        }),
      (e: unknown) => {
        page.running--;
        if (this.page === page) this.endPage(false, e);
        throw e instanceof Error ? e : new Error(String(e));
      },
    );
    page.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Runs an iterator's steps on this thread, the first in the next turn, then as many as fit in
   * SLICE_TUNING.ms per turn. */
  private slices<T>(page: OpenPage, steps: () => Iterator<unknown, T>): Promise<T> {
    return new Promise<T>((done, fail) => {
      let it: Iterator<unknown, T> | null = null;
      const turn = (): void => {
        if (this.page !== page) {
          fail(new Error(`${this.path}: the pulled page's transaction ended before its write did.`));
          return;
        }
        const end = performance.now() + SLICE_TUNING.ms;
        this.writing = true;
        try {
          it ??= steps();
          for (;;) {
            const r = it.next();
            if (r.done) {
              done(r.value);
              return;
            }
            if (performance.now() >= end) break;
          }
        } catch (e) {
          fail(e instanceof Error ? e : new Error(String(e)));
          return;
        } finally {
          this.writing = false;
        }
        setImmediate(turn);
      };
      setImmediate(turn);
    });
  }

  /** The end of a page no write ended: its writes resolved already, so a failed COMMIT (a full
   * disk) cannot reject them; the page is pulled again (its rows are the server's). */
  private endIdlePage(page: OpenPage): void {
    if (page.running !== 0 || this.page !== page) return;
    try {
      this.endPage(true);
    } catch {
      // Rolled back (endPage): nothing of the page is kept.
    }
  }

  /** Commits (or rolls back, because of `why`) the open page, applies (or undoes, telling why: a
   * failed COMMIT's error, or `why`) its writes in memory, and lets the queued work run. */
  private endPage(commit: boolean, why?: unknown): void {
    const page = this.page;
    if (!page) return;
    if (page.endCheck) clearImmediate(page.endCheck);
    this.page = null;
    let failed: unknown = null;
    try {
      if (commit) this.db.exec('COMMIT');
      else if (this.db.inTransaction) this.db.exec('ROLLBACK');
    } catch (e) {
      failed = e;
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
    } finally {
      if (page.relax) this.db.pragma('synchronous = FULL');
    }
    if (commit && failed === null) {
      for (const apply of page.after) apply();
      this.committed();
    } else {
      for (const undo of page.undo) undo(failed ?? why);
    }
    this.scheduleDrain();
    this.settlePageWaiters();
    if (failed !== null) throw failed instanceof Error ? failed : new Error(String(failed));
  }

  /**
   * Runs one statement (`CREATE INDEX ...`, committed on its own) in the file's worker thread, after
   * the work queued before it; writes asked for meanwhile wait (see the file comment). Resolves
   * once it has committed. `what`: the work in words ("leads by full name"), for watchBuilds; null
   * for upkeep the sync status does not show (a checkpoint).
   */
  inWorker(sql: string, what: string | null): Promise<void> {
    return new Promise<void>((resolveRun, rejectRun) => {
      const start = (): void => {
        if (this.closing) {
          rejectRun(this.closedError());
          this.scheduleDrain();
          return;
        }
        this.busy = true;
        if (what !== null) this.announce(what);
        // The file is free again before the caller's continuation runs (it may write at once).
        const done = (): void => {
          this.busy = false;
          if (what !== null) this.announce(null);
          this.scheduleDrain();
        };
        this.statementWorker().run(sql).then(
          () => {
            done();
            resolveRun();
          },
          (e: unknown) => {
            done();
            rejectRun(e instanceof Error ? e : new Error(String(e)));
          },
        );
      };
      if (this.free) start();
      else this.queue.push(start);
    });
  }

  /**
   * Runs read-only statements in one read transaction (one snapshot of the file) in a second
   * worker thread with its own connection, beside any build (WAL readers do not wait for a writer)
   * and beside this thread's writes: for a read that would hold the event loop (a sort of the whole
   * table while its index is missing, store-query.ts). Resolves with each statement's rows; blobs
   * come back as Uint8Array.
   */
  readInWorker(reads: readonly { sql: string; params: readonly unknown[] }[]): Promise<Record<string, unknown>[][]> {
    if (this.closing) return Promise.reject(this.closedError());
    if (!this.reader || this.reader.ended) this.reader = new StatementWorker(this.path, this.synchronous);
    return this.reader.read(reads);
  }

  /** Calls `watcher` with what the worker builds (in words) whenever that changes, null when it
   * is done; at once with the current state. Returns the unsubscribe. */
  watchBuilds(watcher: (what: string | null) => void): () => void {
    this.buildWatchers.add(watcher);
    watcher(this.buildingNow);
    return () => this.buildWatchers.delete(watcher);
  }

  private announce(what: string | null): void {
    this.buildingNow = what;
    for (const w of this.buildWatchers) w(what);
  }

  /** Runs queued work, one item per turn of the event loop (each is one transaction or starts a
   * worker statement), until the queue is empty or a worker statement holds the file again. */
  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      if (this.busy || this.page) return;
      this.queue.shift()?.();
      if (this.queue.length > 0) this.scheduleDrain();
      else this.settlePageWaiters();
    });
  }

  /** @internal Whether a checkpoint runs in the worker now (or a RESTART one waits for the
   * writes before it), for tests. */
  get checkpointUnderWay(): boolean {
    return this.checkpointing !== null || this.restarting !== null;
  }

  /** @internal The connection's synchronous setting now (1 NORMAL, 2 FULL), for tests. */
  synchronousNow(): number {
    return Number(this.db.pragma('synchronous', { simple: true }));
  }
}

/** The lock file's name: the file's path and this. */
export const LOCK_SUFFIX = '-lock';

/** The file's lock: a small database held in EXCLUSIVE locking mode (see the file comment). */
function takeLock(path: string): SqliteDatabase {
  // timeout 0: a folder another process holds must fail at once, not after the busy timeout.
  const lock = new Database(path + LOCK_SUFFIX, { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.pragma('journal_mode = OFF');
    // A write takes the exclusive lock, and EXCLUSIVE locking mode keeps it until close.
    lock.exec('BEGIN EXCLUSIVE');
    lock.exec('CREATE TABLE IF NOT EXISTS owner (note TEXT)');
    lock.exec('COMMIT');
    return lock;
  } catch (e) {
    lock.close();
    if (isBusy(e)) throw new StorageLockedError(path);
    throw e;
  }
}

/**
 * A worker thread with its own connection to the file, running one statement at a time. Its code
 * is plain JavaScript given as a string (so it runs alike from the TypeScript sources, the bundled
 * backend and tests); it loads the same better-sqlite3 as this thread. Its connection waits for
 * the write lock with a busy timeout, which blocks only that thread (the main connection's writes
 * are queued while it works, so it seldom has to). The thread ends after WORKER_IDLE_MS without
 * work, returning its connection's memory.
 */
class StatementWorker {
  private readonly thread: Worker;
  private next = 0;
  private readonly pending = new Map<number, { ok: (answer: unknown) => void; fail: (e: Error) => void }>();
  private readonly exited: Promise<void>;
  private idle: ReturnType<typeof setTimeout> | null = null;
  /** The thread has ended or is ending; a new one is needed for more work. */
  ended = false;

  constructor(path: string, synchronous: Synchronous) {
    this.thread = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: DRIVER, path, synchronous } });
    this.thread.unref();
    this.exited = new Promise((done) => this.thread.once('exit', () => done()));
    this.thread.on('message', (m: { id: number; error?: string; code?: string; rows?: unknown; wal?: WalState }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error === undefined) p.ok(m.rows ?? m.wal);
      else p.fail(Object.assign(new Error(m.error), { code: m.code }));
      // A closing thread stays referenced until it has ended (close awaits its exit).
      if (this.pending.size === 0 && !this.ended) {
        // Idle: the thread alone does not keep the process alive (see run).
        this.thread.unref();
        this.idle = setTimeout(() => void this.close(), WORKER_IDLE_MS);
        this.idle.unref();
      }
    });
    const failAll = (e: Error): void => {
      for (const p of this.pending.values()) p.fail(e);
      this.pending.clear();
    };
    this.thread.on('error', failAll);
    this.thread.on('exit', (code) => {
      this.ended = true;
      failAll(new Error(`The database's worker thread ended (${code}) before its statement did.`));
    });
  }

  run(sql: string): Promise<void> {
    return this.post({ sql }).then(() => undefined);
  }

  /** Rows of read-only statements, all read in one transaction. */
  read(reads: readonly { sql: string; params: readonly unknown[] }[]): Promise<Record<string, unknown>[][]> {
    return this.post({ reads }) as Promise<Record<string, unknown>[][]>;
  }

  /** A checkpoint of the WAL in this mode; resolves with the WAL's state after it. */
  checkpoint(mode: 'PASSIVE'): Promise<WalState> {
    return this.post({ checkpoint: mode }).then((wal) => (wal as WalState | undefined) ?? { frames: 0, backfilled: 0 });
  }

  private post(message: { sql: string } | { reads: readonly { sql: string; params: readonly unknown[] }[] } | { checkpoint: string }): Promise<unknown> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    // While a statement runs, the process waits for it (a caller awaits its promise).
    this.thread.ref();
    const id = ++this.next;
    return new Promise<unknown>((ok, fail) => {
      this.pending.set(id, { ok, fail });
      this.thread.postMessage({ id, ...message });
    });
  }

  /** Ends the thread after the statement it runs (its connection closes). */
  async close(): Promise<void> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    if (!this.ended) {
      // Awaited (a closing file waits for the connection to close): keep the process up meanwhile.
      this.thread.ref();
      this.thread.postMessage({ close: true });
    }
    this.ended = true;
    await this.exited;
  }
}

const WORKER_IDLE_MS = 2000;

/** The WAL after a checkpoint: pages in it, and how many of them are in the file now. */
type WalState = { frames: number; backfilled: number };

/** The WAL file's size after it starts over (journal_size_limit). */
const WAL_FILE_BYTES = 64 * 1024 * 1024;

/**
 * @internal The checkpoints' timing (tests make them smaller): `delayMs` after a commit the worker
 * checkpoints (commits meanwhile join that checkpoint); a WAL holding more than `walLimitBytes`
 * after a passive checkpoint gets a RESTART one (see the file comment).
 */
export const CHECKPOINT_TUNING = { delayMs: 500, walLimitBytes: WAL_FILE_BYTES };

/**
 * @internal The slices of a pulled page's write (openPage): a pulled write of `rows` documents or
 * more is a page (fewer, a live change or a pull's last page, are written at once: a few
 * milliseconds); `ms` of work a turn of the event loop (the target is no task over 50 ms, and a
 * turn also runs what waited for it). Tests make both smaller.
 */
export const SLICE_TUNING = { rows: 200, ms: 12 };

/** The end of a write run in a page: its value, what to apply after the COMMIT, and whether it
 * ends the page. */
export type PageStep<T> = { value: T; after: () => void; ends: boolean };

/** A pulled page's open transaction (StorageFile.openPage). */
type OpenPage = {
  fork: string;
  /** synchronous was FULL and is NORMAL until the page ends. */
  relax: boolean;
  after: (() => void)[];
  undo: ((why: unknown) => void)[];
  /** Writes joined and not yet resolved. */
  running: number;
  /** The page's writes run one after the other. */
  chain: Promise<void>;
  endCheck: ReturnType<typeof setImmediate> | null;
};

/** The statements kept for one connection (a statement belongs to the connection it was prepared
 * on; reads go to two: StorageFile.reads). */
export function statementsOn(all: WeakMap<SqliteDatabase, Map<string, Statement>>, db: SqliteDatabase): Map<string, Statement> {
  let kept = all.get(db);
  if (!kept) all.set(db, (kept = new Map()));
  return kept;
}

/** The read-only connection that answers reads while a page is open: a small page cache (it
 * reads what the main connection's cache would have held). */
function openReader(path: string): SqliteDatabase {
  const db = new Database(path, { readonly: true, timeout: 200 });
  db.pragma('cache_size = -1024');
  return db;
}

/** The better-sqlite3 this module uses, for the worker to load the same one. */
const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
// A long busy timeout: waiting here blocks only this thread.
const db = new Database(workerData.path, { timeout: 60000 });
db.pragma('synchronous = ' + workerData.synchronous);
// 1 MiB of page cache (the main connection has 4): it also sizes SQLite's sort buffer of an index
// build (the larger of the cache and 1 MB), a block glibc maps on its own. Freeing a 4 MiB one made
// glibc raise its trim threshold to 8 MiB for every thread's arena, which then kept free tops of up
// to that resident (README, "Desktop storage", rss).
db.pragma('cache_size = -1024');
// Blobs arrive as Uint8Array; the driver binds Buffers.
const param = (p) => (p instanceof Uint8Array && !Buffer.isBuffer(p) ? Buffer.from(p.buffer, p.byteOffset, p.byteLength) : p);
const statements = new Map();
const prepared = (sql) => {
  let s = statements.get(sql);
  if (!s) {
    if (statements.size >= 64) statements.delete(statements.keys().next().value);
    statements.set(sql, (s = db.prepare(sql)));
  }
  return s;
};
const readAll = db.transaction((reads) => reads.map((r) => prepared(r.sql).all(...r.params.map(param))));
parentPort.on('message', (m) => {
  if (m.close) { db.close(); process.exit(0); }
  try {
    if (m.reads) {
      parentPort.postMessage({ id: m.id, rows: readAll(m.reads) });
      return;
    }
    if (m.checkpoint) {
      const r = db.pragma('wal_checkpoint(' + m.checkpoint + ')')[0];
      parentPort.postMessage({ id: m.id, wal: { frames: r.log, backfilled: r.checkpointed } });
      return;
    }
    db.exec(m.sql);
    parentPort.postMessage({ id: m.id });
  } catch (e) {
    // A script of several statements that failed inside its own transaction leaves none open.
    if (db.inTransaction) db.exec('ROLLBACK');
    parentPort.postMessage({ id: m.id, error: String(e && e.message), code: e && e.code });
  }
});
`;

const OPEN_FILES = new Map<string, StorageFile>();
/** Files of this process whose last user released them and whose close has not ended (the worker
 * threads ending, a checkpoint under way), by path: their connection still holds the lock, so an
 * open of the same path waits for the close (StorageFile.opened). */
const CLOSING_FILES = new Map<string, Promise<void>>();

/** Opens the documents' file (its lock is held: takeLock). */
function openFile(path: string, synchronous: Synchronous): SqliteDatabase {
  // timeout 0: this thread never busy-waits. The lock file keeps other processes out, and in this
  // process the worker's statements are never run beside a write of this connection (whenFree).
  const db = new Database(path, { timeout: 0 });
  try {
    // Normal locking mode (a file written by an earlier version in EXCLUSIVE mode opens as well):
    // the worker's connection shares the file, through WAL's shared-memory index (`-shm`).
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    // No checkpoints on this connection: the worker thread runs them (StorageFile.checkpoint). The
    // WAL file is cut back to 64 MB when it starts over (it seldom grows past: the RESTART limit).
    db.pragma('wal_autocheckpoint = 0');
    db.pragma(`journal_size_limit = ${CHECKPOINT_TUNING.walLimitBytes}`);
    // 4 MiB of page cache instead of SQLite's 16: the cache stays resident (it counted ~20 MB of
    // the desktop's memory after a sync of 100k leads), while a page it misses comes from the
    // operating system's cache for a read call (no slower sync or page reads were measured).
    db.pragma('cache_size = -4096');
    db.exec('BEGIN IMMEDIATE');
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
