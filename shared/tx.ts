/** A unit of work over a Store: reads see staged writes; writes are collected, then validated by the
 * rules and committed together (or discarded for a dry run). */
import type { CollectionName, Docs } from './model/index.ts';
import type { AnyWrite, Cond, DuplicatePage, DuplicatePageOptions, Page, Query, Store, StoreReader } from './store.ts';
import type { IdentityKind } from './intake/identity.ts';
import { cloneJson } from './json-clone.ts';
import { fieldValue, matches, runQuery } from './query.ts';

/** Stores that build the documents they return from JSON text may record that text here, so a Tx
 * need not serialise the document again to remember it. The text must be exactly what
 * JSON.stringify gives for the document as returned. */
export const documentJson = new WeakMap<object, string>();

type Key = `${CollectionName}/${string}`;
const key = (c: CollectionName, id: string): Key => `${c}/${id}`;

type Staged = { collection: CollectionName; id: string; after: unknown };
type EqValue = string | number | boolean | null;

/** A top-level equality the condition requires (the condition itself, or a member of an `and`). */
function requiredEquality(where: Cond | undefined): { field: string; value: EqValue } | null {
  if (!where) return null;
  if (where.op === 'eq') return { field: where.field, value: where.value };
  if (where.op === 'and') {
    for (const c of where.conds) if (c.op === 'eq') return { field: c.field, value: c.value };
  }
  return null;
}

const eqKey = (doc: unknown, field: string): unknown => fieldValue(doc, field) ?? null;

/** Ids per read when settle() fetches the stored state of unread writes. */
const SETTLE_CHUNK = 1000;

/** Below this many staged documents of a collection a scan is cheaper than an index. */
const INDEX_FROM = 64;

export class Tx implements StoreReader {
  /** Store state of every document read or written, as first seen, as JSON text (cheaper to take
   * than a deep copy, and only parsed back for the documents that are written). */
  private readonly base = new Map<Key, string | null>();
  /** Staged writes in the order they were first made. */
  private readonly staged = new Map<Key, Staged>();
  /** The keys of `staged` in that order, for walks from a position (writeAhead). */
  private readonly order: Key[] = [];
  /** The same writes by collection, so a read of one collection never walks another's writes. */
  private readonly stagedBy = new Map<CollectionName, Map<string, Staged>>();
  /** Equality indexes over staged documents, built on first need: collection -> field -> value -> ids.
   * Rules query once per write, so a commit of thousands of writes would otherwise be quadratic. */
  private readonly eqIndex = new Map<CollectionName, Map<string, Map<unknown, Set<string>>>>();

  /** Puts and removes of documents this Tx never read: their stored state (the `before` of the
   * write) is fetched by settle(), many ids per read, instead of one read per write. */
  private readonly unread = new Map<Key, { collection: CollectionName; id: string }>();
  private readonly deferBase: boolean;
  private readonly readOnly: boolean;

  /** Staged documents the operation will not write again (seal): writeAhead may hand them over. */
  private readonly sealed = new Set<Key>();
  /** How many staged documents, from the first in staged order, writeAhead has handed over. */
  private handed = 0;
  /** The writes writeAhead handed over, in staged order. */
  private readonly handedWrites: AnyWrite[] = [];
  /** Where writeAhead hands writes (execute, when the store writes them while the operation runs). */
  private ahead: ((writes: AnyWrite[]) => Promise<void>) | null = null;
  /** Collections staged since trackStaging(), or null when not tracked. */
  private stagedSince: Set<CollectionName> | null = null;

  /** `deferBase`: a put or remove of an unread document does not read it at once; settle() reads
   * them all before writes() (an import of 1,000 new leads: one read instead of 1,000). */
  constructor(
    readonly store: Store,
    opts: { deferBase?: boolean; readOnly?: boolean } = {},
  ) {
    this.deferBase = opts.deferBase === true;
    this.readOnly = opts.readOnly === true;
  }

  get workspaceId(): string {
    return this.store.workspaceId;
  }

  private remember(c: CollectionName, id: string, doc: unknown): void {
    // A read-only call never writes, so it needs no before-images (a search would serialise every
    // lead of its page again for nothing).
    if (this.readOnly) return;
    const k = key(c, id);
    if (!this.base.has(k)) this.base.set(k, doc === null ? null : (documentJson.get(doc as object) ?? JSON.stringify(doc)));
  }

  private stagedOf(c: CollectionName): Map<string, Staged> {
    let m = this.stagedBy.get(c);
    if (!m) {
      m = new Map();
      this.stagedBy.set(c, m);
    }
    return m;
  }

