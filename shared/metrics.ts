/**
 * Campaign metrics, computed from what the runner and the operations record (see the metrics
 * contract): enrollments, `messages` (out = our actions, in = replies) and EVENT activities
 * (connection_accepted, meeting_booked, email_bounced). Automatic replies (auto_reply_received)
 * are not replies: they are only activities, never `in` messages. Reply labels count per replying
 * lead (shared/replies/label-counts.ts).
 */
import type { Activity, Message } from './model/index.ts';
import { labelSummary, leadLabels } from './replies/label-counts.ts';
import type { LabelSummary } from './replies/label-counts.ts';
import type { StoreReader } from './store.ts';

export type CampaignMetrics = {
  campaignId: string;
  /** Every enrollment of the campaign, whatever its status. */
  enrolled: number;
  inProgress: number;
  completed: number;
  /** Sent messages, InMails, emails and voice notes. */
  messagesSent: number;
  connectionRequestsSent: number;
  connectionsAccepted: number;
  /** Distinct leads who replied. */
  replies: number;
  /** replies / distinct leads with at least one sent action of the campaign; 0 when none. */
  replyRate: number;
  meetingsBooked: number;
  /** Distinct leads whose email bounced hard on an email of the campaign (a 5.x.x report or refusal). */
  bounces: number;
} & LabelSummary;

export type ResponseMetrics = Pick<CampaignMetrics, 'campaignId' | 'replies' | 'replyRate' | 'meetingsBooked'>;

const MESSAGE_KINDS: readonly string[] = ['message', 'inmail', 'email', 'voice_note'];

type Tally = {
  messagesSent: number;
  connectionRequestsSent: number;
  contacted: Set<string>;
  repliedLeads: Set<string>;
  connectionsAccepted: number;
  meetingsBooked: number;
  bouncedLeads: Set<string>;
  received: Message[];
};

const emptyTally = (): Tally => ({
  messagesSent: 0, connectionRequestsSent: 0, contacted: new Set(), repliedLeads: new Set(), connectionsAccepted: 0, meetingsBooked: 0, bouncedLeads: new Set(), received: [],
});

/** The EVENT activities of the given kinds raised in the given campaigns (one read). */
export function campaignEvents(read: StoreReader, campaignIds: readonly string[], kinds: readonly string[]): Promise<{ docs: Activity[] }> {
  return read.query('activities', {
    where: {
      op: 'and',
      conds: [
        { op: 'eq', field: 'type', value: 'EVENT' },
        { op: 'in', field: 'metadata.eventKind', values: [...kinds] },
        { op: 'in', field: 'metadata.campaignId', values: [...campaignIds] },
      ],
    },
  });
}

/** Counts messages and events of the campaigns in one pass each. */
async function tally(read: StoreReader, campaignIds: readonly string[]): Promise<Map<string, Tally>> {
  const out = new Map(campaignIds.map((id) => [id, emptyTally()]));
  if (campaignIds.length === 0) return out;
  const [messages, events] = await Promise.all([
    read.query('messages', { where: { op: 'in', field: 'campaignId', values: campaignIds } }),
    campaignEvents(read, campaignIds, ['connection_accepted', 'meeting_booked', 'email_bounced']),
  ]);
  for (const m of messages.docs) {
    const t = m.campaignId === null ? undefined : out.get(m.campaignId);
    if (!t) continue;
    if (m.direction === 'in') {
      t.repliedLeads.add(m.leadId);
      t.received.push(m);
      continue;
    }
    if (m.status !== 'sent') continue;
    t.contacted.add(m.leadId);
    if (MESSAGE_KINDS.includes(m.kind)) t.messagesSent++;
    else if (m.kind === 'connection_request') t.connectionRequestsSent++;
  }
  for (const a of events.docs) {
    const t = a.metadata.campaignId === undefined ? undefined : out.get(a.metadata.campaignId);
    if (!t) continue;
    if (a.metadata.eventKind === 'connection_accepted') t.connectionsAccepted++;
    else if (a.metadata.eventKind === 'meeting_booked') t.meetingsBooked++;
    else if (a.metadata.eventKind === 'email_bounced') t.bouncedLeads.add(a.leadId);
  }
  return out;
}

const rate = (t: Tally): number => (t.contacted.size === 0 ? 0 : t.repliedLeads.size / t.contacted.size);

/** Replies, reply rate and meetings per campaign: what the campaign list sorts by. */
export async function responseMetrics(read: StoreReader, campaignIds: readonly string[]): Promise<Map<string, ResponseMetrics>> {
  const tallies = await tally(read, campaignIds);
  return new Map(
    [...tallies].map(([campaignId, t]) => [campaignId, { campaignId, replies: t.repliedLeads.size, replyRate: rate(t), meetingsBooked: t.meetingsBooked }]),
  );
}

/** Full metrics for each campaign id, in the order given. */
export async function campaignMetrics(read: StoreReader, campaignIds: readonly string[]): Promise<CampaignMetrics[]> {
  const tallies = await tally(read, campaignIds);
  const out: CampaignMetrics[] = [];
  for (const campaignId of campaignIds) {
    const t = tallies.get(campaignId) ?? emptyTally();
    const byCampaign = { op: 'eq', field: 'campaignId', value: campaignId } as const;
    const [enrolled, inProgress, completed] = await Promise.all([
      read.count('enrollments', byCampaign),
      read.count('enrollments', { op: 'and', conds: [byCampaign, { op: 'eq', field: 'status', value: 'IN_PROGRESS' }] }),
      read.count('enrollments', { op: 'and', conds: [byCampaign, { op: 'eq', field: 'status', value: 'COMPLETED' }] }),
    ]);
    out.push({
      campaignId,
      enrolled,
      inProgress,
      completed,
      messagesSent: t.messagesSent,
      connectionRequestsSent: t.connectionRequestsSent,
      connectionsAccepted: t.connectionsAccepted,
      replies: t.repliedLeads.size,
      replyRate: rate(t),
      meetingsBooked: t.meetingsBooked,
      bounces: t.bouncedLeads.size,
      ...labelSummary(leadLabels(t.received).values()),
    });
  }
  return out;
}
