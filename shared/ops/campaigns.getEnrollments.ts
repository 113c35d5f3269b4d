/** campaigns.getEnrollments: a campaign's running and paused enrollments and how many each sender
 * holds (what a sender removal leaves behind, what a bulk sender change would move). */
import { z } from 'zod';
import { STEP_LABELS, stepNumbers } from '../sequence.ts';
import { loadCampaign } from './campaign-views.ts';
import { opsByName, query } from './define.ts';
import { leadName } from './lead-views.ts';
import { qBool, qInt, uuid } from './params.ts';

const enrollmentRowOut = z.object({
  enrollmentId: z.string(),
  leadId: z.string(),
  leadName: z.string(),
  status: z.string(),
  sdrProfileId: z.string().nullable(),
  inConversationAt: z.string().nullable(),
  stepLabel: z.string().nullable(),
  nextActionAt: z.string().nullable(),
});

const senderLoadOut = z.object({
  sdrProfileId: z.string(),
  name: z.string(),
  /** Whether the sender is still one of the campaign's senders (a removed sender keeps the leads it
   * is in conversation with until they are moved). */
  onCampaign: z.boolean(),
  pausedOnCampaign: z.boolean(),
  /** Running or paused enrollments it holds. */
  active: z.number().int(),
  /** Of those, the ones already in conversation with it (they stay with it when it is removed). */
  inConversation: z.number().int(),
});

const ACTIVE_STATUSES = ['IN_PROGRESS', 'PAUSED'];

const getEnrollments = query({
  name: 'campaigns.getEnrollments',
  summary:
    "A campaign's running and paused enrollments, optionally only those held by one sender (or unassigned) or only those in conversation, with how many each sender holds: what a sender removal leaves behind and what a bulk sender change would move.",
  input: z.object({
    campaignId: uuid,
    /** A sender id, or "unassigned". */
    sdrProfileId: z.union([uuid, z.literal('unassigned')]).optional(),
    inConversation: qBool.optional(),
    /** Rows returned (default and most 200); `total` counts them all. */
    limit: qInt(1, 200).optional(),
  }),
  output: z.object({ total: z.number().int(), enrollments: z.array(enrollmentRowOut), senders: z.array(senderLoadOut), unassigned: z.number().int() }),
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    const { docs } = await ctx.db.query('enrollments', {
      where: { op: 'and', conds: [{ op: 'eq', field: 'campaignId', value: c.id }, { op: 'in', field: 'status', values: ACTIVE_STATUSES }] },
      orderBy: [{ field: 'createdAt', dir: 'asc' }],
    });
    const load = new Map<string, { active: number; inConversation: number }>(c.senders.map((s) => [s.sdrProfileId, { active: 0, inConversation: 0 }]));
    let unassigned = 0;
    for (const e of docs) {
      if (e.sdrProfileId === null) {
        unassigned++;
        continue;
      }
      const l = load.get(e.sdrProfileId) ?? { active: 0, inConversation: 0 };
      l.active++;
      if (e.inConversationAt !== null) l.inConversation++;
      load.set(e.sdrProfileId, l);
    }
    const wanted = docs.filter(
      (e) =>
        (input.sdrProfileId === undefined || (input.sdrProfileId === 'unassigned' ? e.sdrProfileId === null : e.sdrProfileId === input.sdrProfileId)) &&
        (input.inConversation === undefined || (e.inConversationAt !== null) === input.inConversation),
    );
    const page = wanted.slice(0, input.limit ?? 200);
    const [leads, senders] = await Promise.all([ctx.db.getMany('leads', page.map((e) => e.leadId)), ctx.db.getMany('senders', [...load.keys()])]);
    const leadById = new Map(leads.map((l) => [l.id, l]));
    const senderById = new Map(senders.map((s) => [s.id, s]));
    const entry = new Map(c.senders.map((s) => [s.sdrProfileId, s]));
    const stepById = new Map(c.steps.map((s) => [s.id, s]));
    const numbers = stepNumbers(c.steps);
    return {
      total: wanted.length,
      enrollments: page.map((e) => {
        const step = e.currentStepId ? stepById.get(e.currentStepId) : undefined;
        return {
          enrollmentId: e.id,
          leadId: e.leadId,
          leadName: leadName(leadById.get(e.leadId)),
          status: e.status,
          sdrProfileId: e.sdrProfileId,
          inConversationAt: e.inConversationAt,
          stepLabel: step ? `step ${numbers.get(step.id) ?? '?'} (${STEP_LABELS[step.type]})` : null,
          nextActionAt: e.nextActionAt,
        };
      }),
      senders: [...load.entries()].map(([id, l]) => ({
        sdrProfileId: id,
        name: senderById.get(id)?.name ?? 'Removed sender',
        onCampaign: entry.has(id),
        pausedOnCampaign: entry.get(id)?.paused ?? false,
        active: l.active,
        inConversation: l.inConversation,
      })),
      unassigned,
    };
  },
});

export const ops = opsByName(getEnrollments);
