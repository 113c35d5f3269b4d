/**
 * The RxStorage contract, as RxDB's own storage suite defines it (test/unit/rx-storage-
 * implementations.test.ts in the rxdb repository; the closest copy the search index holds is the
 * one of rxdb 16.8.1, commit c0f0d0600101c996747f38c277c5b8ce3e8ac5ee, against our pinned 17.6.0's
 * interface), written again here for the SQLite storage (electron/backend/storage/sqlite/).
 * Scenarios of that suite that test RxDB's helpers rather than a storage (prepareQuery,
 * getSortComparator, getQueryMatcher) and those for features this storage does not offer
 * (attachments: refused with a clear error instead; multi-instance across processes: refused by
 * the single-owner lock, tested in sqlite-storage.test.ts) are left out.
 */
import { describe, expect, it } from 'vitest';
import {
  createRevision,
  fillWithDefaultSettings,
  getChangedDocumentsSince,
  getPseudoSchemaForVersion,
  getSortComparator,
  getWrittenDocumentsFromBulkWriteResponse,
  now,
  parseRevision,
  prepareQuery,
  randomToken,
  stackCheckpoints,
  stripMetaDataFromDocument,
} from 'rxdb';
import type { BulkWriteRow, EventBulk, FilledMangoQuery, RxDocumentData, RxJsonSchema, RxStorageChangeEvent } from 'rxdb';
import { compressDocumentData, getCompressionStateByRxJsonSchema } from 'rxdb/plugins/key-compression';
import { filter, map } from 'rxjs';
import { getRxStorageSqlite } from '../../electron/backend/storage/sqlite/storage.ts';
import { kv, openInstance, tempDir } from './sqlite-storage.fixtures.ts';
import type { KeyValue } from './sqlite-storage.fixtures.ts';

const ctx = 'sqlite-storage-contract';

const storage = () => getRxStorageSqlite({ directory: tempDir('sqlite-contract-') });
const pseudo = (version = 0) => getPseudoSchemaForVersion<KeyValue>(version, 'key');

/** `{key, value}` with an index on value (both strings RxDB can index). */
const valueIndexed = (): RxJsonSchema<RxDocumentData<KeyValue>> =>
  fillWithDefaultSettings<KeyValue>({
    version: 0,
    type: 'object',
    primaryKey: 'key',
    properties: { key: { type: 'string', maxLength: 100 }, value: { type: 'string', maxLength: 100 } },
    required: ['key', 'value'],
    indexes: ['value'],
  });

type Nested = { id: string; nes: { ted: string } };
const nestedSchema = () =>
  fillWithDefaultSettings<Nested>({
    version: 0,
    type: 'object',
    primaryKey: 'id',
    properties: { id: { type: 'string', maxLength: 100 }, nes: { type: 'object', properties: { ted: { type: 'string', maxLength: 100 } }, required: ['ted'] } },
    required: ['id', 'nes'],
    indexes: [['nes.ted', 'id']],
  });

type Ranked = { id: string; same: string; n: number; text: string };
const rankedSchema = () =>
  fillWithDefaultSettings<Ranked>({
    version: 0,
    type: 'object',
    primaryKey: 'id',
    properties: {
      id: { type: 'string', maxLength: 100 },
      same: { type: 'string', maxLength: 20, enum: ['same'] },
      n: { type: 'number', minimum: 0, maximum: 1000, multipleOf: 1 },
      text: { type: 'string', maxLength: 100 },
    },
    required: ['id', 'same', 'n', 'text'],
    indexes: [['same', 'id'], ['n', 'id'], ['text', 'id'], ['same', 'n', 'id']],
  });

const revOf = (token: string, previous?: RxDocumentData<unknown>) => createRevision(token, previous);
const bump = <T>(doc: RxDocumentData<T>, change: Partial<RxDocumentData<T>>, token = 'tok'): RxDocumentData<T> => ({
  ...doc,
  ...change,
  _rev: revOf(token, doc),
  _meta: { lwt: now() },
});

const query = <T>(schema: RxJsonSchema<RxDocumentData<T>>, q: Omit<FilledMangoQuery<T>, 'skip'> & { skip?: number }) => prepareQuery<T>(schema, { skip: 0, ...q } as FilledMangoQuery<T>);

