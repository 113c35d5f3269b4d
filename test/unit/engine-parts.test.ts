/** The engine's building blocks on their own: sending windows across DST, limits, sequence walking,
 * the sandbox network's determinism and post reading, derived ids, and the host loop. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FakeClock } from '../support/harness.ts';
import { derivedUuid } from '../../shared/engine/hash.ts';
import { createRunnerHost } from '../../shared/engine/host.ts';
import { budgetsFor, effectiveLimit } from '../../shared/engine/limits.ts';
import type { Runner, TickReport } from '../../shared/engine/runner.ts';
import { createSandboxNetwork, readSandboxPost, SANDBOX_PAGE_SIZE } from '../../shared/engine/sandbox.ts';
import { dayKey, isOpen, nextOpening, startOfNextDay, utcOffsetMinutes } from '../../shared/engine/schedule.ts';
import { firstStep, nextStep, resumePoint } from '../../shared/engine/walk.ts';
import { defaultSchedule, newLead, newSender, newStep } from '../../shared/model/factories.ts';
import type { Schedule } from '../../shared/model/index.ts';

describe('sending windows', () => {
  const berlin: Schedule = defaultSchedule('Europe/Berlin');

  it('opens 09:00-17:00 local on weekdays, start inclusive and end exclusive', () => {
    expect(isOpen(berlin, new Date('2026-11-16T07:59:59Z'))).toBe(false); // 08:59:59 CET
    expect(isOpen(berlin, new Date('2026-11-16T08:00:00Z'))).toBe(true); // 09:00 CET
    expect(isOpen(berlin, new Date('2026-11-16T15:59:59Z'))).toBe(true);
    expect(isOpen(berlin, new Date('2026-11-16T16:00:00Z'))).toBe(false);
    expect(isOpen(berlin, new Date('2026-11-21T10:00:00Z'))).toBe(false); // Saturday
  });

  it('moves with the wall clock across DST (Berlin 2026-10-25, New York 2026-11-01)', () => {
    // Friday 23rd, 09:00 CEST = 07:00Z; Monday 26th, 09:00 CET = 08:00Z.
    expect(nextOpening(berlin, new Date('2026-10-23T18:00:00Z'))?.toISOString()).toBe('2026-10-26T08:00:00.000Z');
    expect(nextOpening(berlin, new Date('2026-10-22T20:00:00Z'))?.toISOString()).toBe('2026-10-23T07:00:00.000Z');
    const ny = defaultSchedule('America/New_York');
    expect(isOpen(ny, new Date('2026-10-30T13:30:00Z'))).toBe(true); // 09:30 EDT
    expect(isOpen(ny, new Date('2026-11-02T13:30:00Z'))).toBe(false); // 08:30 EST
    expect(utcOffsetMinutes('America/New_York', new Date('2026-10-30T12:00:00Z'))).toBe(-240);
    expect(utcOffsetMinutes('America/New_York', new Date('2026-11-02T12:00:00Z'))).toBe(-300);
    // A Sunday window on the day the clocks go back still spans its local hours (here 10 hours).
    const sunday: Schedule = { ...ny, days: { ...ny.days, sunday: { enabled: true, start: '00:00', end: '10:00' } } };
    expect(isOpen(sunday, new Date('2026-11-01T04:30:00Z'))).toBe(true); // 00:30 EDT
    expect(isOpen(sunday, new Date('2026-11-01T14:59:00Z'))).toBe(true); // 09:59 EST
    expect(isOpen(sunday, new Date('2026-11-01T15:00:00Z'))).toBe(false);
  });

  it('handles 24:00 ends, no enabled day, and unknown zones (as UTC)', () => {
    const allDay: Schedule = { timeZone: 'UTC', days: { ...defaultSchedule().days, monday: { enabled: true, start: '00:00', end: '24:00' } } };
    expect(isOpen(allDay, new Date('2026-11-16T23:59:59Z'))).toBe(true);
    const off: Schedule = { timeZone: 'UTC', days: Object.fromEntries(Object.entries(defaultSchedule().days).map(([d, w]) => [d, { ...w, enabled: false }])) as Schedule['days'] };
    expect(nextOpening(off, new Date('2026-11-16T10:00:00Z'))).toBeNull();
    expect(isOpen({ ...defaultSchedule(), timeZone: 'Mars/Olympus' }, new Date('2026-11-16T10:00:00Z'))).toBe(true);
  });

  it('counts days in the sender\'s zone and resets at its midnight', () => {
    expect(dayKey('Asia/Tokyo', new Date('2026-11-16T15:30:00Z'))).toBe('2026-11-17');
    expect(dayKey('America/Los_Angeles', new Date('2026-11-16T05:00:00Z'))).toBe('2026-11-15');
    expect(startOfNextDay('Asia/Tokyo', new Date('2026-11-16T10:00:00Z')).toISOString()).toBe('2026-11-16T15:00:00.000Z');
  });
});

describe('limits', () => {
  it('caps at the plan maximum and counts a request with a note against both request limits', () => {
    const s = newSender({ id: 'x', workspaceId: 'w', now: '' }, { name: 'S', ownerMemberId: 'm', channel: 'sandbox' });
    s.limits.messages = 500;
    s.planMax.messages = 150;
    expect(effectiveLimit(s, 'messages')).toBe(150);
    expect(budgetsFor(s, 'connection_request', true).map((b) => b.counter)).toEqual(['connectionRequests', 'connectionRequestsWithNote']);
    expect(budgetsFor(s, 'connection_request', false).map((b) => b.counter)).toEqual(['connectionRequests']);
    expect(budgetsFor(s, 'email')).toEqual([{ counter: 'emails', limit: 150 }]);
    expect(budgetsFor(s, 'voice_note').map((b) => b.counter)).toEqual(['messages']);
  });
});

describe('sequence walking', () => {
  const a = newStep('a0000000-0000-4000-8000-000000000001', 'CONNECTION_REQUEST');
  const cond = newStep('a0000000-0000-4000-8000-000000000002', 'CONDITION', { sendCondition: 'CONNECTED' });
  const yes1 = newStep('a0000000-0000-4000-8000-000000000003', 'SEND_MESSAGE', { parentStepId: cond.id, branch: 'yes' });
  const no1 = newStep('a0000000-0000-4000-8000-000000000004', 'PROFILE_VISIT', { parentStepId: cond.id, branch: 'no' });
  const yes2 = newStep('a0000000-0000-4000-8000-000000000005', 'SEND_MESSAGE', { parentStepId: cond.id, branch: 'yes' });
  const steps = [a, cond, yes1, no1, yes2];

  it('walks paths in order and ends at the end of a branch', () => {
    expect(firstStep(steps)?.id).toBe(a.id);
    expect(nextStep(steps, a)?.id).toBe(cond.id);
    expect(nextStep(steps, yes1)?.id).toBe(yes2.id);
    expect(nextStep(steps, no1)).toBeNull();
  });

  it('finds where to resume after an edit, following the branch a condition took', () => {
    const done = [{ stepId: a.id, at: '', outcome: 'sent' }, { stepId: cond.id, at: '', outcome: 'yes' }, { stepId: yes1.id, at: '', outcome: 'sent' }];
    expect(resumePoint(steps, done)?.id).toBe(yes2.id);
    expect(resumePoint(steps, [...done, { stepId: yes2.id, at: '', outcome: 'sent' }])).toBeNull();
    expect(resumePoint(steps, [])?.id).toBe(a.id);
  });
});

describe('sandbox network', () => {
  const sender = newSender({ id: '5e000000-0000-4000-8000-000000000001', workspaceId: 'w', now: '' }, { name: 'Sam', ownerMemberId: 'm', channel: 'sandbox' });
  const leads = Array.from({ length: 200 }, (_, i) => newLead({ id: `1e000000-0000-4000-8000-${String(i).padStart(12, '0')}`, workspaceId: 'w', now: '' }, 'g', { firstName: `P${i}` }));

  async function run(seed: string) {
    const clock = new FakeClock('2026-11-16T10:00:00.000Z');
    const net = createSandboxNetwork({ seed, clock });
    for (const [i, lead] of leads.entries()) await net.send(sender, lead, i % 2 ? { kind: 'connection_request', note: 'Hi' } : { kind: 'message', text: 'Hello', chatId: null, voiceNote: null }, `ref-${i}`);
    clock.advance(10 * 86_400_000);
    return { net, clock, events: (await net.poll(sender, null)).events };
  }

  it('is deterministic for a seed, differs between seeds, and has people accept, reply and book meetings', async () => {
    const one = await run('seed-1');
    const two = await run('seed-1');
    const other = await run('seed-2');
    expect(two.events).toEqual(one.events);
    expect(other.events).not.toEqual(one.events);
    const kinds = new Set(one.events.map((e) => e.kind));
    expect([...kinds].sort()).toEqual(['connection_accepted', 'meeting_booked', 'reply']);
    expect(one.events.map((e) => e.at)).toEqual([...one.events.map((e) => e.at)].sort());
  });

  it('delivers each event once per cursor and rebuilds the same events after a restart', async () => {
    const { net, clock } = await run('seed-1');
    const first = await net.poll(sender, null);
    const again = await net.poll(sender, first.cursor);
    expect(again.events).toEqual([]);
    // A fresh network told what was sent produces the same events.
    const fresh = createSandboxNetwork({ seed: 'seed-1', clock });
    fresh.restore(leads.map((lead, i) => ({ id: `ref-${i}`, sdrProfileId: sender.id, leadId: lead.id, kind: i % 2 ? 'connection_request' : 'message', chatId: 'c', externalId: null, text: i % 2 ? 'Hi' : 'Hello', sentAt: '2026-11-16T10:00:00.000Z' })));
    fresh.restore([{ id: 'ref-0', sdrProfileId: sender.id, leadId: leads[0]?.id ?? '', kind: 'message', chatId: 'c', externalId: null, text: 'Hello', sentAt: '2026-11-16T10:00:00.000Z' }]);
    const rebuilt = await fresh.poll(sender, null);
    expect(rebuilt.events.map((e) => [e.kind, e.leadId, e.at])).toEqual(first.events.map((e) => [e.kind, e.leadId, e.at]));
  });

  it('reads any https post deterministically, one search per page, within the budget', () => {
    const url = 'https://social.example/posts/abc';
    const full = readSandboxPost(url, 'comments', 1000);
    expect(readSandboxPost(url, 'comments', 1000)).toEqual(full);
    expect(full.searchesUsed).toBe(Math.max(1, Math.ceil(full.total / SANDBOX_PAGE_SIZE)));
    const one = readSandboxPost(url, 'comments', 1);
    expect(one.items).toEqual(full.items.slice(0, SANDBOX_PAGE_SIZE));
    expect(one.stoppedEarly).toBe(full.total > SANDBOX_PAGE_SIZE);
    expect(readSandboxPost(url, 'reactions', 0)).toMatchObject({ items: [], searchesUsed: 0, stoppedEarly: true });
    expect(() => readSandboxPost('ftp://x', 'comments', 1)).toThrow(/not a post address/);
  });
});

describe('derived ids', () => {
  it('are stable, distinct and valid UUIDs', () => {
    const a = derivedUuid('step-message', 'e1', 's1', 0);
    expect(derivedUuid('step-message', 'e1', 's1', 0)).toBe(a);
    expect(derivedUuid('step-message', 'e1', 's1', 1)).not.toBe(a);
    expect(z.string().uuid().safeParse(a).success).toBe(true);
  });
});

describe('runner host', () => {
  function fakeRunner() {
    let release: () => void = () => undefined;
    const state = { ticks: 0, concurrent: 0, maxConcurrent: 0, released: 0 };
    const runner: Runner = {
      runnerId: 'r',
      async tick() {
        state.ticks++;
        state.concurrent++;
        state.maxConcurrent = Math.max(state.maxConcurrent, state.concurrent);
        await new Promise<void>((resolve) => (release = resolve));
        state.concurrent--;
        return { at: '' } as TickReport;
      },
      async release() {
        state.released++;
      },
    };
    return { runner, state, finish: () => release() };
  }

  it('never runs two ticks at once, ticks again after the interval, and releases leases on stop', async () => {
    const pending: (() => void)[] = [];
    const timers = { setTimeout: (fn: () => void) => pending.push(fn), clearTimeout: () => undefined };
    const { runner, state, finish } = fakeRunner();
    const host = createRunnerHost({ runner, intervalMs: 1000, timers });
    host.start();
    expect(state.ticks).toBe(1);
    expect(await Promise.race([host.tickNow().then(() => 'done'), Promise.resolve('busy')])).toBe('busy');
    expect(state.ticks).toBe(1);
    finish();
    await new Promise((r) => setTimeout(r, 0));
    expect(pending.length).toBe(1); // the next tick is scheduled only after this one ended
    pending.shift()?.();
    expect(state.ticks).toBe(2);
    expect(state.maxConcurrent).toBe(1);
    const stopping = host.stop();
    finish();
    await stopping;
    expect(state.released).toBe(1);
    expect(host.running).toBe(false);
  });
});
