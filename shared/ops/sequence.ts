/** A campaign's sequence: reading it, adding, editing and removing steps, editing messages and their
 * variants. Steps change only while the campaign is paused; the campaign rules hold the invariants
 * (shape, merge fields, what every sender can do), these handlers place steps and explain refusals. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError } from '../errors.ts';
import { STEP_TYPES, VOICE_NOTE_MODES } from '../model/index.ts';
import type { Campaign, Step } from '../model/index.ts';
import { newStep } from '../model/factories.ts';
import { loadReadiness } from '../rules/readiness.ts';
import { describeStep, firstStep, insertStep, isMessageStep, removeStep, walk } from '../sequence.ts';
import { mutation, opsByName, query } from './define.ts';
import { loadCampaign } from './campaigns.ts';
import { uuid } from './params.ts';

/** A new condition gets one step on each path so the sequence stays valid (both paths of a
 * condition keep at least one step); the caller edits or replaces them. */
export const CONDITION_PLACEHOLDER_WAIT_SECONDS = 86_400;

const voiceNoteIn = z.object({
  mode: z.enum(VOICE_NOTE_MODES),
  recordingId: z.string().trim().min(1).max(200).nullish(),
});

/** Editable step fields (the type is fixed once a step exists). */
const stepFields = {
  content: z.string().max(20_000).optional(),
  subject: z.string().max(1_000).optional(),
  waitTimeSeconds: z.number().int().min(0).max(365 * 86_400).optional(),
  sendCondition: z.string().trim().max(40).optional(),
  stopIfSkipped: z.boolean().optional(),
  emailThreading: z.enum(['new_thread', 'same_thread']).optional(),
  voiceNote: voiceNoteIn.optional(),
};
type StepFieldsIn = { [K in keyof typeof stepFields]?: z.output<(typeof stepFields)[K]> };

/** The passed fields as a step patch (absent fields stay as they are). */
function stepPatch(input: StepFieldsIn): Partial<Step> {
  const patch: Partial<Step> = {};
  if (input.content !== undefined) patch.content = input.content;
  if (input.subject !== undefined) patch.subject = input.subject;
  if (input.waitTimeSeconds !== undefined) patch.waitTimeSeconds = input.waitTimeSeconds;
  if (input.sendCondition !== undefined) patch.sendCondition = input.sendCondition;
  if (input.stopIfSkipped !== undefined) patch.stopIfSkipped = input.stopIfSkipped;
  if (input.emailThreading !== undefined) patch.emailThreading = input.emailThreading;
  if (input.voiceNote !== undefined) patch.voiceNote = { mode: input.voiceNote.mode, recordingId: input.voiceNote.recordingId ?? null };
  return patch;
}

const variantOut = z.object({ id: z.string(), name: z.string(), text: z.string(), subject: z.string() });
const variantAssignmentOut = z.object({ mode: z.enum(['default', 'random', 'round_robin']), defaultVariantId: z.string().nullable() });

const stepOut = z.object({
  id: z.string(),
  number: z.number(),
  type: z.enum(STEP_TYPES),
  branch: z.enum(['yes', 'no']).nullable(),
  parentStepId: z.string().nullable(),
  content: z.string(),
  subject: z.string(),
  waitTimeSeconds: z.number(),
  sendCondition: z.string(),
  stopIfSkipped: z.boolean(),
  emailThreading: z.string(),
  voiceNote: z.object({ mode: z.enum(VOICE_NOTE_MODES), recordingId: z.string().nullable() }),
  variants: z.array(variantOut),
  variantAssignment: variantAssignmentOut,
});

const summaryOut = z.object({
  campaignId: z.string(),
  campaignName: z.string(),
  running: z.boolean(),
  stepCount: z.number(),
  steps: z.array(stepOut),
  readiness: z.object({
    ready: z.boolean(),
    problems: z.array(z.object({ severity: z.enum(['error', 'warning']), message: z.string(), stepId: z.string().optional(), sdrProfileId: z.string().optional() })),
  }),
  /** What the operation did beyond the request (e.g. the placeholder steps of a new condition). */
  notes: z.array(z.string()),
});

