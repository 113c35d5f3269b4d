/**
 * campaigns.getActivity: what the runner did and is about to do for one campaign, for the campaign
 * page. Recent actions come from `messages` and EVENT activities (see the metrics contract); queued
 * actions are the campaign's IN_PROGRESS enrollments by due time, each with why it waits. The
 * runner stamps `waitReason` when it moves an enrollment (window closed, daily limit, sender backing
 * off); the states it cannot stamp because it does not touch the enrollment (campaign or sender
 * paused, due but not yet picked up) are judged here from the same documents the runner reads.
 */
import { z } from 'zod';
import type { Ctx } from '../context.ts';
import { budgetsFor, hasRoom, rampUpOf, rampUpPhrase, senderDay, usageId, usageOrEmpty } from '../engine/limits.ts';
import { SKIP_WORDS, pickingOrder, skipReason } from '../engine/group-leads.ts';
import type { SkipReason } from '../engine/group-leads.ts';
import { dayKey, isOpen, nextOpening, startOfNextDay } from '../engine/schedule.ts';
import type { Activity, Campaign, Enrollment, Message, Sender, Step, Usage } from '../model/index.ts';
import { STEP_LABELS, stepNumbers } from '../sequence.ts';
import { loadCampaign } from './campaign-views.ts';
import { opsByName, query } from './define.ts';
import { leadName } from './lead-views.ts';
import { qInt, uuid } from './params.ts';
import { campaignEvents } from '../metrics.ts';

export const WAIT_REASONS = [
  'due',
  'scheduled',
  'outside_window',
  'daily_limit',
  'sender_limited',
  'sender_paused',
  'sender_disconnected',
  'sender_removed',
  'unassigned',
  'campaign_paused',
  'weekly_limit',
  'delivery_unknown',
] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

const SKIP_REASONS = ['do_not_contact', 'blocklisted', 'closed_stage', 'running_elsewhere', 'company_relay'] as const satisfies readonly SkipReason[];

/** Event kinds shown as runner activity; reply_received and message_sent are already messages. */
const SHOWN_EVENTS = ['connection_accepted', 'meeting_booked', 'email_opened', 'sequence_completed', 'sequence_stopped', 'enrolled', 'lead_unsubscribed'] as const;

const CHART_DAYS = 14;

/** Who and what an activity row or a queued action concerns. */
const leadStepFields = {
  leadId: z.string(),
  leadName: z.string(),
  sdrProfileId: z.string().nullable(),
  senderName: z.string().nullable(),
  stepId: z.string().nullable(),
  /** "step 2 (Message)" when the action belongs to a step still in the sequence. */
  stepLabel: z.string().nullable(),
};

const recentOut = z.object({
  id: z.string(),
  at: z.string(),
  /** sent / failed / queued: our actions (sending: under way; unknown: "delivery unknown", a send
   * interrupted by a crash that the channel could not confirm); reply: the lead answered; event:
   * something that happened. */
  type: z.enum(['sent', 'failed', 'queued', 'sending', 'unknown', 'reply', 'event']),
  /** The message kind (message, connection_request, ...) or the event kind. */
  kind: z.string(),
  ...leadStepFields,
  text: z.string(),
  error: z.string().nullable(),
});

const queuedOut = z.object({
  enrollmentId: z.string(),
  ...leadStepFields,
  nextActionAt: z.string().nullable(),
  /** When the wait is expected to end (window opening, limit reset, backoff end), when known. */
  until: z.string().nullable(),
  reason: z.enum(WAIT_REASONS),
  /** The reason in words, for people. */
  explanation: z.string(),
});

