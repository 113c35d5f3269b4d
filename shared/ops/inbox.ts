/**
 * The reply inbox: every received message of the workspace (sandbox, connector and email over
 * IMAP replies all arrive as `in` messages), newest first, with the lead, sender and campaign it
 * belongs to. A reply is "done" once someone dealt with it (messages.doneAt, a field of the
 * message, so it replicates to every desktop of the workspace).
 *
 * Labels: each reply arrives with a suggested label from its text (messages.replyLabelSuggested,
 * shared/replies/label.ts); a person confirms or changes it (inbox.setLabel: replyLabel, with who
 * and when). The label shown, filtered and counted is the confirmed one, else the suggestion
 * (labelOf). Confirming `unsubscribe` unsubscribes the lead (shared/replies/unsubscribe.ts); a
 * suggestion alone never does: the reply already stopped the lead's sequences, and a person decides
 * whether the lead is never to be contacted again.
 */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { REPLY_LABELS } from '../model/index.ts';
import type { Campaign, Lead, Message, ReplyLabel, Sender } from '../model/index.ts';
import { labelOf } from '../replies/label.ts';
import { markUnsubscribed } from '../replies/unsubscribe.ts';
import type { Cond, Page } from '../store.ts';
import { mutation, opsByName, query } from './define.ts';
import { cursor, DEFAULT_PAGE_SIZE, dryRun, pageLimit, qBool, uuid } from './params.ts';

const itemOut = z.object({
  messageId: z.string(),
  leadId: z.string(),
  leadName: z.string(),
  company: z.string(),
  sdrProfileId: z.string(),
  senderName: z.string(),
  campaignId: z.string().nullable(),
  campaignName: z.string().nullable(),
  chatId: z.string(),
  kind: z.string(),
  subject: z.string(),
  text: z.string(),
  /** When the person answered. */
  receivedAt: z.string(),
  doneAt: z.string().nullable(),
  /** The label: the one a person confirmed, else the suggestion from the text; null when neither. */
  label: z.enum(REPLY_LABELS).nullable(),
  /** What the rules suggested from the text when it arrived. */
  labelSuggested: z.enum(REPLY_LABELS).nullable(),
  /** Whether a person set the label (labelledBy, a member id, at labelledAt). */
  labelConfirmed: z.boolean(),
  labelledBy: z.string().nullable(),
  labelledAt: z.string().nullable(),
});

const isDone = (m: Message): boolean => typeof m.doneAt === 'string' && m.doneAt !== '';

/** A label filter: one of the labels, or `unlabelled` (neither confirmed nor suggested). */
const LABEL_FILTERS = [...REPLY_LABELS, 'unlabelled'] as const;
type LabelFilter = (typeof LABEL_FILTERS)[number];
const labelKey = (m: Message): LabelFilter => labelOf(m) ?? 'unlabelled';
const labelCounts = z.object(Object.fromEntries(LABEL_FILTERS.map((l) => [l, z.number().int()])) as Record<LabelFilter, z.ZodNumber>);

function filters(input: { sdrProfileId?: string | undefined; campaignId?: string | undefined }): Cond {
  const conds: Cond[] = [{ op: 'eq', field: 'direction', value: 'in' }];
  if (input.sdrProfileId) conds.push({ op: 'eq', field: 'sdrProfileId', value: input.sdrProfileId });
  if (input.campaignId) conds.push({ op: 'eq', field: 'campaignId', value: input.campaignId });
  return { op: 'and', conds };
}

/** The named sender and campaign exist in this workspace (another workspace's ids are not found). */
async function checkFilters(ctx: Ctx, input: { sdrProfileId?: string | undefined; campaignId?: string | undefined }): Promise<void> {
  if (input.sdrProfileId && !(await ctx.db.get('senders', input.sdrProfileId))) throw notFound('Sender', input.sdrProfileId);
  if (input.campaignId && !(await ctx.db.get('campaigns', input.campaignId))) throw notFound('Campaign', input.campaignId);
}

/** The received messages of these ids (each once), or the refusal of the first that is unknown
 * (404) or one we sent (`sent`): an inbox change applies to all of them or to none. */
async function receivedMessages(ctx: Ctx, ids: readonly string[], sent: (id: string) => DomainError): Promise<Message[]> {
  const out: Message[] = [];
  for (const id of new Set(ids)) {
    const m = await ctx.db.get('messages', id);
    if (!m) throw notFound('Message', id);
    if (m.direction !== 'in') throw sent(id);
    out.push(m);
  }
  return out;
}