/** The Sequence summary of the specification: steps in position order, with readiness. */
async function sequenceSummary(ctx: Ctx, c: Campaign, notes: string[] = []): Promise<z.input<typeof summaryOut>> {
  return {
    campaignId: c.id,
    campaignName: c.name,
    running: c.running,
    stepCount: c.steps.length,
    steps: walk(c.steps).map(({ step, number }) => ({
      id: step.id,
      number,
      type: step.type,
      branch: step.branch,
      parentStepId: step.parentStepId,
      content: step.content,
      subject: step.subject,
      waitTimeSeconds: step.waitTimeSeconds,
      sendCondition: step.sendCondition,
      stopIfSkipped: step.stopIfSkipped,
      emailThreading: step.emailThreading,
      voiceNote: { mode: step.voiceNote.mode, recordingId: step.voiceNote.recordingId ?? null },
      variants: step.variants,
      variantAssignment: step.variantAssignment,
    })),
    readiness: await loadReadiness(ctx.db, c),
    notes,
  };
}

/** Refused early so the message names the operation; the campaign rules refuse the write anyway. */
function assertPaused(c: Campaign, what: string): void {
  if (c.running) {
    throw new DomainError('CAMPAIGN_NOT_PAUSED', `Campaign "${c.name}" is running: pause it before ${what}.`, { campaignId: c.id });
  }
}

function findStep(c: Campaign, stepId: string): Step {
  const step = c.steps.find((s) => s.id === stepId);
  if (!step) throw new DomainError('NOT_FOUND', `That step is no longer in campaign "${c.name}" (it was removed meanwhile); reload the sequence.`, { what: 'step', id: stepId });
  return step;
}

const touched = (c: Campaign, ctx: Ctx, steps: Step[]): Campaign => ({ ...c, steps, updatedAt: nowIso(ctx) });

export const sequenceOps = opsByName(
  query({
    name: 'campaigns.getSequence',
    summary: "Reads a campaign's sequence: steps in position order with their ids, and whether it is ready to run.",
    input: z.object({ campaignId: uuid }),
    output: summaryOut,
    async handler(input, ctx) {
      return sequenceSummary(ctx, await loadCampaign(ctx, input.campaignId));
    },
  }),
  mutation({
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
      const next = touched(c, ctx, steps);
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
  }),
  mutation({
    name: 'campaigns.removeSequenceStep',
    summary:
      'Removes a step of a paused campaign and joins its neighbours. The only step of a condition path cannot be removed until another takes its place. Conditions are removed only in the app (removeBranches: true removes the condition and both of its paths). Leads waiting on a removed step continue with the step that takes its place, or finish when none does.',
    input: z.object({ campaignId: uuid, stepId: uuid, removeBranches: z.boolean().optional() }),
    output: summaryOut,
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      assertPaused(c, 'removing a step');
      findStep(c, input.stepId);
      const removal = removeStep(c.steps, input.stepId, { removeBranches: input.removeBranches === true });
      const next = touched(c, ctx, removal.steps);
      await ctx.db.put('campaigns', next);

      const now = nowIso(ctx);
      const { docs } = await ctx.db.query('enrollments', {
        where: {
          op: 'and',
          conds: [
            { op: 'eq', field: 'campaignId', value: c.id },
            { op: 'in', field: 'status', values: ['IN_PROGRESS', 'PAUSED'] },
            { op: 'in', field: 'currentStepId', values: [...removal.removedIds] },
          ],
        },
      });
      for (const e of docs) {
        if (removal.successor) await ctx.db.put('enrollments', { ...e, currentStepId: removal.successor.id, updatedAt: now });
        else await ctx.db.put('enrollments', { ...e, currentStepId: null, status: 'COMPLETED', completedAt: now, nextActionAt: null, updatedAt: now });
      }
      return sequenceSummary(ctx, next);
    },
  }),
  mutation({
    name: 'campaigns.editSequenceStep',
    summary:
      "Edits a step of a paused campaign: text or subject, a wait's length, the send condition, email threading, voice note, stopIfSkipped. Only passed values change (variants are edited with updateSequenceMessage); validated like a new step.",
    input: z.object({ campaignId: uuid, stepId: uuid, ...stepFields }),
    output: summaryOut,
    async handler(input, ctx) {
      const patch = stepPatch(input);
      if (Object.keys(patch).length === 0) {
        throw new DomainError('NO_FIELDS_TO_UPDATE', 'Give at least one field to change: content, subject, waitTimeSeconds, sendCondition, emailThreading, voiceNote or stopIfSkipped.');
      }
      const c = await loadCampaign(ctx, input.campaignId);
      assertPaused(c, 'editing a step');
      findStep(c, input.stepId);
      const next = touched(c, ctx, c.steps.map((s) => (s.id === input.stepId ? { ...s, ...patch } : s)));
      await ctx.db.put('campaigns', next);
      return sequenceSummary(ctx, next);
    },
  }),
  mutation({
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
      await ctx.db.put('campaigns', touched(c, ctx, c.steps.map((s) => (s.id === step.id ? updated : s))));
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
  }),
);
