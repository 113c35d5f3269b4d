/** Campaigns: listing, creation, running state, schedule, senders, lead picking, merge fields and
 * metrics. Sequence steps are in shared/ops/sequence.ts; the invariants are in shared/rules. */
import { DateTime } from 'luxon';
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { campaignMetrics, responseMetrics } from '../metrics.ts';
import { DAYS } from '../model/index.ts';
import type { Campaign, LeadGroup, LeadGroupColumn, LeadPicking, Schedule, Sender } from '../model/index.ts';
import { newCampaign, newLeadGroup } from '../model/factories.ts';
import { addCustomColumn, columnNameProblem, findColumn, MAX_COLUMN_NAME, removeCustomColumn } from '../lead-columns.ts';
import { loadReadiness, scheduleProblems, senderStepProblems } from '../rules/readiness.ts';
import { labelCountsOut } from '../replies/label-counts.ts';
import { describeStep, walk } from '../sequence.ts';
import { mutation, opsByName, query } from './define.ts';
import { DEFAULT_PAGE_SIZE, dryRun, qInt, qList, uuid } from './params.ts';

// ---------------------------------------------------------------------------------------------
// Shared pieces (also used by shared/ops/sequence.ts)

/** The campaign, or NOT_FOUND (ids of other workspaces included). */
export async function loadCampaign(ctx: Ctx, campaignId: string): Promise<Campaign> {
  const c = await ctx.db.get('campaigns', campaignId);
  if (!c) throw notFound('Campaign', campaignId);
  return c;
}

export async function loadGroup(ctx: Ctx, leadGroupId: string): Promise<LeadGroup> {
  const g = await ctx.db.get('leadGroups', leadGroupId);
  if (!g) throw notFound('Lead group', leadGroupId);
  return g;
}

export const basicCampaignOut = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  sequenceId: z.string(),
  leadGroupId: z.string(),
  workspaceId: z.string(),
  config: z.record(z.string(), z.unknown()).nullable(),
  webcamVideoName: z.string(),
  backgroundVideoName: z.string(),
  hasActiveSequence: z.boolean(),
});

export const basicCampaign = (c: Campaign): z.input<typeof basicCampaignOut> => ({
  id: c.id, name: c.name, createdAt: c.createdAt, updatedAt: c.updatedAt, sequenceId: c.sequenceId, leadGroupId: c.leadGroupId,
  workspaceId: c.workspaceId, config: c.config, webcamVideoName: c.webcamVideoName, backgroundVideoName: c.backgroundVideoName,
  hasActiveSequence: c.running,
});

const dayWindowOut = z.object({ enabled: z.boolean(), start: z.string(), end: z.string() });
const scheduleOut = z.object({
  timeZone: z.string(),
  utcOffsetMinutes: z.number(),
  days: z.object(Object.fromEntries(DAYS.map((d) => [d, dayWindowOut])) as Record<(typeof DAYS)[number], typeof dayWindowOut>),
});
const settingsOut = z.object({
  preferNewLeads: z.boolean(),
  companyRelay: z.object({ enabled: z.boolean(), maxPersonsPerCompany: z.number(), seniorities: z.array(z.string()) }),
});
export const senderSummaryOut = z.object({ sdrProfileId: z.string(), name: z.string(), status: z.string() });
const campaignSenderOut = senderSummaryOut.extend({ paused: z.boolean() });

/** The schedule as the API shows it: with the zone's current offset from UTC. */
export function scheduleWithOffset(schedule: Schedule, at: Date): z.input<typeof scheduleOut> {
  const zoned = DateTime.fromJSDate(at).setZone(schedule.timeZone);
  return { timeZone: schedule.timeZone, utcOffsetMinutes: zoned.isValid ? zoned.offset : 0, days: structuredClone(schedule.days) };
}

export const senderSummary = (id: string, sender: Sender | undefined): z.input<typeof senderSummaryOut> =>
  sender ? { sdrProfileId: id, name: sender.name, status: sender.status } : { sdrProfileId: id, name: 'Removed sender', status: 'disconnected' };

