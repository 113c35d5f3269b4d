/**
 * Ramp-up that fits the account: at connection (sdrProfiles.create warmedUp) and later
 * (sdrProfiles.setWarmedUp) the user says whether the account is new (it ramps up from 20% over 14
 * days) or already warmed up (its full limits at once; the weekly cap still holds).
 * social.getAccountLimits, the runner and the wait reasons of campaigns.getActivity all say which
 * applies.
 */
import { describe, expect, it } from 'vitest';
import { newEnrollment, newStep } from '../../shared/model/factories.ts';
import { execute } from '../../shared/ops/execute.ts';
import { makeHarness, recordingBytes, testSecrets } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { engineWorld } from './engine-fixtures.ts';

const DAY = 86_400_000;

async function account(h: Harness, id: string) {
  const a = (await h.call('social.getAccountLimits', { senderProfileId: id })).accounts[0];
  if (!a) throw new Error('no account');
  return a;
}

describe('new or warmed up, at connection', () => {
  it('a new account (the default) ramps up; a warmed-up one sends at its limits, with the weekly cap', async () => {
    const h = await makeHarness();
    const fresh = await h.call('sdrProfiles.create', { name: 'New Nina', channel: 'sandbox' }, h.member);
    const warm = await h.call('sdrProfiles.create', { name: 'Warm Walt', channel: 'sandbox', warmedUp: true }, h.member);
    expect([fresh.warmedUp, warm.warmedUp]).toEqual([false, true]);
    expect(await h.store.get('senders', fresh.id)).toMatchObject({ warmedUp: false, rampUpStartedAt: h.now() });
    expect(await h.store.get('senders', warm.id)).toMatchObject({ warmedUp: true, rampUpStartedAt: null });

    const n = await account(h, fresh.id);
    const w = await account(h, warm.id);
    expect(n.rampUp).toEqual({ active: true, day: 1, of: 14, percent: 20, endsAt: new Date(h.clock.now().getTime() + 14 * DAY).toISOString(), warmedUp: false });
    expect(w.rampUp).toEqual({ active: false, day: 14, of: 14, percent: 100, endsAt: null, warmedUp: true });
    expect(n.sending.messages.limit).toBe(Math.ceil(fresh.limits.messages * 0.2));
    expect(w.sending.messages.limit).toBe(warm.limits.messages);
    // The weekly cap on connection requests holds for both (ramped for the new one).
    expect(w.weekly.connectionRequests.limit).toBe(100);
    expect(n.weekly.connectionRequests.limit).toBe(20);
    expect((await h.call('sdrProfiles.list', {})).sdrProfiles.map((s) => [s.name, s.warmedUp])).toEqual([['New Nina', false], ['Warm Walt', true]]);
  });

  it('an email sender gets its unsubscribe key at creation, from the host\'s random bytes, never in an answer', async () => {
    const h = await makeHarness();
    const given = recordingBytes();
    const secrets = { ...testSecrets, randomBytes: given.bytes };
    const out = await execute('sdrProfiles.create', { name: 'Mail Mia', channel: 'email', channelConfig: { host: 'smtp.example.test', port: 587, secure: false, user: 'mia', from: 'mia@example.test' } }, {
      actor: h.owner, store: h.store, clock: h.clock, ids: h.ids, random: h.random, secrets, channels: null,
    });
    const key = (await h.store.get('senders', out.id))?.unsubscribeKey;
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    // 256 bits the host gave for it, not the operation's ids.
    expect(given.asked).toEqual([32]);
    expect(key).toBe(Buffer.from(given.made[0] ?? []).toString('hex'));
    expect(JSON.stringify(out)).not.toContain(key);
    expect(JSON.stringify(await h.call('sdrProfiles.list', {}))).not.toContain(key);
  });
});