  private stage(c: CollectionName, id: string, after: unknown): void {
    const k = key(c, id);
    if (this.sealed.size > 0 && this.sealed.has(k)) throw new Error(`${c}/${id} was sealed by this unit of work: it may not be written again.`);
    this.stagedSince?.add(c);
    const mine = this.stagedOf(c);
    const prev = mine.get(id);
    for (const [field, byValue] of this.eqIndex.get(c) ?? []) {
      if (prev && prev.after !== null) byValue.get(eqKey(prev.after, field))?.delete(id);
      if (after !== null) addToIndex(byValue, eqKey(after, field), id);
    }
    const entry: Staged = { collection: c, id, after };
    if (!prev) this.order.push(k);
    this.staged.set(k, entry); // re-setting a key keeps its first position: writes() stays in order
    mine.set(id, entry);
  }

  /** Staged documents of `c` that may match `where` (a superset; callers still test each one). */
  private candidates(c: CollectionName, where: Cond | undefined): Iterable<Staged> {
    const mine = this.stagedOf(c);
    const eq = requiredEquality(where);
    if (!eq || mine.size < INDEX_FROM) return mine.values();
    let byField = this.eqIndex.get(c);
    if (!byField) {
      byField = new Map();
      this.eqIndex.set(c, byField);
    }
    let byValue = byField.get(eq.field);
    if (!byValue) {
      byValue = new Map();
      for (const st of mine.values()) if (st.after !== null) addToIndex(byValue, eqKey(st.after, eq.field), st.id);
      byField.set(eq.field, byValue);
    }
    const ids = byValue.get(eq.value) ?? new Set<string>();
    const out: Staged[] = [];
    for (const id of ids) {
      const st = mine.get(id);
      if (st) out.push(st);
    }
    return out;
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const s = this.stagedOf(c).get(id);
    if (s) return s.after === null ? null : (cloneJson(s.after) as Docs[C]);
    // Read before by this unit of work: the same state again, without asking the store (rules read
    // each written document's lead or campaign, which the operation has usually read already).
    const known = this.base.get(key(c, id));
    if (known !== undefined) return known === null ? null : (JSON.parse(known) as Docs[C]);
    const doc = await this.store.get(c, id);
    this.remember(c, id, doc);
    return doc;
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    if (this.stagedOf(c).size === 0) {
      const docs = await this.store.getMany(c, ids);
      for (const d of docs) this.remember(c, (d as { id: string }).id, d);
      return docs;
    }
    const out: Docs[C][] = [];
    for (const id of ids) {
      const d = await this.get(c, id);
      if (d) out.push(d);
    }
    return out;
  }

  async query<C extends CollectionName>(c: C, q: Query = {}): Promise<Page<Docs[C]>> {
    const mine = this.stagedOf(c);
    if (mine.size === 0) {
      const page = await this.store.query(c, q);
      for (const d of page.docs) this.remember(c, (d as { id: string }).id, d);
      return page;
    }
    // Merge staged writes into the store's answer, then page in memory. Stored documents with a
    // staged write are replaced by it: a matching staged version is among the candidates.
    const all = await this.store.query(c, { where: q.where });
    const byId = new Map<string, Docs[C]>();
    for (const d of all.docs) {
      const id = (d as { id: string }).id;
      if (!mine.has(id)) byId.set(id, d);
    }
    for (const s of this.candidates(c, q.where)) {
      if (s.after !== null && matches(s.after, q.where)) byId.set(s.id, cloneJson(s.after) as Docs[C]);
    }
    return runQuery(byId.values(), q);
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    if (this.stagedOf(c).size === 0) return this.store.count(c, where);
    const page = await this.query(c, { where });
    return page.docs.filter((d) => matches(d, where)).length;
  }

  /** The store's groups: a merge lists duplicates before it stages anything, and a page of groups
   * over staged leads would need every group's key re-read, so a call that has staged lead writes
   * is refused rather than answered from the store alone (which would be wrong for its leads). */
  async duplicateGroups(kind: IdentityKind, opts: DuplicatePageOptions): Promise<DuplicatePage> {
    if (this.stagedOf('leads').size > 0) throw new Error('duplicateGroups reads the stored leads: call it before this unit of work stages lead writes.');
    return this.store.duplicateGroups(kind, opts);
  }

  /** The stored state of a document about to be written, unless already known. */
  private async baseOf(c: CollectionName, id: string): Promise<void> {
    const k = key(c, id);
    if (this.base.has(k) || this.unread.has(k)) return;
    if (this.deferBase) this.unread.set(k, { collection: c, id });
    else this.remember(c, id, await this.store.get(c, id));
  }

  /** Stages a creation or an update (the whole new document). */
  async put<C extends CollectionName>(c: C, doc: Docs[C]): Promise<void> {
    const id = (doc as { id: string }).id;
    await this.baseOf(c, id);
    this.stage(c, id, cloneJson(doc));
  }

