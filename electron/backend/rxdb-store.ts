/**
 * The Store port over the desktop's RxDB database, so every operation of shared/ops runs locally and
 * offline through the same rules.
 *
 * Reads are answered from a per-collection view of the live documents (RxDB's underscore fields
 * stripped) kept in step with the storage's change stream, which also carries replicated writes.
 * Conditions and sort orders are shared/query.ts's (compileCond, sortKeyCompare: the one semantics
 * of every JavaScript store), compiled once per query. This store adds only where to look: hash
 * indexes for `eq`/`in` conjuncts (built on first use, then maintained), sorted arrays per sort
 * order (maintained for small changes, rebuilt after large ones) and cached lower-case text for
 * `contains` (joined per chunk of documents, so a rare search text is found with a few indexOf
 * calls), so a page of a search does not re-read 100k documents.
 *
 * Commits check every write's `before` against the current document and write all collections in
 * one atomic step of the persisted-memory storage (one SQLite transaction, no interleaving write).
 */
import type { RxDatabase, RxDocumentData, RxStorageChangeEvent } from 'rxdb';
import { now as rxNow } from 'rxdb';
import type { Subscription } from 'rxjs';
import { DomainError } from '../../shared/errors.ts';
import type { CollectionName, Docs } from '../../shared/model/index.ts';
import { compareValues, compileCond, cursorProbe, decodeCursor, encodeCursor, fieldGetter, normValue, sortKeyCompare } from '../../shared/query.ts';
import type { CompileOptions, Comparator, Getter } from '../../shared/query.ts';
import type { AnyWrite, Cond, Page, Query, Sort, Store, StoreProvider } from '../../shared/store.ts';
import { AtomicWriteConflict, persistedInstanceOf, writeAtomically } from './storage/persisted-memory.ts';
import type { PersistedMemoryInstance } from './storage/persisted-memory.ts';
import { commitRows, STORE_WRITE_CONTEXT, storeCopy } from './store-documents.ts';

type Json = Record<string, unknown>;
type Raw = RxDocumentData<Json>;
type Scalar = string | number | boolean | null;

