/**
 * Columns for the desktop Store's queries (the Cond language of shared/store.ts), beside RxDB's
 * own index columns: a field of the document copied into a column of its documents table when the
 * document is written, in the same statement, so that SQLite indexes can filter and order by it.
 *
 * Why not RxDB indexes for these: RxDB's index strings cannot hold null (tagId, pipelineStageId,
 * followUpAt... are nullable), know no case- and accent-folded order (`collate: 'text'`), nor an
 * array's members (groupIds); and declaring them in the collection schemas would bump every
 * schema's version, which makes RxDB rewrite every document at the next open. These columns are a
 * storage setting: a changed set is rebuilt from the stored documents (doc-table.ts).
 *
 * A column holds the field's value encoded so that SQLite's order and equality are those of
 * shared/query.ts (compareValues): null and missing as -Infinity (below every number and text,
 * as null sorts first; no SQL NULL, so row values and NOT behave), numbers as numbers, strings
 * through sortableKey (UTF-16 order), `collate: 'text'` columns through foldForSort first,
 * booleans as one-byte blobs (false < true, never equal to a number or a text). A value the
 * encoding cannot order like compareValues (an object or array, a string in a number field, ...)
 * is "odd": the row's bit is set in the `sodd` column, and while any row of a column is odd,
 * conditions and orders on that column are left to JavaScript. Bit 0 of `sodd` marks an id that
 * SQLite's text order would not order as JavaScript does.
 *
 * A member field (an array, e.g. groupIds) gets a side table of (value, rowid) pairs, kept in the
 * same transaction, for the Store's `has` condition.
 */
import { keyKindOf } from '../../../../shared/intake/identity.ts';
import { fieldGetter } from '../../../../shared/query.ts';
import { foldForSort } from '../../../../shared/text-sort.ts';
import type { Doc } from './doc-table.ts';
import { hash32, hasWideCharacter, sortableKey } from './index-columns.ts';

/** The Store columns of one collection, a setting of the storage (per collection name). */
export type StoreLayout = {
  /** Fields copied into columns; `fold`: the field as `collate: 'text'` sorts it. */
  columns: readonly { field: string; fold?: boolean }[];
  /** Array fields with a side table of their members. */
  members?: readonly string[];
  /** SQLite indexes over Store columns, on live documents only. */
  indexes?: readonly StoreIndexSpec[];
};

export type StoreIndexSpec = {
  /** Column keys (`field`, or `fold:field`). */
  keys: readonly string[];
  /** Whether pages are read in this index's order: the id is then appended (ties are broken by
   * id). False: it only finds rows (smaller, cheaper to keep up). Default true. */
  ordered?: boolean;
  /** Built once a bulk load is over rather than kept up row by row during it: for keys that
   * arrive in random order, where every row costs a page write in each such index (see
   * doc-table.ts, "loading"). See AfterLoad. */
  afterLoad?: AfterLoad;
  /** False for an index that never narrows a search down (every row of a desktop's file has the
   * same workspace): counted through, never read rows from. Default true. */
  narrows?: boolean;
};

/**
 * Which bulk loads leave an index out (doc-table.ts, "loading"):
 * - 'any': every load;
 * - 'pull': a load of pulled documents (an initial sync) only;
 * - 'local': a load of local documents (an import) only: an index a sync keeps up cheaply;
 * - 'probed': every load, for a one-column index that look-ups probe with `eq`/`in` (a lead's
 *   identity keys: every call of an import looks up its people among the leads of the calls
 *   before). While it is missing, those probes are answered from an in-memory map of the column's
 *   values to rows (load-probes.ts), kept for a table of up to PROBE_ROWS rows; a local load into a
 *   larger table keeps the index up.
 * A change of it rewrites nothing: the record of a table's layout ignores it (sameLayout).
 */
export type AfterLoad = 'any' | 'pull' | 'local' | 'probed';

/** Whether a load of pulled (or local) documents leaves out an index of this kind, before the
 * size check of 'probed' ones (doc-table.ts). */
export const leftOutOfLoad = (afterLoad: AfterLoad | null, pulled: boolean): boolean =>
  afterLoad === 'any' || afterLoad === 'probed' || afterLoad === (pulled ? 'pull' : 'local');

export type SqlValue = number | string | Buffer;

/** What null (and a missing field) is stored as: below every number, text and blob. */
export const NULL_KEY = -Infinity;

