/** An in-memory copy of each workspace's small collections (campaigns, stages, tags, members, ...).
 *
 * Embedded database ('exclusive'): PGlite has exactly one owner process (the data folder is locked),
 * and every write goes through PgStore.commit in that process, so the copy can be kept exact: a
 * commit applies its writes here inside its own transaction, before COMMIT, while PGlite lets no
 * other transaction run. Reads of these collections then cost no database round trip at all, which
 * is what keeps list operations close to the speed of a bare HTTP route.
 *
 * PostgreSQL ('validated'): other server processes write too, so a copy is used only when it is
 * provably current. Every change of a document takes a new, higher `seq` under the workspace's
 * writer lock, so the highest seq of one collection of one workspace (deleted rows included)
 * identifies its state. Each transaction reads those highest seqs in its first round trip (with
 * BEGIN and the lock: VERSIONS_SQL) and uses a copy only when it was loaded at exactly that seq;
 * otherwise it loads the collection again inside the same transaction. */
import { cloneJson } from '../shared/json-clone.ts';
import type { CollectionName } from '../shared/model/index.ts';
import type { AnyWrite } from '../shared/store.ts';
import { documentJson } from '../shared/tx.ts';
import type { SqlDatabase, SqlExecutor } from './db.ts';

/** Collections that stay small per workspace; leads, activities, enrollments, messages and usage
 * grow without bound and are always read from SQL. */
export const CACHED_COLLECTIONS: ReadonlySet<CollectionName> = new Set<CollectionName>(['workspaces', 'members', 'stages', 'tags', 'leadGroups', 'campaigns', 'senders']);

const key = (workspaceId: string, c: CollectionName): string => `${workspaceId}/${c}`;

/** A cached collection: the documents (for matching and sorting; never handed out), copied for
 * each reader, and their JSON text, which a Tx takes instead of serialising the copy again. */
export type CachedDocs = { readonly docs: ReadonlyMap<string, object>; copy(doc: object): unknown; copyById(id: string): unknown };

class Entry implements CachedDocs {
  readonly docs = new Map<string, object>();
  private readonly texts = new WeakMap<object, string>();
  set(id: string, text: string): void {
    const doc = JSON.parse(text) as object;
    this.texts.set(doc, text);
    this.docs.set(id, doc);
  }
  delete(id: string): void {
    this.docs.delete(id);
  }
  copy(doc: object): unknown {
    const out = cloneJson(doc);
    const text = this.texts.get(doc);
    if (text !== undefined) documentJson.set(out, text);
    return out;
  }
  copyById(id: string): unknown {
    const doc = this.docs.get(id);
    return doc === undefined ? undefined : this.copy(doc);
  }
}

/** Copies kept in 'validated' mode (workspace x collection); the oldest are dropped beyond this. */
const MAX_VALIDATED = 2000;

/** The statement (no parameters) that reads the version of every cached collection of a workspace:
 * one index probe each (documents_pull is ordered by seq), through a PL/pgSQL function whose plan
 * each connection keeps (012_collection_versions.sql). */
export function versionsSql(workspaceLiteral: string): string {
  const cols = [...CACHED_COLLECTIONS].map((c) => `'${c}'`).join(', ');
  return `SELECT collection, version FROM crm_collection_versions(${workspaceLiteral}, ARRAY[${cols}])`;
}

/** Versions by collection from the rows of versionsSql (an empty collection is version 0). */
export function parseVersions(rows: readonly Record<string, unknown>[]): Map<CollectionName, number> {
  const found = new Map<string, number>();
  for (const r of rows) found.set(String(r.collection), Number(r.version ?? 0));
  const out = new Map<CollectionName, number>();
  for (const c of CACHED_COLLECTIONS) out.set(c, found.get(c) ?? 0);
  return out;
}

export class DocumentCache {
  constructor(readonly mode: 'exclusive' | 'validated' = 'exclusive') {}

  private readonly atVersion = new Map<string, { entry: Entry; version: number }>();

