/** What the runner writes besides enrollments: timeline events and pipeline moves, shaped as the
 * metrics contract says (EVENT activities with metadata.eventKind; stage moves only forward). */
import type { Ids } from '../context.ts';
import { CATEGORY_ORDER, newActivity } from '../model/factories.ts';
import type { Activity, Lead, Stage, StageCategory } from '../model/index.ts';

export type EventKind =
  | 'connection_accepted'
  | 'meeting_booked'
  | 'email_opened'
  | 'reply_received'
  | 'message_sent'
  | 'sequence_completed'
  | 'sequence_stopped'
  | 'stage_changed'
  | 'enrolled'
  | 'delivery_unknown'
  | 'auto_reply_received'
  | 'email_bounced'
  | 'email_delayed';

export type EventMeta = { campaignId?: string | null; sdrProfileId?: string | null; messageId?: string | null };

/** A timeline EVENT for a lead; null ids are left out (the schema wants strings when present). */
export function eventActivity(ids: Ids, lead: Pick<Lead, 'id' | 'workspaceId'>, userId: string, now: string, kind: EventKind, content: string, meta: EventMeta = {}): Activity {
  const metadata: Activity['metadata'] = { eventKind: kind };
  if (meta.campaignId) metadata.campaignId = meta.campaignId;
  if (meta.sdrProfileId) metadata.sdrProfileId = meta.sdrProfileId;
  if (meta.messageId) metadata.messageId = meta.messageId;
  return newActivity({ id: ids.uuid(), workspaceId: lead.workspaceId, now }, lead.id, userId, 'EVENT', content, { metadata });
}

/** The lead's stage category (a lead without a stage is NEW). */
export function categoryOf(lead: Lead, stages: ReadonlyMap<string, Stage>): StageCategory {
  if (lead.pipelineStageId === null) return 'NEW';
  return stages.get(lead.pipelineStageId)?.category ?? 'NEW';
}

/**
 * Moves the lead to the first stage of `target` when it is not already as far along (a reply makes
 * a lead Engaged unless it is further, e.g. Meeting booked or Won). Returns the new lead and the
 * stage-change event, or null when nothing changes.
 */
export function advanceStage(
  ids: Ids,
  lead: Lead,
  target: StageCategory,
  stages: ReadonlyMap<string, Stage>,
  userId: string,
  now: string,
  meta: EventMeta = {},
): { lead: Lead; event: Activity } | null {
  const current = categoryOf(lead, stages);
  if (CATEGORY_ORDER[current] >= CATEGORY_ORDER[target]) return null;
  const stage = [...stages.values()].filter((s) => s.category === target).sort((a, b) => a.position - b.position)[0];
  if (!stage) return null;
  const next: Lead = { ...lead, pipelineStageId: stage.id, updatedAt: now };
  const event = eventActivity(ids, lead, userId, now, 'stage_changed', `Moved to ${stage.name}.`, meta);
  return { lead: next, event };
}