const isScalar = (v: unknown): v is Scalar => v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** First index whose document sorts strictly after `probe`. */
function upperBound(list: readonly Json[], probe: Json, cmp: Comparator): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(list[mid] as Json, probe) > 0) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** First index whose document does not sort before `probe`. */
function lowerBound(list: readonly Json[], probe: Json, cmp: Comparator): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(list[mid] as Json, probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

type Pred = (doc: Json) => boolean;

/** A range on the first sort key (ascending, not folded) taken from the query's top-level `and`:
 * the documents it admits are one stretch of that sort order, so a scan can start at the stretch
 * and stop at its end (the runner's "due now" query reads only what is due). Null when the query
 * has no upper bound there. */
function sortedRange(where: Cond | undefined, orderBy: readonly Sort[]): { get: Getter; from: (v: unknown) => boolean; past: (v: unknown) => boolean } | null {
  const first = orderBy[0];
  if (!where || !first || first.dir !== 'asc' || first.collate === 'text') return null;
  const conds: Cond[] = [];
  const flatten = (c: Cond): void => {
    if (c.op === 'and') c.conds.forEach(flatten);
    else conds.push(c);
  };
  flatten(where);
  let past: ((v: unknown) => boolean) | null = null;
  let from: (v: unknown) => boolean = (v) => v !== null && v !== undefined;
  for (const c of conds) {
    if ((c.op === 'lt' || c.op === 'lte') && c.field === first.field) {
      const bound = c.value;
      const strict = c.op === 'lt';
      const previous: ((v: unknown) => boolean) | null = past;
      past = (v: unknown): boolean => (previous?.(v) ?? false) || (strict ? compareValues(v, bound) >= 0 : compareValues(v, bound) > 0);
    } else if ((c.op === 'gt' || c.op === 'gte') && c.field === first.field) {
      const bound = c.value;
      const strict = c.op === 'gt';
      const previous: (v: unknown) => boolean = from;
      from = (v: unknown): boolean => previous(v) && (strict ? compareValues(v, bound) > 0 : compareValues(v, bound) >= 0);
    }
  }
  return past ? { get: fieldGetter(first.field), from, past } : null;
}

/** First index at which `ok` holds, for a predicate that, once true along the list, stays true. */
function firstWhere(list: readonly Json[], ok: (doc: Json) => boolean): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ok(list[mid] as Json)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Sort orders kept per collection. */
const MAX_SORTED = 8;

/**
 * When the query engine switches strategy. Any setting gives the same answers (the conformance
 * test runs with tiny values to take every path); these are tuned for 100k documents.
 */
export const QUERY_TUNING = {
  /** Above this many changes in one batch, sorted orders are rebuilt on next use instead of patched. */
  patchLimit: 512,
  /** Documents per chunk of the text index: small enough that one edit re-joins little text. */
  chunk: 1024,
  /** Collections smaller than this are scanned; larger ones get hash and text indexes. */
  minIndexed: 2000,
  /** Index candidates few enough to sort outright, whatever the page size. */
  smallCandidates: 2000,
  /** Documents scanned in sort order before matches are looked up in an index instead. */
  scanBudget: 8000,
  /** Above this many text hits, scanning in sort order (which stops at the page) beats sorting hits. */
  textHitsCap: 2000,
};

/**
 * The live documents of one collection, with the indexes queries build on demand. The documents
 * are the storage's own objects (RxDB's fields included; they are stripped when handed out), so
 * the view costs references, not a second copy. They are never changed in place.
 */
class CollectionView {
  readonly live = new Map<string, Json>();
  private readonly sorted = new Map<string, SortedOrder>();
  private readonly hash = new Map<string, { get: Getter; buckets: Map<Scalar, Set<Json>> }>();
  private textChunks: TextChunks | null = null;

  constructor(
    readonly name: CollectionName,
    readonly instance: PersistedMemoryInstance<Json>,
  ) {
    for (const [id, raw] of instance.currentDocuments()) if (!raw._deleted) this.live.set(id, raw);
  }

  raw(id: string): Raw | undefined {
    return this.instance.currentDocuments().get(id);
  }

  apply(events: readonly RxStorageChangeEvent<Raw>[]): void {
    const patchSorted = events.length <= QUERY_TUNING.patchLimit;
    if (!patchSorted) for (const s of this.sorted.values()) s.docs = null;
    for (const ev of events) {
      const id = ev.documentId;
      const old = this.live.get(id);
      // The stored object itself (the event may carry an equal copy).
      const stored = this.instance.currentDocuments().get(id) ?? ev.documentData;
      const next = stored._deleted ? undefined : stored;
      if (next) this.live.set(id, next);
      else this.live.delete(id);
      if (this.textChunks) {
        if (old && next) this.textChunks.replace(old, next);
        else if (old) this.textChunks.remove(old);
        else if (next) this.textChunks.add(next);
      }
      for (const idx of this.hash.values()) {
        if (old) this.unindex(idx, old);
        if (next) this.index(idx, next);
      }
      if (patchSorted) {
        for (const s of this.sorted.values()) {
          if (!s.docs) continue;
          if (old) {
            let at = lowerBound(s.docs, old, s.cmp);
            if (s.docs[at] !== old) at = s.docs.indexOf(old);
            if (at >= 0) s.docs.splice(at, 1);
          }
          if (next) s.docs.splice(upperBound(s.docs, next, s.cmp), 0, next);
        }
      }
    }
  }

  private index(idx: { get: Getter; buckets: Map<Scalar, Set<Json>> }, doc: Json): void {
    const v = normValue(idx.get(doc));
    // Objects and arrays never equal a scalar condition value, so they need no bucket.
    if (!isScalar(v)) return;
    let b = idx.buckets.get(v);
    if (!b) idx.buckets.set(v, (b = new Set()));
    b.add(doc);
  }

  private unindex(idx: { get: Getter; buckets: Map<Scalar, Set<Json>> }, doc: Json): void {
    const v = normValue(idx.get(doc));
    if (!isScalar(v)) return;
    const b = idx.buckets.get(v);
    if (!b) return;
    b.delete(doc);
    if (b.size === 0) idx.buckets.delete(v);
  }

  /** Documents whose `field` (normalized) is one of `values`, through a hash index. */
  lookup(field: string, values: readonly Scalar[]): Json[] {
    if (field === 'id') {
      const out: Json[] = [];
      for (const v of new Set(values)) {
        const d = typeof v === 'string' ? this.live.get(v) : undefined;
        if (d) out.push(d);
      }
      return out;
    }
    this.ensureIndex(field);
    const idx = this.hash.get(field);
    const out: Json[] = [];
    if (!idx) return out;
    // A document is in one bucket, so only a value given twice could list it twice: remember the
    // values that hit (an import asks for tens of thousands of spellings, of which few hit).
    const hit = new Set<Scalar>();
    for (const v of values) {
      const b = idx.buckets.get(v);
      if (!b || hit.has(v)) continue;
      hit.add(v);
      for (const d of b) out.push(d);
    }
    return out;
  }

  /** How many documents a lookup would return (at most), without building the list; -1 when the
   * field has no index yet. */
  lookupSize(field: string, values: readonly Scalar[]): number {
    if (field === 'id') return values.length;
    const idx = this.hash.get(field);
    if (!idx) return -1;
    // A value given twice counts twice: still an upper bound, without building a set of the values.
    let n = 0;
    for (const v of values) n += idx.buckets.get(v)?.size ?? 0;
    return n;
  }

  ensureIndex(field: string): void {
    if (field === 'id' || this.hash.has(field)) return;
    const idx = { get: fieldGetter(field), buckets: new Map<Scalar, Set<Json>>() };
    for (const d of this.live.values()) this.index(idx, d);
    this.hash.set(field, idx);
  }

  /** The text index, built on first use and maintained from then on. */
  text(): TextChunks {
    if (!this.textChunks) this.textChunks = new TextChunks(this.live.values());
    return this.textChunks;
  }

  /** Whether `orderBy`'s sorted order is built and current (sortedBy would not sort). */
  hasSorted(orderBy: readonly Sort[]): boolean {
    return (this.sorted.get(JSON.stringify(orderBy))?.docs ?? null) !== null;
  }

  sortedBy(orderBy: readonly Sort[]): SortedOrder & { docs: Json[] } {
    const key = JSON.stringify(orderBy);
    let s = this.sorted.get(key);
    if (!s) {
      if (this.sorted.size >= MAX_SORTED) {
        const oldest = this.sorted.keys().next();
        if (!oldest.done) this.sorted.delete(oldest.value);
      }
      s = { cmp: sortKeyCompare(orderBy), docs: null };
      this.sorted.set(key, s);
    }
    if (!s.docs) s.docs = [...this.live.values()].sort(s.cmp);
    return s as SortedOrder & { docs: Json[] };
  }
}

/** Documents in one sort order (null: rebuild on next use). */
type SortedOrder = { cmp: Comparator; docs: Json[] | null };


/**
 * The view's documents in chunks, each with the search text of its documents joined into one string
 * (separated by \u0003) and each document's start offset. Finding a needle is then one indexOf per
 * chunk, which skips non-matching documents far faster than testing them one by one; an edit only
 * re-joins its chunk.
 */
class TextChunks {
  private readonly chunks: { docs: Json[]; text: Map<string, { all: string; starts: number[] }> }[] = [];
  private readonly chunkOf = new Map<string, number>();

  constructor(docs: Iterable<Json>) {
    for (const d of docs) this.add(d);
  }

  add(doc: Json): void {
    let last = this.chunks[this.chunks.length - 1];
    if (!last || last.docs.length >= QUERY_TUNING.chunk) {
      last = { docs: [], text: new Map() };
      this.chunks.push(last);
    }
    last.docs.push(doc);
    last.text.clear();
    this.chunkOf.set(String(doc.id), this.chunks.length - 1);
  }

  replace(old: Json, next: Json): void {
    const chunk = this.chunks[this.chunkOf.get(String(old.id)) ?? -1];
    const at = chunk ? chunk.docs.indexOf(old) : -1;
    if (!chunk || at < 0) {
      this.add(next);
      return;
    }
    chunk.docs[at] = next;
    chunk.text.clear();
  }

  remove(old: Json): void {
    const id = String(old.id);
    const chunk = this.chunks[this.chunkOf.get(id) ?? -1];
    this.chunkOf.delete(id);
    if (!chunk) return;
    const at = chunk.docs.indexOf(old);
    if (at < 0) return;
    const moved = chunk.docs.pop();
    if (moved && at < chunk.docs.length) chunk.docs[at] = moved;
    chunk.text.clear();
  }

  /** Documents whose text (over `fields`) holds `needle`, or null when more than `cap` do. */
  hits(fields: readonly string[], needle: string, cap: number): Json[] | null {
    const key = fields.join('\u0001');
    const text = searchText(fields, fields.map(fieldGetter));
    const out: Json[] = [];
    for (const chunk of this.chunks) {
      let t = chunk.text.get(key);
      if (!t) {
        const starts: number[] = [];
        let at = 0;
        const parts = chunk.docs.map((d) => {
          const s = text(d);
          starts.push(at);
          at += s.length + 1;
          return s;
        });
        starts.push(at);
        t = { all: parts.join('\u0003'), starts };
        chunk.text.set(key, t);
      }
      let pos = t.all.indexOf(needle);
      while (pos >= 0) {
        const i = docAt(t.starts, pos);
        out.push(chunk.docs[i] as Json);
        if (out.length > cap) return null;
        pos = t.all.indexOf(needle, t.starts[i + 1]);
      }
    }
    return out;
  }
}

/** The index of the document whose text holds offset `pos`. */
function docAt(starts: readonly number[], pos: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((starts[mid] as number) <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** A `contains` every match must satisfy (the condition itself or a conjunct of a top-level and). */
function textConjunct(cond: Cond | undefined): { fields: readonly string[]; needle: string } | null {
  if (!cond) return null;
  if (cond.op === 'contains') {
    const needle = cond.value.toLowerCase();
    const usable = needle !== '' && cond.fields.length > 0 && !['\u0001', '\u0002', '\u0003'].some((sep) => needle.includes(sep));
    return usable ? { fields: cond.fields, needle } : null;
  }
  if (cond.op === 'and') {
    for (const c of cond.conds) {
      const t = textConjunct(c);
      if (t) return t;
    }
  }
  return null;
}

/** Where a view document caches its search text: a symbol key, so Object.keys, JSON and the clones
 * handed out never see it. One slot per document (the lead search's field list in practice). */
const SEARCH_TEXT = Symbol('searchText');
type WithSearchText = Json & { [SEARCH_TEXT]?: { key: string; text: string } };

/** Lower-case text of `fields` joined by \u0001 (non-strings as \u0002), cached on the document. */
function searchText(fields: readonly string[], gets: readonly Getter[]): (doc: Json) => string {
  const key = fields.join('\u0001');
  return (doc) => {
    const d = doc as WithSearchText;
    const cached = d[SEARCH_TEXT];
    if (cached && cached.key === key) return cached.text;
    let text = '';
    for (let i = 0; i < gets.length; i++) {
      const v = (gets[i] as Getter)(doc);
      text += (i > 0 ? '\u0001' : '') + (typeof v === 'string' ? v.toLowerCase() : '\u0002');
    }
    d[SEARCH_TEXT] = { key, text };
    return text;
  };
}

/** The conditions of shared/query.ts, with `contains` answered from each document's cached search
 * text (the same answer: a case-insensitive substring of any of the string fields). */
const VIEW_COMPILE: CompileOptions = {
  contains(cond) {
    const needle = cond.value.toLowerCase();
    // A separator in the needle could match across fields: the shared evaluator answers those.
    if (needle === '' || ['\u0001', '\u0002', '\u0003'].some((sep) => needle.includes(sep)) || cond.fields.length === 0) return null;
    // A non-string field contributes \u0002, which no needle here contains, so it never matches.
    const text = searchText(cond.fields, cond.fields.map(fieldGetter));
    return (d) => text(d as Json).includes(needle);
  },
};

/** The `eq`/`in` conjuncts of a condition: any matching document is in their lookup. */
function keyConjuncts(cond: Cond | undefined): { field: string; values: Scalar[] }[] {
  if (!cond) return [];
  if (cond.op === 'eq') return [{ field: cond.field, values: [cond.value] }];
  if (cond.op === 'in') return [{ field: cond.field, values: [...cond.values] }];
  if (cond.op === 'and') return cond.conds.flatMap(keyConjuncts);
  return [];
}

/** Candidates through an index when that is clearly cheaper than a scan, else null. */
function candidates(view: CollectionView, where: Cond | undefined): Json[] | null {
  const keys = keyConjuncts(where);
  if (keys.length === 0) return null;
  const n = view.live.size;
  let best: { field: string; values: Scalar[]; size: number } | null = null;
  for (const k of keys) {
    let size = view.lookupSize(k.field, k.values);
    if (size < 0) {
      // No index yet: build it (once, then it is maintained) when the collection is big enough to care.
      if (n < QUERY_TUNING.minIndexed) continue;
      view.ensureIndex(k.field);
      size = view.lookupSize(k.field, k.values);
    }
    if (!best || size < best.size) best = { ...k, size };
  }
  if (!best || best.size > n / 8) return null;
  return view.lookup(best.field, best.values);
}


/** Candidates through the text index for a rare enough search text, else null. */
function textCandidates(view: CollectionView, where: Cond | undefined): Json[] | null {
  const text = textConjunct(where);
  if (!text || view.live.size < QUERY_TUNING.minIndexed) return null;
  return view.text().hits(text.fields, text.needle, QUERY_TUNING.textHitsCap);
}

/**
 * Holds the views of a local RxDB database and hands out workspace-scoped Stores over it.
 * `collections` are the RxDB collections to serve (the replicated ones).
 */
export class RxdbStoreProvider implements StoreProvider {
  private readonly views = new Map<CollectionName, CollectionView>();
  private readonly subs: Subscription[] = [];
  private readonly listeners = new Set<(collections: CollectionName[]) => void>();
  private pending = new Set<CollectionName>();
  private flushQueued = false;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(readonly rx: RxDatabase, collections: readonly CollectionName[]) {
    for (const name of collections) {
      const collection = rx.collections[name];
      if (!collection) throw new Error(`The local database has no ${name} collection.`);
      const instance = persistedInstanceOf<Json>(collection.storageInstance);
      if (!instance) throw new Error(`The ${name} collection is not on the persisted-memory storage.`);
      const view = new CollectionView(name, instance);
      this.views.set(name, view);
      // The memory storage emits synchronously inside the write, so views are current when a write
      // resolves: a read right after a commit (or a replicated pull) sees it.
      this.subs.push(
        instance.changeStream().subscribe((bulk) => {
          if (bulk.events.length === 0) return;
          view.apply(bulk.events);
          this.noteChange(name);
        }),
      );
    }
  }

  private noteChange(c: CollectionName): void {
    this.pending.add(c);
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => {
      this.flushQueued = false;
      const touched = [...this.pending];
      this.pending = new Set();
      for (const l of this.listeners) l(touched);
    });
  }

  /** Called (once per burst of writes, local or replicated) with the collections that changed. */
  onChange(listener: (collections: CollectionName[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  view(c: CollectionName): CollectionView | undefined {
    return this.views.get(c);
  }

  forWorkspace(workspaceId: string): Store {
    return new RxdbStore(this, workspaceId);
  }

  async withStore<T>(workspaceId: string, fn: (store: Store) => Promise<T>): Promise<T> {
    return fn(this.forWorkspace(workspaceId));
  }

  /** Runs commits one after another, so each sees the previous one's result. */
  serialize<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  close(): void {
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
    this.listeners.clear();
  }
}

class RxdbStore implements Store {
  constructor(
    private readonly provider: RxdbStoreProvider,
    readonly workspaceId: string,
  ) {}

  private mine(doc: Json | undefined): doc is Json {
    return doc !== undefined && doc.workspaceId === this.workspaceId;
  }

  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const doc = this.provider.view(c)?.live.get(id);
    return this.mine(doc) ? (storeCopy(doc) as Docs[C]) : null;
  }

  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    const view = this.provider.view(c);
    const out: Docs[C][] = [];
    if (!view) return out;
    for (const id of ids) {
      const doc = view.live.get(id);
      if (this.mine(doc)) out.push(storeCopy(doc) as Docs[C]);
    }
    return out;
  }

  async query<C extends CollectionName>(c: C, q: Query = {}): Promise<Page<Docs[C]>> {
    const view = this.provider.view(c);
    if (!view) return { docs: [], nextCursor: null };
    const orderBy = q.orderBy ?? [];
    const ws = this.workspaceId;
    const cond = q.where ? compileCond(q.where, VIEW_COMPILE) : null;
    const pred: Pred = cond ? (d) => d.workspaceId === ws && cond(d) : (d) => d.workspaceId === ws;
    const cursor = q.cursor ? decodeCursor(q.cursor, orderBy) : null;
    const limit = q.limit;
    if (limit !== undefined && limit <= 0) return { docs: [], nextCursor: null };

    let list: Json[] | null = null;
    const range = sortedRange(q.where, orderBy);
    const cands = range ? null : candidates(view, q.where);
    const text = limit !== undefined && textConjunct(q.where) !== null;
    if (range) {
      // Only the stretch of the sort order the range admits: nulls and values before it are skipped
      // by binary search (a lower bound only ever grows along an ascending order), and the scan
      // stops at the first value past the upper bound.
      const { cmp, docs } = view.sortedBy(orderBy);
      let i = Math.max(cursor ? upperBound(docs, cursorProbe(cursor, orderBy), cmp) : 0, firstWhere(docs, (d) => range.from(range.get(d))));
      const want = limit === undefined ? Infinity : limit + 1;
      const found: Json[] = [];
      for (; i < docs.length && found.length < want; i++) {
        const d = docs[i] as Json;
        if (range.past(range.get(d))) break;
        if (pred(d)) found.push(d);
      }
      list = found;
    } else if (cands && (limit === undefined || cands.length <= QUERY_TUNING.smallCandidates)) list = this.sortHits(cands, pred, orderBy, cursor);
    else if (limit === undefined && !view.hasSorted(orderBy)) {
      // Every match is wanted and the sort order is not built (a large write set it aside): sorting
      // the matches costs less than sorting the whole collection (an import's lookups after each
      // call of 5,000 writes would otherwise sort every lead again).
      const hits: Json[] = [];
      for (const d of view.live.values()) if (pred(d)) hits.push(d);
      list = this.sortHits(hits, () => true, orderBy, cursor);
    } else {
      const { cmp, docs } = view.sortedBy(orderBy);
      const start = cursor ? upperBound(docs, cursorProbe(cursor, orderBy), cmp) : 0;
      const want = limit === undefined ? Infinity : limit + 1;
      const found: Json[] = [];
      // With another way in (many index candidates, or a search text), scan a bounded stretch in
      // sort order first: common matches fill the page within it. Rare ones do not, and are then
      // taken from the index (or the text index) and sorted instead.
      const fallback = cands !== null || text;
      let i = start;
      const stop = fallback ? Math.min(docs.length, start + QUERY_TUNING.scanBudget) : docs.length;
      for (; i < stop && found.length < want; i++) {
        const d = docs[i] as Json;
        if (pred(d)) found.push(d);
      }
      if (found.length < want && i < docs.length) {
        const hits = cands ?? (text ? textCandidates(view, q.where) : null);
        if (hits) list = this.sortHits(hits, pred, orderBy, cursor);
        else {
          for (; i < docs.length && found.length < want; i++) {
            const d = docs[i] as Json;
            if (pred(d)) found.push(d);
          }
        }
      }
      list ??= found;
    }
    const more = limit !== undefined && list.length > limit;
    const page = more ? list.slice(0, limit) : list;
    const last = page[page.length - 1];
    return {
      docs: page.map((d) => storeCopy(d) as Docs[C]),
      nextCursor: more && last ? encodeCursor(last, orderBy) : null,
    };
  }

  /** Candidate documents that match, in sort order, after the cursor. */
  private sortHits(hits: Json[], pred: Pred, orderBy: readonly Sort[], cursor: { k: unknown[]; id: string } | null): Json[] {
    const cmp = sortKeyCompare(orderBy);
    const list = hits.filter(pred).sort(cmp);
    return cursor ? list.slice(upperBound(list, cursorProbe(cursor, orderBy), cmp)) : list;
  }

  async count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    const view = this.provider.view(c);
    if (!view) return 0;
    const ws = this.workspaceId;
    const cond = where ? compileCond(where, VIEW_COMPILE) : null;
    const source = candidates(view, where) ?? view.live.values();
    let n = 0;
    for (const d of source) if (d.workspaceId === ws && (!cond || cond(d))) n++;
    return n;
  }

  commit(writes: readonly AnyWrite[]): Promise<void> {
    return this.provider.serialize(() => this.commitNow(writes));
  }

  /** Checks and writes in one tick (see writeAtomically): nothing can change in between. */
  private async commitNow(writes: readonly AnyWrite[]): Promise<void> {
    const rows = commitRows(writes, this.workspaceId, {
      token: this.provider.rx.token,
      now: rxNow(),
      instance: (c) => this.provider.view(c) ?? null,
      stored: (view, id) => view.raw(id),
    });
    if (rows.size === 0) return;
    try {
      await writeAtomically([...rows].map(([view, r]) => ({ instance: view.instance, rows: r })), STORE_WRITE_CONTEXT);
    } catch (e) {
      if (e instanceof AtomicWriteConflict) throw new DomainError('CONFLICT', 'Some documents changed while saving; try again.');
      throw e;
    }
  }
}
