/**
 * The first rows a bulk load keeps of each order whose index it left out
 * (electron/backend/storage/sqlite/load-heads.ts): SQLite's order of stored values in JavaScript,
 * the head's invariant under any sequence of writes (against a brute-force order), and the Store
 * re-sorting a loading collection by name: the same pages as the memory store (also past the
 * head, after edits, deletions and renames into and out of it) while reading one bounded page
 * instead of sorting the whole table on the event loop.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import type { DocTable } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { compareCodePoints, compareStored, HEAD_BATCH, HEAD_ROWS, OrderHead } from '../../electron/backend/storage/sqlite/load-heads.ts';
import type { HeadRow } from '../../electron/backend/storage/sqlite/load-heads.ts';
import type { SqlValue, StoreIndex } from '../../electron/backend/storage/sqlite/store-columns.ts';
import { STORE_QUERY_TUNING } from '../../electron/backend/storage/sqlite/store-query.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import type { AnyWrite, Query, Sort, Store } from '../../shared/store.ts';
import { seededRandom } from '../support/harness.ts';

const CHARS = ['a', 'B', 'é', 'z', '\u00ff', '\u0800', '\ud7ff', '\ue000', '\uffdd', '\ud83d\ude00', '\ud800\udc00', '1', ' '];

describe('SQLite order in JavaScript', () => {
  it('compares stored values as SQLite does (numbers, then text by UTF-8 bytes, then blobs)', () => {
    const rnd = seededRandom(11);
    const text = (): string => Array.from({ length: Math.floor(rnd() * 4) }, () => CHARS[Math.floor(rnd() * CHARS.length)]).join('');
    const value = (): SqlValue => {
      const r = rnd();
      return r < 0.2 ? Math.floor(rnd() * 5) - 2 : r < 0.25 ? -Infinity : r < 0.3 ? rnd() : r < 0.9 ? text() : Buffer.from([Math.floor(rnd() * 3)]);
    };
    const values = Array.from({ length: 300 }, value);
    const sqlite = new Database(':memory:');
    try {
      sqlite.exec('CREATE TABLE v (i INTEGER, x)');
      const put = sqlite.prepare('INSERT INTO v VALUES (?, ?)');
      values.forEach((v, i) => put.run(i, v));
      const bySqlite = sqlite.prepare('SELECT i FROM v ORDER BY x, i').pluck().all() as number[];
      const byUs = values.map((_, i) => i).sort((a, b) => compareStored(values[a] as SqlValue, values[b] as SqlValue) || a - b);
      expect(byUs).toEqual(bySqlite);
    } finally {
      sqlite.close();
    }
    for (let i = 0; i < 2000; i++) {
      const a = text();
      const b = text();
      expect(Math.sign(compareCodePoints(a, b)), JSON.stringify([a, b])).toBe(Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
    }
  });
});

describe('a head of an order', () => {
  const index: StoreIndex = { name: 'i', keys: ['n'], columns: ['s_n'], ordered: true, afterLoad: 'any', narrows: true };

  // One change at a time, and a write's changes at once (applyAll: a pulled page's up to 2,000, the
  // list merged in one pass from HEAD_BATCH on), checked against every live row sorted.
  // 'planned': a write's changes worked out before its commit (plan) and taken at it (applyPlan),
  // sometimes with a change applied in between (the plan is then stale and not taken).
  it.each(['one at a time', 'by write', 'planned'] as const)('holds exactly the live rows before its bound, in order, through inserts, updates and deletions (%s)', (mode) => {
    const rnd = seededRandom(3);
    for (const dir of ['asc', 'desc'] as const) {
      const live = new Map<string, number>();
      // Ids the table holds, tombstones included (a write of any other id is an insert).
      const stored = new Set<string>();
      const head = new OrderHead(index, dir, [0], []);
      const sorted = (): HeadRow[] =>
        [...live].map(([id, n]) => ({ r: 0, id, k: [n] })).sort((a, b) => head.compare(a, b));
      // A write's changes, applied when it commits (by write: at the checks, when an id comes
      // again, as a write holds an id once, and at random between them; many past HEAD_BATCH).
      let write: { id: string; row: HeadRow | null }[] = [];
      const inWrite = new Set<string>();
      let batches = 0;
      let stale = 0;
      const commit = (): void => {
        if (write.length >= HEAD_BATCH) batches++;
        const plan = mode === 'planned' ? head.plan(write) : null;
        if (plan && rnd() < 0.2) {
          // A write of one row lands between the plan and its commit (in the app nothing can:
          // other writes wait for the file), the head is right either way.
          const id = `id${Math.floor(rnd() * 3000)}`;
          if (!inWrite.has(id) && head.touches(id, [0], 0, true, stored.has(id))) {
            head.apply(id, { r: 0, id, k: [0] });
            stored.add(id);
            live.set(id, 0);
            stale++;
          }
        }
        if (plan) head.applyPlan(plan, write);
        else head.applyAll(write);
        write = [];
        inWrite.clear();
      };
      for (let step = 0; step < 20_000; step++) {
        const id = `id${Math.floor(rnd() * 3000)}`;
        const deleted = rnd() < 0.15;
        // Few distinct values: many ties, broken by id.
        const n = Math.floor(rnd() * 400);
        if (inWrite.has(id)) commit();
        if (mode !== 'one at a time') inWrite.add(id);
        if (head.touches(id, [n], 0, !deleted, stored.has(id))) {
          const change = { id, row: deleted ? null : { r: 0, id, k: [n] } };
          if (mode === 'one at a time') head.apply(change.id, change.row);
          else write.push(change);
        }
        stored.add(id);
        if (deleted) live.delete(id);
        else live.set(id, n);
        if (mode !== 'one at a time' && (step % 500 === 0 || rnd() < 0.004)) commit();
        if (step % 500 !== 0) continue;
        const all = sorted();
        const got = head.after(null);
        if (!got) throw new Error('a head answers from its start');
        // A prefix of the order, the whole order when it has no bound.
        expect(got.rows.map((r) => r.id)).toEqual(all.slice(0, got.rows.length).map((r) => r.id));
        if (got.all) expect(got.rows.length).toBe(all.length);
        else expect(got.rows.length).toBeLessThanOrEqual(HEAD_ROWS);
        // The first live row it does not hold is not before its bound (it says it does not know
        // what follows), so none is missing.
        const next = all[got.rows.length];
        if (next) expect(head.after(next)).toBeNull();
        // After a place inside the head: the rest of that prefix.
        const at = all[Math.floor(got.rows.length / 2)];
        if (at) {
          const rest = head.after(at);
          expect(rest?.rows.map((r) => r.id)).toEqual(all.slice(all.indexOf(at) + 1, got.rows.length).map((r) => r.id));
        }
      }
      expect(live.size).toBeGreaterThan(HEAD_ROWS);
      expect(head.after(null)?.all).toBe(false);
      if (mode !== 'one at a time') expect(batches).toBeGreaterThan(20);
      if (mode === 'planned') expect(stale).toBeGreaterThan(0);
    }
  });
});

/** Runs `q` on the SQLite store and the memory store (the same page) and says how the SQLite store
 * read it: statements in the file's reader thread (a page SQLite sorts the whole table for), and
 * whether a load's head of the order was found. */
