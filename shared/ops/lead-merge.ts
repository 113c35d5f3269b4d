/** How two leads of one person become one (campaigns.leads.merge) and how a merge is undone
 * (campaigns.leads.unmerge): the merged lead's values, the rule of each field, and the answer's
 * shapes, shared by both operations and the Duplicates view. */
import { z } from 'zod';
import type { Ctx } from '../context.ts';
import { DomainError } from '../errors.ts';
import { CATEGORY_ORDER } from '../model/factories.ts';
import { CLOSE_REASONS, ENROLLMENT_STATUSES, STAGE_CATEGORIES, UNSUBSCRIBE_SOURCES } from '../model/index.ts';
import type { Docs, Lead, Stage } from '../model/index.ts';
import type { Page } from '../store.ts';
import { uuid } from './params.ts';

/** Most notes, tasks, events, messages and enrollments one merge moves: one commit, the size of the
 * largest bulk change (campaigns.leads.unenroll and bulk enrollment take 10,000 leads, about two
 * writes each). A lead with more is refused before anything changes. */
export const MAX_MERGE_MOVES = 20_000;

/** Text fields: the survivor's value wins unless it is empty; an empty one is filled from the merged lead. */
export const MERGED_TEXT_FIELDS = [
  'firstName', 'lastName', 'fullName', 'email', 'company', 'jobTitle', 'location', 'phone', 'seniority',
  'socialUrl', 'personalSocialUrl', 'companySocialUrl', 'websiteUrl', 'profilePictureUrl', 'leadIdentifier',
] as const;
type TextField = (typeof MERGED_TEXT_FIELDS)[number];

/** What a merge may change on the survivor: enough to put it back (campaigns.leads.unmerge). */
export const survivorSnapshotSchema = z.object({
  ...(Object.fromEntries(MERGED_TEXT_FIELDS.map((f) => [f, z.string().max(2000)])) as Record<TextField, z.ZodString>),
  leadFitScore: z.number(),
  rankingScore: z.number(),
  variables: z.record(z.string().max(100), z.string().max(20_000)),
  groupIds: z.array(uuid).max(10_000),
  tagId: uuid.nullable(),
  pipelineStageId: uuid.nullable(),
  closeReason: z.enum(CLOSE_REASONS).nullable(),
  closedFromCategory: z.enum(STAGE_CATEGORIES).nullable(),
  stageSetManuallyAt: z.string().max(40).nullable(),
  followUpAt: z.string().max(40).nullable(),
  lastActivityAt: z.string().max(40).nullable(),
  meetingBookedAt: z.string().max(40).nullable(),
  meetingBookedSource: z.string().max(100).nullable(),
  emailBouncedAt: z.string().max(40).nullable().optional(),
  emailBounceReason: z.string().max(2000).nullable().optional(),
  cycle: z.number().int().min(0),
  doNotContact: z.boolean(),
  blocklisted: z.boolean(),
  unsubscribedAt: z.string().max(40).nullable().optional(),
  unsubscribeSource: z.enum(UNSUBSCRIBE_SOURCES).nullable().optional(),
});

/** The lead's optional fields (absent on leads written before they existed): a snapshot leaves an
 * absent one out, and the undo removes it again. */
export const OPTIONAL_LEAD_FIELDS = ['emailBouncedAt', 'emailBounceReason', 'unsubscribedAt', 'unsubscribeSource'] as const;
export type SurvivorSnapshot = z.output<typeof survivorSnapshotSchema>;

