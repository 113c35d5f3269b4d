/**
 * Inbound channel events: each tick the runner polls the channels of the senders it holds and
 * records what happened, then stores the poll cursor. Each event kind has its own function below
 * (`INBOUND_HANDLERS` maps a kind to it), so a new kind is one function and one map entry.
 */
import { newMessage } from '../model/factories.ts';
import type { Enrollment, Lead, Sender } from '../model/index.ts';
import { suggestReplyLabel } from '../replies/label.ts';
import { markUnsubscribed } from '../replies/unsubscribe.ts';
import { newUnsubscribeKey, verifyUnsubscribeToken } from '../replies/unsubscribe-token.ts';
import type { Tx } from '../tx.ts';
import { ChannelFailure } from './channel.ts';
import type { ChannelEvent } from './channel.ts';
import type { Leases } from './leases.ts';
import { and, clip, eq, errorText, later } from './runner-core.ts';
import type { RunnerCore, TickReport, TickState } from './runner-core.ts';
import { advanceStage, eventActivity } from './timeline.ts';
import type { EventMeta } from './timeline.ts';

/** What an event handler works with: the lead's enrollments (newest first) and the unit of work. */
export type InboundContext = {
  core: RunnerCore;
  st: TickState;
  tx: Tx;
  sender: Sender;
  lead: Lead;
  /** Every enrollment of the lead, newest first. */
  enrollments: Enrollment[];
  /** Those still IN_PROGRESS. */
  running: Enrollment[];
  /** The newest enrollment worked by this sender. */
  withSender: Enrollment | null;
  /** Who the timeline entries are written as (the sender's owner). */
  user: string;
  counts: TickReport['events'];
};

export type InboundHandler<K extends ChannelEvent['kind']> = (ctx: InboundContext, ev: Extract<ChannelEvent, { kind: K }>) => Promise<void>;

/** A reply stops every running sequence of the lead, logs the message (with the label its text
 * suggests, shared/replies/label.ts) and moves the lead to ENGAGED. */
export async function onReply(ctx: InboundContext, ev: Extract<ChannelEvent, { kind: 'reply' }>): Promise<void> {
  const { core, st, tx, sender, lead, running, user } = ctx;
  const at = ev.at;
  for (const e of running) {
    await tx.put('enrollments', { ...e, status: 'REPLIED', stoppedReason: 'replied', nextActionAt: null, waitReason: null, inConversationAt: e.inConversationAt ?? at, updatedAt: st.nowIso });
  }
  const { docs: chat } = await tx.query('messages', { where: and(eq('chatId', ev.chatId), eq('direction', 'out')), orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 1 });
  const last = chat[0];
  const campaignId = running[0]?.campaignId ?? last?.campaignId ?? null;
  const isEmail = last?.kind === 'email';
  const message = newMessage({ id: core.ids.uuid(), workspaceId: lead.workspaceId, now: st.nowIso }, {
    leadId: lead.id, sdrProfileId: sender.id, chatId: ev.chatId, direction: 'in', kind: isEmail ? 'email' : 'message', text: ev.text,
    subject: isEmail && last ? (/^re:/i.test(last.subject) ? last.subject : `Re: ${last.subject}`) : '',
    status: 'received', sentAt: at, externalId: ev.externalId, campaignId,
    replyLabelSuggested: suggestReplyLabel(ev.text)?.label ?? null,
  });
  await tx.put('messages', message);
  const meta: EventMeta = { campaignId, sdrProfileId: sender.id, messageId: message.id };
  const stopped = running.length > 0 ? ' The sequence stopped.' : '';
  await tx.put('activities', eventActivity(core.ids, lead, user, st.nowIso, 'reply_received', `${lead.fullName || 'The lead'} replied to ${sender.name}: "${clip(ev.text)}".${stopped}`, meta));
  let next: Lead = { ...lead, lastActivityAt: later(lead.lastActivityAt, at), updatedAt: st.nowIso };
  const moved = advanceStage(core.ids, next, 'ENGAGED', st.stages, user, st.nowIso, meta);
  if (moved) {
    next = moved.lead;
    await tx.put('activities', moved.event);
  }
  await tx.put('leads', next);
  ctx.counts.replies++;
}

