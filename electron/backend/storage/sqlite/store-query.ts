/**
 * The desktop Store's reads (shared/store.ts: a condition, an order, a keyset cursor, a limit) on a
 * documents table, reading what the answer needs and not the whole collection. The answers are
 * shared/query.ts's: conditions are translated to SQL (store-sql.ts) where the Store columns can
 * say them and every document read is also tested with compileCond; orders are SQL's where the
 * columns order as compareValues does (store-columns.ts), else JavaScript sorts the matches.
 *
 * Where to start reading, for a page of an order SQL can give (limit L, about N rows):
 * - along an index of the order (after columns pinned by `eq`), stopping after L matches: right
 *   when matches are common, since about L x N / matches rows are read;
 * - from the matches of one condition (an index range, a member table, the text index), sorted:
 *   right when they are few. Each such condition is counted up to a cap ~ sqrt(L x N) (the point
 *   where both cost about the same); the smallest under the cap is read, else the index is walked.
 *   When no other condition is under the cap, a text search first walks four pages of rows of the
 *   order (firstWalk), testing the condition in the walk's statement: a common text's page ends
 *   there, or its matches so far show the walk ends it before the count's cap, so the text is not
 *   counted (up to ~7,000 entries of the text index at 1M leads, 0.3-1.7 ms, wasted on a text the
 *   walk pages anyway).
 * Without a usable index for the order, or without a limit, the smallest condition under a larger
 * cap is read, else SQLite plans the query itself. While a bulk load has left the order's index
 * out, a page within the first rows the load keeps of that order (load-heads.ts) is read from
 * them; a page SQLite would have to sort the whole table for is read in the file's reader thread
 * when the table is large (storeQueryOffLoop), not on the event loop.
 *
 * Ties of the order are broken by id ascending. An index (keys..., id) read backwards gives ties
 * in descending id order, so a descending order is read in groups of equal keys: a chunk read
 * backwards is reordered group by group, and a group a chunk cuts is read forwards on its own
 * (a large tie, such as one import's creation time, never has to be sorted whole). A group that
 * the index alone shows to be long is read forwards from the start, without a chunk read
 * backwards first.
 *
 * Long (~470 lines) because the strategies above share their cursor, order and driver types and are
 * chosen between in one place; the SQL of conditions is in store-sql.ts.
 */
import { compileCond, cursorProbe, sortKeyCompare } from '../../../../shared/query.ts';
import type { CursorState } from '../../../../shared/query.ts';
import type { Cond, Sort } from '../../../../shared/store.ts';
import type { Doc, DocTable } from './doc-table.ts';
import { compareCodePoints, compareStored } from './load-heads.ts';
import { encodeKey, kindOf } from './store-columns.ts';
import type { SqlValue, StoreColumn, StoreIndex } from './store-columns.ts';
import { condSql, conditionColumn, foldedColumn, foldedInList, matchExpression, textCondition, trigramSearchable } from './store-sql.ts';
import type { Sql } from './store-sql.ts';

/** When the reading strategies switch. Any setting gives the same answers (the Store conformance
 * test runs with tiny values to take every path); these are tuned for 100k-1M leads. */
export const STORE_QUERY_TUNING = {
  /** Rows per statement of a walk. */
  chunk: 256,
  /** A walk whose order's keys go one way and its ties the other reads a group of equal keys
   * forwards at once when it has more than this many entries (a tie of one import's 5,000
   * leads), and shorter groups in chunks read backwards (fewer statements: a chunk of a
   * ranking's scores holds ten groups of a hundred leads at 100k). */
  longGroup: 256,
  /** Bounds of the cap a condition's match count is compared with, for a page of an indexed order. */
  minCap: 256,
  maxCap: 20_000,
  /** The cap without an indexed order or without a limit (matches read and sorted in memory). */
  unorderedCap: 50_000,
  /** The rows a page of a text search walks along its order before the text's matches are
   * counted, in pages (store-query.ts firstWalk; at most the cap; 0: none). */
  firstWalk: 4,
  /** Documents fetched per statement. */
  docBatch: 512,
  /** An `in` list longer than this is taken as listing about as many rows as it has values (an
   * import's look-up of thousands of emails: counting would read it twice); a shorter one is
   * counted like any condition, since its values may each hold many rows (a stage category's few
   * stage ids hold a tenth of the leads each). */
  countedInList: 64,
  /** From this many rows on, a page SQLite must sort the whole table for (its order's index is
   * missing) is read in the file's reader thread (storeQueryOffLoop): ~1 µs a row on this thread. */
  offLoopRows: 20_000,
  /** Rows past the page such a read takes, so writes committed while it ran can be merged in. */
  offLoopMargin: 64,
  /** A text's waiting matches the reader thread found (findWaitingTexts) serve its next searches
   * without reading again while at most this many documents were written after that read (an
   * import's call): those rows are tested on this thread, ~1 µs each. */
  waitingReuseRows: 5000,
};

export type StoreRead = {
  where: Cond | undefined;
  orderBy: readonly Sort[];
  cursor: CursorState | null;
  /** Documents wanted; Infinity for all. */
  limit: number;
  /** Keep the documents read in the table's cache (a page on screen), or not (a bulk read). */
  cache: boolean;
};

export type StoreAnswer = {
  docs: Doc[];
  /** Per document: parsed for this read only (nobody else holds it). */
  fresh: boolean[];
};

type Dir = 'asc' | 'desc';

/** One key of an order SQL can give: a Store column, or the id. */
type Key = { expr: string; dir: Dir; column: StoreColumn | null };

