/**
 * The documents table of one storage instance name (collection + schema version) in a file, and
 * everything that reads or writes it in SQL. One row per document:
 *   seq      the change sequence: every write of a document gives it the next number, so the
 *            changes feed (getChangedDocumentsSince) is `seq > checkpoint ORDER BY seq`;
 *   id       the primary key (unique);
 *   deleted, lwt   RxDB's `_deleted` and `_meta.lwt`, for cleanup of old tombstones;
 *   odd      a bit per index column whose index string does not order this document as RxDB's
 *            sort comparator would (IndexColumn.faithful): queries may trust index order for a
 *            re-sorted sort only while no row has the bit;
 *   doc      the RxDB document as JSON;
 *   k_...    one column per RxDB index (index-columns.ts), each with a SQLite index.
 * Plus, for collections with text search, an FTS5 table keyed by the rowid (fts.ts).
 *
 * Storage instances of one name in one process share this object (refcounted): its cache, its
 * change stream and its sequence counter.
 */
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { Subject } from 'rxjs';
import type { EventBulk, RxDocumentData, RxJsonSchema, RxStorageChangeEvent } from 'rxdb';
import { getPrimaryFieldOfPrimaryKey } from 'rxdb';
import { DocCache } from './doc-cache.ts';
import type { StorageFile } from './file.ts';
import { TextIndex } from './fts.ts';
import type { TextOrder } from './fts.ts';
import { indexColumns, indexName } from './index-columns.ts';
import type { IndexColumn, KeyRange } from './index-columns.ts';

export type Doc = RxDocumentData<unknown>;

/** The changes feed's checkpoint: RxDB's default `{id, lwt}` of the last document, plus its
 * sequence number, which is what this storage pages by. */
export type SqliteCheckpoint = { id: string; lwt: number; seq: number };

export type ChangeBulk = EventBulk<RxStorageChangeEvent<Doc>, SqliteCheckpoint>;

export type TableSetup = {
  /** Storage instance name: `<collection>-<schema version>`. */
  name: string;
  schema: RxJsonSchema<Doc>;
  /** Fields of the full-text index, or none. */
  textFields: readonly string[];
  /** Parsed documents kept in memory (see DocCache). */
  cacheSize: number;
};

/** A row to write: the document, and the stored one it replaces (undefined for a new id). */
export type RowWrite = { before: Doc | undefined; doc: Doc };

/** What a committed write changes in memory (applied only once SQLite committed it). */
export type Written = { lastSeq: number; rows: readonly RowWrite[]; oddDelta: number[] };

/** Documents a scan reads per statement: a scan that stops early reads little more than it needed. */
const SCAN_CHUNK = 256;

/** The registry's description of a table's index columns, to detect a changed index set. */
type ColumnsRecord = { column: string; fields: readonly string[] }[];

const TABLES = new WeakMap<StorageFile, Map<string, DocTable>>();

export class DocTable {
  private refs = 0;
  readonly changes = new Subject<ChangeBulk>();
  readonly cache: DocCache<Doc>;
  readonly columns: readonly IndexColumn[];
  readonly text: TextIndex | null;
  readonly primaryPath: string;
  private lastSeq: number;
  /** Rows with each column's odd bit set (see the file comment). */
  private readonly unfaithful: number[];
  private readonly byIndex = new Map<string, IndexColumn>();
  private readonly upsert: Statement;
  private readonly getOne: Statement<[string], string>;
  private readonly getMany: Statement<[string], { id: string; doc: string }>;
  private readonly statements = new Map<string, Statement>();
  /** @internal Rows read by scans since open, for tests and benchmarks. */
  rowsScanned = 0;

