/** What the webhook outbox costs a commit (sync-server/webhooks/outbox.ts), counted in statements on
 * a real database: nothing for writes that raise no event; for a workspace without endpoints, one
 * look-up the first time and nothing after while the process hears endpoint changes (and a look-up
 * each time while it does not); the events' statement only where endpoints are. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCampaign, newLead } from '../../shared/model/factories.ts';
import type { AnyWrite } from '../../shared/store.ts';
import type { SqlDatabase, SqlExecutor } from '../../sync-server/db.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { Outbox } from '../../sync-server/webhooks/outbox.ts';
import { openMigrated, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';

const NOW = '2026-11-20T10:00:00.000Z';

describe('the webhook outbox on a commit', () => {
  let t: TestDatabase;
  let sql: SqlDatabase;
  let statements: string[] = [];
  const counting: SqlExecutor = {
    query: <R>(text: string, params?: readonly unknown[]) => {
      statements.push(text.trim().split(/\s+/).slice(0, 3).join(' '));
      return sql.query<R>(text, params);
    },
  };
  beforeAll(async () => {
    t = testDatabase('pglite');
    sql = await openMigrated(t);
  });
  afterAll(async () => {
    await sql.close();
    await t.cleanup();
  });

  const campaignFlip = (ws: string): AnyWrite[] => {
    const c = newCampaign({ id: randomUUID(), workspaceId: ws, now: NOW }, 'C', randomUUID(), randomUUID());
    return [{ collection: 'campaigns', id: c.id, before: c, after: { ...c, running: true } }];
  };
  const leadCreation = (ws: string): AnyWrite[] => {
    const l = newLead({ id: randomUUID(), workspaceId: ws, now: NOW }, randomUUID(), { firstName: 'New' });
    return [{ collection: 'leads', id: l.id, before: null, after: l }];
  };

  it('costs no statement for writes that raise nothing, and one look-up per workspace without endpoints while listening', async () => {
    const outbox = new Outbox();
    outbox.setListening(true);
    const ws = randomUUID();
    const read = new PgDatabase(sql).forWorkspace(ws);
    statements = [];
    await outbox.afterCommit(read, counting, ws, leadCreation(ws));
    expect(statements).toEqual([]);
    await outbox.afterCommit(read, counting, ws, campaignFlip(ws));
    expect(statements).toEqual(['SELECT EXISTS (SELECT']);
    for (let i = 0; i < 5; i++) await outbox.afterCommit(read, counting, ws, campaignFlip(ws));
    expect(statements).toHaveLength(1);

    // Not hearing endpoint changes (another process may add one at any time): it asks each time.
    outbox.setListening(false);
    statements = [];
    await outbox.afterCommit(read, counting, ws, campaignFlip(ws));
    await outbox.afterCommit(read, counting, ws, campaignFlip(ws));
    expect(statements).toEqual(['SELECT EXISTS (SELECT', 'SELECT EXISTS (SELECT']);
  });

  it('writes the events once the workspace has an endpoint, and forgets what it knew when told of a change', async () => {
    const outbox = new Outbox();
    outbox.setListening(true);
    const ws = randomUUID();
    const read = new PgDatabase(sql).forWorkspace(ws);
    await outbox.afterCommit(read, counting, ws, campaignFlip(ws));
    await sql.query(
      `INSERT INTO webhook_endpoints (id, workspace_id, url, events, secret, key_id, secret_created_at, created_at, created_by, updated_at)
       VALUES ($1, $2, 'https://hooks.example.com/x', ARRAY['campaign.started'], 'sealed', 'k', now(), now(), 'm', now())`,
      [randomUUID(), ws],
    );
    // Another process created it: until its NOTIFY arrives this process still skips the workspace.
    statements = [];
    await outbox.afterCommit(read, counting, ws, campaignFlip(ws));
    expect(statements).toEqual([]);
    outbox.invalidate(ws);
    await outbox.afterCommit(read, counting, ws, campaignFlip(ws));
    expect(statements).toEqual(['SELECT EXISTS (SELECT', 'WITH ev AS']);
    const [row] = await sql.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = $1 AND status = 'pending'", [ws]);
    expect(row?.n).toBe(1);
  });
});