export function snapshotOf(l: Lead): SurvivorSnapshot {
  return {
    ...(Object.fromEntries(MERGED_TEXT_FIELDS.map((f) => [f, l[f]])) as Record<TextField, string>),
    leadFitScore: l.leadFitScore,
    rankingScore: l.rankingScore,
    variables: { ...l.variables },
    groupIds: [...l.groupIds],
    tagId: l.tagId,
    pipelineStageId: l.pipelineStageId,
    closeReason: l.closeReason,
    closedFromCategory: l.closedFromCategory,
    stageSetManuallyAt: l.stageSetManuallyAt,
    followUpAt: l.followUpAt,
    lastActivityAt: l.lastActivityAt,
    meetingBookedAt: l.meetingBookedAt,
    meetingBookedSource: l.meetingBookedSource,
    cycle: l.cycle,
    doNotContact: l.doNotContact,
    blocklisted: l.blocklisted,
    ...(l.emailBouncedAt === undefined ? {} : { emailBouncedAt: l.emailBouncedAt }),
    ...(l.emailBounceReason === undefined ? {} : { emailBounceReason: l.emailBounceReason }),
    ...(l.unsubscribedAt === undefined ? {} : { unsubscribedAt: l.unsubscribedAt }),
    ...(l.unsubscribeSource === undefined ? {} : { unsubscribeSource: l.unsubscribeSource }),
  };
}

/** An enrollment as the merge found it, and the status the merge left it in. */
export const enrollmentBeforeSchema = z.object({
  id: uuid,
  leadId: uuid,
  status: z.enum(ENROLLMENT_STATUSES),
  stoppedReason: z.string().max(200).nullable(),
  nextActionAt: z.string().max(40).nullable(),
  statusAfter: z.enum(ENROLLMENT_STATUSES),
});

/** What campaigns.leads.unmerge needs to undo one merge: the merge's answer carries it. */
export const mergeUndoSchema = z.object({
  survivorBefore: survivorSnapshotSchema,
  /** The same fields as the merge left them: a field changed since keeps its new value on undo. */
  survivorAfter: survivorSnapshotSchema,
  movedActivityIds: z.array(uuid).max(MAX_MERGE_MOVES),
  movedMessageIds: z.array(uuid).max(MAX_MERGE_MOVES),
  enrollmentsBefore: z.array(enrollmentBeforeSchema).max(MAX_MERGE_MOVES),
});
export type MergeUndo = z.output<typeof mergeUndoSchema>;

const empty = (v: string): boolean => v.trim() === '';
const laterIso = (a: string | null, b: string | null): string | null => (a === null ? b : b === null ? a : a > b ? a : b);
const earlierIso = (a: string | null, b: string | null): string | null => (a === null ? b : b === null ? a : a < b ? a : b);

/** How far along the pipeline a stage is: its category's order, then its position. No stage is first. */
const stageRank = (s: Stage | null): [number, number] => (s ? [CATEGORY_ORDER[s.category], s.position] : [-1, -1]);

export type FieldChoice = { field: string; survivor: string; merged: string; result: string; from: 'survivor' | 'merged' };

/**
 * The survivor as it is after the merge (pure). The rules, also in the README ("Merging leads"):
 * - text fields and custom columns: the survivor's non-empty value wins, an empty one is filled;
 * - scores: the survivor's unless 0; cycle, last activity: the larger / later;
 * - lead lists: the survivor joins every list either was in;
 * - tag: the survivor's, or the merged lead's when the survivor has none;
 * - stage: the one further along the pipeline (category order NEW < CONTACTED < ENGAGED = ON_HOLD <
 *   MEETING_BOOKED < WON = LOST, then the stage's position); a tie keeps the survivor's. The stage
 *   moves with its close reason, the category it was closed from and, for On hold, its wake date;
 * - catch-up date: the survivor's, else the merged lead's; a booked meeting: the earlier one;
 * - email bounce: goes with the email kept;
 * - do not contact, blocklisted, unsubscribed: never lost (either one's flag holds; the earlier
 *   unsubscription with its source).
 */
