/**
 * The desktop Store on the SQLite storage survives a killed process: a child commits through the
 * Store (a bulk load, then small commits while the load's indexes are being built) and is killed
 * with SIGKILL; the database opened again holds every acknowledged commit, answers like the memory
 * store holding the same documents, and finishes the interrupted load.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { LOAD_QUIET_MS } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import type { Lead } from '../../shared/model/index.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import type { Query } from '../../shared/store.ts';
import { BULK, crashLead } from './sqlite-store.child.ts';

const WS = 'd0000000-0000-4000-8000-000000000001';
const dir = mkdtempSync(join(tmpdir(), 'sqlite-store-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the Store across SIGKILL', () => {
  it('keeps every acknowledged commit, also while a bulk load builds its indexes, and finishes the load', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'sqlite-store.child.ts'), dir, WS], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const acked = new Map<string, string>();
    let bulkAt = 0;
    for await (const line of createInterface({ input: child.stdout })) {
      if (line === 'bulk') bulkAt = performance.now();
      const [kind, id, ...title] = line.split(' ');
      if (kind === 'ack' && id) acked.set(id, title.join(' '));
      // Killed once the load's quiet time has passed: the indexes are being built between commits.
      if (bulkAt > 0 && performance.now() - bulkAt > LOAD_QUIET_MS + 300 && acked.size > 20) {
        child.kill('SIGKILL');
        break;
      }
    }
    await new Promise((r) => child.once('exit', r));
    expect(stderr).toBe('');
    expect(acked.size).toBeGreaterThan(20);

    const db = await openLocalDatabase({ dir, workspaceId: WS, actor: { workspaceId: WS, memberId: 'd0000000-0000-4000-8000-0000000000aa', role: 'owner' } });
    try {
      for (const [id, jobTitle] of acked) expect((await db.store.get('leads', id))?.jobTitle, id).toBe(jobTitle);
      const stored = (await db.store.query('leads')).docs;
      expect(stored.length).toBeGreaterThanOrEqual(BULK);
      // Nothing but what the child wrote: the first leads and the acknowledged ones.
      for (const l of stored) expect(l).toEqual({ ...crashLead(WS, Number(l.firstName.slice('Crash'.length))), jobTitle: l.jobTitle });
      const ref = new MemoryDatabase().forWorkspace(WS);
      await ref.commit(stored.map((after) => ({ collection: 'leads', id: after.id, before: null, after })));
      const queries: Query[] = [
        { orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 30 },
        { orderBy: [{ field: 'rankingScore', dir: 'asc' }], limit: 30 },
        { where: { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'okafor' }, orderBy: [{ field: 'fullName', dir: 'asc', collate: 'text' }], limit: 30 },
      ];
      for (const q of queries) expect(await db.store.query('leads', q), JSON.stringify(q)).toEqual(await ref.query('leads', q));
      const table = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance)?.internalsForTests.table;
      await table?.finishLoading();
      expect(table?.isLoading).toBe(false);
      for (const q of queries) expect(await db.store.query('leads', q), JSON.stringify(q)).toEqual(await ref.query('leads', q));
    } finally {
      await db.close();
    }
  }, 60_000);
});