describe('sdrProfiles.setWarmedUp', () => {
  it('warmed up: full limits at once; new again: the ramp-up goes on from its start, or starts now when none began', async () => {
    const h = await makeHarness();
    const s = await h.call('sdrProfiles.create', { name: 'Sam', channel: 'sandbox' });
    h.clock.advance(3 * DAY);
    expect((await account(h, s.id)).rampUp).toMatchObject({ active: true, day: 4 });

    const on = await h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id, warmedUp: true }, h.member);
    expect(on).toMatchObject({ sdrProfileId: s.id, name: 'Sam', warmedUp: true, changed: true, rampUp: { active: false, percent: 100, warmedUp: true } });
    expect((await account(h, s.id)).sending.messages.limit).toBe(s.limits.messages);
    expect((await h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id, warmedUp: true })).changed).toBe(false);

    const off = await h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id, warmedUp: false });
    expect(off.rampUp).toMatchObject({ active: true, day: 4, warmedUp: false });

    const w = await h.call('sdrProfiles.create', { name: 'Wanda', channel: 'sandbox', warmedUp: true });
    h.clock.advance(DAY);
    const fresh = await h.call('sdrProfiles.setWarmedUp', { sdrProfileId: w.id, warmedUp: false });
    expect(fresh.rampUp).toMatchObject({ active: true, day: 1, percent: 20 });
    expect((await h.store.get('senders', w.id))?.rampUpStartedAt).toBe(h.now());
  });

  it('a dry run answers the same and changes nothing', async () => {
    const h = await makeHarness();
    const s = await h.call('sdrProfiles.create', { name: 'Sam', channel: 'sandbox' });
    const before = h.db.snapshot();
    expect(await h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id, warmedUp: true, dryRun: true })).toMatchObject({ dryRun: true, changed: true, warmedUp: true });
    expect(h.db.snapshot()).toEqual(before);
  });

  it('refuses an unknown or foreign sender (404) and malformed input (400), changing nothing', async () => {
    const h = await makeHarness();
    const s = await h.call('sdrProfiles.create', { name: 'Sam', channel: 'sandbox' });
    await h.expectRefused(h.call('sdrProfiles.setWarmedUp', { sdrProfileId: '00000000-0000-4000-8000-000000000000', warmedUp: true }), 'NOT_FOUND');
    await h.expectRefused(h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id, warmedUp: true }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id } as never), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id, warmedUp: 'yes' } as never), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.setWarmedUp', { sdrProfileId: s.id, warmedUp: true, rampDays: 3 } as never), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.create', { name: 'X', channel: 'sandbox', warmedUp: 'yes' } as never), 'INVALID_INPUT');
  });
});

describe('which pace applies, where the runner says why a lead waits', () => {
  it('the runner sends a warmed-up account its full limit on day 1, a new one a fifth', async () => {
    const w = await engineWorld();
    const limits = { messages: 5, inmails: 1, connectionRequests: 5, connectionRequestsWithNote: 5, comments: 1, reactions: 1, profileVisits: 1 };
    const warm = await w.h.addSender({ name: 'Warm', limits, planMax: limits, warmedUp: true });
    const fresh = await w.h.addSender({ name: 'Fresh', limits, planMax: limits, rampUpStartedAt: w.h.now() });
    for (const s of [warm, fresh]) {
      const c = await w.h.addCampaign({ name: s.name, senderIds: [s.id] });
      await w.start(c);
      for (let i = 0; i < 6; i++) await w.enroll(await w.h.addLead({ fullName: `${s.name} ${i}` }), c, { sdrProfileId: s.id });
    }
    for (let i = 0; i < 8; i++) await w.runner().tick();
    const sentBy = async (id: string) => (await w.messages({ direction: 'out' })).filter((m) => m.sdrProfileId === id && m.status === 'sent').length;
    expect(await sentBy(warm.id)).toBe(5);
    expect(await sentBy(fresh.id)).toBe(1);
  });

  it('campaigns.getActivity names the ramp-up or the warmed-up account in a limit wait', async () => {
    const h = await makeHarness();
    const fresh = await h.addSender({ name: 'Fresh Fay', rampUpStartedAt: new Date(h.clock.now().getTime() - 2 * DAY).toISOString() });
    const warm = await h.addSender({ name: 'Warm Wes', warmedUp: true });
    const c = await h.addCampaign({ senderIds: [fresh.id, warm.id], steps: [newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' })] });
    await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: { ...c, running: true, startedAt: h.now() } }]);
    const later = new Date(h.clock.now().getTime() + 3_600_000).toISOString();
    const waits = [];
    for (const s of [fresh, warm]) {
      const lead = await h.addLead({ fullName: `Lead of ${s.name}` });
      const e = newEnrollment(h.stamp(), lead.id, c.id, { sdrProfileId: s.id, currentStepId: c.steps[0]?.id ?? null, nextActionAt: later, waitReason: 'daily_limit' });
      waits.push(e);
    }
    await h.seed(waits.map((e) => ({ collection: 'enrollments' as const, id: e.id, before: null, after: e })));
    const q = new Map((await h.call('campaigns.getActivity', { campaignId: c.id })).queued.map((x) => [x.enrollmentId, x.explanation]));
    expect(q.get(waits[0]?.id ?? '')).toBe('Fresh Fay reached a daily limit as a new account ramping up, day 3 of 14 at 31% of its limits; it goes after the limit resets.');
    expect(q.get(waits[1]?.id ?? '')).toBe('Warm Wes reached a daily limit at the full limits of a warmed-up account; it goes after the limit resets.');
  });
});
