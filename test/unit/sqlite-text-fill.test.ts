/**
 * The text index of a bulk load (pulled documents, or an import's local ones;
 * electron/backend/storage/sqlite/fts.ts): the load writes its texts to the waiting table, not the
 * FTS5 table; the worker moves them into the index after the load, a slice at a time; every search (the storage's searchText and the Store's
 * queries and counts) answers as a plain scan of the documents does before, during and after that
 * fill; and a process killed in the middle of the fill leaves a file whose next open completes it.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { now } from 'rxdb';
import { LOAD_TUNING, TEXT_FILL_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import type { DocTable } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import type { SqliteStorageInstance } from '../../electron/backend/storage/sqlite/instance.ts';
import { STORE_QUERY_TUNING } from '../../electron/backend/storage/sqlite/store-query.ts';
import { TEXT_SEARCH } from '../../electron/backend/store-layout.ts';
import { STORE_WRITE_CONTEXT } from '../../electron/backend/store-documents.ts';
import type { Cond } from '../../shared/store.ts';
import { DB, FILL_LABEL, lead, leadSchema, PULLED, storage } from './sqlite-text-fill.child.ts';
import type { Doc, Json } from './sqlite-text-fill.child.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';

const FIELDS = TEXT_SEARCH.leads ?? [];
/** Common and rare texts, across fields, with quotes and capitals outside ASCII, shorter than a
 * trigram, and matching nothing. */
const TEXTS = ['smith', 'SMI', 'émile', 'ÉCOLE poly', 'ann-1234@', 'ann-17', 'o"brien', 'zed', 'nobody', 'ok', 'é', 'a'];

