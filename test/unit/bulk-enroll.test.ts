import { describe, expect, it } from 'vitest';
import { DomainError } from '../../shared/errors.ts';
import { BUILT_IN_FIELDS, newEnrollment, newLead, newLeadGroup, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Enrollment, Lead } from '../../shared/model/index.ts';
import { validateWrites } from '../../shared/rules/index.ts';
import { Tx } from '../../shared/tx.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const MISSING_ID = '0e0e0e0e-0000-4000-8000-000000000000';

/** A campaign on a lead group of its own (so enrolling links leads to a new group). */
async function destination(h: Harness, fields: Parameters<Harness['addCampaign']>[0] = {}): Promise<Campaign> {
  const group = newLeadGroup(h.stamp(), 'Destination group', () => h.ids.uuid());
  await h.seed([{ collection: 'leadGroups', id: group.id, before: null, after: group }]);
  return h.addCampaign({
    name: 'Destination',
    leadGroupId: group.id,
    steps: [newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hello' }), newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 86_400 })],
    ...fields,
  });
}

async function enroll(h: Harness, lead: Lead, campaign: Campaign, fields: Partial<Enrollment> = {}): Promise<Enrollment> {
  const e = newEnrollment(h.stamp(), lead.id, campaign.id, { currentStepId: campaign.steps[0]?.id ?? null, ...fields });
  await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
  return e;
}

async function enrollmentsOf(h: Harness, where: { leadId?: string; campaignId?: string }): Promise<Enrollment[]> {
  const { docs } = await h.store.query('enrollments', {});
  return docs.filter((e) => (!where.leadId || e.leadId === where.leadId) && (!where.campaignId || e.campaignId === where.campaignId));
}

/** The stored documents; collections never written are left out (reading one creates its empty table). */
const stored = (h: Harness) => Object.fromEntries(Object.entries(h.db.snapshot()).filter(([, rows]) => Object.keys(rows).length > 0));

const ZERO = {
  enrolled: 0, alreadyEnrolled: 0, skippedMissing: 0, skippedDoNotContact: 0, skippedBlocklisted: 0, skippedActive: 0,
  stoppedActive: 0, completedActive: 0, keptOwnerCount: 0, reassignedCount: 0, linkedLeads: 0, closedSelected: 0, skippedClosed: 0,
};

describe('campaigns.leads.bulkEnrollInCampaign', () => {
  it('enrolls the selected leads at the first step of the main path, links them to the group, and never starts the campaign', async () => {
    const h = await makeHarness();
    const dest = await destination(h);
    const a = await h.addLead({ firstName: 'Ann' });
    const b = await h.addLead({ firstName: 'Ben' });
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [a.id, b.id, a.id] },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign',
    }, h.member);
    expect(res).toEqual({ ...ZERO, dryRun: false, campaignId: dest.id, createdCampaign: false, enrolled: 2, reassignedCount: 2, linkedLeads: 2, addedSenders: [],
      enrolledLeadIds: [a.id, b.id], linkedLeadIds: [a.id, b.id] });
    const created = await enrollmentsOf(h, { campaignId: dest.id });
    expect(created).toHaveLength(2);
    for (const e of created) {
      expect(e).toMatchObject({ status: 'IN_PROGRESS', sdrProfileId: null, currentStepId: dest.steps[0]?.id, nextActionAt: h.now(), doneSteps: [] });
    }
    expect((await h.store.get('leads', a.id))?.groupIds).toEqual([h.main.leadGroupId, dest.leadGroupId]);
    expect((await h.store.get('campaigns', dest.id))?.running).toBe(false);
  });

  it('counts every kind of skip, and a dry run answers exactly like the real call without storing anything', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const dest = await destination(h, { senderIds: [sender.id] });
    const elsewhere = await h.addCampaign({ name: 'Elsewhere' });
    const fresh = await h.addLead({ firstName: 'Fresh' });
    const dnc = await h.addLead({ firstName: 'Dnc', doNotContact: true });
    const blocked = await h.addLead({ firstName: 'Blocked', blocklisted: true });
    const already = await h.addLead({ firstName: 'Already', groupIds: [h.main.leadGroupId, dest.leadGroupId] });
    await enroll(h, already, dest, { status: 'COMPLETED' });
    const busy = await h.addLead({ firstName: 'Busy' });
    await enroll(h, busy, elsewhere);
    const linked = await h.addLead({ firstName: 'Linked', groupIds: [h.main.leadGroupId, dest.leadGroupId] });
    const deleted = await h.addLead({ firstName: 'Gone' });
    await h.seed([{ collection: 'leads', id: deleted.id, before: deleted, after: null }]);
    const foreign = newLead({ id: h.ids.uuid(), workspaceId: h.other.workspaceId, now: h.now() }, h.other.leadGroupId);
    await h.db.forWorkspace(h.other.workspaceId).commit([{ collection: 'leads', id: foreign.id, before: null, after: foreign }]);

    const input = {
      scope: { kind: 'workspace' as const },
      selection: { mode: 'ids' as const, leadIds: [fresh.id, dnc.id, blocked.id, already.id, busy.id, linked.id, deleted.id, MISSING_ID, foreign.id] },
      destination: { kind: 'existing' as const, campaignId: dest.id },
      sender: sender.id,
      activeConflictPolicy: 'skip' as const,
    };
    const before = stored(h);
    const preview = await h.call('campaigns.leads.bulkEnrollInCampaign', { ...input, dryRun: true });
    expect(stored(h)).toEqual(before);
    const real = await h.call('campaigns.leads.bulkEnrollInCampaign', input);
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real).toEqual({
      ...ZERO, dryRun: false, campaignId: dest.id, createdCampaign: false, addedSenders: [],
      enrolled: 2, alreadyEnrolled: 1, skippedMissing: 3, skippedDoNotContact: 1, skippedBlocklisted: 1, skippedActive: 1,
      reassignedCount: 2, linkedLeads: 1, enrolledLeadIds: [fresh.id, linked.id], linkedLeadIds: [fresh.id],
    });
    expect((await enrollmentsOf(h, { campaignId: dest.id })).map((e) => e.leadId).sort()).toEqual([already.id, fresh.id, linked.id].sort());
    expect((await enrollmentsOf(h, { campaignId: dest.id, leadId: already.id }))[0]?.status).toBe('COMPLETED');
    expect((await enrollmentsOf(h, { leadId: busy.id })).map((e) => e.status)).toEqual(['IN_PROGRESS']);
    expect(await enrollmentsOf(h, { leadId: dnc.id })).toEqual([]);
    expect(await enrollmentsOf(h, { leadId: blocked.id })).toEqual([]);
    expect(await h.db.forWorkspace(h.other.workspaceId).query('enrollments')).toEqual({ docs: [], nextCursor: null });
    expect((await h.store.get('leads', linked.id))?.groupIds).toEqual([h.main.leadGroupId, dest.leadGroupId]);
  });

  it('stops a sequence running elsewhere by default (stoppedActive) and enrolls the lead', async () => {
    const h = await makeHarness();
    const dest = await destination(h);
    const elsewhere = await h.addCampaign({ name: 'Elsewhere' });
    const lead = await h.addLead();
    const running = await enroll(h, lead, elsewhere);
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [lead.id] },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign',
    });
    expect(res).toMatchObject({ enrolled: 1, stoppedActive: 1, completedActive: 0, skippedActive: 0 });
    expect(await h.store.get('enrollments', running.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'moved', nextActionAt: null, updatedAt: h.now() });
    expect((await enrollmentsOf(h, { leadId: lead.id, campaignId: dest.id }))[0]?.status).toBe('IN_PROGRESS');
  });

  it('completes a sequence running elsewhere with policy complete (completedActive)', async () => {
    const h = await makeHarness();
    const dest = await destination(h);
    const elsewhere = await h.addCampaign({ name: 'Elsewhere' });
    const lead = await h.addLead();
    const running = await enroll(h, lead, elsewhere);
    const paused = await h.addLead();
    const pausedEnrollment = await enroll(h, paused, elsewhere, { status: 'PAUSED' });
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [lead.id, paused.id] },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign', activeConflictPolicy: 'complete',
    });
    expect(res).toMatchObject({ enrolled: 2, completedActive: 1, stoppedActive: 0, skippedActive: 0 });
    expect(await h.store.get('enrollments', running.id)).toMatchObject({ status: 'COMPLETED', completedAt: h.now(), stoppedReason: null });
    // Only running sequences conflict: a paused one elsewhere is left as it is.
    expect((await h.store.get('enrollments', pausedEnrollment.id))?.status).toBe('PAUSED');
  });

  it('sender keep_where_possible keeps the owner only when it sends in the destination', async () => {
    const h = await makeHarness();
    const onDest = await h.addSender({ name: 'On Dest' });
    const offDest = await h.addSender({ name: 'Off Dest' });
    const dest = await destination(h, { senderIds: [onDest.id] });
    const old = await h.addCampaign({ name: 'Old', senderIds: [onDest.id, offDest.id] });
    const keptLead = await h.addLead({ firstName: 'Kept' });
    await enroll(h, keptLead, old, { status: 'COMPLETED', sdrProfileId: onDest.id });
    const movedLead = await h.addLead({ firstName: 'Moved' });
    await enroll(h, movedLead, old, { status: 'COMPLETED', sdrProfileId: offDest.id });
    const nobody = await h.addLead({ firstName: 'Nobody' });
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [keptLead.id, movedLead.id, nobody.id] },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'keep_where_possible',
    });
    expect(res).toMatchObject({ enrolled: 3, keptOwnerCount: 1, reassignedCount: 2, addedSenders: [] });
    expect((await enrollmentsOf(h, { leadId: keptLead.id, campaignId: dest.id }))[0]?.sdrProfileId).toBe(onDest.id);
    expect((await enrollmentsOf(h, { leadId: movedLead.id, campaignId: dest.id }))[0]?.sdrProfileId).toBeNull();
    expect((await h.store.get('campaigns', dest.id))?.senders.map((s) => s.sdrProfileId)).toEqual([onDest.id]);
  });

  it("sender keep keeps each lead's latest owner, which joins the destination's senders when missing", async () => {
    const h = await makeHarness();
    const first = await h.addSender({ name: 'First Owner' });
    const latest = await h.addSender({ name: 'Latest Owner' });
    const dest = await destination(h, { senderIds: [first.id] });
    const old = await h.addCampaign({ name: 'Old', senderIds: [first.id, latest.id] });
    const older = await h.addCampaign({ name: 'Older', senderIds: [first.id] });
    const lead = await h.addLead({ firstName: 'Twice' });
    await enroll(h, lead, older, { status: 'COMPLETED', sdrProfileId: first.id });
    h.clock.advance(60_000);
    await enroll(h, lead, old, { status: 'IN_PROGRESS', sdrProfileId: latest.id });
    const firstsLead = await h.addLead({ firstName: 'Firsts' });
    await enroll(h, firstsLead, old, { status: 'COMPLETED', sdrProfileId: first.id });
    const unowned = await h.addLead({ firstName: 'Unowned' });
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [lead.id, firstsLead.id, unowned.id] },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'keep',
    });
    expect(res).toMatchObject({ enrolled: 3, keptOwnerCount: 2, reassignedCount: 1, stoppedActive: 1, addedSenders: [latest.id] });
    expect((await enrollmentsOf(h, { leadId: lead.id, campaignId: dest.id }))[0]?.sdrProfileId).toBe(latest.id);
    expect((await enrollmentsOf(h, { leadId: firstsLead.id, campaignId: dest.id }))[0]?.sdrProfileId).toBe(first.id);
    expect((await enrollmentsOf(h, { leadId: unowned.id, campaignId: dest.id }))[0]?.sdrProfileId).toBeNull();
    const after = await h.store.get('campaigns', dest.id);
    expect(after?.senders).toEqual([{ sdrProfileId: first.id, paused: false }, { sdrProfileId: latest.id, paused: false }]);
    expect(after?.running).toBe(false);
  });

  it('sender unassign leaves every lead for the destination senders, an explicit sender takes them all', async () => {
    const h = await makeHarness();
    const a = await h.addSender({ name: 'A Sender' });
    const b = await h.addSender({ name: 'B Sender' });
    const dest = await destination(h, { senderIds: [a.id, b.id] });
    const dest2 = await destination(h, { senderIds: [a.id, b.id] });
    const old = await h.addCampaign({ name: 'Old', senderIds: [a.id] });
    const owned = await h.addLead();
    await enroll(h, owned, old, { status: 'COMPLETED', sdrProfileId: a.id });
    const other = await h.addLead();

    const unassigned = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [owned.id, other.id] },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign',
    });
    expect(unassigned).toMatchObject({ enrolled: 2, keptOwnerCount: 0, reassignedCount: 2 });
    expect((await enrollmentsOf(h, { campaignId: dest.id })).map((e) => e.sdrProfileId)).toEqual([null, null]);

    const explicit = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [owned.id, other.id] },
      destination: { kind: 'existing', campaignId: dest2.id }, sender: b.id,
    });
    expect(explicit).toMatchObject({ enrolled: 2, stoppedActive: 2, keptOwnerCount: 0, reassignedCount: 2 });
    expect((await enrollmentsOf(h, { campaignId: dest2.id })).map((e) => e.sdrProfileId)).toEqual([b.id, b.id]);
  });

  it('refuses an explicit sender that does not send in the destination, and unknown destinations', async () => {
    const h = await makeHarness();
    const a = await h.addSender();
    const outsider = await h.addSender({ name: 'Outsider' });
    const dest = await destination(h, { senderIds: [a.id] });
    const lead = await h.addLead();
    const base = { scope: { kind: 'workspace' as const }, selection: { mode: 'ids' as const, leadIds: [lead.id] } };
    const err = await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', { ...base, destination: { kind: 'existing', campaignId: dest.id }, sender: outsider.id }), 'INVALID_INPUT');
    expect(err.message).toBe('Outsider does not send in campaign "Destination": pick one of its senders, or keep each lead\'s sender.');
    await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', { ...base, destination: { kind: 'existing', campaignId: dest.id }, sender: outsider.id, dryRun: true }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', { ...base, destination: { kind: 'new', name: 'Fresh' }, sender: a.id }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', { ...base, destination: { kind: 'existing', campaignId: MISSING_ID } }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', { ...base, destination: { kind: 'existing', campaignId: dest.id } }, h.foreignOwner), 'NOT_FOUND');
    const badMode = await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', { ...base, destination: { kind: 'existing', campaignId: dest.id }, sender: 'everyone' }), 'INVALID_INPUT');
    expect(badMode.message).toMatch(/keep, keep_where_possible, unassign/);
    await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', { ...base, destination: { kind: 'existing', campaignId: dest.id }, activeConflictPolicy: 'ignore' } as never), 'INVALID_INPUT');
  });

  it('selects by filter within the workspace, minus excluded ids', async () => {
    const h = await makeHarness();
    const dest = await destination(h);
    const hot = await h.call('tags.create', { name: 'Hot' });
    const a = await h.addLead({ firstName: 'Alice', tagId: hot.id, company: 'Initech' });
    const b = await h.addLead({ firstName: 'Bert', tagId: hot.id, company: 'Initech' });
    const c = await h.addLead({ firstName: 'Cleo', tagId: hot.id, company: 'Umbrella' });
    await h.addLead({ firstName: 'Dora', tagId: null, company: 'Initech' });
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'filter', tagId: hot.id, excludeLeadIds: [b.id] },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign',
    });
    expect(res).toMatchObject({ enrolled: 2, skippedMissing: 0 });
    expect((await enrollmentsOf(h, { campaignId: dest.id })).map((e) => e.leadId).sort()).toEqual([a.id, c.id].sort());

    const byQuery = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'filter', query: 'initech' },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign', dryRun: true,
    });
    // Alice is already in; Bert and Dora are new.
    expect(byQuery).toMatchObject({ enrolled: 2, alreadyEnrolled: 1, dryRun: true });
  });

  it("a campaign scope filters that campaign's leads only", async () => {
    const h = await makeHarness();
    const dest = await destination(h);
    // The source's leads are those of its lead group, enrolled in it or not.
    const source = await destination(h, { name: 'Source' });
    const inSource = await h.addLead({ firstName: 'In' }, source.leadGroupId);
    const finished = await h.addLead({ firstName: 'Finished' }, source.leadGroupId);
    await h.addLead({ firstName: 'Out' });
    await enroll(h, inSource, source);
    await enroll(h, finished, source, { status: 'COMPLETED' });
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'campaign', campaignId: source.id }, selection: { mode: 'filter' },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign', activeConflictPolicy: 'skip',
    });
    expect(res).toMatchObject({ enrolled: 1, skippedActive: 1 });
    expect((await enrollmentsOf(h, { campaignId: dest.id })).map((e) => e.leadId)).toEqual([finished.id]);

    const workspaceWide = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'filter' },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign', activeConflictPolicy: 'skip', dryRun: true,
    });
    expect(workspaceWide).toMatchObject({ enrolled: 1, alreadyEnrolled: 1, skippedActive: 1 });
    await h.expectRefused(h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'campaign', campaignId: MISSING_ID }, selection: { mode: 'filter' }, destination: { kind: 'existing', campaignId: dest.id },
    }), 'NOT_FOUND');
  });

  it('creates a new paused campaign with its own lead group; a dry run previews it with a throwaway id', async () => {
    const h = await makeHarness();
    const a = await h.addLead();
    const b = await h.addLead();
    const input = {
      scope: { kind: 'workspace' as const }, selection: { mode: 'ids' as const, leadIds: [a.id, b.id] },
      destination: { kind: 'new' as const, name: 'Spring push' }, sender: 'keep_where_possible' as const,
    };
    const before = stored(h);
    const preview = await h.call('campaigns.leads.bulkEnrollInCampaign', { ...input, dryRun: true });
    expect(stored(h)).toEqual(before);
    expect(await h.store.get('campaigns', preview.campaignId)).toBeNull();
    const real = await h.call('campaigns.leads.bulkEnrollInCampaign', input);
    expect(real).toEqual({ ...ZERO, dryRun: false, createdCampaign: true, campaignId: real.campaignId, enrolled: 2, reassignedCount: 2, linkedLeads: 2, addedSenders: [], enrolledLeadIds: [a.id, b.id], linkedLeadIds: [a.id, b.id] });
    expect({ ...preview, campaignId: real.campaignId }).toEqual({ ...real, dryRun: true });

    const campaign = await h.store.get('campaigns', real.campaignId);
    expect(campaign).toMatchObject({ name: 'Spring push', running: false, startedAt: null, steps: [], senders: [] });
    const group = campaign ? await h.store.get('leadGroups', campaign.leadGroupId) : null;
    expect(group?.columns.map((c) => c.name)).toEqual(BUILT_IN_FIELDS.map((f) => f.name));
    // An empty sequence: the enrollments wait with no step until steps are added.
    const created = await enrollmentsOf(h, { campaignId: real.campaignId });
    expect(created.map((e) => [e.status, e.currentStepId])).toEqual([['IN_PROGRESS', null], ['IN_PROGRESS', null]]);
    expect((await h.store.get('leads', a.id))?.groupIds).toContain(campaign?.leadGroupId);
  });

  it('keeps a running destination running and enrolls at the head of the main path of a branched sequence', async () => {
    const h = await makeHarness();
    const cond = newStep(h.ids.uuid(), 'CONDITION', { sendCondition: 'CONNECTED' });
    const yes = newStep(h.ids.uuid(), 'SEND_MESSAGE', { parentStepId: cond.id, branch: 'yes', content: 'Yes' });
    const dest = await destination(h, { running: true, steps: [cond, yes] });
    const lead = await h.addLead();
    await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [lead.id] }, destination: { kind: 'existing', campaignId: dest.id },
    });
    expect((await enrollmentsOf(h, { campaignId: dest.id }))[0]?.currentStepId).toBe(cond.id);
    expect((await h.store.get('campaigns', dest.id))?.running).toBe(true);
  });
});

