/**
 * The campaign and lead-group rules judged on raw document changes, the way a replication push from
 * a desktop reaches the server: validate, then commit only when the rules pass.
 */
import { describe, expect, it } from 'vitest';
import type { Actor } from '../../shared/context.ts';
import { newStep } from '../../shared/model/factories.ts';
import type { Campaign, LeadGroup, Step } from '../../shared/model/index.ts';
import { validateWrites } from '../../shared/rules/index.ts';
import { readiness } from '../../shared/rules/readiness.ts';
import { structureProblems } from '../../shared/sequence.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { Tx } from '../../shared/tx.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** A push: the rules judge the writes; only then are they stored. */
async function push(h: Harness, writes: AnyWrite[], actor: Actor = h.owner): Promise<void> {
  await validateWrites(writes, { actor, read: h.store, now: h.clock.now() });
  await h.store.commit(writes);
}

const campaignWrite = (before: Campaign, after: Campaign): AnyWrite => ({ collection: 'campaigns', id: before.id, before, after: { ...after, updatedAt: new Date(Date.parse(before.updatedAt) + 1000).toISOString() } });

async function setup() {
  const h = await makeHarness();
  const sender = await h.addSender({ name: 'Sam Sender' });
  const msg = newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' });
  const cond = newStep(h.ids.uuid(), 'CONDITION', { sendCondition: 'REPLIED' });
  const yes = newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 60, parentStepId: cond.id, branch: 'yes' });
  const no = newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Bump', parentStepId: cond.id, branch: 'no' });
  const c = await h.addCampaign({ senderIds: [sender.id], steps: [msg, cond, yes, no] });
  return { h, sender, c, msg, cond, yes, no };
}

const withStep = (c: Campaign, id: string, patch: Partial<Step>): Campaign => ({ ...c, steps: c.steps.map((s) => (s.id === id ? { ...s, ...patch } : s)) });

