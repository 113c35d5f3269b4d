/** Enrollment invariants under concurrency (issue 12): a lead runs at most one sequence at a time and
 * is enrolled in a campaign at most once, even when two bulk enrollments of the same leads race —
 * on PostgreSQL across two server processes, on PGlite inside one. The database holds both
 * invariants (unique indexes of 005_enrollment_invariants.sql), and every mutating call takes the
 * workspace's writer lock before its first read, so the loser of a race sees the winner's
 * enrollments and answers alreadyEnrolled instead of enrolling again. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEnrollment, newLead } from '../../shared/model/factories.ts';
import type { Enrollment } from '../../shared/model/index.ts';
import { DomainError } from '../../shared/errors.ts';
import { createWorkspace } from '../../sync-server/admin.ts';
import type { AdminDeps } from '../../sync-server/admin.ts';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { loadMigrations, migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { seededRandom } from '../support/harness.ts';
import { spawnServer } from './support/cli.ts';
import type { ServerProcess } from './support/cli.ts';
import { BACKENDS, openMigrated, testDatabase } from './support/db.ts';
import type { Backend, TestDatabase } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const ROUNDS = 50;
const LEADS_PER_ROUND = 6;

type Caller = (name: string, body: Record<string, unknown>) => Promise<{ status: number; body: Record<string, unknown> }>;

function caller(url: string, key: string): Caller {
  return async (name, body) => {
    const res = await fetch(`${url}/${name}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
}

/** IN_PROGRESS enrollments per lead, and enrollments per lead and campaign, counted in SQL. */
async function violations(sql: SqlDatabase, workspaceId: string): Promise<{ running: number; perCampaign: number; runningLeads: number }> {
  const [row] = await sql.query<{ running: string; per_campaign: string; running_leads: string }>(
    `SELECT
       (SELECT count(*) FROM (SELECT doc->>'leadId' FROM documents
          WHERE collection = 'enrollments' AND workspace_id = $1 AND NOT deleted AND doc->>'status' = 'IN_PROGRESS'
          GROUP BY 1 HAVING count(*) > 1) r) AS running,
       (SELECT count(*) FROM (SELECT doc->>'leadId', doc->>'campaignId' FROM documents
          WHERE collection = 'enrollments' AND workspace_id = $1 AND NOT deleted
          GROUP BY 1, 2 HAVING count(*) > 1) c) AS per_campaign,
       (SELECT count(DISTINCT doc->>'leadId') FROM documents
          WHERE collection = 'enrollments' AND workspace_id = $1 AND NOT deleted AND doc->>'status' = 'IN_PROGRESS') AS running_leads`,
    [workspaceId],
  );
  return { running: Number(row?.running), perCampaign: Number(row?.per_campaign), runningLeads: Number(row?.running_leads) };
}

/** 50 rounds of two concurrent bulk enrollments of the same fresh leads, through `a` and `b`. */
async function race(a: Caller, b: Caller, sql: SqlDatabase, workspaceId: string, twoCampaigns: boolean): Promise<void> {
  const created = await a('campaigns.create', { name: `Race A ${twoCampaigns}` });
  const other = await a('campaigns.create', { name: `Race B ${twoCampaigns}` });
  expect(created.status).toBe(200);
  expect(other.status).toBe(200);
  const first = created.body as { id: string; leadGroupId: string };
  const second = other.body as { id: string };
  const answers: { enrolled: number; alreadyEnrolled: number; stoppedActive: number }[] = [];
  let enrolledLeads = (await violations(sql, workspaceId)).runningLeads;
  for (let round = 0; round < ROUNDS; round++) {
    const rows = Array.from({ length: LEADS_PER_ROUND }, (_, i) => ({ firstName: `R${round}`, lastName: `L${i}`, email: `race-${twoCampaigns ? 'two' : 'one'}-${round}-${i}@example.com` }));
    const made = await a('campaigns.leads.create', { leadGroupId: first.leadGroupId, leads: rows });
    expect(made.status).toBe(200);
    const leadIds = (made.body as { leadIds: string[] }).leadIds;
    expect(leadIds).toHaveLength(LEADS_PER_ROUND);
    enrolledLeads += LEADS_PER_ROUND;
    const enroll = (call: Caller, campaignId: string) =>
      call('campaigns.leads.bulkEnrollInCampaign', {
        scope: { kind: 'workspace' },
        selection: { mode: 'ids', leadIds },
        destination: { kind: 'existing', campaignId },
        sender: 'unassign',
      });
    const [x, y] = await Promise.all([enroll(a, first.id), enroll(b, twoCampaigns ? second.id : first.id)]);
    expect(x.status, JSON.stringify(x.body)).toBe(200);
    expect(y.status, JSON.stringify(y.body)).toBe(200);
    answers.push(x.body as (typeof answers)[number], y.body as (typeof answers)[number]);
    const v = await violations(sql, workspaceId);
    expect(v, `round ${round}`).toEqual({ running: 0, perCampaign: 0, runningLeads: enrolledLeads });
  }
  // What the calls answered adds up to what the database holds.
  for (let i = 0; i < answers.length; i += 2) {
    const x = answers[i] as (typeof answers)[number];
    const y = answers[i + 1] as (typeof answers)[number];
    if (twoCampaigns) {
      // Both enroll every lead; the later one stops the earlier one's sequences.
      expect([x.enrolled, y.enrolled]).toEqual([LEADS_PER_ROUND, LEADS_PER_ROUND]);
      expect(x.stoppedActive + y.stoppedActive).toBe(LEADS_PER_ROUND);
    } else {
      expect(x.enrolled + y.enrolled).toBe(LEADS_PER_ROUND);
      expect(x.alreadyEnrolled + y.alreadyEnrolled).toBe(LEADS_PER_ROUND);
    }
  }
}

