/**
 * Substring search over chosen text fields of a collection (for leads: shared/ops/lead-search.ts
 * LEAD_QUERY_FIELDS), on an SQLite FTS5 table with the trigram tokenizer, one row per live
 * document keyed by the documents table's rowid and written in the same transaction as the
 * document.
 *
 * Except during a bulk load (doc-table.ts "Loading": an initial sync's pulled pages, an import's
 * calls into an empty or small list): writing each document's FTS5 row was ~9% of the CPU of an
 * initial sync and of an import (the tokenizer, and FTS5 merging its segments). Such a load
 * writes the texts to a plain table instead (`<fts>_waiting`, same columns, keyed by the rowid: an
 * append), and once the load is over the file's worker thread moves them into the
 * FTS5 table in slices (`fillSql`), each its own transaction that also deletes what it moved, so a
 * killed process leaves every text in one of the two tables and the next open goes on. A live
 * document's texts are always in exactly one of them; while the waiting table may hold rows
 * (`waiting`), every search also tests its rows with instr() (the same semantics as the index: a
 * lower-cased substring), so answers are the same during the fill, only slower. The backend's
 * queries and counts (store-query.ts findWaitingTexts) have the waiting rows' matches found in the
 * file's reader thread first (`waitingReads`), and then test on the event loop only those rows and
 * the ones written since that read's snapshot (`waitingMatches`), not every waiting row.
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
  private readonly insertWaiting: Statement;
  private readonly removeWaiting: Statement<[number]>;
  /** The waiting table (see the file comment). */
  readonly waitingTable: string;
  /** The waiting table may hold rows (or a write under way may add some): searches read it too.
   * Set by a write that defers texts, cleared once a fill finds it empty (`afterFill`); a set flag
   * with an empty table only costs a search its extra reads. */
  private waitingRows: boolean;
  /** The waiting rows a `contains` matched, read in the file's reader thread (`waitingReads`,
   * `foundWaiting`), by fields and text: the rowids, and the documents table's last sequence
   * number in that snapshot. Searches then test on this thread only those rows and the ones
   * written since, not the whole waiting table. Dropped once no text waits. */
  private readonly found = new Map<string, { seq: number; rowids: string }>();
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
    this.waitingTable = waitingTableOf(table);
    this.insert = db.prepare(`INSERT INTO "${table}" (rowid, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`);
    this.remove = db.prepare(`DELETE FROM "${table}" WHERE rowid = ?`);
    this.insertWaiting = db.prepare(`INSERT OR REPLACE INTO "${this.waitingTable}" (rowid, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`);
    this.removeWaiting = db.prepare(`DELETE FROM "${this.waitingTable}" WHERE rowid = ?`);
    this.waitingRows = this.waitingIn(db);
  }

  /** The FTS5 table's definition, and its waiting table's. */
  static ddl(table: string, fields: readonly string[]): string {
    const cols = fields.map((_, i) => `f${i}`);
    return (
      `CREATE VIRTUAL TABLE IF NOT EXISTS "${table}" USING fts5(${cols.join(', ')}, tokenize = 'trigram case_sensitive 1'); ` +
      `CREATE TABLE IF NOT EXISTS "${waitingTableOf(table)}" (rowid INTEGER PRIMARY KEY, ${cols.map((c) => `${c} TEXT NOT NULL`).join(', ')})`
    );
  }

  /** Drops the FTS5 table and its waiting table (inside a transaction). */
  static dropSql(table: string): string {
    return `DROP TABLE IF EXISTS "${table}"; DROP TABLE IF EXISTS "${waitingTableOf(table)}"`;
  }

  /** Whether texts wait to be indexed (see the file comment). */
  get waiting(): boolean {
    return this.waitingRows;
  }

  private waitingIn(db: SqliteDatabase): boolean {
    return db.prepare(`SELECT EXISTS (SELECT 1 FROM "${this.waitingTable}")`).pluck().get() === 1;
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

  /** Brings the row of `rowid` from `before`'s text to `after`'s (inside the write's transaction);
   * `defer`: into the waiting table (a bulk load, see the file comment). */
  put(rowid: number | bigint, before: Doc | undefined, after: Doc, defer = false): void {
    const was = before ? this.texts(before) : null;
    const now = this.texts(after);
    if (was && now && was.every((t, i) => t === now[i])) return;
    const r = Number(rowid);
    if (was) {
      this.remove.run(r);
      if (this.waitingRows) this.removeWaiting.run(r);
    }
    if (!now) return;
    if (defer) {
      this.waitingRows = true;
      this.insertWaiting.run(r, ...now);
    } else this.insert.run(r, ...now);
  }

  /**
   * One slice of the fill (see the file comment), for the file's worker thread: moves the first
   * `rows` waiting texts (in rowid order) into the FTS5 table and deletes them from the waiting
   * table, in one transaction.
   */
  fillSql(rows: number): string {
    const cols = this.fields.map((_, i) => `f${i}`).join(', ');
    const w = `"${this.waitingTable}"`;
    const upTo = `(SELECT max(rowid) FROM (SELECT rowid FROM ${w} ORDER BY rowid LIMIT ${Math.max(1, Math.floor(rows))}))`;
    return `BEGIN IMMEDIATE; INSERT INTO "${this.table}" (rowid, ${cols}) SELECT rowid, ${cols} FROM ${w} WHERE rowid <= ${upTo}; DELETE FROM ${w} WHERE rowid <= ${upTo}; COMMIT`;
  }

  /** After a slice of the fill committed: whether texts still wait (read on `db`, the writes'
   * connection, with no write of it under way). */
  afterFill(db: SqliteDatabase): boolean {
    this.waitingRows = this.waitingIn(db);
    if (!this.waitingRows) this.found.clear();
    return this.waitingRows;
  }

  /** The reads, for the file's reader thread (one snapshot), that find the waiting rows whose
   * `fields` contain `needle` (lower-cased): the documents table's last sequence number, then the
   * rowids as one JSON array (one value to hand over, not a row each). Their rows go to
   * `foundWaiting`. */
  waitingReads(fields: readonly string[], needle: string): { sql: string; params: string[] }[] {
    const c = this.containsIn('w', fields, needle);
    return [
      { sql: `SELECT coalesce(max(seq), 0) AS s FROM "${this.docTable}"`, params: [] },
      { sql: `SELECT json_group_array(rowid) AS r FROM "${this.waitingTable}" AS w WHERE ${c.sql}`, params: c.params },
    ];
  }

  /** Keeps what `waitingReads` read, for the searches of `fields` and `needle` that follow. */
  foundWaiting(fields: readonly string[], needle: string, rows: readonly Record<string, unknown>[][]): void {
    const key = foundKey(fields, needle);
    this.found.delete(key);
    // A few texts at a time (the searches under way); the oldest goes first.
    if (this.found.size >= 32) this.found.delete(this.found.keys().next().value as string);
    this.found.set(key, { seq: Number(rows[0]?.[0]?.s ?? 0), rowids: String(rows[1]?.[0]?.r ?? '[]') });
  }

  /** Whether `waitingReads` of `fields` and `needle` are kept (foundWaiting) and at most `rows`
   * documents were written after their snapshot (`seq`: the documents table's last sequence
   * number now): searches may use them without reading again. */
  foundSince(fields: readonly string[], needle: string, seq: number, rows: number): boolean {
    const known = this.found.get(foundKey(fields, needle));
    return known !== undefined && seq - known.seq <= rows;
  }

  /** The waiting rows whose `fields` contain `needle`, as SQL selecting their rowids as `r`: those
   * the reader thread found that still wait (the fill moves rows), each tested again (a write may
   * have changed it since), then the other waiting rows of documents written since its snapshot
   * (the two are apart, so a LIMIT stops early); or, when it found none for this text, every
   * waiting row tested here. */
  private waitingMatches(fields: readonly string[], needle: string): { sql: string; params: (string | number)[] } {
    const w = `"${this.waitingTable}"`;
    const c = this.containsIn('w', fields, needle);
    const known = this.found.get(foundKey(fields, needle));
    if (!known) return { sql: `SELECT rowid AS r FROM ${w} AS w WHERE ${c.sql}`, params: c.params };
    const listed = `SELECT w.rowid AS r FROM json_each(?) AS j CROSS JOIN ${w} AS w ON w.rowid = j.value WHERE ${c.sql}`;
    const since = `SELECT w.rowid AS r FROM "${this.docTable}" AS s CROSS JOIN ${w} AS w ON w.rowid = s.rowid WHERE s.seq > ? AND ${c.sql} AND s.rowid NOT IN (SELECT value FROM json_each(?))`;
    return { sql: `${listed} UNION ALL ${since}`, params: [known.rowids, ...c.params, known.seq, ...c.params, known.rowids] };
  }

  /**
   * SQL listing the rowids of live documents whose `fields` (indexed ones; `match` the FTS5 MATCH
   * expression for them, store-sql.ts matchExpression) contain `needle` (lower-cased, three
   * characters or more): the FTS5 table's matches, and while texts wait, theirs (in no order).
   */
  matchedRows(match: string, fields: readonly string[], needle: string): { sql: string; params: (string | number)[] } {
    const t = `"${this.table}"`;
    const found = { sql: `SELECT rowid AS r FROM ${t} WHERE ${t} MATCH ?`, params: [match] };
    if (!this.waitingRows) return found;
    const waiting = this.waitingMatches(fields, needle);
    return { sql: `${found.sql} UNION ALL ${waiting.sql}`, params: [match, ...waiting.params] };
  }

  /** An SQL condition on the documents table's row `row` (an expression of its rowid): its `fields`
   * contain `needle` (lower-cased), read from the stored texts (FTS5's, and the waiting ones'). */
  rowContains(row: string, fields: readonly string[], needle: string): { sql: string; params: string[] } {
    const tests = (alias: string, table: string): { sql: string; params: string[] } => {
      const c = this.containsIn(alias, fields, needle);
      return { sql: `EXISTS (SELECT 1 FROM "${table}" AS ${alias} WHERE ${alias}.rowid = ${row} AND ${c.sql})`, params: c.params };
    };
    const indexed = tests('x', this.table);
    if (!this.waitingRows) return indexed;
    const waiting = tests('w', this.waitingTable);
    return { sql: `(${indexed.sql} OR ${waiting.sql})`, params: [...indexed.params, ...waiting.params] };
  }

  private containsIn(alias: string, fields: readonly string[], needle: string): { sql: string; params: string[] } {
    return { sql: this.anyContains(alias, fields, '?'), params: fields.map(() => needle) };
  }

  /** An SQL condition: one of `fields`' stored texts in the row `alias` (of this index's or its
   * waiting table) contains `param` (a parameter: `?` once per field, or a named one). */
  private anyContains(alias: string, fields: readonly string[], param: string): string {
    return `(${fields.map((f) => `instr(${alias}.f${this.fields.indexOf(f)}, ${param}) > 0`).join(' OR ')})`;
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
    // While texts wait (see the file comment), the index's plans also test the waiting rows.
    const w = this.waitingRows;
    const matching = (more: Record<string, unknown>): Record<string, unknown> => (w ? { needle: quoted, text: needle, ...more } : { needle: quoted, ...more });
    if (!order) return (byIndex ? this.statement('match', undefined).all(matching({ limit })) : this.statement('walk', undefined).all({ needle, limit })) as string[];
    if (byIndex) {
      const cap = Math.min(20_000, Math.max(256, Math.ceil(Math.sqrt(limit * rows))));
      const found = this.statement('probe', undefined).all(matching({ cap })) as number[];
      if (found.length < cap) return this.statement('sort', order).all({ rowids: JSON.stringify(found), limit }) as string[];
    }
    return this.statement('walk', order).all({ needle, limit }) as string[];
  }

  private statement(plan: 'match' | 'probe' | 'sort' | 'walk', order: TextOrder | undefined): Statement {
    const waiting = this.waitingRows && plan !== 'sort';
    const key = `${plan} ${order ? `${order.column} ${order.direction}` : ''}${waiting ? ' waiting' : ''}`;
    const db = this.reads();
    const kept = statementsOn(this.statements, db);
    let stmt = kept.get(key);
    if (!stmt) {
      stmt = db.prepare(waiting ? this.waitingSql(plan, order) : this.sql(plan, order)).pluck();
      kept.set(key, stmt);
    }
    return stmt;
  }

  private sql(plan: 'match' | 'probe' | 'sort' | 'walk', order: TextOrder | undefined): string {
    const t = `"${this.table}"`;
    const d = `"${this.docTable}"`;
    switch (plan) {
      case 'match':
        return `SELECT ${d}.id FROM ${t} JOIN ${d} ON ${d}.rowid = ${t}.rowid WHERE ${t} MATCH @needle LIMIT @limit`;
      case 'probe':
        return `SELECT rowid FROM ${t} WHERE ${t} MATCH @needle LIMIT @cap`;
      case 'sort':
        return `SELECT id FROM ${d} WHERE rowid IN (SELECT value FROM json_each(@rowids))${orderSql(d, order)} LIMIT @limit`;
      case 'walk': {
        // Joined on the rowid: deleted documents have no text row, so they drop out here.
        return `SELECT ${d}.id FROM ${d} JOIN ${t} ON ${t}.rowid = ${d}.rowid WHERE ${this.anyContains(t, this.fields, '@needle')}${orderSql(d, order)} LIMIT @limit`;
      }
    }
  }

  /** The plans while texts wait: the FTS5 table's rows and the waiting ones, each found as the
   * plan finds them in its own table (the index's matches, or instr() of the stored text), and no
   * order means rowid order, as the FTS5 table gives it. */
  private waitingSql(plan: 'match' | 'probe' | 'walk', order: TextOrder | undefined): string {
    const t = `"${this.table}"`;
    const w = `"${this.waitingTable}"`;
    const d = `"${this.docTable}"`;
    const found = (alias: string, param: string): string => this.anyContains(alias, this.fields, param);
    const matched = `SELECT rowid AS r FROM ${t} WHERE ${t} MATCH @needle UNION ALL SELECT rowid AS r FROM ${w} AS w WHERE ${found('w', '@text')}`;
    switch (plan) {
      case 'match':
        return `SELECT ${d}.id FROM (${matched}) AS m JOIN ${d} ON ${d}.rowid = m.r ORDER BY m.r LIMIT @limit`;
      case 'probe':
        return `SELECT r FROM (${matched}) LIMIT @cap`;
      case 'walk':
        // A document without a text row in either table (deleted) drops out.
        return (
          `SELECT ${d}.id FROM ${d} LEFT JOIN ${t} AS x ON x.rowid = ${d}.rowid LEFT JOIN ${w} AS w ON w.rowid = ${d}.rowid ` +
          `WHERE ${found('x', '@needle')} OR ${found('w', '@needle')}${orderSql(d, order ?? { column: 'rowid', direction: 'asc' })} LIMIT @limit`
        );
    }
  }
}

/** ` ORDER BY` a column of the documents table `d`, or nothing without an order. */
const orderSql = (d: string, order: TextOrder | undefined): string => (order ? ` ORDER BY ${d}."${order.column}" ${order.direction === 'desc' ? 'DESC' : 'ASC'}` : '');

/** The key of a text's waiting rows found (TextIndex `found`). */
const foundKey = (fields: readonly string[], needle: string): string => JSON.stringify([fields, needle]);

/** The waiting table of an FTS5 table (see the file comment). */
const waitingTableOf = (table: string): string => `${table}_waiting`;
