/** Migration 019 on a database that already has copies queued by the old "Send again" (a second
 * waiting delivery of the same event for the same endpoint): the copies are closed as failed,
 * unsent, the original still waits, and from then on the database refuses a second waiting one. */
import { afterEach, describe, expect, it } from 'vitest';
import type { SqlDatabase } from '../../sync-server/db.ts';
import { loadMigrations, migrate } from '../../sync-server/migrate.ts';
import { BACKENDS, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';

describe.each(BACKENDS)('migration 019 (%s)', (backend) => {
  let t: TestDatabase | undefined;
  let sql: SqlDatabase | undefined;
  afterEach(async () => {
    await sql?.close();
    await t?.cleanup();
  });

  it('closes the copies waiting beside their original, keeps the original waiting, then refuses another', async () => {
    t = testDatabase(backend);
    sql = await t.open();
    const all = loadMigrations();
    const before = all.filter((m) => m.name < '019_');
    await migrate(sql, before);
    await sql.query(
      `INSERT INTO webhook_endpoints (id, workspace_id, url, events, secret, key_id, secret_created_at, created_at, created_by, updated_at)
       VALUES ('e1', 'w1', 'https://hooks.example.com/in', ARRAY['lead.replied'], 'sealed', 'k1', now(), now(), 'm1', now())`,
    );
    await sql.query(`INSERT INTO webhook_events (id, workspace_id, type, body) VALUES ('msg_a', 'w1', 'lead.replied', '{}'), ('msg_b', 'w1', 'lead.replied', '{}')`);
    const rows: [string, string, string, string | null][] = [
      ['original', 'msg_a', 'pending', null],
      ['copy-1', 'msg_a', 'pending', 'original'],
      ['copy-2', 'msg_a', 'pending', 'original'],
      ['delivered', 'msg_b', 'succeeded', null],
      ['resend', 'msg_b', 'pending', 'delivered'],
    ];
    for (const [id, event, status, of] of rows) {
      await sql.query("INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, status, redelivery_of) VALUES ($1, 'w1', 'e1', $2, $3, $4)", [id, event, status, of]);
    }
    expect(await migrate(sql, all)).toEqual(all.filter((m) => m.name >= '019_').map((m) => m.name));
    const after = await sql.query<{ id: string; status: string; finished: boolean; attempts: number }>('SELECT id, status, finished_at IS NOT NULL AS finished, attempts FROM webhook_deliveries ORDER BY seq');
    expect(after).toEqual([
      { id: 'original', status: 'pending', finished: false, attempts: 0 },
      { id: 'copy-1', status: 'failed', finished: true, attempts: 0 },
      { id: 'copy-2', status: 'failed', finished: true, attempts: 0 },
      { id: 'delivered', status: 'succeeded', finished: false, attempts: 0 },
      { id: 'resend', status: 'pending', finished: false, attempts: 0 },
    ]);
    await expect(sql.query("INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id) VALUES ('copy-3', 'w1', 'e1', 'msg_a')")).rejects.toMatchObject({ code: '23505' });
  });
});