const output = z.object({
  campaignId: z.string(),
  running: z.boolean(),
  at: z.string(),
  recent: z.array(recentOut),
  queued: z.array(queuedOut),
  /** Every IN_PROGRESS enrollment counted by why it waits (not only the listed ones). */
  waiting: z.object({ total: z.number().int(), byReason: z.record(z.string(), z.number().int()) }),
  /** Per day of the campaign's time zone, oldest first, the last 14 days: sent actions, replies and
   * accepted connections. */
  daily: z.array(z.object({ day: z.string(), sent: z.number().int(), replies: z.number().int(), accepted: z.number().int() })),
  /** Leads of the campaign's lead group the runner does not start, with why (Do Not Contact,
   * blocklisted, closed stage, running elsewhere, company relay), in lead-picking order (only those
   * of `skippedReason` when it is given); how many group leads wait to be started; how many leads
   * the group holds, and how many are skipped for each reason. */
  groupLeads: z.object({
    total: z.number().int(),
    notStarted: z.number().int(),
    skippedTotal: z.number().int(),
    skippedByReason: z.record(z.string(), z.number().int()),
    skipped: z.array(z.object({ leadId: z.string(), leadName: z.string(), reason: z.enum(SKIP_REASONS), explanation: z.string() })),
  }),
});

type Recent = z.input<typeof recentOut>;
type Queued = z.input<typeof queuedOut>;

/** The kind of network action a step performs (what its daily limit is counted as), or null. */
function actionKind(step: Step): { kind: Message['kind']; withNote: boolean } | null {
  switch (step.type) {
    case 'SEND_MESSAGE':
      return { kind: step.voiceNote.mode === 'none' ? 'message' : 'voice_note', withNote: false };
    case 'CONNECTION_REQUEST':
      return { kind: 'connection_request', withNote: step.content.trim() !== '' };
    case 'INMAIL':
      return { kind: 'inmail', withNote: false };
    case 'EMAIL':
      return { kind: 'email', withNote: false };
    case 'PROFILE_VISIT':
      return { kind: 'profile_visit', withNote: false };
    case 'REACT_TO_POST':
      return { kind: 'reaction', withNote: false };
    default:
      return null;
  }
}

type Judge = { reason: WaitReason; until: string | null; explanation: string };

/** Which pace a limit reason applies under (a new account's ramp-up, or a warmed-up account's full
 * limits), as a phrase to add to the explanation. */
const pace = (sender: Sender, at: Date): string => {
  const phrase = rampUpPhrase(rampUpOf(sender, at));
  return phrase ? ` ${phrase}` : '';
};

