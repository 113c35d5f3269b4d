/** campaigns.duplicate: a paused copy of a campaign, its sequence under new ids. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { newLeadGroup } from '../model/factories.ts';
import type { Campaign, LeadGroup, Step } from '../model/index.ts';
import { basicCampaign, basicCampaignOut, loadCampaign, loadGroup } from './campaign-views.ts';
import { mutation, opsByName } from './define.ts';
import { uuid } from './params.ts';

const COPY_SUFFIX = ' (copy)';
const MAX_NAME = 200;

/** The steps with new ids (steps and variants), same structure and texts. */
function copySteps(steps: readonly Step[], newId: () => string): Step[] {
  const stepIds = new Map(steps.map((s) => [s.id, newId()]));
  return steps.map((s) => {
    const variantIds = new Map(s.variants.map((v) => [v.id, newId()]));
    const def = s.variantAssignment.defaultVariantId;
    return {
      ...structuredClone(s),
      id: stepIds.get(s.id) ?? newId(),
      parentStepId: s.parentStepId === null ? null : (stepIds.get(s.parentStepId) ?? null),
      variants: s.variants.map((v) => ({ ...v, id: variantIds.get(v.id) ?? newId() })),
      variantAssignment: { mode: s.variantAssignment.mode, defaultVariantId: def === null ? null : (variantIds.get(def) ?? null) },
    };
  });
}

const duplicate = mutation({
  name: 'campaigns.duplicate',
  summary: 'Copies a campaign, paused: its sequence (new step ids, same structure and variants), schedule, lead-picking settings and senders; named "<name> (copy)" unless a name is given; same lead group unless newLeadGroup asks for a new empty one with the same columns.',
  input: z.object({
    campaignId: uuid,
    name: z.string().trim().min(1, 'give the copy a name').max(MAX_NAME).optional(),
    /** true: the copy gets a new, empty lead group with the same columns; default false (same leads). */
    newLeadGroup: z.boolean().optional(),
  }),
  output: basicCampaignOut.extend({ stepIds: z.record(z.string(), z.string()) }),
  async handler(input, ctx) {
    const src = await loadCampaign(ctx, input.campaignId);
    const now = nowIso(ctx);
    const workspaceId = ctx.actor.workspaceId;
    const name = input.name ?? `${src.name.slice(0, MAX_NAME - COPY_SUFFIX.length).trimEnd()}${COPY_SUFFIX}`;
    let leadGroupId = src.leadGroupId;
    if (input.newLeadGroup === true) {
      const srcGroup = await loadGroup(ctx, src.leadGroupId);
      const fresh = newLeadGroup({ id: ctx.ids.uuid(), workspaceId, now }, name, () => ctx.ids.uuid());
      // Same columns (built-in and custom) under new ids, so the copied merge fields all resolve.
      const group: LeadGroup = { ...fresh, columns: srcGroup.columns.map((col) => ({ ...col, id: ctx.ids.uuid() })) };
      await ctx.db.put('leadGroups', group);
      leadGroupId = group.id;
    }
    const steps = copySteps(src.steps, () => ctx.ids.uuid());
    const copy: Campaign = {
      ...structuredClone(src),
      id: ctx.ids.uuid(),
      workspaceId,
      createdAt: now,
      updatedAt: now,
      name,
      leadGroupId,
      sequenceId: ctx.ids.uuid(),
      running: false,
      startedAt: null,
      pausedReason: null,
      steps,
    };
    await ctx.db.put('campaigns', copy);
    return { ...basicCampaign(copy), stepIds: Object.fromEntries(src.steps.map((s, i) => [s.id, steps[i]?.id ?? ''])) };
  },
});

export const ops = opsByName(duplicate);
