/** The runner's steps on their own (the parts of plan.ts, pick-sender.ts, act.ts, step-content.ts,
 * record.ts and company-relay.ts): lead-picking order, re-planning's change detection, a sender's
 * room, the actor's checks, intent before action, variant choice, the step after an outcome and
 * company relay's choice. The runner as a whole is tested in engine-runner.test.ts and runner-*. */
import { describe, expect, it } from 'vitest';
import { seededRandom, testSecrets } from '../support/harness.ts';
import { perform, senderRefusal, skipReason, stopReasonFor, waitEnd } from '../../shared/engine/act.ts';
import { ChannelFailure } from '../../shared/engine/channel.ts';
import type { ChannelAction, ChannelSendResult } from '../../shared/engine/channel.ts';
import { nextColleague } from '../../shared/engine/company-relay.ts';
import { createLeases } from '../../shared/engine/leases.ts';
import { budgetsFor, senderDay } from '../../shared/engine/limits.ts';
import { countConnection, roomFor } from '../../shared/engine/pick-sender.ts';
import { gateFingerprint, newReplanState, noteGateChanges, pickingQueue } from '../../shared/engine/plan.ts';
import { stepAfter } from '../../shared/engine/record.ts';
import type { StepAction } from '../../shared/engine/record.ts';
import { createCore, emptyReport } from '../../shared/engine/runner-core.ts';
import type { RunnerCore, TickState } from '../../shared/engine/runner-core.ts';
import { startOfNextDay } from '../../shared/engine/schedule.ts';
import { pickVariant } from '../../shared/engine/step-content.ts';
import { emptyUsage, newCampaign, newEnrollment, newLead, newMessage, newSender, newStep } from '../../shared/model/factories.ts';
import type { Campaign, Enrollment, Lead, Sender, Stage, Step } from '../../shared/model/index.ts';
import { readiness } from '../../shared/rules/readiness.ts';
import { Tx } from '../../shared/tx.ts';
import { ScriptedChannel, engineWorld } from './engine-fixtures.ts';
import type { Sent } from './engine-fixtures.ts';

const stamp = (id: string, now = '2026-11-16T10:00:00.000Z') => ({ id, workspaceId: 'w', now });
const uuid = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** A tick's state as runner.ts builds it, with these senders held and these campaigns ready. */
function tickState(now: Date, senders: readonly Sender[], campaigns: readonly Campaign[] = [], stages: readonly Stage[] = []): TickState {
  return {
    now, nowMs: now.getTime(), nowIso: now.toISOString(), report: emptyReport(now.toISOString()),
    senders: new Map(senders.map((s) => [s.id, s])), held: new Set(senders.map((s) => s.id)), stages: new Map(stages.map((s) => [s.id, s])),
    groups: new Map(), campaigns: new Map(campaigns.map((c) => [c.id, c])), load: new Map(), rr: new Map(), memo: new Map(), workspace: null,
  };
}

async function world() {
  const w = await engineWorld();
  const core: RunnerCore = createCore(
    { store: w.h.store, clock: w.h.clock, random: seededRandom(3), ids: w.h.ids, randomBytes: testSecrets.randomBytes, channels: w.channels, actor: w.system, spacing: { minSeconds: 0, jitterSeconds: 0 } },
    readiness,
  );
  const stages = (await w.h.store.query('stages')).docs;
  return { ...w, core, stages, st: (senders: readonly Sender[], campaigns: readonly Campaign[] = []) => tickState(w.h.clock.now(), senders, campaigns, stages) };
}

describe('lead picking (pickingQueue)', () => {
  it('sequences under way first, as given; then new ones, newest lead first where the campaign prefers new leads, else by enrollment', () => {
    const prefers: Campaign = { ...newCampaign(stamp('ca'), 'Prefers new', 'g', 's'), settings: { preferNewLeads: true, companyRelay: { enabled: false, maxPersonsPerCompany: 3, seniorities: [] } } };
    const plain = newCampaign(stamp('cb'), 'In order', 'g', 's');
    const started = (id: string, c: Campaign) => newEnrollment(stamp(id), `lead-${id}`, c.id, { doneSteps: [{ stepId: 'x', at: '2026-11-16T09:00:00.000Z', outcome: 'sent' }] });
    const fresh = (id: string, c: Campaign, createdAt: string) => newEnrollment(stamp(id, createdAt), `lead-${id}`, c.id);
    const due: Enrollment[] = [
      fresh('f-old-lead', prefers, '2026-11-01T00:00:00.000Z'),
      started('s1', plain),
      fresh('f-late', plain, '2026-11-03T00:00:00.000Z'),
      fresh('f-new-lead', prefers, '2026-11-02T00:00:00.000Z'),
      fresh('f-early', plain, '2026-11-02T00:00:00.000Z'),
      started('s2', prefers),
    ];
    const leadCreated = new Map([['lead-f-old-lead', '2026-01-01T00:00:00.000Z'], ['lead-f-new-lead', '2026-06-01T00:00:00.000Z']]);
    const order = pickingQueue(due, new Map([[prefers.id, prefers], [plain.id, plain]]), leadCreated);
    expect(order.map((e) => e.id)).toEqual(['s1', 's2', 'f-new-lead', 'f-old-lead', 'f-early', 'f-late']);
  });
});