describe('SQLite storage: the RxStorage contract', () => {
  describe('creating instances', () => {
    it('opens an instance that keeps its names, and removes it', async () => {
      const s = storage();
      const inst = await openInstance<KeyValue>(s, pseudo(), { databaseName: 'mydb', collectionName: 'things' });
      expect([inst.databaseName, inst.collectionName]).toEqual(['mydb', 'things']);
      await inst.remove();
    });

    it('opens twenty instances of one database name at once, each with its own token', async () => {
      const s = storage();
      const all = await Promise.all(Array.from({ length: 20 }, () => openInstance<KeyValue>(s, pseudo(), { databaseName: 'shared' })));
      await Promise.all(all.map((i) => i.bulkWrite([{ document: kv('k') }], ctx)));
      await Promise.all(all.map((i) => i.remove()));
    });

    it('refuses schemas that need a wrapper it is not (key compression, encryption) and attachments', async () => {
      const s = storage();
      await expect(openInstance(s, { ...pseudo(), keyCompression: true })).rejects.toThrow(/UT5/);
      await expect(openInstance(s, { ...pseudo(), encrypted: ['value'] })).rejects.toThrow(/UT6/);
      await expect(openInstance(s, { ...pseudo(), attachments: {} })).rejects.toThrow(/does not store attachments/);
    });
  });

  describe('bulkWrite', () => {
    it('writes a document and answers with no error', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const rows = [{ document: kv('foobar', { value: 'barfoo1' }) }];
      const res = await inst.bulkWrite(structuredClone(rows), ctx);
      expect(res.error).toEqual([]);
      const written = getWrittenDocumentsFromBulkWriteResponse('key', rows, res);
      expect(written.map(stripMetaDataFromDocument)).toEqual(rows.map((r) => stripMetaDataFromDocument(r.document)));
    });

    it('answers an insert of an existing id with a 409 holding the stored document, and nothing more', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const doc = kv('foobar', { value: 'stored' });
      await inst.bulkWrite([{ document: doc }], ctx);
      const res = await inst.bulkWrite([{ document: { ...doc, value: 'other' } }], ctx);
      const err = res.error[0];
      expect(err?.status).toBe(409);
      expect(err?.documentId).toBe('foobar');
      expect(err?.writeRow.document.value).toBe('other');
      const inDb = err && 'documentInDb' in err ? err.documentInDb : undefined;
      expect(inDb?.value).toBe('stored');
      // No storage bookkeeping leaks into the document (seq, index strings...).
      expect(Object.keys(inDb ?? {}).sort()).toEqual(Object.keys(doc).sort());
    });

    it('of two inserts of one id started together, the first wins and the second gets a 409', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const [first, second] = await Promise.all([
        inst.bulkWrite([{ document: kv('same', { value: 'first' }) }], ctx),
        inst.bulkWrite([{ document: kv('same', { value: 'second' }) }], ctx),
      ]);
      expect(first.error).toEqual([]);
      expect(second.error.map((e) => [e.status, e.writeRow.document.value])).toEqual([[409, 'second']]);
      expect((await inst.findDocumentsById(['same'], false))[0]?.value).toBe('first');
    });

    it('does not find a deleted document unless asked for deleted ones', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const v1 = kv('foobar');
      await inst.bulkWrite([{ document: v1 }], ctx);
      const v2 = bump(v1, { value: 'barfoo2' });
      expect((await inst.bulkWrite([{ previous: v1, document: v2 }], ctx)).error).toEqual([]);
      const v3 = bump(v2, { value: 'gone', _deleted: true });
      expect((await inst.bulkWrite([{ previous: v2, document: v3 }], ctx)).error).toEqual([]);
      expect(await inst.findDocumentsById(['foobar'], false)).toEqual([]);
      expect((await inst.findDocumentsById(['foobar'], true)).map((d) => [d.value, d._deleted])).toEqual([['gone', true]]);
    });

    it('undeletes a document only when the write names the deleted state as previous', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const v1 = kv('undeleteMe');
      await inst.bulkWrite([{ document: v1 }], ctx);
      const v2 = bump(v1, { _deleted: true });
      await inst.bulkWrite([{ previous: v1, document: v2 }], ctx);
      const back = bump(v2, { _deleted: false, value: 'aaa' });
      const blind = await inst.bulkWrite([{ document: back }], ctx);
      expect(blind.error.map((e) => e.status)).toEqual([409]);
      expect((await inst.bulkWrite([{ previous: v2, document: back }], ctx)).error).toEqual([]);
      expect((await inst.findDocumentsById(['undeleteMe'], false)).map((d) => d.value)).toEqual(['aaa']);
    });

    it('updates a deleted document that stays deleted (a server edit of a tombstone)', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const v1 = kv('t');
      await inst.bulkWrite([{ document: v1 }], ctx);
      const v2 = bump(v1, { _deleted: true });
      await inst.bulkWrite([{ previous: v1, document: v2 }], ctx);
      const v3 = bump(v2, { value: 'edited while deleted' });
      expect((await inst.bulkWrite([{ previous: v2, document: v3 }], ctx)).error).toEqual([]);
      expect((await inst.findDocumentsById(['t'], true)).map((d) => [d.value, d._deleted])).toEqual([['edited while deleted', true]]);
    });

    it('unsets a field when the new state leaves it out', async () => {
      const schema = fillWithDefaultSettings<KeyValue>({ version: 0, type: 'object', primaryKey: 'key', properties: { key: { type: 'string', maxLength: 100 }, value: { type: 'string', maxLength: 100 } }, required: ['key'], indexes: ['value'] });
      const inst = await openInstance<KeyValue>(storage(), schema);
      const v1 = kv('foobar', { value: 'x' });
      await inst.bulkWrite([{ document: v1 }], ctx);
      const v2 = bump(kv('foobar', { value: null }), {});
      expect((await inst.bulkWrite([{ previous: v1, document: v2 }], ctx)).error).toEqual([]);
      const stored = (await inst.findDocumentsById(['foobar'], false))[0];
      expect(stored && 'value' in stored).toBe(false);
      // The index on value no longer holds 'x': a query the index alone answers does not find it.
      const q = query(schema, { selector: { _deleted: { $eq: false }, value: { $gt: 'w' } }, sort: [{ value: 'asc' }, { key: 'asc' }] });
      expect(q.queryPlan.selectorSatisfiedByIndex).toBe(true);
      expect((await inst.query(q)).documents).toEqual([]);
    });

    it('stores a key-compressed document (field names replaced) as it is', async () => {
      type Person = { id: string; name: string; age: number; address: { street: string; city: string }; tags: string[] };
      const schema = fillWithDefaultSettings<Person>({
        version: 0,
        type: 'object',
        primaryKey: 'id',
        keyCompression: true,
        properties: {
          id: { type: 'string', maxLength: 40 },
          name: { type: 'string', maxLength: 100 },
          age: { type: 'integer', minimum: 0, maximum: 150, multipleOf: 1 },
          address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } },
          tags: { type: 'array', items: { type: 'string' } },
        },
        required: ['id', 'name', 'age'],
        indexes: ['name', ['age', 'name']],
      });
      const compression = getCompressionStateByRxJsonSchema(schema);
      // The key-compression wrapper hands the storage the compressed schema, without the flag.
      const compressedSchema = { ...compression.compressedSchema, keyCompression: false } as RxJsonSchema<RxDocumentData<Record<string, unknown>>>;
      const inst = await openInstance<Record<string, unknown>>(storage(), compressedSchema);
      const plain: RxDocumentData<Person> = { id: 'p1', name: 'Ada', age: 36, address: { street: 'Main', city: 'Oslo' }, tags: ['x', 'y'], _deleted: false, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} };
      const compressed = compressDocumentData(compression, plain) as RxDocumentData<Record<string, unknown>>;
      expect(Object.keys(compressed)).not.toContain('name');
      expect((await inst.bulkWrite([{ document: compressed }], ctx)).error).toEqual([]);
      expect((await inst.findDocumentsById(['p1'], false)).map(stripMetaDataFromDocument)).toEqual([stripMetaDataFromDocument(compressed)]);
    });

    it('accepts writes that change only _meta, and keeps the revision height', async () => {
      const token = randomToken(10);
      const inst = await openInstance<KeyValue>(storage(), pseudo(), { token });
      let doc: RxDocumentData<KeyValue> = { ...kv('m'), _meta: { lwt: now(), foobar: 0 }, _rev: revOf(token) };
      await inst.bulkWrite([{ document: structuredClone(doc) }], ctx);
      for (const n of [1, 2]) {
        const next = { ...doc, _meta: { ...doc._meta, foobar: n, lwt: now() }, _rev: revOf(token, doc) };
        expect((await inst.bulkWrite([{ previous: doc, document: structuredClone(next) }], ctx)).error).toEqual([]);
        doc = next;
      }
      const stored = (await inst.findDocumentsById(['m'], true))[0];
      expect(stored ? parseRevision(stored._rev).height : 0).toBe(3);
      expect(stored?._meta.foobar).toBe(2);
    });

    it('opens another instance of the same database after a write and writes there', async () => {
      const s = storage();
      const a = await openInstance<KeyValue>(s, pseudo(), { databaseName: 'same-db' });
      await a.bulkWrite([{ document: kv('foobar') }], ctx);
      const b = await openInstance<KeyValue>(s, pseudo(), { databaseName: 'same-db' });
      expect((await b.bulkWrite([{ document: { ...kv('foobar'), _rev: '2-b' } }], ctx)).error).toEqual([]);
      await Promise.all([a.close(), b.close()]);
    });

    it('takes an update that jumps several revision heights at once', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const v1 = kv('j');
      await inst.bulkWrite([{ document: v1 }], ctx);
      const v4 = { ...v1, value: 'later', _rev: '4-abcd', _meta: { lwt: now() } };
      expect((await inst.bulkWrite([{ previous: v1, document: v4 }], ctx)).error).toEqual([]);
      expect((await inst.findDocumentsById(['j'], false))[0]?._rev).toBe('4-abcd');
    });

    it('writes into several collections of one database and token concurrently', async () => {
      const s = storage();
      const token = randomToken(10);
      const instances = await Promise.all(
        [0, 1, 2].map(async () => {
          const inst = await openInstance<KeyValue>(s, pseudo(), { databaseName: 'multi', token });
          await Promise.all([0, 1, 2].map((n) => inst.bulkWrite([{ document: kv(String(n), { value: randomToken(5) }) }], ctx)));
          return inst;
        }),
      );
      for (const inst of instances) expect((await inst.findDocumentsById(['0', '1', '2'], false)).length).toBe(3);
      await Promise.all(instances.map((i) => i.remove()));
    });

    it('writes and reads text beyond ASCII (umlauts, emoji, CJK, private use) in ids and values', async () => {
      const inst = await openInstance<KeyValue>(storage(), valueIndexed());
      // JavaScript puts an emoji (a surrogate pair) before U+E000 and U+FF26; UTF-8 after them.
      const texts = ['äöüßé', 'naïve 🚀 launch', '🚀 first', '東京', '\ue000private', 'Ｆｕｌｌ', 'plain'];
      await inst.bulkWrite(texts.map((t, i) => ({ document: kv(`key ${t}`, { value: `${t}${i}` }) })), ctx);
      const found = await inst.findDocumentsById(texts.map((t) => `key ${t}`), false);
      expect(found.map((d) => d.value)).toEqual(texts.map((t, i) => `${t}${i}`));
      // In index order, as JavaScript compares the strings.
      const q = query(valueIndexed(), { selector: { _deleted: { $eq: false }, value: { $gt: '' } }, sort: [{ value: 'asc' }, { key: 'asc' }] });
      expect(q.queryPlan.sortSatisfiedByIndex && q.queryPlan.selectorSatisfiedByIndex).toBe(true);
      expect((await inst.query(q)).documents.map((d) => d.value)).toEqual(texts.map((t, i) => `${t}${i}`).sort());
      expect((await inst.count(q)).count).toBe(texts.length);
    });

    it('refuses an insert over a deleted document that does not name it as previous', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const v1 = kv('d');
      await inst.bulkWrite([{ document: v1 }], ctx);
      await inst.bulkWrite([{ previous: v1, document: bump(v1, { _deleted: true }) }], ctx);
      const again = await inst.bulkWrite([{ document: kv('d') }], ctx);
      expect(again.error.map((e) => e.status)).toEqual([409]);
    });
  });

  describe('query', () => {
    it('finds the documents of a selector in sort order', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      await inst.bulkWrite([{ document: kv('foobar', { value: 'barfoo' }) }], ctx);
      await inst.bulkWrite([{ document: kv('foobar2', { value: 'barfoo2' }) }], ctx);
      const res = await inst.query(query(pseudo(), { selector: { _deleted: { $eq: false } }, sort: [{ key: 'asc' }] }));
      expect(res.documents.map((d) => d.value)).toEqual(['barfoo', 'barfoo2']);
    });

    it('sorts descending on an indexed field', async () => {
      const inst = await openInstance<KeyValue>(storage(), valueIndexed());
      await inst.bulkWrite(['a', 'b', 'c'].map((v) => ({ document: kv(randomToken(10), { value: v }) })), ctx);
      const res = await inst.query(query(valueIndexed(), { selector: {}, sort: [{ value: 'desc' }] }));
      expect(res.documents.map((d) => d.value)).toEqual(['c', 'b', 'a']);
    });

    it('returns deleted documents too: filtering them out is RxDB’s job, not the storage’s', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const v1 = kv('foobar', { value: 'barfoo' });
      await inst.bulkWrite([{ document: v1 }], ctx);
      await inst.bulkWrite([{ previous: v1, document: bump(v1, { _deleted: true }) }], ctx);
      const res = await inst.query(query(pseudo(), { selector: {}, sort: [{ key: 'asc' }] }));
      expect(res.documents.map((d) => [d.key, d._deleted])).toEqual([['foobar', true]]);
    });

    it('returns documents in exactly the order of RxDB’s sort comparator, for every index and direction', async () => {
      const schema = rankedSchema();
      const inst = await openInstance<Ranked>(storage(), schema);
      const docs: RxDocumentData<Ranked>[] = Array.from({ length: 6 }, (_, i) => ({ id: randomToken(10), same: 'same', n: i + 1, text: randomToken(10), _deleted: false, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} }));
      await inst.bulkWrite(docs.map((d) => ({ document: d })), ctx);
      const sorts: FilledMangoQuery<Ranked>['sort'][] = [[{ id: 'asc' }], [{ same: 'asc' }, { id: 'asc' }], [{ n: 'desc' }, { id: 'asc' }], [{ same: 'asc' }, { n: 'desc' }, { id: 'asc' }], [{ text: 'desc' }, { id: 'desc' }]];
      for (const sort of sorts) {
        const q: FilledMangoQuery<Ranked> = { selector: {}, sort, skip: 0 };
        const viaQuery = (await inst.query(prepareQuery(schema, q))).documents.map((d) => d.id);
        const viaSort = [...docs].sort(getSortComparator(schema, q)).map((d) => d.id);
        expect(viaQuery, JSON.stringify(sort)).toEqual(viaSort);
      }
    });

    it('queries a nested field through its index', async () => {
      const schema = nestedSchema();
      const inst = await openInstance<Nested>(storage(), schema);
      await inst.bulkWrite([{ document: { id: 'foobar', nes: { ted: 'barfoo' }, _deleted: false, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} } }], ctx);
      await inst.bulkWrite([{ document: { id: 'other', nes: { ted: 'xxx' }, _deleted: false, _rev: '1-a', _meta: { lwt: now() }, _attachments: {} } }], ctx);
      const res = await inst.query(query(schema, { selector: { 'nes.ted': { $eq: 'barfoo' } }, sort: [{ 'nes.ted': 'asc' }, { id: 'asc' }] }));
      expect(res.documents.map((d) => d.id)).toEqual(['foobar']);
    });

    it('returns every one of many documents (more than one read chunk)', async () => {
      const schema = valueIndexed();
      const inst = await openInstance<KeyValue>(storage(), schema);
      await inst.bulkWrite(Array.from({ length: 700 }, (_, i) => ({ document: kv(`${String(i).padStart(5, '0')}-${randomToken(10)}`, { value: String(i) }) })), ctx);
      const all = await inst.query(query(schema, { selector: {}, sort: [{ key: 'asc' }] }));
      expect(all.documents.length).toBe(700);
      expect(all.documents.map((d) => Number(d.value))).toEqual(Array.from({ length: 700 }, (_, i) => i));
    });
  });

  describe('count', () => {
    it('counts what the query would return, deleted documents included', async () => {
      const schema = valueIndexed();
      const inst = await openInstance<KeyValue>(storage(), schema);
      const all = query(schema, { selector: {}, sort: [{ key: 'asc' }] });
      const counted = async () => (await inst.count(all)).count;
      expect(await counted()).toBe(0);
      await inst.bulkWrite([{ document: kv('a') }], ctx);
      expect(await counted()).toBe(1);
      const b = kv('b');
      await inst.bulkWrite([{ document: b }], ctx);
      expect(await counted()).toBe(2);
      await inst.bulkWrite([{ previous: b, document: bump(b, { _deleted: true }) }], ctx);
      expect(await counted()).toBe(2);
      expect((await inst.count(all)).mode).toBe('fast');
    });
  });

  describe('findDocumentsById', () => {
    it('finds documents, deleted ones with their fields when asked, and many at once', async () => {
      const inst = await openInstance<KeyValue>(storage(), valueIndexed());
      const del = kv('del', { value: 'barfoo' });
      await inst.bulkWrite([{ document: del }, { document: kv('non-del') }], ctx);
      await inst.bulkWrite([{ previous: del, document: bump(del, { value: 'barfoo2', _deleted: true }) }], ctx);
      const found = await inst.findDocumentsById(['del', 'non-del'], true);
      expect(found.map((d) => [d.key, d.value, d._deleted])).toEqual([['del', 'barfoo2', true], ['non-del', 'value of non-del', false]]);
      expect((await inst.findDocumentsById(['del', 'non-del'], false)).map((d) => d.key)).toEqual(['non-del']);

      const many = Array.from({ length: 3000 }, () => kv(randomToken(12)));
      expect((await inst.bulkWrite(many.map((d) => ({ document: d })), 'insert-many')).error).toEqual([]);
      expect((await inst.findDocumentsById(many.map((d) => d.key), false)).length).toBe(3000);
    });
  });

  describe('getChangedDocumentsSince', () => {
    it('pages from a checkpoint, answers an empty page with the same checkpoint, and shows only a document’s latest state', async () => {
      const inst = await openInstance<{ key: string }>(storage(), getPseudoSchemaForVersion<{ key: string }>(0, 'key'));
      let checkpoint: Parameters<typeof getChangedDocumentsSince>[2];
      const changes = async () => {
        const res = await getChangedDocumentsSince(inst, 10, checkpoint);
        if (res.documents.length > 0) checkpoint = res.checkpoint;
        return res.documents;
      };
      expect(await changes()).toEqual([]);
      const v1 = kv('foobar', { value: null });
      await inst.bulkWrite([{ document: v1 }], ctx);
      expect((await changes()).map((d) => d.key)).toEqual(['foobar']);
      const empty = await getChangedDocumentsSince(inst, 10, checkpoint);
      expect(empty.documents).toEqual([]);
      expect(empty.checkpoint).toEqual(checkpoint);
      await inst.bulkWrite([{ previous: v1, document: bump(v1, { _deleted: true }) }], ctx);
      expect((await changes()).map((d) => [d.key, d._deleted])).toEqual([['foobar', true]]);
      const total = await getChangedDocumentsSince(inst, 100);
      expect(total.documents.map((d) => [d.key, d._deleted])).toEqual([['foobar', true]]);
    });

    it('returns each changed document once, in pages that add up, and a later delete after the last checkpoint', async () => {
      const token = randomToken(10);
      const inst = await openInstance<KeyValue>(storage(), valueIndexed(), { token });
      let previous = kv('foobar', { value: '0' });
      await inst.bulkWrite([{ document: previous }, { document: kv(randomToken(10)) }], ctx);
      for (let t = 1; t <= 10; t++) {
        const next = { ...previous, value: String(t), _rev: revOf(token, previous), _meta: { lwt: now() } };
        expect((await inst.bulkWrite([{ previous, document: next }], ctx)).error).toEqual([]);
        previous = next;
      }
      const both = await getChangedDocumentsSince(inst, 10);
      expect(both.documents.length).toBe(2);
      expect(both.documents.find((d) => d.key === 'foobar')?.value).toBe('10');
      await inst.bulkWrite(Array.from({ length: 10 }, () => ({ document: kv(randomToken(10)) })), ctx);
      expect((await getChangedDocumentsSince(inst, 100)).documents.length).toBe(12);
      const p1 = await getChangedDocumentsSince(inst, 5);
      const p2 = await getChangedDocumentsSince(inst, 5, p1.checkpoint);
      const p3 = await getChangedDocumentsSince(inst, 5, p2.checkpoint);
      expect(p1.documents.length + p2.documents.length + p3.documents.length).toBe(12);
      expect(new Set([...p1.documents, ...p2.documents, ...p3.documents].map((d) => d.key)).size).toBe(12);
      expect((await getChangedDocumentsSince(inst, 5, p3.checkpoint)).documents).toEqual([]);
      await inst.bulkWrite([{ previous, document: { ...previous, _deleted: true, _rev: revOf(token, previous), _meta: { lwt: now() } } }], ctx);
      const after = await getChangedDocumentsSince(inst, 5, p3.checkpoint);
      expect(after.documents.map((d) => [d.key, d._deleted])).toEqual([['foobar', true]]);
    });

    it('iterates checkpoints while documents keep being written', async () => {
      const inst = await openInstance<KeyValue>(storage(), valueIndexed());
      const total = 90;
      const batch = () => Array.from({ length: total / 5 }, () => ({ document: kv(randomToken(10)) }));
      await inst.bulkWrite(batch(), ctx);
      let written = total / 5;
      let checkpoint: Parameters<typeof getChangedDocumentsSince>[2];
      const seen = new Set<string>();
      let runs = 0;
      while (seen.size < total) {
        runs++;
        const res = await getChangedDocumentsSince(inst, total / 10, checkpoint);
        for (const d of res.documents) seen.add(d.key);
        checkpoint = res.checkpoint;
        if (written < total) {
          await inst.bulkWrite(batch(), ctx);
          written += total / 5;
        }
        if (runs > 50) throw new Error('the changes feed does not advance');
      }
      expect(runs).toBe(10);
      expect(seen.size).toBe(total);
    });
  });

  describe('changeStream', () => {
    it('emits one bulk per write before the write resolves, whose stacked checkpoints leave nothing newer', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const emitted: EventBulk<RxStorageChangeEvent<KeyValue>, unknown>[] = [];
      const sub = inst
        .changeStream()
        .pipe(
          map((x) => x),
          filter(() => true),
        )
        .subscribe((x) => emitted.push(x));
      const context = randomToken(10);
      await inst.bulkWrite([{ document: kv('foobar', { value: 'one' }) }], context);
      expect(emitted.length).toBe(1);
      expect(emitted[0]?.events.length).toBe(1);
      expect(emitted[0]?.events[0]?.documentData._meta.lwt).toBeGreaterThan(0);
      expect(emitted[0]?.checkpoint).toBeTruthy();
      await inst.bulkWrite(Array.from({ length: 10 }, () => ({ document: kv(randomToken(10)) })), context);
      expect(emitted.at(-1)?.context).toBe(context);
      const stacked = stackCheckpoints(emitted.map((e) => e.checkpoint));
      expect((await getChangedDocumentsSince(inst, 100, stacked as never)).documents).toEqual([]);
      sub.unsubscribe();
    });

    it('emits insert, update and delete, the delete with the previous state', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const events: RxStorageChangeEvent<KeyValue>[] = [];
      const sub = inst.changeStream().subscribe((b) => events.push(...b.events));
      const v1 = kv('foobar', { value: 'one' });
      await inst.bulkWrite([{ document: v1 }], ctx);
      const v2 = { ...v1, _rev: '2-b', _meta: { lwt: now() } };
      const before = structuredClone(v2);
      await inst.bulkWrite([{ previous: v1, document: v2 }], ctx);
      // The storage neither changes its input nor adds to it.
      expect(v2).toEqual(before);
      await inst.bulkWrite([{ previous: v2, document: { ...v1, _rev: '3-c', _deleted: true, _meta: { lwt: now() } } }], ctx);
      expect(events.map((e) => e.operation)).toEqual(['INSERT', 'UPDATE', 'DELETE']);
      const last = events[2];
      expect(last?.previousDocumentData ? parseRevision(last.previousDocumentData._rev).height : 0).toBe(2);
      sub.unsubscribe();
    });

    it('emits nothing for a write whose every row was refused', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      const bulks: unknown[] = [];
      const sub = inst.changeStream().subscribe((b) => bulks.push(b));
      const doc = kv('foobar');
      expect((await inst.bulkWrite([{ document: doc }], ctx)).error).toEqual([]);
      expect((await inst.bulkWrite([{ document: doc }], ctx)).error.length).toBe(1);
      expect(bulks.length).toBe(1);
      sub.unsubscribe();
    });
  });

  describe('attachments', () => {
    it('says clearly that it stores none', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      await expect(inst.getAttachmentData('foobar', 'file', 'digest')).rejects.toThrow(/does not store attachments/);
    });
  });

  describe('cleanup', () => {
    it('purges old enough tombstones only, and keeps live documents', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      await inst.bulkWrite([{ document: kv('nonDeleted') }], ctx);
      const v1 = kv('foobar');
      await inst.bulkWrite([{ document: v1 }], ctx);
      expect((await inst.bulkWrite([{ previous: v1, document: bump(v1, { _deleted: true }) }], ctx)).error).toEqual([]);
      while (!(await inst.cleanup(1000 * 60 * 6)));
      expect((await inst.findDocumentsById(['foobar'], true)).map((d) => d._deleted)).toEqual([true]);
      while (!(await inst.cleanup(0)));
      expect(await inst.findDocumentsById(['foobar'], true)).toEqual([]);
      expect((await inst.findDocumentsById(['nonDeleted'], true)).length).toBe(1);
      // Nor is it in the changes feed any more.
      expect((await getChangedDocumentsSince(inst, 10)).documents.map((d) => d.key)).toEqual(['nonDeleted']);
    });

    it('ends by answering true', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      while (!(await inst.cleanup(0)));
      const v1 = kv('foobar');
      await inst.bulkWrite([{ document: v1 }], ctx);
      await inst.bulkWrite([{ previous: v1, document: bump(v1, { _deleted: true }) }], ctx);
      expect(await inst.cleanup(0)).toBe(true);
    });
  });

  describe('close and remove', () => {
    it('closes twice at once without an error', async () => {
      const inst = await openInstance<KeyValue>(storage(), pseudo());
      await Promise.all([inst.close(), inst.close()]);
    });

    it('remove deletes every document: a new instance of the name starts empty', async () => {
      const s = storage();
      const names = { databaseName: 'rm-db', collectionName: 'rm' };
      const inst = await openInstance<KeyValue>(s, pseudo(), names);
      await inst.bulkWrite([{ document: kv('foobar') }], ctx);
      await inst.remove();
      const again = await openInstance<KeyValue>(s, pseudo(), names);
      expect(await again.findDocumentsById(['foobar'], true)).toEqual([]);
      expect((await again.count(query(pseudo(), { selector: {}, sort: [{ key: 'asc' }] }))).count).toBe(0);
    });

    it('refuses remove after close, and allows close after remove', async () => {
      const s = storage();
      const closed = await openInstance<KeyValue>(s, pseudo());
      await closed.close();
      await expect(closed.remove()).rejects.toThrow(/closed/);
      const removed = await openInstance<KeyValue>(s, pseudo());
      await removed.remove();
      await removed.close();
    });
  });

  describe('instances that must not see each other', () => {
    it('keeps schema versions of one collection apart', async () => {
      const s = storage();
      const names = { databaseName: 'versions', collectionName: 'items' };
      const v0 = await openInstance<KeyValue>(s, pseudo(0), names);
      const v1 = await openInstance<KeyValue>(s, pseudo(1), names);
      await v0.bulkWrite([{ document: kv('k0', { value: 'zero' }) }], ctx);
      await v1.bulkWrite([{ document: kv('k1', { value: 'one' }) }], ctx);
      const all = (v: number) => query(pseudo(v), { selector: {}, sort: [{ key: 'asc' }] });
      expect((await v0.query(all(0))).documents.map((d) => d.value)).toEqual(['zero']);
      expect((await v1.query(all(1))).documents.map((d) => d.value)).toEqual(['one']);
    });

    it('keeps database names apart', async () => {
      const s = storage();
      const a = await openInstance<KeyValue>(s, pseudo(), { collectionName: 'aaaaa' });
      await a.bulkWrite([{ document: kv('foobar0') }], ctx);
      await a.close();
      const b = await openInstance<KeyValue>(s, pseudo(), { collectionName: 'aaaaa' });
      expect((await b.query(query(pseudo(), { selector: {}, sort: [{ key: 'asc' }] }))).documents).toEqual([]);
    });
  });

  it('rejects a whole write, changing nothing, when a row is not a document it can store', async () => {
    const inst = await openInstance<KeyValue>(storage(), pseudo());
    const good = kv('good');
    const bad = { ...kv('bad'), _meta: undefined } as unknown as RxDocumentData<KeyValue>;
    await expect(inst.bulkWrite([{ document: good }, { document: bad }] as BulkWriteRow<KeyValue>[], ctx)).rejects.toThrow();
    expect(await inst.findDocumentsById(['good', 'bad'], true)).toEqual([]);
  });
});
