/**
 * The desktop's replication client (electron/backend/replication.ts and its parts) against a small in-test server
 * that speaks the protocol of API-CONTRACT.md "Replication endpoints" with an in-memory store, so
 * the client's behaviour can be driven from the server side: live changes, concurrent edits, a
 * refused push, dropped streams, an outdated client. The real sync server is exercised by the
 * two-process suites (sync-two-desktops.test.ts).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { PULL_PART, PULL_RAMP, startSync } from '../../electron/backend/replication.ts';
import { isRefusal, mergeConflictHandler, mergeThreeWay, sameDocument } from '../../electron/backend/replication-merge.ts';
import type { Sync, SyncOptions } from '../../electron/backend/replication.ts';
import { SqliteStorageInstance } from '../../electron/backend/storage/sqlite/instance.ts';
import { docCodec } from '../../electron/backend/storage/sqlite/doc-codec.ts';
import type { StorageFile } from '../../electron/backend/storage/sqlite/file.ts';
import type { Actor } from '../../shared/context.ts';
import { newLead } from '../../shared/model/factories.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { HeadlessDesktop } from './sync-processes.ts';
import { masterStateStorage, referencedStates } from '../../electron/backend/storage/sqlite/master-states.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { BULK_ROWS, LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import type { DocTable } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { leftOutOfLoad } from '../../electron/backend/storage/sqlite/store-columns.ts';
import type { SyncStatus } from '../../electron/backend/sync-status.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import { isDownstreamWrite } from '../../electron/backend/rxdb-internals.ts';
import type { Lead } from '../../shared/model/index.ts';
import { until } from '../support/until.ts';

type Json = Record<string, unknown>;

/** A well-formed key (the desktop refuses others before asking any server). */
const KEY = `live_${'k3yK3yK3y0'.repeat(4)}`;

describe('three-way merge', () => {
  const base = { id: 'a', firstName: 'Ann', company: 'Acme', variables: { x: '1', y: '2' }, groupIds: ['g1'], _deleted: false };
  it('keeps local changes the server did not make and takes the server where both changed', () => {
    const local = { ...base, firstName: 'Anna', company: 'Local Co', variables: { x: 'L', y: '2' } };
    const server = { ...base, company: 'Server Co', variables: { x: '1', y: 'S' }, groupIds: ['g1', 'g2'] };
    expect(mergeThreeWay(base, local, server)).toEqual({
      id: 'a', firstName: 'Anna', company: 'Server Co', variables: { x: 'L', y: 'S' }, groupIds: ['g1', 'g2'], _deleted: false,
    });
  });
  it('treats arrays as one value and keeps a local field the server removed only if unchanged there', () => {
    expect(mergeThreeWay({ s: [1, 2] }, { s: [1, 2, 3] }, { s: [2] })).toEqual({ s: [2] });
    expect(mergeThreeWay({ s: [1, 2] }, { s: [1, 2, 3] }, { s: [1, 2] })).toEqual({ s: [1, 2, 3] });
    expect(mergeThreeWay({ a: 1, b: 2 }, { a: 1 }, { a: 1, b: 2, c: 3 })).toEqual({ a: 1, c: 3 });
  });
  it('tells a refusal (server kept what the push assumed) from a concurrent edit', async () => {
    const assumed = { ...base };
    const local = { ...base, firstName: 'Anna' };
    expect(isRefusal({ assumedMasterState: assumed, realMasterState: { ...base }, newDocumentState: local })).toBe(true);
    expect(isRefusal({ assumedMasterState: assumed, realMasterState: { ...base, company: 'X' }, newDocumentState: local })).toBe(false);
    expect(await mergeConflictHandler.resolve({ assumedMasterState: assumed, realMasterState: { ...base }, newDocumentState: local }, 'test')).toEqual(base);
    expect(sameDocument({ a: 1, b: { c: 2 }, _rev: '1-x' }, { b: { c: 2 }, a: 1, _meta: { lwt: 1 } })).toBe(true);
  });
});

/** The replication protocol over an in-memory store, with a refusal rule and stream controls. */
class FakeServer {
  seq = 0;
  readonly rows = new Map<string, { doc: Json; seq: number }>();
  readonly refusals: Json[] = [];
  readonly streams = new Set<{ collection: string; res: ServerResponse }>();
  /** Refuses a write: returns the reason, or null to accept. */
  rule: (collection: string, before: Json | null, after: Json) => { code: string; message: string } | null = () => null;
  /** Milliseconds a push of the collection takes (a slow lane). */
  pushDelayMs: Record<string, number> = {};
  /** How many schema versions the server is ahead of this app (0: the same). */
  schemaVersionsAhead = 0;
  /** Sends documents (pulled and streamed) without the wire format's `_deleted`. */
  malformed = false;
  /** Rows pushed, and conflicts answered (a refusal or a state the push did not assume), by collection. */
  readonly pushed: Record<string, number> = {};
  readonly conflicted: Record<string, number> = {};
  /** Every pull request, in arrival order: the collection and the seq it asked after. */
  readonly pulls: { collection: string; after: number; limit: number }[] = [];
  /** Runs when a pull request arrives, before it is answered (a promise: the answer waits for it). */
  onPull: (collection: string, after: number) => void | Promise<void> = () => undefined;
  keyMember = '';
  server: Server;
  url = '';

