/**
 * Brings the Store layout (store-columns.ts) of a file's tables to a new one before the database
 * opens, with progress, instead of the synchronous rebuild DocTable.open would do on the first use
 * of a changed layout (which holds the event loop for the whole table: ~1M leads is minutes).
 *
 * Per table whose recorded layout differs from the wanted one:
 * 1. one transaction of DDL: the Store indexes, columns and member tables no longer wanted go, new
 *    columns are added (filled with 0, which no condition reads before step 3 records the layout);
 * 2. the rows in batches by rowid, each batch its own transaction: every Store column, odd bit and
 *    member row computed from the document (a lead's identity keys among them); the event loop
 *    turns between batches and `onProgress` hears `done` of `total`;
 * 3. the Store indexes are built (progress says `indexing`) and the new layout is recorded.
 * A quit or crash before step 3 leaves the old record, so the next open does it again from the
 * start (each step is idempotent); nothing reads the table meanwhile (the database is not open).
 */
import { setImmediate as turn } from 'node:timers/promises';
import { existsSync } from 'node:fs';
import type { Database as SqliteDatabase } from 'better-sqlite3';
import type { RxJsonSchema } from 'rxdb';
import { docCodec, shapesTableSql } from './doc-codec.ts';
import { markRowFormat, memberTableSql, ROW_FORMAT, rowFormatKey, storeIndexSql } from './doc-table.ts';
import type { Doc } from './doc-table.ts';
import { sqliteFilePath, StorageFile } from './file.ts';
import { computedColumnSql, indexColumns, overrideColumn } from './index-columns.ts';
import { INTERNAL_INSTANCE, schemasFromInternalStore } from './migrate.ts';
import type { MigrationProgress } from './migrate.ts';
import { layoutRecord, resolveLayout, sameLayout, storeValues } from './store-columns.ts';
import type { StoreLayout } from './store-columns.ts';

export type LayoutUpgradeOptions = {
  directory: string;
  databaseName: string;
  /** The storage's storeLayout setting, and the current schema of each of those collections. */
  storeLayout: Readonly<Record<string, StoreLayout>>;
  schemas: Readonly<Record<string, { readonly version: number }>>;
  onProgress?: (p: MigrationProgress) => void;
  /** Rows per transaction. */
  batch?: number;
  /** First rewrite the rows of tables an earlier version wrote (upgradeRowFormats), in the same
   * opening of the file. */
  rowFormats?: boolean;
};

const BATCH = 2000;

type StoredRow = { rowid: number; id: string; doc: string; lwt: number };

/** Every row of `table` through `each`, `batch` rows a write (`afterBatch` closes each write), the
 * event loop turning between writes; `progress` with the rows done after each write. */
async function rewriteRows(file: StorageFile, table: string, batch: number, each: (r: StoredRow) => void, progress: (done: number) => void, afterBatch?: () => void): Promise<void> {
  const page = file.db.prepare<[number, number], StoredRow>(`SELECT rowid, id, doc, lwt FROM "${table}" WHERE rowid > ? ORDER BY rowid LIMIT ?`);
  let done = 0;
  for (let after = 0; ; ) {
    const last = file.write(false, () => {
      const rows = page.all(after, batch);
      for (const r of rows) each(r);
      afterBatch?.();
      done += rows.length;
      return rows[rows.length - 1]?.rowid;
    });
    if (last === undefined) return;
    after = last;
    progress(done);
    await turn();
  }
}

/** Upgrades every table of the file whose Store layout changed; returns the instance names it
 * upgraded (none when the file does not exist yet or every layout is current). */