/** An accepted connection request marks the sender's enrollment as in conversation. */
export async function onConnectionAccepted(ctx: InboundContext, ev: Extract<ChannelEvent, { kind: 'connection_accepted' }>): Promise<void> {
  const { core, st, tx, sender, lead, withSender, user } = ctx;
  if (withSender && withSender.inConversationAt === null) {
    await tx.put('enrollments', { ...withSender, inConversationAt: ev.at, updatedAt: st.nowIso });
  }
  await tx.put('activities', eventActivity(core.ids, lead, user, st.nowIso, 'connection_accepted', `${lead.fullName || 'The lead'} accepted ${sender.name}'s connection request.`, {
    campaignId: withSender?.campaignId ?? null, sdrProfileId: sender.id,
  }));
  ctx.counts.connectionsAccepted++;
}

/** A booked meeting stops the running sequences and moves the lead to MEETING_BOOKED. */
export async function onMeetingBooked(ctx: InboundContext, ev: Extract<ChannelEvent, { kind: 'meeting_booked' }>): Promise<void> {
  const { core, st, tx, sender, lead, running, withSender, user } = ctx;
  for (const e of running) {
    await tx.put('enrollments', { ...e, status: 'STOPPED', stoppedReason: 'meeting_booked', nextActionAt: null, waitReason: null, updatedAt: st.nowIso });
  }
  const campaignId = running[0]?.campaignId ?? withSender?.campaignId ?? null;
  const meta: EventMeta = { campaignId, sdrProfileId: sender.id };
  await tx.put('activities', eventActivity(core.ids, lead, user, st.nowIso, 'meeting_booked', `${lead.fullName || 'The lead'} booked a meeting with ${sender.name}.`, meta));
  let next: Lead = { ...lead, meetingBookedAt: ev.at, lastActivityAt: later(lead.lastActivityAt, ev.at), updatedAt: st.nowIso };
  const moved = advanceStage(core.ids, next, 'MEETING_BOOKED', st.stages, user, st.nowIso, meta);
  if (moved) {
    next = moved.lead;
    await tx.put('activities', moved.event);
  }
  await tx.put('leads', next);
  ctx.counts.meetingsBooked++;
}

/** The first open of an email is stamped on the message and logged; later opens are ignored. */
export async function onEmailOpened(ctx: InboundContext, ev: Extract<ChannelEvent, { kind: 'email_opened' }>): Promise<void> {
  const { core, st, tx, sender, lead, user } = ctx;
  const { docs } = await tx.query('messages', { where: and(eq('externalId', ev.externalId), eq('sdrProfileId', sender.id)), limit: 1 });
  const m = docs[0];
  if (m && m.openedAt !== null) return;
  if (m) await tx.put('messages', { ...m, openedAt: ev.at, updatedAt: st.nowIso });
  await tx.put('activities', eventActivity(core.ids, lead, user, st.nowIso, 'email_opened', `${lead.fullName || 'The lead'} opened ${m ? `"${clip(m.subject)}"` : 'an email'}.`, {
    campaignId: m?.campaignId ?? null, sdrProfileId: sender.id, messageId: m?.id ?? null,
  }));
  ctx.counts.emailsOpened++;
}

/** An automatic answer (out of office, auto-responder) is logged on the timeline; it is not a
 * reply, so the sequence goes on and the stage stays. */
export async function onAutoReply(ctx: InboundContext, ev: Extract<ChannelEvent, { kind: 'auto_reply' }>): Promise<void> {
  const { core, st, tx, sender, lead, running, withSender, user } = ctx;
  const { docs: chat } = await tx.query('messages', { where: and(eq('chatId', ev.chatId), eq('direction', 'out')), orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 1 });
  const campaignId = chat[0]?.campaignId ?? running[0]?.campaignId ?? withSender?.campaignId ?? null;
  const body = clip(ev.text || ev.subject);
  await tx.put('activities', eventActivity(core.ids, lead, user, st.nowIso, 'auto_reply_received',
    `Automatic reply from ${lead.fullName || 'the lead'} to ${sender.name}${ev.subject ? ` ("${clip(ev.subject)}")` : ''}${body && body !== clip(ev.subject) ? `: "${body}"` : ''}. Not a reply: the sequence goes on.`,
    { campaignId, sdrProfileId: sender.id }));
  await tx.put('leads', { ...lead, lastActivityAt: later(lead.lastActivityAt, ev.at), updatedAt: st.nowIso });
}

