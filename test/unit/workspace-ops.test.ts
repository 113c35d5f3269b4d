import { describe, expect, it } from 'vitest';
import { systemActor } from '../../shared/context.ts';
import { DomainError } from '../../shared/errors.ts';
import { validateChange } from '../../shared/rules/index.ts';
import { makeHarness } from '../support/harness.ts';

describe('workspace operations', () => {
  it('lists the default pipeline stages in order with their categories', async () => {
    const h = await makeHarness();
    const { stages } = await h.call('pipelineStages.getAll', {});
    expect(stages.map((s) => `${s.name}:${s.category}`)).toEqual([
      'New:NEW', 'Contacted:CONTACTED', 'Engaged:ENGAGED', 'Meeting booked:MEETING_BOOKED', 'On hold:ON_HOLD', 'Won:WON', 'Lost:LOST',
    ]);
  });

  it('creates tags, returns an existing tag of the same name, and lists them', async () => {
    const h = await makeHarness();
    const hot = await h.call('tags.create', { name: 'Hot', color: '#ff0000' });
    const again = await h.call('tags.create', { name: 'Hot' });
    expect(again.id).toBe(hot.id);
    await h.call('tags.create', { name: 'Cold' });
    expect((await h.call('tags.getAll', {})).tags.map((t) => t.name)).toEqual(['Cold', 'Hot']);
    expect((await h.call('tags.getAll', {}, h.foreignOwner)).tags).toEqual([]);
  });

  it('refuses a bad tag color with INVALID_INPUT and stores nothing', async () => {
    const h = await makeHarness();
    await h.expectRefused(h.call('tags.create', { name: 'X', color: 'red' }), 'INVALID_INPUT');
  });

  it('lets admins add members, refuses plain members', async () => {
    const h = await makeHarness();
    const res = await h.call('members.create', { name: 'Cy', email: 'cy@acme.test', role: 'member' }, h.admin);
    expect(res.apiKey).toMatch(/^live_/);
    expect((await h.call('members.list', {})).members.map((m) => m.name)).toContain('Cy');
    await h.expectRefused(h.call('members.create', { name: 'Di', email: 'di@acme.test', role: 'member' }, h.member), 'PERMISSION_DENIED');
    await h.expectRefused(h.call('members.create', { name: 'Cy2', email: 'cy@acme.test', role: 'member' }, h.admin), 'INVALID_INPUT');
  });

  it('issues, lists and revokes API keys, keeping only a hash', async () => {
    const h = await makeHarness();
    const k = await h.call('apiKeys.create', { name: 'Zapier' }, h.member);
    expect(k.key.startsWith(k.prefix)).toBe(true);
    const stored = await h.store.get('apiKeys', k.id);
    expect(stored?.hash).not.toContain(k.key.slice(12));
    expect((await h.call('apiKeys.list', {}, h.member)).keys.map((x) => x.id)).toEqual([k.id]);
    await h.expectRefused(h.call('apiKeys.revoke', { id: k.id }, h.foreignOwner), 'NOT_FOUND');
    const r = await h.call('apiKeys.revoke', { id: k.id }, h.member);
    expect(r.revokedAt).toBe(h.now());
    expect((await h.call('apiKeys.list', {}, h.member)).keys).toEqual([]);
  });
});

describe("the workspace's public address", () => {
  it("is the server's to set: an owner's change is refused and nothing changes, the system's is kept", async () => {
    const h = await makeHarness();
    const ws = await h.store.get('workspaces', h.main.workspaceId);
    if (!ws) throw new Error('no workspace');
    const moved = { ...ws, publicUrl: 'https://attacker.example' };
    const refused = await validateChange({ collection: 'workspaces', before: ws, after: moved }, { actor: h.owner, read: h.store, now: new Date(h.now()) }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).code).toBe('PERMISSION_DENIED');
    expect((await h.store.get('workspaces', ws.id))?.publicUrl ?? null).toBe(ws.publicUrl ?? null);
    await validateChange({ collection: 'workspaces', before: ws, after: { ...ws, publicUrl: 'https://crm.acme.example' } }, { actor: systemActor(ws.id), read: h.store, now: new Date(h.now()) });
    // A rename that leaves the address as it is stays the admins' to make.
    await validateChange({ collection: 'workspaces', before: ws, after: { ...ws, name: 'Renamed' } }, { actor: h.owner, read: h.store, now: new Date(h.now()) });
  });
});