describe('campaign rules on raw writes', () => {
  it('refuses sequence changes unless the result is paused; pausing and editing in one write is allowed', async () => {
    const { h, c, msg } = await setup();
    const running = { ...c, running: true };
    await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: running }]);
    await h.expectRefused(push(h, [campaignWrite(running, withStep(running, msg.id, { content: 'Edited' }))]), 'CAMPAIGN_NOT_PAUSED');
    // Starting and editing in one write is refused too.
    await h.expectRefused(push(h, [campaignWrite(c, withStep(running, msg.id, { content: 'Edited' }))]), 'CAMPAIGN_NOT_PAUSED');
    // Schedule and sender changes pass while running.
    const later = { ...running, schedule: { ...running.schedule, timeZone: 'Europe/Berlin' } };
    await push(h, [campaignWrite(running, later)]);
    const stored = await h.store.get('campaigns', c.id);
    if (!stored) throw new Error('missing');
    await push(h, [campaignWrite(stored, withStep({ ...stored, running: false }, msg.id, { content: 'Edited while pausing' }))]);
    expect((await h.store.get('campaigns', c.id))?.steps[0]?.content).toBe('Edited while pausing');
  });

  it('refuses an invalid schedule, and leaves an old invalid one alone when it does not change', async () => {
    const { h, c } = await setup();
    const bad = { ...c, schedule: { ...c.schedule, days: { ...c.schedule.days, monday: { enabled: true, start: '17:00', end: '09:00' } } } };
    const e = await h.expectRefused(push(h, [campaignWrite(c, bad)]), 'INVALID_SCHEDULE');
    expect(e.details.day).toBe('monday');
    await h.expectRefused(push(h, [campaignWrite(c, { ...c, schedule: { ...c.schedule, timeZone: 'Not/AZone' } })]), 'INVALID_SCHEDULE');
    const allOff = Object.fromEntries(Object.entries(c.schedule.days).map(([d, w]) => [d, { ...w, enabled: false }])) as Campaign['schedule']['days'];
    await h.expectRefused(push(h, [campaignWrite(c, { ...c, schedule: { ...c.schedule, days: allOff } })]), 'INVALID_SCHEDULE');

    await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: bad }]);
    await push(h, [campaignWrite(bad, { ...bad, name: 'Renamed' })]);
    expect((await h.store.get('campaigns', c.id))?.name).toBe('Renamed');
  });

  it('keeps the last sender and only accepts senders of the workspace', async () => {
    const { h, c } = await setup();
    await h.expectRefused(push(h, [campaignWrite(c, { ...c, senders: [] })]), 'LAST_SENDER');
    await h.expectRefused(push(h, [campaignWrite(c, { ...c, senders: [...c.senders, { sdrProfileId: h.ids.uuid(), paused: false }] })]), 'NOT_FOUND');
    await h.expectRefused(push(h, [campaignWrite(c, { ...c, senders: [...c.senders, ...c.senders] })]), 'RULE_VIOLATION');
  });

  it('refuses broken sequence shapes and emptying a condition path', async () => {
    const { h, c, cond, yes, no } = await setup();
    const steps = (list: Step[]): Campaign => ({ ...c, steps: list });
    const [msg] = c.steps;
    if (!msg) throw new Error('missing');
    // The only no step removed.
    await h.expectRefused(push(h, [campaignWrite(c, steps([msg, cond, yes]))]), 'LAST_STEP_OF_BRANCH');
    // Orphan, branch without parent, condition not last, a step under a non-condition.
    await h.expectRefused(push(h, [campaignWrite(c, steps([msg, cond, yes, { ...no, parentStepId: h.ids.uuid() }]))]), 'STEP_INVALID');
    await h.expectRefused(push(h, [campaignWrite(c, steps([msg, cond, yes, no, newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 5, branch: 'yes' })]))]), 'STEP_INVALID');
    await h.expectRefused(push(h, [campaignWrite(c, steps([msg, cond, yes, no, newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 5 })]))]), 'STEP_INVALID');
    await h.expectRefused(push(h, [campaignWrite(c, steps([msg, cond, yes, no, newStep(h.ids.uuid(), 'WAIT', { waitTimeSeconds: 5, parentStepId: msg.id, branch: 'no' })]))]), 'STEP_INVALID');
    // An unknown type is refused by the schema before any rule, and named by the shape check.
    await h.expectRefused(push(h, [campaignWrite(c, steps([msg, cond, yes, no, { ...newStep(h.ids.uuid(), 'WAIT'), type: 'TELEPORT' as Step['type'] }]))]), 'INVALID_INPUT');
    expect(structureProblems([{ ...newStep('x', 'WAIT'), type: 'TELEPORT' as Step['type'] }])[0]?.code).toBe('STEP_INVALID');
  });

  it('refuses unknown merge fields and steps a sender cannot perform, but not old problems of untouched steps', async () => {
    const { h, c, msg, sender } = await setup();
    const e = await h.expectRefused(push(h, [campaignWrite(c, withStep(c, msg.id, { subject: 'About {{Favourite fruit}}' }))]), 'UNKNOWN_MERGE_FIELD');
    expect(e.details).toMatchObject({ unknown: ['Favourite fruit'], stepId: msg.id });
    const inmail = newStep(h.ids.uuid(), 'INMAIL', { subject: 'Hi', content: 'Hello' });
    const withInmail = { ...c, steps: [msg, inmail, ...c.steps.slice(1)] };
    const s = await h.expectRefused(push(h, [campaignWrite(c, withInmail)]), 'STEP_INVALID');
    expect(s.details).toMatchObject({ stepId: inmail.id, sdrProfileId: sender.id });
    await h.expectRefused(push(h, [campaignWrite(c, withStep(c, msg.id, { type: 'CONNECTION_REQUEST', content: 'n'.repeat(301) }))]), 'STEP_INVALID');

    // The InMail step got in without the rules (an old document): an unrelated change still passes.
    await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: withInmail }]);
    await push(h, [campaignWrite(withInmail, withStep(withInmail, msg.id, { content: 'Hello {{Company|there}}' }))]);
    expect((await h.store.get('campaigns', c.id))?.steps[0]?.content).toBe('Hello {{Company|there}}');
  });

  it('guards the start: owner or admin, active subscription, readiness', async () => {
    const { h, c } = await setup();
    const start = (x: Campaign): AnyWrite => campaignWrite(x, { ...x, running: true, startedAt: h.now() });
    await h.expectRefused(push(h, [start(c)], h.member), 'PERMISSION_DENIED');
    const noSenders = { ...c, senders: [] };
    await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: noSenders }]);
    const r = await h.expectRefused(push(h, [start(noSenders)], h.admin), 'READINESS_FAILED');
    expect(r.details.problems).toEqual([expect.objectContaining({ severity: 'error' })]);

    const ws = await h.store.get('workspaces', h.main.workspaceId);
    if (!ws) throw new Error('missing');
    await h.seed([{ collection: 'workspaces', id: ws.id, before: ws, after: { ...ws, subscriptionStatus: 'past_due' } }]);
    await h.expectRefused(push(h, [start(noSenders)], { ...h.owner, isSystem: true }), 'SUBSCRIPTION_INACTIVE');
  });

  it('refuses creating a campaign that is already running with a sequence', async () => {
    const { h, c } = await setup();
    const fresh = { ...c, id: h.ids.uuid(), running: true };
    await h.expectRefused(push(h, [{ collection: 'campaigns', id: fresh.id, before: null, after: fresh }]), 'CAMPAIGN_NOT_PAUSED');
  });
});

