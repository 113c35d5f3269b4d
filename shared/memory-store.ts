/** An in-memory Store for tests and simulations: the reference behaviour of the Store port. */
import SortedBTree from 'sorted-btree';
import { cloneJson } from './json-clone.ts';
import { sameJson } from './json-equal.ts';
import type { CollectionName, Docs } from './model/index.ts';
import type { AnyWrite, Cond, DuplicatePage, DuplicatePageOptions, Page, Query, Store, StoreProvider } from './store.ts';
import { DomainError } from './errors.ts';
import { compileCond, duplicateGroupsOf, fieldGetter, runQuery } from './query.ts';
import type { Getter } from './query.ts';
import { KEY_FIELDS } from './intake/identity.ts';
import type { IdentityKind } from './intake/identity.ts';

type Row = { doc: unknown; deleted: boolean };

/** sorted-btree is CommonJS with `exports.default = BTree`: Node's ESM loader hands over the exports
 * object as the default import, a bundler the class itself. */
const BTree = (SortedBTree as unknown as { default?: typeof SortedBTree }).default ?? SortedBTree;

/** Holds every workspace's documents; `forWorkspace` gives the scoped Store the ops see. */
export class MemoryDatabase implements StoreProvider {
  private readonly tables = new Map<CollectionName, Map<string, Row>>();
  /** Number of successful commits, so tests can assert that a refusal committed nothing. */
  commits = 0;
  /** Ordered indexes on timestamp fields, built on the first range query that can use one. */
  private readonly ordered = new Map<string, OrderedIndex>();
  /** Ids by value of a lookup field (EQ_INDEXED), built on the first equality query that can use one. */
  private readonly hashed = new Map<string, HashIndex>();

  private table(c: CollectionName): Map<string, Row> {
    let t = this.tables.get(c);
    if (!t) {
      t = new Map();
      this.tables.set(c, t);
    }
    return t;
  }

  forWorkspace(workspaceId: string): Store {
    return new MemoryStore(this, workspaceId);
  }

  async withStore<T>(workspaceId: string, fn: (store: Store) => Promise<T>): Promise<T> {
    return fn(this.forWorkspace(workspaceId));
  }

  /** @internal */
  rows(c: CollectionName): Map<string, Row> {
    return this.table(c);
  }

  /** @internal The ordered index of a range-queried timestamp field (see RANGE_INDEXED). */
  orderedIndex(c: CollectionName, field: string): OrderedIndex | null {
    return RANGE_INDEXED[c]?.includes(field) ? this.built(this.ordered, c, field, () => new OrderedIndex(field)) : null;
  }

  /** @internal The hash index of an equality-queried lookup field (see EQ_INDEXED). */
  hashIndex(c: CollectionName, field: string): HashIndex | null {
    return EQ_INDEXED[c]?.includes(field) ? this.built(this.hashed, c, field, () => new HashIndex(field)) : null;
  }

  /** An index of `c` by `field`, filled with the live documents the first time it is asked for. */
  private built<I extends FieldIndex>(indexes: Map<string, I>, c: CollectionName, field: string, make: () => I): I {
    const key = `${c}|${field}`;
    let ix = indexes.get(key);
    if (!ix) {
      ix = make();
      for (const [id, r] of this.table(c)) if (!r.deleted) ix.add(id, r.doc);
      indexes.set(key, ix);
    }
    return ix;
  }

  /** @internal Keeps the built indexes of a collection in step with a committed write. */
  reindex(c: CollectionName, id: string, before: unknown, after: unknown): void {
    const built = [...(RANGE_INDEXED[c] ?? []).map((f) => this.ordered.get(`${c}|${f}`)), ...(EQ_INDEXED[c] ?? []).map((f) => this.hashed.get(`${c}|${f}`))];
    for (const ix of built) {
      if (!ix) continue;
      if (before !== null) ix.remove(id, before);
      if (after !== null) ix.add(id, after);
    }
  }

  /** A deep copy of every stored row, to compare before and after a refused call. */
  snapshot(): Record<string, Record<string, Row>> {
    const out: Record<string, Record<string, Row>> = {};
    // Empty tables are left out: a read creates its table lazily, and that is not a change.
    for (const [c, t] of this.tables) if (t.size > 0) out[c] = Object.fromEntries([...t].map(([id, r]) => [id, structuredClone(r)]));
    return out;
  }
}

class MemoryStore implements Store {
  constructor(
    private readonly db: MemoryDatabase,
    readonly workspaceId: string,
  ) {}

