/**
 * A lead unsubscribes: by the one-click link of an email's List-Unsubscribe header (the sync
 * server's /unsubscribe route), by the header's mailto: (read from the sender's mailbox by the
 * runner, inbound.ts), or by a reply a person labelled unsubscribe (inbox.setLabel). Each way ends
 * here, in the caller's unit of work, so all three do the same: the lead is marked Do Not Contact
 * with unsubscribedAt and unsubscribeSource, every running sequence of the lead stops (in every
 * campaign, whichever sender), and the timeline says so. Other writers see doNotContact as they do
 * today: the runner never acts for such a lead, bulk enrollment skips it.
 */
import type { Ids } from '../context.ts';
import { newActivity } from '../model/factories.ts';
import type { Activity, Enrollment, Lead, UnsubscribeSource } from '../model/index.ts';
import type { Tx } from '../tx.ts';

/** The enrollments' stoppedReason when a lead unsubscribed. */
export const UNSUBSCRIBED_STOP_REASON = 'unsubscribed';

const HOW: Record<UnsubscribeSource, string> = {
  one_click: 'with the unsubscribe link of an email',
  mailto: 'by email to the unsubscribe address of an email',
  reply: 'by reply (labelled unsubscribe in the inbox)',
};

export type UnsubscribeRequest = {
  lead: Lead;
  source: UnsubscribeSource;
  /** When the lead asked (the mail's date, or now). */
  at: string;
  /** The time of this write. */
  now: string;
  ids: Ids;
  /** Who the timeline entry is written as: the member who labelled, or the sender's owner. */
  userId: string;
  /** The sender whose email or mailbox carried the request, when known. */
  sdrProfileId?: string | null;
  /** The reply it came from (source reply). */
  messageId?: string | null;
};

export type UnsubscribeResult = { lead: Lead; stopped: Enrollment[] } | null;

/**
 * Marks the lead unsubscribed in `tx`; null when it already was (a second click, the same mail read
 * again), so nothing is written twice. A lead marked Do Not Contact by hand before gets the
 * unsubscribe recorded too.
 */
export async function markUnsubscribed(tx: Tx, req: UnsubscribeRequest): Promise<UnsubscribeResult> {
  const { lead, now } = req;
  if (lead.unsubscribedAt && lead.doNotContact) return null;
  const next: Lead = {
    ...lead,
    doNotContact: true,
    unsubscribedAt: lead.unsubscribedAt ?? req.at,
    unsubscribeSource: lead.unsubscribedAt ? (lead.unsubscribeSource ?? req.source) : req.source,
    updatedAt: now,
  };
  await tx.put('leads', next);
  const { docs: running } = await tx.query('enrollments', {
    where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: lead.id }, { op: 'eq', field: 'status', value: 'IN_PROGRESS' }] },
  });
  const stopped: Enrollment[] = [];
  for (const e of running) {
    const s: Enrollment = { ...e, status: 'STOPPED', stoppedReason: UNSUBSCRIBED_STOP_REASON, nextActionAt: null, waitReason: null, updatedAt: now };
    await tx.put('enrollments', s);
    stopped.push(s);
  }
  const campaigns = await tx.getMany('campaigns', [...new Set(stopped.map((e) => e.campaignId))]);
  const names = campaigns.map((c) => `"${c.name}"`);
  const who = lead.fullName || lead.email || 'The lead';
  const stops = names.length === 0 ? '' : names.length === 1 ? ` The sequence in ${names[0]} stopped.` : ` The sequences in ${names.join(', ')} stopped.`;
  const metadata: Activity['metadata'] = { eventKind: 'lead_unsubscribed' };
  if (req.sdrProfileId) metadata.sdrProfileId = req.sdrProfileId;
  if (req.messageId) metadata.messageId = req.messageId;
  const onlyCampaign = stopped.length === 1 ? stopped[0]?.campaignId : undefined;
  if (onlyCampaign) metadata.campaignId = onlyCampaign;
  await tx.put('activities', newActivity({ id: req.ids.uuid(), workspaceId: lead.workspaceId, now }, lead.id, req.userId, 'EVENT',
    `${who} unsubscribed ${HOW[req.source]}: marked Do Not Contact.${stops}`, { metadata }));
  return { lead: next, stopped };
}
