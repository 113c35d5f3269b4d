/** campaigns.leads.sendMessage: a direct message to a lead, queued for the runner through the sender
 * already on the conversation. */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import { DomainError } from '../errors.ts';
import { newMessage } from '../model/factories.ts';
import type { Message } from '../model/index.ts';
import { liveLead, stamp } from './campaigns.leads.ts';
import { mutation, opsByName } from './define.ts';
import { uuid } from './params.ts';

const sendMessage = mutation({
  name: 'campaigns.leads.sendMessage',
  summary: 'Queues a direct message to a lead through the sender already on the conversation. Irreversible once delivered.',
  input: z.object({ leadId: uuid, text: z.string().trim().min(1, 'must not be empty').max(8000), chatId: z.string().trim().min(1).max(100).optional() }),
  output: z.object({ messageId: z.string(), chatId: z.string(), sdrProfileId: z.string(), status: z.enum(['sent', 'queued']) }),
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    if (lead.doNotContact || lead.blocklisted) {
      throw new DomainError('RULE_VIOLATION', `${lead.fullName || 'This lead'} is ${lead.doNotContact ? 'marked Do Not Contact' : 'blocklisted'}; no message is sent.`, {
        leadId: lead.id,
      });
    }
    const { docs: history } = await ctx.db.query('messages', {
      where: { op: 'eq', field: 'leadId', value: lead.id },
      orderBy: [{ field: 'createdAt', dir: 'desc' }],
    });
    let sdrProfileId: string | null = null;
    let chatId: string | null = null;
    let subject = '';
    if (input.chatId !== undefined) {
      const inChat = history.find((m) => m.chatId === input.chatId);
      if (!inChat) throw new DomainError('NOT_FOUND', `Conversation ${input.chatId} was not found for this lead.`, { what: 'chat', id: input.chatId });
      sdrProfileId = inChat.sdrProfileId;
      chatId = inChat.chatId;
      subject = inChat.subject;
    } else if (history[0]) {
      sdrProfileId = history[0].sdrProfileId;
      chatId = history[0].chatId;
      subject = history[0].subject;
    } else {
      const { docs: enrollments } = await ctx.db.query('enrollments', {
        where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: lead.id }, { op: 'neq', field: 'sdrProfileId', value: null }] },
        orderBy: [{ field: 'createdAt', dir: 'desc' }],
      });
      const e = enrollments.find((x) => x.status === 'IN_PROGRESS') ?? enrollments[0];
      if (e) sdrProfileId = e.sdrProfileId;
    }
    if (sdrProfileId === null) {
      throw new DomainError('INVALID_INPUT', 'No sender is on a conversation with this lead yet: enroll the lead in a campaign (or assign a sender) before messaging it directly.', {
        leadId: lead.id,
      });
    }
    const sender = await ctx.db.get('senders', sdrProfileId);
    if (!sender) {
      throw new DomainError('INVALID_INPUT', 'The sender of this conversation no longer exists, so the message cannot be sent; write from another sender.', { sdrProfileId });
    }
    const kind: Message['kind'] = sender.channel === 'email' ? 'email' : 'message';
    // A new thread gets its own id; the runner treats a chat with no delivered message as a new thread.
    const threadId = chatId ?? ctx.ids.uuid();
    const message = newMessage(stamp(ctx), {
      leadId: lead.id, sdrProfileId: sender.id, chatId: threadId, direction: 'out', kind, text: input.text,
      subject: kind === 'email' && subject && !/^re:/i.test(subject) ? `Re: ${subject}` : subject, status: 'queued',
    });
    await ctx.db.put('messages', message);
    const now = nowIso(ctx);
    await ctx.db.put('leads', { ...lead, followUpAt: null, lastActivityAt: now, updatedAt: now });
    return { messageId: message.id, chatId: threadId, sdrProfileId: sender.id, status: 'queued' as const };
  },
});

export const ops = opsByName(sendMessage);
