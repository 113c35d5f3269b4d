/**
 * The outreach runner: each tick it reads the channel events of the senders it hosts, delivers
 * queued direct messages, and executes the due steps of running campaigns, inside the campaign's
 * sending window and the sender's daily limits. It is deterministic over its injected clock, random
 * source and ids, and keeps no state that matters in memory: progress (doneSteps), counters (usage)
 * and leases live in the store, so a fresh runner over the same store continues exactly.
 *
 * Every write goes through shared/rules like an operation's (staged on a Tx, validated, committed).
 * A network action happens before the commit that records it; the commit is retried on a conflict
 * so an action that happened is always recorded.
 */
import type { Actor, Clock, Ids } from '../context.ts';
import { DomainError } from '../errors.ts';
import { renderMergeFields } from '../merge-fields.ts';
import { newEnrollment, newMessage } from '../model/factories.ts';
import type { Campaign, Enrollment, Lead, LeadGroup, Message, Sender, Stage, Step, Workspace } from '../model/index.ts';
import { readiness as defaultReadiness, senderStepProblems } from '../rules/readiness.ts';
import type { Readiness, ReadinessInput } from '../rules/readiness.ts';
import { validateWrites } from '../rules/index.ts';
import { STEP_LABELS, firstStep, nextOnPath } from '../sequence.ts';
import type { Cond, Store } from '../store.ts';
import { Tx } from '../tx.ts';
import { ChannelFailure } from './channel.ts';
import type { Channel, ChannelAction, ChannelEvent, ChannelHost, ChannelSendResult, EmailThread } from './channel.ts';
import { budgetsFor, consume, hasRoom, senderDay, usageId, usageOrEmpty } from './limits.ts';
import type { Budget } from './limits.ts';
import { isOpen, nextOpening, startOfNextDay } from './schedule.ts';
import { advanceStage, categoryOf, eventActivity } from './timeline.ts';
import type { EventMeta } from './timeline.ts';
import { derivedUuid } from './hash.ts';
import { firstOfBranch, isAction, resumePoint } from './walk.ts';

export type Spacing = { minSeconds: number; jitterSeconds: number };

export type RunnerOptions = {
  store: Store;
  clock: Clock;
  /** Uniform in [0, 1): jitter and random variants. */
  random: () => number;
  ids: Ids;
  channels: ChannelHost;
  /** Only these senders (default: every sender whose channel this host resolves). */
  hostedSenderIds?: readonly string[];
  /** Who the runner's writes are validated as (a system actor of the workspace). */
  actor: Actor;
  /** Identity for sender leases; without it the runner takes no lease (a single runner, tests). */
  runnerId?: string;
  /** How long a lease lasts without renewal (default 5 minutes). */
  leaseMs?: number;
  /** Gap between two actions of one sender (default 60 s plus up to 120 s of jitter). */
  spacing?: Spacing;
  /** First backoff after a channel failure without Retry-After (default 15 minutes; doubles). */
  backoffSeconds?: number;
  readiness?: (campaign: Campaign, input: ReadinessInput) => Readiness;
};

export type TickReport = {
  at: string;
  /** Network actions performed (campaign steps and direct messages). */
  actions: number;
  byKind: Partial<Record<Message['kind'], number>>;
  directMessages: number;
  /** Waits and conditions passed. */
  transitions: number;
  /** Enrollments whose nextActionAt moved, by reason. */
  deferred: { outsideWindow: number; dailyLimit: number; senderLimited: number };
  /** Due enrollments left as they are this tick (sender paused, not hosted here, spacing). */
  waiting: number;
  stopped: number;
  completed: number;
  failed: number;
  relayed: number;
  events: { replies: number; connectionsAccepted: number; meetingsBooked: number; emailsOpened: number };
  skippedCampaigns: { campaignId: string; name: string; problems: string[] }[];
  senders: { held: string[]; heldElsewhere: string[]; limited: string[]; disconnected: string[]; resumed: string[] };
  errors: { message: string; enrollmentId?: string; sdrProfileId?: string; messageId?: string }[];
};

export type Runner = {
  readonly runnerId: string | null;
  tick(): Promise<TickReport>;
  /** Gives up the leases this runner holds (on shutdown), so another host may take over at once. */
  release(): Promise<void>;
};

const MAX_RECORD_ATTEMPTS = 4;
const CONTACT_KINDS: readonly Message['kind'][] = ['message', 'inmail', 'email', 'connection_request', 'voice_note'];

type TickState = {
  now: Date;
  nowMs: number;
  nowIso: string;
  report: TickReport;
  senders: Map<string, Sender>;
  held: Set<string>;
  stages: Map<string, Stage>;
  groups: Map<string, LeadGroup>;
  campaigns: Map<string, Campaign>;
  /** IN_PROGRESS enrollments per sender, per campaign (for balancing pick-ups); computed lazily. */
  load: Map<string, Map<string, number>>;
  /** Assignments per variant, per campaign and step (round robin); computed lazily. */
  rr: Map<string, Map<string, number>>;
  /** Time-zone arithmetic is the costly part of a tick: each answer is computed once per tick. */
  memo: Map<string, unknown>;
};

function memo<T>(st: TickState, key: string, compute: () => T): T {
  if (st.memo.has(key)) return st.memo.get(key) as T;
  const v = compute();
  st.memo.set(key, v);
  return v;
}
const openNow = (st: TickState, c: Campaign): boolean => memo(st, `open|${c.id}`, () => isOpen(c.schedule, st.now));
const dayOf = (st: TickState, s: Sender): string => memo(st, `day|${s.id}|${s.timeZone}`, () => senderDay(s, st.now));
const dayAfter = (st: TickState, s: Sender): Date => memo(st, `next|${s.id}|${s.timeZone}`, () => startOfNextDay(s.timeZone, st.now));
const openingFrom = (st: TickState, c: Campaign, from: Date): Date | null => memo(st, `opening|${c.id}|${from.getTime()}`, () => nextOpening(c.schedule, from));

const isConflict = (e: unknown): boolean => e instanceof DomainError && e.code === 'CONFLICT';
const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function emptyReport(at: string): TickReport {
  return {
    at, actions: 0, byKind: {}, directMessages: 0, transitions: 0,
    deferred: { outsideWindow: 0, dailyLimit: 0, senderLimited: 0 },
    waiting: 0, stopped: 0, completed: 0, failed: 0, relayed: 0,
    events: { replies: 0, connectionsAccepted: 0, meetingsBooked: 0, emailsOpened: 0 },
    skippedCampaigns: [],
    senders: { held: [], heldElsewhere: [], limited: [], disconnected: [], resumed: [] },
    errors: [],
  };
}

const and = (...conds: Cond[]): Cond => ({ op: 'and', conds });
const eq = (field: string, value: string | number | boolean | null): Cond => ({ op: 'eq', field, value });

/** The step an enrollment executes next: its current step, or where it resumes after an edit. */
function currentStep(c: Campaign, e: Enrollment): Step | null {
  const done = new Set(e.doneSteps.map((d) => d.stepId));
  if (e.currentStepId !== null) {
    const s = c.steps.find((x) => x.id === e.currentStepId);
    if (s && !done.has(s.id)) return s;
  }
  // A finished path (currentStepId null after its last step) resumes nowhere unless steps were added.
  return resumePoint(c.steps, e.doneSteps);
}

