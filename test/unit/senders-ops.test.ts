import { describe, expect, it } from 'vitest';
import type { Actor } from '../../shared/context.ts';
import { DomainError } from '../../shared/errors.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import { emptyUsage, DEFAULT_LIMITS, DEFAULT_PLAN_MAX } from '../../shared/model/factories.ts';
import type { Sender } from '../../shared/model/index.ts';
import { validateWrites } from '../../shared/rules/index.ts';
import { Tx } from '../../shared/tx.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** Validates one raw sender write (as a replication push would be) and returns the refusal code. */
async function rawSenderWrite(h: Harness, actor: Actor, before: Sender | null, after: Sender): Promise<ErrorCode | null> {
  try {
    await validateWrites([{ collection: 'senders', id: after.id, before, after }], { actor, read: new Tx(h.store), now: h.clock.now() });
    return null;
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
}

describe('sdrProfiles.list and sdrProfiles.create', () => {
  it('lists the senders of the workspace only, with limits, plan maximums and status', async () => {
    const h = await makeHarness();
    await h.addSender({ name: 'Zoe Z' });
    const a = await h.addSender({ name: 'Amy A', premium: true });
    const { sdrProfiles } = await h.call('sdrProfiles.list', {});
    expect(sdrProfiles.map((s) => s.name)).toEqual(['Amy A', 'Zoe Z']);
    expect(sdrProfiles[0]).toMatchObject({ id: a.id, sdrProfileId: a.id, status: 'available', channel: 'sandbox', limits: DEFAULT_LIMITS, planMax: DEFAULT_PLAN_MAX, premium: true, outreachPaused: false });
    expect((await h.call('sdrProfiles.list', {}, h.foreignOwner)).sdrProfiles).toEqual([]);
  });

  it('connects an SMTP sender without storing its password in the shared document', async () => {
    const h = await makeHarness();
    const res = await h.call('sdrProfiles.create', {
      name: 'Mail Box', channel: 'email', timeZone: 'Europe/Paris',
      channelConfig: { host: 'smtp.acme.test', port: 587, secure: false, user: 'sdr', from: 'sdr@acme.test', password: 'hunter2' },
    }, h.member);
    expect(res).toMatchObject({ name: 'Mail Box', channel: 'email', capabilities: ['email'], timeZone: 'Europe/Paris', status: 'available' });
    expect(res.warnings.join(' ')).toMatch(/password was not stored/);
    const stored = await h.store.get('senders', res.id);
    expect(stored?.channelConfig).toEqual({ host: 'smtp.acme.test', port: 587, secure: false, user: 'sdr', from: 'sdr@acme.test' });
    expect(JSON.stringify(h.db.snapshot())).not.toContain('hunter2');
    expect(stored?.ownerMemberId).toBe(h.member.memberId);
    expect(stored?.limits).toEqual(DEFAULT_LIMITS);
  });

  it('gives social senders every capability except email, and InMail only when premium', async () => {
    const h = await makeHarness();
    const http = await h.call('sdrProfiles.create', { name: 'Hook', channel: 'http', channelConfig: { baseUrl: 'https://connector.acme.test/api' } });
    expect(http.capabilities).not.toContain('email');
    expect(http.capabilities).not.toContain('inmail');
    expect(http.capabilities).toContain('message');
    const premium = await h.call('sdrProfiles.create', { name: 'Sandy', channel: 'sandbox', premium: true });
    expect(premium.capabilities).toContain('inmail');
    expect(premium.capabilities).not.toContain('email');
    expect((await h.store.get('senders', premium.id))?.channelConfig).toEqual({ seed: premium.id });
    expect((await h.store.get('senders', http.id))?.channelConfig).toEqual({ baseUrl: 'https://connector.acme.test/api' });
  });

  it('refuses a sender without its channel settings or with an unknown time zone', async () => {
    const h = await makeHarness();
    await h.expectRefused(h.call('sdrProfiles.create', { name: 'No host', channel: 'email' } as never), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.create', { name: 'Bad url', channel: 'http', channelConfig: { baseUrl: 'ftp://x.test' } }), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.create', { name: 'Tz', channel: 'sandbox', timeZone: 'Mars/Olympus' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.create', { name: 'Tz', channel: 'pigeon' } as never), 'INVALID_INPUT');
  });
});

describe('sdrProfiles.setDailyLimits', () => {
  it('lowers a request above the plan maximum to it and reports it, without an error', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const res = await h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 500, reactions: 40, comments: DEFAULT_LIMITS.comments } }, h.admin);
    expect(res).toMatchObject({ dryRun: false, sdrProfileId: s.id, name: 'Sam Sender', before: DEFAULT_LIMITS, planMax: DEFAULT_PLAN_MAX });
    expect(res.after).toEqual({ ...DEFAULT_LIMITS, messages: DEFAULT_PLAN_MAX.messages, reactions: 40 });
    expect(res.changes).toEqual([
      { limit: 'messages', before: DEFAULT_LIMITS.messages, after: DEFAULT_PLAN_MAX.messages },
      { limit: 'reactions', before: DEFAULT_LIMITS.reactions, after: 40 },
    ]);
    expect(res.cappedAtPlan).toEqual([{ limit: 'messages', requested: 500, planMax: DEFAULT_PLAN_MAX.messages }]);
    expect((await h.store.get('senders', s.id))?.limits).toEqual(res.after);
  });

  it('refuses a plain member raising a limit, in a dry run too, and changes nothing', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const err = await h.expectRefused(h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 60, reactions: 1 } }, h.member), 'PERMISSION_DENIED');
    expect(err.message).toMatch(/messages/);
    await h.expectRefused(h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 60 }, dryRun: true }, h.member), 'PERMISSION_DENIED');
    // Asking for more than the plan still raises the limit: refused for a member.
    await h.expectRefused(h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { inmails: 9999 } }, h.member), 'PERMISSION_DENIED');
  });

  it('lets any member lower limits', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const res = await h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 20, profileVisits: 0 } }, h.member);
    expect(res.changes.map((c) => c.limit)).toEqual(['messages', 'profileVisits']);
    expect((await h.store.get('senders', s.id))?.limits).toMatchObject({ messages: 20, profileVisits: 0 });
  });

  it('previews with dryRun: same answer as the real call, nothing stored', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const input = { sdrProfileId: s.id, limits: { messages: 1000, connectionRequests: 10 } };
    const before = h.db.snapshot();
    const preview = await h.call('sdrProfiles.setDailyLimits', { ...input, dryRun: true });
    expect(h.db.snapshot()).toEqual(before);
    const real = await h.call('sdrProfiles.setDailyLimits', input);
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real.after.messages).toBe(DEFAULT_PLAN_MAX.messages);
  });

  it('answers NOT_FOUND for another workspace sender and INVALID_INPUT for bad limits', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    await h.expectRefused(h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: 1 } }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: -1 } }), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { emails: 5 } as never }), 'INVALID_INPUT');
  });

  it('writes nothing when nothing changes', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const commits = h.db.commits;
    const res = await h.call('sdrProfiles.setDailyLimits', { sdrProfileId: s.id, limits: { messages: DEFAULT_LIMITS.messages } }, h.member);
    expect(res.changes).toEqual([]);
    expect(h.db.commits).toBe(commits);
  });
});

