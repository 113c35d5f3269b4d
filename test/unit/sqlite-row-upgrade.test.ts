/**
 * A desktop file written by the previous version (documents stored as JSON objects, no shapes:
 * electron/backend/storage/sqlite/doc-codec.ts) opens with this version: its rows are read as they
 * are, and the opening rewrites them in the smaller layout batch by batch with progress
 * (layout-upgrade.ts upgradeRowFormats), documents, assumed-master states by reference, text search
 * and the Store's queries unchanged; a second opening has nothing to do.
 */
import Database from 'better-sqlite3';
import { fillWithDefaultSettings, getRxReplicationMetaInstanceSchema, normalizeMangoQuery, now, prepareQuery } from 'rxdb';
import type { RxDocumentData, RxJsonSchema, RxStorage } from 'rxdb';
import { describe, expect, it } from 'vitest';
import { DocCodec, SHAPES_TABLE, STRINGS_TABLE } from '../../electron/backend/storage/sqlite/doc-codec.ts';
import { localDatabaseName, openLocalDatabase } from '../../electron/backend/local-db.ts';
import { sqliteFilePath } from '../../electron/backend/storage/sqlite/file.ts';
import { upgradeRowFormats } from '../../electron/backend/storage/sqlite/layout-upgrade.ts';
import { masterStateStorage } from '../../electron/backend/storage/sqlite/master-states.ts';
import type { MigrationProgress } from '../../electron/backend/storage/sqlite/migrate.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { STORE_LAYOUT, TEXT_SEARCH } from '../../electron/backend/store-layout.ts';
import { newLead } from '../../shared/model/factories.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';

type Json = Record<string, unknown>;
type Doc = RxDocumentData<Json>;

const DB = 'crm-upgrade';
const LEADS = 2500;

const leadSchema = fillWithDefaultSettings(COLLECTIONS.leads.schema as unknown as RxJsonSchema<Json>) as RxJsonSchema<Doc>;
const metaSchema = getRxReplicationMetaInstanceSchema(leadSchema, false) as unknown as RxJsonSchema<Doc>;
const storage = (dir: string) => getRxStorageSqlite({ directory: dir, textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT }) as RxStorage<unknown, object>;
const schemas = new Map([
  ['leads-3', leadSchema],
  ['rx-replication-meta-x-3', metaSchema],
]);
const stateOf = (doc: Doc): Json => {
  const { _meta: _m, _rev: _r, _attachments: _a, ...rest } = doc;
  return rest;
};

/** Rewrites every table of a closed file as the previous version wrote it: each document as its
 * JSON object, every RxDB index column a stored string, no shapes table, no row-format records. */
function toPreviousLayout(path: string): void {
  const db = new Database(path);
  try {
    const codec = new DocCodec(db);
    db.transaction(() => {
      for (const tbl of db.prepare<[], string>('SELECT tbl FROM instances').pluck().all()) {
        const update = db.prepare(`UPDATE "${tbl}" SET doc = ? WHERE rowid = ?`);
        for (const r of db.prepare<[], { rowid: number; id: string; doc: string; lwt: number }>(`SELECT rowid, id, doc, lwt FROM "${tbl}"`).all()) update.run(JSON.stringify(codec.decode(r.doc, r)), r.rowid);
        const columns = db.prepare<[], { name: string }>(`PRAGMA table_xinfo("${tbl}")`).all().map((c) => c.name);
        for (const override of columns.filter((c) => c.startsWith('k_') && c.endsWith('_r'))) {
          const k = override.slice(0, -2);
          const keys = db.prepare<[], { rowid: number; k: string }>(`SELECT rowid, "${k}" AS k FROM "${tbl}"`).all();
          db.exec(`DROP INDEX IF EXISTS "${tbl}_${k}"; ALTER TABLE "${tbl}" DROP COLUMN "${k}"; ALTER TABLE "${tbl}" DROP COLUMN "${override}"; ALTER TABLE "${tbl}" ADD COLUMN "${k}" TEXT NOT NULL DEFAULT ''`);
          const set = db.prepare(`UPDATE "${tbl}" SET "${k}" = ? WHERE rowid = ?`);
          for (const r of keys) set.run(r.k, r.rowid);
          db.exec(`CREATE INDEX "${tbl}_${k}" ON "${tbl}" ("${k}")`);
        }
      }
      db.exec(`DROP TABLE ${SHAPES_TABLE}; DROP TABLE ${STRINGS_TABLE}; DELETE FROM meta WHERE key LIKE 'row-format:%'`);
    })();
  } finally {
    db.close();
  }
}