const list = query({
  name: 'inbox.list',
  summary:
    'The reply inbox: received messages across campaigns and senders, newest first, a page at a time (cursor). By default only replies not yet marked done; done=true lists the done ones, all=true both. Filter by sender (sdrProfileId), campaign and label (the confirmed label, else the suggested one; unlabelled for neither).',
  input: z.object({
    sdrProfileId: uuid.optional(),
    campaignId: uuid.optional(),
    label: z.enum(LABEL_FILTERS).optional(),
    done: qBool.optional(),
    all: qBool.optional(),
    cursor,
    limit: pageLimit,
  }),
  output: z.object({ items: z.array(itemOut), nextCursor: z.string().nullable() }),
  async handler(input, ctx) {
    await checkFilters(ctx, input);
    const limit = input.limit ?? DEFAULT_PAGE_SIZE;
    const wantDone = input.done ?? false;
    const keep = (m: Message): boolean => (input.all === true || isDone(m) === wantDone) && (input.label === undefined || labelKey(m) === input.label);
    const found: Message[] = [];
    let next: string | null = input.cursor ?? null;
    // Pages of exactly what is still missing: every message read is either kept or skipped, so
    // the store's cursor after the last page is where the next call goes on.
    do {
      const page = await ctx.db.query('messages', {
        where: filters(input),
        orderBy: [{ field: 'sentAt', dir: 'desc' }, { field: 'id', dir: 'desc' }],
        limit: limit - found.length,
        cursor: next,
      });
      for (const m of page.docs) if (keep(m)) found.push(m);
      next = page.nextCursor;
    } while (next !== null && found.length < limit);

    const leads = new Map<string, Lead | null>();
    const senders = new Map<string, Sender | null>();
    const campaigns = new Map<string, Campaign | null>();
    const items = [];
    for (const m of found) {
      if (!leads.has(m.leadId)) leads.set(m.leadId, await ctx.db.get('leads', m.leadId));
      if (!senders.has(m.sdrProfileId)) senders.set(m.sdrProfileId, await ctx.db.get('senders', m.sdrProfileId));
      if (m.campaignId && !campaigns.has(m.campaignId)) campaigns.set(m.campaignId, await ctx.db.get('campaigns', m.campaignId));
      const lead = leads.get(m.leadId) ?? null;
      items.push({
        messageId: m.id,
        leadId: m.leadId,
        leadName: lead ? lead.fullName || [lead.firstName, lead.lastName].filter(Boolean).join(' ') || lead.email : 'Deleted lead',
        company: lead?.company ?? '',
        sdrProfileId: m.sdrProfileId,
        senderName: senders.get(m.sdrProfileId)?.name ?? 'Removed sender',
        campaignId: m.campaignId,
        campaignName: m.campaignId ? (campaigns.get(m.campaignId)?.name ?? null) : null,
        chatId: m.chatId,
        kind: m.kind,
        subject: m.subject,
        text: m.text,
        receivedAt: m.sentAt ?? m.createdAt,
        doneAt: isDone(m) ? (m.doneAt ?? null) : null,
        label: labelOf(m),
        labelSuggested: m.replyLabelSuggested ?? null,
        labelConfirmed: (m.replyLabel ?? null) !== null,
        labelledBy: m.replyLabel ? (m.replyLabelledBy ?? null) : null,
        labelledAt: m.replyLabel ? (m.replyLabelledAt ?? null) : null,
      });
    }
    return { items, nextCursor: next };
  },
});

