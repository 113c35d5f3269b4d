/**
 * Two sync server processes on one Postgres fan changes out to the desktops of both: a desktop on
 * server 1 edits, a desktop on server 2 receives it live (LISTEN/NOTIFY between the servers).
 * Needs a real Postgres: runs only when DATABASE_URL is set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lead } from '../../shared/model/index.ts';
import { HeadlessDesktop, serverAdmin, startServer } from './sync-processes.ts';
import type { RunningServer, ServerEnv } from './sync-processes.ts';
import { testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';

const databaseUrl = process.env.DATABASE_URL;

describe.skipIf(!databaseUrl)('two sync servers on one Postgres', () => {
  let root = '';
  let database: TestDatabase | null = null;
  let env: ServerEnv;
  let s1: RunningServer;
  let s2: RunningServer;
  let a: HeadlessDesktop;
  let b: HeadlessDesktop;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sync-fanout-'));
    // A fresh schema, dropped afterwards like every other suite's.
    database = testDatabase('postgres');
    env = { dataDir: join(root, 'unused'), databaseUrl, schema: database.options.schema };
    const ws = await serverAdmin(env, ['create-workspace', '--name', 'Fanout', '--owner-email', 'fan@out.test']);
    const bob = await serverAdmin(env, ['create-member', '--workspace', ws.workspaceId ?? '', '--name', 'Bob', '--email', 'bob@out.test', '--role', 'member']);
    [s1, s2] = await Promise.all([startServer(env), startServer(env)]);
    [a, b] = await Promise.all([
      HeadlessDesktop.start({ server: s1.url, key: ws.apiKey ?? '', dataDir: join(root, 'a') }),
      HeadlessDesktop.start({ server: s2.url, key: bob.apiKey ?? '', dataDir: join(root, 'b') }),
    ]);
    await Promise.all([a.awaitSync(), b.awaitSync()]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all([s1?.stop(), s2?.stop()]);
    await database?.cleanup();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('delivers an edit made through server 1 to a desktop listening on server 2, live', async () => {
    const group = (await a.call<{ docs: { id: string }[] }>('$query', { collection: 'leadGroups', query: { limit: 1 } })).docs[0]?.id;
    const created = await a.call<{ leadIds: string[] }>('campaigns.leads.create', { leadGroupId: group, leads: [{ firstName: 'Fan', email: 'fan@example.test' }] });
    const id = created.leadIds[0] ?? '';
    await b.call('$waitFor', { collection: 'leads', id, field: 'firstName', value: 'Fan', timeoutMs: 20_000 });
    await b.call('campaigns.leads.setLeadFollowUp', { leadId: id, followUpAt: '2027-05-01T09:00:00.000Z' });
    await a.call('$waitFor', { collection: 'leads', id, field: 'followUpAt', value: '2027-05-01T09:00:00.000Z', timeoutMs: 20_000 });
    expect(await a.call<Lead | null>('$get', { collection: 'leads', id })).toEqual(await b.call<Lead | null>('$get', { collection: 'leads', id }));
  }, 120_000);
});