const FALSE_KEY = Buffer.from([0]);
const TRUE_KEY = Buffer.from([1]);

export type ValueKind = 'string' | 'number' | 'boolean';

/** A value as a Store column holds it, or undefined when the encoding cannot order it faithfully
 * (objects, arrays, non-finite numbers). */
export function encodeKey(v: unknown, fold: boolean): SqlValue | undefined {
  if (v === null || v === undefined) return NULL_KEY;
  switch (typeof v) {
    case 'string':
      return sortableKey(fold ? foldForSort(v) : v);
    case 'number':
      return Number.isFinite(v) ? v : undefined;
    case 'boolean':
      return v ? TRUE_KEY : FALSE_KEY;
    default:
      return undefined;
  }
}

/** The kind of a scalar value, or null for null/undefined and non-scalars. */
export const kindOf = (v: unknown): ValueKind | null =>
  typeof v === 'string' ? 'string' : typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : null;

export type StoreColumn = {
  /** `field` or `fold:field`. */
  key: string;
  field: string;
  fold: boolean;
  /** The one kind of value the schema allows besides null. */
  kind: ValueKind;
  /** Its column in the documents table. */
  column: string;
  /** Its bit in `sodd` (1..30). */
  bit: number;
  /** Reads the column's field of a document. */
  get: (doc: Doc) => unknown;
};

export type MemberTable = { field: string; table: string; valuesOf: (doc: Doc) => readonly string[] };

/** No members (shared: never changed). */
export const NO_MEMBERS: readonly string[] = Object.freeze([]);

export type StoreIndex = { name: string; keys: readonly string[]; columns: readonly string[]; ordered: boolean; afterLoad: AfterLoad | null; narrows: boolean };

export type ResolvedLayout = { columns: StoreColumn[]; members: MemberTable[]; indexes: StoreIndex[] };

/** Bit 0 of `sodd`: the id. */
export const ID_BIT = 1;

/** Whether SQLite orders an id as JavaScript does (no character whose UTF-16 and UTF-8 orders differ). */
export const idFaithful = (id: string): boolean => !hasWideCharacter(id);

type SchemaPart = { type?: unknown; properties?: Record<string, SchemaPart> };

/** The part of a JSON schema describing a (dotted) field. */
function partOf(schema: object, field: string): SchemaPart | undefined {
  let part: SchemaPart | undefined = schema;
  for (const p of field.split('.')) part = part?.properties?.[p];
  return part;
}

/** The non-null scalar kind a schema gives a (dotted) field, or null. A lead's identity key
 * (`key:email`...) is not in the document: the Store computes it (shared/query.ts fieldGetter), a
 * string. */
function schemaKind(schema: object, field: string): ValueKind | null {
  if (keyKindOf(field) !== null) return 'string';
  const part = partOf(schema, field);
  const types = (Array.isArray(part?.type) ? part.type : [part?.type]).filter((t) => t !== 'null');
  if (types.length !== 1) return null;
  const t: unknown = types[0];
  return t === 'string' ? 'string' : t === 'number' || t === 'integer' ? 'number' : t === 'boolean' ? 'boolean' : null;
}

const keyOf = (c: { field: string; fold?: boolean }): string => (c.fold ? `fold:${c.field}` : c.field);

