/** The reply inbox operations: received messages newest first with cursor paging and filters,
 * done/undone stored on the message, counts, and other workspaces' ids not found. */
import { describe, expect, it } from 'vitest';
import { newMessage } from '../../shared/model/factories.ts';
import type { Message } from '../../shared/model/index.ts';
import { makeHarness } from '../support/harness.ts';

async function setup() {
  const h = await makeHarness();
  const lead = await h.addLead({ fullName: 'Ada Lovelace', firstName: 'Ada', company: 'Analytical' });
  const other = await h.addLead({ fullName: 'Grace Hopper', firstName: 'Grace', company: 'Navy' });
  const mia = await h.addSender({ name: 'Mia Schneider' });
  const kenji = await h.addSender({ name: 'Kenji Watanabe' });
  const campaign = await h.addCampaign({ name: 'Event follow-up', senderIds: [mia.id] });
  const msgs: Message[] = [];
  // Seven replies a minute apart (Mia's in the campaign), and one message we sent.
  for (let i = 0; i < 7; i++) {
    const sender = i % 2 === 0 ? mia : kenji;
    const m = newMessage(h.stamp(), {
      leadId: i < 4 ? lead.id : other.id, sdrProfileId: sender.id, chatId: `chat-${i}`, direction: 'in', kind: 'message', text: `Reply ${i}`,
      status: 'received', sentAt: new Date(Date.UTC(2026, 10, 16, 9, i)).toISOString(), campaignId: sender.id === mia.id ? campaign.id : null,
    });
    msgs.push(m);
  }
  const out = newMessage(h.stamp(), { leadId: lead.id, sdrProfileId: mia.id, chatId: 'chat-0', direction: 'out', kind: 'message', text: 'Hello', status: 'sent', sentAt: '2026-11-16T08:00:00.000Z' });
  await h.seed([...msgs, out].map((m) => ({ collection: 'messages' as const, id: m.id, before: null, after: m })));
  return { h, lead, mia, kenji, campaign, msgs, out };
}

describe('inbox.list', () => {
  it('lists every received message newest first, a page at a time, with lead, sender and campaign', async () => {
    const { h, msgs, mia, campaign } = await setup();
    const first = await h.call('inbox.list', { limit: 3 });
    expect(first.items.map((i) => i.text)).toEqual(['Reply 6', 'Reply 5', 'Reply 4']);
    expect(first.nextCursor).not.toBeNull();
    const second = await h.call('inbox.list', { limit: 3, cursor: first.nextCursor });
    const third = await h.call('inbox.list', { limit: 3, cursor: second.nextCursor });
    expect([...second.items, ...third.items].map((i) => i.text)).toEqual(['Reply 3', 'Reply 2', 'Reply 1', 'Reply 0']);
    expect(third.nextCursor).toBeNull();
    const top = first.items[0];
    expect(top).toMatchObject({ messageId: msgs[6]?.id, leadName: 'Grace Hopper', company: 'Navy', senderName: 'Mia Schneider', sdrProfileId: mia.id, campaignId: campaign.id, campaignName: 'Event follow-up', doneAt: null });
  });

  it('filters by sender and by campaign', async () => {
    const { h, kenji, campaign } = await setup();
    const byKenji = await h.call('inbox.list', { sdrProfileId: kenji.id });
    expect(byKenji.items.map((i) => i.text)).toEqual(['Reply 5', 'Reply 3', 'Reply 1']);
    const byCampaign = await h.call('inbox.list', { campaignId: campaign.id });
    expect(byCampaign.items.map((i) => i.text)).toEqual(['Reply 6', 'Reply 4', 'Reply 2', 'Reply 0']);
  });

  it("another workspace's sender or campaign is not found", async () => {
    const { h, kenji, campaign } = await setup();
    await h.expectRefused(h.call('inbox.list', { sdrProfileId: kenji.id }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('inbox.list', { campaignId: campaign.id }, h.foreignOwner), 'NOT_FOUND');
    expect((await h.call('inbox.list', {}, h.foreignOwner)).items).toEqual([]);
  });
});

describe('inbox.setDone and inbox.counts', () => {
  it('marks replies done and waiting again; done ones leave the default list and the counts', async () => {
    const { h, msgs, mia, kenji, campaign } = await setup();
    expect(await h.call('inbox.counts', {})).toEqual({
      open: 7,
      bySender: expect.arrayContaining([{ sdrProfileId: mia.id, open: 4 }, { sdrProfileId: kenji.id, open: 3 }]),
      byCampaign: [{ campaignId: campaign.id, open: 4 }],
      byLabel: { interested: 0, not_interested: 0, out_of_office: 0, wrong_person: 0, unsubscribe: 0, other: 0, unlabelled: 7 },
    });
    const ids = [msgs[6]?.id ?? '', msgs[5]?.id ?? ''];
    const preview = await h.call('inbox.setDone', { messageIds: ids, done: true, dryRun: true });
    expect(preview).toEqual({ dryRun: true, changed: 2, unchanged: 0 });
    expect((await h.call('inbox.counts', {})).open).toBe(7);

    expect(await h.call('inbox.setDone', { messageIds: ids, done: true })).toEqual({ dryRun: false, changed: 2, unchanged: 0 });
    expect((await h.store.get('messages', ids[0] ?? ''))?.doneAt).toBe(h.now());
    expect((await h.call('inbox.counts', {})).open).toBe(5);
    const waiting = await h.call('inbox.list', { limit: 2 });
    expect(waiting.items.map((i) => i.text)).toEqual(['Reply 4', 'Reply 3']);
    expect((await h.call('inbox.list', { done: true })).items.map((i) => i.text)).toEqual(['Reply 6', 'Reply 5']);
    expect((await h.call('inbox.list', { all: true })).items).toHaveLength(7);
    // Marking done again changes nothing.
    expect(await h.call('inbox.setDone', { messageIds: ids, done: true })).toEqual({ dryRun: false, changed: 0, unchanged: 2 });

    expect(await h.call('inbox.setDone', { messageIds: [ids[0] ?? ''], done: false })).toEqual({ dryRun: false, changed: 1, unchanged: 0 });
    expect((await h.store.get('messages', ids[0] ?? ''))?.doneAt).toBeNull();
    expect((await h.call('inbox.counts', {})).open).toBe(6);
    expect((await h.call('inbox.list', { limit: 1 })).items[0]?.text).toBe('Reply 6');
  });

  it('refuses an unknown or foreign id and a message we sent, changing nothing', async () => {
    const { h, msgs, out } = await setup();
    const before = await h.call('inbox.counts', {});
    const reply = msgs[0]?.id ?? '';
    await h.expectRefused(h.call('inbox.setDone', { messageIds: [reply], done: true }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('inbox.setDone', { messageIds: [reply, '00000000-0000-4000-8000-000000000000'], done: true }), 'NOT_FOUND');
    const refused = await h.expectRefused(h.call('inbox.setDone', { messageIds: [reply, out.id], done: true }), 'INVALID_INPUT');
    expect(refused.message).toMatch(/sent by us/);
    expect(await h.call('inbox.counts', {})).toEqual(before);
    expect((await h.store.get('messages', reply))?.doneAt ?? null).toBeNull();
    expect((await h.store.get('messages', out.id))?.doneAt ?? null).toBeNull();
  });
});
