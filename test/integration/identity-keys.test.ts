/**
 * Identity keys are data (issue 26): every store (memory, PGlite, PostgreSQL, the desktop's SQLite
 * Store) keeps a lead's profile, email and name-and-company keys beside it, answers the key fields
 * of a condition (`key:profile`...) by one probe, and lists duplicates (StoreReader.duplicateGroups)
 * the same way: groups of two or more live leads of the workspace sharing a key, in key order,
 * keyset-paged, leaving out deleted leads, merged ones (`mergedIntoId`) and other workspaces.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { isDomainError } from '../../shared/errors.ts';
import { KEY_FIELDS, emailKey, nameCompanyKey, profileKey } from '../../shared/intake/identity.ts';
import type { IdentityKind } from '../../shared/intake/identity.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import type { AnyWrite, DuplicateGroup, Store } from '../../shared/store.ts';
import { BACKENDS, freshPgDatabase } from './support/db.ts';

const WS = 'd0000000-0000-4000-8000-000000000001';
const OTHER_WS = 'd0000000-0000-4000-8000-000000000002';
const GROUP = 'd0000000-0000-4000-8000-0000000000b1';
const actor = { workspaceId: WS, memberId: 'd0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };

let n = 0;
const id = (): string => `d0000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
const T0 = Date.parse('2026-01-01T00:00:00Z');

function lead(fields: Partial<Lead>, ws = WS): Lead {
  const at = new Date(T0 + n * 1000).toISOString();
  return newLead({ id: id(), workspaceId: ws, now: at }, GROUP, fields);
}

/** A lead a merge left as a tombstone (the merge adds `mergedIntoId` to the schema; optional). */
const merged = (l: Lead, into: string): Lead => Object.assign({}, l, { mergedIntoId: into });

const creates = (leads: readonly Lead[]): AnyWrite[] => leads.map((after) => ({ collection: 'leads', id: after.id, before: null, after }));

/** The data set: each person in several spellings, some deleted, merged or in another workspace. */
function dataset() {
  const jane = [
    lead({ firstName: 'Jane', lastName: 'Doe', company: 'Acme', socialUrl: 'https://de.linkedin.com/in/jane-doe?trk=x', email: 'Jane.Doe@Acme.com' }),
    lead({ firstName: 'jane', lastName: 'doe', company: 'ACME Inc.', socialUrl: 'http://linkedin.com/in/Jane-Doe/', email: ' jane.doe@acme.com ' }),
    lead({ firstName: 'Jane', lastName: 'Doe', company: 'Acme', socialUrl: 'https://www.linkedin.com/in/jane%2Ddoe', email: 'JANE.DOE@ACME.COM' }),
  ];
  const eve = [lead({ email: 'Eve.Mail@Example.COM' }), lead({ email: 'eve.mail@example.com' })];
  // Deleted later: a group of one live lead is no group.
  const ana = [lead({ socialUrl: 'https://www.linkedin.com/in/ana' }), lead({ socialUrl: 'https://br.linkedin.com/in/ANA/' })];
  // One of them merged into the other: no group either.
  const max = [lead({ socialUrl: 'https://www.linkedin.com/in/max' }), lead({ socialUrl: 'linkedin.com/in/max' })];
  const maxMerged = merged(max[1] as Lead, (max[0] as Lead).id);
  // The same person in another workspace: not this workspace's duplicate.
  const foreign = lead({ socialUrl: 'https://www.linkedin.com/in/zed', email: 'zed@x.test' }, OTHER_WS);
  const zed = lead({ socialUrl: 'https://www.linkedin.com/in/zed', email: 'zed@x.test' });
  const loners = [lead({ firstName: 'Solo', lastName: 'One', company: 'Acme', email: 'solo@x.test' }), lead({})];
  // Many groups, for paging: p00..p11, two leads each.
  const pairs = Array.from({ length: 12 }, (_, i) => [
    lead({ socialUrl: `https://www.linkedin.com/in/p${String(i).padStart(2, '0')}`, email: `p${i}@pairs.test` }),
    lead({ socialUrl: `https://fr.linkedin.com/in/P${String(i).padStart(2, '0')}/`, email: `P${i}@Pairs.test` }),
  ]).flat();
  return { jane, eve, ana, max, maxMerged, foreign, zed, loners, pairs };
}

type Subject = { name: string; setup: () => Promise<{ store: Store; other: Store; done: () => Promise<void> }> };

