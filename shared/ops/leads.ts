/** Leads: search, the detail screen, pipeline stage, tag, catch-up date, import, delete, Do Not
 * Contact / blocklist and direct messages (spec: Leads, Lead pipeline). */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { newActivity, newLead, newMessage } from '../model/factories.ts';
import { CLOSE_REASONS, ENROLLMENT_STATUSES, STAGE_CATEGORIES } from '../model/index.ts';
import type { Enrollment, Lead, LeadGroup, Message, StageCategory } from '../model/index.ts';
import type { Sort } from '../store.ts';
import { defineOp, opsByName } from './define.ts';
import { leadFilterCond } from './lead-search.ts';
import { leadCampaigns, leadRecordSchema, leadRowSchema, toLeadRecord, toLeadRows } from './lead-views.ts';
import { cursor, DEFAULT_PAGE_SIZE, dryRun, isoDateTime, pageLimit, qBool, uuid } from './params.ts';

const instant = isoDateTime.transform((s) => new Date(s).toISOString());
const stamp = (ctx: Ctx) => ({ id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, now: nowIso(ctx) });

/** Columns the lead table can sort by. */
export const LEAD_SORT_FIELDS = ['createdAt', 'lastActivityAt', 'fullName', 'company', 'rankingScore', 'leadFitScore', 'followUpAt'] as const;

/** Most ids one request may name (import rows, delete, flags). */
export const MAX_LEADS_PER_REQUEST = 1000;

async function liveLead(ctx: Ctx, leadId: string): Promise<Lead> {
  const lead = await ctx.db.get('leads', leadId);
  if (!lead) throw notFound('Lead', leadId);
  return lead;
}

const chunk = <T>(xs: readonly T[], n: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
};

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

