/**
 * The events webhooks deliver, derived from the documents a commit writes: `eventsOf` looks at each
 * write's state before and after and says what happened. The sync server calls it on every commit
 * (sync-server/webhooks/outbox.ts, from PgStore.commit), so operations, the runner and documents a
 * desktop pushes by replication all raise the same events, and an event exists exactly when the
 * change that raised it committed.
 *
 * Bodies follow the Standard Webhooks specification: `{type, timestamp, data}`, `type` dotted,
 * `timestamp` when the change happened (the writer's `updatedAt`), `data` a small object per type
 * (ids and the fields a receiver needs; never a secret). README "Webhooks" documents each one.
 */
import type { Activity, Campaign, Enrollment, Lead, Message, ReplyLabel, Stage, StageCategory } from '../model/index.ts';
import type { Ids } from '../context.ts';
import type { AnyWrite } from '../store.ts';

/** The event types an endpoint can choose. */
export const WEBHOOK_EVENT_TYPES = [
  'lead.replied',
  'lead.reply_labelled',
  'lead.connection_accepted',
  'lead.meeting_booked',
  'lead.stage_changed',
  'lead.sequence_finished',
  'lead.email_bounced',
  'lead.unsubscribed',
  'lead.merged',
  'lead.unmerged',
  'campaign.started',
  'campaign.paused',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Sent only by webhooks.sendTest, to the one endpoint asked; never chosen. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** One line per type, for the app's event choice and the OpenAPI document. */
export const WEBHOOK_EVENT_LABELS: Record<WebhookEventType, string> = {
  'lead.replied': 'A lead replied (with the suggested label)',
  'lead.reply_labelled': 'A reply was labelled by a person',
  'lead.connection_accepted': 'A lead accepted a connection request',
  'lead.meeting_booked': 'A meeting was booked',
  'lead.stage_changed': "A lead's pipeline stage changed",
  'lead.sequence_finished': "A lead's sequence finished (completed or stopped, with the reason)",
  'lead.email_bounced': "A lead's email bounced",
  'lead.unsubscribed': 'A lead unsubscribed',
  'lead.merged': 'A duplicate lead was merged into another',
  'lead.unmerged': 'A merge was undone: the merged lead is a lead again',
  'campaign.started': 'A campaign started',
  'campaign.paused': 'A campaign paused',
};

/** Who an event is about, as a CRM or a chat message needs it. */
export type LeadSummary = {
  id: string;
  fullName: string;
  firstName: string;
  lastName: string;
  email: string;
  company: string;
  jobTitle: string;
  socialUrl: string;
};

export type StageSummary = { id: string; name: string; category: StageCategory | null };

/** Longest reply text an event carries (a longer one is cut and says so). */
export const EVENT_TEXT_MAX = 10_000;

type Data = {
  'lead.replied': {
    messageId: string;
    lead: LeadSummary;
    sdrProfileId: string;
    campaignId: string | null;
    chatId: string;
    channel: Message['kind'];
    subject: string;
    text: string;
    textTruncated: boolean;
    receivedAt: string;
    /** The label the rules suggest from the text; null when none matched. */
    suggestedLabel: ReplyLabel | null;
    /** The label a person gave (usually null this early). */
    label: ReplyLabel | null;
  };
  'lead.reply_labelled': {
    messageId: string;
    lead: LeadSummary;
    campaignId: string | null;
    label: ReplyLabel;
    previousLabel: ReplyLabel | null;
    suggestedLabel: ReplyLabel | null;
    labelledBy: string | null;
    labelledAt: string;
  };
  'lead.connection_accepted': { lead: LeadSummary; sdrProfileId: string | null; campaignId: string | null; acceptedAt: string };
  'lead.meeting_booked': { lead: LeadSummary; campaignId: string | null; source: string | null; bookedAt: string };
  'lead.stage_changed': { lead: LeadSummary; stage: StageSummary | null; previousStage: StageSummary | null; closeReason: Lead['closeReason'] };
  'lead.sequence_finished': {
    enrollmentId: string;
    lead: LeadSummary;
    campaignId: string;
    sdrProfileId: string | null;
    outcome: 'completed' | 'stopped';
    /** Why it stopped (replied, meeting_booked, email_bounced, unsubscribed, lead_lost, ...); null when completed. */
    reason: string | null;
    finishedAt: string;
  };
  'lead.email_bounced': { lead: LeadSummary; email: string; reason: string | null; bouncedAt: string };
  'lead.unsubscribed': { lead: LeadSummary; source: Lead['unsubscribeSource'] | null; unsubscribedAt: string };
  /** `lead` is the survivor (as it is after the merge), `mergedLead` the tombstone's data; an id
   * held for mergedLeadId now answers NOT_FOUND with details.mergedIntoId = lead.id. */
  'lead.merged': { lead: LeadSummary; mergedLead: LeadSummary; mergedLeadId: string; mergedAt: string };
  /** A merge undone (campaigns.leads.unmerge, the app's Undo): `mergedLeadId` is a lead of its own
   * again, `mergedLead` its data now, `lead` the lead it had been merged into, as it is after the
   * undo (its fields put back). The same names as lead.merged, so a receiver reverses what that did. */
  'lead.unmerged': { lead: LeadSummary; mergedLead: LeadSummary; mergedLeadId: string; unmergedAt: string };
  'campaign.started': { campaignId: string; name: string; startedAt: string };
  'campaign.paused': {
    campaignId: string;
    name: string;
    /** Why the system paused it (a lapsed subscription); null when a person paused it. */
    reason: string | null;
    pausedAt: string;
  };
};
export type WebhookEventData<T extends WebhookEventType> = Data[T];

/** One event before it has an id: what the outbox stores and every endpoint that chose its type gets. */
export type WebhookEvent = { [T in WebhookEventType]: { type: T; timestamp: string; data: Data[T] } }[WebhookEventType];

/** Documents an event refers to that the commit may not have written: the leads it is about and
 * the stages of a stage change. The caller looks them up (`referencesOf` says which). */
export type EventReferences = { leads: ReadonlyMap<string, Lead>; stages: ReadonlyMap<string, Stage> };

const FINISHED: ReadonlySet<Enrollment['status']> = new Set(['COMPLETED', 'STOPPED', 'REPLIED']);

/** Whether any write can raise an event: cheap, before anything is looked up. */
export function mayRaiseEvents(writes: readonly AnyWrite[]): boolean {
  return writes.some((w) => w.after !== null && (w.before !== null || w.collection === 'messages' || w.collection === 'activities'));
}

/** The ids of leads and stages the events of these writes name, which `eventsOf` wants in its references. */
export function referencesOf(writes: readonly AnyWrite[]): { leadIds: string[]; stageIds: string[] } {
  const leadIds = new Set<string>();
  const stageIds = new Set<string>();
  for (const w of writes) {
    if (w.after === null) continue;
    if (w.collection === 'leads' && w.before !== null && w.before.pipelineStageId !== w.after.pipelineStageId) {
      for (const id of [w.before.pipelineStageId, w.after.pipelineStageId]) if (id !== null) stageIds.add(id);
    }
    if (w.collection === 'messages' || w.collection === 'activities' || w.collection === 'enrollments') leadIds.add(w.after.leadId);
    if (w.collection === 'leads' && w.after.mergedIntoId) leadIds.add(w.after.mergedIntoId);
    // An undone merge names the lead it had been merged into (a desktop may push that one apart).
    if (w.collection === 'leads' && !w.after.mergedIntoId && w.before?.mergedIntoId) leadIds.add(w.before.mergedIntoId);
  }
  // A lead the commit wrote itself is taken from the write.
  for (const w of writes) if (w.collection === 'leads') leadIds.delete(w.id);
  return { leadIds: [...leadIds], stageIds: [...stageIds] };
}

/** The events a commit's writes raise, in the order of the writes. Pure. */
export function eventsOf(writes: readonly AnyWrite[], refs: EventReferences): WebhookEvent[] {
  const written = new Map<string, Lead>();
  for (const w of writes) if (w.collection === 'leads' && w.after) written.set(w.id, w.after);
  const leadOf = (id: string): LeadSummary => summary(id, written.get(id) ?? refs.leads.get(id) ?? null);
  const stageOf = (id: string | null): StageSummary | null => {
    if (id === null) return null;
    const s = refs.stages.get(id);
    return s ? { id, name: s.name, category: s.category } : { id, name: '', category: null };
  };
  // A meeting booked names the campaign in the timeline event the same commit writes.
  const meetingCampaign = new Map<string, string>();
  for (const w of writes) {
    if (w.collection === 'activities' && w.before === null && w.after?.metadata.eventKind === 'meeting_booked' && w.after.metadata.campaignId) {
      meetingCampaign.set(w.after.leadId, w.after.metadata.campaignId);
    }
  }

  const out: WebhookEvent[] = [];
  for (const w of writes) {
    if (w.after === null) continue;
    switch (w.collection) {
      case 'messages':
        out.push(...messageEvents(w.before, w.after, leadOf));
        break;
      case 'activities':
        out.push(...activityEvents(w.before, w.after, leadOf));
        break;
      case 'leads':
        if (w.before) out.push(...leadEvents(w.before, w.after, leadOf, stageOf, meetingCampaign));
        break;
      case 'enrollments':
        if (w.before) out.push(...enrollmentEvents(w.before, w.after, leadOf));
        break;
      case 'campaigns':
        if (w.before) out.push(...campaignEvents(w.before, w.after));
        break;
      default:
        break;
    }
  }
  return out;
}

function summary(id: string, lead: Lead | null): LeadSummary {
  return {
    id,
    fullName: lead ? lead.fullName || [lead.firstName, lead.lastName].filter(Boolean).join(' ') : '',
    firstName: lead?.firstName ?? '',
    lastName: lead?.lastName ?? '',
    email: lead?.email ?? '',
    company: lead?.company ?? '',
    jobTitle: lead?.jobTitle ?? '',
    socialUrl: lead?.socialUrl ?? '',
  };
}

type LeadOf = (id: string) => LeadSummary;

function messageEvents(before: Message | null, after: Message, leadOf: LeadOf): WebhookEvent[] {
  if (after.direction !== 'in') return [];
  const out: WebhookEvent[] = [];
  const arrived = after.status === 'received' && (before === null || before.direction !== 'in' || before.status !== 'received');
  if (arrived) {
    out.push({
      type: 'lead.replied',
      timestamp: after.updatedAt,
      data: {
        messageId: after.id,
        lead: leadOf(after.leadId),
        sdrProfileId: after.sdrProfileId,
        campaignId: after.campaignId,
        chatId: after.chatId,
        channel: after.kind,
        subject: after.subject,
        text: after.text.slice(0, EVENT_TEXT_MAX),
        textTruncated: after.text.length > EVENT_TEXT_MAX,
        receivedAt: after.sentAt ?? after.createdAt,
        suggestedLabel: after.replyLabelSuggested ?? null,
        label: after.replyLabel ?? null,
      },
    });
  }
  const label = after.replyLabel ?? null;
  const previous = before?.replyLabel ?? null;
  if (!arrived && label !== null && label !== previous) {
    out.push({
      type: 'lead.reply_labelled',
      timestamp: after.updatedAt,
      data: {
        messageId: after.id,
        lead: leadOf(after.leadId),
        campaignId: after.campaignId,
        label,
        previousLabel: previous,
        suggestedLabel: after.replyLabelSuggested ?? null,
        labelledBy: after.replyLabelledBy ?? null,
        labelledAt: after.replyLabelledAt ?? after.updatedAt,
      },
    });
  }
  return out;
}

function activityEvents(before: Activity | null, after: Activity, leadOf: LeadOf): WebhookEvent[] {
  // The runner records an accepted connection only as a timeline event (the enrollment's
  // inConversationAt is set by a reply too).
  if (before !== null || after.type !== 'EVENT' || after.metadata.eventKind !== 'connection_accepted') return [];
  return [{
    type: 'lead.connection_accepted',
    timestamp: after.updatedAt,
    data: { lead: leadOf(after.leadId), sdrProfileId: after.metadata.sdrProfileId ?? null, campaignId: after.metadata.campaignId ?? null, acceptedAt: after.createdAt },
  }];
}

function leadEvents(before: Lead, after: Lead, leadOf: LeadOf, stageOf: (id: string | null) => StageSummary | null, meetingCampaign: ReadonlyMap<string, string>): WebhookEvent[] {
  const out: WebhookEvent[] = [];
  const at = after.updatedAt;
  if (before.pipelineStageId !== after.pipelineStageId) {
    out.push({ type: 'lead.stage_changed', timestamp: at, data: { lead: leadOf(after.id), stage: stageOf(after.pipelineStageId), previousStage: stageOf(before.pipelineStageId), closeReason: after.closeReason } });
  }
  if (after.meetingBookedAt && after.meetingBookedAt !== before.meetingBookedAt) {
    out.push({ type: 'lead.meeting_booked', timestamp: at, data: { lead: leadOf(after.id), campaignId: meetingCampaign.get(after.id) ?? null, source: after.meetingBookedSource, bookedAt: after.meetingBookedAt } });
  }
  if (after.emailBouncedAt && !before.emailBouncedAt) {
    out.push({ type: 'lead.email_bounced', timestamp: at, data: { lead: leadOf(after.id), email: after.email, reason: after.emailBounceReason ?? null, bouncedAt: after.emailBouncedAt } });
  }
  if (after.mergedIntoId && !before.mergedIntoId) {
    out.push({ type: 'lead.merged', timestamp: at, data: { lead: leadOf(after.mergedIntoId), mergedLead: leadOf(after.id), mergedLeadId: after.id, mergedAt: at } });
  }
  if (before.mergedIntoId && !after.mergedIntoId) {
    out.push({ type: 'lead.unmerged', timestamp: at, data: { lead: leadOf(before.mergedIntoId), mergedLead: leadOf(after.id), mergedLeadId: after.id, unmergedAt: at } });
  }
  if (after.unsubscribedAt && after.unsubscribedAt !== before.unsubscribedAt) {
    out.push({ type: 'lead.unsubscribed', timestamp: at, data: { lead: leadOf(after.id), source: after.unsubscribeSource ?? null, unsubscribedAt: after.unsubscribedAt } });
  }
  return out;
}

function enrollmentEvents(before: Enrollment, after: Enrollment, leadOf: LeadOf): WebhookEvent[] {
  if (!FINISHED.has(after.status) || FINISHED.has(before.status)) return [];
  const completed = after.status === 'COMPLETED';
  return [{
    type: 'lead.sequence_finished',
    timestamp: after.updatedAt,
    data: {
      enrollmentId: after.id,
      lead: leadOf(after.leadId),
      campaignId: after.campaignId,
      sdrProfileId: after.sdrProfileId,
      outcome: completed ? 'completed' : 'stopped',
      reason: completed ? null : (after.stoppedReason ?? (after.status === 'REPLIED' ? 'replied' : null)),
      finishedAt: (completed ? after.completedAt : null) ?? after.updatedAt,
    },
  }];
}

function campaignEvents(before: Campaign, after: Campaign): WebhookEvent[] {
  if (before.running === after.running) return [];
  if (after.running) return [{ type: 'campaign.started', timestamp: after.updatedAt, data: { campaignId: after.id, name: after.name, startedAt: after.updatedAt } }];
  return [{ type: 'campaign.paused', timestamp: after.updatedAt, data: { campaignId: after.id, name: after.name, reason: after.pausedReason ?? null, pausedAt: after.updatedAt } }];
}

/** The exact body sent (and signed) for an event. */
/** A new event id, the webhook-id header: `msg_` and a UUID without dashes (no dots, as the
 * specification asks). Time-ordered like every id the hosts make, whoever raises the event. */
export const newEventId = (ids: Ids): string => `msg_${ids.uuid().replace(/-/g, '')}`;

export const eventBody = (e: { type: string; timestamp: string; data: unknown }): string => JSON.stringify({ type: e.type, timestamp: e.timestamp, data: e.data });
