/** Merging leads over HTTP on the sync server (PGlite, and PostgreSQL with DATABASE_URL): the dry run
 * and refusals change nothing, the merged lead answers 404 with details.mergedIntoId and is gone from
 * searches, and replication pushes that edit or reference it are applied to the survivor. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newActivity, newLead } from '../../shared/model/factories.ts';
import { BACKENDS } from './support/db.ts';
import { seedFixtures } from './support/fixtures.ts';
import type { Fixtures } from './support/fixtures.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type Doc = Record<string, unknown> & { id: string; _deleted: boolean };
type ErrorBody = { error: { code: string; message: string; details: Record<string, unknown> } };

describe.each(BACKENDS)('campaigns.leads.merge over HTTP (%s)', (backend) => {
  let s: TestServer;
  let fx: Fixtures;
  let foreign: Fixtures;

  async function pullLead(id: string, collection = 'leads'): Promise<Doc> {
    let checkpoint: unknown = null;
    for (let guard = 0; guard < 100; guard++) {
      const q = new URLSearchParams({ limit: '200' });
      if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
      const res = await fetch(`${s.url}/replication/${collection}/pull?${q.toString()}`, { headers: { authorization: `Bearer ${s.ours.memberKey}` } });
      const page = (await res.json()) as { documents: Doc[]; checkpoint: unknown };
      const hit = page.documents.filter((d) => d.id === id).pop();
      if (hit && page.documents.length < 200) return hit;
      if (page.documents.length < 200) break;
      checkpoint = page.checkpoint;
    }
    throw new Error(`${collection} ${id} not pulled`);
  }
  async function push(collection: string, rows: unknown): Promise<{ status: number; body: Doc[] }> {
    const res = await fetch(`${s.url}/replication/${collection}/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.ours.memberKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(rows),
    });
    return { status: res.status, body: (await res.json()) as Doc[] };
  }
  async function createLead(fields: Record<string, string>): Promise<string> {
    const r = await s.call<{ leadIds: (string | null)[] }>(s.ours.memberKey, 'campaigns.leads.create', { leadGroupId: fx.leadGroupId, leads: [fields] });
    expect(r.status).toBe(200);
    const id = r.body.leadIds[0];
    if (!id) throw new Error('not created');
    return id;
  }

  beforeAll(async () => {
    s = await startTestServer(backend, { webhooks: { allowHttp: true, policy: { allowPrivate: true }, delivery: { pollMs: 60_000, timeoutMs: 1_000 } } });
    fx = await seedFixtures(s.db, s.ours, s.clock.now().toISOString(), 'Acme');
    foreign = await seedFixtures(s.db, s.theirs, s.clock.now().toISOString(), 'Globex');
  });
  afterAll(async () => {
    await s?.close();
  });

  it('merges, answering the dry run the same, and follows the tombstone everywhere', async () => {
    const survivorId = await createLead({ firstName: 'Eve', lastName: 'Mail', email: 'eve@merge.test' });
    const mergedId = await createLead({ firstName: 'Evelyn', lastName: 'Mail', email: 'evelyn@merge.test', company: 'Initech' });
    const note = await s.call<{ id: string }>(s.ours.memberKey, 'leadActivities.create', { leadId: mergedId, content: 'From the booth' });
    expect(note.status).toBe(200);
    const preMerge = await pullLead(mergedId);
    // An endpoint, so the outbox keeps the workspace's events (nothing listens: delivery is not tested here).
    const hook = await s.call(s.ours.ownerKey, 'webhooks.create', { url: 'http://127.0.0.1:9/merged', events: ['lead.merged'] });
    expect(hook.status).toBe(200);
    const mergedEvents = async () => (await s.sql.query<{ body: string }>(`SELECT body FROM webhook_events WHERE workspace_id = $1 AND type = 'lead.merged'`, [s.ours.workspaceId])).map((r) => JSON.parse(r.body) as { data: Record<string, unknown> });

    const before = await s.snapshot(s.ours.workspaceId);
    const seq = await s.maxSeq(s.ours.workspaceId);
    const dry = await s.call<Record<string, unknown>>(s.ours.memberKey, 'campaigns.leads.merge', { survivorId, mergedId, dryRun: true });
    expect(dry.status).toBe(200);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    expect(await s.maxSeq(s.ours.workspaceId)).toBe(seq);

    // Refusals: the same lead, an unknown and a foreign lead; nothing changes.
    for (const [input, status] of [
      [{ survivorId, mergedId: survivorId }, 400],
      [{ survivorId, mergedId: randomUUID() }, 404],
      [{ survivorId, mergedId: foreign.leadId }, 404],
      [{ survivorId: foreign.leadId, mergedId }, 404],
    ] as const) {
      const r = await s.call<ErrorBody>(s.ours.memberKey, 'campaigns.leads.merge', input);
      expect(r.status).toBe(status);
      expect(await s.maxSeq(s.ours.workspaceId)).toBe(seq);
    }
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);

    expect(await mergedEvents()).toEqual([]);
    const real = await s.call<Record<string, unknown>>(s.ours.memberKey, 'campaigns.leads.merge', { survivorId, mergedId });
    const events = await mergedEvents();
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ mergedLeadId: mergedId, lead: { id: survivorId, email: 'eve@merge.test' }, mergedLead: { email: 'evelyn@merge.test' } });
    expect(real.status).toBe(200);
    expect({ ...real.body, dryRun: true }).toEqual(dry.body);
    expect(real.body).toMatchObject({ moved: { notes: 1 }, lead: { company: 'Initech', email: 'eve@merge.test' } });

    // The merged lead answers 404 with the survivor's id; an already merged lead cannot merge again.
    const gone = await s.call<ErrorBody>(s.ours.memberKey, 'campaigns.leads.get', { leadId: mergedId });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatchObject({ code: 'NOT_FOUND', details: { mergedIntoId: survivorId } });
    const again = await s.call<ErrorBody>(s.ours.memberKey, 'campaigns.leads.merge', { survivorId: fx.leadId, mergedId });
    expect(again.status).toBe(404);
    expect(again.body.error.details).toMatchObject({ mergedIntoId: survivorId });
    const search = await s.call<{ leads: { id: string }[] }>(s.ours.memberKey, 'campaigns.leads.search', { query: 'merge.test' });
    expect(search.body.leads.map((l) => l.id)).toEqual([survivorId]);
    const count = await s.call<{ count: number }>(s.ours.memberKey, 'campaigns.leads.count', { query: 'merge.test' });
    expect(count.body.count).toBe(1);

    // A desktop that missed the merge pushes an edit of the merged lead: it lands on the survivor.
    const edit = await push('leads', [{ assumedMasterState: preMerge, newDocumentState: { ...preMerge, jobTitle: 'Head of Ops', updatedAt: s.clock.now().toISOString() } }]);
    expect(edit.status).toBe(200);
    expect(edit.body).toHaveLength(1);
    expect(edit.body[0]).toMatchObject({ id: mergedId, mergedIntoId: survivorId, _deleted: false });
    const row = await s.call<{ leads: { id: string; jobTitle: string }[] }>(s.ours.memberKey, 'campaigns.leads.search', { query: 'eve@merge.test' });
    expect(row.body.leads[0]).toMatchObject({ id: survivorId, jobTitle: 'Head of Ops' });
    // The desktop's conflict handler pushes the merged state again: the same edit, the same answer, the loop ends.
    const tomb = edit.body[0] as Doc;
    const again2 = await push('leads', [{ assumedMasterState: tomb, newDocumentState: { ...tomb, jobTitle: 'Head of Ops' } }]);
    expect(again2.body[0]).toEqual(tomb);

    // A note written offline on the merged lead is stored as the survivor's, and the desktop is told.
    const offline = newActivity({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: s.clock.now().toISOString() }, mergedId, s.ours.memberId, 'NOTE', 'Written offline');
    const created = await push('activities', [{ newDocumentState: { ...offline, _deleted: false } }]);
    expect(created.status).toBe(200);
    expect(created.body).toEqual([expect.objectContaining({ id: offline.id, leadId: survivorId })]);
    const timeline = await s.call<{ activities: { id: string; content: string }[] }>(s.ours.memberKey, 'leadActivities.list', { leadId: survivorId });
    expect(JSON.stringify(timeline.body)).toContain('Written offline');
    expect(JSON.stringify(timeline.body)).toContain('From the booth');

    // A desktop undoes the merge locally and pushes it, leads first, then the notes moved back (each
    // collection is pushed on its own): the merged lead comes back and so does its note, unrefused.
    const survivorNow = await pullLead(survivorId);
    const tombNow = await pullLead(mergedId);
    const { mergedIntoId: _m, ...revived } = tombNow;
    const leadsPush = await push('leads', [
      { assumedMasterState: tombNow, newDocumentState: { ...revived, updatedAt: s.clock.now().toISOString() } },
      { assumedMasterState: survivorNow, newDocumentState: { ...survivorNow, company: '', updatedAt: s.clock.now().toISOString() } },
    ]);
    expect(leadsPush).toEqual({ status: 200, body: [] });
    const noteNow = await pullLead(note.body.id, 'activities');
    expect(noteNow.leadId).toBe(survivorId);
    const back = await push('activities', [{ assumedMasterState: noteNow, newDocumentState: { ...noteNow, leadId: mergedId } }]);
    expect(back).toEqual({ status: 200, body: [] });
    const own = await s.call<{ email: string }>(s.ours.memberKey, 'campaigns.leads.get', { leadId: mergedId });
    expect(own.status).toBe(200);
    const mine = await s.call<{ activities: { id: string }[] }>(s.ours.memberKey, 'leadActivities.list', { leadId: mergedId });
    expect(mine.body.activities.map((x) => x.id)).toContain(note.body.id);
    // A note of a lead never merged with that one does not move.
    const stranger = await createLead({ firstName: 'Stan', email: 'stan@merge.test' });
    const moved = await push('activities', [{ assumedMasterState: { ...noteNow, leadId: mergedId }, newDocumentState: { ...noteNow, leadId: stranger } }]);
    expect(moved.body).toHaveLength(1);
    expect(moved.body[0]).toMatchObject({ id: note.body.id, leadId: mergedId });
  });

  it("lists two desktops' leads of one person as duplicates, then not after their merge", async () => {
    const at = s.clock.now().toISOString();
    const one = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: at }, fx.leadGroupId, { firstName: 'Dee', lastName: 'Two', email: 'Dee.Two@Example.COM' });
    const two = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: at }, fx.leadGroupId, { firstName: 'Dee', lastName: 'Two', email: ' dee.two@example.com ' });
    const pushed = await push('leads', [{ newDocumentState: { ...one, _deleted: false } }, { newDocumentState: { ...two, _deleted: false } }]);
    expect(pushed).toEqual({ status: 200, body: [] });
    const dup = await s.call<{ groups: { kind: string; certain: boolean; leads: { id: string }[] }[]; nextCursor: string | null }>(s.ours.memberKey, 'campaigns.leads.duplicates', { kind: 'email' });
    expect(dup.status).toBe(200);
    const group = dup.body.groups.find((g) => g.leads.some((l) => l.id === one.id));
    expect(group).toMatchObject({ kind: 'email', certain: true });
    expect(group?.leads.map((l) => l.id).sort()).toEqual([one.id, two.id].sort());
    // The other workspace sees none of them.
    const theirs = await s.call<{ groups: { leads: { id: string }[] }[] }>(s.theirs.memberKey, 'campaigns.leads.duplicates', {});
    expect(JSON.stringify(theirs.body)).not.toContain(one.id);
    const merged = await s.call(s.ours.memberKey, 'campaigns.leads.merge', { survivorId: one.id, mergedId: two.id });
    expect(merged.status).toBe(200);
    const after = await s.call<{ groups: { leads: { id: string }[] }[] }>(s.ours.memberKey, 'campaigns.leads.duplicates', { kind: 'email' });
    expect(JSON.stringify(after.body)).not.toContain(two.id);
  });
});