/** Why one IN_PROGRESS enrollment is not being acted on right now (or that it is due). */
function judge(
  e: Enrollment,
  c: Campaign,
  at: Date,
  step: Step | undefined,
  sender: Sender | undefined,
  usage: Usage | undefined,
): Judge {
  const nowIso = at.toISOString();
  if (!c.running) return { reason: 'campaign_paused', until: null, explanation: 'The campaign is paused; nothing is sent until it is started.' };
  if (e.sdrProfileId === null) {
    const active = c.senders.filter((s) => !s.paused);
    if (active.length === 0) return { reason: 'sender_paused', until: null, explanation: 'Unassigned, and every sender is paused on this campaign.' };
    return { reason: 'unassigned', until: null, explanation: "Waiting for one of the campaign's senders to pick this lead up." };
  }
  const entry = c.senders.find((s) => s.sdrProfileId === e.sdrProfileId);
  const name = sender?.name ?? 'Its sender';
  if (!sender) return { reason: 'sender_removed', until: null, explanation: 'Its sender no longer exists; move the lead to another sender.' };
  if (!entry) {
    return {
      reason: 'sender_removed',
      until: null,
      explanation: `${name} no longer sends in this campaign and is in conversation with this lead; move it with a sender change.`,
    };
  }
  if (sender.outreachPaused) return { reason: 'sender_paused', until: null, explanation: `${name}'s outreach is paused on every campaign.` };
  if (entry.paused) return { reason: 'sender_paused', until: null, explanation: `${name} is paused on this campaign.` };
  if (sender.status === 'disconnected') {
    return { reason: 'sender_disconnected', until: null, explanation: `${name}'s account is disconnected${sender.statusReason ? ` (${sender.statusReason})` : ''}; reconnect it.` };
  }
  if (sender.backoffUntil !== null && sender.backoffUntil > nowIso) {
    return {
      reason: 'sender_limited',
      until: sender.backoffUntil,
      explanation: `${name} is backing off after a network limit${sender.statusReason ? ` (${sender.statusReason})` : ''}.`,
    };
  }
  if (e.waitReason === 'delivery_unknown') {
    return {
      reason: 'delivery_unknown',
      until: null,
      explanation: `Delivery unknown: ${name}'s last send was interrupted and could not be confirmed; check the mailbox, then send it again from the lead's timeline.`,
    };
  }
  const next = e.nextActionAt;
  if (next !== null && next > nowIso) {
    // The runner moved it and said why; otherwise it is simply the step's own time (a wait).
    switch (e.waitReason ?? null) {
      case 'outside_window':
        return { reason: 'outside_window', until: next, explanation: 'The sending window is closed; it goes when the window opens.' };
      case 'daily_limit':
        return { reason: 'daily_limit', until: next, explanation: `${name} reached a daily limit${pace(sender, at)}; it goes after the limit resets.` };
      case 'sender_limited':
        return { reason: 'sender_limited', until: next, explanation: `${name} was backing off after a network limit; it retries then.` };
      case 'weekly_limit':
        return { reason: 'weekly_limit', until: next, explanation: `${name} reached its weekly cap on connection requests${pace(sender, at)}; it goes when the oldest request of the week ages out.` };
      default:
        return { reason: 'scheduled', until: next, explanation: "Waiting for its time in the sequence (a wait step or the spacing between actions)." };
    }
  }
  if (!isOpen(c.schedule, at)) {
    const opening = nextOpening(c.schedule, at);
    const iso = opening ? opening.toISOString() : null;
    return { reason: 'outside_window', until: iso, explanation: `Due, but the sending window is closed${iso ? '; it goes when the window opens' : ' and no day is enabled'}.` };
  }
  const action = step ? actionKind(step) : null;
  if (action && usage && !hasRoom(usage, budgetsFor(sender, action.kind, action.withNote, at))) {
    const reset = startOfNextDay(sender.timeZone, at).toISOString();
    return { reason: 'daily_limit', until: reset, explanation: `Due, but ${name} has used today's limit for this action${pace(sender, at)}; it goes after the limit resets.` };
  }
  return { reason: 'due', until: null, explanation: 'Due now: the runner takes it on its next pass (actions are spaced out).' };
}

