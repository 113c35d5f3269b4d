/** The Store port on PostgreSQL / PGlite. One `documents` table holds every collection; a PgStore is
 * one workspace's view inside one database transaction (PgDatabase in pg-database.ts opens them):
 * reads shaped so their plans hold on any statistics, and one statement that checks and writes a
 * commit. */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { cloneJson } from '../shared/json-clone.ts';
import { COLLECTION_NAMES } from '../shared/model/index.ts';
import type { CollectionName, Docs } from '../shared/model/index.ts';
import { DomainError, isDomainError } from '../shared/errors.ts';
import { storedKeys } from '../shared/intake/identity.ts';
import type { IdentityKind } from '../shared/intake/identity.ts';
import { checkGroupLimit, decodeCursor, decodeKeyCursor, encodeCursor, encodeKeyCursor, matches, runQuery } from '../shared/query.ts';
import type { AnyWrite, CommitAhead, Cond, DuplicateGroup, DuplicatePage, DuplicatePageOptions, Page, Query, Store } from '../shared/store.ts';
import { IDENTITY_KEY_COLUMNS, Params, condSql, cursorSql, orderSql, probeFromSql, probeOf, scopeSql } from './cond-sql.ts';
import { prepared } from './db.ts';
import type { SqlExecutor } from './db.ts';
import { CACHED_COLLECTIONS } from './doc-cache.ts';
import type { CachedDocs, DocumentCache } from './doc-cache.ts';
import type { IdentityKeysGate } from './identity-backfill.ts';
import type { Outbox } from './webhooks/outbox.ts';

/** Advisory lock class of the per-workspace writer lock (the second key is the workspace hash). */
export const WRITER_LOCK_CLASS = 727;

const KNOWN = new Set<string>(COLLECTION_NAMES);
/** Collection names are inlined as literals so the planner can match the partial indexes. */
function lit(c: CollectionName): string {
  if (!KNOWN.has(c)) throw new Error(`Unknown collection ${String(c)}.`);
  return `'${c}'`;
}

/** Whether a condition's best plan does not depend on its values, so one prepared plan per
 * connection serves every call: lookups by equality, lists and ranges do; a substring search does
 * not (how selective its trigrams are depends on the text), so it is planned each time. */
function stable(cond: Cond | undefined): boolean {
  if (!cond) return true;
  switch (cond.op) {
    case 'contains':
      return false;
    case 'and':
    case 'or':
      return cond.conds.every(stable);
    case 'not':
      return stable(cond.cond);
    default:
      return true;
  }
}

/** Rows of the sort order a text search reads before it asks the text index (see headFirstSql). */
export const SEARCH_HEAD_ROWS = 1000;

/** Matches a text search asks the text index for first: fewer means a rare term (see headFirstSql). */
export const SEARCH_PROBE_ROWS = 200;

/** Whether a page of a text search may be looked for in the first rows of its sort order first: a
 * lead search (`contains`) in creation order, the order the leads_created index walks. */
function walksFirst(c: CollectionName, q: Query): boolean {
  if (c !== 'leads' || q.limit === undefined || q.limit >= SEARCH_HEAD_ROWS / 4) return false;
  const first = q.orderBy?.[0];
  const hasText = (cond: Cond | undefined): boolean => cond?.op === 'contains' || (cond?.op === 'and' && cond.conds.some(hasText));
  return first?.field === 'createdAt' && hasText(q.where);
}

/**
 * A page of a text search, in three tries, each run only when the one before came up short:
 * 1. the text index, for at most SEARCH_PROBE_ROWS matches: fewer means a rare term, and those are
 *    all its matches (after the cursor), sorted here (a rare email fragment: ~2 ms at 100k leads);
 * 2. the first SEARCH_HEAD_ROWS leads of the sort order (after the cursor), tested in order until a
 *    page is found: a common term ("Smith", 1 lead in 10) fills a page within ~500 leads of the
 *    creation-order index, where the text index would fetch, test and sort every lead it matches
 *    (10,000 at 100k leads: 78 ms against ~10 ms). When the head holds a full page, those are the
 *    first matches in order, since the head is a prefix of that order;
 * 3. `search`, the whole query, which the text index answers (a term common overall but not among
 *    the newest leads).
 * Testing a lead's text costs ~24 µs on this machine (eight fields of its jsonb, folded), so the
 * head is tested row by row and stops at a page (no sort before the LIMIT), and a rare term no
 * longer pays for the whole head (~25 ms) before the index. The planner would choose so itself if
 * it could estimate how common a substring is; it estimates 0.2% for any. One statement.
 */
function headFirstSql(c: CollectionName, search: string, parts: { workspace: string; cond: string; after: string | null; order: string; limit: string }): string {
  const scope = [`collection = ${lit(c)}`, `workspace_id = ${parts.workspace}`, 'NOT deleted', ...(parts.after ? [parts.after] : [])].join(' AND ');
  const rare = `(SELECT count(*) FROM probe) < ${SEARCH_PROBE_ROWS}`;
  return `WITH probe AS MATERIALIZED (
  SELECT id, doc FROM documents WHERE ${scope} AND ${parts.cond} LIMIT ${SEARCH_PROBE_ROWS}
), head AS MATERIALIZED (
  SELECT id, doc FROM (SELECT id, doc FROM documents WHERE ${scope} ORDER BY ${parts.order} LIMIT ${SEARCH_HEAD_ROWS}) documents
   WHERE ${parts.cond} LIMIT ${parts.limit}
), found AS (
  SELECT id, doc FROM (SELECT id, doc FROM probe documents ORDER BY ${parts.order} LIMIT ${parts.limit}) documents WHERE ${rare}
  UNION ALL
  SELECT id, doc FROM head WHERE NOT ${rare} AND (SELECT count(*) FROM head) >= ${parts.limit}
  UNION ALL
  SELECT id, doc FROM (${search.replace(/^SELECT doc /, 'SELECT id, doc ')}) documents WHERE NOT ${rare} AND (SELECT count(*) FROM head) < ${parts.limit}
)
SELECT doc FROM found documents ORDER BY ${parts.order}`;
}

