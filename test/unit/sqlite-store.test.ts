/**
 * What the desktop Store on the SQLite storage (electron/backend/sqlite-store.ts) promises beyond
 * answering like the memory store (rxdb-store.test.ts checks that on everyday data):
 * - the same answers when stored values defeat the columns' encoding (a number in a text field,
 *   an object, characters SQLite orders differently from JavaScript, such as emoji and U+FFFD,
 *   in names and in ids), where conditions and orders fall back to JavaScript;
 * - a page reads what it shows, not the collection: first rows, deep pages by cursor, a rare
 *   filter, a rare text; counts of conditions SQL says exactly read no document;
 * - a bulk load into an empty collection builds its random-order indexes at its end, answering the
 *   same meanwhile, and a load cut short by closing is finished after the next open;
 * - the layout of store-layout.ts fits the collection schemas as written.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { BULK_ROWS, LOAD_QUIET_MS } from '../../electron/backend/storage/sqlite/doc-table.ts';
import type { DocTable } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { layoutProblems, leftOutOfLoad } from '../../electron/backend/storage/sqlite/store-columns.ts';
import { STORE_QUERY_TUNING } from '../../electron/backend/storage/sqlite/store-query.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { STORE_LAYOUT } from '../../electron/backend/store-layout.ts';
import { KEY_FIELDS } from '../../shared/intake/identity.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead } from '../../shared/model/factories.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import type { CollectionName, Lead } from '../../shared/model/index.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import type { AnyWrite, Cond, Query, Sort, Store } from '../../shared/store.ts';
import { seededRandom } from '../support/harness.ts';

const WS = 'c0000000-0000-4000-8000-000000000001';
const actor = { workspaceId: WS, memberId: 'c0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };
const GROUP = 'c0000000-0000-4000-8000-0000000000b1';
const OTHER_GROUP = 'c0000000-0000-4000-8000-0000000000b2';

const creates = (leads: readonly Lead[]): AnyWrite[] => leads.map((after) => ({ collection: 'leads', id: after.id, before: null, after }));

let dir: string;
let db: LocalDatabase;
let ref: Store;

function leadsTable(): DocTable {
  const table = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance)?.internalsForTests.table;
  if (!table) throw new Error('not on the SQLite storage');
  return table;
}

/** Every page of a query, by cursor, from both stores. */
async function expectSamePages(q: Query, maxPages = 6): Promise<void> {
  let cursor: string | null = null;
  for (let page = 0; page < maxPages; page++) {
    const query: Query = { ...q, cursor };
    const [a, b] = await Promise.all([db.store.query('leads', query), ref.query('leads', query)]);
    expect(a, JSON.stringify(query)).toEqual(b);
    cursor = b.nextCursor;
    if (!cursor) return;
  }
}

async function open(): Promise<void> {
  db = await openLocalDatabase({ dir, workspaceId: WS, actor });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sqlite-store-'));
  await open();
  ref = new MemoryDatabase().forWorkspace(WS);
});

afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the layout', () => {
  it('fits the collection schemas as written (every column typed, members arrays, indexes over columns)', () => {
    for (const [c, layout] of Object.entries(STORE_LAYOUT)) {
      expect(layoutProblems(COLLECTIONS[c as CollectionName].schema, layout), c).toEqual([]);
    }
  });
});

