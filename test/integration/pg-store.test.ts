/** Store conformance: the Postgres/PGlite store answers exactly like the reference MemoryDatabase
 * (shared/query.ts semantics) for every condition, ordering, cursor page, count and commit. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { DomainError } from '../../shared/errors.ts';
import { newActivity, newLead } from '../../shared/model/factories.ts';
import type { Activity, CollectionName, Lead } from '../../shared/model/index.ts';
import { runQuery } from '../../shared/query.ts';
import { LEAD_QUERY_FIELDS } from '../../shared/ops/lead-search.ts';
import { Tx } from '../../shared/tx.ts';
import type { AnyWrite, Cond, Query, Sort, Store } from '../../shared/store.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { LEAD_SEARCH_SQL, Params, condSql, orderSql, scopeSql } from '../../sync-server/cond-sql.ts';
import { seededRandom } from '../support/harness.ts';
import { BACKENDS, freshPgDatabase, openMigrated, testDatabase } from './support/db.ts';
import type { Backend, TestDatabase } from './support/db.ts';

const WS = 'a0000000-0000-4000-8000-000000000001';
const OTHER = 'a0000000-0000-4000-8000-000000000002';
const GROUP = 'b0000000-0000-4000-8000-000000000001';
const COL = 'c0000000-0000-4000-8000-000000000001';
const uid = (n: number, prefix = 'd') => `${prefix}0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

const FIRST = ['Ann', 'ann', 'Bea', 'Émile', 'Zoë', 'zed', 'Ola', 'O%la', 'under_score', '', 'Ärne', 'Bob'];
const COMPANIES = ['Acme', 'acme corp', 'Globex', 'Initech', '', 'Umbrella', 'Ünïcode GmbH'];
const STAGES = [null, uid(1, 'e'), uid(2, 'e'), uid(3, 'e')];

/** A deterministic, deliberately messy data set: duplicates for ties, nulls, case and accents. */
function dataset(): { leads: Lead[]; activities: Activity[] } {
  const rnd = seededRandom(11);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const leads: Lead[] = [];
  for (let i = 0; i < 73; i++) {
    const firstName = pick(FIRST);
    const lastName = pick(['Smith', 'SMITH', 'Lovelace', 'Ng', 'de la Cruz', '']);
    const day = 1 + Math.floor(rnd() * 20);
    const now = `2026-10-${String(day).padStart(2, '0')}T10:00:00.000Z`;
    const lead = newLead({ id: uid(i + 1), workspaceId: WS, now }, GROUP, {
      firstName,
      lastName,
      email: rnd() < 0.7 ? `${firstName || 'x'}.${lastName || 'y'}${i}@example.com`.toLowerCase() : '',
      company: pick(COMPANIES),
      jobTitle: pick(['VP Sales', 'CTO', 'sdr', 'Head of Growth']),
      leadFitScore: pick([0, 1, 2.5, -3, 10, 100]),
      rankingScore: Math.round(rnd() * 1000) / 10,
      tagId: rnd() < 0.4 ? null : pick([uid(1, 'f'), uid(2, 'f')]),
      pipelineStageId: pick(STAGES),
      followUpAt: rnd() < 0.5 ? null : `2026-11-${String(1 + Math.floor(rnd() * 28)).padStart(2, '0')}T09:00:00.000Z`,
      doNotContact: rnd() < 0.2,
      groupIds: rnd() < 0.3 ? [GROUP, uid(9, 'b')] : [GROUP],
      variables: rnd() < 0.6 ? { [COL]: pick(['alpha', 'Beta', 'gamma']) } : {},
      socialUrl: rnd() < 0.5 ? `https://social.example/in/${firstName.toLowerCase() || 'anon'}-${i}` : '',
    });
    leads.push(lead);
  }
  const activities: Activity[] = [];
  for (let i = 0; i < 25; i++) {
    const task = i % 2 === 0;
    activities.push(
      newActivity({ id: uid(i + 1, 'a'), workspaceId: WS, now: `2026-10-0${1 + (i % 9)}T10:00:00.000Z` }, uid(1 + (i % 5)), uid(99, 'c'), task ? 'TASK' : 'NOTE', `content ${i}`, {
        metadata: task ? { taskStatus: pick(['open', 'completed', 'cancelled'] as const), assigneeId: uid(99, 'c') } : {},
        dueAt: task && rnd() < 0.6 ? `2026-11-${String(1 + (i % 27)).padStart(2, '0')}T09:00:00.000Z` : null,
      }),
    );
  }
  return { leads, activities };
}