async function sendersById(ctx: Ctx, ids: readonly string[]): Promise<Map<string, Sender>> {
  return new Map((await ctx.db.getMany('senders', ids)).map((s) => [s.id, s]));
}

async function campaignSenders(ctx: Ctx, c: Campaign): Promise<z.input<typeof campaignSenderOut>[]> {
  const docs = await sendersById(ctx, c.senders.map((s) => s.sdrProfileId));
  return c.senders.map((s) => ({ ...senderSummary(s.sdrProfileId, docs.get(s.sdrProfileId)), paused: s.paused }));
}

const touched = <T extends { updatedAt: string }>(doc: T, ctx: Ctx): T => ({ ...doc, updatedAt: nowIso(ctx) });

const HH_MM = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;
const HH_MM_END = /^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$/;

const columnOut = z.object({ variableTypeId: z.string(), name: z.string(), kind: z.enum(['builtIn', 'custom']), builtInType: z.string().nullable() });
const columnView = (c: LeadGroupColumn): z.input<typeof columnOut> => ({
  variableTypeId: c.id, name: c.name, kind: c.builtInType ? 'builtIn' : 'custom', builtInType: c.builtInType,
});

// ---------------------------------------------------------------------------------------------
// Listing

const SORT_COLUMNS = ['createdAt', 'updatedAt', 'name', 'hasSequence', 'replyRate', 'meetingsBooked'] as const;
type SortColumn = (typeof SORT_COLUMNS)[number];

const metricsOut = z.object({
  campaignId: z.string(),
  enrolled: z.number(),
  inProgress: z.number(),
  completed: z.number(),
  messagesSent: z.number(),
  connectionRequestsSent: z.number(),
  connectionsAccepted: z.number(),
  replies: z.number(),
  replyRate: z.number(),
  meetingsBooked: z.number(),
  /** Distinct leads whose email bounced hard on an email of the campaign. */
  bounces: z.number(),
  /** Leads whose reply is labelled interested (confirmed, else suggested), and their share of replies. */
  positiveReplies: z.number(),
  positiveReplyRate: z.number(),
  /** Replying leads per label (a lead's latest confirmed label, else its latest suggestion). */
  replyLabels: labelCountsOut,
  /** Replying leads whose label a person confirmed in the inbox. */
  replyLabelsConfirmed: z.number(),
});