/** Writes per statement of a commit written in parts (PgStore.commitChecked). */
export const COMMIT_PART = 500;
/** Writes the rules check between two turns of the event loop while parts are being written. */
const CHECK_SLICE = 100;
const PARTS_SAVEPOINT = 'crm_commit_parts';
/** The savepoint of a large commit of creations written in one statement (PgStore.commitCreations). */
const CREATIONS_SAVEPOINT = 'crm_commit_creations';

/** What a commit changed, for live updates and replication fan-out. */
export type CommitEvent = { workspaceId: string; collections: CollectionName[]; maxSeq: number; rows: number };

/** The Postgres NOTIFY channel that carries CommitEvents between server processes. */
export const CHANGES_CHANNEL = 'crm_changes';

/**
 * The writes of a group-commit transaction's calls (PgDatabase.withStore with `batch`), held back and
 * written in one statement when the transaction ends: inside the workspace's writer lock every round
 * trip is paid by every call queued behind it, and a call's own commit statement was one of its three
 * (updateTag: read the lead, read its enrollments, write). Later calls of the same transaction read
 * what earlier ones wrote from here (by id), or, for anything SQL must answer (a query or count of a
 * collection with held writes, a statement a call sends itself), after the held writes are flushed
 * first, so each call still sees exactly the writes before it. Writes to one document by several
 * calls become one write (the first `before`, the last `after`). A refusal found by the flush (a
 * changed document, a unique index) fails the shared transaction, which PgDatabase then runs again
 * call by call, so the refusal reaches its own call.
 */
export class DeferredWrites {
  private readonly pending = new Map<string, AnyWrite>();
  /** One per flush, emitted after COMMIT like a store's own commit events. */
  readonly events: CommitEvent[] = [];

  constructor(
    private readonly sql: SqlExecutor,
    private readonly workspaceId: string,
    private readonly notify: boolean,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /** The held write of a document, if any. */
  get(c: CollectionName, id: string): AnyWrite | undefined {
    return this.pending.get(`${c}/${id}`);
  }

  /** Whether writes of `c` are held (SQL over `c` must then wait for a flush). */
  touches(c: CollectionName): boolean {
    for (const w of this.pending.values()) if (w.collection === c) return true;
    return false;
  }

  add(writes: readonly AnyWrite[]): void {
    for (const w of writes) {
      const k = `${w.collection}/${w.id}`;
      const prev = this.pending.get(k);
      // The stored row is still the first call's `before`: that is what the statement compares.
      this.pending.set(k, prev ? ({ ...w, before: prev.before } as AnyWrite) : w);
    }
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const writes = [...this.pending.values()];
    this.pending.clear();
    this.events.push(await writeDocuments(this.sql, this.workspaceId, this.notify, writes));
  }
}

/** A part written with CREATE_SQL failed on a unique index (`23505`): an id already stored (a live
 * document, a tombstone, another workspace's), the same id twice, or an invariant index. The commit
 * is then written again with COMMIT_SQL, whose answer (a refusal, or a tombstone brought back) is
 * the one the commit always had (PgStore.commitChecked). */
class CreationCollided extends Error {
  constructor(readonly collision: unknown) {
    super('A creation met a stored row; the commit is written again with the checking statement.');
  }
}

/** Whether every write creates a document: no stored state was read for it and it is no removal. */
const createsOnly = (writes: readonly AnyWrite[]): boolean => writes.every((w) => w.before === null && w.after !== null);

/** Checks and writes `writes` in one statement (COMMIT_SQL); the caller holds the writer lock.
 * With `part`, only writes[from, to) are written (one part of a commit written in parts), and a
 * refusal is judged against the whole commit's writes. With `part.creations`, a part whose writes
 * all create documents is written by CREATE_SQL, a plain INSERT, and a unique violation of it is
 * thrown as CreationCollided for the caller to write the commit again with COMMIT_SQL. The JSON text
 * is made before the first await: a part is encoded when this is called, whatever the statements
 * ahead of it on the connection. */
async function writeDocuments(sql: SqlExecutor, workspaceId: string, notify: boolean, writes: readonly AnyWrite[], part?: { from: number; to: number; creations: boolean }): Promise<CommitEvent> {
  const from = part?.from ?? 0;
  const mine = part ? writes.slice(from, part.to) : writes;
  const plain = part?.creations === true && createsOnly(mine);
  const collections = [...new Set(mine.map((w) => w.collection))];
  let result: CommitRow | undefined;
  try {
    [result] = await sql.query<CommitRow>(prepared(plain ? CREATE_SQL : COMMIT_SQL), [
      JSON.stringify(mine.map((w, i) => ({ ord: from + i, collection: w.collection, id: w.id, before: w.before ?? null, doc: w.after, del: w.after === null, ...keyColumns(w) }))),
      workspaceId,
      notify,
      CHANGES_CHANNEL,
      JSON.stringify(collections),
    ]);
  } catch (e) {
    if (plain && (e as { code?: unknown } | null)?.code === '23505') throw new CreationCollided(e);
    throw uniqueViolation(e, writes) ?? e;
  }
  if (!result) throw new Error('The commit statement returned no row.');
  for (const ch of result.bad ?? []) {
    const w = writes[ch.ord];
    if (!w) continue;
    if (ch.workspace_id !== null && ch.workspace_id !== workspaceId) {
      throw new DomainError('CONFLICT', `Document ${w.id} belongs to another workspace.`);
    }
    throw new DomainError('CONFLICT', `${w.collection}/${w.id} changed since it was read; try again.`, { collection: w.collection, id: w.id });
  }
  return { workspaceId, collections, maxSeq: Number(result.max_seq), rows: Number(result.n) };
}

/**
 * One commit written in parts of COMMIT_PART writes inside a savepoint (PgStore.commitChecked and
 * commitAhead): each part is checked in slices of CHECK_SLICE, with a turn of the event loop between
 * (the part ahead is written to the socket meanwhile, and its successor sent the moment PostgreSQL
 * answers it), then queued on the connection. Writes arrive with `add`, in commit order; a part is
 * sent once it is full, the last one at `finish`. Once a part is refused nothing more is sent; after
 * a malformed write the checks go on (theirs is the answer) but nothing more is sent.
 */
class CommitParts {
  /** The commit's writes so far, in order. */
  readonly writes: AnyWrite[] = [];
  /** The events of the parts, once finish() has returned true. */
  events: CommitEvent[] = [];
  private sentTo = 0;
  private readonly savepoint: Promise<unknown>;
  private readonly sent: Promise<CommitEvent>[] = [];
  private refused: { error: unknown } | null = null;
  private malformed: { error: unknown } | null = null;
  /** The parts being checked and sent, one add after the other. */
  private pumping: Promise<void> = Promise.resolve();

