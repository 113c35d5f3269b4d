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
import { statementsOn } from './file.ts';

type Doc = RxDocumentData<unknown>;

/** The order of search results: an index column of the documents table, either way. */
export type TextOrder = { column: string; direction: 'asc' | 'desc' };

export class TextIndex {
  private readonly insert: Statement;
  private readonly remove: Statement<[number]>;
  /** The search statements, by connection (see `reads`). */
  private readonly statements = new WeakMap<SqliteDatabase, Map<string, Statement>>();

  constructor(
    db: SqliteDatabase,
    /** The FTS5 table. */
    readonly table: string,
    /** The documents table it indexes. */
    private readonly docTable: string,
    readonly fields: readonly string[],
    /** The connection a search reads from now (StorageFile.reads: the read-only one while a
     * pulled page's transaction is open); the writes' connection by default. */
    private readonly reads: () => SqliteDatabase = () => db,
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

  /**
   * Ids of live documents whose indexed fields contain `text` (case-insensitive), at most `limit`,
   * in the given order (rowid order without one). `rows` estimates the table's size.
   *
   * In an order, two plans, each fast where the other is slow (measured at 100k leads):
   * - walking the order's index and testing each row's stored text with instr() costs ~0.5 µs a
   *   row and stops after `limit` matches, so it reads about limit x rows / matches rows: a common
   *   last name (10% of leads) takes ~1 ms, a text matching nothing reads the whole table;
   * - the trigram index lists the matching rows (~0.5 µs each), which are then sorted: ~1 ms for
   *   a rare email fragment, ~60 ms for that common name (10k rows to sort).
   * So the index is asked for at most `cap` matches first: fewer means a rare text, sorted from
   * that list; `cap` or more means a common one, found by walking the order. `cap` balances the
   * two worst cases (cap ~ sqrt(limit x rows)). Texts shorter than a trigram always walk.
   */
  search(text: string, limit: number, order: TextOrder | undefined, rows: number): string[] {
    const needle = text.toLowerCase();
    const quoted = `"${needle.replace(/"/g, '""')}"`;
    const byIndex = [...needle].length >= 3;
    if (!order) return (this.statement(byIndex ? 'match' : 'walk', undefined).all({ needle: byIndex ? quoted : needle, limit }) as string[]);
    if (byIndex) {
      const cap = Math.min(20_000, Math.max(256, Math.ceil(Math.sqrt(limit * rows))));
      const found = this.statement('probe', undefined).all({ needle: quoted, cap }) as number[];
      if (found.length < cap) return this.statement('sort', order).all({ rowids: JSON.stringify(found), limit }) as string[];
    }
    return this.statement('walk', order).all({ needle, limit }) as string[];
  }

  private statement(plan: 'match' | 'probe' | 'sort' | 'walk', order: TextOrder | undefined): Statement {
    const key = `${plan} ${order ? `${order.column} ${order.direction}` : ''}`;
    const db = this.reads();
    const kept = statementsOn(this.statements, db);
    let stmt = kept.get(key);
    if (!stmt) {
      stmt = db.prepare(this.sql(plan, order)).pluck();
      kept.set(key, stmt);
    }
    return stmt;
  }

  private sql(plan: 'match' | 'probe' | 'sort' | 'walk', order: TextOrder | undefined): string {
    const t = `"${this.table}"`;
    const d = `"${this.docTable}"`;
    const orderBy = order ? ` ORDER BY ${d}."${order.column}" ${order.direction === 'desc' ? 'DESC' : 'ASC'}` : '';
    switch (plan) {
      case 'match':
        return `SELECT ${d}.id FROM ${t} JOIN ${d} ON ${d}.rowid = ${t}.rowid WHERE ${t} MATCH @needle LIMIT @limit`;
      case 'probe':
        return `SELECT rowid FROM ${t} WHERE ${t} MATCH @needle LIMIT @cap`;
      case 'sort':
        return `SELECT id FROM ${d} WHERE rowid IN (SELECT value FROM json_each(@rowids))${orderBy} LIMIT @limit`;
      case 'walk': {
        // Joined on the rowid: deleted documents have no text row, so they drop out here.
        const found = this.fields.map((_, i) => `instr(${t}.f${i}, @needle) > 0`).join(' OR ');
        return `SELECT ${d}.id FROM ${d} JOIN ${t} ON ${t}.rowid = ${d}.rowid WHERE ${found}${orderBy} LIMIT @limit`;
      }
    }
  }
}
