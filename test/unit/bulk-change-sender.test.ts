import { describe, expect, it } from 'vitest';
import { newEnrollment, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Enrollment, Lead } from '../../shared/model/index.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const MISSING_ID = '0e0e0e0e-0000-4000-8000-000000000000';

/** The stored documents; collections never written are left out (reading one creates its empty table). */
const stored = (h: Harness) => Object.fromEntries(Object.entries(h.db.snapshot()).filter(([, rows]) => Object.keys(rows).length > 0));

async function enroll(h: Harness, lead: Lead, campaign: Campaign, fields: Partial<Enrollment> = {}): Promise<Enrollment> {
  const e = newEnrollment(h.stamp(), lead.id, campaign.id, { currentStepId: campaign.steps[0]?.id ?? null, ...fields });
  await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
  return e;
}

/** A campaign with senders A and B, a three-step sequence, and one lead in every situation. */
async function setup() {
  const h = await makeHarness();
  const a = await h.addSender({ name: 'Alpha Sender' });
  const b = await h.addSender({ name: 'Beta Sender' });
  const outsider = await h.addSender({ name: 'Outsider Sender' });
  const steps = [
    newStep(h.ids.uuid(), 'CONNECTION_REQUEST'),
    newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 3600 }),
    newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' }),
  ];
  const campaign = await h.addCampaign({ senderIds: [a.id, b.id], steps, running: true });
  const [s1, s2, s3] = steps.map((s) => s.id);
  const done = [{ stepId: s1 ?? '', at: '2026-11-10T09:00:00.000Z', outcome: 'sent' }, { stepId: s2 ?? '', at: '2026-11-10T10:00:00.000Z', outcome: 'waited' }];
  const later = '2026-11-20T09:00:00.000Z';
  const lead = (name: string) => h.addLead({ firstName: name, company: name === 'Nora' ? 'Elsewhere Inc' : 'Initech' });
  const running = await lead('Runa');
  const runningE = await enroll(h, running, campaign, { sdrProfileId: a.id, currentStepId: s3, doneSteps: done, nextActionAt: later, inConversationAt: '2026-11-10T11:00:00.000Z', variants: { [s3 ?? '']: 'v1' } });
  const unassigned = await lead('Una');
  const unassignedE = await enroll(h, unassigned, campaign, { sdrProfileId: null, currentStepId: s2, doneSteps: done.slice(0, 1), nextActionAt: later });
  const paused = await lead('Paula');
  await enroll(h, paused, campaign, { status: 'PAUSED', sdrProfileId: a.id });
  const completed = await lead('Cora');
  await enroll(h, completed, campaign, { status: 'COMPLETED', sdrProfileId: a.id, currentStepId: null });
  const stopped = await lead('Stef');
  await enroll(h, stopped, campaign, { status: 'STOPPED', sdrProfileId: a.id });
  const replied = await lead('Remy');
  await enroll(h, replied, campaign, { status: 'REPLIED', sdrProfileId: a.id });
  const onTarget = await lead('Tara');
  await enroll(h, onTarget, campaign, { sdrProfileId: b.id });
  const notEnrolled = await lead('Nora');
  const all = [running, unassigned, paused, completed, stopped, replied, onTarget, notEnrolled];
  return { h, a, b, outsider, campaign, steps, running, runningE, unassigned, unassignedE, notEnrolled, all, later, done };
}

