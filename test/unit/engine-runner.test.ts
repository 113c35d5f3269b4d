import { describe, expect, it } from 'vitest';
import { ChannelFailure } from '../../shared/engine/channel.ts';
import { newStep } from '../../shared/model/factories.ts';
import { engineWorld } from './engine-fixtures.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('runner: executing steps', () => {
  it('sends a message step with merge fields rendered and records message, usage, progress and timeline', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Sam Sender' });
    const campaign = await w.h.addCampaign({
      senderIds: [sender.id],
      steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}} at {{Company|your company}}' }), newStep(w.h.ids.uuid(), 'PROFILE_VISIT')],
    });
    await w.start(campaign);
    const ada = await w.h.addLead({ firstName: 'Ada', company: '' });
    const e = await w.enroll(ada, campaign, { sdrProfileId: sender.id });

    const report = await w.runner().tick();
    expect(report.actions).toBe(1); // one network action per enrollment per tick
    expect((await w.runner().tick()).actions).toBe(1);
    const out = await w.messages({ leadId: ada.id, direction: 'out' });
    expect(out.map((m) => [m.kind, m.text, m.status, m.campaignId, m.stepId])).toEqual([
      ['message', 'Hi Ada at your company', 'sent', campaign.id, campaign.steps[0]?.id],
      ['profile_visit', '', 'sent', campaign.id, campaign.steps[1]?.id],
    ]);
    const after = await w.enrollment(e.id);
    expect(after.status).toBe('COMPLETED');
    expect(after.doneSteps.map((d) => d.outcome)).toEqual(['sent', 'sent']);
    const usage = await w.h.store.get('usage', `${sender.id}:2026-11-16`);
    expect(usage?.counts.messages).toBe(1);
    expect(usage?.counts.profileVisits).toBe(1);
    expect((await w.events('message_sent')).length).toBe(2);
    expect((await w.events('sequence_completed')).length).toBe(1);
    const lead = await w.h.store.get('leads', ada.id);
    const stage = lead?.pipelineStageId ? await w.h.store.get('stages', lead.pipelineStageId) : null;
    expect(stage?.category).toBe('CONTACTED');
    expect(lead?.lastActivityAt).toBe(w.h.now());

    // Never twice: another tick at the same moment does nothing.
    const again = await w.runner().tick();
    expect(again.actions).toBe(0);
    expect((await w.messages({ direction: 'out' })).length).toBe(2);
  });

  it('waits outside the sending window and moves nextActionAt to the next opening', async () => {
    const w = await engineWorld();
    w.h.clock.set('2026-11-14T12:00:00.000Z'); // a Saturday
    const sender = await w.h.addSender();
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.start(campaign);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Bo' }), campaign, { sdrProfileId: sender.id });

    const r = await w.runner().tick();
    expect(r.actions).toBe(0);
    expect(r.deferred.outsideWindow).toBe(1);
    const deferred = await w.enrollment(e.id);
    expect(deferred.nextActionAt).toBe('2026-11-16T09:00:00.000Z');
    expect(deferred.waitReason).toBe('outside_window');

    w.h.clock.set('2026-11-16T09:00:00.000Z');
    expect((await w.runner().tick()).actions).toBe(1);
    expect((await w.enrollment(e.id)).waitReason).toBeNull();
  });

  it('follows the campaign time zone across a DST change', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.patch('campaigns', campaign.id, (c) => {
      c.schedule.timeZone = 'America/New_York';
      c.running = true;
    });
    // Friday 2026-10-30 18:00 New York (EDT, UTC-4): closed; next opening Monday 09:00 EST (UTC-5).
    w.h.clock.set('2026-10-30T22:00:00.000Z');
    const e = await w.enroll(await w.h.addLead({ firstName: 'Cy' }), campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    expect((await w.enrollment(e.id)).nextActionAt).toBe('2026-11-02T14:00:00.000Z');
    w.h.clock.set('2026-11-02T13:30:00.000Z'); // 08:30 local after the change: still closed
    expect((await w.runner().tick()).actions).toBe(0);
    w.h.clock.set('2026-11-02T14:00:00.000Z');
    expect((await w.runner().tick()).actions).toBe(1);
  });

  it('never exceeds a daily limit and continues the next day, also after a restart', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ limits: { messages: 2, inmails: 1, connectionRequests: 1, connectionRequestsWithNote: 1, comments: 1, reactions: 1, profileVisits: 1 }, planMax: { messages: 2, inmails: 1, connectionRequests: 1, connectionRequestsWithNote: 1, comments: 1, reactions: 1, profileVisits: 1 } });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.start(campaign);
    const leads = [];
    for (let i = 0; i < 3; i++) leads.push(await w.enroll(await w.h.addLead({ firstName: `L${i}` }), campaign, { sdrProfileId: sender.id }));

    const first = await w.runner().tick();
    expect(first.actions).toBe(2);
    expect(first.deferred.dailyLimit).toBe(1);
    // A fresh runner (a restart) reads the day's count from the store, even for a lead it finds due.
    await w.patch('enrollments', (await Promise.all(leads.map((e) => w.enrollment(e.id)))).find((e) => e.status === 'IN_PROGRESS')?.id ?? '', (e) => void (e.nextActionAt = '2026-11-16T10:00:00.000Z'));
    const third = await w.runner().tick();
    expect(third.actions).toBe(0);
    expect(third.deferred.dailyLimit).toBe(1);
    const waiting = (await Promise.all(leads.map((e) => w.enrollment(e.id)))).find((e) => e.status === 'IN_PROGRESS');
    expect(waiting?.waitReason).toBe('daily_limit');
    expect(waiting?.nextActionAt).toBe('2026-11-17T09:00:00.000Z');
    expect((await w.h.store.get('usage', `${sender.id}:2026-11-16`))?.counts.messages).toBe(2);

    w.h.clock.set('2026-11-17T09:00:00.000Z');
    expect((await w.runner().tick()).actions).toBe(1);
    expect((await w.h.store.get('usage', `${sender.id}:2026-11-17`))?.counts.messages).toBe(1);
  });

  it('counts the day in the sender\'s time zone', async () => {
    const w = await engineWorld();
    // 23:30 UTC Monday is already Tuesday in Tokyo; the window is on UTC but the count is Tokyo's.
    const sender = await w.h.addSender({ timeZone: 'Asia/Tokyo' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.patch('campaigns', campaign.id, (c) => {
      c.running = true;
      c.schedule.days.monday = { enabled: true, start: '00:00', end: '24:00' };
    });
    w.h.clock.set('2026-11-16T23:30:00.000Z');
    await w.enroll(await w.h.addLead({ firstName: 'Ken' }), campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    expect(await w.h.store.get('usage', `${sender.id}:2026-11-17`)).not.toBeNull();
    expect(await w.h.store.get('usage', `${sender.id}:2026-11-16`)).toBeNull();
  });

  it('stops sequences of leads marked Do Not Contact, blocklisted or lost', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.start(campaign);
    const { docs: stages } = await w.h.store.query('stages');
    const lost = stages.find((s) => s.category === 'LOST');
    const a = await w.enroll(await w.h.addLead({ firstName: 'A', doNotContact: true }), campaign, { sdrProfileId: sender.id });
    const b = await w.enroll(await w.h.addLead({ firstName: 'B', blocklisted: true }), campaign, { sdrProfileId: sender.id });
    const c = await w.enroll(await w.h.addLead({ firstName: 'C', pipelineStageId: lost?.id ?? null, closeReason: 'NOT_ICP' }), campaign, { sdrProfileId: sender.id });
    const r = await w.runner().tick();
    expect(r.actions).toBe(0);
    expect(r.stopped).toBe(3);
    expect((await w.enrollment(a.id)).stoppedReason).toBe('do_not_contact');
    expect((await w.enrollment(b.id)).stoppedReason).toBe('blocklisted');
    expect((await w.enrollment(c.id)).stoppedReason).toBe('lead_lost');
    expect(await w.messages({ direction: 'out' })).toEqual([]);
  });

  it('sends nothing while the campaign, the sender on the campaign, or the sender everywhere is paused', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    const e = await w.enroll(await w.h.addLead({ firstName: 'P' }), campaign, { sdrProfileId: sender.id });
    expect((await w.runner().tick()).actions).toBe(0); // campaign not running
    await w.start(campaign);
    await w.patch('senders', sender.id, (s) => void (s.outreachPaused = true));
    expect((await w.runner().tick()).actions).toBe(0);
    await w.patch('senders', sender.id, (s) => void (s.outreachPaused = false));
    await w.patch('campaigns', campaign.id, (c) => void ((c.senders[0] as { paused: boolean }).paused = true));
    const r = await w.runner().tick();
    expect(r.actions).toBe(0);
    // Readiness fails when every sender is paused; the campaign is reported, the lead stays assigned.
    expect(r.skippedCampaigns.map((s) => s.campaignId)).toEqual([campaign.id]);
    expect((await w.enrollment(e.id)).sdrProfileId).toBe(sender.id);
    await w.patch('campaigns', campaign.id, (c) => void ((c.senders[0] as { paused: boolean }).paused = false));
    expect((await w.runner().tick()).actions).toBe(1);
  });

  it('has unassigned leads picked up by the least loaded unpaused sender', async () => {
    const w = await engineWorld();
    const s1 = await w.h.addSender({ name: 'One' });
    const s2 = await w.h.addSender({ name: 'Two' });
    const s3 = await w.h.addSender({ name: 'Three' });
    const campaign = await w.h.addCampaign({ senderIds: [s1.id, s2.id, s3.id] });
    await w.patch('campaigns', campaign.id, (c) => {
      c.running = true;
      (c.senders[2] as { paused: boolean }).paused = true;
    });
    // s1 already holds two running leads.
    for (let i = 0; i < 2; i++) await w.enroll(await w.h.addLead({ firstName: `Busy${i}` }), campaign, { sdrProfileId: s1.id, nextActionAt: '2026-12-01T00:00:00.000Z' });
    const fresh = [];
    for (let i = 0; i < 4; i++) fresh.push(await w.enroll(await w.h.addLead({ firstName: `New${i}` }), campaign));
    await w.runner().tick();
    const owners = (await Promise.all(fresh.map((e) => w.enrollment(e.id)))).map((e) => e.sdrProfileId);
    expect(owners.filter((o) => o === s2.id).length).toBe(3);
    expect(owners.filter((o) => o === s1.id).length).toBe(1);
    expect(owners).not.toContain(s3.id);
  });

  it('orders new leads newest first when the campaign prefers new leads', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ limits: { messages: 1, inmails: 1, connectionRequests: 1, connectionRequestsWithNote: 1, comments: 1, reactions: 1, profileVisits: 1 } });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    const old = await w.h.addLead({ firstName: 'Old' });
    w.h.clock.advance(MINUTE);
    const young = await w.h.addLead({ firstName: 'Young' });
    await w.enroll(old, campaign, { sdrProfileId: sender.id });
    await w.enroll(young, campaign, { sdrProfileId: sender.id });
    await w.patch('campaigns', campaign.id, (c) => {
      c.running = true;
      c.settings.preferNewLeads = true;
    });
    await w.runner().tick();
    expect((await w.messages({ direction: 'out' })).map((m) => m.leadId)).toEqual([young.id]);
  });

  it('waits, then branches on a condition (connected yes/no, has email)', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    // (Readiness currently asks every connection request for a note; see the report.)
    const cr = newStep(w.h.ids.uuid(), 'CONNECTION_REQUEST', { content: 'Hi {{First name}}, let us connect' });
    const wait = newStep(w.h.ids.uuid(), 'WAIT', { waitTimeSeconds: 3600 });
    const cond = newStep(w.h.ids.uuid(), 'CONDITION', { sendCondition: 'CONNECTED' });
    const yes = newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { parentStepId: cond.id, branch: 'yes', content: 'Thanks for connecting' });
    const no = newStep(w.h.ids.uuid(), 'PROFILE_VISIT', { parentStepId: cond.id, branch: 'no' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [cr, wait, cond, yes, no] });
    await w.start(campaign);
    const a = await w.enroll(await w.h.addLead({ firstName: 'Acc' }), campaign, { sdrProfileId: sender.id });
    const b = await w.enroll(await w.h.addLead({ firstName: 'Ign' }), campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    const afterCr = await w.enrollment(a.id);
    expect(afterCr.currentStepId).toBe(cond.id);
    expect(afterCr.nextActionAt).toBe('2026-11-16T11:00:00.000Z');
    // Lead A accepts (as the network would report it).
    await w.h.seed([]);
    const { eventActivity } = await import('../../shared/engine/timeline.ts');
    const acc = eventActivity(w.h.ids, { id: a.leadId, workspaceId: w.h.main.workspaceId }, w.h.owner.memberId, w.h.now(), 'connection_accepted', 'accepted', { sdrProfileId: sender.id, campaignId: campaign.id });
    await w.h.seed([{ collection: 'activities', id: acc.id, before: null, after: acc }]);
    w.h.clock.advance(HOUR);
    await w.runner().tick();
    const ea = await w.enrollment(a.id);
    const eb = await w.enrollment(b.id);
    expect(ea.doneSteps.map((d) => d.outcome)).toEqual(['sent', 'waited', 'yes', 'sent']);
    expect(eb.doneSteps.map((d) => d.outcome)).toEqual(['sent', 'waited', 'no', 'sent']);
    const kinds = async (leadId: string) => (await w.messages({ leadId, direction: 'out' })).map((m) => m.kind);
    expect(await kinds(a.leadId)).toEqual(['connection_request', 'message']);
    expect(await kinds(b.leadId)).toEqual(['connection_request', 'profile_visit']);
  });

  it('skips an email step for a lead without an email, and stops instead when the step says so', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Mail', channel: 'email' });
    const email = newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'Hello', content: 'Hi' });
    const email2 = newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'Again', content: 'Hi again', stopIfSkipped: true });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [email, email2] });
    await w.start(campaign);
    const e = await w.enroll(await w.h.addLead({ firstName: 'NoMail' }), campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    const after = await w.enrollment(e.id);
    expect(after.doneSteps.map((d) => d.outcome)).toEqual(['skipped: the lead has no email address', expect.stringMatching(/^stopped: skipped/)]);
    expect(after.status).toBe('STOPPED');
    expect(w.scripted.sent).toEqual([]);
  });

  it('threads same_thread emails: Re: subject, In-Reply-To and References of the earlier email', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Mail', channel: 'email' });
    const first = newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'Quick question, {{First name}}', content: 'Hi {{First name}}' });
    const second = newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'ignored for threads', content: 'Following up', emailThreading: 'same_thread' });
    const third = newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'A new topic', content: 'Other', emailThreading: 'new_thread' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [first, second, third] });
    await w.start(campaign);
    await w.enroll(await w.h.addLead({ firstName: 'Eve', email: 'eve@example.test' }), campaign, { sdrProfileId: sender.id });
    for (let i = 0; i < 3; i++) await w.runner().tick();
    const [a, b, c] = w.scripted.sent.map((s) => s.action);
    expect(a).toMatchObject({ kind: 'email', subject: 'Quick question, Eve', text: 'Hi Eve', thread: null });
    const firstId = `<${w.scripted.sent[0]?.ref}@test>`;
    expect(b).toMatchObject({ kind: 'email', subject: 'Re: Quick question, Eve', thread: { chatId: firstId, inReplyTo: firstId, references: [firstId] } });
    expect(c).toMatchObject({ kind: 'email', subject: 'A new topic', thread: null });
    const usage = await w.h.store.get('usage', `${sender.id}:2026-11-16`);
    expect(usage?.counts.emails).toBe(3);
    expect(usage?.counts.messages).toBe(0);
  });

  it('counts a connection request with a note against both request limits, and stops when the filled-in note is too long', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ connectionNoteMaxLength: 20 });
    const step = newStep(w.h.ids.uuid(), 'CONNECTION_REQUEST', { content: 'Hi {{First name}}!' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [step] });
    await w.start(campaign);
    await w.enroll(await w.h.addLead({ firstName: 'Al' }), campaign, { sdrProfileId: sender.id });
    const long = await w.enroll(await w.h.addLead({ firstName: 'Bartholomew-Maximilian' }), campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    const usage = await w.h.store.get('usage', `${sender.id}:2026-11-16`);
    expect(usage?.counts.connectionRequests).toBe(1);
    expect(usage?.counts.connectionRequestsWithNote).toBe(1);
    const stopped = await w.enrollment(long.id);
    expect(stopped.status).toBe('STOPPED');
    expect(stopped.stoppedReason).toMatch(/connection note is 26 characters .* limit is 20/);
  });

  it('assigns variants round robin, random or default and remembers them per enrollment', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const vA = { id: w.h.ids.uuid(), name: 'A', text: 'Variant A for {{First name}}', subject: '' };
    const vB = { id: w.h.ids.uuid(), name: 'B', text: 'Variant B for {{First name}}', subject: '' };
    const rr = newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'base', variants: [vA, vB], variantAssignment: { mode: 'round_robin', defaultVariantId: null } });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [rr] });
    await w.start(campaign);
    for (let i = 0; i < 4; i++) await w.enroll(await w.h.addLead({ firstName: `R${i}` }), campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    const texts = (await w.messages({ direction: 'out' })).map((m) => m.text.split(' for ')[0]);
    expect(texts.sort()).toEqual(['Variant A', 'Variant A', 'Variant B', 'Variant B']);
    const { docs } = await w.h.store.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: campaign.id } });
    for (const e of docs) expect([vA.id, vB.id]).toContain(e.variants[rr.id]);

    const w2 = await engineWorld();
    const s2 = await w2.h.addSender();
    const def = newStep(w2.h.ids.uuid(), 'SEND_MESSAGE', { content: 'base text', variants: [{ ...vA, id: w2.h.ids.uuid() }, { ...vB, id: 'b0000000-0000-4000-8000-000000000001' }], variantAssignment: { mode: 'default', defaultVariantId: 'b0000000-0000-4000-8000-000000000001' } });
    const c2 = await w2.h.addCampaign({ senderIds: [s2.id], steps: [def] });
    await w2.start(c2);
    await w2.enroll(await w2.h.addLead({ firstName: 'D' }), c2, { sdrProfileId: s2.id });
    await w2.runner().tick();
    expect((await w2.messages({ direction: 'out' })).map((m) => m.text)).toEqual(['Variant B for D']);
  });
});

