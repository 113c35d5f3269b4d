/**
 * The property of test/support/identity-property.ts on every store: the memory store, PGlite and
 * PostgreSQL (DATABASE_URL; replication writes through the server's push handler), and the
 * desktop's SQLite Store (replication writes as pulled documents: an upsert through the RxDB
 * collection, the storage's own write path, which computes the keys like any other write).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { BULK_ROWS, LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { newLead } from '../../shared/model/factories.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import type { Lead } from '../../shared/model/index.ts';
import { parsePush, push } from '../../sync-server/replication-push.ts';
import { FakeClock } from '../support/deterministic.ts';
import { checkIdentityProperty } from '../support/identity-property.ts';
import { BACKENDS, freshPgDatabase } from './support/db.ts';

describe('one person, one lead, any spelling (property)', () => {
  it('on the memory store', async () => {
    const db = new MemoryDatabase();
    await checkIdentityProperty((ws, fn) => fn(db.forWorkspace(ws)), async (ws, _actor, lead: Lead) => {
      const store = db.forWorkspace(ws);
      const before = await store.get('leads', lead.id);
      await store.commit([{ collection: 'leads', id: lead.id, before, after: lead }]);
    }, { numRuns: 60 });
  }, 120_000);

  it.each([false, true])('on the desktop SQLite Store (during a bulk load: %s)', async (loading) => {
    const dir = mkdtempSync(join(tmpdir(), 'identity-prop-'));
    let local: Awaited<ReturnType<typeof openLocalDatabase>> | null = null;
    const tuning = { ...LOAD_TUNING };
    try {
      await checkIdentityProperty(
        async (ws, fn) => {
          if (!local) {
            local = await openLocalDatabase({ dir, workspaceId: ws, actor: { workspaceId: ws, memberId: 'x', role: 'owner' } });
            if (loading) {
              // An import-sized write first: the whole property then runs in the bulk load it
              // starts, whose identity-key indexes are out (look-ups from the probe maps).
              LOAD_TUNING.quietMs = 600_000;
              const filler = Array.from({ length: BULK_ROWS }, (_, i) => newLead({ id: `f1110000-0000-4000-8000-${String(i).padStart(12, '0')}`, workspaceId: ws, now: '2026-12-01T00:00:00.000Z' }, 'f1110000-0000-4000-8000-00000000ffff', { firstName: 'Filler', lastName: `${i}`, email: `filler${i}@prop.test` }));
              await local.store.commit(filler.map((after) => ({ collection: 'leads', id: after.id, before: null, after })));
              const table = sqliteInstanceOf(local.rx.collections.leads?.storageInstance)?.internalsForTests.table;
              expect(table?.isLoading).toBe(true);
              expect(table?.layout.indexes.filter((i) => i.afterLoad === 'probed').every((i) => !table.indexReady(i.name))).toBe(true);
            }
          }
          return fn(local.store);
        },
        async (_ws, _actor, lead: Lead) => {
          if (!local) throw new Error('not open');
          await local.rx.collections.leads?.upsert(lead as unknown as Record<string, unknown>);
        },
        { numRuns: 25 },
      );
    } finally {
      Object.assign(LOAD_TUNING, tuning);
      await (local as { close(): Promise<void> } | null)?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe.each(BACKENDS)('one person, one lead, any spelling (property) on %s', (backend) => {
  const pg = freshPgDatabase(backend);
  it('through every entry and a replication push', async () => {
    const clock = new FakeClock('2027-01-01T00:00:00.000Z');
    await checkIdentityProperty((ws, fn) => pg.db.withStore(ws, (s) => fn(s)), async (ws, actor, lead: Lead) => {
      const current = await pg.db.forWorkspace(ws).get('leads', lead.id);
      const rows = parsePush('leads', [{ ...(current ? { assumedMasterState: { ...current, _deleted: false } } : {}), newDocumentState: { ...lead, _deleted: false } }], ws);
      const conflicts = await push(pg.db, clock, actor, 'leads', rows);
      if (conflicts.length > 0) throw new Error(`the push was refused: ${JSON.stringify(conflicts)}`);
    }, { numRuns: backend === 'pglite' ? 15 : 25 });
  }, 300_000);
});