describe('campaigns.leads.bulkChangeSender', () => {
  it('keep_position swaps only the account of running leads and reports every skip', async () => {
    const { h, b, campaign, runningE, unassignedE, all, later, done } = await setup();
    const res = await h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: campaign.id },
      selection: { mode: 'ids', leadIds: [...all.map((l) => l.id), MISSING_ID] },
      targetSdrProfileId: b.id, mode: 'keep_position',
    }, h.member);
    expect(res).toEqual({ dryRun: false, campaignId: campaign.id, changedCount: 2, skipped: { notEnrolled: 2, completed: 3, paused: 1, alreadyAssigned: 1 },
      moved: [{ leadId: runningE.leadId, fromSdrProfileId: runningE.sdrProfileId }, { leadId: unassignedE.leadId, fromSdrProfileId: null }] });
    const moved = await h.store.get('enrollments', runningE.id);
    expect(moved).toEqual({ ...runningE, sdrProfileId: b.id, inConversationAt: null, updatedAt: h.now() });
    expect(moved).toMatchObject({ currentStepId: runningE.currentStepId, doneSteps: done, nextActionAt: later, variants: runningE.variants });
    expect((await h.store.get('enrollments', unassignedE.id))?.sdrProfileId).toBe(b.id);
  });

  it('restart also starts the leads again from the first step, now', async () => {
    const { h, b, campaign, steps, runningE, all } = await setup();
    const res = await h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: campaign.id }, selection: { mode: 'ids', leadIds: all.map((l) => l.id) },
      targetSdrProfileId: b.id, mode: 'restart',
    });
    expect(res.changedCount).toBe(2);
    expect(await h.store.get('enrollments', runningE.id)).toMatchObject({
      status: 'IN_PROGRESS', sdrProfileId: b.id, currentStepId: steps[0]?.id, doneSteps: [], nextActionAt: h.now(), attempts: 0,
    });
  });

  it('selects by filter within the campaign, minus excluded ids', async () => {
    const { h, b, campaign, running, runningE, unassignedE } = await setup();
    const res = await h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: campaign.id }, selection: { mode: 'filter', query: 'initech', excludeLeadIds: [running.id] },
      targetSdrProfileId: b.id, mode: 'keep_position',
    });
    // Nora (Elsewhere Inc, not enrolled) is outside the filter; Runa is excluded.
    expect(res).toMatchObject({ changedCount: 1, skipped: { notEnrolled: 0, completed: 3, paused: 1, alreadyAssigned: 1 } });
    expect((await h.store.get('enrollments', runningE.id))?.sdrProfileId).not.toBe(b.id);
    expect((await h.store.get('enrollments', unassignedE.id))?.sdrProfileId).toBe(b.id);
  });

  it('previews with dryRun: the same answer, nothing stored', async () => {
    const { h, b, campaign, all } = await setup();
    const input = {
      scope: { kind: 'campaign' as const, campaignId: campaign.id }, selection: { mode: 'ids' as const, leadIds: all.map((l) => l.id) },
      targetSdrProfileId: b.id, mode: 'restart' as const,
    };
    const before = stored(h);
    const preview = await h.call('campaigns.leads.bulkChangeSender', { ...input, dryRun: true });
    expect(stored(h)).toEqual(before);
    const real = await h.call('campaigns.leads.bulkChangeSender', input);
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real.changedCount).toBe(2);
  });

  it('refuses a target that is not a sender of the campaign, a workspace scope and unknown campaigns', async () => {
    const { h, outsider, b, campaign, all } = await setup();
    const selection = { mode: 'ids' as const, leadIds: all.map((l) => l.id) };
    const err = await h.expectRefused(h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: campaign.id }, selection, targetSdrProfileId: outsider.id, mode: 'keep_position',
    }), 'INVALID_INPUT');
    expect(err.message).toBe(`Outsider Sender does not send in campaign "${campaign.name}": pick one of its senders.`);
    await h.expectRefused(h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: campaign.id }, selection, targetSdrProfileId: outsider.id, mode: 'keep_position', dryRun: true,
    }), 'INVALID_INPUT');
    const scopeErr = await h.expectRefused(h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'workspace' }, selection, targetSdrProfileId: b.id, mode: 'keep_position',
    } as never), 'INVALID_INPUT');
    expect(scopeErr.message).toMatch(/scope must name the campaign/);
    await h.expectRefused(h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: MISSING_ID }, selection, targetSdrProfileId: b.id, mode: 'keep_position',
    }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: campaign.id }, selection, targetSdrProfileId: b.id, mode: 'keep_position',
    }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.bulkChangeSender', {
      scope: { kind: 'campaign', campaignId: campaign.id }, selection, targetSdrProfileId: b.id, mode: 'swap',
    } as never), 'INVALID_INPUT');
  });
});