  private constructor(
    readonly file: StorageFile,
    readonly name: string,
    /** The SQLite table. */
    readonly table: string,
    setup: TableSetup,
  ) {
    const db = file.db;
    this.cache = new DocCache<Doc>(setup.cacheSize);
    this.primaryPath = getPrimaryFieldOfPrimaryKey(setup.schema.primaryKey);
    this.columns = indexColumns(setup.schema);
    for (const c of this.columns) this.byIndex.set(indexName(c.fields), c);
    this.text = setup.textFields.length > 0 ? new TextIndex(db, `${table}_fts`, table, setup.textFields) : null;
    const t = `"${table}"`;
    const cols = ['seq', 'id', 'deleted', 'lwt', 'odd', 'doc', ...this.columns.map((c) => `"${c.column}"`)];
    this.upsert = db
      .prepare(
        `INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) ` +
          `ON CONFLICT (id) DO UPDATE SET ${cols.filter((c) => c !== 'id').map((c) => `${c} = excluded.${c}`).join(', ')} RETURNING rowid`,
      )
      .pluck();
    this.getOne = db.prepare<[string], string>(`SELECT doc FROM ${t} WHERE id = ?`).pluck();
    this.getMany = db.prepare<[string], { id: string; doc: string }>(`SELECT id, doc FROM ${t} WHERE id IN (SELECT value FROM json_each(?))`);
    this.lastSeq = Number(db.prepare(`SELECT coalesce(max(seq), 0) FROM ${t}`).pluck().get());
    this.unfaithful = this.columns.map(() => 0);
    for (const odd of db.prepare(`SELECT odd FROM ${t} WHERE odd <> 0`).pluck().iterate() as Iterable<number>) this.countOdd(odd, 1, this.unfaithful);
  }

  /** The table of `setup.name` in the file, created (or brought to the schema's index set) on
   * first use and shared while open. */
  static open(file: StorageFile, setup: TableSetup): DocTable {
    let tables = TABLES.get(file);
    if (!tables) TABLES.set(file, (tables = new Map()));
    let table = tables.get(setup.name);
    if (!table) {
      table = new DocTable(file, setup.name, ensureTable(file, setup), setup);
      tables.set(setup.name, table);
    }
    table.refs++;
    return table;
  }

  /** Drops one user; the last one forgets the shared state (the next open reads the disk). */
  release(): void {
    this.refs--;
    if (this.refs > 0) return;
    if (TABLES.get(this.file)?.get(this.name) === this) TABLES.get(this.file)?.delete(this.name);
    this.changes.complete();
  }

  /** The column of an RxDB index (as a query plan names it), or undefined. */
  column(fields: readonly string[]): IndexColumn | undefined {
    return this.byIndex.get(indexName(fields));
  }

  /** Whether every row's index string of `column` orders it as RxDB's sort comparator would. */
  faithful(column: IndexColumn): boolean {
    return this.unfaithful[this.columns.indexOf(column)] === 0;
  }

  private parse(id: string, json: string): Doc {
    return this.cache.get(id) ?? (JSON.parse(json) as Doc);
  }

  /** The stored documents of these ids (deleted ones included), by id. Found documents are cached. */
  get(ids: readonly string[]): Map<string, Doc> {
    const out = new Map<string, Doc>();
    const missing: string[] = [];
    for (const id of ids) {
      const hit = this.cache.get(id);
      if (hit) out.set(id, hit);
      else missing.push(id);
    }
    if (missing.length <= 4) {
      for (const id of missing) {
        if (out.has(id)) continue;
        const json = this.getOne.get(id);
        if (json !== undefined) out.set(id, JSON.parse(json) as Doc);
      }
    } else {
      for (const row of this.getMany.iterate(JSON.stringify(missing))) out.set(row.id, JSON.parse(row.doc) as Doc);
    }
    for (const id of missing) {
      const doc = out.get(id);
      if (doc) this.cache.set(id, doc);
    }
    return out;
  }

  private oddOf(doc: Doc): number {
    let odd = 0;
    this.columns.forEach((c, i) => {
      if (!c.faithful(doc)) odd |= 1 << i;
    });
    return odd;
  }

  private countOdd(odd: number, by: number, into: number[]): void {
    for (let i = 0; i < into.length; i++) if (odd & (1 << i)) into[i] = (into[i] ?? 0) + by;
  }