const listOps = [
  query({
    name: 'campaigns.getBasic',
    summary: 'Lists campaigns, newest first by default, one page at a time (pageNumber from 1).',
    input: z.object({
      pageSize: qInt(1, 200).optional(),
      pageNumber: qInt(1, 1_000_000).optional(),
      sortBy: z.enum(SORT_COLUMNS).optional(),
      sortOrder: z.enum(['asc', 'desc']).optional(),
      search: z.string().trim().max(200).optional(),
    }),
    output: z.object({
      totalCount: z.number(),
      basicCampaigns: z.array(basicCampaignOut),
      nextCursor: z.object({ id: z.string(), sortColumnValue: z.string() }).nullable(),
    }),
    async handler(input, ctx) {
      const pageSize = input.pageSize ?? DEFAULT_PAGE_SIZE;
      const pageNumber = input.pageNumber ?? 1;
      const sortBy: SortColumn = input.sortBy ?? 'createdAt';
      const dir = input.sortOrder ?? (sortBy === 'name' ? 'asc' : 'desc');
      const { docs } = await ctx.db.query('campaigns', input.search ? { where: { op: 'contains', fields: ['name'], value: input.search } } : {});
      const metrics = sortBy === 'replyRate' || sortBy === 'meetingsBooked' ? await responseMetrics(ctx.db, docs.map((c) => c.id)) : null;
      const value = (c: Campaign): string | number => {
        switch (sortBy) {
          case 'createdAt':
            return c.createdAt;
          case 'updatedAt':
            return c.updatedAt;
          case 'name':
            return c.name.toLocaleLowerCase();
          case 'hasSequence':
            return c.steps.length > 0 ? 1 : 0;
          case 'replyRate':
            return metrics?.get(c.id)?.replyRate ?? 0;
          case 'meetingsBooked':
            return metrics?.get(c.id)?.meetingsBooked ?? 0;
        }
      };
      const cmp = (a: string | number, b: string | number): number => (a < b ? -1 : a > b ? 1 : 0);
      const sorted = docs
        .map((c) => ({ c, v: value(c) }))
        .sort((a, b) => {
          const primary = cmp(a.v, b.v);
          if (primary !== 0) return dir === 'asc' ? primary : -primary;
          // Ties: newest first, then by id, so pages are stable.
          return -cmp(a.c.createdAt, b.c.createdAt) || cmp(a.c.id, b.c.id);
        });
      const start = (pageNumber - 1) * pageSize;
      const page = sorted.slice(start, start + pageSize);
      const last = page[page.length - 1];
      return {
        totalCount: sorted.length,
        basicCampaigns: page.map(({ c }) => basicCampaign(c)),
        nextCursor: last && start + pageSize < sorted.length ? { id: last.c.id, sortColumnValue: String(last.v) } : null,
      };
    },
  }),
  query({
    name: 'campaigns.getActiveIds',
    summary: 'The id of every campaign whose sequence is currently running.',
    input: z.object({}),
    output: z.object({ campaignIds: z.array(z.string()) }),
    async handler(_input, ctx) {
      const { docs } = await ctx.db.query('campaigns', { where: { op: 'eq', field: 'running', value: true }, orderBy: [{ field: 'createdAt', dir: 'desc' }] });
      return { campaignIds: docs.map((c) => c.id) };
    },
  }),
  query({
    name: 'campaigns.getMetrics',
    summary: 'Delivery and reply performance of up to 100 campaigns in one batch; unknown ids are listed in notFound.',
    input: z.object({ campaignIds: qList(uuid).pipe(z.array(z.string()).min(1, 'give at least one campaign id').max(100, 'at most 100 campaign ids')) }),
    output: z.object({ metrics: z.array(metricsOut), notFound: z.array(z.string()) }),
    async handler(input, ctx) {
      const ids = [...new Set(input.campaignIds)];
      const found = new Set((await ctx.db.getMany('campaigns', ids)).map((c) => c.id));
      const known = ids.filter((id) => found.has(id));
      return { metrics: await campaignMetrics(ctx.db, known), notFound: ids.filter((id) => !found.has(id)) };
    },
  }),
] as const;

// ---------------------------------------------------------------------------------------------
// Creation, reading, running state

const campaignDetailOut = basicCampaignOut.extend({
  running: z.boolean(),
  startedAt: z.string().nullable(),
  schedule: scheduleOut,
  settings: settingsOut,
  senders: z.array(campaignSenderOut),
  stepCount: z.number(),
});

const problemOut = z.object({
  severity: z.enum(['error', 'warning']),
  message: z.string(),
  stepId: z.string().optional(),
  sdrProfileId: z.string().optional(),
});

