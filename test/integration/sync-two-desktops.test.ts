/**
 * Two desktop backends in separate processes (`npm run desktop:headless`) and a real sync server
 * (`npm run sync-server`, PGlite in a temp folder): edits converge, offline edits converge, a
 * concurrent edit keeps both sides' fields, the same field ends identical everywhere, unauthorized
 * pushes are refused and reverted with a visible reason, another workspace never arrives, a killed
 * desktop keeps every acknowledged write, and a server restart mid-stream is survived.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../shared/model/index.ts';
import type { Activity, Campaign, Lead } from '../../shared/model/index.ts';
import { HeadlessDesktop, serverAdmin, startServer } from './sync-processes.ts';
import type { RunningServer, ServerEnv } from './sync-processes.ts';
import { until } from '../support/until.ts';

type Page<T> = { docs: T[]; nextCursor: string | null };

const root = mkdtempSync(join(tmpdir(), 'sync-two-'));
const env: ServerEnv = { dataDir: join(root, 'server') };
let server: RunningServer;
let ws: { workspaceId: string; memberId: string; apiKey: string };
let bob: { memberId: string; apiKey: string };
let other: { workspaceId: string; memberId: string; apiKey: string };
let a: HeadlessDesktop;
let b: HeadlessDesktop;
let leadGroupId = '';

const startA = () => HeadlessDesktop.start({ server: server.url, key: ws.apiKey, dataDir: join(root, 'desktop-a') });
const startB = () => HeadlessDesktop.start({ server: server.url, key: bob.apiKey, dataDir: join(root, 'desktop-b'), allowRaw: true });

async function http<T>(key: string, op: string, input: Record<string, unknown>, method: 'GET' | 'POST' = 'POST'): Promise<T> {
  const res = await fetch(`${server.url}/${op}${method === 'GET' ? `?${new URLSearchParams(input as Record<string, string>).toString()}` : ''}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
    ...(method === 'POST' ? { body: JSON.stringify(input) } : {}),
  });
  const body = (await res.json()) as T;
  if (!res.ok) throw new Error(`${op}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

const getLead = (d: HeadlessDesktop, id: string) => d.call<Lead | null>('$get', { collection: 'leads', id });
const all = <T,>(d: HeadlessDesktop, collection: string) => d.call<Page<T>>('$query', { collection, query: {} }).then((p) => p.docs);

async function importLead(d: HeadlessDesktop, firstName: string): Promise<string> {
  const r = await d.call<{ leadIds: (string | null)[] }>('campaigns.leads.create', { leadGroupId, leads: [{ firstName, email: `${firstName.toLowerCase()}.${Date.now()}@example.test` }] });
  const id = r.leadIds[0];
  if (!id) throw new Error('import failed');
  return id;
}

async function bothInSync(): Promise<void> {
  await Promise.all([a.awaitSync(), b.awaitSync()]);
  // A write pushed by one side reaches the other through the live stream; wait for it to settle.
  await Promise.all([a.awaitSync(), b.awaitSync()]);
}

beforeAll(async () => {
  ws = (await serverAdmin(env, ['create-workspace', '--name', 'Acme', '--owner-email', 'olive@acme.test'])) as typeof ws;
  await serverAdmin(env, ['set-subscription', '--workspace', ws.workspaceId, '--status', 'active']);
  bob = (await serverAdmin(env, ['create-member', '--workspace', ws.workspaceId, '--name', 'Bob', '--email', 'bob@acme.test', '--role', 'member'])) as typeof bob;
  other = (await serverAdmin(env, ['create-workspace', '--name', 'Globex', '--owner-email', 'gina@globex.test'])) as typeof other;
  server = await startServer(env);
  [a, b] = await Promise.all([startA(), startB()]);
  await bothInSync();
  const groups = await all<{ id: string }>(a, 'leadGroups');
  leadGroupId = groups[0]?.id ?? '';
}, 180_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('two desktops and a sync server', () => {
  it('starts each desktop with the workspace and the member its key belongs to', () => {
    expect(a.workspaceId).toBe(ws.workspaceId);
    expect(b.workspaceId).toBe(ws.workspaceId);
    expect(a.memberId).toBe(ws.memberId);
    expect(b.memberId).toBe(bob.memberId);
    expect(leadGroupId).not.toBe('');
  });

  it('converges edits made on both sides', async () => {
    const fromA = await importLead(a, 'Alice');
    const fromB = await importLead(b, 'Boris');
    await b.call('leadActivities.create', { leadId: fromB, content: 'Met at the fair' });
    // A works on B's lead once it has arrived.
    await bothInSync();
    await a.call('campaigns.leads.setLeadFollowUp', { leadId: fromB, followUpAt: '2026-12-01T09:00:00.000Z' });
    await bothInSync();
    for (const d of [a, b]) {
      expect((await getLead(d, fromA))?.firstName).toBe('Alice');
      expect((await getLead(d, fromB))?.followUpAt).toBe('2026-12-01T09:00:00.000Z');
    }
    expect(await all(a, 'leads')).toEqual(await all(b, 'leads'));
    expect(await all(a, 'activities')).toEqual(await all(b, 'activities'));
  }, 120_000);

  it('converges offline edits of both sides after reconnecting', async () => {
    const lead = await importLead(a, 'Olga');
    await bothInSync();
    await Promise.all([a.call('$pause'), b.call('$pause')]);
    const tag = await a.call<{ id: string }>('tags.create', { name: 'Offline A' });
    await a.call('campaigns.leads.updateTag', { leadGroupId, leadId: lead, tagId: tag.id });
    const fromB = await importLead(b, 'Pavel');
    await b.call('leadActivities.create', { leadId: lead, content: 'Written on a plane' });
    expect((await a.call<{ pending: number }>('$status')).pending).toBeGreaterThan(0);
    expect((await b.call<{ mode: string }>('$status')).mode).toBe('offline');
    await Promise.all([a.call('$resume'), b.call('$resume')]);
    await bothInSync();
    for (const d of [a, b]) {
      expect((await getLead(d, lead))?.tagId).toBe(tag.id);
      expect((await getLead(d, fromB))?.firstName).toBe('Pavel');
    }
    expect(await all(a, 'leads')).toEqual(await all(b, 'leads'));
    expect(await all(a, 'activities')).toEqual(await all(b, 'activities'));
    expect(await all(a, 'tags')).toEqual(await all(b, 'tags'));
    expect((await a.call<{ pending: number }>('$status')).pending).toBe(0);
  }, 120_000);

  it('keeps both sides of a concurrent edit to different fields of one lead, and one value of the same field', async () => {
    const lead = await importLead(a, 'Quinn');
    const [t1, t2] = await Promise.all([a.call<{ id: string }>('tags.create', { name: 'Tag from A' }), b.call<{ id: string }>('tags.create', { name: 'Tag from B' })]);
    await bothInSync();
    await Promise.all([a.call('$pause'), b.call('$pause')]);
    // Different fields: A the catch-up date, B the Do Not Contact flag. Same field: the tag.
    await a.call('campaigns.leads.setLeadFollowUp', { leadId: lead, followUpAt: '2027-01-15T09:00:00.000Z' });
    await a.call('campaigns.leads.updateTag', { leadGroupId, leadId: lead, tagId: t1.id });
    await b.call('campaigns.leads.setDoNotContact', { leadIds: [lead], doNotContact: true });
    await b.call('campaigns.leads.updateTag', { leadGroupId, leadId: lead, tagId: t2.id });
    await a.call('$resume');
    await a.awaitSync();
    await b.call('$resume');
    await bothInSync();
    const [la, lb] = await Promise.all([getLead(a, lead), getLead(b, lead)]);
    expect(la?.followUpAt).toBe('2027-01-15T09:00:00.000Z');
    expect(la?.doNotContact).toBe(true);
    expect(la).toEqual(lb);
    // The server's value (A's, pushed first) wins the field both changed, everywhere.
    expect(la?.tagId).toBe(t1.id);
    const onServer = await http<{ tagId: string | null }>(ws.apiKey, 'campaigns.leads.get', { leadId: lead }, 'GET');
    expect(onServer.tagId).toBe(t1.id);
  }, 120_000);

  it("refuses an edit of another member's note, puts it back and says why", async () => {
    const lead = await importLead(a, 'Rita');
    const note = await a.call<{ id: string }>('leadActivities.create', { leadId: lead, content: "Olive's own note" });
    await bothInSync();
    // Through the operation Bob is refused locally, by the same rules the server runs.
    await expect(b.call('leadActivities.update', { activityId: note.id, content: 'Bob was here' })).rejects.toMatchObject({ code: 'NOT_AUTHOR' });
    // A client that skips the rules gets refused by the server and reverted.
    const stored = (await b.call<Activity | null>('$get', { collection: 'activities', id: note.id })) as Activity;
    await b.call('$rawCommit', { writes: [{ collection: 'activities', id: note.id, before: stored, after: { ...stored, content: 'Bob was here', updatedAt: new Date().toISOString() } }] });
    await until('revert', async () => (await b.call<Activity | null>('$get', { collection: 'activities', id: note.id }))?.content === "Olive's own note");
    const status = await b.waitStatus((s) => s.refusals.some((r) => r.documentId === note.id && r.code === 'NOT_AUTHOR'));
    expect(status.refusals.find((r) => r.documentId === note.id)?.message).toMatch(/author/i);
    await bothInSync();
    expect((await a.call<Activity | null>('$get', { collection: 'activities', id: note.id }))?.content).toBe("Olive's own note");
  }, 120_000);

  it("refuses a step edit made offline after the campaign started elsewhere, and says why", async () => {
    const sender = await a.call<{ id: string }>('sdrProfiles.create', { name: 'Sam Sandbox', channel: 'sandbox' });
    const campaign = await a.call<{ id: string }>('campaigns.create', { name: 'Launch', leadGroupId });
    await a.call('campaigns.updateSenders', { campaignId: campaign.id, add: [sender.id] });
    await a.call('campaigns.addSequenceStep', { campaignId: campaign.id, step: { type: 'SEND_MESSAGE', content: 'Hi {{First name|there}}' } });
    await bothInSync();
    await b.call('$pause');
    const started = await a.call<{ running: boolean; problems: unknown[] }>('campaigns.start', { campaignId: campaign.id });
    expect(started.running).toBe(true);
    await a.awaitSync();
    // Bob's copy still shows the campaign paused, so his app lets him edit the step offline.
    const local = (await b.call<Campaign | null>('$get', { collection: 'campaigns', id: campaign.id })) as Campaign;
    expect(local.running).toBe(false);
    const stepId = local.steps[0]?.id ?? '';
    await b.call('campaigns.editSequenceStep', { campaignId: campaign.id, stepId, content: 'Edited offline' });
    await b.call('$resume');
    const status = await b.waitStatus((s) => s.refusals.some((r) => r.documentId === campaign.id && r.code === 'CAMPAIGN_NOT_PAUSED'));
    expect(status.refusals.find((r) => r.documentId === campaign.id)?.message).toMatch(/running/i);
    await bothInSync();
    for (const d of [a, b]) {
      const c = (await d.call<Campaign | null>('$get', { collection: 'campaigns', id: campaign.id })) as Campaign;
      expect(c.running).toBe(true);
      expect(c.steps[0]?.content).toBe('Hi {{First name|there}}');
    }
  }, 120_000);

  it('never pulls anything of another workspace', async () => {
    const foreign = await http<{ leadIds: string[] }>(other.apiKey, 'campaigns.leads.create', {
      leadGroupId: await foreignGroup(),
      leads: [{ firstName: 'Foreign', email: 'foreign@globex.test' }],
    });
    await bothInSync();
    for (const d of [a, b]) {
      expect(await getLead(d, foreign.leadIds[0] ?? '')).toBeNull();
      for (const c of ['workspaces', 'members', 'stages', 'tags', 'leadGroups', 'leads', 'activities', 'campaigns', 'enrollments', 'senders', 'usage', 'messages']) {
        const docs = await all<{ workspaceId: string }>(d, c);
        expect(docs.filter((x) => x.workspaceId !== ws.workspaceId), c).toEqual([]);
      }
    }
  }, 120_000);

  it('restarts a desktop killed with SIGKILL during sync with every acknowledged write', async () => {
    const acked: string[] = [];
    const writing = (async () => {
      for (let i = 0; i < 400; i++) {
        try {
          acked.push(await importLead(b, `Crash${i}`));
        } catch {
          return;
        }
      }
    })();
    await until('some acknowledged writes', async () => acked.length >= 40);
    await b.kill('SIGKILL');
    await writing;
    b = await startB();
    for (const id of acked) expect((await getLead(b, id))?.id, id).toBe(id);
    await bothInSync();
    for (const id of acked) expect((await getLead(a, id))?.id, id).toBe(id);
  }, 180_000);

  it('survives a server restart in the middle of the stream', async () => {
    const lead = await importLead(a, 'Stream');
    await bothInSync();
    const port = server.port;
    await server.stop('SIGKILL');
    await a.waitStatus((s) => s.mode === 'offline');
    await a.call('campaigns.leads.setLeadFollowUp', { leadId: lead, followUpAt: '2027-03-01T09:00:00.000Z' });
    expect((await a.call<{ pending: number }>('$status')).pending).toBeGreaterThan(0);
    server = await startServer(env, port);
    await a.waitStatus((s) => s.mode === 'online' && s.pending === 0, 60_000);
    await until('B sees the edit', async () => (await getLead(b, lead))?.followUpAt === '2027-03-01T09:00:00.000Z', 60_000);
    await bothInSync();
  }, 180_000);
});

async function foreignGroup(): Promise<string> {
  const res = await fetch(`${server.url}/replication/leadGroups/pull?limit=10`, { headers: { authorization: `Bearer ${other.apiKey}`, 'x-schema-version': String(COLLECTIONS.leadGroups.schema.version) } });
  const body = (await res.json()) as { documents: { id: string }[] };
  const id = body.documents[0]?.id;
  if (!id) throw new Error('the other workspace has no lead group');
  return id;
}
