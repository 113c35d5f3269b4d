/** Campaigns: active ids and metrics, creation, running state, merge-field columns, senders, lead
 * picking and the sequence (reading it, editing and removing steps). Operations with more to them
 * have a file of their own, named after them (campaigns.getBasic.ts, campaigns.updateSenders.ts,
 * ...); what they share is in campaign-views.ts and sequence-edits.ts; the invariants are in
 * shared/rules. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { addCustomColumn, columnNameProblem, findColumn, MAX_COLUMN_NAME, removeCustomColumn } from '../lead-columns.ts';
import { campaignMetrics } from '../metrics.ts';
import { newCampaign, newLeadGroup } from '../model/factories.ts';
import type { LeadGroupColumn, LeadPicking } from '../model/index.ts';
import { labelCountsOut } from '../replies/label-counts.ts';
import { loadReadiness } from '../rules/readiness.ts';
import { removeStep } from '../sequence.ts';
import { basicCampaign, basicCampaignOut, campaignSenderOut, campaignSenders, loadCampaign, loadGroup, scheduleOut, scheduleWithOffset, settingChangeOut, settingsOut, touched } from './campaign-views.ts';
import { mutation, opsByName, query } from './define.ts';
import { dryRun, qList, uuid } from './params.ts';
import { assertPaused, findStep, sequenceSummary, stepFields, stepPatch, summaryOut, withSteps } from './sequence-edits.ts';

const columnOut = z.object({ variableTypeId: z.string(), name: z.string(), kind: z.enum(['builtIn', 'custom']), builtInType: z.string().nullable() });
const columnView = (c: LeadGroupColumn): z.input<typeof columnOut> => ({
  variableTypeId: c.id, name: c.name, kind: c.builtInType ? 'builtIn' : 'custom', builtInType: c.builtInType,
});

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

const getActiveIds = query({
  name: 'campaigns.getActiveIds',
  summary: 'The id of every campaign whose sequence is currently running.',
  input: z.object({}),
  output: z.object({ campaignIds: z.array(z.string()) }),
  async handler(_input, ctx) {
    const { docs } = await ctx.db.query('campaigns', { where: { op: 'eq', field: 'running', value: true }, orderBy: [{ field: 'createdAt', dir: 'desc' }] });
    return { campaignIds: docs.map((c) => c.id) };
  },
});

const getMetrics = query({
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
});

const create = mutation({
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
});

const get = query({
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
});

const start = mutation({
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
});

const pause = mutation({
  name: 'campaigns.pause',
  summary: 'Pauses a campaign (always allowed); its leads wait where they are.',
  input: z.object({ campaignId: uuid }),
  output: z.object({ campaignId: z.string(), running: z.boolean() }),
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    if (c.running) await ctx.db.put('campaigns', touched({ ...c, running: false }, ctx));
    return { campaignId: c.id, running: false };
  },
});

const getMergeFields = query({
  name: 'campaigns.getMergeFields',
  summary: "The personalization variables a campaign's messages may use: the columns of its lead group, written {{Display Name|fallback}}.",
  input: z.object({ campaignId: uuid }),
  output: z.object({ mergeFields: z.array(z.object({ name: z.string(), kind: z.enum(['builtIn', 'custom']), variableTypeId: z.string() })) }),
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    const group = await loadGroup(ctx, c.leadGroupId);
    return { mergeFields: group.columns.map((col) => { const v = columnView(col); return { name: v.name, kind: v.kind, variableTypeId: v.variableTypeId }; }) };
  },
});

const renameColumn = mutation({
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
});

const addColumn = mutation({
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
});

const removeColumn = mutation({
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
});

const listSenders = query({
  name: 'campaigns.listSenders',
  summary: "Lists a campaign's senders (sender ids for updateSenders) with whether each is paused on it.",
  input: z.object({ campaignId: uuid }),
  output: z.object({ senders: z.array(campaignSenderOut) }),
  async handler(input, ctx) {
    return { senders: await campaignSenders(ctx, await loadCampaign(ctx, input.campaignId)) };
  },
});

const setSendersPaused = mutation({
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
});

const updateSettings = mutation({
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
  output: settingChangeOut(settingsOut),
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
});

const getSequence = query({
  name: 'campaigns.getSequence',
  summary: "Reads a campaign's sequence: steps in position order with their ids, and whether it is ready to run.",
  input: z.object({ campaignId: uuid }),
  output: summaryOut,
  async handler(input, ctx) {
    return sequenceSummary(ctx, await loadCampaign(ctx, input.campaignId));
  },
});

const editSequenceStep = mutation({
  name: 'campaigns.editSequenceStep',
  summary:
    "Edits a step of a paused campaign: text or subject, a wait's length, the send condition, email threading, voice note, stopIfSkipped. Only passed values change (variants are edited with updateSequenceMessage); validated like a new step.",
  input: z.object({ campaignId: uuid, stepId: uuid, ...stepFields }),
  output: summaryOut,
  async handler(input, ctx) {
    const patch = stepPatch(input);
    if (Object.keys(patch).length === 0) {
      throw new DomainError('NO_FIELDS_TO_UPDATE', 'Give at least one field to change: content, subject, waitTimeSeconds, sendCondition, emailThreading, voiceNote or stopIfSkipped.');
    }
    const c = await loadCampaign(ctx, input.campaignId);
    assertPaused(c, 'editing a step');
    findStep(c, input.stepId);
    const next = withSteps(c, ctx, c.steps.map((s) => (s.id === input.stepId ? { ...s, ...patch } : s)));
    await ctx.db.put('campaigns', next);
    return sequenceSummary(ctx, next);
  },
});

const removeSequenceStep = mutation({
  name: 'campaigns.removeSequenceStep',
  summary:
    'Removes a step of a paused campaign and joins its neighbours. The only step of a condition path cannot be removed until another takes its place. Conditions are removed only in the app (removeBranches: true removes the condition and both of its paths). Leads waiting on a removed step continue with the step that takes its place, or finish when none does.',
  input: z.object({ campaignId: uuid, stepId: uuid, removeBranches: z.boolean().optional() }),
  output: summaryOut,
  async handler(input, ctx) {
    const c = await loadCampaign(ctx, input.campaignId);
    assertPaused(c, 'removing a step');
    findStep(c, input.stepId);
    const removal = removeStep(c.steps, input.stepId, { removeBranches: input.removeBranches === true });
    const next = withSteps(c, ctx, removal.steps);
    await ctx.db.put('campaigns', next);

    const now = nowIso(ctx);
    const { docs } = await ctx.db.query('enrollments', {
      where: {
        op: 'and',
        conds: [
          { op: 'eq', field: 'campaignId', value: c.id },
          { op: 'in', field: 'status', values: ['IN_PROGRESS', 'PAUSED'] },
          { op: 'in', field: 'currentStepId', values: [...removal.removedIds] },
        ],
      },
    });
    for (const e of docs) {
      if (removal.successor) await ctx.db.put('enrollments', { ...e, currentStepId: removal.successor.id, updatedAt: now });
      else await ctx.db.put('enrollments', { ...e, currentStepId: null, status: 'COMPLETED', completedAt: now, nextActionAt: null, updatedAt: now });
    }
    return sequenceSummary(ctx, next);
  },
});

export const ops = opsByName(getActiveIds, getMetrics, create, get, start, pause, getMergeFields, renameColumn, addColumn, removeColumn, listSenders, setSendersPaused, updateSettings, getSequence, editSequenceStep, removeSequenceStep);
