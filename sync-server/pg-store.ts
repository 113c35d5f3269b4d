/** The Store port on PostgreSQL / PGlite. One `documents` table holds every collection; a Store is one
 * workspace's view inside one database transaction. */
import { COLLECTION_NAMES } from '../shared/model/index.ts';
import type { CollectionName, Docs } from '../shared/model/index.ts';
import { DomainError } from '../shared/errors.ts';
import { decodeCursor, encodeCursor, matches, runQuery } from '../shared/query.ts';
import type { AnyWrite, Cond, Page, Query, Store, StoreProvider } from '../shared/store.ts';
import { Params, condSql, cursorSql, orderSql } from './cond-sql.ts';
import type { SqlDatabase, SqlExecutor } from './db.ts';
import { CACHED_COLLECTIONS, LazyReadTransaction, cacheFor } from './doc-cache.ts';
import type { CachedDocs, DocumentCache } from './doc-cache.ts';

/** Advisory lock class of the per-workspace writer lock (the second key is the workspace hash). */
export const WRITER_LOCK_CLASS = 727;

const KNOWN = new Set<string>(COLLECTION_NAMES);
/** Collection names are inlined as literals so the planner can match the partial indexes. */
function lit(c: CollectionName): string {
  if (!KNOWN.has(c)) throw new Error(`Unknown collection ${String(c)}.`);
  return `'${c}'`;
}

/** What a commit changed, for live updates and replication fan-out. */
export type CommitEvent = { workspaceId: string; collections: CollectionName[]; maxSeq: number; rows: number };

/** The Postgres NOTIFY channel that carries CommitEvents between server processes. */
export const CHANGES_CHANNEL = 'crm_changes';

export class PgStore implements Store {
  /** Writes committed through this store (the transaction may still roll back). */
  readonly committed: CommitEvent[] = [];
  /** The writes themselves, for the document cache. */
  readonly writes: AnyWrite[] = [];
  /** Whether a read was answered from the document cache. */
  usedCache = false;

  constructor(
    private readonly sql: SqlExecutor,
    readonly workspaceId: string,
    private readonly cache: DocumentCache | null = null,
    /** NOTIFY other processes of each commit (Postgres). */
    private readonly notify = false,
  ) {}

  /** The cached documents of `c`, unless this store has written to it (then SQL sees those writes). */
  private async cached(c: CollectionName): Promise<CachedDocs | null> {
    if (!this.cache || !CACHED_COLLECTIONS.has(c) || this.writes.some((w) => w.collection === c)) return null;
    this.usedCache = true;
    return this.cache.docs(this.workspaceId, c, this.sql);
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const mem = await this.cached(c);
    if (mem) return (mem.copyById(id) as Docs[C] | undefined) ?? null;
    const rows = await this.sql.query<{ doc: Docs[C] }>(
      `SELECT doc FROM documents WHERE collection = ${lit(c)} AND id = $1 AND workspace_id = $2 AND NOT deleted`,
      [id, this.workspaceId],
    );
    return rows[0]?.doc ?? null;
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    if (ids.length === 0) return [];
    const mem = await this.cached(c);
    if (mem) return ids.flatMap((id) => (mem.docs.has(id) ? [mem.copyById(id) as Docs[C]] : []));
    const rows = await this.sql.query<{ id: string; doc: Docs[C] }>(
      `SELECT id, doc FROM documents WHERE collection = ${lit(c)} AND id = ANY($1::text[]) AND workspace_id = $2 AND NOT deleted`,
      [[...new Set(ids)], this.workspaceId],
    );
    const byId = new Map(rows.map((r) => [r.id, r.doc]));
    const out: Docs[C][] = [];
    for (const id of ids) {
      const d = byId.get(id);
      // Each caller gets its own copy, as from the memory store.
      if (d) out.push(out.includes(d) ? structuredClone(d) : d);
    }
    return out;
  }

