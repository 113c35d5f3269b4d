/** campaigns.leads.unenroll: takes leads out of a campaign, the undo of a bulk enrollment. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { loadCampaign } from './campaign-views.ts';
import { mutation, opsByName } from './define.ts';
import { dryRun, uuid } from './params.ts';

const unenroll = mutation({
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
});

export const ops = opsByName(unenroll);