const lifecycleOps = [
  mutation({
    name: 'campaigns.create',
    summary: 'Creates a paused campaign with the default schedule and settings, no senders and no steps; without leadGroupId it gets a new lead group with the built-in columns.',
    input: z.object({ name: z.string().trim().min(1).max(200), leadGroupId: uuid.optional() }),
    output: basicCampaignOut,
    async handler(input, ctx) {
      const now = nowIso(ctx);
      const workspaceId = ctx.actor.workspaceId;
      let leadGroupId = input.leadGroupId;
      if (leadGroupId) await loadGroup(ctx, leadGroupId);
      else {
        const group = newLeadGroup({ id: ctx.ids.uuid(), workspaceId, now }, input.name, () => ctx.ids.uuid());
        await ctx.db.put('leadGroups', group);
        leadGroupId = group.id;
      }
      const campaign = newCampaign({ id: ctx.ids.uuid(), workspaceId, now }, input.name, leadGroupId, ctx.ids.uuid());
      await ctx.db.put('campaigns', campaign);
      return basicCampaign(campaign);
    },
  }),
  query({
    name: 'campaigns.get',
    summary: 'A campaign with its running state, schedule, lead-picking settings, senders and step count.',
    input: z.object({ campaignId: uuid }),
    output: campaignDetailOut,
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      return {
        ...basicCampaign(c),
        running: c.running,
        startedAt: c.startedAt,
        schedule: scheduleWithOffset(c.schedule, ctx.clock.now()),
        settings: c.settings,
        senders: await campaignSenders(ctx, c),
        stepCount: c.steps.length,
      };
    },
  }),
  mutation({
    name: 'campaigns.start',
    summary: 'Starts a paused campaign: needs owner or admin, an active subscription and a sequence that passes the readiness checks. Messaging of real people begins.',
    input: z.object({ campaignId: uuid }),
    output: z.object({ campaignId: z.string(), running: z.boolean(), startedAt: z.string().nullable(), problems: z.array(problemOut) }),
    permission: 'campaigns.launch',
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const { problems } = await loadReadiness(ctx.db, c);
      if (c.running) return { campaignId: c.id, running: true, startedAt: c.startedAt, problems };
      const now = nowIso(ctx);
      // The campaign rules refuse the start (permission, subscription, readiness) on this write.
      await ctx.db.put('campaigns', { ...c, running: true, startedAt: now, updatedAt: now });
      return { campaignId: c.id, running: true, startedAt: now, problems };
    },
  }),
  mutation({
    name: 'campaigns.pause',
    summary: 'Pauses a campaign (always allowed); its leads wait where they are.',
    input: z.object({ campaignId: uuid }),
    output: z.object({ campaignId: z.string(), running: z.boolean() }),
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      if (c.running) await ctx.db.put('campaigns', touched({ ...c, running: false }, ctx));
      return { campaignId: c.id, running: false };
    },
  }),
] as const;

// ---------------------------------------------------------------------------------------------
// Lead group columns (merge fields)

const columnOps = [
  query({
    name: 'campaigns.getMergeFields',
    summary: "The personalization variables a campaign's messages may use: the columns of its lead group, written {{Display Name|fallback}}.",
    input: z.object({ campaignId: uuid }),
    output: z.object({ mergeFields: z.array(z.object({ name: z.string(), kind: z.enum(['builtIn', 'custom']), variableTypeId: z.string() })) }),
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const group = await loadGroup(ctx, c.leadGroupId);
      return { mergeFields: group.columns.map((col) => { const v = columnView(col); return { name: v.name, kind: v.kind, variableTypeId: v.variableTypeId }; }) };
    },
  }),
  mutation({
    name: 'campaigns.renameColumn',
    summary: "Renames a column of the campaign's lead table; refused while a step's message uses the column as a merge field.",
    input: z.object({ campaignId: uuid, variableTypeId: uuid, name: z.string().trim().min(1).max(100) }),
    output: z.object({ campaignId: z.string(), leadGroupId: z.string(), column: columnOut }),
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const group = await loadGroup(ctx, c.leadGroupId);
      const column = group.columns.find((col) => col.id === input.variableTypeId);
      if (!column) throw notFound('Column', input.variableTypeId);
      const clash = findColumn(group, input.name);
      if (clash && clash.id !== column.id) {
        throw new DomainError('INVALID_INPUT', `The lead group already has a column named "${clash.name}".`, { field: 'name' });
      }
      const problem = columnNameProblem(input.name);
      if (problem) throw new DomainError('INVALID_INPUT', `name: ${problem}.`, { field: 'name' });
      const renamed = { ...column, name: input.name };
      if (column.name !== input.name) {
        // The lead-group rules refuse the rename when a step uses the old name (COLUMN_IN_USE).
        await ctx.db.put('leadGroups', touched({ ...group, columns: group.columns.map((col) => (col.id === column.id ? renamed : col)) }, ctx));
      }
      return { campaignId: c.id, leadGroupId: group.id, column: columnView(renamed) };
    },
  }),
  mutation({
    name: 'campaigns.addColumn',
    summary:
      "Adds a custom column (a merge field) to the campaign's lead group and returns it (variableTypeId = the column id). A name the group already has, compared case-insensitively (built-in columns included), is refused with 400 INVALID_INPUT and details.existing naming that column.",
    input: z.object({ campaignId: uuid, name: z.string().trim().min(1).max(MAX_COLUMN_NAME) }),
    output: z.object({ campaignId: z.string(), leadGroupId: z.string(), column: columnOut }),
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const column = await addCustomColumn(ctx, c.leadGroupId, input.name);
      return { campaignId: c.id, leadGroupId: c.leadGroupId, column: columnView(column) };
    },
  }),
  mutation({
    name: 'campaigns.removeColumn',
    summary:
      "Removes a custom column from the campaign's lead group and its values from the group's leads; refused with 422 COLUMN_IN_USE while a step's message uses it as a merge field. Built-in columns cannot be removed.",
    input: z.object({ campaignId: uuid, variableTypeId: uuid }),
    output: z.object({ campaignId: z.string(), leadGroupId: z.string(), column: columnOut, clearedValues: z.number().int() }),
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      // The lead-group rules refuse the removal while a step uses the column (COLUMN_IN_USE).
      const { column, clearedValues } = await removeCustomColumn(ctx, c.leadGroupId, input.variableTypeId);
      return { campaignId: c.id, leadGroupId: c.leadGroupId, column: columnView(column), clearedValues };
    },
  }),
] as const;

