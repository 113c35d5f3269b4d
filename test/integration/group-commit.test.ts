/** Group commit on PostgreSQL (PgDatabase.withStore with `batch`): calls that arrive while their
 * workspace's writer is busy share one transaction and one COMMIT. Each call still sees exactly the
 * writes of the calls before it, a call refused before writing leaves the others committed, and a call
 * that fails after writing (or whose statement fails, which aborts a PostgreSQL transaction) costs the
 * others nothing: the shared transaction rolls back and each call runs again alone. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../shared/errors.ts';
import { newEnrollment, newLead, newStage } from '../../shared/model/factories.ts';
import type { Lead, Stage } from '../../shared/model/index.ts';
import type { Store } from '../../shared/store.ts';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { openMigrated, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';

const WS = 'a0000000-0000-4000-8000-00000000c0c0';
const GROUP = 'b0000000-0000-4000-8000-00000000c0c0';
const NOW = '2026-11-24T10:00:00.000Z';
const uid = (n: number, prefix = 'd') => `${prefix}0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const lead = (n: number): Lead => newLead({ id: uid(n), workspaceId: WS, now: NOW }, GROUP, { firstName: `Lead ${n}` });

describe.runIf(process.env.DATABASE_URL)('group commit (postgres)', () => {
  let t: TestDatabase;
  let sql: SqlDatabase;
  let db: PgDatabase;
  let transactions = 0;
  /** Statements that write documents (PgStore's commit statement). */
  let documentWrites = 0;

  beforeAll(async () => {
    t = testDatabase('postgres');
    const raw = await openMigrated(t);
    // Counts the transactions the store opens.
    sql = {
      ...raw,
      transaction: (fn, opts) => {
        transactions++;
        return raw.transaction(
          (tx, first) =>
            fn(
              {
                query: (text, params) => {
                  if (text.includes('INSERT INTO documents')) documentWrites++;
                  return tx.query(text, params);
                },
              },
              first,
            ),
          opts,
        );
      },
    };
    db = new PgDatabase(sql);
  }, 60_000);

  afterAll(async () => {
    await sql?.close();
    await t?.cleanup();
  });

  const batched = <T>(fn: (store: Store) => Promise<T>): Promise<T> => db.withStore(WS, (store) => fn(store), { batch: true });
  const leadsIn = async (ids: string[]): Promise<string[]> => (await db.forWorkspace(WS).getMany('leads', ids)).map((l) => l.id).sort();

  it('commits concurrent calls in fewer transactions, and a refusal before writing costs the others nothing', async () => {
    transactions = 0;
    const calls = Array.from({ length: 24 }, (_, i) =>
      batched(async (store) => {
        if (i % 8 === 7) throw new DomainError('NOT_FOUND', `call ${i} refused`);
        await store.commit([{ collection: 'leads', id: uid(100 + i), before: null, after: lead(100 + i) }]);
        return i;
      }),
    );
    const settled = await Promise.allSettled(calls);
    const refused = settled.flatMap((s, i) => (s.status === 'rejected' ? [i] : []));
    expect(refused).toEqual([7, 15, 23]);
    for (const i of refused) expect((settled[i] as PromiseRejectedResult).reason).toMatchObject({ code: 'NOT_FOUND', message: `call ${i} refused` });
    expect(settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))).toHaveLength(21);
    const wanted = Array.from({ length: 24 }, (_, i) => i).filter((i) => i % 8 !== 7);
    expect(await leadsIn(Array.from({ length: 24 }, (_, i) => uid(100 + i)))).toEqual(wanted.map((i) => uid(100 + i)).sort());
    // Shared: far fewer transactions than calls (the first runs alone, the rest queue behind it).
    expect(transactions).toBeLessThan(12);
  });

  it('each call sees what the calls before it wrote, cached collections included', async () => {
    const stage = newStage({ id: uid(1, 'e'), workspaceId: WS, now: NOW }, 'Qualified', 'ENGAGED', '#00aa00', 1);
    await db.forWorkspace(WS).commit([{ collection: 'stages', id: stage.id, before: null, after: stage }]);
    // Warm the per-process copy of stages at this version.
    expect((await db.forWorkspace(WS).get('stages', stage.id))?.name).toBe('Qualified');
    const seen: (string | undefined)[] = [];
    await Promise.all([
      batched(async (store) => {
        await store.commit([{ collection: 'leads', id: uid(200), before: null, after: lead(200) }]);
      }),
      batched(async (store) => {
        const before = await store.get('stages', stage.id);
        if (!before) throw new Error('no stage');
        await store.commit([{ collection: 'stages', id: stage.id, before, after: { ...before, name: 'Qualified (renamed)' } satisfies Stage }]);
      }),
      batched(async (store) => {
        seen.push((await store.get('leads', uid(200)))?.firstName, (await store.get('stages', stage.id))?.name);
      }),
    ]);
    expect(seen).toEqual(['Lead 200', 'Qualified (renamed)']);
  });

  it('writes held for the end of the shared transaction are seen by later calls: by id, merged, and by a query', async () => {
    const seen: unknown[] = [];
    transactions = 0;
    documentWrites = 0;
    await Promise.all([
      // Called together, the four share one transaction.
      batched(async (store) => store.commit([{ collection: 'leads', id: uid(500), before: null, after: lead(500) }])),
      batched(async (store) => store.commit([{ collection: 'leads', id: uid(501), before: null, after: lead(501) }])),
      batched(async (store) => {
        // The same document again in the same transaction: one write with the stored row's before.
        const before = await store.get('leads', uid(501));
        if (!before) throw new Error('the held write is not visible by id');
        const [many] = await store.getMany('leads', [uid(501)]);
        seen.push(many?.firstName);
        await store.commit([{ collection: 'leads', id: before.id, before, after: { ...before, firstName: 'Renamed 501' } satisfies Lead }]);
      }),
      batched(async (store) => {
        // SQL cannot see held writes: the query first writes them.
        const page = await store.query('leads', { where: { op: 'eq', field: 'firstName', value: 'Renamed 501' } });
        seen.push(page.docs.map((d) => d.id));
      }),
    ]);
    expect(seen).toEqual(['Lead 501', [uid(501)]]);
    expect(transactions).toBe(1);
    // Three commits, one statement: the query's flush wrote them together (a write each before).
    expect(documentWrites).toBe(1);
    expect((await db.forWorkspace(WS).get('leads', uid(501)))?.firstName).toBe('Renamed 501');
  });

  it('a call that fails after writing is rolled back alone; the others commit', async () => {
    const settled = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        batched(async (store) => {
          await store.commit([{ collection: 'leads', id: uid(300 + i), before: null, after: lead(300 + i) }]);
          if (i === 2) throw new DomainError('INVALID_INPUT', 'refused after its write');
          if (i === 4) throw new Error('a bug after the write');
        }),
      ),
    );
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
    expect(await leadsIn(Array.from({ length: 6 }, (_, i) => uid(300 + i)))).toEqual([0, 1, 3, 5].map((i) => uid(300 + i)).sort());
  });

  it('a statement refused by the database (one running sequence per lead) fails only its own call', async () => {
    const l = lead(400);
    await db.forWorkspace(WS).commit([{ collection: 'leads', id: l.id, before: null, after: l }]);
    const enroll = (n: number, campaign: string) =>
      batched(async (store) => {
        const e = newEnrollment({ id: uid(n, 'f'), workspaceId: WS, now: NOW }, l.id, campaign, { status: 'IN_PROGRESS' });
        await store.commit([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
        return e.id;
      });
    const others = Array.from({ length: 4 }, (_, i) => batched(async (store) => store.commit([{ collection: 'leads', id: uid(410 + i), before: null, after: lead(410 + i) }])));
    const settled = await Promise.allSettled([enroll(1, uid(1, 'c')), enroll(2, uid(2, 'c')), ...others]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'CONFLICT' });
    const running = await db.forWorkspace(WS).query('enrollments', { where: { op: 'eq', field: 'leadId', value: l.id } });
    expect(running.docs.map((e) => e.id)).toEqual([uid(1, 'f')]);
    expect(await leadsIn([0, 1, 2, 3].map((i) => uid(410 + i)))).toHaveLength(4);
  });
});
