/**
 * Recording outcomes: an enrollment deferred (with why), a step done and the next one planned, a
 * sequence completed or stopped, an action sent or refused (message, usage, timeline, stage), and
 * the company relay that enrolls the next colleague when a person finished without answering.
 * An action that happened is always recorded: its commit is retried on conflicts.
 */
import { newEnrollment, newMessage } from '../model/factories.ts';
import type { Campaign, Enrollment, Lead, Message, Sender, Step } from '../model/index.ts';
import { STEP_LABELS, firstStep, nextOnPath } from '../sequence.ts';
import type { Tx } from '../tx.ts';
import type { ChannelAction, ChannelFailure, ChannelSendResult } from './channel.ts';
import { consume, usageId, usageOrEmpty } from './limits.ts';
import type { Budget } from './limits.ts';
import { CONTACT_KINDS, KIND_WORDS, STOP_WORDS, actionSubject, actionText, and, clip, eq, errorText, later, norm } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';
import { advanceStage, categoryOf, eventActivity } from './timeline.ts';
import type { EventMeta } from './timeline.ts';
import { firstOfBranch } from './walk.ts';
import { markEmailBounced } from './inbound.ts';

export type WaitReason = NonNullable<Enrollment['waitReason']>;

export function createRecorder(core: RunnerCore) {
  const { store, ids, userOf, commitWithRetry } = core;

  async function defer(st: TickState, enrollmentId: string, at: Date, reason: WaitReason): Promise<void> {
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
    else if (reason === 'weekly_limit') st.report.deferred.weeklyLimit++;
    else st.report.deferred.senderLimited++;
  }

  /** Marks a step done and moves to the next one (or the chosen branch); completes the sequence at
   * the end of its path (after a final wait, once the wait is over). */
  async function advance(
    st: TickState, tx: Tx, c: Campaign, e: Enrollment, lead: Lead, step: Step, outcome: string, sender: Sender | null, nextAt: Date | null = null,
    extra: Partial<Enrollment> = {}, doneAt: string = st.nowIso,
  ): Promise<void> {
    const next = step.type === 'CONDITION' ? firstOfBranch(c.steps, step.id, outcome === 'yes' ? 'yes' : 'no') : nextOnPath(c.steps, step.id);
    const progressed: Enrollment = {
      ...e, ...extra,
      doneSteps: [...e.doneSteps, { stepId: step.id, at: doneAt, outcome }],
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
    ref: string, result: ChannelSendResult, budgets: readonly Budget[], day: string, variantId: string | null, sentAt: string = st.nowIso,
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
      // Replaces the intent committed before the send (keeping when it was created).
      const intent = await tx.get('messages', ref);
      await tx.put('messages', newMessage({ id: ref, workspaceId: store.workspaceId, now: intent?.createdAt ?? st.nowIso }, {
        leadId, sdrProfileId: sender.id, chatId: result.chatId, direction: 'out', kind, text, subject, campaignId: c.id, stepId: step.id,
        status: 'sent', sentAt, externalId: result.externalId,
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
        await tx.put('enrollments', { ...e, ...extra, doneSteps: [...e.doneSteps, { stepId: step.id, at: sentAt, outcome: 'sent' }], updatedAt: st.nowIso });
        return;
      }
      await advance(st, tx, c, e, nextLead, step, 'sent', sender, null, extra, sentAt);
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
      const intent = await tx.get('messages', ref);
      await tx.put('messages', newMessage({ id: ref, workspaceId: store.workspaceId, now: intent?.createdAt ?? st.nowIso }, {
        leadId: lead.id, sdrProfileId: sender.id, chatId: `failed-${ref}`, direction: 'out', kind, text, campaignId: c.id, stepId: step.id, status: 'failed', error: f.message,
      }));
      const e = await tx.get('enrollments', e0.id);
      if (e && e.status === 'IN_PROGRESS') await stop(st, tx, c, e, lead, `${STEP_LABELS[step.type]} failed: ${f.message}`, sender, step);
      // The mail server refused the address itself: the lead's email bounced (its other email
      // sequences stop too, and email steps elsewhere are skipped).
      const current = await tx.get('leads', lead.id);
      if (f.bounce && kind === 'email' && current && !current.emailBouncedAt) {
        const { docs: others } = await tx.query('enrollments', { where: eq('leadId', lead.id) });
        await markEmailBounced(core, st, tx, sender, current, others.filter((x) => x.id !== e0.id), {
          at: st.nowIso, status: f.bounce.status, reason: f.bounce.reason, recipient: f.bounce.recipient, campaignId: c.id, messageId: ref,
        });
      }
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

  /** The intent committed before a network action: the step's message in status `sending`. After
   * a crash before its outcome, settle.ts finds it and settles it without sending blindly again. */
  async function recordIntent(st: TickState, c: Campaign, leadId: string, step: Step, sender: Sender, kind: Message['kind'], action: ChannelAction, ref: string): Promise<void> {
    await commitWithRetry(async (tx) => {
      await tx.put('messages', newMessage({ id: ref, workspaceId: store.workspaceId, now: st.nowIso }, {
        leadId, sdrProfileId: sender.id, chatId: `pending-${ref}`, direction: 'out', kind, text: actionText(action), subject: actionSubject(action),
        campaignId: c.id, stepId: step.id, status: 'sending',
      }));
    });
  }

  /** The channel said the action did not happen (a limit, an outage): the intent goes, and the
   * retry reuses its id (the idempotency key). */
  async function dropIntent(st: TickState, ref: string): Promise<void> {
    await commitWithRetry(async (tx) => {
      const m = await tx.get('messages', ref);
      if (m && m.status === 'sending') await tx.remove('messages', ref);
    });
  }

  /** An interrupted send the channel cannot settle: "delivery unknown" on the message, the lead's
   * timeline and the enrollment, which waits for a person (campaigns.leads.resendUnknown). */
  async function recordUnknown(st: TickState, m: Message, sender: Sender | null): Promise<void> {
    await commitWithRetry(async (tx) => {
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
        await tx.put('activities', eventActivity(ids, lead, userOf(sender), st.nowIso, 'delivery_unknown', `Delivery unknown: ${KIND_WORDS[cur.kind].toLowerCase()}${sender ? ` by ${sender.name}` : ''} may or may not have gone out${cur.text ? ` ("${clip(cur.text)}")` : ''}. Send it again from the timeline if it did not arrive.`, {
          campaignId: cur.campaignId, sdrProfileId: cur.sdrProfileId, messageId: cur.id,
        }));
      }
    });
    st.report.deliveryUnknown++;
  }

  return { defer, advance, complete, stop, recordSent, recordRejected, relay, recordIntent, dropIntent, recordUnknown };
}

export type Recorder = ReturnType<typeof createRecorder>;
