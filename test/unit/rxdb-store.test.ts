/**
 * The desktop's Store (electron/backend/sqlite-store.ts: the SQLite storage's Store columns and
 * indexes) must answer exactly like the reference MemoryDatabase: same documents, same queries
 * (every Cond op, ordering, cursors, counts), same commit semantics, and the same operation results
 * through execute(). One local database is open at a time (RxDB's open edition allows 13 open
 * collections per process; a local database has 12).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { STORE_QUERY_TUNING } from '../../electron/backend/storage/sqlite/store-query.ts';
import { STORE_SQL_TUNING } from '../../electron/backend/storage/sqlite/store-sql.ts';
import type { Actor } from '../../shared/context.ts';
import { DomainError } from '../../shared/errors.ts';
import { emailKey, IDENTITY_KINDS, KEY_FIELDS, nameCompanyKey } from '../../shared/intake/identity.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newActivity, newLead } from '../../shared/model/factories.ts';
import { REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import type { Activity, CollectionName, Docs, Lead } from '../../shared/model/index.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { AnyWrite, Cond, DuplicatePage, Query, Sort, Store } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { FakeClock, seededRandom, sequentialIds, testSecrets } from '../support/harness.ts';

const NOW = '2026-11-16T10:00:00.000Z';
const ids = sequentialIds(3);
const creation = workspaceCreation(ids, NOW, { name: 'Acme', owner: { name: 'Olive Owner', email: 'olive@acme.test' }, subscriptionStatus: 'active' });
const WS = creation.workspaceId;
const FOREIGN = 'f0000000-0000-4000-8000-000000000001';
const owner: Actor = { workspaceId: WS, memberId: creation.ownerId, role: 'owner' };

const GROUPS = [creation.leadGroupId, ids.uuid(), ids.uuid()];
const TAGS = [ids.uuid(), ids.uuid(), ids.uuid()];
const STAGES = creation.writes.filter((w) => w.collection === 'stages').map((w) => w.id);
const FIRST = ['Ann', 'anna', 'Bob', 'Ängela', 'Chen', 'Dmitri', 'Eve', 'Zoë', 'Hannah', ''];
const LAST = ['Smith', 'Annand', 'Li', 'Okafor', 'Müller', 'Nguyen', ''];
const COMPANIES = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Rare Co'];

const random = seededRandom(11);
const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;

function makeLead(workspaceId: string, n: number): Lead {
  const firstName = pick(FIRST);
  const lastName = pick(LAST);
  const group = pick(GROUPS);
  const groups = GROUPS.filter((g) => g === group || random() < 0.4);
  const company = random() < 0.02 ? 'Rare Co' : pick(COMPANIES.slice(0, 5));
  return newLead({ id: ids.uuid(), workspaceId, now: `2026-11-${String(1 + (n % 15)).padStart(2, '0')}T0${n % 10}:00:00.000Z` }, group, {
    firstName,
    lastName,
    email: random() < 0.7 ? `${firstName || 'x'}.${n}@${company.toLowerCase().replace(/ /g, '')}.test` : '',
    company,
    tagId: random() < 0.3 ? null : pick(TAGS),
    // Not the lost stage (index 6): a lead there needs a close reason.
    pipelineStageId: random() < 0.4 ? null : pick(STAGES.slice(0, 6)),
    rankingScore: Math.floor(random() * 20),
    leadFitScore: Math.round(random() * 1000) / 10,
    followUpAt: random() < 0.5 ? null : `2026-12-${String(1 + Math.floor(random() * 28)).padStart(2, '0')}T09:00:00.000Z`,
    doNotContact: random() < 0.1,
    groupIds: groups,
    variables: random() < 0.5 ? { c1: pick(['x', 'y', 'z']) } : {},
  });
}

const leadsA = Array.from({ length: 2400 }, (_, i) => makeLead(WS, i));
const leadsForeign = Array.from({ length: 60 }, (_, i) => makeLead(FOREIGN, i));
const activities: Activity[] = Array.from({ length: 500 }, (_, i) => {
  const lead = pick(leadsA);
  return newActivity({ id: ids.uuid(), workspaceId: WS, now: NOW }, lead.id, creation.ownerId, i % 3 === 0 ? 'TASK' : 'NOTE', `note ${i}`, {
    metadata: i % 3 === 0 ? { taskStatus: pick(['open', 'completed'] as const), assigneeId: creation.ownerId } : {},
    dueAt: i % 3 === 0 ? `2026-12-0${1 + (i % 9)}T09:00:00.000Z` : null,
  });
});

const creates = <C extends CollectionName>(collection: C, docs: readonly Docs[C][]): AnyWrite[] =>
  docs.map((d) => ({ collection, id: (d as { id: string }).id, before: null, after: d }) as AnyWrite);

const rare = leadsA.find((l) => l.company === 'Rare Co');
const someIds = [leadsA[5]?.id, leadsA[17]?.id, leadsForeign[3]?.id, 'missing-id', leadsA[5]?.id].filter((x): x is string => !!x);

const WHERES: (Cond | undefined)[] = [
  undefined,
  { op: 'eq', field: 'tagId', value: null },
  { op: 'eq', field: 'tagId', value: TAGS[0] as string },
  { op: 'neq', field: 'tagId', value: null },
  { op: 'eq', field: 'doNotContact', value: true },
  { op: 'eq', field: 'company', value: 'Rare Co' },
  { op: 'eq', field: 'id', value: rare?.id ?? 'none' },
  { op: 'in', field: 'id', values: someIds },
  { op: 'in', field: 'pipelineStageId', values: [STAGES[1] as string, null] },
  { op: 'in', field: 'company', values: ['Rare Co', 'Hooli'] },
  { op: 'lt', field: 'rankingScore', value: 5 },
  { op: 'gte', field: 'rankingScore', value: 15 },
  { op: 'lte', field: 'fullName', value: 'C' },
  { op: 'gt', field: 'followUpAt', value: '2026-12-15T00:00:00.000Z' },
  // Ranges on the first sort key (followUpAt ascending below) are scanned as one stretch of it.
  { op: 'lte', field: 'followUpAt', value: '2026-12-10T00:00:00.000Z' },
  {
    op: 'and',
    conds: [
      { op: 'gte', field: 'followUpAt', value: '2026-12-05T00:00:00.000Z' },
      { op: 'lt', field: 'followUpAt', value: '2026-12-20T00:00:00.000Z' },
      { op: 'eq', field: 'doNotContact', value: false },
    ],
  },
  { op: 'contains', fields: ['firstName', 'lastName', 'email', 'company'], value: 'ann' },
  { op: 'contains', fields: ['firstName', 'lastName'], value: 'ÄNG' },
  { op: 'contains', fields: ['fullName'], value: '' },
  { op: 'contains', fields: ['rankingScore', 'company'], value: 'rare' },
  { op: 'and', conds: [{ op: 'contains', fields: ['firstName', 'lastName'], value: 'zoë' }, { op: 'neq', field: 'doNotContact', value: true }] },
  { op: 'contains', fields: ['email'], value: '.17' },
  { op: 'has', field: 'groupIds', value: GROUPS[1] as string },
  { op: 'eq', field: 'variables.c1', value: 'y' },
  { op: 'not', cond: { op: 'eq', field: 'tagId', value: null } },
  { op: 'or', conds: [{ op: 'eq', field: 'company', value: 'Rare Co' }, { op: 'contains', fields: ['email'], value: 'bob' }] },
  {
    op: 'and',
    conds: [
      { op: 'eq', field: 'leadGroupId', value: GROUPS[1] as string },
      { op: 'or', conds: [{ op: 'has', field: 'groupIds', value: GROUPS[2] as string }, { op: 'gte', field: 'leadFitScore', value: 50 }] },
      { op: 'not', cond: { op: 'eq', field: 'doNotContact', value: true } },
    ],
  },
  { op: 'and', conds: [] },
  { op: 'and', conds: [{ op: 'eq', field: 'company', value: 'Rare Co' }, { op: 'eq', field: 'tagId', value: null }] },
  // Look-ups of a person by identity key (answered from the probe maps while the seed's bulk load
  // has their indexes out, then through the indexes).
  { op: 'eq', field: KEY_FIELDS.email, value: emailKey(leadsA.find((l) => l.email !== '')?.email ?? '') },
  { op: 'in', field: KEY_FIELDS.email, values: [...leadsA.slice(0, 90).map((l) => emailKey(l.email)), 'nobody@x.test', ''] },
  { op: 'in', field: KEY_FIELDS.nameCompany, values: leadsA.slice(0, 5).map((l) => nameCompanyKey(l.fullName, l.company)) },
  { op: 'and', conds: [{ op: 'eq', field: KEY_FIELDS.nameCompany, value: nameCompanyKey((leadsA[1] as Lead).fullName, (leadsA[1] as Lead).company) }, { op: 'neq', field: 'tagId', value: null }] },
  { op: 'eq', field: KEY_FIELDS.profile, value: 'linkedin.com/in/nobody' },
];

const ORDERS: (readonly Sort[] | undefined)[] = [
  undefined,
  [{ field: 'createdAt', dir: 'desc' }],
  [{ field: 'rankingScore', dir: 'asc' }, { field: 'fullName', dir: 'desc' }],
  [{ field: 'followUpAt', dir: 'asc' }],
  [{ field: 'variables.c1', dir: 'desc' }],
];

let dir: string;
let ldb: LocalDatabase;
let rx: Store;
let mem: MemoryDatabase;
let ref: Store;

async function openRx(): Promise<void> {
  ldb = await openLocalDatabase({ dir, workspaceId: WS, actor: owner });
  rx = ldb.store;
}

const outcome = async <T,>(p: Promise<T>): Promise<{ ok: T } | { code: string }> => {
  try {
    return { ok: await p };
  } catch (e) {
    if (e instanceof DomainError) return { code: e.code };
    throw e;
  }
};

/** Every page of a query, walked with cursors, from both stores side by side. */
async function expectSamePages(c: CollectionName, q: Query, maxPages = 8): Promise<void> {
  let cursor: string | null = null;
  for (let page = 0; page < maxPages; page++) {
    const query: Query = { ...q, cursor };
    const [a, b] = await Promise.all([rx.query(c, query), ref.query(c, query)]);
    expect(a, JSON.stringify(query)).toEqual(b);
    cursor = b.nextCursor;
    if (!cursor) return;
  }
}

