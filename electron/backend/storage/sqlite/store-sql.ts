/**
 * The Store's conditions (shared/store.ts Cond) as SQL over a documents table's Store columns
 * (store-columns.ts), member tables and text index. A translation is either exact (the rows it
 * admits are exactly the documents shared/query.ts's compileCond admits) or a superset (a part the
 * columns cannot decide is left out, `1`, and JavaScript decides it on the documents read). Every
 * expression is free of SQL NULL (columns hold NULL_KEY instead), so NOT and OR combine them as
 * JavaScript's boolean operators do.
 *
 * Two forms for the parts that live in another table (text and members): `set` reads the matches
 * once (`rowid IN (...)`: counts, and queries SQLite plans), `row` tests each row on its own (a
 * walk along an index that stops after a page must not first read every match).
 */
import type { Cond } from '../../../../shared/store.ts';
import type { DocTable } from './doc-table.ts';
import { encodeKey, kindOf, NULL_KEY } from './store-columns.ts';
import type { SqlValue, StoreColumn } from './store-columns.ts';

export type Sql = { sql: string; params: SqlValue[]; exact: boolean };

export type Form = 'set' | 'row';

/** Admits every row: the condition is left to JavaScript. */
const ANY: Sql = { sql: '1', params: [], exact: false };
const ALL: Sql = { sql: '1', params: [], exact: true };
const NONE: Sql = { sql: '0', params: [], exact: true };

/** When and how these are chosen can be changed by tests (every setting gives the same answers). */
export const STORE_SQL_TUNING = {
  /** `in` lists up to this long are written as placeholders; longer ones as one JSON array. */
  inlineList: 64,
};

const q = (name: string): string => `"${name}"`;

/** A field's Store column usable for exact conditions (present, not a folded one, every row faithful). */
export function conditionColumn(table: DocTable, field: string): StoreColumn | null {
  const c = table.storeColumn(field);
  return c && table.storeFaithful(c) ? c : null;
}

/** A field's folded column (`collate: 'text'` order), every row faithful: equal strings fold
 * equal, so `field IN (values)` is within `folded IN (folded values)`. */
export function foldedColumn(table: DocTable, field: string): StoreColumn | null {
  const c = table.storeColumn(`fold:${field}`);
  return c && table.storeFaithful(c) ? c : null;
}

/** `field IN (values)` through the folded column: every match and perhaps more (not exact). */
export function foldedInList(column: StoreColumn, values: readonly (string | number | boolean | null)[]): Sql {
  const keys = values.flatMap((v) => {
    const k = encodeKey(v, true);
    return k === undefined ? [] : [k];
  });
  const s = inList(`t.${q(column.column)}`, keys);
  return { ...s, exact: false };
}

/** `expr IN (values)` for encoded values, deduplicated; NULL_KEY and blobs always as placeholders. */
function inList(expr: string, values: readonly SqlValue[]): Sql {
  const seen = new Set<string | number>();
  const plain: (string | number)[] = [];
  const special: SqlValue[] = [];
  for (const v of values) {
    if (typeof v === 'string' || (typeof v === 'number' && v !== NULL_KEY)) {
      if (!seen.has(v)) plain.push(v);
      seen.add(v);
    } else if (!special.some((s) => (Buffer.isBuffer(s) && Buffer.isBuffer(v) ? s.equals(v) : s === v))) special.push(v);
  }
  const parts: Sql[] = [];
  if (plain.length > STORE_SQL_TUNING.inlineList) parts.push({ sql: `${expr} IN (SELECT value FROM json_each(?))`, params: [JSON.stringify(plain)], exact: true });
  else if (plain.length > 0) parts.push({ sql: `${expr} IN (${plain.map(() => '?').join(', ')})`, params: plain, exact: true });
  if (special.length > 0) parts.push({ sql: `${expr} IN (${special.map(() => '?').join(', ')})`, params: special, exact: true });
  if (parts.length === 0) return NONE;
  return parts.length === 1 ? (parts[0] as Sql) : { sql: `(${parts.map((p) => p.sql).join(' OR ')})`, params: parts.flatMap((p) => p.params), exact: true };
}

/** The text index's MATCH expression for a substring of some of its fields. */
export function matchExpression(fields: readonly string[], indexed: readonly string[], needle: string): string {
  const phrase = `"${needle.replace(/"/g, '""')}"`;
  if (fields.length === indexed.length) return phrase;
  return `{${fields.map((f) => `f${indexed.indexOf(f)}`).join(' ')}} : ${phrase}`;
}

/** A `contains` the text index answers exactly: its fields are indexed and the text is not empty. */
export function textCondition(table: DocTable, cond: Extract<Cond, { op: 'contains' }>): { fields: string[]; needle: string } | null {
  const text = table.text;
  if (!text) return null;
  const needle = cond.value.toLowerCase();
  const fields = [...new Set(cond.fields)];
  if (needle === '' || fields.length === 0 || !fields.every((f) => text.fields.includes(f))) return null;
  return { fields, needle };
}