  constructor(
    private readonly sql: SqlExecutor,
    private readonly workspaceId: string,
    private readonly notify: boolean,
    private readonly check: (part: readonly AnyWrite[]) => Promise<void>,
    /** Parts that only create documents are written by CREATE_SQL (see writeDocuments). */
    private readonly creations: boolean,
    private readonly refuseMalformed: (writes: readonly AnyWrite[]) => void,
  ) {
    this.savepoint = sql.query(`SAVEPOINT ${PARTS_SAVEPOINT}`);
    this.savepoint.catch(() => undefined);
  }

  /** Takes writes; checks and sends every full part. Never rejects: a refusal is kept for finish. */
  add(writes: readonly AnyWrite[]): Promise<void> {
    this.writes.push(...writes);
    this.pumping = this.pumping.then(() => this.pump(false));
    return this.pumping;
  }

  private async pump(last: boolean): Promise<void> {
    while (this.refused === null) {
      const from = this.sentTo;
      const left = this.writes.length - from;
      if (left === 0 || (!last && left < COMMIT_PART)) return;
      const to = from + Math.min(left, COMMIT_PART);
      this.sentTo = to;
      try {
        for (let at = from; at < to; at += CHECK_SLICE) {
          await this.check(this.writes.slice(at, Math.min(to, at + CHECK_SLICE)));
          await nextTurn();
        }
      } catch (error) {
        this.refused = { error };
        return;
      }
      if (this.malformed !== null) continue;
      try {
        this.refuseMalformed(this.writes.slice(from, to));
      } catch (error) {
        this.malformed = { error };
        continue;
      }
      const written = writeDocuments(this.sql, this.workspaceId, this.notify, this.writes, { from, to, creations: this.creations });
      // Observed at once (the outcome is read in finish), so an early failure is never unhandled.
      written.catch(() => undefined);
      this.sent.push(written);
    }
  }

  /** Sends the last part and waits for every part: true when all are written (then RELEASE), false
   * when a creation part collided (CreationCollided) and nothing of the commit is left; throws the
   * commit's refusal after rolling back to the savepoint. */
  async finish(): Promise<boolean> {
    this.pumping = this.pumping.then(() => this.pump(true));
    await this.pumping;
    const outcomes = await Promise.allSettled([this.savepoint, ...this.sent]);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    const { refused, malformed } = this;
    if (refused !== null || malformed !== null || failed) {
      // A check that failed only because a part's failure aborted the transaction (its read was
      // refused) is not the reason: the part's failure is.
      const reason = refused !== null && (isDomainError(refused.error) || (malformed === null && !failed)) ? refused : (malformed ?? { error: failed?.reason });
      try {
        await this.sql.query(`ROLLBACK TO SAVEPOINT ${PARTS_SAVEPOINT}`);
        if (reason.error instanceof CreationCollided) {
          await this.sql.query(`RELEASE SAVEPOINT ${PARTS_SAVEPOINT}`);
          return false;
        }
      } catch {
        // The connection is lost: the transaction rolls back as a whole.
      }
      throw reason.error instanceof CreationCollided ? (uniqueViolation(reason.error.collision, this.writes) ?? reason.error.collision) : reason.error;
    }
    await this.sql.query(`RELEASE SAVEPOINT ${PARTS_SAVEPOINT}`);
    this.events = outcomes.slice(1).map((o) => (o as PromiseFulfilledResult<CommitEvent>).value);
    return true;
  }

