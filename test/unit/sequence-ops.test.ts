import { describe, expect, it } from 'vitest';
import { DomainError } from '../../shared/errors.ts';
import { newEnrollment, newStep } from '../../shared/model/factories.ts';
import type { Step } from '../../shared/model/index.ts';
import { insertStep, nextOnPath, removeStep, stepNumbers, structureProblems, walk } from '../../shared/sequence.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const sid = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** A: message; C: condition on the main path; yes path Y1, Y2; no path N1. Stored interleaved on
 * purpose: numbering follows the tree, not the array. */
function branchedSteps(): Step[] {
  return [
    newStep(sid(1), 'SEND_MESSAGE', { content: 'A' }),
    newStep(sid(2), 'CONDITION', { sendCondition: 'REPLIED' }),
    newStep(sid(5), 'SEND_MESSAGE', { content: 'N1', parentStepId: sid(2), branch: 'no' }),
    newStep(sid(3), 'SEND_MESSAGE', { content: 'Y1', parentStepId: sid(2), branch: 'yes' }),
    newStep(sid(4), 'WAIT', { waitTimeSeconds: 60, parentStepId: sid(2), branch: 'yes' }),
  ];
}

const contents = (steps: readonly Step[]): string[] => walk(steps).map((w) => w.step.content || w.step.type);

describe('sequence tree helpers', () => {
  it('numbers steps depth-first: main path, then each condition\'s yes path, then its no path', () => {
    const steps = branchedSteps();
    const numbers = stepNumbers(steps);
    expect([1, 2, 3, 4, 5].map((n) => numbers.get(sid(n)))).toEqual([1, 2, 3, 4, 5]);
    expect(nextOnPath(steps, sid(3))?.id).toBe(sid(4));
    expect(nextOnPath(steps, sid(4))).toBeNull();
    expect(nextOnPath(steps, sid(2))).toBeNull();
    expect(structureProblems(steps)).toEqual([]);
  });

  it('inserts after a step, first on a condition path, and refuses what would break the tree', () => {
    const steps = branchedSteps();
    const x = newStep(sid(10), 'PROFILE_VISIT');
    const afterA = insertStep(steps, x, { afterStepId: sid(1) });
    expect(walk(afterA).map((w) => w.step.id)).toEqual([sid(1), sid(10), sid(2), sid(3), sid(4), sid(5)]);
    const firstNo = insertStep(steps, x, { afterStepId: sid(2), branch: 'no' });
    expect(firstNo.find((s) => s.id === sid(10))).toMatchObject({ parentStepId: sid(2), branch: 'no' });
    expect(walk(firstNo).map((w) => w.step.id)).toEqual([sid(1), sid(2), sid(3), sid(4), sid(10), sid(5)]);
    expect(structureProblems(firstNo)).toEqual([]);

    const codeOf = (f: () => unknown): string | undefined => {
      try {
        f();
      } catch (e) {
        return e instanceof DomainError ? e.code : 'other';
      }
      return undefined;
    };
    // Appending to a main path that ends with a condition, a condition without a branch, a condition
    // in the middle of a path.
    expect(codeOf(() => insertStep(steps, x))).toBe('STEP_INVALID');
    expect(codeOf(() => insertStep(steps, x, { afterStepId: sid(2) }))).toBe('INVALID_INPUT');
    expect(codeOf(() => insertStep(steps, newStep(sid(11), 'CONDITION', { sendCondition: 'CONNECTED' }), { afterStepId: sid(3) }))).toBe('STEP_INVALID');
    expect(codeOf(() => insertStep(steps, x, { afterStepId: sid(99) }))).toBe('NOT_FOUND');
  });

  it('removes a step joining its neighbours, keeps each condition path non-empty', () => {
    const steps = branchedSteps();
    const r = removeStep(steps, sid(3));
    expect(contents(r.steps)).toEqual(['A', 'CONDITION', 'WAIT', 'N1']);
    expect(r.successor?.id).toBe(sid(4));
    expect(() => removeStep(steps, sid(5))).toThrow(/only step/);
    expect(() => removeStep(steps, sid(2))).toThrow(/removed only in the app/);
    const all = removeStep(steps, sid(2), { removeBranches: true });
    expect(contents(all.steps)).toEqual(['A']);
    expect([...all.removedIds].sort()).toEqual([sid(2), sid(3), sid(4), sid(5)]);
  });

  it('finds every kind of broken structure', () => {
    const base = branchedSteps();
    const codes = (steps: Step[]): string[] => structureProblems(steps).map((p) => `${p.code}:${p.stepId}`);
    // Orphan: the parent is not in the sequence.
    expect(codes([...base, newStep(sid(6), 'WAIT', { waitTimeSeconds: 5, parentStepId: sid(42), branch: 'yes' })])).toEqual([`STEP_INVALID:${sid(6)}`]);
    // A branch without a parent, a parent without a branch.
    expect(codes([...base, newStep(sid(6), 'WAIT', { waitTimeSeconds: 5, branch: 'no' })])).toEqual([`STEP_INVALID:${sid(6)}`]);
    expect(codes([...base, newStep(sid(6), 'WAIT', { waitTimeSeconds: 5, parentStepId: sid(2) })])).toEqual([`STEP_INVALID:${sid(6)}`]);
    // A step under something that is not a condition.
    expect(codes([...base, newStep(sid(6), 'WAIT', { waitTimeSeconds: 5, parentStepId: sid(1), branch: 'yes' })])).toEqual([`STEP_INVALID:${sid(6)}`]);
    // A condition that is not last on its path.
    expect(codes([...base, newStep(sid(6), 'WAIT', { waitTimeSeconds: 5 })])).toEqual([`STEP_INVALID:${sid(2)}`]);
    // An empty path.
    expect(codes(base.filter((s) => s.id !== sid(5)))).toEqual([`LAST_STEP_OF_BRANCH:${sid(2)}`]);
  });
});

