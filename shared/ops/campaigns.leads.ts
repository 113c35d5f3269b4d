/** A campaign's leads, and the leads of the workspace (spec: Leads, Lead pipeline): search and
 * count, the detail screen and conversation, pipeline stage, tag, catch-up date, delete, Do Not
 * Contact and blocklist; stopping the running sequences of leads that leave. Operations with more to
 * them have a file of their own, named after them (campaigns.leads.create.ts, .update, .import,
 * .export, .sendMessage, .bulkEnrollInCampaign, ...); how a lead looks in answers is lead-views.ts,
 * the search filter lead-search.ts. */
import { z } from 'zod';
import { chunk } from '../chunk.ts';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { newActivity } from '../model/factories.ts';
import { CLOSE_REASONS, ENROLLMENT_STATUSES, STAGE_CATEGORIES } from '../model/index.ts';
import type { Enrollment, Lead, Message, StageCategory } from '../model/index.ts';
import { mutation, opsByName, query } from './define.ts';
import { LEAD_SORT_FIELDS, leadFilterCond, leadPage } from './lead-search.ts';
import { leadCampaigns, leadRecordSchema, leadRowSchema, toLeadRecord, toLeadRows } from './lead-views.ts';
import { cursor, DEFAULT_PAGE_SIZE, dryRun, isoDateTime, pageLimit, qBool, uuid } from './params.ts';

const instant = isoDateTime.transform((s) => new Date(s).toISOString());
export const stamp = (ctx: Ctx) => ({ id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, now: nowIso(ctx) });

/** Most ids one request may name (import rows, delete, flags). */
export const MAX_LEADS_PER_REQUEST = 1000;

/** The NOT_FOUND of a lead merged into another (API contract, "Operations beyond the
 * specification"): details.mergedIntoId names the survivor, so a client holding the old id can follow it. */
export const mergedLeadNotFound = (lead: Lead & { mergedIntoId: string }): DomainError =>
  new DomainError('NOT_FOUND', `Lead ${lead.id} was merged into lead ${lead.mergedIntoId}; use that lead instead.`, { what: 'Lead', id: lead.id, mergedIntoId: lead.mergedIntoId });

export const isMerged = (lead: Lead): lead is Lead & { mergedIntoId: string } => typeof lead.mergedIntoId === 'string';

/** The lead an operation names: absent, foreign and merged leads are NOT_FOUND (a merged one with
 * the survivor's id). Every operation reads the lead it names through this. */
export async function liveLead(ctx: Ctx, leadId: string): Promise<Lead> {
  const lead = await ctx.db.get('leads', leadId);
  if (!lead) throw notFound('Lead', leadId);
  if (isMerged(lead)) throw mergedLeadNotFound(lead);
  return lead;
}

/** The leads of a list of ids that an operation may change: merged leads count as missing. */
export async function liveLeads(ctx: Ctx, ids: readonly string[]): Promise<Lead[]> {
  return (await ctx.db.getMany('leads', ids)).filter((l) => !isMerged(l));
}

export type StopReason = 'lead_lost' | 'lead_deleted' | 'do_not_contact' | 'blocklisted' | 'meeting_booked';

const STOP_WORDS: Record<StopReason, string> = {
  lead_lost: 'the lead was moved to a lost stage',
  meeting_booked: 'a meeting was booked',
  lead_deleted: 'the lead was deleted',
  do_not_contact: 'the lead was marked Do Not Contact',
  blocklisted: 'the lead was blocklisted',
};

/** Stops the running sequences of these leads (a lead runs at most one) and, for leads that stay
 * visible, puts a sequence_stopped event on their timeline. Returns the stopped enrollments. */