  /** Writes the rows, each with the next sequence number, and their text rows. Must run inside
   * the file's write transaction; nothing in memory changes until `committed`. */
  write(rows: readonly RowWrite[]): Written {
    let seq = this.lastSeq;
    const oddDelta = this.columns.map(() => 0);
    const values: unknown[] = new Array<unknown>(6 + this.columns.length);
    const rowids: (number | bigint)[] = [];
    for (const { before, doc } of rows) {
      const odd = this.oddOf(doc);
      values[0] = ++seq;
      values[1] = (doc as Record<string, unknown>)[this.primaryPath];
      values[2] = doc._deleted ? 1 : 0;
      values[3] = doc._meta.lwt;
      values[4] = odd;
      values[5] = JSON.stringify(doc);
      this.columns.forEach((c, i) => (values[6 + i] = c.keyOf(doc)));
      rowids.push(this.upsert.get(...values) as number | bigint);
      this.countOdd(odd, 1, oddDelta);
      if (before) this.countOdd(this.oddOf(before), -1, oddDelta);
    }
    // The text rows after all document rows: FTS5 flushes its pending terms to a new segment
    // whenever another statement opens a savepoint in between, which made interleaved writes
    // twice as expensive (measured: 76 vs 39 µs of CPU per lead).
    const text = this.text;
    if (text) rows.forEach((r, i) => text.put(rowids[i] as number | bigint, r.before, r.doc));
    return { lastSeq: seq, rows, oddDelta };
  }

  /** Applies a write that SQLite committed. */
  committed(w: Written): void {
    this.lastSeq = w.lastSeq;
    w.oddDelta.forEach((d, i) => (this.unfaithful[i] = (this.unfaithful[i] ?? 0) + d));
    for (const { doc } of w.rows) this.cache.set(String((doc as Record<string, unknown>)[this.primaryPath]), doc);
  }

  private prepared(key: string, sql: () => string): Statement {
    let stmt = this.statements.get(key);
    if (!stmt) {
      stmt = this.file.db.prepare(sql());
      this.statements.set(key, stmt);
    }
    return stmt;
  }

  private rangeSql(column: IndexColumn, range: KeyRange): string {
    return `"${column.column}" ${range.lowerInclusive ? '>=' : '>'} @lower AND "${column.column}" ${range.upperInclusive ? '<=' : '<'} @upper`;
  }

  /**
   * The documents whose index string of `column` lies in `range`, in index order (or its reverse),
   * from the `offset`-th on, at most `limit` (Infinity: all). Read in chunks, so a caller that
   * stops early has read little more than it used; documents are not added to the cache.
   */
  *scan(column: IndexColumn, range: KeyRange, direction: 'asc' | 'desc', offset = 0, limit = Infinity): Generator<Doc> {
    const asc = direction === 'asc';
    const c = `"${column.column}"`;
    const first = this.prepared(`first ${column.column} ${range.lowerInclusive} ${range.upperInclusive} ${direction}`, () =>
      `SELECT id, doc, ${c} AS k FROM "${this.table}" WHERE ${this.rangeSql(column, range)} ORDER BY ${c} ${asc ? 'ASC' : 'DESC'} LIMIT @limit OFFSET @offset`,
    );
    // After the first chunk, continue strictly past the last key read (keys are unique: every
    // RxDB index ends with the primary key).
    const next = this.prepared(`next ${column.column} ${range.lowerInclusive} ${range.upperInclusive} ${direction}`, () =>
      `SELECT id, doc, ${c} AS k FROM "${this.table}" WHERE ${this.rangeSql(column, range)} AND ${c} ${asc ? '>' : '<'} @after ORDER BY ${c} ${asc ? 'ASC' : 'DESC'} LIMIT @limit`,
    );
    let left = limit;
    let after: string | null = null;
    while (left > 0) {
      const take = Math.min(SCAN_CHUNK, left);
      const rows = (after === null ? first.all({ lower: range.lower, upper: range.upper, limit: take, offset }) : next.all({ lower: range.lower, upper: range.upper, after, limit: take })) as { id: string; doc: string; k: string }[];
      this.rowsScanned += rows.length;
      for (const r of rows) yield this.parse(r.id, r.doc);
      const last = rows[rows.length - 1];
      if (!last || rows.length < take) return;
      after = last.k;
      left -= rows.length;
    }
  }

  /** How many rows have their index string of `column` in `range`. */
  count(column: IndexColumn, range: KeyRange): number {
    const stmt = this.prepared(`count ${column.column} ${range.lowerInclusive} ${range.upperInclusive}`, () => `SELECT count(*) FROM "${this.table}" WHERE ${this.rangeSql(column, range)}`);
    return Number(stmt.pluck().get({ lower: range.lower, upper: range.upper }));
  }

  /** Documents written after sequence number `seq`, in write order, at most `limit`. */
  changedSince(seq: number, limit: number): { seq: number; doc: Doc }[] {
    const stmt = this.prepared('changes', () => `SELECT seq, id, doc FROM "${this.table}" WHERE seq > ? ORDER BY seq LIMIT ?`);
    return (stmt.all(seq, limit) as { seq: number; id: string; doc: string }[]).map((r) => ({ seq: r.seq, doc: this.parse(r.id, r.doc) }));
  }