describe('re-planning notices a changed gate (noteGateChanges)', () => {
  it('a campaign seen first or whose gates changed is re-planned; a quiet one is not; one ready again after a pause counts as changed', () => {
    const sender = newSender(stamp('s'), { name: 'Sam', ownerMemberId: 'm', channel: 'sandbox' });
    const c: Campaign = { ...newCampaign(stamp('c'), 'C', 'g', 'q'), senders: [{ sdrProfileId: sender.id, paused: false }] };
    const at = new Date('2026-11-16T10:00:00.000Z');
    const replan = newReplanState();

    noteGateChanges(replan, tickState(at, [sender], [c]));
    expect([...replan.pending]).toEqual([c.id]);
    replan.pending.clear();
    noteGateChanges(replan, tickState(at, [sender], [c]));
    expect(replan.pending.size).toBe(0);

    const raised = { ...sender, limits: { ...sender.limits, messages: sender.limits.messages + 10 } };
    expect(gateFingerprint(tickState(at, [raised], [c]), c)).not.toBe(gateFingerprint(tickState(at, [sender], [c]), c));
    noteGateChanges(replan, tickState(at, [raised], [c]));
    expect([...replan.pending]).toEqual([c.id]);
    replan.pending.clear();

    // Not ready for a tick (not in st.campaigns), then ready again with the very same gates.
    noteGateChanges(replan, tickState(at, [raised], []));
    expect(replan.fingerprints.has(c.id)).toBe(false);
    noteGateChanges(replan, tickState(at, [raised], [c]));
    expect([...replan.pending]).toEqual([c.id]);
  });
});

describe("a sender's room (roomFor)", () => {
  it('room: the budgets the action takes and the sender\'s day; a used-up day: daily_limit until the sender\'s next midnight', async () => {
    const w = await world();
    const sender = await w.h.addSender({ timeZone: 'Asia/Tokyo', limits: { messages: 1, inmails: 0, connectionRequests: 10, connectionRequestsWithNote: 5, comments: 0, reactions: 10, profileVisits: 10 } });
    const st = w.st([sender]);
    const day = senderDay(sender, st.now);
    expect(await roomFor(w.h.store, st, new Tx(w.h.store), sender, 'message', false)).toEqual({ full: null, budgets: [{ counter: 'messages', limit: 1 }], day });
    const base = emptyUsage(sender.workspaceId, sender.id, day, st.nowIso);
    const usage = { ...base, counts: { ...base.counts, messages: 1 } };
    await w.h.seed([{ collection: 'usage', id: usage.id, before: null, after: usage }]);
    expect(await roomFor(w.h.store, st, new Tx(w.h.store), sender, 'message', false)).toEqual({ full: 'daily_limit', until: startOfNextDay('Asia/Tokyo', st.now) });
    // Other counters still have room.
    expect((await roomFor(w.h.store, st, new Tx(w.h.store), sender, 'profile_visit', false)).full).toBeNull();
  });

  it('connection requests: the weekly cap counts the last 7 days (sent, sending, unknown), has room again when the oldest ages out, and counts requests made this tick', async () => {
    const w = await world();
    const sender = await w.h.addSender({ weeklyConnectionLimit: 3 });
    const lead = await w.h.addLead({ firstName: 'Ada' });
    const now = w.h.clock.now().getTime();
    const request = (daysAgo: number, status: 'sent' | 'sending' | 'unknown' | 'failed') => ({
      ...newMessage(w.h.stamp(), { leadId: lead.id, sdrProfileId: sender.id, chatId: 'c', direction: 'out', kind: 'connection_request', text: '', status }),
      createdAt: new Date(now - daysAgo * 86_400_000).toISOString(),
    });
    const oldest = request(6, 'sent');
    // Older than 7 days, or refused: not counted.
    const counted = [oldest, request(3, 'unknown')];
    await w.h.seed([request(8, 'sent'), ...counted, request(2, 'failed')].map((m) => ({ collection: 'messages' as const, id: m.id, before: null, after: m })));
    const st = w.st([sender]);
    const room = await roomFor(w.h.store, st, new Tx(w.h.store), sender, 'connection_request', false);
    expect(room.full).toBeNull();
    countConnection(st, sender);
    expect(await roomFor(w.h.store, st, new Tx(w.h.store), sender, 'connection_request', false)).toEqual({ full: 'weekly_limit', until: new Date(Date.parse(oldest.createdAt) + 7 * 86_400_000) });
  });
});