export async function stopRunningEnrollments(ctx: Ctx, leadIds: readonly string[], reason: StopReason): Promise<Enrollment[]> {
  const stopped: Enrollment[] = [];
  const now = nowIso(ctx);
  for (const ids of chunk([...new Set(leadIds)], 500)) {
    const { docs } = await ctx.db.query('enrollments', {
      where: { op: 'and', conds: [{ op: 'in', field: 'leadId', values: ids }, { op: 'eq', field: 'status', value: 'IN_PROGRESS' }] },
    });
    for (const e of docs) {
      const next: Enrollment = { ...e, status: 'STOPPED', stoppedReason: reason, nextActionAt: null, updatedAt: now };
      await ctx.db.put('enrollments', next);
      stopped.push(next);
    }
  }
  if (reason !== 'lead_deleted' && stopped.length > 0) {
    const names = new Map((await ctx.db.getMany('campaigns', [...new Set(stopped.map((e) => e.campaignId))])).map((c) => [c.id, c.name]));
    for (const e of stopped) {
      const event = newActivity(stamp(ctx), e.leadId, ctx.actor.memberId, 'EVENT', `Sequence in "${names.get(e.campaignId) ?? e.campaignId}" stopped: ${STOP_WORDS[reason]}.`, {
        metadata: { eventKind: 'sequence_stopped', campaignId: e.campaignId, ...(e.sdrProfileId === null ? {} : { sdrProfileId: e.sdrProfileId }) },
      });
      await ctx.db.put('activities', event);
    }
  }
  return stopped;
}

const enrollmentOut = z.object({
  id: z.string(),
  campaignId: z.string(),
  campaignName: z.string(),
  status: z.enum(ENROLLMENT_STATUSES),
  sdrProfileId: z.string().nullable(),
  currentStepId: z.string().nullable(),
  nextActionAt: z.string().nullable(),
  stoppedReason: z.string().nullable(),
  createdAt: z.string(),
});

const leadDetailSchema = leadRowSchema.extend({
  builtInValues: z.record(z.string(), z.string()),
  variables: leadRowSchema.shape.variables.unwrap(),
  blocklisted: z.boolean(),
  closedFromCategory: z.enum(STAGE_CATEGORIES).nullable(),
  stageSetManuallyAt: z.string().nullable(),
  enrollments: z.array(enrollmentOut),
});

const messageOut = z.object({
  id: z.string(),
  chatId: z.string(),
  sdrProfileId: z.string(),
  campaignId: z.string().nullable(),
  stepId: z.string().nullable(),
  direction: z.enum(['out', 'in']),
  kind: z.string(),
  text: z.string(),
  subject: z.string(),
  status: z.enum(['queued', 'sending', 'sent', 'failed', 'received', 'unknown']),
  sentAt: z.string().nullable(),
  openedAt: z.string().nullable(),
  error: z.string().nullable(),
  createdAt: z.string(),
});

const toMessageOut = (m: Message): z.output<typeof messageOut> => ({
  id: m.id, chatId: m.chatId, sdrProfileId: m.sdrProfileId, campaignId: m.campaignId, stepId: m.stepId, direction: m.direction,
  kind: m.kind, text: m.text, subject: m.subject, status: m.status, sentAt: m.sentAt, openedAt: m.openedAt, error: m.error, createdAt: m.createdAt,
});

const idList = z.array(uuid).min(1).max(MAX_LEADS_PER_REQUEST);

const search = query({
  name: 'campaigns.leads.search',
  summary:
    "Searches the workspace's leads by tag, text and pipeline stage, one page at a time. With campaignId: that campaign's leads, i.e. every lead linked to its lead group, enrolled or not; each row then shows its enrollment in that campaign (enrollmentState NOT_ENROLLED, IN_PROGRESS, PAUSED, COMPLETED, STOPPED or REPLIED; sequenceStatus and leadSequence describe that enrollment, null when not enrolled yet). Without campaignId they describe the lead's current enrollment.",
  input: z.object({
    campaignId: uuid.optional(),
    tagId: z.string().trim().min(1).max(100).optional(),
    query: z.string().max(500).optional(),
    includeVariables: qBool.optional(),
    cursor,
    pipelineStage: z.string().max(100).optional(),
    limit: pageLimit,
    sortBy: z.enum(LEAD_SORT_FIELDS).optional(),
    sortOrder: z.enum(['asc', 'desc']).optional(),
  }),
  output: z.object({ leads: z.array(leadRowSchema), nextCursor: z.string().nullable() }),
  async handler(input, ctx) {
    const page = await leadPage(ctx.db, input, input.limit ?? DEFAULT_PAGE_SIZE);
    let variablesFrom: string | undefined;
    if (input.includeVariables && input.campaignId) variablesFrom = (await ctx.db.get('campaigns', input.campaignId))?.leadGroupId;
    const leads = await toLeadRows(ctx.db, page.docs, { includeVariables: input.includeVariables === true, variablesFrom, campaignId: input.campaignId });
    return { leads, nextCursor: page.nextCursor };
  },
});

