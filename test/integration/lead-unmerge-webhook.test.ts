/** The undo of a merge tells webhook receivers (issue 26): a real sync server delivers `lead.unmerged`
 * to a real receiver on 127.0.0.1 that verifies each request with the Standard Webhooks reference
 * library, after the `lead.merged` it reverses; through the operation (the app's Undo) and through
 * a desktop's undo pushed by replication; at least once with one webhook-id across retries; and a
 * refused undo (409) or a dry run raises nothing. PGlite always, PostgreSQL too with DATABASE_URL. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lead } from '../../shared/model/index.ts';
import { FakeClock } from '../support/harness.ts';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { LOOPBACK_WEBHOOKS, startReceiver, verify } from './support/webhook-receiver.ts';
import type { Receiver, Received } from './support/webhook-receiver.ts';

/** The real time: receivers refuse signatures more than 5 minutes from their own clock. */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

type Summary = { id: string; email: string; company: string; fullName: string };
type Payload = { type: string; timestamp: string; data: { lead: Summary; mergedLead: Summary; mergedLeadId: string; mergedAt?: string; unmergedAt?: string } };
type MergeAnswer = { survivorId: string; mergedId: string; undo: unknown };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const payload = (r: Received): Payload => JSON.parse(r.body) as Payload;

describe.each(BACKENDS)('lead.unmerged webhook (%s)', (backend) => {
  let s: TestServer;
  let rx: Receiver;
  let groupId: string;
  let nextPath = 0;

  beforeAll(async () => {
    rx = await startReceiver();
    s = await startTestServer(backend, {
      clock: new RealClock(),
      webhooks: LOOPBACK_WEBHOOKS,
    });
    const campaign = await s.call<{ leadGroupId: string }>(s.ours.ownerKey, 'campaigns.create', { name: 'Unmerge hooks' });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
    groupId = campaign.body.leadGroupId;
  });
  afterAll(async () => {
    await s?.close();
    await rx?.close();
  });

  async function endpoint(events: string[]): Promise<{ id: string; path: string; secret: string }> {
    const path = `/unmerge-${++nextPath}`;
    const res = await s.call<{ id: string; secret: string }>(s.ours.ownerKey, 'webhooks.create', { url: `${rx.url}${path}`, events });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    rx.secrets.set(path, res.body.secret);
    return { ...res.body, path };
  }

  /** Two leads of one person; the second has a company the first lacks (the merge fills it in). */
  async function pair(tag: string): Promise<{ survivorId: string; mergedId: string }> {
    const res = await s.call<{ leadIds: string[] }>(s.ours.memberKey, 'campaigns.leads.create', {
      leadGroupId: groupId,
      leads: [
        { firstName: 'Eve', lastName: tag, email: `eve.${tag}@unmerge.test` },
        { firstName: 'Evelyn', lastName: tag, email: `evelyn.${tag}@unmerge.test`, company: 'Initech' },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [survivorId, mergedId] = res.body.leadIds;
    if (!survivorId || !mergedId) throw new Error('leads not created');
    return { survivorId, mergedId };
  }

  async function merge(p: { survivorId: string; mergedId: string }): Promise<MergeAnswer> {
    const res = await s.call<MergeAnswer>(s.ours.memberKey, 'campaigns.leads.merge', p);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  const unmergedRows = async (): Promise<number> =>
    (await s.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE workspace_id = $1 AND type = 'lead.unmerged'`, [s.ours.workspaceId]))[0]?.n ?? -1;

  it('the undo of a merge sends lead.unmerged after lead.merged, signed, naming both leads as they are after the undo; a refused or dry-run undo sends nothing', async () => {
    const both = await endpoint(['lead.merged', 'lead.unmerged']);
    const mergesOnly = await endpoint(['lead.merged']);
    const p = await pair('op');
    const done = await merge(p);
    const [mergedEvent] = await rx.waitFor(both.path, 1);
    if (!mergedEvent) throw new Error('no lead.merged');
    expect(payload(mergedEvent)).toMatchObject({ type: 'lead.merged', data: { mergedLeadId: p.mergedId, lead: { id: p.survivorId, company: 'Initech' } } });

    // A dry run of the undo changes nothing and sends nothing.
    const dry = await s.call(s.ours.memberKey, 'campaigns.leads.unmerge', { ...p, undo: done.undo, dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    const undo = await s.call(s.ours.memberKey, 'campaigns.leads.unmerge', { ...p, undo: done.undo });
    expect(undo.status, JSON.stringify(undo.body)).toBe(200);
    const got = await rx.waitFor(both.path, 2);
    const second = got[1] as Received;
    expect(second.verifyError).toBeNull();
    const event = verify(both.secret, second) as Payload;
    expect(event.type).toBe('lead.unmerged');
    // The survivor with the company the merge filled in put back; the merged lead a lead again.
    expect(event.data).toMatchObject({
      mergedLeadId: p.mergedId,
      lead: { id: p.survivorId, email: 'eve.op@unmerge.test', company: '' },
      mergedLead: { id: p.mergedId, email: 'evelyn.op@unmerge.test', company: 'Initech', fullName: 'Evelyn op' },
    });
    expect(event.data.unmergedAt).toBe(event.timestamp);
    expect(Date.parse(event.timestamp)).toBeGreaterThanOrEqual(Date.parse(payload(mergedEvent).timestamp));
    expect(second.headers['webhook-id']).not.toBe(mergedEvent.headers['webhook-id']);
    const back = await s.call<{ company: string }>(s.ours.memberKey, 'campaigns.leads.get', { leadId: p.mergedId });
    expect(back.status).toBe(200);
    expect(await unmergedRows()).toBe(1);

    // The same undo again is refused (the lead is not merged any more): nothing is raised or sent.
    const refused = await s.call<{ error: { code: string } }>(s.ours.memberKey, 'campaigns.leads.unmerge', { ...p, undo: done.undo });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    // An undo naming the wrong survivor of a lead that is merged: refused too.
    const other = await pair('wrong');
    const otherDone = await merge(other);
    await rx.waitFor(both.path, 3);
    const wrong = await s.call<{ error: { code: string } }>(s.ours.memberKey, 'campaigns.leads.unmerge', { survivorId: p.survivorId, mergedId: other.mergedId, undo: otherDone.undo });
    expect(wrong.status).toBe(409);
    await sleep(500);
    expect(await unmergedRows()).toBe(1);
    expect(rx.at(both.path).map((r) => payload(r).type)).toEqual(['lead.merged', 'lead.unmerged', 'lead.merged']);
    // The endpoint that chose lead.merged alone got the merges only.
    expect(rx.at(mergesOnly.path).map((r) => payload(r).type)).toEqual(['lead.merged', 'lead.merged']);
  });

  it('an undo a desktop did offline and pushed by replication sends lead.unmerged too', async () => {
    const ep = await endpoint(['lead.unmerged']);
    const p = await pair('desk');
    await merge(p);
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const tomb = (await store.get('leads', p.mergedId)) as Lead;
    expect(tomb.mergedIntoId).toBe(p.survivorId);
    // The desktop's campaigns.leads.unmerge ran locally; its revived lead is pushed alone first.
    const { mergedIntoId: _gone, ...revived } = tomb;
    const res = await fetch(`${s.url}/replication/leads/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.ours.memberKey}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ assumedMasterState: { ...tomb, _deleted: false }, newDocumentState: { ...revived, updatedAt: new Date().toISOString(), _deleted: false } }]),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    const [got] = await rx.waitFor(ep.path, 1);
    if (!got) throw new Error('nothing received');
    expect(got.verifyError).toBeNull();
    // The survivor was not in that push: the event looked it up.
    expect(payload(got)).toMatchObject({ type: 'lead.unmerged', data: { mergedLeadId: p.mergedId, lead: { id: p.survivorId, email: 'eve.desk@unmerge.test' }, mergedLead: { id: p.mergedId } } });
  });

  it('is delivered at least once with the same webhook-id: a receiver that fails gets it again until it answers 2xx, once', async () => {
    const ep = await endpoint(['lead.unmerged']);
    const p = await pair('retry');
    const done = await merge(p);
    rx.scripts.set(ep.path, [500, 503]);
    const undo = await s.call(s.ours.memberKey, 'campaigns.leads.unmerge', { ...p, undo: done.undo });
    expect(undo.status, JSON.stringify(undo.body)).toBe(200);
    const got = await rx.waitFor(ep.path, 3);
    expect(got.map((r) => r.answered)).toEqual([500, 503, 200]);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    expect(got.every((r) => r.verifyError === null)).toBe(true);
    await sleep(500);
    expect(rx.at(ep.path)).toHaveLength(3);
  });
});
