/**
 * Planning: which campaigns may run, which enrollments are due and in what order, whether a
 * condition holds, and which sender takes an unassigned lead (or until when it must wait and why).
 */
import type { Campaign, Enrollment, Lead, Message, Sender, Step, Workspace } from '../model/index.ts';
import { senderStepProblems } from '../rules/readiness.ts';
import type { Cond } from '../store.ts';
import type { Tx } from '../tx.ts';
import type { Leases } from './leases.ts';
import { WEEK_MS, budgetsFor, hasRoom, usageId, usageOrEmpty, weeklyConnectionCap } from './limits.ts';
import { and, dayAfter, dayOf, eq, errorText, openingFrom } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';

/** Why the runner parks an enrollment (nextActionAt moved to when the gate is expected to open). */
const PARKED: readonly NonNullable<Enrollment['waitReason']>[] = ['outside_window', 'daily_limit', 'sender_limited', 'weekly_limit'];
const REPLAN_BATCH = 500;
const LAPSED: readonly Workspace['subscriptionStatus'][] = ['past_due', 'canceled'];

export function createPlanner(core: RunnerCore, leases: Leases) {
  const { store, judge, channelOf, slotFree } = core;
  const { senderGate } = leases;

  /** The running campaigns that pass their readiness check; the others are reported with why. */
  async function readyCampaigns(st: TickState): Promise<void> {
    const { docs: running } = await store.query('campaigns', { where: eq('running', true) });
    if (running.length === 0) return;
    const workspace: Workspace | null = await store.get('workspaces', store.workspaceId);
    st.workspace = workspace;
    if (workspace && LAPSED.includes(workspace.subscriptionStatus)) {
      await pauseForSubscription(st, running, workspace);
      return;
    }
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
  }

  /** A lapsed subscription pauses the running campaigns, with the reason on each; reactivating the
   * subscription does not start them again by itself (a person does, with campaigns.start). */
  async function pauseForSubscription(st: TickState, running: readonly Campaign[], workspace: Workspace): Promise<void> {
    const why = `Paused because the workspace subscription is ${workspace.subscriptionStatus.replace('_', ' ')}; start it again once the subscription is active.`;
    for (const c of running) {
      try {
        await core.commitWithRetry(async (tx) => {
          const cur = await tx.get('campaigns', c.id);
          if (cur && cur.running) await tx.put('campaigns', { ...cur, running: false, pausedReason: why, updatedAt: st.nowIso });
        });
        st.report.skippedCampaigns.push({ campaignId: c.id, name: c.name, problems: [why] });
      } catch (err) {
        st.report.errors.push({ message: `Could not pause "${c.name}" for the lapsed subscription: ${errorText(err)}` });
      }
    }
  }

  /** The last gate fingerprint seen per ready campaign (schedule, senders and their limits and
   * states, subscription); a campaign whose fingerprint changed has its parked enrollments
   * re-planned, in batches, until none is left parked on the old plan. */
  const fingerprints = new Map<string, string>();
  const replanPending = new Set<string>();

  function gateFingerprint(st: TickState, c: Campaign): string {
    return JSON.stringify([
      c.schedule,
      c.senders,
      st.workspace?.subscriptionStatus ?? null,
      c.senders.map((x) => {
        const s = st.senders.get(x.sdrProfileId);
        return s ? [s.limits, s.planMax, s.status, s.outreachPaused, s.backoffUntil, st.held.has(s.id)] : null;
      }),
    ]);
  }

  /**
   * Re-plans at once: an enrollment parked by the runner (window closed, limit used up, sender
   * backing off) keeps a next action time computed from the gates as they were. When a gate of its
   * campaign changes (schedule widened, limit raised, sender resumed, un-paused or added, campaign
   * started, subscription reactivated, or this runner just started), its parked enrollments are made
   * due now, so this very tick judges them against the gates as they are: they act, or are parked
   * again with the true current reason. Reads happen only when a gate changed, never on a quiet tick.
   */
  async function replanGated(st: TickState): Promise<void> {
    for (const c of st.campaigns.values()) {
      const fp = gateFingerprint(st, c);
      if (fingerprints.get(c.id) !== fp) {
        fingerprints.set(c.id, fp);
        replanPending.add(c.id);
      }
    }
    // A campaign that stops being ready forgets its fingerprint: ready again is a change.
    for (const id of [...fingerprints.keys()]) if (!st.campaigns.has(id)) fingerprints.delete(id);
    for (const id of [...replanPending]) {
      if (!st.campaigns.has(id)) {
        replanPending.delete(id);
        continue;
      }
      const { docs } = await store.query('enrollments', {
        where: and(eq('campaignId', id), eq('status', 'IN_PROGRESS'), { op: 'in', field: 'waitReason', values: PARKED }, { op: 'gt', field: 'nextActionAt', value: st.nowIso }),
        orderBy: [{ field: 'nextActionAt', dir: 'asc' }],
        limit: REPLAN_BATCH,
      });
      for (let i = 0; i < docs.length; i += 100) {
        const chunk = docs.slice(i, i + 100);
        try {
          await core.commitWithRetry(async (tx) => {
            for (const e0 of chunk) {
              const e = await tx.get('enrollments', e0.id);
              if (!e || e.status !== 'IN_PROGRESS' || e.waitReason === null || e.waitReason === undefined || !PARKED.includes(e.waitReason)) continue;
              await tx.put('enrollments', { ...e, nextActionAt: st.nowIso, waitReason: null, updatedAt: st.nowIso });
            }
          });
          st.report.replanned += chunk.length;
        } catch (err) {
          st.report.errors.push({ message: `Could not re-plan waiting enrollments: ${errorText(err)}` });
        }
      }
      if (docs.length < REPLAN_BATCH) replanPending.delete(id);
    }
  }

  /** The enrollments of the ready campaigns whose next action is due (read through the index on
   * nextActionAt where the store has one: a quiet tick reads nothing else). */
  async function dueEnrollments(st: TickState): Promise<Enrollment[]> {
    if (st.campaigns.size === 0) return [];
    const { docs: due } = await store.query('enrollments', {
      where: and(eq('status', 'IN_PROGRESS'), { op: 'lte', field: 'nextActionAt', value: st.nowIso }, { op: 'in', field: 'campaignId', values: [...st.campaigns.keys()] }),
      orderBy: [{ field: 'nextActionAt', dir: 'asc' }],
    });
    return due;
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
  /** Picks one of the campaign's senders for an unassigned enrollment: hosted here, free, able to
   * do the step, with room in its limits, the least loaded first. */
  async function pickSender(st: TickState, tx: Tx, c: Campaign, step: Step, kind: Message['kind'], withNote: boolean): Promise<Sender | { at: Date; reason: 'daily_limit' | 'weekly_limit' } | 'wait'> {
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
    let reason: 'daily_limit' | 'weekly_limit' = 'daily_limit';
    for (const s of candidates) {
      const day = dayOf(st, s);
      const usage = usageOrEmpty(await tx.get('usage', usageId(s.id, day)), s, day, st.nowIso);
      if (!hasRoom(usage, budgetsFor(s, kind, withNote, st.now))) {
        const r = dayAfter(st, s);
        if (!reset || r < reset) {
          reset = r;
          reason = 'daily_limit';
        }
        continue;
      }
      if (kind === 'connection_request') {
        const week = await weeklyConnections(st, s);
        if (week.until) {
          if (!reset || week.until < reset) {
            reset = week.until;
            reason = 'weekly_limit';
          }
          continue;
        }
      }
      if (!slotFree(st, s) || !channelOf(s)) {
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

  /**
   * A sender's connection requests of the last 7 days, counted from the recorded actions (the
   * messages, intents and unknown deliveries included), once per tick and then kept up to date by
   * `countConnection`. `until` is when the cap has room again (the oldest request ages out), null
   * while there is room.
   */
  async function weeklyConnections(st: TickState, s: Sender): Promise<{ count: number; cap: number; until: Date | null }> {
    const key = `weekly|${s.id}`;
    let w = st.memo.get(key) as { times: string[]; cap: number } | undefined;
    if (!w) {
      const since = new Date(st.nowMs - WEEK_MS).toISOString();
      const { docs } = await store.query('messages', {
        where: and({ op: 'gt', field: 'createdAt', value: since }, eq('sdrProfileId', s.id), eq('kind', 'connection_request'), eq('direction', 'out'), { op: 'in', field: 'status', values: ['sent', 'sending', 'unknown'] }),
      });
      w = { times: docs.map((m) => m.createdAt).sort(), cap: weeklyConnectionCap(s, st.now) };
      st.memo.set(key, w);
    }
    if (w.times.length < w.cap) return { count: w.times.length, cap: w.cap, until: null };
    // Room again when enough of the oldest requests have aged out of the 7 days.
    const oldest = w.times[w.times.length - w.cap] ?? w.times[0] ?? st.nowIso;
    return { count: w.times.length, cap: w.cap, until: new Date(Date.parse(oldest) + WEEK_MS) };
  }

  /** Counts a connection request just made in this tick's weekly tally. */
  function countConnection(st: TickState, s: Sender): void {
    const w = st.memo.get(`weekly|${s.id}`) as { times: string[] } | undefined;
    if (w) w.times.push(st.nowIso);
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

  return { readyCampaigns, replanGated, dueEnrollments, queueOrder, holds, pickSender, loadOf, weeklyConnections, countConnection };
}

export type Planner = ReturnType<typeof createPlanner>;