const deps: AdminDeps = { clock: { now: () => new Date() }, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(5) };

describe.runIf(BACKENDS.includes('postgres'))('two server processes on one PostgreSQL', () => {
  let t: TestDatabase;
  let sql: SqlDatabase;
  let servers: ServerProcess[] = [];
  let workspaceId = '';
  let key = '';

  beforeAll(async () => {
    t = testDatabase('postgres');
    sql = await openMigrated(t);
    const ws = await createWorkspace(new PgDatabase(sql), { name: 'Race', ownerEmail: 'race@race.test' }, deps);
    workspaceId = ws.workspaceId;
    key = ws.apiKey;
    servers = await Promise.all([spawnServer({ ...t.env, RATE_LIMIT_PER_MINUTE: '1000000' }), spawnServer({ ...t.env, RATE_LIMIT_PER_MINUTE: '1000000' })]);
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
    await sql?.close();
    await t?.cleanup();
  });

  it('enrolls each lead once when two processes enroll the same leads in the same campaign, 50 times', async () => {
    const [p, q] = servers as [ServerProcess, ServerProcess];
    await race(caller(p.url, key), caller(q.url, key), sql, workspaceId, false);
  }, 300_000);

  it('keeps one running sequence per lead when two processes enroll the same leads in two campaigns, 50 times', async () => {
    const [p, q] = servers as [ServerProcess, ServerProcess];
    await race(caller(p.url, key), caller(q.url, key), sql, workspaceId, true);
  }, 300_000);
});

describe('one server process on PGlite', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer('pglite', { rateLimitPerMinute: 1_000_000 });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it('enrolls each lead once under concurrent bulk enrollments, same and different campaigns', async () => {
    const call = caller(s.url, s.ours.memberKey);
    await race(call, call, s.sql, s.ours.workspaceId, false);
    await race(call, call, s.sql, s.ours.workspaceId, true);
  }, 300_000);
});

