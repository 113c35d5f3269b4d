/** The replication endpoints (API-CONTRACT.md "Replication endpoints") over real HTTP: pull by seq,
 * push with conflicts and the shared rules, refusals, the live stream, schema versions, isolation. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timeOrderedIds } from '../../shared/ids.ts';
import { newActivity, newLead } from '../../shared/model/factories.ts';
import type { Activity, Campaign, Lead, LeadGroup } from '../../shared/model/index.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import { BACKENDS } from './support/db.ts';
import { seedFixtures } from './support/fixtures.ts';
import type { Fixtures } from './support/fixtures.ts';
import { startTestServer } from './support/server.ts';
import { UUID_V7 } from '../support/uuid-v7.ts';
import type { TestServer } from './support/server.ts';
import { randomUUID } from 'node:crypto';
import { collectionsListSchema, parseStreamEvent, pullPageSchema, pushAnswerSchema, readPullPageText, refusalsListSchema } from '../../shared/wire/replication.ts';

type Doc = Record<string, unknown> & { id: string; _deleted: boolean };
type PullPage = { documents: Doc[]; checkpoint: { seq: number } | null };
type ErrorBody = { error: { code: string; message: string; details: Record<string, unknown> } };

describe.each(BACKENDS)('replication endpoints (%s)', (backend) => {
  let s: TestServer;
  let fx: Fixtures;
  let foreign: Fixtures;
  let group: LeadGroup;

  async function get<T>(key: string | null, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
    const res = await fetch(`${s.url}${path}`, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
    return { status: res.status, body: (await res.json()) as T };
  }
  async function pushRows<T = Doc[]>(key: string, collection: string, rows: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
    const res = await fetch(`${s.url}/replication/${collection}/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(rows),
    });
    return { status: res.status, body: (await res.json()) as T };
  }
  /** Every document of a collection, by paging through pull. */
  async function pullAll(key: string, collection: string, limit = 3): Promise<{ docs: Doc[]; pages: number[]; checkpoint: { seq: number } | null }> {
    const docs: Doc[] = [];
    const pages: number[] = [];
    let checkpoint: { seq: number } | null = null;
    for (let guard = 0; guard < 500; guard++) {
      const q = new URLSearchParams({ limit: String(limit) });
      if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
      const page = await get<PullPage>(key, `/replication/${collection}/pull?${q.toString()}`);
      expect(page.status).toBe(200);
      docs.push(...page.body.documents);
      pages.push(page.body.documents.length);
      if (page.body.checkpoint) {
        if (checkpoint) expect(page.body.checkpoint.seq).toBeGreaterThanOrEqual(checkpoint.seq);
        checkpoint = page.body.checkpoint;
      }
      if (page.body.documents.length < limit) return { docs, pages, checkpoint };
    }
    throw new Error('pull did not end');
  }
  const plain = (d: Doc): Record<string, unknown> => {
    const { _deleted: _x, ...rest } = d;
    return rest;
  };

  beforeAll(async () => {
    s = await startTestServer(backend, { streamHeartbeatMs: 200 });
    fx = await seedFixtures(s.db, s.ours, s.clock.now().toISOString(), 'Acme');
    foreign = await seedFixtures(s.db, s.theirs, s.clock.now().toISOString(), 'Globex');
    group = (await s.db.forWorkspace(s.ours.workspaceId).get('leadGroups', fx.leadGroupId)) as LeadGroup;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('lists the replicated collections with their schema version and RxDB schema (never API keys)', async () => {
    const res = await get<{ collections: { name: string; schemaVersion: number; schema: { version: number; primaryKey: string } }[] }>(s.ours.memberKey, '/replication/collections');
    expect(res.status).toBe(200);
    expect(res.body.collections.map((c) => c.name)).toEqual(REPLICATED_COLLECTIONS);
    expect(res.body.collections.map((c) => c.name)).not.toContain('apiKeys');
    for (const c of res.body.collections) {
      expect(c.schemaVersion).toBe(COLLECTIONS[c.name as keyof typeof COLLECTIONS].schema.version);
      expect(c.schema.primaryKey).toBe('id');
    }
    expect((await get(null, '/replication/collections')).status).toBe(401);
  });

  it('pulls every document of the workspace in pages of exactly `limit`, with a rising checkpoint, and nothing of another workspace', async () => {
    const { docs, pages } = await pullAll(s.ours.memberKey, 'leads', 1);
    expect(pages.slice(0, -1).every((n) => n === 1)).toBe(true);
    expect(pages[pages.length - 1]).toBe(0);
    const stored = (await s.db.forWorkspace(s.ours.workspaceId).query('leads')).docs;
    expect(docs.map((d) => d.id).sort()).toEqual(stored.map((d) => d.id).sort());
    expect(docs.every((d) => d.workspaceId === s.ours.workspaceId && d._deleted === false)).toBe(true);
    for (const c of REPLICATED_COLLECTIONS) {
      const all = await pullAll(s.ours.memberKey, c, 50);
      expect(JSON.stringify(all.docs), c).not.toContain(s.theirs.workspaceId);
      expect(JSON.stringify(all.docs), c).not.toContain(foreign.marker);
    }
    // The workspace document itself, as the desktops ask for it first.
    const ws = await get<PullPage>(s.ours.memberKey, '/replication/workspaces/pull?limit=1');
    expect(ws.body.documents).toHaveLength(1);
    expect(ws.body.documents[0]?.id).toBe(s.ours.workspaceId);
  });

  it('writes a pull page one document a line, which the desktop reads a document at a time into the same page', async () => {
    const res = await fetch(`${s.url}/replication/leads/pull?limit=100&count=true`, { headers: { authorization: `Bearer ${s.ours.memberKey}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await res.text();
    const page = JSON.parse(text) as PullPage;
    pullPageSchema.parse(page);
    expect(page.documents.length).toBeGreaterThan(1);
    const lines = text.split('\n');
    expect(lines).toHaveLength(page.documents.length + 2);
    lines.slice(1, -1).forEach((line, i) => expect(JSON.parse(line.replace(/,$/, ''))).toEqual(page.documents[i]));
    const steps = readPullPageText(text);
    let step = steps.next();
    let yields = 0;
    for (; !step.done; step = steps.next()) yields++;
    expect(yields).toBe(page.documents.length);
    expect(step.value).toEqual(JSON.parse(text));
  });

  it('continues from a checkpoint with what changed since, deletions carrying _deleted: true', async () => {
    const before = await pullAll(s.ours.memberKey, 'leads', 100);
    const cp = encodeURIComponent(JSON.stringify(before.checkpoint));
    expect((await get<PullPage>(s.ours.memberKey, `/replication/leads/pull?checkpoint=${cp}`)).body.documents).toEqual([]);

    // A change through an operation and a soft delete.
    expect((await s.call(s.ours.memberKey, 'campaigns.leads.setLeadFollowUp', { leadId: fx.otherLeadId, followUpAt: '2026-12-24T09:00:00.000Z' })).status).toBe(200);
    expect((await s.call(s.ours.memberKey, 'campaigns.leads.delete', { leadIds: [fx.leadId] })).status).toBe(200);
    const after = await get<PullPage>(s.ours.memberKey, `/replication/leads/pull?checkpoint=${cp}&limit=100`);
    const byId = new Map(after.body.documents.map((d) => [d.id, d]));
    expect(byId.get(fx.otherLeadId)?.followUpAt).toBe('2026-12-24T09:00:00.000Z');
    expect(byId.get(fx.leadId)?._deleted).toBe(true);
    expect(byId.get(fx.leadId)?.firstName).toBe(fx.marker);
    expect(after.body.checkpoint?.seq).toBeGreaterThan(before.checkpoint?.seq ?? 0);
    // Deleted documents never appear in operation results.
    const search = await s.call<{ leads: { id: string }[] }>(s.ours.memberKey, 'campaigns.leads.search', { query: fx.marker });
    expect(search.body.leads).toEqual([]);
  });

  it("counts on request (count=true) what remains after a checkpoint, read with the page, in the key's workspace only", async () => {
    type Counted = PullPage & { remaining?: number };
    const pull = (key: string, collection: string, q: Record<string, string>) => get<Counted>(key, `/replication/${collection}/pull?${new URLSearchParams(q).toString()}`);
    // Another workspace gains leads first: none of them is counted for this one.
    const theirStore = s.db.forWorkspace(s.theirs.workspaceId);
    const theirGroup = ((await theirStore.query('leadGroups')).docs[0] as LeadGroup).id;
    const foreignLeads = Array.from({ length: 7 }, (_, i) => newLead({ id: randomUUID(), workspaceId: s.theirs.workspaceId, now: s.clock.now().toISOString() }, theirGroup, { firstName: `Foreign${i}` }));
    await theirStore.commit(foreignLeads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })));
    // A deleted lead: deletions are pulled, so they are counted.
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const gone = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: s.clock.now().toISOString() }, group.id, { firstName: 'Gone' });
    await store.commit([{ collection: 'leads', id: gone.id, before: null, after: gone }]);
    expect((await s.call(s.ours.ownerKey, 'campaigns.leads.delete', { leadIds: [gone.id] })).status).toBe(200);
    // What a full pull brings.
    const all = await pullAll(s.ours.memberKey, 'leads', 100);
    expect(all.docs.some((d) => d._deleted)).toBe(true);
    const first = await pull(s.ours.memberKey, 'leads', { limit: '1', count: 'true' });
    expect(first.status).toBe(200);
    expect(first.body.documents).toHaveLength(1);
    expect(first.body.remaining).toBe(all.docs.length);
    // Not asked, not counted.
    expect((await pull(s.ours.memberKey, 'leads', { limit: '1' })).body).not.toHaveProperty('remaining');
    expect((await pull(s.ours.memberKey, 'leads', { limit: '1', count: 'false' })).body).not.toHaveProperty('remaining');
    // From the first page's checkpoint: the rest.
    const second = await pull(s.ours.memberKey, 'leads', { limit: '1', count: 'true', checkpoint: JSON.stringify(first.body.checkpoint) });
    expect(second.body.remaining).toBe(all.docs.length - 1);
    // Caught up: an empty page counted 0.
    expect((await pull(s.ours.memberKey, 'leads', { count: 'true', checkpoint: JSON.stringify(all.checkpoint) })).body).toEqual({ documents: [], checkpoint: all.checkpoint, remaining: 0 });
    // After changes: a document pulled before and changed since counts once (it is pulled again), a new one too.
    const changed = (await store.get('leads', fx.otherLeadId)) as Lead;
    const added = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: s.clock.now().toISOString() }, group.id, { firstName: 'Counted' });
    await store.commit([{ collection: 'leads', id: changed.id, before: changed, after: { ...changed, jobTitle: 'Counted again' } }]);
    await store.commit([{ collection: 'leads', id: added.id, before: null, after: added }]);
    const since = await pull(s.ours.memberKey, 'leads', { limit: '1', count: 'true', checkpoint: JSON.stringify(all.checkpoint) });
    expect(since.body.documents.map((d) => d.id)).toEqual([changed.id]);
    expect(since.body.remaining).toBe(2);
    expect((await pull(s.ours.memberKey, 'leads', { count: 'true' })).body.remaining).toBe(all.docs.length + 1);
    // The other workspace's key counts its own documents, every collection as its full pull.
    for (const c of ['leads', 'activities', 'members'] as const) {
      const theirs = await pullAll(s.theirs.memberKey, c, 100);
      expect((await pull(s.theirs.memberKey, c, { limit: '2', count: 'true' })).body.remaining, c).toBe(theirs.docs.length);
    }
    // A count of anything but true or false is refused, with the parameter named.
    for (const bad of ['1', 'yes', 'TRUE', 'true&count=true']) {
      const res = await get<ErrorBody>(s.ours.memberKey, `/replication/leads/pull?count=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
      expect(res.body.error.message).toMatch(/^count must be true or false/);
      expect(res.body.error.details).toEqual({ field: 'count' });
    }
  });

  it('refuses malformed pulls and unknown collections', async () => {
    const bad = await get<ErrorBody>(s.ours.memberKey, '/replication/leads/pull?checkpoint=%7Bnope');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_INPUT');
    expect((await get<ErrorBody>(s.ours.memberKey, '/replication/leads/pull?limit=0')).status).toBe(400);
    expect((await get<ErrorBody>(s.ours.memberKey, '/replication/leads/pull?limit=100000')).status).toBe(400);
    for (const c of ['apiKeys', 'nope']) {
      const res = await get<ErrorBody>(s.ours.memberKey, `/replication/${c}/pull`);
      expect(res.status, c).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    expect((await get(null, '/replication/leads/pull')).status).toBe(401);
  });

  it('tells an outdated client to update (426), and refuses a client newer than the server', async () => {
    const old = await get<ErrorBody>(s.ours.memberKey, '/replication/leads/pull', { 'x-schema-version': '-1' });
    expect(old.status).toBe(426);
    expect(old.body.error.code).toBe('CLIENT_OUTDATED');
    expect(old.body.error.message).toMatch(/update the app/i);
    const viaQuery = await get<ErrorBody>(s.ours.memberKey, '/replication/leads/pull?schemaVersion=-1');
    expect(viaQuery.status).toBe(426);
    const oldPush = await pushRows<ErrorBody>(s.ours.memberKey, 'leads', [], { 'x-schema-version': '-1' });
    expect(oldPush.status).toBe(426);
    const newer = await get<ErrorBody>(s.ours.memberKey, '/replication/leads/pull', { 'x-schema-version': String(COLLECTIONS.leads.schema.version + 1) });
    expect(newer.status).toBe(400);
    expect((await get(s.ours.memberKey, '/replication/leads/pull', { 'x-schema-version': String(COLLECTIONS.leads.schema.version) })).status).toBe(200);
  });

  it('stores a pushed creation as is (RxDB fields stripped, nothing stamped) and serves it to operations', async () => {
    const lead = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: '2026-11-16T11:00:00.000Z' }, group.id, { firstName: 'Pushed', lastName: 'Person' });
    const res = await pushRows(s.ours.memberKey, 'leads', [{ newDocumentState: { ...lead, _deleted: false, _rev: '1-abc', _meta: { lwt: 1 }, _attachments: {} } }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    const rows = await s.sql.query<{ doc: Lead }>("SELECT doc FROM documents WHERE collection = 'leads' AND id = $1", [lead.id]);
    expect(rows[0]?.doc).toEqual(lead);
    const found = await s.call<{ leads: { id: string }[] }>(s.ours.ownerKey, 'campaigns.leads.search', { query: 'Pushed Person' });
    expect(found.body.leads.map((l) => l.id)).toEqual([lead.id]);
    const pulled = (await pullAll(s.ours.ownerKey, 'leads', 500)).docs.find((d) => d.id === lead.id);
    expect(pulled && plain(pulled)).toEqual(lead);
  });

  it('makes time-ordered ids (UUIDv7) and takes them at its boundary: a push of a desktop\'s new lead, an operation naming it', async () => {
    // A desktop's new lead, with the id its host made.
    const lead = newLead({ id: timeOrderedIds.uuid(), workspaceId: s.ours.workspaceId, now: '2026-11-16T11:30:00.000Z' }, group.id, { firstName: 'Seven', lastName: 'Pushed' });
    expect(lead.id).toMatch(UUID_V7);
    const res = await pushRows(s.ours.memberKey, 'leads', [{ newDocumentState: { ...lead, _deleted: false } }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect((await s.db.forWorkspace(s.ours.workspaceId).get('leads', lead.id))?.firstName).toBe('Seven');
    // An operation whose input names it (validated as a UUID), and whose new documents get the
    // server's own ids: v7, ascending in the order they were made.
    const notes: string[] = [];
    for (const content of ['first', 'second', 'third']) {
      const note = await s.call<{ id: string }>(s.ours.memberKey, 'leadActivities.create', { leadId: lead.id, content });
      expect(note.status).toBe(200);
      notes.push(note.body.id);
    }
    for (const id of notes) expect(id).toMatch(UUID_V7);
    expect([...notes].sort()).toEqual(notes);
  });

  it('returns the server document as a conflict when the assumed state is outdated, changing nothing', async () => {
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const current = (await store.get('leads', fx.otherLeadId)) as Lead;
    const snapshot = await s.snapshot(s.ours.workspaceId);
    const stale = { ...current, followUpAt: null };
    const res = await pushRows(s.ours.memberKey, 'leads', [{ assumedMasterState: { ...stale, _deleted: false }, newDocumentState: { ...stale, firstName: 'Overwritten', _deleted: false } }]);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    expect(plain(res.body[0] as Doc)).toEqual(current);
    expect(res.body[0]?._deleted).toBe(false);
    // A "creation" of a document the server already has is a conflict too.
    const dup = await pushRows(s.ours.memberKey, 'leads', [{ newDocumentState: { ...current, firstName: 'Duplicate', _deleted: false } }]);
    expect(plain(dup.body[0] as Doc)).toEqual(current);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(snapshot);
    // With the right assumed state the edit lands.
    const ok = await pushRows(s.ours.memberKey, 'leads', [{ assumedMasterState: { ...current, _deleted: false }, newDocumentState: { ...current, jobTitle: 'Head of Sales', _deleted: false } }]);
    expect(ok.body).toEqual([]);
    expect((await store.get('leads', fx.otherLeadId))?.jobTitle).toBe('Head of Sales');
  });

  it('refuses a whole batch with a row that breaks the schema (400), storing nothing', async () => {
    const snapshot = await s.snapshot(s.ours.workspaceId);
    const good = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: '2026-11-16T11:00:00.000Z' }, group.id, { firstName: 'Good' });
    const bad = { ...newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: '2026-11-16T11:00:00.000Z' }, group.id), leadFitScore: 'high' };
    const res = await pushRows<ErrorBody>(s.ours.memberKey, 'leads', [{ newDocumentState: { ...good, _deleted: false } }, { newDocumentState: { ...bad, _deleted: false } }]);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_INPUT');
    expect(res.body.error.message).toContain('leadFitScore');
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(snapshot);
    expect((await pushRows<ErrorBody>(s.ours.memberKey, 'leads', { not: 'an array' })).status).toBe(400);
    expect((await pushRows<ErrorBody>(s.ours.memberKey, 'leads', [{ nope: true }])).status).toBe(400);
  });

  it("refuses what the rules refuse for the key's member: the stored document comes back unchanged and the reason is recorded for that member", async () => {
    const since = new Date(s.clock.now().getTime() - 1).toISOString();
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const note = (await store.get('activities', fx.noteId)) as Activity;
    const snapshot = await s.snapshot(s.ours.workspaceId);
    // The member edits the owner's note.
    const res = await pushRows(s.ours.memberKey, 'activities', [{ assumedMasterState: { ...note, _deleted: false }, newDocumentState: { ...note, content: 'Rewritten by someone else', _deleted: false } }]);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    expect(plain(res.body[0] as Doc)).toEqual(note);
    // A refused creation (a note in someone else's name): the server has nothing, so a tombstone.
    const forged = newActivity({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: '2026-11-16T11:00:00.000Z' }, fx.leadId, s.ours.ownerId, 'NOTE', 'Forged');
    const created = await pushRows(s.ours.memberKey, 'activities', [{ newDocumentState: { ...forged, _deleted: false } }]);
    expect(created.body).toEqual([{ ...forged, _deleted: true }]);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(snapshot);

    const mine = await get<{ refusals: { collection: string; documentId: string; code: string; message: string; at: string }[] }>(s.ours.memberKey, `/replication/refusals?since=${encodeURIComponent(since)}`);
    expect(mine.status).toBe(200);
    expect(mine.body.refusals.map((r) => [r.collection, r.documentId, r.code])).toEqual([
      ['activities', note.id, 'NOT_AUTHOR'],
      ['activities', forged.id, 'RULE_VIOLATION'],
    ]);
    expect(mine.body.refusals[0]?.message).toContain('author');
    // Only the member whose push it was sees them; a later `since` sees nothing new.
    expect((await get<{ refusals: unknown[] }>(s.ours.ownerKey, `/replication/refusals?since=${encodeURIComponent(since)}`)).body.refusals).toEqual([]);
    const last = mine.body.refusals[mine.body.refusals.length - 1]?.at ?? '';
    expect((await get<{ refusals: unknown[] }>(s.ours.memberKey, `/replication/refusals?since=${encodeURIComponent(last)}`)).body.refusals).toEqual([]);
    expect((await get<ErrorBody>(s.ours.memberKey, '/replication/refusals?since=yesterday')).status).toBe(400);
  });

  it("refuses a change to a running campaign's steps pushed by a desktop", async () => {
    const f = await seedFixtures(s.db, s.ours, s.clock.now().toISOString(), 'Running');
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const paused = (await store.get('campaigns', f.campaignId)) as Campaign;
    const running = { ...paused, running: true, startedAt: s.clock.now().toISOString() };
    await store.commit([{ collection: 'campaigns', id: paused.id, before: paused, after: running }]);
    const edited = { ...running, steps: running.steps.map((st) => (st.id === f.stepId ? { ...st, content: 'Edited offline' } : st)) };
    const res = await pushRows(s.ours.ownerKey, 'campaigns', [{ assumedMasterState: { ...running, _deleted: false }, newDocumentState: { ...edited, _deleted: false } }]);
    expect(plain(res.body[0] as Doc)).toEqual(running);
    const reasons = await get<{ refusals: { documentId: string; code: string }[] }>(s.ours.ownerKey, '/replication/refusals');
    expect(reasons.body.refusals.some((r) => r.documentId === paused.id && r.code === 'CAMPAIGN_NOT_PAUSED')).toBe(true);
  });

  it('applies a pushed deletion, and accepts and refuses rows of one batch independently', async () => {
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const f = await seedFixtures(s.db, s.ours, s.clock.now().toISOString(), 'Mixed');
    const mineNote = (await store.get('activities', f.noteId)) as Activity;
    const fresh = newActivity({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: '2026-11-16T11:00:00.000Z' }, f.leadId, s.ours.memberId, 'NOTE', 'My own note');
    const res = await pushRows(s.ours.memberKey, 'activities', [
      { newDocumentState: { ...fresh, _deleted: false } },
      // Deleting the owner's note is refused for the member...
      { assumedMasterState: { ...mineNote, _deleted: false }, newDocumentState: { ...mineNote, _deleted: true } },
    ]);
    expect(res.body.map((d) => d.id)).toEqual([mineNote.id]);
    expect(await store.get('activities', fresh.id)).toEqual(fresh);
    expect(await store.get('activities', mineNote.id)).toEqual(mineNote);
    // ...and allowed for its author.
    const del = await pushRows(s.ours.ownerKey, 'activities', [{ assumedMasterState: { ...mineNote, _deleted: false }, newDocumentState: { ...mineNote, _deleted: true } }]);
    expect(del.body).toEqual([]);
    expect(await store.get('activities', mineNote.id)).toBeNull();
    const listed = await s.call<{ activities: { id: string }[] }>(s.ours.ownerKey, 'leadActivities.list', { leadId: f.leadId });
    expect(listed.body.activities.map((a) => a.id)).not.toContain(mineNote.id);
  });

  it("never lets a push touch or claim another workspace's document", async () => {
    const snapshot = await s.snapshot(s.theirs.workspaceId);
    // Their id (guessed), claimed for our workspace with our own content.
    const guess = newLead({ id: foreign.leadId, workspaceId: s.ours.workspaceId, now: '2026-11-16T11:00:00.000Z' }, group.id, { firstName: 'Stolen' });
    const claim = await pushRows(s.ours.ownerKey, 'leads', [{ newDocumentState: { ...guess, _deleted: false } }]);
    expect(claim.body).toHaveLength(1);
    expect(claim.body[0]?._deleted).toBe(true);
    expect(JSON.stringify(claim.body)).not.toContain(foreign.marker);
    // A document stamped with their workspace.
    const stamped = newLead({ id: randomUUID(), workspaceId: s.theirs.workspaceId, now: '2026-11-16T11:00:00.000Z' }, foreign.leadGroupId, { firstName: 'Planted' });
    const plant = await pushRows(s.ours.ownerKey, 'leads', [{ newDocumentState: { ...stamped, _deleted: false } }]);
    expect(plant.body[0]?._deleted).toBe(true);
    expect(await s.snapshot(s.theirs.workspaceId)).toEqual(snapshot);
    expect(await s.db.forWorkspace(s.ours.workspaceId).get('leads', stamped.id)).toBeNull();
  });

  it('answers in the wire format the desktop checks (shared/wire/replication.ts), and refuses a _deleted that is not true or false', async () => {
    expect(collectionsListSchema.safeParse((await get(s.ours.memberKey, '/replication/collections')).body).success).toBe(true);
    const refusals = (await get<{ refusals: unknown[] }>(s.ours.memberKey, '/replication/refusals')).body;
    expect(refusals.refusals.length).toBeGreaterThan(0);
    expect(refusalsListSchema.safeParse(refusals).success).toBe(true);
    for (const c of REPLICATED_COLLECTIONS) {
      const page = await get(s.ours.ownerKey, `/replication/${c}/pull?limit=50`);
      expect(pullPageSchema.safeParse(page.body).success, c).toBe(true);
    }
    const current = (await s.db.forWorkspace(s.ours.workspaceId).get('leads', fx.otherLeadId)) as Lead;
    const stale = await pushRows(s.ours.memberKey, 'leads', [{ assumedMasterState: { ...current, jobTitle: 'stale', _deleted: false }, newDocumentState: { ...current, _deleted: false } }]);
    expect(stale.body).toHaveLength(1);
    expect(pushAnswerSchema.safeParse(stale.body).success).toBe(true);
    expect(parseStreamEvent(`{"documents":${JSON.stringify(stale.body)},"checkpoint":{"seq":1}}`)).toEqual({ documents: stale.body, checkpoint: { seq: 1 } });

    const snapshot = await s.snapshot(s.ours.workspaceId);
    const odd = await pushRows<ErrorBody>(s.ours.memberKey, 'leads', [{ assumedMasterState: { ...current, _deleted: false }, newDocumentState: { ...current, jobTitle: 'Odd', _deleted: 'yes' } }]);
    expect(odd.status).toBe(400);
    expect(odd.body.error).toMatchObject({ code: 'INVALID_INPUT', message: 'Row 0 newDocumentState._deleted must be true or false.' });
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(snapshot);
  });

  it('streams RESYNC on connect, then every change of the collection in this workspace only', async () => {
    const ac = new AbortController();
    const res = await fetch(`${s.url}/replication/leads/stream`, { headers: { authorization: `Bearer ${s.ours.memberKey}`, accept: 'text/event-stream' }, signal: ac.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events: string[] = [];
    let pings = 0;
    const reading = (async () => {
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buf += decoder.decode(value, { stream: true });
          let i: number;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            if (block.startsWith(':')) pings++;
            for (const line of block.split('\n')) if (line.startsWith('data: ')) events.push(line.slice(6));
          }
        }
      } catch {
        // Aborted.
      }
    })();
    const waitFor = async (pred: () => boolean, what: string) => {
      for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 25));
      expect(pred(), what).toBe(true);
    };
    await waitFor(() => events.length >= 1, 'RESYNC');
    expect(events[0]).toBe('RESYNC');

    // A change in the other workspace and in another collection: nothing arrives.
    await s.call(s.theirs.ownerKey, 'campaigns.leads.setLeadFollowUp', { leadId: foreign.otherLeadId, followUpAt: '2026-12-02T09:00:00.000Z' });
    await s.call(s.ours.ownerKey, 'tags.create', { name: 'Streamless' });
    // A change here: it arrives with a checkpoint.
    await s.call(s.ours.memberKey, 'campaigns.leads.setLeadFollowUp', { leadId: fx.otherLeadId, followUpAt: '2026-12-03T09:00:00.000Z' });
    await waitFor(() => events.length >= 2, 'a change event');
    const change = JSON.parse(events[1] as string) as PullPage;
    expect(change.documents.map((d) => d.id)).toEqual([fx.otherLeadId]);
    expect(change.documents[0]?.followUpAt).toBe('2026-12-03T09:00:00.000Z');
    expect(change.checkpoint?.seq).toBeGreaterThan(0);
    // And a pushed deletion.
    const current = (await s.db.forWorkspace(s.ours.workspaceId).get('leads', fx.otherLeadId)) as Lead;
    await pushRows(s.ours.ownerKey, 'leads', [{ assumedMasterState: { ...current, _deleted: false }, newDocumentState: { ...current, _deleted: true } }]);
    await waitFor(() => events.length >= 3, 'a deletion event');
    const deletion = JSON.parse(events[2] as string) as PullPage;
    expect(deletion.documents[0]).toMatchObject({ id: fx.otherLeadId, _deleted: true });
    expect(events.join('\n')).not.toContain(s.theirs.workspaceId);
    await waitFor(() => pings > 0, 'keep-alive comments');
    ac.abort();
    await reading;
  });
});

