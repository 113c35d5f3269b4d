/**
 * A pulled page written over several turns of the event loop (electron/backend/storage/sqlite/
 * file.ts, openPage): the documents, then their assumed-master rows (the two writes RxDB's
 * replication makes of a page), in one transaction spread over turns, so timers and reads run
 * while it is written; every read meanwhile sees the file as committed (none of the page, or all
 * of it with its meta rows); a write asked for meanwhile waits for the COMMIT; change events come
 * after the COMMIT; a failure in the middle takes back the whole page.
 */
import { describe, expect, it } from 'vitest';
import { fillWithDefaultSettings, getChangedDocumentsSince, getRxReplicationMetaInstanceSchema, normalizeMangoQuery, now, prepareQuery, randomToken } from 'rxdb';
import type { BulkWriteRow, RxDocumentData, RxJsonSchema, RxStorage, RxStorageDefaultCheckpoint } from 'rxdb';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { itemSchema } from './sqlite-storage.child.ts';
import type { Item } from './sqlite-storage.child.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';

type Json = Record<string, unknown>;

/** An initial sync's page. */
const PAGE = 2000;
/** Documents in the collection before the page. */
const BEFORE = 10;

const schema = fillWithDefaultSettings(itemSchema as unknown as RxJsonSchema<Item>) as RxJsonSchema<RxDocumentData<Item>>;
const metaSchema = getRxReplicationMetaInstanceSchema(schema as unknown as RxJsonSchema<RxDocumentData<Json>>, false) as unknown as RxJsonSchema<RxDocumentData<Json>>;

const item = (id: string, name: string, n: number): RxDocumentData<Item> => ({ id, name, n, _deleted: false, _rev: '1-p', _meta: { lwt: now() }, _attachments: {} });

/** The meta row RxDB's replication writes for a pulled document: its state without meta fields. */
const metaRow = (doc: RxDocumentData<Item>): BulkWriteRow<Json> => ({
  document: { id: `${doc.id}|0`, isCheckpoint: '0', itemId: doc.id, docData: { id: doc.id, name: doc.name, n: doc.n, _deleted: false }, _attachments: {}, _deleted: false, _rev: '1-m', _meta: { lwt: now() } },
});

async function setup() {
  const dir = tempDir('sqlite-sliced-');
  const storage = getRxStorageSqlite({ directory: dir, textSearch: { items: ['name'] } }) as RxStorage<unknown, object>;
  const token = randomToken(10);
  const fork = await openInstance<Item>(storage, schema, { databaseName: 'sliced', collectionName: 'items', token });
  // Opened after the collection, so its rows follow it (master-states.ts).
  const meta = await openInstance<Json>(storage, metaSchema, { databaseName: 'sliced', collectionName: 'rx-replication-meta-items', token });
  const sqlite = sqliteInstanceOf<Item>(fork);
  if (!sqlite) throw new Error('not the SQLite storage');
  const before = Array.from({ length: BEFORE }, (_, i) => item(`before-${String(i).padStart(4, '0')}`, `earlier ${i}`, i));
  expect((await fork.bulkWrite(before.map((document) => ({ document })), 'local-insert')).error).toEqual([]);
  const checkpoint = (await getChangedDocumentsSince(fork, BEFORE + 1)).checkpoint;
  const page = Array.from({ length: PAGE }, (_, i) => item(`page-${String(i).padStart(5, '0')}`, `pulled item ${i}`, 1000 + i));
  return { fork, meta, sqlite, file: sqlite.internalsForTests.file, page, checkpoint };
}

