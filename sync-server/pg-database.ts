/** The StoreProvider on PostgreSQL / PGlite: each `withStore` is one transaction under the workspace's
 * writer lock, with group commit of the API's writes (calls that queue behind a busy writer share
 * the next transaction), read-only snapshots for reads, and the commit listeners that live streams,
 * caches and maintenance hang on. The Store inside one transaction is PgStore (pg-store.ts). */
import { isDomainError } from '../shared/errors.ts';
import type { Store, StoreProvider } from '../shared/store.ts';
import { quoteLiteral } from './db.ts';
import type { SqlDatabase, SqlExecutor } from './db.ts';
import { LazyReadTransaction, cacheFor, parseVersions, versionsSql } from './doc-cache.ts';
import type { DocumentCache } from './doc-cache.ts';
import { DeferredWrites, PgStore, WRITER_LOCK_CLASS } from './pg-store.ts';
import type { CommitEvent } from './pg-store.ts';
import { outboxFor } from './webhooks/outbox.ts';
import { identityKeysGate } from './identity-backfill.ts';
import type { IdentityKeysGate } from './identity-backfill.ts';
import type { Outbox } from './webhooks/outbox.ts';

/** Told of each commit once it is durable; a listener that returns a promise makes the call that
 * committed wait for it (work that must be done before the caller's next request is planned). */
type CommitListener = (e: CommitEvent) => void | Promise<void>;
/** Listeners per open database, so every PgDatabase over it (the server's, the CLI's, a test's)
 * reports its commits to the same live streams and caches. */
const listenersOf = new WeakMap<SqlDatabase, Set<CommitListener>>();

/** One writer at a time per workspace within this process, in arrival order. */
class WorkspaceQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Resolves when it is this caller's turn; call the returned function when done. */
  async acquire(workspaceId: string): Promise<() => void> {
    const previous = this.tails.get(workspaceId) ?? Promise.resolve();
    let release: () => void = () => undefined;
    const mine = new Promise<void>((r) => (release = r));
    const tail = previous.then(() => mine);
    this.tails.set(workspaceId, tail);
    await previous;
    return () => {
      release();
      if (this.tails.get(workspaceId) === tail) this.tails.delete(workspaceId);
    };
  }
}

/** Calls that share one transaction at most (group commit, see PgDatabase.withStore). */
const MAX_BATCH = 32;

type Job = { fn: (store: Store, tx: SqlExecutor) => Promise<unknown>; resolve: (value: unknown) => void; reject: (error: unknown) => void };
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Per open database, like the listeners: every PgDatabase over it shares the queue. */
const queuesOf = new WeakMap<SqlDatabase, WorkspaceQueue>();

export class PgDatabase implements StoreProvider {
  private readonly commitListeners: Set<CommitListener>;
  private readonly cache: DocumentCache | null;
  private readonly writers: WorkspaceQueue;
  private readonly outbox: Outbox;
  /** Look-ups by identity key wait for the keys' backfill (identity-backfill.ts). */
  private readonly keysGate: IdentityKeysGate;

  constructor(
    readonly sql: SqlDatabase,
    opts: { cache?: boolean } = {},
  ) {
    this.cache = opts.cache === false ? null : cacheFor(sql);
    let writers = queuesOf.get(sql);
    if (!writers) {
      writers = new WorkspaceQueue();
      queuesOf.set(sql, writers);
    }
    this.writers = writers;
    this.outbox = outboxFor(sql);
    this.keysGate = identityKeysGate(sql);
    let listeners = listenersOf.get(sql);
    if (!listeners) {
      listeners = new Set();
      listenersOf.set(sql, listeners);
    }
    this.commitListeners = listeners;
  }

  /** Called after a transaction that wrote through a Store has committed. */
  onCommit(listener: CommitListener): () => void {
    this.commitListeners.add(listener);
    return () => this.commitListeners.delete(listener);
  }

