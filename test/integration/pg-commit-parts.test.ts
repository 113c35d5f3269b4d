/** A large commit written in parts (PgStore.commitChecked: on PostgreSQL each part is written while
 * the next is checked) is still one commit: all of it or nothing, whatever refuses it and in which
 * part, with the answer checking everything first would give. On PGlite the same calls check
 * everything, then commit in one statement (a plain INSERT when all of it creates documents): the
 * same expectations hold. */
import { recordPgStatements } from '../support/pg-statements.ts';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../shared/errors.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import type { AnyWrite, Store } from '../../shared/store.ts';
import type { FirstRows, SqlDatabase, SqlExecutor, TransactionOptions } from '../../sync-server/db.ts';
import type { CommitEvent } from '../../sync-server/pg-store.ts';
import { COMMIT_PART } from '../../sync-server/pg-store.ts';
import { BACKENDS, freshPgDatabase } from './support/db.ts';

const WS = 'a0000000-0000-4000-8000-000000000001';
const GROUP = 'b0000000-0000-4000-8000-000000000001';
const uid = (n: number, prefix = 'd') => `${prefix}0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const NOW = '2026-11-01T00:00:00.000Z';

/** Creations of `n` leads with ids from `first`: several parts' worth. */
const creations = (first: number, n: number): AnyWrite[] =>
  Array.from({ length: n }, (_, i) => {
    const lead = newLead({ id: uid(first + i), workspaceId: WS, now: NOW }, GROUP, { firstName: `P${first + i}` });
    return { collection: 'leads', id: lead.id, before: null, after: lead };
  });

const N = COMMIT_PART * 3 + 17;

/** The text of every statement run in `sql`'s transactions from now until `stop()` (PGlite sends
 * its statements through no pg client). */
function recordTransactionStatements(sql: SqlDatabase): { texts: string[]; stop(): void } {
  const texts: string[] = [];
  const original = sql.transaction;
  const run = original.bind(sql);
  sql.transaction = <T>(fn: (tx: SqlExecutor, first: FirstRows) => Promise<T>, opts?: TransactionOptions) =>
    run<T>((tx, first) => fn({ query: <R>(text: string, params?: readonly unknown[]) => (texts.push(text), tx.query<R>(text, params)) }, first), opts);
  return { texts, stop: () => void (sql.transaction = original) };
}

describe.each(BACKENDS)('a commit written in parts on %s', (backend) => {
  const database = freshPgDatabase(backend);

  const stored = async (ids: readonly string[]): Promise<number> =>
    Number((await database.db.sql.query<{ n: string | number }>("SELECT count(*) AS n FROM documents WHERE collection = 'leads' AND id = ANY($1::text[])", [ids]))[0]?.n);

  let probes = 0;
  /** Runs `commitChecked` in a transaction that, with `probe`, catches the refusal, writes one more
   * lead and commits: anything a refused commit left behind would be kept and seen, and the probe
   * lead must be kept (a refusal leaves the transaction usable). Without `probe` the refusal ends
   * the transaction, as in the server (a failed statement of one-statement commits aborts it). */
  const attempt = async (writes: readonly AnyWrite[], check: (part: readonly AnyWrite[]) => Promise<void> = async () => undefined, probe = true): Promise<unknown> => {
    const after = newLead({ id: uid(900_000 + ++probes), workspaceId: WS, now: NOW }, GROUP);
    const error = await database.db
      .withStore(WS, async (store: Store) => {
        if (!store.commitChecked) throw new Error('PgStore has commitChecked');
        if (!probe) return store.commitChecked(writes, check).then(() => null);
        const refusal = await store.commitChecked(writes, check).then(
          () => null,
          (e: unknown) => e,
        );
        await store.commit([{ collection: 'leads', id: after.id, before: null, after }]);
        return refusal;
      })
      .catch((e: unknown) => e);
    if (probe) expect(await stored([after.id])).toBe(1);
    return error;
  };

  it('writes every part, checks every write once in order, and reports one commit', async () => {
    const writes = creations(1, N);
    const checked: string[] = [];
    const events: CommitEvent[] = [];
    const off = database.db.onCommit((e) => void events.push(e));
    try {
      const error = await attempt(writes, async (part) => void checked.push(...part.map((w) => w.id)));
      expect(error).toBeNull();
    } finally {
      off();
    }
    expect(checked).toEqual(writes.map((w) => w.id));
    expect(await stored(writes.map((w) => w.id))).toBe(N);
    // The parts' statements are one commit of N rows (plus the probe write after it).
    expect(events.map((e) => e.rows).sort((a, b) => a - b)).toEqual([1, N]);
    const lead = await database.db.forWorkspace(WS).get('leads', uid(N));
    expect(lead).toEqual(writes[N - 1]?.after);
  });

  it('a stale before in a later part leaves nothing of the commit', async () => {
    const existing = newLead({ id: uid(50_000), workspaceId: WS, now: NOW }, GROUP, { firstName: 'Stored' });
    await database.db.forWorkspace(WS).commit([{ collection: 'leads', id: existing.id, before: null, after: existing }]);
    const writes = creations(10_000, N);
    // In the third part: an update based on a state the document is not in.
    const stale: Lead = { ...existing, firstName: 'Read long ago' };
    writes.splice(COMMIT_PART * 2 + 5, 0, { collection: 'leads', id: existing.id, before: stale, after: { ...existing, firstName: 'Changed' } });
    const error = await attempt(writes);
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('CONFLICT');
    expect((error as DomainError).details).toMatchObject({ id: existing.id });
    expect(await stored(writes.map((w) => w.id).filter((id) => id !== existing.id))).toBe(0);
    expect((await database.db.forWorkspace(WS).get('leads', existing.id))?.firstName).toBe('Stored');
  });

  it('a check refusing a later part leaves nothing of the commit, and its refusal is the answer', async () => {
    const writes = creations(20_000, N);
    const refusedId = writes[COMMIT_PART * 3 + 3]?.id;
    const error = await attempt(writes, async (part) => {
      if (part.some((w) => w.id === refusedId)) throw new DomainError('RULE_VIOLATION', `refused ${refusedId}`);
    });
    expect((error as DomainError).code).toBe('RULE_VIOLATION');
    expect(await stored(writes.map((w) => w.id))).toBe(0);
  });

  it('a check refusing a later part wins over a store refusal of an earlier part', async () => {
    const writes = creations(30_000, N);
    // A creation of a document that exists: the store refuses the first part.
    const existing = newLead({ id: uid(60_000), workspaceId: WS, now: NOW }, GROUP);
    await database.db.forWorkspace(WS).commit([{ collection: 'leads', id: existing.id, before: null, after: existing }]);
    writes.splice(3, 0, { collection: 'leads', id: existing.id, before: null, after: existing });
    const last = writes[writes.length - 1]?.id;
    const error = await attempt(writes, async (part) => {
      if (part.some((w) => w.id === last)) throw new DomainError('RULE_VIOLATION', 'the last write is refused');
    });
    expect((error as DomainError).code).toBe('RULE_VIOLATION');
    expect(await stored(writes.map((w) => w.id).filter((id) => id !== existing.id))).toBe(0);
  });

  it('a unique index broken by a later part is the CONFLICT it always was, and nothing is left', async () => {
    // A failed statement: on PGlite (one statement) it aborts the transaction, so no probe there.
    const writes = creations(40_000, N);
    const enrollment = (n: number): AnyWrite =>
      ({ collection: 'enrollments', id: uid(n, 'e'), before: null, after: { id: uid(n, 'e'), workspaceId: WS, leadId: uid(40_000), campaignId: uid(1, 'c'), status: 'STOPPED' } }) as unknown as AnyWrite;
    // The same lead enrolled twice in one campaign: in the first part and in the last.
    writes.splice(1, 0, enrollment(1));
    writes.push(enrollment(2));
    const error = await attempt(writes, undefined, backend === 'postgres');
    expect((error as DomainError).code).toBe('CONFLICT');
    expect((error as DomainError).details).toMatchObject({ reason: 'ALREADY_ENROLLED', leadId: uid(40_000) });
    expect(await stored(writes.filter((w) => w.collection === 'leads').map((w) => w.id))).toBe(0);
    const enrollments = await database.db.sql.query("SELECT id FROM documents WHERE collection = 'enrollments'");
    expect(enrollments).toEqual([]);
  });

  it('parts that only create documents write no comparison and no upsert (plain INSERTs; PGlite: one)', async () => {
    // The statements sent during the commit: PostgreSQL's through its pg clients, PGlite's (no pg
    // client) through the database's transactions.
    const pgStatements = recordPgStatements();
    const pglite = recordTransactionStatements(database.db.sql);
    const writes = creations(70_000, N);
    try {
      expect(await attempt(writes)).toBeNull();
    } finally {
      pgStatements.stop();
      pglite.stop();
    }
    expect(await stored(writes.map((w) => w.id))).toBe(N);
    const written = (backend === 'postgres' ? pgStatements.texts : pglite.texts).filter((t) => t.includes('INSERT INTO documents'));
    // One statement per part (PGlite: one for the whole commit), then the probe lead's own commit
    // (one write: the checking statement).
    expect(written).toHaveLength(backend === 'postgres' ? Math.ceil(N / COMMIT_PART) + 1 : 2);
    expect(written.slice(0, -1).filter((t) => t.includes('ON CONFLICT'))).toEqual([]);
    expect(written.at(-1)).toContain('ON CONFLICT');
  });

  it('a creation over a deleted document in a later part brings it back, as the checking statement does', async () => {
    const gone = newLead({ id: uid(80_000), workspaceId: WS, now: NOW }, GROUP, { firstName: 'Deleted' });
    const store = database.db.forWorkspace(WS);
    await store.commit([{ collection: 'leads', id: gone.id, before: null, after: gone }]);
    await store.commit([{ collection: 'leads', id: gone.id, before: gone, after: null }]);
    const writes = creations(81_000, N);
    const back: Lead = { ...gone, firstName: 'Back' };
    writes.splice(COMMIT_PART * 2 + 7, 0, { collection: 'leads', id: gone.id, before: null, after: back });
    const checked: string[] = [];
    expect(await attempt(writes, async (part) => void checked.push(...part.map((w) => w.id)))).toBeNull();
    expect(await stored(writes.map((w) => w.id))).toBe(N + 1);
    expect(await database.db.forWorkspace(WS).get('leads', gone.id)).toEqual(back);
    // Every write was checked before the answer (the check may run again when the commit is rewritten).
    expect(new Set(checked)).toEqual(new Set(writes.map((w) => w.id)));
  });

  it('a creation of a live document\'s id in a later part is the CONFLICT the checking statement gives, and nothing is left', async () => {
    const live = newLead({ id: uid(90_000), workspaceId: WS, now: NOW }, GROUP, { firstName: 'Live' });
    await database.db.forWorkspace(WS).commit([{ collection: 'leads', id: live.id, before: null, after: live }]);
    const writes = creations(91_000, N);
    writes.splice(COMMIT_PART + 3, 0, { collection: 'leads', id: live.id, before: null, after: { ...live, firstName: 'Overwritten' } });
    const error = await attempt(writes);
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('CONFLICT');
    expect((error as DomainError).details).toEqual({ collection: 'leads', id: live.id });
    expect(await stored(writes.map((w) => w.id).filter((id) => id !== live.id))).toBe(0);
    expect((await database.db.forWorkspace(WS).get('leads', live.id))?.firstName).toBe('Live');
  });
});
