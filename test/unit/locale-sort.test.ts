/** Lead search by name and company follows the reader's locale on the memory store and on the
 * desktop's RxDB store (PostgreSQL/PGlite: test/integration/locale-sort.test.ts). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { foldForSort, SORT_FOLD_FROM, SORT_FOLD_TO } from '../../shared/text-sort.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { creationsOf, expectLocaleSorting, localeLeads } from '../support/locale-sort-case.ts';
import { sequentialIds } from '../support/deterministic.ts';

const creation = workspaceCreation(sequentialIds(5), '2026-11-01T00:00:00.000Z', { name: 'Acme', owner: { name: 'Olive Owner', email: 'olive@acme.test' }, subscriptionStatus: 'active' });
const WS = creation.workspaceId;
const owner = { workspaceId: WS, memberId: creation.ownerId, role: 'owner' as const };

describe('locale sorting of names and companies', () => {
  it('folds case and accents with one table (the same one SQL translate() uses)', () => {
    expect(['Adam', 'eric', 'Ève', 'Émile', 'Zed'].map(foldForSort)).toEqual(['adam', 'eric', 'eve', 'emile', 'zed']);
    expect(foldForSort('Łódź Straße ÆØ')).toBe('lodz strase ao');
    expect(foldForSort('Ωμέγα 東京')).toBe('Ωμέγα 東京');
    expect([...SORT_FOLD_FROM].length).toBe([...SORT_FOLD_TO].length);
    expect(SORT_FOLD_FROM).not.toMatch(/['\\]/);
  });

  it('on the memory store: Adam, adam, Ängela, ..., Émile, eric, Ève, ..., Zed, zoë', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(WS);
    await store.commit(creation.writes);
    const leads = localeLeads(WS, creation.leadGroupId);
    await store.commit(creationsOf(leads));
    await expectLocaleSorting(store, owner, leads);
  });

  it('on the desktop RxDB store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'locale-sort-'));
    const ldb = await openLocalDatabase({ dir, workspaceId: WS, actor: owner });
    try {
      await ldb.store.commit(creation.writes);
      const leads = localeLeads(WS, creation.leadGroupId);
      await ldb.store.commit(creationsOf(leads));
      await expectLocaleSorting(ldb.store, owner, leads);
    } finally {
      await ldb.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
