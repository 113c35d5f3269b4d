/**
 * The text index of a bulk load built afterwards (electron/backend/storage/sqlite/fts.ts): a load's
 * texts go to a queue, and the worker thread moves them into the trigram index slice by slice.
 * Lead search must answer exactly as the memory store holding the same leads at every moment: with
 * every text still queued, between slices (with renames, deletions and new leads landing on rows in
 * either place), once built, and after the process was killed with SIGKILL in the middle of the
 * build and the file opened again (which finishes it).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import type { DocTable } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { TEXT_TUNING } from '../../electron/backend/storage/sqlite/fts.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import type { Lead } from '../../shared/model/index.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import type { AnyWrite, Cond, Query, Store } from '../../shared/store.ts';
import { TEXT_LEADS, textLead } from './sqlite-text-build.child.ts';

const dir = mkdtempSync(join(tmpdir(), 'sqlite-text-deferred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tuning = { quietMs: LOAD_TUNING.quietMs, slice: TEXT_TUNING.slice };
afterEach(() => {
  LOAD_TUNING.quietMs = tuning.quietMs;
  TEXT_TUNING.slice = tuning.slice;
});

const contains = (value: string, fields: readonly string[] = LEAD_QUERY_FIELDS): Cond => ({ op: 'contains', fields, value });
/** Texts found in many leads, in few, in one, in none; one and two characters (no trigram); a
 * field subset; with other conditions. */
const TEXTS = ['okafor', 'SMI', 'garcía', 'acme rock', 'p1234@', 'text3.test', '-26', '+49 30 44', 'renamed', 'zz', 'ë', 'e', 'nobody-here'];
const QUERIES: Query[] = [
  ...TEXTS.flatMap((t): Query[] => [
    { where: contains(t), orderBy: [{ field: 'fullName', dir: 'asc', collate: 'text' }], limit: 30 },
    { where: contains(t), orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 50 },
  ]),
  { where: contains('okafor'), orderBy: [{ field: 'rankingScore', dir: 'desc' }] },
  { where: contains('ann', ['firstName', 'company']), orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 40 },
  { where: { op: 'and', conds: [contains('hooli'), { op: 'eq', field: 'rankingScore', value: 3 }] }, orderBy: [{ field: 'fullName', dir: 'desc', collate: 'text' }], limit: 20 },
  { where: { op: 'or', conds: [contains('schmidt'), contains('p77')] }, orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 25 },
  { where: { op: 'not', cond: contains('smith') }, orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 25 },
];

function leadsTable(db: LocalDatabase): DocTable {
  const t = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance)?.internalsForTests.table;
  if (!t?.text) throw new Error('not on the SQLite storage, or leads without text search');
  return t;
}

/** Rows in the trigram index and in its queue now. */
function textRows(table: DocTable): { indexed: number; queued: number } {
  const text = table.text;
  if (!text) throw new Error('no text index');
  const count = (t: string): number => Number(table.file.db.prepare(`SELECT count(*) FROM "${t}"`).pluck().get());
  return { indexed: count(text.table), queued: count(text.queue) };
}

/** Every query, count and the storage's own text search answer as the memory store's. */
async function sameAnswers(db: LocalDatabase, ref: Store, when: string): Promise<void> {
  for (const q of QUERIES) {
    expect(await db.store.query('leads', q), `${when}: ${JSON.stringify(q)}`).toEqual(await ref.query('leads', q));
    expect(await db.store.count('leads', q.where), `${when}: count ${JSON.stringify(q.where)}`).toBe(await ref.count('leads', q.where));
  }
  const instance = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance);
  const fields = leadsTable(db).text?.fields ?? [];
  for (const t of TEXTS) {
    const want = (await ref.query('leads', { where: contains(t, fields), orderBy: [{ field: 'id', dir: 'asc' }] })).docs.map((l) => l.id);
    expect(instance?.searchText(t, 100_000).sort(), `${when}: searchText ${t}`).toEqual(want);
  }
}