  /** Leaves nothing of the commit: waits for the parts sent, then rolls back to the savepoint. */
  async abandon(): Promise<void> {
    this.refused ??= { error: new Error('The commit was abandoned.') };
    await this.pumping;
    await Promise.allSettled([this.savepoint, ...this.sent]);
    try {
      await this.sql.query(`ROLLBACK TO SAVEPOINT ${PARTS_SAVEPOINT}`);
      await this.sql.query(`RELEASE SAVEPOINT ${PARTS_SAVEPOINT}`);
    } catch {
      // The connection is lost: the transaction rolls back as a whole.
    }
  }
}

export class PgStore implements Store {
  /** Writes committed through this store (the transaction may still roll back). */
  readonly committed: CommitEvent[] = [];
  /** The writes themselves, for the document cache. */
  readonly writes: AnyWrite[] = [];
  /** Whether a read was answered from the document cache. */
  usedCache = false;
  /** Whether this transaction holds the workspace's writer lock. */
  locked = false;
  /** Refuses look-ups by identity key while the workspace's leads are being given theirs
   * (identity-backfill.ts); null: no check (the keys are trusted). */
  keysGate: IdentityKeysGate | null = null;

  constructor(
    private readonly sql: SqlExecutor,
    readonly workspaceId: string,
    private readonly cache: DocumentCache | null = null,
    /** NOTIFY other processes of each commit (Postgres). */
    private readonly notify = false,
    /** 'validated' cache: the versions of the cached collections this transaction sees. */
    private readonly versions: ReadonlyMap<CollectionName, number> | null = null,
    /** Where the commit's webhook events go, in its transaction (webhooks/outbox.ts). */
    private readonly outbox: Outbox | null = null,
    /** A group-commit transaction's held writes, shared by its calls' stores (DeferredWrites). */
    private readonly deferred: DeferredWrites | null = null,
    /** Write a large commit in parts, checking each while the one before is written
     * (commitChecked): PostgreSQL, whose backend works beside this process. */
    private readonly inParts = false,
  ) {}

  /** The cached documents of `c`, unless this store has written to it (then SQL sees those writes). */
  private async cached(c: CollectionName): Promise<CachedDocs | null> {
    if (!this.cache || !CACHED_COLLECTIONS.has(c) || this.writes.some((w) => w.collection === c)) return null;
    if (this.cache.mode === 'validated') {
      const version = this.versions?.get(c);
      if (version === undefined) return null;
      this.usedCache = true;
      return this.cache.docsAt(this.workspaceId, c, version, this.sql);
    }
    this.usedCache = true;
    return this.cache.docs(this.workspaceId, c, this.sql);
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const held = this.deferred?.get(c, id);
    if (held) return held.after === null ? null : (cloneJson(held.after) as Docs[C]);
    const mem = await this.cached(c);
    if (mem) return (mem.copyById(id) as Docs[C] | undefined) ?? null;
    const rows = await this.sql.query<ByIdRow<Docs[C]>>(prepared(`SELECT id, workspace_id, deleted, doc FROM documents WHERE collection = ${lit(c)} AND id = $1`), [id]);
    const row = rows[0];
    return row && this.visible(row) ? row.doc : null;
  }

  /** Live and of this workspace. Lookups by id select on the primary key's columns alone and check
   * these on the row: with the workspace in the statement, statistics from when the table was small
   * made every index on (workspace_id, ...) look as selective as the key, and the prepared (generic)
   * plans probed one of those and filtered the whole workspace by id (200-1,000 ms a call at 20k
   * leads, seen on a fresh database before the server kept its statistics: maintenance.ts). */
  private visible(row: { workspace_id: string; deleted: boolean }): boolean {
    return !row.deleted && row.workspace_id === this.workspaceId;
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    if (ids.length === 0) return [];
    const deferred = this.deferred;
    if (deferred && ids.some((id) => deferred.get(c, id))) {
      const stored = new Map((await this.getMany(c, ids.filter((id) => !deferred.get(c, id)))).map((d) => [(d as { id: string }).id, d]));
      const out: Docs[C][] = [];
      for (const id of ids) {
        const held = deferred.get(c, id);
        const d = held ? (held.after === null ? undefined : (cloneJson(held.after) as Docs[C])) : stored.get(id);
        // Each caller gets its own copy, as from the memory store.
        if (d) out.push(out.includes(d) ? structuredClone(d) : d);
      }
      return out;
    }
    const mem = await this.cached(c);
    if (mem) return ids.flatMap((id) => (mem.docs.has(id) ? [mem.copyById(id) as Docs[C]] : []));
    const rows = await this.sql.query<ByIdRow<Docs[C]>>(prepared(`SELECT id, workspace_id, deleted, doc FROM documents WHERE collection = ${lit(c)} AND id = ANY($1::text[])`), [[...new Set(ids)]]);
    const byId = new Map(rows.flatMap((r) => (this.visible(r) ? [[r.id, r.doc] as const] : [])));
    const out: Docs[C][] = [];
    for (const id of ids) {
      const d = byId.get(id);
      // Each caller gets its own copy, as from the memory store.
      if (d) out.push(out.includes(d) ? structuredClone(d) : d);
    }
    return out;
  }

