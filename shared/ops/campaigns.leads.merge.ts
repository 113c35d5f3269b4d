/** campaigns.leads.merge: one person's two leads become one. The survivor takes the merged lead's
 * data (lead-merge.ts says the rule of each field), its notes, tasks, timeline, messages and
 * enrollments; the merged lead becomes a tombstone naming the survivor (mergedIntoId), which
 * searches leave out and operations answer NOT_FOUND for, with details.mergedIntoId. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { DomainError } from '../errors.ts';
import { newActivity } from '../model/factories.ts';
import { ENROLLMENT_STATUSES } from '../model/index.ts';
import type { Enrollment, Lead } from '../model/index.ts';
import { liveLead, stamp, stopRunningEnrollments } from './campaigns.leads.ts';
import { mergeRecord } from '../rules/merge.ts';
import { mutation, opsByName } from './define.ts';
import { allOfLead, mergedLead, mergeUndoSchema, refuseTooLarge, snapshotOf } from './lead-merge.ts';
import type { MergeUndo } from './lead-merge.ts';
import { leadName } from './lead-views.ts';
import { dryRun, uuid } from './params.ts';

const ENROLLMENT_ACTIONS = ['moved', 'stopped_and_moved', 'kept_on_merged', 'stopped_kept_on_merged', 'stopped_do_not_contact'] as const;

const mergedLeadOut = z.object({
  id: z.string(),
  leadGroupId: z.string(),
  groupIds: z.array(z.string()),
  tagId: z.string().nullable(),
  pipelineStageId: z.string().nullable(),
  closeReason: z.string().nullable(),
  followUpAt: z.string().nullable(),
  firstName: z.string(),
  lastName: z.string(),
  fullName: z.string(),
  email: z.string(),
  company: z.string(),
  jobTitle: z.string(),
  location: z.string(),
  phone: z.string(),
  socialUrl: z.string(),
  variables: z.record(z.string(), z.string()),
  doNotContact: z.boolean(),
  blocklisted: z.boolean(),
  unsubscribedAt: z.string().nullable(),
});

const toMergedOut = (l: Lead): z.output<typeof mergedLeadOut> => ({
  id: l.id, leadGroupId: l.leadGroupId, groupIds: l.groupIds, tagId: l.tagId, pipelineStageId: l.pipelineStageId, closeReason: l.closeReason,
  followUpAt: l.followUpAt, firstName: l.firstName, lastName: l.lastName, fullName: l.fullName, email: l.email, company: l.company,
  jobTitle: l.jobTitle, location: l.location, phone: l.phone, socialUrl: l.socialUrl, variables: l.variables, doNotContact: l.doNotContact,
  blocklisted: l.blocklisted, unsubscribedAt: l.unsubscribedAt ?? null,
});

export const mergeOutput = z.object({
  dryRun: z.boolean(),
  survivorId: z.string(),
  mergedId: z.string(),
  /** The survivor as it is after the merge. */
  lead: mergedLeadOut,
  /** Each of the two leads as it was, for a side-by-side view. */
  survivorBefore: mergedLeadOut,
  mergedBefore: mergedLeadOut,
  /** Text fields and scores where the two leads differ: which value the survivor keeps. */
  fields: z.array(z.object({ field: z.string(), survivor: z.string(), merged: z.string(), result: z.string(), from: z.enum(['survivor', 'merged']) })),
  /** Custom columns (variable type ids) filled from the merged lead. */
  variablesFilled: z.array(z.string()),
  /** Lead lists the survivor joins. */
  groupsJoined: z.array(z.string()),
  tag: z.object({ survivor: z.string().nullable(), merged: z.string().nullable(), result: z.string().nullable() }),
  stage: z.object({ survivor: z.string().nullable(), merged: z.string().nullable(), result: z.string().nullable(), from: z.enum(['survivor', 'merged']) }),
  moved: z.object({ notes: z.number().int(), tasks: z.number().int(), events: z.number().int(), messages: z.number().int(), enrollments: z.number().int() }),
  enrollments: z.array(z.object({
    id: z.string(),
    campaignId: z.string(),
    campaignName: z.string(),
    /** Whose enrollment it was before the merge. */
    of: z.enum(['survivor', 'merged']),
    status: z.enum(ENROLLMENT_STATUSES),
    statusAfter: z.enum(ENROLLMENT_STATUSES),
    action: z.enum(ENROLLMENT_ACTIONS),
  })),
  /** What campaigns.leads.unmerge takes to undo this merge. */
  undo: mergeUndoSchema,
});