/** What marking a lead's email as bounced needs to know. */
export type EmailBounceMark = { at: string; status: string; reason: string; recipient: string; campaignId: string | null; messageId: string | null };

/**
 * A hard bounce: the lead's email is marked bounced (emailBouncedAt, emailBounceReason), the
 * bounced message says why, and the lead's running sequences worked by email senders stop (their
 * every step is an email); sequences on other channels go on, and their email steps are skipped
 * (act.ts). Used for reports found in the mailbox and for refusals while sending.
 */
export async function markEmailBounced(core: RunnerCore, st: TickState, tx: Tx, sender: Sender, lead: Lead, enrollments: readonly Enrollment[], b: EmailBounceMark): Promise<Lead> {
  const why = `${b.status ? `${b.status} ` : ''}${b.reason}`.trim().slice(0, 500);
  const user = core.userOf(sender);
  for (const e of enrollments) {
    if (e.status !== 'IN_PROGRESS') continue;
    const worker = e.sdrProfileId === null ? null : (st.senders.get(e.sdrProfileId) ?? (await tx.get('senders', e.sdrProfileId)));
    if (!worker || worker.channel !== 'email') continue;
    await tx.put('enrollments', { ...e, status: 'STOPPED', stoppedReason: 'email_bounced', nextActionAt: null, waitReason: null, updatedAt: st.nowIso });
  }
  await tx.put('activities', eventActivity(core.ids, lead, user, st.nowIso, 'email_bounced',
    `Email to ${b.recipient || lead.email || 'the lead'} bounced: ${why || 'the address does not work'}. Email steps to this lead stop.`,
    { campaignId: b.campaignId, sdrProfileId: sender.id, messageId: b.messageId }));
  const next: Lead = { ...lead, emailBouncedAt: lead.emailBouncedAt ?? b.at, emailBounceReason: why || 'the address does not work', lastActivityAt: later(lead.lastActivityAt, b.at), updatedAt: st.nowIso };
  await tx.put('leads', next);
  return next;
}

/** A delivery-status report: a hard bounce marks the lead's email (markEmailBounced); a soft one
 * (delayed, 4.x.x) is only logged, since the mail server keeps trying. */
export async function onBounce(ctx: InboundContext, ev: Extract<ChannelEvent, { kind: 'bounce' }>): Promise<void> {
  const { core, st, tx, sender, lead, enrollments, running, user } = ctx;
  const byId = ev.originalMessageId
    ? (await tx.query('messages', { where: and(eq('externalId', ev.originalMessageId), eq('sdrProfileId', sender.id)), limit: 1 })).docs[0]
    : undefined;
  const ours = byId ?? (await tx.query('messages', { where: and(eq('chatId', ev.chatId), eq('direction', 'out')), orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 1 })).docs[0];
  const campaignId = ours?.campaignId ?? running[0]?.campaignId ?? null;
  const why = `${ev.status ? `${ev.status} ` : ''}${ev.reason}`.trim();
  if (ev.severity === 'soft') {
    await tx.put('activities', eventActivity(core.ids, lead, user, st.nowIso, 'email_delayed',
      `Email to ${ev.recipient || lead.email} is delayed (${why || 'no reason given'}); the mail server keeps trying.`, { campaignId, sdrProfileId: sender.id, messageId: ours?.id ?? null }));
    return;
  }
  // The same report read twice (a mailbox rebuilt) marks nothing again.
  if (lead.emailBouncedAt && ours?.error?.startsWith('Bounced')) return;
  if (ours && ours.direction === 'out') await tx.put('messages', { ...ours, error: `Bounced: ${why}`.slice(0, 2000), updatedAt: st.nowIso });
  await markEmailBounced(core, st, tx, sender, lead, enrollments, { at: ev.at, status: ev.status, reason: ev.reason, recipient: ev.recipient, campaignId, messageId: ours?.id ?? null });
}

/**
 * A mail to the sender's mailbox through our List-Unsubscribe mailto: marks the lead unsubscribed
 * (shared/replies/unsubscribe.ts) when its token was signed with this sender's key for this lead;
 * anything else (a forged or altered token, another sender's) changes nothing and is reported.
 */
