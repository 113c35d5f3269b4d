/** The Store port's query language evaluated in JavaScript: conditions, sort order, keyset cursors
 * and pages. The one semantics of every JavaScript store (memory, the desktop's RxDB store, staged
 * writes); the SQL store writes the same rules in sync-server/cond-sql.ts. */
import type { Cond, DuplicatePage, DuplicatePageOptions, Page, Query, Sort } from './store.ts';
import { isLiveIdentity, keyKindOf, storedKey } from './intake/identity.ts';
import type { IdentityKind } from './intake/identity.ts';
import { DomainError } from './errors.ts';
import { unstorableText } from './model/common.ts';
import { foldForSort } from './text-sort.ts';

type Scalar = string | number | boolean | null;

/** Reads one (top-level or dotted) field of a document. */
export type Getter = (doc: unknown) => unknown;

const getters = new Map<string, Getter>();

/** The reader of a field path, made once per path: scans evaluate the same few paths millions of
 * times, so a top-level field is one property read and a dotted path is split once. */
export function fieldGetter(path: string): Getter {
  let get = getters.get(path);
  if (get) return get;
  const kind = keyKindOf(path);
  if (kind) {
    // An identity key is computed from the document, as every store computes the one it indexes.
    get = (doc) => storedKey(doc, kind);
  } else if (!path.includes('.')) {
    get = (doc) => (doc !== null && typeof doc === 'object' ? (doc as Record<string, unknown>)[path] : undefined);
  } else {
    const parts = path.split('.');
    get = (doc) => {
      let cur: unknown = doc;
      for (const part of parts) {
        if (cur === null || typeof cur !== 'object') return undefined;
        cur = (cur as Record<string, unknown>)[part];
      }
      return cur;
    };
  }
  // Paths come from code (and variables.<column id>): bounded, but never let a cache grow without end.
  if (getters.size < 10_000) getters.set(path, get);
  return get;
}

export function fieldValue(doc: unknown, path: string): unknown {
  return fieldGetter(path)(doc);
}

/** A field's value as conditions compare it: a missing field is null. */
export const normValue = (v: unknown): Scalar => (v === undefined ? null : (v as Scalar));

/** Total order used by every store: null first, then numbers, then strings by code unit. */
export function compareValues(a: unknown, b: unknown): number {
  const x = normValue(a);
  const y = normValue(b);
  if (x === y) return 0;
  if (x === null) return -1;
  if (y === null) return 1;
  if (typeof x === 'number' && typeof y === 'number') return x < y ? -1 : 1;
  const sx = String(x);
  const sy = String(y);
  return sx < sy ? -1 : sx > sy ? 1 : 0;
}

export type Predicate = (doc: unknown) => boolean;

type Contains = Extract<Cond, { op: 'contains' }>;

/** Ways a store may answer part of a condition faster. Each must give exactly the answer of the
 * default (the desktop store keeps each document's lower-cased search text). Null: the default. */
export type CompileOptions = { contains?: (cond: Contains) => Predicate | null };

const RANGE_TESTS = {
  lt: (c: number) => c < 0,
  lte: (c: number) => c <= 0,
  gt: (c: number) => c > 0,
  gte: (c: number) => c >= 0,
} as const;

/**
 * The one semantics of the Store port's conditions in JavaScript (the memory store, the desktop's
 * RxDB store, staged writes of a transaction; cond-sql.ts writes the same as SQL), compiled once per
 * condition into a predicate: `eq`/`neq`/`in` compare with strict equality, a missing field counting
 * as null; ranges never match null; `contains` is a case-insensitive substring of any string field;
 * `has` is membership of an array field.
 */