describe('runner: network events', () => {
  it('a reply stops the sequence, is logged in the conversation, and moves the lead to Engaged', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Http', channel: 'http' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' }), newStep(w.h.ids.uuid(), 'WAIT', { waitTimeSeconds: 86400 }), newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Follow-up' })] });
    await w.start(campaign);
    const lead = await w.h.addLead({ firstName: 'Rae' });
    const e = await w.enroll(lead, campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    const chatId = (await w.messages({ direction: 'out' }))[0]?.chatId ?? '';
    w.h.clock.advance(HOUR);
    w.scripted.events.push({ kind: 'reply', leadId: lead.id, chatId, text: 'Sure, let us talk', at: w.h.now(), externalId: 'r1' });
    const r = await w.runner().tick();
    expect(r.events.replies).toBe(1);
    const after = await w.enrollment(e.id);
    expect(after.status).toBe('REPLIED');
    expect(after.inConversationAt).toBe(w.h.now());
    const inbound = await w.messages({ direction: 'in' });
    expect(inbound.map((m) => [m.text, m.status, m.campaignId, m.chatId])).toEqual([['Sure, let us talk', 'received', campaign.id, chatId]]);
    const l = await w.h.store.get('leads', lead.id);
    expect((await w.h.store.get('stages', l?.pipelineStageId ?? ''))?.category).toBe('ENGAGED');
    expect((await w.events('reply_received'))[0]?.metadata).toMatchObject({ campaignId: campaign.id, sdrProfileId: sender.id });
    // The follow-up never goes out, even when its time comes; the same event is not recorded twice.
    w.h.clock.advance(2 * 86400_000);
    await w.runner().tick();
    expect((await w.messages({ direction: 'out' })).map((m) => m.text)).toEqual(['Hi']);
    expect((await w.messages({ direction: 'in' })).length).toBe(1);
  });

  it('a booked meeting sets meetingBookedAt and Meeting booked; an accepted connection and an opened email are timeline events', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Http', channel: 'http' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'CONNECTION_REQUEST', { content: 'Hello' }), newStep(w.h.ids.uuid(), 'WAIT', { waitTimeSeconds: 86400 })] });
    await w.start(campaign);
    const lead = await w.h.addLead({ firstName: 'Mo' });
    const e = await w.enroll(lead, campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    expect(w.scripted.sent.map((s) => s.action.kind)).toEqual(['connection_request']);
    w.h.clock.advance(HOUR);
    w.scripted.events.push({ kind: 'connection_accepted', leadId: lead.id, at: w.h.now() });
    w.scripted.events.push({ kind: 'email_opened', leadId: lead.id, externalId: 'unknown', at: w.h.now() });
    w.scripted.events.push({ kind: 'meeting_booked', leadId: lead.id, at: w.h.now() });
    const r = await w.runner().tick();
    expect(r.events).toEqual({ replies: 0, connectionsAccepted: 1, meetingsBooked: 1, emailsOpened: 1 });
    expect((await w.events('connection_accepted'))[0]?.metadata.campaignId).toBe(campaign.id);
    const l = await w.h.store.get('leads', lead.id);
    expect(l?.meetingBookedAt).toBe(w.h.now());
    expect((await w.h.store.get('stages', l?.pipelineStageId ?? ''))?.category).toBe('MEETING_BOOKED');
    const after = await w.enrollment(e.id);
    expect(after.status).toBe('STOPPED');
    expect(after.inConversationAt).toBe(w.h.now());
  });
});

