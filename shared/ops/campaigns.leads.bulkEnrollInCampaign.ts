/** campaigns.leads.bulkEnrollInCampaign: enrolls many leads (a selection within a scope) in an
 * existing or a new campaign, with a policy for their senders and for sequences running elsewhere. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { newCampaign, newEnrollment, newLeadGroup } from '../model/factories.ts';
import type { Campaign, Enrollment, Lead } from '../model/index.ts';
import type { StoreReader } from '../store.ts';
import { mutation, opsByName } from './define.ts';
import { dryRun, uuid } from './params.ts';
import { resolveSelection, scopeSchema, selectionSchema } from './selection.ts';

export const count = z.number().int().min(0);

/** Above this many leads one scan of the enrollments is cheaper than many `in` queries. */
const IN_QUERY_LIMIT = 1000;
const IN_CHUNK = 200;

/** Every enrollment of the given leads, grouped by lead id. */
async function enrollmentsOfLeads(db: StoreReader, leadIds: readonly string[]): Promise<Map<string, Enrollment[]>> {
  const wanted = new Set(leadIds);
  const docs: Enrollment[] = [];
  if (leadIds.length > IN_QUERY_LIMIT) {
    docs.push(...(await db.query('enrollments')).docs.filter((e) => wanted.has(e.leadId)));
  } else {
    for (let i = 0; i < leadIds.length; i += IN_CHUNK) {
      const values = leadIds.slice(i, i + IN_CHUNK);
      docs.push(...(await db.query('enrollments', { where: { op: 'in', field: 'leadId', values } })).docs);
    }
  }
  const out = new Map<string, Enrollment[]>();
  for (const e of docs) {
    const list = out.get(e.leadId);
    if (list) list.push(e);
    else out.set(e.leadId, [e]);
  }
  return out;
}

/** The sender that last worked the lead: the newest of its enrollments that has a sender assigned. */
function currentOwner(enrollments: readonly Enrollment[]): string | null {
  let best: Enrollment | null = null;
  for (const e of enrollments) {
    if (e.sdrProfileId === null) continue;
    if (!best || e.createdAt > best.createdAt || (e.createdAt === best.createdAt && e.updatedAt > best.updatedAt)) best = e;
  }
  return best?.sdrProfileId ?? null;
}

/** The first step a new (or restarted) enrollment executes: the head of the main path. */
export const firstStepId = (c: Campaign): string | null => c.steps.find((s) => s.parentStepId === null)?.id ?? null;

export const isSenderOf = (c: Campaign, sdrProfileId: string): boolean => c.senders.some((s) => s.sdrProfileId === sdrProfileId);

const SENDER_MODES = ['keep', 'keep_where_possible', 'unassign'] as const;

const destinationSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('existing'), campaignId: uuid }),
  z.object({ kind: z.literal('new'), name: z.string().trim().min(1).max(200) }),
]);

const enrollOutput = z.object({
  dryRun: z.boolean(),
  campaignId: z.string(),
  createdCampaign: z.boolean(),
  enrolled: count,
  alreadyEnrolled: count,
  skippedMissing: count,
  skippedDoNotContact: count,
  skippedBlocklisted: count,
  skippedActive: count,
  stoppedActive: count,
  completedActive: count,
  keptOwnerCount: count,
  reassignedCount: count,
  linkedLeads: count,
  /** Selected leads in a closed stage (WON or LOST), whether or not excludeClosed left them out,
   * so a preview can warn before enrolling people the pipeline already closed. */
  closedSelected: count,
  /** Closed-stage leads left out because excludeClosed was true (0 otherwise). */
  skippedClosed: count,
  /** Senders that joined the destination because `keep` kept a lead with its owner. */
  addedSenders: z.array(z.string()),
  /** The leads enrolled by this call, and those of them newly linked to the campaign's lead list:
   * what an undo (campaigns.leads.unenroll) takes back. */
  enrolledLeadIds: z.array(z.string()),
  linkedLeadIds: z.array(z.string()),
});