export async function onUnsubscribe(ctx: InboundContext, ev: Extract<ChannelEvent, { kind: 'unsubscribe' }>): Promise<void> {
  const { core, st, tx, sender, lead, user } = ctx;
  const claim = sender.unsubscribeKey ? await verifyUnsubscribeToken(sender.unsubscribeKey, ev.token) : null;
  if (!claim || claim.sdrProfileId !== sender.id || claim.leadId !== lead.id || claim.workspaceId !== lead.workspaceId) {
    st.report.errors.push({ message: `An unsubscribe mail (${ev.externalId}) carried a token this sender did not sign; nothing was changed.`, sdrProfileId: sender.id });
    return;
  }
  await markUnsubscribed(tx, { lead, source: 'mailto', at: ev.at, now: st.nowIso, ids: core.ids, userId: user, sdrProfileId: sender.id });
}

export const INBOUND_HANDLERS: { [K in ChannelEvent['kind']]: InboundHandler<K> } = {
  reply: onReply,
  connection_accepted: onConnectionAccepted,
  meeting_booked: onMeetingBooked,
  email_opened: onEmailOpened,
  auto_reply: onAutoReply,
  bounce: onBounce,
  unsubscribe: onUnsubscribe,
};

/** Records one event in `tx` (nothing when its lead no longer exists). */
export async function applyEvent(core: RunnerCore, st: TickState, tx: Tx, sender: Sender, ev: ChannelEvent, counts: TickReport['events']): Promise<void> {
  const lead = await tx.get('leads', ev.leadId);
  if (!lead) return;
  const { docs: enrollments } = await tx.query('enrollments', { where: eq('leadId', lead.id), orderBy: [{ field: 'createdAt', dir: 'desc' }] });
  const ctx: InboundContext = {
    core, st, tx, sender, lead, enrollments,
    running: enrollments.filter((e) => e.status === 'IN_PROGRESS'),
    withSender: enrollments.find((e) => e.sdrProfileId === sender.id) ?? null,
    user: core.userOf(sender),
    counts,
  };
  await dispatch(ctx, ev);
}

function dispatch(ctx: InboundContext, ev: ChannelEvent): Promise<void> {
  switch (ev.kind) {
    case 'reply':
      return INBOUND_HANDLERS.reply(ctx, ev);
    case 'connection_accepted':
      return INBOUND_HANDLERS.connection_accepted(ctx, ev);
    case 'meeting_booked':
      return INBOUND_HANDLERS.meeting_booked(ctx, ev);
    case 'email_opened':
      return INBOUND_HANDLERS.email_opened(ctx, ev);
    case 'auto_reply':
      return INBOUND_HANDLERS.auto_reply(ctx, ev);
    case 'bounce':
      return INBOUND_HANDLERS.bounce(ctx, ev);
    case 'unsubscribe':
      return INBOUND_HANDLERS.unsubscribe(ctx, ev);
  }
}

const emptyCounts = (): TickReport['events'] => ({ replies: 0, connectionsAccepted: 0, meetingsBooked: 0, emailsOpened: 0 });

function addCounts(st: TickState, c: TickReport['events']): void {
  for (const k of Object.keys(c) as (keyof TickReport['events'])[]) st.report.events[k] += c[k];
}

const IDLE_POLL_FIRST_MS = 30_000;
const IDLE_POLL_MAX_MS = 10 * 60_000;

