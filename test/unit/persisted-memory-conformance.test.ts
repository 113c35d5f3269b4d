/**
 * The desktop storage (electron/backend/storage/persisted-memory.ts) against RxDB's own memory
 * storage as the reference implementation of the RxStorage interface of rxdb 17.6.0: the same
 * writes must give the same answers (write errors, reads by id, mango queries, counts, changed
 * documents since a checkpoint, change events). RxDB's storage test suite
 * (test/unit/rx-storage-implementations.test.ts in the rxdb repository) needs the repository's
 * own mocha/karma harness and helpers built at the matching version, so these properties are
 * checked here instead, plus what only this storage promises: replication metadata kept on disk
 * only, disk-first writes on those instances too, and the fsync setting restored after the
 * replication's relaxed writes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { fillWithDefaultSettings, getChangedDocumentsSince, getRxReplicationMetaInstanceSchema, normalizeMangoQuery, prepareQuery, randomToken } from 'rxdb';
import type { BulkWriteRow, MangoQuery, RxDocumentData, RxJsonSchema, RxStorage, RxStorageDefaultCheckpoint, RxStorageInstance } from 'rxdb';
import { getRxStorageMemory } from 'rxdb/plugins/storage-memory';
import { RXDB_CONTEXT } from '../../electron/backend/rxdb-internals.ts';
import { getRxStoragePersistedMemory, persistedInstanceOf } from '../../electron/backend/storage/persisted-memory.ts';
import { seededRandom } from '../support/harness.ts';

type Item = { id: string; name: string; n: number; tag: string | null; nested: { v: number } };
type Doc = RxDocumentData<Item>;
type Instance = RxStorageInstance<Item, unknown, object, RxStorageDefaultCheckpoint>;

const itemSchema = fillWithDefaultSettings({
  title: 'items',
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    id: { type: 'string', maxLength: 40 },
    name: { type: 'string', maxLength: 40 },
    n: { type: 'number', minimum: 0, maximum: 1000, multipleOf: 1 },
    tag: { type: ['string', 'null'] },
    nested: { type: 'object', properties: { v: { type: 'number' } } },
  },
  required: ['id', 'name', 'n', 'nested'],
  indexes: ['name', 'n'],
} satisfies RxJsonSchema<Item>) as RxJsonSchema<Doc>;

const dirs: string[] = [];
const instances: Instance[] = [];
afterEach(async () => {
  for (const i of instances.splice(0)) await i.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pm-conf-'));
  dirs.push(d);
  return d;
}

async function open<T>(storage: RxStorage<unknown, object>, schema: RxJsonSchema<RxDocumentData<T>>, token: string, databaseName = 'conf'): Promise<RxStorageInstance<T, unknown, object, RxStorageDefaultCheckpoint>> {
  const inst = (await storage.createStorageInstance<T>({ databaseName, collectionName: 'items', schema, options: {}, multiInstance: false, devMode: false, databaseInstanceToken: token })) as RxStorageInstance<T, unknown, object, RxStorageDefaultCheckpoint>;
  instances.push(inst as unknown as Instance);
  return inst;
}

/** Both storages, each with one instance of the item schema. */
async function pair(): Promise<{ ours: Instance; ref: Instance; dir: string; token: string }> {
  const dir = tempDir();
  const token = randomToken(10);
  const ours = await open<Item>(getRxStoragePersistedMemory({ directory: dir }), itemSchema, token);
  const ref = await open<Item>(getRxStorageMemory(), itemSchema, randomToken(10), `ref-${randomToken(6)}`);
  return { ours, ref, dir, token };
}

let lwt = 1_000;
const doc = (id: string, fields: Partial<Item> & { _deleted?: boolean }, rev = 1): Doc => ({
  id,
  name: fields.name ?? `name ${id}`,
  n: fields.n ?? 0,
  tag: fields.tag ?? null,
  nested: fields.nested ?? { v: 0 },
  _deleted: fields._deleted ?? false,
  _rev: `${rev}-${id}r${rev}`,
  _meta: { lwt: ++lwt },
  _attachments: {},
});

/** The error list without the write row (its object identity differs between the two runs). */
const errorsOf = (r: { error: { status: number; documentId: string; documentInDb?: unknown }[] }) =>
  r.error.map((e) => ({ status: e.status, documentId: e.documentId, documentInDb: e.documentInDb ?? null }));