  /** The stored (uncloned) live documents; callers clone only what they return, so a query over a
   * large collection costs a scan, not a deep copy of every document. */
  private live<C extends CollectionName>(c: C, where?: Cond): Docs[C][] {
    const out: Docs[C][] = [];
    // A range condition on an indexed timestamp reads only the documents in the range (the
    // runner's due query, changes since a moment), not the whole collection.
    const range = where ? rangeOf(where) : null;
    const ix = range ? this.db.orderedIndex(c, range.field) : null;
    // Else an equality or a list of values on a lookup field (a chat's messages, a lead's
    // enrollments, the leads holding one of an import's emails) reads its buckets.
    const lookup = !ix && where ? lookupOf(where, (field) => this.db.hashIndex(c, field)) : null;
    const ids = range && ix ? ix.ids(range) : lookup;
    const pred = where ? compileCond(where) : null;
    if (ids) {
      const rows = this.db.rows(c);
      for (const id of ids) {
        const r = rows.get(id);
        if (r && !r.deleted && (r.doc as { workspaceId: string }).workspaceId === this.workspaceId && (!pred || pred(r.doc))) out.push(r.doc as Docs[C]);
      }
      return out;
    }
    for (const r of this.db.rows(c).values()) {
      if (!r.deleted && (r.doc as { workspaceId: string }).workspaceId === this.workspaceId && (!pred || pred(r.doc))) out.push(r.doc as Docs[C]);
    }
    return out;
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const r = this.db.rows(c).get(id);
    if (!r || r.deleted || (r.doc as { workspaceId: string }).workspaceId !== this.workspaceId) return null;
    return cloneJson(r.doc) as Docs[C];
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    const out: Docs[C][] = [];
    for (const id of ids) {
      const d = await this.get(c, id);
      if (d) out.push(d);
    }
    return out;
  }

  async query<C extends CollectionName>(c: C, q?: Query): Promise<Page<Docs[C]>> {
    // Filtered while scanning; runQuery then sorts and pages the (usually small) match set.
    const page = runQuery(this.live(c, q?.where), { ...q, where: undefined });
    return { docs: page.docs.map((d) => cloneJson(d)), nextCursor: page.nextCursor };
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    return this.live(c, where).length;
  }

  async duplicateGroups(kind: IdentityKind, opts: DuplicatePageOptions): Promise<DuplicatePage> {
    return duplicateGroupsOf(this.live('leads'), kind, opts);
  }

  async commit(writes: readonly AnyWrite[]): Promise<void> {
    for (const w of writes) {
      const r = this.db.rows(w.collection).get(w.id);
      const current = r && !r.deleted ? r.doc : null;
      if (current && (current as { workspaceId: string }).workspaceId !== this.workspaceId) {
        throw new DomainError('CONFLICT', `Document ${w.id} belongs to another workspace.`);
      }
      if (!sameJson(current, w.before)) {
        throw new DomainError('CONFLICT', `${w.collection}/${w.id} changed since it was read; try again.`, { collection: w.collection, id: w.id });
      }
      if (w.after && (w.after as { workspaceId: string }).workspaceId !== this.workspaceId) {
        throw new DomainError('CONFLICT', `A write to ${w.collection}/${w.id} names another workspace.`);
      }
    }
    for (const w of writes) {
      const t = this.db.rows(w.collection);
      const prev = t.get(w.id);
      const before = prev && !prev.deleted ? prev.doc : null;
      if (w.after) {
        const doc = cloneJson(w.after);
        t.set(w.id, { doc, deleted: false });
        this.db.reindex(w.collection, w.id, before, doc);
      } else if (prev) {
        t.set(w.id, { doc: prev.doc, deleted: true });
        this.db.reindex(w.collection, w.id, before, null);
      }
    }
    this.db.commits++;
  }
}

/** Timestamp fields the runner queries by range; each gets an ordered index on first use. */
const RANGE_INDEXED: Partial<Record<CollectionName, readonly string[]>> = {
  enrollments: ['nextActionAt', 'updatedAt'],
  leads: ['updatedAt'],
};

/** An index of one field's string values (documents without one are left out: a string equality or
 * range never matches them). */
abstract class FieldIndex {
  private readonly get: Getter;

  constructor(field: string) {
    // A field's getter: an identity key field (`key:email`) computes the key from the document.
    this.get = fieldGetter(field);
  }

  protected valueOf(doc: unknown): string | null {
    const v = this.get(doc);
    return typeof v === 'string' ? v : null;
  }

  abstract add(id: string, doc: unknown): void;
  abstract remove(id: string, doc: unknown): void;
}

