/**
 * Acting: runs an enrollment's due steps (waits, conditions and skips chain within a tick, at most
 * one network action per enrollment per tick), renders the step and performs it through the
 * sender's channel, then hands the outcome to record.ts.
 */
import { renderMergeFields } from '../merge-fields.ts';
import type { Campaign, Enrollment, Lead, Message, Sender, Step } from '../model/index.ts';
import { senderStepProblems } from '../rules/readiness.ts';
import { STEP_LABELS } from '../sequence.ts';
import { Tx } from '../tx.ts';
import type { ChannelAction, ChannelSendResult } from './channel.ts';
import { derivedUuid } from './hash.ts';
import type { Leases } from './leases.ts';
import { budgetsFor, hasRoom, usageId, usageOrEmpty } from './limits.ts';
import type { Planner } from './plan.ts';
import type { Recorder } from './record.ts';
import { actionKind, and, asFailure, currentStep, dayAfter, dayOf, emailThread, eq, openNow, openingFrom, reSubject } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';
import { categoryOf } from './timeline.ts';
import { isAction } from './walk.ts';

export function createActor(core: RunnerCore, leases: Leases, planner: Planner, recorder: Recorder) {
  const { store, random, failures, channelOf, slotFree, useSlot, commit } = core;
  const { senderGate, senderFailure } = leases;
  const { holds, pickSender } = planner;
  const { defer, advance, complete, stop, recordSent, recordRejected, recordIntent, dropIntent } = recorder;

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
      // A wait counts from the step before it (the action's send), not from when a tick saw it.
      const last = e.doneSteps[e.doneSteps.length - 1];
      const from = last ? Math.min(st.nowMs, Date.parse(last.at)) : st.nowMs;
      await advance(st, tx, c, e, lead, step, 'waited', sender, new Date(from + step.waitTimeSeconds * 1000));
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


  async function runAction(st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, assigned: Sender | null): Promise<StepResult> {
    const label = STEP_LABELS[step.type];
    // Guards that skip the step without acting.
    let skipWhy: string | null = null;
    if (step.sendCondition !== '' && !(await holds(tx, step.sendCondition, e, lead))) skipWhy = `${step.sendCondition} does not hold`;
    else if (step.type === 'EMAIL' && lead.email.trim() === '') skipWhy = 'the lead has no email address';
    else if (step.type === 'EMAIL' && lead.emailBouncedAt) skipWhy = `the lead's email bounced (${lead.emailBounceReason ?? 'the address does not work'})`;
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
      if ('at' in pick) {
        await defer(st, e.id, pick.at, pick.reason);
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

    // Daily limits (scaled by a new sender's ramp-up) and the weekly cap on connection requests.
    const budgets = budgetsFor(sender, kind, withNote, st.now);
    const day = dayOf(st, sender);
    const usage = usageOrEmpty(await tx.get('usage', usageId(sender.id, day)), sender, day, st.nowIso);
    if (!hasRoom(usage, budgets)) {
      const at = openingFrom(st, c, dayAfter(st, sender));
      if (at) await defer(st, e.id, at, 'daily_limit');
      return 'halt';
    }
    if (kind === 'connection_request') {
      const week = await planner.weeklyConnections(st, sender);
      if (week.until) {
        const at = openingFrom(st, c, week.until);
        if (at) await defer(st, e.id, at, 'weekly_limit');
        return 'halt';
      }
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
    // The intent is committed before the action: a crash after it leaves a trace to settle.
    await recordIntent(st, c, lead.id, step, sender, kind, action, ref);
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
      await dropIntent(st, ref);
      await senderFailure(st, sender, f);
      const s = st.senders.get(sender.id);
      if (s?.backoffUntil) await defer(st, e.id, new Date(s.backoffUntil), 'sender_limited');
      return 'halt';
    }
    const sentAt = core.clock.now().toISOString();
    failures.delete(sender.id);
    useSlot(st, sender);
    await recordSent(st, c, e.id, lead.id, step, sender, kind, action, ref, result, budgets, day, variantId, sentAt);
    if (kind === 'connection_request') planner.countConnection(st, sender);
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

  /** The channel action of a step (same_thread emails cite this campaign's earlier emails to the lead). */
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

  return { runEnrollment };
}