  /** Runs fn in one transaction with a workspace-scoped Store that holds the workspace's writer lock
   * from the start (mutating work only; reads use withReadStore); its commits become durable
   * together.
   *
   * `batch: true` (operations from the HTTP API, on PostgreSQL) lets calls that arrive while this
   * workspace's writer is busy share the next transaction (group commit): they run one after the
   * other under the same lock, each seeing the writes of those before it, and one COMMIT makes them
   * durable together, so a workspace's write rate is not bounded by one fsync per call. A call that
   * fails with a DomainError before writing leaves the others untouched; any other failure (a failed
   * statement aborts a PostgreSQL transaction) rolls the shared transaction back and each of its
   * calls runs again in a transaction of its own. Only pure calls may batch: fn must be safe to run
   * again, and must not write through `tx` on its own. */
  async withStore<T>(workspaceId: string, fn: (store: Store, tx: SqlExecutor) => Promise<T>, opts: { batch?: boolean } = {}): Promise<T> {
    if (opts.batch && this.sql.kind === 'postgres') {
      return new Promise<T>((resolve, reject) => {
        let q = this.pending.get(workspaceId);
        if (!q) {
          q = [];
          this.pending.set(workspaceId, q);
        }
        q.push({ fn: fn as Job['fn'], resolve: resolve as Job['resolve'], reject });
        void this.drain(workspaceId);
      });
    }
    // Writers of one workspace in this process queue here rather than each holding a pooled
    // connection while it waits for the database lock (which still orders them across processes).
    const release = await this.writers.acquire(workspaceId);
    try {
      const [outcome] = await this.runTransaction(workspaceId, [fn as Job['fn']], release);
      if (!outcome) throw new Error('The transaction ran no call.');
      if (!outcome.ok) throw outcome.error;
      return outcome.value as T;
    } finally {
      release();
    }
  }

  /** Calls waiting for their workspace's next shared transaction. */
  private readonly pending = new Map<string, Job[]>();
  private readonly draining = new Set<string>();

  /** Runs the workspace's waiting calls, up to MAX_BATCH per transaction, until none is left. */
  private async drain(workspaceId: string): Promise<void> {
    if (this.draining.has(workspaceId)) return;
    this.draining.add(workspaceId);
    try {
      for (;;) {
        const q = this.pending.get(workspaceId);
        if (!q || q.length === 0) {
          this.pending.delete(workspaceId);
          return;
        }
        const release = await this.writers.acquire(workspaceId);
        // Whatever arrived while this one waited for the lock shares its transaction.
        const jobs = q.splice(0, MAX_BATCH);
        try {
          let outcomes: Outcome[];
          try {
            outcomes = await this.runTransaction(workspaceId, jobs.map((j) => j.fn), null);
          } catch (e) {
            if (jobs.length === 1) throw e;
            // The shared transaction rolled back: each call again, alone.
            outcomes = [];
            for (const j of jobs) {
              outcomes.push(
                await this.runTransaction(workspaceId, [j.fn], null).then(
                  (o) => o[0] ?? { ok: false, error: new Error('The transaction ran no call.') },
                  (error: unknown) => ({ ok: false, error }) as const,
                ),
              );
            }
          }
          jobs.forEach((j, i) => {
            const o = outcomes[i];
            if (o?.ok) j.resolve(o.value);
            else j.reject(o ? o.error : new Error('The transaction ran no call.'));
          });
        } catch (e) {
          for (const j of jobs) j.reject(e);
        } finally {
          release();
        }
      }
    } finally {
      this.draining.delete(workspaceId);
    }
  }