export async function upgradeStoreLayouts(opts: LayoutUpgradeOptions): Promise<string[]> {
  const path = sqliteFilePath(opts.directory, opts.databaseName);
  if (!existsSync(path)) return [];
  const file = await StorageFile.opened(path, 'NORMAL');
  const upgraded: string[] = [];
  try {
    if (opts.rowFormats) await rowFormatsIn(file, { onProgress: opts.onProgress, batch: opts.batch });
    const db = file.db;
    const rows = db.prepare<[], { name: string; tbl: string; layout: string }>('SELECT name, tbl, layout FROM instances ORDER BY name').all();
    for (const row of rows) {
      const collection = row.name.slice(0, row.name.lastIndexOf('-'));
      const layoutSpec = opts.storeLayout[collection];
      const schema = opts.schemas[collection];
      // Only the current schema version's table: an older one is migrated (and dropped) by RxDB.
      if (!layoutSpec || !schema || row.name !== `${collection}-${schema.version}`) continue;
      const layout = resolveLayout(row.tbl, schema, layoutSpec);
      const record = layoutRecord(layout);
      // Other `afterLoad` kinds only: DocTable.open writes the record again, nothing to rewrite.
      if (sameLayout(row.layout, record)) continue;
      const table = row.tbl;
      const total = Number(db.prepare(`SELECT count(*) FROM "${table}"`).pluck().get());
      opts.onProgress?.({ instance: row.name, done: 0, total });
      file.write(true, () => {
        const storeWanted = new Set(layout.columns.map((c) => c.column));
        const indexWanted = new Set(layout.indexes.map((i) => i.name));
        const memberWanted = new Set(layout.members.map((m) => m.table));
        for (const name of db.prepare<[string], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?").pluck().all(table)) {
          if (name.startsWith(`${table}_i_`) && !indexWanted.has(name)) db.exec(`DROP INDEX "${name}"`);
        }
        for (const name of db.prepare<[], string>("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all()) {
          if (name.startsWith(`${table}_m_`) && !memberWanted.has(name)) db.exec(`DROP TABLE "${name}"`);
        }
        const present = new Set(db.prepare<[], { name: string }>(`PRAGMA table_info("${table}")`).all().map((c) => c.name));
        for (const name of present) if (name.startsWith('s_') && !storeWanted.has(name)) db.exec(`ALTER TABLE "${table}" DROP COLUMN "${name}"`);
        if (!present.has('sodd')) {
          db.exec(`ALTER TABLE "${table}" ADD COLUMN sodd INTEGER NOT NULL DEFAULT 0`);
          db.exec(`CREATE INDEX IF NOT EXISTS "${table}_sodd" ON "${table}" (sodd) WHERE sodd <> 0`);
        }
        for (const c of layout.columns) if (!present.has(c.column)) db.exec(`ALTER TABLE "${table}" ADD COLUMN "${c.column}" NOT NULL DEFAULT 0`);
        for (const m of layout.members) {
          db.exec(memberTableSql(m.table));
          db.exec(`DELETE FROM "${m.table}"`);
        }
      });
      const update = db.prepare(`UPDATE "${table}" SET sodd = ?${layout.columns.map((c) => `, "${c.column}" = ?`).join('')} WHERE rowid = ?`);
      const adds = layout.members.map((m) => ({ m, add: db.prepare(`INSERT OR IGNORE INTO "${m.table}" (value, rid) VALUES (?, ?)`) }));
      const codec = docCodec(db);
      await rewriteRows(
        file,
        table,
        opts.batch ?? BATCH,
        (r) => {
          const doc = codec.decode(r.doc, r) as Doc;
          const values: unknown[] = [];
          const sodd = storeValues(layout, r.id, doc, values, 0);
          update.run(sodd, ...values, r.rowid);
          for (const { m, add } of adds) for (const v of m.valuesOf(doc)) add.run(v, r.rowid);
        },
        (done) => opts.onProgress?.({ instance: row.name, done, total }),
      );
      opts.onProgress?.({ instance: row.name, done: total, total, indexing: true });
      // Each index in the file's worker thread: one statement over the whole table, seconds at 1M.
      for (const i of layout.indexes) await file.inWorker(storeIndexSql(table, i), `${collection} (opening)`);
      // Durable: the record says the table is done.
      file.write(true, () => db.prepare('UPDATE instances SET layout = ? WHERE name = ?').run(record, row.name));
      opts.onProgress?.({ instance: row.name, done: total, total });
      upgraded.push(row.name);
    }
  } finally {
    await file.release();
  }
  return upgraded;
}

export type RowFormatUpgradeOptions = {
  directory: string;
  databaseName: string;
  onProgress?: (p: MigrationProgress) => void;
  /** Rows per transaction. */
  batch?: number;
  /** Schemas of instances by name, beside those the file's RxDB internal store lists (tests open
   * storage instances without an RxDB database). */
  schemas?: ReadonlyMap<string, RxJsonSchema<Doc>>;
};

/** The schemas of a file's instances, from its RxDB internal store (and `extra`). */
function schemasInFile(db: SqliteDatabase, extra: ReadonlyMap<string, RxJsonSchema<Doc>> | undefined): Map<string, RxJsonSchema<Doc>> {
  const tbl = db.prepare<[string], string>('SELECT tbl FROM instances WHERE name = ?').pluck().get(INTERNAL_INSTANCE);
  const codec = docCodec(db);
  const docs = tbl === undefined ? [] : db.prepare<[], { id: string; doc: string; lwt: number }>(`SELECT id, doc, lwt FROM "${tbl}"`).all().map((r) => codec.decode(r.doc, r) as Doc);
  const out = schemasFromInternalStore(docs);
  for (const [name, schema] of extra ?? []) out.set(name, schema);
  return out;
}

/**
 * Rewrites every table an earlier version wrote (no `row-format` record: doc-table.ts ROW_FORMAT)
 * in this version's row layout, before the database opens:
 * 1. RxDB index columns that have an SQL form (index-columns.ts indexSql: `[_deleted, id]`,
 *    `[_meta.lwt, id]`) and are stored strings become computed columns: one transaction of DDL in
 *    the file's worker thread (dropping a column rewrites the table: seconds at 1M rows), which
 *    drops their indexes (built again when a query first reads the column: DocTable.wantIndex);
 * 2. the rows in batches by rowid, each batch its own transaction: each document from its JSON
 *    object to its shape (doc-codec.ts), each computed column's override where its expression does
 *    not give the row's string; the event loop turns between batches and `onProgress` hears `done`
 *    of `total`;
 * 3. the record is written.
 * The rows are readable in either form, so a quit midway leaves a file that opens, and the next
 * open does what the record says is left (each step is idempotent). Without a schema for an
 * instance (not in the internal store) its index columns stay stored. Returns the instance names
 * it upgraded.
 */
export async function upgradeRowFormats(opts: RowFormatUpgradeOptions): Promise<string[]> {
  const path = sqliteFilePath(opts.directory, opts.databaseName);
  if (!existsSync(path)) return [];
  const file = await StorageFile.opened(path, 'NORMAL');
  try {
    return await rowFormatsIn(file, opts);
  } finally {
    await file.release();
  }
}

async function rowFormatsIn(file: StorageFile, opts: Omit<RowFormatUpgradeOptions, 'directory' | 'databaseName'>): Promise<string[]> {
  const upgraded: string[] = [];
  const db = file.db;
  const codec = docCodec(db);
  const rows = db.prepare<[], { name: string; tbl: string }>('SELECT name, tbl FROM instances ORDER BY name').all();
  const formatOf = db.prepare<[string], string>('SELECT value FROM meta WHERE key = ?').pluck();
  const pending = rows.filter((r) => formatOf.get(rowFormatKey(r.tbl)) !== ROW_FORMAT);
  if (pending.length === 0) return [];
  const schemas = schemasInFile(db, opts.schemas);
  file.write(true, () => db.exec(shapesTableSql));
  for (const row of pending) {
    const table = row.tbl;
    const total = Number(db.prepare(`SELECT count(*) FROM "${table}"`).pluck().get());
    opts.onProgress?.({ instance: row.name, done: 0, total });
    const schema = schemas.get(row.name);
    const columnsOf = (): Set<string> => new Set(db.prepare<[], { name: string }>(`PRAGMA table_xinfo("${table}")`).all().map((c) => c.name));
    const present = columnsOf();
    const sqlColumns = (schema ? indexColumns(schema) : []).filter((c) => c.sql !== null && present.has(c.column));
    const toCompute = sqlColumns.filter((c) => !present.has(overrideColumn(c.column)));
    if (toCompute.length > 0) {
      const ddl = toCompute.flatMap((c) => [`DROP INDEX IF EXISTS "${table}_${c.column}"`, `ALTER TABLE "${table}" DROP COLUMN "${c.column}"`, ...computedColumnSql(c).map((def) => `ALTER TABLE "${table}" ADD COLUMN ${def}`)]);
      await file.inWorker(`BEGIN IMMEDIATE; ${ddl.join('; ')}; COMMIT`, `${row.name} (opening)`);
    }
    const computed = sqlColumns.filter((c) => columnsOf().has(overrideColumn(c.column)));
    const setDoc = db.prepare(`UPDATE "${table}" SET doc = ? WHERE rowid = ?`);
    // The override where the expression does not give the string (the update changes neither
    // deleted, lwt nor id, which the expression reads).
    const setOverrides =
      computed.length > 0 ? db.prepare(`UPDATE "${table}" SET ${computed.map((c) => `"${overrideColumn(c.column)}" = CASE WHEN (${c.sql ?? ''}) IS ? THEN NULL ELSE ? END`).join(', ')} WHERE rowid = ?`) : null;
    await rewriteRows(
      file,
      table,
      opts.batch ?? BATCH,
      (r) => {
        // Rows in the shape layout already (written since, or before a quit) keep their text.
        const old = r.doc.charCodeAt(0) === 0x7b;
        const doc = codec.decode(r.doc, r);
        if (old) {
          // The field holding the row's id is left out of the row (any field equal to it gives
          // the same document back).
          const primary = Object.keys(doc).find((k) => doc[k] === r.id) ?? '';
          setDoc.run(codec.encode(doc, r, primary), r.rowid);
        }
        setOverrides?.run(...computed.flatMap((c) => [c.keyOf(doc as Doc), c.keyOf(doc as Doc)]), r.rowid);
      },
      (done) => opts.onProgress?.({ instance: row.name, done, total }),
      () => codec.flush(),
    );
    file.write(true, () => markRowFormat(db, table));
    opts.onProgress?.({ instance: row.name, done: total, total });
    upgraded.push(row.name);
  }
  return upgraded;
}
