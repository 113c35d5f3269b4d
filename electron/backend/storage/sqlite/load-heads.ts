/**
 * The first rows of each order a bulk load left without its index (doc-table.ts, "loading"), kept
 * in memory until the index is built, so that the leads table re-sorted by name during an initial
 * sync, or while its indexes are built after it, reads one bounded page instead of the whole table.
 * Without them such a read scanned and sorted every row on the event loop: 0.6-0.9 s at 1M leads,
 * for the first 50 rows (test/bench/desktop.bench.ts).
 *
 * A head is kept for each ordered Store index a load drops, in both directions of its keys (ties by
 * id ascending, as the Store orders them): a sorted list of rows and a bound, with the invariant
 * "every live row that comes before the bound in this order is in the list" (no bound: every live
 * row is). It starts from the index itself in the transaction that drops it (the table holds fewer
 * rows than the load brings, so that read is short), and every committed write updates it: a row
 * before the bound is inserted, the list keeps HEAD_ROWS rows (the last one out becomes the bound),
 * a row that is deleted or moves past the bound leaves it. A random-order load touches a head about
 * HEAD_ROWS x ln(rows / HEAD_ROWS) times in all; any other row costs one comparison with the bound.
 *
 * A page after a cursor before the bound is then the list's rows after the cursor that pass the
 * condition (store-query.ts): the same rows in the same order as SQL would give, since the keys
 * are the stored column values and compareStored is SQLite's order of them. A page it cannot fill
 * (a rare filter, a deep page past the bound) is read as before, in the file's reader thread when
 * the table is large (store-query.ts, storeQueryOffLoop). A load cut short by a quit has no heads
 * after the next open: its pages are read that way until its indexes are built.
 */
import type { SqlValue, StoreIndex } from './store-columns.ts';

/** Rows kept per order and direction: a page of 50 under a filter that one row in ten passes. */
export const HEAD_ROWS = 1000;

/** @internal From this many changes of one write on, a head applies them at once (applyAll). */
export const HEAD_BATCH = 32;

export type Dir = 'asc' | 'desc';

/** A row in a head: rowid, id and the index's key values as stored. */
export type HeadRow = { r: number; id: string; k: SqlValue[] };

/** A row's place in an order (its keys as stored, and its id). */
export type HeadPlace = { k: readonly SqlValue[]; id: string };

const WIDE = /[\ud800-\uffff]/;

const typeRank = (v: SqlValue): number => (typeof v === 'number' ? 0 : typeof v === 'string' ? 1 : 2);

/** Two strings in code point order (SQLite's BINARY order of their UTF-8 bytes), without
 * allocating: UTF-16 order differs only where a surrogate meets a unit from U+E000 on. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      // Surrogates (U+D800-U+DFFF) stand for code points above U+FFFF.
      x = x < 0xe000 ? x + 0x2000 : x - 0x800;
      y = y < 0xe000 ? y + 0x2000 : y - 0x800;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** SQLite's order of two stored values: numbers, then text (BINARY), then blobs. */
export function compareStored(a: SqlValue, b: SqlValue): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number') return a === b ? 0 : a < (b as number) ? -1 : 1;
  if (typeof a === 'string') return compareCodePoints(a, b as string);
  return Buffer.compare(a, b as Buffer);
}

/** A Store index's first rows in one direction (see the file comment). */
export class OrderHead {
  /** In order. */
  readonly rows: HeadRow[];
  private readonly ids = new Map<string, HeadRow>();
  /** Every live row before this one is in `rows`; null: every live row is. */
  private bound: HeadPlace | null = null;
  /** Per key of the bound: a string without a character from U+D800 on, which JavaScript's `<`
   * then compares with any string in code point order (the orders differ only where both strings
   * hold such a character at the first difference): the cheap comparison every written row makes. */
  private narrow: boolean[] = [];
  /** Counts the changes made to the head (a plan is taken only for the version it was made from). */
  private version = 0;

