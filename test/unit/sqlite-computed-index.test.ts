/**
 * RxDB's default index columns (`[_deleted, id]`, `[_meta.lwt, id]`) are computed by SQLite from the
 * row's own columns instead of stored in every row (index-columns.ts indexSql). The expression gives
 * RxDB's index string for plain ids and timestamps; for any other document the override column holds
 * the string. Either way the column must equal keyOf(doc) for every row, and queries on those indexes
 * must answer as RxDB's memory storage does, with and without the index built.
 */
import { fillWithDefaultSettings, normalizeMangoQuery, prepareQuery } from 'rxdb';
import type { MangoQuery, RxDocumentData, RxJsonSchema, RxStorage } from 'rxdb';
import { getRxStorageMemory } from 'rxdb/plugins/storage-memory';
import { describe, expect, it } from 'vitest';
import { overrideColumn } from '../../electron/backend/storage/sqlite/index-columns.ts';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';
import { seededRandom } from '../support/deterministic.ts';

type Row = { id: string; v: string };
type Doc = RxDocumentData<Row>;

const schema = fillWithDefaultSettings<Row>({ version: 0, type: 'object', primaryKey: 'id', properties: { id: { type: 'string', maxLength: 12 }, v: { type: 'string' } }, required: ['id', 'v'] }) as RxJsonSchema<Doc>;

/** Ids and write times whose index strings the SQL expression may not give: characters sortableKey
 * maps, trailing spaces and control characters, ids longer than maxLength, times off the grid or
 * out of RxDB's range. */
const IDS = ['plain-1', 'plain-2', 'a', 'a ', 'a\t', '🚀x', '\uffffz', '\ue000', 'é', 'exactly12chr', 'longer-than-12-chars', ''];
const LWTS = [1764400000000.01, 1764400000000.125, 1764400000000.995, 1764400000000.999, 0.5, 1, 1.5, 2e15, 1234.5678, 1764400000001];

function docs(): Doc[] {
  return IDS.map((id, i) => ({ id, v: `v${i}`, _deleted: i % 4 === 3, _rev: '1-a', _meta: { lwt: LWTS[i % LWTS.length] as number }, _attachments: {} }));
}

const queries: MangoQuery<Doc>[] = [
  { selector: {}, sort: [{ id: 'asc' }] },
  { selector: { _deleted: { $eq: false } }, sort: [{ id: 'desc' }], limit: 5 },
  { selector: { id: { $gt: 'a' } }, sort: [{ id: 'asc' }] },
  { selector: { '_meta.lwt': { $gt: 1 } }, sort: [{ '_meta.lwt': 'asc' }, { id: 'asc' }] },
  { selector: { '_meta.lwt': { $lt: 1764400000000.5 } }, sort: [{ '_meta.lwt': 'desc' }, { id: 'asc' }], limit: 3 },
];