/** How many of the page's documents each kind of read sees now. */
async function reads(s: Awaited<ReturnType<typeof setup>>, checkpoint: RxStorageDefaultCheckpoint): Promise<Record<string, number>> {
  const ids = s.page.map((d) => d.id);
  const all = prepareQuery(schema, normalizeMangoQuery(schema, { selector: {}, sort: [{ name: 'asc' }] }));
  const metaAll = prepareQuery(metaSchema, normalizeMangoQuery(metaSchema, { selector: {} }));
  return {
    byId: (await s.fork.findDocumentsById(ids, true)).length,
    query: (await s.fork.query(all)).documents.length - BEFORE,
    count: (await s.fork.count(all)).count - BEFORE,
    changes: (await getChangedDocumentsSince(s.fork, PAGE + 100, checkpoint)).documents.length,
    text: s.sqlite.searchText('pulled item', PAGE + 100).length,
    metaById: (await s.meta.findDocumentsById(ids.map((id) => `${id}|0`), true)).length,
    metaQuery: (await s.meta.query(metaAll)).documents.length,
  };
}

describe('SQLite storage: a pulled page written over turns of the event loop', () => {
  it('lets timers and reads run between its slices; every read sees none of the page or all of it with its meta rows; a write asked for meanwhile lands after the COMMIT', async () => {
    const s = await setup();
    const events: { table: string; pageOpen: boolean; n: number }[] = [];
    const subs = [
      s.fork.changeStream().subscribe((b) => events.push({ table: 'fork', pageOpen: s.file.pageOpen, n: b.events.length })),
      s.meta.changeStream().subscribe((b) => events.push({ table: 'meta', pageOpen: s.file.pageOpen, n: b.events.length })),
    ];
    const order: string[] = [];
    // RxDB's replication: the documents, then (once they are written) their meta rows.
    const written = (async () => {
      const res = await s.fork.bulkWrite(s.page.map((document) => ({ document })), 'replication-downstream-test');
      expect(res.error).toEqual([]);
      const metaRes = await s.meta.bulkWrite(s.page.map(metaRow), 'replication-down-write-meta');
      expect(metaRes.error).toEqual([]);
      order.push('page');
    })();
    let done = false;
    void written.finally(() => (done = true));
    let timerFired = false;
    setTimeout(() => (timerFired = !done), 0);
    // Reads on every turn while the page is written.
    const seen: { open: boolean; r: Record<string, number> }[] = [];
    let local: Promise<unknown> | null = null;
    while (!done) {
      await new Promise((r) => setImmediate(r));
      const open = s.file.pageOpen;
      seen.push({ open, r: await reads(s, s.checkpoint) });
      if (open && !local) {
        // A local edit while the page's transaction is open: it waits for the COMMIT.
        const edited = { ...(s.page[0] as RxDocumentData<Item>), name: 'edited locally', _rev: '2-l', _meta: { lwt: now() } };
        local = s.fork.bulkWrite([{ previous: s.page[0], document: edited }], 'local-edit').then((res) => {
          expect(res.error).toEqual([]);
          order.push('local');
        });
      }
    }
    await written;
    await local;
    expect(timerFired).toBe(true);
    const during = seen.filter((x) => x.open);
    expect(during.length).toBeGreaterThan(2);
    const none = { byId: 0, query: 0, count: 0, changes: 0, text: 0, metaById: 0, metaQuery: 0 };
    const all = { byId: PAGE, query: PAGE, count: PAGE, changes: PAGE, text: PAGE, metaById: PAGE, metaQuery: PAGE };
    for (const x of during) expect(x.r).toEqual(none);
    for (const x of seen) expect([none, all]).toContainEqual(x.r);
    // The local edit was written after the page and is there.
    expect(order).toEqual(['page', 'local']);
    expect((await s.fork.findDocumentsById([s.page[0]?.id ?? ''], false))[0]?.name).toBe('edited locally');
    expect((await reads(s, s.checkpoint)).text).toBe(PAGE - 1);
    // Change events once committed: the page's documents and meta rows, then the local edit.
    expect(events).toEqual([
      { table: 'fork', pageOpen: false, n: PAGE },
      { table: 'meta', pageOpen: false, n: PAGE },
      { table: 'fork', pageOpen: false, n: 1 },
    ]);
    for (const sub of subs) sub.unsubscribe();
  }, 60_000);

  it("keeps neither the page's documents nor its meta rows in the document cache, and drops a cached document the page replaces", async () => {
    const s = await setup();
    const metaTable = sqliteInstanceOf<Json>(s.meta)?.internalsForTests.table;
    if (!metaTable) throw new Error('not the SQLite storage');
    const cache = s.sqlite.internalsForTests.table.cache;
    const [stored] = await s.fork.findDocumentsById(['before-0003'], true);
    if (!stored) throw new Error('missing document');
    expect(cache.size).toBe(BEFORE);
    const updated = { ...stored, name: 'pulled again', _rev: '2-p', _meta: { lwt: now() } };
    const res = await s.fork.bulkWrite([{ previous: stored, document: updated }, ...s.page.map((document) => ({ document }))], 'replication-downstream-test');
    expect(res.error).toEqual([]);
    expect((await s.meta.bulkWrite([updated, ...s.page].map(metaRow), 'replication-down-write-meta')).error).toEqual([]);
    // The documents written before the page stay; the one the page replaced is gone from the cache.
    expect(cache.size).toBe(BEFORE - 1);
    expect(metaTable.cache.size).toBe(0);
    expect((await s.fork.findDocumentsById(['before-0003'], true))[0]).toEqual(updated);
    const last = s.page[PAGE - 1] as RxDocumentData<Item>;
    expect((await s.fork.findDocumentsById([last.id], true))[0]).toEqual(last);
    expect((await s.meta.findDocumentsById([`${last.id}|0`], true))[0]?.['docData']).toEqual({ id: last.id, name: last.name, n: last.n, _deleted: false });
  }, 60_000);

  it('takes back the whole page, its documents included, when its meta rows fail in the middle; the writes queued behind it run; pulled writes wait for the replication to start over', async () => {
    const s = await setup();
    let lost = 0;
    s.sqlite.onPulledPageLost(() => lost++);
    const res = await s.fork.bulkWrite(s.page.map((document) => ({ document })), 'replication-downstream-test');
    expect(res.error).toEqual([]);
    expect(s.file.pageOpen).toBe(true);
    const queued = s.fork.bulkWrite([{ document: item('queued-1', 'queued', 1) }], 'local-insert');
    // The meta instance closes (its close waits for the page), so its write fails inside the page.
    const closing = s.meta.close();
    await expect(s.meta.bulkWrite(s.page.map(metaRow), 'replication-down-write-meta')).rejects.toThrow(/closed/);
    expect(s.file.pageOpen).toBe(false);
    expect((await queued).error).toEqual([]);
    await closing;
    expect((await s.fork.findDocumentsById(s.page.map((d) => d.id), true)).length).toBe(0);
    expect((await s.fork.findDocumentsById(['queued-1'], true)).length).toBe(1);
    expect(s.sqlite.searchText('pulled item', 10)).toEqual([]);
    // RxDB was told the page's documents were written: until its replication starts again from
    // its stored checkpoint (acceptPulls), pulled writes are refused, so no later page stores a
    // checkpoint past the lost one (replication.ts startOver); local writes go on.
    expect(lost).toBe(1);
    await expect(s.fork.bulkWrite(s.page.map((document) => ({ document })), 'replication-downstream-test')).rejects.toThrow(/pulled page was lost/);
    expect((await s.fork.bulkWrite([{ document: item('queued-2', 'queued', 2) }], 'local-insert')).error).toEqual([]);
    s.sqlite.acceptPulls();
    // The next page is written as usual.
    expect((await s.fork.bulkWrite(s.page.map((document) => ({ document })), 'replication-downstream-test')).error).toEqual([]);
    expect((await s.fork.findDocumentsById(s.page.map((d) => d.id), true)).length).toBe(PAGE);
  }, 60_000);
});