/** An order SQL gives: the keys, then the id in `tie` direction. */
type Order = { keys: Key[]; tie: Dir };

/** A row's place in the order: its key values (as stored) and id. */
type Place = { k: SqlValue[]; id: string };

/** A row read: its rowid, id and keys; `ok`: whether it passed the condition a walk was given to
 * test (walkRows `tested`), true without one. */
type RowRef = { r: number; id: string; k: SqlValue[]; ok: boolean };

const q = (name: string): string => `"${name}"`;

const flatten = (c: Cond | undefined): Cond[] => (!c ? [] : c.op === 'and' ? c.conds.flatMap(flatten) : [c]);

/** The order as SQL over the table, or null when a key has no faithful column (JavaScript sorts). */
function sqlOrder(table: DocTable, orderBy: readonly Sort[]): Order | null {
  if (!table.idsFaithful()) return null;
  const keys: Key[] = [];
  for (const s of orderBy) {
    if (s.field === 'id' && s.collate !== 'text') {
      // Keys after a unique one never decide anything.
      return { keys, tie: s.dir };
    }
    const c = table.storeColumn(s.collate === 'text' ? `fold:${s.field}` : s.field);
    if (!c || !table.storeFaithful(c)) return null;
    keys.push({ expr: `t.${q(c.column)}`, dir: s.dir, column: c });
  }
  return { keys, tie: 'asc' };
}

/** A cursor's sort values as stored, or null when one could not be stored faithfully. */
function placeOf(order: Order, cursor: CursorState): Place | null {
  const k: SqlValue[] = [];
  for (let i = 0; i < order.keys.length; i++) {
    const key = order.keys[i] as Key;
    const v = cursor.k[i];
    if (!key.column) return null;
    const kind = kindOf(v);
    if (kind !== null && kind !== key.column.kind) return null;
    const enc = encodeKey(v, key.column.fold);
    if (enc === undefined) return null;
    k.push(enc);
  }
  return { k, id: cursor.id };
}

/** `(a1..an) op (b1..bn)` over keys with one direction, or the general form (any directions). */
function afterSql(order: Order, place: Place): Sql {
  const terms: string[] = [];
  const params: SqlValue[] = [];
  const n = order.keys.length;
  for (let i = 0; i <= n; i++) {
    const eqs = order.keys.slice(0, i).map((k) => `${k.expr} = ?`);
    const last = i < n ? `${(order.keys[i] as Key).expr} ${(order.keys[i] as Key).dir === 'asc' ? '>' : '<'} ?` : `t.id ${order.tie === 'asc' ? '>' : '<'} ?`;
    terms.push([...eqs, last].join(' AND '));
    params.push(...place.k.slice(0, i), i < n ? (place.k[i] as SqlValue) : place.id);
  }
  return { sql: terms.map((t) => `(${t})`).join(' OR '), params, exact: true };
}

const orderSql = (order: Order): string => [...order.keys.map((k) => `${k.expr} ${k.dir.toUpperCase()}`), `t.id ${order.tie.toUpperCase()}`].join(', ');

const keysSelect = (order: Order | null): string => (order ? order.keys.map((k, i) => `, ${k.expr} AS k${i}`).join('') : '');

function rowRefs(rows: Record<string, unknown>[], n: number): RowRef[] {
  return rows.map((row) => {
    const k: SqlValue[] = [];
    for (let i = 0; i < n; i++) k.push(row[`k${i}`] as SqlValue);
    return { r: row.r as number, id: row.id as string, k, ok: row.ok !== 0 };
  });
}

/** The `eq` conjuncts pinning a Store column to one value: the column and the value as stored. */
function pinnedConds(table: DocTable, where: Cond | undefined): { column: StoreColumn; value: SqlValue }[] {
  const out: { column: StoreColumn; value: SqlValue }[] = [];
  for (const c of flatten(where)) {
    if (c.op !== 'eq' || c.field === 'id') continue;
    const column = conditionColumn(table, c.field);
    const value = column ? encodeKey(c.value, false) : undefined;
    if (column && value !== undefined) out.push({ column, value });
  }
  return out;
}

/** Conditions pinning a Store column to one value (`eq` conjuncts), by column key. */
const pinnedKeys = (table: DocTable, where: Cond | undefined): Set<string> => new Set(pinnedConds(table, where).map((p) => p.column.key));

/** An index that gives an order, once the columns before the order's (`lead`) are pinned. */
type WalkIndex = { name: string; lead: readonly string[] };

/** An index that gives `order` once its leading columns are pinned. */
function walkIndex(table: DocTable, order: Order, pinned: Set<string>): WalkIndex | null {
  const keys = order.keys.map((k) => (k.column as StoreColumn).key);
  let best: StoreIndex | null = null;
  for (const idx of table.layout.indexes) {
    if (!idx.ordered || !table.indexReady(idx.name)) continue;
    const lead = idx.keys.length - keys.length;
    if (lead < 0 || !idx.keys.slice(lead).every((k, i) => k === keys[i]) || !idx.keys.slice(0, lead).every((k) => pinned.has(k))) continue;
    if (!best || idx.keys.length > best.keys.length) best = idx;
  }
  if (best) return { name: best.name, lead: best.keys.slice(0, best.keys.length - keys.length) };
  // The unique index on the id gives the bare id order.
  return keys.length === 0 ? { name: `${table.table}_id`, lead: [] } : null;
}