describe('values the columns cannot order or compare like JavaScript', () => {
  const at = (i: number) => `2026-03-${String(1 + (i % 9)).padStart(2, '0')}T10:00:00.000Z`;
  const lead = (id: string, i: number, fields: Partial<Record<keyof Lead, unknown>>): Lead =>
    ({ ...newLead({ id, workspaceId: WS, now: at(i) }, GROUP, { firstName: `P${i}`, email: `p${i}@x.test`, company: `Co ${i % 4}` }), ...fields }) as Lead;
  const NAMES = ['Émile', 'eric', '😀 Smile', '\ufffd odd', '\ue000 private', 'Zed', 'adam', ''];

  let leads: Lead[] = [];
  beforeAll(async () => {
    leads = NAMES.map((fullName, i) => lead(`c0000000-0000-4000-8000-1000000000${String(i).padStart(2, '0')}`, i, { fullName, rankingScore: i % 3 }));
    // Ids SQLite's text order puts elsewhere than JavaScript's (a surrogate pair against U+FFFD).
    leads.push(lead('id-😀', 20, { fullName: 'Wide id' }), lead('id-\ufffd', 21, { fullName: 'Wide id' }), lead('id-z', 22, { fullName: 'Wide id' }));
    await db.store.commit(creates(leads));
    await ref.commit(creates(leads));
  });

  const queries = (): Query[] => {
    const sorts: Sort[][] = [
      [{ field: 'fullName', dir: 'asc', collate: 'text' }],
      [{ field: 'fullName', dir: 'desc', collate: 'text' }],
      [{ field: 'company', dir: 'asc', collate: 'text' }],
      [{ field: 'rankingScore', dir: 'desc' }],
      [{ field: 'createdAt', dir: 'desc' }],
      [],
    ];
    const wheres: (Cond | undefined)[] = [
      undefined,
      { op: 'lt', field: 'rankingScore', value: 2 },
      { op: 'gte', field: 'company', value: 'Co 2' },
      { op: 'eq', field: 'company', value: 7 as unknown as string },
      { op: 'neq', field: 'company', value: 'Co 1' },
      { op: 'in', field: 'fullName', values: ['Zed', '😀 Smile', 'nobody'] },
      { op: 'gt', field: 'id', value: 'id-a' },
      { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'smi' },
    ];
    return wheres.flatMap((where) => sorts.map((orderBy) => ({ where, orderBy, limit: 3 })));
  };

  it('answers like the memory store while every value is faithful, and after odd values arrive', async () => {
    for (const q of queries()) await expectSamePages(q);
    // Now values a column cannot hold faithfully: a number where text belongs, an object, a boolean.
    const odd = [
      lead('c0000000-0000-4000-8000-2000000000a1', 30, { company: 7, rankingScore: 'high' }),
      lead('c0000000-0000-4000-8000-2000000000a2', 31, { company: { name: 'Nested' }, fullName: true }),
    ];
    await db.store.commit(creates(odd));
    await ref.commit(creates(odd));
    for (const q of queries()) {
      await expectSamePages(q);
      expect(await db.store.count('leads', q.where), JSON.stringify(q.where)).toBe(await ref.count('leads', q.where));
    }
    // Once the odd documents are gone, the columns serve again (and still answer the same).
    await db.store.commit(odd.map((d) => ({ collection: 'leads', id: d.id, before: d, after: null })));
    await ref.commit(odd.map((d) => ({ collection: 'leads', id: d.id, before: d, after: null })));
    for (const q of queries()) await expectSamePages(q);
    // The next tests count the documents a read takes: the odd ids would make every read sort in
    // JavaScript, so they go (a deleted document's values never count).
    await db.store.commit(leads.map((d) => ({ collection: 'leads', id: d.id, before: d, after: null })));
    await ref.commit(leads.map((d) => ({ collection: 'leads', id: d.id, before: d, after: null })));
  });
});

