/**
 * Settling interrupted sends. Before a network action the runner commits an intent (the message in
 * status `sending`); after it, the outcome. An intent still `sending` when a runner takes a sender
 * (its first tick after a start, or a lease taken over from a runner that crashed) was interrupted
 * between the action and its record. It is never sent blindly again:
 * - a channel whose sends are idempotent (the HTTP connector dedupes by our message id) is asked
 *   again with the same ref, and answers as the first time without acting twice;
 * - a channel that can look the send up (`findSent`, e.g. the Sent folder by Message-ID) says
 *   whether it happened: found is recorded as sent, not found is sent normally (the same ref);
 * - otherwise the message is marked "delivery unknown" for a person to settle
 *   (campaigns.leads.resendUnknown sends it again).
 */
import type { Message, Sender } from '../model/index.ts';
import type { Channel, ChannelSendResult, FindSentResult } from './channel.ts';
import type { Direct } from './direct.ts';
import { budgetsFor, senderDay } from './limits.ts';
import { recordSent, recordUnknown } from './record.ts';
import { actionOfMessage, and, asFailure, eq, errorText } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';

export function createSettler(core: RunnerCore, direct: Direct) {
  const { store, commitWithRetry, channelOf } = core;
  /** Senders whose intents were looked at since this runner holds them. */
  const checked = new Set<string>();

  /** Settles the intents of the senders this runner newly holds (the read happens once per sender
   * per holding, so a steady tick pays nothing). */
  async function settleIntents(st: TickState): Promise<void> {
    for (const id of checked) if (!st.held.has(id)) checked.delete(id);
    const fresh = [...st.held].filter((id) => !checked.has(id));
    if (fresh.length === 0) return;
    const { docs } = await store.query('messages', {
      where: and(eq('status', 'sending'), eq('direction', 'out'), { op: 'in', field: 'sdrProfileId', values: fresh }),
      orderBy: [{ field: 'createdAt', dir: 'asc' }],
    });
    const unsettled = new Set<string>();
    for (const m of docs) {
      const sender = st.senders.get(m.sdrProfileId);
      const channel = sender ? channelOf(sender) : null;
      if (!sender || !channel) continue;
      try {
        if (!(await settleOne(st, m, sender, channel))) unsettled.add(sender.id);
      } catch (e) {
        unsettled.add(sender.id);
        st.report.errors.push({ message: `Could not settle an interrupted send: ${errorText(e)}`, messageId: m.id, sdrProfileId: sender.id });
      }
    }
    // A sender whose intents could not be settled now (channel down) is looked at again next tick.
    for (const id of fresh) if (!unsettled.has(id)) checked.add(id);
  }

  /** True when the intent is settled (recorded, released for a normal send, or marked unknown). */
  async function settleOne(st: TickState, m: Message, sender: Sender, channel: Channel): Promise<boolean> {
    if (channel.idempotentSends) {
      const lead = await store.get('leads', m.leadId);
      if (!lead) {
        await recordUnknown(core, st, m, sender);
        st.report.settled.unknown++;
        return true;
      }
      let result: ChannelSendResult;
      try {
        result = await channel.send(sender, lead, actionOfMessage(m), m.id);
      } catch (e) {
        const f = asFailure(e);
        if (f.kind === 'rejected' || f.kind === 'unsupported') {
          await markFailed(st, m, f.message);
          return true;
        }
        return false;
      }
      await recordFound(st, m, sender, result);
      st.report.settled.resent++;
      return true;
    }
    let found: FindSentResult = { status: 'unknown' };
    if (channel.findSent) {
      try {
        found = await channel.findSent(sender, m.id);
      } catch (e) {
        st.report.errors.push({ message: `Looking up an interrupted send failed: ${errorText(e)}`, messageId: m.id, sdrProfileId: sender.id });
        return false;
      }
    }
    if (found.status === 'sent') {
      await recordFound(st, m, sender, { status: 'sent', externalId: found.externalId, chatId: found.chatId });
      st.report.settled.sent++;
      return true;
    }
    if (found.status === 'not_found') {
      // It did not go out: a campaign step sends again on its normal path with the same ref; a
      // direct message is queued again.
      await commitWithRetry(async (tx) => {
        const cur = await tx.get('messages', m.id);
        if (!cur || cur.status !== 'sending') return;
        if (cur.campaignId === null) await tx.put('messages', { ...cur, status: 'queued', updatedAt: st.nowIso });
        else await tx.remove('messages', cur.id);
      });
      return true;
    }
    await recordUnknown(core, st, m, sender);
    st.report.settled.unknown++;
    return true;
  }

  /** Records an interrupted send that did happen, at the time its intent was committed. */
  async function recordFound(st: TickState, m: Message, sender: Sender, result: ChannelSendResult): Promise<void> {
    const sentAt = m.createdAt;
    const day = senderDay(sender, new Date(sentAt));
    const action = actionOfMessage(m);
    const withNote = m.kind === 'connection_request' && m.text.trim() !== '';
    const budgets = budgetsFor(sender, m.kind, withNote);
    if (m.campaignId === null || m.stepId === null) {
      await direct.recordDirectSent(st, m.id, sender, m.kind, result, budgets, day, sentAt);
      return;
    }
    const c = await store.get('campaigns', m.campaignId);
    const step = c?.steps.find((s) => s.id === m.stepId);
    const { docs } = await store.query('enrollments', { where: and(eq('leadId', m.leadId), eq('campaignId', m.campaignId)), orderBy: [{ field: 'createdAt', dir: 'desc' }], limit: 1 });
    const e = docs[0];
    if (!c || !step || !e) {
      // The campaign or step is gone: the message is still recorded as what it was.
      await commitWithRetry(async (tx) => {
        const cur = await tx.get('messages', m.id);
        if (cur && cur.status === 'sending') await tx.put('messages', { ...cur, status: 'sent', sentAt, externalId: result.externalId, chatId: result.chatId, updatedAt: st.nowIso });
      });
      return;
    }
    await recordSent(core, st, { campaign: c, enrollmentId: e.id, leadId: m.leadId, step, sender, kind: m.kind, action, ref: m.id }, { result, budgets, day, variantId: null, sentAt });
  }

  async function markFailed(st: TickState, m: Message, why: string): Promise<void> {
    await commitWithRetry(async (tx) => {
      const cur = await tx.get('messages', m.id);
      if (cur && cur.status === 'sending') await tx.put('messages', { ...cur, status: 'failed', error: why, updatedAt: st.nowIso });
    });
    st.report.failed++;
  }

  return { settleIntents };
}