async function expectSameAnswers(): Promise<void> {
  for (const where of WHERES) {
    expect(await rx.count('leads', where), JSON.stringify(where)).toBe(await ref.count('leads', where));
    await expectSamePages('leads', { where });
    for (const orderBy of ORDERS) {
      await expectSamePages('leads', { where, orderBy, limit: 7 }, 2);
      await expectSamePages('leads', { where, orderBy, limit: 800 });
    }
  }
  for (const kind of IDENTITY_KINDS) {
    for (let cursor: string | null = null, page = 0; page === 0 || cursor; page++) {
      const [a, b]: DuplicatePage[] = await Promise.all([rx.duplicateGroups(kind, { limit: 5, cursor }), ref.duplicateGroups(kind, { limit: 5, cursor })]);
      expect(a, `${kind} duplicates, page ${page}`).toEqual(b);
      cursor = b?.nextCursor ?? null;
    }
  }
  await expectSamePages('activities', { where: { op: 'eq', field: 'leadId', value: activities[0]?.leadId ?? '' }, orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 3 });
  await expectSamePages('activities', { where: { op: 'eq', field: 'metadata.taskStatus', value: 'open' }, orderBy: [{ field: 'dueAt', dir: 'asc' }], limit: 50 });
}

async function everything(store: Store): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const c of REPLICATED_COLLECTIONS) out[c] = (await store.query(c)).docs;
  return out;
}

