/** campaigns.addSequenceStep: places a new step (a condition with a placeholder on each path), and
 * starts the leads enrolled while the sequence was empty at its new first step. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { newStep } from '../model/factories.ts';
import { STEP_TYPES } from '../model/index.ts';
import { describeStep, firstStep, insertStep } from '../sequence.ts';
import { loadCampaign } from './campaign-views.ts';
import { mutation, opsByName } from './define.ts';
import { uuid } from './params.ts';
import { assertPaused, sequenceSummary, stepFields, stepPatch, summaryOut, withSteps } from './sequence-edits.ts';

/** A new condition gets one step on each path so the sequence stays valid (both paths of a
 * condition keep at least one step); the caller edits or replaces them. */
export const CONDITION_PLACEHOLDER_WAIT_SECONDS = 86_400;

const addSequenceStep = mutation({
  name: 'campaigns.addSequenceStep',
  summary:
    'Adds a step to a paused campaign: after afterStepId (first on the `branch` path when afterStepId is a condition), or appended to the main path. Validated before saving (merge fields match the columns, every sender can perform it, InMail needs Premium, connection notes fit). A new CONDITION is created with a one-day WAIT on its yes path and on its no path, so both paths have a step; edit or replace them.',
  input: z.object({
    campaignId: uuid,
    afterStepId: uuid.nullish(),
    branch: z.enum(['yes', 'no']).nullish(),
    step: z.object({ type: z.enum(STEP_TYPES), ...stepFields }),
  }),
  output: summaryOut,
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    assertPaused(c, 'adding a step');
    const step = newStep(ctx.ids.uuid(), input.step.type, stepPatch(input.step));
    let steps = insertStep(c.steps, step, { afterStepId: input.afterStepId ?? null, branch: input.branch ?? null });
    const notes: string[] = [];
    if (step.type === 'CONDITION') {
      for (const branch of ['yes', 'no'] as const) {
        steps = insertStep(steps, newStep(ctx.ids.uuid(), 'WAIT', { waitTimeSeconds: CONDITION_PLACEHOLDER_WAIT_SECONDS }), { afterStepId: step.id, branch });
      }
      notes.push(`${describeStep(steps, step)} was created with a one-day wait on its yes path and on its no path (each path keeps at least one step); edit or replace them.`);
    }
    const next = withSteps(c, ctx, steps);
    await ctx.db.put('campaigns', next);

    // Leads enrolled while the sequence was empty start at its new first step.
    const first = firstStep(steps);
    if (first && !firstStep(c.steps)) {
      const { docs } = await ctx.db.query('enrollments', {
        where: { op: 'and', conds: [{ op: 'eq', field: 'campaignId', value: c.id }, { op: 'eq', field: 'status', value: 'IN_PROGRESS' }, { op: 'eq', field: 'currentStepId', value: null }] },
      });
      for (const e of docs) {
        if (e.doneSteps.length === 0) await ctx.db.put('enrollments', { ...e, currentStepId: first.id, updatedAt: nowIso(ctx) });
      }
    }
    return sequenceSummary(ctx, next, notes);
  },
});

export const ops = opsByName(addSequenceStep);
