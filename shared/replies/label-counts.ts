/**
 * Reply labels in a campaign's results (campaigns.getMetrics and campaigns.getStepMetrics): replies
 * count once per lead, so labels do too. A lead's label in a campaign is that of its latest reply
 * a person labelled, else the suggestion of its latest reply (a later "Tuesday works" without a rule
 * must not undo an SDR's "interested"); `unlabelled` when neither exists. The positive reply rate is
 * interested leads over leads who replied.
 */
import { z } from 'zod';
import { REPLY_LABELS } from '../model/index.ts';
import type { Message, ReplyLabel } from '../model/index.ts';

export type LabelBucket = ReplyLabel | 'unlabelled';
export const LABEL_BUCKETS: readonly LabelBucket[] = [...REPLY_LABELS, 'unlabelled'];
export type LabelCounts = Record<LabelBucket, number>;

/** The per-label counts in operation responses. */
export const labelCountsOut = z.object(Object.fromEntries(LABEL_BUCKETS.map((l) => [l, z.number().int()])) as Record<LabelBucket, z.ZodNumber>);

export const emptyLabelCounts = (): LabelCounts => Object.fromEntries(LABEL_BUCKETS.map((l) => [l, 0])) as LabelCounts;

export type LeadLabel = { label: LabelBucket; confirmed: boolean };

type Seen = { confirmed: { at: string; label: ReplyLabel } | null; latest: { at: string; label: ReplyLabel | null } | null };

/** Each replying lead's label from its received messages (of one campaign). */
export function leadLabels(received: Iterable<Pick<Message, 'leadId' | 'direction' | 'sentAt' | 'createdAt' | 'replyLabel' | 'replyLabelSuggested'>>): Map<string, LeadLabel> {
  const seen = new Map<string, Seen>();
  for (const m of received) {
    if (m.direction !== 'in') continue;
    const at = m.sentAt ?? m.createdAt;
    const s = seen.get(m.leadId) ?? { confirmed: null, latest: null };
    if (m.replyLabel && (!s.confirmed || at >= s.confirmed.at)) s.confirmed = { at, label: m.replyLabel };
    if (!s.latest || at >= s.latest.at) s.latest = { at, label: m.replyLabelSuggested ?? null };
    seen.set(m.leadId, s);
  }
  const out = new Map<string, LeadLabel>();
  for (const [leadId, s] of seen) {
    out.set(leadId, s.confirmed ? { label: s.confirmed.label, confirmed: true } : { label: s.latest?.label ?? 'unlabelled', confirmed: false });
  }
  return out;
}

/** What results show of the labels of a set of replying leads. */
export type LabelSummary = { positiveReplies: number; positiveReplyRate: number; replyLabels: LabelCounts; replyLabelsConfirmed: number };

export function labelSummary(labels: Iterable<LeadLabel>): LabelSummary {
  const replyLabels = emptyLabelCounts();
  let replies = 0;
  let confirmed = 0;
  for (const l of labels) {
    replies++;
    replyLabels[l.label]++;
    if (l.confirmed) confirmed++;
  }
  return { positiveReplies: replyLabels.interested, positiveReplyRate: replies === 0 ? 0 : replyLabels.interested / replies, replyLabels, replyLabelsConfirmed: confirmed };
}
