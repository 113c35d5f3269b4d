/**
 * A write of new documents costs the disk a few write calls a page of SQLite, not several a row.
 * The row write used to be an upsert with RETURNING, which SQLite runs inside a statement journal:
 * the first change of each page the statement touched was copied to a sub-journal first, a temporary
 * file once one statement passed 64 KiB, so every lead written made about ten pwrite() calls (23% of
 * the samples of a pulled load's profile). New rows are now a plain INSERT (doc-table.ts `insert`).
 * Counted with the kernel's count of the process's write calls (`syscw` in /proc/self/io, Linux).
 */
import { existsSync, readFileSync } from 'node:fs';
import { now } from 'rxdb';
import type { RxDocumentData, RxJsonSchema, RxStorage } from 'rxdb';
import { describe, expect, it } from 'vitest';
import { getRxStorageSqlite, sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { STORE_LAYOUT, TEXT_SEARCH } from '../../electron/backend/store-layout.ts';
import { newLead } from '../../shared/model/factories.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import type { Lead } from '../../shared/model/index.ts';
import { openInstance, tempDir } from './sqlite-storage.fixtures.ts';

const PROC_IO = '/proc/self/io';

/** Write calls this process made so far (every thread's). */
const writeCalls = (): number => Number(/^syscw:\s*(\d+)$/m.exec(readFileSync(PROC_IO, 'utf8'))?.[1] ?? NaN);

function leads(from: number, count: number): RxDocumentData<Lead>[] {
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    const lead = newLead({ id: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`, workspaceId: 'w-journal', now: new Date(start + i * 60_000).toISOString() }, 'g-journal', {
      firstName: `Ann${i}`,
      lastName: `Okafor-${i % 97}`,
      email: `ann.okafor-${i}@example${i % 13}.com`,
      company: `Company ${i % 500}`,
      jobTitle: 'Head of Sales',
      phone: `+1 555 ${String(i).padStart(7, '0')}`,
      socialUrl: `https://www.linkedin.com/in/ann-okafor-${i}`,
    });
    return { ...lead, _deleted: false, _rev: `1-${i.toString(16)}`, _meta: { lwt: now() }, _attachments: {} };
  });
}

describe.runIf(existsSync(PROC_IO))('SQLite storage: the disk writes of a write', () => {
  it('writes 2,000 new leads with fewer write calls than leads (no statement journal per row)', async () => {
    const storage = getRxStorageSqlite({ directory: tempDir('sqlite-journal-'), textSearch: TEXT_SEARCH, storeLayout: STORE_LAYOUT }) as RxStorage<unknown, object>;
    const instance = await openInstance<Lead>(storage, COLLECTIONS.leads.schema as unknown as RxJsonSchema<RxDocumentData<Lead>>, { collectionName: 'leads' });
    const inst = sqliteInstanceOf<Lead>(instance);
    if (!inst) throw new Error('not the SQLite storage');
    const { table } = inst.internalsForTests;
    // A first page, so the table is not empty (no bulk load) and its pages are in the cache.
    expect((await instance.bulkWrite(leads(0, 500).map((document) => ({ document })), 'test')).error).toEqual([]);
    const page = leads(500, 2000);
    const before = writeCalls();
    // The write is synchronous once the file is free; the checkpoint it asks for comes later.
    expect((await instance.bulkWrite(page.map((document) => ({ document })), 'test')).error).toEqual([]);
    const calls = writeCalls() - before;
    expect(table.get([page[1999]?.id ?? '']).size).toBe(1);
    expect(calls).toBeGreaterThan(0);
    expect(calls, `${calls} write calls for ${page.length} leads`).toBeLessThan(page.length);
  });
});
