/**
 * Planning: which campaigns may run, which parked enrollments a changed gate frees (re-planning),
 * which enrollments are due and in what order (lead picking), and whether a condition holds.
 * pick-sender.ts says which sender takes an unassigned lead, and whether a sender has room.
 *
 * The functions take the runner's tools (`core`) and the tick (`st`). The only state kept from one
 * tick to the next is re-planning's (`ReplanState`, held by the runner): a plain object, because
 * it is two collections the functions below read and update, with no resource to guard.
 */
import type { Campaign, Enrollment, Lead, Sender, Workspace } from '../model/index.ts';
import type { Cond, Store } from '../store.ts';
import type { Tx } from '../tx.ts';
import { and, eq, errorText } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';

/** Why the runner parks an enrollment (nextActionAt moved to when the gate is expected to open). */
const PARKED: readonly NonNullable<Enrollment['waitReason']>[] = ['outside_window', 'daily_limit', 'sender_limited', 'weekly_limit'];
const REPLAN_BATCH = 500;
const LAPSED: readonly Workspace['subscriptionStatus'][] = ['past_due', 'canceled'];

/** The running campaigns that pass their readiness check; the others are reported with why. */
export async function readyCampaigns(core: RunnerCore, st: TickState): Promise<void> {
  const { store } = core;
  const { docs: running } = await store.query('campaigns', { where: eq('running', true) });
  if (running.length === 0) return;
  const workspace: Workspace | null = await store.get('workspaces', store.workspaceId);
  st.workspace = workspace;
  if (workspace && LAPSED.includes(workspace.subscriptionStatus)) {
    await pauseForSubscription(core, st, running, workspace);
    return;
  }
  for (const c of running) {
    let group = st.groups.get(c.leadGroupId) ?? null;
    if (!group) {
      group = await store.get('leadGroups', c.leadGroupId);
      if (group) st.groups.set(group.id, group);
    }
    const senders = c.senders.map((x) => st.senders.get(x.sdrProfileId)).filter((s): s is Sender => s !== undefined);
    const r = core.judge(c, { group, senders, workspace });
    if (!r.ready) {
      st.report.skippedCampaigns.push({ campaignId: c.id, name: c.name, problems: r.problems.filter((p) => p.severity === 'error').map((p) => p.message) });
      continue;
    }
    st.campaigns.set(c.id, c);
  }
}

/** A lapsed subscription pauses the running campaigns, with the reason on each; reactivating the
 * subscription does not start them again by itself (a person does, with campaigns.start). */