  /** Stages a document this unit of work made under a fresh id (ctx.ids): there is no stored state
   * to read for it (an import of 5,000 new leads: no read at all, where `put` reads the 5,000 ids
   * back in settle()). Its write is a creation, which every store refuses (CONFLICT) when a live
   * document already has the id, so a wrong guess is a refusal, never an overwrite. A document this
   * unit of work has read keeps the state it was read in. Unlike `put`, the Tx takes `doc` itself,
   * without a copy: the caller hands it over and must not change it afterwards (an import builds
   * 5,000 leads and never touches them again; copying them was a twentieth of its CPU). */
  async create<C extends CollectionName>(c: C, doc: Docs[C]): Promise<void> {
    const id = (doc as { id: string }).id;
    if (!this.unread.has(key(c, id))) this.remember(c, id, null);
    this.stage(c, id, doc);
  }

  /** Stages a soft delete. */
  async remove(c: CollectionName, id: string): Promise<void> {
    await this.baseOf(c, id);
    this.stage(c, id, null);
  }

  /** Reads the stored state of every written document not read yet, a few hundred ids per read. */
  async settle(): Promise<void> {
    const byCollection = new Map<CollectionName, string[]>();
    for (const { collection, id } of this.unread.values()) {
      const ids = byCollection.get(collection);
      if (ids) ids.push(id);
      else byCollection.set(collection, [id]);
    }
    for (const [c, ids] of byCollection) {
      for (let i = 0; i < ids.length; i += SETTLE_CHUNK) {
        const chunk = ids.slice(i, i + SETTLE_CHUNK);
        const found = new Map<string, unknown>();
        for (const d of await this.store.getMany(c, chunk)) found.set((d as { id: string }).id, d);
        for (const id of chunk) {
          this.remember(c, id, found.get(id) ?? null);
          this.unread.delete(key(c, id));
        }
      }
    }
  }

  /** The write of a staged document, or null when it leaves the document as it was. */
  private writeOf(k: Key, s: Staged): AnyWrite | null {
    const baseText = this.base.get(k) ?? null;
    // A creation (no stored state) is a write without comparing texts; so is a removal of a stored document.
    if (baseText === null ? s.after === null : s.after !== null && baseText === JSON.stringify(s.after)) return null;
    const before: unknown = baseText === null ? null : JSON.parse(baseText);
    return { collection: s.collection, id: s.id, before, after: s.after } as AnyWrite;
  }

  /** The staged writes with the state each was based on; unchanged documents are left out. Writes
   * writeAhead handed over are not among them (handedOver has those, which come first). */
  writes(): AnyWrite[] {
    if (this.unread.size > 0) throw new Error('Tx.settle() must run before writes(): some writes do not know the state they replace yet.');
    const out: AnyWrite[] = [];
    for (let at = this.handed; at < this.order.length; at++) {
      const k = this.order[at] as Key;
      const w = this.writeOf(k, this.staged.get(k) as Staged);
      if (w) out.push(w);
    }
    return out;
  }

  /** Marks a staged document as final: this unit of work will not write it again (staging it again
   * throws), so writeAhead may hand its write to the store before the operation ends. */
  seal(c: CollectionName, id: string): void {
    if (this.stagedOf(c).has(id)) this.sealed.add(key(c, id));
  }

  /** Hands writeAhead's writes to `sink` (execute, for a store that writes a commit while the
   * operation still runs: Store.commitAhead). Without it writeAhead does nothing. */
  aheadTo(sink: (writes: AnyWrite[]) => Promise<void>): void {
    this.ahead = sink;
  }

  /** Hands over the writes of the longest run of sealed documents at the start of the staged order
   * not handed yet (so the commit's writes stay in staged order: handedOver(), then writes()), and
   * waits while the store takes them (it checks and sends them, a turn of the event loop at a time).
   * A no-op unless aheadTo was called: a dry run, or a store that commits at the end. */
  async writeAhead(): Promise<void> {
    if (!this.ahead) return;
    const out: AnyWrite[] = [];
    for (; this.handed < this.order.length; this.handed++) {
      const k = this.order[this.handed] as Key;
      if (!this.sealed.has(k) || this.unread.has(k)) break;
      const w = this.writeOf(k, this.staged.get(k) as Staged);
      if (w) out.push(w);
    }
    if (out.length === 0) return;
    this.handedWrites.push(...out);
    await this.ahead(out);
  }

  /** The writes writeAhead handed over, in staged order. */
  handedOver(): readonly AnyWrite[] {
    return this.handedWrites;
  }

  /** Records the collections staged from now on (stagedSinceTracking). */
  trackStaging(): void {
    this.stagedSince ??= new Set();
  }

  stagedSinceTracking(): ReadonlySet<CollectionName> {
    return this.stagedSince ?? new Set();
  }
}

function addToIndex(byValue: Map<unknown, Set<string>>, value: unknown, id: string): void {
  let ids = byValue.get(value);
  if (!ids) {
    ids = new Set();
    byValue.set(value, ids);
  }
  ids.add(id);
}
