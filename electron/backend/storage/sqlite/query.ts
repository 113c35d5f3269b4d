/**
 * RxDB queries and counts on the documents table, the way RxDB's memory storage answers them (so
 * both give the same answers, which test/unit/sqlite-storage-differential.test.ts checks): read
 * the index range of RxDB's own query plan (getQueryPlan), filter with RxDB's query matcher unless
 * the plan says the index alone satisfies the selector, and
 * - when the plan says index order is the sort order, stop after skip + limit matches;
 * - otherwise RxDB re-sorts with its sort comparator. The memory storage reads the whole range for
 *   that; here, when the sort's leading fields are the index's leading fields (after fields the
 *   selector pins with $eq), all in one direction, the range is read in that direction (SQLite
 *   walks an index backwards as cheaply) and stops once skip + limit matches are read and the next
 *   one no longer ties with the last on those fields; the rows read are then sorted. Only while
 *   every row's index string orders it as the comparator does (DocTable.faithful): RxDB pads
 *   strings with spaces, so "a" and "a\t" compare one way as values and the other as index
 *   strings. "Newest first" (sort createdAt desc over an index on createdAt) reads one page.
 */
import { getQueryMatcher, getSchemaByObjectPath, getSortComparator } from 'rxdb';
import type { FilledMangoQuery, PreparedQuery, RxJsonSchema, RxQueryPlan, RxStorageCountResult } from 'rxdb';
import type { Doc, DocTable } from './doc-table.ts';
import { indexName, keyRange } from './index-columns.ts';
import type { IndexColumn } from './index-columns.ts';

type Direction = 'asc' | 'desc';

function columnOf(table: DocTable, index: readonly string[]): IndexColumn {
  const column = table.column(index);
  if (!column) throw new Error(`Query on ${table.name} names index [${indexName(index)}], which its schema does not declare.`);
  return column;
}

/** Fields every matching document has one value of: pinned by $eq to a scalar in the selector. */
function pinnedFields(schema: RxJsonSchema<Doc>, query: FilledMangoQuery<unknown>, plan: RxQueryPlan): Set<string> {
  const pinned = new Set<string>();
  const selector = query.selector as Record<string, unknown>;
  for (const field of plan.index) {
    const condition = selector[field];
    if (condition === null || typeof condition !== 'object' || !('$eq' in condition)) continue;
    const value: unknown = condition.$eq;
    const type = getSchemaByObjectPath(schema, field).type;
    const scalarValue = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
    if (scalarValue && (type === 'string' || type === 'number' || type === 'integer' || type === 'boolean')) pinned.add(field);
  }
  return pinned;
}

/** How to read a re-sorted query's range in sort order (see the file comment), or null. */
function orderedRead(schema: RxJsonSchema<Doc>, query: FilledMangoQuery<unknown>, plan: RxQueryPlan, table: DocTable, column: IndexColumn): { direction: Direction; ties: (a: Doc, b: Doc) => boolean } | null {
  const pinned = pinnedFields(schema, query, plan);
  const fields = plan.index.filter((f) => !pinned.has(f));
  const sort = query.sort.flatMap((part) => Object.entries(part).map(([field, direction]) => ({ field, direction: direction as Direction }))).filter((s) => !pinned.has(s.field));
  const first = sort[0];
  if (!first) return null;
  let shared = 0;
  while (shared < sort.length && sort[shared]?.field === fields[shared] && sort[shared]?.direction === first.direction) shared++;
  if (shared === 0 || !table.faithful(column)) return null;
  const prefix = sort.slice(0, shared).map((s) => ({ [s.field]: s.direction }));
  const compare = getSortComparator(schema, { ...query, sort: prefix } as FilledMangoQuery<Doc>);
  // RxDB's comparator returns undefined, not 0, for documents that tie on every field.
  return { direction: first.direction, ties: (a, b) => (compare(a, b) as number | undefined) === undefined };
}

export function runQuery(table: DocTable, schema: RxJsonSchema<Doc>, prepared: PreparedQuery<unknown>): Doc[] {
  const { query, queryPlan: plan } = prepared;
  const skip = query.skip > 0 ? query.skip : 0;
  const limit = typeof query.limit === 'number' ? query.limit : Infinity;
  if (limit <= 0) return [];
  const column = columnOf(table, plan.index);
  const range = keyRange(schema, plan);
  const matches = plan.selectorSatisfiedByIndex ? null : getQueryMatcher(schema, query as FilledMangoQuery<Doc>);
  const want = skip + limit;
  let docs: Doc[] = [];
  if (plan.sortSatisfiedByIndex) {
    if (!matches) docs = [...table.scan(column, range, 'asc', skip, limit)];
    else {
      for (const d of table.scan(column, range, 'asc')) {
        if (!matches(d)) continue;
        docs.push(d);
        if (docs.length >= want) break;
      }
      docs = docs.slice(skip);
    }
  } else {
    const ordered = limit === Infinity ? null : orderedRead(schema, query, plan, table, column);
    if (ordered) {
      let boundary: Doc | null = null;
      for (const d of table.scan(column, range, ordered.direction)) {
        if (matches && !matches(d)) continue;
        if (boundary && !ordered.ties(boundary, d)) break;
        docs.push(d);
        if (!boundary && docs.length >= want) boundary = d;
      }
    } else {
      for (const d of table.scan(column, range, 'asc')) if (!matches || matches(d)) docs.push(d);
    }
    docs = docs.sort(getSortComparator(schema, query as FilledMangoQuery<Doc>)).slice(skip, want);
  }
  for (const d of docs) table.cache.set(String((d as Record<string, unknown>)[table.primaryPath]), d);
  return docs;
}

/** `fast` from the index alone when the plan says the index satisfies the selector; otherwise the
 * range is read and matched, and the count says `slow` (RxDB then refuses it unless the database
 * allows slow counts), as RxDB's Dexie storage does. Skip and limit are ignored, as RxDB's memory
 * storage does (RxDB refuses them on count queries). */
export function runCount(table: DocTable, schema: RxJsonSchema<Doc>, prepared: PreparedQuery<unknown>): RxStorageCountResult {
  const { query, queryPlan: plan } = prepared;
  const column = columnOf(table, plan.index);
  const range = keyRange(schema, plan);
  if (plan.selectorSatisfiedByIndex) return { count: table.count(column, range), mode: 'fast' };
  const matches = getQueryMatcher(schema, query as FilledMangoQuery<Doc>);
  let count = 0;
  for (const d of table.scan(column, range, 'asc')) if (matches(d)) count++;
  return { count, mode: 'slow' };
}
