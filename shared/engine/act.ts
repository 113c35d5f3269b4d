/**
 * Acting: runs an enrollment's due steps (waits, conditions and skips chain within a tick, at most
 * one network action per enrollment per tick). An action step passes its checks in order (skip
 * conditions, the sending window, a sender, what the sender can do, its room, its spacing), then is
 * performed: intent committed, the sender's channel asked, the outcome recorded (record.ts).
 * step-content.ts says what the action says.
 *
 * The functions take the runner's tools (`core`), its leases and the tick (`st`); the actor keeps no
 * state of its own between ticks.
 */
import type { Campaign, Enrollment, Lead, Sender, Stage, Step } from '../model/index.ts';
import { senderStepProblems } from '../rules/readiness.ts';
import { STEP_LABELS } from '../sequence.ts';
import { Tx } from '../tx.ts';
import type { Channel, ChannelFailure, ChannelSendResult } from './channel.ts';
import type { Leases } from './leases.ts';
import { countConnection, pickSender, roomFor } from './pick-sender.ts';
import { holds } from './plan.ts';
import { advance, complete, defer, dropIntent, recordIntent, recordRejected, recordSent, stop } from './record.ts';
import type { SentOutcome, StepAction } from './record.ts';
import { actionKind, asFailure, currentStep, openNow, openingFrom } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';
import { buildAction, chooseVariant, renderFor, stepRef } from './step-content.ts';
import { categoryOf } from './timeline.ts';
import { isAction } from './walk.ts';

/** What one step did: passed (a wait, condition or skip: the next step may run in this tick),
 * performed the enrollment's network action of this tick, or stopped the tick's work on it. */
export type StepResult = 'transition' | 'acted' | 'halt';

/** Runs an enrollment's due steps: waits, conditions and skips chain within the tick, at most
 * one network action per enrollment per tick. */
export async function runEnrollment(core: RunnerCore, leases: Leases, st: TickState, e0: Enrollment): Promise<void> {
  const c = st.campaigns.get(e0.campaignId);
  if (!c) return;
  // The cheap gate first: a waiting enrollment costs no read.
  if (e0.sdrProfileId !== null && leases.senderGate(st, c, e0.sdrProfileId) !== null) {
    await gateEnrollment(core, leases, st, c, e0);
    return;
  }
  // Inside the window, an action whose every possible sender is still spacing its actions waits
  // without a read: at a window's opening hundreds of leads are due and a few can go per tick.
  const next = currentStep(c, e0);
  if (next && isAction(next) && openNow(st, c) && !someSenderFree(core, leases, st, c, e0)) {
    st.report.waiting++;
    return;
  }
  let acted = false;
  for (let i = 0; i <= c.steps.length + 1; i++) {
    const r = await stepOnce(core, leases, st, c, e0.id, acted);
    if (r === 'acted') acted = true;
    else if (r !== 'transition') return;
  }
}

/** Whether one of the senders that may take the enrollment's action is held here, may act for the
 * campaign and is not spacing its actions (its own sender, else any unpaused one of the campaign). */
function someSenderFree(core: RunnerCore, leases: Leases, st: TickState, c: Campaign, e: Enrollment): boolean {
  const candidates = e.sdrProfileId !== null ? [e.sdrProfileId] : c.senders.filter((x) => !x.paused).map((x) => x.sdrProfileId);
  return candidates.some((id) => {
    const s = st.senders.get(id);
    return s !== undefined && leases.senderGate(st, c, id) === null && core.slotFree(st, s);
  });
}

/** An enrollment whose sender may not act now: left as it is, or parked until the sender's backoff ends. */
async function gateEnrollment(core: RunnerCore, leases: Leases, st: TickState, c: Campaign, e: Enrollment): Promise<void> {
  const gate = e.sdrProfileId === null ? null : leases.senderGate(st, c, e.sdrProfileId);
  if (gate === 'wait') st.report.waiting++;
  else if (gate !== null) await defer(core, st, e.id, gate.until, 'sender_limited');
}

