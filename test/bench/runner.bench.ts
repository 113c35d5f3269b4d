/**
 * Runner benchmark: one tick over 100k enrollments when nothing is due (target p50 <= 10 ms) and
 * when a few are due, and a simulated day of 10k actions over the same 100k enrollments (target
 * >= 1,000 actions/s). Baseline measured in the same run: one scan of the 100k enrollments for the
 * due ones without the ordered index (what a tick cost before it read only what is due).
 * Runs against the in-memory store (the reference Store), with the sandbox network.
 * `npx tsx test/bench/runner.bench.ts` runs it alone; test/bench/run.ts calls run().
 */
import { pathToFileURL } from 'node:url';
import { channelHostOf } from '../../shared/engine/channel.ts';
import { createRunner } from '../../shared/engine/runner.ts';
import { createSandboxNetwork } from '../../shared/engine/sandbox.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newCampaign, newEnrollment, newLead, newLeadGroup, newSender, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Enrollment, Sender } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { nodeSecrets } from '../../channels/secret-codec.ts';
import { FakeClock, seededRandom, sequentialIds } from '../support/deterministic.ts';

const ENROLLMENTS = 100_000;
const SENDERS = 20;
const CAMPAIGNS = 5;
const DAY_ACTIONS = 10_000;

const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

export type RunnerBenchResult = {
  enrollments: number;
  baselineScanMs: { p50: number };
  tickNothingDueMs: { p50: number; p95: number };
  tickFewDueMs: { due: number; p50: number; p95: number };
  day: { actions: number; ticks: number; wallMs: number; actionsPerSecond: number; tickP50Ms: number; tickP95Ms: number };
};