describe('lead group rules on raw writes', () => {
  async function groupSetup() {
    const { h, c } = await setup();
    const group = await h.store.get('leadGroups', c.leadGroupId);
    if (!group) throw new Error('missing');
    const col = (name: string) => {
      const found = group.columns.find((x) => x.name === name);
      if (!found) throw new Error(`no column ${name}`);
      return found;
    };
    const write = (after: LeadGroup | null): AnyWrite => ({ collection: 'leadGroups', id: group.id, before: group, after });
    return { h, c, group, col, write };
  }

  it('refuses renaming or deleting a column a step uses as a merge field', async () => {
    const { h, c, group, col, write } = await groupSetup();
    const rename = (name: string, to: string): LeadGroup => ({ ...group, columns: group.columns.map((x) => (x.id === col(name).id ? { ...x, name: to } : x)) });
    const e = await h.expectRefused(push(h, [write(rename('First name', 'Given name'))]), 'COLUMN_IN_USE');
    expect(e.details).toMatchObject({ campaignId: c.id, stepId: c.steps[0]?.id, column: 'First name' });
    await h.expectRefused(push(h, [write({ ...group, columns: group.columns.filter((x) => x.name !== 'First name') })]), 'COLUMN_IN_USE');
    await h.expectRefused(push(h, [write(rename('Phone', 'Email'))]), 'INVALID_INPUT');
    // Unused columns are free.
    await push(h, [write(rename('Phone', 'Mobile'))]);
    expect((await h.store.get('leadGroups', group.id))?.columns.map((x) => x.name)).toContain('Mobile');
  });

  it('accepts a rename when the same commit changes the message that used the column', async () => {
    const { h, c, group, col } = await groupSetup();
    const tx = new Tx(h.store);
    await tx.put('campaigns', { ...c, steps: c.steps.map((s, i) => (i === 0 ? { ...s, content: 'Hi {{Given name|there}}' } : s)) });
    await tx.put('leadGroups', { ...group, columns: group.columns.map((x) => (x.id === col('First name').id ? { ...x, name: 'Given name' } : x)) });
    // Rules read the state the whole commit produces: each sees the other's change.
    await validateWrites(tx.writes(), { actor: h.owner, read: tx, now: h.clock.now() });
    await h.store.commit(tx.writes());
    expect((await h.store.get('leadGroups', group.id))?.columns.map((x) => x.name)).toContain('Given name');
  });
});

describe('readiness', () => {
  it('lists every error and warning with the step and sender they concern', async () => {
    const { h, c, sender, msg } = await setup();
    const group = await h.store.get('leadGroups', c.leadGroupId);
    const workspace = await h.store.get('workspaces', h.main.workspaceId);
    const ok = readiness(c, { group, senders: [sender], workspace });
    expect(ok).toEqual({ ready: true, problems: [] });

    const mailer = { ...sender, id: h.ids.uuid(), name: 'Mia Mailer', capabilities: ['email' as const] };
    const voice = withStep(c, msg.id, { voiceNote: { mode: 'ai_voice', recordingId: null } });
    const r = readiness({ ...voice, senders: [...c.senders, { sdrProfileId: mailer.id, paused: false }] }, { group, senders: [sender, mailer], workspace });
    expect(r.ready).toBe(false);
    expect(r.problems).toContainEqual(expect.objectContaining({ severity: 'error', stepId: msg.id, sdrProfileId: mailer.id, message: expect.stringMatching(/cannot send voice notes/) }));
    // Paused senders are not held to the sequence.
    const paused = readiness({ ...voice, senders: [...c.senders, { sdrProfileId: mailer.id, paused: true }] }, { group, senders: [sender, mailer], workspace });
    expect(paused).toEqual({ ready: true, problems: [] });
    const allPaused = readiness({ ...c, senders: [{ sdrProfileId: sender.id, paused: true }] }, { group, senders: [sender], workspace });
    expect(allPaused.problems.map((p) => p.message)).toEqual(['Every sender is paused on this campaign; resume at least one.']);
    const gone = readiness(c, { group, senders: [], workspace });
    expect(gone.problems[0]).toMatchObject({ severity: 'error', sdrProfileId: sender.id });

    const off = Object.fromEntries(Object.entries(c.schedule.days).map(([d, w]) => [d, { ...w, enabled: false }])) as Campaign['schedule']['days'];
    const noDay = readiness({ ...c, schedule: { ...c.schedule, days: off } }, { group, senders: [sender], workspace });
    expect(noDay.problems.map((p) => p.message)).toEqual(['Sending schedule: every day is switched off; keep at least one day on.']);
    const unknown = readiness(withStep(c, msg.id, { content: 'Hi {{Nick}}' }), { group, senders: [sender], workspace });
    expect(unknown.problems).toEqual([expect.objectContaining({ stepId: msg.id, message: expect.stringMatching(/Nick/) })]);
    const empty = readiness(withStep(c, msg.id, { content: '  ' }), { group, senders: [sender], workspace });
    expect(empty.problems).toEqual([expect.objectContaining({ stepId: msg.id, message: expect.stringMatching(/has no text/) })]);
    // A connection request's note is optional: one without a note is ready to go.
    const bareRequest = readiness(withStep(c, msg.id, { type: 'CONNECTION_REQUEST', content: '' }), { group, senders: [sender], workspace });
    expect(bareRequest).toEqual({ ready: true, problems: [] });
  });
});