const getActivity = query({
  name: 'campaigns.getActivity',
  summary:
    "The runner's activity for one campaign: recent actions, replies and events (newest first), the queued next actions by due time with why each waits (window closed, limit reached, sender paused, ...), and a daily series of sends and replies.",
  input: z.object({ campaignId: uuid, limit: qInt(1, 100).optional(), skippedReason: z.enum(SKIP_REASONS).optional() }),
  output,
  async handler(input, ctx) {
    const limit = input.limit ?? 25;
    const c = await loadCampaign(ctx, input.campaignId);
    const at = ctx.clock.now();
    const zone = c.schedule.timeZone;

    const [messages, events, enrollments] = await Promise.all([
      ctx.db.query('messages', { where: { op: 'eq', field: 'campaignId', value: c.id } }),
      campaignEvents(ctx.db, [c.id], [...SHOWN_EVENTS]),
      ctx.db.query('enrollments', {
        where: { op: 'and', conds: [{ op: 'eq', field: 'campaignId', value: c.id }, { op: 'eq', field: 'status', value: 'IN_PROGRESS' }] },
        orderBy: [{ field: 'nextActionAt', dir: 'asc' }],
      }),
    ]);

    // Recent: the newest messages and events together.
    const timeOf = (m: Message): string => (m.direction === 'out' && m.sentAt ? m.sentAt : m.createdAt);
    const newestMessages = [...messages.docs].sort((a, b) => (timeOf(a) < timeOf(b) ? 1 : timeOf(a) > timeOf(b) ? -1 : 0)).slice(0, limit);
    const newestEvents = [...events.docs].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0)).slice(0, limit);
    const queuedPage = enrollments.docs.slice(0, limit);

    const leadIds = new Set<string>([...newestMessages.map((m) => m.leadId), ...newestEvents.map((a) => a.leadId), ...queuedPage.map((e) => e.leadId)]);
    const senderIds = new Set<string>([
      ...c.senders.map((s) => s.sdrProfileId),
      ...newestMessages.map((m) => m.sdrProfileId),
      ...enrollments.docs.flatMap((e) => (e.sdrProfileId ? [e.sdrProfileId] : [])),
    ]);
    const [leads, senders] = await Promise.all([ctx.db.getMany('leads', [...leadIds]), ctx.db.getMany('senders', [...senderIds])]);
    const leadById = new Map(leads.map((l) => [l.id, l]));
    const senderById = new Map(senders.map((s) => [s.id, s]));
    const stepById = new Map(c.steps.map((s) => [s.id, s]));
    const numbers = stepNumbers(c.steps);
    const stepLabel = (id: string | null): string | null => {
      const s = id ? stepById.get(id) : undefined;
      return s ? `step ${numbers.get(s.id) ?? '?'} (${STEP_LABELS[s.type]})` : null;
    };

    const recent: Recent[] = [
      ...newestMessages.map((m): Recent => ({
        id: m.id,
        at: timeOf(m),
        type: m.direction === 'in' ? 'reply' : m.status === 'sent' || m.status === 'failed' || m.status === 'sending' || m.status === 'unknown' ? m.status : 'queued',
        kind: m.kind,
        leadId: m.leadId,
        leadName: leadName(leadById.get(m.leadId)),
        sdrProfileId: m.sdrProfileId,
        senderName: senderById.get(m.sdrProfileId)?.name ?? null,
        stepId: m.stepId,
        stepLabel: stepLabel(m.stepId),
        text: m.text.slice(0, 280),
        error: m.error,
      })),
      ...newestEvents.map((a: Activity): Recent => ({
        id: a.id,
        at: a.createdAt,
        type: 'event',
        kind: a.metadata.eventKind ?? 'event',
        leadId: a.leadId,
        leadName: leadName(leadById.get(a.leadId)),
        sdrProfileId: a.metadata.sdrProfileId ?? null,
        senderName: a.metadata.sdrProfileId ? (senderById.get(a.metadata.sdrProfileId)?.name ?? null) : null,
        stepId: null,
        stepLabel: null,
        text: a.content.slice(0, 280),
        error: null,
      })),
    ]
      .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : a.id < b.id ? -1 : 1))
      .slice(0, limit);

    // Usage of today per sender, read once.
    const usageBySender = new Map<string, Usage>();
    const usageDocs = await ctx.db.getMany('usage', senders.map((s) => usageId(s.id, senderDay(s, at))));
    for (const s of senders) {
      const id = usageId(s.id, senderDay(s, at));
      usageBySender.set(s.id, usageOrEmpty(usageDocs.find((u) => u.id === id) ?? null, s, senderDay(s, at), at.toISOString()));
    }

    const byReason: Record<string, number> = {};
    const queued: Queued[] = [];
    for (const [i, e] of enrollments.docs.entries()) {
      const sender = e.sdrProfileId ? senderById.get(e.sdrProfileId) : undefined;
      const step = e.currentStepId ? stepById.get(e.currentStepId) : undefined;
      const j = judge(e, c, at, step, sender, sender ? usageBySender.get(sender.id) : undefined);
      byReason[j.reason] = (byReason[j.reason] ?? 0) + 1;
      if (i >= limit) continue;
      queued.push({
        enrollmentId: e.id,
        leadId: e.leadId,
        leadName: leadName(leadById.get(e.leadId)),
        sdrProfileId: e.sdrProfileId,
        senderName: sender?.name ?? null,
        stepId: e.currentStepId,
        stepLabel: stepLabel(e.currentStepId),
        nextActionAt: e.nextActionAt,
        until: j.until,
        reason: j.reason,
        explanation: j.explanation,
      });
    }

    // Daily series in the campaign's zone.
    const days: string[] = [];
    for (let d = CHART_DAYS - 1; d >= 0; d--) days.push(dayKey(zone, new Date(at.getTime() - d * 86_400_000)));
    const series = new Map(days.map((d) => [d, { day: d, sent: 0, replies: 0, accepted: 0 }]));
    for (const m of messages.docs) {
      if (m.direction === 'in') {
        const row = series.get(dayKey(zone, new Date(m.createdAt)));
        if (row) row.replies++;
      } else if (m.status === 'sent' && m.sentAt) {
        const row = series.get(dayKey(zone, new Date(m.sentAt)));
        if (row) row.sent++;
      }
    }
    for (const a of events.docs) {
      if (a.metadata.eventKind !== 'connection_accepted') continue;
      const row = series.get(dayKey(zone, new Date(a.createdAt)));
      if (row) row.accepted++;
    }

    return {
      campaignId: c.id,
      running: c.running,
      at: at.toISOString(),
      recent,
      queued,
      waiting: { total: enrollments.docs.length, byReason },
      daily: [...series.values()],
      groupLeads: await groupLeadsOf(ctx, c, limit, input.skippedReason),
    };
  },
});