  /**
   * The sequence number to continue after, for a checkpoint in RxDB's default form (`{id, lwt}`,
   * as the persisted-memory storage and RxDB's own fallback page): just before the earliest write
   * of a document that comes after it in `[lwt, id]` order, so nothing written after that
   * checkpoint is skipped (a document may be sent again, which replication tolerates).
   */
  seqAfterLwt(lwt: number, id: string): number {
    const stmt = this.prepared('after-lwt', () => `SELECT min(seq) FROM "${this.table}" WHERE lwt > @lwt OR (lwt = @lwt AND id > @id)`);
    const first = stmt.pluck().get({ lwt, id }) as number | null;
    return first === null ? this.lastSeq : first - 1;
  }

  /** Deletes tombstones whose last write is at or before `maxLwt`; returns their ids. Must run
   * inside the file's write transaction. */
  purge(maxLwt: number): { ids: string[]; oddDelta: number[] } {
    const stmt = this.prepared('purge', () => `DELETE FROM "${this.table}" WHERE deleted = 1 AND lwt <= ? RETURNING id, odd`);
    const oddDelta = this.columns.map(() => 0);
    const ids: string[] = [];
    for (const r of stmt.all(maxLwt) as { id: string; odd: number }[]) {
      ids.push(r.id);
      this.countOdd(r.odd, -1, oddDelta);
    }
    return { ids, oddDelta };
  }

  /** Applies a purge that SQLite committed. */
  purged(p: { ids: string[]; oddDelta: number[] }): void {
    for (const id of p.ids) this.cache.delete(id);
    p.oddDelta.forEach((d, i) => (this.unfaithful[i] = (this.unfaithful[i] ?? 0) + d));
  }

  /** Ids of live documents whose text fields contain `text`; see TextIndex.search. */
  search(text: string, limit: number, order: { index: readonly string[]; direction: 'asc' | 'desc' } | undefined): string[] {
    if (!this.text) throw new Error(`The collection of ${this.name} has no text search (the storage's textSearch setting names its fields).`);
    let by: TextOrder | undefined;
    if (order) {
      const column = this.column(order.index);
      if (!column) throw new Error(`${this.name} has no index ${indexName(order.index)}; its indexes are ${this.columns.map((c) => `[${indexName(c.fields)}]`).join(', ')}.`);
      by = { column: column.column, direction: order.direction };
    }
    const rows = Number(this.prepared('rows', () => `SELECT coalesce(max(rowid), 0) FROM "${this.table}"`).pluck().get());
    return this.text.search(text, limit, by, rows);
  }

  /** Deletes the table, its text index and its registry entry. Must run inside a transaction. */
  drop(): void {
    const db = this.file.db;
    if (this.text) db.exec(`DROP TABLE IF EXISTS "${this.text.table}"`);
    db.exec(`DROP TABLE IF EXISTS "${this.table}"`);
    db.prepare('DELETE FROM instances WHERE name = ?').run(this.name);
    // A later open of this name makes a new table, even while this object still has users.
    if (TABLES.get(this.file)?.get(this.name) === this) TABLES.get(this.file)?.delete(this.name);
    this.cache.clear();
    this.lastSeq = 0;
    this.unfaithful.fill(0);
  }
}

/** Creates the documents table of `setup.name` if needed, or rebuilds its index columns and text
 * index when the schema's set differs from the stored one; returns the table's name. */