/** Whether the trigram index can find this text (three characters or more). */
export const trigramSearchable = (needle: string): boolean => [...needle].length >= 3;

export function condSql(table: DocTable, cond: Cond, form: Form): Sql {
  switch (cond.op) {
    case 'eq':
    case 'neq': {
      const pos = eqSql(table, cond.field, cond.value);
      if (cond.op === 'eq' || !pos.exact) return cond.op === 'eq' ? pos : ANY;
      return pos.sql === '0' ? ALL : { sql: `NOT (${pos.sql})`, params: pos.params, exact: true };
    }
    case 'in': {
      if (cond.field === 'id') return inList('t.id', cond.values.filter((v): v is string => typeof v === 'string'));
      const c = conditionColumn(table, cond.field);
      if (!c) {
        const folded = foldedColumn(table, cond.field);
        return folded ? foldedInList(folded, cond.values) : ANY;
      }
      return inList(`t.${q(c.column)}`, cond.values.flatMap((v) => {
        const k = encodeKey(v, false);
        return k === undefined ? [] : [k];
      }));
    }
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte': {
      const op = { lt: '<', lte: '<=', gt: '>', gte: '>=' }[cond.op];
      if (cond.field === 'id') {
        // Ids are never null; SQLite orders them as JavaScript does unless one holds a wide character.
        return typeof cond.value === 'string' && table.idsFaithful() ? { sql: `t.id ${op} ?`, params: [cond.value], exact: true } : ANY;
      }
      const c = conditionColumn(table, cond.field);
      // compareValues compares a number with a string as text: only same-kind bounds are SQL's order.
      if (!c || c.kind === 'boolean' || kindOf(cond.value) !== c.kind) return ANY;
      const v = encodeKey(cond.value, false);
      if (v === undefined) return ANY;
      const col = `t.${q(c.column)}`;
      // A range never admits null, which is stored below everything.
      if (op === '<' || op === '<=') return { sql: `${col} > ? AND ${col} ${op} ?`, params: [NULL_KEY, v], exact: true };
      return { sql: `${col} ${op} ?`, params: [v], exact: true };
    }
    case 'contains': {
      const text = textCondition(table, cond);
      const index = table.text;
      if (!text || !index) return ANY;
      if (form === 'set' && trigramSearchable(text.needle)) {
        const rows = index.matchedRows(matchExpression(text.fields, index.fields, text.needle), text.fields, text.needle);
        return { sql: `t.rowid IN (${rows.sql})`, params: rows.params, exact: true };
      }
      return { ...index.rowContains('t.rowid', text.fields, text.needle), exact: true };
    }
    case 'has': {
      const m = table.memberTable(cond.field);
      if (!m) return ANY;
      if (form === 'set') return { sql: `t.rowid IN (SELECT rid FROM ${q(m.table)} WHERE value = ?)`, params: [cond.value], exact: true };
      return { sql: `EXISTS (SELECT 1 FROM ${q(m.table)} AS m WHERE m.value = ? AND m.rid = t.rowid)`, params: [cond.value], exact: true };
    }
    case 'and': {
      const parts = cond.conds.map((c) => condSql(table, c, form));
      const kept = parts.filter((p) => p.sql !== '1');
      const exact = parts.every((p) => p.exact);
      if (kept.some((p) => p.sql === '0' && p.exact)) return NONE;
      if (kept.length === 0) return exact ? ALL : ANY;
      return { sql: kept.map((p) => `(${p.sql})`).join(' AND '), params: kept.flatMap((p) => p.params), exact };
    }
    case 'or': {
      if (cond.conds.length === 0) return NONE;
      const parts = cond.conds.map((c) => condSql(table, c, form));
      if (parts.some((p) => p.sql === '1')) return parts.some((p) => p.sql === '1' && p.exact) ? ALL : ANY;
      const kept = parts.filter((p) => p.sql !== '0');
      const exact = parts.every((p) => p.exact);
      if (kept.length === 0) return exact ? NONE : ANY;
      return { sql: kept.map((p) => `(${p.sql})`).join(' OR '), params: kept.flatMap((p) => p.params), exact };
    }
    case 'not': {
      const inner = condSql(table, cond.cond, form);
      if (!inner.exact) return ANY;
      if (inner.sql === '1') return NONE;
      if (inner.sql === '0') return ALL;
      return { sql: `NOT (${inner.sql})`, params: inner.params, exact: true };
    }
  }
}

/** `field = value` as shared/query.ts means it (a missing field is null). */
function eqSql(table: DocTable, field: string, value: string | number | boolean | null): Sql {
  if (field === 'id') return typeof value === 'string' ? { sql: 't.id = ?', params: [value], exact: true } : NONE;
  const c = conditionColumn(table, field);
  if (!c) {
    const folded = foldedColumn(table, field);
    return folded ? foldedInList(folded, [value]) : ANY;
  }
  const key = encodeKey(value, false);
  return key === undefined ? NONE : { sql: `t.${q(c.column)} = ?`, params: [key], exact: true };
}
