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
 *
 * Deferred during a bulk load (an initial sync, a large import): tokenizing every document's text
 * into the trigram index in the load's transactions was a quarter of their SQLite work (profiles
 * in the README, "Desktop storage"). From the write that starts a load (doc-table.ts), a
 * document's lower-cased texts go to a plain side table, `<fts>_q` (rowid = the document's, one row
 * per live document not in the trigram index yet), and the worker thread moves them into the
 * trigram index afterwards, TEXT_TUNING.slice rows per transaction (buildSql). Every live document's text
 * is in exactly one of the two at every commit: a write while the text is deferred removes the
 * document's row from both and puts its new text in the queue, and a slice inserts and deletes its
 * rows in one transaction. So a crash in the middle leaves a queue that the next open goes on with,
 * and while the queue is not empty every search reads both (the trigram index, and the queue with
 * instr(), which is what the trigram index answers for three characters or more), each in one
 * statement (one snapshot): the same answers as with the whole index at every moment.
 */
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import type { RxDocumentData } from 'rxdb';

type Doc = RxDocumentData<unknown>;

/** The order of search results: an index column of the documents table, either way. */
export type TextOrder = { column: string; direction: 'asc' | 'desc' };

/** The deferred build (tests make its slices small, to stop it in the middle). */
export const TEXT_TUNING = {
  /** Rows a slice moves from the queue into the trigram index: one transaction in the worker
   * thread, during which the file's writes wait. */
  slice: 4000,
};

export class TextIndex {
  private readonly insert: Statement;
  private readonly remove: Statement<[number]>;
  private readonly enqueue: Statement;
  private readonly dequeue: Statement<[number]>;
  private readonly queued: Statement<[], number>;
  private readonly statements = new Map<string, Statement>();
  /** The queue of texts not in the trigram index yet (see the file comment). */
  readonly queue: string;
  /**
   * Texts are written to the queue, and searches read it too. True while the queue may hold rows
   * (never false while it does: set by the write that starts a load, cleared only once the queue is
   * seen empty on this thread, where every write to it is made).
   */
  deferred: boolean;

  constructor(
    private readonly db: SqliteDatabase,
    /** The FTS5 table. */
    readonly table: string,
    /** The documents table it indexes. */
    private readonly docTable: string,
    readonly fields: readonly string[],
  ) {
    const cols = fields.map((_, i) => `f${i}`);
    this.queue = TextIndex.queueOf(table);
    this.insert = db.prepare(`INSERT INTO "${table}" (rowid, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`);
    this.remove = db.prepare(`DELETE FROM "${table}" WHERE rowid = ?`);
    this.enqueue = db.prepare(`INSERT INTO "${this.queue}" (rowid, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`);
    this.dequeue = db.prepare(`DELETE FROM "${this.queue}" WHERE rowid = ?`);
    this.queued = db.prepare<[], number>(`SELECT EXISTS (SELECT 1 FROM "${this.queue}")`).pluck();
    this.deferred = this.queued.get() === 1;
  }

  /** The queue table of an FTS5 table. */
  static queueOf(table: string): string {
    return `${table}_q`;
  }

  /** The FTS5 table's definition, and its queue's. */
  static ddl(table: string, fields: readonly string[]): string {
    return `CREATE VIRTUAL TABLE IF NOT EXISTS "${table}" USING fts5(${fields.map((_, i) => `f${i}`).join(', ')}, tokenize = 'trigram case_sensitive 1');\n${TextIndex.queueDdl(table, fields)}`;
  }

  /** The queue's definition alone (a file written before the queue existed gets it at open). */
  static queueDdl(table: string, fields: readonly string[]): string {
    return `CREATE TABLE IF NOT EXISTS "${TextIndex.queueOf(table)}" (rowid INTEGER PRIMARY KEY${fields.map((_, i) => `, f${i} TEXT NOT NULL`).join('')})`;
  }

  /**
   * One slice of the deferred build, for the worker thread: the queue's first TEXT_TUNING.slice rows into
   * the trigram index and out of the queue, in one transaction.
   */
  buildSql(): string {
    const cols = this.fields.map((_, i) => `f${i}`).join(', ');
    const first = `SELECT rowid FROM "${this.queue}" ORDER BY rowid LIMIT ${Math.max(1, Math.floor(TEXT_TUNING.slice))}`;
    return (
      `BEGIN IMMEDIATE; INSERT INTO "${this.table}" (rowid, ${cols}) SELECT rowid, ${cols} FROM "${this.queue}" WHERE rowid IN (${first}); ` +
      `DELETE FROM "${this.queue}" WHERE rowid IN (${first}); COMMIT;`
    );
  }

  /** After a slice (on this thread, outside any transaction): whether the queue is empty now; the
   * text is no longer deferred then. */
  settle(): boolean {
    if (this.deferred && this.queued.get() === 0) this.deferred = false;
    return !this.deferred;
  }