  constructor() {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        res.writeHead(500);
        res.end(JSON.stringify({ error: { code: 'INTERNAL', message: String(e) } }));
      });
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  key = (c: string, id: string) => `${c}/${id}`;

  /** A write made on the server side (another member, an operation). */
  write(collection: string, doc: Json): void {
    this.seq++;
    this.rows.set(this.key(collection, String(doc.id)), { doc: { ...doc, _deleted: doc._deleted ?? false }, seq: this.seq });
    const event = `data: ${JSON.stringify({ documents: [{ ...doc, _deleted: this.malformed ? undefined : (doc._deleted ?? false) }], checkpoint: { seq: this.seq } })}\n\n`;
    for (const s of this.streams) if (s.collection === collection) s.res.write(event);
  }

  get(collection: string, id: string): Json | undefined {
    return this.rows.get(this.key(collection, id))?.doc;
  }

  dropStreams(): void {
    for (const s of this.streams) s.res.destroy();
    this.streams.clear();
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    return text ? JSON.parse(text) : null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${KEY}`) return send(401, { error: { code: 'UNAUTHENTICATED', message: 'unknown key' } });
    // The two lookups a desktop makes to learn who its key is.
    if (url.pathname === '/apiKeys.list') return send(200, { keys: [{ prefix: KEY.slice(0, 12), memberId: this.keyMember }] });
    if (url.pathname === '/members.list') {
      return send(200, { members: [...this.rows.entries()].filter(([k]) => k.startsWith('members/')).map(([, r]) => r.doc) });
    }
    if (url.pathname === '/replication/refusals') {
      const since = url.searchParams.get('since') ?? '';
      return send(200, { refusals: this.refusals.filter((r) => String(r.at) > since) });
    }
    const m = /^\/replication\/(\w+)\/(pull|push|stream)$/.exec(url.pathname);
    if (!m) return send(404, { error: { code: 'NOT_FOUND', message: 'no route' } });
    const [, collection = '', action] = m;
    const expected = (collection in COLLECTIONS ? COLLECTIONS[collection as keyof typeof COLLECTIONS].schema.version : 0) + this.schemaVersionsAhead;
    if (Number(req.headers['x-schema-version']) !== expected) {
      return send(426, { error: { code: 'CLIENT_OUTDATED', message: `The server expects ${collection} schema version ${expected}.` } });
    }
    if (action === 'pull') {
      const cp = url.searchParams.get('checkpoint');
      const after = cp ? (JSON.parse(cp) as { seq: number }).seq : 0;
      const limit = Number(url.searchParams.get('limit') ?? 100);
      this.pulls.push({ collection, after, limit });
      await this.onPull(collection, after);
      const docs = [...this.rows.entries()].filter(([k, r]) => k.startsWith(`${collection}/`) && r.seq > after).sort((a, b) => a[1].seq - b[1].seq).slice(0, limit);
      const last = docs[docs.length - 1];
      const documents = docs.map(([, r]) => (this.malformed ? { ...r.doc, _deleted: undefined } : r.doc));
      return send(200, { documents, checkpoint: last ? { seq: last[1].seq } : cp ? JSON.parse(cp) : null });
    }
    if (action === 'push') {
      const delay = this.pushDelayMs[collection] ?? 0;
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      const rows = (await this.body(req)) as { assumedMasterState?: Json; newDocumentState: Json }[];
      const conflicts: Json[] = [];
      this.pushed[collection] = (this.pushed[collection] ?? 0) + rows.length;
      for (const row of rows) {
        const id = String(row.newDocumentState.id);
        const stored = this.get(collection, id) ?? null;
        if (!sameDocument(stored, row.assumedMasterState ?? null)) {
          conflicts.push(stored ?? { ...row.newDocumentState, _deleted: true });
          continue;
        }
        const refusal = this.rule(collection, stored, row.newDocumentState);
        if (refusal) {
          this.refusals.push({ collection, documentId: id, ...refusal, at: new Date().toISOString() });
          conflicts.push(stored ?? { ...row.newDocumentState, _deleted: true });
          continue;
        }
        this.write(collection, row.newDocumentState);
      }
      this.conflicted[collection] = (this.conflicted[collection] ?? 0) + conflicts.length;
      return send(200, conflicts);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('data: RESYNC\n\n');
    const entry = { collection, res };
    this.streams.add(entry);
    req.on('close', () => this.streams.delete(entry));
  }

  async close(): Promise<void> {
    this.dropStreams();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

const WS = 'a0000000-0000-4000-8000-00000000000a';
const ME = 'a0000000-0000-4000-8000-0000000000b1';
const actor: Actor = { workspaceId: WS, memberId: ME, role: 'member' };
const NOW = '2026-11-16T10:00:00.000Z';
const GROUP = 'a0000000-0000-4000-8000-0000000000c1';

let dir: string;
let server: FakeServer;
let db: LocalDatabase;

/** How the local leads table's replication stores a lead's assumed-master state. */
function masterState(leadId: string): 'reference' | 'copy' | 'none' {
  const leads = sqliteInstanceOf(db.rx.collections['leads']?.storageInstance);
  if (!leads) throw new Error('not the SQLite storage');
  const { file, table } = leads.internalsForTests;
  return masterStateStorage(file.db, table.table, leadId);
}
let sync: Sync | null = null;

const lead = (n: number, fields: Partial<Lead> = {}): Lead =>
  newLead({ id: `a0000000-0000-4000-8000-${String(n).padStart(12, '0')}`, workspaceId: WS, now: NOW }, GROUP, { firstName: `Lead${n}`, ...fields });

/**
 * A desktop of its own, syncing from nothing (one open database per name and process: the shared
 * one is closed meanwhile and opened again after), with its leads' SQLite instance. `sync` starts a
 * sync of it with the tests' short waits (stopping the one before); every sync started is stopped
 * after.
 */
/** A desktop of a test's own: its database, its leads' storage instance, and a sync of it. */
type OwnDesktop = { own: LocalDatabase; leads: SqliteStorageInstance<unknown>; sync: (opts?: Partial<SyncOptions>) => Promise<Sync> };

async function ownDesktop(name: string, run: (d: OwnDesktop) => Promise<void>): Promise<void> {
  await db.close();
  const own = await openLocalDatabase({ dir: join(dir, name), workspaceId: WS, actor });
  const started: Sync[] = [];
  try {
    const leads = sqliteInstanceOf(own.rx.collections['leads']?.storageInstance);
    if (!leads) throw new Error('not the SQLite storage');
    const sync = async (opts: Partial<SyncOptions> = {}): Promise<Sync> => {
      await started.at(-1)?.stop();
      const s = await startSync({ db: own, serverUrl: server.url, apiKey: KEY, retryMs: 100, backoffMs: 50, maxBackoffMs: 400, ...opts });
      started.push(s);
      return s;
    };
    await run({ own, leads, sync });
  } finally {
    for (const s of started) await s.stop();
    await own.close();
    db = await openLocalDatabase({ dir, workspaceId: WS, actor });
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sync-client-'));
  server = new FakeServer();
  await server.listen();
  db = await openLocalDatabase({ dir, workspaceId: WS, actor });
});

afterEach(async () => {
  await sync?.stop();
  sync = null;
  server.rule = () => null;
  server.pushDelayMs = {};
  server.schemaVersionsAhead = 0;
  server.malformed = false;
  server.onPull = () => undefined;
});

afterAll(async () => {
  await db.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Watches the writes of pulled documents into a collection's storage instance, whichever way they
 * are stored: RxDB's replication's bulk writes, or a page of new documents stored with its
 * checkpoint (loadPulled). `before` gets each write's number of documents as it is asked for,
 * `after` runs right after it is asked for.
 */
function watchPulledWrites(instance: SqliteStorageInstance<unknown>, before: (rows: number) => void, after: () => void = () => undefined): void {
  const bulkWrite = instance.bulkWrite.bind(instance);
  instance.bulkWrite = (rows, context) => {
    if (!isDownstreamWrite(context)) return bulkWrite(rows, context);
    before(rows.length);
    const out = bulkWrite(rows, context);
    after();
    return out;
  };
  const loadPulled = instance.loadPulled.bind(instance);
  instance.loadPulled = (meta, load) => {
    before(load.docs.length);
    const out = loadPulled(meta, load);
    after();
    return out;
  };
}

const start = async (extra: Partial<Parameters<typeof startSync>[0]> = {}) => {
  sync = await startSync({ db, serverUrl: server.url, apiKey: KEY, retryMs: 100, backoffMs: 50, maxBackoffMs: 400, ...extra });
  return sync;
};

describe('replication client against the protocol', () => {
  it('pulls what the server has, pushes local commits, and receives live changes', async () => {
    for (let i = 1; i <= 30; i++) server.write('leads', lead(i));
    const s = await start({ pullBatchSize: 7 });
    await s.awaitInSync();
    expect(await db.store.count('leads')).toBe(30);

    const mine = lead(100, { company: 'Pushed Co' });
    await db.store.commit([{ collection: 'leads', id: mine.id, before: null, after: mine }]);
    await until('push', () => server.get('leads', mine.id)?.company === 'Pushed Co', 10_000);

    server.write('leads', { ...lead(1), company: 'Live Co' });
    await until('live change', async () => (await db.store.get('leads', lead(1).id))?.company === 'Live Co', 10_000);
    await s.awaitInSync();
    const st = s.status();
    expect(st.mode).toBe('online');
    expect(st.pending).toBe(0);
    expect(st.lastSyncedAt).not.toBeNull();
  });

  // The point of fetching ahead is speed (the next page travels while this one is stored), which the
  // desktop benchmark measures; this test holds what fetching ahead must not break.
  it('fetches pull pages ahead without asking for any checkpoint twice, and still gets what the server wrote meanwhile', async () => {
    await ownDesktop('prefetch', async ({ own, sync }) => {
      const have = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).length;
      for (let i = 0; i < 45; i++) server.write('leads', lead(5000 + i));
      const total = have + 45;
      const firstSeq = server.seq;
      // Written while the pull is under way (after the third page was asked for): it has a higher
      // seq than everything a page fetched ahead holds, so a later page or the stream brings it.
      let wroteDuring = false;
      server.onPull = (c) => {
        if (c !== 'leads' || wroteDuring || server.pulls.filter((p) => p.collection === 'leads').length < 3) return;
        wroteDuring = true;
        server.write('leads', lead(5999, { company: 'Written during the pull' }));
      };
      const before = server.pulls.length;
      const s = await sync({ pullBatchSize: 10 });
      await s.awaitInSync();
      await until('the lead written during the pull', async () => (await own.store.get('leads', lead(5999).id))?.company === 'Written during the pull', 10_000);
      expect(await own.store.count('leads')).toBe(total + 1);
      const asked = server.pulls.slice(before).filter((p) => p.collection === 'leads').map((p) => p.after);
      // Each checkpoint once: a page fetched ahead is the one handed to the replication.
      expect(new Set(asked).size).toBe(asked.length);
      expect(asked[0]).toBe(0);
      expect(asked.length).toBeGreaterThanOrEqual(Math.ceil(total / 10));
      expect(wroteDuring).toBe(true);
      expect(server.seq).toBe(firstSeq + 1);
    });
  });

  it('pulls a small first page and full pages after it, so RxDB first handles a page of a few documents', async () => {
    // RxDB handles a pulled page in one turn of the event loop, and the first one of a sync runs
    // its code cold: with full pages first, that was a page of 2,000 documents (replication.ts,
    // PULL_RAMP).
    await ownDesktop('small-first-page', async ({ own, leads, sync }) => {
      const have = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).length;
      const count = 2 * PULL_RAMP.from + 100 - have;
      expect(count).toBeGreaterThan(0);
      for (let i = 0; i < count; i++) server.write('leads', lead(50_000 + i));
      const writes: number[] = [];
      watchPulledWrites(leads, (rows) => writes.push(rows));
      const before = server.pulls.length;
      const s = await sync({ pullBatchSize: PULL_RAMP.from });
      await s.awaitInSync();
      expect(await own.store.count('leads')).toBe(have + count);
      const asked = server.pulls.slice(before).filter((p) => p.collection === 'leads');
      // The first page small, then full pages; the last one (100 leads short of full) ends the pull
      // (its leads stored with their checkpoint by the desktop, which knows the server has no more).
      expect(asked.map((p) => p.limit)).toEqual([PULL_RAMP.first, PULL_RAMP.from, PULL_RAMP.from]);
      expect(new Set(asked.map((p) => p.after)).size).toBe(asked.length);
      // A full page is stored in parts of PULL_PART (each its own write, the pages still fetched
      // whole: no checkpoint asked for twice, above); the last page, short of two parts, whole.
      expect(PULL_RAMP.from).toBe(2 * PULL_PART);
      expect(writes).toEqual([PULL_RAMP.first, PULL_PART, PULL_PART, PULL_RAMP.from + 100 - PULL_RAMP.first]);
    });
  });

  it('pulls a page again when the sync is paused while a part of it is handed to RxDB: no lead lost', async () => {
    // A part of a page carries the checkpoint the page was asked from (documents carry no seq),
    // and RxDB drops a part returned while it is paused: after the resume, RxDB asks from that
    // checkpoint again, and the part after the dropped one would skip it.
    await ownDesktop('pause-in-a-page', async ({ own, sync }) => {
      const have = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).length;
      const count = 2 * PULL_RAMP.from + 100 - have;
      for (let i = 0; i < count; i++) server.write('leads', lead(60_000 + i));
      let s: Sync | null = null;
      let full = 0;
      let paused: Promise<void> | null = null;
      // The third page is asked for (ahead) as the second one, full, is split and handed over.
      server.onPull = (c) => {
        if (c === 'leads' && server.pulls.at(-1)?.limit === PULL_RAMP.from && ++full === 2) paused = s?.pause() ?? null;
      };
      const before = server.pulls.length;
      s = await sync({ pullBatchSize: PULL_RAMP.from });
      await until('paused in the second page', () => paused !== null, 10_000);
      await paused;
      await new Promise((r) => setTimeout(r, 200));
      await s.resume();
      await s.awaitInSync();
      expect(await own.store.count('leads')).toBe(have + count);
      // The second page was asked for again after the resume.
      const second = server.pulls.slice(before).filter((p) => p.collection === 'leads')[1];
      expect(server.pulls.slice(before).filter((p) => p.collection === 'leads' && p.after === second?.after).length).toBe(2);
    });
  });

  it('stores pages of new leads with their checkpoint in one write, as the rows RxDB writes itself: seen by live queries and the change stream, pushed back never, edited without a conflict', async () => {
    await ownDesktop('pages-with-checkpoint', async ({ own, leads, sync }) => {
      const { file, table } = leads.internalsForTests;
      // Leads of two full pages and more (the earlier tests' leads, and some of its own).
      const have = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).length;
      for (let i = 0; have + i < 2 * PULL_RAMP.from + 100; i++) server.write('leads', lead(70_000 + i));
      const leadIds = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).map((k) => k.slice('leads/'.length));
      const total = leadIds.length;
      // RxDB's own writes of a pull checkpoint (its setCheckpoint), of any storage instance.
      const checkpointWrites: string[] = [];
      const proto = SqliteStorageInstance.prototype;
      const bulkWrite = proto.bulkWrite;
      proto.bulkWrite = function (this: SqliteStorageInstance<unknown>, rows, context) {
        for (const r of rows) if ((r.document as Json)['id'] === 'down|1') checkpointWrites.push(this.collectionName);
        return bulkWrite.call(this, rows, context);
      };
      const collection = own.rx.collections['leads'];
      if (!collection) throw new Error('no leads collection');
      const changed = new Set<string>();
      let live = 0;
      const subs = [collection.$.subscribe((ev) => changed.add(ev.documentId)), collection.find().$.subscribe((docs) => (live = docs.length))];
      const pushedBefore = server.pushed['leads'] ?? 0;
      const conflictedBefore = server.conflicted['leads'] ?? 0;
      try {
        const s = await sync({ pullBatchSize: PULL_RAMP.from });
        await s.awaitInSync();
        expect(await own.store.count('leads')).toBe(total);
        // RxDB's collection saw every lead: its change stream and a live query.
        expect(changed.size).toBe(total);
        await until('the live query', () => live === total, 10_000);
        // Each page's checkpoint was stored with the page: RxDB wrote none of the leads' (nor of any
        // other collection: each pulled only new documents).
        expect(checkpointWrites.filter((c) => c.startsWith('rx-replication-meta-'))).toEqual([]);
        const metaTable = String(file.db.prepare('SELECT meta FROM master_links WHERE fork = ?').pluck().get(table.table));
        const metaRow = (id: string): Json => {
          const row = file.db.prepare<[string], { doc: string; lwt: number }>(`SELECT doc, lwt FROM "${metaTable}" WHERE id = ?`).get(id);
          if (!row) throw new Error(`no meta row ${id}`);
          return docCodec(file.db).decode(row.doc, { id, lwt: row.lwt });
        };
        expect(metaRow('down|1')['checkpointData']).toEqual({ seq: server.seq });
        expect(referencedStates(file.db, metaTable)).toEqual({ byRef: total, all: total });

        // A lead the server writes now comes through RxDB's replication (the live stream): the rows
        // RxDB writes itself are those the load wrote.
        const viaRxdb = lead(79_999);
        server.write('leads', viaRxdb);
        await until('the live change', async () => (await own.store.get('leads', viaRxdb.id)) !== null, 10_000);
        await s.awaitInSync();
        const loadedId = leadIds[0] as string;
        const [loaded, streamed] = [loadedId, viaRxdb.id].map((id) => leads.currentDocuments([id]).get(id) as Json);
        const shape = (d: Json | undefined): unknown => d && { keys: Object.keys(d), rev: d['_rev'], meta: Object.keys(d['_meta'] as Json), o: (d['_meta'] as Json)['o'] };
        expect(shape(loaded)).toEqual(shape(streamed));
        const metaShape = (m: Json): unknown => ({ ...m, id: undefined, itemId: undefined, _meta: Object.keys(m['_meta'] as Json) });
        expect(metaShape(metaRow(`${loadedId}|0`))).toEqual(metaShape(metaRow(`${viaRxdb.id}|0`)));
        expect(metaRow('down|1')['checkpointData']).toEqual({ seq: server.seq });
        expect(checkpointWrites.filter((c) => c.startsWith('rx-replication-meta-')).length).toBeGreaterThan(0);

        // Nothing loaded was pushed back; a local edit of a loaded lead is pushed on the state loaded.
        expect(server.pushed['leads'] ?? 0).toBe(pushedBefore);
        const before = (await own.store.get('leads', loadedId)) as Lead;
        await own.store.commit([{ collection: 'leads', id: loadedId, before, after: { ...before, jobTitle: 'Edited after the load' } }]);
        await until('the edit on the server', () => server.get('leads', loadedId)?.jobTitle === 'Edited after the load', 10_000);
        await s.awaitInSync();
        expect(server.pushed['leads']).toBe(pushedBefore + 1);
        expect(server.conflicted['leads'] ?? 0).toBe(conflictedBefore);
        expect(s.status().pending).toBe(0);
      } finally {
        proto.bulkWrite = bulkWrite;
        for (const sub of subs) sub.unsubscribe();
      }
    });
  });

  /**
   * Syncs `count` new leads (numbered from `from`) in pages of 250 into a desktop of its own and
   * checks that each pulled page was one write of its own, none asked for while another page was
   * open; `duringPage` runs right after each pulled write is asked for.
   */
  async function pagesOneAWrite(
    { own, leads, sync }: OwnDesktop,
    count: number,
    from: number,
    duringPage?: (file: StorageFile) => void,
  ): Promise<void> {
    const { file } = leads.internalsForTests;
    const have = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).length;
    for (let i = 0; i < count; i++) server.write('leads', lead(from + i));
    const writes: { rows: number; pageOpen: boolean }[] = [];
    watchPulledWrites(
      leads,
      (rows) => writes.push({ rows, pageOpen: file.pageOpen }),
      () => duringPage?.(file),
    );
    const page = 250;
    const s = await sync({ pullBatchSize: page });
    await s.awaitInSync();
    expect(await own.store.count('leads')).toBe(have + count);
    expect(writes.length).toBeGreaterThanOrEqual(Math.ceil((have + count) / page));
    expect(Math.max(...writes.map((w) => w.rows))).toBeLessThanOrEqual(page);
    expect(writes.filter((w) => w.pageOpen)).toEqual([]);
  }

  it('hands RxDB a pull page only once the page before it is stored: one page per write, never begun inside the turns of another', async () => {
    // RxDB pulls ahead without bound and merges the pages it has not begun to store into one write
    // (one long turn of its own work per merged page); the pull handler holds each page back until
    // the storage's page before it has ended (replication.ts).
    await ownDesktop('one-page-a-write', (d) => pagesOneAWrite(d, 1500, 20_000));
  });

  it('hands RxDB a pull page only once the page before it is written, also while other work waits for the file behind that page', async () => {
    // Writes asked for while a page is open (another lane's start, a user's edit) wait in the
    // file's queue, one a turn once the page has ended; the next page asked for waits behind them.
    // With no page open meanwhile, that next page was taken as written and the one after it handed
    // over too: RxDB merged the two into one write.
    await ownDesktop('pages-behind-queued-work', (d) =>
      pagesOneAWrite(d, 1000, 40_000, (file) => {
        // Work that waits for the file while this page is open.
        for (let i = 0; i < 4; i++) void file.whenFree(() => undefined);
      }),
    );
  });

  it("starts the collections' replications one a turn, their meta tables and RxDB's records of them written without an fsync", async () => {
    // Started together (RxDB's autoStart), the replications opened their meta instances in one turn
    // of the event loop (the longest task of an initial sync), each with three fsynced commits.
    let turn = 0;
    let ticking: ReturnType<typeof setImmediate> | null = null;
    const tick = (): void => {
      turn++;
      ticking = setImmediate(tick);
    };
    await ownDesktop('start-one-a-turn', async ({ own, leads, sync }) => {
      try {
        const { file } = leads.internalsForTests;
        // The turn in which each replication's meta instance is asked for.
        const metaOpens: number[] = [];
        const storage = own.rx.storage as unknown as { createStorageInstance: (p: { collectionName: string }) => Promise<unknown> };
        const create = storage.createStorageInstance.bind(storage);
        storage.createStorageInstance = (params) => {
          if (params.collectionName.startsWith('rx-replication-meta-')) metaOpens.push(turn);
          return create(params);
        };
        const durable: number[] = [];
        const write = file.write.bind(file);
        file.write = <T>(isDurable: boolean, fn: () => T): T => {
          if (isDurable) durable.push(turn);
          return write(isDurable, fn);
        };
        tick();
        const s = await sync();
        await s.awaitInSync();
        expect(metaOpens.length).toBe(Object.values(COLLECTIONS).filter((c) => c.replicated).length);
        expect(new Set(metaOpens).size).toBe(metaOpens.length);
        expect(durable).toEqual([]);
        // A start again (after a restart) finds its tables and records as they were.
        await (await sync()).awaitInSync();
        expect(await own.store.count('leads')).toBe([...server.rows.keys()].filter((k) => k.startsWith('leads/')).length);
      } finally {
        if (ticking) clearImmediate(ticking);
      }
    });
  });

  it('pulls a page again whose COMMIT failed (a full disk) after RxDB was told its documents were written: no lead lost, none twice', async () => {
    // A pulled page's documents' write resolves with its transaction open (the meta rows' write
    // joins it and commits it: file.ts openPage). A COMMIT that fails then takes back documents
    // RxDB was told are stored; RxDB's replication went on to the next page and stored a
    // checkpoint past the failed one, so that page's 250 leads were never pulled again (1,250 of
    // 1,500 here).
    await ownDesktop('failed-commit', async ({ own, leads, sync }) => {
      const { file } = leads.internalsForTests;
      const have = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).length;
      for (let i = 0; i < 1500; i++) server.write('leads', lead(30_000 + i));
      // The third pulled page's COMMIT fails as on a full disk (SQLite leaves the transaction open
      // and the storage rolls it back).
      let pages = 0;
      let failAt: number | null = null;
      watchPulledWrites(leads, () => {
        if (++pages === 3) failAt = pages;
      });
      let failed = 0;
      const exec = file.db.exec.bind(file.db);
      file.db.exec = (sql: string) => {
        if (sql === 'COMMIT' && failAt !== null) {
          failAt = null;
          failed++;
          throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
        }
        return exec(sql);
      };
      const s = await sync({ pullBatchSize: 250 });
      // The status bar says why while it waits (the page fails after the sync has started).
      const said: string[] = [];
      s.onStatus((st) => {
        if (st.stalled && st.error) said.push(st.error);
      });
      await s.awaitInSync();
      expect(failed).toBe(1);
      expect(said[0]).toMatch(/^Synced leads could not be saved on this computer: the disk is full/);
      expect(s.status()).toMatchObject({ error: null });
      expect(s.status().stalled).toBeUndefined();
      const ids = new Set([...server.rows.keys()].filter((k) => k.startsWith('leads/')).map((k) => k.slice('leads/'.length)));
      const local = (await own.store.query('leads', { limit: 100_000 })).docs.map((d) => d.id);
      expect(local.length).toBe(have + 1500);
      expect(new Set(local)).toEqual(ids);
    });
  });

  /**
   * A desktop of its own syncing leads from nothing in pages of BULK_ROWS (each a bulk write: the
   * first starts a load), with a short quiet window (restored after): its leads table, what a pulled
   * load leaves out of it (the Store's indexes built after a load, the stored RxDB ones), the builds
   * of those the file announces, and the server's sequence numbers of the leads (a page of the pull
   * asks after `seqs[k * PAGE - 1]`). The shared database is closed meanwhile (one open database per
   * name and process) and opened again after.
   */
  async function pulledLoad(name: string, run: (load: { own: LocalDatabase; table: DocTable; deferred: string[]; leadBuilds: string[]; seqs: number[] }) => Promise<void>): Promise<void> {
    await db.close();
    const own = await openLocalDatabase({ dir: join(dir, name), workspaceId: WS, actor });
    const tuning = { ...LOAD_TUNING };
    LOAD_TUNING.quietMs = 250;
    let unwatch = (): void => undefined;
    try {
      const leads = sqliteInstanceOf(own.rx.collections['leads']?.storageInstance);
      if (!leads) throw new Error('not the SQLite storage');
      const { file, table } = leads.internalsForTests;
      const deferred = [...table.layout.indexes.filter((i) => leftOutOfLoad(i.afterLoad, true)).map((i) => i.name), ...table.columns.filter((c) => c.sql === null).map((c) => `${table.table}_${c.column}`)];
      const leadBuilds: string[] = [];
      unwatch = file.watchBuilds((what) => {
        if (what?.startsWith('leads ')) leadBuilds.push(what);
      });
      const have = [...server.rows.keys()].filter((k) => k.startsWith('leads/')).length;
      for (let i = 0; have + i < 3 * BULK_ROWS + 400; i++) server.write('leads', lead(7000 + i));
      const seqs = [...server.rows.entries()].filter(([k]) => k.startsWith('leads/')).map(([, r]) => r.seq).sort((a, b) => a - b);
      await run({ own, table, deferred, leadBuilds, seqs });
    } finally {
      Object.assign(LOAD_TUNING, tuning);
      unwatch();
      await own.close();
      db = await openLocalDatabase({ dir, workspaceId: WS, actor });
    }
  }

  it('builds the indexes a pulled load left out after the pull, not when the server pauses mid-pull past the quiet window', async () => {
    await pulledLoad('held-load', async ({ own, table, deferred, leadBuilds, seqs }) => {
      const PAUSE = 6 * LOAD_TUNING.quietMs;
      // The second and third pages (after the first and second full ones) come late.
      const slow = new Set([seqs[BULK_ROWS - 1], seqs[2 * BULK_ROWS - 1]]);
      const mid: { page: number; loading: boolean; ready: number; builds: number }[] = [];
      server.onPull = async (c, after) => {
        if (c !== 'leads' || !slow.has(after)) return;
        await new Promise((r) => setTimeout(r, PAUSE));
        mid.push({ page: mid.length + 2, loading: table.isLoading, ready: deferred.filter((n) => table.indexReady(n)).length, builds: leadBuilds.length });
      };
      const s = await start({ db: own, pullBatchSize: BULK_ROWS });
      const seen: SyncStatus[] = [];
      s.onStatus((st) => seen.push(st));
      await s.awaitInSync();
      expect(await own.store.count('leads')).toBe(seqs.length);
      // At the end of each pause the load was on, none of its indexes built, none begun.
      expect(mid).toEqual([
        { page: 2, loading: true, ready: 0, builds: 0 },
        { page: 3, loading: true, ready: 0, builds: 0 },
      ]);
      // Once the pull is over (its last page was not full) they are built, and the status says so
      // after the pull's words.
      await until('the load’s indexes', () => !table.isLoading, 60_000);
      expect(deferred.filter((n) => !table.indexReady(n))).toEqual([]);
      expect(leadBuilds.length).toBeGreaterThanOrEqual(deferred.length);
      const activities = seen.map((st) => st.activity ?? '');
      const lastSyncing = activities.findLastIndex((a) => a.startsWith('Syncing leads'));
      expect(lastSyncing).toBeGreaterThanOrEqual(0);
      expect(activities.findIndex((a) => a.startsWith('Building the index of leads by '))).toBeGreaterThan(lastSyncing);
      await s.stop();
    });
  }, 120_000);

  it('lets the indexes of a pulled load be built at once when the sync stops in the middle of the pull, without waiting out the hold', async () => {
    await pulledLoad('stopped-load', async ({ table, deferred, own, seqs }) => {
      // The second page does not come until the test lets it (a server that hangs).
      let asked = false;
      let answer = (): void => undefined;
      server.onPull = async (c, after) => {
        if (c !== 'leads' || after !== seqs[BULK_ROWS - 1]) return;
        asked = true;
        await new Promise<void>((r) => (answer = r));
      };
      try {
        const s = await start({ db: own, pullBatchSize: BULK_ROWS });
        await until('the first page stored and the second asked for', () => asked && table.isLoading, 10_000);
        expect(deferred.filter((n) => table.indexReady(n))).toEqual([]);
        // Stopped (the app closing, the user signing out) while the page hangs: well within the
        // hold's bound (30 s) the builds have started and ended.
        const stopping = s.stop();
        await until('the load’s indexes', () => !table.isLoading, LOAD_TUNING.holdMs / 2);
        expect(deferred.filter((n) => !table.indexReady(n))).toEqual([]);
        answer();
        await stopping;
      } finally {
        answer();
      }
    });
  }, 120_000);

  it('counts pending changes while offline, then merges concurrent edits of one lead field by field', async () => {
    server.write('leads', lead(2));
    server.write('leads', lead(3));
    const s = await start();
    await s.awaitInSync();
    await s.pause();
    const id = lead(2).id;
    // The pulled lead's assumed-master state is stored as a reference to the lead itself (no copy:
    // storage/sqlite/master-states.ts); the local edit keeps the pulled state as a copy first.
    expect(masterState(id)).toBe('reference');
    const before = (await db.store.get('leads', id)) as Lead;
    await db.store.commit([{ collection: 'leads', id, before, after: { ...before, jobTitle: 'Local title', company: 'Local wins?' } }]);
    expect(masterState(id)).toBe('copy');
    const other = lead(3);
    await db.store.commit([{ collection: 'leads', id: other.id, before: (await db.store.get('leads', other.id)) as Lead, after: { ...other, phone: '+1 555' } }]);
    await until('pending', () => s.status().pending === 2, 10_000);
    expect(s.status().mode).toBe('offline');
    // Meanwhile on the server: another field of the same lead, and the same field.
    server.write('leads', { ...(server.get('leads', id) as Json), location: 'Server city', company: 'Server wins' });

    await s.resume();
    await s.awaitInSync();
    const merged = await db.store.get('leads', id);
    expect(merged?.jobTitle).toBe('Local title');
    expect(merged?.location).toBe('Server city');
    expect(merged?.company).toBe('Server wins');
    await until('server has the merge', () => server.get('leads', id)?.jobTitle === 'Local title', 10_000);
    expect(server.get('leads', id)).toMatchObject({ jobTitle: 'Local title', location: 'Server city', company: 'Server wins' });
    expect(server.get('leads', other.id)?.phone).toBe('+1 555');
    expect(s.status().pending).toBe(0);
  });

  it('puts a refused change back and shows the server reason', async () => {
    server.rule = (c, before, after) => (c === 'leads' && before && after.doNotContact !== before.doNotContact ? { code: 'NOT_AUTHOR', message: 'Only the lead owner may change this.' } : null);
    server.write('leads', lead(4));
    const s = await start();
    await s.awaitInSync();
    const id = lead(4).id;
    const before = (await db.store.get('leads', id)) as Lead;
    await db.store.commit([{ collection: 'leads', id, before, after: { ...before, doNotContact: true } }]);
    await until('revert', async () => (await db.store.get('leads', id))?.doNotContact === false, 10_000);
    await until('reason', () => s.status().refusals.some((r) => r.documentId === id && r.code === 'NOT_AUTHOR'), 10_000);
    const refusal = s.status().refusals.find((r) => r.documentId === id);
    expect(refusal).toMatchObject({ collection: 'leads', code: 'NOT_AUTHOR', message: 'Only the lead owner may change this.' });
    expect(server.get('leads', id)?.doNotContact).toBe(false);
    await s.awaitInSync();
    expect(s.status().pending).toBe(0);
  });

  it('pushes a lead written offline with a new tag after the tag, so the server (which refuses references it does not have) keeps both', async () => {
    // Like the sync server: a lead naming a tag the server does not have is refused.
    server.rule = (c, _before, after) => (c === 'leads' && typeof after.tagId === 'string' && !server.get('tags', after.tagId) ? { code: 'NOT_FOUND', message: 'Tag was not found in this workspace.' } : null);
    // The tags lane is the slow one: without ordering, the lead's push would arrive first.
    server.pushDelayMs = { tags: 400 };
    const s = await start();
    await s.awaitInSync();
    await s.pause();
    const tag = { id: 'a0000000-0000-4000-8000-0000000000f1', workspaceId: WS, name: 'Offline tag', color: '#123456', createdAt: NOW, updatedAt: NOW };
    await db.store.commit([{ collection: 'tags', id: tag.id, before: null, after: tag }]);
    const mine = lead(200, { tagId: tag.id });
    await db.store.commit([{ collection: 'leads', id: mine.id, before: null, after: mine }]);
    await s.resume();
    await until('lead on the server', () => server.get('leads', mine.id)?.tagId === tag.id, 10_000);
    await s.awaitInSync();
    expect(server.get('tags', tag.id)?.name).toBe('Offline tag');
    expect((await db.store.get('leads', mine.id))?.tagId).toBe(tag.id);
    expect(s.status().refusals.filter((r) => r.documentId === mine.id)).toEqual([]);
  });

  it('reconnects a dropped stream with backoff and catches up on what it missed', async () => {
    server.write('leads', lead(5));
    const s = await start();
    await s.awaitInSync();
    server.dropStreams();
    await until('offline', () => s.status().mode === 'offline', 10_000);
    // Written while no stream listens: only the RESYNC after reconnecting brings it.
    server.write('leads', { ...lead(5), company: 'Missed while down' });
    await until('caught up', async () => (await db.store.get('leads', lead(5).id))?.company === 'Missed while down', 10_000);
    await until('online', () => s.status().mode === 'online', 10_000);
  });

  it('checks what the server answers: documents not in the wire format are refused, shown, and never stored', async () => {
    const s = await start();
    await s.awaitInSync();
    server.malformed = true;
    const odd = lead(300, { company: 'Not in the wire format' });
    server.write('leads', odd);
    await until('refused page', () => /does not understand at documents\.0\._deleted/.test(s.status().error ?? ''), 10_000);
    expect(s.status().mode).toBe('offline');
    expect(await db.store.get('leads', odd.id)).toBeNull();
    server.malformed = false;
    await until('pulled once the answer is right', async () => (await db.store.get('leads', odd.id))?.company === 'Not in the wire format', 10_000);
  });

  it('tells an outdated app to update instead of syncing', async () => {
    server.schemaVersionsAhead = 1;
    const s = await start();
    await until('outdated', () => /older than the sync server/.test(s.status().error ?? ''), 10_000);
    expect(s.status().mode).toBe('offline');
    expect(s.status().error).toMatch(/Update the app/);
  });
});

describe('headless desktop process', () => {
  it('opens the key\'s workspace, runs operations locally, replicates them, and keeps acknowledged writes across SIGKILL', async () => {
    let n = 0;
    const ids = { uuid: () => `b0000000-0000-4000-8000-${String(++n).padStart(12, '0')}` };
    const created = workspaceCreation(ids, NOW, { name: 'Headless', owner: { name: 'Hedda', email: 'hedda@example.test' }, subscriptionStatus: 'active' });
    for (const w of created.writes) if (w.after) server.write(w.collection, w.after as unknown as Json);
    server.keyMember = created.ownerId;
    const data = join(dir, 'headless');
    let d = await HeadlessDesktop.start({ server: server.url, key: KEY, dataDir: data });
    try {
      expect(d.workspaceId).toBe(created.workspaceId);
      expect(d.memberId).toBe(created.ownerId);
      await d.awaitSync();
      const acked: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await d.call<{ leadIds: string[] }>('campaigns.leads.create', { leadGroupId: created.leadGroupId, leads: [{ firstName: `Head${i}`, email: `head${i}@example.test` }] });
        acked.push(r.leadIds[0] ?? '');
      }
      await expect(d.call('campaigns.leads.updateLeadStage', { leadId: acked[0], pipelineStageId: created.writes.find((w) => w.collection === 'stages' && (w.after as { category: string }).category === 'LOST')?.id })).rejects.toMatchObject({ code: 'CLOSE_REASON_REQUIRED' });
      await d.call('$pause');
      const offline = await d.call<{ leadIds: string[] }>('campaigns.leads.create', { leadGroupId: created.leadGroupId, leads: [{ firstName: 'Offline', email: 'offline@example.test' }] });
      acked.push(offline.leadIds[0] ?? '');
      expect((await d.call<{ mode: string; pending: number }>('$status')).pending).toBeGreaterThan(0);
      await d.kill('SIGKILL');
      d = await HeadlessDesktop.start({ server: server.url, key: KEY, dataDir: data });
      for (const id of acked) expect((await d.call<Lead | null>('$get', { collection: 'leads', id }))?.id).toBe(id);
      await d.awaitSync();
      // The write made offline before the kill reaches the server after the restart.
      for (const id of acked) expect(server.get('leads', id)?.id).toBe(id);
      expect((await d.call<{ pending: number }>('$status')).pending).toBe(0);
    } finally {
      await d.close();
    }
  }, 120_000);

  it('resumes an initial sync killed with SIGKILL in the middle of a pulled load: no lead lost or twice, a local edit made during it reaches the server', async () => {
    let n = 0;
    const ids = { uuid: () => `c0000000-0000-4000-8000-${String(++n).padStart(12, '0')}` };
    // A server of its own: a desktop opens the first workspace its server lists, and the shared one
    // holds the earlier tests' workspaces.
    const server = new FakeServer();
    await server.listen();
    const created = workspaceCreation(ids, NOW, { name: 'Killed load', owner: { name: 'Kira', email: 'kira@example.test' }, subscriptionStatus: 'active' });
    for (const w of created.writes) if (w.after) server.write(w.collection, w.after as unknown as Json);
    server.keyMember = created.ownerId;
    const TOTAL = 16_000;
    const bulkLead = (i: number): Lead =>
      newLead({ id: `c1000000-0000-4000-8000-${String(i).padStart(12, '0')}`, workspaceId: created.workspaceId, now: NOW }, created.leadGroupId, { firstName: `Bulk${i}`, email: `bulk${i}@example.test` });
    for (let i = 0; i < TOTAL; i++) server.write('leads', bulkLead(i) as unknown as Json);
    const data = join(dir, 'killed-load');
    let d = await HeadlessDesktop.start({ server: server.url, key: KEY, dataDir: data });
    try {
      // Killed once some pulled pages are stored and others are still to come.
      let stored = 0;
      for (let tries = 0; tries < 3000 && (stored === 0 || stored >= TOTAL); tries++) {
        stored = await d.call<number>('$count', { collection: 'leads' });
        if (stored > 0 && stored < TOTAL) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(TOTAL);
      await d.kill('SIGKILL');
      d = await HeadlessDesktop.start({ server: server.url, key: KEY, dataDir: data });
      // An edit of a lead pulled before the kill, while the rest of the load is pulled.
      const edited = (await d.call<{ docs: Lead[] }>('$query', { collection: 'leads', query: { limit: 1 } })).docs[0];
      if (!edited) throw new Error('no lead survived the kill');
      await d.call('campaigns.leads.setLeadFollowUp', { leadId: edited.id, followUpAt: '2027-03-01T09:00:00.000Z' });
      await d.awaitSync(120_000);
      await until('every lead pulled', async () => (await d.call<number>('$count', { collection: 'leads' })) >= TOTAL, 120_000);
      const all = (await d.call<{ docs: Lead[] }>('$query', { collection: 'leads', query: { limit: TOTAL + 10 } })).docs;
      expect(all.length).toBe(TOTAL);
      expect(new Set(all.map((l) => l.id)).size).toBe(TOTAL);
      for (const l of all) if (l.id !== edited.id) expect({ firstName: l.firstName, email: l.email, followUpAt: l.followUpAt }).toEqual({ firstName: server.get('leads', l.id)?.firstName, email: server.get('leads', l.id)?.email, followUpAt: server.get('leads', l.id)?.followUpAt });
      expect((await d.call<Lead>('$get', { collection: 'leads', id: edited.id })).followUpAt).toBe('2027-03-01T09:00:00.000Z');
      await until('the edit on the server', () => server.get('leads', edited.id)?.followUpAt === '2027-03-01T09:00:00.000Z', 30_000);
      expect((await d.call<{ pending: number }>('$status')).pending).toBe(0);
    } finally {
      await d.close();
    }
    // Reopened: the load's index builds go on (the state is in the file) and finish; then every index
    // of the leads table is there and the file is consistent.
    const again = await HeadlessDesktop.start({ server: server.url, key: KEY, dataDir: data });
    try {
      await again.call('$indexed');
    } finally {
      await again.close();
      await server.close();
    }
    const file = new Database(join(data, `crm-${created.workspaceId}.rxdb.sqlite`), { readonly: true });
    try {
      expect(file.pragma('integrity_check', { simple: true })).toBe('ok');
      const leadsTable = file.prepare<[], string>("SELECT tbl FROM instances WHERE name LIKE 'leads-%'").pluck().get() ?? '';
      expect(file.prepare<[string], number>('SELECT loading FROM instances WHERE tbl = ?').pluck().get(leadsTable)).toBe(0);
      expect(Number(file.prepare(`SELECT count(*) FROM "${leadsTable}"`).pluck().get())).toBe(TOTAL);
      // One assumed-master state per lead, nearly all by reference to the lead.
      const meta = file.prepare<[string], string>('SELECT meta FROM master_links WHERE fork = ?').pluck().get(leadsTable) ?? '';
      const states = referencedStates(file, meta);
      expect(states?.all).toBe(TOTAL);
      expect(states?.byRef).toBeGreaterThan(TOTAL - 10);
    } finally {
      file.close();
    }
  }, 300_000);
});
