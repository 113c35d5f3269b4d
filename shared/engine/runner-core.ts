/**
 * What every part of the runner shares: its options, the per-tick state and report, the commit
 * helpers (every write goes through shared/rules like an operation's) and small pure helpers.
 * The parts: plan.ts (what is due and why), pick-sender.ts (a sender's room, which sender takes a
 * lead), act.ts (acting through a channel), step-content.ts (what an action says), record.ts
 * (recording outcomes), company-relay.ts, inbound.ts (channel events), direct.ts (direct
 * messages), leases.ts (which runner works a sender, backoff); runner.ts orchestrates a tick.
 */
import type { Actor, Clock, Ids, RandomBytes } from '../context.ts';
import { DomainError } from '../errors.ts';
import type { Campaign, Enrollment, LeadGroup, Message, Sender, Stage, Step, Workspace } from '../model/index.ts';
import type { Readiness, ReadinessInput } from '../rules/readiness.ts';
import { validateWrites } from '../rules/index.ts';
import type { Cond, Store } from '../store.ts';
import { Tx } from '../tx.ts';
import { ChannelFailure } from './channel.ts';
import type { Channel, ChannelAction, ChannelHost, EmailThread } from './channel.ts';
import { senderDay } from './limits.ts';
import { isOpen, nextOpening, startOfNextDay } from './schedule.ts';
import { paceOf } from './sandbox.ts';
import { resumePoint } from './walk.ts';

export type Spacing = { minSeconds: number; jitterSeconds: number };

