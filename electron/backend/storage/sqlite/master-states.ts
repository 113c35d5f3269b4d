/**
 * The replication's assumed-master states without a second copy of every pulled document.
 *
 * RxDB's replication (rxdb 17.6.0, src/replication-protocol/) keeps, in a meta storage instance
 * (`rx-replication-meta-<hash>`, schema title RxReplicationProtocolMetaData), one row per replicated
 * document: `{id: '<docId>|0', isCheckpoint: '0', itemId: docId, docData, ...}`, where `docData` is
 * what the fork (the collection) assumes the server holds. After a pull, and after a push the server
 * took, that state equals the collection's own document minus `_meta`, `_rev` and `_attachments`
 * (downstream.ts writes the pulled document to the fork first, then `docData` = the same master
 * state to the meta instance; upstream.ts writes `docData` = the pushed fork state after the push).
 * Stored as it comes, it doubled the bytes of an initial sync (measured at 100k leads: documents
 * 110 MB, meta rows 132 MB).
 *
 * Here a meta row whose `docData`, at its write, serializes exactly as the collection's stored
 * document of that id minus those three fields is stored with `docData` replaced by the string
 * IMPLICIT ("implicit" row); any other `docData` (a conflict's server state, a state the fork no
 * longer holds, a document the fork lacks) is stored as it comes ("materialized"). A read of the
 * meta instance puts the collection's document minus those fields back in `docData`'s place: RxDB
 * gets the object it would have got from the stored JSON, same keys in the same order.
 *
 * The invariant that makes that true: an implicit row's collection document never changes. Every
 * write of a collection document (a local edit, a pulled update, a conflict's resolution), every
 * purge of its tombstone and the collection table's drop first materializes the implicit rows that
 * reference it with the document as it was, in the same SQLite transaction (both instances are
 * tables of one file, and every write goes through this process: it owns the file). A materialized
 * row is the same logical document, so the meta table's sequence number, cache and change stream
 * stay as they are. A pulled update thus materializes the old state and then RxDB's meta write makes
 * the row implicit again; the initial sync, which only adds documents, never materializes.
 *
 * Which collection a meta instance follows is recorded in the file (table `master_links`): it is
 * found when the meta instance first opens, as the one open collection table whose schema has the
 * meta schema's `docData.properties` and version (RxDB builds the meta schema from the collection's;
 * its name is a hash of the collection and replication names). None or several: no link, and every
 * row is stored as it comes, as before. The link is in the file so that a collection opened and
 * written before its replication starts (a local edit right after a restart) still materializes.
 *
 * Why not the other designs: a meta row that always references the collection row (no copy ever)
 * breaks RxDB's conflict handling, which needs the old master state after a local edit; keeping the
 * master state in the collection's row (a second JSON column) saves the row but not the bytes; not
 * storing meta rows at all (synthesizing them) loses their `_rev`, `lwt` and `isResolvedConflict`.
 * Files written before this (every row materialized) are read as they are: a materialized row is
 * what every row used to be, so no migration.
 */
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import type { RxDocumentData, RxJsonSchema } from 'rxdb';
import { docCodec } from './doc-codec.ts';

type Doc = RxDocumentData<unknown>;
type Json = Record<string, unknown>;

/** The primary key field of a meta instance (isMetaSchema). */
const META_PRIMARY = 'id';

/** `docData` of an implicit row (RxDB's schema says `docData` is an object, so no stored state is a
 * string). */
export const IMPLICIT = '=fork';

/** RxDB's META_INSTANCE_SCHEMA_TITLE (replication-protocol/meta-instance.ts). */
const META_TITLE = 'RxReplicationProtocolMetaData';

/** The fields the meta row's `docData` leaves out of the collection's document (RxDB's
 * writeDocToDocState without attachments and meta). */
const NOT_IN_STATE = new Set(['_meta', '_rev', '_attachments']);

/** The collection document as the replication's document state: a flat copy without `_meta`,
 * `_rev` and `_attachments`, keys in the document's order. */
export function masterStateOf(doc: Doc): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(doc as Json)) if (!NOT_IN_STATE.has(k)) out[k] = v;
  return out;
}

/** Whether `state` serializes exactly as the collection document's state (masterStateOf). A
 * pulled document's state shares its fields' values with the document RxDB wrote to the
 * collection just before (same keys in the same order, the same values): that is checked first,
 * without serializing either; anything else is compared as JSON. */
function isStateOf(state: Json, doc: Doc): boolean {
  const keys = Object.keys(state);
  const docJson = doc as Json;
  let i = 0;
  let same = true;
  for (const k in docJson) {
    if (!Object.prototype.hasOwnProperty.call(docJson, k) || NOT_IN_STATE.has(k)) continue;
    if (keys[i] !== k || state[k] !== docJson[k]) {
      same = false;
      break;
    }
    i++;
  }
  if (same && i === keys.length) return true;
  return JSON.stringify(state) === JSON.stringify(masterStateOf(doc));
}

/** The meta row id of a collection document's assumed-master state: RxDB composes `itemId` and
 * `isCheckpoint` with `|` (getRxReplicationMetaInstanceSchema). */
