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
 *   sodd     the same for the Store columns (store-columns.ts);
 *   s_...    one column per Store column of the collection's layout (store-columns.ts);
 *   k_...    one column per RxDB index (index-columns.ts), each with a SQLite index: RxDB's
 *            default indexes (`[_deleted, id]`, `[_meta.lwt, id]`) are computed from the row's
 *            deleted, lwt and id (a virtual column, in its index only, with an override column
 *            that is NULL unless the expression does not give the row's string) and their index is
 *            built when a query first reads them (wantIndex); other indexes are stored strings;
 *   doc      the RxDB document by shape (doc-codec.ts: without key names, the id or constant
 *            values; last, so the columns before it are read without reading it).
 * Plus, for collections with text search, an FTS5 table keyed by the rowid (fts.ts), and a side
 * table per member field of the layout.
 *
 * Storage instances of one name in one process share this object (refcounted): its cache, its
 * change stream and its sequence counter.
 *
 * Loading: an index whose keys arrive in random order (RxDB's `[_deleted, id]`, a name, an email)
 * costs every written row a page write per such index, which made an initial sync of 100k leads
 * several times slower than the documents alone, and grows with the table. A bulk write
 * (BULK_ROWS rows or more) into a table holding fewer rows than it brings starts a load: those
 * indexes (RxDB's index columns' and the layout's `afterLoad` ones, store-columns.ts AfterLoad:
 * which loads leave each out; the identity keys' look-ups are answered meanwhile from in-memory
 * maps, load-probes.ts) are dropped, in that write's transaction, and
 * built again from sorted keys once no bulk write came for LOAD_QUIET_MS and no pull with more
 * pages coming holds them (holdLoad, bounded by LOAD_HOLD_MS), one index after the other, each in
 * the file's worker thread (StorageFile.inWorker: a build is one statement of up to seconds at 1M
 * rows, which on this thread held the event loop that long; writes meanwhile wait in the file's
 * queue), or all at once by finishLoading. The documents, their columns, member tables and the
 * other indexes are written as always; a load (pulled or local) leaves its texts waiting for the
 * text index, which the worker fills after the indexes, in slices (fts.ts); a query meanwhile
 * reads without the missing indexes (the same answers, more rows read). The state is in the file, so a load cut short by a
 * quit is finished after the next open.
 *
 * Long (~700 lines) because every statement that touches the documents table is here, so that the
 * row layout (columns, odd bits, member tables, text rows, deferred indexes) is written and read in
 * one place; the Store's query planning is store-query.ts, SQL translation store-sql.ts.
 */
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { Subject } from 'rxjs';
import type { EventBulk, RxDocumentData, RxJsonSchema, RxStorageChangeEvent } from 'rxdb';
import { getPrimaryFieldOfPrimaryKey } from 'rxdb';
import { DocCache } from './doc-cache.ts';
import { docCodec } from './doc-codec.ts';
import type { DocCodec, RowKeys } from './doc-codec.ts';
import { statementsOn } from './file.ts';
import type { StorageFile } from './file.ts';
import { TextIndex } from './fts.ts';
import type { TextOrder } from './fts.ts';
import { computedColumnSql, fnv1a, indexColumns, indexName, overrideColumn } from './index-columns.ts';
import { IdFilter } from './id-filter.ts';
import { HEAD_ROWS, LoadHeads, OrderHead } from './load-heads.ts';
import { PROBE_TUNING, RowsByHash } from './load-probes.ts';
import type { HeadChanges, HeadRow } from './load-heads.ts';
import type { IndexColumn, KeyRange } from './index-columns.ts';
import { forkOf, isMetaSchema, link, materialize, materializeAll, MetaCodec, metaFollows, unlink } from './master-states.ts';
import { layoutRecord, leftOutOfLoad, NO_MEMBERS, resolveLayout, sameLayout, storeOddOf, storeValues } from './store-columns.ts';
import type { AfterLoad, MemberTable, ResolvedLayout, SqlValue, StoreColumn, StoreIndex, StoreLayout } from './store-columns.ts';

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
  /** The Store's columns, member tables and indexes (store-columns.ts). */
  layout?: StoreLayout;
};

/** A row to write: the document, and the stored one it replaces (undefined for a new id). */
export type RowWrite = { before: Doc | undefined; doc: Doc };

/** What a committed write changes in memory (applied only once SQLite committed it). */
export type Written = { lastSeq: number; rows: readonly RowWrite[]; oddDelta: number[]; storeOddDelta: number[]; bulk: boolean; pulled: boolean; dropped: readonly string[]; heads: HeadChanges | null; textDeferred: boolean };

/** An index a load may leave out: its SQL, which loads leave it out, its words for the sync status. */
type Deferrable = { sql: string; afterLoad: AfterLoad; label: string };

/** Rows in one write that make it a bulk write (an initial sync's pull page, an import call). */
export const BULK_ROWS = 1000;

/** How long after its last bulk write a load counts as over. */
export const LOAD_QUIET_MS = 1500;

/**
 * The longest a hold (DocTable.holdLoad) keeps a load's index builds waiting past its quiet window
 * without being renewed. A pull renews it with every page it asks for and every full page; a pull
 * that stalls (network gone, server down, a request that hangs) lets the builds start this long
 * after, so the user gets the indexes anyway. 30 s: the time limit of a request to the server
 * (server-client.ts), so a slow page that still comes keeps the hold, while one that does not
 * fails the request, which releases it at once; the bound is for a hold nothing releases. Short
 * beside the minutes a sync that needs it takes (1M leads).
 */
export const LOAD_HOLD_MS = 30_000;

/** The quiet window and the hold's bound in force (LOAD_QUIET_MS, LOAD_HOLD_MS; a test that checks
 * reads during a load widens the window, so a slow machine does not end the load under it; tests of
 * the hold shorten both). */
export const LOAD_TUNING = { quietMs: LOAD_QUIET_MS, holdMs: LOAD_HOLD_MS };

/**
 * The slices of the text index's fill after a load (fts.ts): each moves about `ms` of work's texts
 * in the worker thread (writes meanwhile wait in the file's queue), starting at `rows` and scaled
 * after each slice by the time it took, within `minRows` and `maxRows`. Tests make them smaller.
 */
export const TEXT_FILL_TUNING = { ms: 25, rows: 1000, minRows: 100, maxRows: 20_000 };

/** Prepared statements of the Store's queries kept per table. */
const STORE_STATEMENTS = 300;

/** Documents a scan reads per statement: a scan that stops early reads little more than it needed. */
const SCAN_CHUNK = 256;

/** The registry's description of a table's index columns, to detect a changed index set. */
type ColumnsRecord = { column: string; fields: readonly string[] }[];

const TABLES = new WeakMap<StorageFile, Map<string, DocTable>>();

