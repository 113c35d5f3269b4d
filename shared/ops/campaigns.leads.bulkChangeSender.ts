/** campaigns.leads.bulkChangeSender: moves many of a campaign's running leads to another of its
 * senders, keeping their place or restarting the sequence. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import type { Enrollment } from '../model/index.ts';
import { count, firstStepId, isSenderOf } from './campaigns.leads.bulkEnrollInCampaign.ts';
import { mutation, opsByName } from './define.ts';
import { dryRun, uuid } from './params.ts';
import { resolveSelection, selectionSchema } from './selection.ts';

const bulkChangeSender = mutation({
  name: 'campaigns.leads.bulkChangeSender',
  summary: "Moves many of a campaign's running leads to another of its senders, keeping their place or restarting the sequence.",
  input: z.object({
    scope: z.object({
      kind: z.literal('campaign', { message: 'the scope must name the campaign: {kind: "campaign", campaignId}' }),
      campaignId: uuid,
    }),
    selection: selectionSchema,
    targetSdrProfileId: uuid,
    mode: z.enum(['keep_position', 'restart']).default('keep_position'),
    dryRun,
  }),
  output: z.object({
    dryRun: z.boolean(),
    campaignId: z.string(),
    changedCount: count,
    skipped: z.object({ notEnrolled: count, completed: count, paused: count, alreadyAssigned: count }),
    /** Each moved lead with the sender it had (null: unassigned), so the change can be undone. */
    moved: z.array(z.object({ leadId: z.string(), fromSdrProfileId: z.string().nullable() })),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const now = nowIso(ctx);
    const campaign = await ctx.db.get('campaigns', input.scope.campaignId);
    if (!campaign) throw notFound('Campaign', input.scope.campaignId);
    const target = input.targetSdrProfileId;
    if (!isSenderOf(campaign, target)) {
      const chosen = await ctx.db.get('senders', target);
      throw new DomainError('INVALID_INPUT', `${chosen?.name ?? 'The chosen sender'} does not send in campaign "${campaign.name}": pick one of its senders.`, {
        field: 'targetSdrProfileId',
        sdrProfileId: target,
        campaignId: campaign.id,
      });
    }

    const { leads, missingIds } = await resolveSelection(ctx.db, input.scope, input.selection);
    const { docs } = await ctx.db.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: campaign.id } });
    // One enrollment per lead and campaign; should older data hold several, act on the running one.
    const byLead = new Map<string, Enrollment>();
    for (const e of docs) {
      const seen = byLead.get(e.leadId);
      if (!seen || (seen.status !== 'IN_PROGRESS' && (e.status === 'IN_PROGRESS' || e.createdAt > seen.createdAt))) byLead.set(e.leadId, e);
    }

    const skipped = { notEnrolled: missingIds.length, completed: 0, paused: 0, alreadyAssigned: 0 };
    let changedCount = 0;
    const movedLeads: { leadId: string; fromSdrProfileId: string | null }[] = [];
    const firstStep = firstStepId(campaign);
    for (const lead of leads) {
      const e = byLead.get(lead.id);
      if (!e) skipped.notEnrolled++;
      else if (e.status === 'PAUSED') skipped.paused++;
      else if (e.status !== 'IN_PROGRESS') skipped.completed++;
      else if (e.sdrProfileId === target) skipped.alreadyAssigned++;
      else {
        // A conversation (reply, accepted request) belongs to the old account: the new sender
        // starts without one, so steps that need a connection are judged afresh.
        const moved: Enrollment = { ...e, sdrProfileId: target, inConversationAt: null, updatedAt: now };
        await ctx.db.put(
          'enrollments',
          input.mode === 'restart' ? { ...moved, currentStepId: firstStep, doneSteps: [], nextActionAt: now, attempts: 0, completedAt: null } : moved,
        );
        changedCount++;
        movedLeads.push({ leadId: lead.id, fromSdrProfileId: e.sdrProfileId });
      }
    }
    return { dryRun: ctx.dryRun, campaignId: campaign.id, changedCount, skipped, moved: movedLeads };
  },
});

export const ops = opsByName(bulkChangeSender);
