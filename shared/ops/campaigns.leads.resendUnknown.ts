/** campaigns.leads.resendUnknown: sends again an action whose delivery is unknown. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { eventActivity } from '../engine/timeline.ts';
import { DomainError, notFound } from '../errors.ts';
import { newMessage } from '../model/factories.ts';
import { mutation, opsByName } from './define.ts';
import { dryRun, uuid } from './params.ts';

const resendUnknown = mutation({
  name: 'campaigns.leads.resendUnknown',
  summary:
    'Sends again an action whose delivery is unknown (a send interrupted by a crash that the channel could not confirm): the unconfirmed message is closed as such, and the step (or the direct message) goes again with a new message id on the runner\'s next pass.',
  input: z.object({ messageId: uuid, dryRun }),
  output: z.object({
    dryRun: z.boolean(),
    messageId: z.string(),
    leadId: z.string(),
    campaignId: z.string().nullable(),
    /** step: the enrollment's step is due again; direct: a copy of the direct message is queued. */
    resent: z.enum(['step', 'direct']),
    /** The queued copy of a direct message (null for a campaign step: the runner names it). */
    newMessageId: z.string().nullable(),
    enrollmentIds: z.array(z.string()),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const m = await ctx.db.get('messages', input.messageId);
    if (!m) throw notFound('message', input.messageId);
    if (m.status !== 'unknown') {
      throw new DomainError('CONFLICT', `Only a message whose delivery is unknown can be sent again this way; this one is ${m.status}.`, { messageId: m.id, status: m.status });
    }
    const now = nowIso(ctx);
    await ctx.db.put('messages', { ...m, status: 'failed', error: `Delivery unknown; sent again on request at ${now}.`, updatedAt: now });
    const lead = await ctx.db.get('leads', m.leadId);
    if (m.campaignId === null) {
      const copy = newMessage({ id: ctx.ids.uuid(), workspaceId: m.workspaceId, now }, {
        leadId: m.leadId, sdrProfileId: m.sdrProfileId, chatId: m.chatId, direction: 'out', kind: m.kind, text: m.text, subject: m.subject, status: 'queued',
      });
      await ctx.db.put('messages', copy);
      if (lead) await ctx.db.put('activities', eventActivity(ctx.ids, lead, ctx.actor.memberId, now, 'delivery_unknown', 'Sent again on request after an unknown delivery.', { sdrProfileId: m.sdrProfileId, messageId: copy.id }));
      return { dryRun: ctx.dryRun, messageId: m.id, leadId: m.leadId, campaignId: null, resent: 'direct' as const, newMessageId: copy.id, enrollmentIds: [] };
    }
    const { docs } = await ctx.db.query('enrollments', {
      where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: m.leadId }, { op: 'eq', field: 'campaignId', value: m.campaignId }, { op: 'eq', field: 'waitReason', value: 'delivery_unknown' }] },
    });
    const waiting = docs.filter((e) => e.status === 'IN_PROGRESS' && e.currentStepId === m.stepId);
    for (const e of waiting) await ctx.db.put('enrollments', { ...e, nextActionAt: now, waitReason: null, updatedAt: now });
    if (lead) await ctx.db.put('activities', eventActivity(ctx.ids, lead, ctx.actor.memberId, now, 'delivery_unknown', 'Sent again on request after an unknown delivery.', { campaignId: m.campaignId, sdrProfileId: m.sdrProfileId, messageId: m.id }));
    return { dryRun: ctx.dryRun, messageId: m.id, leadId: m.leadId, campaignId: m.campaignId, resent: 'step' as const, newMessageId: null, enrollmentIds: waiting.map((e) => e.id) };
  },
});

export const ops = opsByName(resendUnknown);