describe('runner: channel failures and capabilities', () => {
  it('a 429 puts the sender in limited with a visible reason and backoff; it resumes after', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Http', channel: 'http' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.start(campaign);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Lim' }), campaign, { sdrProfileId: sender.id });
    w.scripted.failNext = new ChannelFailure('limited', 'HTTP 429 Too Many Requests', 1800);
    const r = await w.runner().tick();
    expect(r.senders.limited).toEqual([sender.id]);
    const s = await w.h.store.get('senders', sender.id);
    expect(s?.status).toBe('limited');
    expect(s?.backoffUntil).toBe('2026-11-16T10:30:00.000Z');
    expect(s?.statusReason).toMatch(/slow down.*429/);
    expect((await w.enrollment(e.id)).nextActionAt).toBe('2026-11-16T10:30:00.000Z');
    w.h.clock.advance(20 * MINUTE);
    expect((await w.runner().tick()).actions).toBe(0);
    w.h.clock.advance(10 * MINUTE);
    const back = await w.runner().tick();
    expect(back.senders.resumed).toEqual([sender.id]);
    expect(back.actions).toBe(1);
    expect((await w.h.store.get('senders', sender.id))?.status).toBe('available');
  });

  it('a refused action is recorded as failed and stops the sequence with the reason; credentials refused disconnect the sender', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Http', channel: 'http' });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.start(campaign);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Gone' }), campaign, { sdrProfileId: sender.id });
    w.scripted.failNext = new ChannelFailure('rejected', 'recipient profile not found');
    await w.runner().tick();
    expect((await w.messages({ direction: 'out' })).map((m) => [m.status, m.error])).toEqual([['failed', 'recipient profile not found']]);
    expect((await w.enrollment(e.id)).stoppedReason).toMatch(/failed: recipient profile not found/);

    await w.enroll(await w.h.addLead({ firstName: 'Next' }), campaign, { sdrProfileId: sender.id });
    w.scripted.failNext = new ChannelFailure('unauthorized', 'token revoked');
    const r = await w.runner().tick();
    expect(r.senders.disconnected).toEqual([sender.id]);
    expect((await w.h.store.get('senders', sender.id))?.status).toBe('disconnected');
  });

  it('a voice-note step fails clearly when the sender cannot send voice, even if readiness was judged earlier', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ capabilities: ['message'] });
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hello by voice', voiceNote: { mode: 'ai_voice', recordingId: null } })] });
    await w.start(campaign);
    const e = await w.enroll(await w.h.addLead({ firstName: 'V' }), campaign, { sdrProfileId: sender.id });
    // Readiness refuses the campaign outright...
    const r = await w.runner().tick();
    expect(r.skippedCampaigns[0]?.problems.join(' ')).toMatch(/voice notes/);
    // ...and the execution check holds on its own (a readiness judged before the sender changed).
    await w.runner({ readiness: () => ({ ready: true, problems: [] }) }).tick();
    const after = await w.enrollment(e.id);
    expect(after.status).toBe('STOPPED');
    expect(after.stoppedReason).toMatch(/cannot perform message: .*voice notes/);
    expect(await w.messages({ direction: 'out' })).toEqual([]);
  });

  it('a network that cannot deliver voice notes fails the step with its reason', async () => {
    const w = await engineWorld({ voiceNotes: false });
    const sender = await w.h.addSender();
    const campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi', voiceNote: { mode: 'ai_voice', recordingId: null } })] });
    await w.start(campaign);
    const e = await w.enroll(await w.h.addLead({ firstName: 'V' }), campaign, { sdrProfileId: sender.id });
    await w.runner().tick();
    expect((await w.enrollment(e.id)).stoppedReason).toMatch(/does not deliver voice notes/);
    expect((await w.messages({ direction: 'out' }))[0]).toMatchObject({ kind: 'voice_note', status: 'failed' });
  });
});

