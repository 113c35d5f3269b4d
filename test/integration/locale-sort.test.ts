/** Lead search by name and company follows the reader's locale on PostgreSQL and PGlite too (PGlite
 * has no ICU collations: the stores share one fold table, shared/text-sort.ts). */
import { describe, it } from 'vitest';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { creationsOf, expectLocaleSorting, localeLeads } from '../support/locale-sort-case.ts';
import { sequentialIds } from '../support/deterministic.ts';
import { BACKENDS, freshPgDatabase } from './support/db.ts';

const creation = workspaceCreation(sequentialIds(5), '2026-11-01T00:00:00.000Z', { name: 'Acme', owner: { name: 'Olive Owner', email: 'olive@acme.test' }, subscriptionStatus: 'active' });
const WS = creation.workspaceId;
const owner = { workspaceId: WS, memberId: creation.ownerId, role: 'owner' as const };

describe.each(BACKENDS)('locale sorting on %s', (backend) => {
  const database = freshPgDatabase(backend);

  it('sorts names and companies case- and accent-insensitively, page after page', async () => {
    const leads = localeLeads(WS, creation.leadGroupId);
    await database.db.withStore(WS, async (store) => {
      await store.commit(creation.writes);
      await store.commit(creationsOf(leads));
    });
    await database.db.withStore(WS, (store) => expectLocaleSorting(store, owner, leads));
  });
});