describe("the actor's checks", () => {
  it('a sequence stops for a deleted, Do Not Contact, blocklisted or lost lead (stopReasonFor)', async () => {
    const w = await world();
    const lost = w.stages.find((s) => s.category === 'LOST');
    const lead = newLead(stamp('l'), 'g');
    const stages = new Map(w.stages.map((s) => [s.id, s]));
    expect(stopReasonFor(null, stages)).toBe('lead_deleted');
    expect(stopReasonFor({ ...lead, doNotContact: true }, stages)).toBe('do_not_contact');
    expect(stopReasonFor({ ...lead, blocklisted: true }, stages)).toBe('blocklisted');
    expect(stopReasonFor({ ...lead, pipelineStageId: lost?.id ?? 'missing' }, stages)).toBe('lead_lost');
    expect(stopReasonFor(lead, stages)).toBeNull();
  });

  it('a wait counts from the step before it, never from later than now (waitEnd)', () => {
    const wait = newStep('w', 'WAIT', { waitTimeSeconds: 3600 });
    const now = Date.parse('2026-11-16T10:00:00.000Z');
    const e = newEnrollment(stamp('e'), 'l', 'c', { doneSteps: [{ stepId: 'a', at: '2026-11-16T08:00:00.000Z', outcome: 'sent' }] });
    expect(waitEnd(e, wait, now).toISOString()).toBe('2026-11-16T09:00:00.000Z');
    expect(waitEnd({ ...e, doneSteps: [] }, wait, now).toISOString()).toBe('2026-11-16T11:00:00.000Z');
    expect(waitEnd({ ...e, doneSteps: [{ stepId: 'a', at: '2026-11-16T12:00:00.000Z', outcome: 'sent' }] }, wait, now).toISOString()).toBe('2026-11-16T11:00:00.000Z');
  });

  it('a sender that cannot do the step, or whose note limit the filled-in note exceeds, is refused with why (senderRefusal)', () => {
    const mail = newSender(stamp('m'), { name: 'Sam Mail', ownerMemberId: 'o', channel: 'email' });
    const social = { ...newSender(stamp('s'), { name: 'Sam Social', ownerMemberId: 'o', channel: 'sandbox' }), connectionNoteMaxLength: 20 };
    const request = newStep('r', 'CONNECTION_REQUEST', { content: 'Hi {{First name}}' });
    expect(senderRefusal(request, mail, 'Hi Ada', true)).toBe('Sam Mail cannot perform connection request: its account cannot send connection requests');
    expect(senderRefusal(request, social, 'Hi Bartholomew-Alexander', true)).toBe("the connection note is 24 characters once merge fields are filled in; Sam Social's limit is 20");
    expect(senderRefusal(request, social, 'Hi Bartholomew-Alexander', false)).toBeNull();
    expect(senderRefusal(request, social, 'Hi Ada', true)).toBeNull();
  });

  it('an action is skipped when its condition does not hold, or an email step has no working address (skipReason)', async () => {
    const w = await world();
    const tx = new Tx(w.h.store);
    const email = newStep('m', 'EMAIL');
    const e = newEnrollment(stamp('e'), 'l', 'c');
    const lead = newLead(stamp('l'), 'g', { email: 'ada@example.test' });
    expect(await skipReason(tx, email, e, lead)).toBeNull();
    expect(await skipReason(tx, email, e, { ...lead, email: ' ' })).toBe('the lead has no email address');
    expect(await skipReason(tx, email, e, { ...lead, emailBouncedAt: '2026-11-01T00:00:00.000Z', emailBounceReason: '5.1.1 User unknown' })).toBe("the lead's email bounced (5.1.1 User unknown)");
    expect(await skipReason(tx, newStep('x', 'SEND_MESSAGE', { sendCondition: 'HAS_EMAIL' }), e, { ...lead, email: '' })).toBe('HAS_EMAIL does not hold');
    expect(await skipReason(tx, newStep('x', 'SEND_MESSAGE', { sendCondition: 'HAS_EMAIL' }), e, lead)).toBeNull();
  });
});

