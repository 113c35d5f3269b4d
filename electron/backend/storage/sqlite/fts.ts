/**
 * Substring search over chosen text fields of a collection (for leads: shared/ops/lead-search.ts
 * LEAD_QUERY_FIELDS), on an SQLite FTS5 table with the trigram tokenizer, one row per live
 * document keyed by the documents table's rowid and written in the same transaction as the
 * document.
 *
 * The indexed text is each field lower-cased by JavaScript (`toLowerCase`) and the tokenizer is
 * case-sensitive, so a match is exactly what `field.toLowerCase().includes(text.toLowerCase())`
 * (the Store's `contains`, shared/query.ts) says, with no second opinion from SQLite's own case
 * folding. A phrase of trigrams matches consecutive trigrams, i.e. a substring; texts shorter than
 * a trigram (one or two characters) cannot use the index and are found by scanning the stored text
 * with instr(), in the order asked, until enough rows matched.
 */
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import type { RxDocumentData } from 'rxdb';

type Doc = RxDocumentData<unknown>;

/** The order of search results: an index column of the documents table, either way. */
export type TextOrder = { column: string; direction: 'asc' | 'desc' };

export class TextIndex {
  private readonly insert: Statement;
  private readonly remove: Statement<[number]>;
  private readonly statements = new Map<string, Statement>();

  constructor(
    private readonly db: SqliteDatabase,
    /** The FTS5 table. */
    readonly table: string,
    /** The documents table it indexes. */
    private readonly docTable: string,
    readonly fields: readonly string[],
  ) {
    const cols = fields.map((_, i) => `f${i}`);
    this.insert = db.prepare(`INSERT INTO "${table}" (rowid, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`);
    this.remove = db.prepare(`DELETE FROM "${table}" WHERE rowid = ?`);
  }

  /** The FTS5 table's definition. */
  static ddl(table: string, fields: readonly string[]): string {
    return `CREATE VIRTUAL TABLE IF NOT EXISTS "${table}" USING fts5(${fields.map((_, i) => `f${i}`).join(', ')}, tokenize = 'trigram case_sensitive 1')`;
  }

  /** The indexed texts of a document, or null when it is deleted (deleted documents are not indexed). */
  texts(doc: Doc): string[] | null {
    if (doc._deleted) return null;
    const d = doc as Record<string, unknown>;
    return this.fields.map((f) => {
      const v = d[f];
      return typeof v === 'string' ? v.toLowerCase() : '';
    });
  }

  /** Brings the row of `rowid` from `before`'s text to `after`'s (inside the write's transaction). */
  put(rowid: number | bigint, before: Doc | undefined, after: Doc): void {
    const was = before ? this.texts(before) : null;
    const now = this.texts(after);
    if (was && now && was.every((t, i) => t === now[i])) return;
    if (was) this.remove.run(Number(rowid));
    if (now) this.insert.run(Number(rowid), ...now);
  }

  /** Removes a row (its document was purged). */
  drop(rowid: number | bigint): void {
    this.remove.run(Number(rowid));
  }

  /** Ids of live documents whose indexed fields contain `text` (case-insensitive), at most
   * `limit`, in the given order (rowid order without one). */
  search(text: string, limit: number, order: TextOrder | undefined): string[] {
    const needle = text.toLowerCase();
    const byIndex = [...needle].length >= 3;
    const key = `${byIndex ? 'match' : 'scan'} ${order ? `${order.column} ${order.direction}` : ''}`;
    let stmt = this.statements.get(key);
    if (!stmt) {
      stmt = this.db.prepare(this.sql(byIndex, order)).pluck();
      this.statements.set(key, stmt);
    }
    const arg = byIndex ? `"${needle.replace(/"/g, '""')}"` : needle;
    return stmt.all({ needle: arg, limit }) as string[];
  }

  private sql(byIndex: boolean, order: TextOrder | undefined): string {
    const t = `"${this.table}"`;
    const d = `"${this.docTable}"`;
    const orderBy = order ? ` ORDER BY ${d}."${order.column}" ${order.direction === 'desc' ? 'DESC' : 'ASC'}` : '';
    if (byIndex) return `SELECT ${d}.id FROM ${t} JOIN ${d} ON ${d}.rowid = ${t}.rowid WHERE ${t} MATCH @needle${orderBy} LIMIT @limit`;
    const found = this.fields.map((_, i) => `instr(${t}.f${i}, @needle) > 0`).join(' OR ');
    return `SELECT ${d}.id FROM ${d} JOIN ${t} ON ${t}.rowid = ${d}.rowid WHERE ${d}.deleted = 0 AND (${found})${orderBy} LIMIT @limit`;
  }
}
