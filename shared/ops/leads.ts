/** Leads: search, the detail screen, pipeline stage, tag, catch-up date, import, delete, Do Not
 * Contact / blocklist and direct messages (spec: Leads, Lead pipeline). */
import { z } from 'zod';
import { chunk } from '../chunk.ts';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { newActivity, newLead, newMessage } from '../model/factories.ts';
import { CLOSE_REASONS, ENROLLMENT_STATUSES, STAGE_CATEGORIES } from '../model/index.ts';
import type { Enrollment, Lead, LeadGroupColumn, Message, StageCategory } from '../model/index.ts';
import { cleanRow, hasIdentity, isEmailAddress, MAX_FIELD, withCanonicalProfile } from '../intake/clean.ts';
import type { CleanRow } from '../intake/clean.ts';
import { findLeads, keysOf, LeadIndex, linkedTo, otherHolder } from '../intake/find.ts';
import type { IdentityKeys } from '../intake/find.ts';
import { canonicalProfileUrl, emailKey, profileKey } from '../intake/identity.ts';
import { columnKey, columnNameProblem, ensureCustomColumns, findColumn } from '../lead-columns.ts';
import { mutation, opsByName, query } from './define.ts';
import { leadFilterCond, leadPage } from './lead-search.ts';
import { leadCampaigns, leadRecordSchema, leadRowSchema, leadVariables, leadVariableSchema, toLeadRecord, toLeadRows } from './lead-views.ts';
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

/** Puts the named variables of a row on the lead's fields (built-in columns, unless the row set the
 * field directly) or its custom values (by column id). */
function applyVariables(row: CleanRow, columns: ReadonlyMap<string, LeadGroupColumn>): { fields: Partial<Lead>; custom: Record<string, string> } {
  const fields: Partial<Lead> = { ...row.fields };
  const custom: Record<string, string> = {};
  for (const [name, v] of row.variables) {
    const col = columns.get(columnKey(name));
    if (!col || v === '') continue;
    if (col.builtInType !== null) {
      const field = col.builtInType as keyof Lead;
      if (fields[field] === undefined) (fields as Record<string, unknown>)[field] = v;
    } else custom[col.id] = v;
  }
  return { fields, custom };
}


/** Lead fields `campaigns.leads.update` edits (stage, tag and catch-up date have operations of
 * their own, with their rules). */
const EDITABLE_TEXT = [
  'firstName', 'lastName', 'fullName', 'email', 'company', 'jobTitle', 'location', 'phone', 'seniority',
  'socialUrl', 'personalSocialUrl', 'companySocialUrl', 'websiteUrl', 'profilePictureUrl',
] as const;
type EditableText = (typeof EDITABLE_TEXT)[number];
const editText = z.string().trim().max(MAX_FIELD, `must be at most ${MAX_FIELD} characters`).optional();
const updateInput = z.object({
  leadId: uuid,
  ...(Object.fromEntries(EDITABLE_TEXT.map((f) => [f, editText])) as Record<EditableText, typeof editText>),
  leadFitScore: z.number().optional(),
  rankingScore: z.number().optional(),
  /** By column display name (case-insensitive); '' or null clears the value. */
  variables: z.record(z.string(), z.string().max(MAX_FIELD).nullable()).optional(),
  doNotContact: z.boolean().optional(),
  blocklisted: z.boolean().optional(),
  dryRun,
});

