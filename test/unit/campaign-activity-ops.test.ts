import { describe, expect, it } from 'vitest';
import { emptyUsage, newActivity, newEnrollment, newMessage, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Enrollment, Message } from '../../shared/model/index.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

// The harness clock starts on Monday 2026-11-16 at 10:00 UTC: inside the default 09:00-17:00 window.

async function running(h: Harness, fields: Partial<Campaign> & { senderIds?: string[] } = {}): Promise<Campaign> {
  const c = await h.addCampaign({
    steps: [newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' }), newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 86_400 })],
    ...fields,
  });
  const on = { ...c, running: true, startedAt: h.now() };
  await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: on }]);
  return on;
}

async function enroll(h: Harness, c: Campaign, fields: Partial<Enrollment> & { name?: string } = {}): Promise<Enrollment> {
  const { name = 'Lena Lead', ...rest } = fields;
  const [first, last] = name.split(' ');
  const lead = await h.addLead({ firstName: first ?? '', lastName: last ?? '', fullName: name });
  const e = newEnrollment(h.stamp(), lead.id, c.id, { currentStepId: c.steps[0]?.id ?? null, ...rest });
  await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
  return e;
}

async function message(h: Harness, fields: Pick<Message, 'leadId' | 'sdrProfileId' | 'direction' | 'kind'> & Partial<Message>): Promise<Message> {
  const m = newMessage(h.stamp(), { chatId: 'chat-1', text: 'Hello', ...fields });
  await h.seed([{ collection: 'messages', id: m.id, before: null, after: m }]);
  return m;
}

