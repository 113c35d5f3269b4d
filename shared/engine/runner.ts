/**
 * The outreach runner: each tick it reads the channel events of the senders it hosts, delivers
 * queued direct messages, and executes the due steps of running campaigns, inside the campaign's
 * sending window and the sender's daily limits. It is deterministic over its injected clock, random
 * source and ids, and keeps no state that matters in memory: progress (doneSteps), counters (usage)
 * and leases live in the store, so a fresh runner over the same store continues exactly.
 *
 * Every write goes through shared/rules like an operation's (staged on a Tx, validated, committed).
 * Before a network action its intent is committed (the message in status `sending`), after it the
 * outcome; the outcome's commit is retried on a conflict so an action that happened is recorded.
 *
 * The parts: leases.ts (which runner works a sender), settle.ts (sends interrupted by a crash),
 * inbound.ts (channel events), direct.ts (direct messages), plan.ts (what is due and why,
 * re-planning when a gate changes, lead picking), pick-sender.ts (a sender's room in its limits,
 * which sender takes a lead), group-leads.ts (starting a campaign's lead-group leads), act.ts
 * (acting through a channel: checks, intent, action), step-content.ts (what an action says),
 * record.ts (recording outcomes), company-relay.ts (the next colleague); runner-core.ts holds what
 * they share. Only plan.ts's re-planning keeps state of its own between ticks (`ReplanState`).
 *
 * A tick: leases, settle interrupted sends, poll channels, deliver direct messages, then for the
 * ready campaigns: re-plan parked enrollments whose gates changed, read the due ones (an index
 * range on nextActionAt, never a scan), start group leads while there is room, and run them in
 * lead-picking order.
 */
import { readiness as defaultReadiness } from '../rules/readiness.ts';
import { runEnrollment } from './act.ts';
import { createDirect } from './direct.ts';
import { createInbound } from './inbound.ts';
import { createGroupStarter } from './group-leads.ts';
import { createLeases } from './leases.ts';
import { dueEnrollments, newReplanState, queueOrder, readyCampaigns, replanGated } from './plan.ts';
import { createSettler } from './settle.ts';
import { createCore, emptyReport, errorText, isConflict } from './runner-core.ts';
import type { Runner, RunnerOptions, TickReport, TickState } from './runner-core.ts';

export type { Runner, RunnerOptions, Spacing, TickReport } from './runner-core.ts';

export function createRunner(opts: RunnerOptions): Runner {
  const core = createCore(opts, opts.readiness ?? defaultReadiness);
  const { store, clock, hostedIds, runnerId, channelOf } = core;
  const leases = createLeases(core);
  const inbound = createInbound(core, leases);
  const direct = createDirect(core, leases);
  const replan = newReplanState();
  const settler = createSettler(core, direct);
  const groupStarter = createGroupStarter(core);
  let ticking = false;

  async function tick(): Promise<TickReport> {
    if (ticking) throw new Error('A tick is already running; ticks never overlap.');
    ticking = true;
    try {
      const now = clock.now();
      const st: TickState = {
        now, nowMs: now.getTime(), nowIso: now.toISOString(), report: emptyReport(now.toISOString()),
        senders: new Map(), held: new Set(), stages: new Map(), groups: new Map(), campaigns: new Map(), load: new Map(), rr: new Map(), memo: new Map(), workspace: null,
      };
      const [{ docs: senders }, { docs: stages }] = await Promise.all([store.query('senders'), store.query('stages')]);
      for (const s of senders) st.senders.set(s.id, s);
      for (const s of stages) st.stages.set(s.id, s);
      for (const s of senders) {
        if (hostedIds && !hostedIds.has(s.id)) continue;
        if (!channelOf(s)) continue;
        if (await leases.prepareSender(st, s.id)) {
          st.held.add(s.id);
          await core.primeSlot(s);
          st.report.senders.held.push(s.id);
        } else if (runnerId !== null) {
          st.report.senders.heldElsewhere.push(s.id);
        }
      }
      // Interrupted sends first: their enrollments must not act again before they are settled.
      await settler.settleIntents(st);
      for (const id of st.held) {
        const s = st.senders.get(id);
        if (!s) continue;
        try {
          await inbound.pollSender(st, s);
        } catch (e) {
          st.report.errors.push({ message: `Polling failed: ${errorText(e)}`, sdrProfileId: id });
        }
      }
      await direct.deliverDirect(st);
      await runCampaigns(st);
      return st.report;
    } finally {
      ticking = false;
    }
  }

  async function runCampaigns(st: TickState): Promise<void> {
    await readyCampaigns(core, st);
    await replanGated(core, replan, st);
    const due = await dueEnrollments(store, st);
    const freshDue = new Map<string, number>();
    for (const e of due) if (e.doneSteps.length === 0) freshDue.set(e.campaignId, (freshDue.get(e.campaignId) ?? 0) + 1);
    const started = await groupStarter.startGroupLeads(st, freshDue);
    for (const e of await queueOrder(store, st, [...due, ...started])) {
      try {
        await runEnrollment(core, leases, st, e);
      } catch (err) {
        // Someone changed the enrollment meanwhile (an operation, a replication push): next tick.
        if (isConflict(err)) continue;
        st.report.errors.push({ message: errorText(err), enrollmentId: e.id, ...(e.sdrProfileId ? { sdrProfileId: e.sdrProfileId } : {}) });
      }
    }
  }

  return { runnerId, tick, release: leases.release };
}
