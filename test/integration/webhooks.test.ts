/** Webhooks end to end: a real sync server delivers to a real receiver on 127.0.0.1 that verifies
 * every request with the Standard Webhooks reference library (`standardwebhooks`). Events raised by
 * operations and by replication pushes, rotation with two signatures, replay refused by the library,
 * retries in order with the same webhook-id, disabling, rollbacks raising nothing, isolation between
 * workspaces, refused input, dry runs. PGlite always, PostgreSQL too when DATABASE_URL is set. */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { newMessage } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import { FakeClock } from '../support/harness.ts';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { LOOPBACK_WEBHOOKS, startReceiver, verify } from './support/webhook-receiver.ts';
import type { Receiver, Received } from './support/webhook-receiver.ts';
import { until } from '../support/until.ts';

/** The real time: receivers refuse signatures more than 5 minutes from their own clock. */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

/** The real time, moved forward on request (to pass a retry's time without waiting for it). */
class ShiftedClock extends FakeClock {
  shiftMs = 0;
  override now(): Date {
    return new Date(Date.now() + this.shiftMs);
  }
}

type Endpoint = { id: string; url: string; secret: string; events: string[]; enabled: boolean; disabledReason: string | null; failingSince: string | null; pendingDeliveries: number };
type Delivery = { id: string; eventId: string; type: string; status: string; attempts: number; body: string; redeliveryOf: string | null; attemptLog: { attempt: number; responseStatus: number | null; responseExcerpt: string; requestHeaders: Record<string, string>; error: string | null; durationMs: number }[] };
type Payload = { type: string; timestamp: string; data: Record<string, unknown> & { lead?: { id: string; email: string } } };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
      webhooks: LOOPBACK_WEBHOOKS,
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
    // A UUIDv7 without dashes: time-ordered, as every id the hosts make (the version nibble is 7).
    expect(got.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{12}7[0-9a-f]{19}$/);
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
    }, 10_000);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ eventId: got.headers['webhook-id'], type: 'lead.stage_changed', status: 'succeeded', attempts: 1, body: got.body });
    expect(log[0]?.attemptLog[0]).toMatchObject({ attempt: 1, responseStatus: 200, responseExcerpt: 'ok', error: null });
    expect(log[0]?.attemptLog[0]?.requestHeaders['webhook-signature']).toBe(got.headers['webhook-signature']);
    await sleep(300);
    expect(rx.at(other.path)).toHaveLength(0);
    expect(await deliveries(other.id)).toHaveLength(0);
  });

  it('signs with both secrets for 24 hours after a rotation, each verifying alone, then with the new one only', async () => {
    const ep = await endpoint(['lead.stage_changed']);
    const rotated = await s.call<{ secret: string; previousSecretExpiresAt: string }>(s.ours.ownerKey, 'webhooks.rotateSecret', { endpointId: ep.id });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(rotated.body.secret).not.toBe(ep.secret);
    expect(Date.parse(rotated.body.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3_600_000);
    rx.secrets.set(ep.path, rotated.body.secret);
    await moveLead(leadIds[1] ?? '', 'ENGAGED');
    const [during] = await rx.waitFor(ep.path, 1);
    if (!during) throw new Error('nothing received');
    const sigs = (during.headers['webhook-signature'] ?? '').split(' ');
    expect(sigs).toHaveLength(2);
    // A receiver still on the old secret and one already on the new one both accept it.
    expect(() => verify(rotated.body.secret, during)).not.toThrow();
    expect(() => verify(ep.secret, during)).not.toThrow();
    expect(() => verify(rotated.body.secret, { ...during, headers: { ...during.headers, 'webhook-signature': sigs[0] ?? '' } })).not.toThrow();
    expect(() => verify(ep.secret, { ...during, headers: { ...during.headers, 'webhook-signature': sigs[1] ?? '' } })).not.toThrow();
    const listed = await s.call<{ endpoints: (Endpoint & { previousSecretExpiresAt: string | null })[] }>(s.ours.ownerKey, 'webhooks.list');
    expect(listed.body.endpoints.find((e) => e.id === ep.id)?.previousSecretExpiresAt).toBe(rotated.body.previousSecretExpiresAt);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');

    // The overlap has passed (its end moved to the past, as 24 hours would).
    await s.sql.query('UPDATE webhook_endpoints SET previous_expires_at = $2 WHERE id = $1', [ep.id, new Date(Date.now() - 1000)]);
    await moveLead(leadIds[1] ?? '', 'MEETING_BOOKED');
    const after = (await rx.waitFor(ep.path, 2))[1];
    if (!after) throw new Error('nothing received');
    expect((after.headers['webhook-signature'] ?? '').split(' ')).toHaveLength(1);
    expect(() => verify(rotated.body.secret, after)).not.toThrow();
    expect(() => verify(ep.secret, after)).toThrow('No matching signature found');
  });

  it('an old request replayed is refused by the receiver library, and so is one whose timestamp was changed', async () => {
    const ep = await endpoint(['lead.stage_changed']);
    await moveLead(leadIds[2] ?? '', 'ENGAGED');
    const [got] = await rx.waitFor(ep.path, 1);
    if (!got) throw new Error('nothing received');
    expect(() => verify(ep.secret, got)).not.toThrow();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 6 * 60_000 });
    expect(() => verify(ep.secret, got)).toThrow('Message timestamp too old');
    const fresh = { ...got.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)) };
    expect(() => verify(ep.secret, { ...got, headers: fresh })).toThrow('No matching signature found');
    vi.useRealTimers();
  });

  it('retries a receiver that fails, with the same webhook-id, and holds later events until it recovers, then delivers them in order', async () => {
    const ep = await endpoint(['lead.stage_changed']);
    rx.scripts.set(ep.path, [500, 503]);
    await moveLead(leadIds[3] ?? '', 'ENGAGED');
    await moveLead(leadIds[3] ?? '', 'MEETING_BOOKED');
    await moveLead(leadIds[3] ?? '', 'WON');
    const got = await rx.waitFor(ep.path, 5);
    const ids = got.map((r) => r.headers['webhook-id']);
    expect(got.map((r) => r.answered)).toEqual([500, 503, 200, 200, 200]);
    expect(ids[0]).toBe(ids[1]);
    expect(ids[1]).toBe(ids[2]);
    expect(new Set(ids).size).toBe(3);
    expect(got.map((r) => (payload(r).data.stage as { category: string }).category)).toEqual(['ENGAGED', 'ENGAGED', 'ENGAGED', 'MEETING_BOOKED', 'WON']);
    // Each attempt is signed anew (its own timestamp) and verifies.
    expect(got.every((r) => r.verifyError === null)).toBe(true);
    const log = await until('every delivery to succeed', async () => {
      const d = await deliveries(ep.id);
      return d.length === 3 && d.every((x) => x.status === 'succeeded') ? d : null;
    }, 10_000);
    const first = log[2];
    expect(first?.attempts).toBe(3);
    expect(first?.attemptLog.map((a) => a.responseStatus)).toEqual([500, 503, 200]);
    expect(first?.attemptLog[0]?.responseExcerpt).toBe('refused with 500: as scripted');
    const listed = await s.call<{ endpoints: Endpoint[] }>(s.ours.ownerKey, 'webhooks.list');
    expect(listed.body.endpoints.find((e) => e.id === ep.id)).toMatchObject({ enabled: true, failingSince: null, pendingDeliveries: 0 });
    await sleep(400);
    expect(rx.at(ep.path)).toHaveLength(5);
  });

  it('gives a delivery up after its last retry and goes on with the next; an endpoint answering 410 Gone is disabled with the reason, and enabling it sends what waited', async () => {
    const ep = await endpoint(['lead.stage_changed']);
    rx.scripts.set(ep.path, [500, 500, 500, 500]);
    await moveLead(leadIds[4] ?? '', 'ENGAGED');
    await moveLead(leadIds[4] ?? '', 'MEETING_BOOKED');
    const got = await rx.waitFor(ep.path, 5);
    expect(got.map((r) => r.answered)).toEqual([500, 500, 500, 500, 200]);
    const log = await until('the first to be given up and the second delivered', async () => {
      const d = await deliveries(ep.id);
      return d[0]?.status === 'succeeded' ? d : null;
    }, 10_000);
    expect(log.map((d) => [d.status, d.attempts])).toEqual([['succeeded', 1], ['failed', 4]]);

    rx.scripts.set(ep.path, [410]);
    // Two events in one commit, so both wait when the first answer disables the endpoint.
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const [l4, l5] = (await store.getMany('leads', [leadIds[4] ?? '', leadIds[5] ?? ''])) as [Lead, Lead];
    const at = new Date().toISOString();
    await store.commit([
      { collection: 'leads', id: l4.id, before: l4, after: { ...l4, pipelineStageId: stage('WON'), updatedAt: at } },
      { collection: 'leads', id: l5.id, before: l5, after: { ...l5, pipelineStageId: stage('CONTACTED'), updatedAt: at } },
    ]);
    await rx.waitFor(ep.path, 6);
    const disabled = await until('the endpoint to be disabled', async () => {
      const l = await s.call<{ endpoints: Endpoint[] }>(s.ours.ownerKey, 'webhooks.list');
      const e = l.body.endpoints.find((x) => x.id === ep.id);
      return e && !e.enabled ? e : null;
    }, 10_000);
    expect(disabled.disabledReason).toMatch(/410 Gone/);
    expect(disabled.pendingDeliveries).toBe(2);
    const test = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: ep.id });
    expect(test.status).toBe(409);
    expect(test.body.error.code).toBe('ENDPOINT_DISABLED');
    await sleep(300);
    expect(rx.at(ep.path)).toHaveLength(6);

    const enabled = await s.call<Endpoint>(s.ours.ownerKey, 'webhooks.update', { endpointId: ep.id, enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
    const all = await rx.waitFor(ep.path, 8);
    expect(all.slice(5).map((r) => [r.answered, (payload(r).data.stage as { category: string }).category])).toEqual([[410, 'WON'], [200, 'WON'], [200, 'CONTACTED']]);
  });

  it('disables an endpoint whose every delivery failed for longer than the limit, saying since when', async () => {
    const slow = await startTestServer(backend, {
      clock: new RealClock(),
      webhooks: { allowHttp: true, policy: { allowPrivate: true }, delivery: { retryDelaysMs: [100], pollMs: 50, timeoutMs: 2_000, disableAfterMs: 1_000 } },
    });
    try {
      const path = '/always-failing';
      const res = await slow.call<Endpoint>(slow.ours.ownerKey, 'webhooks.create', { url: `${rx.url}${path}`, events: ['campaign.started', 'campaign.paused'] });
      rx.secrets.set(path, res.body.secret);
      rx.scripts.set(path, Array<number>(20).fill(502));
      const campaign = await slow.call<{ id: string }>(slow.ours.ownerKey, 'campaigns.create', { name: 'Paused twice' });
      // campaign.paused raised by a direct change of the document (no sender needed to pause).
      const store = slow.db.forWorkspace(slow.ours.workspaceId);
      const flip = async (running: boolean) => {
        const c = await store.get('campaigns', campaign.body.id);
        if (!c) throw new Error('no campaign');
        await store.commit([{ collection: 'campaigns', id: c.id, before: c, after: { ...c, running, updatedAt: new Date().toISOString() } }]);
      };
      await flip(true);
      await rx.waitFor(path, 2);
      await sleep(1_100);
      await flip(false);
      await rx.waitFor(path, 3);
      const e = await until('the endpoint to be disabled', async () => {
        const l = await slow.call<{ endpoints: Endpoint[] }>(slow.ours.ownerKey, 'webhooks.list');
        const x = l.body.endpoints[0];
        return x && !x.enabled ? x : null;
      }, 10_000);
      expect(e.disabledReason).toMatch(/^Disabled on \d{4}-\d{2}-\d{2}: every delivery failed since .* \(last: HTTP 502\)\.$/);
      const metrics = await (await fetch(`${slow.url}/metrics`)).text();
      expect(metrics).toMatch(/outreach_webhook_deliveries_total\{outcome="gave_up"\} 1/);
      expect(metrics).toMatch(/outreach_webhook_deliveries_total\{outcome="disabled"\} 1/);
    } finally {
      await slow.close();
    }
  });

  it('stops without waiting for a receiver that does not answer: the attempt is abandoned, not recorded, and the delivery waits for the next server', async () => {
    const other = await startTestServer(backend, { clock: new RealClock(), webhooks: { allowHttp: true, policy: { allowPrivate: true }, delivery: { pollMs: 50, timeoutMs: 8_000 } } });
    let closed = false;
    try {
      const path = '/never-answers';
      const res = await other.call<Endpoint>(other.ours.ownerKey, 'webhooks.create', { url: `${rx.url}${path}`, events: ['campaign.started'] });
      rx.secrets.set(path, res.body.secret);
      rx.onRequest = (r) => (r.path === path ? 'hang' : 'answer');
      await other.call(other.ours.ownerKey, 'webhooks.sendTest', { endpointId: res.body.id });
      await rx.waitFor(path, 1);
      const started = Date.now();
      await other.app.close();
      closed = true;
      expect(Date.now() - started).toBeLessThan(3_000);
      const rows = await other.sql.query<{ status: string; attempts: number; lease_owner: string | null }>(
        'SELECT d.status, d.attempts, e.lease_owner FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id',
      );
      expect(rows).toEqual([{ status: 'pending', attempts: 0, lease_owner: null }]);
    } finally {
      rx.onRequest = null;
      if (closed) {
        await other.sql.close();
        await other.database.cleanup();
      } else await other.close();
    }
  });

  it('raises no event for a change that rolled back, and one when the same change commits', async () => {
    const ep = await endpoint(['lead.stage_changed']);
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const lead = (await store.get('leads', leadIds[5] ?? '')) as Lead;
    const write = { collection: 'leads' as const, id: lead.id, before: lead, after: { ...lead, pipelineStageId: stage('ON_HOLD'), updatedAt: new Date().toISOString() } };
    const eventsBefore = await s.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events WHERE workspace_id = $1', [s.ours.workspaceId]);
    await expect(
      s.db.withStore(s.ours.workspaceId, async (st) => {
        await st.commit([write]);
        throw new Error('something after the commit failed');
      }),
    ).rejects.toThrow('something after the commit failed');
    const eventsAfter = await s.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events WHERE workspace_id = $1', [s.ours.workspaceId]);
    expect(eventsAfter[0]?.n).toBe(eventsBefore[0]?.n);
    await sleep(300);
    expect(rx.at(ep.path)).toHaveLength(0);
    expect(await deliveries(ep.id)).toHaveLength(0);

    await store.commit([write]);
    const [got] = await rx.waitFor(ep.path, 1);
    expect(got && payload(got).data.stage).toMatchObject({ category: 'ON_HOLD' });
  });

  it('raises events for changes a desktop pushes by replication', async () => {
    const ep = await endpoint(['lead.stage_changed', 'lead.email_bounced']);
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const lead = (await store.get('leads', leadIds[0] ?? '')) as Lead;
    const next = { ...lead, pipelineStageId: stage('CONTACTED'), emailBouncedAt: '2026-11-20T10:00:00.000Z', emailBounceReason: '550 5.1.1 no such user', updatedAt: new Date().toISOString() };
    const res = await fetch(`${s.url}/replication/leads/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.ours.memberKey}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ assumedMasterState: { ...lead, _deleted: false }, newDocumentState: { ...next, _deleted: false } }]),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    const got = await rx.waitFor(ep.path, 2);
    expect(got.map((r) => payload(r).type)).toEqual(['lead.stage_changed', 'lead.email_bounced']);
    expect(payload(got[1] as Received).data).toMatchObject({ email: 'p1@hook.example', reason: '550 5.1.1 no such user', bouncedAt: '2026-11-20T10:00:00.000Z' });
  });

  it('a reply the runner records raises lead.replied with its suggested label; the label a person gives on a desktop raises lead.reply_labelled', async () => {
    const ep = await endpoint(['lead.replied', 'lead.reply_labelled']);
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const now = new Date().toISOString();
    const reply = newMessage({ id: randomUUID(), workspaceId: s.ours.workspaceId, now }, {
      leadId: leadIds[1] ?? '', sdrProfileId: randomUUID(), chatId: 'chat-hook', direction: 'in', kind: 'email', text: 'Sounds good, call me Tuesday', subject: 'Re: Hello', status: 'received', sentAt: now, replyLabelSuggested: 'interested',
    });
    await store.commit([{ collection: 'messages', id: reply.id, before: null, after: reply }]);
    const [arrived] = await rx.waitFor(ep.path, 1);
    expect(arrived && payload(arrived)).toMatchObject({ type: 'lead.replied', data: { messageId: reply.id, text: 'Sounds good, call me Tuesday', suggestedLabel: 'interested', label: null, lead: { id: leadIds[1], email: 'p2@hook.example' } } });

    const labelled = { ...reply, replyLabel: 'interested' as const, replyLabelledBy: s.ours.memberId, replyLabelledAt: new Date().toISOString(), updatedAt: new Date().toISOString() };
    const res = await fetch(`${s.url}/replication/messages/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.ours.memberKey}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ assumedMasterState: { ...reply, _deleted: false }, newDocumentState: { ...labelled, _deleted: false } }]),
    });
    expect(await res.json()).toEqual([]);
    const second = (await rx.waitFor(ep.path, 2))[1];
    expect(second && payload(second)).toMatchObject({ type: 'lead.reply_labelled', data: { messageId: reply.id, label: 'interested', previousLabel: null, labelledBy: s.ours.memberId } });
  });

  it('labelling a reply unsubscribe in the inbox (inbox.setLabel) raises lead.reply_labelled and lead.unsubscribed', async () => {
    const ep = await endpoint(['lead.reply_labelled', 'lead.unsubscribed']);
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const now = new Date().toISOString();
    const reply = newMessage({ id: randomUUID(), workspaceId: s.ours.workspaceId, now }, {
      leadId: leadIds[2] ?? '', sdrProfileId: randomUUID(), chatId: 'chat-stop', direction: 'in', kind: 'email', text: 'Please remove me from your list', status: 'received', sentAt: now, replyLabelSuggested: 'unsubscribe',
    });
    await store.commit([{ collection: 'messages', id: reply.id, before: null, after: reply }]);
    const res = await s.call<{ unsubscribedLeadIds: string[] }>(s.ours.memberKey, 'inbox.setLabel', { messageIds: [reply.id], label: 'unsubscribe' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.unsubscribedLeadIds).toEqual([leadIds[2]]);
    const got = await rx.waitFor(ep.path, 2);
    expect(got.map((r) => payload(r).type).sort()).toEqual(['lead.reply_labelled', 'lead.unsubscribed']);
    const byType = new Map(got.map((r) => [payload(r).type, payload(r).data]));
    expect(byType.get('lead.reply_labelled')).toMatchObject({ messageId: reply.id, label: 'unsubscribe', labelledBy: s.ours.memberId });
    expect(byType.get('lead.unsubscribed')).toMatchObject({ source: 'reply', lead: { id: leadIds[2], email: 'p3@hook.example' } });
  });

  it('sends a test event, and a delivery again with the same webhook-id; /metrics counts deliveries', async () => {
    const ep = await endpoint(['campaign.started']);
    const sent = await s.call<{ deliveryId: string; eventId: string; type: string }>(s.ours.adminKey, 'webhooks.sendTest', { endpointId: ep.id });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.type).toBe('webhook.test');
    const [got] = await rx.waitFor(ep.path, 1);
    if (!got) throw new Error('nothing received');
    expect(got.verifyError).toBeNull();
    expect(got.headers['webhook-id']).toBe(sent.body.eventId);
    expect(payload(got)).toMatchObject({ type: 'webhook.test', data: { endpointId: ep.id } });
    await until('the test delivery to succeed', async () => (await deliveries(ep.id))[0]?.status === 'succeeded', 10_000);

    const again = await s.call<{ deliveryId: string; redeliveryOf: string; eventId: string }>(s.ours.ownerKey, 'webhooks.deliveries.redeliver', { deliveryId: sent.body.deliveryId });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ redeliveryOf: sent.body.deliveryId, eventId: sent.body.eventId, waiting: false });
    expect(again.body.deliveryId).not.toBe(sent.body.deliveryId);
    const second = (await rx.waitFor(ep.path, 2))[1];
    expect(second?.headers['webhook-id']).toBe(sent.body.eventId);
    expect(second?.body).toBe(got.body);
    expect(second?.verifyError).toBeNull();
    const log = await until('the redelivery to succeed', async () => {
      const d = await deliveries(ep.id);
      return d.length === 2 && d[0]?.status === 'succeeded' ? d : null;
    }, 10_000);
    expect(log[0]).toMatchObject({ id: again.body.deliveryId, redeliveryOf: sent.body.deliveryId, eventId: sent.body.eventId });
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    const delivered = Number(/outreach_webhook_deliveries_total\{outcome="delivered"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    expect(delivered).toBeGreaterThanOrEqual(2);
    expect(metrics).toMatch(/outreach_webhook_deliveries_total\{outcome="retry"\} \d+/);
  });

  it('Send again on a delivery waiting for its retry sends it at once, once; the queue never sends that webhook-id again', async () => {
    const clock = new ShiftedClock();
    const own = await startTestServer(backend, {
      clock,
      webhooks: { allowHttp: true, policy: { allowPrivate: true }, delivery: { retryDelaysMs: [150, 3_600_000, 3_600_000], pollMs: 50, timeoutMs: 2_000, disableAfterMs: 24 * 3_600_000 } },
    });
    try {
      const path = '/send-again';
      const created = await own.call<Endpoint>(own.ours.ownerKey, 'webhooks.create', { url: `${rx.url}${path}`, events: ['campaign.started'] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      rx.secrets.set(path, created.body.secret);
      rx.scripts.set(path, [500, 503]);
      const sent = await own.call<{ deliveryId: string; eventId: string }>(own.ours.ownerKey, 'webhooks.sendTest', { endpointId: created.body.id });
      await rx.waitFor(path, 2);
      const waiting = await until('the second failure to be recorded with a retry an hour later', async () => {
        const r = await own.call<{ deliveries: (Delivery & { nextAttemptAt: string | null })[] }>(own.ours.ownerKey, 'webhooks.deliveries.list', { endpointId: created.body.id });
        const d = r.body.deliveries[0];
        return d?.attempts === 2 ? d : null;
      }, 10_000);
      expect(waiting.status).toBe('pending');
      expect(Date.parse(waiting.nextAttemptAt ?? '') - Date.now()).toBeGreaterThan(50 * 60_000);

      // The receiver is fixed (it answers 200 from now on); its owner presses Send again.
      const pressed = Date.now();
      const again = await own.call<{ deliveryId: string; redeliveryOf: string; eventId: string; waiting: boolean }>(own.ours.ownerKey, 'webhooks.deliveries.redeliver', { deliveryId: sent.body.deliveryId });
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body).toEqual({ deliveryId: sent.body.deliveryId, redeliveryOf: sent.body.deliveryId, eventId: sent.body.eventId, endpointId: created.body.id, waiting: true });
      const got = (await rx.waitFor(path, 3, 1_000))[2];
      expect(got && got.at - pressed).toBeLessThan(1_000);
      expect(got?.answered).toBe(200);
      expect(got?.verifyError).toBeNull();
      expect(got?.headers['webhook-id']).toBe(sent.body.eventId);
      const log = await until('the delivery to be recorded as succeeded', async () => {
        const r = await own.call<{ deliveries: Delivery[] }>(own.ours.ownerKey, 'webhooks.deliveries.list', { endpointId: created.body.id });
        return r.body.deliveries[0]?.status === 'succeeded' ? r.body.deliveries : null;
      }, 10_000);
      expect(log.map((d) => [d.id, d.status, d.attempts])).toEqual([[sent.body.deliveryId, 'succeeded', 3]]);
      expect(log[0]?.attemptLog.map((a) => a.responseStatus)).toEqual([500, 503, 200]);

      // The hour of the retry passes: nothing is sent again.
      clock.shiftMs = 2 * 3_600_000;
      await sleep(600);
      const received = rx.at(path);
      expect(received).toHaveLength(3);
      expect(received.filter((r) => r.headers['webhook-id'] === sent.body.eventId && r.answered >= 200 && r.answered < 300)).toHaveLength(1);
      const pending = await own.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'", [created.body.id]);
      expect(pending[0]?.n).toBe(0);
    } finally {
      await own.close();
    }
  });

  it('the database holds one waiting delivery per event and endpoint: a second one is refused, and Send again on a later delivery sends the ones ahead of it first, in order', async () => {
    const ep = await endpoint(['campaign.started']);
    rx.scripts.set(ep.path, [500]);
    const first = await s.call<{ deliveryId: string; eventId: string }>(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: ep.id });
    await rx.waitFor(ep.path, 1);
    // The first one now waits a long time for its retry (as after a few failures); the second waits behind it.
    await until('the failure to be recorded', async () => (await deliveries(ep.id))[0]?.attempts === 1, 10_000);
    await s.sql.query("UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE id = $1", [first.body.deliveryId]);
    const second = await s.call<{ deliveryId: string; eventId: string }>(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: ep.id });
    await sleep(300);
    expect(rx.at(ep.path)).toHaveLength(1);

    await expect(
      s.sql.query("INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id) VALUES ($1, $2, $3, $4)", [randomUUID(), s.ours.workspaceId, ep.id, second.body.eventId]),
    ).rejects.toMatchObject({ code: '23505' });

    const again = await s.call<{ deliveryId: string; waiting: boolean }>(s.ours.ownerKey, 'webhooks.deliveries.redeliver', { deliveryId: second.body.deliveryId });
    expect(again.body).toMatchObject({ deliveryId: second.body.deliveryId, waiting: true });
    const got = await rx.waitFor(ep.path, 3, 2_000);
    expect(got.map((r) => [r.headers['webhook-id'], r.answered])).toEqual([[first.body.eventId, 500], [first.body.eventId, 200], [second.body.eventId, 200]]);
    const log = await until('both to succeed', async () => {
      const d = await deliveries(ep.id);
      return d.length === 2 && d.every((x) => x.status === 'succeeded') ? d : null;
    }, 10_000);
    expect(log.map((d) => d.attempts)).toEqual([1, 2]);
    await sleep(300);
    expect(rx.at(ep.path)).toHaveLength(3);
  });

  it("answers NOT_FOUND for another workspace's endpoint and delivery ids, changing nothing", async () => {
    const ep = await endpoint(['campaign.started']);
    const sent = await s.call<{ deliveryId: string }>(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: ep.id });
    await until('the test delivery to succeed', async () => (await deliveries(ep.id))[0]?.status === 'succeeded', 10_000);
    const before = await s.call<{ endpoints: Endpoint[] }>(s.ours.ownerKey, 'webhooks.list');
    const k = s.theirs.ownerKey;
    const calls: [string, Record<string, unknown>][] = [
      ['webhooks.update', { endpointId: ep.id, enabled: false }],
      ['webhooks.delete', { endpointId: ep.id }],
      ['webhooks.rotateSecret', { endpointId: ep.id }],
      ['webhooks.sendTest', { endpointId: ep.id }],
      ['webhooks.deliveries.list', { endpointId: ep.id }],
      ['webhooks.deliveries.redeliver', { deliveryId: sent.body.deliveryId }],
    ];
    for (const [name, input] of calls) {
      const res = await s.call<{ error: { code: string } }>(k, name, input);
      expect([name, res.status, res.body.error.code]).toEqual([name, 404, 'NOT_FOUND']);
    }
    expect((await s.call<{ endpoints: Endpoint[] }>(k, 'webhooks.list')).body.endpoints).toEqual([]);
    expect((await s.call<{ endpoints: Endpoint[] }>(s.ours.ownerKey, 'webhooks.list')).body).toEqual(before.body);
    expect(await deliveries(ep.id)).toHaveLength(1);
    await sleep(200);
    expect(rx.at(ep.path)).toHaveLength(1);
  });

  it('is for owners and admins: a member is refused every webhooks operation', async () => {
    const ep = await endpoint(['campaign.started']);
    for (const [name, input] of [
      ['webhooks.list', {}],
      ['webhooks.create', { url: `${rx.url}/member`, events: ['campaign.started'] }],
      ['webhooks.deliveries.list', { endpointId: ep.id }],
      ['webhooks.sendTest', { endpointId: ep.id }],
    ] as const) {
      const res = await s.call<{ error: { code: string } }>(s.ours.memberKey, name, input);
      expect([name, res.status, res.body.error.code]).toEqual([name, 403, 'PERMISSION_DENIED']);
    }
    const admin = await s.call<Endpoint>(s.ours.adminKey, 'webhooks.update', { endpointId: ep.id, description: 'Made by an admin' });
    expect(admin.status).toBe(200);
  });
});

