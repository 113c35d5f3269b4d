/** The spellings of one person's profile URL are one lead through every entry on PostgreSQL and
 * PGlite too, found by the leads_profile_key index (memory store: test/unit/intake.test.ts). */
import { describe, it } from 'vitest';
import { expectOnePersonThroughEveryEntry } from '../support/intake-identity-case.ts';
import { BACKENDS, freshPgDatabase } from './support/db.ts';

describe.each(BACKENDS)('one person through every entry on %s', (backend) => {
  const database = freshPgDatabase(backend);

  it('create, import, update and post import find the lead whatever the spelling of its URL', async () => {
    await expectOnePersonThroughEveryEntry((workspaceId, fn) => database.db.withStore(workspaceId, (store) => fn(store)));
  });
});