async function setup(opts: Parameters<typeof makeHarness>[0] = {}) {
  const h = await makeHarness(opts);
  const sender = await h.addSender({ name: 'Sam Sender' });
  return { h, sender };
}

async function campaignWith(h: Harness, senderIds: string[], steps: Step[], running = false) {
  return h.addCampaign({ senderIds, steps, running, startedAt: running ? h.now() : null });
}

describe('sequence operations', () => {
  it('reads the sequence with positions, branches and readiness', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], branchedSteps());
    const seq = await h.call('campaigns.getSequence', { campaignId: c.id });
    expect(seq.campaignName).toBe(c.name);
    expect(seq.stepCount).toBe(5);
    expect(seq.steps.map((s) => [s.number, s.id, s.branch])).toEqual([
      [1, sid(1), null], [2, sid(2), null], [3, sid(3), 'yes'], [4, sid(4), 'yes'], [5, sid(5), 'no'],
    ]);
    expect(seq.readiness).toEqual({ ready: true, problems: [] });
    await h.expectRefused(h.call('campaigns.getSequence', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
  });

  it('appends, inserts after a step and inserts first on a condition path', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], [newStep(sid(1), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' })]);
    let seq = await h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'WAIT', waitTimeSeconds: 3600 } });
    expect(seq.steps.map((s) => s.type)).toEqual(['SEND_MESSAGE', 'WAIT']);
    seq = await h.call('campaigns.addSequenceStep', { campaignId: c.id, afterStepId: sid(1), step: { type: 'PROFILE_VISIT' } });
    expect(seq.steps.map((s) => s.type)).toEqual(['SEND_MESSAGE', 'PROFILE_VISIT', 'WAIT']);
    expect(seq.steps.map((s) => s.number)).toEqual([1, 2, 3]);

    seq = await h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'CONDITION', sendCondition: 'CONNECTED' } });
    const cond = seq.steps[3];
    expect(cond?.type).toBe('CONDITION');
    // The new condition comes with a one-day wait on each path, and says so.
    expect(seq.steps.slice(4).map((s) => [s.type, s.branch, s.parentStepId, s.waitTimeSeconds])).toEqual([
      ['WAIT', 'yes', cond?.id, 86400], ['WAIT', 'no', cond?.id, 86400],
    ]);
    expect(seq.notes.join(' ')).toMatch(/one-day wait on its yes path and on its no path/);

    seq = await h.call('campaigns.addSequenceStep', { campaignId: c.id, afterStepId: cond?.id, branch: 'no', step: { type: 'SEND_MESSAGE', content: 'Still there?' } });
    expect(seq.steps.filter((s) => s.branch === 'no').map((s) => s.type)).toEqual(['SEND_MESSAGE', 'WAIT']);
    const stored = await h.store.get('campaigns', c.id);
    expect(stored?.steps).toHaveLength(7);
    expect(stored?.updatedAt).toBe(h.now());

    // After the condition the main path is closed: appending is refused, nothing stored.
    const e = await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'PROFILE_VISIT' } }), 'STEP_INVALID');
    expect(e.message).toMatch(/ends with a condition/);
    await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: c.id, afterStepId: cond?.id, step: { type: 'PROFILE_VISIT' } }), 'INVALID_INPUT');
  });

  it('refuses every step edit while the campaign is running, and allows it once paused', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], branchedSteps(), true);
    await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: c.id, afterStepId: sid(1), step: { type: 'PROFILE_VISIT' } }), 'CAMPAIGN_NOT_PAUSED');
    await h.expectRefused(h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(1), content: 'Hello' }), 'CAMPAIGN_NOT_PAUSED');
    await h.expectRefused(h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(3) }), 'CAMPAIGN_NOT_PAUSED');
    const e = await h.expectRefused(h.call('campaigns.updateSequenceMessage', { campaignId: c.id, stepId: sid(1), text: 'Hello' }), 'CAMPAIGN_NOT_PAUSED');
    expect(e.message).toMatch(/pause it/);

    await h.call('campaigns.pause', { campaignId: c.id });
    const seq = await h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(1), content: 'Hello' });
    expect(seq.steps[0]?.content).toBe('Hello');
  });

  it('rejects merge fields outside the lead group\'s columns, naming them and the step', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], [newStep(sid(1), 'SEND_MESSAGE', { content: 'Hi' })]);
    const e = await h.expectRefused(
      h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'SEND_MESSAGE', content: 'Hi {{First name}}, how is {{Favourite color|life}} at {{Company}}?' } }),
      'UNKNOWN_MERGE_FIELD',
    );
    expect(e.details.unknown).toEqual(['Favourite color']);
    expect(typeof e.details.stepId).toBe('string');

    const m = await h.expectRefused(
      h.call('campaigns.updateSequenceMessage', { campaignId: c.id, stepId: sid(1), variants: [{ name: 'B', text: 'Yo {{Nickname}}' }] }),
      'UNKNOWN_MERGE_FIELD',
    );
    expect(m.details).toMatchObject({ unknown: ['Nickname'], stepId: sid(1) });
    await h.expectRefused(h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(1), content: '{{first name}}' }), 'UNKNOWN_MERGE_FIELD');
  });

  it('refuses a step a sender cannot perform: capability, InMail without Premium, a connection note over the limit', async () => {
    const { h, sender } = await setup();
    const mailer = await h.addSender({ name: 'Mia Mailer', channel: 'email', capabilities: ['email'] });
    const c = await campaignWith(h, [sender.id, mailer.id], [newStep(sid(1), 'PROFILE_VISIT')]);
    const cap = await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'SEND_MESSAGE', content: 'Hi' } }), 'STEP_INVALID');
    expect(cap.message).toMatch(/Mia Mailer cannot perform .*cannot send messages/);
    expect(cap.details.sdrProfileId).toBe(mailer.id);

    const solo = await campaignWith(h, [sender.id], [newStep(sid(2), 'PROFILE_VISIT')]);
    const inmail = await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: solo.id, step: { type: 'INMAIL', subject: 'Hello', content: 'Hi' } }), 'STEP_INVALID');
    expect(inmail.message).toMatch(/Premium/);

    const note = await h.expectRefused(
      h.call('campaigns.addSequenceStep', { campaignId: solo.id, step: { type: 'CONNECTION_REQUEST', content: 'x'.repeat(301) } }),
      'STEP_INVALID',
    );
    expect(note.message).toMatch(/301 characters; its limit is 300/);
    const ok = await h.call('campaigns.addSequenceStep', { campaignId: solo.id, step: { type: 'CONNECTION_REQUEST', content: 'x'.repeat(300) } });
    expect(ok.steps.map((s) => s.type)).toEqual(['PROFILE_VISIT', 'CONNECTION_REQUEST']);

    const premium = await h.addSender({ name: 'Pat Premium', premium: true });
    const p = await campaignWith(h, [premium.id], [newStep(sid(3), 'PROFILE_VISIT')]);
    const withInmail = await h.call('campaigns.addSequenceStep', { campaignId: p.id, step: { type: 'INMAIL', subject: 'Hello', content: 'Hi {{First name|there}}' } });
    expect(withInmail.steps[1]?.type).toBe('INMAIL');
  });

  it('refuses invalid steps on their own: a wait without length, an email without subject, a recorded voice note without a recording', async () => {
    const { h, sender } = await setup();
    const mailer = await h.addSender({ name: 'Mia Mailer', channel: 'email', capabilities: ['email'] });
    const c = await campaignWith(h, [sender.id], [newStep(sid(1), 'SEND_MESSAGE', { content: 'Hi' }), newStep(sid(2), 'WAIT', { waitTimeSeconds: 60 })]);
    await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'WAIT' } }), 'STEP_INVALID');
    await h.expectRefused(h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(2), waitTimeSeconds: 0 }), 'STEP_INVALID');
    await h.expectRefused(h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(1), voiceNote: { mode: 'recorded' } }), 'STEP_INVALID');
    await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'CONDITION', sendCondition: 'LIKES_CATS' } }), 'STEP_INVALID');
    const mc = await campaignWith(h, [mailer.id], [newStep(sid(3), 'EMAIL', { subject: 'Hi', content: 'Hello' })]);
    await h.expectRefused(h.call('campaigns.addSequenceStep', { campaignId: mc.id, step: { type: 'EMAIL', content: 'No subject' } }), 'STEP_INVALID');
    // A voice note needs a channel that can send voice.
    const voice = await h.expectRefused(h.call('campaigns.editSequenceStep', { campaignId: mc.id, stepId: sid(3), voiceNote: { mode: 'ai_voice' } }), 'STEP_INVALID');
    expect(voice.message).toMatch(/voice/);
    const seq = await h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(1), voiceNote: { mode: 'recorded', recordingId: 'rec-1' } });
    expect(seq.steps[0]?.voiceNote).toEqual({ mode: 'recorded', recordingId: 'rec-1' });
  });

  it('needs at least one field to edit', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], branchedSteps());
    await h.expectRefused(h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(1) }), 'NO_FIELDS_TO_UPDATE');
    await h.expectRefused(h.call('campaigns.updateSequenceMessage', { campaignId: c.id, stepId: sid(1) }), 'NO_FIELDS_TO_UPDATE');
    await h.expectRefused(h.call('campaigns.editSequenceStep', { campaignId: c.id, stepId: sid(77), content: 'x' }), 'NOT_FOUND');
  });

  it('keeps the last step of a condition path, removes conditions only with their branches', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], branchedSteps());
    const e = await h.expectRefused(h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(5) }), 'LAST_STEP_OF_BRANCH');
    expect(e.details).toMatchObject({ stepId: sid(5), branch: 'no' });
    await h.expectRefused(h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(2) }), 'STEP_INVALID');

    const seq = await h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(3) });
    expect(seq.steps.map((s) => s.id)).toEqual([sid(1), sid(2), sid(4), sid(5)]);
    // Now the WAIT is the only yes step: it stays until another takes its place.
    await h.expectRefused(h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(4) }), 'LAST_STEP_OF_BRANCH');
    await h.call('campaigns.addSequenceStep', { campaignId: c.id, afterStepId: sid(2), branch: 'yes', step: { type: 'PROFILE_VISIT' } });
    const after = await h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(4) });
    expect(after.steps.filter((s) => s.branch === 'yes').map((s) => s.type)).toEqual(['PROFILE_VISIT']);

    const gone = await h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(2), removeBranches: true });
    expect(gone.steps.map((s) => s.id)).toEqual([sid(1)]);
  });

  it('moves leads waiting on a removed step to the step that takes its place, and finishes them when none does', async () => {
    const { h, sender } = await setup();
    const steps = [newStep(sid(1), 'SEND_MESSAGE', { content: 'A' }), newStep(sid(2), 'WAIT', { waitTimeSeconds: 60 }), newStep(sid(3), 'PROFILE_VISIT')];
    const c = await campaignWith(h, [sender.id], steps);
    const l1 = await h.addLead({ firstName: 'Ann' });
    const l2 = await h.addLead({ firstName: 'Ben' });
    const e1 = newEnrollment(h.stamp(), l1.id, c.id, { currentStepId: sid(2), sdrProfileId: sender.id });
    const e2 = newEnrollment(h.stamp(), l2.id, c.id, { currentStepId: sid(3), sdrProfileId: sender.id });
    await h.seed([{ collection: 'enrollments', id: e1.id, before: null, after: e1 }, { collection: 'enrollments', id: e2.id, before: null, after: e2 }]);

    await h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(2) });
    expect((await h.store.get('enrollments', e1.id))?.currentStepId).toBe(sid(3));
    await h.call('campaigns.removeSequenceStep', { campaignId: c.id, stepId: sid(3) });
    const done = await h.store.get('enrollments', e2.id);
    expect(done).toMatchObject({ status: 'COMPLETED', currentStepId: null, completedAt: h.now() });
    expect((await h.store.get('enrollments', e1.id))?.status).toBe('COMPLETED');
  });

  it('starts leads enrolled into an empty sequence at its first step once one is added', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], []);
    const lead = await h.addLead({ firstName: 'Cy' });
    const e = newEnrollment(h.stamp(), lead.id, c.id, { currentStepId: null });
    await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
    const seq = await h.call('campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'SEND_MESSAGE', content: 'Hi' } });
    expect((await h.store.get('enrollments', e.id))?.currentStepId).toBe(seq.steps[0]?.id);
  });

  it('edits message text, subject and variants; variants get ids; only message steps have messages', async () => {
    const { h, sender } = await setup();
    const c = await campaignWith(h, [sender.id], branchedSteps());
    const msg = await h.call('campaigns.updateSequenceMessage', {
      campaignId: c.id,
      stepId: sid(1),
      text: 'Hi {{First name|there}}',
      variants: [{ name: 'Short', text: 'Hey {{First name|you}}' }, { name: 'Long', text: 'Hello {{Full name}}, at {{Company|your company}}' }],
      variantAssignment: { mode: 'round_robin' },
    });
    expect(msg.text).toBe('Hi {{First name|there}}');
    expect(msg.type).toBe('SEND_MESSAGE');
    expect(msg.variants.map((v) => v.name)).toEqual(['Short', 'Long']);
    expect(new Set(msg.variants.map((v) => v.id)).size).toBe(2);
    expect(msg.variantAssignment).toEqual({ mode: 'round_robin', defaultVariantId: null });

    // Keeping one variant by id, choosing it as default; the step's send condition stays untouched.
    const keep = msg.variants[1]?.id;
    const again = await h.call('campaigns.updateSequenceMessage', {
      campaignId: c.id, stepId: sid(1), variants: [{ id: keep, name: 'Long v2', text: 'Hello {{Full name}}' }], variantAssignment: { mode: 'default', defaultVariantId: keep },
    });
    expect(again.variants).toEqual([{ id: keep, name: 'Long v2', text: 'Hello {{Full name}}', subject: '' }]);
    expect(again.variantAssignment.defaultVariantId).toBe(keep);
    const stored = (await h.store.get('campaigns', c.id))?.steps.find((s) => s.id === sid(1));
    expect(stored?.content).toBe('Hi {{First name|there}}');

    await h.expectRefused(h.call('campaigns.updateSequenceMessage', { campaignId: c.id, stepId: sid(4), text: 'x' }), 'STEP_INVALID');
    await h.expectRefused(
      h.call('campaigns.updateSequenceMessage', { campaignId: c.id, stepId: sid(1), variants: [{ id: sid(999), name: 'X', text: 'x' }] }),
      'INVALID_INPUT',
    );
  });
});
