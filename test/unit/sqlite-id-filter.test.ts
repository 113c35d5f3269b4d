/**
 * Reads of ids a documents table cannot hold answered without a statement (electron/backend/
 * storage/sqlite/id-filter.ts): a table empty when this process opened it keeps a Bloom filter of
 * the ids it wrote, so RxDB's reads of a pulled page's new ids (in the collection and the meta
 * instance, before and in each write) read nothing; a "no" of the filter is never wrong, a table
 * opened with rows has none.
 */
import { describe, expect, it } from 'vitest';
import { fillWithDefaultSettings, getRxReplicationMetaInstanceSchema, now, randomToken } from 'rxdb';
import type { BulkWriteRow, RxDocumentData, RxJsonSchema, RxStorage } from 'rxdb';
import { IdFilter } from '../../electron/backend/storage/sqlite/id-filter.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { itemSchema } from './sqlite-storage.child.ts';
import type { Item } from './sqlite-storage.child.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';

type Json = Record<string, unknown>;

const schema = fillWithDefaultSettings(itemSchema as unknown as RxJsonSchema<Item>) as RxJsonSchema<RxDocumentData<Item>>;
const metaSchema = getRxReplicationMetaInstanceSchema(schema as unknown as RxJsonSchema<RxDocumentData<Json>>, false) as unknown as RxJsonSchema<RxDocumentData<Json>>;
const PAGE = 2000;

const item = (id: string, n: number): RxDocumentData<Item> => ({ id, name: `item ${n}`, n, _deleted: false, _rev: '1-p', _meta: { lwt: now() }, _attachments: {} });
const metaRow = (doc: RxDocumentData<Item>): BulkWriteRow<Json> => ({
  document: { id: `${doc.id}|0`, isCheckpoint: '0', itemId: doc.id, docData: { id: doc.id, name: doc.name, n: doc.n, _deleted: false }, _attachments: {}, _deleted: false, _rev: '1-m', _meta: { lwt: now() } },
});
const pageOf = (from: number): RxDocumentData<Item>[] => Array.from({ length: PAGE }, (_, i) => item(`0190a1b2-c3d4-7e5f-8a9b-${String(from + i).padStart(12, '0')}`, from + i));

describe('IdFilter', () => {
  it('never says no to an id it was given, across its layers, and says maybe to few others', () => {
    const f = new IdFilter();
    const ids = Array.from({ length: 150_000 }, (_, i) => `0190a1b2-c3d4-7e5f-8a9b-${String(i * 7).padStart(12, '0')}`);
    for (const id of ids) f.add(id);
    expect(ids.every((id) => f.mayHold(id))).toBe(true);
    let maybe = 0;
    for (let i = 0; i < 100_000; i++) if (f.mayHold(`0190a1b2-c3d4-7e5f-8a9b-${String(i * 7 + 3).padStart(12, '0')}`)) maybe++;
    expect(maybe).toBeLessThan(4000);
    expect(f.bytes).toBeLessThan(ids.length * 2.5);
  });
});

describe('reads of ids a table cannot hold', () => {
  it('read no statement for a pulled page’s new ids in a table this process filled, find every written id, and read them all once reopened', async () => {
    const dir = tempDir('sqlite-idfilter-');
    const storage = getRxStorageSqlite({ directory: dir }) as RxStorage<unknown, object>;
    const token = randomToken(10);
    const open = async () => {
      const fork = await openInstance<Item>(storage, schema, { databaseName: 'filter', collectionName: 'items', token });
      const meta = await openInstance<Json>(storage, metaSchema, { databaseName: 'filter', collectionName: 'rx-replication-meta-items', token });
      const tables = [fork, meta].map((i) => {
        const s = sqliteInstanceOf<unknown>(i);
        if (!s) throw new Error('not the SQLite storage');
        return s.internalsForTests.table;
      });
      return { fork, meta, tables };
    };
    let { fork, meta, tables } = await open();
    const idsRead = () => tables.reduce((n, t) => n + t.idsRead, 0);
    const pages = [pageOf(0), pageOf(PAGE), pageOf(2 * PAGE)];
    for (const page of pages) {
      // As RxDB's replication stores a pulled page: both reads, then both writes (each checks its ids).
      const before = idsRead();
      expect(await fork.findDocumentsById(page.map((d) => d.id), true)).toEqual([]);
      expect(await meta.findDocumentsById(page.map((d) => `${d.id}|0`), true)).toEqual([]);
      expect((await fork.bulkWrite(page.map((document) => ({ document })), 'replication-downstream-x')).error).toEqual([]);
      expect((await meta.bulkWrite(page.map(metaRow), 'replication-down-write-meta')).error).toEqual([]);
      // Four reads of 2,000 new ids each: a few false "maybe"s at most.
      expect(idsRead() - before).toBeLessThan(0.05 * 4 * PAGE);
    }
    // Every written id is found (pulled pages are not cached: read from the table).
    const all = pages.flat();
    expect((await fork.findDocumentsById(all.map((d) => d.id), true)).map((d) => d.id)).toEqual(all.map((d) => d.id));
    expect((await meta.findDocumentsById(all.map((d) => `${d.id}|0`), true)).map((d) => d['itemId'])).toEqual(all.map((d) => d.id));
    // An update of a stored document is checked against it (a stale `previous` is a conflict).
    const first = all[0] as RxDocumentData<Item>;
    const stale = await fork.bulkWrite([{ previous: { ...first, _rev: '1-other' }, document: { ...first, n: 1, _rev: '2-x', _meta: { lwt: now() } } }], 'local-update');
    expect(stale.error.map((e) => e.status)).toEqual([409]);
    await fork.close();
    await meta.close();
    // Opened with rows: no filter, every id not cached is read.
    ({ fork, meta, tables } = await open());
    const next = pageOf(3 * PAGE);
    expect(await fork.findDocumentsById(next.map((d) => d.id), true)).toEqual([]);
    expect(tables[0]?.idsRead).toBe(PAGE);
    expect((await fork.findDocumentsById([first.id], true)).map((d) => d.id)).toEqual([first.id]);
  });
});