describe.each(BACKENDS)('the database holds the enrollment invariants on %s', (backend: Backend) => {
  let t: TestDatabase;
  let sql: SqlDatabase;
  let db: PgDatabase;
  const WS = 'a0000000-0000-4000-8000-0000000000e1';
  const at = '2026-11-01T00:00:00.000Z';
  const lead = newLead({ id: 'd0000000-0000-4000-8000-0000000000e1', workspaceId: WS, now: at }, 'b0000000-0000-4000-8000-0000000000e1');
  const enrollment = (n: number, campaignId: string, fields: Partial<Enrollment> = {}): Enrollment =>
    newEnrollment({ id: `e0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`, workspaceId: WS, now: at }, lead.id, campaignId, fields);
  const C1 = 'c0000000-0000-4000-8000-0000000000e1';
  const C2 = 'c0000000-0000-4000-8000-0000000000e2';

  beforeAll(async () => {
    t = testDatabase(backend);
    sql = await openMigrated(t);
    db = new PgDatabase(sql);
    await db.forWorkspace(WS).commit([{ collection: 'leads', id: lead.id, before: null, after: lead }]);
  });
  afterAll(async () => {
    await sql?.close();
    await t?.cleanup();
  });

  const seqNow = async () => Number((await sql.query<{ m: string }>('SELECT max(seq) AS m FROM documents'))[0]?.m);
  const enrollmentCount = async () => Number((await sql.query<{ n: string }>("SELECT count(*) AS n FROM documents WHERE collection = 'enrollments'"))[0]?.n);

  it('refuses a second running sequence for a lead with CONFLICT (ALREADY_RUNNING), committing nothing', async () => {
    const store = db.forWorkspace(WS);
    await store.commit([{ collection: 'enrollments', id: enrollment(1, C1).id, before: null, after: enrollment(1, C1) }]);
    const seq = await seqNow();
    const err = await store
      .commit([
        { collection: 'leads', id: lead.id, before: lead, after: { ...lead, firstName: 'Changed' } },
        { collection: 'enrollments', id: enrollment(2, C2).id, before: null, after: enrollment(2, C2) },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('CONFLICT');
    expect((err as DomainError).status).toBe(409);
    expect((err as DomainError).details).toMatchObject({ reason: 'ALREADY_RUNNING', leadId: lead.id });
    expect(await seqNow()).toBe(seq);
    expect((await store.get('leads', lead.id))?.firstName).toBe(lead.firstName);
    expect(await enrollmentCount()).toBe(1);
  });

  it('refuses a second enrollment of a lead in the same campaign with CONFLICT (ALREADY_ENROLLED), committing nothing', async () => {
    const store = db.forWorkspace(WS);
    const seq = await seqNow();
    const stopped = enrollment(3, C1, { status: 'STOPPED' });
    const err = await store.commit([{ collection: 'enrollments', id: stopped.id, before: null, after: stopped }]).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe('CONFLICT');
    expect((err as DomainError).details).toMatchObject({ reason: 'ALREADY_ENROLLED', leadId: lead.id, campaignId: C1 });
    expect(await seqNow()).toBe(seq);
    // Stopping the running one and starting another campaign in one commit is fine.
    const first = enrollment(1, C1);
    await store.commit([
      { collection: 'enrollments', id: first.id, before: first, after: { ...first, status: 'STOPPED' } },
      { collection: 'enrollments', id: enrollment(4, C2).id, before: null, after: enrollment(4, C2) },
    ]);
    expect(await enrollmentCount()).toBe(2);
  });

  it('repairs duplicates an older database holds before creating the indexes', async () => {
    const old = testDatabase(backend);
    const oldSql = await old.open();
    try {
      const all = loadMigrations();
      await migrate(oldSql, all.filter((m) => m.name < '005'));
      const dupes = [
        enrollment(11, C1, { createdAt: '2026-10-01T00:00:00.000Z' }),
        enrollment(12, C1, { createdAt: '2026-10-02T00:00:00.000Z' }),
        enrollment(13, C2, { createdAt: '2026-10-03T00:00:00.000Z' }),
      ];
      // Written as that version's server wrote them: this version's commit also fills columns of
      // later migrations (017's identity keys), which that database does not have yet.
      for (const e of dupes) {
        await oldSql.query("INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc) VALUES ('enrollments', $1, $2, nextval('documents_seq'), false, $3::jsonb)", [e.id, WS, JSON.stringify(e)]);
      }
      const seq = Number((await oldSql.query<{ m: string }>('SELECT max(seq) AS m FROM documents'))[0]?.m);
      expect(await migrate(oldSql, all)).toContain('005_enrollment_invariants.sql');
      const rows = await oldSql.query<{ id: string; deleted: boolean; status: string; seq: string }>(
        "SELECT id, deleted, doc->>'status' AS status, seq FROM documents WHERE collection = 'enrollments' ORDER BY id",
      );
      expect(rows.map((r) => [r.id, r.deleted, r.status])).toEqual([
        [dupes[0]?.id, false, 'IN_PROGRESS'],
        [dupes[1]?.id, true, 'IN_PROGRESS'],
        [dupes[2]?.id, false, 'STOPPED'],
      ]);
      // The repaired rows replicate: they carry new seqs.
      expect(rows.filter((r) => Number(r.seq) > seq).map((r) => r.id)).toEqual([dupes[1]?.id, dupes[2]?.id]);
    } finally {
      await oldSql.close();
      await old.cleanup();
    }
  });
});
