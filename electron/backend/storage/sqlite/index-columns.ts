/**
 * Each RxDB index of a collection is a column of its documents table holding the index string
 * RxDB itself computes for the document (custom-index.ts: fields padded and concatenated so that
 * string order is index order), with a SQLite index over that column. A query then reads the
 * range RxDB's own query plan gives, between the same bound strings RxDB's memory storage uses.
 *
 * One encoding step keeps SQLite's order equal to JavaScript's: SQLite compares text by its UTF-8
 * bytes (code point order) while RxDB compares index strings as UTF-16 code units, and the two
 * disagree once a string holds characters from U+E000 (RxDB's own upper bound U+FFFF among them)
 * and characters above U+FFFF (emoji). sortableKey maps each code unit to a code point in the same
 * order, so any two strings compare alike in both.
 */
import { getIndexMeta, getIndexableStringMonad, getPrimaryFieldOfPrimaryKey, getStartIndexStringFromLowerBound, getStartIndexStringFromUpperBound } from 'rxdb';
import type { RxDocumentData, RxJsonSchema, RxQueryPlan } from 'rxdb';

type Doc = RxDocumentData<unknown>;

export type IndexColumn = {
  /** The RxDB index, as the filled schema lists it (`_deleted` first, the primary key last). */
  fields: readonly string[];
  /** Its column, and its SQLite index's suffix, in the documents table. */
  column: string;
  /** The column's value for a document: RxDB's index string, through sortableKey. */
  keyOf: (doc: Doc) => string;
  /**
   * Whether the document's index string orders it exactly as RxDB's sort comparator orders its
   * values. It does not for strings that end in a space or hold control characters (RxDB pads
   * with spaces), values longer than the schema's maxLength, missing values, and numbers off the
   * schema's range or grid; a query may then not trust index order for a sort RxDB would re-sort.
   */
  faithful: (doc: Doc) => boolean;
  /**
   * The index string as an SQL expression over the row's own columns, when every field of the
   * index is one of them (`_deleted`, `_meta.lwt`, the primary key: RxDB's default indexes
   * `[_deleted, id]` and `[_meta.lwt, id]`); null otherwise. The column is then computed (a virtual
   * column: its string is in its index only, not in every row), see computedColumnSql.
   */
  sql: string | null;
  /** Whether `sql` gives keyOf(doc) for this document, decided in JavaScript (false: it may not;
   * the row then holds the string in the override). Null when `sql` is. */
  sqlGives: ((doc: Doc) => boolean) | null;
};

/** Characters whose UTF-16 and UTF-8 orders differ (surrogates and U+E000 to U+FFFF). */
const WIDE = /[\ud800-\uffff]/;

/** Whether a string holds a character whose UTF-16 and UTF-8 orders differ. */
export const hasWideCharacter = (s: string): boolean => WIDE.test(s);

/**
 * The string with each UTF-16 code unit mapped, in order, to a code point: below U+D800 itself,
 * surrogates to U+E000-U+E7FF, U+E000-U+FFFF to U+10000-U+11FFF. Comparing the results by UTF-8
 * bytes gives the order of comparing the inputs with `<`.
 */
export function sortableKey(s: string): string {
  if (!WIDE.test(s)) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i);
    if (u < 0xd800) out += s.charAt(i);
    else if (u < 0xe000) out += String.fromCharCode(u + 0x800);
    else out += String.fromCodePoint(u + 0x2000);
  }
  return out;
}

/** The name RxDB's memory storage gives an index; also our key for it. */
export const indexName = (fields: readonly string[]): string => fields.join(',');

/** FNV-1a, 32 bits: short stable names of columns, tables and indexes (an index's column name
 * changes with its fields, so a changed index set is detected). */
export function hash32(s: string): string {
  return (fnv1a(s) >>> 0).toString(16).padStart(8, '0');
}

/** FNV-1a over a string's UTF-16 code units, as a signed 32-bit integer. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}

// eslint-disable-next-line no-control-regex -- control characters sort below RxDB's space padding
const UNPADDABLE = /[\u0000-\u001f]| $/;

function fieldFaithful(meta: ReturnType<typeof getIndexMeta<unknown>>[number]): (doc: Doc) => boolean {
  const type = meta.schemaPart.type;
  const get = meta.getValue as (doc: Doc) => unknown;
  if (type === 'string') {
    const maxLength = meta.schemaPart.maxLength ?? 0;
    return (doc) => {
      const v = get(doc);
      return typeof v === 'string' && v.length <= maxLength && !UNPADDABLE.test(v);
    };
  }
  if (type === 'boolean') return (doc) => typeof get(doc) === 'boolean';
  const lengths = meta.parsedLengths;
  if (!lengths) return () => false;
  return (doc) => {
    const v = get(doc);
    if (typeof v !== 'number' || !(v >= lengths.minimum && v <= lengths.maximum)) return false;
    const whole = Math.floor(v);
    const shifted = Math.round((v - whole) * lengths.multiplier);
    return shifted < lengths.multiplier && whole + shifted / lengths.multiplier === v;
  };
}

/** The index columns of a filled RxDB schema, one per entry of `schema.indexes`. */
export function indexColumns(schema: RxJsonSchema<Doc>): IndexColumn[] {
  const used = new Set<string>();
  return (schema.indexes ?? []).map((raw) => {
    const fields = typeof raw === 'string' ? [raw] : [...raw];
    let column = `k_${hash32(indexName(fields))}`;
    while (used.has(column)) column += '_';
    used.add(column);
    const monad = getIndexableStringMonad(schema, fields);
    const checks = getIndexMeta(schema, fields).map(fieldFaithful);
    const computed = indexSql(schema, fields);
    return {
      fields,
      column,
      keyOf: (doc: Doc) => sortableKey(monad(doc)),
      faithful: (doc: Doc) => checks.every((ok) => ok(doc)),
      sql: computed?.sql ?? null,
      sqlGives: computed?.gives ?? null,
    };
  });
}