const count = query({
  name: 'campaigns.leads.count',
  summary: "Counts the leads a search with the same filters (campaignId, tagId, query, pipelineStage) would return; with campaignId every lead linked to the campaign's lead group, enrolled or not.",
  input: z.object({
    campaignId: uuid.optional(),
    tagId: z.string().trim().min(1).max(100).optional(),
    query: z.string().max(500).optional(),
    pipelineStage: z.string().max(100).optional(),
  }),
  output: z.object({ count: z.number().int() }),
  async handler(input, ctx) {
    return { count: await ctx.db.count('leads', await leadFilterCond(ctx.db, input)) };
  },
});

const get = query({
  name: 'campaigns.leads.get',
  summary: 'One lead with its variables, flags (doNotContact, blocklisted, and unsubscribedAt/unsubscribeSource when the lead unsubscribed) and every enrollment, for the lead detail screen.',
  input: z.object({ leadId: uuid }),
  output: leadDetailSchema,
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    const [row] = await toLeadRows(ctx.db, [lead], { includeVariables: true });
    if (!row) throw notFound('Lead', input.leadId);
    const { docs } = await ctx.db.query('enrollments', {
      where: { op: 'eq', field: 'leadId', value: lead.id },
      orderBy: [{ field: 'createdAt', dir: 'desc' }],
    });
    const names = new Map((await ctx.db.getMany('campaigns', [...new Set(docs.map((e) => e.campaignId))])).map((c) => [c.id, c.name]));
    return {
      ...row,
      builtInValues: row.builtInValues ?? {},
      variables: row.variables ?? [],
      doNotContact: lead.doNotContact,
      blocklisted: lead.blocklisted,
      closedFromCategory: lead.closedFromCategory,
      stageSetManuallyAt: lead.stageSetManuallyAt,
      enrollments: docs.map((e) => ({
        id: e.id, campaignId: e.campaignId, campaignName: names.get(e.campaignId) ?? '', status: e.status, sdrProfileId: e.sdrProfileId,
        currentStepId: e.currentStepId, nextActionAt: e.nextActionAt, stoppedReason: e.stoppedReason, createdAt: e.createdAt,
      })),
    };
  },
});

const getConversation = query({
  name: 'campaigns.leads.getConversation',
  summary: 'Every message sent to or received from a lead, oldest first, and the threads they belong to.',
  input: z.object({ leadId: uuid }),
  output: z.object({
    messages: z.array(messageOut),
    chats: z.array(z.object({ chatId: z.string(), sdrProfileId: z.string(), lastMessageAt: z.string() })),
  }),
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    const { docs } = await ctx.db.query('messages', {
      where: { op: 'eq', field: 'leadId', value: lead.id },
      orderBy: [{ field: 'createdAt', dir: 'asc' }],
    });
    const chats = new Map<string, { chatId: string; sdrProfileId: string; lastMessageAt: string }>();
    for (const m of docs) {
      const c = chats.get(m.chatId);
      if (c) c.lastMessageAt = m.createdAt;
      else chats.set(m.chatId, { chatId: m.chatId, sdrProfileId: m.sdrProfileId, lastMessageAt: m.createdAt });
    }
    return { messages: docs.map(toMessageOut), chats: [...chats.values()] };
  },
});

