/**
 * The property of test/support/identity-property.ts on every store: the memory store, PGlite and
 * PostgreSQL (DATABASE_URL; replication writes through the server's push handler), and the
 * desktop's SQLite Store (replication writes as pulled documents: an upsert through the RxDB
 * collection, the storage's own write path, which computes the keys like any other write).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
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

  it('on the desktop SQLite Store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'identity-prop-'));
    let local: Awaited<ReturnType<typeof openLocalDatabase>> | null = null;
    try {
      await checkIdentityProperty(
        async (ws, fn) => {
          local ??= await openLocalDatabase({ dir, workspaceId: ws, actor: { workspaceId: ws, memberId: 'x', role: 'owner' } });
          return fn(local.store);
        },
        async (_ws, _actor, lead: Lead) => {
          if (!local) throw new Error('not open');
          await local.rx.collections.leads?.upsert(lead as unknown as Record<string, unknown>);
        },
        { numRuns: 25 },
      );
    } finally {
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
