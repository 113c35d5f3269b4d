/** campaigns.previewMessage: a message step as one of the campaign's leads would receive it, and
 * where each piece of the text came from (the lead's value, a fallback, or nothing). */
import { z } from 'zod';
import { DomainError, notFound } from '../errors.ts';
import { columnByName, columnValue, parseMergeFields } from '../merge-fields.ts';
import type { Lead, LeadGroup, Step } from '../model/index.ts';
import { isMessageStep, STEP_LABELS, walk } from '../sequence.ts';
import { loadCampaign, loadGroup } from './campaign-views.ts';
import { liveLead } from './campaigns.leads.ts';
import { opsByName, query } from './define.ts';
import { uuid } from './params.ts';

/** A step's text and subject for a variant (the step's own when the step has none). */
function textOf(step: Step, variantId: string | undefined): { text: string; subject: string; variantId: string | null } {
  if (variantId === undefined) {
    const def = step.variants.find((v) => v.id === step.variantAssignment.defaultVariantId) ?? null;
    if (step.variants.length === 0 || def === null) return { text: step.content, subject: step.subject, variantId: null };
    return { text: def.text, subject: def.subject || step.subject, variantId: def.id };
  }
  const v = step.variants.find((x) => x.id === variantId);
  if (!v) throw new DomainError('NOT_FOUND', 'That message variant is not one of this step\'s variants (it may have been removed).', { what: 'Variant', id: variantId });
  return { text: v.text, subject: v.subject || step.subject, variantId: v.id };
}

const partOut = z.object({
  kind: z.enum(['text', 'value', 'fallback', 'empty']),
  text: z.string(),
  /** The merge field's display name for value, fallback and empty parts. */
  field: z.string().optional(),
});
type Part = z.input<typeof partOut>;

/** Renders like renderMergeFields (shared/merge-fields.ts, same parser) and says where each piece came from. */
function renderParts(text: string, lead: Lead, group: LeadGroup): Part[] {
  const parts: Part[] = [];
  let last = 0;
  for (const ref of parseMergeFields(text)) {
    if (ref.index > last) parts.push({ kind: 'text', text: text.slice(last, ref.index) });
    const column = columnByName(group, ref.name.trim());
    const value = column ? columnValue(lead, column).trim() : '';
    if (value !== '') parts.push({ kind: 'value', text: value, field: ref.name });
    else if (ref.fallback !== null && ref.fallback !== '') parts.push({ kind: 'fallback', text: ref.fallback, field: ref.name });
    else parts.push({ kind: 'empty', text: '', field: ref.name });
    last = ref.index + ref.raw.length;
  }
  if (last < text.length) parts.push({ kind: 'text', text: text.slice(last) });
  return parts;
}

const join = (parts: readonly Part[]): string => parts.map((p) => p.text).join('');

const previewMessage = query({
  name: 'campaigns.previewMessage',
  summary: "A message step of a campaign as one of its leads would receive it: merge fields filled with the lead's values, fallbacks used where a value is empty (listed in usedFallbacks).",
  input: z.object({ campaignId: uuid, stepId: uuid, leadId: uuid, variantId: uuid.optional() }),
  output: z.object({
    campaignId: z.string(),
    stepId: z.string(),
    leadId: z.string(),
    variantId: z.string().nullable(),
    subject: z.string(),
    text: z.string(),
    subjectParts: z.array(partOut),
    textParts: z.array(partOut),
    /** Merge fields whose lead value was empty and whose fallback was used. */
    usedFallbacks: z.array(z.string()),
    /** Merge fields whose lead value was empty and which have no fallback: they render as nothing. */
    emptyFields: z.array(z.string()),
  }),
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    const step = c.steps.find((s) => s.id === input.stepId);
    if (!step) throw notFound('Step', input.stepId);
    const lead = await liveLead(ctx, input.leadId);
    if (!lead.groupIds.includes(c.leadGroupId)) {
      throw new DomainError('NOT_FOUND', `${lead.fullName || 'This lead'} is not one of the leads of campaign "${c.name}".`, { what: 'Lead', id: lead.id, campaignId: c.id });
    }
    if (!isMessageStep(step)) {
      throw new DomainError('INVALID_INPUT', `Step ${walk(c.steps).find((w) => w.step.id === step.id)?.number ?? ''} (${STEP_LABELS[step.type]}) sends no message, so there is nothing to preview.`, { field: 'stepId', stepId: step.id });
    }
    const group = await loadGroup(ctx, c.leadGroupId);
    const chosen = textOf(step, input.variantId);
    const subjectParts = step.type === 'EMAIL' ? renderParts(chosen.subject, lead, group) : [];
    const textParts = renderParts(chosen.text, lead, group);
    const all = [...subjectParts, ...textParts];
    const names = (kind: Part['kind']): string[] => [...new Set(all.filter((p) => p.kind === kind).map((p) => p.field ?? ''))];
    return {
      campaignId: c.id, stepId: step.id, leadId: lead.id, variantId: chosen.variantId,
      subject: join(subjectParts), text: join(textParts), subjectParts, textParts,
      usedFallbacks: names('fallback'), emptyFields: names('empty'),
    };
  },
});

export const ops = opsByName(previewMessage);