describe('runner: direct messages, company relay, leases', () => {
  it('delivers queued direct messages through the conversation sender, counting against the messages limit', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ limits: { messages: 1, inmails: 1, connectionRequests: 1, connectionRequestsWithNote: 1, comments: 1, reactions: 1, profileVisits: 1 } });
    const lead = await w.h.addLead({ firstName: 'Dee' });
    const dnc = await w.h.addLead({ firstName: 'Nope', doNotContact: true });
    const { newMessage } = await import('../../shared/model/factories.ts');
    const q = (leadId: string, text: string) => newMessage(w.h.stamp(), { leadId, sdrProfileId: sender.id, chatId: w.h.ids.uuid(), direction: 'out', kind: 'message', text, status: 'queued' });
    const m1 = q(lead.id, 'First');
    const m2 = q(lead.id, 'Second');
    const m3 = q(dnc.id, 'Blocked');
    await w.h.seed([m1, m2, m3].map((m) => ({ collection: 'messages' as const, id: m.id, before: null, after: m })));
    const r = await w.runner().tick();
    expect(r.directMessages).toBe(1);
    const got = async (id: string) => (await w.h.store.get('messages', id))?.status;
    expect([await got(m1.id), await got(m2.id), await got(m3.id)]).toEqual(['sent', 'queued', 'failed']);
    w.h.clock.set('2026-11-17T08:00:00.000Z');
    await w.runner().tick();
    expect(await got(m2.id)).toBe('sent');
  });

  it('company relay enrolls the next colleague (matching seniority, never contacted) when someone finishes without answering, up to the maximum', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.patch('campaigns', campaign.id, (c) => {
      c.running = true;
      c.settings.companyRelay = { enabled: true, maxPersonsPerCompany: 2, seniorities: ['director', 'vp'] };
    });
    const first = await w.h.addLead({ firstName: 'First', company: 'Initech', seniority: 'vp' });
    const junior = await w.h.addLead({ firstName: 'Junior', company: 'Initech', seniority: 'junior', rankingScore: 99 });
    const director = await w.h.addLead({ firstName: 'Dir', company: ' initech ', seniority: 'Director', rankingScore: 5 });
    const vp2 = await w.h.addLead({ firstName: 'Vp2', company: 'Initech', seniority: 'vp', rankingScore: 1 });
    const other = await w.h.addLead({ firstName: 'Other', company: 'Globex', seniority: 'vp' });
    const e = await w.enroll(first, campaign, { sdrProfileId: sender.id });
    const r = await w.runner().tick();
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
    expect(r.relayed).toBe(1);
    const { docs } = await w.h.store.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: campaign.id } });
    const leadIds = docs.map((d) => d.leadId);
    expect(leadIds).toContain(director.id);
    expect(leadIds).not.toContain(junior.id);
    // The colleague runs and finishes too, but the company already has 2 people in the campaign.
    await w.runner().tick();
    const after = await w.h.store.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: campaign.id } });
    expect(after.docs.map((d) => d.leadId)).not.toContain(vp2.id);
    // Initech has its 2 people; the campaign's other group lead (Globex) was started from the group.
    expect(after.docs.map((d) => d.leadId).sort()).toEqual([first.id, director.id, other.id].sort());
    const enrolled = (await w.events('enrolled')).map((a) => [a.leadId, a.content]);
    expect(enrolled).toContainEqual([director.id, expect.stringMatching(/company relay/)]);
    expect(enrolled).toContainEqual([other.id, expect.stringMatching(/from its lead group/)]);
  });

  it('never lets two runners work one sender: the lease holder acts, the other waits until the lease lapses or is released', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const campaign = await w.h.addCampaign({ senderIds: [sender.id] });
    await w.start(campaign);
    for (let i = 0; i < 3; i++) await w.enroll(await w.h.addLead({ firstName: `Q${i}` }), campaign, { sdrProfileId: sender.id });
    const desktop = w.runner({ runnerId: 'desktop-1', leaseMs: 10 * MINUTE, spacing: { minSeconds: 3600, jitterSeconds: 0 } });
    const server = w.runner({ runnerId: 'server-1', leaseMs: 10 * MINUTE });
    const r1 = await desktop.tick();
    expect(r1.actions).toBe(1);
    const stored = await w.h.store.get('senders', sender.id);
    expect(stored?.runnerId).toBe('desktop-1');
    const r2 = await server.tick();
    expect(r2.senders.heldElsewhere).toEqual([sender.id]);
    expect(r2.actions).toBe(0);
    await desktop.release();
    expect((await w.h.store.get('senders', sender.id))?.runnerId).toBeNull();
    const r3 = await server.tick();
    expect(r3.actions).toBe(2);
    // The desktop comes back while the server's lease is fresh: it waits.
    expect((await desktop.tick()).senders.heldElsewhere).toEqual([sender.id]);
    w.h.clock.advance(11 * MINUTE);
    expect((await desktop.tick()).senders.held).toEqual([sender.id]);
  });

  it('refuses overlapping ticks of one runner', async () => {
    const w = await engineWorld();
    const r = w.runner();
    const a = r.tick();
    await expect(r.tick()).rejects.toThrow(/already running/);
    await a;
  });
});