  /** `rows`: the first rows in this order as read from the index, HEAD_ROWS + 1 of them when the
   * table holds that many (the last then becomes the bound). `positions`: where the index's keys
   * are among a written row's Store values. */
  constructor(
    readonly index: StoreIndex,
    readonly dir: Dir,
    private readonly positions: readonly number[],
    rows: HeadRow[],
  ) {
    if (rows.length > HEAD_ROWS) this.setBound(rows[HEAD_ROWS] as HeadRow);
    this.rows = rows.slice(0, HEAD_ROWS);
    for (const r of this.rows) this.ids.set(r.id, r);
  }

  /** The order of two places: the keys in this head's direction, then the id ascending. */
  compare(a: HeadPlace, b: HeadPlace): number {
    const sign = this.dir === 'asc' ? 1 : -1;
    for (let i = 0; i < a.k.length; i++) {
      const c = compareStored(a.k[i] as SqlValue, b.k[i] as SqlValue);
      if (c !== 0) return sign * c;
    }
    return compareCodePoints(a.id, b.id);
  }

  /** Whether a write of this row may change the head: it is in it, or it is live and comes
   * before the bound. `values`: the row's Store values (storeValues), from `at` on. `stored`: the
   * table held the row before this write (a new row, as every row of an initial sync, cannot be in
   * the head, so the look-up of its id is skipped). Called for every written row while the head is
   * kept: compares without allocating. */
  touches(id: string, values: readonly unknown[], at: number, live: boolean, stored = true): boolean {
    if (stored && this.ids.has(id)) return true;
    if (!live) return false;
    const bound = this.bound;
    if (bound === null) return true;
    const sign = this.dir === 'asc' ? 1 : -1;
    for (let i = 0; i < this.positions.length; i++) {
      const v = values[at + (this.positions[i] as number)] as SqlValue;
      const b = bound.k[i] as SqlValue;
      const c = this.narrow[i] && typeof v === 'string' ? (v === b ? 0 : v < (b as string) ? -1 : 1) : compareStored(v, b);
      if (c !== 0) return sign * c < 0;
    }
    return compareCodePoints(id, bound.id) < 0;
  }

  /** A head as a record kept over a close (LoadHeads.record) described it: `rows` in order, and
   * the bound (null: every live row is in `rows`). */
  static restored(index: StoreIndex, dir: Dir, positions: readonly number[], rows: HeadRow[], bound: HeadPlace | null): OrderHead {
    const head = new OrderHead(index, dir, positions, rows);
    if (bound) head.setBound(bound);
    return head;
  }

  /** The bound (see restored). */
  get boundPlace(): HeadPlace | null {
    return this.bound;
  }

  private setBound(place: HeadPlace): void {
    this.bound = place;
    this.narrow = place.k.map((k) => typeof k === 'string' && !WIDE.test(k));
  }

  /** The index's keys among a row's Store values (see touches). */
  keysOf(values: readonly unknown[], at: number): SqlValue[] {
    return this.positions.map((p) => values[at + p] as SqlValue);
  }

  /** Applies a committed write of a row (`row` null: the row is no longer live). */
  apply(id: string, row: HeadRow | null): void {
    const old = this.ids.get(id);
    if (old) {
      this.rows.splice(this.position(old) - 1, 1);
      this.ids.delete(id);
    }
    this.version++;
    if (!row || (this.bound !== null && this.compare(row, this.bound) >= 0)) return;
    this.rows.splice(this.position(row), 0, row);
    this.ids.set(row.id, row);
    if (this.rows.length > HEAD_ROWS) {
      const last = this.rows.pop() as HeadRow;
      this.ids.delete(last.id);
      this.setBound(last);
    }
  }

