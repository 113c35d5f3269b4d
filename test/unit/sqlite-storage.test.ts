/**
 * What the SQLite storage (electron/backend/storage/sqlite/) promises beyond RxDB's storage
 * contract (sqlite-storage-contract.test.ts) and its agreement with RxDB's memory storage
 * (sqlite-storage-differential.test.ts): the disk is the truth (reopen, RxDB's internal store and
 * replication meta instances persisted), durability (SIGKILL, failed disk writes, fsync policy),
 * one owner per file, the bounded document cache, index-ordered reads that stop early, text
 * search kept in step with the documents, and a bulk load's index builds: off the event loop, and
 * held while a pull has more pages coming.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createRxDatabase, fillWithDefaultSettings, normalizeMangoQuery, now, prepareQuery, randomToken } from 'rxdb';
import type { MangoQuery, RxCollection, RxDatabase, RxDocumentData, RxJsonSchema, RxStorage } from 'rxdb';
import { replicateRxCollection } from 'rxdb/plugins/replication';
import { BULK_ROWS, LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { CHECKPOINT_TUNING, StorageLockedError, sqliteFilePath } from '../../electron/backend/storage/sqlite/file.ts';
import { AtomicWriteConflict, writeAtomically } from '../../electron/backend/storage/sqlite/instance.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import type { SqliteStorageSettings } from '../../electron/backend/storage/sqlite/storage.ts';
import { itemSchema } from './sqlite-storage.child.ts';
import type { Item } from './sqlite-storage.child.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';

type Db = RxDatabase<{ items: RxCollection<Item> }>;

const dbs: Db[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const db of dbs.splice(0)) await db.close();
});

async function openDb(dir: string, name = 'testdb', settings: Partial<SqliteStorageSettings> = {}): Promise<Db> {
  const db: Db = await createRxDatabase({ name, storage: getRxStorageSqlite({ directory: dir, textSearch: { items: ['name'] }, ...settings }), multiInstance: false });
  await db.addCollections({ items: { schema: itemSchema } });
  dbs.push(db);
  return db;
}

async function closeDb(db: Db): Promise<void> {
  await db.close();
  dbs.splice(dbs.indexOf(db), 1);
}

const itemsOf = (db: Db) => {
  const inst = sqliteInstanceOf<Item>(db.items.storageInstance);
  if (!inst) throw new Error('not the SQLite storage');
  return inst;
};

function spawnChild(mode: 'writer' | 'holder', dir: string): { child: ChildProcess; lines: AsyncIterableIterator<string>; stderr: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sqlite-storage.child.ts'), mode, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  return { child, lines: rl[Symbol.asyncIterator](), stderr: () => err };
}

const rowDoc = (id: string, name: string, n: number, rev = 1, deleted = false): RxDocumentData<Item> => ({ id, name, n, _deleted: deleted, _rev: `${rev}-x${rev}`, _meta: { lwt: now() }, _attachments: {} });
const filledItems = () => fillWithDefaultSettings(itemSchema as unknown as RxJsonSchema<Item>);
const prepared = (q: MangoQuery<RxDocumentData<Item>>) => prepareQuery(filledItems(), normalizeMangoQuery(filledItems(), q));

describe('SQLite storage: the disk is the truth', () => {
  it('reopen keeps every document, deleted ones included, with its _rev and _meta, and answers queries from the indexes', async () => {
    const dir = tempDir();
    const db = await openDb(dir);
    await db.items.bulkInsert(Array.from({ length: 50 }, (_, i) => ({ id: `d${String(i).padStart(3, '0')}`, name: `n${i}`, n: i })));
    for (let i = 0; i < 10; i++) {
      const d = await db.items.findOne(`d${String(i).padStart(3, '0')}`).exec();
      await d?.incrementalPatch({ name: `patched ${i}` });
      await d?.incrementalPatch({ n: 100 + i });
    }
    for (let i = 40; i < 45; i++) await (await db.items.findOne(`d0${i}`).exec())?.remove();
    const ids = Array.from({ length: 50 }, (_, i) => `d${String(i).padStart(3, '0')}`);
    const before = await db.items.storageInstance.findDocumentsById(ids, true);
    expect(before.filter((d) => d._deleted)).toHaveLength(5);
    expect(before.find((d) => d.id === 'd003')?._rev.startsWith('3-')).toBe(true);
    await closeDb(db);

    const again = await openDb(dir);
    expect(await again.items.storageInstance.findDocumentsById(ids, true)).toEqual(before);
    expect(await again.items.count().exec()).toBe(45);
    const top = await again.items.find({ selector: { n: { $gte: 100 } }, sort: [{ n: 'desc' }] }).exec();
    expect(top.map((d) => d.n)).toEqual([109, 108, 107, 106, 105, 104, 103, 102, 101, 100]);
  });

  it('reopen reads the disk, not documents kept in memory after close', async () => {
    const dir = tempDir();
    const db = await openDb(dir);
    await db.items.bulkInsert([{ id: 'a', name: 'A', n: 1 }, { id: 'b', name: 'B', n: 2 }]);
    expect((await db.items.find().exec()).length).toBe(2);
    await closeDb(db);
    const sqlite = new Database(sqliteFilePath(dir, 'testdb'));
    const table = sqlite.prepare<[], string>("SELECT tbl FROM instances WHERE name = 'items-0'").pluck().get();
    sqlite.prepare(`DELETE FROM "${table}" WHERE id = 'b'`).run();
    sqlite.close();
    const again = await openDb(dir);
    expect((await again.items.find().exec()).map((d) => d.id)).toEqual(['a']);
  });

  it('persists the replication checkpoint: the meta instances and the internal store are storage instances too', async () => {
    const dir = tempDir();
    const remote = Array.from({ length: 7 }, (_, i) => ({ id: `r${i}`, name: `remote ${i}`, n: i, _deleted: false }));
    const seen: unknown[] = [];
    const pullFrom = (db: Db) =>
      replicateRxCollection<Item, { i: number }>({
        collection: db.items,
        replicationIdentifier: 'test-remote',
        live: false,
        pull: {
          batchSize: 3,
          handler: async (checkpoint) => {
            seen.push(checkpoint ?? null);
            const from = checkpoint ? checkpoint.i : 0;
            const documents = remote.slice(from, from + 3);
            return { documents, checkpoint: { i: from + documents.length } };
          },
        },
      });
    const db = await openDb(dir);
    const first = pullFrom(db);
    await first.awaitInitialReplication();
    await first.cancel();
    expect(await db.items.count().exec()).toBe(7);
    await closeDb(db);

    seen.length = 0;
    const again = await openDb(dir);
    const second = pullFrom(again);
    await second.awaitInitialReplication();
    await second.cancel();
    expect(seen[0]).toEqual({ i: 7 });
    expect(await again.items.count().exec()).toBe(7);
    // Every instance RxDB made lives in the file: the collection, the internal store, the meta instance.
    await closeDb(again);
    const sqlite = new Database(sqliteFilePath(dir, 'testdb'), { readonly: true });
    const names = sqlite.prepare<[], string>('SELECT name FROM instances ORDER BY name').pluck().all();
    sqlite.close();
    expect(names.some((n) => n.startsWith('_rxdb_internal-'))).toBe(true);
    expect(names.some((n) => n.startsWith('rx-replication-meta-'))).toBe(true);
    expect(names).toContain('items-0');
  });

  it('continues a checkpoint in RxDB’s default {id, lwt} form (as migrated files hold) without skipping a later write', async () => {
    const inst = await openInstance<Item>(getRxStorageSqlite({ directory: tempDir() }), filledItems());
    const docs = Array.from({ length: 5 }, (_, i) => rowDoc(`k${i}`, `n${i}`, i));
    await inst.bulkWrite(docs.map((d) => ({ document: d })), 'w');
    const legacy = { id: 'k2', lwt: docs[2]?._meta.lwt ?? 0 };
    const page = await inst.getChangedDocumentsSince?.(10, legacy as never);
    expect(page?.documents.map((d) => d.id)).toEqual(['k3', 'k4']);
    // A document written after the checkpoint with an older lwt (a clock set back) is still sent.
    await inst.bulkWrite([{ document: { ...rowDoc('late', 'late', 9), _meta: { lwt: 1 } } }], 'w');
    const again = await inst.getChangedDocumentsSince?.(10, legacy as never);
    expect(again?.documents.map((d) => d.id)).toContain('late');
    expect((await inst.getChangedDocumentsSince?.(10, page?.checkpoint))?.documents.map((d) => d.id)).toEqual(['late']);
  });

  it('deletes the file once every instance of the database was removed', async () => {
    const dir = tempDir();
    const db = await openDb(dir, 'gone');
    await db.items.insert({ id: 'a', name: 'A', n: 1 });
    dbs.splice(dbs.indexOf(db), 1);
    await db.remove();
    expect(existsSync(sqliteFilePath(dir, 'gone'))).toBe(false);
  });
});

describe('SQLite storage: durability and ownership', () => {
  it('a process killed with SIGKILL right after acknowledged writes loses none of them', async () => {
    const dir = tempDir();
    const { child, lines, stderr } = spawnChild('writer', dir);
    const acked = new Map<string, string>();
    for (;;) {
      const next = await lines.next();
      if (next.done) throw new Error(`writer exited early: ${stderr()}`);
      const [tag, id, rev] = next.value.split(' ');
      if (tag !== 'ack' || !id || !rev) continue;
      acked.set(id, rev);
      if (acked.size >= 300) break;
    }
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));

    const db = await openDb(dir, 'crashtest');
    const stored = new Map((await db.items.find().exec()).map((d) => [d.id, d.toMutableJSON(true)._rev]));
    const missing = [...acked].filter(([id, rev]) => {
      const got = stored.get(id);
      // A later write the parent did not read yet may have raised the revision; never lowered it.
      return got === undefined || Number(got.split('-')[0]) < Number(rev.split('-')[0]);
    });
    expect(missing).toEqual([]);
    expect(acked.size).toBeGreaterThanOrEqual(300);
    // The text index committed with each write: every acknowledged name is found.
    const renamed = [...stored.keys()].filter((id) => Number(stored.get(id)?.split('-')[0]) > 1);
    expect(renamed.length).toBeGreaterThan(50);
    expect(itemsOf(db).searchText('renamed', 10_000).length).toBe(renamed.length);
  });

  it('refuses a second process with a clear error, and serves the folder again once the owner died', async () => {
    const dir = tempDir();
    const { child, lines, stderr } = spawnChild('holder', dir);
    const first = await lines.next();
    expect(first.value, stderr()).toBe('ready');
    const err = await openDb(dir, 'crashtest').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageLockedError);
    expect((err as Error).message).toMatch(/already open by another process/);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const db = await openDb(dir, 'crashtest');
    expect(await db.items.count().exec()).toBe(0);
  });

  it('fsyncs local writes (FULL), commits writes the server holds without fsync, and restores FULL even when such a write fails', async () => {
    const dir = tempDir();
    const s = getRxStorageSqlite({ directory: dir });
    const names = { databaseName: 'sync', collectionName: 'items' };
    const inst = await openInstance<Item>(s, filledItems(), names);
    const file = sqliteInstanceOf<Item>(inst)?.internalsForTests.file;
    if (!file) throw new Error('not our storage');
    const seen: number[] = [];
    const db = file.db;
    const pragma = db.pragma.bind(db);
    // Spy on the connection's synchronous setting during each write's commit.
    db.pragma = ((sql: string, opts?: { simple?: boolean }) => {
      const out = pragma(sql, opts);
      if (/^synchronous = /.test(sql)) seen.push(sql.endsWith('NORMAL') ? 1 : 2);
      return out;
    }) as typeof db.pragma;
    await inst.bulkWrite([{ document: rowDoc('local', 'l', 1) }], 'rx-collection');
    expect(seen).toEqual([]);
    await inst.bulkWrite([{ document: rowDoc('pulled', 'p', 1) }], 'replication-downstream-abc');
    expect(seen).toEqual([1, 2]);
    expect(file.synchronousNow()).toBe(2);
    db.exec(`CREATE TEMP TRIGGER fail BEFORE INSERT ON main."${sqliteInstanceOf<Item>(inst)?.internals.table}" WHEN NEW.id = 'poison' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END`);
    await expect(inst.bulkWrite([{ document: rowDoc('p2', 'p', 1) }, { document: rowDoc('poison', 'p', 1) }], 'replication-downstream-abc')).rejects.toThrow(/simulated disk failure/);
    expect(file.synchronousNow()).toBe(2);
    db.pragma = pragma;
  });

  it('a failed disk write rejects the whole write: documents, cache, text index, changes feed and events stay as they were', async () => {
    const dir = tempDir();
    const db = await openDb(dir);
    await db.items.insert({ id: 'keep', name: 'Keep', n: 1 });
    const inst = itemsOf(db);
    const { file, table } = inst.internalsForTests;
    file.db.exec(`CREATE TEMP TRIGGER fail_insert BEFORE INSERT ON main."${table.table}" WHEN NEW.id = 'poison' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END;
      CREATE TEMP TRIGGER fail_update BEFORE UPDATE ON main."${table.table}" WHEN instr(NEW.doc, '"poison"') > 0 BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END;`);
    const events: string[] = [];
    const sub = inst.changeStream().subscribe((b) => events.push(...b.events.map((e) => e.documentId)));
    const changesBefore = await inst.getChangedDocumentsSince(100);

    await expect(db.items.bulkInsert([{ id: 'fine', name: 'Fine', n: 3 }, { id: 'poison', name: 'P', n: 4 }])).rejects.toThrow(/simulated disk failure/);
    expect(await db.items.findOne('fine').exec()).toBeNull();
    expect(inst.searchText('fine', 10)).toEqual([]);
    const keep = await db.items.findOne('keep').exec();
    const rev = keep?.toMutableJSON(true)._rev;
    await expect(keep?.incrementalPatch({ name: 'poison' })).rejects.toThrow(/simulated disk failure/);
    expect((await db.items.findOne('keep').exec())?.toMutableJSON(true)._rev).toBe(rev);
    expect(inst.searchText('keep', 10)).toEqual(['keep']);
    expect(inst.searchText('poison', 10)).toEqual([]);
    expect(events).toEqual([]);
    expect(await inst.getChangedDocumentsSince(100)).toEqual(changesBefore);

    // The storage keeps working, and its sequence numbers continue without a gap that could hide a write.
    await db.items.insert({ id: 'after', name: 'After', n: 5 });
    const page = await inst.getChangedDocumentsSince(100, changesBefore.checkpoint);
    expect(page.documents.map((d) => d.id)).toEqual(['after']);
    expect(page.checkpoint.seq).toBe(changesBefore.checkpoint.seq + 1);
    sub.unsubscribe();
  });
});

describe('SQLite storage: writes across collections', () => {
  it('writes to several collections of one database all-or-nothing, and refuses instances of two databases', async () => {
    const s = getRxStorageSqlite({ directory: tempDir() });
    const a = await openInstance<Item>(s, filledItems(), { databaseName: 'atomic', collectionName: 'a' });
    const b = await openInstance<Item>(s, filledItems(), { databaseName: 'atomic', collectionName: 'b' });
    const [ia, ib] = [sqliteInstanceOf<unknown>(a), sqliteInstanceOf<unknown>(b)];
    if (!ia || !ib) throw new Error('not our storage');
    const events: string[] = [];
    const subs = [a, b].map((i) => i.changeStream().subscribe((bulk) => events.push(...bulk.events.map((e) => e.documentId))));
    await writeAtomically([{ instance: ia, rows: [{ document: rowDoc('a1', 'A', 1) }] }, { instance: ib, rows: [{ document: rowDoc('b1', 'B', 1) }] }], 'commit');
    expect(events).toEqual(['a1', 'b1']);
    // A conflict in one part: nothing in either.
    await expect(writeAtomically([{ instance: ia, rows: [{ document: rowDoc('a2', 'A', 2) }] }, { instance: ib, rows: [{ document: rowDoc('b1', 'again', 1) }] }], 'commit')).rejects.toThrow(AtomicWriteConflict);
    expect(await a.findDocumentsById(['a2'], true)).toEqual([]);
    // A disk failure in one part: nothing in either.
    const { file, table } = ib.internalsForTests;
    file.db.exec(`CREATE TEMP TRIGGER fail BEFORE INSERT ON main."${table.table}" WHEN NEW.id = 'poison' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END`);
    await expect(writeAtomically([{ instance: ia, rows: [{ document: rowDoc('a3', 'A', 3) }] }, { instance: ib, rows: [{ document: rowDoc('poison', 'P', 1) }] }], 'commit')).rejects.toThrow(/simulated disk failure/);
    expect(await a.findDocumentsById(['a3'], true)).toEqual([]);
    expect(events).toEqual(['a1', 'b1']);
    const other = sqliteInstanceOf<unknown>(await openInstance<Item>(s, filledItems(), { databaseName: 'elsewhere' }));
    if (!other) throw new Error('not our storage');
    await expect(writeAtomically([{ instance: ia, rows: [] }, { instance: other, rows: [] }], 'commit')).rejects.toThrow(/one database/);
    for (const sub of subs) sub.unsubscribe();
  });
});

describe('SQLite storage: reads', () => {
  it('keeps at most `documentCache` parsed documents, and hands a cached one out again without reading SQLite', async () => {
    const s = getRxStorageSqlite({ directory: tempDir(), documentCache: 5 });
    const inst = await openInstance<Item>(s, filledItems());
    await inst.bulkWrite(Array.from({ length: 20 }, (_, i) => ({ document: rowDoc(`k${i}`, `n${i}`, i) })), 'w');
    const table = sqliteInstanceOf<Item>(inst)?.internalsForTests.table;
    expect(table?.cache.size).toBe(5);
    const [a] = await inst.findDocumentsById(['k3'], false);
    const [b] = await inst.findDocumentsById(['k3'], false);
    expect(a).toBe(b);
    const none = await openInstance<Item>(getRxStorageSqlite({ directory: tempDir(), documentCache: 0 }), filledItems());
    await none.bulkWrite([{ document: rowDoc('k', 'n', 1) }], 'w');
    const [c] = await none.findDocumentsById(['k'], false);
    const [d] = await none.findDocumentsById(['k'], false);
    expect(c).toEqual(d);
    expect(c).not.toBe(d);
  });

  it('reads the first page of a newest-first query, not the whole range', async () => {
    const inst = await openInstance<Item>(getRxStorageSqlite({ directory: tempDir() }), filledItems());
    await inst.bulkWrite(Array.from({ length: 3000 }, (_, i) => ({ document: rowDoc(`k${String(i).padStart(5, '0')}`, `n${i}`, i) })), 'w');
    const table = sqliteInstanceOf<Item>(inst)?.internalsForTests.table;
    if (!table) throw new Error('not our storage');
    const q = prepared({ selector: { _deleted: { $eq: false } }, sort: [{ n: 'desc' }], limit: 50 });
    expect(q.queryPlan.sortSatisfiedByIndex).toBe(false);
    const before = table.rowsScanned;
    const docs = (await inst.query(q)).documents;
    expect(docs.map((d) => d.n)).toEqual(Array.from({ length: 50 }, (_, i) => 2999 - i));
    expect(table.rowsScanned - before).toBeLessThanOrEqual(256);
  });

  it('sorts by RxDB’s comparator, not index order, once a value’s index string would mislead (padding, control characters)', async () => {
    const schema = fillWithDefaultSettings<{ id: string; label: string }>({ version: 0, type: 'object', primaryKey: 'id', properties: { id: { type: 'string', maxLength: 10 }, label: { type: 'string', maxLength: 6 } }, required: ['id', 'label'], indexes: ['label'] });
    const inst = await openInstance<{ id: string; label: string }>(getRxStorageSqlite({ directory: tempDir() }), schema);
    // "a" and "a " have one index string; "a\t" sorts below both there, above them as values.
    const labels: [string, string][] = [['1', 'a\t'], ['2', 'a'], ['3', 'a '], ['4', 'b']];
    await inst.bulkWrite(labels.map(([id, label]) => ({ document: { id, label, _deleted: false, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} } })), 'w');
    const q = prepareQuery(schema, normalizeMangoQuery<RxDocumentData<{ id: string; label: string }>>(schema, { selector: { _deleted: { $eq: false } }, sort: [{ label: 'desc' }], limit: 3 }));
    expect((await inst.query(q)).documents.map((d) => d.label)).toEqual(['b', 'a ', 'a\t']);
  });
});

describe('SQLite storage: text search', () => {
  const storage = (dir: string) => getRxStorageSqlite({ directory: dir, textSearch: { items: ['name', 'id'] } }) as RxStorage<unknown, object>;

  it('finds live documents by a case-insensitive substring of any text field, in an index order, and follows updates and deletes', async () => {
    const dir = tempDir();
    const names = { databaseName: 'search', collectionName: 'items' };
    const inst = await openInstance<Item>(storage(dir), filledItems(), names);
    const search = sqliteInstanceOf<Item>(inst);
    if (!search) throw new Error('not our storage');
    const docs = [rowDoc('a1', 'Ann Smith', 5), rowDoc('a2', 'Bob SMITHERS', 9), rowDoc('a3', 'Carla Jones', 7), rowDoc('x-smi', 'Dora', 1)];
    await inst.bulkWrite(docs.map((d) => ({ document: d })), 'w');
    expect(search.searchText('smith', 10, { index: ['n'], direction: 'desc' })).toEqual(['a2', 'a1']);
    expect(search.searchText('SMI', 10, { index: ['n'], direction: 'asc' })).toEqual(['x-smi', 'a1', 'a2']);
    // Shorter than a trigram: found by scanning, same semantics.
    expect(search.searchText('Jo', 10)).toEqual(['a3']);
    expect(search.searchText('a', 2, { index: ['n'], direction: 'desc' })).toEqual(['a2', 'a3']);
    // A quote in the text is text, not query syntax.
    expect(search.searchText('"smith', 10)).toEqual([]);
    const [ann] = await inst.findDocumentsById(['a1'], false);
    if (!ann) throw new Error('a1 missing');
    await inst.bulkWrite([{ previous: ann, document: { ...ann, name: 'Ann Miller', _rev: '2-b', _meta: { lwt: now() } } }], 'w');
    const [bob] = await inst.findDocumentsById(['a2'], false);
    if (!bob) throw new Error('a2 missing');
    await inst.bulkWrite([{ previous: bob, document: { ...bob, _deleted: true, _rev: '2-b', _meta: { lwt: now() } } }], 'w');
    expect(search.searchText('smith', 10)).toEqual([]);
    expect(search.searchText('miller', 10)).toEqual(['a1']);
    await inst.close();
    // After reopen, from disk.
    const again = sqliteInstanceOf<Item>(await openInstance<Item>(storage(dir), filledItems(), names));
    expect(again?.searchText('miller', 10)).toEqual(['a1']);
    expect(() => again?.searchText('x', 1, { index: ['nope'], direction: 'asc' })).toThrow(/has no index _deleted,nope,id/);
  });

  it('gives the same ordered answers for common texts (found by walking the order) and rare ones (found through the index)', async () => {
    const inst = await openInstance<Item>(storage(tempDir()), filledItems(), { collectionName: 'items' });
    const search = sqliteInstanceOf<Item>(inst);
    if (!search) throw new Error('not our storage');
    const docs = Array.from({ length: 1500 }, (_, i) => rowDoc(`k${String(i).padStart(4, '0')}`, i % 5 < 2 ? `Ann Smith ${i}` : `Bo Okafor ${i}`, (i * 7919) % 1500));
    await inst.bulkWrite(docs.map((d) => ({ document: d })), 'w');
    const live = [...docs].sort((a, b) => b.n - a.n || (a.id < b.id ? 1 : -1));
    for (const text of ['smith', 'SMITH 1', 'okafor 14', 'okafor 1499', 'k0', 'nobody']) {
      const expected = live.filter((d) => d.name.toLowerCase().includes(text.toLowerCase()) || d.id.includes(text.toLowerCase())).slice(0, 20);
      expect(search.searchText(text, 20, { index: ['n'], direction: 'desc' }), text).toEqual(expected.map((d) => d.id));
    }
    // 'smith' is in 600 rows: more than the index is asked for, so it walked the order; the same
    // text asked through the index alone lists them all.
    expect(search.searchText('smith', 10_000).length).toBe(600);
  });

  it('is refused for a collection without text fields', async () => {
    const inst = sqliteInstanceOf<Item>(await openInstance<Item>(getRxStorageSqlite({ directory: tempDir() }), filledItems()));
    expect(() => inst?.searchText('x', 1)).toThrow(/has no text search/);
  });

  it('rebuilds index columns and the text index when a table’s index set or text fields change', async () => {
    const dir = tempDir();
    const names = { databaseName: 'rebuild', collectionName: 'items', token: randomToken(10) };
    const first = await openInstance<Item>(getRxStorageSqlite({ directory: dir }), filledItems(), names);
    const rows = Array.from({ length: 1200 }, (_, i) => rowDoc(`k${i}`, i % 2 ? `odd ${i}` : `even ${i}`, i));
    await first.bulkWrite(rows.map((d) => ({ document: d })), 'w');
    await first.close();
    const withName = fillWithDefaultSettings({ ...(itemSchema as unknown as RxJsonSchema<Item>), indexes: [['name', 'n']] });
    const again = await openInstance<Item>(getRxStorageSqlite({ directory: dir, textSearch: { items: ['name'] } }), withName, names);
    const q = prepareQuery(withName, normalizeMangoQuery<RxDocumentData<Item>>(withName, { selector: { _deleted: { $eq: false }, name: { $gte: 'odd', $lt: 'odd 2' } }, sort: [{ name: 'asc' }, { n: 'asc' }] }));
    expect(q.queryPlan.index).toEqual(['_deleted', 'name', 'n', 'id']);
    const expected = rows.filter((d) => d.name >= 'odd' && d.name < 'odd 2').sort((a, b) => (a.name < b.name ? -1 : 1));
    expect((await again.query(q)).documents.map((d) => d.id)).toEqual(expected.map((d) => d.id));
    expect(expected.length).toBeGreaterThan(100);
    const found = sqliteInstanceOf<Item>(again)?.searchText('even 11', 1000);
    expect(found?.sort()).toEqual(rows.filter((d) => d.name.includes('even 11')).map((d) => d.id).sort());
  });
});

describe('SQLite storage: index builds off the event loop', () => {
  /** A collection in a bulk load whose deferred indexes are missing, over `rows` rows: 1000 written
   * as pulled documents (which starts the load), the rest put in with SQL (any content will do for
   * building an index; it is not read back). */
  async function loadedTable(rows: number) {
    const dir = tempDir();
    const inst = await openInstance<Item>(getRxStorageSqlite({ directory: dir }), filledItems(), { databaseName: 'build', collectionName: 'items' });
    const sqlite = sqliteInstanceOf<Item>(inst);
    if (!sqlite) throw new Error('not our storage');
    const { file, table } = sqlite.internalsForTests;
    const res = await inst.bulkWrite(Array.from({ length: BULK_ROWS }, (_, i) => ({ document: rowDoc(`p${i}`, `pulled ${i}`, i) })), 'replication-downstream-test');
    expect(res.error).toEqual([]);
    expect(table.isLoading).toBe(true);
    const columns = (file.db.prepare(`PRAGMA table_info("${table.table}")`).all() as { name: string }[]).map((c) => c.name);
    const value = (c: string): string => (c === 'seq' ? '-x' : c === 'id' ? "'bulk' || x" : c === 'doc' ? "'{}'" : c === 'lwt' ? 'x' : c.startsWith('k') ? 'hex(randomblob(16))' : '0');
    file.write(false, () =>
      file.db.exec(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${rows - BULK_ROWS})
        INSERT INTO "${table.table}" (${columns.map((c) => `"${c}"`).join(', ')}) SELECT ${columns.map(value).join(', ')} FROM n`),
    );
    return { dir, inst, file, table };
  }

  it('keeps the event loop turning while an index of a large table is built, queues a write meanwhile and lands it', async () => {
    const { inst, file, table } = await loadedTable(400_000);
    // Timer drift: the longest gap between ticks of a 5 ms interval while the builds run.
    let last = performance.now();
    let maxGap = 0;
    const tick = setInterval(() => {
      const t = performance.now();
      maxGap = Math.max(maxGap, t - last);
      last = t;
    }, 5);
    const builds: { what: string; ms: number }[] = [];
    let started = 0;
    const stop = file.watchBuilds((what) => {
      if (what !== null) started = performance.now();
      else if (started > 0) builds.push({ what: 'index', ms: performance.now() - started });
    });
    let queued = null as Promise<unknown> | null;
    let wasQueued = false;
    const stopWrite = file.watchBuilds((what) => {
      if (what === null || queued) return;
      // A local write while the worker holds the write lock: queued, not run into SQLITE_BUSY.
      queued = inst.bulkWrite([{ document: rowDoc('during', 'written during a build', 7) }], 'test-local-write');
      wasQueued = file.building;
    });
    try {
      last = performance.now();
      maxGap = 0;
      await table.finishLoading();
      expect(table.isLoading).toBe(false);
      expect(queued).not.toBeNull();
      expect(wasQueued).toBe(true);
      expect(await queued).toEqual({ error: [] });
    } finally {
      clearInterval(tick);
      stop();
      stopWrite();
    }
    const longest = Math.max(...builds.map((b) => b.ms));
    expect(builds.length).toBeGreaterThan(0);
    // Generous (the machine is shared): on this thread a build held the loop for its whole length.
    expect(maxGap, `longest loop gap ${maxGap.toFixed(0)} ms; longest build ${longest.toFixed(0)} ms`).toBeLessThan(Math.max(100, longest / 3));
    const found = await inst.findDocumentsById(['during'], false);
    expect(found.map((d) => d.name)).toEqual(['written during a build']);
    // The indexes are in the file; a computed column's (RxDB's [_meta.lwt, id]) once a query reads
    // the column (DocTable.wantIndex): until then no write keeps it up.
    const names = () => file.db.prepare<[string], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?").pluck().all(table.table);
    for (const c of table.columns.filter((x) => x.sql === null)) expect(names()).toContain(`${table.table}_${c.column}`);
    const computed = table.columns.filter((x) => x.sql !== null);
    expect(computed.map((c) => c.fields)).toEqual([['_meta.lwt', 'id']]);
    for (const c of computed) expect(names()).not.toContain(`${table.table}_${c.column}`);
    const oldest = await inst.query(prepared({ selector: { '_meta.lwt': { $gt: 0 } }, sort: [{ '_meta.lwt': 'asc' }, { id: 'asc' }], limit: 1 }));
    expect(oldest.documents).toHaveLength(1);
    for (const c of computed) await expect.poll(() => names(), { timeout: 30_000 }).toContain(`${table.table}_${c.column}`);
  }, 120_000);

  it('a second app on the same folder is still refused while this one builds an index', async () => {
    const { dir, file, table } = await loadedTable(50_000);
    const finishing = table.finishLoading();
    expect(file.building).toBe(true);
    const other = new Database(`${sqliteFilePath(dir, 'build')}-lock`, { timeout: 0 });
    try {
      expect(() => other.exec('BEGIN IMMEDIATE')).toThrow(/locked|busy/i);
    } finally {
      other.close();
    }
    await finishing;
    expect(table.isLoading).toBe(false);
  }, 60_000);
});

describe('SQLite storage: a load held while a pull has more pages coming', () => {
  const tuning = { ...LOAD_TUNING };
  afterEach(() => Object.assign(LOAD_TUNING, tuning));
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** An empty collection, its pulled pages of BULK_ROWS documents (the first starts a load), the
   * indexes such a load leaves out, and the builds the file announces (what, when). */
  async function pulledLoad(quietMs: number, holdMs: number) {
    LOAD_TUNING.quietMs = quietMs;
    LOAD_TUNING.holdMs = holdMs;
    const inst = await openInstance<Item>(getRxStorageSqlite({ directory: tempDir() }), filledItems(), { databaseName: 'held', collectionName: 'items' });
    const sqlite = sqliteInstanceOf<Item>(inst);
    if (!sqlite) throw new Error('not our storage');
    const { file, table } = sqlite.internalsForTests;
    const builds: { what: string; at: number }[] = [];
    const unwatch = file.watchBuilds((what) => {
      if (what !== null) builds.push({ what, at: Date.now() });
    });
    let pages = 0;
    const page = async () => {
      const from = BULK_ROWS * pages++;
      const res = await inst.bulkWrite(Array.from({ length: BULK_ROWS }, (_, i) => ({ document: rowDoc(`p${from + i}`, `pulled ${from + i}`, from + i) })), 'replication-downstream-test');
      expect(res.error).toEqual([]);
    };
    // The indexes of the schema's stored index columns (`name`, `n`): dropped by the load.
    const deferred = table.columns.filter((c) => c.sql === null).map((c) => `${table.table}_${c.column}`);
    expect(deferred.length).toBeGreaterThanOrEqual(2);
    const built = () => deferred.filter((name) => table.indexReady(name)).length;
    return { sqlite, table, page, builds, built, deferred, unwatch };
  }

  it('builds nothing across pauses longer than the quiet window while held, and builds once released', async () => {
    const quiet = 100;
    const { sqlite, table, page, builds, built, deferred, unwatch } = await pulledLoad(quiet, 20_000);
    try {
      // A page arrives that says more are coming: held, then written (the load starts).
      sqlite.holdLoad(true);
      await page();
      expect(table.isLoading).toBe(true);
      expect(built()).toBe(0);
      for (let i = 0; i < 2; i++) {
        // The next page comes late (a slow server): six quiet windows.
        await sleep(6 * quiet);
        expect(builds, `page ${i + 2}`).toEqual([]);
        sqlite.holdLoad(true);
        await page();
      }
      await sleep(6 * quiet);
      expect(builds).toEqual([]);
      expect(table.isLoading).toBe(true);
      expect(built()).toBe(0);
      // The pull's last page (not full): released; the builds start once the load is quiet.
      const released = Date.now();
      sqlite.holdLoad(false);
      await expect.poll(() => table.isLoading, { timeout: 30_000 }).toBe(false);
      expect(built()).toBe(deferred.length);
      expect(builds.length).toBeGreaterThanOrEqual(deferred.length);
      expect(builds[0]?.at).toBeGreaterThanOrEqual(released);
    } finally {
      unwatch();
    }
  }, 60_000);

  it('lets a hold that no page renews and no release ends lapse after its bounded time: the builds start then', async () => {
    const quiet = 100;
    const hold = 1500;
    const { sqlite, table, page, builds, built, deferred, unwatch } = await pulledLoad(quiet, hold);
    try {
      const heldAt = Date.now();
      sqlite.holdLoad(true);
      await page();
      // The pull stalls (the network is gone): nothing comes, nothing releases.
      await sleep(6 * quiet);
      expect(builds).toEqual([]);
      expect(table.isLoading).toBe(true);
      await expect.poll(() => table.isLoading, { timeout: 30_000 }).toBe(false);
      expect(built()).toBe(deferred.length);
      // Not before the hold's bound (a timer fires at or after its time).
      expect(builds[0]?.at ?? 0).toBeGreaterThanOrEqual(heldAt + hold);
    } finally {
      unwatch();
    }
  }, 60_000);

  it('lets a build running when a hold comes finish, and holds the next one until the release', async () => {
    const quiet = 100;
    const { sqlite, table, page, built, deferred, unwatch } = await pulledLoad(quiet, 20_000);
    // The hold comes while the first build runs (as a page asked for by a pull started again would).
    let started = 0;
    let ended = 0;
    const stopHolding = sqlite.storageFile.watchBuilds((what) => {
      if (what !== null) {
        started++;
        sqlite.holdLoad(true);
      } else if (started > 0) ended++;
    });
    try {
      await page();
      await expect.poll(() => ended, { timeout: 30_000 }).toBeGreaterThan(0);
      stopHolding();
      await sleep(6 * quiet);
      expect(built()).toBe(1);
      expect(table.isLoading).toBe(true);
      sqlite.holdLoad(false);
      await expect.poll(() => table.isLoading, { timeout: 30_000 }).toBe(false);
      expect(built()).toBe(deferred.length);
    } finally {
      stopHolding();
      unwatch();
    }
  }, 60_000);
});

describe('SQLite storage: checkpoints in the worker thread', () => {
  /** A collection of its own in a fresh folder: the instance, its file, and the database's path
   * (the WAL is `${path}-wal`). */
  async function checkpointed(name: string) {
    const dir = tempDir();
    const inst = await openInstance<Item>(getRxStorageSqlite({ directory: dir }), filledItems(), { databaseName: name, collectionName: 'items' });
    const sqlite = sqliteInstanceOf<Item>(inst);
    if (!sqlite) throw new Error('not our storage');
    return { inst, file: sqlite.internalsForTests.file, path: sqliteFilePath(dir, name) };
  }

  it('commits never checkpoint on this thread; the worker copies the WAL into the file soon after', async () => {
    const { inst, file, path } = await checkpointed('checkpoints');
    expect(file.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    // In WAL mode only a checkpoint writes the database file itself.
    const before = statSync(path).size;
    expect(await inst.bulkWrite(Array.from({ length: 2000 }, (_, i) => ({ document: rowDoc(`p${i}`, `pulled ${'x'.repeat(200)} ${i}`, i) })), 'replication-downstream-test')).toEqual({ error: [] });
    expect(statSync(path).size).toBe(before);
    // Until the checkpoint has copied the write (its first pages can be seen before its last).
    for (let i = 0; i < 100 && statSync(path).size <= before + 500_000; i++) await new Promise((r) => setTimeout(r, 50));
    expect(statSync(path).size).toBeGreaterThan(before + 500_000);
  }, 30_000);

  it('starts the WAL over during a long run of writes that never pauses for a checkpoint to catch up', async () => {
    // A small limit stands for the real one (a 300k initial sync's WAL grew to 217 MB while every
    // passive checkpoint copied what it found: the WAL starts over only when a write begins with
    // all of it copied).
    const tuning = { ...CHECKPOINT_TUNING };
    CHECKPOINT_TUNING.delayMs = 0;
    CHECKPOINT_TUNING.walLimitBytes = 2 * 1024 * 1024;
    try {
      const { inst, file, path } = await checkpointed('wal-restart');
      let largest = 0;
      for (let w = 0; w < 40; w++) {
        const rows = Array.from({ length: 1000 }, (_, i) => ({ document: rowDoc(`w${w}-${i}`, `pulled ${'x'.repeat(500)} ${w} ${i}`, i) }));
        expect(await inst.bulkWrite(rows, 'replication-downstream-test')).toEqual({ error: [] });
        largest = Math.max(largest, statSync(`${path}-wal`).size);
        // One turn of the event loop between writes, as between pulled pages.
        await new Promise((r) => setImmediate(r));
      }
      // The run wrote far more than the limit (each write ~1.3 MB of rows and indexes; the file
      // holds ~50 MB) ...
      const written = statSync(path).size;
      expect(written).toBeGreaterThan(20 * 1024 * 1024);
      // ... and the WAL file never held more than the limit and a few writes: it started over
      // (measured: ~9 MB; 60 MB, all of the run, when a RESTART waited for a passive checkpoint
      // to leave pages uncopied).
      expect(file.checkpointLog.restart).toBeGreaterThan(0);
      expect(largest).toBeLessThan(written / 3);
    } finally {
      Object.assign(CHECKPOINT_TUNING, tuning);
    }
  }, 60_000);

  it('keeps the WAL bounded during a load that commits in one chain of promise callbacks (no turn of the event loop between its commits)', async () => {
    // A seed or a fill awaits each commit and starts the next at once: neither the checkpoint's
    // timer nor the worker's answer gets a turn, and the WAL held the whole load (a 1M-lead seed:
    // 2.9 GB beside a 4 KB file). A small limit stands for the real one.
    const tuning = { ...CHECKPOINT_TUNING };
    CHECKPOINT_TUNING.walLimitBytes = 2 * 1024 * 1024;
    try {
      const { inst, file, path } = await checkpointed('wal-chain');
      let largest = 0;
      let turns = 0;
      const ticker = setInterval(() => turns++, 0);
      for (let w = 0; w < 30; w++) {
        // Local writes (each its own transaction, durable), 1,000 rows each, one right after the other.
        const rows = Array.from({ length: 1000 }, (_, i) => ({ document: rowDoc(`c${w}-${i}`, `local ${'x'.repeat(500)} ${w} ${i}`, i) }));
        expect(await inst.bulkWrite(rows, 'rx-collection')).toEqual({ error: [] });
        largest = Math.max(largest, statSync(`${path}-wal`).size);
      }
      clearInterval(ticker);
      // The load wrote far more than the limit (each write ~1.3 MB of rows and indexes) ...
      await new Promise((r) => setTimeout(r, 0));
      const written = statSync(path).size + statSync(`${path}-wal`).size;
      expect(written).toBeGreaterThan(30 * 1024 * 1024);
      // ... and the WAL never held more than twice the limit and a write: past that, the next write
      // waited for a RESTART checkpoint (measured: 4.5 MB; 44.6 MB, all of the load, before).
      expect(largest).toBeLessThan(3 * CHECKPOINT_TUNING.walLimitBytes + 2 * 1024 * 1024);
      expect(file.checkpointLog.restart).toBeGreaterThan(0);
      // The load gave the event loop turns only while a RESTART held its writes.
      expect(turns).toBeGreaterThan(0);
    } finally {
      Object.assign(CHECKPOINT_TUNING, tuning);
    }
  }, 60_000);
});
