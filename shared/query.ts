/** Evaluation of the Store port's query language in plain JavaScript (memory and RxDB stores). */
import type { Cond, Page, Query, Sort } from './store.ts';
import { DomainError } from './errors.ts';
import { unstorableText } from './model/common.ts';
import { foldForSort } from './text-sort.ts';

type Scalar = string | number | boolean | null;

const pathParts = new Map<string, string[]>();

export function fieldValue(doc: unknown, path: string): unknown {
  // Scans evaluate the same few paths millions of times: no split for a top-level field, and
  // dotted paths are split once.
  if (!path.includes('.')) return doc !== null && typeof doc === 'object' ? (doc as Record<string, unknown>)[path] : undefined;
  let parts = pathParts.get(path);
  if (!parts) {
    parts = path.split('.');
    if (pathParts.size < 10_000) pathParts.set(path, parts);
  }
  let cur: unknown = doc;
  for (const part of parts) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

const norm = (v: unknown): Scalar => (v === undefined ? null : (v as Scalar));

/** Total order used by every store: null first, then numbers, then strings by code unit. */
export function compareValues(a: unknown, b: unknown): number {
  const x = norm(a);
  const y = norm(b);
  if (x === y) return 0;
  if (x === null) return -1;
  if (y === null) return 1;
  if (typeof x === 'number' && typeof y === 'number') return x < y ? -1 : 1;
  const sx = String(x);
  const sy = String(y);
  return sx < sy ? -1 : sx > sy ? 1 : 0;
}

/** `in` lists can hold tens of thousands of ids (a campaign's leads): look them up in a Set, built
 * once per list and reused while the same condition is evaluated over every document. */
const valueSets = new WeakMap<ReadonlyArray<Scalar>, { length: number; set: Set<Scalar> }>();
function valueSet(values: ReadonlyArray<Scalar>): Set<Scalar> {
  let entry = valueSets.get(values);
  // Rebuilt if the list grew or shrank since (conditions are not meant to be mutated, but be safe).
  if (!entry || entry.length !== values.length) {
    entry = { length: values.length, set: new Set(values) };
    valueSets.set(values, entry);
  }
  return entry.set;
}

export function matches(doc: unknown, cond: Cond | undefined): boolean {
  if (!cond) return true;
  switch (cond.op) {
    case 'eq':
      return norm(fieldValue(doc, cond.field)) === cond.value;
    case 'neq':
      return norm(fieldValue(doc, cond.field)) !== cond.value;
    case 'in': {
      const v = norm(fieldValue(doc, cond.field));
      return valueSet(cond.values).has(v);
    }
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte': {
      const v = fieldValue(doc, cond.field);
      if (v === null || v === undefined) return false;
      const c = compareValues(v, cond.value);
      return cond.op === 'lt' ? c < 0 : cond.op === 'lte' ? c <= 0 : cond.op === 'gt' ? c > 0 : c >= 0;
    }
    case 'contains': {
      const needle = cond.value.toLowerCase();
      return cond.fields.some((f) => {
        const v = fieldValue(doc, f);
        return typeof v === 'string' && v.toLowerCase().includes(needle);
      });
    }
    case 'has': {
      const v = fieldValue(doc, cond.field);
      return Array.isArray(v) && v.includes(cond.value);
    }
    case 'and':
      return cond.conds.every((c) => matches(doc, c));
    case 'or':
      return cond.conds.some((c) => matches(doc, c));
    case 'not':
      return !matches(doc, cond.cond);
  }
}

/** The value a sort compares: the field, folded for a `collate: 'text'` sort. */
export function sortValue(doc: unknown, s: Sort): unknown {
  const v = fieldValue(doc, s.field);
  return s.collate === 'text' && typeof v === 'string' ? foldForSort(v) : v;
}

export function sortKeyCompare(orderBy: readonly Sort[]): (a: unknown, b: unknown) => number {
  return (a, b) => {
    for (const s of orderBy) {
      const c = compareValues(sortValue(a, s), sortValue(b, s));
      if (c !== 0) return s.dir === 'asc' ? c : -c;
    }
    return compareValues(fieldValue(a, 'id'), fieldValue(b, 'id'));
  };
}

type CursorState = { k: unknown[]; id: string };

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
  const state: CursorState = { k: orderBy.map((s) => norm(fieldValue(doc, s.field))), id: String(fieldValue(doc, 'id')) };
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

/** Whether `doc` sorts strictly after the cursor position. */
export function afterCursor(doc: unknown, state: CursorState, orderBy: readonly Sort[]): boolean {
  const pseudo: Record<string, unknown> = { id: state.id };
  const cmp = sortKeyCompare(orderBy);
  const probe = { ...pseudo };
  orderBy.forEach((s, i) => setPath(probe, s.field, state.k[i]));
  return cmp(doc, probe) > 0;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i] as string;
    const next = cur[p];
    if (next === null || typeof next !== 'object') cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1] as string] = value;
}

/** Runs a query over an in-memory list of (live, same-workspace) documents. */
export function runQuery<T>(docs: Iterable<T>, query: Query = {}): Page<T> {
  const orderBy = query.orderBy ?? [];
  let list: T[] = [];
  for (const d of docs) if (matches(d, query.where)) list.push(d);
  list.sort(sortKeyCompare(orderBy));
  if (query.cursor) {
    const state = decodeCursor(query.cursor, orderBy);
    list = list.filter((d) => afterCursor(d, state, orderBy));
  }
  if (query.limit === undefined || list.length <= query.limit) return { docs: list, nextCursor: null };
  const page = list.slice(0, query.limit);
  const last = page[page.length - 1];
  return { docs: page, nextCursor: last === undefined ? null : encodeCursor(last, orderBy) };
}