  /**
   * Applies a committed write's changes to this head (in the write's order; an id written twice
   * counts with its last row). A few one at a time (apply); more at once: the head's rows the
   * write leaves alone, merged with the written rows before the bound, sorted, in one pass. A
   * pulled page brings up to 2,000 rows before the bound (in a head by creation time, newest
   * first, every new lead comes first), and one at a time each moved the list (a splice, and the
   * row it pushed out became the bound): 40-70 ms of CPU in the page's COMMIT turn, the longest
   * task of the sync. Either way the head holds every live row before its bound; at once it may
   * keep rows that one at a time would have pushed out and a later change taken back in.
   */
  applyAll(changes: readonly { id: string; row: HeadRow | null }[]): void {
    if (changes.length < HEAD_BATCH) {
      for (const c of changes) this.apply(c.id, c.row);
      return;
    }
    this.take(this.merged(changes));
  }

  /**
   * What applyAll of these changes (HEAD_BATCH or more) would make of this head, worked out without
   * changing it: a pulled page's write works it out in a step of its own before its COMMIT (the
   * sort of up to 2,000 rows per head, 16 heads of the leads table on the first pages), and the
   * COMMIT's turn only takes it (applyPlan). Null for fewer changes (applied one at a time then).
   */
  plan(changes: readonly { id: string; row: HeadRow | null }[]): HeadPlan | null {
    return changes.length < HEAD_BATCH ? null : { version: this.version, ...this.merged(changes) };
  }

  /** Applies the changes a plan was worked out from: the plan itself when the head has not changed
   * since (nothing but the planning write's COMMIT can change it: other writes wait for the file),
   * else as applyAll does. */
  applyPlan(plan: HeadPlan, changes: readonly { id: string; row: HeadRow | null }[]): void {
    if (plan.version === this.version) this.take(plan);
    else this.applyAll(changes);
  }

  private take(m: { rows: HeadRow[]; bound: HeadPlace | null }): void {
    if (m.bound) this.setBound(m.bound);
    this.rows.length = 0;
    for (const r of m.rows) this.rows.push(r);
    this.ids.clear();
    for (const r of m.rows) this.ids.set(r.id, r);
    this.version++;
  }

  /** The rows and the bound of the head with these changes applied at once (applyAll). */
  private merged(changes: readonly { id: string; row: HeadRow | null }[]): { rows: HeadRow[]; bound: HeadPlace | null } {
    const last = new Map<string, HeadRow | null>();
    for (const c of changes) last.set(c.id, c.row);
    const kept = this.rows.filter((r) => !last.has(r.id));
    const bound = this.bound;
    const added: HeadRow[] = [];
    for (const row of last.values()) if (row && (bound === null || this.compare(row, bound) < 0)) added.push(row);
    this.sortRows(added);
    // The first HEAD_ROWS + 1 of both (the one after HEAD_ROWS becomes the bound). Each added row's
    // place among the kept ones is found by galloping from the last one's (the kept rows between
    // are copied without comparing): a later page's few rows before the bound cost a few
    // comparisons each instead of one per kept row.
    const merged: HeadRow[] = [];
    let i = 0;
    for (const b of added) {
      const end = Math.min(this.keptBefore(kept, i, b), i + HEAD_ROWS + 1 - merged.length);
      while (i < end) merged.push(kept[i++] as HeadRow);
      if (merged.length > HEAD_ROWS) break;
      merged.push(b);
    }
    while (merged.length <= HEAD_ROWS && i < kept.length) merged.push(kept[i++] as HeadRow);
    return { rows: merged, bound: merged.length > HEAD_ROWS ? (merged.pop() as HeadRow) : null };
  }

