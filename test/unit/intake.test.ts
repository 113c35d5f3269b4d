/** One intake for every way a person enters (shared/intake): one identity rule through every entry
 * on the memory store (PostgreSQL/PGlite: test/integration/intake-identity.test.ts), and lookups
 * that read the leads the rows name, not the workspace. */
import { describe, expect, it } from 'vitest';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { CollectionName, Docs } from '../../shared/model/index.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { AnyWrite, Cond, DuplicatePage, DuplicatePageOptions, Page, Query, Store } from '../../shared/store.ts';
import type { IdentityKind } from '../../shared/intake/identity.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { expectOnePersonThroughEveryEntry } from '../support/intake-identity-case.ts';
import { FakeClock, seededRandom, sequentialIds } from '../support/deterministic.ts';
import { testSecrets } from '../support/harness.ts';

/** A Store that counts the documents it hands out. */
class CountingStore implements Store {
  read = 0;
  constructor(private readonly inner: Store) {}
  get workspaceId(): string {
    return this.inner.workspaceId;
  }
  async get<C extends CollectionName>(c: C, id: string): Promise<Docs[C] | null> {
    const d = await this.inner.get(c, id);
    if (d) this.read++;
    return d;
  }
  async getMany<C extends CollectionName>(c: C, ids: readonly string[]): Promise<Docs[C][]> {
    const ds = await this.inner.getMany(c, ids);
    this.read += ds.length;
    return ds;
  }
  async query<C extends CollectionName>(c: C, q?: Query): Promise<Page<Docs[C]>> {
    const page = await this.inner.query(c, q);
    this.read += page.docs.length;
    return page;
  }
  count<C extends CollectionName>(c: C, where?: Cond): Promise<number> {
    return this.inner.count(c, where);
  }
  duplicateGroups(kind: IdentityKind, opts: DuplicatePageOptions): Promise<DuplicatePage> {
    return this.inner.duplicateGroups(kind, opts);
  }
  commit(writes: readonly AnyWrite[]): Promise<void> {
    return this.inner.commit(writes);
  }
}

describe('one intake', () => {
  it('the spellings of a profile URL are one person through create, import, update and post import (memory store)', async () => {
    const db = new MemoryDatabase();
    await expectOnePersonThroughEveryEntry((workspaceId, fn) => fn(db.forWorkspace(workspaceId)));
  });

  it('campaigns.leads.create at 3,000 leads reads the leads its rows name, not the workspace', async () => {
    const ids = sequentialIds(80);
    const clock = new FakeClock();
    const creation = workspaceCreation(ids, clock.now().toISOString(), { name: 'Acme', owner: { name: 'Olive Owner', email: 'olive@acme.test' }, subscriptionStatus: 'active' });
    const db = new MemoryDatabase();
    const store = db.forWorkspace(creation.workspaceId);
    const now = clock.now().toISOString();
    const leads = Array.from({ length: 3000 }, (_, i) =>
      newLead({ id: ids.uuid(), workspaceId: creation.workspaceId, now }, creation.leadGroupId, {
        firstName: `P${i}`, email: `p${i}@x.test`, socialUrl: i % 2 ? `https://www.linkedin.com/in/p-${i}` : '',
      }),
    );
    await store.commit([...creation.writes, ...leads.map((l): AnyWrite => ({ collection: 'leads', id: l.id, before: null, after: l }))]);

    const counting = new CountingStore(store);
    const rows = [
      ...Array.from({ length: 40 }, (_, i) => ({ firstName: `New${i}`, email: `new${i}@y.test` })),
      { socialUrl: 'http://de.linkedin.com/in/p-7/' },
      { email: 'P8@X.test' },
      { firstName: 'Again', socialUrl: 'https://www.linkedin.com/in/p-9?trk=x', email: 'p9@x.test' },
    ];
    const env = { actor: { workspaceId: creation.workspaceId, memberId: creation.ownerId, role: 'owner' as const }, store: counting, clock, ids, random: seededRandom(1), secrets: testSecrets };
    const out = await execute('campaigns.leads.create', { leadGroupId: creation.leadGroupId, leads: rows }, env);
    expect([out.created, out.duplicates]).toEqual([40, 3]);
    expect(out.leadIds.slice(40)).toEqual([leads[7]?.id, leads[8]?.id, leads[9]?.id]);
    // The group, and the three leads the rows are: bounded by the rows, whatever the workspace holds.
    expect(counting.read).toBeLessThanOrEqual(rows.length);
    expect(await store.count('leads')).toBe(3040);
  });
});
