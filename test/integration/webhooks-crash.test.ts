/** A sync server killed (SIGKILL, no cleanup) after a change committed and while its webhook was on
 * the way: the event is in the outbox of the change's transaction, so the restarted server delivers
 * it, with the same webhook-id and body, once, and the reference library verifies it. Real server
 * processes; PGlite always, PostgreSQL too when DATABASE_URL is set. */
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, spawnServer } from './support/cli.ts';
import type { ServerProcess } from './support/cli.ts';
import { BACKENDS, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';
import { startReceiver, verify } from './support/webhook-receiver.ts';
import type { Receiver } from './support/webhook-receiver.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call<T>(server: ServerProcess, key: string, name: string, input: Record<string, unknown>, method: 'GET' | 'POST' = 'POST'): Promise<T> {
  const url = method === 'GET' ? `${server.url}/${name}?${new URLSearchParams(input as Record<string, string>).toString()}` : `${server.url}/${name}`;
  const res = await fetch(url, { method, headers: { authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) }, body: method === 'POST' ? JSON.stringify(input) : undefined });
  const body = (await res.json()) as T;
  if (res.status !== 200) throw new Error(`${name} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

describe.each(BACKENDS)('webhooks across a crash (%s)', (backend) => {
  let t: TestDatabase | undefined;
  let rx: Receiver | undefined;
  let servers: ServerProcess[] = [];
  afterEach(async () => {
    for (const s of servers) s.proc.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
    servers = [];
    await rx?.close();
    await t?.cleanup();
  });

  it('delivers after a restart, once, what a killed server had committed but not delivered', async () => {
    t = testDatabase(backend);
    const env = { ...t.env, ALLOW_PRIVATE_SENDER_HOSTS: '1', WEBHOOKS_ALLOW_HTTP: '1', CREDENTIALS_KEY: 'a'.repeat(64) };
    const created = await runCli(['create-workspace', '--name', 'Crashy', '--owner-email', 'owner@crashy.test'], env);
    expect(created.code, created.stderr).toBe(0);
    const { apiKey } = JSON.parse(created.stdout) as { apiKey: string };
    rx = await startReceiver();

    const first = await spawnServer(env);
    servers.push(first);
    const ep = await call<{ id: string; secret: string }>(first, apiKey, 'webhooks.create', { url: `${rx.url}/crm`, events: ['lead.stage_changed'] });
    rx.secrets.set('/crm', ep.secret);
    const { stages } = await call<{ stages: { id: string; category: string }[] }>(first, apiKey, 'pipelineStages.getAll', {}, 'GET');
    const campaign = await call<{ leadGroupId: string }>(first, apiKey, 'campaigns.create', { name: 'Crash' });
    const { leadIds } = await call<{ leadIds: string[] }>(first, apiKey, 'campaigns.leads.create', { leadGroupId: campaign.leadGroupId, leads: [{ firstName: 'Kim', email: 'kim@crash.example' }] });

    // The server dies the moment its webhook arrives, before it can hear the answer.
    rx.onRequest = () => {
      first.proc.kill('SIGKILL');
      return 'hang';
    };
    await call(first, apiKey, 'campaigns.leads.updateLeadStage', { leadId: leadIds[0], pipelineStageId: stages.find((s) => s.category === 'ENGAGED')?.id });
    await first.exited;
    expect(rx.at('/crm')).toHaveLength(1);
    rx.onRequest = null;

    const second = await spawnServer(env);
    servers.push(second);
    // PostgreSQL: the dead process's lease on the endpoint lapses first (15 s).
    const [lost, again] = await rx.waitFor('/crm', 2, 40_000);
    if (!lost || !again) throw new Error('not delivered again');
    expect(again.answered).toBe(200);
    expect(again.verifyError).toBeNull();
    expect(() => verify(ep.secret, again)).not.toThrow();
    expect(again.headers['webhook-id']).toBe(lost.headers['webhook-id']);
    expect(again.body).toBe(lost.body);
    expect(JSON.parse(again.body)).toMatchObject({ type: 'lead.stage_changed', data: { lead: { id: leadIds[0], email: 'kim@crash.example' } } });
    await sleep(1_500);
    expect(rx.at('/crm')).toHaveLength(2);
    const log = await call<{ deliveries: { status: string; attempts: number; eventId: string }[] }>(second, apiKey, 'webhooks.deliveries.list', { endpointId: ep.id }, 'GET');
    expect(log.deliveries).toEqual([expect.objectContaining({ status: 'succeeded', attempts: 1, eventId: lost.headers['webhook-id'] })]);
  }, 120_000);
});