describe('sender rules on raw writes', () => {
  it('refuses limits above the plan maximum, whoever writes them', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const over = { ...s, limits: { ...s.limits, messages: s.planMax.messages + 1 } };
    expect(await rawSenderWrite(h, h.owner, s, over)).toBe('RULE_VIOLATION');
    expect(await rawSenderWrite(h, { ...h.owner, isSystem: true }, s, over)).toBe('RULE_VIOLATION');
  });

  it('lets only owners, admins and the system raise limits or change the plan, owner or channel', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const raised = { ...s, limits: { ...s.limits, messages: s.limits.messages + 1 } };
    expect(await rawSenderWrite(h, h.member, s, raised)).toBe('PERMISSION_DENIED');
    expect(await rawSenderWrite(h, h.admin, s, raised)).toBeNull();
    expect(await rawSenderWrite(h, { ...h.member, isSystem: true }, s, raised)).toBeNull();
    const lowered = { ...s, limits: { ...s.limits, messages: 1 } };
    expect(await rawSenderWrite(h, h.member, s, lowered)).toBeNull();
    expect(await rawSenderWrite(h, h.member, s, { ...s, planMax: { ...s.planMax, messages: 10_000 } })).toBe('PERMISSION_DENIED');
    expect(await rawSenderWrite(h, h.member, s, { ...s, ownerMemberId: h.member.memberId })).toBe('PERMISSION_DENIED');
    expect(await rawSenderWrite(h, h.member, s, { ...s, channel: 'http' })).toBe('PERMISSION_DENIED');
    expect(await rawSenderWrite(h, h.owner, s, { ...s, planMax: { ...s.planMax, messages: 10_000 } })).toBeNull();
  });

  it("refuses a member's new sender above the default plan or limits, or owned by someone else", async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const fresh = { ...s, ownerMemberId: h.member.memberId };
    expect(await rawSenderWrite(h, h.member, null, fresh)).toBeNull();
    expect(await rawSenderWrite(h, h.member, null, { ...fresh, limits: { ...fresh.limits, messages: 120 } })).toBe('PERMISSION_DENIED');
    expect(await rawSenderWrite(h, h.member, null, { ...fresh, planMax: { ...fresh.planMax, messages: 900 } })).toBe('PERMISSION_DENIED');
    expect(await rawSenderWrite(h, h.member, null, { ...fresh, ownerMemberId: h.admin.memberId })).toBe('PERMISSION_DENIED');
  });
});