describe('computed RxDB index columns', () => {
  it('hold RxDB index string of every row (the override where the expression does not give it), and queries answer as the memory storage does', async () => {
    const dir = tempDir('sqlite-computed-');
    const sqlite = await openInstance<Row>(getRxStorageSqlite({ directory: dir }) as RxStorage<unknown, object>, schema, { databaseName: 'computed', collectionName: 'rows' });
    const memory = await openInstance<Row>(getRxStorageMemory() as RxStorage<unknown, object>, schema, { databaseName: 'computedref', collectionName: 'rows' });
    const inst = sqliteInstanceOf<Row>(sqlite);
    if (!inst) throw new Error('not the SQLite storage');
    const { file, table } = inst.internalsForTests;
    const ask = async () => {
      for (const q of queries) {
        const p = prepareQuery(schema, normalizeMangoQuery(schema, q));
        expect((await sqlite.query(p)).documents, JSON.stringify(q)).toEqual((await memory.query(p)).documents);
        if (!p.queryPlan.selectorSatisfiedByIndex) continue;
        const cq = prepareQuery(schema, normalizeMangoQuery(schema, { selector: q.selector }));
        expect((await sqlite.count(cq)).count, `count ${JSON.stringify(q)}`).toBe((await memory.count(cq)).count);
      }
    };
    const check = (): number => {
      let overridden = 0;
      for (const c of table.columns) {
        expect(c.sql).not.toBeNull();
        for (const d of docs()) {
          const row = file.db.prepare<[string], { k: string; o: string | null }>(`SELECT "${c.column}" AS k, "${overrideColumn(c.column)}" AS o FROM "${table.table}" WHERE id = ?`).get(d.id);
          expect(row?.k, `${c.fields.join(',')} of ${JSON.stringify(d.id)}`).toBe(c.keyOf(d as RxDocumentData<unknown>));
          if (row?.o !== null) overridden++;
        }
      }
      return overridden;
    };

    const written = docs();
    expect((await sqlite.bulkWrite(written.map((document) => ({ document })), 'test')).error).toEqual([]);
    expect((await memory.bulkWrite(written.map((document) => ({ document })), 'test')).error).toEqual([]);
    const overridden = check();
    // Plain ids and times need no override; the odd ones do.
    expect(overridden).toBeGreaterThan(0);
    expect(overridden).toBeLessThan(IDS.length * table.columns.length);
    // Before the indexes are built (the first queries ask for them), then with them.
    expect(table.columns.every((c) => !table.indexBuiltOrAsked(c))).toBe(true);
    await ask();
    expect(table.columns.every((c) => table.indexBuiltOrAsked(c))).toBe(true);
    await expect.poll(() => file.db.prepare<[string], number>("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? AND instr(name, '_k_') > 0").pluck().get(table.table)).toBe(table.columns.length);
    await ask();

    // Updates move rows between plain and odd: the override follows.
    const next = written.map((d, i) => ({ previous: d, document: { ...d, id: d.id, _deleted: !d._deleted, _rev: '2-b', _meta: { lwt: LWTS[(i + 3) % LWTS.length] as number } } }));
    expect((await sqlite.bulkWrite(structuredClone(next), 'test')).error).toEqual([]);
    expect((await memory.bulkWrite(structuredClone(next), 'test')).error).toEqual([]);
    const rows = new Map(next.map((n) => [n.document.id, n.document]));
    for (const c of table.columns) {
      for (const [id, d] of rows) {
        const k = file.db.prepare<[string], string>(`SELECT "${c.column}" FROM "${table.table}" WHERE id = ?`).pluck().get(id);
        expect(k).toBe(c.keyOf(d as RxDocumentData<unknown>));
      }
    }
    await ask();
  });

  it('need no read-back of a written row: the override is decided in JavaScript, and exactly (random and edge ids and write times)', async () => {
    const dir = tempDir('sqlite-computed-');
    const sqlite = await openInstance<Row>(getRxStorageSqlite({ directory: dir }) as RxStorage<unknown, object>, schema, { databaseName: 'computed', collectionName: 'rows' });
    const inst = sqliteInstanceOf<Row>(sqlite);
    if (!inst) throw new Error('not the SQLite storage');
    const { file, table } = inst.internalsForTests;
    const r = seededRandom(27);
    const chars = ['a', 'Z', '0', '-', ' ', '\t', '\u0000', 'é', '\ud83d\ude80', '\ue000', '\uffff', '\ud800'];
    const idOf = (i: number): string => {
      if (r() < 0.6) return `id-${i}`;
      let s = '';
      for (let n = Math.floor(r() * 16); n > 0; n--) s += chars[Math.floor(r() * chars.length)] as string;
      return `${s}#${i}`;
    };
    // Around RxDB's grid of 0.01 (its Math.round and SQLite's + 0.5 disagree at halves off by an
    // ulp), whole and out-of-range times, and times as RxDB's now() makes them.
    const lwtOf = (): number => {
      const base = Math.floor(r() * 2e12);
      const hundredths = Math.floor(r() * 100);
      switch (Math.floor(r() * 7)) {
        case 0:
          return base + hundredths / 100;
        case 1:
          return base + (hundredths + 0.5) / 100;
        case 2:
          return (base * 100 + hundredths + 0.5) / 100 + (r() < 0.5 ? -1 : 1) * Number.EPSILON * base;
        case 3:
          return base;
        case 4:
          return -r() * 1000;
        case 5:
          return 2e15 + r() * 1e6;
        default:
          // Below RxDB's minimum of 1 (both clamp it), and off the grid by less than an ulp.
          return r() < 0.5 ? 0.004999999999999999 : 1 + (Math.floor(r() * 100) + 0.5) / 100 - 2 ** -52;
      }
    };
    const written: Doc[] = Array.from({ length: 3000 }, (_, i) => ({ id: idOf(i), v: 'v', _deleted: r() < 0.2, _rev: '1-a', _meta: { lwt: lwtOf() }, _attachments: {} }));
    const unique = [...new Map(written.map((d) => [d.id, d])).values()];
    // Reads of the table's rows (better-sqlite3's Statement.get, as a read-back would be).
    const stmt = Object.getPrototypeOf(file.db.prepare('SELECT 1')) as { get: (...a: unknown[]) => unknown };
    const realGet = stmt.get;
    let gets = 0;
    stmt.get = function (this: { source: string }, ...a: unknown[]) {
      if (this.source.includes(`"${table.table}"`)) gets++;
      return realGet.apply(this, a);
    };
    try {
      expect((await sqlite.bulkWrite(unique.map((document) => ({ document })), 'test')).error).toEqual([]);
    } finally {
      stmt.get = realGet;
    }
    // One write of new rows: no statement read a row back.
    expect(gets).toBe(0);
    let overridden = 0;
    for (const c of table.columns) {
      const read = file.db.prepare<[string], { k: string; o: string | null }>(`SELECT "${c.column}" AS k, "${overrideColumn(c.column)}" AS o FROM "${table.table}" WHERE id = ?`);
      for (const d of unique) {
        const row = read.get(d.id);
        expect(row?.k, `${c.fields.join(',')} of ${JSON.stringify(d.id)} at ${d._meta.lwt}`).toBe(c.keyOf(d as RxDocumentData<unknown>));
        if (row?.o !== null) overridden++;
      }
    }
    expect(overridden).toBeGreaterThan(0);
    expect(overridden).toBeLessThan(unique.length * table.columns.length);
  });
});