export class DocTable {
  private refs = 0;
  /** The last user released it: no timer is armed and no build starts any more. */
  private released = false;
  readonly changes = new Subject<ChangeBulk>();
  readonly cache: DocCache<Doc>;
  readonly columns: readonly IndexColumn[];
  readonly text: TextIndex | null;
  readonly primaryPath: string;
  private lastSeq: number;
  /** Rows with each column's odd bit set (see the file comment). */
  private readonly unfaithful: number[];
  /** The Store's columns, member tables and indexes. */
  readonly layout: ResolvedLayout;
  /** Rows with each bit of `sodd` set (bit 0: the id; then one per Store column). */
  private readonly storeUnfaithful: number[];
  private readonly byStoreKey = new Map<string, StoreColumn>();
  private readonly memberStatements: { table: MemberTable; add: Statement; remove: Statement }[];
  private readonly byIndex = new Map<string, IndexColumn>();
  /** The write of a row that replaces a stored one (RETURNING its rowid). */
  private readonly upsert: Statement;
  /**
   * The write of a new row (no stored row of its id: RowWrite.before undefined): a plain INSERT,
   * which SQLite runs without a statement journal. A RETURNING clause (or an upsert's DO UPDATE
   * with it) makes SQLite keep one inside a transaction: the first change of each page a statement
   * touches is copied to a sub-journal first, a file once it passes 64 KiB, so every row written
   * cost about ten 4 KiB pwrite() calls (measured with strace: 121k against 32k pwrite calls for
   * 40k rows of a table with five indexes; in a profile of a pulled load, 23% of the samples). A
   * duplicate id fails loudly (UNIQUE) instead of updating a row the write did not know.
   */
  private readonly insert: Statement;
  /** Per index column: computed from the row's columns (index-columns.ts indexSql), or stored. */
  private readonly computed: boolean[];
  /** Prepared statements by connection (reads go to the file's read-only one while a pulled page's
   * transaction is open: StorageFile.reads), by key. */
  private readonly statements = new WeakMap<SqliteDatabase, Map<string, Statement>>();
  private readonly storeStatements = new WeakMap<SqliteDatabase, Map<string, Statement>>();
  /** Documents written by the open pulled page's transaction (StorageFile.openPage), by id: what
   * the page's own reads see (the cache holds committed documents only); empty otherwise. */
  private readonly pending = new Map<string, Doc>();
  /** The sequence number of the open page's last row in this table, or null. */
  private pendingSeq: number | null = null;
  /** Indexes built after a load (see the file comment), by name: their SQL, and which loads leave
   * them out (store-columns.ts AfterLoad). */
  private readonly deferrable = new Map<string, Deferrable>();
  /** Those not in the file now. */
  private readonly missing = new Set<string>();
  /** The first rows of the orders whose index a load dropped (load-heads.ts), and where each such
   * index's keys are among a written row's Store values. */
  readonly heads = new LoadHeads();
  private readonly headKeys = new Map<string, number[]>();
  /**
   * Indexes of computed RxDB index columns that no query has read yet. RxDB's default indexes
   * (`[_deleted, id]`, `[_meta.lwt, id]`) are all a collection of this app has, and no query of the
   * app plans on them (the Store reads its own columns, the changes feed the sequence, a document
   * by id the id's index): kept up for every document they cost ~110 bytes a lead, and as much again
   * in the replication's meta table. Built in the worker the first time a query or count reads the
   * column (that query is answered without it, as SQLite plans it: the same rows), then kept.
   */
  private readonly unbuilt = new Map<string, Deferrable>();
  /** The 'probed' Store indexes (store-columns.ts AfterLoad): each one's column among the Store values. */
  private readonly probed = new Map<string, { column: string; pos: number }>();
  /** While such indexes are missing, the maps answering look-ups on their columns (load-probes.ts),
   * by index name; null until a look-up needs them (filled from the table then). */
  private probes: Map<string, { pos: number; rows: RowsByHash }> | null = null;
  /** Indexes built at once, before the quiet window: a load of local documents grew the table past
   * the bound of the probe maps (PROBE_TUNING). */
  private readonly urgent = new Set<string>();
  private readonly buildingUnbuilt = new Set<string>();
  private loading = false;
  private lastBulkAt = 0;
  /** Until when (Date.now()) the next index build of a load waits, beyond the quiet window: a
   * pull with more pages coming holds it (holdLoad); 0: no hold. */
  private heldUntil = 0;
  private loadTimer: ReturnType<typeof setTimeout> | null = null;
  /** The build under way in the worker, if any. */
  private building: Promise<void> | null = null;
  private finishing = false;
  /** Texts the next slice of the text index's fill moves (TEXT_FILL_TUNING). */
  private fillRows = TEXT_FILL_TUNING.rows;
  /** The fill's words for the sync status. */
  private readonly fillLabel: string;
  /** @internal Rows read by scans since open, for tests and benchmarks. */
  rowsScanned = 0;
  /** @internal Ids `get` looked up with a statement since open, for tests. */
  idsRead = 0;
  readonly schema: RxJsonSchema<Doc>;
  /** A replication meta table's assumed-master states stored by reference (master-states.ts). */
  private readonly masters: MetaCodec | null;
  /** How documents are stored in the `doc` column (doc-codec.ts). */
  readonly codec: DocCodec;
  /** The ids this table may hold, while it holds only rows this process wrote (it was empty at
   * open): `get` reads no statement for the others (id-filter.ts). Null otherwise, or once full. */
  private idFilter: IdFilter | null;