/** The `eq` conjuncts of `where` on the index's pinned columns, as SQL on the index alone. */
function pinnedSql(table: DocTable, where: Cond | undefined, index: WalkIndex): Sql {
  const terms = pinnedConds(table, where).filter((p) => index.lead.includes(p.column.key));
  if (terms.length === 0) return { sql: '1', params: [], exact: true };
  return { sql: terms.map((p) => `t.${q(p.column.column)} = ?`).join(' AND '), params: terms.map((p) => p.value), exact: true };
}

/** A condition whose matches can be listed on their own (through an index, a member table or the
 * text index), as SQL selecting their rowids as `r`. `exact`: it lists exactly the matches of
 * `source` (a conjunct of the query's condition), which then needs no second test. */
type Driver = { sql: string; params: SqlValue[]; size: number | null; source: Cond; exact: boolean };

function drivers(table: DocTable, where: Cond | undefined): Driver[] {
  const out: Driver[] = [];
  const t = q(table.table);
  const leading = (column: StoreColumn): StoreIndex | undefined => table.layout.indexes.find((i) => i.columns[0] === column.column && i.narrows && table.indexReady(i.name));
  for (const c of flatten(where)) {
    if ((c.op === 'eq' || c.op === 'in') && c.field === 'id') {
      const ids = [...new Set(c.op === 'eq' ? [c.value] : c.values)].filter((v): v is string => typeof v === 'string');
      const s = condSql(table, { op: 'in', field: 'id', values: ids }, 'set');
      out.push({ sql: `SELECT t.rowid AS r FROM ${t} AS t WHERE ${s.sql}`, params: s.params, size: ids.length, source: c, exact: true });
      continue;
    }
    const column = sameColumn(table, c);
    const idx = column ? leading(column) : undefined;
    if (column && idx) {
      const s = condSql(table, merged(c), 'set');
      // A long `in` list is taken as about as many rows as values (counting it would read it twice).
      const size = c.op === 'in' && c.values.length > STORE_QUERY_TUNING.countedInList ? c.values.length : null;
      if (s.exact && s.sql !== '1') out.push({ sql: `SELECT t.rowid AS r FROM ${t} AS t INDEXED BY ${q(idx.name)} WHERE t.deleted = 0 AND (${s.sql})`, params: s.params, size, source: c, exact: true });
      continue;
    }
    // eq/in on a column whose index a load left out, answered by its probe map (load-probes.ts):
    // the rows it names, each tested in SQL (the map may name more).
    const probed = column ? probedRows(table, column, c) : null;
    if (column && probed) {
      const s = condSql(table, merged(c), 'set');
      if (s.exact) out.push({ sql: `SELECT t.rowid AS r FROM json_each(?) AS j CROSS JOIN ${t} AS t ON t.rowid = j.value WHERE t.deleted = 0 AND (${s.sql})`, params: [JSON.stringify(probed), ...s.params], size: probed.length, source: c, exact: true });
      continue;
    }
    // eq/in on a field found through its folded column (a name): the folded matches hold every match.
    const folded = (c.op === 'eq' || c.op === 'in') && c.field !== 'id' ? foldedColumn(table, c.field) : null;
    const foldedIdx = folded ? leading(folded) : undefined;
    if (folded && foldedIdx && (c.op === 'eq' || c.op === 'in')) {
      const s = foldedInList(folded, c.op === 'eq' ? [c.value] : c.values);
      out.push({ sql: `SELECT t.rowid AS r FROM ${t} AS t INDEXED BY ${q(foldedIdx.name)} WHERE t.deleted = 0 AND (${s.sql})`, params: s.params, size: c.op === 'in' && c.values.length > STORE_QUERY_TUNING.countedInList ? c.values.length : null, source: c, exact: false });
      continue;
    }
    if (c.op === 'has') {
      const m = table.memberTable(c.field);
      if (m) out.push({ sql: `SELECT rid AS r FROM ${q(m.table)} WHERE value = ?`, params: [c.value], size: null, source: c, exact: true });
      continue;
    }
    if (c.op === 'contains') {
      const text = textCondition(table, c);
      const index = table.text;
      if (text && index && trigramSearchable(text.needle)) {
        out.push({ ...index.matchedRows(matchExpression(text.fields, index.fields, text.needle), text.fields, text.needle), size: null, source: c, exact: true });
      }
    }
  }
  // Drivers whose size is known first: the others are then counted no further than it.
  return out.sort((a, b) => Number(a.size === null) - Number(b.size === null));
}

/** The one faithful Store column a condition is about (eq, in, a range, or an or of those on one
 * field), or null. */
function sameColumn(table: DocTable, c: Cond): StoreColumn | null {
  if (c.op === 'eq' || c.op === 'in' || c.op === 'lt' || c.op === 'lte' || c.op === 'gt' || c.op === 'gte') return c.field === 'id' ? null : conditionColumn(table, c.field);
  if (c.op === 'or' && c.conds.length > 0) {
    const cols = c.conds.map((p) => (p.op === 'eq' || p.op === 'in' ? sameColumn(table, p) : null));
    const first = cols[0];
    return first && cols.every((x) => x === first) ? first : null;
  }
  return null;
}

/** The rows a probe map (DocTable.probeRows) names for an eq/in (or an or of those) on `column`,
 * or null when the condition is another or no map answers. */
function probedRows(table: DocTable, column: StoreColumn, c: Cond): number[] | null {
  const m = merged(c);
  if (m.op !== 'eq' && m.op !== 'in') return null;
  const keys: SqlValue[] = [];
  for (const v of m.op === 'eq' ? [m.value] : m.values) {
    const k = encodeKey(v, false);
    if (k === undefined) return null;
    keys.push(k);
  }
  return table.probeRows(column.column, keys);
}

