import { describe, expect, it } from 'vitest';
import { DEFAULT_PLAN_MAX } from '../../shared/model/factories.ts';
import { execute } from '../../shared/ops/execute.ts';
import { makeHarness, testSecrets } from '../support/harness.ts';

describe('limits above the plan maximum are lowered and reported, whatever their size', () => {
  it('sdrProfiles.setDailyLimits with messages: 1000000 sets the plan maximum and reports it in cappedAtPlan', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const input = { sdrProfileId: s.id, limits: { messages: 1_000_000, reactions: 1e300 } };
    const preview = await h.call('sdrProfiles.setDailyLimits', { ...input, dryRun: true }, h.admin);
    const real = await h.call('sdrProfiles.setDailyLimits', input, h.admin);
    expect({ ...preview, dryRun: false }).toEqual(real);
    expect(real.after.messages).toBe(DEFAULT_PLAN_MAX.messages);
    expect(real.after.reactions).toBe(DEFAULT_PLAN_MAX.reactions);
    expect(real.cappedAtPlan).toEqual([
      { limit: 'messages', requested: 1_000_000, planMax: DEFAULT_PLAN_MAX.messages },
      { limit: 'reactions', requested: 1e300, planMax: DEFAULT_PLAN_MAX.reactions },
    ]);
    const stored = await h.store.get('senders', s.id);
    expect(stored?.limits.messages).toBe(DEFAULT_PLAN_MAX.messages);
  });

  it('JSON 1e999 (Infinity once parsed) is capped too; fractions are rounded down', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const body: unknown = JSON.parse(`{"sdrProfileId":"${s.id}","limits":{"comments":1e999,"profileVisits":12.9}}`);
    const res = (await execute('sdrProfiles.setDailyLimits', body, { actor: h.owner, store: h.store, clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets })) as {
      after: Record<string, number>;
      cappedAtPlan: { limit: string }[];
    };
    expect(res.after.comments).toBe(DEFAULT_PLAN_MAX.comments);
    expect(res.after.profileVisits).toBe(12);
    expect(res.cappedAtPlan.map((c) => c.limit)).toEqual(['comments']);
  });

  it('refuses negatives and non-numbers, changing nothing', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const neg = await h.expectRefused(h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: -1 } }, h.admin), 'INVALID_INPUT');
    expect(neg.details.issues).toEqual([expect.objectContaining({ path: 'limits.messages' })]);
    const str = await h.expectRefused(
      execute('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 'lots' } }, { actor: h.admin, store: h.store, clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets }),
      'INVALID_INPUT',
    );
    expect(str.details.issues).toEqual([expect.objectContaining({ path: 'limits.messages' })]);
  });
});
