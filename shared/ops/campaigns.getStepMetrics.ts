/** campaigns.getStepMetrics: a campaign's results step by step.
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
import type { Ctx } from '../context.ts';
import type { Campaign } from '../model/index.ts';
import { labelCountsOut, labelSummary, leadLabels } from '../replies/label-counts.ts';
import type { LeadLabel } from '../replies/label-counts.ts';
import { STEP_LABELS, walk } from '../sequence.ts';
import { loadCampaign } from './campaign-views.ts';
import { opsByName, query } from './define.ts';
import { uuid } from './params.ts';
import { campaignEvents } from '../metrics.ts';

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
    campaignEvents(ctx.db, [c.id], ['connection_accepted']),
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

const getStepMetrics = query({
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
});

export const ops = opsByName(getStepMetrics);
