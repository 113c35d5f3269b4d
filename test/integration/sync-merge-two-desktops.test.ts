/**
 * The merge across desktops (issue 26, "Done when"): two desktop backends in their own processes take
 * in the same person offline, sync, and the pair shows in Duplicates; one desktop merges it while the
 * other, offline, keeps editing the merged lead (a field, a note, a task); after sync every edit is
 * on the survivor, on both desktops and the server, and nothing was refused; an undo of the merge
 * made on a desktop syncs too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Activity, Lead } from '../../shared/model/index.ts';
import { HeadlessDesktop, RpcError, serverAdmin, startServer } from './sync-processes.ts';
import type { RunningServer, ServerEnv } from './sync-processes.ts';

type Page<T> = { docs: T[]; nextCursor: string | null };

const root = mkdtempSync(join(tmpdir(), 'sync-merge-'));
const env: ServerEnv = { dataDir: join(root, 'server') };
let server: RunningServer;
let ws: { workspaceId: string; memberId: string; apiKey: string };
let bob: { memberId: string; apiKey: string };
let a: HeadlessDesktop;
let b: HeadlessDesktop;
let leadGroupId = '';
/** What the first test merged, for the second to undo. */
let undo: { survivorId: string; mergedId: string; undo: unknown; bNote: string; offlineNote: string } = { survivorId: '', mergedId: '', undo: null, bNote: '', offlineNote: '' };

const getLead = (d: HeadlessDesktop, id: string) => d.call<Lead | null>('$get', { collection: 'leads', id });
const all = <T,>(d: HeadlessDesktop, collection: string) => d.call<Page<T>>('$query', { collection, query: {} }).then((p) => p.docs);

async function bothInSync(): Promise<void> {
  await Promise.all([a.awaitSync(), b.awaitSync()]);
  await Promise.all([a.awaitSync(), b.awaitSync()]);
}

async function create(d: HeadlessDesktop, lead: Record<string, string>): Promise<string> {
  const r = await d.call<{ leadIds: (string | null)[] }>('campaigns.leads.create', { leadGroupId, leads: [lead] });
  const id = r.leadIds[0];
  if (!id) throw new Error('not created');
  return id;
}