export function compileCond(cond: Cond, opts: CompileOptions = {}): Predicate {
  switch (cond.op) {
    case 'eq': {
      const get = fieldGetter(cond.field);
      const value = cond.value;
      return (d) => normValue(get(d)) === value;
    }
    case 'neq': {
      const get = fieldGetter(cond.field);
      const value = cond.value;
      return (d) => normValue(get(d)) !== value;
    }
    case 'in': {
      const get = fieldGetter(cond.field);
      // `in` lists can hold tens of thousands of ids (a campaign's leads): a Set, built once.
      const values = new Set<Scalar>(cond.values);
      return (d) => values.has(normValue(get(d)));
    }
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte': {
      const get = fieldGetter(cond.field);
      const value = cond.value;
      const test = RANGE_TESTS[cond.op];
      return (d) => {
        const v = get(d);
        return v !== null && v !== undefined && test(compareValues(v, value));
      };
    }
    case 'contains': {
      const faster = opts.contains?.(cond);
      if (faster) return faster;
      const needle = cond.value.toLowerCase();
      const gets = cond.fields.map(fieldGetter);
      return (d) =>
        gets.some((g) => {
          const v = g(d);
          return typeof v === 'string' && v.toLowerCase().includes(needle);
        });
    }
    case 'has': {
      const get = fieldGetter(cond.field);
      const value = cond.value;
      return (d) => {
        const v = get(d);
        return Array.isArray(v) && v.includes(value);
      };
    }
    case 'and': {
      const parts = cond.conds.map((c) => compileCond(c, opts));
      if (parts.length === 1) return parts[0] as Predicate;
      return (d) => {
        for (const p of parts) if (!p(d)) return false;
        return true;
      };
    }
    case 'or': {
      const parts = cond.conds.map((c) => compileCond(c, opts));
      return (d) => {
        for (const p of parts) if (p(d)) return true;
        return false;
      };
    }
    case 'not': {
      const inner = compileCond(cond.cond, opts);
      return (d) => !inner(d);
    }
  }
}

/** Conditions compiled by `matches`, by identity: a condition is a value, never changed once used. */
const compiled = new WeakMap<Cond, Predicate>();

/** Whether `doc` satisfies `cond` (compiled on first use, so a loop over documents compiles once). */
export function matches(doc: unknown, cond: Cond | undefined): boolean {
  if (!cond) return true;
  let pred = compiled.get(cond);
  if (!pred) compiled.set(cond, (pred = compileCond(cond)));
  return pred(doc);
}

/** The reader of the value a sort compares: the field, folded for a `collate: 'text'` sort. */
export function sortGetter(s: Sort): Getter {
  const get = fieldGetter(s.field);
  if (s.collate !== 'text') return get;
  return (doc) => {
    const v = get(doc);
    return typeof v === 'string' ? foldForSort(v) : v;
  };
}

export type Comparator = (a: unknown, b: unknown) => number;

/** The order of a query: its sort keys, ties broken by id ascending (so pages are stable). */
export function sortKeyCompare(orderBy: readonly Sort[]): Comparator {
  const keys = orderBy.map((s) => ({ get: sortGetter(s), sign: s.dir === 'asc' ? 1 : -1 }));
  const id = fieldGetter('id');
  return (a, b) => {
    for (const k of keys) {
      const c = compareValues(k.get(a), k.get(b));
      if (c !== 0) return c * k.sign;
    }
    return compareValues(id(a), id(b));
  };
}

export type CursorState = { k: unknown[]; id: string };

const toBase64Url = (s: string): string => {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
};
const fromBase64Url = (s: string): string => {
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
};

/** A tampered cursor is refused, not handed to a store: its sort values are scalars (what
 * encodeCursor writes) and its text has no NUL or lone surrogate (PostgreSQL refuses those). */
function cursorValuesAreStorable(state: CursorState): boolean {
  const scalars = [...state.k, state.id];
  return scalars.every((v) => v === null || typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && unstorableText(v) === null));
}

/** Keyset cursor: the sort values and id of the last document of a page. */
export function encodeCursor(doc: unknown, orderBy: readonly Sort[]): string {
  const state: CursorState = { k: orderBy.map((s) => normValue(fieldValue(doc, s.field))), id: String(fieldValue(doc, 'id')) };
  return toBase64Url(JSON.stringify(state));
}

export function decodeCursor(cursor: string, orderBy: readonly Sort[]): CursorState {
  try {
    const parsed: unknown = JSON.parse(fromBase64Url(cursor));
    if (
      parsed !== null && typeof parsed === 'object' && Array.isArray((parsed as CursorState).k) &&
      (parsed as CursorState).k.length === orderBy.length && typeof (parsed as CursorState).id === 'string' &&
      cursorValuesAreStorable(parsed as CursorState)
    ) {
      return parsed as CursorState;
    }
  } catch {
    // fall through to the refusal below
  }
  throw new DomainError('INVALID_INPUT', 'The cursor is not valid for this query; start again without a cursor.', { field: 'cursor' });
}

