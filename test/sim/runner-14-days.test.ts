/**
 * Fourteen simulated days of outreach on a fake clock: 3 campaigns, 1,000 leads, 4 sandbox senders
 * in different time zones with different limits, a tick every 5 simulated minutes, across the
 * Europe/Berlin (2026-10-25) and America/New_York (2026-11-01) DST changes. Mid-run: a runner
 * restart (a fresh runner and a fresh in-process sandbox restored from the store), a campaign
 * paused and resumed, a sender removed from a campaign, a sender's outreach paused and resumed.
 * Every claim is checked afterwards from what the store recorded, with independent arithmetic.
 */
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { makeHarness, seededRandom, testSecrets } from '../support/harness.ts';
import type { Actor } from '../../shared/context.ts';
import { channelHostOf } from '../../shared/engine/channel.ts';
import { restoreSandbox } from '../../shared/engine/host.ts';
import { createRunner } from '../../shared/engine/runner.ts';
import type { Runner, TickReport } from '../../shared/engine/runner.ts';
import { createSandboxNetwork } from '../../shared/engine/sandbox.ts';
import type { SandboxNetwork } from '../../shared/engine/sandbox.ts';
import { newEnrollment, newLead, newLeadGroup, newStep } from '../../shared/model/factories.ts';
import { DAYS, LIMIT_KEYS } from '../../shared/model/index.ts';
import type { Campaign, LimitSet, Message, Schedule, Sender, Step } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';

const START = '2026-10-22T00:00:00.000Z'; // a Thursday
const DAYS_TO_RUN = 14;
const TICK_MS = 5 * 60_000;
const RESTART_AT = '2026-10-26T13:00:00.000Z';
const PAUSE_B = ['2026-10-27T15:00:00.000Z', '2026-10-28T15:00:00.000Z'] as const;
const REMOVE_S4_FROM_A = '2026-10-29T12:00:00.000Z';
const PAUSE_S2 = ['2026-11-02T05:00:00.000Z', '2026-11-03T05:00:00.000Z'] as const;

const limits = (l: Partial<LimitSet>): LimitSet => ({ messages: 20, inmails: 5, connectionRequests: 10, connectionRequestsWithNote: 8, comments: 5, reactions: 10, profileVisits: 15, ...l });

function weekdays(timeZone: string, start: string, end: string, saturday = false): Schedule {
  const day = (enabled: boolean) => ({ enabled, start, end });
  return {
    timeZone,
    days: { monday: day(true), tuesday: day(true), wednesday: day(true), thursday: day(true), friday: day(true), saturday: day(saturday), sunday: day(false) },
  };
}

/** Independent of the engine's schedule code: is `iso` inside the schedule's window of its local day? */
function inWindow(schedule: Schedule, iso: string): boolean {
  const t = DateTime.fromISO(iso, { zone: schedule.timeZone });
  const w = schedule.days[DAYS[t.weekday - 1] ?? 'monday'];
  const hhmm = t.toFormat('HH:mm');
  return w.enabled && hhmm >= w.start && hhmm < w.end;
}

/** The counters an outbound action uses (independent restatement of the limit rules). */
function countersOf(m: Message): (keyof LimitSet | 'emails')[] {
  switch (m.kind) {
    case 'message':
    case 'voice_note':
      return ['messages'];
    case 'connection_request':
      return m.text ? ['connectionRequests', 'connectionRequestsWithNote'] : ['connectionRequests'];
    case 'inmail':
      return ['inmails'];
    case 'profile_visit':
      return ['profileVisits'];
    case 'reaction':
      return ['reactions'];
    case 'email':
      return ['emails'];
  }
}