  async query<C extends CollectionName>(c: C, q: Query = {}): Promise<Page<Docs[C]>> {
    const mem = await this.cached(c);
    if (mem) {
      const page = runQuery(mem.docs.values(), q);
      return { docs: page.docs.map((d) => mem.copy(d) as Docs[C]), nextCursor: page.nextCursor };
    }
    const orderBy = q.orderBy ?? [];
    const p = new Params();
    const where = [`collection = ${lit(c)}`, `workspace_id = ${p.add(this.workspaceId)}`, 'NOT deleted', condSql(c, q.where, p)];
    if (q.cursor) where.push(cursorSql(c, orderBy, decodeCursor(q.cursor, orderBy), p));
    let text = `SELECT doc FROM documents WHERE ${where.join(' AND ')} ORDER BY ${orderSql(c, orderBy)}`;
    if (q.limit !== undefined) text += ` LIMIT ${p.add(q.limit + 1)}::int`;
    const rows = await this.sql.query<{ doc: Docs[C] }>(text, p.values);
    const docs = rows.map((r) => r.doc);
    if (q.limit === undefined || docs.length <= q.limit) return { docs, nextCursor: null };
    const page = docs.slice(0, q.limit);
    const last = page[page.length - 1];
    return { docs: page, nextCursor: last === undefined ? null : encodeCursor(last, orderBy) };
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    const mem = await this.cached(c);
    if (mem) {
      let n = 0;
      for (const d of mem.docs.values()) if (matches(d, where)) n++;
      return n;
    }
    const p = new Params();
    const rows = await this.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM documents WHERE collection = ${lit(c)} AND workspace_id = ${p.add(this.workspaceId)} AND NOT deleted AND ${condSql(c, where, p)}`,
      p.values,
    );
    return rows[0]?.n ?? 0;
  }

  async commit(writes: readonly AnyWrite[]): Promise<void> {
    if (writes.length === 0) return;
    for (const w of writes) {
      if (!KNOWN.has(w.collection)) throw new Error(`Unknown collection ${w.collection}.`);
      if (w.after && (w.after as { workspaceId: string }).workspaceId !== this.workspaceId) {
        throw new DomainError('CONFLICT', `A write to ${w.collection}/${w.id} names another workspace.`);
      }
      if (w.after && (w.after as { id: string }).id !== w.id) throw new Error(`Write ${w.collection}/${w.id} carries a document with another id.`);
    }
    // Serialises this workspace's writers until COMMIT: seq is taken below, under the lock, so seq
    // order is commit order and a pull by seq never skips a row that commits later.
    await this.sql.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [WRITER_LOCK_CLASS, this.workspaceId]);

    const rows = writes.map((w, ord) => ({ ord, collection: w.collection, id: w.id, before: w.before ?? undefined }));
    const checks = await this.sql.query<{ ord: number; workspace_id: string | null; same: boolean }>(
      `SELECT w.ord, d.workspace_id,
              CASE WHEN d.id IS NULL OR d.deleted THEN w.before IS NULL OR w.before = 'null'::jsonb
                   ELSE w.before IS NOT NULL AND d.doc = w.before END AS same
         FROM jsonb_to_recordset($1::jsonb) AS w(ord int, collection text, id text, before jsonb)
         LEFT JOIN documents d ON d.collection = w.collection AND d.id = w.id`,
      [JSON.stringify(rows)],
    );
    for (const ch of checks) {
      const w = writes[ch.ord];
      if (!w) continue;
      if (ch.workspace_id !== null && ch.workspace_id !== this.workspaceId) {
        throw new DomainError('CONFLICT', `Document ${w.id} belongs to another workspace.`);
      }
      if (!ch.same) {
        throw new DomainError('CONFLICT', `${w.collection}/${w.id} changed since it was read; try again.`, { collection: w.collection, id: w.id });
      }
    }

    const puts = writes.filter((w) => w.after !== null).map((w) => ({ collection: w.collection, id: w.id, doc: w.after }));
    const dels = writes.filter((w) => w.after === null).map((w) => ({ collection: w.collection, id: w.id }));
    const seqs: number[] = [];
    if (puts.length > 0) {
      const r = await this.sql.query<{ seq: string | number }>(
        `INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc)
         SELECT w.collection, w.id, $2, nextval('documents_seq'), false, w.doc
           FROM jsonb_to_recordset($1::jsonb) AS w(collection text, id text, doc jsonb)
         ON CONFLICT (collection, id) DO UPDATE
           SET workspace_id = EXCLUDED.workspace_id, seq = EXCLUDED.seq, deleted = false, doc = EXCLUDED.doc
         RETURNING seq`,
        [JSON.stringify(puts), this.workspaceId],
      );
      for (const row of r) seqs.push(Number(row.seq));
    }
    if (dels.length > 0) {
      const r = await this.sql.query<{ seq: string | number }>(
        `UPDATE documents d SET deleted = true, seq = nextval('documents_seq')
           FROM jsonb_to_recordset($1::jsonb) AS w(collection text, id text)
          WHERE d.collection = w.collection AND d.id = w.id AND d.workspace_id = $2 AND NOT d.deleted
         RETURNING d.seq`,
        [JSON.stringify(dels), this.workspaceId],
      );
      for (const row of r) seqs.push(Number(row.seq));
    }
    this.writes.push(...writes);
    const event: CommitEvent = {
      workspaceId: this.workspaceId,
      collections: [...new Set(writes.map((w) => w.collection))],
      maxSeq: seqs.reduce((m, s) => (s > m ? s : m), 0),
      rows: seqs.length,
    };
    // Other server processes on the same Postgres learn of the change at COMMIT (LISTEN/NOTIFY).
    if (this.notify) await this.sql.query('SELECT pg_notify($1, $2)', [CHANGES_CHANNEL, JSON.stringify(event)]);
    this.committed.push(event);
  }
}

/** The StoreProvider over a SqlDatabase: each `withStore` is one transaction. */
type CommitListener = (e: CommitEvent) => void;
/** Listeners per open database, so every PgDatabase over it (the server's, the CLI's, a test's)
 * reports its commits to the same live streams and caches. */
const listenersOf = new WeakMap<SqlDatabase, Set<CommitListener>>();

export class PgDatabase implements StoreProvider {
  private readonly commitListeners: Set<CommitListener>;
  private readonly cache: DocumentCache | null;

  constructor(
    readonly sql: SqlDatabase,
    opts: { cache?: boolean } = {},
  ) {
    this.cache = opts.cache === false ? null : cacheFor(sql);
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

  /** Runs fn in one transaction with a workspace-scoped Store; its commits become durable together. */
  async withStore<T>(workspaceId: string, fn: (store: Store, tx: SqlExecutor) => Promise<T>): Promise<T> {
    let store: PgStore | undefined;
    let applied = false;
    let out: T;
    try {
      out = await this.sql.transaction(async (tx) => {
        store = new PgStore(tx, workspaceId, this.cache, this.sql.kind === 'postgres');
        const result = await fn(store, tx);
        // Still inside the transaction: no other transaction can run before COMMIT (PGlite).
        if (this.cache && store.writes.length > 0) {
          this.cache.apply(workspaceId, store.writes);
          applied = true;
        }
        return result;
      });
    } catch (e) {
      if (applied) this.cache?.invalidate(workspaceId);
      throw e;
    }
    if (store) for (const e of store.committed) this.emit(e);
    return out;
  }

  /** Like withStore for calls that only read (a read-only snapshot on Postgres). On PGlite a call
   * served from the document cache opens no transaction; if a commit changed the cache while the call
   * ran, the call runs again, and the last attempt holds a transaction throughout. */
  async withReadStore<T>(workspaceId: string, fn: (store: Store, tx: SqlExecutor) => Promise<T>): Promise<T> {
    const cache = this.cache;
    if (cache) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const lazy = new LazyReadTransaction(this.sql);
        const version = cache.version;
        const store = new PgStore(lazy, workspaceId, cache);
        let out: T;
        try {
          out = await fn(store, lazy);
        } finally {
          await lazy.end();
        }
        if (!store.usedCache || cache.version === version) return out;
      }
    }
    return this.sql.readOnly((tx) => fn(new PgStore(tx, workspaceId, cache), tx));
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
      commit: (writes) => this.withStore(workspaceId, (s) => s.commit(writes)),
    };
  }

  private emit(e: CommitEvent): void {
    for (const l of this.commitListeners) {
      try {
        l(e);
      } catch {
        // A failing listener must not turn a committed write into an error for the caller.
      }
    }
  }

  close(): Promise<void> {
    return this.sql.close();
  }
}
