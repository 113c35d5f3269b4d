import { describe, expect, it } from 'vitest';
import { newLeadGroup, newMessage } from '../../shared/model/factories.ts';
import type { Lead, Message } from '../../shared/model/index.ts';
import { validateChange } from '../../shared/rules/index.ts';
import { makeHarness, seedEnrollment as enroll, stagesByCategory as stages } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

async function message(h: Harness, fields: Pick<Message, 'leadId' | 'sdrProfileId' | 'chatId' | 'direction'> & Partial<Message>): Promise<Message> {
  const m = newMessage(h.stamp(), { kind: 'message', text: 'hello', status: fields.direction === 'in' ? 'received' : 'sent', ...fields });
  await h.seed([{ collection: 'messages', id: m.id, before: null, after: m }]);
  return m;
}

/** A workspace with a lead running a sequence through a sender. */
async function running() {
  const h = await makeHarness();
  const sender = await h.addSender({ name: 'Sam Sender' });
  const campaign = await h.addCampaign({ name: 'Q4 outreach', senderIds: [sender.id] });
  const old = await h.addCampaign({ name: 'Q3 outreach', senderIds: [sender.id] });
  const lead = await h.addLead({ firstName: 'Lena', lastName: 'Lead', email: 'lena@initech.test', company: 'Initech' });
  const done = await enroll(h, lead.id, old.id, { status: 'COMPLETED', sdrProfileId: sender.id, nextActionAt: null });
  h.clock.advance(1000);
  const live = await enroll(h, lead.id, campaign.id, { sdrProfileId: sender.id });
  return { h, sender, campaign, old, lead, live, done };
}

