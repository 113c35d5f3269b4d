/** campaigns.updateSequenceMessage: a message step's text, subject and variants, and how the
 * variants are assigned. */
import { z } from 'zod';
import { DomainError } from '../errors.ts';
import { STEP_TYPES } from '../model/index.ts';
import type { Step } from '../model/index.ts';
import { describeStep, isMessageStep } from '../sequence.ts';
import { loadCampaign } from './campaign-views.ts';
import { mutation, opsByName } from './define.ts';
import { uuid } from './params.ts';
import { assertPaused, findStep, variantAssignmentOut, variantOut, withSteps } from './sequence-edits.ts';

const updateSequenceMessage = mutation({
  name: 'campaigns.updateSequenceMessage',
  summary:
    "Edits a message step of a paused campaign: text, subject, variants (the full list; give a variant's id to keep it, omit it for a new one) and how variants are assigned. Send condition, attachments and schedule are untouched. Merge fields are {{Display Name|fallback}} and must name a column of the campaign's lead group.",
  input: z.object({
    campaignId: uuid,
    stepId: uuid,
    text: z.string().max(20_000).optional(),
    subject: z.string().max(1_000).optional(),
    variants: z
      .array(z.object({ id: uuid.optional(), name: z.string().trim().min(1).max(100), text: z.string().max(20_000), subject: z.string().max(1_000).optional() }))
      .max(20)
      .optional(),
    variantAssignment: z.object({ mode: z.enum(['default', 'random', 'round_robin']), defaultVariantId: uuid.nullish() }).optional(),
  }),
  output: z.object({
    campaignId: z.string(),
    stepId: z.string(),
    type: z.enum(STEP_TYPES),
    text: z.string(),
    subject: z.string(),
    variants: z.array(variantOut),
    variantAssignment: variantAssignmentOut,
  }),
  async handler(input, ctx) {
    if (input.text === undefined && input.subject === undefined && input.variants === undefined && input.variantAssignment === undefined) {
      throw new DomainError('NO_FIELDS_TO_UPDATE', 'Give at least one of text, subject, variants or variantAssignment.');
    }
    const c = await loadCampaign(ctx, input.campaignId);
    assertPaused(c, 'editing a message');
    const step = findStep(c, input.stepId);
    if (!isMessageStep(step)) {
      throw new DomainError('STEP_INVALID', `${describeStep(c.steps, step)} carries no message; only message, connection request, InMail and email steps have text.`, { stepId: step.id });
    }
    let variants = step.variants;
    if (input.variants) {
      const existing = new Map(step.variants.map((v) => [v.id, v]));
      const seen = new Set<string>();
      variants = input.variants.map((v) => {
        if (v.id !== undefined && !existing.has(v.id)) {
          throw new DomainError('INVALID_INPUT', 'One of these variants is no longer part of this step (it was removed meanwhile); reload the step and try again.', { field: 'variants', id: v.id });
        }
        const id = v.id ?? ctx.ids.uuid();
        if (seen.has(id)) throw new DomainError('INVALID_INPUT', 'The same variant is listed twice; keep it once.', { field: 'variants', id });
        seen.add(id);
        return { id, name: v.name, text: v.text, subject: v.subject ?? '' };
      });
    }
    let variantAssignment = step.variantAssignment;
    if (input.variantAssignment) {
      const def = input.variantAssignment.defaultVariantId ?? null;
      if (def !== null && !variants.some((v) => v.id === def)) {
        throw new DomainError('INVALID_INPUT', `The default variant ${def} is not one of this step's variants.`, { field: 'variantAssignment.defaultVariantId' });
      }
      variantAssignment = { mode: input.variantAssignment.mode, defaultVariantId: def };
    } else if (variantAssignment.defaultVariantId !== null && !variants.some((v) => v.id === variantAssignment.defaultVariantId)) {
      // The default variant was removed: fall back to the step's own text.
      variantAssignment = { ...variantAssignment, defaultVariantId: null };
    }
    const updated: Step = {
      ...step,
      content: input.text ?? step.content,
      subject: input.subject ?? step.subject,
      variants,
      variantAssignment,
    };
    await ctx.db.put('campaigns', withSteps(c, ctx, c.steps.map((s) => (s.id === step.id ? updated : s))));
    return {
      campaignId: c.id,
      stepId: updated.id,
      type: updated.type,
      text: updated.content,
      subject: updated.subject,
      variants: updated.variants,
      variantAssignment: updated.variantAssignment,
    };
  },
});

export const ops = opsByName(updateSequenceMessage);