/** The lead group's leads with no enrollment in the campaign: how many will start, and the ones
 * skipped with why (the runner's own rules, shared/engine/group-leads.ts). */
async function groupLeadsOf(ctx: Ctx, c: Campaign, limit: number, only?: SkipReason): Promise<{ total: number; notStarted: number; skippedTotal: number; skippedByReason: Partial<Record<SkipReason, number>>; skipped: { leadId: string; leadName: string; reason: SkipReason; explanation: string }[] }> {
  const [{ docs: groupLeads }, { docs: mine }, { docs: stages }] = await Promise.all([
    ctx.db.query('leads', { where: { op: 'has', field: 'groupIds', value: c.leadGroupId } }),
    ctx.db.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: c.id } }),
    ctx.db.query('stages'),
  ]);
  // A lead merged into another is its survivor now (which joined the group): not a lead to count or start.
  const leads = groupLeads.filter((l) => !l.mergedIntoId);
  const enrolled = new Set(mine.map((e) => e.leadId));
  const waiting = leads.filter((l) => !enrolled.has(l.id)).sort(pickingOrder(c));
  const { docs: theirs } = waiting.length > 0 ? await ctx.db.query('enrollments', { where: { op: 'in', field: 'leadId', values: waiting.map((l) => l.id) } }) : { docs: [] };
  const byLead = new Map<string, Enrollment[]>();
  for (const e of theirs) byLead.set(e.leadId, [...(byLead.get(e.leadId) ?? []), e]);
  let companies: Set<string> | null = null;
  if (c.settings.companyRelay.enabled) {
    const leadById = new Map(leads.map((l) => [l.id, l]));
    companies = new Set(mine.map((e) => (leadById.get(e.leadId)?.company ?? '').trim().toLowerCase().replace(/\s+/g, ' ')).filter(Boolean));
  }
  const stageMap = new Map(stages.map((s) => [s.id, s]));
  const skipped: { leadId: string; leadName: string; reason: SkipReason; explanation: string }[] = [];
  let skippedTotal = 0;
  const skippedByReason: Partial<Record<SkipReason, number>> = {};
  for (const l of waiting) {
    const reason = skipReason(c, l, stageMap, byLead.get(l.id) ?? [], companies);
    if (reason === null) continue;
    skippedTotal++;
    skippedByReason[reason] = (skippedByReason[reason] ?? 0) + 1;
    if (skipped.length < limit && (only === undefined || reason === only)) skipped.push({ leadId: l.id, leadName: leadName(l), reason, explanation: SKIP_WORDS[reason] });
  }
  return { total: leads.length, notStarted: waiting.length - skippedTotal, skippedTotal, skippedByReason, skipped };
}

export const ops = opsByName(getActivity);