describe('reading what the page shows', () => {
  const N = 3000;
  const rnd = seededRandom(5);
  const TAGS = ['c0000000-0000-4000-8000-0000000000c1', 'c0000000-0000-4000-8000-0000000000c2'];
  let rare: Lead;

  beforeAll(async () => {
    const leads = Array.from({ length: N }, (_, i) =>
      newLead({ id: `c0000000-0000-4000-8000-3${String(i).padStart(11, '0')}`, workspaceId: WS, now: new Date(Date.UTC(2026, 4, 1) + Math.floor(i / 7) * 60_000).toISOString() }, GROUP, {
        firstName: ['Ann', 'Bob', 'Chen'][i % 3],
        lastName: i % 10 === 0 ? 'Smith' : `L${i}`,
        email: `lead${i}@example.test`,
        company: `Company ${i % 50}`,
        rankingScore: Math.floor(rnd() * 100),
        // One lead in a thousand has the first tag; most have none.
        tagId: i % 1000 === 5 ? (TAGS[0] as string) : null,
        groupIds: i % 500 === 1 ? [GROUP, OTHER_GROUP] : [GROUP],
      }),
    );
    rare = leads[2345] as Lead;
    for (let i = 0; i < leads.length; i += 1000) {
      await db.store.commit(creates(leads.slice(i, i + 1000)));
      await ref.commit(creates(leads.slice(i, i + 1000)));
    }
    // The first thousand started a bulk load (below): its indexes are built now, as a quiet
    // moment would. Reopen: nothing in the document cache.
    await leadsTable().finishLoading();
    await db.close();
    await open();
  }, 60_000);

  /** Documents a read took from SQLite (not the cache). */
  async function rowsRead(fn: () => Promise<unknown>): Promise<number> {
    const table = leadsTable();
    const before = table.rowsScanned;
    await fn();
    return table.rowsScanned - before;
  }

  it('first rows newest first, and a deep page by cursor, read about a page', async () => {
    const q: Query = { orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 50 };
    expect(await rowsRead(() => db.store.query('leads', q))).toBeLessThanOrEqual(51);
    let cursor: string | null = null;
    for (let i = 0; i < 20; i++) cursor = (await ref.query('leads', { ...q, cursor })).nextCursor;
    expect(await rowsRead(() => db.store.query('leads', { ...q, cursor }))).toBeLessThanOrEqual(51);
    await expectSamePages({ ...q, cursor }, 2);
    // By name, either way, and by score: also through their indexes.
    for (const orderBy of [[{ field: 'fullName', dir: 'asc', collate: 'text' }], [{ field: 'company', dir: 'desc', collate: 'text' }], [{ field: 'rankingScore', dir: 'desc' }]] as Sort[][]) {
      expect(await rowsRead(() => db.store.query('leads', { orderBy, limit: 50 })), JSON.stringify(orderBy)).toBeLessThanOrEqual(51);
      await expectSamePages({ orderBy, limit: 50 }, 3);
    }
  });

  it('a rare filter, a rare list membership and a rare text read their matches, not the collection', async () => {
    const orderBy: Sort[] = [{ field: 'createdAt', dir: 'desc' }];
    const cases: Cond[] = [
      { op: 'eq', field: 'tagId', value: TAGS[0] as string },
      { op: 'has', field: 'groupIds', value: OTHER_GROUP },
      { op: 'contains', fields: LEAD_QUERY_FIELDS, value: rare.email },
      { op: 'or', conds: [{ op: 'eq', field: 'tagId', value: TAGS[1] as string }, { op: 'in', field: 'tagId', values: [TAGS[0] as string] }] },
    ];
    for (const where of cases) {
      const read = await rowsRead(() => db.store.query('leads', { where, orderBy, limit: 50 }));
      expect(read, JSON.stringify(where)).toBeLessThanOrEqual(10);
      await expectSamePages({ where, orderBy, limit: 50 });
    }
  });

  it('two common filters, one a short list, walk the order within the pinned one instead of sorting every match of the list', async () => {
    // A tag's leads at a stage category (a few stage ids, each on many leads): the list used to be
    // taken as one lead per value, so every lead at those stages was joined and sorted for a page
    // (195 ms at 1M leads). Now short lists are counted like any filter, and the page is read along
    // the tag's own creation order.
    const table = leadsTable();
    const stageIndex = table.layout.indexes.find((i) => i.keys.join() === 'pipelineStageId')?.name;
    const tagOrder = table.layout.indexes.find((i) => i.keys.join() === 'tagId,createdAt')?.name;
    expect(stageIndex && tagOrder).toBeTruthy();
    const where: Cond = { op: 'and', conds: [{ op: 'eq', field: 'tagId', value: null }, { op: 'in', field: 'pipelineStageId', values: [null] }] };
    const orderBy: Sort[] = [{ field: 'createdAt', dir: 'desc' }];
    const spy = vi.spyOn(table, 'statement');
    try {
      await db.store.query('leads', { where, orderBy, limit: 50 });
      const statements = spy.mock.calls.map((c) => c[0]).filter((key) => !key.startsWith('probe '));
      expect(statements.some((sql) => sql.includes(`INDEXED BY "${tagOrder}"`)), statements.join('\n')).toBe(true);
      expect(statements.some((sql) => sql.includes(`INDEXED BY "${stageIndex}"`)), statements.join('\n')).toBe(false);
    } finally {
      spy.mockRestore();
    }
    await expectSamePages({ where, orderBy, limit: 50 }, 2);
  });

  it('a common text walks the order and stops at the page', async () => {
    const where: Cond = { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'smith' };
    const orderBy: Sort[] = [{ field: 'createdAt', dir: 'desc' }];
    expect(await rowsRead(() => db.store.query('leads', { where, orderBy, limit: 50 }))).toBeLessThanOrEqual(51);
    await expectSamePages({ where, orderBy, limit: 50 }, 3);
  });

  it('fills a page of a very common text by walking the order first, without counting its matches in the text index', async () => {
    // Counting a common text's matches up to the cap read ~7,000 entries of the text index at 1M
    // leads for a page the walk fills in ~150 rows. A rarer text is still counted and, when few,
    // read from its matches: what the first walk found is not kept twice.
    const table = leadsTable();
    const orderBy: Sort[] = [{ field: 'createdAt', dir: 'desc' }];
    const textCounts = async (value: string, q: Partial<Query> = {}): Promise<string[]> => {
      const spy = vi.spyOn(table, 'statement');
      try {
        await db.store.query('leads', { where: { op: 'contains', fields: LEAD_QUERY_FIELDS, value }, orderBy, limit: 50, ...q });
        return spy.mock.calls.map((c) => c[0]).filter((key) => key.startsWith('probe ') && key.includes(' MATCH '));
      } finally {
        spy.mockRestore();
      }
    };
    expect(await textCounts('ann')).toEqual([]);
    expect(await textCounts('ann', { orderBy: [{ field: 'rankingScore', dir: 'asc' }] })).toEqual([]);
    // A page the first walk does not fill, whose matches so far say the walk ends it sooner.
    expect(await textCounts('smith')).toEqual([]);
    expect(await textCounts('smith', { limit: 200 })).toHaveLength(1);
    // Found once among the newest rows (the first walk's), then counted: the page is that one lead.
    expect(await textCounts('lead2990')).toHaveLength(1);
    expect(await textCounts('lead12')).toHaveLength(1);
    for (const value of ['ann', 'chen', 'smith', 'lead29', 'lead2990', 'lead12', 'company 4', 'nobody at all']) {
      const where: Cond = { op: 'contains', fields: LEAD_QUERY_FIELDS, value };
      for (const o of [orderBy, [{ field: 'rankingScore', dir: 'desc' }], [{ field: 'fullName', dir: 'asc', collate: 'text' }]] as Sort[][]) {
        await expectSamePages({ where, orderBy: o, limit: 50 }, 3);
        await expectSamePages({ where: { op: 'and', conds: [where, { op: 'eq', field: 'tagId', value: null }] }, orderBy: o, limit: 7 }, 3);
      }
    }
    // Every threshold at its smallest: a first walk of a row or two, then each way on.
    const saved = { ...STORE_QUERY_TUNING };
    try {
      Object.assign(STORE_QUERY_TUNING, { chunk: 2, longGroup: 2, minCap: 2, maxCap: 12 });
      for (const value of ['ann', 'smith', 'lead2990', 'lead12', 'nobody at all']) await expectSamePages({ where: { op: 'contains', fields: LEAD_QUERY_FIELDS, value }, orderBy, limit: 5 }, 3);
      Object.assign(STORE_QUERY_TUNING, saved, { firstWalk: 1000 });
      for (const value of ['smith', 'lead2990', 'lead12', 'nobody at all']) await expectSamePages({ where: { op: 'contains', fields: LEAD_QUERY_FIELDS, value }, orderBy, limit: 50 }, 2);
    } finally {
      Object.assign(STORE_QUERY_TUNING, saved);
    }
  }, 60_000);

  it('counts in SQL, reading no document, when SQL can say the condition exactly', async () => {
    const exact: (Cond | undefined)[] = [
      undefined,
      { op: 'eq', field: 'tagId', value: null },
      { op: 'has', field: 'groupIds', value: OTHER_GROUP },
      { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'smith' },
      { op: 'contains', fields: ['company'], value: 'y 4' },
      { op: 'and', conds: [{ op: 'gte', field: 'rankingScore', value: 50 }, { op: 'not', cond: { op: 'eq', field: 'tagId', value: null } }] },
    ];
    for (const where of exact) {
      expect(await rowsRead(async () => expect(await db.store.count('leads', where)).toBe(await ref.count('leads', where))), JSON.stringify(where)).toBe(0);
    }
    // A field without a column is tested on the documents, and still counted right.
    const loose: Cond = { op: 'eq', field: 'firstName', value: 'Ann' };
    expect(await db.store.count('leads', loose)).toBe(await ref.count('leads', loose));
  });
});

