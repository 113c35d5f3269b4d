/** campaigns.updateSenders: adds and removes a campaign's senders, handing the leads a removed
 * sender held to the others (except those in conversation with it), and warns of steps an added
 * sender cannot perform. */
import { z } from 'zod';
import { DomainError } from '../errors.ts';
import type { Campaign } from '../model/index.ts';
import { senderStepProblems } from '../rules/readiness.ts';
import { describeStep, walk } from '../sequence.ts';
import { campaignSenderOut, campaignSenders, loadCampaign, senderSummary, senderSummaryOut, sendersById, touched } from './campaign-views.ts';
import { mutation, opsByName } from './define.ts';
import { dryRun, uuid } from './params.ts';

const updateSenders = mutation({
  name: 'campaigns.updateSenders',
  summary:
    "Adds and/or removes a campaign's senders (allowed while running; an added sender starts at once). A campaign keeps at least one sender. Removing a sender unassigns the leads it held so the others pick them up, except leads already in conversation with it, which wait for campaigns.leads.bulkChangeSender.",
  input: z.object({ campaignId: uuid, add: z.array(uuid).max(100).optional(), remove: z.array(uuid).max(100).optional(), dryRun }),
  output: z.object({
    dryRun: z.boolean(),
    campaignId: z.string(),
    campaignName: z.string(),
    running: z.boolean(),
    added: z.array(senderSummaryOut),
    removed: z.array(senderSummaryOut),
    alreadyOnCampaign: z.array(z.string()),
    notOnCampaign: z.array(z.string()),
    senders: z.array(campaignSenderOut),
    leads: z.object({ assigned: z.number().int(), inFlight: z.number().int() }),
    warnings: z.object({ cannotSend: z.array(z.string()) }),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    const add = [...new Set(input.add ?? [])];
    const remove = [...new Set(input.remove ?? [])];
    const both = add.filter((id) => remove.includes(id));
    if (both.length > 0) throw new DomainError('INVALID_INPUT', `Sender ${both.join(', ')} is both added and removed; choose one.`, { field: 'add', ids: both });

    const on = new Set(c.senders.map((s) => s.sdrProfileId));
    const alreadyOnCampaign = add.filter((id) => on.has(id));
    const notOnCampaign = remove.filter((id) => !on.has(id));
    const toAdd = add.filter((id) => !on.has(id));
    const toRemove = new Set(remove.filter((id) => on.has(id)));

    const docs = await sendersById(ctx, [...toAdd, ...toRemove]);
    const unknown = toAdd.filter((id) => !docs.has(id));
    if (unknown.length > 0) throw new DomainError('NOT_FOUND', `Sender ${unknown.join(', ')} was not found in this workspace.`, { what: 'sender', ids: unknown });

    const senders = [...c.senders.filter((s) => !toRemove.has(s.sdrProfileId)), ...toAdd.map((sdrProfileId) => ({ sdrProfileId, paused: false }))];
    if (c.senders.length > 0 && senders.length === 0) {
      throw new DomainError('LAST_SENDER', `Campaign "${c.name}" must keep at least one sender; add another before removing the last.`, { campaignId: c.id });
    }

    let assigned = 0;
    let inFlight = 0;
    if (toRemove.size > 0) {
      const { docs: held } = await ctx.db.query('enrollments', {
        where: {
          op: 'and',
          conds: [
            { op: 'eq', field: 'campaignId', value: c.id },
            { op: 'in', field: 'sdrProfileId', values: [...toRemove] },
            { op: 'in', field: 'status', values: ['IN_PROGRESS', 'PAUSED'] },
          ],
        },
      });
      for (const e of held) {
        if (e.inConversationAt !== null) {
          inFlight++;
          continue;
        }
        assigned++;
        await ctx.db.put('enrollments', touched({ ...e, sdrProfileId: null }, ctx));
      }
    }
    const changed = toAdd.length > 0 || toRemove.size > 0;
    const next: Campaign = changed ? touched({ ...c, senders }, ctx) : c;
    if (changed) await ctx.db.put('campaigns', next);

    const cannotSend: string[] = [];
    for (const id of toAdd) {
      const sender = docs.get(id);
      if (!sender) continue;
      for (const { step } of walk(c.steps)) {
        const problems = senderStepProblems(step, sender);
        if (problems.length > 0) cannotSend.push(`${sender.name} cannot perform ${describeStep(c.steps, step)}: ${problems.join('; ')}.`);
      }
    }
    return {
      dryRun: ctx.dryRun,
      campaignId: c.id,
      campaignName: c.name,
      running: c.running,
      added: toAdd.map((id) => senderSummary(id, docs.get(id))),
      removed: [...toRemove].map((id) => senderSummary(id, docs.get(id))),
      alreadyOnCampaign,
      notOnCampaign,
      senders: await campaignSenders(ctx, next),
      leads: { assigned, inFlight },
      warnings: { cannotSend },
    };
  },
});

export const ops = opsByName(updateSenders);