  /** 'validated' mode: the documents of `c` as of `version`, loaded through `sql` (which must see
   * exactly that version: the transaction that read it) unless a copy at that version is kept. */
  async docsAt(workspaceId: string, c: CollectionName, version: number, sql: SqlExecutor): Promise<CachedDocs> {
    const k = key(workspaceId, c);
    const hit = this.atVersion.get(k);
    if (hit && hit.version === version) return hit.entry;
    const rows = await sql.query<{ id: string; doc: unknown }>(
      `SELECT id, doc FROM documents WHERE collection = '${c}' AND workspace_id = $1 AND NOT deleted`,
      [workspaceId],
    );
    const loaded = new Entry();
    for (const r of rows) loaded.set(r.id, JSON.stringify(r.doc));
    // Keep the newest state seen (an older snapshot may still be reading).
    if (!hit || hit.version < version) {
      this.atVersion.delete(k);
      this.atVersion.set(k, { entry: loaded, version });
      if (this.atVersion.size > MAX_VALIDATED) {
        const oldest = this.atVersion.keys().next();
        if (!oldest.done) this.atVersion.delete(oldest.value);
      }
    }
    return loaded;
  }

  /** Bumps on every applied change: a reader that saw the same version before and after its reads
   * saw one consistent state. */
  version = 0;
  private readonly entries = new Map<string, Entry>();
  /** Changes per workspace/collection, loaded or not, so a load that raced a commit is detected. */
  private readonly generations = new Map<string, number>();

  /** The live documents of one collection of one workspace (hand out copies only). */
  async docs(workspaceId: string, c: CollectionName, sql: SqlExecutor): Promise<CachedDocs> {
    const k = key(workspaceId, c);
    const hit = this.entries.get(k);
    if (hit) return hit;
    for (let attempt = 0; ; attempt++) {
      const generation = this.generations.get(k) ?? 0;
      const rows = await sql.query<{ id: string; doc: unknown }>(
        `SELECT id, doc FROM documents WHERE collection = '${c}' AND workspace_id = $1 AND NOT deleted`,
        [workspaceId],
      );
      const loaded = new Entry();
      for (const r of rows) loaded.set(r.id, JSON.stringify(r.doc));
      if ((this.generations.get(k) ?? 0) === generation) {
        this.entries.set(k, loaded);
        return loaded;
      }
      // A commit landed while the rows were on their way: they may predate it. Use them for this
      // read only if it keeps happening, and never keep them.
      if (attempt >= 2) return loaded;
    }
  }

  /** Applies committed writes (called inside the committing transaction). */
  apply(workspaceId: string, writes: readonly AnyWrite[]): void {
    let changed = false;
    for (const w of writes) {
      if (!CACHED_COLLECTIONS.has(w.collection)) continue;
      const k = key(workspaceId, w.collection);
      this.generations.set(k, (this.generations.get(k) ?? 0) + 1);
      const entry = this.entries.get(k);
      if (entry) {
        if (w.after) entry.set(w.id, JSON.stringify(w.after));
        else entry.delete(w.id);
      }
      changed = true;
    }
    if (changed) this.version++;
  }

  /** Drops a workspace's copies (its commit failed after applying, or the state is unknown). */
  invalidate(workspaceId: string): void {
    for (const c of CACHED_COLLECTIONS) {
      const k = key(workspaceId, c);
      this.entries.delete(k);
      this.generations.set(k, (this.generations.get(k) ?? 0) + 1);
    }
    this.version++;
  }
}

const caches = new WeakMap<SqlDatabase, DocumentCache>();

/** One cache per open database, shared by every PgDatabase over it: exact for the embedded database,
 * validated by collection versions on PostgreSQL. */
export function cacheFor(sql: SqlDatabase): DocumentCache {
  let c = caches.get(sql);
  if (!c) {
    c = new DocumentCache(sql.kind === 'pglite' ? 'exclusive' : 'validated');
    caches.set(sql, c);
  }
  return c;
}

/** A read-only transaction opened only when the first statement needs it, so a call served entirely
 * from the cache never touches the database. */
export class LazyReadTransaction implements SqlExecutor {
  private tx: Promise<SqlExecutor> | null = null;
  private release: (() => void) | null = null;
  private done: Promise<unknown> | null = null;
  /** Whether any statement ran. */
  opened = false;

  constructor(private readonly sql: SqlDatabase) {}

  async query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]> {
    const tx = await this.open();
    return tx.query<R>(text, params);
  }

  private open(): Promise<SqlExecutor> {
    if (!this.tx) {
      this.opened = true;
      this.tx = new Promise<SqlExecutor>((resolve, reject) => {
        this.done = this.sql
          .readOnly(
            (tx) =>
              new Promise<void>((finish) => {
                this.release = finish;
                resolve(tx);
              }),
          )
          .catch((e: unknown) => reject(e));
      });
    }
    return this.tx;
  }

  /** Ends the transaction if one was opened (a read has nothing to lose if COMMIT fails). */
  async end(): Promise<void> {
    this.release?.();
    await this.done?.catch(() => undefined);
  }
}