// ---------------------------------------------------------------------------------------------
// Senders

const senderOps = [
  query({
    name: 'campaigns.listSenders',
    summary: "Lists a campaign's senders (sender ids for updateSenders) with whether each is paused on it.",
    input: z.object({ campaignId: uuid }),
    output: z.object({ senders: z.array(campaignSenderOut) }),
    async handler(input, ctx) {
      return { senders: await campaignSenders(ctx, await loadCampaign(ctx, input.campaignId)) };
    },
  }),
  mutation({
    name: 'campaigns.setSendersPaused',
    summary: 'Pauses or resumes senders on one campaign; their leads stay assigned and wait. Senders not on the campaign are reported and ignored.',
    input: z.object({ campaignId: uuid, sdrProfileIds: z.array(uuid).min(1).max(100), paused: z.boolean(), dryRun }),
    output: z.object({ dryRun: z.boolean(), campaignId: z.string(), changed: z.array(z.string()), alreadyInState: z.array(z.string()), notOnCampaign: z.array(z.string()) }),
    dryRun: true,
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const ids = [...new Set(input.sdrProfileIds)];
      const onCampaign = new Map(c.senders.map((s) => [s.sdrProfileId, s]));
      const changed = ids.filter((id) => onCampaign.has(id) && onCampaign.get(id)?.paused !== input.paused);
      const alreadyInState = ids.filter((id) => onCampaign.get(id)?.paused === input.paused);
      const notOnCampaign = ids.filter((id) => !onCampaign.has(id));
      if (changed.length > 0) {
        const flip = new Set(changed);
        await ctx.db.put('campaigns', touched({ ...c, senders: c.senders.map((s) => (flip.has(s.sdrProfileId) ? { ...s, paused: input.paused } : s)) }, ctx));
      }
      return { dryRun: ctx.dryRun, campaignId: c.id, changed, alreadyInState, notOnCampaign };
    },
  }),
  mutation({
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
  }),
] as const;

// ---------------------------------------------------------------------------------------------
// Schedule and lead picking

const dayPatch = z.strictObject({
  enabled: z.boolean().optional(),
  start: z.string().regex(HH_MM, 'must be HH:MM (24-hour)').optional(),
  end: z.string().regex(HH_MM_END, 'must be HH:MM (24-hour; 24:00 for midnight)').optional(),
});

