/**
 * A sender's room and the choice of a sender: whether a sender has room for an action now (its
 * daily limits, scaled by a new sender's ramp-up, and the weekly cap on connection requests), and
 * which of a campaign's senders takes a lead no sender has taken yet.
 */
import type { Campaign, Message, Sender, Step } from '../model/index.ts';
import { senderStepProblems } from '../rules/readiness.ts';
import type { Store } from '../store.ts';
import type { Tx } from '../tx.ts';
import type { Leases } from './leases.ts';
import { WEEK_MS, budgetsFor, hasRoom, usageId, usageOrEmpty, weeklyConnectionCap } from './limits.ts';
import type { Budget } from './limits.ts';
import { and, dayAfter, dayOf, eq, openingFrom } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';

export type LimitReason = 'daily_limit' | 'weekly_limit';

/** A sender's room for one action: the budgets it takes and the sender's day (to count it), or the
 * limit that is used up and when it has room again (the campaign's window not yet applied). */
export type Room = { full: null; budgets: Budget[]; day: string } | { full: LimitReason; until: Date };

/** Whether the sender has room for an action of this kind now: its daily limits first, then, for a
 * connection request, the weekly cap. */
export async function roomFor(store: Store, st: TickState, tx: Tx, s: Sender, kind: Message['kind'], withNote: boolean): Promise<Room> {
  const budgets = budgetsFor(s, kind, withNote, st.now);
  const day = dayOf(st, s);
  const usage = usageOrEmpty(await tx.get('usage', usageId(s.id, day)), s, day, st.nowIso);
  if (!hasRoom(usage, budgets)) return { full: 'daily_limit', until: dayAfter(st, s) };
  if (kind === 'connection_request') {
    const week = await weeklyConnections(store, st, s);
    if (week.until) return { full: 'weekly_limit', until: week.until };
  }
  return { full: null, budgets, day };
}

/** A sender's connection requests of the last 7 days (their times, oldest first) and its cap. */
type WeeklyTally = { times: string[]; cap: number };

const tallyKey = (s: Sender): string => `weekly|${s.id}`;
const tallyOf = (st: TickState, s: Sender): WeeklyTally | undefined => st.memo.get(tallyKey(s)) as WeeklyTally | undefined;

/**
 * A sender's connection requests of the last 7 days, counted from the recorded actions (the
 * messages, intents and unknown deliveries included), once per tick and then kept up to date by
 * `countConnection`. `until` is when the cap has room again (the oldest request ages out), null
 * while there is room.
 */
export async function weeklyConnections(store: Store, st: TickState, s: Sender): Promise<{ count: number; cap: number; until: Date | null }> {
  let w = tallyOf(st, s);
  if (!w) {
    const since = new Date(st.nowMs - WEEK_MS).toISOString();
    const { docs } = await store.query('messages', {
      where: and({ op: 'gt', field: 'createdAt', value: since }, eq('sdrProfileId', s.id), eq('kind', 'connection_request'), eq('direction', 'out'), { op: 'in', field: 'status', values: ['sent', 'sending', 'unknown'] }),
    });
    w = { times: docs.map((m) => m.createdAt).sort(), cap: weeklyConnectionCap(s, st.now) };
    st.memo.set(tallyKey(s), w);
  }
  if (w.times.length < w.cap) return { count: w.times.length, cap: w.cap, until: null };
  // Room again when enough of the oldest requests have aged out of the 7 days.
  const oldest = w.times[w.times.length - w.cap] ?? w.times[0] ?? st.nowIso;
  return { count: w.times.length, cap: w.cap, until: new Date(Date.parse(oldest) + WEEK_MS) };
}

/** Counts a connection request just made in this tick's weekly tally. */
export function countConnection(st: TickState, s: Sender): void {
  tallyOf(st, s)?.times.push(st.nowIso);
}

/** IN_PROGRESS enrollments per sender in a campaign, read once per tick and kept up to date by
 * pickSender (the least loaded sender takes the next lead). */
export async function loadOf(store: Store, st: TickState, campaignId: string): Promise<Map<string, number>> {
  let load = st.load.get(campaignId);
  if (!load) {
    load = new Map();
    const { docs } = await store.query('enrollments', { where: and(eq('campaignId', campaignId), eq('status', 'IN_PROGRESS'), { op: 'neq', field: 'sdrProfileId', value: null }) });
    for (const x of docs) if (x.sdrProfileId) load.set(x.sdrProfileId, (load.get(x.sdrProfileId) ?? 0) + 1);
    st.load.set(campaignId, load);
  }
  return load;
}

/** Picks one of the campaign's senders for an unassigned enrollment: hosted here, free, able to
 * do the step, with room in its limits, the least loaded first. Else 'wait' (a sender is busy or
 * none can), or when the first of them has room again, inside the campaign's window. */
export async function pickSender(
  core: RunnerCore, leases: Pick<Leases, 'senderGate'>, st: TickState, tx: Tx, c: Campaign, step: Step, kind: Message['kind'], withNote: boolean,
): Promise<Sender | { at: Date; reason: LimitReason } | 'wait'> {
  const candidates: Sender[] = [];
  for (const entry of c.senders) {
    const s = st.senders.get(entry.sdrProfileId);
    if (!s || leases.senderGate(st, c, s.id) !== null) continue;
    if (senderStepProblems(step, s).length > 0) continue;
    candidates.push(s);
  }
  if (candidates.length === 0) return 'wait';
  const load = await loadOf(core.store, st, c.id);
  candidates.sort((a, b) => (load.get(a.id) ?? 0) - (load.get(b.id) ?? 0) || (a.id < b.id ? -1 : 1));
  let busy = false;
  let reset: Date | null = null;
  let reason: LimitReason = 'daily_limit';
  for (const s of candidates) {
    const room = await roomFor(core.store, st, tx, s, kind, withNote);
    if (room.full !== null) {
      if (!reset || room.until < reset) {
        reset = room.until;
        reason = room.full;
      }
      continue;
    }
    if (!core.slotFree(st, s) || !core.channelOf(s)) {
      busy = true;
      continue;
    }
    load.set(s.id, (load.get(s.id) ?? 0) + 1);
    return s;
  }
  if (busy || !reset) return 'wait';
  const at = openingFrom(st, c, reset);
  return at ? { at, reason } : 'wait';
}