  async query<C extends CollectionName>(c: C, q: Query = {}): Promise<Page<Docs[C]>> {
    if (this.keysGate && c === 'leads') await this.keysGate.checkCond(this.sql, this.workspaceId, q.where);
    if (this.deferred?.touches(c)) await this.deferred.flush();
    const mem = await this.cached(c);
    if (mem) {
      const page = runQuery(mem.docs.values(), q);
      return { docs: page.docs.map((d) => mem.copy(d) as Docs[C]), nextCursor: page.nextCursor };
    }
    const orderBy = q.orderBy ?? [];
    const p = new Params();
    const { from, where, cond, probed } = this.source(c, q.where, p);
    const after = q.cursor ? cursorSql(c, orderBy, decodeCursor(q.cursor, orderBy), p) : null;
    if (after) where.push(after);
    const order = orderSql(c, orderBy);
    let text = `SELECT doc FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${order}`;
    if (q.limit !== undefined) {
      const limit = `${p.add(q.limit + 1)}::int`;
      text += ` LIMIT ${limit}`;
      if (!probed && walksFirst(c, q)) text = headFirstSql(c, text, { workspace: '$1', cond, after, order, limit });
    }
    const rows = await this.sql.query<{ doc: Docs[C] }>(stable(q.where) ? prepared(text) : text, p.values);
    const docs = rows.map((r) => r.doc);
    if (q.limit === undefined || docs.length <= q.limit) return { docs, nextCursor: null };
    const page = docs.slice(0, q.limit);
    const last = page[page.length - 1];
    return { docs: page, nextCursor: last === undefined ? null : encodeCursor(last, orderBy) };
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    if (this.keysGate && c === 'leads') await this.keysGate.checkCond(this.sql, this.workspaceId, where);
    if (this.deferred?.touches(c)) await this.deferred.flush();
    const mem = await this.cached(c);
    if (mem) {
      let n = 0;
      for (const d of mem.docs.values()) if (matches(d, where)) n++;
      return n;
    }
    const p = new Params();
    const source = this.source(c, where, p);
    const text = `SELECT count(*)::int AS n FROM ${source.from} WHERE ${source.where.join(' AND ')}`;
    const rows = await this.sql.query<{ n: number }>(stable(where) ? prepared(text) : text, p.values);
    return rows[0]?.n ?? 0;
  }

  /** The rows a condition selects: the workspace's live documents of the collection, or for a long
   * list of values of one field, a probe of that field's index per value (cond-sql.ts, probeOf). */
  private source(c: CollectionName, cond: Cond | undefined, p: Params): { from: string; where: string[]; cond: string; probed: boolean } {
    const probe = probeOf(c, cond);
    if (probe) {
      const rest = [probeFromSql(c, probe, p.add(this.workspaceId), p), condSql(c, probe.rest, p)] as const;
      return { from: rest[0], where: [rest[1]], cond: rest[1], probed: true };
    }
    const scope = scopeSql(c, cond, p.add(this.workspaceId));
    const sql = condSql(c, cond, p);
    return { from: 'documents', where: [`collection = ${lit(c)}`, scope, 'NOT deleted', sql], cond: sql, probed: false };
  }

  /** Groups of live leads sharing a key, from the key's partial index: the groups with two or more
   * rows, then the merged leads (a `mergedIntoId`) taken out of them, so a group of one survivor and
   * its tombstone is no group. Pages until `limit` groups are found or the keys run out. */
  async duplicateGroups(kind: IdentityKind, opts: DuplicatePageOptions): Promise<DuplicatePage> {
    checkGroupLimit(opts.limit);
    await this.keysGate?.check(this.sql, this.workspaceId);
    const col = IDENTITY_KEY_COLUMNS[kind];
    let after = opts.cursor ? decodeKeyCursor(opts.cursor) : null;
    const groups: DuplicateGroup[] = [];
    const want = opts.limit + 1;
    for (;;) {
      const rows = await this.sql.query<{ key: string; ids: string[]; live: boolean[] }>(
        prepared(`SELECT ${col} AS key, array_agg(id ORDER BY id COLLATE "C") AS ids,
                array_agg(coalesce(doc->>'mergedIntoId', '') = '' ORDER BY id COLLATE "C") AS live
           FROM documents
          WHERE collection = 'leads' AND workspace_id = $1 AND NOT deleted AND ${col} IS NOT NULL AND ($2::text IS NULL OR ${col} > $2::text)
          GROUP BY ${col} HAVING count(*) > 1 ORDER BY ${col} LIMIT $3::int`),
        [this.workspaceId, after, want],
      );
      for (const r of rows) {
        const leadIds = r.ids.filter((_, i) => r.live[i] === true);
        if (leadIds.length > 1) groups.push({ key: r.key, leadIds });
      }
      const last = rows[rows.length - 1];
      if (groups.length >= want || rows.length < want || !last) break;
      after = last.key;
    }
    const page = groups.slice(0, opts.limit);
    const end = page[page.length - 1];
    return { groups: page, nextCursor: groups.length > opts.limit && end ? encodeKeyCursor(end.key) : null };
  }

