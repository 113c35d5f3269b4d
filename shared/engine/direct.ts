/** Direct messages (sent from the inbox, not by a campaign): queued messages of the senders this
 * runner holds are delivered within the sender's daily limits and spacing, then recorded. */
import type { Message, Sender } from '../model/index.ts';
import type { Channel, ChannelAction, ChannelSendResult } from './channel.ts';
import type { Leases } from './leases.ts';
import { budgetsFor, consume, hasRoom, usageId, usageOrEmpty } from './limits.ts';
import type { Budget } from './limits.ts';
import { KIND_WORDS, and, asFailure, clip, dayOf, emailThread, eq, errorText, later, reSubject } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';
import { eventActivity } from './timeline.ts';

export function createDirect(core: RunnerCore, leases: Leases) {
  const { store, ids, failures, channelOf, userOf, useSlot, commitWithRetry } = core;
  const { senderFailure } = leases;

  async function deliverDirect(st: TickState): Promise<void> {
    if (st.held.size === 0) return;
    const { docs } = await store.query('messages', {
      where: and(eq('status', 'queued'), eq('direction', 'out'), eq('campaignId', null), { op: 'in', field: 'sdrProfileId', values: [...st.held] }),
      orderBy: [{ field: 'createdAt', dir: 'asc' }],
    });
    const stalled = new Set<string>();
    for (const m of docs) {
      const sender = st.senders.get(m.sdrProfileId);
      if (!sender || sender.status === 'disconnected' || (sender.status === 'limited' && sender.backoffUntil && Date.parse(sender.backoffUntil) > st.nowMs)) continue;
      const channel = channelOf(sender);
      if (!channel) continue;
      try {
        await deliverOne(st, m, sender, channel, stalled);
      } catch (e) {
        st.report.errors.push({ message: `Direct message not delivered: ${errorText(e)}`, messageId: m.id, sdrProfileId: sender.id });
      }
    }
  }

  async function deliverOne(st: TickState, m: Message, sender: Sender, channel: Channel, stalled: Set<string>): Promise<void> {
    const lead = await store.get('leads', m.leadId);
    if (!lead || lead.doNotContact || lead.blocklisted) {
      const why = !lead ? 'the lead was deleted' : lead.doNotContact ? 'the lead is marked Do Not Contact' : 'the lead is blocklisted';
      await commitWithRetry(async (tx) => {
        const cur = await tx.get('messages', m.id);
        if (cur && cur.status === 'queued') await tx.put('messages', { ...cur, status: 'failed', error: `Not sent: ${why}.`, updatedAt: st.nowIso });
      });
      st.report.failed++;
      return;
    }
    if (stalled.has(sender.id)) return;
    const asEmail = m.kind === 'email' || !sender.capabilities.includes('message');
    const kind: Message['kind'] = asEmail ? 'email' : 'message';
    const budgets = budgetsFor(sender, kind, false, st.now);
    const day = dayOf(st, sender);
    const usage = usageOrEmpty(await store.get('usage', usageId(sender.id, day)), sender, day, st.nowIso);
    if (!hasRoom(usage, budgets)) {
      // Stays queued: delivered when the sender's day rolls over.
      stalled.add(sender.id);
      st.report.waiting++;
      return;
    }
    const { docs: chat } = await store.query('messages', { where: and(eq('chatId', m.chatId), eq('leadId', m.leadId), { op: 'in', field: 'status', values: ['sent', 'received'] }), orderBy: [{ field: 'createdAt', dir: 'asc' }] });
    let action: ChannelAction;
    if (asEmail) {
      const sent = chat.filter((x) => x.kind === 'email' && x.externalId);
      const thread = emailThread(sent);
      const root = sent[0];
      const subject = m.subject || (root ? reSubject(root.subject) : '(no subject)');
      action = { kind: 'email', subject, text: m.text, thread };
    } else {
      action = { kind: 'message', text: m.text, chatId: chat.length > 0 ? m.chatId : null, voiceNote: null };
    }
    // The intent: the message is `sending` (with the subject and kind it goes as) before the action.
    let intent = false;
    await commitWithRetry(async (tx) => {
      const cur = await tx.get('messages', m.id);
      intent = cur !== null && cur.status === 'queued';
      if (cur && intent) await tx.put('messages', { ...cur, kind, status: 'sending', subject: action.kind === 'email' ? action.subject : cur.subject, updatedAt: st.nowIso });
    });
    if (!intent) return;
    let result: ChannelSendResult;
    try {
      result = await channel.send(sender, lead, action, m.id);
    } catch (e) {
      const f = asFailure(e);
      const rejected = f.kind === 'rejected' || f.kind === 'unsupported';
      // Refused for this lead: failed. The account is limited or the channel down: queued again.
      await commitWithRetry(async (tx) => {
        const cur = await tx.get('messages', m.id);
        if (cur && cur.status === 'sending') await tx.put('messages', rejected ? { ...cur, status: 'failed', error: f.message, updatedAt: st.nowIso } : { ...cur, status: 'queued', updatedAt: st.nowIso });
      });
      if (rejected) {
        st.report.failed++;
        return;
      }
      stalled.add(sender.id);
      await senderFailure(st, sender, f);
      return;
    }
    const sentAt = core.clock.now().toISOString();
    failures.delete(sender.id);
    useSlot(st, sender);
    await recordDirectSent(st, m.id, sender, kind, result, budgets, day, sentAt);
  }

  /** Records a direct message that went out (also one found sent after a restart). */
  async function recordDirectSent(st: TickState, messageId: string, sender: Sender, kind: Message['kind'], result: ChannelSendResult, budgets: readonly Budget[], day: string, sentAt: string): Promise<void> {
    await commitWithRetry(async (tx) => {
      const cur = await tx.get('messages', messageId);
      if (!cur) return;
      await tx.put('messages', { ...cur, kind, status: 'sent', sentAt, externalId: result.externalId, chatId: result.chatId, updatedAt: st.nowIso });
      const u = usageOrEmpty(await tx.get('usage', usageId(sender.id, day)), sender, day, st.nowIso);
      await tx.put('usage', consume(u, budgets, st.nowIso));
      const l = await tx.get('leads', cur.leadId);
      if (l) {
        await tx.put('leads', { ...l, lastActivityAt: later(l.lastActivityAt, sentAt), updatedAt: st.nowIso });
        await tx.put('activities', eventActivity(ids, l, userOf(sender), st.nowIso, 'message_sent', `${KIND_WORDS[kind]} sent by ${sender.name}: "${clip(cur.text)}".`, { sdrProfileId: sender.id, messageId }));
      }
    });
    st.report.actions++;
    st.report.directMessages++;
    st.report.byKind[kind] = (st.report.byKind[kind] ?? 0) + 1;
  }

  return { deliverDirect, recordDirectSent };
}

export type Direct = ReturnType<typeof createDirect>;