/** A channel that notes the state of the step's message at the moment it is asked to act. */
class Peeking extends ScriptedChannel {
  seen: (string | null)[] = [];
  constructor(private readonly statusOf: (ref: string) => Promise<string | null>) {
    super();
  }
  override async send(sender: Sender, lead: Lead, action: ChannelAction, ref: string): Promise<ChannelSendResult> {
    this.seen.push(await this.statusOf(ref));
    return super.send(sender, lead, action, ref);
  }
}

describe('intent, action, outcome (perform)', () => {
  async function oneAction() {
    const w = await world();
    const sender = await w.h.addSender({ name: 'Sam Http', channel: 'http' });
    const step = newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' });
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: [step] });
    const lead = await w.h.addLead({ firstName: 'Ada' });
    const e = await w.enroll(lead, c, { sdrProfileId: sender.id });
    const channel = new Peeking(async (ref) => (await w.h.store.get('messages', ref))?.status ?? null);
    const a: StepAction = { campaign: c, enrollmentId: e.id, leadId: lead.id, step, sender, kind: 'message', action: { kind: 'message', text: 'Hi', chatId: null, voiceNote: null }, ref: w.h.ids.uuid() };
    const st = w.st([sender], [c]);
    const counted = { budgets: budgetsFor(sender, 'message'), day: senderDay(sender, st.now), variantId: null };
    const run = () => perform(w.core, createLeases(w.core), st, a, lead, channel, counted);
    return { w, sender, c, e, a, st, channel, run, counted };
  }

  it('the intent is committed before the channel is asked; the outcome replaces it, counts the usage and moves the sequence on', async () => {
    const { w, sender, e, a, channel, run, counted } = await oneAction();
    expect(await run()).toBe('acted');
    expect(channel.seen).toEqual(['sending']);
    expect(channel.sent.map((x: Sent) => x.ref)).toEqual([a.ref]);
    const m = await w.h.store.get('messages', a.ref);
    expect(m?.status).toBe('sent');
    expect(m?.externalId).toBe(`ext-${a.ref}`);
    expect((await w.h.store.get('usage', `${sender.id}:${counted.day}`))?.counts.messages).toBe(1);
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('refused for this lead: the message is failed and the sequence stops; a limit: the intent goes, the sender backs off and the enrollment waits for it', async () => {
    const refused = await oneAction();
    refused.channel.failNext = new ChannelFailure('rejected', 'the profile is gone');
    expect(await refused.run()).toBe('halt');
    const m = await refused.w.h.store.get('messages', refused.a.ref);
    expect([m?.status, m?.error]).toEqual(['failed', 'the profile is gone']);
    const stopped = await refused.w.enrollment(refused.e.id);
    expect([stopped.status, stopped.stoppedReason]).toEqual(['STOPPED', 'Message failed: the profile is gone']);

    const limited = await oneAction();
    limited.channel.failNext = new ChannelFailure('limited', 'slow down', 600);
    expect(await limited.run()).toBe('halt');
    expect(limited.channel.seen).toEqual(['sending']);
    expect(await limited.w.h.store.get('messages', limited.a.ref)).toBeNull();
    const until = new Date(limited.st.nowMs + 600_000).toISOString();
    expect((await limited.w.h.store.get('senders', limited.sender.id))?.backoffUntil).toBe(until);
    const parked = await limited.w.enrollment(limited.e.id);
    expect([parked.status, parked.nextActionAt, parked.waitReason]).toEqual(['IN_PROGRESS', until, 'sender_limited']);
  });
});