const settingsOps = [
  mutation({
    name: 'campaigns.updateSchedule',
    summary:
      "Changes a campaign's sending schedule: time zone and per-day windows (only passed values change). Each enabled day's start must be before its end and at least one day stays on. Allowed while running; applies from the next send.",
    input: z.object({
      campaignId: uuid,
      dryRun,
      timeZone: z.string().trim().min(1).max(64).optional(),
      days: z.strictObject(Object.fromEntries(DAYS.map((d) => [d, dayPatch.optional()])) as Record<(typeof DAYS)[number], z.ZodOptional<typeof dayPatch>>).optional(),
    }),
    output: z.object({
      dryRun: z.boolean(),
      campaignId: z.string(),
      campaignName: z.string(),
      running: z.boolean(),
      changed: z.boolean(),
      before: scheduleOut,
      after: scheduleOut,
    }),
    dryRun: true,
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const after: Schedule = structuredClone(c.schedule);
      if (input.timeZone !== undefined) after.timeZone = input.timeZone;
      for (const day of DAYS) {
        const patch = input.days?.[day];
        const cur = after.days[day];
        if (patch) after.days[day] = { enabled: patch.enabled ?? cur.enabled, start: patch.start ?? cur.start, end: patch.end ?? cur.end };
      }
      const changed = JSON.stringify(after) !== JSON.stringify(c.schedule);
      if (changed) {
        const problems = scheduleProblems(after);
        const first = problems[0];
        if (first) {
          throw new DomainError('INVALID_SCHEDULE', `The sending schedule is not valid: ${first.message}.`, {
            campaignId: c.id,
            day: first.day,
            problems,
          });
        }
        await ctx.db.put('campaigns', touched({ ...c, schedule: after }, ctx));
      }
      const at = ctx.clock.now();
      return {
        dryRun: ctx.dryRun,
        campaignId: c.id,
        campaignName: c.name,
        running: c.running,
        changed,
        before: scheduleWithOffset(c.schedule, at),
        after: scheduleWithOffset(after, at),
      };
    },
  }),
  mutation({
    name: 'campaigns.updateSettings',
    summary:
      'Changes how a campaign picks leads: preferNewLeads (newest leads first) and company relay (try a colleague at the same company when someone does not answer, up to maxPersonsPerCompany, optionally only given seniorities). Only passed values change; allowed while running.',
    input: z.object({
      campaignId: uuid,
      dryRun,
      preferNewLeads: z.boolean().optional(),
      companyRelay: z
        .object({
          enabled: z.boolean().optional(),
          maxPersonsPerCompany: z.number().int().min(1).max(50).optional(),
          seniorities: z.array(z.string().trim().min(1).max(50)).max(20).optional(),
        })
        .optional(),
    }),
    output: z.object({
      dryRun: z.boolean(),
      campaignId: z.string(),
      campaignName: z.string(),
      running: z.boolean(),
      changed: z.boolean(),
      before: settingsOut,
      after: settingsOut,
    }),
    dryRun: true,
    async handler(input, ctx) {
      const c = await loadCampaign(ctx, input.campaignId);
      const relay = input.companyRelay ?? {};
      const after: LeadPicking = {
        preferNewLeads: input.preferNewLeads ?? c.settings.preferNewLeads,
        companyRelay: {
          enabled: relay.enabled ?? c.settings.companyRelay.enabled,
          maxPersonsPerCompany: relay.maxPersonsPerCompany ?? c.settings.companyRelay.maxPersonsPerCompany,
          seniorities: relay.seniorities ? [...new Set(relay.seniorities)] : c.settings.companyRelay.seniorities,
        },
      };
      const changed = JSON.stringify(after) !== JSON.stringify(c.settings);
      if (changed) await ctx.db.put('campaigns', touched({ ...c, settings: after }, ctx));
      return { dryRun: ctx.dryRun, campaignId: c.id, campaignName: c.name, running: c.running, changed, before: c.settings, after };
    },
  }),
] as const;

export const campaignsOps = opsByName(...listOps, ...lifecycleOps, ...columnOps, ...senderOps, ...settingsOps);