const merge = mutation({
  name: 'campaigns.leads.merge',
  summary:
    "Merges lead mergedId into lead survivorId (one person): the survivor keeps its non-empty fields and custom columns and fills its empty ones, joins every lead list either was in, keeps the stage further along the pipeline and its tag (else the merged one's), takes every note, task, timeline event, message and enrollment (if both run a sequence, the merged lead's stops with reason merged; where both are enrolled in one campaign the merged lead's enrollment stays with it, stopped), and keeps Do Not Contact, blocklist and unsubscription if either had them. The merged lead becomes a tombstone: searches leave it out and operations naming it answer 404 NOT_FOUND with details.mergedIntoId. Raises lead.merged (its undo, campaigns.leads.unmerge, raises lead.unmerged). dryRun shows the same answer and changes nothing; the answer's undo is what campaigns.leads.unmerge takes.",
  input: z.object({ survivorId: uuid, mergedId: uuid, dryRun }),
  output: mergeOutput,
  dryRun: true,
  async handler(input, ctx) {
    if (input.survivorId === input.mergedId) {
      throw new DomainError('INVALID_INPUT', 'A lead cannot be merged into itself: pick two different leads.', { field: 'mergedId', survivorId: input.survivorId });
    }
    const s = await liveLead(ctx, input.survivorId);
    const m = await liveLead(ctx, input.mergedId);
    const now = nowIso(ctx);

    const [activities, messages, mEnrollments, sEnrollments] = await Promise.all([
      allOfLead(ctx, 'activities', m.id),
      allOfLead(ctx, 'messages', m.id),
      allOfLead(ctx, 'enrollments', m.id),
      allOfLead(ctx, 'enrollments', s.id),
    ]);
    refuseTooLarge(activities.length + messages.length + mEnrollments.length, m);

    const stageIds = [s.pipelineStageId, m.pipelineStageId].filter((id): id is string => id !== null);
    const stages = new Map((await ctx.db.getMany('stages', stageIds)).map((st) => [st.id, st]));
    const { lead: next, fields } = mergedLead(s, m, {
      survivor: s.pipelineStageId === null ? null : (stages.get(s.pipelineStageId) ?? null),
      merged: m.pipelineStageId === null ? null : (stages.get(m.pipelineStageId) ?? null),
    }, now);
    // The tombstone first: the rules judge each move against it (lead merged into the survivor).
    await ctx.db.put('leads', { ...m, mergedIntoId: s.id, updatedAt: now });
    await ctx.db.put('leads', next);

    const moved = { notes: 0, tasks: 0, events: 0, messages: 0, enrollments: 0 };
    for (const a of activities) {
      await ctx.db.put('activities', { ...a, leadId: s.id, updatedAt: now });
      if (a.type === 'NOTE') moved.notes++;
      else if (a.type === 'TASK') moved.tasks++;
      else moved.events++;
    }
    for (const msg of messages) await ctx.db.put('messages', { ...msg, leadId: s.id, updatedAt: now });
    moved.messages = messages.length;

    type Row = z.output<typeof mergeOutput>['enrollments'][number];
    const rows = new Map<string, Row>();
    const before = new Map<string, Enrollment>();
    const inCampaign = new Set(sEnrollments.map((e) => e.campaignId));
    let survivorRuns = sEnrollments.some((e) => e.status === 'IN_PROGRESS');
    for (const e of mEnrollments) {
      before.set(e.id, e);
      const active = e.status === 'IN_PROGRESS' || e.status === 'PAUSED';
      const stopped: Enrollment = { ...e, status: 'STOPPED', stoppedReason: 'merged', nextActionAt: null, updatedAt: now };
      let action: Row['action'];
      let after: Enrollment;
      if (inCampaign.has(e.campaignId)) {
        // One enrollment per lead and campaign: the survivor's stays, this one stays with the tombstone.
        action = active ? 'stopped_kept_on_merged' : 'kept_on_merged';
        after = active ? stopped : e;
      } else if (e.status === 'IN_PROGRESS' && survivorRuns) {
        // One running sequence per lead: the survivor's goes on.
        action = 'stopped_and_moved';
        after = { ...stopped, leadId: s.id };
      } else {
        action = 'moved';
        after = { ...e, leadId: s.id, updatedAt: now };
        if (e.status === 'IN_PROGRESS') survivorRuns = true;
      }
      if (after !== e) await ctx.db.put('enrollments', after);
      if (after.leadId === s.id) moved.enrollments++;
      rows.set(e.id, { id: e.id, campaignId: e.campaignId, campaignName: '', of: 'merged', status: e.status, statusAfter: after.status, action });
    }
    if (next.doNotContact || next.blocklisted) {
      // A person either lead said not to contact is not contacted through the other.
      for (const e of sEnrollments) before.set(e.id, e);
      const stoppedNow = await stopRunningEnrollments(ctx, [s.id], next.doNotContact ? 'do_not_contact' : 'blocklisted');
      for (const e of stoppedNow) {
        const was = before.get(e.id);
        const row = rows.get(e.id);
        if (row) rows.set(e.id, { ...row, statusAfter: 'STOPPED', action: 'stopped_do_not_contact' });
        else if (was) rows.set(e.id, { id: e.id, campaignId: e.campaignId, campaignName: '', of: 'survivor', status: was.status, statusAfter: 'STOPPED', action: 'stopped_do_not_contact' });
      }
    }
    const campaigns = new Map((await ctx.db.getMany('campaigns', [...new Set([...rows.values()].map((r) => r.campaignId))])).map((c) => [c.id, c.name]));
    const enrollments = [...rows.values()].map((r) => ({ ...r, campaignName: campaigns.get(r.campaignId) ?? '' }));

    const counted = [
      moved.notes ? `${moved.notes} note${moved.notes === 1 ? '' : 's'}` : '',
      moved.tasks ? `${moved.tasks} task${moved.tasks === 1 ? '' : 's'}` : '',
      moved.messages ? `${moved.messages} message${moved.messages === 1 ? '' : 's'}` : '',
      moved.enrollments ? `${moved.enrollments} enrollment${moved.enrollments === 1 ? '' : 's'}` : '',
    ].filter(Boolean);
    await ctx.db.put('activities', newActivity(stamp(ctx), s.id, ctx.actor.memberId, 'EVENT',
      `Merged ${leadName(m) || 'a duplicate lead'} into this lead${counted.length ? ` (${counted.join(', ')} moved)` : ''}. ${mergeRecord(m.id)}`,
      { metadata: { eventKind: 'lead_merged' } }));

    const undo: MergeUndo = {
      survivorBefore: snapshotOf(s),
      survivorAfter: snapshotOf(next),
      movedActivityIds: activities.map((a) => a.id),
      movedMessageIds: messages.map((msg) => msg.id),
      enrollmentsBefore: [...rows.keys()].flatMap((id) => {
        const was = before.get(id);
        const row = rows.get(id);
        return was && row ? [{ id, leadId: was.leadId, status: was.status, stoppedReason: was.stoppedReason, nextActionAt: was.nextActionAt, statusAfter: row.statusAfter }] : [];
      }),
    };
    const stageOut: 'survivor' | 'merged' = next.pipelineStageId === s.pipelineStageId ? 'survivor' : 'merged';
    return {
      dryRun: ctx.dryRun,
      survivorId: s.id,
      mergedId: m.id,
      lead: toMergedOut(next),
      survivorBefore: toMergedOut(s),
      mergedBefore: toMergedOut(m),
      fields,
      variablesFilled: Object.keys(next.variables).filter((k) => next.variables[k] !== s.variables[k]),
      groupsJoined: next.groupIds.filter((g) => !s.groupIds.includes(g)),
      tag: { survivor: s.tagId, merged: m.tagId, result: next.tagId },
      stage: { survivor: s.pipelineStageId, merged: m.pipelineStageId, result: next.pipelineStageId, from: stageOut },
      moved,
      enrollments,
      undo,
    };
  },
});

export const ops = opsByName(merge);