  /** The index of the first of `rows` (in order) from `from` on that does not come before `place`:
   * doubling steps from `from`, then a binary search in the last step. */
  private keptBefore(rows: readonly HeadRow[], from: number, place: HeadPlace): number {
    let lo = from;
    let step = 1;
    let hi = from;
    while (hi < rows.length && this.compare(rows[hi] as HeadRow, place) < 0) {
      lo = hi + 1;
      hi = from + step;
      step *= 2;
    }
    hi = Math.min(hi, rows.length);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compare(rows[mid] as HeadRow, place) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Sorts rows in this head's order. A one-key order compares numbers, and text and ids without a
   * character from U+D800 on, with JavaScript's own comparison (the same order there, see
   * `narrow`), which halves the sort of a pulled page's rows; anything else with compare. */
  private sortRows(rows: HeadRow[]): void {
    if (this.positions.length !== 1) {
      rows.sort((a, b) => this.compare(a, b));
      return;
    }
    const sign = this.dir === 'asc' ? 1 : -1;
    const plain = (v: SqlValue): boolean => typeof v === 'number' || (typeof v === 'string' && !WIDE.test(v));
    const keyed = rows.map((row) => ({ row, k: row.k[0] as SqlValue, plain: plain(row.k[0] as SqlValue) && !WIDE.test(row.id) }));
    keyed.sort((a, b) => {
      if (!a.plain || !b.plain || typeof a.k !== typeof b.k) return this.compare(a.row, b.row);
      if (a.k !== b.k) return (a.k < b.k ? -1 : 1) * sign;
      return a.row.id === b.row.id ? 0 : a.row.id < b.row.id ? -1 : 1;
    });
    keyed.forEach((x, i) => (rows[i] = x.row));
  }

  /** How many rows of the list come at or before `place`. */
  private position(place: HeadPlace): number {
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compare(this.rows[mid] as HeadRow, place) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * The live rows after `place` (from the first without one) that the head holds, in order, and
   * whether they are all the live rows after it (no bound); null when `place` is not before the
   * bound (the rows after it are not known here).
   */
  after(place: HeadPlace | null): { rows: HeadRow[]; all: boolean } | null {
    if (place && this.bound !== null && this.compare(place, this.bound) >= 0) return null;
    return { rows: place ? this.rows.slice(this.position(place)) : this.rows.slice(), all: this.bound === null };
  }
}

/** A head's rows and bound with a write's changes applied (OrderHead.plan), and the head's version
 * they were worked out from. */
export type HeadPlan = { version: number; rows: HeadRow[]; bound: HeadPlace | null };

/** A write's changes to the heads, applied once SQLite has committed it; `plans`: the heads whose
 * merge the write worked out before (LoadHeads.plan). */
export type HeadChanges = { started: OrderHead[]; changes: { head: OrderHead; id: string; row: HeadRow | null }[]; plans?: Map<OrderHead, HeadPlan> };

/** The heads of one documents table, by index name. */
export class LoadHeads {
  private readonly byIndex = new Map<string, OrderHead[]>();

  get size(): number {
    return this.byIndex.size;
  }

  /** Every head, those a write starts included. */
  all(started: readonly OrderHead[]): OrderHead[] {
    return [...[...this.byIndex.values()].flat(), ...started];
  }

  /** The head of an order over these Store column keys, all in direction `dir`, ties by id
   * ascending, if one is kept. */
  find(keys: readonly string[], dir: Dir): OrderHead | undefined {
    for (const heads of this.byIndex.values()) {
      const head = heads.find((h) => h.dir === dir);
      if (head && head.index.keys.length === keys.length && head.index.keys.every((k, i) => k === keys[i])) return head;
    }
    return undefined;
  }

  /** Applies a committed write. */
  commit(w: HeadChanges): void {
    // A load's heads replace any an earlier load left.
    for (const h of w.started) this.byIndex.set(h.index.name, w.started.filter((x) => x.index.name === h.index.name));
    for (const [head, changes] of LoadHeads.byHead(w.changes)) {
      const plan = w.plans?.get(head);
      if (plan) head.applyPlan(plan, changes);
      else head.applyAll(changes);
    }
  }