describe.each(BACKENDS)('webhook endpoints refused, and dry runs (%s)', (backend) => {
  let s: TestServer;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    // The operator's defaults: https only, no private addresses. The guard's resolver (used when an
    // endpoint is created and when a delivery connects): rebinding.test is public, localhost is
    // loopback, other names do not resolve (as offline), which creation lets pass.
    const resolve = async (host: string): Promise<string[]> => {
      if (host === 'rebinding.test') return ['93.184.216.34'];
      if (host === 'localhost') return ['127.0.0.1'];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    };
    s = await startTestServer(backend, {
      clock: new FakeClock('2026-11-16T10:00:00.000Z'),
      webhooks: { policy: { allowPrivate: false, resolve }, delivery: { pollMs: 50, timeoutMs: 2_000 } },
    });
  });
  afterAll(async () => {
    await s?.close();
    await rx?.close();
  });

  const list = async (): Promise<unknown> => (await s.call(s.ours.ownerKey, 'webhooks.list')).body;

  it('refuses bad URLs and events with the reason, creating nothing', async () => {
    const cases: [Record<string, unknown>, number, string, RegExp][] = [
      [{ url: 'http://hooks.example.com/x', events: ['lead.replied'] }, 422, 'URL_NOT_ALLOWED', /must use https.*WEBHOOKS_ALLOW_HTTP=1/],
      [{ url: 'ftp://hooks.example.com/x', events: ['lead.replied'] }, 422, 'URL_NOT_ALLOWED', /must use https, not ftp/],
      [{ url: 'https://127.0.0.1:8443/x', events: ['lead.replied'] }, 422, 'URL_NOT_ALLOWED', /127\.0\.0\.1 is a loopback address: the sync server does not send webhooks into its own network/],
      [{ url: 'https://10.1.2.3/x', events: ['lead.replied'] }, 422, 'URL_NOT_ALLOWED', /10\.1\.2\.3 is a private address/],
      [{ url: 'https://169.254.169.254/latest/meta-data', events: ['lead.replied'] }, 422, 'URL_NOT_ALLOWED', /link-local address \(cloud metadata lives there\)/],
      [{ url: 'https://[::1]/x', events: ['lead.replied'] }, 422, 'URL_NOT_ALLOWED', /loopback/],
      [{ url: 'not a url', events: ['lead.replied'] }, 400, 'INVALID_INPUT', /^url: must be an absolute URL/],
      [{ url: 'https://user:pw@hooks.example.com/x', events: ['lead.replied'] }, 400, 'INVALID_INPUT', /no user name or password/],
      [{ url: 'https://hooks.example.com/x', events: ['lead.exploded'] }, 400, 'INVALID_INPUT', /^events\.0: must be one of lead\.replied/],
      [{ url: 'https://hooks.example.com/x', events: [] }, 400, 'INVALID_INPUT', /^events: choose at least one event/],
      [{ url: 'https://hooks.example.com/x', events: ['lead.replied'], secret: 'whsec_mine' }, 400, 'INVALID_INPUT', /secret/],
    ];
    for (const [input, status, code, message] of cases) {
      const res = await s.call<{ error: { code: string; message: string } }>(s.ours.ownerKey, 'webhooks.create', input);
      expect([input.url, res.status, res.body.error.code]).toEqual([input.url, status, code]);
      expect(res.body.error.message).toMatch(message);
    }
    expect(await list()).toEqual({ endpoints: [] });
    const rows = await s.sql.query('SELECT 1 FROM webhook_endpoints');
    expect(rows).toHaveLength(0);
  });

  it('refuses an update to a private URL, changing nothing', async () => {
    const ok = await s.call<Endpoint>(s.ours.ownerKey, 'webhooks.create', { url: 'https://hooks.example.com/in', events: ['lead.replied'] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const before = await list();
    const res = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'webhooks.update', { endpointId: ok.body.id, url: 'https://192.168.1.20/in', events: ['lead.replied', 'campaign.started'] });
    expect([res.status, res.body.error.code]).toEqual([422, 'URL_NOT_ALLOWED']);
    const none = await s.call<{ error: { code: string } }>(s.ours.ownerKey, 'webhooks.update', { endpointId: ok.body.id });
    expect([none.status, none.body.error.code]).toEqual([422, 'NO_FIELDS_TO_UPDATE']);
    expect(await list()).toEqual(before);
    await s.call(s.ours.ownerKey, 'webhooks.delete', { endpointId: ok.body.id });
  });

  it('checks the address again when a delivery connects: a name that now resolves to loopback is refused and nothing reaches it', async () => {
    const url = `https://rebinding.test:${rx.port}/rebound`;
    const created = await s.call<Endpoint>(s.ours.ownerKey, 'webhooks.create', { url, events: ['lead.replied'] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // The name resolves to 127.0.0.1 for real (an /etc/hosts-like rebinding): the connect-time lookup refuses it.
    await s.sql.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [created.body.id, `https://localhost:${rx.port}/rebound`]);
    const sent = await s.call<{ deliveryId: string }>(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: created.body.id });
    expect(sent.status).toBe(200);
    const log = await until('the attempt to be logged', async () => {
      const r = await s.call<{ deliveries: Delivery[] }>(s.ours.ownerKey, 'webhooks.deliveries.list', { endpointId: created.body.id });
      return r.body.deliveries[0]?.attempts ? r.body.deliveries : null;
    }, 10_000);
    expect(log[0]?.attemptLog[0]?.responseStatus).toBeNull();
    expect(log[0]?.attemptLog[0]?.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    expect(rx.at('/rebound')).toHaveLength(0);
    await s.call(s.ours.ownerKey, 'webhooks.delete', { endpointId: created.body.id });
  });

  it('a dry run of update and delete answers what the real call answers, and changes nothing', async () => {
    const created = await s.call<Endpoint>(s.ours.ownerKey, 'webhooks.create', { url: 'https://hooks.example.com/dry', events: ['lead.replied'], description: 'CRM' });
    const id = created.body.id;
    await s.call(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: id });
    // Its one attempt (hooks.example.com takes nothing) is over; the next waits for a clock that stands still.
    await until('the test delivery to be tried', async () => {
      const r = await s.call<{ deliveries: Delivery[] }>(s.ours.ownerKey, 'webhooks.deliveries.list', { endpointId: id });
      return (r.body.deliveries[0]?.attempts ?? 0) > 0;
    }, 10_000);
    const before = await list();
    const change = { endpointId: id, url: 'https://hooks.example.com/dry2', events: ['campaign.paused', 'lead.replied'], enabled: false };
    const dry = await s.call(s.ours.ownerKey, 'webhooks.update', { ...change, dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(await list()).toEqual(before);
    const real = await s.call(s.ours.ownerKey, 'webhooks.update', change);
    expect(real.body).toEqual(dry.body);
    expect(real.body).toMatchObject({ url: 'https://hooks.example.com/dry2', events: ['lead.replied', 'campaign.paused'], enabled: false, disabledReason: 'Disabled by a person on 2026-11-16.' });
    const listed = (await list()) as { endpoints: unknown[] };
    expect(listed.endpoints[0]).toEqual(real.body);

    const afterUpdate = await list();
    const dryDelete = await s.call(s.ours.ownerKey, 'webhooks.delete', { endpointId: id, dryRun: true });
    expect(dryDelete.body).toEqual({ endpointId: id, deleted: true, deliveriesDeleted: 1 });
    expect(await list()).toEqual(afterUpdate);
    const realDelete = await s.call(s.ours.ownerKey, 'webhooks.delete', { endpointId: id });
    expect(realDelete.body).toEqual(dryDelete.body);
    expect(await list()).toEqual({ endpoints: [] });
    expect(await s.sql.query('SELECT 1 FROM webhook_deliveries')).toHaveLength(0);
  });
});