describe('campaigns.leads.get and getConversation', () => {
  it('returns the detail of a lead: row, variables, flags and every enrollment', async () => {
    const { h, lead, campaign, old, live, done, sender } = await running();
    const d = await h.call('campaigns.leads.get', { leadId: lead.id });
    expect(d).toMatchObject({
      id: lead.id, fullName: 'Lena Lead', doNotContact: false, blocklisted: false, followUpAt: null, closeReason: null,
      sequenceStatus: 'IN_PROGRESS',
      leadSequence: { enrollmentId: live.id, campaignId: campaign.id, status: 'IN_PROGRESS', sdrProfileId: sender.id, sdrProfile: { id: sender.id, firstName: 'Sam', lastName: 'Sender' } },
      campaigns: [{ id: old.id, name: 'Q3 outreach' }, { id: campaign.id, name: 'Q4 outreach' }],
      builtInValues: { firstName: 'Lena', company: 'Initech', email: 'lena@initech.test' },
    });
    expect(d.enrollments.map((e) => [e.id, e.campaignName, e.status])).toEqual([
      [live.id, 'Q4 outreach', 'IN_PROGRESS'],
      [done.id, 'Q3 outreach', 'COMPLETED'],
    ]);
    expect(d.variables.find((v) => v.builtInType === 'company')).toMatchObject({ name: 'Company', value: 'Initech' });
    await h.expectRefused(h.call('campaigns.leads.get', { leadId: lead.id }, h.foreignOwner), 'NOT_FOUND');
  });

  it('returns the conversation oldest first with its threads', async () => {
    const { h, lead, sender } = await running();
    const a = await message(h, { leadId: lead.id, sdrProfileId: sender.id, chatId: 'chat-1', direction: 'out' });
    h.clock.advance(1000);
    const b = await message(h, { leadId: lead.id, sdrProfileId: sender.id, chatId: 'chat-1', direction: 'in', text: 'hi back' });
    h.clock.advance(1000);
    const c = await message(h, { leadId: lead.id, sdrProfileId: sender.id, chatId: 'chat-2', direction: 'out' });
    const other = await h.addLead({ firstName: 'Other' });
    await message(h, { leadId: other.id, sdrProfileId: sender.id, chatId: 'chat-9', direction: 'out' });
    const conv = await h.call('campaigns.leads.getConversation', { leadId: lead.id });
    expect(conv.messages.map((m) => m.id)).toEqual([a.id, b.id, c.id]);
    expect(conv.messages[1]).toMatchObject({ direction: 'in', text: 'hi back', status: 'received' });
    expect(conv.chats).toEqual([
      { chatId: 'chat-1', sdrProfileId: sender.id, lastMessageAt: b.createdAt },
      { chatId: 'chat-2', sdrProfileId: sender.id, lastMessageAt: c.createdAt },
    ]);
    await h.expectRefused(h.call('campaigns.leads.getConversation', { leadId: lead.id }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('campaigns.leads.updateLeadStage', () => {
  it('moves a lead to a stage, records a stage_changed event and when it was set by hand', async () => {
    const { h, lead } = await running();
    const s = await stages(h);
    const rec = await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.CONTACTED?.id ?? '' }, h.member);
    expect(rec).toMatchObject({ id: lead.id, workspaceId: h.main.workspaceId, pipelineStageId: s.CONTACTED?.id, stageSetManuallyAt: h.now(), closeReason: null });
    const { activities } = await h.call('leadActivities.list', { leadId: lead.id });
    expect(activities[0]).toMatchObject({ type: 'EVENT', userId: h.member.memberId, metadata: { eventKind: 'stage_changed' } });
    expect(activities[0]?.content).toContain('"Contacted"');
  });

  it('a meeting booked by hand stops the sequence, records when, and counts for the campaign', async () => {
    const { h, lead, live, done } = await running();
    const s = await stages(h);
    const rec = await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.MEETING_BOOKED?.id ?? '' }, h.member);
    expect(rec).toMatchObject({ meetingBookedAt: h.now(), meetingBookedSource: 'MANUAL' });
    const detail = await h.call('campaigns.leads.get', { leadId: lead.id });
    expect(Object.fromEntries(detail.enrollments.map((e) => [e.id, e.status]))).toEqual({ [live.id]: 'STOPPED', [done.id]: 'COMPLETED' });
    const campaignId = live.campaignId;
    const { metrics } = await h.call('campaigns.getMetrics', { campaignIds: [campaignId] });
    expect(metrics[0]?.meetingsBooked).toBe(1);
    // Moving on to Won and back does not book a second meeting.
    await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.WON?.id ?? '' }, h.member);
    h.clock.advance(60_000);
    const again = await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.MEETING_BOOKED?.id ?? '' }, h.member);
    expect(again.meetingBookedAt).toBe(rec.meetingBookedAt);
    expect((await h.call('campaigns.getMetrics', { campaignIds: [campaignId] })).metrics[0]?.meetingsBooked).toBe(1);
  });

  it('refuses a lost stage without a close reason (CLOSE_REASON_REQUIRED)', async () => {
    const { h, lead } = await running();
    const s = await stages(h);
    await h.expectRefused(h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.LOST?.id ?? '' }), 'CLOSE_REASON_REQUIRED');
    await h.expectRefused(h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.LOST?.id ?? '', closeReason: null }), 'CLOSE_REASON_REQUIRED');
  });

  it('into a lost stage: keeps the reason and the category it left, and stops the running sequence', async () => {
    const { h, lead, live, done } = await running();
    const s = await stages(h);
    await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.ENGAGED?.id ?? '' });
    const rec = await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.LOST?.id ?? '', closeReason: 'NOT_ICP' });
    expect(rec).toMatchObject({ pipelineStageId: s.LOST?.id, closeReason: 'NOT_ICP', closedFromCategory: 'ENGAGED' });
    expect(await h.store.get('enrollments', live.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'lead_lost', nextActionAt: null });
    expect(await h.store.get('enrollments', done.id)).toEqual(done);
    const row = await h.call('campaigns.leads.get', { leadId: lead.id });
    expect(row.sequenceStatus).toBe('STOPPED');
    const kinds = (await h.call('leadActivities.list', { leadId: lead.id })).activities.map((a) => a.metadata.eventKind);
    expect(kinds).toContain('sequence_stopped');
  });

  it('an unstaged lead closed as lost was NEW; leaving lost clears the close reason', async () => {
    const { h, lead } = await running();
    const s = await stages(h);
    const lost = await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.LOST?.id ?? '', closeReason: 'BAD_TIMING' });
    expect(lost.closedFromCategory).toBe('NEW');
    const back = await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.CONTACTED?.id ?? '' });
    expect(back).toMatchObject({ pipelineStageId: s.CONTACTED?.id, closeReason: null });
  });

  it('refuses an on-hold stage without a wake date (WAKE_DATE_REQUIRED); with one, sets the catch-up date', async () => {
    const { h, lead } = await running();
    const s = await stages(h);
    await h.expectRefused(h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.ON_HOLD?.id ?? '' }), 'WAKE_DATE_REQUIRED');
    const rec = await h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.ON_HOLD?.id ?? '', wakeAt: '2027-01-15T09:00:00+01:00' });
    expect(rec).toMatchObject({ pipelineStageId: s.ON_HOLD?.id, followUpAt: '2027-01-15T08:00:00.000Z' });
  });

  it("refuses another workspace's stage, lead, and an unknown stage (NOT_FOUND)", async () => {
    const { h, lead } = await running();
    const foreign = await h.db.forWorkspace(h.other.workspaceId).query('stages', {});
    const foreignStage = foreign.docs[1];
    expect(foreignStage).toBeDefined();
    await h.expectRefused(h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: foreignStage?.id ?? '' }), 'NOT_FOUND');
    const s = await stages(h);
    await h.expectRefused(h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: s.NEW?.id ?? '' }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.updateLeadStage', { leadId: lead.id, pipelineStageId: h.ids.uuid() }), 'NOT_FOUND');
  });

  it('the lead rules refuse a pushed lost stage without reason and an on-hold move without wake date', async () => {
    const { h, lead } = await running();
    const s = await stages(h);
    const rctx = { actor: h.member, read: h.store, now: h.clock.now() };
    const lost: Lead = { ...lead, pipelineStageId: s.LOST?.id ?? null };
    await expect(validateChange({ collection: 'leads', before: lead, after: lost }, rctx)).rejects.toMatchObject({ code: 'CLOSE_REASON_REQUIRED' });
    const hold: Lead = { ...lead, pipelineStageId: s.ON_HOLD?.id ?? null };
    await expect(validateChange({ collection: 'leads', before: lead, after: hold }, rctx)).rejects.toMatchObject({ code: 'WAKE_DATE_REQUIRED' });
    await expect(validateChange({ collection: 'leads', before: lead, after: { ...hold, followUpAt: h.now() } }, rctx)).resolves.toBeUndefined();
    await expect(validateChange({ collection: 'leads', before: lead, after: { ...lead, groupIds: [] } }, rctx)).rejects.toMatchObject({ code: 'RULE_VIOLATION' });
  });
});