/** An or of eq/in on one field as one in (one index range list). */
function merged(c: Cond): Cond {
  if (c.op !== 'or') return c;
  const values = c.conds.flatMap((p) => (p.op === 'eq' ? [p.value] : p.op === 'in' ? [...p.values] : []));
  const field = (c.conds[0] as { field: string }).field;
  return { op: 'in', field, values };
}

type Smallest = { d: Driver; size: number } | null;

/** The driver of `listed` listing the fewest rows, if one lists fewer than `cap` (and than `best`,
 * one found before) and at most a quarter of the table (reading most of the table through an
 * index costs more than reading it in order). */
function smallestDriver(table: DocTable, listed: readonly Driver[], cap: number, before: Smallest = null): Smallest {
  let best = before;
  const limit = Math.min(cap, Math.floor(table.rowEstimate() / 4) + 1);
  for (const d of listed) {
    const size = probe(table, d, best ? Math.min(limit, best.size) : limit);
    if (size < limit && (!best || size < best.size)) best = { d, size };
  }
  return best;
}

/** How many rows a driver lists, counting no further than `cap`. */
function probe(table: DocTable, d: Driver, cap: number): number {
  if (d.size !== null) return d.size;
  const stmt = table.statement(`probe ${d.sql}`, () => `SELECT count(*) FROM (${d.sql} LIMIT ?)`).pluck();
  return Number(stmt.get(...d.params, cap));
}

function run(table: DocTable, sql: string, params: readonly SqlValue[]): Record<string, unknown>[] {
  return table.statement(sql, () => sql).all(...params) as Record<string, unknown>[];
}

/** The condition rows listed by a driver must still pass: all of it, or (for a driver that lists
 * exactly its conjunct's matches) the other conjuncts, so a long `in` list is tested once. */
function restOf(table: DocTable, where: Cond | undefined, d: Driver): Sql {
  if (!where) return { sql: '1', params: [], exact: true };
  if (!d.exact) return condSql(table, where, 'row');
  return condSql(table, { op: 'and', conds: flatten(where).filter((c) => c !== d.source) }, 'row');
}

/** Rows of the smallest driver that pass the SQL condition, in order (or in no order). */
function candidateRows(table: DocTable, d: Driver, where: Sql, order: Order | null, place: Place | null, limit: number): RowRef[] {
  const after = order && place ? afterSql(order, place) : null;
  const sql =
    `SELECT t.rowid AS r, t.id AS id${keysSelect(order)} FROM (${d.sql}) AS d CROSS JOIN ${q(table.table)} AS t ON t.rowid = d.r ` +
    `WHERE t.deleted = 0 AND (${where.sql})${after ? ` AND (${after.sql})` : ''}${order ? ` ORDER BY ${orderSql(order)}` : ''}${limit !== Infinity ? ' LIMIT ?' : ''}`;
  const params = [...d.params, ...where.params, ...(after?.params ?? []), ...(limit !== Infinity ? [limit] : [])];
  return rowRefs(run(table, sql, params), order?.keys.length ?? 0);
}

/** The rows of `where` after `place` in `order`, as SQLite plans them (rowid, id, keys). */
function orderedSql(table: DocTable, where: Sql, order: Order, place: Place | null, limit: number): { sql: string; params: SqlValue[] } {
  const after = place ? afterSql(order, place) : null;
  const sql = `SELECT t.rowid AS r, t.id AS id${keysSelect(order)} FROM ${q(table.table)} AS t WHERE t.deleted = 0 AND (${where.sql})${after ? ` AND (${after.sql})` : ''} ORDER BY ${orderSql(order)}${limit !== Infinity ? ' LIMIT ?' : ''}`;
  return { sql, params: [...where.params, ...(after?.params ?? []), ...(limit !== Infinity ? [limit] : [])] };
}