/** A layout checked against the collection's schema, with column and table names for `table`. */
export function resolveLayout(table: string, schema: object, layout: StoreLayout | undefined): ResolvedLayout {
  if (!layout) return { columns: [], members: [], indexes: [] };
  if (layout.columns.length > 30) throw new Error(`${table}: at most 30 Store columns per collection (the layout has ${layout.columns.length}).`);
  const used = new Set<string>();
  // A field this schema does not type is left out: an older schema version of the collection
  // (opened to migrate its documents) may not have it. layoutProblems() checks a layout in full.
  const usable = layout.columns.filter((spec) => {
    const kind = schemaKind(schema, spec.field);
    return kind !== null && (!spec.fold || kind === 'string');
  });
  const columns = usable.map((spec, i): StoreColumn => {
    const key = keyOf(spec);
    if (used.has(key)) throw new Error(`${table}: the Store column ${key} is listed twice.`);
    used.add(key);
    const kind = schemaKind(schema, spec.field) ?? 'string';
    const fold = spec.fold === true;
    const get = fieldGetter(spec.field);
    return {
      key,
      field: spec.field,
      fold,
      kind,
      column: `s_${hash32(key)}`,
      bit: 1 << (i + 1),
      get,
    };
  });
  const members = (layout.members ?? []).filter((field) => isArrayField(schema, field)).map((field): MemberTable => {
    const get = fieldGetter(field);
    return {
      field,
      table: `${table}_m_${hash32(field)}`,
      valuesOf: (doc) => {
        const v = get(doc);
        if (doc._deleted || !Array.isArray(v)) return NO_MEMBERS;
        // `has` tests for a string (Array.prototype.includes): other members never match one. A
        // lead's one list (the usual case) without the set and the copies.
        if (v.length === 1) return typeof v[0] === 'string' ? [v[0]] : NO_MEMBERS;
        return [...new Set(v.filter((x): x is string => typeof x === 'string'))];
      },
    };
  });
  const byKey = new Map(columns.map((c) => [c.key, c]));
  const indexes = (layout.indexes ?? []).filter((spec) => spec.keys.every((k) => byKey.has(k))).map((spec): StoreIndex => {
    const ordered = spec.ordered !== false;
    return {
      name: `${table}_i_${hash32(`${spec.keys.join(',')}${ordered ? '' : '/'}`)}`,
      keys: spec.keys,
      columns: spec.keys.map((k) => (byKey.get(k) as StoreColumn).column),
      ordered,
      afterLoad: spec.afterLoad ?? null,
      narrows: spec.narrows !== false,
    };
  });
  return { columns, members, indexes };
}

const isArrayField = (schema: object, field: string): boolean => partOf(schema, field)?.type === 'array';

/** What in a layout a schema cannot serve (fields it does not type as one scalar, members that are
 * not arrays, indexes over unknown columns); empty when the layout is usable as written. */
export function layoutProblems(schema: object, layout: StoreLayout): string[] {
  const out: string[] = [];
  const keys = new Set<string>();
  for (const spec of layout.columns) {
    const kind = schemaKind(schema, spec.field);
    if (!kind) out.push(`${spec.field} has no single scalar type`);
    else if (spec.fold && kind !== 'string') out.push(`${spec.field} folds but is ${kind}`);
    else keys.add(keyOf(spec));
  }
  for (const m of layout.members ?? []) if (!isArrayField(schema, m)) out.push(`${m} is not an array`);
  for (const i of layout.indexes ?? []) for (const k of i.keys) if (!keys.has(k)) out.push(`index [${i.keys.join(', ')}] names ${k}, not a column`);
  return out;
}

/**
 * Writes a document's Store column values into `out` from `at` on, and returns its odd bits
 * (ID_BIT for its id): one pass per column, as every written document pays it. Tombstones have no
 * odd bits: the Store never reads them.
 */
export function storeValues(layout: ResolvedLayout, id: string, doc: Doc, out: unknown[], at: number): number {
  let odd = 0;
  const columns = layout.columns;
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i] as StoreColumn;
    const v = c.get(doc);
    const key = encodeKey(v, c.fold);
    out[at + i] = key ?? NULL_KEY;
    if (key === undefined || (v !== null && v !== undefined && kindOf(v) !== c.kind)) odd |= c.bit;
  }
  if (doc._deleted) return 0;
  return idFaithful(id) ? odd : odd | ID_BIT;
}

/** The odd bits of a document (see storeValues). */
export const storeOddOf = (layout: ResolvedLayout, id: string, doc: Doc): number => storeValues(layout, id, doc, [], 0);

/** A description of a resolved layout, stored in the file to notice a changed one. */
export function layoutRecord(layout: ResolvedLayout): string {
  return JSON.stringify({ c: layout.columns.map((c) => [c.key, c.kind, c.column]), m: layout.members.map((m) => m.table), i: layout.indexes.map((i) => [i.name, i.afterLoad]) });
}

/**
 * Whether two layout records (layoutRecord) describe the same columns, member tables and indexes,
 * whatever loads leave the indexes out: a table recorded with other `afterLoad` kinds needs no
 * rebuild (its rows and indexes are the same), only its record written again.
 */
export function sameLayout(a: string, b: string): boolean {
  if (a === b) return true;
  if (a === '' || b === '') return false;
  const shape = (record: string): string => {
    const r = JSON.parse(record) as { c: unknown; m: unknown; i: [string, unknown][] };
    return JSON.stringify({ c: r.c, m: r.m, i: r.i.map(([name]) => name) });
  };
  return shape(a) === shape(b);
}