beforeAll(async () => {
  ws = (await serverAdmin(env, ['create-workspace', '--name', 'Acme', '--owner-email', 'olive@acme.test'])) as typeof ws;
  await serverAdmin(env, ['set-subscription', '--workspace', ws.workspaceId, '--status', 'active']);
  bob = (await serverAdmin(env, ['create-member', '--workspace', ws.workspaceId, '--name', 'Bob', '--email', 'bob@acme.test', '--role', 'member'])) as typeof bob;
  server = await startServer(env);
  [a, b] = await Promise.all([
    HeadlessDesktop.start({ server: server.url, key: ws.apiKey, dataDir: join(root, 'desktop-a') }),
    HeadlessDesktop.start({ server: server.url, key: bob.apiKey, dataDir: join(root, 'desktop-b') }),
  ]);
  await bothInSync();
  leadGroupId = (await all<{ id: string }>(a, 'leadGroups'))[0]?.id ?? '';
}, 180_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('a merge while another desktop edits the merged lead offline', () => {
  it('puts every edit of the merged lead on the survivor', async () => {
    // Both take in the same person offline: two leads.
    await Promise.all([a.call('$pause'), b.call('$pause')]);
    const survivorId = await create(a, { firstName: 'Mira', lastName: 'Merge', email: 'mira@merge.example', company: 'Initech' });
    const mergedId = await create(b, { firstName: 'Mira', lastName: 'Merge', email: ' MIRA@Merge.Example ', phone: '+1 555 0199' });
    const bNote = await b.call<{ id: string }>('leadActivities.create', { leadId: mergedId, content: 'Met Mira at the fair' });
    await Promise.all([a.call('$resume'), b.call('$resume')]);
    await bothInSync();
    expect((await all<Lead>(a, 'leads')).filter((l) => l.email.toLowerCase().includes('mira@merge.example'))).toHaveLength(2);

    // The pair shows in Duplicates on either desktop.
    for (const d of [a, b]) {
      const dup = await d.call<{ groups: { kind: string; leads: { id: string }[] }[] }>('campaigns.leads.duplicates', { kind: 'email' });
      const ids = dup.groups.flatMap((g) => g.leads.map((l) => l.id));
      expect(ids).toContain(survivorId);
      expect(ids).toContain(mergedId);
    }

    // B goes offline and keeps working on its lead; A merges B's lead into its own.
    await b.call('$pause');
    const merged = await a.call<{ moved: { notes: number }; undo: unknown }>('campaigns.leads.merge', { survivorId, mergedId });
    undo = { survivorId, mergedId, undo: merged.undo, bNote: bNote.id, offlineNote: '' };
    expect(merged.moved.notes).toBe(1);
    await a.awaitSync();
    await b.call('campaigns.leads.update', { leadId: mergedId, jobTitle: 'Head of Platform' });
    const offlineNote = await b.call<{ id: string }>('leadActivities.create', { leadId: mergedId, content: 'Called Mira from the train' });
    undo.offlineNote = offlineNote.id;
    const offlineTask = await b.call<{ id: string }>('leadActivities.taskCreate', { leadId: mergedId, content: 'Send Mira the proposal' });
    await b.call('$resume');
    await bothInSync();

    for (const d of [a, b]) {
      const s = await getLead(d, survivorId);
      expect(s).toMatchObject({ jobTitle: 'Head of Platform', phone: '+1 555 0199', company: 'Initech', email: 'mira@merge.example' });
      expect((await getLead(d, mergedId))?.mergedIntoId).toBe(survivorId);
      const acts = await all<Activity>(d, 'activities');
      for (const id of [bNote.id, offlineNote.id, offlineTask.id]) expect(acts.find((x) => x.id === id)?.leadId).toBe(survivorId);
      // The merged lead answers with its survivor; searches show one Mira.
      const err = await d.call('campaigns.leads.get', { leadId: mergedId }).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(RpcError);
      expect((err as RpcError).code).toBe('NOT_FOUND');
      expect((err as RpcError).message).toContain(survivorId);
      const found = await d.call<{ leads: { id: string }[] }>('campaigns.leads.search', { query: 'Mira' });
      expect(found.leads.map((l) => l.id)).toEqual([survivorId]);
      const timeline = await d.call<{ activities: { content: string }[] }>('leadActivities.list', { leadId: survivorId });
      expect(JSON.stringify(timeline)).toContain('Called Mira from the train');
    }
    // Both desktops hold the same documents, and nothing was refused.
    expect(await all(a, 'leads')).toEqual(await all(b, 'leads'));
    expect(await all(a, 'activities')).toEqual(await all(b, 'activities'));
    const refusals = await fetch(`${server.url}/replication/refusals?since=1970-01-01T00:00:00.000Z`, { headers: { authorization: `Bearer ${bob.apiKey}` } }).then((r) => r.json() as Promise<{ refusals: unknown[] }>);
    expect(refusals.refusals).toEqual([]);
  }, 180_000);

  it('syncs an undo of the merge made on a desktop: both leads back, on both desktops, nothing refused', async () => {
    const { survivorId, mergedId } = undo;
    const back = await a.call<{ movedBack: { activities: number }; keptChanges: number }>('campaigns.leads.unmerge', { survivorId, mergedId, undo: undo.undo });
    expect(back.movedBack.activities).toBeGreaterThanOrEqual(1);
    await bothInSync();
    for (const d of [a, b]) {
      const m = await getLead(d, mergedId);
      expect(m?.mergedIntoId ?? null).toBeNull();
      expect((await d.call<{ email: string }>('campaigns.leads.get', { leadId: mergedId })).email.trim().toLowerCase()).toBe('mira@merge.example');
      const acts = await all<Activity>(d, 'activities');
      // The note the merge moved goes back; what was written on the survivor after the merge stays there.
      expect(acts.find((x) => x.id === undo.bNote)?.leadId).toBe(mergedId);
      expect(acts.find((x) => x.id === undo.offlineNote)?.leadId).toBe(survivorId);
      // The survivor's own values are back, and the job title set after the merge is kept.
      expect(await getLead(d, survivorId)).toMatchObject({ phone: '', jobTitle: 'Head of Platform' });
    }
    expect(await all(a, 'leads')).toEqual(await all(b, 'leads'));
    expect(await all(a, 'activities')).toEqual(await all(b, 'activities'));
    for (const key of [ws.apiKey, bob.apiKey]) {
      const refusals = await fetch(`${server.url}/replication/refusals?since=1970-01-01T00:00:00.000Z`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json() as Promise<{ refusals: unknown[] }>);
      expect(refusals.refusals).toEqual([]);
    }
  }, 180_000);
});
