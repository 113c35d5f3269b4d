/** A campaign's results step by step, a message step rendered for one of its leads, and a copy of
 * a campaign.
 *
 * Step results are computed from the same records as campaigns.getMetrics (shared/metrics.ts):
 * the campaign's `messages` (out + sent = an action of a step; in = a reply) and its
 * connection_accepted EVENT activities. Attribution, so that the steps add up to the campaign:
 * - sent: sent out-messages of the step (all kinds; `leads` counts distinct leads);
 * - replies: a lead who replied counts once, for the last step of the campaign sent to them before
 *   their first reply (the step that got the answer); a reply with no earlier sent step of the
 *   campaign is counted in `unattributed`;
 * - accepted: each connection_accepted event counts for the last connection request of the
 *   campaign sent to that lead before it, else in `unattributed`;
 * - reply rate: replies / distinct leads the step was sent to (0 when none);
 * - labels: each replying lead counted under its label in the campaign (shared/replies/
 *   label-counts.ts) at the step its reply is attributed to; positive reply rate = interested /
 *   replies.
 * Per variant: the variant the lead's enrollment remembers for the step (`enrollment.variants`).
 */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { columnByName, columnValue, parseMergeFields } from '../merge-fields.ts';
import type { Campaign, Lead, LeadGroup, Step } from '../model/index.ts';
import { newLeadGroup } from '../model/factories.ts';
import { labelCountsOut, labelSummary, leadLabels } from '../replies/label-counts.ts';
import type { LeadLabel } from '../replies/label-counts.ts';
import { isMessageStep, STEP_LABELS, walk } from '../sequence.ts';
import { basicCampaign, basicCampaignOut, loadCampaign, loadGroup } from './campaigns.ts';
import { mutation, opsByName, query } from './define.ts';
import { dryRun, uuid } from './params.ts';

const countsOut = z.object({
  /** Sent actions of the step. */
  sent: z.number(),
  /** Distinct leads the step was sent to. */
  leads: z.number(),
  accepted: z.number(),
  replies: z.number(),
  replyRate: z.number(),
  /** Replying leads labelled interested, and their share of the replies. */
  positiveReplies: z.number(),
  positiveReplyRate: z.number(),
  /** Replying leads per label. */
  replyLabels: labelCountsOut,
});
type Counts = z.input<typeof countsOut>;

const stepResultOut = countsOut.extend({
  stepId: z.string(),
  number: z.number(),
  type: z.string(),
  label: z.string(),
  depth: z.number(),
  variants: z.array(countsOut.extend({ variantId: z.string(), name: z.string() })),
});

type Tally = { sent: number; leads: Set<string>; accepted: number; replied: Set<string> };
const emptyTally = (): Tally => ({ sent: 0, leads: new Set(), accepted: 0, replied: new Set() });
const UNLABELLED: LeadLabel = { label: 'unlabelled', confirmed: false };
const counts = (t: Tally, labels: ReadonlyMap<string, LeadLabel>): Counts => {
  const l = labelSummary([...t.replied].map((id) => labels.get(id) ?? UNLABELLED));
  return {
    sent: t.sent, leads: t.leads.size, accepted: t.accepted, replies: t.replied.size, replyRate: t.leads.size === 0 ? 0 : t.replied.size / t.leads.size,
    positiveReplies: l.positiveReplies, positiveReplyRate: l.positiveReplyRate, replyLabels: l.replyLabels,
  };
};

type Sent = { stepId: string; at: string; kind: string };

/** The last sent action before `at` among a lead's sent actions (sorted by time). */
function lastBefore(sent: readonly Sent[], at: string, kind?: string): Sent | undefined {
  let best: Sent | undefined;
  for (const s of sent) {
    if (s.at > at) break;
    if (kind === undefined || s.kind === kind) best = s;
  }
  return best;
}

