/** Safety defaults: a weekly cap on connection requests and a new sender's ramp-up, both derived
 * from the recorded actions, honoured by the runner and visible in social.getAccountLimits and the
 * wait reasons. */
import { describe, expect, it } from 'vitest';
import { newStep } from '../../shared/model/factories.ts';
import { engineWorld } from './engine-fixtures.ts';

const LIMITS = { messages: 10, inmails: 0, connectionRequests: 10, connectionRequestsWithNote: 10, comments: 0, reactions: 10, profileVisits: 10 };

describe('runner: weekly cap and ramp-up', () => {
  it('a weekly cap of 2 connection requests: the third lead waits a week (weekly_limit), shown in getAccountLimits and getActivity', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ limits: LIMITS, weeklyConnectionLimit: 2 });
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'CONNECTION_REQUEST', { content: '' })] });
    await w.patch('campaigns', c.id, (d) => {
      for (const day of Object.values(d.schedule.days)) Object.assign(day, { enabled: true, start: '00:00', end: '24:00' });
    });
    await w.start(c);
    const es = [];
    for (const n of ['A', 'B', 'C']) es.push(await w.enroll(await w.h.addLead({ firstName: n }), c, { sdrProfileId: sender.id }));
    const first = w.h.now();
    const runner = w.runner();
    const r = await runner.tick();
    expect(r.actions).toBe(2);
    expect(r.deferred.weeklyLimit).toBe(1);
    const waiting = await w.enrollment(es[2]?.id ?? '');
    expect(waiting.waitReason).toBe('weekly_limit');
    expect(waiting.nextActionAt).toBe(new Date(Date.parse(first) + 7 * 86_400_000).toISOString());
    const limits = await w.h.call('social.getAccountLimits', { senderProfileId: sender.id });
    expect(limits.accounts[0]?.weekly.connectionRequests).toEqual({ used: 2, remaining: 0, limit: 2 });
    expect((await w.h.call('campaigns.getActivity', { campaignId: c.id })).queued[0]?.reason).toBe('weekly_limit');

    // A new day does not reset a weekly cap; a week later the oldest requests have aged out.
    w.h.clock.advance(86_400_000);
    expect((await runner.tick()).actions).toBe(0);
    w.h.clock.advance(6 * 86_400_000);
    expect((await runner.tick()).actions).toBe(1);
  });

  it('the cap defaults to 100 and never exceeds 7 times the plan\'s daily maximum', async () => {
    const w = await engineWorld();
    const plain = await w.h.addSender({ limits: LIMITS });
    const greedy = await w.h.addSender({ limits: LIMITS, weeklyConnectionLimit: 5000, planMax: { ...LIMITS, connectionRequests: 20 } });
    const { accounts } = await w.h.call('social.getAccountLimits', {});
    const byId = new Map(accounts.map((a) => [a.senderProfileId, a]));
    expect(byId.get(plain.id)?.weekly.connectionRequests.limit).toBe(100);
    expect(byId.get(greedy.id)?.weekly.connectionRequests.limit).toBe(140);
  });

  it('a new sender ramps up: 20% of its limits on day 1, growing to 100% after 14 days', async () => {
    const w = await engineWorld();
    const created = await w.h.call('sdrProfiles.create', { name: 'Newbie', channel: 'sandbox' });
    const stored = await w.h.store.get('senders', created.id);
    expect(stored?.rampUpStartedAt).toBe(w.h.now());
    await w.patch('senders', created.id, (s) => void (s.limits = LIMITS));
    const day1 = (await w.h.call('social.getAccountLimits', { senderProfileId: created.id })).accounts[0];
    expect(day1?.rampUp).toEqual({ active: true, day: 1, of: 14, percent: 20, endsAt: new Date(Date.parse(w.h.now()) + 14 * 86_400_000).toISOString(), warmedUp: false });
    expect(day1?.sending.messages.limit).toBe(2);
    expect(day1?.weekly.connectionRequests.limit).toBe(20);

    const c = await w.h.addCampaign({ senderIds: [created.id], steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' })] });
    await w.patch('campaigns', c.id, (d) => {
      for (const day of Object.values(d.schedule.days)) Object.assign(day, { enabled: true, start: '00:00', end: '24:00' });
    });
    await w.start(c);
    for (const n of ['A', 'B', 'C']) await w.enroll(await w.h.addLead({ firstName: n }), c, { sdrProfileId: created.id });
    const r = await w.runner().tick();
    expect(r.actions).toBe(2);
    expect(r.deferred.dailyLimit).toBe(1);

    w.h.clock.advance(7 * 86_400_000);
    expect((await w.h.call('social.getAccountLimits', { senderProfileId: created.id })).accounts[0]?.sending.messages.limit).toBe(6);
    w.h.clock.advance(7 * 86_400_000);
    const done = (await w.h.call('social.getAccountLimits', { senderProfileId: created.id })).accounts[0];
    expect(done?.rampUp.active).toBe(false);
    expect(done?.sending.messages.limit).toBe(10);
  });

  it('an idle connector sender is polled with a growing pause, not every tick; events bring it back to every tick', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ name: 'Connector', channel: 'http', capabilities: ['message'] });
    const runner = w.runner();
    const pollsAt: number[] = [];
    for (let t = 0; t <= 300; t += 10) {
      const before = w.scripted.polls;
      await runner.tick();
      if (w.scripted.polls > before) pollsAt.push(t);
      w.h.clock.advance(10_000);
    }
    // 30 s, then 60 s, then 120 s between polls.
    expect(pollsAt).toEqual([0, 30, 90, 210]);
    w.scripted.events.push({ kind: 'connection_accepted', leadId: (await w.h.addLead({ firstName: 'Ev' })).id, at: w.h.now() });
    w.h.clock.advance(200_000);
    const r = await runner.tick();
    expect(r.events.connectionsAccepted).toBe(1);
    const polls = w.scripted.polls;
    w.h.clock.advance(10_000);
    await runner.tick();
    expect(w.scripted.polls).toBe(polls + 1);
    expect(sender.channel).toBe('http');
  });

  it('sdrProfiles.setDailyLimits raises the weekly cap within the plan (owner), and refuses a member raising it, changing nothing', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ limits: LIMITS, planMax: { ...LIMITS, connectionRequests: 20 } });
    const before = w.h.db.snapshot();
    await w.h.expectRefused(w.h.call('sdrProfiles.setDailyLimits', { sdrProfileId: sender.id, limits: {}, weeklyConnectionRequests: 120 }, w.h.member), 'PERMISSION_DENIED');
    expect(w.h.db.snapshot()).toEqual(before);
    const r = await w.h.call('sdrProfiles.setDailyLimits', { sdrProfileId: sender.id, limits: {}, weeklyConnectionRequests: 500 });
    expect(r.changes).toEqual([{ limit: 'weeklyConnectionRequests', before: 100, after: 140 }]);
    expect(r.cappedAtPlan).toEqual([{ limit: 'weeklyConnectionRequests', requested: 500, planMax: 140 }]);
    expect((await w.h.store.get('senders', sender.id))?.weeklyConnectionLimit).toBe(140);
    const { accounts } = await w.h.call('social.getAccountLimits', { senderProfileId: sender.id });
    expect(accounts[0]?.weekly.connectionRequests.limit).toBe(140);
  });
});
