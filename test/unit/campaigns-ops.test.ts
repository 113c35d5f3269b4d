import { describe, expect, it } from 'vitest';
import { BUILT_IN_FIELDS, newActivity, newEnrollment, newMessage, newSender, newStep } from '../../shared/model/factories.ts';
import type { Message } from '../../shared/model/index.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** Runs a dry run and the real call; asserts the dry run changed nothing and answered the same. */
async function expectDryRunMatches<T extends { dryRun: boolean }>(h: Harness, call: (dryRun: boolean) => Promise<T>): Promise<T> {
  const before = h.db.snapshot();
  const commits = h.db.commits;
  const dry = await call(true);
  expect(dry.dryRun).toBe(true);
  expect(h.db.snapshot()).toEqual(before);
  expect(h.db.commits).toBe(commits);
  const real = await call(false);
  expect(real.dryRun).toBe(false);
  expect({ ...dry, dryRun: false }).toEqual(real);
  return real;
}

describe('campaign creation and reading', () => {
  it('creates a paused campaign with a new lead group of built-in columns, default schedule and settings', async () => {
    const h = await makeHarness();
    const c = await h.call('campaigns.create', { name: 'Founders in Berlin' });
    expect(c).toMatchObject({ name: 'Founders in Berlin', hasActiveSequence: false, config: null, workspaceId: h.main.workspaceId });
    const group = await h.store.get('leadGroups', c.leadGroupId);
    expect(group?.columns.map((col) => col.name)).toEqual(BUILT_IN_FIELDS.map((f) => f.name));
    const detail = await h.call('campaigns.get', { campaignId: c.id });
    expect(detail).toMatchObject({ running: false, startedAt: null, senders: [], stepCount: 0 });
    expect(detail.schedule).toMatchObject({ timeZone: 'UTC', utcOffsetMinutes: 0 });
    expect(detail.schedule.days.monday).toEqual({ enabled: true, start: '09:00', end: '17:00' });
    expect(detail.schedule.days.sunday.enabled).toBe(false);
    expect(detail.settings).toEqual({ preferNewLeads: false, companyRelay: { enabled: false, maxPersonsPerCompany: 3, seniorities: [] } });

    const shared = await h.call('campaigns.create', { name: 'Same group', leadGroupId: h.main.leadGroupId });
    expect(shared.leadGroupId).toBe(h.main.leadGroupId);
    await h.expectRefused(h.call('campaigns.create', { name: 'Foreign group', leadGroupId: h.other.leadGroupId }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.get', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
  });

  it('lists senders with their paused flag and the merge fields of the lead group', async () => {
    const h = await makeHarness();
    const s1 = await h.addSender({ name: 'Sam Sender' });
    const s2 = await h.addSender({ name: 'Sue Sender' });
    const c = await h.addCampaign({ senderIds: [s1.id, s2.id] });
    await h.call('campaigns.setSendersPaused', { campaignId: c.id, sdrProfileIds: [s2.id], paused: true });
    expect((await h.call('campaigns.listSenders', { campaignId: c.id })).senders).toEqual([
      { sdrProfileId: s1.id, name: 'Sam Sender', status: 'available', paused: false },
      { sdrProfileId: s2.id, name: 'Sue Sender', status: 'available', paused: true },
    ]);
    const { mergeFields } = await h.call('campaigns.getMergeFields', { campaignId: c.id });
    expect(mergeFields[0]).toMatchObject({ name: 'First name', kind: 'builtIn' });
    expect(mergeFields).toHaveLength(BUILT_IN_FIELDS.length);
    await h.expectRefused(h.call('campaigns.listSenders', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('campaign list', () => {
  async function three(h: Harness) {
    const a = await h.call('campaigns.create', { name: 'beta launch' });
    h.clock.advance(60_000);
    const b = await h.call('campaigns.create', { name: 'Alpha founders' });
    h.clock.advance(60_000);
    const c = await h.call('campaigns.create', { name: 'Gamma CFOs' });
    return { a, b, c };
  }

  it('lists newest first by default, pages by page number, sorts and searches by name', async () => {
    const h = await makeHarness();
    const { a, b, c } = await three(h);
    await h.call('campaigns.create', { name: 'Not ours' }, h.foreignOwner);

    const first = await h.call('campaigns.getBasic', { pageSize: 2 });
    expect(first.totalCount).toBe(3);
    expect(first.basicCampaigns.map((x) => x.id)).toEqual([c.id, b.id]);
    expect(first.nextCursor).toEqual({ id: b.id, sortColumnValue: b.createdAt });
    const second = await h.call('campaigns.getBasic', { pageSize: 2, pageNumber: 2 });
    expect(second.basicCampaigns.map((x) => x.id)).toEqual([a.id]);
    expect(second.nextCursor).toBeNull();

    const byName = await h.call('campaigns.getBasic', { sortBy: 'name' });
    expect(byName.basicCampaigns.map((x) => x.name)).toEqual(['Alpha founders', 'beta launch', 'Gamma CFOs']);
    const byNameDesc = await h.call('campaigns.getBasic', { sortBy: 'name', sortOrder: 'desc' });
    expect(byNameDesc.basicCampaigns.map((x) => x.name)).toEqual(['Gamma CFOs', 'beta launch', 'Alpha founders']);
    const oldest = await h.call('campaigns.getBasic', { sortOrder: 'asc' });
    expect(oldest.basicCampaigns.map((x) => x.id)).toEqual([a.id, b.id, c.id]);

    const found = await h.call('campaigns.getBasic', { search: 'FOUND' });
    expect(found).toMatchObject({ totalCount: 1, nextCursor: null });
    expect(found.basicCampaigns.map((x) => x.id)).toEqual([b.id]);

    // Query-string forms, as GET sends them.
    const q = await h.call('campaigns.getBasic', { pageSize: '1' as unknown as number, pageNumber: '3' as unknown as number });
    expect(q.basicCampaigns.map((x) => x.id)).toEqual([a.id]);
    await h.expectRefused(h.call('campaigns.getBasic', { pageSize: 201 }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.getBasic', { pageNumber: 0 }), 'INVALID_INPUT');
  });

  it('sorts by having a sequence, by update time, reply rate and meetings booked', async () => {
    const h = await makeHarness();
    const { a, b, c } = await three(h);
    const sender = await h.addSender();
    h.clock.advance(60_000);
    await h.call('campaigns.addSequenceStep', { campaignId: a.id, step: { type: 'PROFILE_VISIT' } });
    expect((await h.call('campaigns.getBasic', { sortBy: 'hasSequence' })).basicCampaigns[0]?.id).toBe(a.id);
    expect((await h.call('campaigns.getBasic', { sortBy: 'updatedAt' })).basicCampaigns[0]?.id).toBe(a.id);

    // b: 2 leads contacted, 1 replied (50%); c: 1 contacted, 1 replied (100%), 2 meetings on a.
    const leads = [await h.addLead(), await h.addLead(), await h.addLead()];
    const msg = (campaignId: string, leadId: string, direction: Message['direction']) => {
      const m = newMessage(h.stamp(), {
        leadId, sdrProfileId: sender.id, chatId: `chat-${leadId}`, direction, kind: 'message', text: 'x', campaignId,
        status: direction === 'out' ? 'sent' : 'received', sentAt: h.now(),
      });
      return { collection: 'messages' as const, id: m.id, before: null, after: m };
    };
    const meeting = (campaignId: string, leadId: string) => {
      const e = newActivity(h.stamp(), leadId, h.main.ownerId, 'EVENT', 'Meeting booked', { metadata: { eventKind: 'meeting_booked', campaignId } });
      return { collection: 'activities' as const, id: e.id, before: null, after: e };
    };
    const [l0, l1, l2] = leads.map((l) => l.id) as [string, string, string];
    await h.seed([
      msg(b.id, l0, 'out'), msg(b.id, l1, 'out'), msg(b.id, l1, 'in'),
      msg(c.id, l2, 'out'), msg(c.id, l2, 'in'),
      meeting(a.id, l0), meeting(a.id, l1),
    ]);
    const byRate = await h.call('campaigns.getBasic', { sortBy: 'replyRate' });
    expect(byRate.basicCampaigns.map((x) => x.id)).toEqual([c.id, b.id, a.id]);
    expect(byRate.nextCursor).toBeNull();
    const page = await h.call('campaigns.getBasic', { sortBy: 'replyRate', pageSize: 2 });
    expect(page.nextCursor).toEqual({ id: b.id, sortColumnValue: '0.5' });
    const byMeetings = await h.call('campaigns.getBasic', { sortBy: 'meetingsBooked' });
    expect(byMeetings.basicCampaigns[0]?.id).toBe(a.id);
    const fewestFirst = await h.call('campaigns.getBasic', { sortBy: 'meetingsBooked', sortOrder: 'asc' });
    expect(fewestFirst.basicCampaigns.map((x) => x.id)).toEqual([c.id, b.id, a.id]);
  });
});

describe('campaign metrics', () => {
  it('computes metrics from recorded enrollments, messages and events', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    const other = await h.addCampaign({ senderIds: [sender.id], name: 'Other' });
    const leads = [await h.addLead(), await h.addLead(), await h.addLead(), await h.addLead()];
    const [l0, l1, l2, l3] = leads.map((l) => l.id) as [string, string, string, string];
    const enr = (leadId: string, status: 'IN_PROGRESS' | 'COMPLETED' | 'REPLIED', campaignId = c.id) => {
      const e = newEnrollment(h.stamp(), leadId, campaignId, { status, sdrProfileId: sender.id });
      return { collection: 'enrollments' as const, id: e.id, before: null, after: e };
    };
    const msg = (leadId: string, fields: Partial<Message>) => {
      const m = newMessage(h.stamp(), { leadId, sdrProfileId: sender.id, chatId: `chat-${leadId}`, direction: 'out', kind: 'message', text: 'x', campaignId: c.id, ...fields });
      return { collection: 'messages' as const, id: m.id, before: null, after: m };
    };
    const event = (leadId: string, eventKind: string, campaignId = c.id) => {
      const a = newActivity(h.stamp(), leadId, h.main.ownerId, 'EVENT', eventKind, { metadata: { eventKind, campaignId } });
      return { collection: 'activities' as const, id: a.id, before: null, after: a };
    };
    await h.seed([
      enr(l0, 'IN_PROGRESS'), enr(l1, 'COMPLETED'), enr(l2, 'REPLIED'), enr(l3, 'IN_PROGRESS', other.id),
      msg(l0, { status: 'sent', sentAt: h.now(), kind: 'connection_request' }),
      msg(l1, { status: 'sent', sentAt: h.now() }),
      msg(l1, { status: 'sent', sentAt: h.now(), kind: 'email' }),
      msg(l2, { status: 'sent', sentAt: h.now(), kind: 'voice_note' }),
      msg(l2, { status: 'queued' }),
      msg(l0, { status: 'failed', error: 'boom' }),
      msg(l2, { direction: 'in', status: 'received' }),
      msg(l2, { direction: 'in', status: 'received' }),
      msg(l3, { status: 'sent', sentAt: h.now(), campaignId: other.id }),
      msg(l3, { status: 'sent', sentAt: h.now(), campaignId: null }),
      event(l0, 'connection_accepted'), event(l2, 'meeting_booked'), event(l3, 'meeting_booked', other.id), event(l1, 'email_opened'),
    ]);
    const res = await h.call('campaigns.getMetrics', { campaignIds: `${c.id},${other.id}` as unknown as string[] });
    expect(res.notFound).toEqual([]);
    expect(res.metrics[0]).toEqual({
      campaignId: c.id, enrolled: 3, inProgress: 1, completed: 1, messagesSent: 3, connectionRequestsSent: 1, connectionsAccepted: 1,
      replies: 1, replyRate: 1 / 3, meetingsBooked: 1, bounces: 0,
      // The reply has no label (neither suggested nor confirmed).
      positiveReplies: 0, positiveReplyRate: 0, replyLabelsConfirmed: 0,
      replyLabels: { interested: 0, not_interested: 0, out_of_office: 0, wrong_person: 0, unsubscribe: 0, other: 0, unlabelled: 1 },
    });
    expect(res.metrics[1]).toMatchObject({ campaignId: other.id, enrolled: 1, messagesSent: 1, replies: 0, replyRate: 0, meetingsBooked: 1 });

    const foreign = await h.call('campaigns.create', { name: 'Theirs' }, h.foreignOwner);
    const partial = await h.call('campaigns.getMetrics', { campaignIds: [c.id, foreign.id] });
    expect(partial.metrics.map((m) => m.campaignId)).toEqual([c.id]);
    expect(partial.notFound).toEqual([foreign.id]);
    await h.expectRefused(h.call('campaigns.getMetrics', { campaignIds: [] }), 'INVALID_INPUT');
  });
});

describe('campaign running state', () => {
  it('starts a ready paused campaign, pauses it, and pausing again is allowed', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    h.clock.advance(5_000);
    const started = await h.call('campaigns.start', { campaignId: c.id }, h.admin);
    expect(started).toEqual({ campaignId: c.id, running: true, startedAt: h.now(), problems: [] });
    expect(await h.store.get('campaigns', c.id)).toMatchObject({ running: true, startedAt: h.now() });
    expect((await h.call('campaigns.getActiveIds', {})).campaignIds).toEqual([c.id]);
    expect((await h.call('campaigns.getBasic', {})).basicCampaigns[0]?.hasActiveSequence).toBe(true);
    // Starting a running campaign changes nothing.
    const commits = h.db.commits;
    expect((await h.call('campaigns.start', { campaignId: c.id })).running).toBe(true);
    expect(h.db.commits).toBe(commits);

    // Any member may pause.
    expect(await h.call('campaigns.pause', { campaignId: c.id }, h.member)).toEqual({ campaignId: c.id, running: false });
    expect((await h.store.get('campaigns', c.id))?.running).toBe(false);
    expect((await h.call('campaigns.getActiveIds', {})).campaignIds).toEqual([]);
    expect(await h.call('campaigns.pause', { campaignId: c.id }, h.member)).toEqual({ campaignId: c.id, running: false });
    await h.expectRefused(h.call('campaigns.pause', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
  });

  it('needs owner or admin to start', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    await h.expectRefused(h.call('campaigns.start', { campaignId: c.id }, h.member), 'PERMISSION_DENIED');
  });

  it('refuses to start without an active subscription', async () => {
    const h = await makeHarness({ subscription: 'canceled' });
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    const e = await h.expectRefused(h.call('campaigns.start', { campaignId: c.id }), 'SUBSCRIPTION_INACTIVE');
    expect(e.details.subscriptionStatus).toBe('canceled');
    const trialing = await makeHarness({ subscription: 'trialing' });
    const s2 = await trialing.addSender();
    const c2 = await trialing.addCampaign({ senderIds: [s2.id] });
    expect((await trialing.call('campaigns.start', { campaignId: c2.id })).running).toBe(true);
  });

  it('refuses to start a campaign that fails its readiness checks, listing the problems', async () => {
    const h = await makeHarness();
    const noSender = await h.addCampaign({ senderIds: [] });
    const e = await h.expectRefused(h.call('campaigns.start', { campaignId: noSender.id }), 'READINESS_FAILED');
    expect(e.details.problems).toEqual([expect.objectContaining({ severity: 'error', message: expect.stringMatching(/no sender/) })]);

    const sender = await h.addSender();
    const onlyWait = await h.addCampaign({ senderIds: [sender.id], steps: [newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 60 })] });
    const w = await h.expectRefused(h.call('campaigns.start', { campaignId: onlyWait.id }), 'READINESS_FAILED');
    expect(JSON.stringify(w.details.problems)).toMatch(/no step that reaches out/);

    // An old problem the rules never saw (seeded directly): the sender cannot do InMail.
    const inmail = await h.addCampaign({ senderIds: [sender.id], steps: [newStep(h.ids.uuid(), 'INMAIL', { subject: 'Hi', content: 'Hello' })] });
    const p = await h.expectRefused(h.call('campaigns.start', { campaignId: inmail.id }), 'READINESS_FAILED');
    expect(p.message).toMatch(/Premium/);

    // The sequence summary shows the same problems before anyone tries to start.
    const seq = await h.call('campaigns.getSequence', { campaignId: inmail.id });
    expect(seq.readiness.ready).toBe(false);
    expect(seq.readiness.problems[0]).toMatchObject({ severity: 'error', sdrProfileId: sender.id });
  });

  it('reports warnings on start without refusing', async () => {
    const h = await makeHarness();
    const sender = await h.addSender({ limits: { messages: 0, inmails: 0, connectionRequests: 0, connectionRequestsWithNote: 0, comments: 0, reactions: 0, profileVisits: 0 } });
    const c = await h.addCampaign({ senderIds: [sender.id] });
    const res = await h.call('campaigns.start', { campaignId: c.id });
    expect(res.running).toBe(true);
    expect(res.problems).toEqual([expect.objectContaining({ severity: 'warning', message: expect.stringMatching(/daily limit for messages is 0/) })]);
  });
});

describe('campaign schedule', () => {
  it('changes only the passed values, shows the zone offset, and is allowed while running', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    await h.call('campaigns.start', { campaignId: c.id });
    const res = await expectDryRunMatches(h, (dryRun) =>
      h.call('campaigns.updateSchedule', { campaignId: c.id, dryRun, timeZone: 'America/New_York', days: { saturday: { enabled: true, start: '10:00', end: '12:30' } } }),
    );
    expect(res).toMatchObject({ campaignId: c.id, campaignName: c.name, running: true, changed: true });
    expect(res.before).toMatchObject({ timeZone: 'UTC', utcOffsetMinutes: 0 });
    // 2026-11-16 is after the end of daylight saving time in New York: UTC-5.
    expect(res.after).toMatchObject({ timeZone: 'America/New_York', utcOffsetMinutes: -300 });
    expect(res.after.days.saturday).toEqual({ enabled: true, start: '10:00', end: '12:30' });
    expect(res.after.days.monday).toEqual(res.before.days.monday);
    const stored = await h.store.get('campaigns', c.id);
    expect(stored?.schedule.timeZone).toBe('America/New_York');
    expect(stored?.running).toBe(true);

    const same = await h.call('campaigns.updateSchedule', { campaignId: c.id, days: { monday: { start: '09:00' } } });
    expect(same.changed).toBe(false);
    // One day alone.
    const one = await h.call('campaigns.updateSchedule', { campaignId: c.id, days: { friday: { end: '15:00' } } });
    expect(one.after.days.friday).toEqual({ enabled: true, start: '09:00', end: '15:00' });
  });

  it('refuses an enabled day whose start is not before its end, and a schedule with no day on', async () => {
    const h = await makeHarness();
    const c = await h.addCampaign();
    const e = await h.expectRefused(h.call('campaigns.updateSchedule', { campaignId: c.id, days: { tuesday: { start: '17:00' } } }), 'INVALID_SCHEDULE');
    expect(e.details.day).toBe('tuesday');
    await h.expectRefused(h.call('campaigns.updateSchedule', { campaignId: c.id, days: { wednesday: { start: '12:00', end: '11:00' } } }), 'INVALID_SCHEDULE');
    // A dry run refuses exactly like the real call.
    await h.expectRefused(h.call('campaigns.updateSchedule', { campaignId: c.id, dryRun: true, days: { tuesday: { start: '17:00' } } }), 'INVALID_SCHEDULE');
    const off = { enabled: false };
    const none = await h.expectRefused(
      h.call('campaigns.updateSchedule', { campaignId: c.id, days: { monday: off, tuesday: off, wednesday: off, thursday: off, friday: off } }),
      'INVALID_SCHEDULE',
    );
    expect(none.message).toMatch(/at least one day/);
    await h.expectRefused(h.call('campaigns.updateSchedule', { campaignId: c.id, timeZone: 'Mars/Olympus' }), 'INVALID_SCHEDULE');
    await h.expectRefused(h.call('campaigns.updateSchedule', { campaignId: c.id, days: { monday: { start: '9am' } } }), 'INVALID_INPUT');
    // A disabled day's window is not checked; enabling it is.
    await h.call('campaigns.updateSchedule', { campaignId: c.id, days: { sunday: { start: '18:00', end: '24:00' } } });
    const sun = await h.call('campaigns.updateSchedule', { campaignId: c.id, days: { sunday: { enabled: true } } });
    expect(sun.after.days.sunday).toEqual({ enabled: true, start: '18:00', end: '24:00' });
  });
});

describe('campaign senders', () => {
  async function withLeads(h: Harness) {
    const s1 = await h.addSender({ name: 'Sam Sender' });
    const s2 = await h.addSender({ name: 'Sue Sender' });
    const c = await h.addCampaign({ senderIds: [s1.id, s2.id] });
    const leads = [await h.addLead(), await h.addLead(), await h.addLead(), await h.addLead()];
    const enr = (leadId: string, sdrProfileId: string, fields: Parameters<typeof newEnrollment>[3] = {}) => {
      const e = newEnrollment(h.stamp(), leadId, c.id, { sdrProfileId, ...fields });
      return { collection: 'enrollments' as const, id: e.id, before: null, after: e };
    };
    const [l0, l1, l2, l3] = leads.map((l) => l.id) as [string, string, string, string];
    const writes = [
      enr(l0, s1.id),
      enr(l1, s1.id, { inConversationAt: h.now() }),
      enr(l2, s1.id, { status: 'COMPLETED', completedAt: h.now() }),
      enr(l3, s2.id),
    ];
    await h.seed(writes);
    return { s1, s2, c, enrollmentIds: writes.map((w) => w.id) };
  }

  it('removes a sender: its waiting leads are unassigned, leads in conversation stay', async () => {
    const h = await makeHarness();
    const { s1, s2, c, enrollmentIds } = await withLeads(h);
    await h.call('campaigns.start', { campaignId: c.id });
    const res = await expectDryRunMatches(h, (dryRun) => h.call('campaigns.updateSenders', { campaignId: c.id, remove: [s1.id], dryRun }));
    expect(res).toMatchObject({
      campaignId: c.id, campaignName: c.name, running: true,
      added: [], removed: [{ sdrProfileId: s1.id, name: 'Sam Sender', status: 'available' }],
      alreadyOnCampaign: [], notOnCampaign: [],
      senders: [{ sdrProfileId: s2.id, name: 'Sue Sender', status: 'available', paused: false }],
      leads: { assigned: 1, inFlight: 1 }, warnings: { cannotSend: [] },
    });
    const [e0, e1, e2, e3] = await Promise.all(enrollmentIds.map((id) => h.store.get('enrollments', id)));
    expect(e0?.sdrProfileId).toBeNull();
    expect(e1?.sdrProfileId).toBe(s1.id);
    expect(e2?.sdrProfileId).toBe(s1.id);
    expect(e3?.sdrProfileId).toBe(s2.id);
  });

  it('reports senders already on / not on the campaign and ignores them', async () => {
    const h = await makeHarness();
    const { s1, s2, c } = await withLeads(h);
    const s3 = await h.addSender({ name: 'Tia Third' });
    const stranger = await h.addSender({ name: 'Not On It' });
    const res = await h.call('campaigns.updateSenders', { campaignId: c.id, add: [s1.id, s3.id], remove: [stranger.id] });
    expect(res.added).toEqual([{ sdrProfileId: s3.id, name: 'Tia Third', status: 'available' }]);
    expect(res.alreadyOnCampaign).toEqual([s1.id]);
    expect(res.notOnCampaign).toEqual([stranger.id]);
    expect(res.senders.map((s) => s.sdrProfileId)).toEqual([s1.id, s2.id, s3.id]);
    expect(res.leads).toEqual({ assigned: 0, inFlight: 0 });

    // Nothing to do at all: a report, no write.
    const commits = h.db.commits;
    const noop = await h.call('campaigns.updateSenders', { campaignId: c.id, add: [s1.id], remove: [stranger.id] });
    expect(noop).toMatchObject({ added: [], removed: [], alreadyOnCampaign: [s1.id], notOnCampaign: [stranger.id] });
    expect(h.db.commits).toBe(commits);
  });

  it('keeps at least one sender and only adds senders of the workspace', async () => {
    const h = await makeHarness();
    const s1 = await h.addSender();
    const c = await h.addCampaign({ senderIds: [s1.id] });
    const e = await h.expectRefused(h.call('campaigns.updateSenders', { campaignId: c.id, remove: [s1.id] }), 'LAST_SENDER');
    expect(e.details.campaignId).toBe(c.id);
    await h.expectRefused(h.call('campaigns.updateSenders', { campaignId: c.id, remove: [s1.id], dryRun: true }), 'LAST_SENDER');
    // Swapping in one call is fine.
    const s2 = await h.addSender({ name: 'Sue Sender' });
    const swapped = await h.call('campaigns.updateSenders', { campaignId: c.id, add: [s2.id], remove: [s1.id] });
    expect(swapped.senders.map((s) => s.sdrProfileId)).toEqual([s2.id]);

    const theirs = newSender({ id: h.ids.uuid(), workspaceId: h.other.workspaceId, now: h.now() }, { name: 'Foreign Fran', ownerMemberId: h.other.ownerId, channel: 'sandbox' });
    await h.db.forWorkspace(h.other.workspaceId).commit([{ collection: 'senders', id: theirs.id, before: null, after: theirs }]);
    await h.expectRefused(h.call('campaigns.updateSenders', { campaignId: c.id, add: [theirs.id] }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.updateSenders', { campaignId: c.id, add: [s2.id], remove: [s2.id] }), 'INVALID_INPUT');
  });

  it('warns, in words, about steps an added sender cannot perform', async () => {
    const h = await makeHarness();
    const s1 = await h.addSender({ premium: true });
    const c = await h.addCampaign({
      senderIds: [s1.id],
      steps: [newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' }), newStep(h.ids.uuid(), 'INMAIL', { subject: 'Hi', content: 'Hello' })],
    });
    const mailer = await h.addSender({ name: 'Mia Mailer', channel: 'email', capabilities: ['email'] });
    const res = await h.call('campaigns.updateSenders', { campaignId: c.id, add: [mailer.id] });
    expect(res.warnings.cannotSend).toEqual([
      'Mia Mailer cannot perform step 1 (Message): its account cannot send messages.',
      'Mia Mailer cannot perform step 2 (InMail): its account cannot send InMails; InMail needs a Premium account.',
    ]);
    // Readiness then refuses the start until the sender is paused or removed.
    await h.expectRefused(h.call('campaigns.start', { campaignId: c.id }), 'READINESS_FAILED');
    await h.call('campaigns.setSendersPaused', { campaignId: c.id, sdrProfileIds: [mailer.id], paused: true });
    expect((await h.call('campaigns.start', { campaignId: c.id })).running).toBe(true);
  });

  it('pauses and resumes senders on one campaign, reporting the rest', async () => {
    const h = await makeHarness();
    const s1 = await h.addSender();
    const s2 = await h.addSender({ name: 'Sue Sender' });
    const stranger = await h.addSender({ name: 'Not On It' });
    const c = await h.addCampaign({ senderIds: [s1.id, s2.id] });
    await h.call('campaigns.start', { campaignId: c.id });
    await h.call('campaigns.setSendersPaused', { campaignId: c.id, sdrProfileIds: [s2.id], paused: true });
    const res = await expectDryRunMatches(h, (dryRun) =>
      h.call('campaigns.setSendersPaused', { campaignId: c.id, sdrProfileIds: [s1.id, s2.id, stranger.id], paused: true, dryRun }),
    );
    expect(res).toEqual({ dryRun: false, campaignId: c.id, changed: [s1.id], alreadyInState: [s2.id], notOnCampaign: [stranger.id] });
    expect((await h.store.get('campaigns', c.id))?.senders).toEqual([{ sdrProfileId: s1.id, paused: true }, { sdrProfileId: s2.id, paused: true }]);
    const resumed = await h.call('campaigns.setSendersPaused', { campaignId: c.id, sdrProfileIds: [s2.id], paused: false });
    expect(resumed.changed).toEqual([s2.id]);
    expect((await h.store.get('campaigns', c.id))?.running).toBe(true);
  });
});

describe('campaign lead picking', () => {
  it('changes only the passed settings, also while running', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    await h.call('campaigns.start', { campaignId: c.id });
    const res = await expectDryRunMatches(h, (dryRun) =>
      h.call('campaigns.updateSettings', { campaignId: c.id, dryRun, companyRelay: { enabled: true, seniorities: ['vp', 'c_level'] } }),
    );
    expect(res).toMatchObject({ campaignId: c.id, campaignName: c.name, running: true, changed: true });
    expect(res.before.companyRelay).toEqual({ enabled: false, maxPersonsPerCompany: 3, seniorities: [] });
    expect(res.after).toEqual({ preferNewLeads: false, companyRelay: { enabled: true, maxPersonsPerCompany: 3, seniorities: ['vp', 'c_level'] } });
    expect((await h.store.get('campaigns', c.id))?.settings).toEqual(res.after);
    const more = await h.call('campaigns.updateSettings', { campaignId: c.id, preferNewLeads: true, companyRelay: { maxPersonsPerCompany: 5 } });
    expect(more.after).toEqual({ preferNewLeads: true, companyRelay: { enabled: true, maxPersonsPerCompany: 5, seniorities: ['vp', 'c_level'] } });
    await h.expectRefused(h.call('campaigns.updateSettings', { campaignId: c.id, companyRelay: { maxPersonsPerCompany: 0 } }), 'INVALID_INPUT');
  });
});

describe('campaign columns', () => {
  it('renames an unused column, refuses renaming a column a message uses', async () => {
    const h = await makeHarness();
    const c = await h.addCampaign({ steps: [newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi', variants: [{ id: h.ids.uuid(), name: 'B', text: 'At {{Company|your place}}?', subject: '' }] })] });
    const group = await h.store.get('leadGroups', c.leadGroupId);
    const col = (name: string) => {
      const found = group?.columns.find((x) => x.name === name);
      if (!found) throw new Error(`no column ${name}`);
      return found;
    };
    const res = await h.call('campaigns.renameColumn', { campaignId: c.id, variableTypeId: col('Job title').id, name: 'Role' });
    expect(res).toEqual({ campaignId: c.id, leadGroupId: c.leadGroupId, column: { variableTypeId: col('Job title').id, name: 'Role', kind: 'builtIn', builtInType: 'jobTitle' } });
    expect((await h.call('campaigns.getMergeFields', { campaignId: c.id })).mergeFields.map((m) => m.name)).toContain('Role');

    const e = await h.expectRefused(h.call('campaigns.renameColumn', { campaignId: c.id, variableTypeId: col('Company').id, name: 'Organisation' }), 'COLUMN_IN_USE');
    expect(e.details).toMatchObject({ campaignId: c.id, stepId: c.steps[0]?.id, column: 'Company' });
    await h.expectRefused(h.call('campaigns.renameColumn', { campaignId: c.id, variableTypeId: col('Email').id, name: 'Phone' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.renameColumn', { campaignId: c.id, variableTypeId: h.ids.uuid(), name: 'X' }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.renameColumn', { campaignId: c.id, variableTypeId: col('Email').id, name: 'Mail' }, h.foreignOwner), 'NOT_FOUND');
  });
});