export async function stepResults(ctx: Ctx, c: Campaign) {
  const [messages, events, enrollments] = await Promise.all([
    ctx.db.query('messages', { where: { op: 'eq', field: 'campaignId', value: c.id } }),
    ctx.db.query('activities', {
      where: {
        op: 'and',
        conds: [
          { op: 'eq', field: 'type', value: 'EVENT' },
          { op: 'eq', field: 'metadata.eventKind', value: 'connection_accepted' },
          { op: 'eq', field: 'metadata.campaignId', value: c.id },
        ],
      },
    }),
    ctx.db.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: c.id } }),
  ]);
  const variantOf = new Map<string, Record<string, string>>();
  for (const e of enrollments.docs) variantOf.set(e.leadId, { ...(variantOf.get(e.leadId) ?? {}), ...e.variants });

  const steps = new Map<string, Tally>();
  const variants = new Map<string, Tally>();
  const tallyOf = <K>(m: Map<K, Tally>, k: K): Tally => {
    let t = m.get(k);
    if (!t) m.set(k, (t = emptyTally()));
    return t;
  };
  const touch = (stepId: string, leadId: string, f: (t: Tally) => void): void => {
    f(tallyOf(steps, stepId));
    const v = variantOf.get(leadId)?.[stepId];
    if (v !== undefined) f(tallyOf(variants, `${stepId}|${v}`));
  };

  const sentByLead = new Map<string, Sent[]>();
  const firstReply = new Map<string, string>();
  for (const m of messages.docs) {
    if (m.direction === 'in') {
      const at = m.sentAt ?? m.createdAt;
      const prev = firstReply.get(m.leadId);
      if (prev === undefined || at < prev) firstReply.set(m.leadId, at);
      continue;
    }
    if (m.status !== 'sent' || m.stepId === null) continue;
    const stepId = m.stepId;
    touch(stepId, m.leadId, (t) => {
      t.sent++;
      t.leads.add(m.leadId);
    });
    const list = sentByLead.get(m.leadId) ?? [];
    list.push({ stepId, at: m.sentAt ?? m.createdAt, kind: m.kind });
    sentByLead.set(m.leadId, list);
  }
  for (const list of sentByLead.values()) list.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));

  const labels = leadLabels(messages.docs);
  let unattributedReplies = 0;
  for (const [leadId, at] of firstReply) {
    const s = lastBefore(sentByLead.get(leadId) ?? [], at);
    if (s) touch(s.stepId, leadId, (t) => t.replied.add(leadId));
    else unattributedReplies++;
  }
  let unattributedAccepted = 0;
  for (const a of events.docs) {
    const s = lastBefore(sentByLead.get(a.leadId) ?? [], a.createdAt, 'connection_request');
    if (s) touch(s.stepId, a.leadId, (t) => t.accepted++);
    else unattributedAccepted++;
  }

  const rows: z.input<typeof stepResultOut>[] = walk(c.steps).map(({ step, number, depth }) => ({
    stepId: step.id,
    number,
    type: step.type,
    label: STEP_LABELS[step.type],
    depth,
    ...counts(steps.get(step.id) ?? emptyTally(), labels),
    variants: step.variants.map((v) => ({ variantId: v.id, name: v.name || 'Unnamed variant', ...counts(variants.get(`${step.id}|${v.id}`) ?? emptyTally(), labels) })),
  }));
  return { campaignId: c.id, steps: rows, unattributed: { replies: unattributedReplies, accepted: unattributedAccepted } };
}

// ---------------------------------------------------------------------------------------------
// Preview

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

// ---------------------------------------------------------------------------------------------
// Duplicate

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