async function routedQuery(store: Store, ref: Store, table: DocTable, q: Query): Promise<{ worker: number; fromHead: boolean }> {
  const file = table.file;
  const read = file.readInWorker.bind(file);
  const heads = table.heads;
  const find = heads.find.bind(heads);
  let worker = 0;
  let fromHead = false;
  file.readInWorker = (reads) => {
    worker++;
    return read(reads);
  };
  heads.find = (...args) => {
    const head = find(...args);
    if (head) fromHead = true;
    return head;
  };
  try {
    const [a, b] = await Promise.all([store.query('leads', q), ref.query('leads', q)]);
    expect(a, JSON.stringify(q)).toEqual(b);
  } finally {
    file.readInWorker = read;
    heads.find = find;
  }
  return { worker, fromHead };
}

describe('re-sorting a collection while a bulk load has left its index out', () => {
  const WS = 'c0000000-0000-4000-8000-000000000007';
  const actor = { workspaceId: WS, memberId: 'c0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };
  const GROUP = 'c0000000-0000-4000-8000-0000000000b1';
  const TAG = 'c0000000-0000-4000-8000-0000000000c1';
  const N = 20_000;
  const FIRST = ['ann', 'Émile', 'eric', 'Ève', 'Zed', 'adam', 'Bob', 'chen', 'Ülla', 'Øre'];
  const rnd = seededRandom(21);
  const lead = (i: number): Lead =>
    newLead({ id: `c0000000-0000-4000-8000-5${String(i).padStart(11, '0')}`, workspaceId: WS, now: new Date(Date.UTC(2026, 6, 1) + i * 1000).toISOString() }, GROUP, {
      firstName: FIRST[Math.floor(rnd() * FIRST.length)],
      // Many equal names: ties broken by id.
      lastName: `L${Math.floor(rnd() * 3000)}`,
      email: `h${i}@heads.test`,
      company: `Co ${Math.floor(rnd() * 500)}`,
      rankingScore: Math.floor(rnd() * 1000) / 10,
      tagId: rnd() < 0.1 ? TAG : null,
    });
  const creates = (leads: readonly Lead[]): AnyWrite[] => leads.map((after) => ({ collection: 'leads', id: after.id, before: null, after }));
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-store-heads-'));
  let db: LocalDatabase | null = null;
  // The load stays open while the checks run, however slow the machine (the index is built by
  // finishLoading at the end); its quiet window is the storage's own otherwise.
  const quietMs = LOAD_TUNING.quietMs;
  beforeAll(() => {
    LOAD_TUNING.quietMs = 10 * 60_000;
  });

  afterAll(async () => {
    LOAD_TUNING.quietMs = quietMs;
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives the memory store’s pages, reading a bounded page from the head instead of the whole table', async () => {
    db = await openLocalDatabase({ dir, workspaceId: WS, actor });
    const local = db;
    const ref: Store = new MemoryDatabase().forWorkspace(WS);
    const table = (): DocTable => {
      const t = sqliteInstanceOf<Lead>(local.rx.collections.leads?.storageInstance)?.internalsForTests.table;
      if (!t) throw new Error('not on the SQLite storage');
      return t;
    };
    const byName = table().layout.indexes.find((i) => i.keys.join() === 'fold:fullName');
    if (!byName) throw new Error('the leads layout has no name index');
    const leads = Array.from({ length: N }, (_, i) => lead(i));
    // An import-like load in commits of 5,000; the name index is left out until the load is quiet.
    for (let i = 0; i < N; i += 5000) {
      await local.store.commit(creates(leads.slice(i, i + 5000)));
      await ref.commit(creates(leads.slice(i, i + 5000)));
    }
    expect(table().isLoading).toBe(true);

    const orders: Sort[][] = [
      [{ field: 'fullName', dir: 'asc', collate: 'text' }],
      [{ field: 'fullName', dir: 'desc', collate: 'text' }],
      [{ field: 'company', dir: 'asc', collate: 'text' }],
      [{ field: 'rankingScore', dir: 'desc' }],
    ];
    const queries: Query[] = orders.flatMap((orderBy) => [
      { orderBy, limit: 50 },
      // One lead in ten: a page needs ~500 head rows.
      { orderBy, limit: 50, where: { op: 'eq', field: 'tagId', value: TAG } },
    ]);
    /** Pages 1 to `pages` of every query from both stores; while `loading`, the index is still
     * missing after them (else they would not have read the heads: the load went quiet and its
     * builds ran). */
    const samePages = async (pages: number, loading = true): Promise<void> => {
      for (const q of queries) {
        let cursor: string | null = null;
        for (let page = 0; page < pages; page++) {
          const query: Query = { ...q, cursor };
          const [a, b] = await Promise.all([local.store.query('leads', query), ref.query('leads', query)]);
          expect(a, JSON.stringify(query)).toEqual(b);
          cursor = b.nextCursor;
        }
      }
      expect(table().indexReady(byName.name), 'the load went quiet and built its indexes during the check').toBe(!loading);
    };
    await samePages(3);

    // A bulk write keeps the load going; edits move rows into the heads, out of them, and delete some.
    const first = (await ref.query('leads', { orderBy: orders[0], limit: 30 })).docs as Lead[];
    const more = Array.from({ length: 1000 }, (_, i) => lead(N + i));
    const edits: AnyWrite[] = [
      ...creates(more),
      ...first.slice(0, 10).map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: l, after: { ...l, firstName: 'Zzz', fullName: `Zzz ${l.lastName}` } })),
      ...first.slice(10, 20).map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: l, after: null })),
      ...leads.slice(500, 520).filter((l) => !first.some((f) => f.id === l.id)).map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: l, after: { ...l, firstName: 'Aaron', fullName: `Aaron ${l.lastName}`, tagId: TAG } })),
    ];
    await local.store.commit(edits);
    await ref.commit(edits);
    // Past the head's thousand rows too (25 pages of 50): those pages are read as before.
    await samePages(1);
    for (const q of [queries[0], queries[1]] as Query[]) {
      let cursor: string | null = null;
      for (let page = 0; page < 25; page++) {
        const query: Query = { ...q, cursor };
        const [a, b] = await Promise.all([local.store.query('leads', query), ref.query('leads', query)]);
        expect(a, JSON.stringify(query)).toEqual(b);
        cursor = b.nextCursor;
      }
    }
    const last = Array.from({ length: 1000 }, (_, i) => lead(N + 1000 + i));
    await local.store.commit(creates(last));
    await ref.commit(creates(last));

    // The first page by name is read from the head (no statement in the reader thread); a page past
    // the head, which SQLite must read and sort the whole table for, goes to the reader thread.
    // (What each costs is the desktop bench's "re-sort" line, not an assertion here.)
    const deep = (await ref.query('leads', { orderBy: orders[0], limit: HEAD_ROWS + 100 })).nextCursor;
    const routed = (q: Query) => routedQuery(local.store, ref, table(), q);
    expect(await routed({ orderBy: orders[0], limit: 50 })).toEqual({ worker: 0, fromHead: true });
    expect((await routed({ orderBy: orders[0], limit: 50, cursor: deep })).worker).toBe(1);
    expect(table().indexReady(byName.name)).toBe(false);

    // A page past the head is read in the reader thread, beside the event loop: the same page, with
    // a write committed while it was read merged in (the page as the table holds it then).
    const deepQ: Query = { orderBy: orders[0], limit: 50, cursor: deep };
    /** A bulk write of 1000 new leads keeps the load going (its builds start once bulk writes have
     * been quiet a while). */
    let added = N + 2000;
    const keepLoading = async (): Promise<void> => {
      const batch = Array.from({ length: 1000 }, () => lead(added++));
      await local.store.commit(creates(batch));
      await ref.commit(creates(batch));
    };
    await keepLoading();
    const shown = (await ref.query('leads', deepQ)).docs as Lead[];
    const [moved, gone, renamed] = [shown[3], shown[10], leads[700]] as Lead[];
    const during: AnyWrite[] = [
      { collection: 'leads', id: moved.id, before: moved, after: { ...moved, firstName: 'Zzzz', fullName: `Zzzz ${moved.lastName}` } },
      { collection: 'leads', id: gone.id, before: gone, after: null },
      { collection: 'leads', id: renamed.id, before: renamed, after: { ...renamed, firstName: (shown[20] as Lead).firstName, lastName: (shown[20] as Lead).lastName, fullName: (shown[20] as Lead).fullName } },
    ];
    // The write lands between the worker's snapshot and the merge, every time: the worker's answer
    // is held back until it has committed.
    const file = table().file;
    const read = file.readInWorker.bind(file);
    file.readInWorker = async (reads) => {
      const rows = await read(reads);
      await local.store.commit(during);
      return rows;
    };
    let got;
    try {
      got = await local.store.query('leads', deepQ);
    } finally {
      file.readInWorker = read;
    }
    await ref.commit(during);
    expect(got).toEqual(await ref.query('leads', deepQ));
    expect(table().indexReady(byName.name)).toBe(false);
    // Once built, the index serves the same pages.
    await table().finishLoading();
    expect(table().indexReady(byName.name)).toBe(true);
    await samePages(2, false);
  }, 180_000);
});

