/**
 * Reply labels: a reply arrives with the label its text suggests; inbox.setLabel confirms, changes
 * or clears it (who and when kept on the message), refusing unknown ids and our own messages with
 * nothing changed; labelling unsubscribe unsubscribes the lead; the inbox filters and counts by
 * label; campaigns.getMetrics and getStepMetrics count replying leads per label with the positive
 * reply rate.
 */
import { describe, expect, it } from 'vitest';
import { newMessage, newStep } from '../../shared/model/factories.ts';
import type { Message, ReplyLabel } from '../../shared/model/index.ts';
import { makeHarness } from '../support/harness.ts';
import { engineWorld } from './engine-fixtures.ts';

async function setup() {
  const h = await makeHarness();
  const ada = await h.addLead({ fullName: 'Ada Lovelace', firstName: 'Ada', email: 'ada@example.test' });
  const grace = await h.addLead({ fullName: 'Grace Hopper', firstName: 'Grace' });
  const mia = await h.addSender({ name: 'Mia Schneider' });
  const step = newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' });
  const campaign = await h.addCampaign({ name: 'Event follow-up', senderIds: [mia.id], steps: [step] });
  const reply = (leadId: string, minute: number, text: string, suggested: ReplyLabel | null): Message =>
    newMessage(h.stamp(), {
      leadId, sdrProfileId: mia.id, chatId: `chat-${leadId}`, direction: 'in', kind: 'message', text, status: 'received',
      sentAt: new Date(Date.UTC(2026, 10, 16, 9, minute)).toISOString(), campaignId: campaign.id, replyLabelSuggested: suggested,
    });
  const sent = (leadId: string) =>
    newMessage(h.stamp(), { leadId, sdrProfileId: mia.id, chatId: `chat-${leadId}`, direction: 'out', kind: 'message', text: 'Hi', status: 'sent', sentAt: '2026-11-16T08:00:00.000Z', campaignId: campaign.id, stepId: step.id });
  const adaReply = reply(ada.id, 1, 'Happy to chat next week.', 'interested');
  const graceReply = reply(grace.id, 2, 'Who is this?', null);
  const out = sent(ada.id);
  await h.seed([adaReply, graceReply, out, sent(grace.id)].map((m) => ({ collection: 'messages' as const, id: m.id, before: null, after: m })));
  return { h, ada, grace, mia, campaign, step, adaReply, graceReply, out };
}