const updateLeadStage = mutation({
  name: 'campaigns.leads.updateLeadStage',
  summary: 'Moves a lead to a pipeline stage; a lost stage needs closeReason (and stops its sequence), an on-hold stage needs wakeAt.',
  input: z.object({ leadId: uuid, pipelineStageId: uuid, closeReason: z.enum(CLOSE_REASONS).nullish(), wakeAt: instant.nullish() }),
  output: leadRecordSchema,
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    const stage = await ctx.db.get('stages', input.pipelineStageId);
    if (!stage) throw notFound('Pipeline stage', input.pipelineStageId);
    const fromStage = lead.pipelineStageId === null ? null : await ctx.db.get('stages', lead.pipelineStageId);
    const fromCategory: StageCategory = fromStage?.category ?? 'NEW';
    const sameStage = lead.pipelineStageId === stage.id;
    if (sameStage && !input.closeReason && !input.wakeAt) return toLeadRecord(lead);

    const now = nowIso(ctx);
    const next: Lead = { ...lead, pipelineStageId: stage.id, stageSetManuallyAt: now, updatedAt: now };
    if (stage.category === 'LOST') {
      const reason = input.closeReason ?? (fromCategory === 'LOST' ? lead.closeReason : null);
      if (!reason) {
        throw new DomainError('CLOSE_REASON_REQUIRED', `Moving a lead to "${stage.name}" needs a reason it was lost: not our ideal customer, not interested, bad timing, went with a competitor, no response, or other.`, {
          field: 'closeReason',
          pipelineStageId: stage.id,
        });
      }
      next.closeReason = reason;
      if (fromCategory !== 'LOST') next.closedFromCategory = fromCategory;
    } else {
      next.closeReason = null;
    }
    if (stage.category === 'ON_HOLD') {
      if (!input.wakeAt) {
        throw new DomainError('WAKE_DATE_REQUIRED', `Moving a lead to "${stage.name}" needs a wake date: the day to pick the lead back up.`, {
          field: 'wakeAt',
          pipelineStageId: stage.id,
        });
      }
      next.followUpAt = input.wakeAt;
    }
    await ctx.db.put('leads', next);

    if (!sameStage) {
      const detail = [
        next.closeReason && stage.category === 'LOST' ? `close reason ${next.closeReason}` : '',
        stage.category === 'ON_HOLD' ? `wake on ${next.followUpAt ?? ''}` : '',
      ].filter(Boolean).join(', ');
      const text = `Stage changed from "${fromStage?.name ?? 'No stage'}" to "${stage.name}"${detail ? ` (${detail})` : ''}.`;
      await ctx.db.put('activities', newActivity(stamp(ctx), lead.id, ctx.actor.memberId, 'EVENT', text, { metadata: { eventKind: 'stage_changed' } }));
    }
    if (stage.category === 'LOST') await stopRunningEnrollments(ctx, [lead.id], 'lead_lost');
    if (stage.category === 'MEETING_BOOKED' && fromCategory !== 'MEETING_BOOKED') {
      // A meeting booked by hand ends the sequence like one booked through the network, and
      // counts for the campaign that led to it (the running one, else the latest).
      const stopped = await stopRunningEnrollments(ctx, [lead.id], 'meeting_booked');
      if (lead.meetingBookedAt === null) {
        next.meetingBookedAt = now;
        next.meetingBookedSource = 'MANUAL';
        await ctx.db.put('leads', next);
        const latest = await ctx.db.query('enrollments', { where: { op: 'eq', field: 'leadId', value: lead.id }, orderBy: [{ field: 'updatedAt', dir: 'desc' }], limit: 1 });
        const campaignId = stopped[0]?.campaignId ?? latest.docs[0]?.campaignId;
        await ctx.db.put('activities', newActivity(stamp(ctx), lead.id, ctx.actor.memberId, 'EVENT', `${lead.fullName || 'The lead'} booked a meeting (set by hand).`, {
          metadata: { eventKind: 'meeting_booked', ...(campaignId ? { campaignId } : {}) },
        }));
      }
    }
    return toLeadRecord(next);
  },
});