const tuning = { load: { ...LOAD_TUNING }, fill: { ...TEXT_FILL_TUNING }, query: { ...STORE_QUERY_TUNING } };
const children: ChildProcess[] = [];
afterEach(() => {
  Object.assign(LOAD_TUNING, tuning.load);
  Object.assign(TEXT_FILL_TUNING, tuning.fill);
  Object.assign(STORE_QUERY_TUNING, tuning.query);
  // A test that failed before its kill leaves no writer behind.
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

const idOf = (d: Doc): string => String(d['id']);
const contains = (text: string): Cond => ({ op: 'contains', fields: FIELDS, value: text });
/** The plain scan: live documents with a text field containing `text`, case-insensitively. */
const scan = (docs: Iterable<Doc>, text: string): Doc[] =>
  [...docs].filter((d) => !d._deleted && FIELDS.some((f) => typeof d[f] === 'string' && (d[f] as string).toLowerCase().includes(text.toLowerCase())));

/** Every search of every text answers as the plain scan of `docs` (the stored documents) does. */
function answersAsTheScan(inst: SqliteStorageInstance<Json>, docs: ReadonlyMap<string, Doc>): void {
  for (const text of TEXTS) {
    const found = scan(docs.values(), text);
    expect(found.length, text).toBeLessThan(docs.size);
    expect([...inst.searchText(text, 10_000)].sort(), text).toEqual(found.map(idOf).sort());
    expect(inst.searchText(text, 20, { index: ['id'], direction: 'desc' }), text).toEqual(found.map(idOf).sort().reverse().slice(0, 20));
    const newest = [...found].sort((a, b) => (String(a['createdAt']) < String(b['createdAt']) ? 1 : -1)).slice(0, 25);
    const page = inst.storeQuery({ where: contains(text), orderBy: [{ field: 'createdAt', dir: 'desc' }], cursor: null, limit: 25, cache: false });
    expect(page.docs.map((d) => idOf(d as Doc)), text).toEqual(newest.map(idOf));
    expect(inst.storeCount(contains(text)), text).toBe(found.length);
    // With another condition (the index's matches read as a set beside it).
    const bo: Cond = { op: 'and', conds: [contains(text), { op: 'eq', field: 'firstName', value: 'Bo' }] };
    expect(inst.storeCount(bo), text).toBe(found.filter((d) => d['firstName'] === 'Bo').length);
  }
}

/** Every text's page and counts through the reads the backend serves (off the event loop where
 * they would read much) answer as the plain scan of `docs` does. */
async function answersOffLoopAsTheScan(inst: SqliteStorageInstance<Json>, docs: ReadonlyMap<string, Doc>, texts: readonly string[] = TEXTS): Promise<void> {
  for (const text of texts) {
    const found = scan(docs.values(), text);
    const newest = [...found].sort((a, b) => (String(a['createdAt']) < String(b['createdAt']) ? 1 : -1)).slice(0, 25);
    const page = await inst.storeQueryOffLoop({ where: contains(text), orderBy: [{ field: 'createdAt', dir: 'desc' }], cursor: null, limit: 25, cache: false });
    expect(page.docs.map((d) => idOf(d as Doc)), text).toEqual(newest.map(idOf));
    expect(await inst.storeCountOffLoop(contains(text)), text).toBe(found.length);
    const bo: Cond = { op: 'and', conds: [contains(text), { op: 'eq', field: 'firstName', value: 'Bo' }] };
    expect(await inst.storeCountOffLoop(bo), text).toBe(found.filter((d) => d['firstName'] === 'Bo').length);
    // Inside an or (the index's matches read as a set there too).
    const either: Cond = { op: 'or', conds: [contains(text), { op: 'eq', field: 'id', value: 'none' }] };
    expect(await inst.storeCountOffLoop(either), text).toBe(found.length);
  }
}

/** Counts the calls of instr() on the connections of this thread (an application function of the
 * same meaning in its place): a test of the waiting rows' texts made here. */
function countInstr(table: DocTable): { calls: number } {
  const counter = { calls: 0 };
  for (const db of new Set([table.file.db, table.file.reads])) {
    db.function('instr', { deterministic: true }, (haystack: unknown, needle: unknown) => {
      counter.calls++;
      if (haystack === null || needle === null) return null;
      const at = String(haystack).indexOf(String(needle));
      return at < 0 ? 0 : [...String(haystack).slice(0, at)].length + 1;
    });
  }
  return counter;
}

/** Rows of the FTS5 table and of its waiting table, and rowids in both. */
function textRows(table: DocTable): { indexed: number; waiting: number; both: number } {
  const db = table.file.db;
  const fts = `"${table.table}_fts"`;
  const waiting = `"${table.table}_fts_waiting"`;
  const count = (sql: string): number => Number(db.prepare(sql).pluck().get());
  return { indexed: count(`SELECT count(*) FROM ${fts}`), waiting: count(`SELECT count(*) FROM ${waiting}`), both: count(`SELECT count(*) FROM ${fts} AS x JOIN ${waiting} AS w ON w.rowid = x.rowid`) };
}

const liveCount = (docs: ReadonlyMap<string, Doc>): number => [...docs.values()].filter((d) => !d._deleted).length;

/** A fresh leads instance with `pages` of leads (from, to) written one bulk write each in `context`. */
async function writtenInPages(prefix: string, pages: readonly (readonly [number, number])[], context: string) {
  const inst = await openInstance<Json>(storage(tempDir(prefix)), leadSchema, { collectionName: 'leads' });
  const sqlite = sqliteInstanceOf<Json>(inst);
  if (!sqlite) throw new Error('not the SQLite storage');
  const docs = new Map<string, Doc>();
  for (const [from, to] of pages) {
    const page = Array.from({ length: to - from }, (_, i) => lead(from + i));
    expect((await inst.bulkWrite(page.map((document) => ({ document })), context)).error).toEqual([]);
    for (const d of page) docs.set(idOf(d), d);
  }
  return { inst, sqlite, table: sqlite.internalsForTests.table, docs };
}

describe('the text index of a bulk load', () => {
  it('waits for the fill after the load, and every search answers as the plain scan before, during and after it', async () => {
    LOAD_TUNING.quietMs = 600_000;
    Object.assign(TEXT_FILL_TUNING, { rows: 300, minRows: 300, maxRows: 300 });
    // Two pulled pages (a load), then a pull's last page, smaller than a bulk write.
    const { inst, sqlite, table, docs } = await writtenInPages('sqlite-text-fill-', [[0, 1000], [1000, 2000], [2000, 2400]], PULLED);
    expect(table.isLoading).toBe(true);
    const live = liveCount(docs);
    const small = [...docs.values()].slice(2000).filter((d) => !d._deleted).length;
    // The load's texts wait; the last page's are indexed as it is written.
    expect(textRows(table)).toEqual({ indexed: small, waiting: live - small, both: 0 });

    // Local writes during the load: a rename of a waiting lead (to a name no other lead has), a
    // deletion, and a rename of an indexed one.
    const edits = [lead(5), lead(8), lead(2003)].map((d, i) => ({ ...d, ...(i === 1 ? { _deleted: true } : { lastName: 'Zed' }), _rev: '2-b', _meta: { lwt: now() } }) as Doc);
    const previous = await inst.findDocumentsById(edits.map(idOf), true);
    const res = await inst.bulkWrite(edits.map((document) => ({ document, previous: previous.find((p) => idOf(p as Doc) === idOf(document)) })), 'local');
    expect(res.error).toEqual([]);
    for (const d of edits) docs.set(idOf(d), d);
    expect(textRows(table).both).toBe(0);
    answersAsTheScan(sqlite, docs);

    // The fill: every slice leaves the texts in one table each, and the answers the same.
    const waitingBefore = textRows(table).waiting;
    const slices: { indexed: number; waiting: number; both: number }[] = [];
    let filling = false;
    const stop = table.file.watchBuilds((what) => {
      if (what === FILL_LABEL) filling = true;
      else if (what === null && filling) {
        filling = false;
        slices.push(textRows(table));
        answersAsTheScan(sqlite, docs);
      }
    });
    await table.finishLoading();
    stop();
    expect(slices.length).toBe(Math.ceil(waitingBefore / 300));
    expect(slices.length).toBeGreaterThanOrEqual(5);
    for (const s of slices) expect(s.indexed + s.waiting).toBe(liveCount(docs));
    expect(slices.map((s) => s.both)).toEqual(slices.map(() => 0));
    expect(table.isLoading).toBe(false);
    expect(textRows(table)).toEqual({ indexed: liveCount(docs), waiting: 0, both: 0 });
    answersAsTheScan(sqlite, docs);
  });

  it("while texts wait, the backend's searches find the waiting ones in the reader thread, not on the event loop, with the same answers", async () => {
    LOAD_TUNING.quietMs = 600_000;
    const { inst, sqlite, table, docs } = await writtenInPages('sqlite-text-fill-off-', [[0, 1000], [1000, 2000]], PULLED);
    const waiting = textRows(table).waiting;
    expect(waiting).toBe(liveCount(docs));
    const instr = countInstr(table);
    // Texts that match a few leads or none: a scan of the waiting rows here would test each.
    const rare = TEXTS.filter((t) => [...t].length >= 3 && scan(docs.values(), t).length < 10);
    expect(rare.length).toBeGreaterThanOrEqual(3);
    for (const text of rare) {
      const before = instr.calls;
      await answersOffLoopAsTheScan(sqlite, docs, [text]);
      expect(instr.calls - before, text).toBeLessThan(waiting / 10);
    }
    await answersOffLoopAsTheScan(sqlite, docs);

    // Writes after the reader thread's reads: a pulled page during the load (its texts wait too)
    // renaming waiting leads (out of some matches, into others) and adding leads, then a local
    // rename (its text indexed) and a deletion.
    const renamed = Array.from({ length: 600 }, (_, i) => ({ ...lead(i), lastName: i % 2 === 0 ? 'Zedd' : 'Smith', email: `zed-${i}@acme.example`, _rev: '2-b', _meta: { lwt: now() } }) as Doc);
    const added = Array.from({ length: 400 }, (_, i) => lead(3000 + i));
    const previous = await inst.findDocumentsById(renamed.map(idOf), true);
    const prev = (d: Doc) => previous.find((p) => idOf(p as Doc) === idOf(d));
    const res = await inst.bulkWrite([...renamed, ...added].map((document) => ({ document, previous: prev(document) })), PULLED);
    expect(res.error).toEqual([]);
    for (const d of [...renamed, ...added]) docs.set(idOf(d), d);
    const local = [{ ...lead(1500), lastName: 'Zed', _rev: '2-b', _meta: { lwt: now() } }, { ...lead(1501), _deleted: true, _rev: '2-b', _meta: { lwt: now() } }] as Doc[];
    const localPrevious = await inst.findDocumentsById(local.map(idOf), true);
    const lres = await inst.bulkWrite(local.map((document) => ({ document, previous: localPrevious.find((p) => idOf(p as Doc) === idOf(document)) })), 'local');
    expect(lres.error).toEqual([]);
    for (const d of local) docs.set(idOf(d), d);
    expect(textRows(table).waiting).toBeGreaterThan(waiting);
    // Read here, from what the reader thread found before these writes and the rows they wrote.
    answersAsTheScan(sqlite, docs);
    await answersOffLoopAsTheScan(sqlite, docs);

    // The fill, a slice at a time: the same answers after each.
    Object.assign(TEXT_FILL_TUNING, { rows: 500, minRows: 500, maxRows: 500 });
    let filling = false;
    const checks: Promise<void>[] = [];
    const stop = table.file.watchBuilds((what) => {
      if (what === FILL_LABEL) filling = true;
      else if (what === null && filling) {
        filling = false;
        checks.push(answersOffLoopAsTheScan(sqlite, docs, ['smith', 'zed', 'ann-17', 'nobody']));
      }
    });
    await table.finishLoading();
    stop();
    await Promise.all(checks);
    expect(checks.length).toBeGreaterThanOrEqual(3);
    expect(textRows(table).waiting).toBe(0);
    await answersOffLoopAsTheScan(sqlite, docs);
  });

  it("a local bulk load (an import's calls through the Store) leaves its texts waiting too, and searches answer as the plain scan during and after the fill", async () => {
    LOAD_TUNING.quietMs = 600_000;
    // Two calls of an import into an empty list (a load), then a small one (written at once).
    const { sqlite, table, docs } = await writtenInPages('sqlite-text-fill-local-', [[0, 1000], [1000, 2000], [2000, 2100]], STORE_WRITE_CONTEXT);
    expect(table.isLoading).toBe(true);
    const small = [...docs.values()].slice(2000).filter((d) => !d._deleted).length;
    expect(textRows(table)).toEqual({ indexed: small, waiting: liveCount(docs) - small, both: 0 });
    answersAsTheScan(sqlite, docs);
    await answersOffLoopAsTheScan(sqlite, docs);
    await table.finishLoading();
    expect(table.isLoading).toBe(false);
    expect(textRows(table)).toEqual({ indexed: liveCount(docs), waiting: 0, both: 0 });
    answersAsTheScan(sqlite, docs);
  });

  it("a text searched again with few documents written since uses the reader thread's matches it found before, with the same answers", async () => {
    LOAD_TUNING.quietMs = 600_000;
    STORE_QUERY_TUNING.waitingReuseRows = 500;
    const { inst, sqlite, table, docs } = await writtenInPages('sqlite-text-fill-reuse-', [[0, 1000], [1000, 2000]], STORE_WRITE_CONTEXT);
    const write = async (page: Doc[], context: string): Promise<void> => {
      const previous = await inst.findDocumentsById(page.map(idOf), true);
      const res = await inst.bulkWrite(page.map((document) => ({ document, previous: previous.find((p) => idOf(p as Doc) === idOf(document)) })), context);
      expect(res.error).toEqual([]);
      for (const d of page) docs.set(idOf(d), d);
    };
    expect(textRows(table).waiting).toBe(liveCount(docs));
    const file = table.file;
    const read = file.readInWorker.bind(file);
    let reads = 0;
    file.readInWorker = (r) => {
      reads++;
      return read(r);
    };
    const texts = ['ann-17', 'smith'];
    await answersOffLoopAsTheScan(sqlite, docs, texts);
    const first = reads;
    expect(first).toBeGreaterThan(0);
    // The same texts again, then after a few writes (into and out of the matches): no new read.
    await answersOffLoopAsTheScan(sqlite, docs, texts);
    await write([{ ...lead(5), email: 'ann-1777@x.example', _rev: '2-b', _meta: { lwt: now() } }, { ...lead(1700), lastName: 'Zed', _rev: '2-b', _meta: { lwt: now() } }] as Doc[], STORE_WRITE_CONTEXT);
    await answersOffLoopAsTheScan(sqlite, docs, texts);
    expect(reads).toBe(first);
    // More writes since than the bound: read again.
    await write(Array.from({ length: 1000 }, (_, i) => lead(2000 + i)), PULLED);
    await answersOffLoopAsTheScan(sqlite, docs, texts);
    expect(reads).toBeGreaterThan(first);
  });

  it('a process killed in the middle of the fill leaves a file whose next open completes it', async () => {
    const dir = tempDir('sqlite-text-fill-kill-');
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sqlite-text-fill.child.ts'), dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    let slices = 0;
    try {
      for await (const line of createInterface({ input: child.stdout })) {
        if (line === 'slice') slices++;
        // Killed after three slices of 50 texts, while the next one runs or waits.
        if (slices === 3) break;
      }
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((r) => child.once('exit', r));
    expect(stderr).toBe('');
    expect(slices).toBe(3);

    const docs = new Map(Array.from({ length: 3000 }, (_, i) => lead(i)).map((d) => [idOf(d), d]));
    LOAD_TUNING.quietMs = 600_000;
    const inst = await openInstance<Json>(storage(dir), leadSchema, { databaseName: DB, collectionName: 'leads' });
    const sqlite = sqliteInstanceOf<Json>(inst);
    if (!sqlite) throw new Error('not the SQLite storage');
    const { table } = sqlite.internalsForTests;
    // The kill cut the fill short: some texts indexed, the others waiting, none in both or lost.
    const cut = textRows(table);
    expect(cut.indexed).toBeGreaterThanOrEqual(150);
    expect(cut.waiting).toBeGreaterThan(0);
    expect(cut.indexed + cut.waiting).toBe(liveCount(docs));
    expect(cut.both).toBe(0);
    expect(table.isLoading).toBe(true);
    answersAsTheScan(sqlite, docs);

    // The open goes on with the load once it is quiet.
    LOAD_TUNING.quietMs = 0;
    sqlite.holdLoad(false);
    for (let i = 0; i < 600 && table.isLoading; i++) await new Promise((r) => setTimeout(r, 50));
    expect(table.isLoading).toBe(false);
    expect(textRows(table)).toEqual({ indexed: liveCount(docs), waiting: 0, both: 0 });
    answersAsTheScan(sqlite, docs);
  });
});
