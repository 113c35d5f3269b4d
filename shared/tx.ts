/** A unit of work over a Store: reads see staged writes; writes are collected, then validated by the
 * rules and committed together (or discarded for a dry run). */
import type { CollectionName, Docs } from './model/index.ts';
import type { AnyWrite, Cond, Page, Query, Store, StoreReader } from './store.ts';
import { matches, runQuery } from './query.ts';

/** Stores that build the documents they return from JSON text may record that text here, so a Tx
 * need not serialise the document again to remember it. The text must be exactly what
 * JSON.stringify gives for the document as returned. */
export const documentJson = new WeakMap<object, string>();

type Key = `${CollectionName}/${string}`;
const key = (c: CollectionName, id: string): Key => `${c}/${id}`;

export class Tx implements StoreReader {
  /** Store state of every document read or written, as first seen, as JSON text (cheaper to take
   * than a deep copy, and only parsed back for the documents that are written). */
  private readonly base = new Map<Key, string | null>();
  private readonly staged = new Map<Key, { collection: CollectionName; id: string; after: unknown }>();

  constructor(readonly store: Store) {}

  get workspaceId(): string {
    return this.store.workspaceId;
  }

  private remember(c: CollectionName, id: string, doc: unknown): void {
    const k = key(c, id);
    if (!this.base.has(k)) this.base.set(k, doc === null ? null : (documentJson.get(doc as object) ?? JSON.stringify(doc)));
  }

  private stagedIn(c: CollectionName): { id: string; after: unknown }[] {
    const out: { id: string; after: unknown }[] = [];
    for (const s of this.staged.values()) if (s.collection === c) out.push(s);
    return out;
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const s = this.staged.get(key(c, id));
    if (s) return s.after === null ? null : (structuredClone(s.after) as Docs[C]);
    const doc = await this.store.get(c, id);
    this.remember(c, id, doc);
    return doc;
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    if (this.stagedIn(c).length === 0) {
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
    const mine = this.stagedIn(c);
    if (mine.length === 0) {
      const page = await this.store.query(c, q);
      for (const d of page.docs) this.remember(c, (d as { id: string }).id, d);
      return page;
    }
    // Merge staged writes into the store's answer, then page in memory.
    const all = await this.store.query(c, { where: q.where });
    const byId = new Map<string, Docs[C]>();
    for (const d of all.docs) byId.set((d as { id: string }).id, d);
    for (const s of mine) {
      // Only staged documents that match are copied: rules query once per write of a large commit.
      if (s.after === null || !matches(s.after, q.where)) byId.delete(s.id);
      else byId.set(s.id, structuredClone(s.after) as Docs[C]);
    }
    return runQuery(byId.values(), q);
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    const mine = this.stagedIn(c);
    if (mine.length === 0) return this.store.count(c, where);
    const page = await this.query(c, { where });
    return page.docs.filter((d) => matches(d, where)).length;
  }

  /** Stages a creation or an update (the whole new document). */
  async put<C extends CollectionName>(c: C, doc: Docs[C]): Promise<void> {
    const id = (doc as { id: string }).id;
    const k = key(c, id);
    if (!this.base.has(k)) this.remember(c, id, await this.store.get(c, id));
    this.staged.set(k, { collection: c, id, after: structuredClone(doc) });
  }

  /** Stages a soft delete. */
  async remove(c: CollectionName, id: string): Promise<void> {
    const k = key(c, id);
    if (!this.base.has(k)) this.remember(c, id, await this.store.get(c, id));
    this.staged.set(k, { collection: c, id, after: null });
  }

  /** The staged writes with the state each was based on; unchanged documents are left out. */
  writes(): AnyWrite[] {
    const out: AnyWrite[] = [];
    for (const [k, s] of this.staged) {
      const baseText = this.base.get(k) ?? null;
      if ((baseText ?? 'null') === JSON.stringify(s.after)) continue;
      const before: unknown = baseText === null ? null : JSON.parse(baseText);
      out.push({ collection: s.collection, id: s.id, before, after: s.after } as AnyWrite);
    }
    return out;
  }
}