export const stateRowId = (docId: string): string => `${docId}|0`;

/** Whether a schema is a replication meta instance's with the primary key this module relies on. */
export function isMetaSchema(schema: RxJsonSchema<Doc>): boolean {
  const pk = schema.primaryKey as unknown;
  if (schema.title !== META_TITLE || typeof pk !== 'object' || pk === null) return false;
  const { key, fields, separator } = pk as { key?: unknown; fields?: unknown; separator?: unknown };
  return key === 'id' && separator === '|' && JSON.stringify(fields) === JSON.stringify(['itemId', 'isCheckpoint']);
}

/** The collection schema a meta schema was made from matches: same version, same properties. */
export function metaFollows(meta: RxJsonSchema<Doc>, collection: RxJsonSchema<Doc>): boolean {
  const docData = (meta.properties as Record<string, { properties?: unknown }>)['docData'];
  return meta.version === collection.version && JSON.stringify(docData?.properties) === JSON.stringify(collection.properties);
}

/** The links of one file: collection table -> meta tables, loaded once per connection. */
const LINKS = new WeakMap<SqliteDatabase, Map<string, Set<string>>>();

function links(db: SqliteDatabase): Map<string, Set<string>> {
  let m = LINKS.get(db);
  if (m) return m;
  m = new Map();
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'master_links'").get() !== undefined;
  if (exists) {
    for (const r of db.prepare<[], { meta: string; fork: string }>('SELECT meta, fork FROM master_links').all()) {
      let s = m.get(r.fork);
      if (!s) m.set(r.fork, (s = new Set()));
      s.add(r.meta);
    }
  }
  LINKS.set(db, m);
  return m;
}

/** The collection table a meta table follows, or undefined. */
export function forkOf(db: SqliteDatabase, metaTable: string): string | undefined {
  for (const [fork, metas] of links(db)) if (metas.has(metaTable)) return fork;
  return undefined;
}

/** Records that `metaTable` follows `forkTable`. Must run inside the file's write transaction. The
 * links in memory are read again from the file at their next use (after the commit, or after a
 * rollback put the old ones back). */
export function link(db: SqliteDatabase, metaTable: string, forkTable: string): void {
  db.exec('CREATE TABLE IF NOT EXISTS master_links (meta TEXT PRIMARY KEY, fork TEXT NOT NULL)');
  db.prepare('INSERT INTO master_links (meta, fork) VALUES (?, ?) ON CONFLICT (meta) DO UPDATE SET fork = excluded.fork').run(metaTable, forkTable);
  LINKS.delete(db);
}

/** Forgets the links of a dropped table (as meta or as collection). Run inside the transaction that
 * drops it, after materializeAll when it is a collection table. */
export function unlink(db: SqliteDatabase, table: string): void {
  if (links(db).size === 0) return;
  db.prepare('DELETE FROM master_links WHERE meta = ? OR fork = ?').run(table, table);
  LINKS.delete(db);
}

const STATEMENTS = new WeakMap<SqliteDatabase, Map<string, Statement>>();

function stmt(db: SqliteDatabase, sql: string): Statement {
  let m = STATEMENTS.get(db);
  if (!m) STATEMENTS.set(db, (m = new Map()));
  let s = m.get(sql);
  if (!s) m.set(sql, (s = db.prepare(sql)));
  return s;
}

/**
 * Before collection documents change (or go): every implicit meta row referencing one of them gets
 * `docData` = that document's state as it was. `before`: the stored documents about to be replaced,
 * with their ids. Must run inside the file's write transaction, before the collection rows change.
 */
export function materialize(db: SqliteDatabase, forkTable: string, before: readonly { id: string; doc: Doc }[]): void {
  const metas = links(db).get(forkTable);
  if (!metas || metas.size === 0 || before.length === 0) return;
  const codec = docCodec(db);
  for (const meta of metas) {
    const read = stmt(db, `SELECT rowid AS r, doc, lwt FROM "${meta}" WHERE id = ?`);
    const update = stmt(db, `UPDATE "${meta}" SET doc = ? WHERE rowid = ?`);
    for (const b of before) {
      const id = stateRowId(b.id);
      const row = read.get(id) as { r: number; doc: string; lwt: number } | undefined;
      if (!row) continue;
      const keys = { id, lwt: row.lwt };
      const metaDoc = codec.decode(row.doc, keys);
      if (metaDoc['docData'] !== IMPLICIT) continue;
      metaDoc['docData'] = masterStateOf(b.doc);
      update.run(codec.encode(metaDoc, keys, META_PRIMARY), row.r);
    }
  }
  codec.flush();
}