async function pauseForSubscription(core: RunnerCore, st: TickState, running: readonly Campaign[], workspace: Workspace): Promise<void> {
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

// ---------------------------------------------------------------- re-planning

/** What re-planning remembers between ticks: the last gate fingerprint seen per ready campaign,
 * and the campaigns whose parked enrollments are still being re-planned (in batches). */
export type ReplanState = { fingerprints: Map<string, string>; pending: Set<string> };

export const newReplanState = (): ReplanState => ({ fingerprints: new Map(), pending: new Set() });

/** Everything a campaign's parked enrollments wait on: schedule, senders and their limits and
 * states, subscription. */
export function gateFingerprint(st: TickState, c: Campaign): string {
  return JSON.stringify([
    c.schedule,
    c.senders,
    st.workspace?.subscriptionStatus ?? null,
    c.senders.map((x) => {
      const s = st.senders.get(x.sdrProfileId);
      // warmedUp and the ramp-up's start change today's effective limits as the limits do.
      return s ? [s.limits, s.planMax, s.status, s.outreachPaused, s.backoffUntil, st.held.has(s.id), s.warmedUp === true, s.rampUpStartedAt ?? null] : null;
    }),
  ]);
}

/** Marks for re-planning the ready campaigns whose gates changed since the last tick (a campaign
 * seen for the first time counts as changed); forgets campaigns no longer ready, so that ready
 * again is a change. */
export function noteGateChanges(replan: ReplanState, st: TickState): void {
  for (const c of st.campaigns.values()) {
    const fp = gateFingerprint(st, c);
    if (replan.fingerprints.get(c.id) !== fp) {
      replan.fingerprints.set(c.id, fp);
      replan.pending.add(c.id);
    }
  }
  for (const id of [...replan.fingerprints.keys()]) if (!st.campaigns.has(id)) replan.fingerprints.delete(id);
}

/**
 * Re-plans at once: an enrollment parked by the runner (window closed, limit used up, sender
 * backing off) keeps a next action time computed from the gates as they were. When a gate of its
 * campaign changes (schedule widened, limit raised, sender resumed, un-paused or added, campaign
 * started, subscription reactivated, or this runner just started), its parked enrollments are made
 * due now, so this very tick judges them against the gates as they are: they act, or are parked
 * again with the true current reason. Reads happen only when a gate changed, never on a quiet tick.
 */
export async function replanGated(core: RunnerCore, replan: ReplanState, st: TickState): Promise<void> {
  noteGateChanges(replan, st);
  for (const id of [...replan.pending]) {
    if (!st.campaigns.has(id)) {
      replan.pending.delete(id);
      continue;
    }
    const read = await replanBatch(core, st, id);
    if (read < REPLAN_BATCH) replan.pending.delete(id);
  }
}

/** Makes one batch of a campaign's parked enrollments due now; returns how many were read (a full
 * batch means more may be left). */
async function replanBatch(core: RunnerCore, st: TickState, campaignId: string): Promise<number> {
  const { docs } = await core.store.query('enrollments', {
    where: and(eq('campaignId', campaignId), eq('status', 'IN_PROGRESS'), { op: 'in', field: 'waitReason', values: PARKED }, { op: 'gt', field: 'nextActionAt', value: st.nowIso }),
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
  return docs.length;
}

// ---------------------------------------------------------------- what is due, in what order

/** The enrollments of the ready campaigns whose next action is due (read through the index on
 * nextActionAt where the store has one: a quiet tick reads nothing else). */
export async function dueEnrollments(store: Store, st: TickState): Promise<Enrollment[]> {
  if (st.campaigns.size === 0) return [];
  const { docs: due } = await store.query('enrollments', {
    where: and(eq('status', 'IN_PROGRESS'), { op: 'lte', field: 'nextActionAt', value: st.nowIso }, { op: 'in', field: 'campaignId', values: [...st.campaigns.keys()] }),
    orderBy: [{ field: 'nextActionAt', dir: 'asc' }],
  });
  return due;
}

/** Lead picking: sequences already under way go first (in the order given, by due time); then new
 * ones, newest lead first (`leadCreated`) in campaigns that prefer new leads, else in enrollment
 * order. */
export function pickingQueue(due: readonly Enrollment[], campaigns: ReadonlyMap<string, Campaign>, leadCreated: ReadonlyMap<string, string>): Enrollment[] {
  const started = due.filter((e) => e.doneSteps.length > 0);
  const fresh = due.filter((e) => e.doneSteps.length === 0);
  const key = (e: Enrollment): string => (campaigns.get(e.campaignId)?.settings.preferNewLeads ? leadCreated.get(e.leadId) ?? '' : '');
  fresh.sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    if (ka !== kb) return ka < kb ? 1 : -1;
    return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
  return [...started, ...fresh];
}

/** The due enrollments in lead-picking order (reads the leads' creation times only for new
 * sequences of campaigns that prefer new leads). */
export async function queueOrder(store: Store, st: TickState, due: Enrollment[]): Promise<Enrollment[]> {
  const preferNew = due.filter((e) => e.doneSteps.length === 0 && st.campaigns.get(e.campaignId)?.settings.preferNewLeads);
  const leadCreated = new Map<string, string>();
  if (preferNew.length > 0) {
    for (const l of await store.getMany('leads', preferNew.map((e) => e.leadId))) leadCreated.set(l.id, l.createdAt);
  }
  return pickingQueue(due, st.campaigns, leadCreated);
}

/** Whether a condition test holds for the enrollment's lead. */
export async function holds(tx: Tx, test: string, e: Enrollment, lead: Lead): Promise<boolean> {
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
