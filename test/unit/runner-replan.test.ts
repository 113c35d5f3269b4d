/** Re-planning at once: a lead the runner parked (window closed, limit used up, sender backing off)
 * acts within one tick of the change that lets it go, whichever gate changed; the wait reason shown
 * is the current one. And a lapsed subscription pauses running campaigns with the reason shown. */
import { describe, expect, it } from 'vitest';
import { newStep } from '../../shared/model/factories.ts';
import type { Campaign, Sender } from '../../shared/model/index.ts';
import { engineWorld } from './engine-fixtures.ts';

const MONDAY_7AM = '2026-11-16T07:00:00.000Z';
const oneMessage = (w: Awaited<ReturnType<typeof engineWorld>>) => [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' })];

async function activity(w: Awaited<ReturnType<typeof engineWorld>>, campaignId: string) {
  return w.h.call('campaigns.getActivity', { campaignId });
}

describe('runner: a parked lead acts within one tick of the change that frees it', () => {
  it('schedule widened (campaigns.updateSchedule) on a running campaign', async () => {
    const w = await engineWorld();
    w.h.clock.set(MONDAY_7AM);
    const sender = await w.h.addSender();
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: oneMessage(w) });
    await w.start(c);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Ada' }), c, { sdrProfileId: sender.id });
    const runner = w.runner();
    expect((await runner.tick()).deferred.outsideWindow).toBe(1);
    expect((await w.enrollment(e.id)).nextActionAt).toBe('2026-11-16T09:00:00.000Z');
    expect((await activity(w, c.id)).queued[0]?.reason).toBe('outside_window');

    w.h.clock.advance(60_000);
    await w.h.call('campaigns.updateSchedule', { campaignId: c.id, days: { monday: { enabled: true, start: '00:00', end: '23:59' } } });
    const r = await runner.tick();
    expect(r.actions).toBe(1);
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('daily limit raised (sdrProfiles.setDailyLimits): the waiting leads go now, not tomorrow', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender({ limits: { messages: 1, inmails: 0, connectionRequests: 10, connectionRequestsWithNote: 5, comments: 0, reactions: 10, profileVisits: 10 } });
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: oneMessage(w) });
    await w.start(c);
    const runner = w.runner();
    const es = [];
    for (const name of ['A', 'B', 'C']) es.push(await w.enroll(await w.h.addLead({ firstName: name }), c, { sdrProfileId: sender.id }));
    const r1 = await runner.tick();
    expect(r1.actions).toBe(1);
    expect(r1.deferred.dailyLimit).toBe(2);
    const byReason = (await activity(w, c.id)).waiting.byReason;
    expect(byReason).toEqual({ daily_limit: 2 });

    w.h.clock.advance(60_000);
    await w.h.call('sdrProfiles.setDailyLimits', { sdrProfileId: sender.id, limits: { messages: 3 } });
    const r2 = await runner.tick();
    expect(r2.replanned).toBe(2);
    expect(r2.actions).toBe(2);
    for (const e of es) expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('sender resumed after a backoff ended early (status available again)', async () => {
    const w = await engineWorld();
    const until = new Date(Date.parse(w.h.now()) + 2 * 3600_000).toISOString();
    const sender = await w.h.addSender({ status: 'limited', backoffUntil: until, statusReason: 'The network asked to slow down.' });
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: oneMessage(w) });
    await w.start(c);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Bo' }), c, { sdrProfileId: sender.id });
    const runner = w.runner();
    expect((await runner.tick()).deferred.senderLimited).toBe(1);
    expect((await w.enrollment(e.id)).nextActionAt).toBe(until);

    w.h.clock.advance(60_000);
    await w.patch('senders', sender.id, (s) => Object.assign(s, { status: 'available', backoffUntil: null, statusReason: null }));
    expect((await runner.tick()).actions).toBe(1);
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('sender un-paused on the campaign (campaigns.setSendersPaused) picks up the lead the other sender had to leave for tomorrow', async () => {
    const w = await engineWorld();
    const full = await w.h.addSender({ name: 'Full', limits: { messages: 0, inmails: 0, connectionRequests: 10, connectionRequestsWithNote: 5, comments: 0, reactions: 10, profileVisits: 10 } });
    const spare = await w.h.addSender({ name: 'Spare' });
    const c0 = await w.h.addCampaign({ senderIds: [full.id, spare.id], steps: oneMessage(w) });
    await w.patch('campaigns', c0.id, (d) => void (d.senders = [{ sdrProfileId: full.id, paused: false }, { sdrProfileId: spare.id, paused: true }]));
    await w.start(c0);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Cy' }), c0);
    const runner = w.runner();
    expect((await runner.tick()).deferred.dailyLimit).toBe(1);
    expect((await w.enrollment(e.id)).waitReason).toBe('daily_limit');

    w.h.clock.advance(60_000);
    await w.h.call('campaigns.setSendersPaused', { campaignId: c0.id, sdrProfileIds: [spare.id], paused: false });
    const r = await runner.tick();
    expect(r.actions).toBe(1);
    const after = await w.enrollment(e.id);
    expect(after.sdrProfileId).toBe(spare.id);
    expect(after.status).toBe('COMPLETED');
  });

  it('sender added to the campaign (campaigns.updateSenders)', async () => {
    const w = await engineWorld();
    const full = await w.h.addSender({ name: 'Full', limits: { messages: 0, inmails: 0, connectionRequests: 10, connectionRequestsWithNote: 5, comments: 0, reactions: 10, profileVisits: 10 } });
    const fresh = await w.h.addSender({ name: 'Fresh' });
    const c = await w.h.addCampaign({ senderIds: [full.id], steps: oneMessage(w) });
    await w.start(c);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Di' }), c);
    const runner = w.runner();
    expect((await runner.tick()).deferred.dailyLimit).toBe(1);

    w.h.clock.advance(60_000);
    await w.h.call('campaigns.updateSenders', { campaignId: c.id, add: [fresh.id] });
    expect((await runner.tick()).actions).toBe(1);
    expect((await w.enrollment(e.id)).sdrProfileId).toBe(fresh.id);
  });

  it('campaign started (campaigns.start) after its schedule was widened while it was paused', async () => {
    const w = await engineWorld();
    w.h.clock.set(MONDAY_7AM);
    const sender = await w.h.addSender();
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: oneMessage(w) });
    await w.start(c);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Ed' }), c, { sdrProfileId: sender.id });
    const runner = w.runner();
    expect((await runner.tick()).deferred.outsideWindow).toBe(1);
    await w.h.call('campaigns.pause', { campaignId: c.id });
    await w.h.call('campaigns.updateSchedule', { campaignId: c.id, days: { monday: { start: '06:00' } } });
    expect((await runner.tick()).actions).toBe(0);

    w.h.clock.advance(60_000);
    await w.h.call('campaigns.start', { campaignId: c.id });
    expect((await runner.tick()).actions).toBe(1);
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('a quiet tick re-plans nothing and reads no parked enrollment again', async () => {
    const w = await engineWorld();
    w.h.clock.set(MONDAY_7AM);
    const sender = await w.h.addSender();
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: oneMessage(w) });
    await w.start(c);
    await w.enroll(await w.h.addLead({ firstName: 'Fi' }), c, { sdrProfileId: sender.id });
    const runner = w.runner();
    await runner.tick();
    w.h.clock.advance(60_000);
    const r = await runner.tick();
    expect(r.replanned).toBe(0);
    expect(r.actions).toBe(0);
  });
});