describe('inbox.setLabel', () => {
  it('confirms, changes and clears a label, keeping who and when; the list shows label, suggestion and confirmation', async () => {
    const { h, adaReply, graceReply } = await setup();
    const before = await h.call('inbox.list', {});
    expect(before.items.map((i) => [i.leadName, i.label, i.labelSuggested, i.labelConfirmed])).toEqual([
      ['Grace Hopper', null, null, false],
      ['Ada Lovelace', 'interested', 'interested', false],
    ]);

    expect(await h.call('inbox.setLabel', { messageIds: [graceReply.id], label: 'wrong_person' }, h.member)).toEqual({ dryRun: false, changed: 1, unchanged: 0, unsubscribedLeadIds: [] });
    const stored = await h.store.get('messages', graceReply.id);
    expect(stored).toMatchObject({ replyLabel: 'wrong_person', replyLabelSuggested: null, replyLabelledBy: h.member.memberId, replyLabelledAt: h.now() });
    const grace = (await h.call('inbox.list', {})).items.find((i) => i.messageId === graceReply.id);
    expect(grace).toMatchObject({ label: 'wrong_person', labelConfirmed: true, labelledBy: h.member.memberId, labelledAt: h.now() });

    // The same label again changes nothing; a different one replaces it; null goes back to the suggestion.
    expect((await h.call('inbox.setLabel', { messageIds: [graceReply.id, adaReply.id], label: 'wrong_person' })).changed).toBe(1);
    await h.call('inbox.setLabel', { messageIds: [adaReply.id], label: 'not_interested' });
    expect((await h.store.get('messages', adaReply.id))?.replyLabel).toBe('not_interested');
    await h.call('inbox.setLabel', { messageIds: [adaReply.id], label: null });
    expect(await h.store.get('messages', adaReply.id)).toMatchObject({ replyLabel: null, replyLabelSuggested: 'interested', replyLabelledBy: null, replyLabelledAt: null });
    expect((await h.call('inbox.list', {})).items.find((i) => i.messageId === adaReply.id)).toMatchObject({ label: 'interested', labelConfirmed: false });
  });

  it('a dry run answers the same and changes nothing', async () => {
    const { h, ada, adaReply } = await setup();
    const before = h.db.snapshot();
    expect(await h.call('inbox.setLabel', { messageIds: [adaReply.id], label: 'unsubscribe', dryRun: true })).toEqual({ dryRun: true, changed: 1, unchanged: 0, unsubscribedLeadIds: [ada.id] });
    expect(h.db.snapshot()).toEqual(before);
  });

  it('refuses an unknown or foreign id (404), a message we sent (422) and a label that does not exist (400), changing nothing', async () => {
    const { h, adaReply, out } = await setup();
    await h.expectRefused(h.call('inbox.setLabel', { messageIds: [adaReply.id, '00000000-0000-4000-8000-000000000000'], label: 'interested' }), 'NOT_FOUND');
    await h.expectRefused(h.call('inbox.setLabel', { messageIds: [adaReply.id], label: 'interested' }, h.foreignOwner), 'NOT_FOUND');
    const refused = await h.expectRefused(h.call('inbox.setLabel', { messageIds: [adaReply.id, out.id], label: 'unsubscribe' }), 'RULE_VIOLATION');
    expect(refused.status).toBe(422);
    expect(refused.details).toEqual({ messageId: out.id });
    await h.expectRefused(h.call('inbox.setLabel', { messageIds: [adaReply.id], label: 'hot' as ReplyLabel }), 'INVALID_INPUT');
    await h.expectRefused(h.call('inbox.setLabel', { messageIds: [], label: 'other' }), 'INVALID_INPUT');
  });

  it('labelling a reply unsubscribe unsubscribes its lead: Do Not Contact, sequences stopped, on the timeline; only once', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Mia Schneider' });
    const lead = await w.h.addLead({ fullName: 'Ada Lovelace' });
    const c = await w.h.addCampaign({ name: 'Q4', senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'WAIT', { waitTimeSeconds: 86_400 }), newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' })] });
    await w.start(c);
    const e = await w.enroll(lead, c, { sdrProfileId: sender.id });
    const r = newMessage(w.h.stamp(), { leadId: lead.id, sdrProfileId: sender.id, chatId: 'c1', direction: 'in', kind: 'message', text: 'Please remove me from your list.', status: 'received', sentAt: w.h.now(), campaignId: c.id, replyLabelSuggested: 'unsubscribe' });
    await w.h.seed([{ collection: 'messages', id: r.id, before: null, after: r }]);
    // The suggestion alone does nothing to the lead.
    expect((await w.h.store.get('leads', lead.id))?.doNotContact).toBe(false);

    const out = await w.h.call('inbox.setLabel', { messageIds: [r.id], label: 'unsubscribe' }, w.h.member);
    expect(out.unsubscribedLeadIds).toEqual([lead.id]);
    expect(await w.h.store.get('leads', lead.id)).toMatchObject({ doNotContact: true, unsubscribedAt: w.h.now(), unsubscribeSource: 'reply' });
    expect(await w.enrollment(e.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'unsubscribed' });
    const events = await w.events('lead_unsubscribed');
    expect(events.map((a) => [a.content, a.userId, a.metadata.messageId])).toEqual([
      ['Ada Lovelace unsubscribed by reply (labelled unsubscribe in the inbox): marked Do Not Contact. The sequence in "Q4" stopped.', w.h.member.memberId, r.id],
    ]);
    // The campaign's activity shows it.
    const recent = (await w.h.call('campaigns.getActivity', { campaignId: c.id })).recent.filter((x) => x.kind === 'lead_unsubscribed');
    expect(recent.map((x) => [x.type, x.leadId])).toEqual([['event', lead.id]]);
    // Labelled again (after a change of mind and back): the lead is not unsubscribed twice.
    await w.h.call('inbox.setLabel', { messageIds: [r.id], label: 'other' });
    expect((await w.h.call('inbox.setLabel', { messageIds: [r.id], label: 'unsubscribe' })).unsubscribedLeadIds).toEqual([]);
    expect(await w.events('lead_unsubscribed')).toHaveLength(1);
    // And clearing the label leaves the lead Do Not Contact.
    await w.h.call('inbox.setLabel', { messageIds: [r.id], label: null });
    expect((await w.h.store.get('leads', lead.id))?.doNotContact).toBe(true);
  });
});

