/** What the operations on a campaign's sequence share (campaigns.getSequence, addSequenceStep,
 * editSequenceStep, removeSequenceStep, updateSequenceMessage): the step fields they take, the
 * Sequence summary they answer, and the checks before an edit. Steps change only while the campaign
 * is paused; the campaign rules hold the invariants (shape, merge fields, what every sender can do),
 * these handlers place steps and explain refusals. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError } from '../errors.ts';
import { STEP_TYPES, VOICE_NOTE_MODES } from '../model/index.ts';
import type { Campaign, Step } from '../model/index.ts';
import { loadReadiness } from '../rules/readiness.ts';
import { walk } from '../sequence.ts';

const voiceNoteIn = z.object({
  mode: z.enum(VOICE_NOTE_MODES),
  recordingId: z.string().trim().min(1).max(200).nullish(),
});

/** Editable step fields (the type is fixed once a step exists). */
export const stepFields = {
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
export function stepPatch(input: StepFieldsIn): Partial<Step> {
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

export const variantOut = z.object({ id: z.string(), name: z.string(), text: z.string(), subject: z.string() });
export const variantAssignmentOut = z.object({ mode: z.enum(['default', 'random', 'round_robin']), defaultVariantId: z.string().nullable() });

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

export const summaryOut = z.object({
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
export async function sequenceSummary(ctx: Ctx, c: Campaign, notes: string[] = []): Promise<z.input<typeof summaryOut>> {
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
export function assertPaused(c: Campaign, what: string): void {
  if (c.running) {
    throw new DomainError('CAMPAIGN_NOT_PAUSED', `Campaign "${c.name}" is running: pause it before ${what}.`, { campaignId: c.id });
  }
}

export function findStep(c: Campaign, stepId: string): Step {
  const step = c.steps.find((s) => s.id === stepId);
  if (!step) throw new DomainError('NOT_FOUND', `That step is no longer in campaign "${c.name}" (it was removed meanwhile); reload the sequence.`, { what: 'step', id: stepId });
  return step;
}

export const withSteps = (c: Campaign, ctx: Ctx, steps: Step[]): Campaign => ({ ...c, steps, updatedAt: nowIso(ctx) });