/** Lookup fields queried by equality (a chat's messages, a message by its network id, the queued
 * messages, a lead's or a campaign's enrollments, a lead's activities); each gets a hash index on
 * first use. */
const EQ_INDEXED: Partial<Record<CollectionName, readonly string[]>> = {
  messages: ['chatId', 'externalId', 'status', 'leadId'],
  enrollments: ['leadId', 'campaignId'],
  activities: ['leadId'],
  // Who a person is (shared/intake): its identity keys, one probe each, and the fields as written.
  leads: [KEY_FIELDS.profile, KEY_FIELDS.email, KEY_FIELDS.nameCompany, 'socialUrl', 'email', 'fullName', 'company'],
};

/** The ids of the first top-level string equality or all-string `in` list that has a hash index (a
 * lone one, or a conjunct of an `and`), or null. */
function lookupOf(where: Cond, index: (field: string) => HashIndex | null): Iterable<string> | null {
  const conds = where.op === 'and' ? where.conds : [where];
  for (const c of conds) {
    if (c.op !== 'eq' && c.op !== 'in') continue;
    const values = c.op === 'eq' ? [c.value] : c.values;
    // A document without a string value is in no bucket: only string values can be looked up.
    if (!values.every((v) => typeof v === 'string')) continue;
    const ix = index(c.field);
    if (!ix) continue;
    if (values.length === 1) return ix.ids(values[0] as string);
    // A document has one value of the field, so distinct values never find it twice.
    const out: string[] = [];
    for (const v of new Set(values as readonly string[])) for (const id of ix.ids(v)) out.push(id);
    return out;
  }
  return null;
}

/** Ids by the string value of one field; documents without a string value are not in it (an
 * equality with a string never matches them). */
class HashIndex extends FieldIndex {
  private readonly buckets = new Map<string, Set<string>>();


  add(id: string, doc: unknown): void {
    const v = this.valueOf(doc);
    if (v === null) return;
    let b = this.buckets.get(v);
    if (!b) {
      b = new Set();
      this.buckets.set(v, b);
    }
    b.add(id);
  }

  remove(id: string, doc: unknown): void {
    const v = this.valueOf(doc);
    if (v === null) return;
    const b = this.buckets.get(v);
    b?.delete(id);
    if (b?.size === 0) this.buckets.delete(v);
  }

  ids(value: string): string[] {
    return [...(this.buckets.get(value) ?? [])];
  }
}

type Range = { field: string; lower: string | null; lowerInclusive: boolean; upper: string | null; upperInclusive: boolean };

/** The first string range bound on one field of a top-level `and` (or a lone range condition). */
function rangeOf(where: Cond): Range | null {
  const conds = where.op === 'and' ? where.conds : [where];
  let range: Range | null = null;
  for (const c of conds) {
    if ((c.op !== 'lt' && c.op !== 'lte' && c.op !== 'gt' && c.op !== 'gte') || typeof c.value !== 'string') continue;
    if (range && range.field !== c.field) continue;
    range ??= { field: c.field, lower: null, lowerInclusive: true, upper: null, upperInclusive: true };
    if (c.op === 'gt' || c.op === 'gte') {
      range.lower = c.value;
      range.lowerInclusive = c.op === 'gte';
    } else {
      range.upper = c.value;
      range.upperInclusive = c.op === 'lte';
    }
  }
  return range;
}

/** Ids ordered by one string field's value (then id); documents without a string value are not
 * in it (a range condition never matches them). A B-tree keyed by `value NUL id`: NUL sorts before
 * every other character, so the keys order by value, then id, and a write costs O(log n) (sorted
 * arrays cost a memmove of the whole index per write: a third of the runner's simulated day). */
class OrderedIndex extends FieldIndex {
  private readonly tree: SortedBTree<string, string> = new BTree<string, string>();


  add(id: string, doc: unknown): void {
    const v = this.valueOf(doc);
    if (v !== null) this.tree.set(`${v}\u0000${id}`, id);
  }

  remove(id: string, doc: unknown): void {
    const v = this.valueOf(doc);
    if (v !== null) this.tree.delete(`${v}\u0000${id}`);
  }

  ids(r: Range): string[] {
    // Keys of value v lie in [v NUL, v \u0001).
    const low = r.lower === null ? '' : `${r.lower}${r.lowerInclusive ? '\u0000' : '\u0001'}`;
    const high = r.upper === null ? null : `${r.upper}${r.upperInclusive ? '\u0001' : '\u0000'}`;
    const out: string[] = [];
    for (const [key, id] of this.tree.entries(low)) {
      if (high !== null && key >= high) break;
      out.push(id);
    }
    return out;
  }
}