export function mergedLead(s: Lead, m: Lead, stages: { survivor: Stage | null; merged: Stage | null }, now: string): { lead: Lead; fields: FieldChoice[] } {
  const next: Lead = { ...s, variables: { ...s.variables }, groupIds: [...s.groupIds] };
  const fields: FieldChoice[] = [];
  for (const f of MERGED_TEXT_FIELDS) {
    if (s[f] === m[f] || empty(m[f])) continue;
    const fill = empty(s[f]);
    if (fill) next[f] = m[f];
    fields.push({ field: f, survivor: s[f], merged: m[f], result: next[f], from: fill ? 'merged' : 'survivor' });
  }
  for (const f of ['leadFitScore', 'rankingScore'] as const) {
    if (s[f] === 0 && m[f] !== 0) {
      next[f] = m[f];
      fields.push({ field: f, survivor: String(s[f]), merged: String(m[f]), result: String(m[f]), from: 'merged' });
    }
  }
  for (const [k, v] of Object.entries(m.variables)) {
    if (empty(v)) continue;
    if (empty(s.variables[k] ?? '')) next.variables[k] = v;
  }
  for (const g of m.groupIds) if (!next.groupIds.includes(g)) next.groupIds.push(g);
  if (next.tagId === null) next.tagId = m.tagId;

  const [sc, sp] = stageRank(stages.survivor);
  const [mc, mp] = stageRank(stages.merged);
  if (mc > sc || (mc === sc && mp > sp)) {
    next.pipelineStageId = m.pipelineStageId;
    next.closeReason = m.closeReason;
    next.closedFromCategory = m.closedFromCategory;
    next.stageSetManuallyAt = m.stageSetManuallyAt;
    if (stages.merged?.category === 'ON_HOLD') next.followUpAt = m.followUpAt;
  }
  if (next.followUpAt === null) next.followUpAt = m.followUpAt;
  next.lastActivityAt = laterIso(s.lastActivityAt, m.lastActivityAt);
  if (m.meetingBookedAt !== null && (s.meetingBookedAt === null || m.meetingBookedAt < s.meetingBookedAt)) {
    next.meetingBookedAt = m.meetingBookedAt;
    next.meetingBookedSource = m.meetingBookedSource;
  }
  if (empty(s.email) && !empty(m.email)) {
    next.emailBouncedAt = m.emailBouncedAt ?? null;
    next.emailBounceReason = m.emailBounceReason ?? null;
  }
  next.cycle = Math.max(s.cycle, m.cycle);
  next.doNotContact = s.doNotContact || m.doNotContact;
  next.blocklisted = s.blocklisted || m.blocklisted;
  const unsubscribedAt = earlierIso(s.unsubscribedAt ?? null, m.unsubscribedAt ?? null);
  if (unsubscribedAt !== (s.unsubscribedAt ?? null)) {
    next.unsubscribedAt = unsubscribedAt;
    next.unsubscribeSource = m.unsubscribeSource ?? null;
  }
  next.updatedAt = now;
  return { lead: next, fields };
}

/** Refuses a merge whose lead has more documents than one commit takes. */
export function refuseTooLarge(total: number, m: Lead): void {
  if (total > MAX_MERGE_MOVES) {
    throw new DomainError('RULE_VIOLATION', `${m.fullName || 'The lead to merge'} has ${total.toLocaleString('en-US')} notes, tasks, events, messages and enrollments; one merge moves at most ${MAX_MERGE_MOVES.toLocaleString('en-US')}. Merge the other way round (keep this lead and merge the other into it).`, {
      leadId: m.id,
      documents: total,
      max: MAX_MERGE_MOVES,
    });
  }
}

/** Every document of a collection naming the lead, read a page at a time (stops past the limit). */
export async function allOfLead<C extends 'activities' | 'messages' | 'enrollments'>(ctx: Ctx, c: C, leadId: string): Promise<Docs[C][]> {
  const out: Docs[C][] = [];
  let cursor: string | null = null;
  do {
    const page: Page<Docs[C]> = await ctx.db.query(c, { where: { op: 'eq', field: 'leadId', value: leadId }, orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 1000, cursor });
    out.push(...page.docs);
    cursor = page.nextCursor;
  } while (cursor !== null && out.length <= MAX_MERGE_MOVES);
  return out;
}