  /** Refuses writes no commit may carry (before anything of them is sent). */
  private refuseMalformed(writes: readonly AnyWrite[]): void {
    for (const w of writes) {
      if (!KNOWN.has(w.collection)) throw new Error(`Unknown collection ${w.collection}.`);
      if (w.after && (w.after as { workspaceId: string }).workspaceId !== this.workspaceId) {
        throw new DomainError('CONFLICT', `A write to ${w.collection}/${w.id} names another workspace.`, { collection: w.collection, id: w.id });
      }
      if (w.after && (w.after as { id: string }).id !== w.id) throw new Error(`Write ${w.collection}/${w.id} carries a document with another id.`);
    }
  }

  /** Serialises this workspace's writers until COMMIT: seq is taken by the commit statement, under
   * the lock, so seq order is commit order and a pull by seq never skips a row that commits later.
   * A store opened by PgDatabase.withStore already holds it from the transaction's first statement. */
  private async lock(): Promise<void> {
    if (this.locked) return;
    await this.sql.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [WRITER_LOCK_CLASS, this.workspaceId]);
    this.locked = true;
  }

  /**
   * The rules' check and the commit of an operation's writes (Store.commitChecked). On PostgreSQL a
   * commit of more than COMMIT_PART writes (an import's 5,000 leads) is written in parts, each one
   * COMMIT_SQL statement queued on the transaction's connection: while PostgreSQL writes part k,
   * this process checks part k+1 and encodes its JSON (before, it checked and encoded all of them
   * while the database waited, then waited while the database wrote). The parts are one commit:
   * they run inside a savepoint, and a refusal (a check, a changed document, a unique index, any
   * failed statement) rolls back to it before it is thrown, so nothing of the commit is left, as
   * with one statement. The answer is the one checking everything first gives: a check's refusal
   * wins over the store's, and the first in write order. Elsewhere (PGlite runs the database on
   * this thread; group commit holds the writes for one statement) it checks everything, then
   * commits (on PGlite a large commit of creations only as one plain INSERT: commitCreations).
   */
  async commitChecked(writes: readonly AnyWrite[], check: (part: readonly AnyWrite[]) => Promise<void>): Promise<void> {
    if (!this.inParts || this.deferred || writes.length <= COMMIT_PART) {
      await check(writes);
      if (!this.deferred && writes.length > COMMIT_PART && createsOnly(writes) && (await this.commitCreations(writes))) return;
      await this.commit(writes);
      return;
    }
    await this.lock();
    // Parts that only create documents (an import's new leads, under fresh ids) are plain INSERTs
    // (CREATE_SQL): no stored row to compare and no upsert, about a sixth of the checking
    // statement's time in PostgreSQL. When one meets a stored row or a unique index, the commit
    // (rolled back to its savepoint) is checked and written again with COMMIT_SQL throughout, so
    // the outcome is the one that statement gives: the same refusal, or a tombstone brought back.
    const parts = new CommitParts(this.sql, this.workspaceId, this.notify, check, true, (w) => this.refuseMalformed(w));
    await parts.add(writes);
    await this.finishParts(parts, check);
  }

  /**
   * A large commit that only creates documents, where it is not written in parts (PGlite, whose
   * database runs on this thread): one plain INSERT (CREATE_SQL) inside a savepoint, as the parts
   * on PostgreSQL. On PGlite the checking statement's comparison and upsert cost ~14% more than
   * the plain INSERT of an import call's 5,000 new leads. A creation that meets a stored row (a
   * tombstone, another workspace's id, a live document) or a unique index leaves nothing (rolled
   * back to the savepoint) and answers false: the caller writes the commit with COMMIT_SQL, whose
   * answer is the one the commit always had. Any other failure is thrown after the rollback.
   */
  private async commitCreations(writes: readonly AnyWrite[]): Promise<boolean> {
    this.refuseMalformed(writes);
    await this.lock();
    await this.sql.query(`SAVEPOINT ${CREATIONS_SAVEPOINT}`);
    let event: CommitEvent;
    try {
      event = await writeDocuments(this.sql, this.workspaceId, this.notify, writes, { from: 0, to: writes.length, creations: true });
    } catch (e) {
      try {
        await this.sql.query(`ROLLBACK TO SAVEPOINT ${CREATIONS_SAVEPOINT}`);
        await this.sql.query(`RELEASE SAVEPOINT ${CREATIONS_SAVEPOINT}`);
      } catch {
        // The connection is lost: the transaction rolls back as a whole, and e is the reason.
        throw e instanceof CreationCollided ? e.collision : e;
      }
      if (e instanceof CreationCollided) return false;
      throw e;
    }
    await this.sql.query(`RELEASE SAVEPOINT ${CREATIONS_SAVEPOINT}`);
    await this.written(writes, event);
    return true;
  }

  /**
   * A commit written while the operation still runs (Store.commitAhead; PostgreSQL only): the
   * writes it seals arrive first (Tx.writeAhead), and once a part's worth is there it is checked and
   * sent while the operation goes on with its rows, so PostgreSQL writes the import's first leads
   * while the handler builds the next ones (before, it waited for the whole call's leads). The parts
   * are those of commitChecked, in the same order, with the same savepoint and answer. A commit that
   * never reaches a part's worth before `finish` is written by commitChecked.
   */
  commitAhead(check: (part: readonly AnyWrite[]) => Promise<void>): CommitAhead | null {
    if (!this.inParts || this.deferred) return null;
    const held: AnyWrite[] = [];
    let parts: Promise<CommitParts> | null = null;
    const open = async (): Promise<CommitParts> => {
      await this.lock();
      return new CommitParts(this.sql, this.workspaceId, this.notify, check, true, (w) => this.refuseMalformed(w));
    };
    return {
      add: async (writes) => {
        if (parts !== null) return (await parts).add(writes);
        held.push(...writes);
        if (held.length < COMMIT_PART) return;
        parts = open();
        await (await parts).add(held.splice(0));
      },
      finish: async (rest) => {
        if (parts === null) return this.commitChecked([...held, ...rest], check);
        const p = await parts;
        await p.add(rest);
        await this.finishParts(p, check);
      },
      abandon: async () => {
        if (parts !== null) await (await parts).abandon();
        held.length = 0;
      },
    };
  }