async function writeBoth(ours: Instance, ref: Instance, rows: BulkWriteRow<Item>[], context = 'conformance'): Promise<void> {
  const a = await ours.bulkWrite(structuredClone(rows), context);
  const b = await ref.bulkWrite(structuredClone(rows), context);
  expect(errorsOf(a)).toEqual(errorsOf(b));
}

/** A random history: inserts, updates (some with a stale previous), deletes, re-inserts of deleted ids. */
async function randomHistory(ours: Instance, ref: Instance, steps: number): Promise<Map<string, Doc>> {
  const rnd = seededRandom(42);
  const state = new Map<string, Doc>();
  for (let s = 0; s < steps; s++) {
    const rows: BulkWriteRow<Item>[] = [];
    for (let k = 0; k < 1 + Math.floor(rnd() * 6); k++) {
      const id = `d${Math.floor(rnd() * 60)}`;
      const cur = state.get(id);
      const fields = { name: `n${Math.floor(rnd() * 12)}`, n: Math.floor(rnd() * 50), tag: rnd() < 0.3 ? null : `t${Math.floor(rnd() * 3)}`, nested: { v: Math.floor(rnd() * 5) } };
      if (!cur) rows.push({ document: doc(id, fields) });
      else {
        const stale = rnd() < 0.15;
        const rev = Number(cur._rev.split('-')[0]) + 1;
        const next = doc(id, { ...fields, _deleted: rnd() < 0.2 }, rev);
        rows.push({ previous: stale ? { ...cur, _rev: `${rev - 1}-stale` } : cur, document: next });
      }
    }
    // Duplicate ids within one bulk are the caller's problem in RxDB; keep one row per id.
    const unique = [...new Map(rows.map((r) => [r.document.id, r])).values()];
    const before = new Map(state);
    await writeBoth(ours, ref, unique);
    const stored = await ref.findDocumentsById(unique.map((r) => r.document.id), true);
    for (const d of stored) state.set(d.id, d);
    expect(state.size).toBeGreaterThanOrEqual(before.size);
  }
  return state;
}

const QUERIES: MangoQuery<Item>[] = [
  { selector: {} },
  { selector: { name: 'n3' } },
  { selector: { n: { $gte: 10, $lt: 30 } }, sort: [{ n: 'desc' }] },
  { selector: { tag: null } },
  { selector: { tag: { $in: ['t1', 't2'] } }, sort: [{ name: 'asc' }, { n: 'asc' }], skip: 2, limit: 5 },
  { selector: { 'nested.v': { $gt: 2 } }, sort: [{ id: 'asc' }], limit: 7 },
  { selector: { $or: [{ name: 'n1' }, { n: { $lte: 3 } }] }, sort: [{ n: 'asc' }] },
  { selector: { name: { $regex: '^n1' } }, limit: 0 },
];