describe('a long tie of the order (the leads of one import share its creation time)', () => {
  // Three imports of 900 leads, newer than the leads above; ids in an order unrelated to the rows'
  // (as the server's random ids are), one lead in three named Tieman.
  const CALL = 900;
  const permuted = (i: number): number => (i * 7919) % (3 * CALL);
  const leads = Array.from({ length: 3 * CALL }, (_, i) =>
    newLead({ id: `c0000000-0000-4000-8000-5${String(permuted(i)).padStart(11, '0')}`, workspaceId: WS, now: new Date(Date.UTC(2027, 0, 1) + Math.floor(i / CALL) * 60_000).toISOString() }, GROUP, {
      firstName: `Tf${i}`,
      lastName: i % 3 === 0 ? 'Tieman' : `Other${i}`,
      email: `tie${i}@example.test`,
      rankingScore: i % 7,
    }),
  );
  const tieman: Cond = { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'tieman' };
  const newest: Sort[] = [{ field: 'createdAt', dir: 'desc' }];
  /** Rows the text test ran on: instr() on the first text field (every row's test starts there). */
  let tested = 0;
  const firstNames = new Set(leads.map((l) => l.firstName.toLowerCase()));

  beforeAll(async () => {
    for (let i = 0; i < leads.length; i += CALL) {
      await db.store.commit(creates(leads.slice(i, i + CALL)));
      await ref.commit(creates(leads.slice(i, i + CALL)));
    }
    await leadsTable().finishLoading();
    // SQLite's instr() with the same answers (the position in characters), counting its calls.
    leadsTable().file.db.function('instr', { deterministic: true }, (hay: unknown, needle: unknown) => {
      if (hay === null || needle === null) return null;
      const h = String(hay);
      if (firstNames.has(h)) tested++;
      const at = h.indexOf(String(needle));
      return at < 0 ? 0 : [...h.slice(0, at)].length + 1;
    });
  }, 60_000);

  it('reads the first page of a common text from the start of the newest tie, testing each row once', async () => {
    // The newest import's leads in the order (id ascending), up to the match after the page's last
    // (the Store reads one more to tell whether another page follows).
    const tie = leads.slice(2 * CALL).sort((a, b) => (a.id < b.id ? -1 : 1));
    let matches = 0;
    const needed = tie.findIndex((l) => l.lastName === 'Tieman' && ++matches === 51) + 1;
    expect(needed).toBeGreaterThan(100);
    const saved = { ...STORE_QUERY_TUNING };
    try {
      // The walk alone, and with its first rows read before the text is counted: those are
      // tested in one go, so a page may end before the last of them.
      for (const [firstWalk, most] of [[0, needed], [saved.firstWalk, Math.max(needed, saved.firstWalk * 51)]] as const) {
        STORE_QUERY_TUNING.firstWalk = firstWalk;
        tested = 0;
        const page = await db.store.query('leads', { where: tieman, orderBy: newest, limit: 50 });
        expect(page).toEqual(await ref.query('leads', { where: tieman, orderBy: newest, limit: 50 }));
        // A chunk read backwards from the tie's end first tested as many rows again, and dropped them.
        expect(tested).toBeGreaterThan(0);
        expect(tested).toBeLessThanOrEqual(most);
      }
    } finally {
      Object.assign(STORE_QUERY_TUNING, saved);
    }
  });

  it('pages across the ties by cursor as the memory store does, with every threshold at its smallest too', async () => {
    const saved = { ...STORE_QUERY_TUNING };
    try {
      for (const tuning of [{}, { chunk: 2, longGroup: 2 }, { chunk: 3, longGroup: 40 }]) {
        Object.assign(STORE_QUERY_TUNING, saved, tuning);
        await expectSamePages({ where: tieman, orderBy: newest, limit: 50 }, 20);
        await expectSamePages({ where: tieman, orderBy: newest, limit: 7 }, 3);
        // Across the last tie into the older leads' small groups.
        await expectSamePages({ orderBy: newest, limit: 400 }, 9);
        await expectSamePages({ where: { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'tf1' }, orderBy: [{ field: 'rankingScore', dir: 'desc' }], limit: 30 }, 12);
      }
    } finally {
      Object.assign(STORE_QUERY_TUNING, saved);
    }
  }, 60_000);
});