describe('14 simulated days of outreach', () => {
  it('keeps windows, limits, never-twice, DST, replies, pauses, sender removal and restarts right', async () => {
    const h = await makeHarness();
    h.clock.set(START);
    const ws = h.main.workspaceId;
    const system: Actor = { ...h.owner, isSystem: true };
    const rnd = seededRandom(2026);
    const writes: AnyWrite[] = [];

    // Senders: four time zones, four sets of limits.
    const mk = (name: string, timeZone: string, l: Partial<LimitSet>, premium = false): Sender => {
      const s: Sender = {
        id: h.ids.uuid(), workspaceId: ws, createdAt: h.now(), updatedAt: h.now(),
        name, firstName: name, lastName: '', ownerMemberId: h.owner.memberId, channel: 'sandbox', channelConfig: { seed: 'sim' },
        status: 'available', outreachPaused: false, backoffUntil: null, statusReason: null, premium,
        capabilities: ['message', 'connection_request', 'profile_visit', 'reaction', 'post_reading', 'voice_note', ...(premium ? ['inmail' as const] : [])],
        timeZone, limits: limits(l), planMax: { messages: 150, inmails: 50, connectionRequests: 100, connectionRequestsWithNote: 50, comments: 50, reactions: 100, profileVisits: 200 },
        searchLimit: 100, connectionNoteMaxLength: 300,
      };
      writes.push({ collection: 'senders', id: s.id, before: null, after: s });
      return s;
    };
    const s1 = mk('Berlin', 'Europe/Berlin', { connectionRequests: 12, connectionRequestsWithNote: 8, messages: 25, profileVisits: 20 }, true);
    const s2 = mk('NewYork', 'America/New_York', { connectionRequests: 10, messages: 18, profileVisits: 14 });
    const s3 = mk('Tokyo', 'Asia/Tokyo', { connectionRequests: 8, connectionRequestsWithNote: 6, messages: 16, profileVisits: 10 });
    const s4 = mk('London', 'Europe/London', { connectionRequests: 9, connectionRequestsWithNote: 7, messages: 20, profileVisits: 12 });
    // Safety defaults in play: Berlin has a weekly cap of 40 connection requests (12 a day would
    // make 60 in 5 weekdays); Tokyo is a new account ramping up from 20% over the 14 days.
    s1.weeklyConnectionLimit = 40;
    s3.rampUpStartedAt = START;
    const senders = [s1, s2, s3, s4];

    // Campaigns.
    const id = () => h.ids.uuid();
    const crA = newStep(id(), 'CONNECTION_REQUEST', { content: 'Hi {{First name|there}}, I enjoyed your posts about {{Company|your work}}.' });
    const condA = newStep(id(), 'CONDITION', { sendCondition: 'CONNECTED' });
    const msgA = newStep(id(), 'SEND_MESSAGE', {
      parentStepId: condA.id, branch: 'yes', content: 'Thanks for connecting!',
      variants: [{ id: id(), name: 'A', text: 'Thanks for connecting, {{First name}}!', subject: '' }, { id: id(), name: 'B', text: 'Great to be connected, {{First name}}.', subject: '' }],
      variantAssignment: { mode: 'round_robin', defaultVariantId: null },
    });
    const stepsA: Step[] = [
      crA, newStep(id(), 'WAIT', { waitTimeSeconds: 86_400 }), condA,
      msgA, newStep(id(), 'WAIT', { parentStepId: condA.id, branch: 'yes', waitTimeSeconds: 2 * 86_400 }), newStep(id(), 'SEND_MESSAGE', { parentStepId: condA.id, branch: 'yes', content: 'Following up, {{First name}}.' }),
      newStep(id(), 'PROFILE_VISIT', { parentStepId: condA.id, branch: 'no' }),
    ];
    const stepsB: Step[] = [
      newStep(id(), 'PROFILE_VISIT'), newStep(id(), 'WAIT', { waitTimeSeconds: 4 * 3600 }), newStep(id(), 'SEND_MESSAGE', { content: 'Hello {{First name}}, quick question about {{Company|your team}}.' }),
      newStep(id(), 'WAIT', { waitTimeSeconds: 2 * 86_400 }), newStep(id(), 'SEND_MESSAGE', { content: 'Any thoughts, {{First name}}?' }),
    ];
    const stepsC: Step[] = [newStep(id(), 'SEND_MESSAGE', { content: 'Hi {{First name}}!' }), newStep(id(), 'WAIT', { waitTimeSeconds: 86_400 }), newStep(id(), 'SEND_MESSAGE', { content: 'One more thing, {{First name}}.' })];
    // Each campaign has its own lead group: a campaign's leads are its group's leads.
    const campaign = (name: string, schedule: Schedule, senderList: Sender[], steps: Step[], settings: Partial<Campaign['settings']> = {}): Campaign => {
      const group = newLeadGroup(h.stamp(), `${name} leads`, id);
      writes.push({ collection: 'leadGroups', id: group.id, before: null, after: group });
      const c: Campaign = {
        id: id(), workspaceId: ws, createdAt: h.now(), updatedAt: h.now(), name, leadGroupId: group.id, sequenceId: id(), running: false, startedAt: null, config: null,
        webcamVideoName: '', backgroundVideoName: '', schedule,
        settings: { preferNewLeads: false, companyRelay: { enabled: false, maxPersonsPerCompany: 3, seniorities: [] }, ...settings },
        senders: senderList.map((s) => ({ sdrProfileId: s.id, paused: false })), steps,
      };
      writes.push({ collection: 'campaigns', id: c.id, before: null, after: c });
      return c;
    };
    const A = campaign('A: Berlin connections', weekdays('Europe/Berlin', '08:00', '18:00'), [s1, s3, s4], stepsA);
    const B = campaign('B: New York messages', weekdays('America/New_York', '09:00', '17:00'), [s2, s4], stepsB, { preferNewLeads: true });
    const C = campaign('C: relay', weekdays('UTC', '10:00', '16:00', true), [s3, s1], stepsC, { companyRelay: { enabled: true, maxPersonsPerCompany: 2, seniorities: ['director', 'vp'] } });

    // 1,000 leads: 400 in A, 300 in B, 200 in C (one per company), 100 not enrolled (colleagues at C's companies).
    const FIRST = ['Ava', 'Ben', 'Cleo', 'Dan', 'Eli', 'Fay', 'Gus', 'Hal', 'Ivy', 'Jon', 'Kim', 'Lou'];
    const SEN = ['director', 'vp', 'manager', 'senior'];
    for (let i = 0; i < 1000; i++) {
      h.clock.set(new Date(Date.parse(START) - (1000 - i) * 60_000).toISOString());
      const company = i >= 700 && i < 900 ? `Relay Co ${i - 700}` : i >= 900 ? `Relay Co ${(i - 900) * 2}` : `Company ${Math.floor(rnd() * 150)}`;
      // The 100 not enrolled are colleagues at C's companies, in C's group: relay brings them in.
      const groupOf = i < 400 ? A : i < 700 ? B : C;
      const lead = newLead(h.stamp(), groupOf.leadGroupId, {
        firstName: FIRST[i % FIRST.length] ?? 'X', lastName: `L${i}`, company, seniority: SEN[i % SEN.length] ?? '', email: `p${i}@example.test`,
        socialUrl: `https://social.example/in/p${i}`, rankingScore: Math.floor(rnd() * 100),
      });
      writes.push({ collection: 'leads', id: lead.id, before: null, after: lead });
      const c = i < 400 ? A : i < 700 ? B : i < 900 ? C : null;
      if (c) {
        // Most start unassigned and are picked up; some of A's start with Berlin.
        const e = newEnrollment(h.stamp(), lead.id, c.id, { currentStepId: c.steps[0]?.id ?? null, nextActionAt: START, sdrProfileId: c === A && i % 10 === 0 ? s1.id : null });
        writes.push({ collection: 'enrollments', id: e.id, before: null, after: e });
      }
    }
    h.clock.set(START);
    await h.seed(writes);
    for (const c of [A, B, C]) await h.call('campaigns.start', { campaignId: c.id });

    // The world and the runner.
    // People accept within the campaign's one-day wait often enough that some leads are in conversation.
    const behaviour = { acceptRate: 0.6, acceptDelayHours: [1, 20] as const };
    let network: SandboxNetwork = createSandboxNetwork({ seed: 'sim-14', clock: h.clock, behaviour });
    const makeRunner = (): Runner =>
      createRunner({ store: h.store, clock: h.clock, random: seededRandom(99), ids: h.ids, randomBytes: testSecrets.randomBytes, channels: channelHostOf({ sandbox: network }), actor: system, runnerId: 'desktop-1', leaseMs: 10 * 60_000 });
    let runner = makeRunner();

    const reports: TickReport[] = [];
    let usageAtRestart: { id: string; counts: Record<string, number> }[] = [];
    let s4AtRemoval: { unassigned: string[]; kept: string[] } = { unassigned: [], kept: [] };
    const end = Date.parse(START) + DAYS_TO_RUN * 86_400_000;
    const wall = Date.now();
    for (let t = Date.parse(START); t < end; t += TICK_MS) {
      h.clock.set(new Date(t).toISOString());
      const now = h.now();
      if (now === RESTART_AT) {
        const { docs } = await h.store.query('usage');
        usageAtRestart = docs.map((u) => ({ id: u.id, counts: { ...u.counts } }));
        // A crash-free restart of the whole host: a fresh runner and a fresh in-process network
        // that learns from the store what was sent.
        network = createSandboxNetwork({ seed: 'sim-14', clock: h.clock, behaviour });
        await restoreSandbox(h.store, network, h.clock);
        runner = makeRunner();
      }
      if (now === PAUSE_B[0]) await h.call('campaigns.pause', { campaignId: B.id });
      if (now === PAUSE_B[1]) await h.call('campaigns.start', { campaignId: B.id });
      if (now === PAUSE_S2[0]) await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s2.id, paused: true });
      if (now === PAUSE_S2[1]) await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s2.id, paused: false });
      if (now === REMOVE_S4_FROM_A) {
        const { docs } = await h.store.query('enrollments', { where: { op: 'and', conds: [{ op: 'eq', field: 'campaignId', value: A.id }, { op: 'eq', field: 'sdrProfileId', value: s4.id }, { op: 'eq', field: 'status', value: 'IN_PROGRESS' }] } });
        s4AtRemoval = { unassigned: docs.filter((e) => e.inConversationAt === null).map((e) => e.id), kept: docs.filter((e) => e.inConversationAt !== null).map((e) => e.id) };
        const res = await h.call('campaigns.updateSenders', { campaignId: A.id, remove: [s4.id] });
        expect(res.leads).toEqual({ assigned: s4AtRemoval.unassigned.length, inFlight: s4AtRemoval.kept.length });
      }
      reports.push(await runner.tick());
    }
    const elapsed = Date.now() - wall;

    // ---- Nothing went wrong inside the runner.
    const errors = reports.flatMap((r) => r.errors);
    expect(errors.slice(0, 5)).toEqual([]);
    expect(reports.flatMap((r) => r.skippedCampaigns).filter((s) => !(s.campaignId === B.id))).toEqual([]);

    const { docs: messages } = await h.store.query('messages');
    const out = messages.filter((m) => m.direction === 'out' && m.status === 'sent');
    const byCampaign = new Map([A, B, C].map((c) => [c.id, c]));
    const total = (kind?: string) => out.filter((m) => !kind || m.kind === kind).length;
    // The run did real work.
    expect(total()).toBeGreaterThan(1000);
    expect(total('connection_request')).toBeGreaterThan(150);

    // ---- No action outside its campaign's window.
    const outside = out.filter((m) => m.campaignId && !inWindow((byCampaign.get(m.campaignId) as Campaign).schedule, m.sentAt ?? ''));
    expect(outside.map((m) => m.sentAt)).toEqual([]);

    // ---- No limit exceeded on any day, per sender and counter, in the sender's zone; usage agrees.
    const counts = new Map<string, number>();
    for (const m of out) {
      const s = senders.find((x) => x.id === m.sdrProfileId) as Sender;
      const day = DateTime.fromISO(m.sentAt ?? '', { zone: s.timeZone }).toISODate();
      for (const k of countersOf(m)) counts.set(`${s.id}:${day}:${k}`, (counts.get(`${s.id}:${day}:${k}`) ?? 0) + 1);
    }
    // A ramping sender's limit of a day (independent restatement): 20% on its first day, +80%/14
    // a day, rounded up, at least 1, never above the limit. The day counts from the ramp's start.
    const limitOn = (s: Sender, k: keyof LimitSet, dayIso: string): number => {
      if (!s.rampUpStartedAt) return s.limits[k];
      const dayStart = DateTime.fromISO(dayIso, { zone: s.timeZone }).toMillis();
      const days = Math.max(0, Math.floor((dayStart - Date.parse(s.rampUpStartedAt)) / 86_400_000));
      const f = days >= 14 ? 1 : 0.2 + (0.8 * days) / 14;
      return s.limits[k] <= 0 ? 0 : Math.max(1, Math.min(s.limits[k], Math.ceil(s.limits[k] * f)));
    };
    let limitHits = 0;
    let rampHits = 0;
    for (const [key, n] of counts) {
      const [sid, day, k] = key.split(':') as [string, string, keyof LimitSet];
      const s = senders.find((x) => x.id === sid) as Sender;
      // The ramp factor is taken at the moment of each action, so the day's limit is at most the
      // one at the day's end.
      const end = DateTime.fromISO(day, { zone: s.timeZone }).plus({ days: 1 }).toISO() ?? day;
      expect(n, key).toBeLessThanOrEqual(limitOn(s, k, end));
      if (n === s.limits[k]) limitHits++;
      if (s.rampUpStartedAt && n < s.limits[k] && n === limitOn(s, k, end)) rampHits++;
    }
    expect(limitHits).toBeGreaterThan(20); // limits really bound the run
    expect(rampHits).toBeGreaterThan(0); // and the ramp-up bound the new sender

    // ---- Weekly cap: in any 7 days, no more connection requests than the cap.
    const berlinRequests = out.filter((m) => m.sdrProfileId === s1.id && m.kind === 'connection_request').map((m) => Date.parse(m.sentAt ?? '')).sort((a, b) => a - b);
    let weeklyMax = 0;
    for (const [i, t] of berlinRequests.entries()) weeklyMax = Math.max(weeklyMax, berlinRequests.filter((x, j) => j <= i && x > t - 7 * 86_400_000).length);
    expect(weeklyMax).toBeLessThanOrEqual(40);
    expect(weeklyMax).toBe(40); // the cap really bound Berlin
    const { docs: usage } = await h.store.query('usage');
    for (const u of usage) {
      for (const k of LIMIT_KEYS) expect(u.counts[k], `${u.id} ${k}`).toBe(counts.get(`${u.sdrProfileId}:${u.day}:${k}`) ?? 0);
    }

    // ---- No lead contacted twice by one step.
    const perStep = new Set<string>();
    for (const m of out.filter((x) => x.campaignId)) {
      const k = `${m.campaignId}|${m.leadId}|${m.stepId}`;
      expect(perStep.has(k), k).toBe(false);
      perStep.add(k);
    }

    // ---- DST: the local window held on both sides of each change.
    const hourUtc = (m: Message) => new Date(m.sentAt ?? '').getUTCHours();
    const aOut = out.filter((m) => m.campaignId === A.id);
    const bOut = out.filter((m) => m.campaignId === B.id);
    // Berlin 08:00 is 06:00Z in summer time (before 2026-10-25) and 07:00Z after.
    expect(aOut.some((m) => m.sentAt && m.sentAt < '2026-10-25' && hourUtc(m) === 6)).toBe(true);
    expect(aOut.filter((m) => m.sentAt && m.sentAt > '2026-10-25' && hourUtc(m) === 6)).toEqual([]);
    // New York 09:00 is 13:00Z before 2026-11-01 and 14:00Z after.
    expect(bOut.some((m) => m.sentAt && m.sentAt < '2026-11-01' && hourUtc(m) === 13)).toBe(true);
    expect(bOut.filter((m) => m.sentAt && m.sentAt > '2026-11-01' && hourUtc(m) === 13)).toEqual([]);
    expect(bOut.some((m) => m.sentAt && m.sentAt > '2026-11-01' && hourUtc(m) === 14)).toBe(true);

    // ---- Replies stop sequences: nothing goes to a lead in that campaign after its reply.
    const { docs: enrollments } = await h.store.query('enrollments');
    const replied = enrollments.filter((e) => e.status === 'REPLIED');
    expect(replied.length).toBeGreaterThan(20);
    const inbound = messages.filter((m) => m.direction === 'in');
    for (const e of replied) {
      const reply = inbound.filter((m) => m.leadId === e.leadId && m.campaignId === e.campaignId).map((m) => m.sentAt ?? '').sort()[0];
      expect(reply, e.id).toBeDefined();
      const after = out.filter((m) => m.leadId === e.leadId && m.campaignId === e.campaignId && (m.sentAt ?? '') > (reply ?? ''));
      expect(after.map((m) => m.id)).toEqual([]);
    }
    expect(enrollments.filter((e) => e.status === 'IN_PROGRESS' && inbound.some((m) => m.leadId === e.leadId && m.campaignId === e.campaignId))).toEqual([]);
    const { docs: meetings } = await h.store.query('activities', { where: { op: 'eq', field: 'metadata.eventKind', value: 'meeting_booked' } });
    expect(meetings.length).toBeGreaterThan(0);

    // ---- Pause and resume: nothing for B while paused, B continues after; nothing from New York while its outreach was paused.
    expect(bOut.filter((m) => (m.sentAt ?? '') >= PAUSE_B[0] && (m.sentAt ?? '') < PAUSE_B[1])).toEqual([]);
    expect(bOut.some((m) => (m.sentAt ?? '') >= PAUSE_B[1] && (m.sentAt ?? '') < '2026-10-29')).toBe(true);
    const s2Out = out.filter((m) => m.sdrProfileId === s2.id);
    expect(s2Out.filter((m) => (m.sentAt ?? '') >= PAUSE_S2[0] && (m.sentAt ?? '') < PAUSE_S2[1])).toEqual([]);
    expect(s2Out.some((m) => (m.sentAt ?? '') >= PAUSE_S2[1])).toBe(true);

    // ---- The sender removed from A handed its leads over; leads in conversation stayed and waited.
    expect(s4AtRemoval.unassigned.length).toBeGreaterThan(0);
    expect(s4AtRemoval.kept.length).toBeGreaterThan(0);
    expect(aOut.filter((m) => m.sdrProfileId === s4.id && (m.sentAt ?? '') >= REMOVE_S4_FROM_A)).toEqual([]);
    const handedOver = enrollments.filter((e) => s4AtRemoval.unassigned.includes(e.id));
    const pickedUp = handedOver.filter((e) => e.sdrProfileId !== null && e.sdrProfileId !== s4.id);
    expect(pickedUp.length).toBeGreaterThan(0);
    expect(handedOver.filter((e) => e.sdrProfileId === s4.id)).toEqual([]);
    expect(aOut.some((m) => handedOver.some((e) => e.leadId === m.leadId) && (m.sentAt ?? '') >= REMOVE_S4_FROM_A && m.sdrProfileId !== s4.id)).toBe(true);
    for (const e of enrollments.filter((x) => s4AtRemoval.kept.includes(x.id))) expect(e.sdrProfileId).toBe(s4.id);

    // ---- A restart mid-day kept the day's counts: counters already at their limit got nothing more that day.
    const full = usageAtRestart.flatMap((u) => {
      const s = senders.find((x) => u.id.startsWith(x.id)) as Sender;
      return LIMIT_KEYS.filter((k) => (u.counts[k] ?? 0) >= s.limits[k] && s.limits[k] > 0).map((k) => ({ id: u.id, k }));
    });
    expect(full.length).toBeGreaterThan(0);
    for (const { id: uid, k } of full) expect((usage.find((u) => u.id === uid) as { counts: LimitSet }).counts[k]).toBe(usageAtRestart.find((u) => u.id === uid)?.counts[k]);
    expect(out.some((m) => (m.sentAt ?? '') > RESTART_AT && (m.sentAt ?? '') < '2026-10-27')).toBe(true);

    // ---- Company relay brought colleagues in C, within the per-company maximum and seniorities.
    const cEnrollments = enrollments.filter((e) => e.campaignId === C.id);
    expect(cEnrollments.length).toBeGreaterThan(200);
    const { docs: leads } = await h.store.query('leads');
    const leadById = new Map(leads.map((l) => [l.id, l]));
    const perCompany = new Map<string, number>();
    for (const e of cEnrollments) {
      const l = leadById.get(e.leadId);
      perCompany.set(l?.company ?? '', (perCompany.get(l?.company ?? '') ?? 0) + 1);
    }
    expect(Math.max(...perCompany.values())).toBeLessThanOrEqual(2);
    for (const e of cEnrollments.filter((x) => x.createdAt > START)) expect(['director', 'vp']).toContain(leadById.get(e.leadId)?.seniority);

    console.log(`14 simulated days: ${reports.length} ticks in ${elapsed} ms; ${total()} actions (${total('connection_request')} requests, ${total('message')} messages, ${total('profile_visit')} visits), ${replied.length} replies, ${meetings.length} meetings, ${cEnrollments.length - 200} relayed`);
  }, 120_000);
});