describe('enrollment rules on raw writes', () => {
  async function refusal(h: Harness, before: Enrollment | null, after: Enrollment): Promise<DomainError | null> {
    const tx = new Tx(h.store);
    await tx.put('enrollments', after);
    try {
      await validateWrites([{ collection: 'enrollments', id: after.id, before, after }], { actor: h.member, read: tx, now: h.clock.now() });
      return null;
    } catch (e) {
      if (e instanceof DomainError) return e;
      throw e;
    }
  }

  it('refuses a second IN_PROGRESS enrollment of the same lead', async () => {
    const h = await makeHarness();
    const one = await h.addCampaign({ name: 'One' });
    const two = await h.addCampaign({ name: 'Two' });
    const lead = await h.addLead();
    const first = await enroll(h, lead, one);
    const second = newEnrollment(h.stamp(), lead.id, two.id);
    const err = await refusal(h, null, second);
    expect(err?.code).toBe('RULE_VIOLATION');
    // In the user's words: names, not ids.
    expect(err?.message).toBe('This lead is already in the sequence of campaign "One"; stop or complete it there first.');
    // Allowed once the first one is no longer running, or as a non-running enrollment.
    expect(await refusal(h, null, { ...second, status: 'PAUSED' })).toBeNull();
    await h.seed([{ collection: 'enrollments', id: first.id, before: first, after: { ...first, status: 'COMPLETED' } }]);
    expect(await refusal(h, null, second)).toBeNull();
  });

  it('refuses resuming a paused enrollment while another one runs', async () => {
    const h = await makeHarness();
    const one = await h.addCampaign({ name: 'One' });
    const two = await h.addCampaign({ name: 'Two' });
    const lead = await h.addLead();
    await enroll(h, lead, one);
    const paused = await enroll(h, lead, two, { status: 'PAUSED' });
    expect((await refusal(h, paused, { ...paused, status: 'IN_PROGRESS' }))?.code).toBe('RULE_VIOLATION');
  });

  it('refuses unknown leads or campaigns, senders not on the campaign, Do Not Contact leads and identity changes', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const outsider = await h.addSender({ name: 'Outsider' });
    const c = await h.addCampaign({ senderIds: [s.id] });
    const other = await h.addCampaign({ name: 'Other' });
    const lead = await h.addLead();
    const dnc = await h.addLead({ doNotContact: true });
    const e = newEnrollment(h.stamp(), lead.id, c.id, { sdrProfileId: s.id });
    expect(await refusal(h, null, e)).toBeNull();
    expect((await refusal(h, null, { ...e, leadId: MISSING_ID }))?.code).toBe('NOT_FOUND');
    expect((await refusal(h, null, { ...e, campaignId: MISSING_ID }))?.code).toBe('NOT_FOUND');
    expect((await refusal(h, null, { ...e, sdrProfileId: outsider.id }))?.code).toBe('RULE_VIOLATION');
    expect((await refusal(h, null, { ...e, leadId: dnc.id }))?.code).toBe('RULE_VIOLATION');
    expect((await refusal(h, e, { ...e, campaignId: other.id, sdrProfileId: null }))?.code).toBe('RULE_VIOLATION');
    expect((await refusal(h, e, { ...e, leadId: dnc.id }))?.code).toBe('RULE_VIOLATION');
    // A sender taken off the campaign keeps the leads it already holds (in conversation).
    const held = { ...e, sdrProfileId: outsider.id };
    expect(await refusal(h, held, { ...held, currentStepId: null })).toBeNull();
  });
});