describe('commits', () => {
  it('read the stored documents of their writes once per collection, and still refuse a stale one', async () => {
    const instance = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance);
    if (!instance) throw new Error('not on the SQLite storage');
    const leads = Array.from({ length: 40 }, (_, i) =>
      newLead({ id: `c0000000-0000-4000-8000-7${String(i).padStart(11, '0')}`, workspaceId: WS, now: new Date(Date.UTC(2026, 5, 1)).toISOString() }, GROUP, { firstName: `Commit${i}`, email: `commit${i}@example.test` }),
    );
    const reads = vi.spyOn(instance, 'currentDocuments');
    try {
      await db.store.commit(creates(leads));
      // One read for the forty ids (an import's 5,000 new leads were 5,000 reads of ids not there).
      expect(reads).toHaveBeenCalledTimes(1);
      const [first, second] = leads as [Lead, Lead];
      const renamed = { ...first, firstName: 'Renamed' };
      await db.store.commit([
        { collection: 'leads', id: first.id, before: first, after: renamed },
        { collection: 'leads', id: second.id, before: second, after: { ...second, firstName: 'Also' } },
      ]);
      expect(reads).toHaveBeenCalledTimes(2);
      expect((await db.store.get('leads', first.id))?.firstName).toBe('Renamed');
      // A write whose `before` is not the stored document is refused, and nothing of its commit is written.
      await expect(
        db.store.commit([
          { collection: 'leads', id: second.id, before: { ...second, firstName: 'Also' }, after: { ...second, firstName: 'Third' } },
          { collection: 'leads', id: first.id, before: first, after: { ...first, firstName: 'Stale' } },
        ]),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
      expect((await db.store.get('leads', first.id))?.firstName).toBe('Renamed');
      expect((await db.store.get('leads', second.id))?.firstName).toBe('Also');
    } finally {
      reads.mockRestore();
    }
  });
});