/** The same writes on both stores. */
async function commitBoth(writes: AnyWrite[]): Promise<void> {
  await ref.commit(writes);
  await rx.commit(writes);
}

/** Every threshold of the Store's query strategies at its smallest, so each path is taken. */
async function withSmallestThresholds(fn: () => Promise<void>): Promise<void> {
  const saved = { query: { ...STORE_QUERY_TUNING }, sql: { ...STORE_SQL_TUNING } };
  Object.assign(STORE_QUERY_TUNING, { chunk: 2, longGroup: 2, minCap: 2, maxCap: 12, unorderedCap: 30, docBatch: 3, countedInList: 2 });
  Object.assign(STORE_SQL_TUNING, { inlineList: 2 });
  try {
    await fn();
  } finally {
    Object.assign(STORE_QUERY_TUNING, saved.query);
    Object.assign(STORE_SQL_TUNING, saved.sql);
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rxdb-store-'));
  await openRx();
  mem = new MemoryDatabase();
  ref = mem.forWorkspace(WS);
  const seed: AnyWrite[] = [
    ...creation.writes,
    ...creates('tags', TAGS.map((id, i) => ({ id, workspaceId: WS, createdAt: NOW, updatedAt: NOW, name: `Tag ${i}`, color: '#112233' }))),
    ...creates('leads', leadsA),
    ...creates('activities', activities),
  ];
  await commitBoth(seed);
  // Documents of another workspace arrive like replicated ones, straight into RxDB.
  await ldb.rx.collections.leads?.bulkInsert(leadsForeign.map((l) => ({ ...l })));
  await mem.forWorkspace(FOREIGN).commit(creates('leads', leadsForeign));
}, 120_000);