  /** The end of a commit in parts: waits for every part, then RELEASE and the commit's event, or
   * (a creation part collided) the whole commit written again with COMMIT_SQL, or the refusal. */
  private async finishParts(parts: CommitParts, check: (part: readonly AnyWrite[]) => Promise<void>): Promise<void> {
    let done = parts;
    if (!(await parts.finish())) {
      done = new CommitParts(this.sql, this.workspaceId, this.notify, check, false, (w) => this.refuseMalformed(w));
      await done.add(parts.writes);
      await done.finish();
    }
    const { writes, events } = done;
    // One commit, one event for this process's listeners (a bulk commit's statistics, streams).
    await this.written(writes, {
      workspaceId: this.workspaceId,
      collections: [...new Set(events.flatMap((e) => e.collections))],
      maxSeq: Math.max(...events.map((e) => e.maxSeq)),
      rows: events.reduce((n, e) => n + e.rows, 0),
    });
  }

  async commit(writes: readonly AnyWrite[]): Promise<void> {
    if (writes.length === 0) return;
    this.refuseMalformed(writes);
    await this.lock();
    if (this.deferred) {
      // Written with the rest of the transaction's calls (DeferredWrites); its event comes from the flush.
      this.deferred.add(writes);
      await this.written(writes, null);
      return;
    }
    await this.written(writes, await writeDocuments(this.sql, this.workspaceId, this.notify, writes));
  }

  /**
   * After writes are in the transaction: the events they raise (webhooks' outbox), in the same
   * transaction, so they commit or roll back with them; the writes for this store's reader; and
   * the commit's event for this process's listeners (null: a deferred write's comes from the flush).
   */
  private async written(writes: readonly AnyWrite[], event: CommitEvent | null): Promise<void> {
    if (this.outbox) await this.outbox.afterCommit(this, this.sql, this.workspaceId, writes);
    this.writes.push(...writes);
    if (event) this.committed.push(event);
  }
}

type ByIdRow<D> = { id: string; workspace_id: string; deleted: boolean; doc: D };

/** A lead write's identity key columns (migration 017), computed from the document by the one rule
 * whatever wrote it (an operation, an import, the runner, a replication push); none for others. */
function keyColumns(w: AnyWrite): { pk?: string; ek?: string; nk?: string } {
  if (w.collection !== 'leads' || w.after === null) return {};
  const k = storedKeys(w.after);
  return { ...(k.profile !== null ? { pk: k.profile } : {}), ...(k.email !== null ? { ek: k.email } : {}), ...(k.nameCompany !== null ? { nk: k.nameCompany } : {}) };
}

type CommitRow = { bad: { ord: number; workspace_id: string | null }[] | null; max_seq: string | number; n: string | number };

/** One statement per commit: compare every write's `before` with the stored row, and only when all
 * match write them all (upserts and soft deletes, each with a fresh seq) and, on Postgres, NOTIFY
 * other server processes, who learn of it at COMMIT. A mismatch writes nothing and comes back in
 * `bad`. Data-modifying CTEs all see the statement's snapshot, so the checks read the state before
 * this commit; the writer lock keeps anyone else from changing it meanwhile. Rows are matched by
 * the primary key alone (`bad` refuses a row of another workspace before anything is written): a
 * workspace condition in the delete let a table without statistics probe (collection, workspace)
 * and filter the workspace for every deleted row. */
const COMMIT_SQL = `
WITH w AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS w(ord int, collection text, id text, before jsonb, doc jsonb, del boolean, pk text, ek text, nk text)
), chk AS (
  SELECT w.ord, d.workspace_id,
         CASE WHEN d.id IS NULL OR d.deleted THEN w.before IS NULL OR w.before = 'null'::jsonb
              ELSE w.before IS NOT NULL AND d.doc = w.before END AS same
    FROM w LEFT JOIN documents d ON d.collection = w.collection AND d.id = w.id
), bad AS (
  SELECT ord, workspace_id FROM chk WHERE NOT same OR (workspace_id IS NOT NULL AND workspace_id <> $2::text)
), ins AS (
  INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc, profile_key, email_key, name_company_key)
  SELECT w.collection, w.id, $2::text, nextval('documents_seq'), false, w.doc, w.pk, w.ek, w.nk
    FROM w WHERE NOT w.del AND NOT EXISTS (SELECT 1 FROM bad)
   ORDER BY w.ord
  ON CONFLICT (collection, id) DO UPDATE
    SET workspace_id = EXCLUDED.workspace_id, seq = EXCLUDED.seq, deleted = false, doc = EXCLUDED.doc,
        profile_key = EXCLUDED.profile_key, email_key = EXCLUDED.email_key, name_company_key = EXCLUDED.name_company_key
  RETURNING seq
), del AS (
  UPDATE documents d SET deleted = true, seq = nextval('documents_seq')
    FROM w
   WHERE w.del AND d.collection = w.collection AND d.id = w.id AND NOT d.deleted
     AND NOT EXISTS (SELECT 1 FROM bad)
  RETURNING d.seq
), changed AS (
  SELECT coalesce(max(seq), 0) AS max_seq, count(*) AS n FROM (SELECT seq FROM ins UNION ALL SELECT seq FROM del) s
)
SELECT (SELECT jsonb_agg(jsonb_build_object('ord', ord, 'workspace_id', workspace_id)) FROM bad) AS bad,
       c.max_seq, c.n,
       CASE WHEN $3::boolean AND c.n > 0 AND NOT EXISTS (SELECT 1 FROM bad)
            THEN pg_notify($4::text, json_build_object('workspaceId', $2::text, 'collections', $5::jsonb, 'maxSeq', c.max_seq, 'rows', c.n)::text)
       END AS notified
  FROM changed c`;