/** The RxDB index columns of every table: computed (with an override column) or stored. */
function indexColumnKinds(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare<[], string>('SELECT tbl FROM instances')
      .pluck()
      .all()
      .flatMap((tbl) => {
        const columns = db.prepare<[], { name: string }>(`PRAGMA table_xinfo("${tbl}")`).all().map((c) => c.name);
        return columns.filter((c) => /^k_[0-9a-f]+$/.test(c)).map((c) => `${tbl}.${c}: ${columns.includes(`${c}_r`) ? 'computed' : 'stored'}`);
      })
      .sort();
  } finally {
    db.close();
  }
}

/** The first character of every stored document, by table. */
function storedForms(path: string): Map<string, Set<string>> {
  const db = new Database(path, { readonly: true });
  try {
    const out = new Map<string, Set<string>>();
    for (const tbl of db.prepare<[], string>('SELECT tbl FROM instances').pluck().all()) {
      out.set(tbl, new Set(db.prepare<[], string>(`SELECT substr(doc, 1, 1) FROM "${tbl}"`).pluck().all()));
    }
    return out;
  } finally {
    db.close();
  }
}

describe('a file written with the previous row layout', () => {
  it('opens as it is, and is rewritten in the smaller layout while opening, with progress', async () => {
    const dir = tempDir('sqlite-row-upgrade-');
    const names = { databaseName: DB, token: 'tok0000001' };
    let fork = await openInstance<Json>(storage(dir), leadSchema, { ...names, collectionName: 'leads' });
    let meta = await openInstance<Json>(storage(dir), metaSchema, { ...names, collectionName: 'rx-replication-meta-x' });
    const leads: Doc[] = Array.from({ length: LEADS }, (_, i) => {
      const lead = newLead({ id: `f0000000-0000-4000-8000-${String(i).padStart(12, '0')}`, workspaceId: 'w1', now: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() }, 'g1', { firstName: 'Ann', lastName: `Okafor${i}`, email: `ann-${i}@acme.example`, company: 'Acme' });
      return { ...(lead as unknown as Json), _deleted: i % 50 === 0, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} } as Doc;
    });
    expect((await fork.bulkWrite(leads.map((document) => ({ document })), 'replication-downstream')).error).toEqual([]);
    // Assumed-master states: by reference to the lead, one a conflict's server state (a copy).
    const metaDocs: Doc[] = leads.slice(0, 100).map((l, i) => ({ id: `${String(l.id)}|0`, isCheckpoint: '0', itemId: l.id, docData: i === 7 ? { ...stateOf(l), firstName: 'Server' } : stateOf(l), _deleted: false, _rev: '1-m', _meta: { lwt: now() }, _attachments: {} }) as Doc);
    expect((await meta.bulkWrite(metaDocs.map((document) => ({ document })), 'replication-down-write-meta')).error).toEqual([]);
    const ids = leads.map((l) => String(l.id));
    const metaIds = metaDocs.map((m) => String(m.id));
    const before = { leads: await fork.findDocumentsById(ids, true), meta: await meta.findDocumentsById(metaIds, true) };
    await meta.close();
    await fork.close();

    const path = sqliteFilePath(dir, DB);
    const kinds = indexColumnKinds(path);
    expect(kinds.length).toBe(4);
    expect(kinds.every((k) => k.endsWith('computed'))).toBe(true);
    toPreviousLayout(path);
    for (const [tbl, forms] of storedForms(path)) expect([...forms], tbl).toEqual(['{']);
    expect(indexColumnKinds(path).every((k) => k.endsWith('stored'))).toBe(true);

    // The previous layout opens and reads as it is (rows are upgraded when rewritten).
    fork = await openInstance<Json>(storage(dir), leadSchema, { ...names, collectionName: 'leads' });
    meta = await openInstance<Json>(storage(dir), metaSchema, { ...names, collectionName: 'rx-replication-meta-x' });
    expect(await fork.findDocumentsById(ids, true)).toEqual(before.leads);
    expect(await meta.findDocumentsById(metaIds, true)).toEqual(before.meta);
    await meta.close();
    await fork.close();

    const progress: MigrationProgress[] = [];
    const upgraded = await upgradeRowFormats({ directory: dir, databaseName: DB, schemas, onProgress: (p) => progress.push({ ...p }) });
    expect(upgraded.sort()).toEqual(['leads-3', 'rx-replication-meta-x-3']);
    const ofLeads = progress.filter((p) => p.instance === 'leads-3');
    // Batch by batch, then done.
    expect(ofLeads.map((p) => [p.done, p.indexing === true])).toEqual([[0, false], [2000, false], [2500, false], [2500, false]]);
    expect(ofLeads.every((p) => p.total === LEADS)).toBe(true);
    for (const [tbl, forms] of storedForms(path)) expect([...forms], tbl).toEqual(['[']);
    expect(indexColumnKinds(path)).toEqual(kinds);

    fork = await openInstance<Json>(storage(dir), leadSchema, { ...names, collectionName: 'leads' });
    meta = await openInstance<Json>(storage(dir), metaSchema, { ...names, collectionName: 'rx-replication-meta-x' });
    try {
      expect(await fork.findDocumentsById(ids, true)).toEqual(before.leads);
      expect(await meta.findDocumentsById(metaIds, true)).toEqual(before.meta);
      const inst = sqliteInstanceOf<Json>(fork);
      if (!inst) throw new Error('not the SQLite storage');
      const { file, table } = inst.internalsForTests;
      expect(masterStateStorage(file.db, table.table, String(leads[1]?.id))).toBe('reference');
      expect(masterStateStorage(file.db, table.table, String(leads[7]?.id))).toBe('copy');
      // RxDB's queries read the computed columns' indexes: every lead, live ones by id.
      const live = prepareQuery(leadSchema, normalizeMangoQuery(leadSchema, { selector: {}, sort: [{ id: 'desc' }], limit: 3 }));
      expect((await fork.query(live)).documents.map((d) => d['id'])).toEqual(ids.slice(-3).reverse());
      const since = prepareQuery(leadSchema, normalizeMangoQuery(leadSchema, { selector: { '_meta.lwt': { $gt: 0 } }, sort: [{ '_meta.lwt': 'asc' }, { id: 'asc' }], limit: 2 }));
      expect((await fork.query(since)).documents).toHaveLength(2);
      // Text search and the Store's queries read the upgraded rows.
      expect(inst.searchText('okafor1234', 10)).toEqual([leads[1234]?.id]);
      const page = inst.storeQuery({ where: { op: 'contains', fields: ['email'], value: 'ann-2499@' }, orderBy: [{ field: 'createdAt', dir: 'desc' }], cursor: null, limit: 5, cache: false });
      expect(page.docs.map((d) => (d as Json)['id'])).toEqual([leads[2499]?.id]);
    } finally {
      await meta.close();
      await fork.close();
    }
    // Nothing left to do at the next opening.
    const again: MigrationProgress[] = [];
    expect(await upgradeRowFormats({ directory: dir, databaseName: DB, schemas, onProgress: (p) => again.push(p) })).toEqual([]);
    expect(again).toEqual([]);
  });

  it("is upgraded by the desktop opening its workspace, with the schemas from RxDB's internal store", async () => {
    const dir = tempDir('sqlite-row-upgrade-');
    const ws = 'f2000000-0000-4000-8000-000000000001';
    const actor = { workspaceId: ws, memberId: 'f2000000-0000-4000-8000-0000000000aa', role: 'owner' as const };
    const leads = Array.from({ length: 30 }, (_, i) => newLead({ id: `f2000000-0000-4000-8000-${String(100 + i).padStart(12, '0')}`, workspaceId: ws, now: '2026-01-01T00:00:00.000Z' }, 'g1', { firstName: `N${i}`, email: `n${i}@example.test` }));
    let db = await openLocalDatabase({ dir, workspaceId: ws, actor });
    await db.rx.collections.leads?.bulkInsert(leads as unknown as Json[]);
    await db.close();
    const path = sqliteFilePath(dir, localDatabaseName(ws));
    const kinds = indexColumnKinds(path);
    toPreviousLayout(path);
    const progress: MigrationProgress[] = [];
    db = await openLocalDatabase({ dir, workspaceId: ws, actor, onMigration: (p) => progress.push({ ...p }) });
    try {
      expect(progress.filter((p) => p.instance === 'leads-3').map((p) => p.done)).toEqual([0, 30, 30]);
      expect((await db.store.query('leads', { where: { op: 'eq', field: 'email', value: 'n7@example.test' } })).docs.map((l) => l.id)).toEqual([leads[7]?.id]);
    } finally {
      await db.close();
    }
    // Every table's rows (empty tables have none) in the shape layout.
    for (const [tbl, forms] of storedForms(path)) expect([...forms].filter((f) => f !== '['), tbl).toEqual([]);
    expect([...storedForms(path).values()].some((f) => f.has('['))).toBe(true);
    expect(indexColumnKinds(path)).toEqual(kinds);
  });

  it('goes on where a quit left it: rows already rewritten stay, the rest are rewritten', async () => {
    const dir = tempDir('sqlite-row-upgrade-');
    const names = { databaseName: DB, token: 'tok0000002', collectionName: 'leads' };
    const fork = await openInstance<Json>(storage(dir), leadSchema, names);
    const leads: Doc[] = Array.from({ length: 30 }, (_, i) => ({ ...(newLead({ id: `f1000000-0000-4000-8000-${String(i).padStart(12, '0')}`, workspaceId: 'w1', now: '2026-01-01T00:00:00.000Z' }, 'g1', { firstName: `N${i}` }) as unknown as Json), _deleted: false, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} }) as Doc);
    await fork.bulkWrite(leads.map((document) => ({ document })), 'test');
    await fork.close();
    const path = sqliteFilePath(dir, DB);
    toPreviousLayout(path);
    // A first run cut short: the first batch rewritten, then the process gone (the record not written).
    const first: MigrationProgress[] = [];
    await expect(
      upgradeRowFormats({
        directory: dir,
        databaseName: DB,
        schemas,
        batch: 10,
        onProgress: (p) => {
          first.push(p);
          if (p.instance === 'leads-3' && p.done === 10) throw new Error('quit');
        },
      }),
    ).rejects.toThrow('quit');
    const mixed = storedForms(path);
    expect([...mixed.values()].some((f) => f.has('[') && f.has('{'))).toBe(true);
    await upgradeRowFormats({ directory: dir, databaseName: DB, schemas, batch: 10 });
    for (const [tbl, forms] of storedForms(path)) expect([...forms], tbl).toEqual(['[']);
    expect(indexColumnKinds(path).every((k) => k.endsWith('computed'))).toBe(true);
    const reopened = await openInstance<Json>(storage(dir), leadSchema, names);
    const byId = (docs: Doc[]) => new Map(docs.map((d) => [String(d.id), d]));
    expect(byId(await reopened.findDocumentsById(leads.map((l) => String(l.id)), true))).toEqual(byId(leads));
    await reopened.close();
  });
});