function ensureTable(file: StorageFile, setup: TableSetup): string {
  const db = file.db;
  const wanted: ColumnsRecord = indexColumns(setup.schema).map((c) => ({ column: c.column, fields: c.fields }));
  if (wanted.length > 30) throw new Error(`${setup.name}: at most 30 indexes per collection (this schema has ${wanted.length}).`);
  const columnsJson = JSON.stringify(wanted);
  const textJson = JSON.stringify(setup.textFields);
  return file.write(true, () => {
    const row = db.prepare<[string], { tbl: string; columns: string; text_fields: string }>('SELECT tbl, columns, text_fields FROM instances WHERE name = ?').get(setup.name);
    if (row && row.columns === columnsJson && row.text_fields === textJson) return row.tbl;
    if (row) {
      rebuild(db, row.tbl, JSON.parse(row.columns) as ColumnsRecord, JSON.parse(row.text_fields) as string[], setup);
      db.prepare('UPDATE instances SET columns = ?, text_fields = ? WHERE name = ?').run(columnsJson, textJson, setup.name);
      return row.tbl;
    }
    const n = Number(db.prepare("SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'tables'), 0) + 1").pluck().get());
    db.prepare("INSERT INTO meta (key, value) VALUES ('tables', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(n));
    const table = `d${n}`;
    db.exec(`CREATE TABLE "${table}" (seq INTEGER NOT NULL, id TEXT NOT NULL, deleted INTEGER NOT NULL, lwt REAL NOT NULL, odd INTEGER NOT NULL, doc TEXT NOT NULL${wanted.map((c) => `, "${c.column}" TEXT NOT NULL`).join('')});
      CREATE UNIQUE INDEX "${table}_id" ON "${table}" (id);
      CREATE UNIQUE INDEX "${table}_seq" ON "${table}" (seq);
      CREATE INDEX "${table}_tombstones" ON "${table}" (lwt) WHERE deleted = 1;
      CREATE INDEX "${table}_odd" ON "${table}" (odd) WHERE odd <> 0;
      ${wanted.map((c) => `CREATE INDEX "${table}_${c.column}" ON "${table}" ("${c.column}");`).join('\n')}`);
    if (setup.textFields.length > 0) db.exec(TextIndex.ddl(`${table}_fts`, setup.textFields));
    db.prepare('INSERT INTO instances (name, tbl, columns, text_fields) VALUES (?, ?, ?, ?)').run(setup.name, table, columnsJson, textJson);
    return table;
  });
}

/**
 * Brings an existing table to another index set or text fields: drops the columns and indexes no
 * longer wanted, adds the new ones, recomputes every row's index strings and odd bits from its
 * document, and refills the text index. Rare (RxDB refuses a changed schema under one version; a
 * changed textSearch setting or a newer RxDB's default indexes would do it), so simple over fast.
 */
function rebuild(db: SqliteDatabase, table: string, had: ColumnsRecord, hadText: readonly string[], setup: TableSetup): void {
  const columns = indexColumns(setup.schema);
  const keep = new Set(columns.map((c) => c.column));
  for (const c of had) {
    if (keep.has(c.column)) continue;
    db.exec(`DROP INDEX IF EXISTS "${table}_${c.column}"; ALTER TABLE "${table}" DROP COLUMN "${c.column}"`);
  }
  const existing = new Set(had.map((c) => c.column));
  for (const c of columns) if (!existing.has(c.column)) db.exec(`ALTER TABLE "${table}" ADD COLUMN "${c.column}" TEXT NOT NULL DEFAULT ''`);
  const textChanged = JSON.stringify(hadText) !== JSON.stringify(setup.textFields);
  const fts = `${table}_fts`;
  if (textChanged) {
    db.exec(`DROP TABLE IF EXISTS "${fts}"`);
    if (setup.textFields.length > 0) db.exec(TextIndex.ddl(fts, setup.textFields));
  }
  const text = textChanged && setup.textFields.length > 0 ? new TextIndex(db, fts, table, setup.textFields) : null;
  const update = db.prepare(`UPDATE "${table}" SET odd = ?${columns.map((c) => `, "${c.column}" = ?`).join('')} WHERE rowid = ?`);
  const page = db.prepare<[number], { rowid: number; doc: string }>(`SELECT rowid, doc FROM "${table}" WHERE rowid > ? ORDER BY rowid LIMIT 1000`);
  for (let after = 0; ; ) {
    const rows = page.all(after);
    for (const r of rows) {
      const doc = JSON.parse(r.doc) as Doc;
      let odd = 0;
      columns.forEach((c, i) => {
        if (!c.faithful(doc)) odd |= 1 << i;
      });
      update.run(odd, ...columns.map((c) => c.keyOf(doc)), r.rowid);
      text?.put(r.rowid, undefined, doc);
    }
    const last = rows[rows.length - 1];
    if (!last) break;
    after = last.rowid;
  }
  for (const c of columns) db.exec(`CREATE INDEX IF NOT EXISTS "${table}_${c.column}" ON "${table}" ("${c.column}")`);
}