describe.each(BACKENDS)('replication under load (%s)', (backend) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(backend);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('never lets a pull skip a row while writers commit concurrently', async () => {
    const groupId = ((await s.db.forWorkspace(s.ours.workspaceId).query('leadGroups')).docs[0] as LeadGroup).id;
    const written = new Set<string>();
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 15; i++) {
        const lead = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: '2026-11-16T11:00:00.000Z' }, groupId, { firstName: `W${w}-${i}` });
        // Each writer holds its transaction open a little after taking its seq.
        await s.db.withStore(s.ours.workspaceId, async (store) => {
          await store.commit([{ collection: 'leads', id: lead.id, before: null, after: lead }]);
          await new Promise((r) => setTimeout(r, Math.random() * 8));
        });
        written.add(lead.id);
      }
    });
    const seen = new Set<string>();
    let checkpoint: { seq: number } | null = null;
    const pullOnce = async (): Promise<number> => {
      const q = new URLSearchParams({ limit: '7' });
      if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
      const res = await fetch(`${s.url}/replication/leads/pull?${q.toString()}`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } });
      const page = (await res.json()) as PullPage;
      for (const d of page.documents) seen.add(d.id);
      checkpoint = page.checkpoint ?? checkpoint;
      return page.documents.length;
    };
    let writing = true;
    // Pulls from its checkpoint while the writers commit: a row skipped now is never pulled later.
    const puller = (async () => {
      while (writing) if ((await pullOnce()) === 0) await new Promise((r) => setTimeout(r, 5));
    })();
    await Promise.all(writers);
    writing = false;
    await puller;
    while ((await pullOnce()) > 0);
    expect(written.size).toBe(60);
    for (const id of written) expect(seen.has(id), `pulled ${id}`).toBe(true);
  });

  it('rate-limits replication routes like operations', async () => {
    const limited = await startTestServer(backend, { rateLimitPerMinute: 3 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${limited.url}/replication/tags/pull`, { headers: { authorization: `Bearer ${limited.ours.ownerKey}` } })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await limited.close();
    }
  });
});

/** Reads SSE `data:` payloads from a stream until `until` says stop. */
async function collectEvents(url: string, key: string, until: (events: string[]) => boolean, timeoutMs = 10_000, onOpen?: () => Promise<void>): Promise<string[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  const events: string[] = [];
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, signal: ac.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let opened = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        for (const line of buf.slice(0, i).split('\n')) if (line.startsWith('data: ')) events.push(line.slice(6));
        buf = buf.slice(i + 2);
      }
      if (!opened && events.length > 0) {
        opened = true;
        await onOpen?.();
      }
      if (until(events)) break;
    }
  } catch {
    // Timed out or closed: return what arrived.
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return events;
}

describe.each(BACKENDS)('live streams and shutdown (%s)', (backend) => {
  it('ends open streams when the server closes, so shutdown does not wait for clients', async () => {
    const s = await startTestServer(backend);
    try {
      const stream = collectEvents(`${s.url}/replication/leads/stream`, s.ours.ownerKey, () => false, 20_000);
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      await s.app.close();
      expect(Date.now() - t0).toBeLessThan(5_000);
      const events = await stream;
      expect(events[0]).toBe('RESYNC');
    } finally {
      await s.sql.close();
      await s.database.cleanup();
    }
  });
});

describe.skipIf(!process.env.DATABASE_URL)('two server processes on one Postgres', () => {
  it('fans changes out to streams on the other server, and a revocation on one is honoured by the other', async () => {
    const { buildServer } = await import('../../sync-server/app.ts');
    const a = await startTestServer('postgres');
    const otherSql = await a.database.open();
    const b = await buildServer({ database: otherSql, logLevel: 'silent' });
    const bUrl = await b.listen({ port: 0, host: '127.0.0.1' });
    try {
      const f = await seedFixtures(a.db, a.ours, a.clock.now().toISOString(), 'Fanout');
      // A stream on server A; the change is made through server B.
      const events = await collectEvents(`${a.url}/replication/leads/stream`, a.ours.memberKey, (ev) => ev.length >= 2, 10_000, async () => {
        const res = await fetch(`${bUrl}/campaigns.leads.setLeadFollowUp`, {
          method: 'POST',
          headers: { authorization: `Bearer ${a.ours.memberKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ leadId: f.leadId, followUpAt: '2027-01-05T09:00:00.000Z' }),
        });
        expect(res.status).toBe(200);
      });
      expect(events[0]).toBe('RESYNC');
      const change = JSON.parse(events[1] ?? '{}') as PullPage;
      expect(change.documents?.[0]).toMatchObject({ id: f.leadId, followUpAt: '2027-01-05T09:00:00.000Z' });

      // A key used on A (cached there), revoked through B, is refused by A at once.
      const made = await a.call<{ id: string; key: string }>(a.ours.ownerKey, 'apiKeys.create', { name: 'two servers' });
      expect((await a.call(made.body.key, 'tags.getAll')).status).toBe(200);
      const revoke = await fetch(`${bUrl}/apiKeys.revoke`, { method: 'POST', headers: { authorization: `Bearer ${a.ours.ownerKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ id: made.body.id }) });
      expect(revoke.status).toBe(200);
      let status = 200;
      for (let i = 0; i < 40 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 25));
        status = (await a.call(made.body.key, 'tags.getAll')).status;
      }
      expect(status).toBe(401);
    } finally {
      await b.close();
      await otherSql.close();
      await a.close();
    }
  });
});