/** Creates the paused campaign (with its own lead group of built-in columns) a `new` destination names. */
async function createDestination(ctx: Ctx, name: string): Promise<Campaign> {
  const now = nowIso(ctx);
  const workspaceId = ctx.actor.workspaceId;
  const group = newLeadGroup({ id: ctx.ids.uuid(), workspaceId, now }, name, () => ctx.ids.uuid());
  const campaign = newCampaign({ id: ctx.ids.uuid(), workspaceId, now }, name, group.id, ctx.ids.uuid());
  await ctx.db.put('leadGroups', group);
  await ctx.db.put('campaigns', campaign);
  return campaign;
}

const bulkEnrollInCampaign = mutation({
  name: 'campaigns.leads.bulkEnrollInCampaign',
  summary:
    'Enrolls many leads in an existing or a new campaign (never starts it); skips Do Not Contact and blocklisted people. closedSelected counts the selected leads in a WON or LOST stage; excludeClosed: true leaves them out (skippedClosed). A dry run with a new destination reports a preview campaignId: the real call creates the campaign under a new id.',
  input: z.object({
    scope: scopeSchema,
    selection: selectionSchema,
    destination: destinationSchema,
    /** keep: the lead's owner follows it (joining the destination's senders if needed);
     * keep_where_possible: kept only when that sender already sends in the destination;
     * unassign: the destination's senders pick the leads up; or one of the destination's senders. */
    sender: z
      .string()
      .refine((v) => (SENDER_MODES as readonly string[]).includes(v) || uuid.safeParse(v).success, {
        message: 'must be keep, keep_where_possible, unassign or the id of one of the destination campaign\'s senders',
      })
      .default('keep_where_possible'),
    activeConflictPolicy: z.enum(['stop', 'skip', 'complete']).default('stop'),
    /** Leaves leads in a WON or LOST stage out (counted in skippedClosed). */
    excludeClosed: z.boolean().optional(),
    dryRun,
  }),
  output: enrollOutput,
  dryRun: true,
  async handler(input, ctx) {
    const now = nowIso(ctx);
    const workspaceId = ctx.actor.workspaceId;

    // A dry run with a new destination creates (and discards) that campaign too, so the ids it
    // reports are previews: the real call generates its own.
    let campaign: Campaign;
    if (input.destination.kind === 'existing') {
      const found = await ctx.db.get('campaigns', input.destination.campaignId);
      if (!found) throw notFound('Campaign', input.destination.campaignId);
      campaign = found;
    } else {
      campaign = await createDestination(ctx, input.destination.name);
    }
    const createdCampaign = input.destination.kind === 'new';

    const explicitSender = (SENDER_MODES as readonly string[]).includes(input.sender) ? null : input.sender;
    if (explicitSender !== null && !isSenderOf(campaign, explicitSender)) {
      const chosen = await ctx.db.get('senders', explicitSender);
      throw new DomainError('INVALID_INPUT', `${chosen?.name ?? 'The chosen sender'} does not send in campaign "${campaign.name}": pick one of its senders, or keep each lead's sender.`, {
        field: 'sender',
        sdrProfileId: explicitSender,
        campaignId: campaign.id,
      });
    }

    const { leads, missingIds } = await resolveSelection(ctx.db, input.scope, input.selection);
    const enrollments = await enrollmentsOfLeads(ctx.db, leads.map((l) => l.id));
    const firstStep = firstStepId(campaign);

    const counts = {
      enrolled: 0, alreadyEnrolled: 0, skippedMissing: missingIds.length, skippedDoNotContact: 0, skippedBlocklisted: 0,
      skippedActive: 0, stoppedActive: 0, completedActive: 0, keptOwnerCount: 0, reassignedCount: 0, linkedLeads: 0,
      closedSelected: 0, skippedClosed: 0,
    };
    const closedStages = new Set((await ctx.db.query('stages', { where: { op: 'in', field: 'category', values: ['WON', 'LOST'] } })).docs.map((st) => st.id));
    const isClosed = (l: Lead): boolean => l.pipelineStageId !== null && closedStages.has(l.pipelineStageId);
    for (const lead of leads) if (isClosed(lead)) counts.closedSelected++;
    const addedSenders: string[] = [];
    const enrolledLeadIds: string[] = [];
    const linkedLeadIds: string[] = [];
    const knownSenders = new Map<string, boolean>();
    const senderExists = async (id: string): Promise<boolean> => {
      let ok = knownSenders.get(id);
      if (ok === undefined) {
        ok = (await ctx.db.get('senders', id)) !== null;
        knownSenders.set(id, ok);
      }
      return ok;
    };

    for (const lead of leads) {
      if (lead.doNotContact) {
        counts.skippedDoNotContact++;
        continue;
      }
      if (lead.blocklisted) {
        counts.skippedBlocklisted++;
        continue;
      }
      if (input.excludeClosed === true && isClosed(lead)) {
        counts.skippedClosed++;
        continue;
      }
      const mine = enrollments.get(lead.id) ?? [];
      if (mine.some((e) => e.campaignId === campaign.id)) {
        counts.alreadyEnrolled++;
        continue;
      }
      const running = mine.filter((e) => e.status === 'IN_PROGRESS');
      if (running.length > 0) {
        if (input.activeConflictPolicy === 'skip') {
          counts.skippedActive++;
          continue;
        }
        for (const e of running) {
          const ended: Enrollment =
            input.activeConflictPolicy === 'stop'
              ? { ...e, status: 'STOPPED', stoppedReason: 'moved', nextActionAt: null, updatedAt: now }
              : { ...e, status: 'COMPLETED', completedAt: now, nextActionAt: null, updatedAt: now };
          await ctx.db.put('enrollments', ended);
        }
        if (input.activeConflictPolicy === 'stop') counts.stoppedActive++;
        else counts.completedActive++;
      }

      const owner = currentOwner(mine);
      let assigned: string | null;
      if (explicitSender !== null) assigned = explicitSender;
      else if (input.sender === 'unassign' || owner === null) assigned = null;
      else if (isSenderOf(campaign, owner)) assigned = owner;
      else if (input.sender === 'keep' && (await senderExists(owner))) {
        // The owner follows the lead: it joins the destination's senders (not paused), as
        // campaigns.updateSenders would add it.
        campaign = { ...campaign, senders: [...campaign.senders, { sdrProfileId: owner, paused: false }], updatedAt: now };
        await ctx.db.put('campaigns', campaign);
        addedSenders.push(owner);
        assigned = owner;
      } else assigned = null;
      if (assigned !== null && assigned === owner) counts.keptOwnerCount++;
      else counts.reassignedCount++;

      const enrollment = newEnrollment({ id: ctx.ids.uuid(), workspaceId, now }, lead.id, campaign.id, {
        status: 'IN_PROGRESS',
        sdrProfileId: assigned,
        currentStepId: firstStep,
        nextActionAt: now,
      });
      await ctx.db.put('enrollments', enrollment);
      counts.enrolled++;
      enrolledLeadIds.push(lead.id);

      if (!lead.groupIds.includes(campaign.leadGroupId)) {
        await ctx.db.put('leads', { ...lead, groupIds: [...lead.groupIds, campaign.leadGroupId], updatedAt: now });
        counts.linkedLeads++;
        linkedLeadIds.push(lead.id);
      }
    }

    return { dryRun: ctx.dryRun, campaignId: campaign.id, createdCampaign, ...counts, addedSenders, enrolledLeadIds, linkedLeadIds };
  },
});

export const ops = opsByName(bulkEnrollInCampaign);