export async function run(): Promise<RunnerBenchResult> {
  const db = new MemoryDatabase();
  const clock = new FakeClock('2026-11-16T00:00:00.000Z'); // a Monday
  const ids = sequentialIds(9);
  const now = () => clock.now().toISOString();
  const w = workspaceCreation(ids, now(), { name: 'Bench', owner: { name: 'Owner', email: 'owner@bench.test' }, subscriptionStatus: 'active' });
  const store = db.forWorkspace(w.workspaceId);
  await store.commit(w.writes);
  const stamp = () => ({ id: ids.uuid(), workspaceId: w.workspaceId, now: now() });

  // Senders with room for the day's 10k actions; campaigns open all day, every day.
  const senders: Sender[] = [];
  for (let i = 0; i < SENDERS; i++) {
    senders.push(newSender(stamp(), {
      name: `Sender ${i}`, ownerMemberId: w.ownerId, channel: 'sandbox', timeZone: ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo'][i % 4] ?? 'UTC',
      limits: { messages: 1000, inmails: 10, connectionRequests: 100, connectionRequestsWithNote: 50, comments: 10, reactions: 100, profileVisits: 1000 },
      planMax: { messages: 1000, inmails: 50, connectionRequests: 100, connectionRequestsWithNote: 50, comments: 50, reactions: 100, profileVisits: 1000 },
    }));
  }
  const campaigns: Campaign[] = [];
  const groupWrites: AnyWrite[] = [];
  for (let c = 0; c < CAMPAIGNS; c++) {
    // Each campaign has its own lead group (a campaign's leads are its group's leads).
    const group = newLeadGroup(stamp(), `Group ${c}`, () => ids.uuid());
    groupWrites.push({ collection: 'leadGroups', id: group.id, before: null, after: group });
    const camp = newCampaign(stamp(), `Campaign ${c}`, group.id, ids.uuid());
    for (const d of Object.values(camp.schedule.days)) Object.assign(d, { enabled: true, start: '00:00', end: '24:00' });
    camp.running = true;
    camp.senders = senders.filter((_, i) => i % CAMPAIGNS === c || (i + 1) % CAMPAIGNS === c).map((s) => ({ sdrProfileId: s.id, paused: false }));
    camp.steps = [newStep(ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}, a quick question about {{Company|your team}}.' }), newStep(ids.uuid(), 'WAIT', { waitTimeSeconds: 3 * 86_400 }), newStep(ids.uuid(), 'PROFILE_VISIT')];
    campaigns.push(camp);
  }
  const writes: AnyWrite[] = [
    ...groupWrites,
    ...senders.map((s): AnyWrite => ({ collection: 'senders', id: s.id, before: null, after: s })),
    ...campaigns.map((c): AnyWrite => ({ collection: 'campaigns', id: c.id, before: null, after: c })),
  ];
  // 100k leads and enrollments; the first DAY_ACTIONS come due during the simulated day, the rest
  // next month. Enrollments are assigned to one of their campaign's senders.
  const far = '2026-12-20T00:00:00.000Z';
  const enrollments: Enrollment[] = [];
  for (let i = 0; i < ENROLLMENTS; i++) {
    const lead = newLead(stamp(), (campaigns[i % CAMPAIGNS] as Campaign).leadGroupId, { firstName: `P${i}`, lastName: 'Bench', company: `Company ${i % 5000}`, socialUrl: `https://social.example/in/p${i}` });
    const camp = campaigns[i % CAMPAIGNS] as Campaign;
    const senderId = camp.senders[i % camp.senders.length]?.sdrProfileId ?? null;
    const due = i < DAY_ACTIONS ? new Date(Date.parse('2026-11-17T00:00:00.000Z') + Math.floor((i / DAY_ACTIONS) * 20 * 3600_000)).toISOString() : far;
    const e = newEnrollment(stamp(), lead.id, camp.id, { sdrProfileId: senderId, currentStepId: camp.steps[0]?.id ?? null, nextActionAt: due });
    enrollments.push(e);
    writes.push({ collection: 'leads', id: lead.id, before: null, after: lead }, { collection: 'enrollments', id: e.id, before: null, after: e });
  }
  for (let i = 0; i < writes.length; i += 10_000) await store.commit(writes.slice(i, i + 10_000));

  const network = createSandboxNetwork({ seed: 'bench', clock });
  const runner = createRunner({
    store, clock, random: seededRandom(3), ids, randomBytes: nodeSecrets.randomBytes, channels: channelHostOf({ sandbox: network }),
    actor: { workspaceId: w.workspaceId, memberId: w.ownerId, role: 'owner', isSystem: true }, runnerId: 'bench', leaseMs: 3600_000,
    spacing: { minSeconds: 20, jitterSeconds: 20 },
  });

  // Baseline: the due enrollments found by one scan of all of them (no ordered index).
  const baseline: number[] = [];
  for (let i = 0; i < 10; i++) {
    const nowIso = now();
    const t0 = process.hrtime.bigint();
    // The due condition written so that no index applies: every enrollment is read and matched.
    await store.query('enrollments', {
      where: {
        op: 'and',
        conds: [
          { op: 'eq', field: 'status', value: 'IN_PROGRESS' },
          { op: 'neq', field: 'nextActionAt', value: null },
          { op: 'not', cond: { op: 'gt', field: 'nextActionAt', value: nowIso } },
          { op: 'in', field: 'campaignId', values: campaigns.map((c) => c.id) },
        ],
      },
      orderBy: [{ field: 'nextActionAt', dir: 'asc' }],
    });
    baseline.push(ms(t0));
  }

  // 1. Nothing due (Monday: the day's enrollments start on Tuesday).
  for (let i = 0; i < 3; i++) await runner.tick();
  const idle: number[] = [];
  for (let i = 0; i < 20; i++) {
    clock.advance(60_000);
    const t0 = process.hrtime.bigint();
    const r = await runner.tick();
    idle.push(ms(t0));
    if (r.actions !== 0) throw new Error('nothing should be due');
  }

  // 2. A few due: 10 of the far enrollments brought forward each round.
  const few: number[] = [];
  const FEW = 10;
  for (let round = 0; round < 10; round++) {
    clock.advance(10 * 60_000);
    const pick = enrollments.slice(ENROLLMENTS - (round + 1) * FEW, ENROLLMENTS - round * FEW);
    const fresh = await store.getMany('enrollments', pick.map((e) => e.id));
    await store.commit(fresh.map((e): AnyWrite => ({ collection: 'enrollments', id: e.id, before: e, after: { ...e, nextActionAt: now() } })));
    const t0 = process.hrtime.bigint();
    const r = await runner.tick();
    few.push(ms(t0));
    if (r.actions === 0) throw new Error('the due enrollments should act');
  }

  // 3. A simulated day: Tuesday, a tick every simulated minute, 10k enrollments coming due.
  clock.set('2026-11-17T00:00:00.000Z');
  const dayTicks: number[] = [];
  let actions = 0;
  const t0 = process.hrtime.bigint();
  for (let m = 0; m < Number(process.env.BENCH_DAY_MINUTES ?? 24 * 60); m++) {
    const s = process.hrtime.bigint();
    const r = await runner.tick();
    dayTicks.push(ms(s));
    actions += r.actions;
    if (r.errors.length > 0) throw new Error(`runner errors: ${r.errors[0]?.message}`);
    clock.advance(60_000);
  }
  const wallMs = ms(t0);

  const result: RunnerBenchResult = {
    enrollments: ENROLLMENTS,
    baselineScanMs: { p50: round(percentile(baseline, 50)) },
    tickNothingDueMs: { p50: round(percentile(idle, 50)), p95: round(percentile(idle, 95)) },
    tickFewDueMs: { due: FEW, p50: round(percentile(few, 50)), p95: round(percentile(few, 95)) },
    day: {
      actions, ticks: dayTicks.length, wallMs: Math.round(wallMs), actionsPerSecond: Math.round((actions / wallMs) * 1000),
      tickP50Ms: round(percentile(dayTicks, 50)), tickP95Ms: round(percentile(dayTicks, 95)),
    },
  };
  const base = result.baselineScanMs.p50;
  console.log(`runner: baseline (same run): one scan of ${ENROLLMENTS} enrollments for the due ones: p50 ${base} ms`);
  console.log(`runner: tick over ${ENROLLMENTS} enrollments, nothing due: p50 ${result.tickNothingDueMs.p50} ms, p95 ${result.tickNothingDueMs.p95} ms (target p50 <= 10 ms; ${ratio(result.tickNothingDueMs.p50, base)} of the baseline scan) ${result.tickNothingDueMs.p50 <= 10 ? 'OK' : 'MISSED'}`);
  console.log(`runner: tick over ${ENROLLMENTS} enrollments, ${FEW} due: p50 ${result.tickFewDueMs.p50} ms, p95 ${result.tickFewDueMs.p95} ms (target < 50 ms; ${ratio(result.tickFewDueMs.p50, base)} of the baseline scan)`);
  console.log(`runner: simulated day: ${actions} actions in ${result.day.ticks} ticks, ${result.day.wallMs} ms wall: ${result.day.actionsPerSecond} actions/s (target >= 1000) ${result.day.actionsPerSecond >= 1000 ? 'OK' : 'MISSED'}; tick p50 ${result.day.tickP50Ms} ms, p95 ${result.day.tickP95Ms} ms`);
  return result;
}

const round = (x: number): number => Math.round(x * 10) / 10;
const ratio = (x: number, base: number): string => (base > 0 ? `${Math.round((x / base) * 100)}%` : 'n/a');

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}
