/** The demo's leads carry realistic scores, so the leads table's Score column (the ranking score)
 * sorts them meaningfully: spread over 0-100, higher for the senior people the demo sells to, the
 * same for the same seed. */
import { beforeAll, describe, expect, it } from 'vitest';
import { demoScores, demoSeedWrites } from '../../shared/demo-seed.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import type { Lead, Stage } from '../../shared/model/index.ts';
import { execute } from '../../shared/ops/execute.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { FakeClock, seededRandom, sequentialIds, testSecrets } from '../support/harness.ts';

const NOW = '2026-11-16T19:30:00.000Z';

async function build(seed: number) {
  const ids = sequentialIds(3);
  const ws = workspaceCreation(ids, NOW, { name: 'Demo', owner: { name: 'Olive Owner', email: 'olive@demo.test' }, subscriptionStatus: 'active' });
  const stages = ws.writes.flatMap((w) => (w.collection === 'stages' && w.after ? [w.after as Stage] : []));
  const out = await demoSeedWrites({
    workspaceId: ws.workspaceId, ownerId: ws.ownerId, leadGroupId: ws.leadGroupId, ids, now: NOW, random: seededRandom(seed), stages, existing: ws.writes, leadCount: 80, days: 3,
  });
  const leads = out.writes.flatMap((w) => (w.collection === 'leads' && w.after ? [w.after as Lead] : []));
  return { ws, ids, writes: out.writes, leads };
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

describe('demo lead scores', () => {
  let demo: Awaited<ReturnType<typeof build>>;
  beforeAll(async () => {
    demo = await build(11);
  }, 120_000);

  it('every lead has a ranking and a fit score between 0 and 100, spread out, not all 0', () => {
    const { leads } = demo;
    expect(leads).toHaveLength(80);
    for (const l of leads) {
      for (const score of [l.rankingScore, l.leadFitScore]) {
        expect(Number.isInteger(score), l.fullName).toBe(true);
        expect(score).toBeGreaterThanOrEqual(0);
        expect(score).toBeLessThanOrEqual(100);
      }
    }
    expect(new Set(leads.map((l) => l.rankingScore)).size).toBeGreaterThan(30);
    expect(new Set(leads.map((l) => l.leadFitScore)).size).toBeGreaterThan(25);
    const ranking = leads.map((l) => l.rankingScore);
    expect(Math.max(...ranking) - Math.min(...ranking)).toBeGreaterThan(40);
  });

  it('fits the people the demo sells to: leaders score higher than juniors, a known pain point and a recent post count', () => {
    const { leads } = demo;
    const fitOf = (levels: string[]) => mean(leads.filter((l) => levels.includes(l.seniority)).map((l) => l.leadFitScore));
    expect(fitOf(['c_level', 'vp'])).toBeGreaterThan(fitOf(['senior', 'entry']) + 15);
    const base = { seniority: 'director', email: 'a@x.example', phone: '', variables: { 'Team size': '51-200' } };
    const avg = (row: Parameters<typeof demoScores>[0], key: 'leadFitScore' | 'rankingScore') => {
      const random = seededRandom(3);
      return mean(Array.from({ length: 200 }, () => demoScores(row, random)[key]));
    };
    expect(avg({ ...base, variables: { ...base.variables, 'Pain point': 'Slow pipeline' } }, 'leadFitScore')).toBeGreaterThan(avg(base, 'leadFitScore') + 10);
    expect(avg({ ...base, variables: { ...base.variables, 'Recent post': 'posted about hiring' } }, 'rankingScore')).toBeGreaterThan(avg(base, 'rankingScore') + 10);
  });

  it('sorting the leads by score puts the best-ranked first', async () => {
    const { ws, ids, writes, leads } = demo;
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws.workspaceId);
    const created = new Set(writes.map((w) => `${w.collection}/${w.id}`));
    await store.commit([...ws.writes.filter((w) => !created.has(`${w.collection}/${w.id}`)), ...writes.map((w) => ({ ...w, before: null }))]);
    const env = { actor: { workspaceId: ws.workspaceId, memberId: ws.ownerId, role: 'owner' as const }, store, clock: new FakeClock(NOW), ids, random: seededRandom(1), secrets: testSecrets };
    const page = await execute('campaigns.leads.search', { sortBy: 'rankingScore', sortOrder: 'desc', limit: 10 }, env);
    const best = [...leads].sort((a, b) => b.rankingScore - a.rankingScore).slice(0, 10).map((l) => l.rankingScore);
    expect(page.leads.map((l) => l.rankingScore)).toEqual(best);
    expect(best[0]).toBeGreaterThan(best[9] ?? 0);
  });

  it('is the same for the same seed, and another seed gives other scores', async () => {
    const scores = (leads: Lead[]) => leads.map((l) => [l.rankingScore, l.leadFitScore]);
    const again = await build(11);
    expect(again.leads.map((l) => [l.fullName, l.rankingScore, l.leadFitScore])).toEqual(demo.leads.map((l) => [l.fullName, l.rankingScore, l.leadFitScore]));
    const other = await build(12);
    expect(scores(other.leads)).not.toEqual(scores(demo.leads));
  }, 120_000);
});