describe('sdrProfiles.pauseOutreach', () => {
  it('pauses a sender on every campaign (status paused) and resumes it (available)', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    expect(await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id }, h.member)).toEqual({ sdrProfileId: s.id, outreachPaused: true, status: 'paused' });
    expect(await h.store.get('senders', s.id)).toMatchObject({ outreachPaused: true, status: 'paused', updatedAt: h.now() });
    expect(await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id, paused: false }, h.member)).toEqual({ sdrProfileId: s.id, outreachPaused: false, status: 'available' });
    expect(await h.store.get('senders', s.id)).toMatchObject({ outreachPaused: false, status: 'available' });
  });

  it('resumes into limited while the sender is still backing off, available once the back-off is over', async () => {
    const h = await makeHarness();
    const s = await h.addSender({ outreachPaused: true, status: 'paused', backoffUntil: '2026-11-16T12:00:00.000Z' });
    expect((await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id, paused: false })).status).toBe('limited');
    await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id, paused: true });
    h.clock.set('2026-11-16T12:00:01.000Z');
    expect((await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id, paused: false })).status).toBe('available');
  });

  it('keeps showing a disconnected account as disconnected', async () => {
    const h = await makeHarness();
    const s = await h.addSender({ status: 'disconnected' });
    expect(await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id })).toEqual({ sdrProfileId: s.id, outreachPaused: true, status: 'disconnected' });
    expect((await h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id, paused: false })).status).toBe('disconnected');
  });

  it('answers NOT_FOUND for a sender of another workspace', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    await h.expectRefused(h.call('sdrProfiles.pauseOutreach', { sdrProfileId: s.id }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('sdrProfiles.getUsage', () => {
  it("reports today's usage in the sender's time zone against its limits", async () => {
    const h = await makeHarness();
    // 10:00 UTC on 16 November is already 17 November at UTC+14.
    const s = await h.addSender({ timeZone: 'Pacific/Kiritimati' });
    const usage = emptyUsage(h.main.workspaceId, s.id, '2026-11-17', h.now());
    usage.counts.messages = 12;
    usage.counts.searches = 100;
    usage.counts.emails = 3;
    usage.counts.profileVisits = 999;
    await h.seed([{ collection: 'usage', id: usage.id, before: null, after: usage }]);
    const res = await h.call('sdrProfiles.getUsage', { sdrProfileId: s.id }, h.member);
    expect(res.day).toBe('2026-11-17');
    expect(res.used).toMatchObject({ messages: 12, searches: 100, emails: 3, reactions: 0 });
    expect(res.limits).toEqual({ ...DEFAULT_LIMITS, searches: 100 });
    expect(res.remaining).toMatchObject({ messages: DEFAULT_LIMITS.messages - 12, searches: 0, profileVisits: 0, reactions: DEFAULT_LIMITS.reactions });
  });

  it('reports zero usage for a day without actions, and takes an explicit day', async () => {
    const h = await makeHarness();
    const s = await h.addSender();
    const res = await h.call('sdrProfiles.getUsage', { sdrProfileId: s.id, day: '2026-01-02' });
    expect(res.day).toBe('2026-01-02');
    expect(Object.values(res.used).every((n) => n === 0)).toBe(true);
    expect(res.remaining).toEqual(res.limits);
    await h.expectRefused(h.call('sdrProfiles.getUsage', { sdrProfileId: s.id, day: '2026-02-31' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('sdrProfiles.getUsage', { sdrProfileId: s.id }, h.foreignOwner), 'NOT_FOUND');
  });
});