describe('campaigns.getActivity: queued actions and why they wait', () => {
  it('explains each waiting enrollment: due, window closed, limit reached, sender paused, unassigned, scheduled', async () => {
    const h = await makeHarness();
    const sam = await h.addSender({ name: 'Sam Sender' });
    const sue = await h.addSender({ name: 'Sue Sender' });
    const pat = await h.addSender({ name: 'Pat Paused', outreachPaused: true, status: 'paused' });
    const c = await running(h, { senderIds: [sam.id, sue.id, pat.id] });
    const paused = { ...c, senders: c.senders.map((s) => (s.sdrProfileId === sue.id ? { ...s, paused: true } : s)) };
    await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: paused }]);
    const now = h.now();
    const later = new Date(h.clock.now().getTime() + 3_600_000).toISOString();

    const due = await enroll(h, paused, { name: 'Dana Due', sdrProfileId: sam.id, nextActionAt: now });
    const onSue = await enroll(h, paused, { name: 'Sid Sue', sdrProfileId: sue.id, nextActionAt: now });
    const onPat = await enroll(h, paused, { name: 'Pia Pat', sdrProfileId: pat.id, nextActionAt: now });
    const nobody = await enroll(h, paused, { name: 'Una Assigned', sdrProfileId: null, nextActionAt: now });
    const window = await enroll(h, paused, { name: 'Wes Window', sdrProfileId: sam.id, nextActionAt: later, waitReason: 'outside_window' });
    const limit = await enroll(h, paused, { name: 'Lou Limit', sdrProfileId: sam.id, nextActionAt: later, waitReason: 'daily_limit' });
    const waiting = await enroll(h, paused, { name: 'Will Wait', sdrProfileId: sam.id, nextActionAt: later });

    const a = await h.call('campaigns.getActivity', { campaignId: c.id });
    const byLead = new Map(a.queued.map((q) => [q.enrollmentId, q]));
    expect(byLead.get(due.id)).toMatchObject({ reason: 'due', leadName: 'Dana Due', senderName: 'Sam Sender', stepLabel: 'step 1 (Message)' });
    expect(byLead.get(onSue.id)).toMatchObject({ reason: 'sender_paused', explanation: 'Sue Sender is paused on this campaign.' });
    expect(byLead.get(onPat.id)).toMatchObject({ reason: 'sender_paused', explanation: "Pat Paused's outreach is paused on every campaign." });
    expect(byLead.get(nobody.id)?.reason).toBe('unassigned');
    expect(byLead.get(window.id)).toMatchObject({ reason: 'outside_window', until: later });
    expect(byLead.get(limit.id)).toMatchObject({ reason: 'daily_limit', until: later });
    expect(byLead.get(waiting.id)).toMatchObject({ reason: 'scheduled', until: later });
    // Due first, then by due time.
    expect(a.queued.map((q) => q.nextActionAt)).toEqual([...a.queued.map((q) => q.nextActionAt)].sort());
    expect(a.waiting).toEqual({ total: 7, byReason: { due: 1, sender_paused: 2, unassigned: 1, outside_window: 1, daily_limit: 1, scheduled: 1 } });
  });

  it('judges a due enrollment against the sending window and today\'s usage when the runner has not stamped it', async () => {
    const h = await makeHarness();
    const sam = await h.addSender({ name: 'Sam Sender' });
    const c = await running(h, { senderIds: [sam.id] });
    const e = await enroll(h, c, { sdrProfileId: sam.id, nextActionAt: h.now() });

    // Every message of the day is used: the limit explains the wait, until the sender's midnight.
    const usage = emptyUsage(h.main.workspaceId, sam.id, '2026-11-16', h.now());
    await h.seed([{ collection: 'usage', id: usage.id, before: null, after: { ...usage, counts: { ...usage.counts, messages: sam.limits.messages } } }]);
    let q = (await h.call('campaigns.getActivity', { campaignId: c.id })).queued[0];
    expect(q).toMatchObject({ enrollmentId: e.id, reason: 'daily_limit', until: '2026-11-17T00:00:00.000Z' });

    // At 18:00 the window (09:00-17:00) is closed: it goes at Tuesday 09:00.
    h.clock.set('2026-11-16T18:00:00.000Z');
    q = (await h.call('campaigns.getActivity', { campaignId: c.id })).queued[0];
    expect(q).toMatchObject({ reason: 'outside_window', until: '2026-11-17T09:00:00.000Z' });
  });

  it('says the campaign is paused, a sender backs off, or a removed sender still holds a lead', async () => {
    const h = await makeHarness();
    const sam = await h.addSender({ name: 'Sam Sender', status: 'limited', backoffUntil: '2026-11-16T12:00:00.000Z', statusReason: 'HTTP 429' });
    const gone = await h.addSender({ name: 'Gina Gone' });
    const c = await running(h, { senderIds: [sam.id] });
    const backing = await enroll(h, c, { sdrProfileId: sam.id, nextActionAt: h.now() });
    const held = await enroll(h, c, { sdrProfileId: gone.id, nextActionAt: h.now(), inConversationAt: h.now() });
    let a = await h.call('campaigns.getActivity', { campaignId: c.id });
    expect(a.queued.find((q) => q.enrollmentId === backing.id)).toMatchObject({ reason: 'sender_limited', until: '2026-11-16T12:00:00.000Z' });
    expect(a.queued.find((q) => q.enrollmentId === held.id)?.reason).toBe('sender_removed');

    await h.call('campaigns.pause', { campaignId: c.id });
    a = await h.call('campaigns.getActivity', { campaignId: c.id });
    expect(a.running).toBe(false);
    expect(a.queued.map((q) => q.reason)).toEqual(['campaign_paused', 'campaign_paused']);
  });

  it('lists only IN_PROGRESS enrollments, at most `limit`, while counting them all', async () => {
    const h = await makeHarness();
    const sam = await h.addSender();
    const c = await running(h, { senderIds: [sam.id] });
    for (let i = 0; i < 5; i++) await enroll(h, c, { name: `Lead ${i}`, sdrProfileId: sam.id });
    await enroll(h, c, { name: 'Done Lead', status: 'COMPLETED', nextActionAt: null });
    const a = await h.call('campaigns.getActivity', { campaignId: c.id, limit: 2 });
    expect(a.queued).toHaveLength(2);
    expect(a.waiting.total).toBe(5);
  });
});