export const leadsOps = opsByName(
  query({
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
  }),
  query({
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
  }),
  query({
    name: 'campaigns.leads.get',
    summary: 'One lead with its variables, flags and every enrollment, for the lead detail screen.',
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
  }),
  query({
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
  }),
  mutation({
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
  }),
  mutation({
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
  }),
  mutation({
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
  }),
  mutation({
    name: 'campaigns.leads.create',
    summary:
      'Imports up to 1000 leads into a lead group; duplicates (same social URL, else email) are linked, bad rows reported. variables {name: value} fill the column of that display name (case-insensitive; built-in columns fill the lead field), creating a custom column when the group has none.',
    input: z.object({ leadGroupId: uuid, leads: z.array(importRow).min(1).max(MAX_LEADS_PER_REQUEST) }),
    output: z.object({
      created: z.number().int(),
      duplicates: z.number().int(),
      leadIds: z.array(z.string().nullable()),
      errors: z.array(z.object({ index: z.number().int(), message: z.string() })),
    }),
    async handler(input, ctx) {
      const group = await ctx.db.get('leadGroups', input.leadGroupId);
      if (!group) throw notFound('Lead group', input.leadGroupId);

      // Names of variables no column has yet become custom columns of the group (once, for the batch).
      const cleaned = input.leads.map(cleanRow);
      const names = cleaned.flatMap((c) => (typeof c === 'string' ? [] : c.variables.map(([name]) => name)));
      const columns = names.length > 0 ? await ensureCustomColumns(ctx, group.id, names) : new Map<string, LeadGroupColumn>();
      const rows = cleaned.map((c) => {
        if (typeof c === 'string') return c;
        const { fields, custom } = applyVariables(c, columns);
        return { fields: withCanonicalProfile(fields), custom };
      });

      // The leads the rows are (same profile URL, else email), looked up by those keys only; the
      // batch then adds the leads it creates, so a person given twice is one lead.
      const arrivals = rows.map((r) => (typeof r === 'string' ? {} : r.fields));
      const keys = arrivals.map((a) => keysOf(a));
      const index = new LeadIndex();
      await findLeads(ctx.db, arrivals, keys, index, { nameAndCompany: false });

      const touched = new Map<string, Lead>();
      const leadIds: (string | null)[] = [];
      const errors: { index: number; message: string }[] = [];
      let created = 0;
      let duplicates = 0;
      const now = nowIso(ctx);

      rows.forEach((row, i) => {
        if (typeof row === 'string') {
          errors.push({ index: i, message: row });
          leadIds.push(null);
          return;
        }
        const { fields, custom } = row;
        const found = index.person(keys[i] as IdentityKeys);
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
          const linked = linkedTo(current, group.id);
          if (linked !== current || changed) touched.set(found.id, { ...linked, variables, updatedAt: now });
          duplicates++;
          leadIds.push(found.id);
          return;
        }
        const lead = newLead(stamp(ctx), group.id, { ...fields, variables: custom });
        touched.set(lead.id, lead);
        index.add(lead);
        created++;
        leadIds.push(lead.id);
      });
      for (const lead of touched.values()) await ctx.db.put('leads', lead);
      return { created, duplicates, leadIds, errors };
    },
  }),
  mutation({
    name: 'campaigns.leads.update',
    summary:
      "Edits a lead: any of its profile fields, scores, variables {name: value} (by column display name, case-insensitive; a name none of the lead's groups has becomes a custom column of its own group; '' or null clears), doNotContact and blocklisted (setting either stops its running sequence). Only passed fields change; nothing passed is refused with 422 NO_FIELDS_TO_UPDATE; an email or social URL another lead has is refused with 409 DUPLICATE_LEAD (one person is one lead). dryRun previews.",
    input: updateInput,
    output: leadRecordSchema.extend({
      dryRun: z.boolean(),
      /** The fields whose value changed (variables by column display name). */
      changed: z.array(z.string()),
      ...(Object.fromEntries(EDITABLE_TEXT.map((f) => [f, z.string()])) as Record<EditableText, z.ZodString>),
      leadFitScore: z.number(),
      rankingScore: z.number(),
      doNotContact: z.boolean(),
      blocklisted: z.boolean(),
      variables: z.array(leadVariableSchema),
    }),
    dryRun: true,
    async handler(input, ctx) {
      const { leadId, variables: named, dryRun: _dryRun, ...fields } = input;
      const passed = Object.entries(fields).filter(([, v]) => v !== undefined);
      if (passed.length === 0 && Object.keys(named ?? {}).length === 0) {
        throw new DomainError('NO_FIELDS_TO_UPDATE', 'Pass at least one field to change (a lead field, variables, doNotContact or blocklisted).', { leadId });
      }
      const lead = await liveLead(ctx, leadId);
      const next: Lead = { ...lead, variables: { ...lead.variables } };
      for (const [k, v] of passed) (next as Record<string, unknown>)[k] = v;
      if ((fields.firstName !== undefined || fields.lastName !== undefined) && fields.fullName === undefined) {
        next.fullName = [next.firstName, next.lastName].filter(Boolean).join(' ');
      }

      // Variables: every column of the lead's groups with that name (its own group first); a name
      // none of them has becomes a custom column of the lead's own group.
      const changedVariables: string[] = [];
      if (named && Object.keys(named).length > 0) {
        const groups = await ctx.db.getMany('leadGroups', [...new Set([lead.leadGroupId, ...lead.groupIds])]);
        const missing: string[] = [];
        const targets: { name: string; value: string; columns: LeadGroupColumn[] }[] = [];
        for (const [name, value] of Object.entries(named)) {
          const problem = columnNameProblem(name);
          if (problem) throw new DomainError('INVALID_INPUT', `variables: ${problem}.`, { field: `variables.${name}` });
          const columns = groups.flatMap((g) => {
            const c = findColumn(g, name);
            return c ? [c] : [];
          });
          const v = (value ?? '').trim();
          // Clearing a value no column holds creates nothing.
          if (columns.length === 0 && v !== '') missing.push(name);
          targets.push({ name, value: v, columns });
        }
        const created = missing.length > 0 ? await ensureCustomColumns(ctx, lead.leadGroupId, missing) : new Map<string, LeadGroupColumn>();
        for (const t of targets) {
          const columns = t.columns.length > 0 ? t.columns : [created.get(columnKey(t.name))].flatMap((c) => (c ? [c] : []));
          for (const col of columns) {
            if (col.builtInType !== null) {
              // A field passed directly wins over the same field given as a variable (and is
              // reported under its own name).
              if ((fields as Record<string, unknown>)[col.builtInType] === undefined) (next as Record<string, unknown>)[col.builtInType] = t.value;
              continue;
            }
            if (t.value === '') delete next.variables[col.id];
            else next.variables[col.id] = t.value;
            if ((lead.variables[col.id] ?? '') !== t.value) changedVariables.push(t.name);
          }
        }
      }

      // The profile URL in the spelling every entry stores (the lead's own, when it is the same).
      if (next.socialUrl !== lead.socialUrl && next.socialUrl !== '') next.socialUrl = canonicalProfileUrl(next.socialUrl);
      if (next.email !== '' && !isEmailAddress(next.email)) {
        throw new DomainError('INVALID_INPUT', `email: "${next.email}" is not a valid email address.`, { field: 'email' });
      }
      if (!hasIdentity(next)) {
        throw new DomainError('INVALID_INPUT', 'A lead keeps a name, an email or a social profile URL; this change would leave it with none.', { leadId });
      }
      for (const field of ['email', 'socialUrl'] as const) {
        const key = field === 'email' ? emailKey : profileKey;
        if (next[field] === '' || key(next[field]) === key(lead[field])) continue;
        const other = await otherHolder(ctx.db, field, next[field], lead.id);
        if (other) {
          throw new DomainError('DUPLICATE_LEAD', `${other.fullName || 'Another lead'} already has the ${field === 'email' ? 'email' : 'social URL'} ${next[field]}: one person is one lead in a workspace. Update or delete that lead instead.`, {
            field,
            leadId: lead.id,
            existingLeadId: other.id,
          });
        }
      }

      const changed = [
        ...[...EDITABLE_TEXT, 'leadFitScore', 'rankingScore', 'doNotContact', 'blocklisted'].filter((f) => (lead as Record<string, unknown>)[f] !== (next as Record<string, unknown>)[f]),
        ...new Set(changedVariables),
      ];
      const saved: Lead = changed.length === 0 ? lead : { ...next, updatedAt: nowIso(ctx) };
      if (changed.length > 0) await ctx.db.put('leads', saved);
      if (fields.doNotContact === true) await stopRunningEnrollments(ctx, [lead.id], 'do_not_contact');
      if (fields.blocklisted === true) await stopRunningEnrollments(ctx, [lead.id], 'blocklisted');

      const groups = new Map((await ctx.db.getMany('leadGroups', [...new Set([saved.leadGroupId, ...saved.groupIds])])).map((g) => [g.id, g]));
      return {
        ...toLeadRecord(saved),
        dryRun: ctx.dryRun,
        changed,
        ...(Object.fromEntries(EDITABLE_TEXT.map((f) => [f, saved[f]])) as Record<EditableText, string>),
        leadFitScore: saved.leadFitScore,
        rankingScore: saved.rankingScore,
        doNotContact: saved.doNotContact,
        blocklisted: saved.blocklisted,
        variables: leadVariables(saved, groups),
      };
    },
  }),
  mutation({
    name: 'campaigns.leads.delete',
    summary: 'Deletes leads (soft delete; their running sequences stop). dryRun previews the counts.',
    input: z.object({ leadIds: idList, dryRun }),
    output: z.object({ dryRun: z.boolean(), deleted: z.number().int(), skippedMissing: z.number().int() }),
    dryRun: true,
    async handler(input, ctx) {
      const ids = [...new Set(input.leadIds)];
      const found = await ctx.db.getMany('leads', ids);
      for (const lead of found) await ctx.db.remove('leads', lead.id);
      await stopRunningEnrollments(ctx, found.map((l) => l.id), 'lead_deleted');
      return { dryRun: ctx.dryRun, deleted: found.length, skippedMissing: ids.length - found.length };
    },
  }),
  mutation({
    name: 'campaigns.leads.setDoNotContact',
    summary: 'Marks leads Do Not Contact (their running sequences stop) or clears the mark.',
    input: z.object({ leadIds: idList, doNotContact: z.boolean() }),
    output: z.object({ changed: z.number().int(), skippedMissing: z.number().int() }),
    async handler(input, ctx) {
      return setFlag(ctx, input.leadIds, 'doNotContact', input.doNotContact);
    },
  }),
  mutation({
    name: 'campaigns.leads.setBlocklisted',
    summary: 'Blocklists leads (their running sequences stop) or lifts the blocklist.',
    input: z.object({ leadIds: idList, blocklisted: z.boolean() }),
    output: z.object({ changed: z.number().int(), skippedMissing: z.number().int() }),
    async handler(input, ctx) {
      return setFlag(ctx, input.leadIds, 'blocklisted', input.blocklisted);
    },
  }),
  mutation({
    name: 'campaigns.leads.sendMessage',
    summary: 'Queues a direct message to a lead through the sender already on the conversation. Irreversible once delivered.',
    input: z.object({ leadId: uuid, text: z.string().trim().min(1, 'must not be empty').max(8000), chatId: z.string().trim().min(1).max(100).optional() }),
    output: z.object({ messageId: z.string(), chatId: z.string(), sdrProfileId: z.string(), status: z.enum(['sent', 'queued']) }),
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
        throw new DomainError('INVALID_INPUT', 'The sender of this conversation no longer exists, so the message cannot be sent; write from another sender.', { sdrProfileId });
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