describe('the heads of a load kept over a close', () => {
  const WS = 'c0000000-0000-4000-8000-000000000008';
  const actor = { workspaceId: WS, memberId: 'c0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };
  const GROUP = 'c0000000-0000-4000-8000-0000000000b2';
  const N = 6000;
  const CALL = 3000;
  const rnd = seededRandom(31);
  // An import: each call of CALL leads has one createdAt (ties broken by id), names at random.
  const lead = (i: number): Lead =>
    newLead({ id: `c0000000-0000-4000-8000-6${String(i).padStart(11, '0')}`, workspaceId: WS, now: new Date(Date.UTC(2026, 6, 1) + Math.floor(i / CALL) * 60_000).toISOString() }, GROUP, {
      firstName: ['ann', 'Émile', 'eric', 'Zed', 'Bob'][Math.floor(rnd() * 5)],
      lastName: `K${Math.floor(rnd() * 2000)}`,
      email: `k${i}@kept.test`,
    });
  const creates = (leads: readonly Lead[]): AnyWrite[] => leads.map((after) => ({ collection: 'leads', id: after.id, before: null, after }));
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-store-kept-heads-'));
  let db: LocalDatabase | null = null;
  const quietMs = LOAD_TUNING.quietMs;
  const offLoopRows = STORE_QUERY_TUNING.offLoopRows;
  beforeAll(() => {
    // The load stays open through the checks (no build starts), and a page SQLite must sort the
    // whole table for goes to the reader thread, where routedQuery counts it.
    LOAD_TUNING.quietMs = 10 * 60_000;
    STORE_QUERY_TUNING.offLoopRows = 1000;
  });
  afterAll(async () => {
    LOAD_TUNING.quietMs = quietMs;
    STORE_QUERY_TUNING.offLoopRows = offLoopRows;
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the first page of the default order and a re-sort by name from them after a reopen, not by sorting the table', async () => {
    const ref: Store = new MemoryDatabase().forWorkspace(WS);
    const open = async (): Promise<{ local: LocalDatabase; table: DocTable }> => {
      const local = await openLocalDatabase({ dir, workspaceId: WS, actor });
      db = local;
      const table = sqliteInstanceOf<Lead>(local.rx.collections.leads?.storageInstance)?.internalsForTests.table;
      if (!table) throw new Error('not on the SQLite storage');
      return { local, table };
    };
    const close = async (): Promise<void> => {
      await db?.close();
      db = null;
    };
    let { local, table } = await open();
    const leads = Array.from({ length: N }, (_, i) => lead(i));
    for (let i = 0; i < N; i += CALL) {
      await local.store.commit(creates(leads.slice(i, i + CALL)));
      await ref.commit(creates(leads.slice(i, i + CALL)));
    }
    const index = (keys: string): string => {
      const found = table.layout.indexes.find((i) => i.keys.join() === keys);
      if (!found) throw new Error(`the leads layout has no index on ${keys}`);
      return found.name;
    };
    const byCreation = index('createdAt');
    const byName = index('fold:fullName');
    expect(table.indexReady(byCreation)).toBe(false);
    expect(table.indexReady(byName)).toBe(false);
    // The leads table's first screen (newest first), and the table re-sorted by name.
    const first: Query = { orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 50 };
    const named: Query = { orderBy: [{ field: 'fullName', dir: 'asc', collate: 'text' }], limit: 50 };
    const fromHeads = { worker: 0, fromHead: true };
    expect(await routedQuery(local.store, ref, table, first)).toEqual(fromHeads);

    // The app quits before the load's indexes are built, and opens again: its builds still to come.
    await close();
    ({ local, table } = await open());
    expect(table.isLoading).toBe(true);
    expect(table.indexReady(byCreation)).toBe(false);
    const kept = (): unknown => table.file.db.prepare("SELECT count(*) FROM meta WHERE key LIKE 'load-heads:%'").pluck().get();
    expect(await routedQuery(local.store, ref, table, first)).toEqual(fromHeads);
    expect(await routedQuery(local.store, ref, table, named)).toEqual(fromHeads);
    // Taken out of the file at the open.
    expect(kept()).toBe(0);
    const second = (await ref.query('leads', named)).nextCursor;
    expect(await routedQuery(local.store, ref, table, { ...named, cursor: second })).toEqual(fromHeads);
    // Writes after the reopen keep them up: a lead renamed to the front, one deleted, new ones.
    const front = (await ref.query('leads', named)).docs as Lead[];
    const moved = leads[4321] as Lead;
    const edits: AnyWrite[] = [
      { collection: 'leads', id: moved.id, before: moved, after: { ...moved, firstName: 'Aaa', fullName: `Aaa ${moved.lastName}` } },
      { collection: 'leads', id: (front[2] as Lead).id, before: front[2] as Lead, after: null },
      ...creates(Array.from({ length: 20 }, (_, i) => lead(N + i))),
    ];
    await local.store.commit(edits);
    await ref.commit(edits);
    expect(await routedQuery(local.store, ref, table, first)).toEqual(fromHeads);
    expect(await routedQuery(local.store, ref, table, named)).toEqual(fromHeads);

    // A record that does not describe the table as it is (a write it did not see, here a later
    // sequence number given to a row behind the storage's back) is not taken: those pages are read
    // by sorting the table, in the reader thread, with the same answers.
    const path = table.file.path;
    const tableName = table.table;
    await close();
    const raw = new Database(path);
    try {
      expect(raw.prepare("SELECT count(*) FROM meta WHERE key LIKE 'load-heads:%'").pluck().get()).toBe(1);
      raw.prepare(`UPDATE "${tableName}" SET seq = (SELECT max(seq) + 1 FROM "${tableName}") WHERE id = ?`).run(moved.id);
    } finally {
      raw.close();
    }
    ({ local, table } = await open());
    expect(kept()).toBe(0);
    expect(await routedQuery(local.store, ref, table, first)).toEqual({ worker: 1, fromHead: false });
    expect(await routedQuery(local.store, ref, table, named)).toEqual({ worker: 1, fromHead: false });
    await table.finishLoading();
    expect(table.indexReady(byName)).toBe(true);
    expect(await routedQuery(local.store, ref, table, named)).toEqual({ worker: 0, fromHead: false });
  }, 120_000);
});

describe('a pulled page that starts a load', () => {
  const WS = 'c0000000-0000-4000-8000-000000000009';
  const actor = { workspaceId: WS, memberId: 'c0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };
  const GROUP = 'c0000000-0000-4000-8000-0000000000b3';
  const PAGE = 2000;
  const rnd = seededRandom(41);
  const lead = (i: number): Lead =>
    newLead({ id: `c0000000-0000-4000-8000-7${String(i).padStart(11, '0')}`, workspaceId: WS, now: new Date(Date.UTC(2026, 6, 1) + i * 1000).toISOString() }, GROUP, {
      firstName: ['ann', 'Émile', 'eric', 'Zed', 'Bob'][Math.floor(rnd() * 5)],
      lastName: `P${Math.floor(rnd() * 2000)}`,
      email: `p${i}@page.test`,
    });
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-store-page-heads-'));
  const quietMs = LOAD_TUNING.quietMs;
  beforeAll(() => {
    LOAD_TUNING.quietMs = 10 * 60_000;
  });
  afterAll(() => {
    LOAD_TUNING.quietMs = quietMs;
    rmSync(dir, { recursive: true, force: true });
  });

  it("works out its heads' merges in its slices, before the COMMIT, which only takes them", async () => {
    // Every lead of an initial sync's first pages comes before every head's bound: the merges (a
    // sort of 2,000 rows per head) ran in the COMMIT's turn, 38-57 ms of CPU.
    const local = await openLocalDatabase({ dir, workspaceId: WS, actor });
    const plan = OrderHead.prototype.plan;
    const applyAll = OrderHead.prototype.applyAll;
    try {
      const instance = sqliteInstanceOf<Lead>(local.rx.collections.leads?.storageInstance);
      if (!instance) throw new Error('not on the SQLite storage');
      const { file, table } = instance.internalsForTests;
      const planned: boolean[] = [];
      const mergedAtCommit: number[] = [];
      OrderHead.prototype.plan = function (this: OrderHead, changes) {
        planned.push(file.pageOpen);
        return plan.call(this, changes);
      };
      OrderHead.prototype.applyAll = function (this: OrderHead, changes) {
        if (changes.length >= HEAD_BATCH) mergedAtCommit.push(changes.length);
        applyAll.call(this, changes);
      };
      const leads = Array.from({ length: PAGE }, (_, i) => lead(i));
      const res = await instance.bulkWrite(
        leads.map((l) => ({ document: { ...l, _deleted: false, _attachments: {}, _rev: '1-p', _meta: { lwt: Date.now() } } })),
        'replication-downstream-heads-test',
      );
      expect(res.error).toEqual([]);
      expect(table.isLoading).toBe(true);
      // A head per direction of each order the load left out, each planned while the page was open.
      expect(planned.length).toBeGreaterThan(2);
      expect(planned.every((open) => open)).toBe(true);
      expect(mergedAtCommit).toEqual([]);
      // The heads hold the first rows of their orders, as the memory store sorts them.
      const ref: Store = new MemoryDatabase().forWorkspace(WS);
      await ref.commit(leads.map((after): AnyWrite => ({ collection: 'leads', id: after.id, before: null, after })));
      for (const [key, sort] of [['fold:fullName', { field: 'fullName', collate: 'text' }], ['rankingScore', { field: 'rankingScore' }]] as const) {
        for (const dir of ['asc', 'desc'] as const) {
          const head = table.heads.find([key], dir)?.after(null);
          expect(head?.all).toBe(false);
          const want = (await ref.query('leads', { orderBy: [{ ...sort, dir }], limit: HEAD_ROWS })).docs.map((d) => d.id);
          expect(head?.rows.map((r) => r.id)).toEqual(want);
        }
      }
    } finally {
      OrderHead.prototype.plan = plan;
      OrderHead.prototype.applyAll = applyAll;
      await local.close();
    }
  }, 60_000);
});
