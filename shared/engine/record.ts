/**
 * Recording outcomes, one function per outcome: an enrollment deferred (with why), a step done and
 * the next one planned, a sequence completed or stopped, an action's intent, the action sent or
 * refused (message, usage, timeline, stage), an interrupted send whose delivery is unknown.
 * company-relay.ts enrolls the next colleague when a person finished without answering.
 *
 * Each function takes the runner's tools (`core`) and the tick (`st`) and keeps no state of its own.
 * Those given a Tx stage their writes on it (the caller commits); the others commit their own unit
 * of work, and an action that happened is always recorded: its commit is retried on conflicts.
 */
import { newMessage } from '../model/factories.ts';
import type { Campaign, Enrollment, Lead, Message, Sender, Step } from '../model/index.ts';
import { STEP_LABELS, nextOnPath } from '../sequence.ts';
import type { Tx } from '../tx.ts';
import type { ChannelAction, ChannelFailure, ChannelSendResult } from './channel.ts';
import { relay } from './company-relay.ts';
import { markEmailBounced } from './inbound.ts';
import { consume, usageId, usageOrEmpty } from './limits.ts';
import type { Budget } from './limits.ts';
import { CONTACT_KINDS, KIND_WORDS, STOP_WORDS, actionSubject, actionText, and, clip, eq, errorText, later } from './runner-core.ts';
import type { RunnerCore, TickReport, TickState } from './runner-core.ts';
import { advanceStage, eventActivity } from './timeline.ts';
import type { EventMeta } from './timeline.ts';
import { firstOfBranch } from './walk.ts';

export type WaitReason = NonNullable<Enrollment['waitReason']>;

/** A campaign step's network action, as its records name it (the intent, then the outcome). */
export type StepAction = {
  campaign: Campaign;
  enrollmentId: string;
  leadId: string;
  step: Step;
  sender: Sender;
  kind: Message['kind'];
  action: ChannelAction;
  /** The step message's id, which is also the action's idempotency key. */
  ref: string;
};

/** What a sent action answered, what it counts against, and when it went out. */
export type SentOutcome = { result: ChannelSendResult; budgets: readonly Budget[]; day: string; variantId: string | null; sentAt: string };

/** Counts a deferral in the tick's report under its reason. */
export function countDeferred(report: TickReport, reason: WaitReason): void {
  if (reason === 'outside_window') report.deferred.outsideWindow++;
  else if (reason === 'daily_limit') report.deferred.dailyLimit++;
  else if (reason === 'weekly_limit') report.deferred.weeklyLimit++;
  else report.deferred.senderLimited++;
}

/** Parks an enrollment until `at`, saying why (nothing is written when it already waits so). */
export async function defer(core: RunnerCore, st: TickState, enrollmentId: string, at: Date, reason: WaitReason): Promise<void> {
  const iso = at.toISOString();
  try {
    await core.commitWithRetry(async (tx) => {
      const e = await tx.get('enrollments', enrollmentId);
      if (!e || e.status !== 'IN_PROGRESS' || (e.nextActionAt === iso && e.waitReason === reason)) return;
      await tx.put('enrollments', { ...e, nextActionAt: iso, waitReason: reason, updatedAt: st.nowIso });
    });
  } catch (err) {
    st.report.errors.push({ message: `Could not defer: ${errorText(err)}`, enrollmentId });
    return;
  }
  countDeferred(st.report, reason);
}

/** The step after `step` for this outcome: a condition's yes or no branch, else the next on its path. */
export function stepAfter(c: Campaign, step: Step, outcome: string): Step | null {
  return step.type === 'CONDITION' ? firstOfBranch(c.steps, step.id, outcome === 'yes' ? 'yes' : 'no') : nextOnPath(c.steps, step.id);
}

export type AdvanceOptions = {
  /** When the next step is due (default now); given at the end of the path, the sequence waits for it. */
  nextAt?: Date | null;
  /** Other enrollment fields written with the progress (the sender taking the lead, the variant). */
  extra?: Partial<Enrollment>;
  /** When the step was done (default now; a send recorded late keeps its own time). */
  doneAt?: string;
};

/** Marks a step done and moves to the next one (or the chosen branch); completes the sequence at
 * the end of its path (after a final wait, once the wait is over). */
export async function advance(
  core: RunnerCore, st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, outcome: string, sender: Sender | null, opts: AdvanceOptions = {},
): Promise<void> {
  const nextAt = opts.nextAt ?? null;
  const next = stepAfter(c, step, outcome);
  const progressed: Enrollment = {
    ...e, ...opts.extra,
    doneSteps: [...e.doneSteps, { stepId: step.id, at: opts.doneAt ?? st.nowIso, outcome }],
    currentStepId: next?.id ?? null, attempts: 0, waitReason: null, updatedAt: st.nowIso,
  };
  if (next || nextAt) {
    await tx.put('enrollments', { ...progressed, nextActionAt: (nextAt ?? st.now).toISOString() });
    return;
  }
  await complete(core, st, tx, c, progressed, lead, sender);
}