const CONDS: Record<string, Cond> = {
  'eq text': { op: 'eq', field: 'firstName', value: 'Ann' },
  'eq null on nullable': { op: 'eq', field: 'tagId', value: null },
  'eq number': { op: 'eq', field: 'leadFitScore', value: 2.5 },
  'eq boolean': { op: 'eq', field: 'doNotContact', value: true },
  'eq wrong type': { op: 'eq', field: 'leadFitScore', value: '10' },
  'eq id': { op: 'eq', field: 'id', value: uid(5) },
  'eq missing field is null': { op: 'eq', field: 'noSuchField', value: null },
  'eq dotted json': { op: 'eq', field: `variables.${COL}`, value: 'Beta' },
  'neq text': { op: 'neq', field: 'company', value: 'Acme' },
  'neq null': { op: 'neq', field: 'followUpAt', value: null },
  'in with null': { op: 'in', field: 'pipelineStageId', values: [null, uid(2, 'e')] },
  'in numbers': { op: 'in', field: 'leadFitScore', values: [0, 100, 'x'] },
  'in ids': { op: 'in', field: 'id', values: [uid(1), uid(3), uid(70), 'nope'] },
  'in empty': { op: 'in', field: 'id', values: [] },
  // Longer than LONG_IN_LIST (cond-sql.ts): matched as a set instead of `= ANY`.
  'in long list of ids, with null': { op: 'in', field: 'id', values: [null, ...Array.from({ length: 80 }, (_, i) => uid(i * 2 + 1)), 'nope'] },
  'not in long list of ids': { op: 'not', cond: { op: 'in', field: 'id', values: Array.from({ length: 70 }, (_, i) => uid(i + 1)) } },
  'in long list of numbers': { op: 'in', field: 'rankingScore', values: Array.from({ length: 100 }, (_, i) => i / 10) },
  'lt string': { op: 'lt', field: 'createdAt', value: '2026-10-08T00:00:00.000Z' },
  'lte string': { op: 'lte', field: 'firstName', value: 'Bea' },
  'gt number': { op: 'gt', field: 'rankingScore', value: 50 },
  'gte number': { op: 'gte', field: 'leadFitScore', value: 2.5 },
  'gt on nullable skips nulls': { op: 'gt', field: 'followUpAt', value: '2026-11-10T00:00:00.000Z' },
  'lt dotted json': { op: 'lt', field: `variables.${COL}`, value: 'b' },
  'contains indexed lead fields': { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'SMI' },
  'contains accent case-insensitively': { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'émi' },
  'contains across-boundary text does not match': { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'ann\u001fsmith' },
  'contains like metacharacters literally': { op: 'contains', fields: ['firstName'], value: 'o%l' },
  'contains underscore literally': { op: 'contains', fields: ['firstName'], value: 'r_s' },
  'contains other fields': { op: 'contains', fields: ['jobTitle', 'company'], value: 'acme' },
  'contains empty needle': { op: 'contains', fields: ['company'], value: '' },
  'contains non-string field': { op: 'contains', fields: ['leadFitScore'], value: '1' },
  'has': { op: 'has', field: 'groupIds', value: uid(9, 'b') },
  'has on non-array': { op: 'has', field: 'firstName', value: 'Ann' },
  'and/or/not': {
    op: 'and',
    conds: [
      { op: 'or', conds: [{ op: 'eq', field: 'tagId', value: uid(1, 'f') }, { op: 'eq', field: 'tagId', value: null }] },
      { op: 'not', cond: { op: 'eq', field: 'pipelineStageId', value: null } },
    ],
  },
  'not of a null comparison': { op: 'not', cond: { op: 'gt', field: 'followUpAt', value: '2026-11-10T00:00:00.000Z' } },
  'empty and': { op: 'and', conds: [] },
  'empty or': { op: 'or', conds: [] },
};

const ORDERS: Record<string, readonly Sort[]> = {
  'none': [],
  'createdAt desc': [{ field: 'createdAt', dir: 'desc' }],
  'nullable asc (nulls first)': [{ field: 'followUpAt', dir: 'asc' }],
  'nullable desc (nulls last)': [{ field: 'tagId', dir: 'desc' }],
  'number then text': [{ field: 'leadFitScore', dir: 'desc' }, { field: 'firstName', dir: 'asc' }],
  'text by code point': [{ field: 'firstName', dir: 'asc' }, { field: 'lastName', dir: 'desc' }],
  'boolean': [{ field: 'doNotContact', dir: 'desc' }],
  'json field': [{ field: `variables.${COL}`, dir: 'asc' }],
  'json field desc': [{ field: `variables.${COL}`, dir: 'desc' }],
  'id desc': [{ field: 'id', dir: 'desc' }],
};

const ACTIVITY_QUERIES: Record<string, Query> = {
  'dotted typed field': { where: { op: 'eq', field: 'metadata.taskStatus', value: 'open' }, orderBy: [{ field: 'dueAt', dir: 'asc' }] },
  'dotted field null': { where: { op: 'eq', field: 'metadata.taskStatus', value: null } },
  'dotted sort': { orderBy: [{ field: 'metadata.taskStatus', dir: 'desc' }, { field: 'createdAt', dir: 'asc' }], limit: 4 },
};

type Subject = { name: string; store: (ws: string) => Store; close: () => Promise<void>; pg?: PgDatabase };

const ids = (docs: readonly { id: string }[]) => docs.map((d) => d.id);

async function allPages(store: Store, collection: 'leads' | 'activities', q: Query): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 200; guard++) {
    const page: { docs: { id: string }[]; nextCursor: string | null } = await store.query(collection, { ...q, cursor });
    out.push(...ids(page.docs));
    if (!page.nextCursor) return out;
    cursor = page.nextCursor;
  }
  throw new Error('paging did not end');
}

const subjects: { name: string; make: () => Promise<Subject> }[] = [
  {
    name: 'MemoryDatabase',
    make: async () => {
      const db = new MemoryDatabase();
      return { name: 'memory', store: (ws) => db.forWorkspace(ws), close: async () => undefined };
    },
  },
  ...BACKENDS.map((backend) => ({
    name: `PgStore on ${backend}`,
    make: async (): Promise<Subject> => {
      const t: TestDatabase = testDatabase(backend);
      const sql = await openMigrated(t);
      const pg = new PgDatabase(sql);
      return {
        name: backend,
        pg,
        store: (ws) => pg.forWorkspace(ws),
        close: async () => {
          await pg.close();
          await t.cleanup();
        },
      };
    },
  })),
];