/** The message kind and limits of an action step. */
function actionKind(step: Step): Message['kind'] {
  switch (step.type) {
    case 'SEND_MESSAGE':
      return step.voiceNote.mode === 'none' ? 'message' : 'voice_note';
    case 'CONNECTION_REQUEST':
      return 'connection_request';
    case 'INMAIL':
      return 'inmail';
    case 'EMAIL':
      return 'email';
    case 'PROFILE_VISIT':
      return 'profile_visit';
    default:
      return 'reaction';
  }
}

const KIND_WORDS: Record<Message['kind'], string> = {
  message: 'Message', inmail: 'InMail', email: 'Email', connection_request: 'Connection request', voice_note: 'Voice note',
  reaction: 'Reaction to a post', profile_visit: 'Profile visit',
};

export function createRunner(opts: RunnerOptions): Runner {
  const { store, clock, random, ids, channels, actor } = opts;
  const runnerId = opts.runnerId ?? null;
  const leaseMs = opts.leaseMs ?? 5 * 60_000;
  const spacing = opts.spacing ?? { minSeconds: 60, jitterSeconds: 120 };
  const baseBackoff = opts.backoffSeconds ?? 15 * 60;
  const judge = opts.readiness ?? defaultReadiness;
  const hostedIds = opts.hostedSenderIds ? new Set(opts.hostedSenderIds) : null;

  /** Earliest next action per sender (spacing); memory only: a restart may act once sooner. */
  const nextSlot = new Map<string, number>();
  /** Poll cursors not yet stored on the sender (stored with the next lease renewal or events). */
  const cursors = new Map<string, string>();
  /** Consecutive channel failures per sender, for escalating backoff. */
  const failures = new Map<string, number>();
  let ticking = false;

  async function commit(tx: Tx): Promise<void> {
    const writes = tx.writes();
    if (writes.length === 0) return;
    await validateWrites(writes, { actor, read: tx, now: clock.now() });
    await store.commit(writes);
  }

  /** Builds and commits a unit of work, rebuilding it from fresh reads when the store moved on. */
  async function commitWithRetry(build: (tx: Tx) => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const tx = new Tx(store);
      await build(tx);
      try {
        await commit(tx);
        return;
      } catch (e) {
        if (!isConflict(e) || attempt >= MAX_RECORD_ATTEMPTS) throw e;
      }
    }
  }

  const channelOf = (s: Sender): Channel | null => channels.channelFor(s);
  const userOf = (s: Sender | null | undefined): string => s?.ownerMemberId ?? actor.memberId;
  const slotFree = (st: TickState, s: Sender): boolean => (nextSlot.get(s.id) ?? 0) <= st.nowMs;
  function useSlot(st: TickState, s: Sender): void {
    const gap = (spacing.minSeconds + random() * spacing.jitterSeconds) * 1000;
    nextSlot.set(s.id, st.nowMs + gap);
  }

  // ---------------------------------------------------------------- senders: lease, backoff, failures

  /** Takes or renews this runner's lease and ends an expired backoff; false when another runner
   * holds the sender. */
  async function prepareSender(st: TickState, id: string): Promise<boolean> {
    let ok = true;
    try {
      await commitWithRetry(async (tx) => {
        ok = true;
        const s = await tx.get('senders', id);
        if (!s) {
          ok = false;
          return;
        }
        let next: Sender = s;
        if (runnerId !== null) {
          const until = s.runnerLeaseUntil ? Date.parse(s.runnerLeaseUntil) : 0;
          if (s.runnerId && s.runnerId !== runnerId && until > st.nowMs) {
            ok = false;
            st.senders.set(s.id, s);
            return;
          }
          if (s.runnerId !== runnerId || until - st.nowMs < leaseMs / 2) {
            next = { ...next, runnerId, runnerLeaseUntil: new Date(st.nowMs + leaseMs).toISOString(), pollCursor: cursors.get(s.id) ?? s.pollCursor ?? null };
          }
        }
        if (s.status === 'limited' && (!s.backoffUntil || Date.parse(s.backoffUntil) <= st.nowMs)) {
          next = { ...next, status: 'available', backoffUntil: null, statusReason: null };
          st.report.senders.resumed.push(s.id);
        }
        if (next !== s) {
          next = { ...next, updatedAt: st.nowIso };
          await tx.put('senders', next);
        }
        st.senders.set(s.id, next);
      });
    } catch (e) {
      if (!isConflict(e)) st.report.errors.push({ message: `Could not prepare sender: ${errorText(e)}`, sdrProfileId: id });
      return false;
    }
    return ok;
  }

  /** A channel failure that concerns the account: back off (limited) or disconnect, visibly. */
  async function senderFailure(st: TickState, sender: Sender, f: ChannelFailure): Promise<void> {
    const n = (failures.get(sender.id) ?? 0) + 1;
    failures.set(sender.id, n);
    const seconds = f.retryAfterSeconds ?? Math.min(6 * 3600, baseBackoff * 2 ** (n - 1));
    const until = new Date(st.nowMs + seconds * 1000).toISOString();
    await commitWithRetry(async (tx) => {
      const s = await tx.get('senders', sender.id);
      if (!s) return;
      const next: Sender =
        f.kind === 'unauthorized'
          ? { ...s, status: 'disconnected', backoffUntil: null, statusReason: `The network refused the account's credentials: ${f.message}`, updatedAt: st.nowIso }
          : {
              ...s, status: 'limited', backoffUntil: until, updatedAt: st.nowIso,
              statusReason: f.kind === 'limited' ? `The network asked to slow down (${f.message}); resuming at ${until}.` : `The channel failed (${f.message}); retrying at ${until}.`,
            };
      await tx.put('senders', next);
      st.senders.set(s.id, next);
    });
    if (f.kind === 'unauthorized') st.report.senders.disconnected.push(sender.id);
    else st.report.senders.limited.push(sender.id);
  }

  /** Why a sender cannot act for a campaign now: 'wait' leaves the enrollment as it is; a date
   * defers it; null means it may act. */
  function senderGate(st: TickState, c: Campaign, senderId: string): null | 'wait' | { until: Date } {
    const s = st.senders.get(senderId);
    if (!s || !st.held.has(senderId)) return 'wait';
    const entry = c.senders.find((x) => x.sdrProfileId === senderId);
    // Removed from the campaign: leads in conversation wait until moved with bulkChangeSender.
    if (!entry || entry.paused || s.outreachPaused || s.status === 'paused' || s.status === 'disconnected') return 'wait';
    if (s.status === 'limited') return s.backoffUntil && Date.parse(s.backoffUntil) > st.nowMs ? { until: new Date(s.backoffUntil) } : 'wait';
    return null;
  }

  // ---------------------------------------------------------------- channel events

  async function pollSender(st: TickState, sender: Sender): Promise<void> {
    if (sender.status === 'disconnected' || sender.status === 'limited') return;
    const channel = channelOf(sender);
    if (!channel) return;
    const cursor = cursors.get(sender.id) ?? sender.pollCursor ?? null;
    let events: ChannelEvent[];
    let nextCursor: string;
    try {
      const res = await channel.poll(sender, cursor);
      events = res.events;
      nextCursor = res.cursor;
    } catch (e) {
      // An account-level failure backs the sender off; anything else is only reported.
      if (e instanceof ChannelFailure && e.kind !== 'rejected' && e.kind !== 'unsupported') await senderFailure(st, sender, e);
      else st.report.errors.push({ message: `Polling failed: ${errorText(e)}`, sdrProfileId: sender.id });
      return;
    }
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
      const counts = { replies: 0, connectionsAccepted: 0, meetingsBooked: 0, emailsOpened: 0 };
      await commitWithRetry(async (tx) => {
        counts.replies = counts.connectionsAccepted = counts.meetingsBooked = counts.emailsOpened = 0;
        for (const ev of events) await applyEvent(st, tx, sender, ev, counts);
        await storeCursor(tx);
      });
      addCounts(st, counts);
    } catch (e) {
      // One event the rules refuse must not block the others: record them one by one.
      st.report.errors.push({ message: `Recording events together failed (${errorText(e)}); recording them one by one.`, sdrProfileId: sender.id });
      for (const ev of events) {
        const counts = { replies: 0, connectionsAccepted: 0, meetingsBooked: 0, emailsOpened: 0 };
        try {
          await commitWithRetry(async (tx) => applyEvent(st, tx, sender, ev, counts));
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

  function addCounts(st: TickState, c: TickReport['events']): void {
    st.report.events.replies += c.replies;
    st.report.events.connectionsAccepted += c.connectionsAccepted;
    st.report.events.meetingsBooked += c.meetingsBooked;
    st.report.events.emailsOpened += c.emailsOpened;
  }

  async function applyEvent(st: TickState, tx: Tx, sender: Sender, ev: ChannelEvent, counts: TickReport['events']): Promise<void> {
    const lead = await tx.get('leads', ev.leadId);
    if (!lead) return;
    const { docs: enrollments } = await tx.query('enrollments', { where: eq('leadId', lead.id), orderBy: [{ field: 'createdAt', dir: 'desc' }] });
    const running = enrollments.filter((e) => e.status === 'IN_PROGRESS');
    const withSender = enrollments.find((e) => e.sdrProfileId === sender.id) ?? null;
    const user = userOf(sender);
    const at = ev.at;

    switch (ev.kind) {
      case 'reply': {
        for (const e of running) {
          await tx.put('enrollments', { ...e, status: 'REPLIED', stoppedReason: 'replied', nextActionAt: null, waitReason: null, inConversationAt: e.inConversationAt ?? at, updatedAt: st.nowIso });
        }
        const { docs: chat } = await tx.query('messages', { where: and(eq('chatId', ev.chatId), eq('direction', 'out')), orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 1 });
        const last = chat[0];
        const campaignId = running[0]?.campaignId ?? last?.campaignId ?? null;
        const isEmail = last?.kind === 'email';
        const message = newMessage({ id: ids.uuid(), workspaceId: lead.workspaceId, now: st.nowIso }, {
          leadId: lead.id, sdrProfileId: sender.id, chatId: ev.chatId, direction: 'in', kind: isEmail ? 'email' : 'message', text: ev.text,
          subject: isEmail && last ? (/^re:/i.test(last.subject) ? last.subject : `Re: ${last.subject}`) : '',
          status: 'received', sentAt: at, externalId: ev.externalId, campaignId,
        });
        await tx.put('messages', message);
        const meta: EventMeta = { campaignId, sdrProfileId: sender.id, messageId: message.id };
        const stopped = running.length > 0 ? ' The sequence stopped.' : '';
        await tx.put('activities', eventActivity(ids, lead, user, st.nowIso, 'reply_received', `${lead.fullName || 'The lead'} replied to ${sender.name}: "${clip(ev.text)}".${stopped}`, meta));
        let next: Lead = { ...lead, lastActivityAt: later(lead.lastActivityAt, at), updatedAt: st.nowIso };
        const moved = advanceStage(ids, next, 'ENGAGED', st.stages, user, st.nowIso, meta);
        if (moved) {
          next = moved.lead;
          await tx.put('activities', moved.event);
        }
        await tx.put('leads', next);
        counts.replies++;
        return;
      }
      case 'connection_accepted': {
        if (withSender && withSender.inConversationAt === null) {
          await tx.put('enrollments', { ...withSender, inConversationAt: at, updatedAt: st.nowIso });
        }
        await tx.put('activities', eventActivity(ids, lead, user, st.nowIso, 'connection_accepted', `${lead.fullName || 'The lead'} accepted ${sender.name}'s connection request.`, {
          campaignId: withSender?.campaignId ?? null, sdrProfileId: sender.id,
        }));
        counts.connectionsAccepted++;
        return;
      }
      case 'meeting_booked': {
        for (const e of running) {
          await tx.put('enrollments', { ...e, status: 'STOPPED', stoppedReason: 'meeting_booked', nextActionAt: null, waitReason: null, updatedAt: st.nowIso });
        }
        const campaignId = running[0]?.campaignId ?? withSender?.campaignId ?? null;
        const meta: EventMeta = { campaignId, sdrProfileId: sender.id };
        await tx.put('activities', eventActivity(ids, lead, user, st.nowIso, 'meeting_booked', `${lead.fullName || 'The lead'} booked a meeting with ${sender.name}.`, meta));
        let next: Lead = { ...lead, meetingBookedAt: at, lastActivityAt: later(lead.lastActivityAt, at), updatedAt: st.nowIso };
        const moved = advanceStage(ids, next, 'MEETING_BOOKED', st.stages, user, st.nowIso, meta);
        if (moved) {
          next = moved.lead;
          await tx.put('activities', moved.event);
        }
        await tx.put('leads', next);
        counts.meetingsBooked++;
        return;
      }
      case 'email_opened': {
        const { docs } = await tx.query('messages', { where: and(eq('externalId', ev.externalId), eq('sdrProfileId', sender.id)), limit: 1 });
        const m = docs[0];
        if (m && m.openedAt !== null) return;
        if (m) await tx.put('messages', { ...m, openedAt: at, updatedAt: st.nowIso });
        await tx.put('activities', eventActivity(ids, lead, user, st.nowIso, 'email_opened', `${lead.fullName || 'The lead'} opened ${m ? `"${clip(m.subject)}"` : 'an email'}.`, {
          campaignId: m?.campaignId ?? null, sdrProfileId: sender.id, messageId: m?.id ?? null,
        }));
        counts.emailsOpened++;
        return;
      }
    }
  }

  // ---------------------------------------------------------------- direct messages

  async function deliverDirect(st: TickState): Promise<void> {
    if (st.held.size === 0) return;
    const { docs } = await store.query('messages', {
      where: and(eq('status', 'queued'), eq('direction', 'out'), eq('campaignId', null), { op: 'in', field: 'sdrProfileId', values: [...st.held] }),
      orderBy: [{ field: 'createdAt', dir: 'asc' }],
    });
    const stalled = new Set<string>();
    for (const m of docs) {
      const sender = st.senders.get(m.sdrProfileId);
      if (!sender || sender.status === 'disconnected' || (sender.status === 'limited' && sender.backoffUntil && Date.parse(sender.backoffUntil) > st.nowMs)) continue;
      const channel = channelOf(sender);
      if (!channel) continue;
      try {
        await deliverOne(st, m, sender, channel, stalled);
      } catch (e) {
        st.report.errors.push({ message: `Direct message not delivered: ${errorText(e)}`, messageId: m.id, sdrProfileId: sender.id });
      }
    }
  }

  async function deliverOne(st: TickState, m: Message, sender: Sender, channel: Channel, stalled: Set<string>): Promise<void> {
    const lead = await store.get('leads', m.leadId);
    if (!lead || lead.doNotContact || lead.blocklisted) {
      const why = !lead ? 'the lead was deleted' : lead.doNotContact ? 'the lead is marked Do Not Contact' : 'the lead is blocklisted';
      await commitWithRetry(async (tx) => {
        const cur = await tx.get('messages', m.id);
        if (cur && cur.status === 'queued') await tx.put('messages', { ...cur, status: 'failed', error: `Not sent: ${why}.`, updatedAt: st.nowIso });
      });
      st.report.failed++;
      return;
    }
    if (stalled.has(sender.id)) return;
    const asEmail = m.kind === 'email' || !sender.capabilities.includes('message');
    const kind: Message['kind'] = asEmail ? 'email' : 'message';
    const budgets = budgetsFor(sender, kind);
    const day = dayOf(st, sender);
    const usage = usageOrEmpty(await store.get('usage', usageId(sender.id, day)), sender, day, st.nowIso);
    if (!hasRoom(usage, budgets)) {
      // Stays queued: delivered when the sender's day rolls over.
      stalled.add(sender.id);
      st.report.waiting++;
      return;
    }
    const { docs: chat } = await store.query('messages', { where: and(eq('chatId', m.chatId), eq('leadId', m.leadId), { op: 'in', field: 'status', values: ['sent', 'received'] }), orderBy: [{ field: 'createdAt', dir: 'asc' }] });
    let action: ChannelAction;
    if (asEmail) {
      const sent = chat.filter((x) => x.kind === 'email' && x.externalId);
      const thread = emailThread(sent);
      const root = sent[0];
      const subject = m.subject || (root ? reSubject(root.subject) : '(no subject)');
      action = { kind: 'email', subject, text: m.text, thread };
    } else {
      action = { kind: 'message', text: m.text, chatId: chat.length > 0 ? m.chatId : null, voiceNote: null };
    }
    let result: ChannelSendResult;
    try {
      result = await channel.send(sender, lead, action, m.id);
    } catch (e) {
      const f = asFailure(e);
      if (f.kind === 'rejected' || f.kind === 'unsupported') {
        await commitWithRetry(async (tx) => {
          const cur = await tx.get('messages', m.id);
          if (cur && cur.status === 'queued') await tx.put('messages', { ...cur, status: 'failed', error: f.message, updatedAt: st.nowIso });
        });
        st.report.failed++;
        return;
      }
      stalled.add(sender.id);
      await senderFailure(st, sender, f);
      return;
    }
    failures.delete(sender.id);
    useSlot(st, sender);
    await commitWithRetry(async (tx) => {
      const cur = await tx.get('messages', m.id);
      if (!cur) return;
      await tx.put('messages', { ...cur, kind, status: 'sent', sentAt: st.nowIso, externalId: result.externalId, chatId: result.chatId, subject: action.kind === 'email' ? action.subject : cur.subject, updatedAt: st.nowIso });
      const u = usageOrEmpty(await tx.get('usage', usageId(sender.id, day)), sender, day, st.nowIso);
      await tx.put('usage', consume(u, budgets, st.nowIso));
      const l = await tx.get('leads', lead.id);
      if (l) await tx.put('leads', { ...l, lastActivityAt: later(l.lastActivityAt, st.nowIso), updatedAt: st.nowIso });
      await tx.put('activities', eventActivity(ids, lead, userOf(sender), st.nowIso, 'message_sent', `${KIND_WORDS[kind]} sent by ${sender.name}: "${clip(m.text)}".`, { sdrProfileId: sender.id, messageId: m.id }));
    });
    st.report.actions++;
    st.report.directMessages++;
    st.report.byKind[kind] = (st.report.byKind[kind] ?? 0) + 1;
  }

  // ---------------------------------------------------------------- campaigns

  async function runCampaigns(st: TickState): Promise<void> {
    const { docs: running } = await store.query('campaigns', { where: eq('running', true) });
    if (running.length === 0) return;
    const workspace: Workspace | null = await store.get('workspaces', store.workspaceId);
    for (const c of running) {
      let group = st.groups.get(c.leadGroupId) ?? null;
      if (!group) {
        group = await store.get('leadGroups', c.leadGroupId);
        if (group) st.groups.set(group.id, group);
      }
      const senders = c.senders.map((x) => st.senders.get(x.sdrProfileId)).filter((s): s is Sender => s !== undefined);
      const r = judge(c, { group, senders, workspace });
      if (!r.ready) {
        st.report.skippedCampaigns.push({ campaignId: c.id, name: c.name, problems: r.problems.filter((p) => p.severity === 'error').map((p) => p.message) });
        continue;
      }
      st.campaigns.set(c.id, c);
    }
    if (st.campaigns.size === 0) return;
    const { docs: due } = await store.query('enrollments', {
      where: and(eq('status', 'IN_PROGRESS'), { op: 'lte', field: 'nextActionAt', value: st.nowIso }, { op: 'in', field: 'campaignId', values: [...st.campaigns.keys()] }),
      orderBy: [{ field: 'nextActionAt', dir: 'asc' }],
    });
    for (const e of await queueOrder(st, due)) {
      try {
        await runEnrollment(st, e);
      } catch (err) {
        // Someone changed the enrollment meanwhile (an operation, a replication push): next tick.
        if (isConflict(err)) continue;
        st.report.errors.push({ message: errorText(err), enrollmentId: e.id, ...(e.sdrProfileId ? { sdrProfileId: e.sdrProfileId } : {}) });
      }
    }
  }

  /** Sequences already under way go first (by due time); then new ones, newest lead first when the
   * campaign prefers new leads, else in enrollment order. */
  async function queueOrder(st: TickState, due: Enrollment[]): Promise<Enrollment[]> {
    const started = due.filter((e) => e.doneSteps.length > 0);
    const fresh = due.filter((e) => e.doneSteps.length === 0);
    const preferNew = fresh.filter((e) => st.campaigns.get(e.campaignId)?.settings.preferNewLeads);
    const leadCreated = new Map<string, string>();
    if (preferNew.length > 0) {
      for (const l of await store.getMany('leads', preferNew.map((e) => e.leadId))) leadCreated.set(l.id, l.createdAt);
    }
    const key = (e: Enrollment): string => (st.campaigns.get(e.campaignId)?.settings.preferNewLeads ? leadCreated.get(e.leadId) ?? '' : '');
    fresh.sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      if (ka !== kb) return ka < kb ? 1 : -1;
      return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    return [...started, ...fresh];
  }

  /** Runs an enrollment's due steps: waits, conditions and skips chain within the tick, at most
   * one network action per enrollment per tick. */
  async function runEnrollment(st: TickState, e0: Enrollment): Promise<void> {
    const c = st.campaigns.get(e0.campaignId);
    if (!c) return;
    // The cheap gate first: a waiting enrollment costs no read.
    if (e0.sdrProfileId !== null && senderGate(st, c, e0.sdrProfileId) !== null) {
      await gateEnrollment(st, c, e0);
      return;
    }
    // Inside the window, an action whose every possible sender is still spacing its actions waits
    // without a read: at a window's opening hundreds of leads are due and a few can go per tick.
    const next = currentStep(c, e0);
    if (next && isAction(next) && openNow(st, c)) {
      const candidates = e0.sdrProfileId !== null ? [e0.sdrProfileId] : c.senders.filter((x) => !x.paused).map((x) => x.sdrProfileId);
      const free = candidates.some((id) => {
        const s = st.senders.get(id);
        return s !== undefined && senderGate(st, c, id) === null && slotFree(st, s);
      });
      if (!free) {
        st.report.waiting++;
        return;
      }
    }
    let acted = false;
    for (let i = 0; i <= c.steps.length + 1; i++) {
      const r = await stepOnce(st, c, e0.id, acted);
      if (r === 'acted') acted = true;
      else if (r !== 'transition') return;
    }
  }

  async function gateEnrollment(st: TickState, c: Campaign, e: Enrollment): Promise<void> {
    const gate = e.sdrProfileId === null ? null : senderGate(st, c, e.sdrProfileId);
    if (gate === 'wait') st.report.waiting++;
    else if (gate !== null) await defer(st, e.id, gate.until, 'sender_limited');
  }

  type StepResult = 'transition' | 'acted' | 'halt';

  async function stepOnce(st: TickState, c: Campaign, enrollmentId: string, acted: boolean): Promise<StepResult> {
    const tx = new Tx(store);
    const e = await tx.get('enrollments', enrollmentId);
    if (!e || e.status !== 'IN_PROGRESS' || e.nextActionAt === null || e.nextActionAt > st.nowIso) return 'halt';
    let sender: Sender | null = null;
    if (e.sdrProfileId !== null) {
      if (senderGate(st, c, e.sdrProfileId) !== null) {
        await gateEnrollment(st, c, e);
        return 'halt';
      }
      sender = st.senders.get(e.sdrProfileId) ?? null;
    }
    const lead = await tx.get('leads', e.leadId);
    const stopWhy = !lead
      ? 'lead_deleted'
      : lead.doNotContact
        ? 'do_not_contact'
        : lead.blocklisted
          ? 'blocklisted'
          : categoryOf(lead, st.stages) === 'LOST'
            ? 'lead_lost'
            : null;
    if (!lead || stopWhy) {
      await stop(st, tx, c, e, lead, stopWhy ?? 'lead_deleted', sender);
      await commit(tx);
      return 'halt';
    }
    const step = currentStep(c, e);
    if (!step) {
      await complete(st, tx, c, e, lead, sender);
      await commit(tx);
      return 'halt';
    }
    if (step.type === 'WAIT') {
      await advance(st, tx, c, e, lead, step, 'waited', sender, new Date(st.nowMs + step.waitTimeSeconds * 1000));
      await commit(tx);
      st.report.transitions++;
      return 'transition';
    }
    if (step.type === 'CONDITION') {
      const yes = await holds(tx, step.sendCondition, e, lead);
      await advance(st, tx, c, e, lead, step, yes ? 'yes' : 'no', sender);
      await commit(tx);
      st.report.transitions++;
      return 'transition';
    }
    if (acted) return 'halt';
    return runAction(st, tx, c, e, lead, step, sender);
  }

  /** Whether a condition test holds for the enrollment's lead. */
  async function holds(tx: Tx, test: string, e: Enrollment, lead: Lead): Promise<boolean> {
    switch (test) {
      case 'CONNECTED': {
        const conds: Cond[] = [eq('leadId', lead.id), eq('type', 'EVENT'), eq('metadata.eventKind', 'connection_accepted')];
        if (e.sdrProfileId) conds.push(eq('metadata.sdrProfileId', e.sdrProfileId));
        return (await tx.count('activities', and(...conds))) > 0;
      }
      case 'REPLIED':
        return (await tx.count('messages', and(eq('leadId', lead.id), eq('direction', 'in')))) > 0;
      case 'HAS_EMAIL':
        return lead.email.trim() !== '';
      case 'OPENED_EMAIL':
        return (await tx.count('messages', and(eq('leadId', lead.id), eq('campaignId', e.campaignId), eq('kind', 'email'), eq('direction', 'out'), { op: 'neq', field: 'openedAt', value: null }))) > 0;
      default:
        return false;
    }
  }

  async function runAction(st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, assigned: Sender | null): Promise<StepResult> {
    const label = STEP_LABELS[step.type];
    // Guards that skip the step without acting.
    let skipWhy: string | null = null;
    if (step.sendCondition !== '' && !(await holds(tx, step.sendCondition, e, lead))) skipWhy = `${step.sendCondition} does not hold`;
    else if (step.type === 'EMAIL' && lead.email.trim() === '') skipWhy = 'the lead has no email address';
    if (skipWhy) {
      if (step.stopIfSkipped) await stop(st, tx, c, e, lead, `skipped: ${label} (${skipWhy})`, assigned, step);
      else await advance(st, tx, c, e, lead, step, `skipped: ${skipWhy}`, assigned);
      await commit(tx);
      st.report.transitions++;
      return step.stopIfSkipped ? 'halt' : 'transition';
    }

    if (!openNow(st, c)) {
      const at = openingFrom(st, c, st.now);
      if (at) await defer(st, e.id, at, 'outside_window');
      return 'halt';
    }

    const kind = actionKind(step);
    const variant = chooseVariantFor(st, c, e, step);
    const { variantId, text, subject } = await variant;
    const rendered = renderFor(st, c, lead, text);
    const withNote = kind === 'connection_request' && rendered.trim() !== '';

    let sender = assigned;
    if (!sender) {
      const pick = await pickSender(st, tx, c, step, kind, withNote);
      if (pick === 'wait') {
        st.report.waiting++;
        return 'halt';
      }
      if (pick instanceof Date) {
        await defer(st, e.id, pick, 'daily_limit');
        return 'halt';
      }
      sender = pick;
    }

    const problems = senderStepProblems(step, sender);
    if (problems.length > 0) {
      await stop(st, tx, c, e, lead, `${sender.name} cannot perform ${label.toLowerCase()}: ${problems.join('; ')}`, sender, step);
      await commit(tx);
      return 'halt';
    }
    if (withNote && rendered.length > sender.connectionNoteMaxLength) {
      await stop(st, tx, c, e, lead, `the connection note is ${rendered.length} characters once merge fields are filled in; ${sender.name}'s limit is ${sender.connectionNoteMaxLength}`, sender, step);
      await commit(tx);
      return 'halt';
    }

    const budgets = budgetsFor(sender, kind, withNote);
    const day = dayOf(st, sender);
    const usage = usageOrEmpty(await tx.get('usage', usageId(sender.id, day)), sender, day, st.nowIso);
    if (!hasRoom(usage, budgets)) {
      const at = openingFrom(st, c, dayAfter(st, sender));
      if (at) await defer(st, e.id, at, 'daily_limit');
      return 'halt';
    }
    if (!slotFree(st, sender)) {
      st.report.waiting++;
      return 'halt';
    }
    const channel = channelOf(sender);
    if (!channel) {
      st.report.waiting++;
      return 'halt';
    }

    const action = await buildAction(tx, c, e, lead, step, kind, rendered, renderFor(st, c, lead, subject));
    const ref = await stepRef(tx, e.id, step.id);
    let result: ChannelSendResult;
    try {
      result = await channel.send(sender, lead, action, ref);
    } catch (err) {
      const f = asFailure(err);
      useSlot(st, sender);
      if (f.kind === 'rejected' || f.kind === 'unsupported') {
        await recordRejected(st, c, e, lead, step, sender, kind, action, ref, f);
        return 'halt';
      }
      await senderFailure(st, sender, f);
      const s = st.senders.get(sender.id);
      if (s?.backoffUntil) await defer(st, e.id, new Date(s.backoffUntil), 'sender_limited');
      return 'halt';
    }
    failures.delete(sender.id);
    useSlot(st, sender);
    await recordSent(st, c, e.id, lead.id, step, sender, kind, action, ref, result, budgets, day, variantId);
    return 'acted';
  }

  /** The id of a step's message, stable for one enrollment and step while nothing was recorded:
   * a send retried after a transient failure reuses its idempotency key. A step run again after a
   * restart of the sequence finds the earlier message and takes the next id. */
  async function stepRef(tx: Tx, enrollmentId: string, stepId: string): Promise<string> {
    for (let cycle = 0; ; cycle++) {
      const id = derivedUuid('step-message', enrollmentId, stepId, cycle);
      if (!(await tx.get('messages', id))) return id;
    }
  }

  function renderFor(st: TickState, c: Campaign, lead: Lead, text: string): string {
    const group = st.groups.get(c.leadGroupId);
    return group ? renderMergeFields(text, lead, group) : text;
  }

  /** The text of a message step for this enrollment: the remembered variant, else one chosen by
   * the step's assignment mode (default, random, round_robin), else the step's own text. */
  async function chooseVariantFor(st: TickState, c: Campaign, e: Enrollment, step: Step): Promise<{ variantId: string | null; text: string; subject: string }> {
    const base = { variantId: null, text: step.content, subject: step.subject };
    if (step.variants.length === 0) return base;
    const as = (v: Step['variants'][number]): { variantId: string; text: string; subject: string } => ({ variantId: v.id, text: v.text, subject: v.subject || step.subject });
    const remembered = step.variants.find((v) => v.id === e.variants[step.id]);
    if (remembered) return as(remembered);
    const mode = step.variantAssignment.mode;
    if (mode === 'random') {
      const v = step.variants[Math.floor(random() * step.variants.length)];
      if (v) return as(v);
    }
    if (mode === 'round_robin') {
      const key = `${c.id}|${step.id}`;
      let counts = st.rr.get(key);
      if (!counts) {
        counts = new Map(step.variants.map((v) => [v.id, 0]));
        const { docs } = await store.query('enrollments', { where: and(eq('campaignId', c.id), { op: 'in', field: `variants.${step.id}`, values: step.variants.map((v) => v.id) }) });
        for (const x of docs) {
          const id = x.variants[step.id];
          if (id !== undefined) counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        st.rr.set(key, counts);
      }
      let best = step.variants[0];
      for (const v of step.variants) if ((counts.get(v.id) ?? 0) < (counts.get(best?.id ?? '') ?? 0)) best = v;
      if (best) return as(best);
    }
    const def = step.variants.find((v) => v.id === step.variantAssignment.defaultVariantId);
    return def ? as(def) : base;
  }

  /** The earlier emails of this enrollment's campaign to this lead, for same_thread steps. */
  async function buildAction(tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, kind: Message['kind'], text: string, subject: string): Promise<ChannelAction> {
    switch (kind) {
      case 'message':
        return { kind: 'message', text, chatId: null, voiceNote: null };
      case 'voice_note':
        return { kind: 'message', text, chatId: null, voiceNote: { mode: step.voiceNote.mode === 'recorded' ? 'recorded' : 'ai_voice', recordingId: step.voiceNote.recordingId ?? null } };
      case 'connection_request':
        return { kind: 'connection_request', note: text };
      case 'inmail':
        return { kind: 'inmail', subject, text };
      case 'email': {
        const emailedBefore = e.doneSteps.some((d) => c.steps.find((s) => s.id === d.stepId)?.type === 'EMAIL');
        if (step.emailThreading === 'same_thread' && emailedBefore) {
          const { docs } = await tx.query('messages', {
            where: and(eq('leadId', lead.id), eq('campaignId', c.id), eq('kind', 'email'), eq('direction', 'out'), eq('status', 'sent')),
            orderBy: [{ field: 'createdAt', dir: 'asc' }],
          });
          const thread = emailThread(docs);
          const root = docs[0];
          if (thread && root) return { kind: 'email', subject: reSubject(root.subject), text, thread };
        }
        return { kind: 'email', subject, text, thread: null };
      }
      case 'profile_visit':
        return { kind: 'profile_visit' };
      case 'reaction':
        return { kind: 'reaction' };
    }
  }

  /** Picks one of the campaign's senders for an unassigned enrollment: hosted here, free, able to
   * do the step, with room in its limits, the least loaded first. */
  async function pickSender(st: TickState, tx: Tx, c: Campaign, step: Step, kind: Message['kind'], withNote: boolean): Promise<Sender | Date | 'wait'> {
    const candidates: Sender[] = [];
    for (const entry of c.senders) {
      const s = st.senders.get(entry.sdrProfileId);
      if (!s || senderGate(st, c, s.id) !== null) continue;
      if (senderStepProblems(step, s).length > 0) continue;
      candidates.push(s);
    }
    if (candidates.length === 0) return 'wait';
    const load = await loadOf(st, c.id);
    candidates.sort((a, b) => (load.get(a.id) ?? 0) - (load.get(b.id) ?? 0) || (a.id < b.id ? -1 : 1));
    let busy = false;
    let reset: Date | null = null;
    for (const s of candidates) {
      const day = dayOf(st, s);
      const usage = usageOrEmpty(await tx.get('usage', usageId(s.id, day)), s, day, st.nowIso);
      if (!hasRoom(usage, budgetsFor(s, kind, withNote))) {
        const r = dayAfter(st, s);
        if (!reset || r < reset) reset = r;
        continue;
      }
      if (!slotFree(st, s) || !channelOf(s)) {
        busy = true;
        continue;
      }
      load.set(s.id, (load.get(s.id) ?? 0) + 1);
      return s;
    }
    if (busy || !reset) return 'wait';
    return openingFrom(st, c, reset) ?? 'wait';
  }

  async function loadOf(st: TickState, campaignId: string): Promise<Map<string, number>> {
    let load = st.load.get(campaignId);
    if (!load) {
      load = new Map();
      const { docs } = await store.query('enrollments', { where: and(eq('campaignId', campaignId), eq('status', 'IN_PROGRESS'), { op: 'neq', field: 'sdrProfileId', value: null }) });
      for (const x of docs) if (x.sdrProfileId) load.set(x.sdrProfileId, (load.get(x.sdrProfileId) ?? 0) + 1);
      st.load.set(campaignId, load);
    }
    return load;
  }

  // ---------------------------------------------------------------- recording

  async function defer(st: TickState, enrollmentId: string, at: Date, reason: 'outside_window' | 'daily_limit' | 'sender_limited'): Promise<void> {
    const iso = at.toISOString();
    try {
      await commitWithRetry(async (tx) => {
        const e = await tx.get('enrollments', enrollmentId);
        if (!e || e.status !== 'IN_PROGRESS' || (e.nextActionAt === iso && e.waitReason === reason)) return;
        await tx.put('enrollments', { ...e, nextActionAt: iso, waitReason: reason, updatedAt: st.nowIso });
      });
    } catch (err) {
      st.report.errors.push({ message: `Could not defer: ${errorText(err)}`, enrollmentId });
      return;
    }
    if (reason === 'outside_window') st.report.deferred.outsideWindow++;
    else if (reason === 'daily_limit') st.report.deferred.dailyLimit++;
    else st.report.deferred.senderLimited++;
  }

  /** Marks a step done and moves to the next one (or the chosen branch); completes the sequence at
   * the end of its path (after a final wait, once the wait is over). */
  async function advance(st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, outcome: string, sender: Sender | null, nextAt: Date | null = null, extra: Partial<Enrollment> = {}): Promise<void> {
    const next = step.type === 'CONDITION' ? firstOfBranch(c.steps, step.id, outcome === 'yes' ? 'yes' : 'no') : nextOnPath(c.steps, step.id);
    const progressed: Enrollment = {
      ...e, ...extra,
      doneSteps: [...e.doneSteps, { stepId: step.id, at: st.nowIso, outcome }],
      currentStepId: next?.id ?? null, attempts: 0, waitReason: null, updatedAt: st.nowIso,
    };
    if (next || nextAt) {
      await tx.put('enrollments', { ...progressed, nextActionAt: (nextAt ?? st.now).toISOString() });
      return;
    }
    await complete(st, tx, c, progressed, lead, sender);
  }

  async function complete(st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, sender: Sender | null): Promise<void> {
    await tx.put('enrollments', { ...e, status: 'COMPLETED', completedAt: st.nowIso, currentStepId: null, nextActionAt: null, waitReason: null, updatedAt: st.nowIso });
    await tx.put('activities', eventActivity(ids, lead, userOf(sender), st.nowIso, 'sequence_completed', `Finished the sequence of "${c.name}" without a reply.`, {
      campaignId: c.id, sdrProfileId: e.sdrProfileId,
    }));
    st.report.completed++;
    await relay(st, tx, c, e, lead);
  }

  async function stop(st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead | null, reason: string, sender: Sender | null, step?: Step): Promise<void> {
    const done = step ? [...e.doneSteps, { stepId: step.id, at: st.nowIso, outcome: `stopped: ${reason}` }] : e.doneSteps;
    await tx.put('enrollments', { ...e, status: 'STOPPED', stoppedReason: reason, doneSteps: done, nextActionAt: null, waitReason: null, updatedAt: st.nowIso });
    if (lead) {
      await tx.put('activities', eventActivity(ids, lead, userOf(sender), st.nowIso, 'sequence_stopped', `The sequence of "${c.name}" stopped: ${STOP_WORDS[reason] ?? reason}.`, {
        campaignId: c.id, sdrProfileId: e.sdrProfileId ?? sender?.id ?? null,
      }));
    }
    st.report.stopped++;
  }

  /** Records an action that happened; retried on conflicts because the action cannot be undone. */
  async function recordSent(
    st: TickState, c: Campaign, enrollmentId: string, leadId: string, step: Step, sender: Sender, kind: Message['kind'], action: ChannelAction,
    ref: string, result: ChannelSendResult, budgets: readonly Budget[], day: string, variantId: string | null,
  ): Promise<void> {
    const completedBefore = st.report.completed;
    const relayedBefore = st.report.relayed;
    await commitWithRetry(async (tx) => {
      st.report.completed = completedBefore;
      st.report.relayed = relayedBefore;
      const lead = await tx.get('leads', leadId);
      const e = await tx.get('enrollments', enrollmentId);
      const text = action.kind === 'connection_request' ? action.note : 'text' in action ? action.text : '';
      const subject = action.kind === 'email' || action.kind === 'inmail' ? action.subject : '';
      await tx.put('messages', newMessage({ id: ref, workspaceId: store.workspaceId, now: st.nowIso }, {
        leadId, sdrProfileId: sender.id, chatId: result.chatId, direction: 'out', kind, text, subject, campaignId: c.id, stepId: step.id,
        status: 'sent', sentAt: st.nowIso, externalId: result.externalId,
      }));
      const u = usageOrEmpty(await tx.get('usage', usageId(sender.id, day)), sender, day, st.nowIso);
      await tx.put('usage', consume(u, budgets, st.nowIso));
      if (!lead) return;
      let nextLead: Lead = { ...lead, lastActivityAt: later(lead.lastActivityAt, st.nowIso), updatedAt: st.nowIso };
      const meta: EventMeta = { campaignId: c.id, sdrProfileId: sender.id, messageId: ref };
      await tx.put('activities', eventActivity(ids, lead, sender.ownerMemberId, st.nowIso, 'message_sent', `${KIND_WORDS[kind]} sent by ${sender.name} in "${c.name}"${text ? `: "${clip(text)}"` : ''}.`, meta));
      if (CONTACT_KINDS.includes(kind)) {
        const moved = advanceStage(ids, nextLead, 'CONTACTED', st.stages, sender.ownerMemberId, st.nowIso, meta);
        if (moved) {
          nextLead = moved.lead;
          await tx.put('activities', moved.event);
        }
      }
      await tx.put('leads', nextLead);
      // The action is recorded even if the enrollment moved meanwhile; it only advances when it is
      // still on this step (never executing a step twice).
      if (!e || e.doneSteps.some((d) => d.stepId === step.id)) return;
      const extra: Partial<Enrollment> = { sdrProfileId: e.sdrProfileId ?? sender.id };
      if (variantId) extra.variants = { ...e.variants, [step.id]: variantId };
      if (e.status !== 'IN_PROGRESS') {
        await tx.put('enrollments', { ...e, ...extra, doneSteps: [...e.doneSteps, { stepId: step.id, at: st.nowIso, outcome: 'sent' }], updatedAt: st.nowIso });
        return;
      }
      await advance(st, tx, c, e, nextLead, step, 'sent', sender, null, extra);
    });
    if (variantId) {
      const counts = st.rr.get(`${c.id}|${step.id}`);
      if (counts) counts.set(variantId, (counts.get(variantId) ?? 0) + 1);
    }
    st.report.actions++;
    st.report.byKind[kind] = (st.report.byKind[kind] ?? 0) + 1;
  }

  /** The network refused this action for this lead: the attempt is recorded as failed and the
   * sequence stops with the reason, rather than following up on a message that never arrived. */
  async function recordRejected(st: TickState, c: Campaign, e0: Enrollment, lead: Lead, step: Step, sender: Sender, kind: Message['kind'], action: ChannelAction, ref: string, f: ChannelFailure): Promise<void> {
    await commitWithRetry(async (tx) => {
      const text = action.kind === 'connection_request' ? action.note : 'text' in action ? action.text : '';
      await tx.put('messages', newMessage({ id: ref, workspaceId: store.workspaceId, now: st.nowIso }, {
        leadId: lead.id, sdrProfileId: sender.id, chatId: `failed-${ref}`, direction: 'out', kind, text, campaignId: c.id, stepId: step.id, status: 'failed', error: f.message,
      }));
      const e = await tx.get('enrollments', e0.id);
      if (e && e.status === 'IN_PROGRESS') await stop(st, tx, c, e, lead, `${STEP_LABELS[step.type]} failed: ${f.message}`, sender, step);
    });
    st.report.failed++;
  }

  // ---------------------------------------------------------------- company relay

  /** When a person finished the sequence without answering, enrolls the next colleague at the same
   * company (from the campaign's lead group, never contacted, matching the seniorities), up to
   * maxPersonsPerCompany people of that company in the campaign. */
  async function relay(st: TickState, tx: Tx, c: Campaign, done: Enrollment, lead: Lead): Promise<void> {
    const r = c.settings.companyRelay;
    const company = norm(lead.company);
    if (!r.enabled || company === '') return;
    const { docs: sameName } = await tx.query('leads', { where: and({ op: 'has', field: 'groupIds', value: c.leadGroupId }, { op: 'contains', fields: ['company'], value: lead.company.trim() }) });
    const colleagues = sameName.filter((l) => norm(l.company) === company);
    const { docs: theirs } = await tx.query('enrollments', { where: { op: 'in', field: 'leadId', values: colleagues.map((l) => l.id) } });
    const inCampaign = new Set(theirs.filter((x) => x.campaignId === c.id).map((x) => x.leadId));
    if (inCampaign.size >= r.maxPersonsPerCompany) return;
    const touched = new Set(theirs.filter((x) => x.status === 'IN_PROGRESS' || x.doneSteps.length > 0).map((x) => x.leadId));
    const seniorities = r.seniorities.map((s) => s.trim().toLowerCase()).filter(Boolean);
    const pool = colleagues
      .filter((l) => !inCampaign.has(l.id) && !touched.has(l.id) && !l.doNotContact && !l.blocklisted && categoryOf(l, st.stages) !== 'LOST')
      .filter((l) => seniorities.length === 0 || seniorities.includes(l.seniority.trim().toLowerCase()))
      .sort((a, b) => b.rankingScore - a.rankingScore || b.leadFitScore - a.leadFitScore || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    const next = pool[0];
    if (!next) return;
    const keep = c.senders.find((x) => x.sdrProfileId === done.sdrProfileId && !x.paused);
    const enrollment = newEnrollment({ id: ids.uuid(), workspaceId: store.workspaceId, now: st.nowIso }, next.id, c.id, {
      sdrProfileId: keep ? keep.sdrProfileId : null, currentStepId: firstStep(c.steps)?.id ?? null, nextActionAt: st.nowIso,
    });
    await tx.put('enrollments', enrollment);
    await tx.put('activities', eventActivity(ids, next, userOf(st.senders.get(done.sdrProfileId ?? '')), st.nowIso, 'enrolled',
      `Enrolled in "${c.name}" by company relay: ${lead.fullName || 'a colleague'} at ${lead.company} did not answer.`, { campaignId: c.id, sdrProfileId: enrollment.sdrProfileId }));
    st.report.relayed++;
  }

  // ---------------------------------------------------------------- tick

  async function tick(): Promise<TickReport> {
    if (ticking) throw new Error('A tick is already running; ticks never overlap.');
    ticking = true;
    try {
      const now = clock.now();
      const st: TickState = {
        now, nowMs: now.getTime(), nowIso: now.toISOString(), report: emptyReport(now.toISOString()),
        senders: new Map(), held: new Set(), stages: new Map(), groups: new Map(), campaigns: new Map(), load: new Map(), rr: new Map(), memo: new Map(),
      };
      const [{ docs: senders }, { docs: stages }] = await Promise.all([store.query('senders'), store.query('stages')]);
      for (const s of senders) st.senders.set(s.id, s);
      for (const s of stages) st.stages.set(s.id, s);
      for (const s of senders) {
        if (hostedIds && !hostedIds.has(s.id)) continue;
        if (!channelOf(s)) continue;
        if (await prepareSender(st, s.id)) {
          st.held.add(s.id);
          st.report.senders.held.push(s.id);
        } else if (runnerId !== null) {
          st.report.senders.heldElsewhere.push(s.id);
        }
      }
      for (const id of st.held) {
        const s = st.senders.get(id);
        if (!s) continue;
        try {
          await pollSender(st, s);
        } catch (e) {
          st.report.errors.push({ message: `Polling failed: ${errorText(e)}`, sdrProfileId: id });
        }
      }
      await deliverDirect(st);
      await runCampaigns(st);
      return st.report;
    } finally {
      ticking = false;
    }
  }

  async function release(): Promise<void> {
    if (runnerId === null) return;
    const { docs } = await store.query('senders', { where: eq('runnerId', runnerId) });
    const now = clock.now().toISOString();
    for (const s of docs) {
      try {
        await commitWithRetry(async (tx) => {
          const cur = await tx.get('senders', s.id);
          if (!cur || cur.runnerId !== runnerId) return;
          await tx.put('senders', { ...cur, runnerId: null, runnerLeaseUntil: null, pollCursor: cursors.get(cur.id) ?? cur.pollCursor ?? null, updatedAt: now });
        });
      } catch {
        // The lease simply expires.
      }
    }
  }

  return { runnerId, tick, release };
}

const STOP_WORDS: Record<string, string> = {
  lead_deleted: 'the lead was deleted',
  do_not_contact: 'the lead is marked Do Not Contact',
  blocklisted: 'the lead is blocklisted',
  lead_lost: 'the lead is in a lost stage',
};

function asFailure(e: unknown): ChannelFailure {
  return e instanceof ChannelFailure ? e : new ChannelFailure('failed', errorText(e));
}

const clip = (s: string, n = 140): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const norm = (s: string): string => s.trim().toLowerCase().replace(/\s+/g, ' ');
const later = (a: string | null, b: string): string => (a !== null && a > b ? a : b);
const reSubject = (s: string): string => (/^re:/i.test(s.trim()) ? s.trim() : `Re: ${s.trim()}`);

/** Threading headers from the earlier emails of a thread (oldest first). */
function emailThread(sent: readonly Message[]): EmailThread | null {
  const withIds = sent.filter((m) => m.externalId);
  const root = withIds[0];
  const last = withIds[withIds.length - 1];
  if (!root || !last || !last.externalId) return null;
  return { chatId: root.chatId, inReplyTo: last.externalId, references: withIds.map((m) => m.externalId ?? '').filter(Boolean) };
}