describe('runner: subscription', () => {
  async function lapsedWorld(status: 'past_due' | 'canceled') {
    const w = await engineWorld();
    const sender: Sender = await w.h.addSender();
    const c: Campaign = await w.h.addCampaign({ senderIds: [sender.id], steps: oneMessage(w) });
    await w.start(c);
    const e = await w.enroll(await w.h.addLead({ firstName: 'Gus' }), c, { sdrProfileId: sender.id });
    const ws = await w.h.store.get('workspaces', w.h.main.workspaceId);
    if (!ws) throw new Error('workspace missing');
    await w.h.seed([{ collection: 'workspaces', id: ws.id, before: ws, after: { ...ws, subscriptionStatus: status } }]);
    return { w, c, e, ws };
  }

  it('a lapsed subscription pauses running campaigns with the reason; reactivating does not restart them; starting again acts within one tick', async () => {
    const { w, c, e, ws } = await lapsedWorld('past_due');
    const runner = w.runner();
    const r = await runner.tick();
    expect(r.actions).toBe(0);
    const paused = await w.h.store.get('campaigns', c.id);
    expect(paused?.running).toBe(false);
    expect(paused?.pausedReason).toMatch(/subscription is past due/);
    expect((await activity(w, c.id)).queued[0]?.reason).toBe('campaign_paused');

    const lapsed = await w.h.store.get('workspaces', ws.id);
    await w.h.seed([{ collection: 'workspaces', id: ws.id, before: lapsed, after: { ...ws, subscriptionStatus: 'active' } }]);
    w.h.clock.advance(60_000);
    expect((await runner.tick()).actions).toBe(0);
    expect((await w.h.store.get('campaigns', c.id))?.running).toBe(false);

    await w.h.call('campaigns.start', { campaignId: c.id });
    expect((await runner.tick()).actions).toBe(1);
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('a canceled subscription pauses too', async () => {
    const { w, c } = await lapsedWorld('canceled');
    await w.runner().tick();
    expect((await w.h.store.get('campaigns', c.id))?.pausedReason).toMatch(/subscription is canceled/);
  });
});