afterAll(async () => {
  await ldb?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('RxDB store conformance with MemoryDatabase', () => {
  it('answers every query, page and count the same', async () => {
    expect(await rx.count('leads')).toBe(2400);
    await expectSameAnswers();
  }, 120_000);

  it('pages of limit 0 are empty and end the walk', async () => {
    await expectSamePages('leads', { limit: 0 });
    expect(await rx.query('leads', { where: { op: 'eq', field: 'company', value: 'Rare Co' }, limit: 0 })).toEqual({ docs: [], nextCursor: null });
  });

  it('refuses a cursor that does not fit the query, like the memory store', async () => {
    const { nextCursor } = await rx.query('leads', { orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 5 });
    expect(nextCursor).not.toBeNull();
    const q: Query = { orderBy: [{ field: 'createdAt', dir: 'desc' }, { field: 'company', dir: 'asc' }], limit: 5, cursor: nextCursor };
    expect(await outcome(rx.query('leads', q))).toEqual({ code: 'INVALID_INPUT' });
    expect(await outcome(ref.query('leads', q))).toEqual({ code: 'INVALID_INPUT' });
    expect(await outcome(rx.query('leads', { limit: 5, cursor: 'garbage' }))).toEqual({ code: 'INVALID_INPUT' });
  });

  it('get and getMany see only live documents of the workspace, without RxDB fields, as copies', async () => {
    const foreign = leadsForeign[0]?.id ?? '';
    const lead = leadsA[0] as Lead;
    expect(await rx.get('leads', foreign)).toBeNull();
    expect(await rx.get('leads', 'missing')).toBeNull();
    const got = await rx.get('leads', lead.id);
    expect(got).toEqual(await ref.get('leads', lead.id));
    expect(Object.keys(got ?? {}).filter((k) => k.startsWith('_'))).toEqual([]);
    expect(await rx.getMany('leads', someIds)).toEqual(await ref.getMany('leads', someIds));
    // Changing what a read returned changes nothing stored.
    if (got) {
      got.firstName = 'Mutated';
      got.groupIds.push('x');
    }
    expect(await rx.get('leads', lead.id)).toEqual(lead);
    const page = await rx.query('leads', { where: { op: 'eq', field: 'id', value: lead.id } });
    (page.docs[0] as Lead).company = 'Mutated';
    expect((await rx.get('leads', lead.id))?.company).toBe(lead.company);
  });

  it('stays identical after small edits (indexes and sort orders patched) and a large batch (rebuilt)', async () => {
    const edit = (l: Lead, i: number): Lead => ({
      ...l,
      // Moves leads out of the rare company as well as into it, so stale index entries would show.
      company: l.company === 'Rare Co' ? 'Acme' : i % 4 === 0 ? 'Rare Co' : l.company,
      rankingScore: (l.rankingScore + i) % 20,
      tagId: i % 5 === 0 ? null : l.tagId,
      followUpAt: i % 3 === 0 ? null : '2026-12-20T09:00:00.000Z',
      firstName: i % 7 === 0 ? 'Annika' : l.firstName,
      updatedAt: '2026-11-17T00:00:00.000Z',
    });
    const rareOnes = leadsA.filter((l) => l.company === 'Rare Co');
    // Build the company index and a sort order before editing, so the edits must patch them.
    await expectSamePages('leads', { where: { op: 'eq', field: 'company', value: 'Rare Co' }, orderBy: [{ field: 'createdAt', dir: 'desc' }] });
    await expectSamePages('leads', { orderBy: [{ field: 'rankingScore', dir: 'asc' }, { field: 'fullName', dir: 'desc' }], limit: 400 });
    for (let round = 0; round < 5; round++) {
      const writes: AnyWrite[] = [];
      for (let i = 0; i < 12; i++) {
        const pool = i % 3 === 0 ? rareOnes : leadsA;
        const before = (await ref.get('leads', (pool[(round * 97 + i * 31) % pool.length] as Lead).id)) as Lead | null;
        if (!before) continue;
        writes.push({ collection: 'leads', id: before.id, before, after: i % 6 === 5 ? null : edit(before, i + round) });
      }
      writes.push(...creates('leads', [makeLead(WS, 5000 + round)]));
      await commitBoth(writes);
      await expectSamePages('leads', { orderBy: [{ field: 'rankingScore', dir: 'asc' }, { field: 'fullName', dir: 'desc' }], limit: 400 });
      await expectSamePages('leads', { where: { op: 'eq', field: 'company', value: 'Rare Co' }, orderBy: [{ field: 'createdAt', dir: 'desc' }] });
    }
    await expectSameAnswers();

    const { docs } = await ref.query('leads', { limit: 900 });
    await commitBoth(docs.map((before, i) => ({ collection: 'leads', id: before.id, before, after: edit(before, i) })));
    await expectSameAnswers();
  }, 180_000);

  it('refuses a stale before with CONFLICT and writes nothing, across collections', async () => {
    const lead = (await ref.get('leads', (leadsA[100] as Lead).id)) as Lead;
    const act = (await ref.get('activities', (activities[0] as Activity).id)) as Activity;
    const before = await everything(rx);
    const writes: AnyWrite[] = [
      { collection: 'activities', id: act.id, before: act, after: { ...act, content: 'changed' } },
      ...creates('tags', [{ id: 'tag-new', workspaceId: WS, createdAt: NOW, updatedAt: NOW, name: 'New', color: '#000000' }]),
      { collection: 'leads', id: lead.id, before: { ...lead, firstName: 'Someone else' }, after: { ...lead, company: 'X' } },
    ];
    expect(await outcome(rx.commit(writes))).toEqual({ code: 'CONFLICT' });
    expect(await outcome(ref.commit(writes))).toEqual({ code: 'CONFLICT' });
    expect(await everything(rx)).toEqual(before);
    // A creation over an existing document is stale too.
    expect(await outcome(rx.commit(creates('leads', [lead])))).toEqual({ code: 'CONFLICT' });
    // Documents of another workspace can be neither overwritten nor created.
    const foreign = leadsForeign[1] as Lead;
    expect(await outcome(rx.commit([{ collection: 'leads', id: foreign.id, before: null, after: { ...foreign, workspaceId: WS } }]))).toEqual({ code: 'CONFLICT' });
    expect(await outcome(rx.commit(creates('leads', [{ ...makeLead(FOREIGN, 1) }])))).toEqual({ code: 'CONFLICT' });
    expect(await everything(rx)).toEqual(before);
    expect(await everything(rx)).toEqual(await everything(ref));
  });

  it('soft-deletes: gone from reads, kept as a tombstone, and can be created again', async () => {
    const lead = (await ref.get('leads', (leadsA[200] as Lead).id)) as Lead;
    await commitBoth([{ collection: 'leads', id: lead.id, before: lead, after: null }]);
    expect(await rx.get('leads', lead.id)).toBeNull();
    expect(await rx.count('leads', { op: 'eq', field: 'id', value: lead.id })).toBe(0);
    expect((await rx.query('leads', { where: { op: 'in', field: 'id', values: [lead.id] } })).docs).toEqual([]);
    const raw = await ldb.rx.collections.leads?.storageInstance.findDocumentsById([lead.id], true);
    expect(raw?.[0]?._deleted).toBe(true);
    expect(raw?.[0]?.firstName).toBe(lead.firstName);
    // Deleting what is not there is a no-op on both.
    await commitBoth([{ collection: 'leads', id: lead.id, before: null, after: null }]);
    await commitBoth(creates('leads', [{ ...lead, firstName: 'Back' }]));
    expect((await rx.get('leads', lead.id))?.firstName).toBe('Back');
    expect(await everything(rx)).toEqual(await everything(ref));
  });

  it('keeps apiKeys on the server: writes are refused, reads find nothing', async () => {
    const key = { id: 'k1', workspaceId: WS, createdAt: NOW, updatedAt: NOW, memberId: creation.ownerId, name: 'k', prefix: 'live_', hash: 'h', lastUsedAt: null, revokedAt: null };
    expect(await outcome(rx.commit(creates('apiKeys', [key])))).toEqual({ code: 'SERVER_ONLY' });
    expect(await rx.get('apiKeys', 'k1')).toBeNull();
    expect((await rx.query('apiKeys')).docs).toEqual([]);
  });

  it('tells listeners which collections changed, for local commits and replicated writes', async () => {
    const seen: CollectionName[][] = [];
    const off = ldb.onChange((c) => seen.push([...c].sort()));
    const lead = (await rx.get('leads', (leadsA[300] as Lead).id)) as Lead;
    const note = newActivity({ id: ids.uuid(), workspaceId: WS, now: NOW }, lead.id, creation.ownerId, 'NOTE', 'hi');
    await commitBoth([{ collection: 'leads', id: lead.id, before: lead, after: { ...lead, company: 'Listened' } }, ...creates('activities', [note])]);
    await Promise.resolve();
    expect(seen).toEqual([['activities', 'leads']]);
    await ldb.rx.collections.tags?.insert({ id: ids.uuid(), workspaceId: WS, createdAt: NOW, updatedAt: NOW, name: 'Pulled', color: '#445566' });
    await Promise.resolve();
    expect(seen[1]).toEqual(['tags']);
    // A replicated write is visible to the very next read.
    expect((await rx.query('tags', { where: { op: 'eq', field: 'name', value: 'Pulled' } })).docs).toHaveLength(1);
    off();
    const tags = (await rx.query('tags', { where: { op: 'eq', field: 'name', value: 'Pulled' } })).docs;
    await ref.commit(creates('tags', tags));
  });

  it('answers the same after close and reopen', async () => {
    const before = await everything(rx);
    await ldb.close();
    await openRx();
    expect(await everything(rx)).toEqual(before);
    await expectSameAnswers();
  }, 120_000);

  it('answers the same with every strategy threshold at its smallest (walks, caps, chunks, list sizes)', async () => {
    await withSmallestThresholds(async () => {
      await ldb.close();
      await openRx();
      await expectSameAnswers();
      for (let round = 0; round < 3; round++) {
        const { docs } = await ref.query('leads', { orderBy: [{ field: 'updatedAt', dir: 'asc' }], limit: round === 2 ? 40 : 2 });
        await commitBoth(docs.map((before, i) => ({ collection: 'leads', id: before.id, before, after: { ...before, company: i % 2 ? 'Rare Co' : 'Acme', firstName: `Annie${round}`, updatedAt: `2026-11-2${round}T00:00:00.000Z` } })));
        await expectSamePages('leads', { where: { op: 'contains', fields: ['firstName', 'company'], value: `annie${round}` }, orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 3 });
      }
      await expectSameAnswers();
    });
  }, 180_000);

  it('runs real operations through execute() exactly like the memory store', async () => {
    const envFor = (store: Store) => ({
      actor: owner,
      store,
      clock: new FakeClock('2026-11-18T10:00:00.000Z'),
      ids: sequentialIds(8),
      random: seededRandom(5),
      secrets: testSecrets,
      channels: null,
    });
    const envs = [envFor(rx), envFor(ref)] as const;
    const target = leadsA[400] as Lead;
    const lost = STAGES[6] as string;
    const steps: [string, unknown][] = [
      ['tags.create', { name: 'Hot' }],
      ['tags.getAll', {}],
      ['pipelineStages.getAll', {}],
      ['members.list', {}],
      ['campaigns.leads.create', { leadGroupId: creation.leadGroupId, leads: [{ firstName: 'Nina', email: 'nina@new.test' }, { email: target.email || 'dup@x.test', firstName: 'Dup' }, { email: 'not-an-email' }] }],
      ['campaigns.leads.search', { query: 'ann', limit: 20 }],
      ['campaigns.leads.search', { tagId: 'uncategorized', limit: 10, sortBy: 'rankingScore', sortOrder: 'asc' }],
      ['campaigns.leads.search', { pipelineStage: 'NEW', limit: 5 }],
      ['campaigns.leads.updateLeadStage', { leadId: target.id, pipelineStageId: lost }],
      ['campaigns.leads.updateLeadStage', { leadId: target.id, pipelineStageId: lost, closeReason: 'NOT_INTERESTED' }],
      ['leadActivities.create', { leadId: target.id, content: 'Called, not now.' }],
      ['leadActivities.list', { leadId: target.id }],
      ['campaigns.leads.delete', { leadIds: [target.id], dryRun: true }],
      ['campaigns.leads.get', { leadId: target.id }],
    ];
    const results: unknown[][] = [[], []];
    for (const [name, input] of steps) {
      for (const i of [0, 1] as const) {
        const env = envs[i];
        const stateBefore = await everything(env.store);
        const r = await outcome(execute(name, input, env));
        if ('code' in r) expect(await everything(env.store), `${name} was refused but changed the store`).toEqual(stateBefore);
        results[i]?.push({ name, r });
      }
    }
    expect(results[0]).toEqual(results[1]);
    const codes = (results[0] as { name: string; r: { code?: string } }[]).filter((x) => x.r.code).map((x) => [x.name, x.r.code]);
    // The lost-stage move without a reason is refused on both.
    expect(codes).toEqual([['campaigns.leads.updateLeadStage', 'CLOSE_REASON_REQUIRED']]);
    expect(await everything(rx)).toEqual(await everything(ref));
    // Server-only operations are refused locally (the desktop forwards them), storing nothing.
    expect(await outcome(execute('apiKeys.create', { name: 'script' }, envs[0]))).toEqual({ code: 'SERVER_ONLY' });
  }, 60_000);
});