/** The sequence ran to its end without a reply; company relay may bring the next colleague. */
export async function complete(core: RunnerCore, st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, sender: Sender | null): Promise<void> {
  await tx.put('enrollments', { ...e, status: 'COMPLETED', completedAt: st.nowIso, currentStepId: null, nextActionAt: null, waitReason: null, updatedAt: st.nowIso });
  await tx.put('activities', eventActivity(core.ids, lead, core.userOf(sender), st.nowIso, 'sequence_completed', `Finished the sequence of "${c.name}" without a reply.`, {
    campaignId: c.id, sdrProfileId: e.sdrProfileId,
  }));
  st.report.completed++;
  await relay(core, st, tx, c, e, lead);
}

/** Stops the sequence with the reason (on the step's record too when a step stopped it). */
export async function stop(core: RunnerCore, st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead | null, reason: string, sender: Sender | null, step?: Step): Promise<void> {
  const done = step ? [...e.doneSteps, { stepId: step.id, at: st.nowIso, outcome: `stopped: ${reason}` }] : e.doneSteps;
  await tx.put('enrollments', { ...e, status: 'STOPPED', stoppedReason: reason, doneSteps: done, nextActionAt: null, waitReason: null, updatedAt: st.nowIso });
  if (lead) {
    await tx.put('activities', eventActivity(core.ids, lead, core.userOf(sender), st.nowIso, 'sequence_stopped', `The sequence of "${c.name}" stopped: ${STOP_WORDS[reason] ?? reason}.`, {
      campaignId: c.id, sdrProfileId: e.sdrProfileId ?? sender?.id ?? null,
    }));
  }
  st.report.stopped++;
}

/** The intent committed before a network action: the step's message in status `sending`. After
 * a crash before its outcome, settle.ts finds it and settles it without sending blindly again. */
export async function recordIntent(core: RunnerCore, st: TickState, a: StepAction): Promise<void> {
  await core.commitWithRetry(async (tx) => {
    await tx.put('messages', newMessage({ id: a.ref, workspaceId: core.store.workspaceId, now: st.nowIso }, {
      leadId: a.leadId, sdrProfileId: a.sender.id, chatId: `pending-${a.ref}`, direction: 'out', kind: a.kind, text: actionText(a.action), subject: actionSubject(a.action),
      campaignId: a.campaign.id, stepId: a.step.id, status: 'sending',
    }));
  });
}

/** The channel said the action did not happen (a limit, an outage): the intent goes, and the
 * retry reuses its id (the idempotency key). */
export async function dropIntent(core: RunnerCore, ref: string): Promise<void> {
  await core.commitWithRetry(async (tx) => {
    const m = await tx.get('messages', ref);
    if (m && m.status === 'sending') await tx.remove('messages', ref);
  });
}

/** The step's message as its outcome says, in place of its intent (keeping when that was created). */
async function replaceIntent(core: RunnerCore, st: TickState, tx: Tx, ref: string, fields: Parameters<typeof newMessage>[1]): Promise<void> {
  const intent = await tx.get('messages', ref);
  await tx.put('messages', newMessage({ id: ref, workspaceId: core.store.workspaceId, now: intent?.createdAt ?? st.nowIso }, fields));
}