/** Why a sequence must stop for this lead before its next step (null: it goes on). */
export function stopReasonFor(lead: Lead | null, stages: ReadonlyMap<string, Stage>): string | null {
  if (!lead) return 'lead_deleted';
  if (lead.doNotContact) return 'do_not_contact';
  if (lead.blocklisted) return 'blocklisted';
  if (categoryOf(lead, stages) === 'LOST') return 'lead_lost';
  return null;
}

/** When a wait step ends: it counts from the step before it (the action's send), not from when a
 * tick saw it, and never from later than now. */
export function waitEnd(e: Enrollment, step: Step, nowMs: number): Date {
  const last = e.doneSteps[e.doneSteps.length - 1];
  const from = last ? Math.min(nowMs, Date.parse(last.at)) : nowMs;
  return new Date(from + step.waitTimeSeconds * 1000);
}

/** Runs the enrollment's current step, read afresh in its own unit of work. */
async function stepOnce(core: RunnerCore, leases: Leases, st: TickState, c: Campaign, enrollmentId: string, acted: boolean): Promise<StepResult> {
  const tx = new Tx(core.store);
  const e = await tx.get('enrollments', enrollmentId);
  if (!e || e.status !== 'IN_PROGRESS' || e.nextActionAt === null || e.nextActionAt > st.nowIso) return 'halt';
  let sender: Sender | null = null;
  if (e.sdrProfileId !== null) {
    if (leases.senderGate(st, c, e.sdrProfileId) !== null) {
      await gateEnrollment(core, leases, st, c, e);
      return 'halt';
    }
    sender = st.senders.get(e.sdrProfileId) ?? null;
  }
  const lead = await tx.get('leads', e.leadId);
  const stopWhy = stopReasonFor(lead, st.stages);
  if (!lead || stopWhy) {
    await stop(core, st, tx, c, e, lead, stopWhy ?? 'lead_deleted', sender);
    await core.commit(tx);
    return 'halt';
  }
  const step = currentStep(c, e);
  if (!step) {
    await complete(core, st, tx, c, e, lead, sender);
    await core.commit(tx);
    return 'halt';
  }
  if (step.type === 'WAIT') {
    await advance(core, st, tx, c, e, lead, step, 'waited', sender, { nextAt: waitEnd(e, step, st.nowMs) });
    await core.commit(tx);
    st.report.transitions++;
    return 'transition';
  }
  if (step.type === 'CONDITION') {
    const yes = await holds(tx, step.sendCondition, e, lead);
    await advance(core, st, tx, c, e, lead, step, yes ? 'yes' : 'no', sender);
    await core.commit(tx);
    st.report.transitions++;
    return 'transition';
  }
  if (acted) return 'halt';
  return runAction(core, leases, st, tx, c, e, lead, step, sender);
}

/** Why an action step is skipped without acting (null: it acts): its send condition does not
 * hold, or an email step's lead has no working address. */
export async function skipReason(tx: Tx, step: Step, e: Enrollment, lead: Lead): Promise<string | null> {
  if (step.sendCondition !== '' && !(await holds(tx, step.sendCondition, e, lead))) return `${step.sendCondition} does not hold`;
  if (step.type === 'EMAIL' && lead.email.trim() === '') return 'the lead has no email address';
  if (step.type === 'EMAIL' && lead.emailBouncedAt) return `the lead's email bounced (${lead.emailBounceReason ?? 'the address does not work'})`;
  return null;
}

/** Why this sender cannot perform the step at all, which stops the sequence (null: it can): the
 * step needs what the sender lacks, or the connection note is longer than the sender allows. */
export function senderRefusal(step: Step, sender: Sender, rendered: string, withNote: boolean): string | null {
  const problems = senderStepProblems(step, sender);
  if (problems.length > 0) return `${sender.name} cannot perform ${STEP_LABELS[step.type].toLowerCase()}: ${problems.join('; ')}`;
  if (withNote && rendered.length > sender.connectionNoteMaxLength) {
    return `the connection note is ${rendered.length} characters once merge fields are filled in; ${sender.name}'s limit is ${sender.connectionNoteMaxLength}`;
  }
  return null;
}

