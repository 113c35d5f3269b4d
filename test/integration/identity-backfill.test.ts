/**
 * The identity keys' backfill after an upgrade runs in the background while the server serves
 * (issue 26): on a database written by the previous version (no key columns, no keys), the upgraded
 * server answers at once; a look-up by identity key waits for its workspace (which the backfill then
 * does first) and, if that takes longer, is refused with a retryable 503 and nothing changed, only in
 * that workspace; everything else goes on; progress is in the log, /healthz and /metrics; a SIGKILL
 * mid-backfill loses nothing and the next start goes on from the last batch; two processes on one
 * PostgreSQL database never do the same batch, and writers meanwhile keep their keys right.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { storedKeys } from '../../shared/intake/identity.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { ApiKey, Lead } from '../../shared/model/index.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { buildServer } from '../../sync-server/app.ts';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { BACKFILL_NAME, IdentityBackfill, KEYS_PENDING, backfillBatch, backfillStatus } from '../../sync-server/identity-backfill.ts';
import type { BatchDone } from '../../sync-server/identity-backfill.ts';
import { loadMigrations, migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { nodeSecrets } from '../../sync-server/secrets.ts';
import { spawnServer } from './support/cli.ts';
import { BACKENDS, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';
import { until } from '../support/until.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const PROCESS_TEST_MS = 120_000;

type OldWorkspace = { workspaceId: string; apiKey: string; leadGroupId: string; leads: Lead[] };

/** What the previous version wrote: a workspace (owner, key, stages, list) and `count` leads, every
 * tenth person a second time in another spelling; documents only, no key columns (before 017). */
async function previousVersion(sql: SqlDatabase, spec: readonly { name: string; leads: number }[]): Promise<OldWorkspace[]> {
  await migrate(sql, loadMigrations().filter((m) => m.name < '017'));
  const out: OldWorkspace[] = [];
  const ids = { uuid: () => randomUUID() };
  for (const w of spec) {
    const ws = workspaceCreation(ids, NOW, { name: w.name, owner: { name: `${w.name} Owner`, email: `owner@${w.name.toLowerCase()}.test` } });
    const apiKey = nodeSecrets.newApiKey();
    const key: ApiKey = { id: randomUUID(), workspaceId: ws.workspaceId, createdAt: NOW, updatedAt: NOW, memberId: ws.ownerId, name: 'Owner key', prefix: apiKey.slice(0, 12), hash: nodeSecrets.hash(apiKey), lastUsedAt: null, revokedAt: null };
    const leads: Lead[] = [];
    for (let i = 0; i < w.leads; i++) {
      const person = i % 10 === 1 ? i - 1 : i;
      const url = i % 10 === 1 ? `https://de.linkedin.com/in/${w.name}-${person}/?trk=x` : `https://www.linkedin.com/in/${w.name.toLowerCase()}-${person}`;
      const email = i % 10 === 1 ? `P${person}@${w.name.toUpperCase()}.TEST ` : `p${person}@${w.name.toLowerCase()}.test`;
      leads.push(newLead({ id: randomUUID(), workspaceId: ws.workspaceId, now: NOW }, ws.leadGroupId, { firstName: 'P', lastName: String(person), company: w.name, socialUrl: url, email }));
    }
    const docs: { collection: string; id: string; doc: unknown }[] = [
      ...ws.writes.flatMap((x) => (x.after ? [{ collection: x.collection, id: x.id, doc: x.after }] : [])),
      { collection: 'apiKeys', id: key.id, doc: key },
      ...leads.map((l) => ({ collection: 'leads', id: l.id, doc: l })),
    ];
    for (let i = 0; i < docs.length; i += 500) {
      await sql.query(
        `INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc)
         SELECT d.collection, d.id, $2, nextval('documents_seq'), false, d.doc
           FROM jsonb_to_recordset($1::jsonb) AS d(ord int, collection text, id text, doc jsonb) ORDER BY d.ord`,
        [JSON.stringify(docs.slice(i, i + 500).map((d, ord) => ({ ord, ...d }))), ws.workspaceId],
      );
    }
    out.push({ workspaceId: ws.workspaceId, apiKey, leadGroupId: ws.leadGroupId, leads });
  }
  return out;
}

/** The leads as replication sees them: document and seq. */
const docRows = (sql: SqlDatabase, workspaceId: string) =>
  sql.query<{ id: string; seq: string; doc: unknown }>("SELECT id, seq::text AS seq, doc FROM documents WHERE collection = 'leads' AND workspace_id = $1 ORDER BY id", [workspaceId]);