/** Records an action that happened; retried on conflicts because the action cannot be undone. */
export async function recordSent(core: RunnerCore, st: TickState, a: StepAction, out: SentOutcome): Promise<void> {
  const { campaign: c, step, sender, kind, ref } = a;
  const completedBefore = st.report.completed;
  const relayedBefore = st.report.relayed;
  await core.commitWithRetry(async (tx) => {
    st.report.completed = completedBefore;
    st.report.relayed = relayedBefore;
    const lead = await tx.get('leads', a.leadId);
    const e = await tx.get('enrollments', a.enrollmentId);
    const text = actionText(a.action);
    await replaceIntent(core, st, tx, ref, {
      leadId: a.leadId, sdrProfileId: sender.id, chatId: out.result.chatId, direction: 'out', kind, text, subject: actionSubject(a.action), campaignId: c.id, stepId: step.id,
      status: 'sent', sentAt: out.sentAt, externalId: out.result.externalId,
    });
    const u = usageOrEmpty(await tx.get('usage', usageId(sender.id, out.day)), sender, out.day, st.nowIso);
    await tx.put('usage', consume(u, out.budgets, st.nowIso));
    if (!lead) return;
    let nextLead: Lead = { ...lead, lastActivityAt: later(lead.lastActivityAt, st.nowIso), updatedAt: st.nowIso };
    const meta: EventMeta = { campaignId: c.id, sdrProfileId: sender.id, messageId: ref };
    await tx.put('activities', eventActivity(core.ids, lead, sender.ownerMemberId, st.nowIso, 'message_sent', `${KIND_WORDS[kind]} sent by ${sender.name} in "${c.name}"${text ? `: "${clip(text)}"` : ''}.`, meta));
    if (CONTACT_KINDS.includes(kind)) {
      const moved = advanceStage(core.ids, nextLead, 'CONTACTED', st.stages, sender.ownerMemberId, st.nowIso, meta);
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
    if (out.variantId) extra.variants = { ...e.variants, [step.id]: out.variantId };
    if (e.status !== 'IN_PROGRESS') {
      await tx.put('enrollments', { ...e, ...extra, doneSteps: [...e.doneSteps, { stepId: step.id, at: out.sentAt, outcome: 'sent' }], updatedAt: st.nowIso });
      return;
    }
    await advance(core, st, tx, c, e, nextLead, step, 'sent', sender, { extra, doneAt: out.sentAt });
  });
  if (out.variantId) {
    const counts = st.rr.get(`${c.id}|${step.id}`);
    if (counts) counts.set(out.variantId, (counts.get(out.variantId) ?? 0) + 1);
  }
  st.report.actions++;
  st.report.byKind[kind] = (st.report.byKind[kind] ?? 0) + 1;
}

/** The network refused this action for this lead: the attempt is recorded as failed and the
 * sequence stops with the reason, rather than following up on a message that never arrived. */
export async function recordRejected(core: RunnerCore, st: TickState, a: StepAction, lead: Lead, f: ChannelFailure): Promise<void> {
  const { campaign: c, step, sender, kind, ref } = a;
  await core.commitWithRetry(async (tx) => {
    await replaceIntent(core, st, tx, ref, {
      leadId: lead.id, sdrProfileId: sender.id, chatId: `failed-${ref}`, direction: 'out', kind, text: actionText(a.action), campaignId: c.id, stepId: step.id, status: 'failed', error: f.message,
    });
    const e = await tx.get('enrollments', a.enrollmentId);
    if (e && e.status === 'IN_PROGRESS') await stop(core, st, tx, c, e, lead, `${STEP_LABELS[step.type]} failed: ${f.message}`, sender, step);
    // The mail server refused the address itself: the lead's email bounced (its other email
    // sequences stop too, and email steps elsewhere are skipped).
    const current = await tx.get('leads', lead.id);
    if (f.bounce && kind === 'email' && current && !current.emailBouncedAt) {
      const { docs: others } = await tx.query('enrollments', { where: eq('leadId', lead.id) });
      await markEmailBounced(core, st, tx, sender, current, others.filter((x) => x.id !== a.enrollmentId), {
        at: st.nowIso, status: f.bounce.status, reason: f.bounce.reason, recipient: f.bounce.recipient, campaignId: c.id, messageId: ref,
      });
    }
  });
  st.report.failed++;
}

/** An interrupted send the channel cannot settle: "delivery unknown" on the message, the lead's
 * timeline and the enrollment, which waits for a person (campaigns.leads.resendUnknown). */
export async function recordUnknown(core: RunnerCore, st: TickState, m: Message, sender: Sender | null): Promise<void> {
  await core.commitWithRetry(async (tx) => {
    const cur = await tx.get('messages', m.id);
    if (!cur || cur.status !== 'sending') return;
    const why = 'Delivery unknown: the app stopped between sending and recording, and the channel cannot tell whether it went out. Check the mailbox, then send again or leave it.';
    await tx.put('messages', { ...cur, status: 'unknown', error: why, updatedAt: st.nowIso });
    const lead = await tx.get('leads', cur.leadId);
    if (cur.campaignId !== null && cur.stepId !== null) {
      const { docs } = await tx.query('enrollments', { where: and(eq('leadId', cur.leadId), eq('campaignId', cur.campaignId), eq('status', 'IN_PROGRESS')) });
      for (const e of docs) {
        if (e.currentStepId !== cur.stepId || e.doneSteps.some((d) => d.stepId === cur.stepId)) continue;
        await tx.put('enrollments', { ...e, nextActionAt: null, waitReason: 'delivery_unknown', updatedAt: st.nowIso });
      }
    }
    if (lead) {
      await tx.put('activities', eventActivity(core.ids, lead, core.userOf(sender), st.nowIso, 'delivery_unknown', `Delivery unknown: ${KIND_WORDS[cur.kind].toLowerCase()}${sender ? ` by ${sender.name}` : ''} may or may not have gone out${cur.text ? ` ("${clip(cur.text)}")` : ''}. Send it again from the timeline if it did not arrive.`, {
        campaignId: cur.campaignId, sdrProfileId: cur.sdrProfileId, messageId: cur.id,
      }));
    }
  });
  st.report.deliveryUnknown++;
}