  /** One transaction under the workspace's writer lock running `fns` in order, each with a Store of
   * its own. A DomainError from a call that wrote nothing is that call's outcome; anything else
   * rolls the whole transaction back (the promise rejects). Commit events are emitted after COMMIT. */
  private async runTransaction(workspaceId: string, fns: Job['fn'][], release: (() => void) | null): Promise<Outcome[]> {
    const cache = this.cache;
    const validated = cache?.mode === 'validated';
    const stores: PgStore[] = [];
    // Set inside the transaction's callback; read after it.
    const deferred: { held: DeferredWrites | null } = { held: null };
    let applied = false;
    let outcomes: Outcome[];
    try {
      outcomes = await this.sql.transaction(
        async (tx, first) => {
          const versions = validated ? parseVersions(first) : null;
          let failed = false;
          // A statement that failed has aborted the transaction on PostgreSQL.
          const guarded: SqlExecutor = {
            query: <R>(text: string, params?: readonly unknown[]) =>
              tx.query<R>(text, params).catch((e: unknown) => {
                failed = true;
                throw e;
              }),
          };
          const out: Outcome[] = [];
          const notify = this.sql.kind === 'postgres';
          const inParts = this.sql.kind === 'postgres';
          // Shared calls hold their document writes for one statement at the end (DeferredWrites).
          const held = fns.length > 1 ? new DeferredWrites(guarded, workspaceId, notify) : null;
          deferred.held = held;
          for (const fn of fns) {
            // On PostgreSQL a large commit is written in parts, each while the next is checked (PgStore.commitChecked).
            const store = new PgStore(fns.length > 1 ? guarded : tx, workspaceId, cache, notify, versions ? new Map(versions) : null, this.outbox, held, inParts);
            store.locked = true;
            store.keysGate = this.keysGate;
            // Statements a call runs itself (not through its Store) may have written: if it then
            // fails, only a rollback of the whole transaction takes them back. They see the
            // writes held before them.
            let direct = false;
            const own: SqlExecutor = {
              query: async <R>(text: string, params?: readonly unknown[]) => {
                direct = true;
                await held?.flush();
                return guarded.query<R>(text, params);
              },
            };
            try {
              out.push({ ok: true, value: await fn(store, fns.length > 1 ? own : tx) });
              stores.push(store);
              // Later calls read what this one wrote from SQL, not from a copy of the version before.
              for (const w of store.writes) versions?.delete(w.collection);
            } catch (error) {
              if (fns.length === 1 || failed || direct || store.writes.length > 0 || !isDomainError(error)) throw error;
              out.push({ ok: false, error });
            }
          }
          await held?.flush();
          // Still inside the transaction: no other transaction can run before COMMIT (PGlite).
          const writes = stores.flatMap((st) => st.writes);
          if (cache?.mode === 'exclusive' && writes.length > 0) {
            cache.apply(workspaceId, writes);
            applied = true;
          }
          return out;
        },
        // The writer lock from the first statement: everything fn reads to decide its writes is
        // read under it, so no other writer of this workspace can invalidate it before COMMIT.
        {
          lock: { classId: WRITER_LOCK_CLASS, key: workspaceId },
          ...(validated ? { first: versionsSql(quoteLiteral(workspaceId)) } : {}),
          // The next writer's BEGIN travels while this COMMIT is flushed; the lock orders them.
          ...(release ? { onEnd: release } : {}),
        },
      );
    } catch (e) {
      if (applied) cache?.invalidate(workspaceId);
      throw e;
    }
    const settling: Promise<void>[] = [];
    for (const store of stores) for (const e of store.committed) settling.push(...this.emit(e));
    for (const e of deferred.held?.events ?? []) settling.push(...this.emit(e));
    // A listener may need the committed work settled before the caller goes on (the planner's
    // statistics after a bulk write, Maintenance.afterCommit); its failure is not the caller's.
    if (settling.length > 0) await Promise.all(settling.map((p) => p.catch(() => undefined)));
    return outcomes;
  }

  /** Like withStore for calls that only read (a read-only snapshot on Postgres, no lock). On PGlite a
   * call served from the document cache opens no transaction; if a commit changed the cache while the
   * call ran, the call runs again, and the last attempt holds a transaction throughout. */
  async withReadStore<T>(workspaceId: string, fn: (store: Store, tx: SqlExecutor) => Promise<T>): Promise<T> {
    const cache = this.cache;
    if (cache?.mode === 'exclusive') {
      for (let attempt = 0; attempt < 2; attempt++) {
        const lazy = new LazyReadTransaction(this.sql);
        const version = cache.version;
        const store = new PgStore(lazy, workspaceId, cache);
        store.keysGate = this.keysGate;
        let out: T;
        try {
          out = await fn(store, lazy);
        } finally {
          await lazy.end();
        }
        if (!store.usedCache || cache.version === version) return out;
      }
    }
    if (cache?.mode === 'validated') {
      return this.sql.readOnly((tx, first) => fn(this.gated(new PgStore(tx, workspaceId, cache, false, parseVersions(first))), tx), { first: versionsSql(quoteLiteral(workspaceId)) });
    }
    return this.sql.readOnly((tx) => fn(this.gated(new PgStore(tx, workspaceId, cache)), tx));
  }

  private gated(store: PgStore): PgStore {
    store.keysGate = this.keysGate;
    return store;
  }

  /** A Store outside any explicit transaction: each read and each commit is its own transaction
   * (tests, scripts). */
  forWorkspace(workspaceId: string): Store {
    const read = <T>(fn: (s: Store) => Promise<T>): Promise<T> => this.withReadStore(workspaceId, fn);
    return {
      workspaceId,
      get: (c, id) => read((s) => s.get(c, id)),
      getMany: (c, ids) => read((s) => s.getMany(c, ids)),
      query: (c, q) => read((s) => s.query(c, q)),
      count: (c, w) => read((s) => s.count(c, w)),
      duplicateGroups: (kind, o) => read((s) => s.duplicateGroups(kind, o)),
      commit: (writes) => this.withStore(workspaceId, (s) => s.commit(writes)),
    };
  }

  /** Tells every listener; returns the promises of those that asked the committer to wait. */
  private emit(e: CommitEvent): Promise<void>[] {
    const waits: Promise<void>[] = [];
    for (const l of this.commitListeners) {
      try {
        const wait = l(e);
        if (wait) waits.push(wait);
      } catch {
        // A failing listener must not turn a committed write into an error for the caller.
      }
    }
    return waits;
  }

  close(): Promise<void> {
    return this.sql.close();
  }
}