describe('campaigns.getActivity: recent actions and the daily series', () => {
  it('shows sends, failures, replies and events newest first, with lead, sender and step', async () => {
    const h = await makeHarness();
    const sam = await h.addSender({ name: 'Sam Sender' });
    const c = await running(h, { senderIds: [sam.id] });
    const e = await enroll(h, c, { name: 'Rita Reply', sdrProfileId: sam.id });
    const step = c.steps[0];
    await message(h, { leadId: e.leadId, sdrProfileId: sam.id, direction: 'out', kind: 'message', campaignId: c.id, stepId: step?.id ?? null, status: 'sent', sentAt: '2026-11-15T09:30:00.000Z', text: 'Hi Rita' });
    await message(h, { leadId: e.leadId, sdrProfileId: sam.id, direction: 'out', kind: 'connection_request', campaignId: c.id, status: 'failed', error: 'recipient refused', text: '' });
    h.clock.advance(60_000);
    await message(h, { leadId: e.leadId, sdrProfileId: sam.id, direction: 'in', kind: 'message', campaignId: c.id, status: 'received', text: 'Sounds good' });
    h.clock.advance(60_000);
    const booked = newActivity(h.stamp(), e.leadId, h.owner.memberId, 'EVENT', 'Meeting booked', { metadata: { eventKind: 'meeting_booked', campaignId: c.id, sdrProfileId: sam.id } });
    const otherKind = newActivity(h.stamp(), e.leadId, h.owner.memberId, 'EVENT', 'Stage changed', { metadata: { eventKind: 'stage_changed', campaignId: c.id } });
    await h.seed([
      { collection: 'activities', id: booked.id, before: null, after: booked },
      { collection: 'activities', id: otherKind.id, before: null, after: otherKind },
    ]);
    // Another campaign's message is not this campaign's activity.
    const other = await running(h, { senderIds: [sam.id], name: 'Other' });
    await message(h, { leadId: e.leadId, sdrProfileId: sam.id, direction: 'out', kind: 'message', campaignId: other.id, status: 'sent', sentAt: h.now() });

    const a = await h.call('campaigns.getActivity', { campaignId: c.id });
    expect(a.recent.map((r) => [r.type, r.kind])).toEqual([
      ['event', 'meeting_booked'],
      ['reply', 'message'],
      ['failed', 'connection_request'],
      ['sent', 'message'],
    ]);
    expect(a.recent[0]).toMatchObject({ leadName: 'Rita Reply', senderName: 'Sam Sender', text: 'Meeting booked' });
    expect(a.recent[2]).toMatchObject({ error: 'recipient refused' });
    expect(a.recent[3]).toMatchObject({ stepLabel: 'step 1 (Message)', text: 'Hi Rita', at: '2026-11-15T09:30:00.000Z' });

    expect(a.daily).toHaveLength(14);
    expect(a.daily[13]).toEqual({ day: '2026-11-16', sent: 0, replies: 1, accepted: 0 });
    expect(a.daily[12]).toEqual({ day: '2026-11-15', sent: 1, replies: 0, accepted: 0 });
    expect(a.daily[0]?.day).toBe('2026-11-03');
  });

  it('refuses an unknown campaign and another workspace\'s campaign as not found', async () => {
    const h = await makeHarness();
    const c = await h.addCampaign();
    await h.expectRefused(h.call('campaigns.getActivity', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.getActivity', { campaignId: h.ids.uuid() }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.getActivity', { campaignId: 'nope' }), 'INVALID_INPUT');
  });
});

describe('campaigns.getEnrollments: what each sender holds', () => {
  it('counts running leads per sender, including a removed sender still in conversation, and filters by sender', async () => {
    const h = await makeHarness();
    const sam = await h.addSender({ name: 'Sam Sender' });
    const sue = await h.addSender({ name: 'Sue Sender' });
    const c = await running(h, { senderIds: [sam.id, sue.id] });
    const talking = await enroll(h, c, { name: 'Tom Talk', sdrProfileId: sue.id, inConversationAt: h.now() });
    const quiet = await enroll(h, c, { name: 'Quinn Quiet', sdrProfileId: sue.id });
    await enroll(h, c, { name: 'Sara Sam', sdrProfileId: sam.id });
    const nobody = await enroll(h, c, { name: 'Una Assigned', sdrProfileId: null });
    await enroll(h, c, { name: 'Fin Finished', sdrProfileId: sue.id, status: 'COMPLETED' });

    let r = await h.call('campaigns.getEnrollments', { campaignId: c.id });
    expect(r.total).toBe(4);
    expect(r.unassigned).toBe(1);
    expect(r.senders).toEqual([
      { sdrProfileId: sam.id, name: 'Sam Sender', onCampaign: true, pausedOnCampaign: false, active: 1, inConversation: 0 },
      { sdrProfileId: sue.id, name: 'Sue Sender', onCampaign: true, pausedOnCampaign: false, active: 2, inConversation: 1 },
    ]);

    // Removing Sue unassigns the quiet lead and leaves the one in conversation with her.
    const removal = await h.call('campaigns.updateSenders', { campaignId: c.id, remove: [sue.id] });
    expect(removal.leads).toEqual({ assigned: 1, inFlight: 1 });
    r = await h.call('campaigns.getEnrollments', { campaignId: c.id, sdrProfileId: sue.id });
    expect(r.enrollments.map((e) => e.enrollmentId)).toEqual([talking.id]);
    expect(r.enrollments[0]).toMatchObject({ leadName: 'Tom Talk', stepLabel: 'step 1 (Message)' });
    expect(r.senders.find((s) => s.sdrProfileId === sue.id)).toMatchObject({ onCampaign: false, active: 1, inConversation: 1 });
    r = await h.call('campaigns.getEnrollments', { campaignId: c.id, sdrProfileId: 'unassigned' });
    expect(r.enrollments.map((e) => e.enrollmentId).sort()).toEqual([quiet.id, nobody.id].sort());
    expect(r.total).toBe(2);
    r = await h.call('campaigns.getEnrollments', { campaignId: c.id, inConversation: true });
    expect(r.enrollments.map((e) => e.enrollmentId)).toEqual([talking.id]);
    await h.expectRefused(h.call('campaigns.getEnrollments', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
  });
});