const WS = 'e0000000-0000-4000-8000-000000000001';
const actor = { workspaceId: WS, memberId: 'e0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };
const creates = (leads: readonly Lead[]): AnyWrite[] => leads.map((after) => ({ collection: 'leads', id: after.id, before: null, after }));

describe('the text index of a bulk load, built after it', () => {
  it('answers searches like the memory store with every text queued, between slices of the build (writes landing meanwhile), and once built', async () => {
    // The build runs only when the test lets it (finishLoading), in slices of 1,000.
    LOAD_TUNING.quietMs = 10 * 60_000;
    TEXT_TUNING.slice = 1000;
    const N = 6000;
    const db = await openLocalDatabase({ dir: join(dir, 'inproc'), workspaceId: WS, actor });
    const ref = new MemoryDatabase().forWorkspace(WS);
    try {
      const leads = Array.from({ length: N }, (_, i) => textLead(WS, i));
      // An import-like load in two commits; the text of both goes to the queue.
      for (let i = 0; i < N; i += N / 2) {
        await db.store.commit(creates(leads.slice(i, i + N / 2)));
        await ref.commit(creates(leads.slice(i, i + N / 2)));
      }
      const table = leadsTable(db);
      expect(table.text?.deferred).toBe(true);
      expect(textRows(table)).toEqual({ indexed: 0, queued: N });
      await sameAnswers(db, ref, 'all queued');

      // Between slices: answers compared after each; after the second, writes on rows in the index
      // (the first rows), in the queue (the last ones), deletions and new leads.
      const file = table.file;
      const inWorker = file.inWorker.bind(file);
      let slices = 0;
      const mixes: { indexed: number; queued: number }[] = [];
      file.inWorker = async (sql, what) => {
        await inWorker(sql, what);
        if (!what?.startsWith('text index of ')) return;
        slices++;
        mixes.push(textRows(table));
        if (slices === 2) {
          const writes: AnyWrite[] = [
            ...leads.slice(0, 15).map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: l, after: { ...l, lastName: `Renamed${l.id.slice(-4)}`, fullName: `${l.firstName} Renamed${l.id.slice(-4)}` } })),
            ...leads.slice(N - 15).map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: l, after: { ...l, company: 'Renamed Rockets' } })),
            ...leads.slice(20, 30).map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: l, after: null })),
            ...leads.slice(N - 30, N - 20).map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: l, after: null })),
            ...creates(Array.from({ length: 10 }, (_, i) => textLead(WS, N + i))),
          ];
          await db.store.commit(writes);
          await ref.commit(writes);
        }
        await sameAnswers(db, ref, `after text slice ${slices}`);
      };
      try {
        await table.finishLoading();
      } finally {
        file.inWorker = inWorker;
      }
      // It was built in slices, with rows in both places in between.
      expect(slices).toBeGreaterThanOrEqual(6);
      expect(mixes.some((m) => m.indexed > 0 && m.queued > 0)).toBe(true);
      expect(table.text?.deferred).toBe(false);
      expect(table.isLoading).toBe(false);
      expect(textRows(table)).toEqual({ indexed: N - 20 + 10, queued: 0 });
      await sameAnswers(db, ref, 'built');
      // Writes after the build go to the trigram index itself.
      const l = leads[100] as Lead;
      const rename: AnyWrite[] = [{ collection: 'leads', id: l.id, before: l, after: { ...l, lastName: 'Renamedlater', fullName: `${l.firstName} Renamedlater` } }];
      await db.store.commit(rename);
      await ref.commit(rename);
      expect(textRows(table).queued).toBe(0);
      await sameAnswers(db, ref, 'written after the build');
    } finally {
      await db.close();
    }
  }, 180_000);

  it('after SIGKILL in the middle of the build, answers like the memory store and finishes the build', async () => {
    const folder = join(dir, 'killed');
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sqlite-text-build.child.ts'), folder, WS], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const acked = new Map<string, string>();
    let slices = 0;
    for await (const line of createInterface({ input: child.stdout })) {
      const [kind, id, lastName] = line.split(' ');
      if (kind === 'ack' && id && lastName) acked.set(id, lastName);
      if (kind === 'slice') slices++;
      // Killed while the build runs: a few slices of ~30 moved.
      if (slices >= 4) {
        child.kill('SIGKILL');
        break;
      }
    }
    await new Promise((r) => child.once('exit', r));
    expect(stderr).toBe('');

    // Opened again, the build waits (the test checks the half-built state first).
    LOAD_TUNING.quietMs = 10 * 60_000;
    const db = await openLocalDatabase({ dir: folder, workspaceId: WS, actor });
    try {
      const table = leadsTable(db);
      const mid = textRows(table);
      expect(mid.indexed, 'some texts were moved before the kill').toBeGreaterThan(0);
      expect(mid.queued, 'some texts were still queued at the kill').toBeGreaterThan(0);
      expect(table.text?.deferred).toBe(true);
      const stored = (await db.store.query('leads')).docs;
      expect(stored.length).toBe(TEXT_LEADS);
      for (const [id, lastName] of acked) expect(stored.find((l) => l.id === id)?.lastName, id).toBe(lastName);
      expect(mid.indexed + mid.queued).toBe(TEXT_LEADS);
      const ref = new MemoryDatabase().forWorkspace(WS);
      await ref.commit(creates(stored));
      await sameAnswers(db, ref, 'reopened mid-build');
      await table.finishLoading();
      expect(table.isLoading).toBe(false);
      expect(textRows(table)).toEqual({ indexed: TEXT_LEADS, queued: 0 });
      await sameAnswers(db, ref, 'build finished after the reopen');
    } finally {
      await db.close();
    }
  }, 180_000);
});