/** Rows SQLite finds by its own plan, in order; or, without an order, every row in rowid chunks. */
function* planRows(table: DocTable, where: Sql, order: Order | null, place: Place | null, limit: number): Generator<RowRef[]> {
  const t = q(table.table);
  if (order) {
    const page = orderedSql(table, where, order, place, limit);
    yield rowRefs(run(table, page.sql, page.params), order.keys.length);
    return;
  }
  // One statement, read in batches (a condition read as a set is then read once, not per batch).
  const sql = `SELECT t.rowid AS r, t.id AS id FROM ${t} AS t WHERE t.deleted = 0 AND (${where.sql})`;
  let batch: RowRef[] = [];
  for (const row of table.statement(sql, () => sql).iterate(...where.params) as Iterable<{ r: number; id: string }>) {
    batch.push({ r: row.r, id: row.id, k: [], ok: true });
    if (batch.length >= STORE_QUERY_TUNING.docBatch) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/**
 * Rows in `order` along `index`, from `place` on, chunk by chunk. Keys and tie in one direction:
 * one range read forwards or backwards. Keys in one direction and the tie in the other: groups of
 * equal keys (see the file comment); `pinned` (the index's leading columns' values) lets the
 * index alone tell where a long group starts. `tested`: a condition each row read is tested with
 * (RowRef `ok`), not filtered by.
 */
function* walkRows(table: DocTable, index: WalkIndex, pinned: Sql, where: Sql, order: Order, place: Place | null, chunkOf: () => number, tested?: Sql): Generator<RowRef[]> {
  const from = `FROM ${q(table.table)} AS t INDEXED BY ${q(index.name)} WHERE t.deleted = 0 AND (${where.sql})`;
  const select = `SELECT t.rowid AS r, t.id AS id${keysSelect(order)}${tested ? `, (${tested.sql}) AS ok` : ''} ${from}`;
  // The parameters of the select's test, then of its condition.
  const wp = [...(tested?.params ?? []), ...where.params];
  const n = order.keys.length;
  const dir = n > 0 ? (order.keys[0] as Key).dir : order.tie;
  const tuple = (withId: boolean): string => `(${[...order.keys.map((k) => k.expr), ...(withId ? ['t.id'] : [])].join(', ')})`;
  const marks = (count: number): string => `(${new Array<string>(count).fill('?').join(', ')})`;
  const cmp = (d: Dir): string => (d === 'asc' ? '>' : '<');
  const by = (d: Dir, withKeys: boolean): string => [...(withKeys ? order.keys.map((k) => `${k.expr} ${d.toUpperCase()}`) : []), `t.id ${d.toUpperCase()}`].join(', ');

  if (order.tie === dir) {
    // One direction: (keys, id) past the place, in index order.
    const first = `${select} ORDER BY ${by(dir, true)} LIMIT ?`;
    const next = `${select} AND ${tuple(true)} ${cmp(dir)} ${marks(n + 1)} ORDER BY ${by(dir, true)} LIMIT ?`;
    let at = place;
    for (;;) {
      const m = chunkOf();
      const rows = rowRefs(at ? run(table, next, [...wp, ...at.k, at.id, m]) : run(table, first, [...wp, m]), n);
      if (rows.length > 0) yield rows;
      const last = rows[rows.length - 1];
      if (!last || rows.length < m) return;
      at = { k: last.k, id: last.id };
    }
  }

  // Keys one way, ties the other: whole groups of equal keys.
  const eqKeys = order.keys.map((k) => `${k.expr} = ?`).join(' AND ');
  const restOfGroup = `${select} AND ${eqKeys} AND t.id ${cmp(order.tie)} ? ORDER BY t.id ${order.tie.toUpperCase()} LIMIT ?`;
  const wholeGroup = `${select} AND ${eqKeys} ORDER BY t.id ${order.tie.toUpperCase()} LIMIT ?`;
  const firstGroups = `${select} ORDER BY ${by(dir, true)} LIMIT ?`;
  const nextGroups = `${select} AND ${tuple(false)} ${cmp(dir)} ${marks(n)} ORDER BY ${by(dir, true)} LIMIT ?`;
  const sameKeys = (a: SqlValue[], b: SqlValue[]): boolean => a.every((v, i) => (Buffer.isBuffer(v) ? Buffer.isBuffer(b[i]) && v.equals(b[i] as Buffer) : v === b[i]));

  /** The rest of the group `keys` after id `after` (all of it for null), chunk by chunk. */
  function* group(keys: SqlValue[], after: string | null): Generator<RowRef[]> {
    let id = after;
    for (;;) {
      const m = chunkOf();
      const rows = rowRefs(id === null ? run(table, wholeGroup, [...wp, ...keys, m]) : run(table, restOfGroup, [...wp, ...keys, id, m]), n);
      if (rows.length > 0) yield rows;
      const last = rows[rows.length - 1];
      if (!last || rows.length < m) return;
      id = last.id;
    }
  }

  // The keys of the entries at offsets 0 and `longGroup` past `beyond`, from the index alone: when
  // they are the same, the next group is long and is read forwards at once. A chunk read backwards
  // would test the group's last rows only to drop them (the chunk cut it), then read it forwards:
  // twice the rows, and in a tie of an import's 5,000 leads, read in id order (at random in the
  // file), more pages than the cache holds. (Groups need keys: the index is a Store index, which
  // holds live rows only.)
  const keysAt = (after: boolean): string =>
    `SELECT * FROM (SELECT ${order.keys.map((k, i) => `${k.expr} AS k${i}`).join(', ')} FROM ${q(table.table)} AS t INDEXED BY ${q(index.name)} WHERE t.deleted = 0 AND (${pinned.sql})${after ? ` AND ${tuple(false)} ${cmp(dir)} ${marks(n)}` : ''} ORDER BY ${by(dir, true)} LIMIT 1 OFFSET ?)`;
  const peekFirst = `${keysAt(false)} UNION ALL ${keysAt(false)}`;
  const peekNext = `${keysAt(true)} UNION ALL ${keysAt(true)}`;
  const longGroupAfter = (after: SqlValue[] | null): SqlValue[] | null => {
    const far = STORE_QUERY_TUNING.longGroup;
    const found = after ? run(table, peekNext, [...pinned.params, ...after, 0, ...pinned.params, ...after, far]) : run(table, peekFirst, [...pinned.params, 0, ...pinned.params, far]);
    if (found.length < 2) return null;
    const [a, b] = found.map((row) => order.keys.map((_, i) => row[`k${i}`] as SqlValue));
    return a && b && sameKeys(a, b) ? a : null;
  };

  let beyond: SqlValue[] | null = null;
  if (place) {
    yield* group(place.k, place.id);
    beyond = place.k;
  }
  for (;;) {
    const long = longGroupAfter(beyond);
    if (long) {
      yield* group(long, null);
      beyond = long;
      continue;
    }
    const m = Math.max(chunkOf(), 2);
    const rows = rowRefs(beyond ? run(table, nextGroups, [...wp, ...beyond, m]) : run(table, firstGroups, [...wp, m]), n);
    if (rows.length === 0) return;
    // Split into groups of equal keys; a full chunk may have cut its last group.
    const groups: RowRef[][] = [];
    for (const row of rows) {
      const g = groups[groups.length - 1];
      if (g && sameKeys((g[0] as RowRef).k, row.k)) g.push(row);
      else groups.push([row]);
    }
    const cut = rows.length === m ? groups.pop() : undefined;
    for (const g of groups) yield g.reverse();
    // A chunk shorter than asked for was the end.
    if (!cut) return;
    const keys = (cut[0] as RowRef).k;
    yield* group(keys, null);
    beyond = keys;
  }
}

/** The documents of `rows` that pass `pred`, appended to `out` until it holds `want`. */
function take(table: DocTable, rows: readonly { r: number; id: string }[], pred: ((d: unknown) => boolean) | null, want: number, cache: boolean, out: StoreAnswer): void {
  const batch = STORE_QUERY_TUNING.docBatch;
  for (let i = 0; i < rows.length && out.docs.length < want; i += batch) {
    const part = rows.slice(i, i + batch);
    const { docs, fresh } = table.docsOf(part.map((r) => ({ rowid: r.r, id: r.id })), cache);
    for (let j = 0; j < docs.length && out.docs.length < want; j++) {
      const d = docs[j] as Doc;
      if (pred && !pred(d)) continue;
      out.docs.push(d);
      out.fresh.push(fresh[j] === true);
    }
  }
}

/**
 * A page from the head a bulk load keeps of `order` while its index is missing (load-heads.ts):
 * into `out` when the head's rows after `place` hold the page (or are all the rows there are);
 * false, with `out` untouched, when there is no such head or it cannot fill the page.
 */
function fromHead(table: DocTable, order: Order, place: Place | null, pred: ((d: unknown) => boolean) | null, want: number, cache: boolean, out: StoreAnswer): boolean {
  const dir = order.keys[0]?.dir;
  if (!dir || order.tie !== 'asc' || order.keys.some((k) => k.dir !== dir)) return false;
  const head = table.heads.find(order.keys.map((k) => (k.column as StoreColumn).key), dir);
  const rows = head?.after(place);
  if (!rows) return false;
  const page: StoreAnswer = { docs: [], fresh: [] };
  take(table, rows.rows, pred, want, cache, page);
  if (page.docs.length < want && !rows.all) return false;
  out.docs.push(...page.docs);
  out.fresh.push(...page.fresh);
  return true;
}

/** A page of an order SQL gives that no index serves (nor a head): SQLite reads and sorts every
 * match, ~1 µs a row (0.6-0.9 s at 1M leads). */
type Scan = { order: Order; place: Place | null; setForm: Sql; rowForm: Sql; want: number; pred: ((d: unknown) => boolean) | null; cache: boolean };

export function storeQuery(table: DocTable, read: StoreRead): StoreAnswer {
  const r = answerOrScan(table, read);
  return 'docs' in r ? r : scanHere(table, r);
}

/**
 * storeQuery, except that a page SQLite would sort the whole table for, in a table of
 * offLoopRows or more, is read in the file's reader thread (StorageFile.readInWorker) while this
 * thread's event loop goes on: the rows of the page, and the table's last sequence number, from one
 * snapshot. Writes committed here while it ran (rows with a later sequence number) are merged in,
 * so the page is the one the table holds when it resolves; when they moved too many of its rows
 * out, it is read again (after three tries, here).
 */
export async function storeQueryOffLoop(table: DocTable, read: StoreRead): Promise<StoreAnswer> {
  await findWaitingTexts(table, read.where);
  const first = answerOrScan(table, read);
  if ('docs' in first) return first;
  if (table.rowEstimate() < STORE_QUERY_TUNING.offLoopRows) return scanHere(table, first);
  for (let attempt = 0; attempt < 3; attempt++) {
    const page = await scanInWorker(table, first);
    // A write meanwhile made a key of the order odd (store-columns.ts): JavaScript orders now.
    if (!sqlOrder(table, read.orderBy)) return storeQuery(table, read);
    if (page) return page;
  }
  return scanHere(table, first);
}

/**
 * While texts a load left waiting for the text index (fts.ts), the waiting rows matching each
 * `contains` of `where` that the index would answer are found in the file's reader thread
 * (StorageFile.readInWorker), so that the query's SQL tests on this thread only those rows and the
 * ones written since, not every waiting row (~0.5 s at 100k on the event loop). A text read
 * before, with few documents written since (STORE_QUERY_TUNING.waitingReuseRows), is not read
 * again: a list refreshed after each call of an import, or a page after the first, searches the
 * same text.
 */
async function findWaitingTexts(table: DocTable, where: Cond | undefined): Promise<void> {
  const index = table.text;
  if (!where || !index?.waiting) return;
  const texts: { fields: string[]; needle: string }[] = [];
  const visit = (c: Cond): void => {
    if (c.op === 'and' || c.op === 'or') c.conds.forEach(visit);
    else if (c.op === 'not') visit(c.cond);
    else if (c.op === 'contains') {
      const text = textCondition(table, c);
      if (text && trigramSearchable(text.needle)) texts.push(text);
    }
  };
  visit(where);
  const seq = table.seq;
  await Promise.all(
    texts.filter((t) => !index.foundSince(t.fields, t.needle, seq, STORE_QUERY_TUNING.waitingReuseRows)).map(async (t) => {
      const rows = await table.file.readInWorker(index.waitingReads(t.fields, t.needle));
      index.foundWaiting(t.fields, t.needle, rows);
    }),
  );
}

/** storeCount, with the waiting texts' matches found in the reader thread first (findWaitingTexts). */
export async function storeCountOffLoop(table: DocTable, where: Cond | undefined): Promise<number> {
  await findWaitingTexts(table, where);
  return storeCount(table, where);
}

function scanHere(table: DocTable, s: Scan): StoreAnswer {
  const out: StoreAnswer = { docs: [], fresh: [] };
  for (const rows of planRows(table, s.setForm, s.order, s.place, s.want)) take(table, rows, s.pred, s.want, s.cache, out);
  return out;
}

/** Rows in an order: its keys (as stored) each in its direction, then the id in the tie's. */
function compareRows(order: Order): (a: RowRef, b: RowRef) => number {
  return (a, b) => {
    for (let i = 0; i < order.keys.length; i++) {
      const c = compareStored(a.k[i] as SqlValue, b.k[i] as SqlValue);
      if (c !== 0) return (order.keys[i] as Key).dir === 'asc' ? c : -c;
    }
    const c = compareCodePoints(a.id, b.id);
    return order.tie === 'asc' ? c : -c;
  };
}

/** A value read in the worker: blobs arrive as Uint8Array. */
const fromWorker = (row: Record<string, unknown>): Record<string, unknown> => {
  for (const [k, v] of Object.entries(row)) if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return row;
};

/** The page of `s` read in the reader thread, with the writes since its snapshot merged in; null
 * when it must be read again. */
async function scanInWorker(table: DocTable, s: Scan): Promise<StoreAnswer | null> {
  const n = s.order.keys.length;
  const limit = s.want + STORE_QUERY_TUNING.offLoopMargin;
  const page = orderedSql(table, s.setForm, s.order, s.place, limit);
  const [snapshot, rows] = await table.file.readInWorker([{ sql: `SELECT coalesce(max(seq), 0) AS s FROM ${q(table.table)}`, params: [] }, page]);
  const seq = Number(snapshot?.[0]?.s ?? 0);
  let refs = rowRefs((rows ?? []).map(fromWorker), n);
  // From here on synchronous: the table does not change under the merge.
  if (table.seq > seq) {
    const after = s.place ? afterSql(s.order, s.place) : null;
    const sql = `SELECT t.rowid AS r, t.id AS id${keysSelect(s.order)}, (t.deleted = 0 AND (${s.rowForm.sql})${after ? ` AND (${after.sql})` : ''}) AS ok FROM ${q(table.table)} AS t WHERE t.seq > ?`;
    const changed = run(table, sql, [...s.rowForm.params, ...(after?.params ?? []), seq]);
    const ids = new Set(changed.map((c) => c.id as string));
    const kept = refs.filter((r) => !ids.has(r.id));
    // A full read whose unchanged rows no longer fill the page may miss rows past its end.
    if (refs.length === limit && kept.length < s.want) return null;
    refs = [...kept, ...rowRefs(changed.filter((c) => c.ok === 1), n)].sort(compareRows(s.order));
  }
  const out: StoreAnswer = { docs: [], fresh: [] };
  try {
    take(table, refs.slice(0, s.want), s.pred, s.want, s.cache, out);
  } catch {
    // A row of the snapshot is gone (a purge of tombstones since): read again.
    return null;
  }
  return out;
}

/** A driver whose size is only known by counting a text's matches in the text index. */
const isText = (d: Driver): boolean => d.size === null && d.source.op === 'contains';

/**
 * The first `rows` live rows along the order's index (from `place`), each tested with the whole
 * condition in the walk's statement (~1-2 µs a row: the text index's row is read by rowid), their
 * matches taken into `out`. Rows are counted as read, not as matched, so a text that matches
 * little costs this walk at most `rows` rows. `done`: the page is full or the order's end was reached
 * (`out` is the answer); else `at` is the last row read, where a walk goes on.
 */
function firstWalk(table: DocTable, index: WalkIndex, pinned: Sql, where: Sql, order: Order, place: Place | null, pred: ((d: unknown) => boolean) | null, want: number, rows: number, cache: boolean, out: StoreAnswer): { done: boolean; at: Place | null; scanned: number } {
  let scanned = 0;
  let at = place;
  for (const chunk of walkRows(table, index, pinned, pinned, order, place, () => Math.max(1, Math.min(STORE_QUERY_TUNING.chunk, rows - scanned)), where)) {
    scanned += chunk.length;
    const last = chunk[chunk.length - 1] as RowRef;
    at = { k: last.k, id: last.id };
    take(table, chunk.filter((r) => r.ok), pred, want, cache, out);
    if (out.docs.length >= want) return { done: true, at, scanned };
    if (scanned >= rows) return { done: false, at, scanned };
  }
  return { done: true, at, scanned };
}

/** A read's answer, or the scan it needs (see Scan). */
function answerOrScan(table: DocTable, read: StoreRead): StoreAnswer | Scan {
  const out: StoreAnswer = { docs: [], fresh: [] };
  const want = read.limit;
  if (want <= 0) return out;
  const pred = read.where ? compileCond(read.where) : null;
  let order = sqlOrder(table, read.orderBy);
  let place: Place | null = null;
  if (order && read.cursor) {
    place = placeOf(order, read.cursor);
    if (!place) order = null;
  }

  const walk = order && want !== Infinity ? walkIndex(table, order, pinnedKeys(table, read.where)) : null;
  const pinned = walk ? pinnedSql(table, read.where, walk) : null;
  const rowCount = table.rowEstimate();
  const t = STORE_QUERY_TUNING;
  const cap = walk ? Math.min(t.maxCap, Math.max(t.minCap, Math.ceil(Math.sqrt(want * rowCount)))) : t.unorderedCap;
  // The conditions other than texts are counted first (index ranges: cheap); when none is small,
  // the order's index is walked a little before any text is counted (see firstWalk). Not while
  // texts wait for the text index (fts.ts): their matches were found in the reader thread, and a
  // walk would test the waiting rows here.
  let whole: Sql | null = null;
  // The SQL of the whole condition only when read: a long `in` list costs to write.
  const rowFormOf = (): Sql => (whole ??= read.where ? condSql(table, read.where, 'row') : { sql: '1', params: [], exact: true });
  const listed = drivers(table, read.where);
  const texts = listed.filter(isText);
  let best = smallestDriver(table, listed.filter((d) => !isText(d)), cap);
  let from = place;
  let walkOn = false;
  const firstRows = Math.min(cap, Math.ceil(want * t.firstWalk));
  if (!best && walk && pinned && order && texts.length > 0 && firstRows > 0 && !table.text?.waiting) {
    const first = firstWalk(table, walk, pinned, rowFormOf(), order, place, pred, want, firstRows, read.cache, out);
    if (first.done) return out;
    from = first.at;
    // The matches it found say how far the page's end is: walk on when that is nearer than
    // counting up to the cap would read.
    const found = out.docs.length;
    walkOn = found > 0 && ((want - found) * first.scanned) / found <= cap;
  }
  if (!walkOn) best = smallestDriver(table, texts, cap, best);
  if (best) {
    // Read from the driver's matches: what a first walk found comes again, in order.
    out.docs.length = 0;
    out.fresh.length = 0;
    const rest = restOf(table, read.where, best.d);
    if (rest.sql === '0' && rest.exact) return out;
    // Rows SQL admits are all matches when the translation is exact: the SQL limit is the page.
    const sqlLimit = order && best.d.exact && rest.exact ? want : Infinity;
    take(table, candidateRows(table, best.d, rest, order, place, sqlLimit), pred, order ? want : Infinity, read.cache, out);
  } else {
    const rowForm = rowFormOf();
    if (rowForm.sql === '0' && rowForm.exact) return out;
    if (!walk && order && want !== Infinity && fromHead(table, order, place, pred, want, read.cache, out)) {
      // A page of the first rows of an order whose index a load left out.
    } else if (walk && pinned && order) {
      const chunkOf = (): number => (rowForm.exact ? Math.max(1, Math.min(want - out.docs.length, t.chunk * 8)) : t.chunk);
      for (const rows of walkRows(table, walk, pinned, rowForm, order, from, chunkOf)) {
        take(table, rows, pred, want, read.cache, out);
        if (out.docs.length >= want) break;
      }
    } else {
      const setForm = read.where ? condSql(table, read.where, 'set') : rowForm;
      if (order && rowForm.exact && want !== Infinity) return { order, place, setForm, rowForm, want, pred, cache: read.cache };
      for (const rows of planRows(table, setForm, order, place, order && rowForm.exact ? want : Infinity)) {
        take(table, rows, pred, order ? want : Infinity, read.cache, out);
        if (order && out.docs.length >= want) break;
      }
    }
  }
  if (order) return out;

  // JavaScript's order: every match was read; sort, then the cursor and the limit.
  const cmp = sortKeyCompare(read.orderBy);
  const idx = out.docs.map((_, i) => i).sort((a, b) => cmp(out.docs[a], out.docs[b]));
  let sorted = idx.map((i) => ({ doc: out.docs[i] as Doc, fresh: out.fresh[i] === true }));
  if (read.cursor) {
    const probeDoc = cursorProbe(read.cursor, read.orderBy);
    sorted = sorted.filter((x) => cmp(x.doc, probeDoc) > 0);
  }
  sorted = sorted.slice(0, want);
  return { docs: sorted.map((x) => x.doc), fresh: sorted.map((x) => x.fresh) };
}

/** How many live documents match: in SQL when the condition translates exactly, else by reading
 * the rows SQL admits and testing each. */
export function storeCount(table: DocTable, where: Cond | undefined): number {
  const best = smallestDriver(table, drivers(table, where), STORE_QUERY_TUNING.unorderedCap);
  const rest = best ? restOf(table, where, best.d) : where ? condSql(table, where, 'set') : { sql: '1', params: [], exact: true };
  if (rest.sql === '0' && rest.exact) return 0;
  if (rest.exact) {
    // Counted in SQL: through the driver's rows when there is one (SQLite would not pick a driver
    // that is another column, such as a folded name for an exact one), else as SQLite plans it.
    const sql = best
      ? `SELECT count(*) FROM (${best.d.sql}) AS d CROSS JOIN ${q(table.table)} AS t ON t.rowid = d.r WHERE t.deleted = 0 AND (${rest.sql})`
      : `SELECT count(*) FROM ${q(table.table)} AS t WHERE t.deleted = 0 AND (${rest.sql})`;
    return Number(table.statement(sql, () => sql).pluck().get(...(best ? best.d.params : []), ...rest.params));
  }
  const pred = where ? compileCond(where) : null;
  const batches = best ? [candidateRows(table, best.d, rest, null, null, Infinity)] : planRows(table, rest, null, null, Infinity);
  let n = 0;
  for (const rows of batches) {
    for (let i = 0; i < rows.length; i += STORE_QUERY_TUNING.docBatch) {
      const { docs } = table.docsOf(rows.slice(i, i + STORE_QUERY_TUNING.docBatch).map((r) => ({ rowid: r.r, id: r.id })), false);
      for (const d of docs) if (!pred || pred(d)) n++;
    }
  }
  return n;
}