const counts = query({
  name: 'inbox.counts',
  summary: 'How many received messages wait in the reply inbox (not marked done): in all, per sender, per campaign and per label (confirmed, else suggested; unlabelled for neither).',
  input: z.object({}),
  output: z.object({
    open: z.number().int(),
    bySender: z.array(z.object({ sdrProfileId: z.string(), open: z.number().int() })),
    byCampaign: z.array(z.object({ campaignId: z.string(), open: z.number().int() })),
    byLabel: labelCounts,
  }),
  async handler(_input, ctx) {
    const bySender = new Map<string, number>();
    const byCampaign = new Map<string, number>();
    const byLabel = Object.fromEntries(LABEL_FILTERS.map((l) => [l, 0])) as Record<LabelFilter, number>;
    let open = 0;
    let next: string | null = null;
    do {
      const page: Page<Message> = await ctx.db.query('messages', { where: filters({}), orderBy: [{ field: 'sentAt', dir: 'desc' }, { field: 'id', dir: 'desc' }], limit: 1000, cursor: next });
      for (const m of page.docs) {
        if (isDone(m)) continue;
        open++;
        bySender.set(m.sdrProfileId, (bySender.get(m.sdrProfileId) ?? 0) + 1);
        if (m.campaignId) byCampaign.set(m.campaignId, (byCampaign.get(m.campaignId) ?? 0) + 1);
        byLabel[labelKey(m)]++;
      }
      next = page.nextCursor;
    } while (next !== null);
    return {
      open,
      bySender: [...bySender].map(([sdrProfileId, n]) => ({ sdrProfileId, open: n })),
      byCampaign: [...byCampaign].map(([campaignId, n]) => ({ campaignId, open: n })),
      byLabel,
    };
  },
});

const setDone = mutation({
  name: 'inbox.setDone',
  summary:
    'Marks received messages done (done=true) or waiting again (done=false) in the reply inbox. Every id must be a received message of this workspace: otherwise nothing changes (404 for an unknown id, 422 for a message we sent). dryRun previews.',
  input: z.object({ messageIds: z.array(uuid).min(1).max(200), done: z.boolean(), dryRun }),
  output: z.object({ dryRun: z.boolean(), changed: z.number().int(), unchanged: z.number().int() }),
  dryRun: true,
  async handler(input, ctx) {
    const now = nowIso(ctx);
    const messages = await receivedMessages(ctx, input.messageIds, (id) =>
      new DomainError('INVALID_INPUT', 'Only a received message can be marked done in the inbox; this one was sent by us.', { messageId: id }));
    let changed = 0;
    for (const m of messages) {
      if (isDone(m) === input.done) continue;
      changed++;
      await ctx.db.put('messages', { ...m, doneAt: input.done ? now : null, updatedAt: now });
    }
    return { dryRun: ctx.dryRun, changed, unchanged: messages.length - changed };
  },
});

const setLabel = mutation({
  name: 'inbox.setLabel',
  summary:
    "Confirms or changes the label of received replies (interested, not_interested, out_of_office, wrong_person, unsubscribe, other), or clears it (null: back to the suggestion). Labelling a reply unsubscribe unsubscribes its lead: Do Not Contact, every running sequence stopped; clearing the label later does not undo that. Every id must be a received message of this workspace, otherwise nothing changes (404 for an unknown id, 422 for a message we sent). dryRun previews.",
  input: z.object({ messageIds: z.array(uuid).min(1).max(200), label: z.enum(REPLY_LABELS).nullable(), dryRun }),
  output: z.object({
    dryRun: z.boolean(),
    changed: z.number().int(),
    unchanged: z.number().int(),
    /** Leads this call unsubscribed (label unsubscribe on a lead not unsubscribed before). */
    unsubscribedLeadIds: z.array(z.string()),
  }),
  dryRun: true,
  async handler(input, ctx) {
    const now = nowIso(ctx);
    const label: ReplyLabel | null = input.label;
    const messages = await receivedMessages(ctx, input.messageIds, (id) =>
      new DomainError('RULE_VIOLATION', 'Only a received reply can be labelled; this message was sent by us.', { messageId: id }));
    let changed = 0;
    for (const m of messages) {
      if ((m.replyLabel ?? null) === label) continue;
      changed++;
      await ctx.db.put('messages', {
        ...m, replyLabel: label, replyLabelledBy: label === null ? null : ctx.actor.memberId, replyLabelledAt: label === null ? null : now, updatedAt: now,
      });
    }
    const unsubscribedLeadIds: string[] = [];
    if (label === 'unsubscribe') {
      for (const m of messages) {
        const lead = await ctx.db.get('leads', m.leadId);
        if (!lead || unsubscribedLeadIds.includes(lead.id)) continue;
        const done = await markUnsubscribed(ctx.db, { lead, source: 'reply', at: now, now, ids: ctx.ids, userId: ctx.actor.memberId, sdrProfileId: m.sdrProfileId, messageId: m.id });
        if (done) unsubscribedLeadIds.push(lead.id);
      }
    }
    return { dryRun: ctx.dryRun, changed, unchanged: messages.length - changed, unsubscribedLeadIds };
  },
});

export const ops = opsByName(list, counts, setDone, setLabel);