describe('closed-stage leads in bulk enrollment', () => {
  async function closedWorld() {
    const h = await makeHarness();
    const dest = await destination(h);
    const { docs: stages } = await h.store.query('stages', {});
    const stage = (cat: string) => stages.find((st) => st.category === cat)?.id ?? null;
    const open = await h.addLead({ firstName: 'Open', pipelineStageId: stage('ENGAGED') });
    const won = await h.addLead({ firstName: 'Won', pipelineStageId: stage('WON') });
    const lost = await h.addLead({ firstName: 'Lost', pipelineStageId: stage('LOST'), closeReason: 'NOT_ICP' });
    const unstaged = await h.addLead({ firstName: 'New' });
    const input = {
      scope: { kind: 'workspace' as const }, selection: { mode: 'ids' as const, leadIds: [open.id, won.id, lost.id, unstaged.id] },
      destination: { kind: 'existing' as const, campaignId: dest.id }, sender: 'unassign',
    };
    return { h, dest, open, won, lost, unstaged, input };
  }

  it('without excludeClosed enrolls Won and Lost leads as the specification says, and reports how many were closed', async () => {
    const { h, dest, won, input } = await closedWorld();
    const preview = await h.call('campaigns.leads.bulkEnrollInCampaign', { ...input, dryRun: true });
    const real = await h.call('campaigns.leads.bulkEnrollInCampaign', input);
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real).toMatchObject({ enrolled: 4, closedSelected: 2, skippedClosed: 0 });
    expect((await enrollmentsOf(h, { campaignId: dest.id })).map((e) => e.leadId)).toContain(won.id);
  });

  it('with excludeClosed leaves Won and Lost leads out, counted in skippedClosed; the dry run equals the real call', async () => {
    const { h, dest, open, unstaged, input } = await closedWorld();
    const before = stored(h);
    const preview = await h.call('campaigns.leads.bulkEnrollInCampaign', { ...input, excludeClosed: true, dryRun: true });
    expect(stored(h)).toEqual(before);
    const real = await h.call('campaigns.leads.bulkEnrollInCampaign', { ...input, excludeClosed: true });
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real).toMatchObject({ enrolled: 2, closedSelected: 2, skippedClosed: 2 });
    expect((await enrollmentsOf(h, { campaignId: dest.id })).map((e) => e.leadId).sort()).toEqual([open.id, unstaged.id].sort());
  });

  it('counts closed leads of a filter selection too', async () => {
    const { h, dest } = await closedWorld();
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'filter', pipelineStage: 'WON' },
      destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign', excludeClosed: true, dryRun: true,
    });
    expect(res).toMatchObject({ enrolled: 0, closedSelected: 1, skippedClosed: 1 });
  });
});