  private constructor(
    readonly file: StorageFile,
    readonly name: string,
    /** The SQLite table. */
    readonly table: string,
    setup: TableSetup,
  ) {
    const db = file.db;
    this.schema = setup.schema;
    this.codec = docCodec(db);
    this.masters = isMetaSchema(setup.schema) ? masterCodec(file, table, setup.schema) : null;
    this.cache = new DocCache<Doc>(setup.cacheSize);
    this.primaryPath = getPrimaryFieldOfPrimaryKey(setup.schema.primaryKey);
    this.columns = indexColumns(setup.schema);
    for (const c of this.columns) this.byIndex.set(indexName(c.fields), c);
    this.text = setup.textFields.length > 0 ? new TextIndex(db, `${table}_fts`, table, setup.textFields, () => file.reads) : null;
    this.layout = resolveLayout(table, setup.schema, setup.layout);
    for (const c of this.layout.columns) this.byStoreKey.set(c.key, c);
    this.memberStatements = this.layout.members.map((m) => ({
      table: m,
      add: db.prepare(`INSERT OR IGNORE INTO "${m.table}" (value, rid) VALUES (?, ?)`),
      remove: db.prepare(`DELETE FROM "${m.table}" WHERE value = ? AND rid = ?`),
    }));
    const t = `"${table}"`;
    // Computed index columns (index-columns.ts indexSql): the row holds their override only, set
    // where the expression may not give the document's string (IndexColumn.sqlGives).
    const inTable = new Set(db.prepare<[], { name: string }>(`PRAGMA table_xinfo(${t})`).all().map((c) => c.name));
    this.computed = this.columns.map((c) => c.sql !== null && inTable.has(overrideColumn(c.column)));
    const cols = ['seq', 'id', 'deleted', 'lwt', 'odd', 'sodd', 'doc', ...this.layout.columns.map((c) => `"${c.column}"`), ...this.columns.map((c, i) => `"${this.computed[i] ? overrideColumn(c.column) : c.column}"`)];
    this.upsert = db.prepare(
      `INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) ` +
        `ON CONFLICT (id) DO UPDATE SET ${cols.filter((c) => c !== 'id').map((c) => `${c} = excluded.${c}`).join(', ')} RETURNING rowid`,
    ).pluck();
    this.insert = db.prepare(`INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);

    this.lastSeq = Number(db.prepare(`SELECT coalesce(max(seq), 0) FROM ${t}`).pluck().get());
    this.idFilter = db.prepare(`SELECT 1 FROM ${t} LIMIT 1`).get() === undefined ? new IdFilter() : null;
    this.unfaithful = this.columns.map(() => 0);
    for (const odd of db.prepare(`SELECT odd FROM ${t} WHERE odd <> 0`).pluck().iterate() as Iterable<number>) this.countOdd(odd, 1, this.unfaithful);
    this.storeUnfaithful = new Array<number>(this.layout.columns.length + 1).fill(0);
    for (const odd of db.prepare(`SELECT sodd FROM ${t} WHERE sodd <> 0`).pluck().iterate() as Iterable<number>) this.countOdd(odd, 1, this.storeUnfaithful);
    const collection = name.slice(0, name.lastIndexOf('-'));
    this.fillLabel = `${collection} for search`;
    // Built in this order after a load: the Store's indexes first (the orders of the leads table, the
    // board, tasks: what the user sorts by), then RxDB's own.
    for (const i of this.layout.indexes) if (i.afterLoad) this.deferrable.set(i.name, { sql: storeIndexSql(table, i), afterLoad: i.afterLoad, label: indexLabel(collection, i.keys) });
    for (const i of this.layout.indexes) {
      if (i.afterLoad === 'probed' && i.columns.length === 1) this.probed.set(i.name, { column: i.columns[0] as string, pos: this.layout.columns.findIndex((c) => c.column === i.columns[0]) });
    }
    // Heads of the orders a page is read in (one key: the leads table's columns), not of indexes
    // that give an order within a pinned first key (a tag's leads by creation).
    for (const i of this.layout.indexes) if (i.afterLoad && i.ordered && i.keys.length === 1) this.headKeys.set(i.name, i.columns.map((c) => this.layout.columns.findIndex((x) => x.column === c)));
    const present = new Set(db.prepare<[string], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?").pluck().all(table));
    this.columns.forEach((c, i) => {
      const index = `${table}_${c.column}`;
      const spec: Deferrable = { sql: `CREATE INDEX IF NOT EXISTS "${index}" ON ${t} ("${c.column}")`, afterLoad: 'any', label: indexLabel(collection, c.fields) };
      // A computed column's index is built when a query first reads the column (see wantIndex).
      if (this.computed[i] && !present.has(index)) this.unbuilt.set(index, spec);
      else this.deferrable.set(index, spec);
    });
    for (const name of this.deferrable.keys()) if (!present.has(name)) this.missing.add(name);
    const flagged = db.prepare<[string], number>('SELECT loading FROM instances WHERE name = ?').pluck().get(name) === 1;
    // A load a quit cut short goes on (or is finished once nothing more arrives), its texts' fill too.
    if (flagged || this.missing.size > 0 || this.text?.waiting === true) {
      this.loading = true;
      this.armLoadTimer();
    }
    this.takeKeptHeads();
  }

  /** What a record of the heads (keepHeads) must say to be taken: the table's last sequence number
   * (any later write changes it), its row format and its Store layout. */
  private headsStamp(seq: number): string {
    return `${ROW_FORMAT}|${seq}|${layoutRecord(this.layout)}`;
  }

  /**
   * The heads the last session kept over its close (keepHeads), when the table is as they describe
   * it and its load is still on: the first pages of the orders whose index is still to be built are
   * read from them, as in the session that started the load, instead of each sorting the whole table
   * until its index is built (the leads table's first page after an import at 1M leads: 1.1-1.4 s).
   * The record is taken out of the file at once (in the open's write): one left there could describe
   * the table as it was before later writes. Each head's rows are checked against the table (the
   * row of each rowid holds its id, live): one statement a head.
   */
  private takeKeptHeads(): void {
    const db = this.file.db;
    const key = headsKey(this.table);
    const json = db.prepare<[string], string>('SELECT value FROM meta WHERE key = ?').pluck().get(key);
    if (json === undefined) return;
    this.file.write(true, () => db.prepare('DELETE FROM meta WHERE key = ?').run(key));
    if (!this.loading) return;
    const wanted = new Map<string, { index: StoreIndex; positions: readonly number[] }>();
    for (const [name, positions] of this.headKeys) {
      const index = this.layout.indexes.find((i) => i.name === name);
      if (index && this.missing.has(name)) wanted.set(name, { index, positions });
    }
    const heads = LoadHeads.fromRecord(json, this.headsStamp(this.lastSeq), wanted);
    const live = db.prepare(`SELECT count(*) FROM json_each(?) AS j JOIN "${this.table}" AS t ON t.rowid = j.value ->> 0 WHERE t.id = j.value ->> 1 AND t.deleted = 0`).pluck();
    for (const head of heads) if (live.get(JSON.stringify(head.rows.map((r) => [r.r, r.id]))) !== head.rows.length) return;
    if (heads.length > 0) this.heads.commit({ started: heads, changes: [] });
  }

  /** Keeps the heads in the file over the close (see takeKeptHeads), once the writes queued before
   * have committed; a close that cannot write them leaves the next open without them (its pages
   * then sort the table until the indexes are built, as after a crash). */
  private keepHeads(): void {
    if (!this.loading || this.heads.size === 0) return;
    const db = this.file.db;
    this.file
      .whenFree(() =>
        this.file.write(true, () => {
          if (!this.loading || this.heads.size === 0) return;
          const seq = Number(db.prepare(`SELECT coalesce(max(seq), 0) FROM "${this.table}"`).pluck().get());
          db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(headsKey(this.table), this.heads.record(this.headsStamp(seq)));
        }),
      )
      .catch(() => undefined);
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
    this.released = true;
    this.stopLoadTimer();
    this.keepHeads();
    if (TABLES.get(this.file)?.get(this.name) === this) TABLES.get(this.file)?.delete(this.name);
    this.changes.complete();
  }

  /** The sequence number of the last committed write. */
  get seq(): number {
    return this.lastSeq;
  }

  /** Whether an index (by name) is in the file now: not one a load is still to build. */
  indexReady(name: string): boolean {
    return !this.missing.has(name);
  }

  /** The collection table this replication meta table follows (master-states.ts), or undefined. */
  get follows(): string | undefined {
    return this.masters ? forkOf(this.file.db, this.table) : undefined;
  }

  /** Whether a bulk load's indexes are still to be built. */
  get isLoading(): boolean {
    return this.loading;
  }

  /**
   * Holds the load's next index build (true) for at most LOAD_TUNING.holdMs from now, each call
   * renewing it, or releases it (false). The replication holds while a pull of this collection has
   * more pages coming: a slow server or network can pause pulled pages past the quiet window, and a
   * build started then makes every later page of the pull write that index row by row (a 300k sync:
   * 229 s of CPU against 95 s with the builds after it). Only when builds start changes: a build
   * already running finishes (a CREATE INDEX cannot be cut), the next one waits; a release lets
   * them start once the quiet window is over; finishLoading does not wait. No hold outlives its
   * bound, so a pull that stalls without releasing still gets the user the indexes. A hold on a
   * table not loading is kept for a load the next pulled page starts.
   */
  holdLoad(held: boolean): void {
    this.heldUntil = held ? Date.now() + LOAD_TUNING.holdMs : 0;
    // The armed timer was set for the quiet window or an earlier hold: looked at again now.
    if (this.loadTimer) {
      this.stopLoadTimer();
      this.armLoadTimer(0);
    }
  }

  private armLoadTimer(delay = LOAD_TUNING.quietMs): void {
    if (this.loadTimer || this.released) return;
    this.loadTimer = setTimeout(() => {
      this.loadTimer = null;
      this.buildStep();
    }, delay);
    this.loadTimer.unref();
  }

  private stopLoadTimer(): void {
    if (this.loadTimer) clearTimeout(this.loadTimer);
    this.loadTimer = null;
  }

  /** Builds the next missing index once the load is quiet and not held (holdLoad), then comes back
   * for the next one. */
  private buildStep(): void {
    if (!this.loading || this.refs <= 0 || this.building || this.finishing) return;
    for (const name of this.urgent) if (!this.missing.has(name)) this.urgent.delete(name);
    const urgent = this.urgent.values().next();
    const now = Date.now();
    const wait = Math.max(LOAD_TUNING.quietMs - (now - this.lastBulkAt), this.heldUntil - now);
    if (urgent.done && wait > 0) {
      this.armLoadTimer(wait);
      return;
    }
    const next = urgent.done ? this.missing.values().next() : urgent;
    if (next.done && this.text?.waiting) {
      // The indexes first (the orders the user sorts by), then the texts, a slice at a time: a pull
      // that starts again meanwhile (the quiet window) has the next slice wait for it.
      this.fill().then(
        () => this.armLoadTimer(0),
        () => this.armLoadTimer(),
      );
      return;
    }
    if (next.done) {
      void this.finishLoading().catch(() => this.armLoadTimer());
      return;
    }
    // A failed build (a full disk) is tried again after a quiet while; reads go on without it.
    this.build(next.value).then(
      () => this.armLoadTimer(0),
      () => this.armLoadTimer(),
    );
  }

  /** Builds one missing index in the file's worker thread. */
  private build(name: string): Promise<void> {
    const index = this.deferrable.get(name);
    if (!index) throw new Error(`${this.name}: no deferred index ${name}.`);
    const run = this.file.inWorker(index.sql, index.label).then(() => {
      this.missing.delete(name);
      this.heads.drop(name);
      this.urgent.delete(name);
      this.probes?.delete(name);
      if (this.probes?.size === 0) this.probes = null;
    });
    this.building = run.finally(() => {
      this.building = null;
    });
    return run;
  }

  /** Moves the next slice of the texts a load left waiting into the text index, in the file's
   * worker thread (fts.ts); the next slice's size follows this one's time (TEXT_FILL_TUNING). */
  private fill(): Promise<void> {
    const text = this.text;
    if (!text) return Promise.resolve();
    const rows = this.fillRows;
    const started = performance.now();
    const run = this.file.inWorker(text.fillSql(rows), this.fillLabel).then(() => {
      const ms = Math.max(1, performance.now() - started);
      const t = TEXT_FILL_TUNING;
      this.fillRows = Math.round(Math.min(t.maxRows, Math.max(t.minRows, (rows * t.ms) / ms)));
      text.afterFill(this.file.db);
    });
    this.building = run.finally(() => {
      this.building = null;
    });
    return run;
  }

  /** Starts building the index of a computed column no query had read (see `unbuilt`). */
  private wantIndex(column: IndexColumn): void {
    const name = `${this.table}_${column.column}`;
    const spec = this.unbuilt.get(name);
    if (!spec || this.buildingUnbuilt.has(name)) return;
    this.buildingUnbuilt.add(name);
    // A failed build (a full disk, the table dropped meanwhile) is tried again by the next query.
    void this.file
      .inWorker(spec.sql, spec.label)
      .then(
        () => {
          this.unbuilt.delete(name);
          this.deferrable.set(name, spec);
        },
        () => undefined,
      )
      .finally(() => this.buildingUnbuilt.delete(name));
  }

  /** @internal Whether the index of an RxDB index column is in the file or being built, for tests. */
  indexBuiltOrAsked(column: IndexColumn): boolean {
    const name = `${this.table}_${column.column}`;
    return !this.unbuilt.has(name) || this.buildingUnbuilt.has(name);
  }

  /**
   * The rows that may hold one of `values` (as stored) in a Store column whose 'probed' index a load
   * left out, from the column's probe map (load-probes.ts; filled from the table on the first
   * call): a superset of the rows that do, which the caller tests in SQL. Null when no map answers:
   * the column has no such index or it is built, a value is not a string (a missing key is not
   * mapped), or the table is over the maps' bound.
   */
  probeRows(column: string, values: readonly SqlValue[]): number[] | null {
    let name: string | undefined;
    for (const [n, p] of this.probed) if (p.column === column && this.missing.has(n)) name = n;
    if (name === undefined || !values.every((v) => typeof v === 'string')) return null;
    if (!this.probes) {
      if (this.rowEstimate() > PROBE_TUNING.rows) return null;
      this.probes = this.fillProbes();
    }
    const map = this.probes.get(name);
    if (!map) return null;
    const rows = new Set<number>();
    for (const v of values) map.rows.find(fnv1a(v as string), rows);
    return [...rows];
  }

  /** A probe map for each 'probed' index missing now, from the table's live rows. */
  private fillProbes(): Map<string, { pos: number; rows: RowsByHash }> {
    const out = new Map<string, { pos: number; rows: RowsByHash }>();
    const wanted = [...this.probed].filter(([name]) => this.missing.has(name));
    if (wanted.length === 0) return out;
    const size = this.rowEstimate();
    for (const [name, p] of wanted) out.set(name, { pos: p.pos, rows: new RowsByHash(size) });
    // The main connection, also while a pulled page's transaction is open (StorageFile.reads): the
    // page's rows written so far are in the maps too (a map may name more rows than match; none fewer).
    const read = this.file.db.prepare(`SELECT rowid AS r, ${wanted.map(([, p], i) => `"${p.column}" AS v${i}`).join(', ')} FROM "${this.table}" WHERE deleted = 0`).raw();
    const maps = [...out.values()];
    for (const row of read.iterate() as Iterable<unknown[]>) {
      const rowid = row[0] as number;
      for (let i = 0; i < maps.length; i++) {
        const v = row[i + 1];
        if (typeof v === 'string') (maps[i] as { rows: RowsByHash }).rows.add(fnv1a(v), rowid);
      }
    }
    return out;
  }

  /**
   * The table grew past the probe maps' bound: a load of local documents builds the probed indexes
   * now (the maps answer until each is built, and later writes keep the built ones up); in a load of
   * pulled documents, whose builds wait for the end of the pull, the maps go and look-ups read the
   * table meanwhile, as they do in a sync that started over the bound.
   */
  private probesOverBound(pulled: boolean): void {
    if (pulled) {
      this.probes = null;
      return;
    }
    for (const name of this.probes?.keys() ?? []) this.urgent.add(name);
    this.stopLoadTimer();
    this.armLoadTimer(0);
  }

  /** Builds every index a load left out, now, one after the other in the file's worker thread (the
   * end of a migration, tests); resolves once the load is over. */
  async finishLoading(): Promise<void> {
    if (!this.loading || this.finishing) return;
    this.stopLoadTimer();
    this.finishing = true;
    try {
      if (this.building) await this.building.catch(() => undefined);
      for (let next = this.missing.values().next(); !next.done; next = this.missing.values().next()) {
        // Released meanwhile (its file closing): the load goes on at the next open.
        if (this.released) throw new Error(`${this.name}: closed before its load's indexes were built.`);
        await this.build(next.value);
      }
      while (this.text?.waiting) {
        if (this.released) throw new Error(`${this.name}: closed before its load's texts were indexed.`);
        await this.fill();
      }
      await this.file.whenFree(() => this.file.write(true, () => this.file.db.prepare('UPDATE instances SET loading = 0 WHERE name = ?').run(this.name)));
      this.loading = false;
      // A pulled page that deferred its texts meanwhile starts their fill again.
      if (this.text?.waiting) {
        this.loading = true;
        this.armLoadTimer();
      }
    } finally {
      this.finishing = false;
    }
  }

  /** The column of an RxDB index (as a query plan names it), or undefined. */
  column(fields: readonly string[]): IndexColumn | undefined {
    return this.byIndex.get(indexName(fields));
  }

  /** Whether every row's index string of `column` orders it as RxDB's sort comparator would. */
  faithful(column: IndexColumn): boolean {
    return this.unfaithful[this.columns.indexOf(column)] === 0;
  }

  /** The Store column of a key (`field` or `fold:field`), or undefined. */
  storeColumn(key: string): StoreColumn | undefined {
    return this.byStoreKey.get(key);
  }

  /** Whether every row's value of a Store column is stored faithfully (store-columns.ts). */
  storeFaithful(column: StoreColumn): boolean {
    return this.storeUnfaithful[Math.log2(column.bit)] === 0;
  }

  /** Whether SQLite orders every id as JavaScript does. */
  idsFaithful(): boolean {
    return this.storeUnfaithful[0] === 0;
  }

  /** The member table of an array field, or undefined. */
  memberTable(field: string): MemberTable | undefined {
    return this.layout.members.find((m) => m.field === field);
  }

  /** About how many rows the table has (the largest rowid: rowids are not reused while it lives). */
  rowEstimate(): number {
    return Number(this.prepared('rows', () => `SELECT coalesce(max(rowid), 0) FROM "${this.table}"`).pluck().get());
  }

  /**
   * The documents of these rows, in the order given: from the cache when there, else read by
   * rowid and parsed. `fresh[i]` says whether documents[i] was parsed for this call (nobody else
   * holds it: the caller may change it); with `cache`, parsed documents are cached (and then not
   * fresh).
   */
  docsOf(rows: readonly { rowid: number; id: string }[], cache: boolean): { docs: Doc[]; fresh: boolean[] } {
    const docs: Doc[] = new Array<Doc>(rows.length);
    const fresh: boolean[] = new Array<boolean>(rows.length).fill(false);
    const missing: number[] = [];
    rows.forEach((r, i) => {
      const hit = this.cache.get(r.id);
      if (hit) docs[i] = hit;
      else missing.push(i);
    });
    if (missing.length > 0) {
      const byRowid = new Map<number, { doc: string; lwt: number }>();
      const stmt = this.prepared('by-rowid', () => `SELECT rowid AS r, doc, lwt FROM "${this.table}" WHERE rowid IN (SELECT value FROM json_each(?))`);
      for (const row of stmt.iterate(JSON.stringify(missing.map((i) => (rows[i] as { rowid: number }).rowid))) as Iterable<{ r: number; doc: string; lwt: number }>) byRowid.set(row.r, row);
      for (const i of missing) {
        const r = rows[i] as { rowid: number; id: string };
        const stored = byRowid.get(r.rowid);
        if (stored === undefined) throw new Error(`${this.name}: row ${r.rowid} (${r.id}) vanished while it was read.`);
        docs[i] = this.codec.decode(stored.doc, { id: r.id, lwt: stored.lwt }) as Doc;
      }
      this.masters?.decode(missing.map((i) => docs[i] as Doc));
      for (const i of missing) {
        const r = rows[i] as { rowid: number; id: string };
        if (cache) this.cache.set(r.id, docs[i] as Doc);
        else fresh[i] = true;
      }
    }
    this.rowsScanned += missing.length;
    return { docs, fresh };
  }

  /** A prepared statement on this table's file, kept by `key` (the Store's queries, whose SQL
   * varies with the shape of the condition: the most recently used few hundred are kept). */
  statement(key: string, sql: () => string): Statement {
    const db = this.file.reads;
    const kept = statementsOn(this.storeStatements, db);
    let stmt = kept.get(key);
    if (stmt) {
      kept.delete(key);
    } else {
      stmt = db.prepare(sql());
      if (kept.size >= STORE_STATEMENTS) {
        const oldest = kept.keys().next();
        if (!oldest.done) kept.delete(oldest.value);
      }
    }
    kept.set(key, stmt);
    return stmt;
  }

  private parse(id: string, json: string, lwt: number): Doc {
    const hit = this.cache.get(id);
    if (hit) return hit;
    const doc = this.codec.decode(json, { id, lwt }) as Doc;
    this.masters?.decode([doc]);
    return doc;
  }

  /** The stored documents of these ids (deleted ones included), by id. Found documents are cached. */
  get(ids: readonly string[]): Map<string, Doc> {
    const out = new Map<string, Doc>();
    const missing: string[] = [];
    // The open page's own reads see its documents (the cache and other reads: the committed ones).
    const pending = this.pending.size > 0 && this.file.reads === this.file.db ? this.pending : null;
    const filter = this.idFilter;
    for (const id of ids) {
      const written = pending?.get(id);
      if (written) {
        out.set(id, written);
        continue;
      }
      const hit = this.cache.get(id);
      if (hit) out.set(id, hit);
      else if (filter === null || filter.mayHold(id)) missing.push(id);
    }
    const read: Doc[] = [];
    this.idsRead += missing.length;
    if (missing.length <= 4) {
      for (const id of missing) {
        if (out.has(id)) continue;
        const stored = this.prepared('get-one', () => `SELECT doc, lwt FROM "${this.table}" WHERE id = ?`).get(id) as { doc: string; lwt: number } | undefined;
        if (stored !== undefined) {
          const doc = this.codec.decode(stored.doc, { id, lwt: stored.lwt }) as Doc;
          out.set(id, doc);
          read.push(doc);
        }
      }
    } else {
      const many = this.prepared('get-many', () => `SELECT id, doc, lwt FROM "${this.table}" WHERE id IN (SELECT value FROM json_each(?))`);
      for (const row of many.iterate(JSON.stringify(missing)) as Iterable<{ id: string; doc: string; lwt: number }>) {
        const doc = this.codec.decode(row.doc, row) as Doc;
        out.set(row.id, doc);
        read.push(doc);
      }
    }
    this.masters?.decode(read);
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
   * the file's write transaction; nothing in memory changes until `committed`. `pulled`: the rows
   * come from the server (they decide which indexes a load leaves out). */
  write(rows: readonly RowWrite[], pulled: boolean): Written {
    const steps = this.writing(rows, pulled);
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
    }
  }

  /** `write` as steps, yielding after each row (a pulled page's write spreads them over turns of
   * the event loop: StorageFile.openPage). In a page, the written documents are what the page's
   * own later reads get (`pending`) until it commits. */
  *writing(rows: readonly RowWrite[], pulled: boolean): Generator<void, Written> {
    const inPage = this.file.pageOpen;
    const bulk = rows.length >= BULK_ROWS;
    // A bulk write into a table holding fewer rows than it brings starts a load (file comment).
    const dropped: string[] = [];
    const started: OrderHead[] = [];
    if (bulk && !this.loading && this.deferrable.size > 0 && this.rowEstimate() < rows.length) {
      // A local load the probe maps could not follow (load-probes.ts) keeps the probed indexes up.
      const probeable = pulled || this.rowEstimate() + rows.length <= PROBE_TUNING.rows;
      for (const [name, index] of this.deferrable) {
        if (!leftOutOfLoad(index.afterLoad, pulled) || (index.afterLoad === 'probed' && !probeable)) continue;
        const ordered = this.headKeys.has(name) ? this.layout.indexes.find((i) => i.name === name) : undefined;
        if (ordered && this.indexReady(name)) started.push(...this.startHeads(ordered));
        this.file.db.exec(`DROP INDEX IF EXISTS "${name}"`);
        dropped.push(name);
      }
      if (dropped.length > 0) this.file.db.prepare('UPDATE instances SET loading = 1 WHERE name = ?').run(this.name);
    }
    // Meta rows referencing a replaced document keep its old state (master-states.ts).
    const replaced: { id: string; doc: Doc }[] = [];
    for (const r of rows) if (r.before) replaced.push({ id: String((r.before as Record<string, unknown>)[this.primaryPath]), doc: r.before });
    materialize(this.file.db, this.table, replaced);
    const stored = this.masters ? this.masters.encode(rows.map((r) => r.doc)) : null;
    let seq = this.pendingSeq ?? this.lastSeq;
    const oddDelta = this.columns.map(() => 0);
    const storeOddDelta = this.storeUnfaithful.map(() => 0);
    const store = this.layout.columns;
    const values: unknown[] = new Array<unknown>(7 + store.length + this.columns.length);
    const rowids: (number | bigint)[] = [];
    const heads = this.heads.size > 0 || started.length > 0 ? this.heads.all(started) : [];
    const headChanges: HeadChanges['changes'] = [];
    // The row's columns encode reads (one object for every row: encode keeps none).
    const rowKeys: RowKeys = { id: '', lwt: 0 };
    for (let n = 0; n < rows.length; n++) {
      const { before, doc } = rows[n] as RowWrite;
      const odd = this.oddOf(doc);
      const id = String((doc as Record<string, unknown>)[this.primaryPath]);
      const sodd = storeValues(this.layout, id, doc, values, 7);
      values[0] = ++seq;
      values[1] = id;
      values[2] = doc._deleted ? 1 : 0;
      values[3] = doc._meta.lwt;
      values[4] = odd;
      values[5] = sodd;
      rowKeys.id = id;
      rowKeys.lwt = doc._meta.lwt;
      values[6] = this.codec.encode((stored ? stored[n] : doc) as Record<string, unknown>, rowKeys, this.primaryPath);
      for (let i = 0; i < this.columns.length; i++) {
        const c = this.columns[i] as IndexColumn;
        values[7 + store.length + i] = this.computed[i] && c.sqlGives?.(doc) === true ? null : c.keyOf(doc);
      }
      let rowid: number | bigint;
      if (before === undefined) {
        this.idFilter?.add(id);
        if (this.idFilter?.full) this.idFilter = null;
        rowid = this.insert.run(...values).lastInsertRowid;
      } else {
        rowid = this.upsert.get(...values) as number | bigint;
      }
      rowids.push(rowid);
      if (this.probes) for (const p of this.probes.values()) {
        const v = values[7 + p.pos];
        if (typeof v === 'string') p.rows.add(fnv1a(v), Number(rowid));
      }
      for (const head of heads) {
        if (head.touches(id, values, 7, !doc._deleted, before !== undefined)) headChanges.push({ head, id, row: doc._deleted ? null : { r: Number(rowid), id, k: head.keysOf(values, 7) } });
      }
      this.countOdd(odd, 1, oddDelta);
      this.countOdd(sodd, 1, storeOddDelta);
      if (before) {
        this.countOdd(this.oddOf(before), -1, oddDelta);
        this.countOdd(storeOddOf(this.layout, id, before), -1, storeOddDelta);
      }
      if (inPage) this.pending.set(id, doc);
      yield;
    }
    if (inPage) this.pendingSeq = seq;
    this.codec.flush();
    for (const m of this.memberStatements) {
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i] as RowWrite;
        const rowid = Number(rowids[i]);
        const now = m.table.valuesOf(r.doc);
        const was = r.before ? m.table.valuesOf(r.before) : NO_MEMBERS;
        for (const v of was) if (!now.includes(v)) m.remove.run(v, rowid);
        for (const v of now) if (!was.includes(v)) m.add.run(v, rowid);
        yield;
      }
    }
    // The text rows after all document rows: FTS5 flushes its pending terms to a new segment
    // whenever another statement opens a savepoint in between, which made interleaved writes
    // twice as expensive (measured: 76 vs 39 µs of CPU per lead). A bulk write during a load (a
    // pulled page, an import's call) leaves them waiting for the fill after it (fts.ts).
    const text = this.text;
    const textDeferred = text !== null && bulk && (this.loading || dropped.length > 0);
    if (text) {
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i] as RowWrite;
        text.put(rowids[i] as number | bigint, r.before, r.doc, textDeferred);
        yield;
      }
    }
    const headWrite: HeadChanges | null = heads.length > 0 ? { started, changes: headChanges } : null;
    // A page's COMMIT only takes the heads' merges, worked out here a head a step.
    if (headWrite && inPage) yield* LoadHeads.plan(headWrite);
    return { lastSeq: seq, rows, oddDelta, storeOddDelta, bulk, pulled, dropped, heads: headWrite, textDeferred };
  }

  /** Applies a write that SQLite committed. */
  committed(w: Written): void {
    this.pending.clear();
    this.pendingSeq = null;
    this.lastSeq = w.lastSeq;
    w.oddDelta.forEach((d, i) => (this.unfaithful[i] = (this.unfaithful[i] ?? 0) + d));
    w.storeOddDelta.forEach((d, i) => (this.storeUnfaithful[i] = (this.storeUnfaithful[i] ?? 0) + d));
    if (w.dropped.length > 0) {
      this.loading = true;
      for (const name of w.dropped) this.missing.add(name);
    }
    if (w.textDeferred) this.loading = true;
    if (w.heads) this.heads.commit(w.heads);
    if (w.bulk) this.lastBulkAt = Date.now();
    if (this.probes && w.bulk && this.rowEstimate() > PROBE_TUNING.rows) this.probesOverBound(w.pulled);
    if (this.loading) this.armLoadTimer();
    // A bulk write of pulled documents (an initial sync's page: 2,000 documents, its meta rows as
    // many) is not kept: it would replace the whole cache at every page, and keep each page's
    // documents alive through the next one (into V8's old generation, collected there) for reads
    // that do not come. An entry it replaces is dropped; the documents are read again if asked for.
    const keep = !(w.bulk && w.pulled);
    for (const { doc } of w.rows) {
      const id = String((doc as Record<string, unknown>)[this.primaryPath]);
      if (keep) this.cache.set(id, doc);
      else this.cache.delete(id);
    }
  }

  /** After the open page's transaction rolled back: its documents are forgotten. */
  rolledBack(): void {
    this.pending.clear();
    this.pendingSeq = null;
  }

  /** The first rows of an ordered Store index, either way, read from it before a load drops it
   * (inside that load's first write: the table holds fewer rows than the load brings). */
  private startHeads(index: StoreIndex): OrderHead[] {
    return (['asc', 'desc'] as const).map((dir) => {
      const keys = index.columns.map((c, i) => `"${c}" AS k${i}`).join(', ');
      const by = [...index.columns.map((c) => `"${c}" ${dir.toUpperCase()}`), 'id ASC'].join(', ');
      const read = this.file.db.prepare(`SELECT rowid AS r, id, ${keys} FROM "${this.table}" INDEXED BY "${index.name}" WHERE deleted = 0 ORDER BY ${by} LIMIT ?`);
      const rows = (read.all(HEAD_ROWS + 1) as Record<string, unknown>[]).map((row): HeadRow => ({ r: row.r as number, id: row.id as string, k: index.columns.map((_, i) => row[`k${i}`] as SqlValue) }));
      return new OrderHead(index, dir, this.headKeys.get(index.name) as number[], rows);
    });
  }

  private prepared(key: string, sql: () => string): Statement {
    const db = this.file.reads;
    const kept = statementsOn(this.statements, db);
    let stmt = kept.get(key);
    if (!stmt) {
      stmt = db.prepare(sql());
      kept.set(key, stmt);
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
    this.wantIndex(column);
    const asc = direction === 'asc';
    const c = `"${column.column}"`;
    const first = this.prepared(`first ${column.column} ${range.lowerInclusive} ${range.upperInclusive} ${direction}`, () =>
      `SELECT id, doc, lwt, ${c} AS k FROM "${this.table}" WHERE ${this.rangeSql(column, range)} ORDER BY ${c} ${asc ? 'ASC' : 'DESC'} LIMIT @limit OFFSET @offset`,
    );
    // After the first chunk, continue strictly past the last key read (keys are unique: every
    // RxDB index ends with the primary key).
    const next = this.prepared(`next ${column.column} ${range.lowerInclusive} ${range.upperInclusive} ${direction}`, () =>
      `SELECT id, doc, lwt, ${c} AS k FROM "${this.table}" WHERE ${this.rangeSql(column, range)} AND ${c} ${asc ? '>' : '<'} @after ORDER BY ${c} ${asc ? 'ASC' : 'DESC'} LIMIT @limit`,
    );
    let left = limit;
    let after: string | null = null;
    while (left > 0) {
      const take = Math.min(SCAN_CHUNK, left);
      const rows = (after === null ? first.all({ lower: range.lower, upper: range.upper, limit: take, offset }) : next.all({ lower: range.lower, upper: range.upper, after, limit: take })) as { id: string; doc: string; lwt: number; k: string }[];
      this.rowsScanned += rows.length;
      for (const r of rows) yield this.parse(r.id, r.doc, r.lwt);
      const last = rows[rows.length - 1];
      if (!last || rows.length < take) return;
      after = last.k;
      left -= rows.length;
    }
  }

  /** How many rows have their index string of `column` in `range`. */
  count(column: IndexColumn, range: KeyRange): number {
    this.wantIndex(column);
    const stmt = this.prepared(`count ${column.column} ${range.lowerInclusive} ${range.upperInclusive}`, () => `SELECT count(*) FROM "${this.table}" WHERE ${this.rangeSql(column, range)}`);
    return Number(stmt.pluck().get({ lower: range.lower, upper: range.upper }));
  }

  /** Documents written after sequence number `seq`, in write order, at most `limit`. */
  changedSince(seq: number, limit: number): { seq: number; doc: Doc }[] {
    const stmt = this.prepared('changes', () => `SELECT seq, id, doc, lwt FROM "${this.table}" WHERE seq > ? ORDER BY seq LIMIT ?`);
    return (stmt.all(seq, limit) as { seq: number; id: string; doc: string; lwt: number }[]).map((r) => ({ seq: r.seq, doc: this.parse(r.id, r.doc, r.lwt) }));
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
  purge(maxLwt: number): Purged {
    // Meta rows referencing a purged tombstone keep its state (master-states.ts).
    const purging = this.prepared('purging', () => `SELECT id, doc, lwt FROM "${this.table}" WHERE deleted = 1 AND lwt <= ?`);
    materialize(this.file.db, this.table, (purging.all(maxLwt) as { id: string; doc: string; lwt: number }[]).map((r) => ({ id: r.id, doc: this.codec.decode(r.doc, r) as Doc })));
    // Tombstones have no text rows and no member rows (both are written for live documents only).
    const stmt = this.prepared('purge', () => `DELETE FROM "${this.table}" WHERE deleted = 1 AND lwt <= ? RETURNING id, odd, sodd`);
    const oddDelta = this.columns.map(() => 0);
    const storeOddDelta = this.storeUnfaithful.map(() => 0);
    const ids: string[] = [];
    for (const r of stmt.all(maxLwt) as { id: string; odd: number; sodd: number }[]) {
      ids.push(r.id);
      this.countOdd(r.odd, -1, oddDelta);
      this.countOdd(r.sodd, -1, storeOddDelta);
    }
    return { ids, oddDelta, storeOddDelta };
  }

  /** Applies a purge that SQLite committed. */
  purged(p: Purged): void {
    for (const id of p.ids) this.cache.delete(id);
    p.oddDelta.forEach((d, i) => (this.unfaithful[i] = (this.unfaithful[i] ?? 0) + d));
    p.storeOddDelta.forEach((d, i) => (this.storeUnfaithful[i] = (this.storeUnfaithful[i] ?? 0) + d));
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
    materializeAll(db, this.table);
    unlink(db, this.table);
    if (this.text) db.exec(TextIndex.dropSql(this.text.table));
    for (const m of this.layout.members) db.exec(`DROP TABLE IF EXISTS "${m.table}"`);
    db.exec(`DROP TABLE IF EXISTS "${this.table}"`);
    db.prepare('DELETE FROM instances WHERE name = ?').run(this.name);
    db.prepare('DELETE FROM meta WHERE key = ?').run(rowFormatKey(this.table));
    db.prepare('DELETE FROM meta WHERE key = ?').run(headsKey(this.table));
    // A later open of this name makes a new table, even while this object still has users.
    if (TABLES.get(this.file)?.get(this.name) === this) TABLES.get(this.file)?.delete(this.name);
    this.cache.clear();
    this.lastSeq = 0;
    this.unfaithful.fill(0);
    this.storeUnfaithful.fill(0);
    this.stopLoadTimer();
    this.loading = false;
    this.heldUntil = 0;
    this.missing.clear();
    this.heads.clear();
    this.probes = null;
    this.urgent.clear();
  }
}

/**
 * The codec of a replication meta table (master-states.ts): the collection table it follows, from
 * the file's link, or found among the file's open tables and linked now; null when none is, or when
 * several could be.
 */
function masterCodec(file: StorageFile, table: string, schema: RxJsonSchema<Doc>): MetaCodec | null {
  const db = file.db;
  const linked = forkOf(db, table);
  if (linked === undefined) {
    const candidates = [...(TABLES.get(file)?.values() ?? [])].filter((t) => t.table !== table && metaFollows(schema, t.schema));
    if (candidates.length !== 1) return null;
    // No fsync of its own (as the table's creation): a link lost to a power cut is lost with every
    // meta row written after it (the WAL loses only a suffix), and found again at the next open.
    file.write(false, () => link(db, table, (candidates[0] as DocTable).table));
  } else if (db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(linked) === undefined) {
    throw new Error(`${table}: its replication states follow table ${linked}, which the file does not hold (the file was changed outside this app).`);
  }
  return new MetaCodec(db, table, (forkTable, ids) => {
    const open = [...(TABLES.get(file)?.values() ?? [])].find((t) => t.table === forkTable);
    if (open) return open.get(ids);
    const out = new Map<string, Doc>();
    const codec = docCodec(db);
    for (const r of file.reads.prepare<[string], { id: string; doc: string; lwt: number }>(`SELECT id, doc, lwt FROM "${forkTable}" WHERE id IN (SELECT value FROM json_each(?))`).iterate(JSON.stringify(ids))) out.set(r.id, codec.decode(r.doc, r) as Doc);
    return out;
  });
}

/** "leads by full name": an index's collection and fields in words, for the sync status. */
function indexLabel(collection: string, keys: readonly string[]): string {
  // An identity key's column (`key:email`) reads "email key".
  const fields = keys.filter((k) => k !== '_deleted' && k !== '_meta.lwt').map((k) => k.replace(/^fold:/, '').replace(/^key:(.*)$/, '$1 key').replace(/[._]/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase());
  return `${collection} by ${fields.join(', ') || 'id'}`;
}

/** Whether an open meta table of the file follows the collection table (master-states.ts). */
export function followedNow(file: StorageFile, forkTable: string): boolean {
  for (const table of TABLES.get(file)?.values() ?? []) if (table.follows === forkTable) return true;
  return false;
}

/** Whether a table of the file is in a bulk load whose indexes are still to be built. */
export function fileLoading(file: StorageFile): boolean {
  for (const table of TABLES.get(file)?.values() ?? []) if (table.isLoading) return true;
  return false;
}

/** What a purge changes in memory. */
export type Purged = { ids: string[]; oddDelta: number[]; storeOddDelta: number[] };

/** The SQL of a Store index over a documents table: live documents only, the id last. */
export const storeIndexSql = (table: string, index: { name: string; columns: readonly string[]; ordered: boolean }): string =>
  `CREATE INDEX IF NOT EXISTS "${index.name}" ON "${table}" (${index.columns.map((c) => `"${c}"`).join(', ')}${index.ordered ? ', id' : ''}) WHERE deleted = 0`;

export const memberTableSql = (table: string): string => `CREATE TABLE IF NOT EXISTS "${table}" (value TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (value, rid)) WITHOUT ROWID`;

/** Creates the documents table of `setup.name` if needed, or rebuilds its index columns, Store
 * columns and text index when the wanted set differs from the stored one; returns the table's name. */
function ensureTable(file: StorageFile, setup: TableSetup): string {
  const db = file.db;
  const indexCols = indexColumns(setup.schema);
  const wanted: ColumnsRecord = indexCols.map((c) => ({ column: c.column, fields: c.fields }));
  if (wanted.length > 30) throw new Error(`${setup.name}: at most 30 indexes per collection (this schema has ${wanted.length}).`);
  const columnsJson = JSON.stringify(wanted);
  const textJson = JSON.stringify(setup.textFields);
  const layoutOf = (table: string): ResolvedLayout => resolveLayout(table, setup.schema, setup.layout);
  const recordOf = (layout: ResolvedLayout): string => (setup.layout ? layoutRecord(layout) : '');
  // Without an fsync of its own: a table made (or rebuilt) here and lost to a power cut is made
  // again at the next open, and the WAL loses only a suffix of commits, so nothing written into the
  // table survives without it (each replication's start opens a meta table: 11 fsyncs in one turn).
  return file.write(false, () => {
    docCodec(db).ensureTables();
    const row = db.prepare<[string], { tbl: string; columns: string; text_fields: string; layout: string }>('SELECT tbl, columns, text_fields, layout FROM instances WHERE name = ?').get(setup.name);
    if (row) {
      const layout = layoutOf(row.tbl);
      const layoutJson = recordOf(layout);
      if (row.columns === columnsJson && row.text_fields === textJson && sameLayout(row.layout, layoutJson)) {
        // Only which loads leave an index out changed (store-columns.ts AfterLoad): no rebuild.
        if (row.layout !== layoutJson) db.prepare('UPDATE instances SET layout = ? WHERE name = ?').run(layoutJson, setup.name);
        // A file written before texts could wait for their index gains the waiting table (fts.ts).
        if (setup.textFields.length > 0) db.exec(TextIndex.ddl(`${row.tbl}_fts`, setup.textFields));
        return row.tbl;
      }
      rebuild(db, row.tbl, { columns: JSON.parse(row.columns) as ColumnsRecord, text: JSON.parse(row.text_fields) as string[], layout: row.layout }, setup, layout);
      db.prepare('UPDATE instances SET columns = ?, text_fields = ?, layout = ? WHERE name = ?').run(columnsJson, textJson, layoutJson, setup.name);
      return row.tbl;
    }
    const n = Number(db.prepare("SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'tables'), 0) + 1").pluck().get());
    db.prepare("INSERT INTO meta (key, value) VALUES ('tables', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(n));
    const table = `d${n}`;
    const layout = layoutOf(table);
    const storeCols = layout.columns.map((c) => `, "${c.column}" NOT NULL`).join('');
    db.exec(`CREATE TABLE "${table}" (seq INTEGER NOT NULL, id TEXT NOT NULL, deleted INTEGER NOT NULL, lwt REAL NOT NULL, odd INTEGER NOT NULL, sodd INTEGER NOT NULL${storeCols}${indexCols.map((c) => `, ${indexColumnSql(c).join(', ')}`).join('')}, doc TEXT NOT NULL);
      CREATE UNIQUE INDEX "${table}_id" ON "${table}" (id);
      CREATE UNIQUE INDEX "${table}_seq" ON "${table}" (seq);
      CREATE INDEX "${table}_tombstones" ON "${table}" (lwt) WHERE deleted = 1;
      CREATE INDEX "${table}_odd" ON "${table}" (odd) WHERE odd <> 0;
      CREATE INDEX "${table}_sodd" ON "${table}" (sodd) WHERE sodd <> 0;
      ${indexCols.filter((c) => c.sql === null).map((c) => `CREATE INDEX "${table}_${c.column}" ON "${table}" ("${c.column}");`).join('\n')}`);
    for (const m of layout.members) db.exec(memberTableSql(m.table));
    for (const i of layout.indexes) db.exec(storeIndexSql(table, i));
    if (setup.textFields.length > 0) db.exec(TextIndex.ddl(`${table}_fts`, setup.textFields));
    db.prepare('INSERT INTO instances (name, tbl, columns, text_fields, layout) VALUES (?, ?, ?, ?, ?)').run(setup.name, table, columnsJson, textJson, recordOf(layout));
    markRowFormat(db, table);
    return table;
  });
}

/**
 * The row layout a table's rows are written in, recorded per table in the file's `meta` table
 * (`row-format:<table>`): 2 since documents are stored by shape (doc-codec.ts). A table without the
 * record was written by an earlier version: its rows are read as they are, and upgradeRowFormats
 * (layout-upgrade.ts) rewrites them, with progress, before the database opens.
 */
export const ROW_FORMAT = '2';

export const rowFormatKey = (table: string): string => `row-format:${table}`;

/** The `meta` key of a table's load heads kept over a close (DocTable.keepHeads). */
const headsKey = (table: string): string => `load-heads:${table}`;

/** Records that a table's rows are in this version's layout. Inside a write transaction. */
export function markRowFormat(db: SqliteDatabase, table: string): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(rowFormatKey(table), ROW_FORMAT);
}

/** The column definitions of an index column in a new table: its override and the computed
 * column where the index has an SQL form, else the stored string. */
const indexColumnSql = (c: IndexColumn): string[] => (c.sql !== null ? computedColumnSql(c) : [`"${c.column}" TEXT NOT NULL`]);

/** What a table was built with, from the registry. */
type Built = { columns: ColumnsRecord; text: readonly string[]; layout: string };

/**
 * Brings an existing table to another index set, text fields or Store layout: drops the columns,
 * indexes and member tables no longer wanted, adds the new ones, recomputes every row's index
 * strings, Store values and odd bits from its document, and refills the text index and member
 * tables. Rare (RxDB refuses a changed schema under one version; a changed setting of this storage
 * or a newer RxDB's default indexes would do it), so simple over fast.
 */
function rebuild(db: SqliteDatabase, table: string, had: Built, setup: TableSetup, layout: ResolvedLayout): void {
  const columns = indexColumns(setup.schema);
  const keep = new Set(columns.map((c) => c.column));
  const xinfo = (): Set<string> => new Set((db.prepare(`PRAGMA table_xinfo("${table}")`).all() as { name: string }[]).map((c) => c.name));
  const had0 = xinfo();
  for (const c of had.columns) {
    if (keep.has(c.column)) continue;
    db.exec(`DROP INDEX IF EXISTS "${table}_${c.column}"; ALTER TABLE "${table}" DROP COLUMN "${c.column}"`);
    if (had0.has(overrideColumn(c.column))) db.exec(`ALTER TABLE "${table}" DROP COLUMN "${overrideColumn(c.column)}"`);
  }
  const present = xinfo();
  for (const c of columns) {
    if (present.has(c.column)) continue;
    if (c.sql !== null) for (const def of computedColumnSql(c)) db.exec(`ALTER TABLE "${table}" ADD COLUMN ${def}`);
    else db.exec(`ALTER TABLE "${table}" ADD COLUMN "${c.column}" TEXT NOT NULL DEFAULT ''`);
  }
  // A column kept from before stays as it was built (stored or computed).
  const computed = columns.map((c) => c.sql !== null && xinfo().has(overrideColumn(c.column)));
  if (!present.has('sodd')) db.exec(`ALTER TABLE "${table}" ADD COLUMN sodd INTEGER NOT NULL DEFAULT 0`);
  // Store layout: indexes, columns and member tables not wanted any more go; the wanted ones are
  // (re)made and filled below.
  const storeWanted = new Set(layout.columns.map((c) => c.column));
  const indexWanted = new Set(layout.indexes.map((i) => i.name));
  const memberWanted = new Set(layout.members.map((m) => m.table));
  for (const { name } of db.prepare<[string], { name: string }>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?").all(table)) {
    if (name.startsWith(`${table}_i_`) && !indexWanted.has(name)) db.exec(`DROP INDEX "${name}"`);
  }
  for (const { name } of db.prepare<[], { name: string }>("SELECT name FROM sqlite_schema WHERE type = 'table'").all()) {
    if (name.startsWith(`${table}_m_`) && !memberWanted.has(name)) db.exec(`DROP TABLE "${name}"`);
  }
  for (const name of present) if (name.startsWith('s_') && !storeWanted.has(name)) db.exec(`ALTER TABLE "${table}" DROP COLUMN "${name}"`);
  for (const c of layout.columns) if (!present.has(c.column)) db.exec(`ALTER TABLE "${table}" ADD COLUMN "${c.column}" NOT NULL DEFAULT 0`);
  for (const m of layout.members) {
    db.exec(memberTableSql(m.table));
    db.exec(`DELETE FROM "${m.table}"`);
  }
  if (!present.has('sodd')) db.exec(`CREATE INDEX IF NOT EXISTS "${table}_sodd" ON "${table}" (sodd) WHERE sodd <> 0`);
  const textChanged = JSON.stringify(had.text) !== JSON.stringify(setup.textFields);
  const fts = `${table}_fts`;
  if (textChanged) db.exec(TextIndex.dropSql(fts));
  // IF NOT EXISTS: a file written before texts could wait for their index gains the waiting table.
  if (setup.textFields.length > 0) db.exec(TextIndex.ddl(fts, setup.textFields));
  const text = textChanged && setup.textFields.length > 0 ? new TextIndex(db, fts, table, setup.textFields) : null;
  // A computed column's override: NULL where its expression gives the string (the row's deleted, lwt
  // and id are not changed by this update).
  const sets = [...columns.map((c, i) => (computed[i] ? `"${overrideColumn(c.column)}" = CASE WHEN (${c.sql ?? ''}) IS ? THEN NULL ELSE ? END` : `"${c.column}" = ?`)), ...layout.columns.map((c) => `"${c.column}" = ?`)];
  const update = db.prepare(`UPDATE "${table}" SET odd = ?, sodd = ?${sets.map((x) => `, ${x}`).join('')} WHERE rowid = ?`);
  const addMembers = layout.members.map((m) => ({ m, add: db.prepare(`INSERT OR IGNORE INTO "${m.table}" (value, rid) VALUES (?, ?)`) }));
  const page = db.prepare<[number], { rowid: number; id: string; doc: string; lwt: number }>(`SELECT rowid, id, doc, lwt FROM "${table}" WHERE rowid > ? ORDER BY rowid LIMIT 1000`);
  for (let after = 0; ; ) {
    const rows = page.all(after);
    for (const r of rows) {
      const doc = docCodec(db).decode(r.doc, r) as Doc;
      let odd = 0;
      columns.forEach((c, i) => {
        if (!c.faithful(doc)) odd |= 1 << i;
      });
      const storeCols: unknown[] = [];
      const sodd = storeValues(layout, r.id, doc, storeCols, 0);
      update.run(odd, sodd, ...columns.flatMap((c, i) => (computed[i] ? [c.keyOf(doc), c.keyOf(doc)] : [c.keyOf(doc)])), ...storeCols, r.rowid);
      for (const { m, add } of addMembers) for (const v of m.valuesOf(doc)) add.run(v, r.rowid);
      text?.put(r.rowid, undefined, doc);
    }
    const last = rows[rows.length - 1];
    if (!last) break;
    after = last.rowid;
  }
  // A computed column's index is built when a query first reads it (DocTable.wantIndex).
  columns.forEach((c, i) => {
    if (!computed[i]) db.exec(`CREATE INDEX IF NOT EXISTS "${table}_${c.column}" ON "${table}" ("${c.column}")`);
  });
  for (const i of layout.indexes) db.exec(storeIndexSql(table, i));
}