/** Materializes every implicit row referencing a collection table (before it is dropped). */
export function materializeAll(db: SqliteDatabase, forkTable: string): void {
  const metas = links(db).get(forkTable);
  if (!metas) return;
  const codec = docCodec(db);
  for (const meta of metas) {
    const rows = db.prepare<[], { r: number; id: string; doc: string; lwt: number }>(`SELECT rowid AS r, id, doc, lwt FROM "${meta}"`).all();
    const fork = db.prepare<[string], { doc: string; lwt: number }>(`SELECT doc, lwt FROM "${forkTable}" WHERE id = ?`);
    const update = db.prepare(`UPDATE "${meta}" SET doc = ? WHERE rowid = ?`);
    for (const row of rows) {
      const metaDoc = codec.decode(row.doc, row);
      if (metaDoc['docData'] !== IMPLICIT) continue;
      const itemId = String(metaDoc['itemId']);
      const stored = fork.get(itemId);
      if (stored === undefined) throw new Error(`Meta row ${String(metaDoc['id'])} of ${meta} references document ${itemId}, which ${forkTable} does not hold.`);
      metaDoc['docData'] = masterStateOf(codec.decode(stored.doc, { id: itemId, lwt: stored.lwt }) as Doc);
      update.run(codec.encode(metaDoc, row, META_PRIMARY), row.r);
    }
  }
  codec.flush();
}

/** Reads documents of a collection table by id (the table's own cached read when it is open). */
export type ForkReader = (forkTable: string, ids: readonly string[]) => Map<string, Doc>;

/**
 * The meta table's side: what a meta row is stored as, and the document read back from it. The
 * link is looked up at every write, so a meta table whose collection table was dropped stores its
 * rows as they come.
 */
export class MetaCodec {
  constructor(
    private readonly db: SqliteDatabase,
    readonly metaTable: string,
    private readonly forkDocs: ForkReader,
  ) {}

  /** The document to store for each meta document, in order: implicit (a copy with `docData` =
   * IMPLICIT) where `docData` serializes as the collection's stored document's state, the document
   * itself otherwise. */
  encode(docs: readonly Doc[]): Json[] {
    const forkTable = forkOf(this.db, this.metaTable);
    const candidates: string[] = [];
    if (forkTable !== undefined) {
      for (const d of docs) {
        const m = d as Json;
        if (m['isCheckpoint'] === '0' && typeof m['docData'] === 'object' && m['docData'] !== null) candidates.push(String(m['itemId']));
      }
    }
    const forks = forkTable !== undefined && candidates.length > 0 ? this.forkDocs(forkTable, candidates) : new Map<string, Doc>();
    return docs.map((d) => {
      const m = d as Json;
      const fork = m['isCheckpoint'] === '0' && typeof m['docData'] === 'object' ? forks.get(String(m['itemId'])) : undefined;
      if (fork && isStateOf(m['docData'] as Json, fork)) return { ...m, docData: IMPLICIT };
      return m;
    });
  }

  /** Puts the collection's document state back into implicit rows (in place; the documents are
   * freshly parsed). Implicit rows exist only while the link does (a dropped collection table's
   * rows are materialized first). */
  decode(docs: readonly Doc[]): void {
    let ids: string[] | null = null;
    for (const d of docs) if ((d as Json)['docData'] === IMPLICIT) (ids ??= []).push(String((d as Json)['itemId']));
    if (!ids) return;
    const forkTable = forkOf(this.db, this.metaTable);
    if (forkTable === undefined) throw new Error(`${this.metaTable} holds assumed-master states by reference but follows no collection table.`);
    const forks = this.forkDocs(forkTable, ids);
    for (const d of docs) {
      const m = d as Json;
      if (m['docData'] !== IMPLICIT) continue;
      const fork = forks.get(String(m['itemId']));
      if (!fork) throw new Error(`Meta row ${String(m['id'])} of ${this.metaTable} references document ${String(m['itemId'])}, which ${forkTable} does not hold.`);
      m['docData'] = masterStateOf(fork);
    }
  }
}

/** @internal How the assumed-master state of a collection document is stored in the meta tables
 * following its table: by reference, as a copy, or not at all (tests). */
export function masterStateStorage(db: SqliteDatabase, forkTable: string, docId: string): 'reference' | 'copy' | 'none' {
  for (const meta of links(db).get(forkTable) ?? []) {
    const id = stateRowId(docId);
    const stored = db.prepare<[string], { doc: string; lwt: number }>(`SELECT doc, lwt FROM "${meta}" WHERE id = ?`).get(id);
    if (stored !== undefined) return docCodec(db).decode(stored.doc, { id, lwt: stored.lwt })['docData'] === IMPLICIT ? 'reference' : 'copy';
  }
  return 'none';
}

/** @internal Of a meta table's assumed-master state rows, how many hold the state by reference
 * (tests and benchmarks). */
export function referencedStates(db: SqliteDatabase, metaTable: string): { byRef: number; all: number } {
  const codec = docCodec(db);
  let byRef = 0;
  let all = 0;
  for (const r of db.prepare<[], { id: string; doc: string; lwt: number }>(`SELECT id, doc, lwt FROM "${metaTable}"`).iterate()) {
    const doc = codec.decode(r.doc, r);
    if (doc['isCheckpoint'] !== '0') continue;
    all++;
    if (doc['docData'] === IMPLICIT) byRef++;
  }
  return { byRef, all };
}