describe('bulk loads', () => {
  const WS2 = 'c0000000-0000-4000-8000-000000000002';
  const actor2 = { ...actor, workspaceId: WS2 };
  const lead2 = (i: number): Lead =>
    newLead({ id: `c0000000-0000-4000-8000-4${String(i).padStart(11, '0')}`, workspaceId: WS2, now: new Date(Date.UTC(2026, 5, 1) + i * 1000).toISOString() }, GROUP, {
      firstName: `F${i % 97}`,
      lastName: i % 3 ? 'Smith' : 'Jones',
      email: `b${i}@bulk.test`,
      rankingScore: i % 13,
    });

  /** Indexes of a table in its file (through the owner's connection: no other may read). */
  const indexesInFile = (table: DocTable): string[] =>
    table.file.db.prepare<[string], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? ORDER BY name").pluck().all(table.table);

  it('builds the random-order indexes after a load into an empty collection, answering the same meanwhile, also across a reopen', async () => {
    // RxDB's open edition holds 13 collections per process: one local database at a time.
    await db.close();
    const dir2 = mkdtempSync(join(tmpdir(), 'sqlite-store-bulk-'));
    let db2 = await openLocalDatabase({ dir: dir2, workspaceId: WS2, actor: actor2 });
    const ref2 = new MemoryDatabase().forWorkspace(WS2);
    try {
      const table = (): DocTable => {
        const t = sqliteInstanceOf<Lead>(db2.rx.collections.leads?.storageInstance)?.internalsForTests.table;
        if (!t) throw new Error('not on the SQLite storage');
        return t;
      };
      const all = indexesInFile(table());
      // A local load (this import-like commit) leaves out the indexes of every load and those of
      // local loads, the ones it looks people up by included (probed from memory meanwhile); not
      // those only a load of pulled documents leaves out.
      const deferred = table().layout.indexes.filter((i) => leftOutOfLoad(i.afterLoad, false)).map((i) => i.name);
      const kept = table().layout.indexes.filter((i) => !leftOutOfLoad(i.afterLoad, false)).map((i) => i.name);
      expect(table().layout.indexes.filter((i) => i.afterLoad === 'probed').length).toBe(3);
      expect(kept.length).toBeGreaterThan(0);
      expect(deferred.length).toBeGreaterThan(0);
      expect(all).toEqual(expect.arrayContaining(deferred));

      const leads = Array.from({ length: BULK_ROWS * 2 }, (_, i) => lead2(i));
      await db2.store.commit(creates(leads.slice(0, BULK_ROWS)));
      await ref2.commit(creates(leads.slice(0, BULK_ROWS)));
      expect(table().isLoading).toBe(true);
      const during = indexesInFile(table());
      for (const name of deferred) expect(during).not.toContain(name);
      for (const name of kept) expect(during).toContain(name);
      // The indexes that are cheap to keep (in arrival order) stay.
      expect(during).toContain(`${table().table}_id`);
      const queries: Query[] = [
        { orderBy: [{ field: 'fullName', dir: 'asc', collate: 'text' }], limit: 40 },
        { where: { op: 'in', field: 'email', values: ['b7@bulk.test', 'b700@bulk.test'] } },
        // The look-up of a person by key, on an index the load left out.
        { where: { op: 'in', field: KEY_FIELDS.email, values: ['b7@bulk.test', 'b700@bulk.test'] } },
        { where: { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'jones' }, orderBy: [{ field: 'rankingScore', dir: 'desc' }], limit: 25 },
      ];
      const same = async (): Promise<void> => {
        for (const q of queries) expect(await db2.store.query('leads', q), JSON.stringify(q)).toEqual(await ref2.query('leads', q));
      };
      await same();
      // A second bulk write goes on loading; closing cuts the load short.
      await db2.store.commit(creates(leads.slice(BULK_ROWS)));
      await ref2.commit(creates(leads.slice(BULK_ROWS)));
      await db2.close();
      db2 = await openLocalDatabase({ dir: dir2, workspaceId: WS2, actor: actor2 });
      expect(table().isLoading).toBe(true);
      await same();
      // Once nothing more arrives for a while, the indexes are built, one per turn of the event loop.
      await new Promise((r) => setTimeout(r, LOAD_QUIET_MS + 500));
      await expect.poll(() => table().isLoading, { timeout: 10_000 }).toBe(false);
      expect(indexesInFile(table())).toEqual(all);
      await same();
      // A bulk write into a table holding more than it brings keeps its indexes.
      const more = Array.from({ length: BULK_ROWS }, (_, i) => lead2(BULK_ROWS * 2 + i));
      await db2.store.commit(creates(more));
      expect(table().isLoading).toBe(false);
    } finally {
      await db2.close();
      rmSync(dir2, { recursive: true, force: true });
    }
  }, 60_000);

  it('leaves out the look-up indexes too when the load is of pulled documents (an initial sync)', async () => {
    const dir3 = mkdtempSync(join(tmpdir(), 'sqlite-store-pull-'));
    const db3 = await openLocalDatabase({ dir: dir3, workspaceId: WS2, actor: actor2 });
    try {
      const instance = db3.rx.collections.leads?.storageInstance;
      const table = sqliteInstanceOf<Lead>(instance)?.internalsForTests.table;
      if (!instance || !table) throw new Error('not on the SQLite storage');
      const rows = Array.from({ length: BULK_ROWS }, (_, i) => ({ document: { ...lead2(i), _deleted: false, _attachments: {}, _rev: `1-p${i}`, _meta: { lwt: Date.now() } } }));
      const res = await instance.bulkWrite(rows as never, 'replication-downstream-test');
      expect(res.error).toEqual([]);
      const present = indexesInFile(table);
      for (const i of table.layout.indexes.filter((x) => leftOutOfLoad(x.afterLoad, true))) expect(present, i.keys.join()).not.toContain(i.name);
      await table.finishLoading();
      for (const i of table.layout.indexes) expect(indexesInFile(table)).toContain(i.name);
      expect((await db3.store.query('leads', { where: { op: 'in', field: 'email', values: ['b5@bulk.test'] } })).docs.map((l) => l.id)).toEqual([lead2(5).id]);
      expect((await db3.store.query('leads', { where: { op: 'eq', field: KEY_FIELDS.email, value: 'b5@bulk.test' } })).docs.map((l) => l.id)).toEqual([lead2(5).id]);
    } finally {
      await db3.close();
      rmSync(dir3, { recursive: true, force: true });
    }
  });
});
