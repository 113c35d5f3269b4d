/**
 * A desktop upgraded to this version opens the local database the previous release wrote: every
 * collection whose schema changed carries a higher version, and its documents are migrated instead
 * of the file being refused (RxDB's DB6) with the user's offline work in it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRxDatabase } from 'rxdb';
import type { RxCollectionCreator, RxJsonSchema } from 'rxdb';
import { afterEach, describe, expect, it } from 'vitest';
import { localDatabaseName, openLocalDatabase } from '../../electron/backend/local-db.ts';
import { getRxStoragePersistedMemory } from '../support/persisted-memory.ts';
import type { Actor } from '../../shared/context.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import { newLead } from '../../shared/model/factories.ts';

type Json = Record<string, unknown>;

/** The replicated collections' schemas as the first release shipped them. */
const RELEASE_1 = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'schemas', 'release-1.json'), 'utf8')) as Record<string, RxJsonSchema<Json>>;

const WS = 'b0000000-0000-4000-8000-00000000000a';
const ME = 'b0000000-0000-4000-8000-0000000000b1';
const GROUP = 'b0000000-0000-4000-8000-0000000000c1';
const actor: Actor = { workspaceId: WS, memberId: ME, role: 'owner' };
const NOW = '2026-11-01T10:00:00.000Z';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('local database upgrade', () => {
  it('gives every changed schema a higher version than the release before', () => {
    for (const c of REPLICATED_COLLECTIONS) {
      const old = RELEASE_1[c];
      expect(old, `${c} is in the release-1 fixture`).toBeDefined();
      const now = COLLECTIONS[c].schema as unknown as Json;
      const { version: oldVersion, ...oldRest } = old as unknown as Json;
      const { version: newVersion, ...newRest } = now;
      if (JSON.stringify(oldRest) !== JSON.stringify(newRest)) {
        expect(Number(newVersion), `${c} changed since release 1: raise its schema version`).toBeGreaterThan(Number(oldVersion));
      }
    }
  });

  it("opens a file the previous release wrote, with its documents, and keeps working", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-upgrade-'));
    dirs.push(dir);
    // The previous release's desktop: same file, same storage, the old schemas.
    const old = await createRxDatabase({ name: localDatabaseName(WS), storage: getRxStoragePersistedMemory({ directory: dir }), multiInstance: false });
    const creators: Record<string, RxCollectionCreator> = {};
    for (const c of REPLICATED_COLLECTIONS) creators[c] = { schema: RELEASE_1[c] as RxJsonSchema<Json> };
    await old.addCollections(creators);
    const lead = newLead({ id: 'b0000000-0000-4000-8000-000000000101', workspaceId: WS, now: NOW }, GROUP, { firstName: 'Upgraded', email: 'upgraded@example.test' });
    await old.collections.leads?.insert(lead as unknown as Json);
    await old.close();

    const db = await openLocalDatabase({ dir, workspaceId: WS, actor });
    try {
      const got = await db.store.get('leads', lead.id);
      expect(got).toMatchObject({ id: lead.id, firstName: 'Upgraded', email: 'upgraded@example.test' });
      // Writes under the new schemas work on the upgraded file.
      const changed = { ...(got as typeof lead), jobTitle: 'After the upgrade', updatedAt: '2026-11-02T10:00:00.000Z' };
      await db.store.commit([{ collection: 'leads', id: lead.id, before: got, after: changed }]);
      expect((await db.store.get('leads', lead.id))?.jobTitle).toBe('After the upgrade');
    } finally {
      await db.close();
    }
    // And it opens again as a current file.
    const again = await openLocalDatabase({ dir, workspaceId: WS, actor });
    try {
      expect((await again.store.get('leads', lead.id))?.jobTitle).toBe('After the upgrade');
    } finally {
      await again.close();
    }
  }, 60_000);
});