/**
 * RxDB's index string (custom-index.ts getIndexMeta) of `fields` as SQL over a documents table's
 * `deleted`, `lwt` and `id` columns, or null when a field is none of those. It gives the string of
 * nearly every document, not of all (a number's digits are rounded by SQLite, not by JavaScript; an
 * id with a character sortableKey maps or longer than its maxLength): a written row whose string it
 * does not give gets the string in the column's override (computedColumnSql), so the column always
 * holds keyOf(doc).
 *
 * `gives` tells in JavaScript, per document, that the expression gives RxDB's string, so a write
 * knows the override without reading the computed column back (a statement per written row): it
 * repeats SQLite's arithmetic (IEEE doubles both, truncation by CAST) where RxDB's differs (its
 * Math.round against `+ 0.5` and CAST), and refuses ids whose length or order SQL sees otherwise.
 * False only costs the override's bytes; true must be exact (sqlite-computed-index.test.ts checks
 * it against SQLite on random and edge values).
 */
export function indexSql(schema: RxJsonSchema<Doc>, fields: readonly string[]): { sql: string; gives: (doc: Doc) => boolean } | null {
  const primary = getPrimaryFieldOfPrimaryKey(schema.primaryKey);
  const parts: string[] = [];
  const checks: ((doc: Doc) => boolean)[] = [];
  for (const meta of getIndexMeta(schema, [...fields])) {
    const part = meta.schemaPart;
    if (meta.fieldName === '_deleted' && part.type === 'boolean') parts.push(`(CASE WHEN deleted THEN '1' ELSE '0' END)`);
    else if (meta.fieldName === primary && part.type === 'string' && typeof part.maxLength === 'number' && Number.isInteger(part.maxLength) && part.maxLength >= 0 && part.maxLength <= 1000) {
      const n = part.maxLength;
      parts.push(`(CASE WHEN length(id) < ${n} THEN id || substr('${' '.repeat(n)}', 1, ${n} - length(id)) ELSE id END)`);
      checks.push((doc) => {
        const id = (doc as Record<string, unknown>)[primary];
        // NUL ends SQL's length(); a surrogate is one character in SQL, two in JavaScript; and
        // sortableKey maps the wide ones.
        return typeof id === 'string' && !id.includes('\0') && !hasWideCharacter(id);
      });
    } else if (meta.fieldName === '_meta.lwt' && meta.parsedLengths && [meta.parsedLengths.minimum, meta.parsedLengths.maximum, meta.parsedLengths.multiplier].every(Number.isSafeInteger)) {
      const p = meta.parsedLengths;
      const v = `max(min(lwt, ${p.maximum}), ${p.minimum})`;
      let s = `printf('%0${p.nonDecimals}d', CAST(floor(${v}) AS INTEGER) - ${p.roundedMinimum})`;
      if (p.decimals > 0) s += ` || printf('%0${p.decimals}d', min(CAST((${v} - floor(${v})) * ${p.multiplier} + 0.5 AS INTEGER), ${p.multiplier - 1}))`;
      parts.push(`(${s})`);
      checks.push((doc) => {
        const lwt: unknown = doc._meta.lwt;
        if (typeof lwt !== 'number' || !Number.isFinite(lwt) || Math.abs(lwt) >= 2 ** 52) return false;
        if (p.decimals === 0) return true;
        const clamped = Math.max(Math.min(lwt, p.maximum), p.minimum);
        const shifted = (clamped - Math.floor(clamped)) * p.multiplier;
        return Math.trunc(shifted + 0.5) === Math.round(shifted);
      });
    } else return null;
  }
  return parts.length > 0 ? { sql: parts.join(' || '), gives: (doc) => checks.every((ok) => ok(doc)) } : null;
}

/** The override column of a computed index column: NULL while the expression gives the row's
 * index string, the string otherwise. */
export const overrideColumn = (column: string): string => `${column}_r`;

/** The definitions of a computed index column and its override, for CREATE TABLE or ADD COLUMN. */
export function computedColumnSql(column: IndexColumn): [override: string, computed: string] {
  if (column.sql === null) throw new Error(`Index [${indexName(column.fields)}] has no SQL form.`);
  return [`"${overrideColumn(column.column)}" TEXT`, `"${column.column}" TEXT GENERATED ALWAYS AS (coalesce("${overrideColumn(column.column)}", ${column.sql})) VIRTUAL`];
}

/** The range of index strings a query plan reads, as RxDB's memory storage computes it. */
export type KeyRange = { lower: string; upper: string; lowerInclusive: boolean; upperInclusive: boolean };

export function keyRange(schema: RxJsonSchema<Doc>, plan: RxQueryPlan): KeyRange {
  return {
    lower: sortableKey(getStartIndexStringFromLowerBound(schema, plan.index, plan.startKeys)),
    upper: sortableKey(getStartIndexStringFromUpperBound(schema, plan.index, plan.endKeys)),
    lowerInclusive: plan.inclusiveStart,
    upperInclusive: plan.inclusiveEnd,
  };
}