export type RunnerOptions = {
  store: Store;
  clock: Clock;
  /** Uniform in [0, 1): jitter and random variants. */
  random: () => number;
  ids: Ids;
  /** Key material (a sender's unsubscribe key when it has none yet). */
  randomBytes: RandomBytes;
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
  deferred: { outsideWindow: number; dailyLimit: number; senderLimited: number; weeklyLimit: number };
  /** Due enrollments left as they are this tick (sender paused, not hosted here, spacing). */
  waiting: number;
  stopped: number;
  completed: number;
  failed: number;
  relayed: number;
  /** Interrupted sends found after a restart: settled as sent, sent again (idempotent channel), or marked delivery unknown. */
  settled: { sent: number; resent: number; unknown: number };
  deliveryUnknown: number;
  /** Parked enrollments made due again because a gate of their campaign changed. */
  replanned: number;
  /** Leads of a campaign's lead group started in it this tick. */
  startedFromGroup: number;
  /** Polls of idle connector senders left out this tick (they are polled with backoff). */
  pollsSkipped: number;
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

export const MAX_RECORD_ATTEMPTS = 4;
export const CONTACT_KINDS: readonly Message['kind'][] = ['message', 'inmail', 'email', 'connection_request', 'voice_note'];

export type TickState = {
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
  /** The workspace (subscription), read once per tick with the campaigns. */
  workspace: Workspace | null;
};

function memo<T>(st: TickState, key: string, compute: () => T): T {
  if (st.memo.has(key)) return st.memo.get(key) as T;
  const v = compute();
  st.memo.set(key, v);
  return v;
}
export const openNow = (st: TickState, c: Campaign): boolean => memo(st, `open|${c.id}`, () => isOpen(c.schedule, st.now));
export const dayOf = (st: TickState, s: Sender): string => memo(st, `day|${s.id}|${s.timeZone}`, () => senderDay(s, st.now));
export const dayAfter = (st: TickState, s: Sender): Date => memo(st, `next|${s.id}|${s.timeZone}`, () => startOfNextDay(s.timeZone, st.now));
export const openingFrom = (st: TickState, c: Campaign, from: Date): Date | null => memo(st, `opening|${c.id}|${from.getTime()}`, () => nextOpening(c.schedule, from));

export const isConflict = (e: unknown): boolean => e instanceof DomainError && e.code === 'CONFLICT';
export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

export function emptyReport(at: string): TickReport {
  return {
    at, actions: 0, byKind: {}, directMessages: 0, transitions: 0,
    deferred: { outsideWindow: 0, dailyLimit: 0, senderLimited: 0, weeklyLimit: 0 },
    waiting: 0, stopped: 0, completed: 0, failed: 0, relayed: 0, settled: { sent: 0, resent: 0, unknown: 0 }, deliveryUnknown: 0, replanned: 0, startedFromGroup: 0, pollsSkipped: 0,
    events: { replies: 0, connectionsAccepted: 0, meetingsBooked: 0, emailsOpened: 0 },
    skippedCampaigns: [],
    senders: { held: [], heldElsewhere: [], limited: [], disconnected: [], resumed: [] },
    errors: [],
  };
}


export const and = (...conds: Cond[]): Cond => ({ op: 'and', conds });
export const eq = (field: string, value: string | number | boolean | null): Cond => ({ op: 'eq', field, value });

/** The step an enrollment executes next: its current step, or where it resumes after an edit. */
export function currentStep(c: Campaign, e: Enrollment): Step | null {
  const done = new Set(e.doneSteps.map((d) => d.stepId));
  if (e.currentStepId !== null) {
    const s = c.steps.find((x) => x.id === e.currentStepId);
    if (s && !done.has(s.id)) return s;
  }
  // A finished path (currentStepId null after its last step) resumes nowhere unless steps were added.
  return resumePoint(c.steps, e.doneSteps);
}


/** The message kind and limits of an action step. */
export function actionKind(step: Step): Message['kind'] {
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

export const KIND_WORDS: Record<Message['kind'], string> = {
  message: 'Message', inmail: 'InMail', email: 'Email', connection_request: 'Connection request', voice_note: 'Voice note',
  reaction: 'Reaction to a post', profile_visit: 'Profile visit',
};

/** The runner's tools and the little state it keeps in memory between ticks. */
export type RunnerCore = {
  store: Store;
  clock: Clock;
  random: () => number;
  ids: Ids;
  randomBytes: RandomBytes;
  channels: ChannelHost;
  actor: Actor;
  runnerId: string | null;
  leaseMs: number;
  spacing: Spacing;
  baseBackoff: number;
  judge: (campaign: Campaign, input: ReadinessInput) => Readiness;
  hostedIds: Set<string> | null;
  /** Earliest next action per sender (spacing). */
  nextSlot: Map<string, number>;
  /** Actions per sender since this runner started (what idle polling watches). */
  actedCount: Map<string, number>;
  /** Poll cursors not yet stored on the sender (stored with the next lease renewal or events). */
  cursors: Map<string, string>;
  /** Consecutive channel failures per sender, for escalating backoff. */
  failures: Map<string, number>;
  commit(tx: Tx): Promise<void>;
  /** Builds and commits a unit of work, rebuilding it from fresh reads when the store moved on. */
  commitWithRetry(build: (tx: Tx) => Promise<void>): Promise<void>;
  channelOf(s: Sender): Channel | null;
  userOf(s: Sender | null | undefined): string;
  slotFree(st: TickState, s: Sender): boolean;
  useSlot(st: TickState, s: Sender): void;
  /** The first time a sender is seen: its spacing counts from its last recorded action, so a
   * restarted runner does not act early. */
  primeSlot(s: Sender): Promise<void>;
};

export function createCore(opts: RunnerOptions, judge: RunnerCore['judge']): RunnerCore {
  const { store, clock, random, channels, actor } = opts;
  const spacing = opts.spacing ?? { minSeconds: 60, jitterSeconds: 120 };
  // A demo-paced sandbox sender is watched by a new user: its actions come seconds apart, like its
  // people's answers, instead of the minutes a real account keeps between them.
  const spacingOf = (s: Sender, at: string): Spacing => (paceOf(s, at) === 'demo' ? DEMO_SPACING : spacing);
  const nextSlot = new Map<string, number>();
  const primed = new Set<string>();
  const actedCount = new Map<string, number>();

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

  return {
    store, clock, random, ids: opts.ids, randomBytes: opts.randomBytes, channels, actor,
    runnerId: opts.runnerId ?? null,
    leaseMs: opts.leaseMs ?? 5 * 60_000,
    spacing,
    baseBackoff: opts.backoffSeconds ?? 15 * 60,
    judge,
    hostedIds: opts.hostedSenderIds ? new Set(opts.hostedSenderIds) : null,
    nextSlot,
    actedCount,
    cursors: new Map(),
    failures: new Map(),
    commit,
    commitWithRetry,
    channelOf: (s) => channels.channelFor(s),
    userOf: (s) => s?.ownerMemberId ?? actor.memberId,
    slotFree: (st, s) => (nextSlot.get(s.id) ?? 0) <= st.nowMs,
    useSlot(st, s) {
      const sp = spacingOf(s, new Date(st.nowMs).toISOString());
      const gap = (sp.minSeconds + random() * sp.jitterSeconds) * 1000;
      // Counted from the send itself (a slow channel call does not shorten the gap).
      nextSlot.set(s.id, Math.max(st.nowMs, clock.now().getTime()) + gap);
      actedCount.set(s.id, (actedCount.get(s.id) ?? 0) + 1);
    },
    async primeSlot(s) {
      if (primed.has(s.id)) return;
      const { docs } = await store.query('messages', {
        where: and(eq('sdrProfileId', s.id), eq('direction', 'out'), { op: 'in', field: 'status', values: ['sent', 'sending', 'unknown'] }),
        orderBy: [{ field: 'createdAt', dir: 'desc' }],
        limit: 1,
      });
      const last = docs[0];
      if (last) {
        const at = Date.parse(last.sentAt ?? last.createdAt);
        const sp = spacingOf(s, clock.now().toISOString());
        const gap = (sp.minSeconds + random() * sp.jitterSeconds) * 1000;
        if (Number.isFinite(at)) nextSlot.set(s.id, Math.max(nextSlot.get(s.id) ?? 0, at + gap));
      }
      primed.add(s.id);
    },
  };
}

/** Spacing of a demo-paced sandbox sender's actions (see spacingOf): 3-8 s. A sender's sequences
 * under way go before new ones and a sender acts at most once a tick, so follow-ups due at Start
 * come before the demo's promised new connection request and its accept. At 8-20 s apart a dozen of
 * them held it back 115 s; the demo seed also leaves none waiting for a window (its last simulated
 * day runs around the clock: after a weekend, 14 follow-ups took the whole two minutes). */
export const DEMO_SPACING: Spacing = { minSeconds: 3, jitterSeconds: 5 };

export const STOP_WORDS: Record<string, string> = {
  lead_deleted: 'the lead was deleted',
  do_not_contact: 'the lead is marked Do Not Contact',
  blocklisted: 'the lead is blocklisted',
  lead_lost: 'the lead is in a lost stage',
  email_bounced: "the lead's email address bounced",
};

export function asFailure(e: unknown): ChannelFailure {
  return e instanceof ChannelFailure ? e : new ChannelFailure('failed', errorText(e));
}

/** The text and subject a message document keeps of an action. */
export const actionText = (a: ChannelAction): string => (a.kind === 'connection_request' ? a.note : 'text' in a ? a.text : '');
export const actionSubject = (a: ChannelAction): string => (a.kind === 'email' || a.kind === 'inmail' ? a.subject : '');

/** The action an intent stood for, rebuilt from its message (to send it again with the same
 * idempotency key; threading and voice recordings are not kept on the message). */
export function actionOfMessage(m: Message): ChannelAction {
  switch (m.kind) {
    case 'message':
      return { kind: 'message', text: m.text, chatId: null, voiceNote: null };
    case 'voice_note':
      return { kind: 'message', text: m.text, chatId: null, voiceNote: { mode: 'ai_voice', recordingId: null } };
    case 'connection_request':
      return { kind: 'connection_request', note: m.text };
    case 'inmail':
      return { kind: 'inmail', subject: m.subject, text: m.text };
    case 'email':
      return { kind: 'email', subject: m.subject, text: m.text, thread: null };
    case 'profile_visit':
      return { kind: 'profile_visit' };
    case 'reaction':
      return { kind: 'reaction' };
  }
}

export const clip = (s: string, n = 140): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
export const norm = (s: string): string => s.trim().toLowerCase().replace(/\s+/g, ' ');
export const later = (a: string | null, b: string): string => (a !== null && a > b ? a : b);
export const reSubject = (s: string): string => (/^re:/i.test(s.trim()) ? s.trim() : `Re: ${s.trim()}`);

/** Threading headers from the earlier emails of a thread (oldest first). */
export function emailThread(sent: readonly Message[]): EmailThread | null {
  const withIds = sent.filter((m) => m.externalId);
  const root = withIds[0];
  const last = withIds[withIds.length - 1];
  if (!root || !last || !last.externalId) return null;
  return { chatId: root.chatId, inReplyTo: last.externalId, references: withIds.map((m) => m.externalId ?? '').filter(Boolean) };
}