/** A document-shaped probe holding a cursor's sort values (and id), to compare documents against
 * with the query's comparator. */
export function cursorProbe(state: CursorState, orderBy: readonly Sort[]): Record<string, unknown> {
  const probe: Record<string, unknown> = { id: state.id };
  orderBy.forEach((s, i) => {
    const parts = s.field.split('.');
    let cur = probe;
    for (let j = 0; j < parts.length - 1; j++) {
      const p = parts[j] as string;
      const next = cur[p];
      if (next === null || typeof next !== 'object') cur[p] = {};
      cur = cur[p] as Record<string, unknown>;
    }
    cur[parts[parts.length - 1] as string] = state.k[i];
  });
  return probe;
}

/** Runs a query over an in-memory list of (live, same-workspace) documents. */
export function runQuery<T>(docs: Iterable<T>, query: Query = {}): Page<T> {
  const orderBy = query.orderBy ?? [];
  const pred = query.where ? compileCond(query.where) : null;
  const cmp = sortKeyCompare(orderBy);
  let list: T[] = [];
  for (const d of docs) if (!pred || pred(d)) list.push(d);
  list.sort(cmp);
  if (query.cursor) {
    const probe = cursorProbe(decodeCursor(query.cursor, orderBy), orderBy);
    list = list.filter((d) => cmp(d, probe) > 0);
  }
  if (query.limit === undefined || list.length <= query.limit) return { docs: list, nextCursor: null };
  const page = list.slice(0, query.limit);
  const last = page[page.length - 1];
  return { docs: page, nextCursor: last === undefined ? null : encodeCursor(last, orderBy) };
}

/** A page of duplicateGroups' cursor: the last key of the page before. */
export function encodeKeyCursor(key: string): string {
  return toBase64Url(JSON.stringify({ after: key }));
}

export function decodeKeyCursor(cursor: string): string {
  try {
    const parsed: unknown = JSON.parse(fromBase64Url(cursor));
    const after = parsed !== null && typeof parsed === 'object' ? (parsed as { after?: unknown }).after : undefined;
    if (typeof after === 'string' && unstorableText(after) === null) return after;
  } catch {
    // fall through to the refusal below
  }
  throw new DomainError('INVALID_INPUT', 'The cursor is not valid for this list of duplicates; start again without a cursor.', { field: 'cursor' });
}

/** A refused page size: duplicateGroups pages by a positive whole number of groups. */
export function checkGroupLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new DomainError('INVALID_INPUT', `limit must be a positive whole number (got ${String(limit)}).`, { field: 'limit' });
}

/** Groups of a store's duplicates page built from candidate (key, lead) pairs: live leads only,
 * groups of two or more, in key order after the cursor, ids in id order. The reference semantics
 * of StoreReader.duplicateGroups, and the JavaScript stores' whole implementation. */
export function duplicateGroupsOf(leads: Iterable<unknown>, kind: IdentityKind, opts: DuplicatePageOptions): DuplicatePage {
  checkGroupLimit(opts.limit);
  const after = opts.cursor ? decodeKeyCursor(opts.cursor) : null;
  const byKey = new Map<string, string[]>();
  for (const doc of leads) {
    if (!isLiveIdentity(doc)) continue;
    const key = storedKey(doc, kind);
    if (key === null || (after !== null && key <= after)) continue;
    const id = fieldValue(doc, 'id');
    if (typeof id !== 'string') continue;
    const ids = byKey.get(key);
    if (ids) ids.push(id);
    else byKey.set(key, [id]);
  }
  const keys = [...byKey].filter(([, ids]) => ids.length > 1).map(([k]) => k);
  keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const page = keys.slice(0, opts.limit);
  const groups = page.map((key) => ({ key, leadIds: (byKey.get(key) ?? []).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) }));
  const last = page[page.length - 1];
  return { groups, nextCursor: keys.length > opts.limit && last !== undefined ? encodeKeyCursor(last) : null };
}