describe('what a step says (pickVariant)', () => {
  const v = (id: string) => ({ id, name: id, text: `text ${id}`, subject: '' });
  const step = (mode: Step['variantAssignment']['mode'], defaultVariantId: string | null = null): Step =>
    newStep('s', 'SEND_MESSAGE', { content: 'own text', variants: [v('a'), v('b'), v('c')], variantAssignment: { mode, defaultVariantId } });

  it('the remembered variant first; else random, the least assigned (round robin, the first on a tie) or the default; none without variants', () => {
    expect(pickVariant(step('random'), 'c', () => 0, null)?.id).toBe('c');
    expect(pickVariant(step('random'), undefined, () => 0.5, null)?.id).toBe('b');
    expect(pickVariant(step('random'), 'gone', () => 0.99, null)?.id).toBe('c');
    expect(pickVariant(step('round_robin'), undefined, () => 0, new Map([['a', 2], ['b', 1], ['c', 1]]))?.id).toBe('b');
    expect(pickVariant(step('round_robin'), undefined, () => 0, new Map([['a', 0], ['b', 0], ['c', 0]]))?.id).toBe('a');
    expect(pickVariant(step('default', 'b'), undefined, () => 0, null)?.id).toBe('b');
    expect(pickVariant(step('default'), undefined, () => 0, null)).toBeNull();
    expect(pickVariant(newStep('s', 'SEND_MESSAGE', { variantAssignment: { mode: 'random', defaultVariantId: null } }), undefined, () => 0, null)).toBeNull();
  });
});

describe('the step after an outcome (stepAfter)', () => {
  it("a condition's outcome chooses its branch; another step goes on along its path, and the last ends it", () => {
    const first = newStep('1', 'CONNECTION_REQUEST');
    const cond = newStep('2', 'CONDITION', { sendCondition: 'CONNECTED' });
    const yes = newStep('3', 'SEND_MESSAGE', { parentStepId: '2', branch: 'yes' });
    const no = newStep('4', 'PROFILE_VISIT', { parentStepId: '2', branch: 'no' });
    const c: Campaign = { ...newCampaign(stamp('c'), 'C', 'g', 'q'), steps: [first, cond, yes, no] };
    expect(stepAfter(c, first, 'sent')?.id).toBe('2');
    expect(stepAfter(c, cond, 'yes')?.id).toBe('3');
    expect(stepAfter(c, cond, 'no')?.id).toBe('4');
    expect(stepAfter(c, yes, 'sent')).toBeNull();
  });
});

describe("company relay's choice (nextColleague)", () => {
  it('the best-ranked colleague never contacted, not excluded, of the wanted seniority; none once the company has its share in the campaign', () => {
    const c: Campaign = { ...newCampaign(stamp('c'), 'C', 'g', 'q'), settings: { preferNewLeads: false, companyRelay: { enabled: true, maxPersonsPerCompany: 3, seniorities: ['VP', ' director '] } } };
    const lostStage: Stage = { id: 'lost', workspaceId: 'w', createdAt: '', updatedAt: '', name: 'Lost', category: 'LOST', colorHex: '#000000', position: 9 };
    const person = (n: number, fields: Partial<Lead>) => newLead(stamp(uuid(n)), 'g', { company: 'Acme', seniority: 'VP', rankingScore: 50, ...fields });
    const done = person(1, {});
    const best = person(2, { rankingScore: 90, seniority: 'Director' });
    const colleagues = [
      done,
      person(3, { rankingScore: 99, seniority: 'Intern' }),
      person(4, { rankingScore: 99, doNotContact: true }),
      person(5, { rankingScore: 99, blocklisted: true }),
      person(6, { rankingScore: 99, pipelineStageId: 'lost' }),
      person(7, { rankingScore: 99 }),
      person(8, { rankingScore: 99 }),
      best,
      // As well ranked, an id that sorts first, a worse fit.
      person(0, { rankingScore: 90, leadFitScore: -1 }),
    ];
    const theirs = [
      newEnrollment(stamp('e1'), done.id, c.id, { status: 'COMPLETED' }),
      newEnrollment(stamp('e7'), uuid(7), 'other-campaign'),
      newEnrollment(stamp('e8'), uuid(8), 'other-campaign', { status: 'STOPPED', doneSteps: [{ stepId: 's', at: '', outcome: 'sent' }] }),
    ];
    const stages = new Map([[lostStage.id, lostStage]]);
    expect(nextColleague(c, colleagues, theirs, stages)?.id).toBe(best.id);
    const full = [...theirs, newEnrollment(stamp('e2'), uuid(20), c.id), newEnrollment(stamp('e3'), uuid(21), c.id)];
    expect(nextColleague(c, colleagues, full, stages)).toBeNull();
  });
});