/** An action step: its checks in order, each of which may skip, stop, park or leave it, then the action. */
async function runAction(core: RunnerCore, leases: Leases, st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, assigned: Sender | null): Promise<StepResult> {
  const skipWhy = await skipReason(tx, step, e, lead);
  if (skipWhy) {
    if (step.stopIfSkipped) await stop(core, st, tx, c, e, lead, `skipped: ${STEP_LABELS[step.type]} (${skipWhy})`, assigned, step);
    else await advance(core, st, tx, c, e, lead, step, `skipped: ${skipWhy}`, assigned);
    await core.commit(tx);
    st.report.transitions++;
    return step.stopIfSkipped ? 'halt' : 'transition';
  }

  if (!openNow(st, c)) {
    const at = openingFrom(st, c, st.now);
    if (at) await defer(core, st, e.id, at, 'outside_window');
    return 'halt';
  }

  const kind = actionKind(step);
  const { variantId, text, subject } = await chooseVariant(core, st, c, e, step);
  const rendered = renderFor(st, c, lead, text);
  const withNote = kind === 'connection_request' && rendered.trim() !== '';

  let sender = assigned;
  if (!sender) {
    const pick = await pickSender(core, leases, st, tx, c, step, kind, withNote);
    if (pick === 'wait') {
      st.report.waiting++;
      return 'halt';
    }
    if ('at' in pick) {
      await defer(core, st, e.id, pick.at, pick.reason);
      return 'halt';
    }
    sender = pick;
  }

  const refusal = senderRefusal(step, sender, rendered, withNote);
  if (refusal) {
    await stop(core, st, tx, c, e, lead, refusal, sender, step);
    await core.commit(tx);
    return 'halt';
  }

  // Daily limits (scaled by a new sender's ramp-up) and the weekly cap on connection requests.
  const room = await roomFor(core.store, st, tx, sender, kind, withNote);
  if (room.full !== null) {
    const at = openingFrom(st, c, room.until);
    if (at) await defer(core, st, e.id, at, room.full);
    return 'halt';
  }
  if (!core.slotFree(st, sender)) {
    st.report.waiting++;
    return 'halt';
  }
  const channel = core.channelOf(sender);
  if (!channel) {
    st.report.waiting++;
    return 'halt';
  }

  const action = await buildAction(tx, c, e, lead, step, kind, rendered, renderFor(st, c, lead, subject));
  const ref = await stepRef(tx, e.id, step.id);
  const a: StepAction = { campaign: c, enrollmentId: e.id, leadId: lead.id, step, sender, kind, action, ref };
  return perform(core, leases, st, a, lead, channel, { budgets: room.budgets, day: room.day, variantId });
}

/** Intent, action, outcome. The intent is committed before the channel is asked: a crash after it
 * leaves a trace to settle (settle.ts). */
export async function perform(
  core: RunnerCore, leases: Leases, st: TickState, a: StepAction, lead: Lead, channel: Channel, counted: Omit<SentOutcome, 'result' | 'sentAt'>,
): Promise<StepResult> {
  await recordIntent(core, st, a);
  let result: ChannelSendResult;
  try {
    result = await channel.send(a.sender, lead, a.action, a.ref);
  } catch (err) {
    await sendFailed(core, leases, st, a, lead, asFailure(err));
    return 'halt';
  }
  const sentAt = core.clock.now().toISOString();
  core.failures.delete(a.sender.id);
  core.useSlot(st, a.sender);
  await recordSent(core, st, a, { result, ...counted, sentAt });
  if (a.kind === 'connection_request') countConnection(st, a.sender);
  return 'acted';
}

/** The channel did not perform the action. Refused for this lead: recorded as failed, the sequence
 * stops. Anything else (a limit, an outage): the intent goes, the sender backs off, and the
 * enrollment waits for it. */
async function sendFailed(core: RunnerCore, leases: Leases, st: TickState, a: StepAction, lead: Lead, f: ChannelFailure): Promise<void> {
  core.useSlot(st, a.sender);
  if (f.kind === 'rejected' || f.kind === 'unsupported') {
    await recordRejected(core, st, a, lead, f);
    return;
  }
  await dropIntent(core, a.ref);
  await leases.senderFailure(st, a.sender, f);
  const s = st.senders.get(a.sender.id);
  if (s?.backoffUntil) await defer(core, st, a.enrollmentId, new Date(s.backoffUntil), 'sender_limited');
}