/** The search cursor carries its sort so a cursor is never applied to a different ordering. */
function wrapCursor(sortBy: string, dir: string, inner: string | null): string | null {
  return inner === null ? null : `${sortBy}.${dir}.${inner}`;
}
function unwrapCursor(c: string | null | undefined, sortBy: string, dir: string): string | null {
  if (!c) return null;
  const prefix = `${sortBy}.${dir}.`;
  if (!c.startsWith(prefix) || c.length === prefix.length) {
    throw new DomainError('INVALID_INPUT', 'The cursor belongs to another sort order or is not valid; start again without a cursor.', { field: 'cursor' });
  }
  return c.slice(prefix.length);
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
  doNotContact: z.boolean(),
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
  status: z.enum(['queued', 'sent', 'failed', 'received']),
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

/** Text fields of an imported row; the content of each row is checked per row, in the handler. */
const importText = z.string().nullish();
const importRow = z.object({
  firstName: importText,
  lastName: importText,
  email: importText,
  company: importText,
  jobTitle: importText,
  location: importText,
  phone: importText,
  socialUrl: importText,
  seniority: importText,
  variables: z.record(z.string(), importText).nullish(),
});
type ImportRow = z.output<typeof importRow>;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_FIELD = 2000;

/** Identity keys used for deduplication: one person is one lead per workspace. */
const socialKey = (url: string): string => url.trim().toLowerCase().replace(/^https?:\/\//, '').replace(/^www\./, '').replace(/[?#].*$/, '').replace(/\/+$/, '');
const emailKey = (email: string): string => email.trim().toLowerCase();

type CleanRow = { fields: Partial<Lead>; custom: Record<string, string> };

/** Validates one import row against the group's columns; returns the problem in words or the row. */
function cleanRow(row: ImportRow, group: LeadGroup): CleanRow | string {
  const fields: Partial<Lead> = {};
  const text = ['firstName', 'lastName', 'email', 'company', 'jobTitle', 'location', 'phone', 'socialUrl', 'seniority'] as const;
  for (const f of text) {
    const v = row[f];
    if (typeof v === 'string' && v.trim() !== '') {
      if (v.length > MAX_FIELD) return `${f} is longer than ${MAX_FIELD} characters`;
      fields[f] = v.trim();
    }
  }
  const custom: Record<string, string> = {};
  const byName = new Map(group.columns.map((c) => [c.name.trim().toLowerCase(), c]));
  for (const [name, value] of Object.entries(row.variables ?? {})) {
    const col = byName.get(name.trim().toLowerCase());
    if (!col) {
      return `unknown variable column "${name}"; the columns of "${group.name}" are ${group.columns.map((c) => c.name).join(', ')}`;
    }
    const v = (value ?? '').trim();
    if (v.length > MAX_FIELD) return `variable "${name}" is longer than ${MAX_FIELD} characters`;
    if (col.builtInType !== null) {
      // A built-in column given as a variable fills the lead field, unless the row set it directly.
      const field = col.builtInType as keyof Lead;
      if (v !== '' && fields[field] === undefined) (fields as Record<string, unknown>)[field] = v;
    } else if (v !== '') custom[col.id] = v;
  }
  if (fields.email !== undefined && !EMAIL.test(fields.email)) return `email "${fields.email}" is not a valid email address`;
  if (!fields.firstName && !fields.lastName && !fields.email && !fields.socialUrl) {
    return 'a lead needs a name, an email or a social profile URL';
  }
  return { fields, custom };
}

export const leadsOps = opsByName(
  defineOp({
    name: 'campaigns.leads.search',
    method: 'GET',
    summary: "Searches the workspace's leads (or one campaign's) by tag, text and pipeline stage, one page at a time.",
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
    permission: 'member',
    dryRun: false,
    mutates: false,
    async handler(input, ctx) {
      const where = await leadFilterCond(ctx.db, input);
      const sortBy = input.sortBy ?? 'createdAt';
      const dir = input.sortOrder ?? 'desc';
      const orderBy: Sort[] = [{ field: sortBy, dir }];
      const page = await ctx.db.query('leads', {
        where,
        orderBy,
        limit: input.limit ?? DEFAULT_PAGE_SIZE,
        cursor: unwrapCursor(input.cursor, sortBy, dir),
      });
      let variablesFrom: string | undefined;
      if (input.includeVariables && input.campaignId) variablesFrom = (await ctx.db.get('campaigns', input.campaignId))?.leadGroupId;
      const leads = await toLeadRows(ctx.db, page.docs, { includeVariables: input.includeVariables === true, variablesFrom });
      return { leads, nextCursor: wrapCursor(sortBy, dir, page.nextCursor) };
    },
  }),
  defineOp({
    name: 'campaigns.leads.count',
    method: 'GET',
    summary: 'Counts the leads a search with the same filters (campaignId, tagId, query, pipelineStage) would return.',
    input: z.object({
      campaignId: uuid.optional(),
      tagId: z.string().trim().min(1).max(100).optional(),
      query: z.string().max(500).optional(),
      pipelineStage: z.string().max(100).optional(),
    }),
    output: z.object({ count: z.number().int() }),
    permission: 'member',
    dryRun: false,
    mutates: false,
    async handler(input, ctx) {
      return { count: await ctx.db.count('leads', await leadFilterCond(ctx.db, input)) };
    },
  }),
  defineOp({
    name: 'campaigns.leads.get',
    method: 'GET',
    summary: 'One lead with its variables, flags and every enrollment, for the lead detail screen.',
    input: z.object({ leadId: uuid }),
    output: leadDetailSchema,
    permission: 'member',
    dryRun: false,
    mutates: false,
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
  }),
  defineOp({
    name: 'campaigns.leads.getConversation',
    method: 'GET',
    summary: 'Every message sent to or received from a lead, oldest first, and the threads they belong to.',
    input: z.object({ leadId: uuid }),
    output: z.object({
      messages: z.array(messageOut),
      chats: z.array(z.object({ chatId: z.string(), sdrProfileId: z.string(), lastMessageAt: z.string() })),
    }),
    permission: 'member',
    dryRun: false,
    mutates: false,
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
  }),
  defineOp({
    name: 'campaigns.leads.updateLeadStage',
    method: 'POST',
    summary: 'Moves a lead to a pipeline stage; a lost stage needs closeReason (and stops its sequence), an on-hold stage needs wakeAt.',
    input: z.object({ leadId: uuid, pipelineStageId: uuid, closeReason: z.enum(CLOSE_REASONS).nullish(), wakeAt: instant.nullish() }),
    output: leadRecordSchema,
    permission: 'member',
    dryRun: false,
    mutates: true,
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
          throw new DomainError('CLOSE_REASON_REQUIRED', `Moving a lead to "${stage.name}" needs a closeReason (${CLOSE_REASONS.join(', ')}).`, {
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
          throw new DomainError('WAKE_DATE_REQUIRED', `Moving a lead to "${stage.name}" needs a wakeAt date for when to pick it back up.`, {
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
  }),
  defineOp({
    name: 'campaigns.leads.updateTag',
    method: 'POST',
    summary: "Sets or (tagId null) clears a lead's single tag; returns the previous tag as oldTagId.",
    input: z.object({ leadGroupId: uuid, leadId: uuid, tagId: uuid.nullable() }),
    output: leadRecordSchema.extend({ campaigns: z.array(z.object({ id: z.string(), name: z.string() })), oldTagId: z.string().nullable() }),
    permission: 'member',
    dryRun: false,
    mutates: true,
    async handler(input, ctx) {
      const group = await ctx.db.get('leadGroups', input.leadGroupId);
      if (!group) throw notFound('Lead group', input.leadGroupId);
      const lead = await liveLead(ctx, input.leadId);
      if (!lead.groupIds.includes(group.id)) {
        throw new DomainError('NOT_FOUND', `Lead ${lead.id} is not in lead group ${group.id}.`, { what: 'lead', id: lead.id, leadGroupId: group.id });
      }
      if (input.tagId !== null && !(await ctx.db.get('tags', input.tagId))) throw notFound('Tag', input.tagId);
      const next: Lead = lead.tagId === input.tagId ? lead : { ...lead, tagId: input.tagId, updatedAt: nowIso(ctx) };
      if (next !== lead) await ctx.db.put('leads', next);
      return { ...toLeadRecord(next), campaigns: await leadCampaigns(ctx.db, lead.id), oldTagId: lead.tagId };
    },
  }),
  defineOp({
    name: 'campaigns.leads.setLeadFollowUp',
    method: 'POST',
    summary: 'Sets (or, with null, clears) the date to pick a lead back up; a past date puts the lead in triage.',
    input: z.object({ leadId: uuid, followUpAt: instant.nullable() }),
    output: leadRecordSchema,
    permission: 'member',
    dryRun: false,
    mutates: true,
    async handler(input, ctx) {
      const lead = await liveLead(ctx, input.leadId);
      if (lead.followUpAt === input.followUpAt) return toLeadRecord(lead);
      const next: Lead = { ...lead, followUpAt: input.followUpAt, updatedAt: nowIso(ctx) };
      await ctx.db.put('leads', next);
      return toLeadRecord(next);
    },
  }),
  defineOp({
    name: 'campaigns.leads.create',
    method: 'POST',
    summary: 'Imports up to 1000 leads into a lead group; duplicates (same social URL, else email) are linked, bad rows reported.',
    input: z.object({ leadGroupId: uuid, leads: z.array(importRow).min(1).max(MAX_LEADS_PER_REQUEST) }),
    output: z.object({
      created: z.number().int(),
      duplicates: z.number().int(),
      leadIds: z.array(z.string().nullable()),
      errors: z.array(z.object({ index: z.number().int(), message: z.string() })),
    }),
    permission: 'member',
    dryRun: false,
    mutates: true,
    async handler(input, ctx) {
      const group = await ctx.db.get('leadGroups', input.leadGroupId);
      if (!group) throw notFound('Lead group', input.leadGroupId);

      // One pass over the workspace's leads builds the identity index; the batch then updates it.
      const bySocial = new Map<string, Lead>();
      const byEmail = new Map<string, Lead>();
      const index = (l: Lead): void => {
        if (l.socialUrl) {
          const k = socialKey(l.socialUrl);
          if (k && !bySocial.has(k)) bySocial.set(k, l);
        }
        if (l.email) {
          const k = emailKey(l.email);
          if (k && !byEmail.has(k)) byEmail.set(k, l);
        }
      };
      const existing = await ctx.db.query('leads', {
        where: { op: 'or', conds: [{ op: 'neq', field: 'socialUrl', value: '' }, { op: 'neq', field: 'email', value: '' }] },
        orderBy: [{ field: 'createdAt', dir: 'asc' }],
      });
      for (const l of existing.docs) index(l);

      const touched = new Map<string, Lead>();
      const leadIds: (string | null)[] = [];
      const errors: { index: number; message: string }[] = [];
      let created = 0;
      let duplicates = 0;
      const now = nowIso(ctx);

      input.leads.forEach((row, i) => {
        const clean = cleanRow(row, group);
        if (typeof clean === 'string') {
          errors.push({ index: i, message: clean });
          leadIds.push(null);
          return;
        }
        const { fields, custom } = clean;
        const found =
          (fields.socialUrl ? bySocial.get(socialKey(fields.socialUrl)) : undefined) ?? (fields.email ? byEmail.get(emailKey(fields.email)) : undefined);
        if (found) {
          const current = touched.get(found.id) ?? found;
          const variables = { ...current.variables };
          let changed = false;
          // Fill this group's custom columns the lead has no value for; never overwrite.
          for (const [k, v] of Object.entries(custom)) {
            if (!variables[k]) {
              variables[k] = v;
              changed = true;
            }
          }
          if (!current.groupIds.includes(group.id) || changed) {
            const groupIds = current.groupIds.includes(group.id) ? current.groupIds : [...current.groupIds, group.id];
            touched.set(found.id, { ...current, groupIds, variables, updatedAt: now });
          }
          duplicates++;
          leadIds.push(found.id);
          return;
        }
        const lead = newLead(stamp(ctx), group.id, { ...fields, variables: custom });
        touched.set(lead.id, lead);
        index(lead);
        created++;
        leadIds.push(lead.id);
      });
      for (const lead of touched.values()) await ctx.db.put('leads', lead);
      return { created, duplicates, leadIds, errors };
    },
  }),
  defineOp({
    name: 'campaigns.leads.delete',
    method: 'POST',
    summary: 'Deletes leads (soft delete; their running sequences stop). dryRun previews the counts.',
    input: z.object({ leadIds: idList, dryRun }),
    output: z.object({ dryRun: z.boolean(), deleted: z.number().int(), skippedMissing: z.number().int() }),
    permission: 'member',
    dryRun: true,
    mutates: true,
    async handler(input, ctx) {
      const ids = [...new Set(input.leadIds)];
      const found = await ctx.db.getMany('leads', ids);
      for (const lead of found) await ctx.db.remove('leads', lead.id);
      await stopRunningEnrollments(ctx, found.map((l) => l.id), 'lead_deleted');
      return { dryRun: ctx.dryRun, deleted: found.length, skippedMissing: ids.length - found.length };
    },
  }),
  defineOp({
    name: 'campaigns.leads.setDoNotContact',
    method: 'POST',
    summary: 'Marks leads Do Not Contact (their running sequences stop) or clears the mark.',
    input: z.object({ leadIds: idList, doNotContact: z.boolean() }),
    output: z.object({ changed: z.number().int(), skippedMissing: z.number().int() }),
    permission: 'member',
    dryRun: false,
    mutates: true,
    async handler(input, ctx) {
      return setFlag(ctx, input.leadIds, 'doNotContact', input.doNotContact);
    },
  }),
  defineOp({
    name: 'campaigns.leads.setBlocklisted',
    method: 'POST',
    summary: 'Blocklists leads (their running sequences stop) or lifts the blocklist.',
    input: z.object({ leadIds: idList, blocklisted: z.boolean() }),
    output: z.object({ changed: z.number().int(), skippedMissing: z.number().int() }),
    permission: 'member',
    dryRun: false,
    mutates: true,
    async handler(input, ctx) {
      return setFlag(ctx, input.leadIds, 'blocklisted', input.blocklisted);
    },
  }),
  defineOp({
    name: 'campaigns.leads.sendMessage',
    method: 'POST',
    summary: 'Queues a direct message to a lead through the sender already on the conversation. Irreversible once delivered.',
    input: z.object({ leadId: uuid, text: z.string().trim().min(1, 'must not be empty').max(8000), chatId: z.string().trim().min(1).max(100).optional() }),
    output: z.object({ messageId: z.string(), chatId: z.string(), sdrProfileId: z.string(), status: z.enum(['sent', 'queued']) }),
    permission: 'member',
    dryRun: false,
    mutates: true,
    async handler(input, ctx) {
      const lead = await liveLead(ctx, input.leadId);
      if (lead.doNotContact || lead.blocklisted) {
        throw new DomainError('RULE_VIOLATION', `${lead.fullName || 'This lead'} is ${lead.doNotContact ? 'marked Do Not Contact' : 'blocklisted'}; no message is sent.`, {
          leadId: lead.id,
        });
      }
      const { docs: history } = await ctx.db.query('messages', {
        where: { op: 'eq', field: 'leadId', value: lead.id },
        orderBy: [{ field: 'createdAt', dir: 'desc' }],
      });
      let sdrProfileId: string | null = null;
      let chatId: string | null = null;
      let subject = '';
      if (input.chatId !== undefined) {
        const inChat = history.find((m) => m.chatId === input.chatId);
        if (!inChat) throw new DomainError('NOT_FOUND', `Conversation ${input.chatId} was not found for this lead.`, { what: 'chat', id: input.chatId });
        sdrProfileId = inChat.sdrProfileId;
        chatId = inChat.chatId;
        subject = inChat.subject;
      } else if (history[0]) {
        sdrProfileId = history[0].sdrProfileId;
        chatId = history[0].chatId;
        subject = history[0].subject;
      } else {
        const { docs: enrollments } = await ctx.db.query('enrollments', {
          where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: lead.id }, { op: 'neq', field: 'sdrProfileId', value: null }] },
          orderBy: [{ field: 'createdAt', dir: 'desc' }],
        });
        const e = enrollments.find((x) => x.status === 'IN_PROGRESS') ?? enrollments[0];
        if (e) sdrProfileId = e.sdrProfileId;
      }
      if (sdrProfileId === null) {
        throw new DomainError('INVALID_INPUT', 'No sender is on a conversation with this lead yet: enroll the lead in a campaign (or assign a sender) before messaging it directly.', {
          leadId: lead.id,
        });
      }
      const sender = await ctx.db.get('senders', sdrProfileId);
      if (!sender) {
        throw new DomainError('INVALID_INPUT', `The sender of this conversation (${sdrProfileId}) no longer exists; the message cannot be sent.`, { sdrProfileId });
      }
      const kind: Message['kind'] = sender.channel === 'email' ? 'email' : 'message';
      // A new thread gets its own id; the runner treats a chat with no delivered message as a new thread.
      const threadId = chatId ?? ctx.ids.uuid();
      const message = newMessage(stamp(ctx), {
        leadId: lead.id, sdrProfileId: sender.id, chatId: threadId, direction: 'out', kind, text: input.text,
        subject: kind === 'email' && subject && !/^re:/i.test(subject) ? `Re: ${subject}` : subject, status: 'queued',
      });
      await ctx.db.put('messages', message);
      const now = nowIso(ctx);
      await ctx.db.put('leads', { ...lead, followUpAt: null, lastActivityAt: now, updatedAt: now });
      return { messageId: message.id, chatId: threadId, sdrProfileId: sender.id, status: 'queued' as const };
    },
  }),
);

/** Sets doNotContact or blocklisted on the named leads; setting either stops their running sequences. */
async function setFlag(ctx: Ctx, leadIds: readonly string[], flag: 'doNotContact' | 'blocklisted', value: boolean): Promise<{ changed: number; skippedMissing: number }> {
  const ids = [...new Set(leadIds)];
  const found = await ctx.db.getMany('leads', ids);
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