  /**
   * Works out, one head a step (a generator's yields: a pulled page's write runs over turns of the
   * event loop), what the write's COMMIT will make of each head that HEAD_BATCH or more of its
   * changes touch, into `w.plans`; commit then only takes each plan. Before, the merges (a sort
   * of each head's changes) ran in the COMMIT's turn: 38-57 ms of CPU on the first pages of an
   * initial sync, when every lead comes before every head's bound.
   */
  static *plan(w: HeadChanges): Generator<void> {
    const plans = new Map<OrderHead, HeadPlan>();
    for (const [head, changes] of LoadHeads.byHead(w.changes)) {
      const plan = head.plan(changes);
      if (plan) plans.set(head, plan);
      yield;
    }
    w.plans = plans;
  }

  private static byHead(changes: HeadChanges['changes']): Map<OrderHead, { id: string; row: HeadRow | null }[]> {
    const byHead = new Map<OrderHead, { id: string; row: HeadRow | null }[]>();
    for (const c of changes) {
      let list = byHead.get(c.head);
      if (!list) byHead.set(c.head, (list = []));
      list.push(c);
    }
    return byHead;
  }

  /** The index is built (or the table dropped): its heads are not needed any more. */
  drop(index: string): void {
    this.byIndex.delete(index);
  }

  clear(): void {
    this.byIndex.clear();
  }

  /**
   * The heads as JSON, to keep in the file over a close while the load's indexes are still to be
   * built (doc-table.ts): without them the next open reads each such order's pages by sorting the
   * whole table until its index is built (1-1.4 s for the leads table's first page at 1M leads,
   * the UI bench's first navigations after an import). `stamp` says which state of the table they
   * describe; restore takes them only for that state.
   */
  record(stamp: string): string {
    const heads = [...this.byIndex.values()].flat().map((h) => ({
      index: h.index.name,
      dir: h.dir,
      rows: h.rows.map((r) => [r.r, r.id, r.k.map(valueToJson)]),
      bound: h.boundPlace ? [h.boundPlace.id, h.boundPlace.k.map(valueToJson)] : null,
    }));
    return JSON.stringify({ stamp, heads });
  }

  /**
   * The heads of a record (record) whose stamp is `stamp`, for the indexes `wanted` names (by index
   * name: the index and where its keys are among a row's Store values); none for another stamp or a
   * record this version cannot read. The caller checks the rows against the table.
   */
  static fromRecord(json: string, stamp: string, wanted: ReadonlyMap<string, { index: StoreIndex; positions: readonly number[] }>): OrderHead[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      return [];
    }
    const rec = parsed as { stamp?: unknown; heads?: unknown };
    if (rec.stamp !== stamp || !Array.isArray(rec.heads)) return [];
    const out: OrderHead[] = [];
    for (const h of rec.heads as { index: string; dir: Dir; rows: [number, string, unknown[]][]; bound: [string, unknown[]] | null }[]) {
      const w = wanted.get(h.index);
      if (!w || (h.dir !== 'asc' && h.dir !== 'desc')) continue;
      const rows = h.rows.map(([r, id, k]): HeadRow => ({ r, id, k: k.map(valueFromJson) }));
      out.push(OrderHead.restored(w.index, h.dir, w.positions, rows, h.bound ? { id: h.bound[0], k: h.bound[1].map(valueFromJson) } : null));
    }
    return out;
  }
}

/** A stored value in JSON: numbers that JSON cannot write (NULL_KEY, -Infinity) and blobs tagged. */
const valueToJson = (v: SqlValue): unknown => (typeof v === 'number' ? (Number.isFinite(v) ? v : { n: String(v) }) : typeof v === 'string' ? v : { b: v.toString('base64') });

const valueFromJson = (v: unknown): SqlValue => {
  if (typeof v === 'number' || typeof v === 'string') return v;
  const o = v as { n?: string; b?: string };
  if (typeof o.n === 'string') return Number(o.n);
  return Buffer.from(o.b ?? '', 'base64');
};