type KeyRow = { id: string; seq: string; doc: Lead; pk: string | null; ek: string | null; nk: string | null };
const keyRows = (sql: SqlDatabase, workspaceId: string) =>
  sql.query<KeyRow>("SELECT id, seq::text AS seq, doc, profile_key AS pk, email_key AS ek, name_company_key AS nk FROM documents WHERE collection = 'leads' AND workspace_id = $1 ORDER BY id", [workspaceId]);

/** Every lead of the workspace has the keys the one rule gives its document. */
async function expectKeysRight(sql: SqlDatabase, workspaceId: string): Promise<void> {
  const wrong = (await keyRows(sql, workspaceId)).filter((r) => {
    const k = storedKeys(r.doc);
    return k.profile !== r.pk || k.email !== r.ek || k.nameCompany !== r.nk;
  });
  expect(wrong.map((r) => r.id)).toEqual([]);
}

type Health = { ok: boolean; identityKeys: { state: string; leadsDone?: number; leadsTotal?: number; workspacesLeft?: number } };
const health = async (url: string): Promise<Health> => (await (await fetch(`${url}/healthz`)).json()) as Health;

async function call(url: string, key: string, name: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> & { error?: { code: string; message: string; details: Record<string, unknown> } }; retryAfter: string | null }> {
  const res = await fetch(`${url}/${name}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { code: string; message: string; details: Record<string, unknown> } }, retryAfter: res.headers.get('retry-after') };
}

async function get(url: string, key: string, path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}/${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json() };
}

describe.each(BACKENDS)('the identity keys backfill of a %s database written by the previous version', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  function database(): TestDatabase {
    const t = testDatabase(backend);
    cleanups.push(() => t.cleanup());
    return t;
  }

  it('serves at once; a look-up by identity waits for its workspace or is refused with Retry-After, changing nothing, and only there; progress in the log, /healthz and /metrics', async () => {
    const t = database();
    const sql = await t.open();
    cleanups.push(() => sql.close());
    const [big, small] = await previousVersion(sql, [{ name: 'Bigco', leads: 2000 }, { name: 'Smallco', leads: 30 }]);
    if (!big || !small) throw new Error('not seeded');
    const before = await docRows(sql, big.workspaceId);
    const logs: string[] = [];
    const started = Date.now();
    // Batches of 25 with a pause: Bigco takes 80 batches, at least 12 s, well past the two requests
    // below that wait 2 s each for it.
    const app: FastifyInstance = await buildServer({ database: sql, logLevel: 'info', logStream: { write: (l: string) => void logs.push(l) }, identityBackfill: { batch: 25, pauseMs: 150, waitMs: 2_000 } });
    cleanups.push(() => app.close());
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    expect(Date.now() - started).toBeLessThan(30_000);
    const h = await health(url);
    expect(h.ok).toBe(true);
    expect(h.identityKeys).toMatchObject({ state: 'running', leadsTotal: 2030 });
    expect(logs.some((l) => l.includes('identity keys backfill: 2030 leads in 2 workspaces'))).toBe(true);

    // Smallco: the person in a third spelling is found (the request waited for the workspace if needed): no second lead.
    const found = await call(url, small.apiKey, 'campaigns.leads.create', { leadGroupId: small.leadGroupId, leads: [{ email: ' p0@SMALLCO.test', socialUrl: 'http://linkedin.com/in/SMALLCO-0/' }] });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body).toMatchObject({ created: 0 });
    const smallCount = await sql.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE collection = 'leads' AND workspace_id = $1", [small.workspaceId]);
    expect(smallCount[0]?.n).toBe(30);

    // Bigco is not done within the wait: refused, retryable, nothing written.
    const leadsBefore = await docRows(sql, big.workspaceId);
    const refused = await call(url, big.apiKey, 'campaigns.leads.create', { leadGroupId: big.leadGroupId, leads: [{ email: 'P1990@bigco.test' }] });
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.error).toMatchObject({ code: 'UNAVAILABLE', details: { reason: KEYS_PENDING, workspaceId: big.workspaceId, leadsTotal: 2000 } });
    expect(refused.body.error?.message).toMatch(/identity keys .* Retry in about \d+ s/);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(2);
    expect(await docRows(sql, big.workspaceId)).toEqual(leadsBefore);
    // The duplicates list reads the keys too; a plain search and a write that needs no look-up go on.
    const dups = await get(url, big.apiKey, 'campaigns.leads.duplicates?kind=email');
    expect(dups.status).toBe(503);
    const plain = await fetch(`${url}/campaigns.leads.search?query=Bigco&limit=5`, { headers: { authorization: `Bearer ${big.apiKey}` } });
    expect(plain.status).toBe(200);
    const tag = await call(url, big.apiKey, 'tags.create', { name: 'Upgraded' });
    expect(tag.status, JSON.stringify(tag.body)).toBe(200);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/outreach_identity_keys_backfill_leads\{state="total"\} 2030/);
    expect(metrics).toMatch(/outreach_identity_keys_backfill_workspaces_left 1\b/);

    const done = await until('the backfill to finish', async () => ((await health(url)).identityKeys.state === 'done' ? true : null), 90_000);
    expect(done).toBe(true);
    // The loop logs it on its next turn (the last batch finished the work, the next finds none).
    await until('the log to say done', async () => logs.some((l) => l.includes('identity keys backfill: done, 2030 leads')), 10_000);
    expect(logs.some((l) => /identity keys backfill: \d+ of 2030 leads/.test(l))).toBe(true);
    expect(await sql.query('SELECT 1 FROM schema_migrations WHERE name = $1', [BACKFILL_NAME])).toHaveLength(1);
    await expectKeysRight(sql, big.workspaceId);
    await expectKeysRight(sql, small.workspaceId);
    // No lead document nor its seq changed (no replica pulls them again).
    expect(await docRows(sql, big.workspaceId)).toEqual(before);
    // Now the same call finds the person, and the duplicates list has Bigco's twins.
    const again = await call(url, big.apiKey, 'campaigns.leads.create', { leadGroupId: big.leadGroupId, leads: [{ email: 'P1990@bigco.test' }] });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ created: 0 });
    const listed = await get(url, big.apiKey, 'campaigns.leads.duplicates?kind=email&limit=200');
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect((listed.body as { groups: unknown[] }).groups).toHaveLength(200);
    expect(await (await fetch(`${url}/metrics`)).text()).toMatch(/outreach_identity_keys_backfill_workspaces_left 0\b/);
  }, PROCESS_TEST_MS);

  it('a SIGKILL mid-backfill loses nothing: the next start goes on from the last batch committed, visiting every lead once', async () => {
    const t = database();
    const sql = await t.open();
    const seeded = await previousVersion(sql, [{ name: 'Killco', leads: 600 }, { name: 'Restartco', leads: 400 }]);
    await migrate(sql);
    const before = new Map<string, KeyRow[]>();
    for (const w of seeded) before.set(w.workspaceId, await keyRows(sql, w.workspaceId));
    await sql.close();

    const first = await spawnServer({ ...t.env, LOG_LEVEL: 'info', IDENTITY_BACKFILL_BATCH: '20', IDENTITY_BACKFILL_PAUSE_MS: '60' });
    await until('some progress', async () => ((await health(first.url)).identityKeys.leadsDone ?? 0) >= 100, 60_000);
    first.proc.kill('SIGKILL');
    await first.exited;

    const mid = await t.open();
    const rows = await mid.query<{ visited: string; total: string; finished: boolean }>('SELECT visited::text, total::text, finished_at IS NOT NULL AS finished FROM identity_key_backfill');
    const visited = rows.reduce((n, r) => n + Number(r.visited), 0);
    expect(visited).toBeGreaterThanOrEqual(100);
    expect(visited).toBeLessThan(1000);
    await mid.close();

    const second = await spawnServer({ ...t.env, LOG_LEVEL: 'info', IDENTITY_BACKFILL_BATCH: '20' });
    await until('the backfill to finish', async () => (await health(second.url)).identityKeys.state === 'done', 90_000);
    expect(second.output()).toMatch(new RegExp(`identity keys backfill: resuming at ${visited} of 1000 leads`));
    second.proc.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    const end = await t.open();
    try {
      // Every lead visited exactly once across both processes: no batch was done twice or skipped.
      const per = await end.query<{ workspace_id: string; visited: string; total: string }>('SELECT workspace_id, visited::text, total::text FROM identity_key_backfill WHERE finished_at IS NOT NULL');
      expect(per.map((r) => [r.workspace_id, Number(r.visited)]).sort()).toEqual(seeded.map((w) => [w.workspaceId, w.leads.length]).sort());
      for (const w of seeded) {
        await expectKeysRight(end, w.workspaceId);
        expect((await keyRows(end, w.workspaceId)).map((r) => [r.id, r.seq, r.doc])).toEqual((before.get(w.workspaceId) ?? []).map((r) => [r.id, r.seq, r.doc]));
      }
    } finally {
      await end.close();
    }
  }, PROCESS_TEST_MS);

  it('does the workspace a request waits for first, then the smallest', async () => {
    const t = database();
    const sql = await t.open();
    cleanups.push(() => sql.close());
    const [a, b, c] = await previousVersion(sql, [{ name: 'Aco', leads: 50 }, { name: 'Bco', leads: 20 }, { name: 'Cco', leads: 80 }]);
    if (!a || !b || !c) throw new Error('not seeded');
    await migrate(sql);
    const first = await backfillBatch(sql, 10);
    expect(first).toMatchObject({ workspaceId: b.workspaceId, visited: 10, fromSeq: 0, finished: false });
    await sql.query('UPDATE identity_key_backfill SET wanted_at = now() WHERE workspace_id = $1', [c.workspaceId]);
    expect(await backfillBatch(sql, 10)).toMatchObject({ workspaceId: c.workspaceId, visited: 10 });
    expect(await backfillStatus(sql)).toMatchObject({ state: 'running', workspaces: 3, workspacesLeft: 3, leadsTotal: 150, leadsDone: 20 });
  });
});

describe.each(BACKENDS.filter((b) => b === 'postgres'))('two server processes on one %s database', (backend) => {
  it('never do the same batch twice, and writers meanwhile wait at most for a batch and keep their keys right', async () => {
    const t = testDatabase(backend);
    const one = await t.open();
    const two = await t.open();
    try {
      const seeded = await previousVersion(one, [150, 160, 170, 180].map((n, i) => ({ name: `Par${i}co`, leads: n })));
      await migrate(one);
      const batches: (BatchDone & { by: number })[] = [];
      const loops = [one, two].map((db, by) => new IdentityBackfill(db, { batch: 10, onBatch: (b) => batches.push({ ...b, by }) }));
      // A writer in every workspace meanwhile: changes emails of leads not visited yet and visited already.
      const writer = new PgDatabase(two);
      let stop = false;
      let writes = 0;
      const writing = (async () => {
        for (let i = 0; !stop && i < 400; i++) {
          const w = seeded[i % seeded.length];
          const lead = w?.leads[(i * 7) % w.leads.length];
          if (!w || !lead) continue;
          const store = writer.forWorkspace(w.workspaceId);
          const current = await store.get('leads', lead.id);
          if (!current) continue;
          await store.commit([{ collection: 'leads', id: lead.id, before: current, after: { ...current, email: `Changed${i}@Par.TEST`, updatedAt: NOW } }]);
          writes++;
        }
      })();
      await Promise.all(loops.map((l) => l.runToEnd()));
      stop = true;
      await writing;
      expect(writes).toBeGreaterThan(0);
      // Both processes worked; each batch (workspace and seq range) was done by one of them, once,
      // and each workspace's batches follow one another from 0 to its upto_seq.
      expect(new Set(batches.map((b) => b.by))).toEqual(new Set([0, 1]));
      const keys = batches.map((b) => `${b.workspaceId}:${b.fromSeq}`);
      expect(new Set(keys).size).toBe(keys.length);
      const ranges = await one.query<{ workspace_id: string; upto_seq: string; visited: string; total: string }>('SELECT workspace_id, upto_seq::text, visited::text, total::text FROM identity_key_backfill');
      for (const r of ranges) {
        const mine = batches.filter((b) => b.workspaceId === r.workspace_id).sort((x, y) => x.fromSeq - y.fromSeq);
        expect(mine[0]?.fromSeq).toBe(0);
        for (let i = 1; i < mine.length; i++) expect(mine[i]?.fromSeq).toBe(mine[i - 1]?.toSeq);
        expect(mine[mine.length - 1]?.toSeq).toBe(Number(r.upto_seq));
        expect(mine.reduce((n, b) => n + b.visited, 0)).toBe(Number(r.visited));
      }
      for (const w of seeded) await expectKeysRight(one, w.workspaceId);
    } finally {
      await one.close();
      await two.close();
      await t.cleanup();
    }
  }, PROCESS_TEST_MS);
});