const unenrollOps = [
  mutation({
    name: 'campaigns.leads.unenroll',
    summary:
      "Takes leads out of a campaign (the undo of a bulk enrollment): an enrollment nothing was sent for yet is removed, one that already acted is stopped (what was sent stays sent), a finished one is left as it is; unlinkLeadIds also takes those of the removed leads off the campaign's lead list so a running campaign does not start them again.",
    input: z.object({
      campaignId: uuid,
      leadIds: z.array(uuid).min(1, 'give at least one lead').max(10_000, 'at most 10,000 leads at a time'),
      /** Leads (of leadIds) that the enrollment linked to the campaign's lead list: unlinked when their enrollment is removed. */
      unlinkLeadIds: z.array(uuid).max(10_000, 'at most 10,000 leads at a time').optional(),
      dryRun,
    }),
    output: z.object({
      dryRun: z.boolean(),
      campaignId: z.string(),
      /** Enrollments removed: nothing had been sent to these leads. */
      removed: z.number(),
      /** Enrollments stopped: something was already sent to these leads and stays sent. */
      stopped: z.number(),
      /** Enrollments already completed or stopped: left as they are. */
      finished: z.number(),
      notEnrolled: z.number(),
      unlinked: z.number(),
    }),
    dryRun: true,
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const now = nowIso(ctx);
      const leadIds = [...new Set(input.leadIds)];
      const unlink = new Set(input.unlinkLeadIds ?? []);
      const out = { dryRun: ctx.dryRun, campaignId: c.id, removed: 0, stopped: 0, finished: 0, notEnrolled: 0, unlinked: 0 };
      const CHUNK = 500;
      for (let i = 0; i < leadIds.length; i += CHUNK) {
        const ids = leadIds.slice(i, i + CHUNK);
        const [enrollments, messages, leads] = await Promise.all([
          ctx.db.query('enrollments', { where: { op: 'and', conds: [{ op: 'eq', field: 'campaignId', value: c.id }, { op: 'in', field: 'leadId', values: ids }] } }),
          ctx.db.query('messages', { where: { op: 'and', conds: [{ op: 'eq', field: 'campaignId', value: c.id }, { op: 'in', field: 'leadId', values: ids }, { op: 'eq', field: 'direction', value: 'out' }] } }),
          ctx.db.getMany('leads', ids),
        ]);
        // Anything on its way or gone out (sent, being sent, delivery unknown) means the lead was reached.
        const reached = new Set(messages.docs.filter((m) => m.status !== 'failed').map((m) => m.leadId));
        const byLead = new Map<string, (typeof enrollments.docs)[number][]>();
        for (const e of enrollments.docs) byLead.set(e.leadId, [...(byLead.get(e.leadId) ?? []), e]);
        const leadById = new Map(leads.map((l) => [l.id, l]));
        for (const leadId of ids) {
          const mine = byLead.get(leadId) ?? [];
          if (mine.length === 0) {
            out.notEnrolled++;
            continue;
          }
          let removedAll = true;
          for (const e of mine) {
            const open = e.status === 'IN_PROGRESS' || e.status === 'PAUSED';
            if (!open) {
              removedAll = false;
              out.finished++;
            } else if (e.doneSteps.length === 0 && !reached.has(leadId)) {
              await ctx.db.remove('enrollments', e.id);
              out.removed++;
            } else {
              removedAll = false;
              await ctx.db.put('enrollments', { ...e, status: 'STOPPED', stoppedReason: 'taken out of the campaign', nextActionAt: null, waitReason: null, updatedAt: now });
              out.stopped++;
            }
          }
          const lead = leadById.get(leadId);
          if (removedAll && unlink.has(leadId) && lead && lead.leadGroupId !== c.leadGroupId && lead.groupIds.includes(c.leadGroupId)) {
            await ctx.db.put('leads', { ...lead, groupIds: lead.groupIds.filter((g) => g !== c.leadGroupId), updatedAt: now });
            out.unlinked++;
          }
        }
      }
      return out;
    },
  }),
] as const;

export const campaignResultsOps = opsByName(
  ...unenrollOps,
  query({
    name: 'campaigns.getStepMetrics',
    summary: "A campaign's results per step and per message variant: actions sent, leads reached, connections accepted, replies and reply rate (a reply counts for the last step sent before it).",
    input: z.object({ campaignId: uuid }),
    output: z.object({
      campaignId: z.string(),
      steps: z.array(stepResultOut),
      /** Replies and acceptances with no earlier sent step of the campaign (counted by campaigns.getMetrics, by no step). */
      unattributed: z.object({ replies: z.number(), accepted: z.number() }),
    }),
    async handler(input, ctx) {
      return stepResults(ctx, await loadCampaign(ctx, input.campaignId));
    },
  }),
  query({
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
      const lead = await ctx.db.get('leads', input.leadId);
      if (!lead) throw notFound('Lead', input.leadId);
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
  }),
  mutation({
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
  }),
);