/** A part of creations only (PgStore.commitChecked): the raw multi-row INSERT, with the same columns,
 * seq order and NOTIFY as COMMIT_SQL, and no comparison with stored rows and no ON CONFLICT (a
 * speculative insertion: an extra index probe and WAL record per row). Any stored row with one of
 * the ids fails it on the primary key, and the commit is then written with COMMIT_SQL. */
const CREATE_SQL = `
WITH ins AS (
  INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc, profile_key, email_key, name_company_key)
  SELECT w.collection, w.id, $2::text, nextval('documents_seq'), false, w.doc, w.pk, w.ek, w.nk
    FROM jsonb_to_recordset($1::jsonb) AS w(ord int, collection text, id text, doc jsonb, pk text, ek text, nk text)
   ORDER BY w.ord
  RETURNING seq
), changed AS (
  SELECT coalesce(max(seq), 0) AS max_seq, count(*) AS n FROM ins
)
SELECT NULL::jsonb AS bad, c.max_seq, c.n,
       CASE WHEN $3::boolean AND c.n > 0
            THEN pg_notify($4::text, json_build_object('workspaceId', $2::text, 'collections', $5::jsonb, 'maxSeq', c.max_seq, 'rows', c.n)::text)
       END AS notified
  FROM changed c`;

type EnrollmentWrite = { before: { leadId?: unknown; campaignId?: unknown; status?: unknown } | null; after: { leadId?: unknown; campaignId?: unknown; status?: unknown } | null };

/** Invariants the database holds (unique indexes of the migrations), by index name, with the writes
 * of a commit that may have broken each (so the answer can name the lead without reading the
 * server's message, whose wording follows the database's locale). */
const UNIQUE_INVARIANTS: Record<string, { code: 'ALREADY_RUNNING' | 'ALREADY_ENROLLED'; message: (leadId: string | null) => string; suspect: (w: EnrollmentWrite) => boolean }> = {
  enrollments_one_running: {
    code: 'ALREADY_RUNNING',
    message: (leadId) => `${leadId ? `Lead ${leadId}` : 'A lead of this change'} already runs a sequence; a lead runs at most one at a time. Nothing was changed.`,
    suspect: (w) => w.after?.status === 'IN_PROGRESS' && w.before?.status !== 'IN_PROGRESS',
  },
  enrollments_one_per_campaign: {
    code: 'ALREADY_ENROLLED',
    message: (leadId) => `${leadId ? `Lead ${leadId} is` : 'A lead of this change is'} already enrolled in this campaign. Nothing was changed.`,
    suspect: (w) => w.after !== null && (w.before === null || w.before.leadId !== w.after.leadId || w.before.campaignId !== w.after.campaignId),
  },
};

/** A unique violation of one of the invariant indexes as the contract's CONFLICT (409), with the
 * invariant named in details.reason (identified by the index's name, which pg reports in
 * `constraint`), and the lead and campaign when the commit's writes point at one; null for any
 * other error. */
export function uniqueViolation(e: unknown, writes: readonly AnyWrite[]): DomainError | null {
  if (typeof e !== 'object' || e === null) return null;
  const err = e as { code?: unknown; constraint?: unknown };
  if (err.code !== '23505') return null;
  const constraint = typeof err.constraint === 'string' ? err.constraint : '';
  const invariant = UNIQUE_INVARIANTS[constraint];
  if (!invariant) return new DomainError('CONFLICT', 'A concurrent change created the same document; try again.', { reason: 'DUPLICATE', constraint });
  const suspects = writes.filter((w) => w.collection === 'enrollments' && invariant.suspect(w as EnrollmentWrite)).map((w) => w.after as { leadId?: unknown; campaignId?: unknown });
  const only = <K extends 'leadId' | 'campaignId'>(key: K): string | null => {
    const values = new Set(suspects.map((a) => a[key]));
    const [value] = values;
    return values.size === 1 && typeof value === 'string' ? value : null;
  };
  const leadId = only('leadId');
  const campaignId = invariant.code === 'ALREADY_ENROLLED' ? only('campaignId') : null;
  return new DomainError('CONFLICT', invariant.message(leadId), { reason: invariant.code, constraint, ...(leadId ? { leadId } : {}), ...(campaignId ? { campaignId } : {}) });
}