describe('persisted-memory storage conformance with RxDB memory storage', () => {
  it('gives the same write errors, reads, queries and counts after a random history, and after reopen', async () => {
    const { ours, ref, dir, token } = await pair();
    const state = await randomHistory(ours, ref, 120);
    const ids = [...state.keys(), 'missing'];
    const check = async (inst: Instance) => {
      expect(await inst.findDocumentsById(ids, true)).toEqual(await ref.findDocumentsById(ids, true));
      expect(await inst.findDocumentsById(ids, false)).toEqual(await ref.findDocumentsById(ids, false));
      for (const q of QUERIES) {
        const prepared = prepareQuery(itemSchema, normalizeMangoQuery(itemSchema, q));
        const mine = (await inst.query(prepared)).documents.map((d) => d.id);
        const theirs = (await ref.query(prepared)).documents.map((d) => d.id);
        expect(mine, JSON.stringify(q)).toEqual(theirs);
        const countQuery = prepareQuery(itemSchema, normalizeMangoQuery(itemSchema, { selector: q.selector }));
        expect((await inst.count(countQuery)).count).toBe((await ref.count(countQuery)).count);
      }
    };
    await check(ours);
    await ours.close();
    const again = await open<Item>(getRxStoragePersistedMemory({ directory: dir }), itemSchema, token);
    await check(again);
  });

  it('pages through changed documents like RxDB does with its query, checkpoints included', async () => {
    const { ours, ref } = await pair();
    await randomHistory(ours, ref, 60);
    expect(typeof ours.getChangedDocumentsSince).toBe('function');
    for (const limit of [1, 7, 1000]) {
      let a: RxStorageDefaultCheckpoint | undefined;
      let b: RxStorageDefaultCheckpoint | undefined;
      for (let guard = 0; guard < 500; guard++) {
        const mine = await getChangedDocumentsSince(ours, limit, a);
        const theirs = await getChangedDocumentsSince(ref, limit, b);
        expect(mine.documents.map((d) => d.id)).toEqual(theirs.documents.map((d) => d.id));
        expect(mine.checkpoint).toEqual(theirs.checkpoint);
        if (mine.documents.length === 0) break;
        a = mine.checkpoint;
        b = theirs.checkpoint;
      }
    }
    // Later writes show up after the last checkpoint, and an update moves its document to the end.
    const last = await getChangedDocumentsSince(ours, 1000);
    const first = last.documents[0];
    if (!first) throw new Error('history wrote nothing');
    const updated = doc(first.id, { name: 'moved' }, Number(first._rev.split('-')[0]) + 1);
    await writeBoth(ours, ref, [{ previous: first, document: updated }]);
    const after = await getChangedDocumentsSince(ours, 10, last.checkpoint);
    expect(after.documents.map((d) => d.name)).toEqual(['moved']);
    expect((await getChangedDocumentsSince(ours, 1000)).documents.at(-1)?.id).toBe(first.id);
  });

  it('emits one change bulk per write with its context and the newest row as checkpoint, and refused rows emit nothing', async () => {
    const { ours } = await pair();
    const seen: { context: string; ids: string[]; checkpoint: unknown }[] = [];
    const sub = ours.changeStream().subscribe((b) => seen.push({ context: b.context, ids: b.events.map((e) => e.documentId), checkpoint: b.checkpoint }));
    const a = doc('a', {});
    const b = doc('b', {});
    await ours.bulkWrite([{ document: a }, { document: b }], 'ctx-1');
    const refused = await ours.bulkWrite([{ document: doc('a', { name: 'again' }) }], 'ctx-2');
    expect(refused.error.map((e) => e.status)).toEqual([409]);
    sub.unsubscribe();
    expect(seen).toEqual([{ context: 'ctx-1', ids: ['a', 'b'], checkpoint: { id: 'b', lwt: b._meta.lwt } }]);
  });

  it('keeps replication metadata on disk only, with conflict checks, reads, cleanup and disk-first writes', async () => {
    const dir = tempDir();
    const token = randomToken(10);
    const metaSchema = getRxReplicationMetaInstanceSchema(itemSchema, false) as RxJsonSchema<RxDocumentData<Record<string, unknown>>>;
    const storage = getRxStoragePersistedMemory({ directory: dir });
    const meta = await open<Record<string, unknown>>(storage, metaSchema, token);
    const inst = persistedInstanceOf<Record<string, unknown>>(meta);
    expect(inst?.internals.inMemory).toBe(false);
    expect(meta.getChangedDocumentsSince).toBeUndefined();
    expect(() => inst?.currentDocuments()).toThrow(/disk only/);

    const row = (itemId: string, rev: number, deleted = false) => ({
      id: `${itemId}|0`,
      isCheckpoint: '0',
      itemId,
      docData: { id: itemId, name: 'x', n: rev, tag: null, nested: { v: 0 }, _deleted: false },
      checkpointData: undefined,
      isResolvedConflict: undefined,
      _deleted: deleted,
      _rev: `${rev}-m${rev}`,
      _meta: { lwt: ++lwt },
      _attachments: {},
    });
    const first = row('a', 1);
    expect((await meta.bulkWrite([{ document: first }, { document: row('b', 1) }], RXDB_CONTEXT.downstreamMeta)).error).toEqual([]);
    // Read back from disk, not from memory.
    expect(await meta.findDocumentsById(['a|0', 'b|0', 'zz|0'], true)).toEqual([first, row('b', 1)].map((r) => ({ ...r, _meta: expect.anything() as unknown })));
    // Many ids at once (one statement), with missing and repeated ones, in the order asked.
    expect((await meta.findDocumentsById(['b|0', 'x1|0', 'x2|0', 'a|0', 'x3|0', 'b|0'], true)).map((d) => d.id)).toEqual(['b|0', 'a|0', 'b|0']);
    // A stale previous is refused with the stored document, as on any RxDB storage.
    const conflict = await meta.bulkWrite([{ previous: { ...first, _rev: '0-old' }, document: row('a', 2) }], 'replication-up-write-meta');
    expect(conflict.error.map((e) => [e.status, 'documentInDb' in e ? e.documentInDb?._rev : null])).toEqual([[409, '1-m1']]);
    const stored = (await meta.findDocumentsById(['a|0'], true))[0];
    if (!stored) throw new Error('a|0 is gone');
    expect((await meta.bulkWrite([{ previous: stored, document: row('a', 3, true) }], 'replication-up-write-meta')).error).toEqual([]);
    // Queries read the rows from disk (the deleted one included: the selector does not exclude it).
    const all = prepareQuery(metaSchema, normalizeMangoQuery(metaSchema, { selector: {} }));
    expect((await meta.count(all)).count).toBe(2);
    const onlyB = prepareQuery(metaSchema, normalizeMangoQuery(metaSchema, { selector: { itemId: 'b' } }));
    expect((await meta.query(onlyB)).documents.map((d) => d.id)).toEqual(['b|0']);
    expect(await meta.cleanup(0)).toBe(true);
    expect((await meta.findDocumentsById(['a|0'], true)).map((d) => d.id)).toEqual([]);

    // A failed disk write (a real SQLite abort) rejects the write and leaves the rows as they were.
    await meta.close();
    const sqlite = new Database(join(dir, 'conf.sqlite'));
    sqlite.exec(`CREATE TRIGGER fail BEFORE INSERT ON docs WHEN NEW.id = 'poison|0' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END;`);
    sqlite.close();
    const again = await open<Record<string, unknown>>(getRxStoragePersistedMemory({ directory: dir }), metaSchema, token);
    await expect(again.bulkWrite([{ document: row('c', 1) }, { document: row('poison', 1) }], RXDB_CONTEXT.downstreamMeta)).rejects.toThrow(/simulated disk failure/);
    expect((await again.findDocumentsById(['b|0', 'c|0', 'poison|0'], true)).map((d) => d.id)).toEqual(['b|0']);
  });

  it('writes pulled documents without fsync but restores FULL afterwards, even when the write fails', async () => {
    const dir = tempDir();
    const token = randomToken(10);
    const ours = await open<Item>(getRxStoragePersistedMemory({ directory: dir }), itemSchema, token);
    const file = persistedInstanceOf<Item>(ours)?.sqliteFile;
    if (!file) throw new Error('not our storage');
    expect(file.synchronousNow()).toBe(2);
    await ours.bulkWrite([{ document: doc('p1', {}) }], `${RXDB_CONTEXT.downstreamPrefix}abc`);
    expect(file.synchronousNow()).toBe(2);
    await ours.close();
    const sqlite = new Database(join(dir, 'conf.sqlite'));
    // A new file is made with 16 KB pages (fewer pages and WAL frames per ~1 KB document row).
    expect(sqlite.pragma('page_size', { simple: true })).toBe(16384);
    sqlite.exec(`CREATE TRIGGER fail BEFORE INSERT ON docs WHEN NEW.id = 'poison' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END;`);
    sqlite.close();
    const again = await open<Item>(getRxStoragePersistedMemory({ directory: dir }), itemSchema, token);
    const againFile = persistedInstanceOf<Item>(again)?.sqliteFile;
    await expect(again.bulkWrite([{ document: doc('p2', {}) }, { document: doc('poison', {}) }], `${RXDB_CONTEXT.downstreamPrefix}abc`)).rejects.toThrow(/simulated disk failure/);
    expect(againFile?.synchronousNow()).toBe(2);
    // The pulled document of the first write is on disk; the failed batch left nothing, in memory either.
    expect((await again.findDocumentsById(['p1', 'p2', 'poison'], true)).map((d) => d.id)).toEqual(['p1']);
  });
});