describe('campaigns.leads.updateTag and setLeadFollowUp', () => {
  it('sets, replaces and clears the tag, returning the previous one and the campaigns', async () => {
    const { h, lead, campaign, old } = await running();
    const hot = await h.call('tags.create', { name: 'Hot' });
    const cold = await h.call('tags.create', { name: 'Cold' });
    const first = await h.call('campaigns.leads.updateTag', { leadGroupId: h.main.leadGroupId, leadId: lead.id, tagId: hot.id });
    expect(first).toMatchObject({ id: lead.id, tagId: hot.id, oldTagId: null, campaigns: [{ id: old.id, name: 'Q3 outreach' }, { id: campaign.id, name: 'Q4 outreach' }] });
    const second = await h.call('campaigns.leads.updateTag', { leadGroupId: h.main.leadGroupId, leadId: lead.id, tagId: cold.id }, h.member);
    expect(second).toMatchObject({ tagId: cold.id, oldTagId: hot.id });
    const cleared = await h.call('campaigns.leads.updateTag', { leadGroupId: h.main.leadGroupId, leadId: lead.id, tagId: null });
    expect(cleared).toMatchObject({ tagId: null, oldTagId: cold.id });
    expect((await h.store.get('leads', lead.id))?.tagId).toBeNull();
  });

  it('refuses a lead outside the group, an unknown tag and foreign ids (NOT_FOUND)', async () => {
    const { h, lead } = await running();
    const group = newLeadGroup(h.stamp(), 'Other list', () => h.ids.uuid());
    await h.seed([{ collection: 'leadGroups', id: group.id, before: null, after: group }]);
    const hot = await h.call('tags.create', { name: 'Hot' });
    const foreignTag = await h.call('tags.create', { name: 'Theirs' }, h.foreignOwner);
    await h.expectRefused(h.call('campaigns.leads.updateTag', { leadGroupId: group.id, leadId: lead.id, tagId: hot.id }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.updateTag', { leadGroupId: h.main.leadGroupId, leadId: lead.id, tagId: foreignTag.id }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.updateTag', { leadGroupId: h.other.leadGroupId, leadId: lead.id, tagId: hot.id }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.updateTag', { leadGroupId: h.main.leadGroupId, leadId: lead.id, tagId: hot.id }, h.foreignOwner), 'NOT_FOUND');
  });

  it('sets and clears the catch-up date', async () => {
    const { h, lead } = await running();
    const set = await h.call('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: '2026-12-01T10:00:00Z' }, h.member);
    expect(set).toMatchObject({ id: lead.id, followUpAt: '2026-12-01T10:00:00.000Z', updatedAt: h.now() });
    const cleared = await h.call('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: null });
    expect(cleared.followUpAt).toBeNull();
    await h.expectRefused(h.call('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: 'tomorrow' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: null }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('campaigns.leads.create', () => {
  it('imports good rows, reports bad ones by index, dedupes against the workspace and within the batch', async () => {
    const h = await makeHarness();
    const existing = await h.addLead({ firstName: 'Ex', lastName: 'Isting', email: 'Ex@Acme.test', socialUrl: 'https://www.network.test/in/ex/' });
    const group = newLeadGroup(h.stamp(), 'Fair 2026', () => h.ids.uuid(), ['Booth']);
    await h.seed([{ collection: 'leadGroups', id: group.id, before: null, after: group }]);
    const booth = group.columns.find((c) => c.name === 'Booth');

    const res = await h.call('campaigns.leads.create', {
      leadGroupId: group.id,
      leads: [
        { firstName: 'Ann', lastName: 'A', email: 'ann@a.test', company: 'A Corp', variables: { Booth: 'B12' } },
        { firstName: 'Bad', email: 'not-an-email' },
        { company: 'Nameless Inc' },
        { socialUrl: 'http://network.test/in/EX' },
        { firstName: 'Ann again', email: 'ANN@a.test' },
        { firstName: 'Cy', variables: { Shoe: '42' } },
        { firstName: 'Di', socialUrl: 'https://network.test/in/di', variables: { 'job title': 'CTO' } },
        { email: 'ex@acme.test', variables: { booth: 'C3' } },
        { firstName: 'Num', phone: ' 555 1234 ', variables: { Booth: '7' } },
      ],
    }, h.member);
    expect(res.created).toBe(4);
    expect(res.duplicates).toBe(3);
    expect(await h.store.get('leads', res.leadIds[8] ?? '')).toMatchObject({ phone: '555 1234', variables: { [booth?.id ?? '']: '7' } });
    expect(res.errors.map((e) => e.index)).toEqual([1, 2]);
    expect(res.errors[0]?.message).toMatch(/email/);
    expect(res.errors[1]?.message).toMatch(/name, an email or a social profile URL/);
    // A variable no column has yet becomes a custom column of the group, holding the value.
    const shoe = (await h.store.get('leadGroups', group.id))?.columns.find((c) => c.name === 'Shoe');
    expect(shoe).toMatchObject({ builtInType: null });
    expect(await h.store.get('leads', res.leadIds[5] ?? '')).toMatchObject({ firstName: 'Cy', variables: { [shoe?.id ?? '']: '42' } });
    const [ann, , , ex, annAgain, , di, ex2] = res.leadIds;
    expect(res.leadIds[1]).toBeNull();
    expect(ex).toBe(existing.id);
    expect(ex2).toBe(existing.id);
    expect(annAgain).toBe(ann);

    const annDoc = await h.store.get('leads', ann ?? '');
    expect(annDoc).toMatchObject({ fullName: 'Ann A', company: 'A Corp', leadGroupId: group.id, groupIds: [group.id], pipelineStageId: null });
    expect(annDoc?.variables).toEqual({ [booth?.id ?? '']: 'B12' });
    expect(await h.store.get('leads', di ?? '')).toMatchObject({ jobTitle: 'CTO', socialUrl: 'https://network.test/in/di' });
    const exDoc = await h.store.get('leads', existing.id);
    expect(exDoc?.groupIds).toEqual([h.main.leadGroupId, group.id]);
    expect(exDoc?.firstName).toBe('Ex');
    expect(exDoc?.variables).toEqual({ [booth?.id ?? '']: 'C3' });
    expect(await h.store.count('leads')).toBe(5);
  });

  it("refuses another workspace's group and more than 1000 rows", async () => {
    const h = await makeHarness();
    await h.expectRefused(h.call('campaigns.leads.create', { leadGroupId: h.other.leadGroupId, leads: [{ firstName: 'X' }] }), 'NOT_FOUND');
    const rows = Array.from({ length: 1001 }, (_, i) => ({ firstName: `P${i}` }));
    await h.expectRefused(h.call('campaigns.leads.create', { leadGroupId: h.main.leadGroupId, leads: rows }), 'INVALID_INPUT');
  });
});

describe('campaigns.leads.delete', () => {
  it('a dry run answers exactly like the real call and changes nothing', async () => {
    const { h, lead, live } = await running();
    const other = await h.addLead({ firstName: 'Other' });
    const ids = [lead.id, other.id, h.ids.uuid(), lead.id];
    const before = h.db.snapshot();
    const commits = h.db.commits;
    const preview = await h.call('campaigns.leads.delete', { leadIds: ids, dryRun: true });
    expect(h.db.snapshot()).toEqual(before);
    expect(h.db.commits).toBe(commits);
    const real = await h.call('campaigns.leads.delete', { leadIds: ids });
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real).toEqual({ dryRun: false, deleted: 2, skippedMissing: 1 });
    expect(await h.store.get('leads', lead.id)).toBeNull();
    expect(await h.store.get('enrollments', live.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'lead_deleted', nextActionAt: null });
    expect((await h.call('campaigns.leads.search', {})).leads).toEqual([]);
    await h.expectRefused(h.call('campaigns.leads.get', { leadId: lead.id }), 'NOT_FOUND');
  });

  it("counts another workspace's leads as missing and leaves them alone", async () => {
    const { h, lead } = await running();
    const res = await h.call('campaigns.leads.delete', { leadIds: [lead.id] }, h.foreignOwner);
    expect(res).toEqual({ dryRun: false, deleted: 0, skippedMissing: 1 });
    expect(await h.store.get('leads', lead.id)).not.toBeNull();
  });
});

describe('Do Not Contact and blocklist', () => {
  it('marks leads Do Not Contact, stops their running sequence, counts only real changes', async () => {
    const { h, lead, live } = await running();
    const other = await h.addLead({ firstName: 'Other' });
    const res = await h.call('campaigns.leads.setDoNotContact', { leadIds: [lead.id, other.id, h.ids.uuid()], doNotContact: true }, h.member);
    expect(res).toEqual({ changed: 2, skippedMissing: 1 });
    expect(await h.store.get('enrollments', live.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'do_not_contact', nextActionAt: null });
    expect((await h.call('campaigns.leads.get', { leadId: lead.id })).doNotContact).toBe(true);
    expect(await h.call('campaigns.leads.setDoNotContact', { leadIds: [lead.id], doNotContact: true })).toEqual({ changed: 0, skippedMissing: 0 });
    expect(await h.call('campaigns.leads.setDoNotContact', { leadIds: [lead.id], doNotContact: false })).toEqual({ changed: 1, skippedMissing: 0 });
    expect((await h.store.get('leads', lead.id))?.doNotContact).toBe(false);
    expect(await h.call('campaigns.leads.setDoNotContact', { leadIds: [lead.id], doNotContact: true }, h.foreignOwner)).toEqual({ changed: 0, skippedMissing: 1 });
  });

  it('blocklists leads and stops their running sequence', async () => {
    const { h, lead, live } = await running();
    expect(await h.call('campaigns.leads.setBlocklisted', { leadIds: [lead.id], blocklisted: true })).toEqual({ changed: 1, skippedMissing: 0 });
    expect(await h.store.get('enrollments', live.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'blocklisted' });
    expect((await h.store.get('leads', lead.id))?.blocklisted).toBe(true);
    expect(await h.call('campaigns.leads.setBlocklisted', { leadIds: [lead.id], blocklisted: false })).toEqual({ changed: 1, skippedMissing: 0 });
    expect(await h.call('campaigns.leads.setBlocklisted', { leadIds: [lead.id], blocklisted: true }, h.foreignOwner)).toEqual({ changed: 0, skippedMissing: 1 });
    expect((await h.store.get('leads', lead.id))?.blocklisted).toBe(false);
  });
});

describe('campaigns.leads.sendMessage', () => {
  it('queues a message through the enrollment sender on a new thread, clears the catch-up date', async () => {
    const { h, lead, sender } = await running();
    await h.call('campaigns.leads.setLeadFollowUp', { leadId: lead.id, followUpAt: '2026-11-01T00:00:00Z' });
    h.clock.advance(60_000);
    const res = await h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: ' Quick question ' }, h.member);
    expect(res).toMatchObject({ sdrProfileId: sender.id, status: 'queued' });
    const stored = await h.store.get('messages', res.messageId);
    expect(stored).toMatchObject({ leadId: lead.id, chatId: res.chatId, direction: 'out', kind: 'message', status: 'queued', text: 'Quick question', campaignId: null, stepId: null, sentAt: null });
    expect(await h.store.get('leads', lead.id)).toMatchObject({ followUpAt: null, lastActivityAt: h.now() });
  });

  it('replies in the latest thread, or in the given chatId with that thread\'s sender', async () => {
    const { h, lead, sender } = await running();
    const second = await h.addSender({ name: 'Sue Second', channel: 'email' });
    await message(h, { leadId: lead.id, sdrProfileId: second.id, chatId: 'mail-1', direction: 'out', kind: 'email', subject: 'Intro' });
    h.clock.advance(1000);
    await message(h, { leadId: lead.id, sdrProfileId: sender.id, chatId: 'dm-1', direction: 'in' });
    const latest = await h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: 'thanks' });
    expect(latest).toMatchObject({ chatId: 'dm-1', sdrProfileId: sender.id });
    const mail = await h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: 'following up', chatId: 'mail-1' });
    expect(mail).toMatchObject({ chatId: 'mail-1', sdrProfileId: second.id });
    expect(await h.store.get('messages', mail.messageId)).toMatchObject({ kind: 'email', subject: 'Re: Intro' });
    await h.expectRefused(h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: 'x', chatId: 'nope' }), 'NOT_FOUND');
  });

  it('refuses a lead with no sender on any conversation, a DNC or blocklisted lead, and a foreign lead', async () => {
    const { h, lead } = await running();
    const lonely = await h.addLead({ firstName: 'Lonely' });
    const e = await h.expectRefused(h.call('campaigns.leads.sendMessage', { leadId: lonely.id, text: 'hi' }), 'INVALID_INPUT');
    expect(e.message).toMatch(/No sender/);
    await h.expectRefused(h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: 'hi' }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: '   ' }), 'INVALID_INPUT');
    await h.call('campaigns.leads.setBlocklisted', { leadIds: [lead.id], blocklisted: true });
    const b = await h.expectRefused(h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: 'hi' }), 'RULE_VIOLATION');
    expect(b.message).toMatch(/blocklisted/);
    await h.call('campaigns.leads.setBlocklisted', { leadIds: [lead.id], blocklisted: false });
    await h.call('campaigns.leads.setDoNotContact', { leadIds: [lead.id], doNotContact: true });
    const d = await h.expectRefused(h.call('campaigns.leads.sendMessage', { leadId: lead.id, text: 'hi' }), 'RULE_VIOLATION');
    expect(d.message).toMatch(/Do Not Contact/);
  });
});