  /** `instr()` of a needle in some fields of the rows of `alias` (the trigram table or the queue),
   * with one `param` per field. */
  static instr(alias: string, columns: readonly number[], param: string): string {
    return columns.map((i) => `instr(${alias}.f${i}, ${param}) > 0`).join(' OR ');
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

  /** Brings the row of `rowid` from `before`'s text to `after`'s (inside the write's transaction):
   * in the trigram index, or while the text is deferred, out of either and into the queue. */
  put(rowid: number | bigint, before: Doc | undefined, after: Doc): void {
    const was = before ? this.texts(before) : null;
    const now = this.texts(after);
    if (was && now && was.every((t, i) => t === now[i])) return;
    const r = Number(rowid);
    if (this.deferred) {
      if (was && this.dequeue.run(r).changes === 0) this.remove.run(r);
      if (now) this.enqueue.run(r, ...now);
      return;
    }
    if (was) this.remove.run(r);
    if (now) this.insert.run(r, ...now);
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
    // While the text is deferred, the queue's rows are tested with instr() (`raw`) in the same statement.
    const raw = this.deferred ? { raw: needle } : {};
    if (!order) return (this.statement(byIndex ? 'match' : 'walk', undefined).all({ needle: byIndex ? quoted : needle, limit, ...raw }) as string[]);
    if (byIndex) {
      const cap = Math.min(20_000, Math.max(256, Math.ceil(Math.sqrt(limit * rows))));
      const found = this.statement('probe', undefined).all({ needle: quoted, cap, ...raw }) as number[];
      if (found.length < cap) return this.statement('sort', order).all({ rowids: JSON.stringify(found), limit }) as string[];
    }
    return this.statement('walk', order).all({ needle, limit, ...raw }) as string[];
  }

  private statement(plan: 'match' | 'probe' | 'sort' | 'walk', order: TextOrder | undefined): Statement {
    const key = `${plan} ${order ? `${order.column} ${order.direction}` : ''}${this.deferred && plan !== 'sort' ? ' deferred' : ''}`;
    let stmt = this.statements.get(key);
    if (!stmt) {
      stmt = this.db.prepare(this.sql(plan, order)).pluck();
      this.statements.set(key, stmt);
    }
    return stmt;
  }

  private sql(plan: 'match' | 'probe' | 'sort' | 'walk', order: TextOrder | undefined): string {
    const t = `"${this.table}"`;
    const d = `"${this.docTable}"`;
    const orderBy = order ? ` ORDER BY ${d}."${order.column}" ${order.direction === 'desc' ? 'DESC' : 'ASC'}` : '';
    const all = this.fields.map((_, i) => i);
    // The queue's matches, for a UNION ALL with the trigram index's (a row is in one of them).
    const queued = this.deferred ? ` UNION ALL SELECT rowid FROM "${this.queue}" AS qx WHERE ${TextIndex.instr('qx', all, '@raw')}` : '';
    switch (plan) {
      case 'match':
        if (queued) return `SELECT ${d}.id FROM (SELECT rowid AS r FROM ${t} WHERE ${t} MATCH @needle${queued}) AS m JOIN ${d} ON ${d}.rowid = m.r LIMIT @limit`;
        return `SELECT ${d}.id FROM ${t} JOIN ${d} ON ${d}.rowid = ${t}.rowid WHERE ${t} MATCH @needle LIMIT @limit`;
      case 'probe':
        return `SELECT rowid FROM ${t} WHERE ${t} MATCH @needle${queued} LIMIT @cap`;
      case 'sort':
        return `SELECT id FROM ${d} WHERE rowid IN (SELECT value FROM json_each(@rowids))${orderBy} LIMIT @limit`;
      case 'walk': {
        if (this.deferred) {
          // Deleted documents have a row in neither.
          const inIndex = `EXISTS (SELECT 1 FROM ${t} AS x WHERE x.rowid = ${d}.rowid AND (${TextIndex.instr('x', all, '@needle')}))`;
          const inQueue = `EXISTS (SELECT 1 FROM "${this.queue}" AS qx WHERE qx.rowid = ${d}.rowid AND (${TextIndex.instr('qx', all, '@raw')}))`;
          return `SELECT ${d}.id FROM ${d} WHERE ${inIndex} OR ${inQueue}${orderBy} LIMIT @limit`;
        }
        // Joined on the rowid: deleted documents have no text row, so they drop out here.
        const found = TextIndex.instr(t, all, '@needle');
        return `SELECT ${d}.id FROM ${d} JOIN ${t} ON ${t}.rowid = ${d}.rowid WHERE ${found}${orderBy} LIMIT @limit`;
      }
    }
  }
}