const updateTag = mutation({
  name: 'campaigns.leads.updateTag',
  summary: "Sets or (tagId null) clears a lead's single tag; returns the previous tag as oldTagId.",
  input: z.object({ leadGroupId: uuid, leadId: uuid, tagId: uuid.nullable() }),
  output: leadRecordSchema.extend({ campaigns: z.array(z.object({ id: z.string(), name: z.string() })), oldTagId: z.string().nullable() }),
  async handler(input, ctx) {
    const group = await ctx.db.get('leadGroups', input.leadGroupId);
    if (!group) throw notFound('Lead group', input.leadGroupId);
    const lead = await liveLead(ctx, input.leadId);
    if (!lead.groupIds.includes(group.id)) {
      throw new DomainError('NOT_FOUND', `${lead.fullName || 'This lead'} is not on the lead list "${group.name}".`, { what: 'lead', id: lead.id, leadGroupId: group.id });
    }
    if (input.tagId !== null && !(await ctx.db.get('tags', input.tagId))) throw notFound('Tag', input.tagId);
    const next: Lead = lead.tagId === input.tagId ? lead : { ...lead, tagId: input.tagId, updatedAt: nowIso(ctx) };
    if (next !== lead) await ctx.db.put('leads', next);
    return { ...toLeadRecord(next), campaigns: await leadCampaigns(ctx.db, lead.id), oldTagId: lead.tagId };
  },
});

const setLeadFollowUp = mutation({
  name: 'campaigns.leads.setLeadFollowUp',
  summary: 'Sets (or, with null, clears) the date to pick a lead back up; a past date puts the lead in triage.',
  input: z.object({ leadId: uuid, followUpAt: instant.nullable() }),
  output: leadRecordSchema,
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    if (lead.followUpAt === input.followUpAt) return toLeadRecord(lead);
    const next: Lead = { ...lead, followUpAt: input.followUpAt, updatedAt: nowIso(ctx) };
    await ctx.db.put('leads', next);
    return toLeadRecord(next);
  },
});

const deleteOp = mutation({
  name: 'campaigns.leads.delete',
  summary: 'Deletes leads (soft delete; their running sequences stop). dryRun previews the counts.',
  input: z.object({ leadIds: idList, dryRun }),
  output: z.object({ dryRun: z.boolean(), deleted: z.number().int(), skippedMissing: z.number().int() }),
  dryRun: true,
  async handler(input, ctx) {
    const ids = [...new Set(input.leadIds)];
    const found = await liveLeads(ctx, ids);
    for (const lead of found) await ctx.db.remove('leads', lead.id);
    await stopRunningEnrollments(ctx, found.map((l) => l.id), 'lead_deleted');
    return { dryRun: ctx.dryRun, deleted: found.length, skippedMissing: ids.length - found.length };
  },
});

const setDoNotContact = mutation({
  name: 'campaigns.leads.setDoNotContact',
  summary: 'Marks leads Do Not Contact (their running sequences stop) or clears the mark.',
  input: z.object({ leadIds: idList, doNotContact: z.boolean() }),
  output: z.object({ changed: z.number().int(), skippedMissing: z.number().int() }),
  async handler(input, ctx) {
    return setFlag(ctx, input.leadIds, 'doNotContact', input.doNotContact);
  },
});

const setBlocklisted = mutation({
  name: 'campaigns.leads.setBlocklisted',
  summary: 'Blocklists leads (their running sequences stop) or lifts the blocklist.',
  input: z.object({ leadIds: idList, blocklisted: z.boolean() }),
  output: z.object({ changed: z.number().int(), skippedMissing: z.number().int() }),
  async handler(input, ctx) {
    return setFlag(ctx, input.leadIds, 'blocklisted', input.blocklisted);
  },
});

/** Sets doNotContact or blocklisted on the named leads; setting either stops their running sequences. */
async function setFlag(ctx: Ctx, leadIds: readonly string[], flag: 'doNotContact' | 'blocklisted', value: boolean): Promise<{ changed: number; skippedMissing: number }> {
  const ids = [...new Set(leadIds)];
  const found = await liveLeads(ctx, ids);
  const now = nowIso(ctx);
  let changed = 0;
  for (const lead of found) {
    if (lead[flag] === value) continue;
    await ctx.db.put('leads', { ...lead, [flag]: value, updatedAt: now });
    changed++;
  }
  // Also for leads already flagged: a sequence that slipped through still stops.
  if (value) await stopRunningEnrollments(ctx, found.map((l) => l.id), flag === 'doNotContact' ? 'do_not_contact' : 'blocklisted');
  return { changed, skippedMissing: ids.length - found.length };
}

export const ops = opsByName(search, count, get, getConversation, updateLeadStage, updateTag, setLeadFollowUp, deleteOp, setDoNotContact, setBlocklisted);