const subjects: Subject[] = [
  {
    name: 'memory',
    setup: async () => {
      const db = new MemoryDatabase();
      return { store: db.forWorkspace(WS), other: db.forWorkspace(OTHER_WS), done: async () => undefined };
    },
  },
  {
    name: 'desktop SQLite Store',
    setup: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'identity-keys-'));
      const local: LocalDatabase = await openLocalDatabase({ dir, workspaceId: WS, actor });
      // The desktop holds one workspace: another workspace's lead arrives as a document of its file.
      const other: Store = { ...local.store, workspaceId: OTHER_WS, commit: async (writes) => {
        await local.rx.collections.leads?.bulkInsert(writes.flatMap((w) => (w.after ? [w.after] : [])));
      } };
      return {
        store: local.store,
        other,
        done: async () => {
          await local.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

async function allGroups(store: Store, kind: IdentityKind, limit: number): Promise<DuplicateGroup[]> {
  const out: DuplicateGroup[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const page = await store.duplicateGroups(kind, { limit, cursor });
    expect(page.groups.length).toBeLessThanOrEqual(limit);
    out.push(...page.groups);
    cursor = page.nextCursor;
    if (!cursor) return out;
  }
  throw new Error('duplicateGroups never reached its last page');
}

const sortIds = (ids: string[]): string[] => [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

function checks(setup: Subject['setup']): void {
  let store: Store;
  let other: Store;
  let done: () => Promise<void>;
  const d = dataset();

  beforeAll(async () => {
    ({ store, other, done } = await setup());
    await store.commit(creates([...d.jane, ...d.eve, ...d.ana, ...d.max, d.zed, ...d.loners, ...d.pairs]));
    await other.commit(creates([d.foreign]));
    // Ana's second lead is deleted and Max's second one merged into his first.
    await store.commit([{ collection: 'leads', id: (d.ana[1] as Lead).id, before: d.ana[1] as Lead, after: null }]);
    await store.commit([{ collection: 'leads', id: (d.max[1] as Lead).id, before: d.max[1] as Lead, after: d.maxMerged }]);
  });
  afterAll(async () => done?.());

  it('a key field finds every spelling a lead was stored with, in one condition', async () => {
    const byProfile = await store.query('leads', { where: { op: 'eq', field: KEY_FIELDS.profile, value: profileKey('HTTPS://WWW.LINKEDIN.COM/in/JANE-DOE/?x=1') } });
    expect(sortIds(byProfile.docs.map((l) => l.id))).toEqual(sortIds(d.jane.map((l) => l.id)));
    const byEmail = await store.query('leads', { where: { op: 'in', field: KEY_FIELDS.email, values: [emailKey(' EVE.mail@example.com'), 'nobody@x.test'] } });
    expect(sortIds(byEmail.docs.map((l) => l.id))).toEqual(sortIds(d.eve.map((l) => l.id)));
    const byName = await store.count('leads', { op: 'eq', field: KEY_FIELDS.nameCompany, value: nameCompanyKey('JANE DOE', 'acme, inc') });
    expect(byName).toBe(3);
    // A key of nobody, and an empty key, find nobody.
    expect(await store.count('leads', { op: 'eq', field: KEY_FIELDS.email, value: 'no.one@x.test' })).toBe(0);
    expect(await store.count('leads', { op: 'eq', field: KEY_FIELDS.email, value: '' })).toBe(0);
  });

  it('an edit moves a lead from one key to another', async () => {
    const [first] = d.loners;
    if (!first) throw new Error('no loner');
    const after = { ...first, email: 'Solo.Two@X.test' };
    await store.commit([{ collection: 'leads', id: first.id, before: first, after }]);
    expect(await store.count('leads', { op: 'eq', field: KEY_FIELDS.email, value: 'solo@x.test' })).toBe(0);
    expect((await store.query('leads', { where: { op: 'eq', field: KEY_FIELDS.email, value: 'solo.two@x.test' } })).docs.map((l) => l.id)).toEqual([first.id]);
    await store.commit([{ collection: 'leads', id: first.id, before: after, after: first }]);
  });

  it('lists the groups of live leads sharing a key, in key order, the same on every page size', async () => {
    const profile = await allGroups(store, 'profile', 1000);
    const keys = profile.map((g) => g.key);
    expect(keys).toEqual([...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(profile).toEqual([
      { key: 'linkedin.com/in/jane-doe', leadIds: sortIds(d.jane.map((l) => l.id)) },
      ...Array.from({ length: 12 }, (_, i) => ({ key: `linkedin.com/in/p${String(i).padStart(2, '0')}`, leadIds: sortIds([(d.pairs[2 * i] as Lead).id, (d.pairs[2 * i + 1] as Lead).id]) })),
    ]);
    for (const limit of [1, 2, 5, 13]) expect(await allGroups(store, 'profile', limit)).toEqual(profile);
    const email = await allGroups(store, 'email', 3);
    // JavaScript's string order: 'p10@' before 'p1@' ('0' < '@').
    expect(email.map((g) => g.key)).toEqual(['eve.mail@example.com', 'jane.doe@acme.com', ...['p0', 'p10', 'p11', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8', 'p9'].map((p) => `${p}@pairs.test`)]);
    const names = await allGroups(store, 'nameCompany', 10);
    expect(names).toEqual([{ key: nameCompanyKey('Jane Doe', 'Acme'), leadIds: sortIds(d.jane.map((l) => l.id)) }]);
  });

  it('leaves out deleted and merged leads, and other workspaces', async () => {
    const all = [...(await allGroups(store, 'profile', 50)), ...(await allGroups(store, 'email', 50))];
    const ids = new Set(all.flatMap((g) => g.leadIds));
    for (const l of [...d.ana, ...d.max, d.zed, d.foreign]) expect(ids.has(l.id)).toBe(false);
  });

  it('refuses a cursor it did not give and a page size below one', async () => {
    const refused = async (p: Promise<unknown>) => {
      const e = await p.then(() => null, (x: unknown) => x);
      expect(isDomainError(e) && e.code === 'INVALID_INPUT').toBe(true);
    };
    await refused(store.duplicateGroups('profile', { limit: 5, cursor: 'not-a-cursor' }));
    await refused(store.duplicateGroups('email', { limit: 0 }));
  });
}

describe.each(subjects)('identity keys on the $name store', ({ setup }) => checks(setup));

describe.each(BACKENDS)('identity keys on %s', (backend) => {
  const pg = freshPgDatabase(backend);
  checks(async () => ({ store: pg.db.forWorkspace(WS), other: pg.db.forWorkspace(OTHER_WS), done: async () => undefined }));
});