describe('labels in the inbox filters and counts', () => {
  it('filters by label (confirmed, else suggested; unlabelled) and counts waiting replies per label', async () => {
    const { h, adaReply, graceReply } = await setup();
    expect((await h.call('inbox.list', { label: 'interested' })).items.map((i) => i.messageId)).toEqual([adaReply.id]);
    expect((await h.call('inbox.list', { label: 'unlabelled' })).items.map((i) => i.messageId)).toEqual([graceReply.id]);
    expect((await h.call('inbox.counts', {})).byLabel).toEqual({ interested: 1, not_interested: 0, out_of_office: 0, wrong_person: 0, unsubscribe: 0, other: 0, unlabelled: 1 });
    await h.call('inbox.setLabel', { messageIds: [adaReply.id], label: 'not_interested' });
    expect((await h.call('inbox.list', { label: 'interested' })).items).toEqual([]);
    expect((await h.call('inbox.list', { label: 'not_interested' })).items.map((i) => i.messageId)).toEqual([adaReply.id]);
    // Counts are of waiting replies: a done one leaves them.
    await h.call('inbox.setDone', { messageIds: [graceReply.id], done: true });
    expect((await h.call('inbox.counts', {})).byLabel).toMatchObject({ not_interested: 1, unlabelled: 0 });
    await h.expectRefused(h.call('inbox.list', { label: 'hot' as ReplyLabel }), 'INVALID_INPUT');
  });
});

describe('a reply as it arrives', () => {
  it('carries the label its text suggests; a reply no rule decides carries none', async () => {
    const w = await engineWorld();
    await w.h.addSender({ name: 'Hana', channel: 'http' });
    const ada = await w.h.addLead({ fullName: 'Ada' });
    const bo = await w.h.addLead({ fullName: 'Bo' });
    w.scripted.events.push(
      { kind: 'reply', leadId: ada.id, chatId: 'c-ada', text: 'Vielen Dank, aber wir haben kein Interesse.\n\nAm 16.11.2026 schrieb Hana:\n> Hätten Sie Interesse?', at: w.h.now(), externalId: 'r-ada' },
      { kind: 'reply', leadId: bo.id, chatId: 'c-bo', text: 'Who is this?', at: w.h.now(), externalId: 'r-bo' },
    );
    await w.runner().tick();
    const received = await w.messages({ direction: 'in' });
    expect(received.map((m) => [m.leadId, m.replyLabelSuggested, m.replyLabel ?? null])).toEqual([[ada.id, 'not_interested', null], [bo.id, null, null]]);
  });
});

describe('labels in the campaign results', () => {
  it('getMetrics: replying leads per label (latest confirmed, else latest suggestion) and the positive reply rate', async () => {
    const { h, grace, mia, campaign, adaReply, graceReply } = await setup();
    const m0 = (await h.call('campaigns.getMetrics', { campaignIds: [campaign.id] })).metrics[0];
    expect(m0).toMatchObject({ replies: 2, positiveReplies: 1, positiveReplyRate: 0.5, replyLabelsConfirmed: 0 });
    expect(m0?.replyLabels).toEqual({ interested: 1, not_interested: 0, out_of_office: 0, wrong_person: 0, unsubscribe: 0, other: 0, unlabelled: 1 });

    // Grace is confirmed interested; then writes again ("Tuesday works"), which no rule labels: still interested.
    await h.call('inbox.setLabel', { messageIds: [graceReply.id], label: 'interested' });
    const later = newMessage(h.stamp(), { leadId: grace.id, sdrProfileId: mia.id, chatId: `chat-${grace.id}`, direction: 'in', kind: 'message', text: 'Tuesday works', status: 'received', sentAt: '2026-11-16T10:00:00.000Z', campaignId: campaign.id, replyLabelSuggested: null });
    await h.seed([{ collection: 'messages', id: later.id, before: null, after: later }]);
    // Ada's suggestion (interested) is overruled by the confirmed label.
    await h.call('inbox.setLabel', { messageIds: [adaReply.id], label: 'out_of_office' });
    const m1 = (await h.call('campaigns.getMetrics', { campaignIds: [campaign.id] })).metrics[0];
    expect(m1).toMatchObject({ replies: 2, positiveReplies: 1, positiveReplyRate: 0.5, replyLabelsConfirmed: 2 });
    expect(m1?.replyLabels).toMatchObject({ interested: 1, out_of_office: 1, unlabelled: 0 });
  });

  it('getStepMetrics: the labels of the replies a step got, and its positive reply rate', async () => {
    const { h, campaign, step, graceReply } = await setup();
    await h.call('inbox.setLabel', { messageIds: [graceReply.id], label: 'not_interested' });
    const r = await h.call('campaigns.getStepMetrics', { campaignId: campaign.id });
    const s = r.steps.find((x) => x.stepId === step.id);
    expect(s).toMatchObject({ replies: 2, positiveReplies: 1, positiveReplyRate: 0.5 });
    expect(s?.replyLabels).toEqual({ interested: 1, not_interested: 1, out_of_office: 0, wrong_person: 0, unsubscribe: 0, other: 0, unlabelled: 0 });
  });
});