export function createInbound(core: RunnerCore, leases: Leases) {
  const { cursors, channelOf, commitWithRetry } = core;

  /** Reads a sender's new events and records them together (one by one when together fails). */
  /** Connector senders whose last polls brought nothing: polled again with a growing pause
   * (IDLE_POLL_FIRST_MS doubling up to IDLE_POLL_MAX_MS) instead of every tick; any event, or an
   * action of the sender (a reply may follow), polls again at the next tick. */
  const idle = new Map<string, { misses: number; nextAt: number; lastAction: number }>();

  function idleWait(st: TickState, sender: Sender): boolean {
    if (sender.channel !== 'http') return false;
    const i = idle.get(sender.id);
    if (!i) return false;
    const acted = core.actedCount.get(sender.id) ?? 0;
    if (acted !== i.lastAction) {
      idle.delete(sender.id);
      return false;
    }
    return st.nowMs < i.nextAt;
  }

  function noteIdle(st: TickState, sender: Sender, quiet: boolean): void {
    if (sender.channel !== 'http') return;
    if (!quiet) {
      idle.delete(sender.id);
      return;
    }
    const misses = (idle.get(sender.id)?.misses ?? 0) + 1;
    const pause = Math.min(IDLE_POLL_MAX_MS, IDLE_POLL_FIRST_MS * 2 ** (misses - 1));
    idle.set(sender.id, { misses, nextAt: st.nowMs + pause, lastAction: core.actedCount.get(sender.id) ?? 0 });
  }

  /**
   * An email sender from before unsubscribe keys existed gets one here: the runner holding its
   * lease is its only writer, and this runs before the tick's sends, so its emails carry a signed
   * unsubscribe link from the first tick on (senders made since get theirs at creation).
   */
  async function ensureUnsubscribeKey(st: TickState, sender: Sender): Promise<Sender> {
    if (sender.channel !== 'email' || sender.unsubscribeKey) return sender;
    let out = sender;
    await commitWithRetry(async (tx) => {
      const s = await tx.get('senders', sender.id);
      if (!s) return;
      out = s.unsubscribeKey ? s : { ...s, unsubscribeKey: newUnsubscribeKey(core.randomBytes), updatedAt: st.nowIso };
      if (out !== s) await tx.put('senders', out);
    });
    st.senders.set(out.id, out);
    return out;
  }

  async function pollSender(st: TickState, held: Sender): Promise<void> {
    if (held.status === 'disconnected' || held.status === 'limited') return;
    const channel = channelOf(held);
    if (!channel) return;
    const sender = await ensureUnsubscribeKey(st, held);
    if (idleWait(st, sender)) {
      st.report.pollsSkipped++;
      return;
    }
    const cursor = cursors.get(sender.id) ?? sender.pollCursor ?? null;
    let events: ChannelEvent[];
    let nextCursor: string;
    try {
      const res = await channel.poll(sender, cursor);
      events = res.events;
      nextCursor = res.cursor;
    } catch (e) {
      // An account-level failure backs the sender off; anything else is only reported.
      if (e instanceof ChannelFailure && e.kind !== 'rejected' && e.kind !== 'unsupported') await leases.senderFailure(st, sender, e);
      else st.report.errors.push({ message: `Polling failed: ${errorText(e)}`, sdrProfileId: sender.id });
      return;
    }
    noteIdle(st, sender, events.length === 0);
    if (events.length === 0) {
      cursors.set(sender.id, nextCursor);
      return;
    }
    const storeCursor = async (tx: Tx): Promise<void> => {
      const s = await tx.get('senders', sender.id);
      if (s && s.pollCursor !== nextCursor) {
        const next = { ...s, pollCursor: nextCursor, updatedAt: st.nowIso };
        await tx.put('senders', next);
        st.senders.set(s.id, next);
      }
    };
    try {
      let counts = emptyCounts();
      await commitWithRetry(async (tx) => {
        counts = emptyCounts();
        for (const ev of events) await applyEvent(core, st, tx, sender, ev, counts);
        await storeCursor(tx);
      });
      addCounts(st, counts);
    } catch (e) {
      // One event the rules refuse must not block the others: record them one by one.
      st.report.errors.push({ message: `Recording events together failed (${errorText(e)}); recording them one by one.`, sdrProfileId: sender.id });
      for (const ev of events) {
        let counts = emptyCounts();
        try {
          await commitWithRetry(async (tx) => {
            counts = emptyCounts();
            await applyEvent(core, st, tx, sender, ev, counts);
          });
          addCounts(st, counts);
        } catch (err) {
          st.report.errors.push({ message: `Event ${ev.kind} for lead ${ev.leadId} not recorded: ${errorText(err)}`, sdrProfileId: sender.id });
        }
      }
      try {
        await commitWithRetry(storeCursor);
      } catch (err) {
        // Kept in memory; stored with the next successful sender write.
        st.report.errors.push({ message: `Poll cursor not stored: ${errorText(err)}`, sdrProfileId: sender.id });
      }
    }
    cursors.set(sender.id, nextCursor);
  }

  return { pollSender };
}