describe.each(subjects)('Store conformance: $name', ({ make }) => {
  let s: Subject;
  const data = dataset();
  const creation = (docs: readonly (Lead | Activity)[], c: 'leads' | 'activities'): AnyWrite[] =>
    docs.map((d) => ({ collection: c, id: d.id, before: null, after: d }) as AnyWrite);

  beforeAll(async () => {
    s = await make();
    const store = s.store(WS);
    await store.commit(creation(data.leads, 'leads'));
    await store.commit(creation(data.activities, 'activities'));
    // A foreign workspace with look-alike data that must never show up.
    const foreign = data.leads.slice(0, 10).map((l) => ({ ...l, id: l.id.replace(/^d/, '9'), workspaceId: OTHER }));
    await s.store(OTHER).commit(creation(foreign, 'leads'));
  });
  afterAll(async () => {
    await s?.close();
  });

  for (const [cname, cond] of Object.entries(CONDS)) {
    it(`filters like the reference: ${cname}`, async () => {
      const store = s.store(WS);
      const want = runQuery(data.leads, { where: cond, orderBy: [{ field: 'createdAt', dir: 'asc' }] }).docs;
      const got = await store.query('leads', { where: cond, orderBy: [{ field: 'createdAt', dir: 'asc' }] });
      expect(ids(got.docs)).toEqual(ids(want));
      expect(await store.count('leads', cond)).toBe(want.length);
    });
  }

  it('finds something for most conditions (the data set exercises them)', () => {
    const nonEmpty = Object.values(CONDS).filter((c) => runQuery(data.leads, { where: c }).docs.length > 0).length;
    expect(nonEmpty).toBeGreaterThan(Object.keys(CONDS).length - 8);
  });

  for (const [oname, orderBy] of Object.entries(ORDERS)) {
    it(`orders and pages like the reference: ${oname}`, async () => {
      const store = s.store(WS);
      const where: Cond = { op: 'neq', field: 'company', value: 'Initech' };
      const full = ids(runQuery(data.leads, { where, orderBy }).docs);
      expect(ids((await store.query('leads', { where, orderBy })).docs)).toEqual(full);
      for (const limit of [1, 7, 50, 200]) {
        expect(await allPages(store, 'leads', { where, orderBy, limit })).toEqual(full);
      }
    });
  }

  for (const [qname, q] of Object.entries(ACTIVITY_QUERIES)) {
    it(`handles nested fields like the reference: ${qname}`, async () => {
      const want = ids(runQuery(data.activities, { ...q, limit: undefined }).docs);
      expect(await allPages(s.store(WS), 'activities', q)).toEqual(want);
    });
  }

  it('returns the same first page and cursor as the reference', async () => {
    const q: Query = { orderBy: [{ field: 'rankingScore', dir: 'desc' }], limit: 10 };
    const want = runQuery(data.leads, q);
    const got = await s.store(WS).query('leads', q);
    expect(ids(got.docs)).toEqual(ids(want.docs));
    expect(got.nextCursor).toBe(want.nextCursor);
    const last = await s.store(WS).query('leads', { ...q, limit: 500 });
    expect(last.nextCursor).toBeNull();
  });

  it('refuses a tampered cursor with INVALID_INPUT', async () => {
    const err = await s.store(WS).query('leads', { orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 5, cursor: 'garbage' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('INVALID_INPUT');
  });

  it('gets one and many by id, in the order asked, only from its workspace', async () => {
    const store = s.store(WS);
    const first = data.leads[0] as Lead;
    expect(await store.get('leads', first.id)).toEqual(first);
    expect(await store.get('leads', first.id.replace(/^d/, '9'))).toBeNull();
    expect(await s.store(OTHER).get('leads', first.id)).toBeNull();
    const many = await store.getMany('leads', [uid(3), 'missing', uid(1), first.id.replace(/^d/, '9'), uid(3)]);
    expect(ids(many)).toEqual([uid(3), uid(1), uid(3)]);
    expect(await store.getMany('leads', [])).toEqual([]);
    expect(await store.count('leads')).toBe(data.leads.length);
    expect(await s.store(OTHER).count('leads')).toBe(10);
    expect(await store.get('tags', first.id)).toBeNull();
  });

  it('commits all writes or none and refuses a stale before with CONFLICT', async () => {
    const store = s.store(WS);
    const a = newLead({ id: uid(500), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP, { firstName: 'Atom' });
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    const b = newLead({ id: uid(501), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP, { firstName: 'Bond' });
    const err = await store
      .commit([
        { collection: 'leads', id: b.id, before: null, after: b },
        { collection: 'leads', id: a.id, before: { ...a, firstName: 'Other' }, after: { ...a, firstName: 'Stale' } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('CONFLICT');
    expect(await store.get('leads', b.id)).toBeNull();
    expect((await store.get('leads', a.id))?.firstName).toBe('Atom');

    // A creation over an existing document is stale too.
    const dup = await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]).catch((e: unknown) => e);
    expect((dup as DomainError).code).toBe('CONFLICT');

  });

  it('soft-deletes: gone from reads, counts and queries; re-creatable', async () => {
    const store = s.store(WS);
    const a = newLead({ id: uid(600), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP, { firstName: 'Ghost' });
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    const n = await store.count('leads');
    await store.commit([{ collection: 'leads', id: a.id, before: a, after: null }]);
    expect(await store.get('leads', a.id)).toBeNull();
    expect(await store.getMany('leads', [a.id])).toEqual([]);
    expect(await store.count('leads')).toBe(n - 1);
    expect(ids((await store.query('leads', { where: { op: 'eq', field: 'firstName', value: 'Ghost' } })).docs)).toEqual([]);
    // Deleting again based on the deleted state is stale.
    const again = await store.commit([{ collection: 'leads', id: a.id, before: a, after: null }]).catch((e: unknown) => e);
    expect((again as DomainError).code).toBe('CONFLICT');
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: { ...a, firstName: 'Back' } }]);
    expect((await store.get('leads', a.id))?.firstName).toBe('Back');
  });

  it('isolates workspaces: no write can touch or claim a foreign document', async () => {
    const foreignId = uid(1).replace(/^d/, '9');
    const foreign = await s.store(OTHER).get('leads', foreignId);
    expect(foreign).not.toBeNull();
    const mine = { ...(foreign as Lead), workspaceId: WS };
    const claim = await s.store(WS).commit([{ collection: 'leads', id: foreignId, before: null, after: mine }]).catch((e: unknown) => e);
    expect((claim as DomainError).code).toBe('CONFLICT');
    const wrongStamp = await s.store(WS).commit([{ collection: 'leads', id: uid(700), before: null, after: { ...mine, id: uid(700), workspaceId: OTHER } }]).catch((e: unknown) => e);
    expect((wrongStamp as DomainError).code).toBe('CONFLICT');
    const del = await s.store(WS).commit([{ collection: 'leads', id: foreignId, before: null, after: null }]).catch((e: unknown) => e);
    expect(del === undefined || (del as DomainError).code === 'CONFLICT').toBe(true);
    expect(await s.store(OTHER).get('leads', foreignId)).toEqual(foreign);
  });
});

describe.each(BACKENDS)('PgStore specifics on %s', (backend) => {
  const database = freshPgDatabase(backend);

  const ROLL_BACK = new Error('roll back');
  /** The plan PostgreSQL picks for a store query of `collection` in WS, written as PgStore writes
   * it; `setup` runs first in the same transaction, which then rolls back (dropped indexes return). */
  const explain = async (collection: CollectionName, cond: Cond, opts: { orderBy?: Sort[]; setup?: readonly string[] } = {}): Promise<string> => {
    const p = new Params();
    const scope = scopeSql(collection, cond, p.add(WS));
    const where = condSql(collection, cond, p);
    const order = opts.orderBy && opts.orderBy.length > 0 ? ` ORDER BY ${orderSql(collection, opts.orderBy)}` : '';
    let text = '';
    await database.db.sql
      .transaction(async (tx) => {
        for (const statement of opts.setup ?? []) await tx.query(statement);
        const rows = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT doc FROM documents WHERE collection = '${collection}' AND ${scope} AND NOT deleted AND ${where}${order}`, p.values);
        text = rows.map((r) => r['QUERY PLAN']).join('\n');
        throw ROLL_BACK;
      })
      .catch((e: unknown) => {
        if (e !== ROLL_BACK) throw e;
      });
    return text;
  };

  it('never stamps server fields into the stored document', async () => {
    const a = newLead({ id: uid(1), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP, { firstName: 'Pure' });
    await database.db.forWorkspace(WS).commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    const rows = await database.db.sql.query<{ doc: Lead; seq: string | number; deleted: boolean; workspace_id: string }>(
      "SELECT doc, seq, deleted, workspace_id FROM documents WHERE collection = 'leads' AND id = $1",
      [a.id],
    );
    expect(rows[0]?.doc).toEqual(a);
    expect(rows[0]?.workspace_id).toBe(WS);
    expect(rows[0]?.deleted).toBe(false);
  });

  it('compares the before by value (jsonb equality), whatever its key order', async () => {
    const a = newLead({ id: uid(3), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP, { firstName: 'Atom' });
    const store = database.db.forWorkspace(WS);
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    const reordered = Object.fromEntries(Object.entries(a).reverse()) as Lead;
    await store.commit([{ collection: 'leads', id: a.id, before: reordered, after: { ...a, firstName: 'Atomic' } }]);
    expect((await store.get('leads', a.id))?.firstName).toBe('Atomic');
  });

  it('assigns a fresh, higher seq on every write, deletes included, in commit order', async () => {
    const seqOf = async (id: string) =>
      Number((await database.db.sql.query<{ seq: string }>("SELECT seq FROM documents WHERE collection = 'leads' AND id = $1", [id]))[0]?.seq);
    const a = newLead({ id: uid(2), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP);
    const store = database.db.forWorkspace(WS);
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    const s1 = await seqOf(a.id);
    const b = { ...a, firstName: 'B' };
    await store.commit([{ collection: 'leads', id: a.id, before: a, after: b }]);
    const s2 = await seqOf(a.id);
    await store.commit([{ collection: 'leads', id: a.id, before: b, after: null }]);
    const s3 = await seqOf(a.id);
    expect(s2).toBeGreaterThan(s1);
    expect(s3).toBeGreaterThan(s2);
  });

  it('serialises concurrent writers of a workspace: seq order equals commit order', async () => {
    // Two transactions race; the second may only take its seq after the first has committed.
    const order: string[] = [];
    const make = (n: number) => newLead({ id: uid(100 + n), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const first = database.db.withStore(WS, async (store) => {
      await store.commit([{ collection: 'leads', id: uid(100), before: null, after: make(0) }]);
      order.push('first wrote');
      await gate;
      order.push('first commits');
    });
    await new Promise((r) => setTimeout(r, 50));
    const second = database.db.withStore(WS, async (store) => {
      await store.commit([{ collection: 'leads', id: uid(101), before: null, after: make(1) }]);
      order.push('second wrote');
    });
    await new Promise((r) => setTimeout(r, 100));
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first wrote', 'first commits', 'second wrote']);
    const rows = await database.db.sql.query<{ id: string; seq: string }>("SELECT id, seq FROM documents WHERE collection = 'leads' AND id = ANY($1::text[]) ORDER BY seq", [[uid(100), uid(101)]]);
    expect(rows.map((r) => r.id)).toEqual([uid(100), uid(101)]);
  });

  it('uses the scoped trigram index for the lead query fields, with the stage and tag inside the index', async () => {
    const many = Array.from({ length: 3000 }, (_, i) =>
      newLead({ id: uid(10_000 + i), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP, {
        firstName: `Person${i}`,
        lastName: i % 50 === 7 ? 'Smithereens' : 'Doe',
        company: `Company ${i % 40}`,
        // Common stage and tag values, a rare name: only the index with all three is selective.
        pipelineStageId: i % 2 === 0 ? uid(2, 'e') : null,
        tagId: i % 2 === 0 ? uid(1, 'f') : null,
      }),
    );
    await database.db.forWorkspace(WS).commit(many.map((l) => ({ collection: 'leads', id: l.id, before: null, after: l })));
    await database.db.sql.exec('VACUUM ANALYZE documents');
    /** The plan of a lead query; `without` drops the named indexes for the EXPLAIN only (the
     * transaction rolls back): on 3,000 rows the planner may rightly prefer a btree that loses at
     * 100k, so the test asks whether the scoped index can serve the filter, not which one wins here. */
    const plan = (cond: Cond, without: readonly string[] = []): Promise<string> => explain('leads', cond, { setup: without.map((index) => `DROP INDEX ${index}`) });
    const text = { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'smith' } as const;
    expect(await plan(text)).toContain('leads_search_scoped');
    const staged = await plan({ op: 'and', conds: [text, { op: 'in', field: 'pipelineStageId', values: [uid(2, 'e')] }] }, ['leads_stage', 'leads_tag', 'leads_created']);
    expect(staged).toMatch(/Bitmap Index Scan on leads_search_scoped[^\n]*\n\s+Index Cond: [^\n]*pipelineStageId[^\n]*~~/);
    const tagged = await plan({ op: 'and', conds: [text, { op: 'eq', field: 'tagId', value: uid(1, 'f') }] }, ['leads_stage', 'leads_tag', 'leads_created']);
    expect(tagged).toMatch(/Bitmap Index Scan on leads_search_scoped[^\n]*\n\s+Index Cond: [^\n]*tagId[^\n]*~~/);
    // With a stage or tag id the workspace is checked on the rows found, not intersected in the index
    // (its posting list is every lead of the workspace); a text search alone still keys on it.
    for (const p of [staged, tagged]) expect(/Index Cond: [^\n]*/.exec(p)?.[0]).not.toContain('workspace_id');
    expect(await plan(text)).toMatch(/Index Cond: [^\n]*workspace_id/);
    // The check on the rows holds: another workspace's lead that names this workspace's stage and tag
    // (only a raw write can make one) is not found.
    const stray = newLead({ id: uid(19_999), workspaceId: OTHER, now: '2026-11-01T00:00:00.000Z' }, GROUP, { firstName: 'Person12x', pipelineStageId: uid(2, 'e'), tagId: uid(1, 'f') });
    await database.db.forWorkspace(OTHER).commit([{ collection: 'leads', id: stray.id, before: null, after: stray }]);
    const person12 = { op: 'contains', fields: LEAD_QUERY_FIELDS, value: 'PERSON12' } as const;
    const want = many.filter((l) => l.firstName.startsWith('Person12') && l.pipelineStageId !== null).length;
    expect(want).toBeGreaterThan(10);
    for (const filter of [{ op: 'in', field: 'pipelineStageId', values: [uid(2, 'e')] }, { op: 'eq', field: 'tagId', value: uid(1, 'f') }] as const) {
      const found = await database.db.forWorkspace(WS).query('leads', { where: { op: 'and', conds: [person12, filter] } });
      expect(found.docs.length).toBe(want);
      expect(found.docs.every((d) => d.workspaceId === WS)).toBe(true);
      expect(await database.db.forWorkspace(WS).count('leads', { op: 'and', conds: [person12, filter] })).toBe(want);
      expect(await database.db.forWorkspace(OTHER).count('leads', { op: 'and', conds: [person12, filter] })).toBe(1);
    }
    expect(LEAD_SEARCH_SQL).toContain('personalSocialUrl');
    // Searches read the whole GIN pending list: kept small so writes do not slow them down
    // (014_search_pending_list.sql).
    const [index] = await database.db.sql.query<{ reloptions: string[] | null }>("SELECT reloptions FROM pg_class WHERE oid = 'leads_search_scoped'::regclass");
    expect(index?.reloptions).toContain('gin_pending_list_limit=256');
  });

  it("serves the runner's lookups from their indexes: due enrollments, a chat's messages, a message by network id, queued messages", async () => {
    /** The plan of one store query with sequential scans and the generic per-collection index out of
     * the way (the test tables are tiny): which index can serve it. */
    const plan = (collection: 'enrollments' | 'messages', cond: Cond, orderBy: Sort[] = []): Promise<string> =>
      explain(collection, cond, { orderBy, setup: ['SET LOCAL enable_seqscan = off', 'DROP INDEX documents_workspace'] });
    // shared/engine/plan.ts dueEnrollments, shared/engine/inbound.ts and direct.ts.
    const due: Cond = { op: 'and', conds: [{ op: 'eq', field: 'status', value: 'IN_PROGRESS' }, { op: 'lte', field: 'nextActionAt', value: '2026-11-24T10:00:00.000Z' }, { op: 'in', field: 'campaignId', values: [uid(1, 'c')] }] };
    expect(await plan('enrollments', due, [{ field: 'nextActionAt', dir: 'asc' }])).toContain('enrollments_due');
    expect(await plan('messages', { op: 'and', conds: [{ op: 'eq', field: 'chatId', value: 'chat-1' }, { op: 'eq', field: 'direction', value: 'out' }] })).toContain('messages_chat');
    expect(await plan('messages', { op: 'and', conds: [{ op: 'eq', field: 'externalId', value: 'x-1' }, { op: 'eq', field: 'sdrProfileId', value: uid(1, 's') }] })).toContain('messages_external');
    expect(await plan('messages', { op: 'and', conds: [{ op: 'eq', field: 'status', value: 'queued' }, { op: 'eq', field: 'direction', value: 'out' }] })).toContain('messages_status');
  });

  it('rolls back every write of a transaction that fails after committing through the store', async () => {
    const a = newLead({ id: uid(300), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP);
    const err = await database.db
      .withStore(WS, async (store) => {
        await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
        throw new Error('boom after commit');
      })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('boom after commit');
    expect(await database.db.forWorkspace(WS).get('leads', a.id)).toBeNull();
  });
});

describe('the embedded database document cache', () => {
  let t: TestDatabase;
  let cached: PgDatabase;
  let uncached: PgDatabase;
  const tag = (n: number, fields: Partial<{ name: string; color: string; createdAt: string }> = {}) => ({
    id: uid(n, 'f'),
    workspaceId: WS,
    createdAt: fields.createdAt ?? `2026-10-${String(1 + (n % 28)).padStart(2, '0')}T00:00:00.000Z`,
    updatedAt: '2026-11-01T00:00:00.000Z',
    name: fields.name ?? `Tag ${n % 7}`,
    color: fields.color ?? (n % 2 ? '#aaaaaa' : '#bbbbbb'),
  });
  beforeAll(async () => {
    t = testDatabase('pglite');
    const sql = await openMigrated(t);
    cached = new PgDatabase(sql);
    uncached = new PgDatabase(sql, { cache: false });
  });
  afterAll(async () => {
    await cached?.close();
    await t?.cleanup();
  });

  it('answers like SQL and like the reference for a cached collection', async () => {
    const tags = Array.from({ length: 40 }, (_, i) => tag(i + 1));
    await cached.forWorkspace(WS).commit(tags.map((d) => ({ collection: 'tags', id: d.id, before: null, after: d })));
    const queries: Query[] = [
      {},
      { where: { op: 'eq', field: 'color', value: '#aaaaaa' }, orderBy: [{ field: 'name', dir: 'desc' }], limit: 7 },
      { where: { op: 'contains', fields: ['name'], value: 'TAG 3' } },
      { orderBy: [{ field: 'createdAt', dir: 'asc' }, { field: 'name', dir: 'desc' }], limit: 5 },
    ];
    for (const q of queries) {
      const want = runQuery(tags, q);
      const a = await cached.forWorkspace(WS).query('tags', q);
      const b = await uncached.forWorkspace(WS).query('tags', q);
      expect(ids(a.docs)).toEqual(ids(want.docs));
      expect(ids(b.docs)).toEqual(ids(want.docs));
      expect(a.nextCursor).toBe(want.nextCursor);
      if (a.nextCursor) expect(ids((await cached.forWorkspace(WS).query('tags', { ...q, cursor: a.nextCursor })).docs)).toEqual(ids((await uncached.forWorkspace(WS).query('tags', { ...q, cursor: a.nextCursor })).docs));
    }
    expect(await cached.forWorkspace(WS).count('tags', { op: 'eq', field: 'color', value: '#bbbbbb' })).toBe(20);
    expect(await cached.forWorkspace(WS).getMany('tags', [uid(3, 'f'), 'nope', uid(1, 'f')])).toEqual([tags[2], tags[0]]);
  });

  it('hands out copies: a caller mutating a document cannot change the cache', async () => {
    const store = cached.forWorkspace(WS);
    const a = await store.get('tags', uid(1, 'f'));
    if (!a) throw new Error('missing');
    a.name = 'Mutated';
    const page = await store.query('tags', { limit: 1, orderBy: [{ field: 'id', dir: 'asc' }] });
    (page.docs[0] as { name: string }).name = 'Mutated too';
    expect((await store.get('tags', uid(1, 'f')))?.name).toBe('Tag 1');
  });

  it('gives a Tx the state it read as the before of its writes, even when the handler mutates the copy', async () => {
    await cached.withStore(WS, async (store) => {
      const tx = new Tx(store);
      const doc = await tx.get('tags', uid(5, 'f'));
      if (!doc) throw new Error('missing');
      const original = structuredClone(doc);
      doc.name = 'Changed in place';
      await tx.put('tags', doc);
      const [w] = tx.writes();
      expect(w?.before).toEqual(original);
      expect((w?.after as { name: string }).name).toBe('Changed in place');
    });
  });

  it('stays exact across writers, rollbacks and reads after an own commit', async () => {
    const other = new PgDatabase(cached.sql);
    const before = (await cached.forWorkspace(WS).get('tags', uid(2, 'f'))) as ReturnType<typeof tag>;
    await other.forWorkspace(WS).commit([{ collection: 'tags', id: before.id, before, after: { ...before, name: 'Renamed elsewhere' } }]);
    expect((await cached.forWorkspace(WS).get('tags', before.id))?.name).toBe('Renamed elsewhere');

    const renamed = (await cached.forWorkspace(WS).get('tags', before.id)) as ReturnType<typeof tag>;
    await cached
      .withStore(WS, async (store) => {
        await store.commit([{ collection: 'tags', id: renamed.id, before: renamed, after: { ...renamed, name: 'Never happened' } }]);
        // Inside the transaction the write is visible...
        expect((await store.get('tags', renamed.id))?.name).toBe('Never happened');
        throw new Error('roll back');
      })
      .catch(() => undefined);
    // ...and after the rollback it never was.
    expect((await cached.forWorkspace(WS).get('tags', renamed.id))?.name).toBe('Renamed elsewhere');
    expect((await uncached.forWorkspace(WS).get('tags', renamed.id))?.name).toBe('Renamed elsewhere');

    await cached.forWorkspace(WS).commit([{ collection: 'tags', id: renamed.id, before: renamed, after: null }]);
    expect(await cached.forWorkspace(WS).get('tags', renamed.id)).toBeNull();
    expect(await cached.forWorkspace(WS).count('tags')).toBe(39);
  });

  it('runs a read again when a commit changed the cache during it, so it sees one state', async () => {
    let calls = 0;
    const seen = await cached.withReadStore(WS, async (store) => {
      calls++;
      const first = await store.count('tags');
      if (calls === 1) {
        const extra = tag(100, { name: 'Arrived mid-read' });
        await cached.forWorkspace(WS).commit([{ collection: 'tags', id: extra.id, before: null, after: extra }]);
      }
      const second = await store.count('tags');
      return { first, second };
    });
    expect(calls).toBe(2);
    expect(seen.first).toBe(seen.second);
  });
});

describe.runIf(BACKENDS.includes('postgres'))('the PostgreSQL document cache, validated by collection versions', () => {
  let t: TestDatabase;
  let a: PgDatabase;
  let b: PgDatabase;
  const tag = (n: number, name: string) => ({ id: uid(n, 'f'), workspaceId: WS, createdAt: '2026-10-01T00:00:00.000Z', updatedAt: '2026-11-01T00:00:00.000Z', name, color: '#aaaaaa' });
  beforeAll(async () => {
    t = testDatabase('postgres');
    // Two pools on one database: two server processes as far as caching goes.
    a = new PgDatabase(await openMigrated(t));
    b = new PgDatabase(await t.open());
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await t?.cleanup();
  });

  it("sees another process's commits at once: creations, updates and deletions", async () => {
    const one = tag(1, 'One');
    await a.forWorkspace(WS).commit([{ collection: 'tags', id: one.id, before: null, after: one }]);
    expect(await b.forWorkspace(WS).get('tags', one.id)).toEqual(one);
    expect(await a.forWorkspace(WS).count('tags')).toBe(1);
    const renamed = { ...one, name: 'Renamed' };
    await b.forWorkspace(WS).commit([{ collection: 'tags', id: one.id, before: one, after: renamed }]);
    expect((await a.forWorkspace(WS).get('tags', one.id))?.name).toBe('Renamed');
    expect((await a.forWorkspace(WS).query('tags')).docs).toEqual([renamed]);
    await b.forWorkspace(WS).commit([{ collection: 'tags', id: one.id, before: renamed, after: null }]);
    expect(await a.forWorkspace(WS).get('tags', one.id)).toBeNull();
    expect(await a.forWorkspace(WS).count('tags')).toBe(0);
  });

  it('a writer reads the state under its lock: a change committed while it waited is seen', async () => {
    const two = tag(2, 'Two');
    await a.forWorkspace(WS).commit([{ collection: 'tags', id: two.id, before: null, after: two }]);
    expect((await a.forWorkspace(WS).get('tags', two.id))?.name).toBe('Two');
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const first = b.withStore(WS, async (store) => {
      await store.commit([{ collection: 'tags', id: two.id, before: two, after: { ...two, name: 'Two renamed' } }]);
      await gate;
    });
    await new Promise((r) => setTimeout(r, 50));
    const second = a.withStore(WS, async (store) => (await store.get('tags', two.id))?.name);
    await new Promise((r) => setTimeout(r, 50));
    release();
    await first;
    expect(await second).toBe('Two renamed');
  });

  it('hands out copies: a caller mutating a document cannot change the cache', async () => {
    const doc = await a.forWorkspace(WS).get('tags', uid(2, 'f'));
    if (!doc) throw new Error('missing');
    doc.name = 'Mutated';
    expect((await a.forWorkspace(WS).get('tags', uid(2, 'f')))?.name).toBe('Two renamed');
  });
});

describe.each(BACKENDS)('Tx with deferred bases on %s', (backend: Backend) => {
  const database = freshPgDatabase(backend);

  it('reads the stored state of unread writes in one settle and gives the same writes as reading each', async () => {
    const existing = Array.from({ length: 5 }, (_, i) => newLead({ id: uid(500 + i), workspaceId: WS, now: '2026-11-01T00:00:00.000Z' }, GROUP, { firstName: `Old${i}` }));
    await database.db.forWorkspace(WS).commit(existing.map((l) => ({ collection: 'leads', id: l.id, before: null, after: l })));
    const fresh = Array.from({ length: 5 }, (_, i) => newLead({ id: uid(600 + i), workspaceId: WS, now: '2026-11-02T00:00:00.000Z' }, GROUP));
    const stage = async (tx: Tx): Promise<void> => {
      for (const l of existing) await tx.put('leads', { ...l, firstName: `${l.firstName} changed` });
      for (const l of fresh) await tx.put('leads', l);
      await tx.remove('leads', uid(500));
    };
    const plain = await database.db.withReadStore(WS, async (store) => {
      const tx = new Tx(store);
      await stage(tx);
      return tx.writes();
    });
    const deferred = await database.db.withReadStore(WS, async (store) => {
      const tx = new Tx(store, { deferBase: true });
      await stage(tx);
      expect(() => tx.writes()).toThrow(/settle/);
      await tx.settle();
      return tx.writes();
    });
    expect(deferred).toEqual(plain);
    expect(deferred.filter((w) => w.before === null).map((w) => w.id)).toEqual(fresh.map((l) => l.id));
    expect(deferred.find((w) => w.id === uid(500))).toMatchObject({ before: existing[0], after: null });
    expect(deferred.find((w) => w.id === uid(501))?.before).toEqual(existing[1]);
  });
});

describe.each(BACKENDS)('PgStore query shapes on %s: a text search looks in the first rows of its order first, long value lists probe an index', (backend) => {
  const database = freshPgDatabase(backend);
  const leads: Lead[] = [];

  beforeAll(async () => {
    // 2,500 leads, one a minute; the newest 1,000 are what a search reads after asking the text
    // index for SEARCH_PROBE_ROWS matches (SEARCH_HEAD_ROWS). Everywhere: 500 leads, 200 among the
    // newest 1,000 (found there); Halfway: 320, of which 20 among the newest (found through the
    // text index after the head); Rarest: 2 (found by the probe).
    for (let i = 0; i < 2500; i++) {
      const term = i % 5 === 0 ? 'Everywhere' : i === 3 || i === 7 ? 'Rarest' : (i >= 1500 && i % 50 === 1) || (i < 1500 && i % 5 === 2) ? 'Halfway' : 'Plain';
      leads.push(
        newLead({ id: uid(50_000 + i), workspaceId: WS, now: new Date(Date.UTC(2026, 9, 1) + i * 60_000).toISOString() }, GROUP, {
          firstName: `Person${i}`,
          lastName: term,
          email: `person${i}@example.com`,
          tagId: i % 3 === 0 ? uid(1, 'f') : null,
        }),
      );
    }
    await database.db.forWorkspace(WS).commit(leads.map((l) => ({ collection: 'leads', id: l.id, before: null, after: l })));
  });

  /** Every page of a query, through the store and through the reference semantics. */
  async function allPages(q: Query, pageSize: number): Promise<{ ours: string[]; reference: string[] }> {
    const ours: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { docs: Lead[]; nextCursor: string | null } = await database.db.forWorkspace(WS).query('leads', { ...q, limit: pageSize, cursor });
      ours.push(...page.docs.map((d) => d.id));
      cursor = page.nextCursor;
    } while (cursor);
    return { ours, reference: runQuery(leads, q).docs.map((d) => d.id) };
  }

  const newest: Sort[] = [{ field: 'createdAt', dir: 'desc' }];
  const search = (value: string): Cond => ({ op: 'contains', fields: LEAD_QUERY_FIELDS, value });

  it('pages a common term (found in the first rows), a term mostly beyond them and a rare one like the reference', async () => {
    for (const term of ['everywhere', 'halfway', 'rarest']) {
      const { ours, reference } = await allPages({ where: search(term), orderBy: newest }, 50);
      expect(reference.length).toBeGreaterThan(1);
      expect(ours).toEqual(reference);
    }
    // Oldest first as well, and with another condition beside the text.
    const both = await allPages({ where: { op: 'and', conds: [search('halfway'), { op: 'eq', field: 'tagId', value: uid(1, 'f') }] }, orderBy: [{ field: 'createdAt', dir: 'asc' }] }, 7);
    expect(both.ours).toEqual(both.reference);
  });

  it('answers a long list of values of one field, with other conditions, orders and cursors, like the reference', async () => {
    const emails = [...leads.filter((_, i) => i % 7 === 0).map((l) => l.email), ...Array.from({ length: 80 }, (_, i) => `nobody${i}@example.com`)];
    const cond: Cond = { op: 'and', conds: [{ op: 'in', field: 'email', values: emails }, { op: 'eq', field: 'tagId', value: uid(1, 'f') }] };
    const { ours, reference } = await allPages({ where: cond, orderBy: newest }, 40);
    expect(reference.length).toBeGreaterThan(100);
    expect(ours).toEqual(reference);
    expect(await database.db.forWorkspace(WS).count('leads', cond)).toBe(reference.length);
    // Duplicated values do not duplicate documents; another workspace's documents stay invisible.
    const twice = await database.db.forWorkspace(WS).query('leads', { where: { op: 'in', field: 'email', values: [...emails, ...emails] } });
    expect(twice.docs.length).toBe(leads.filter((l) => emails.includes(l.email)).length);
    expect(await database.db.forWorkspace(OTHER).count('leads', { op: 'in', field: 'email', values: emails })).toBe(0);
  });
});
