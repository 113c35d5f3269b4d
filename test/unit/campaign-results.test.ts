import { describe, expect, it } from 'vitest';
import { newActivity, newEnrollment, newMessage, newStep } from '../../shared/model/factories.ts';
import type { Lead, Message } from '../../shared/model/index.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** Per-label counts: the given ones, zero for the rest. */
const labels = (some: Record<string, number>) => ({ interested: 0, not_interested: 0, out_of_office: 0, wrong_person: 0, unsubscribe: 0, other: 0, unlabelled: 0, ...some });

/** A campaign: connection request (note) -> message with two variants -> email, and five leads. */
async function workspace(h: Harness) {
  const sender = await h.addSender({ capabilities: ['message', 'connection_request', 'inmail', 'email', 'profile_visit'] });
  const s1 = h.ids.uuid();
  const s2 = h.ids.uuid();
  const s3 = h.ids.uuid();
  const vA = h.ids.uuid();
  const vB = h.ids.uuid();
  const c = await h.addCampaign({
    senderIds: [sender.id],
    steps: [
      newStep(s1, 'CONNECTION_REQUEST', { content: 'Hi {{First name}}' }),
      newStep(s2, 'SEND_MESSAGE', {
        content: 'unused',
        variants: [
          { id: vA, name: 'Short', text: 'Hey {{First name|there}}, {{Company|your team}}?', subject: '' },
          { id: vB, name: 'Long', text: 'Hello {{First name|there}} at {{Company}}.', subject: '' },
        ],
        variantAssignment: { mode: 'round_robin', defaultVariantId: vA },
      }),
      newStep(s3, 'EMAIL', { content: 'Dear {{First name|friend}}', subject: 'About {{Company|your company}}' }),
    ],
  });
  const leads: Lead[] = [];
  for (const [firstName, company] of [['Ann', 'Acme'], ['Ben', ''], ['Cat', 'Cato'], ['Dan', 'Dino'], ['', '']] as const) {
    leads.push(await h.addLead({ firstName, company }));
  }
  return { sender, c, s1, s2, s3, vA, vB, leads };
}

describe('campaigns.getStepMetrics', () => {
  it('counts sent, accepted and replies per step and variant, adding up to campaigns.getMetrics', async () => {
    const h = await makeHarness();
    const { sender, c, s1, s2, s3, vA, vB, leads } = await workspace(h);
    const [ann, ben, cat, dan, eve] = leads as [Lead, Lead, Lead, Lead, Lead];
    const t = (min: number) => new Date(Date.UTC(2026, 0, 5, 9, min)).toISOString();
    const msg = (lead: Lead, fields: Partial<Message>): Message =>
      newMessage(h.stamp(), { leadId: lead.id, sdrProfileId: sender.id, chatId: `chat-${lead.id}`, direction: 'out', kind: 'message', text: 'x', campaignId: c.id, ...fields });
    const accepted = (lead: Lead, at: string) => {
      const a = newActivity(h.stamp(), lead.id, sender.id, 'EVENT', 'accepted', { metadata: { eventKind: 'connection_accepted', campaignId: c.id } });
      return { ...a, createdAt: at };
    };
    const docs = [
      // Ann: request, accepted, message (variant A), reply after the message.
      msg(ann, { stepId: s1, kind: 'connection_request', status: 'sent', sentAt: t(1) }),
      msg(ann, { stepId: s2, status: 'sent', sentAt: t(3) }),
      msg(ann, { direction: 'in', status: 'received', sentAt: t(4), stepId: null }),
      msg(ann, { direction: 'in', status: 'received', sentAt: t(5), stepId: null }),
      // Ben: request, reply before anything else was sent -> the request got the reply.
      msg(ben, { stepId: s1, kind: 'connection_request', status: 'sent', sentAt: t(1) }),
      msg(ben, { direction: 'in', status: 'received', sentAt: t(2), stepId: null }),
      // Cat: request, accepted, message (variant B), email; no reply. A failed email is not sent.
      msg(cat, { stepId: s1, kind: 'connection_request', status: 'sent', sentAt: t(1) }),
      msg(cat, { stepId: s2, status: 'sent', sentAt: t(3) }),
      msg(cat, { stepId: s3, kind: 'email', status: 'sent', sentAt: t(6) }),
      msg(cat, { stepId: s3, kind: 'email', status: 'failed', sentAt: null }),
      // Dan: queued request only; replied anyway (no sent step: unattributed).
      msg(dan, { stepId: s1, kind: 'connection_request', status: 'queued' }),
      msg(dan, { direction: 'in', status: 'received', sentAt: t(2), stepId: null }),
      // Another campaign's message of Eve is not counted.
      msg(eve, { stepId: s1, kind: 'connection_request', status: 'sent', sentAt: t(1), campaignId: null }),
    ];
    await h.seed([
      ...docs.map((m) => ({ collection: 'messages' as const, id: m.id, before: null, after: m })),
      ...[accepted(ann, t(2)), accepted(cat, t(2))].map((a) => ({ collection: 'activities' as const, id: a.id, before: null, after: a })),
      ...[newEnrollment(h.stamp(), ann.id, c.id, { variants: { [s2]: vA } }), newEnrollment(h.stamp(), cat.id, c.id, { variants: { [s2]: vB } }), newEnrollment(h.stamp(), ben.id, c.id)]
        .map((e) => ({ collection: 'enrollments' as const, id: e.id, before: null, after: e })),
    ]);

    const res = await h.call('campaigns.getStepMetrics', { campaignId: c.id });
    expect(res.steps.map((s) => [s.stepId, s.number, s.label])).toEqual([[s1, 1, 'Connection request'], [s2, 2, expect.any(String)], [s3, 3, expect.any(String)]]);
    expect(res.steps[0]).toMatchObject({ sent: 3, leads: 3, accepted: 2, replies: 1, replyRate: 1 / 3, variants: [] });
    expect(res.steps[1]).toMatchObject({ sent: 2, leads: 2, accepted: 0, replies: 1, replyRate: 1 / 2 });
    expect(res.steps[1]?.variants).toEqual([
      { variantId: vA, name: 'Short', sent: 1, leads: 1, accepted: 0, replies: 1, replyRate: 1, positiveReplies: 0, positiveReplyRate: 0, replyLabels: labels({ unlabelled: 1 }) },
      { variantId: vB, name: 'Long', sent: 1, leads: 1, accepted: 0, replies: 0, replyRate: 0, positiveReplies: 0, positiveReplyRate: 0, replyLabels: labels({}) },
    ]);
    expect(res.steps[2]).toMatchObject({ sent: 1, leads: 1, replies: 0, replyRate: 0 });
    expect(res.unattributed).toEqual({ replies: 1, accepted: 0 });

    // The steps and the unattributed rest add up to the campaign's metrics.
    const [m] = (await h.call('campaigns.getMetrics', { campaignIds: [c.id] })).metrics;
    const sum = (k: 'replies' | 'accepted' | 'sent') => res.steps.reduce((n, s) => n + s[k], 0);
    expect(sum('replies') + res.unattributed.replies).toBe(m?.replies);
    expect(sum('accepted') + res.unattributed.accepted).toBe(m?.connectionsAccepted);
    expect(sum('sent')).toBe((m?.messagesSent ?? 0) + (m?.connectionRequestsSent ?? 0));
  });

  it('answers zeros for a campaign with nothing sent, and NOT_FOUND for another workspace', async () => {
    const h = await makeHarness();
    const { c } = await workspace(h);
    const res = await h.call('campaigns.getStepMetrics', { campaignId: c.id });
    expect(res.steps.every((s) => s.sent === 0 && s.replies === 0 && s.replyRate === 0)).toBe(true);
    await h.expectRefused(h.call('campaigns.getStepMetrics', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('campaigns.previewMessage', () => {
  it('fills merge fields with the lead, marks fallbacks and empty fields, per variant', async () => {
    const h = await makeHarness();
    const { c, s2, s3, vB, leads } = await workspace(h);
    const [ann, ben, , , nobody] = leads as [Lead, Lead, Lead, Lead, Lead];

    const a = await h.call('campaigns.previewMessage', { campaignId: c.id, stepId: s2, leadId: ann.id });
    expect(a).toMatchObject({ text: 'Hey Ann, Acme?', subject: '', usedFallbacks: [], emptyFields: [] });
    const b = await h.call('campaigns.previewMessage', { campaignId: c.id, stepId: s2, leadId: ben.id });
    expect(b.text).toBe('Hey Ben, your team?');
    expect(b.usedFallbacks).toEqual(['Company']);
    expect(b.textParts).toEqual([
      { kind: 'text', text: 'Hey ' }, { kind: 'value', text: 'Ben', field: 'First name' }, { kind: 'text', text: ', ' },
      { kind: 'fallback', text: 'your team', field: 'Company' }, { kind: 'text', text: '?' },
    ]);
    const long = await h.call('campaigns.previewMessage', { campaignId: c.id, stepId: s2, leadId: ben.id, variantId: vB });
    expect(long).toMatchObject({ variantId: vB, text: 'Hello Ben at .', usedFallbacks: [], emptyFields: ['Company'] });

    const email = await h.call('campaigns.previewMessage', { campaignId: c.id, stepId: s3, leadId: nobody.id });
    expect(email).toMatchObject({ subject: 'About your company', text: 'Dear friend', usedFallbacks: ['Company', 'First name'] });
  });

  it('refuses a step that sends nothing, an unknown variant, a lead outside the campaign and other workspaces, changing nothing', async () => {
    const h = await makeHarness();
    const { c, s2, leads } = await workspace(h);
    const [ann] = leads as [Lead];
    const visit = h.ids.uuid();
    const c2 = await h.addCampaign({ steps: [newStep(visit, 'PROFILE_VISIT')] });
    const stranger = await h.addLead({ firstName: 'Zed' }, h.ids.uuid());
    const e1 = await h.expectRefused(h.call('campaigns.previewMessage', { campaignId: c2.id, stepId: visit, leadId: ann.id }), 'INVALID_INPUT');
    expect(e1.message).toMatch(/sends no message/);
    await h.expectRefused(h.call('campaigns.previewMessage', { campaignId: c.id, stepId: s2, leadId: ann.id, variantId: h.ids.uuid() }), 'NOT_FOUND');
    const e2 = await h.expectRefused(h.call('campaigns.previewMessage', { campaignId: c.id, stepId: s2, leadId: stranger.id }), 'NOT_FOUND');
    expect(e2.message).toBe('Zed is not one of the leads of campaign "Q4 outreach".');
    await h.expectRefused(h.call('campaigns.previewMessage', { campaignId: c.id, stepId: h.ids.uuid(), leadId: ann.id }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.previewMessage', { campaignId: c.id, stepId: s2, leadId: ann.id }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('campaigns.duplicate', () => {
  it('copies sequence (new ids, same structure and variants), schedule, settings and senders, paused, same lead group', async () => {
    const h = await makeHarness();
    const { c, sender, s2, vA } = await workspace(h);
    await h.call('campaigns.updateSchedule', { campaignId: c.id, timeZone: 'Europe/Berlin' });
    const paused = await h.store.get('campaigns', c.id);
    if (!paused) throw new Error('campaign missing');
    // A running original (the copy is paused whatever the original's state).
    await h.seed([{ collection: 'campaigns', id: c.id, before: paused, after: { ...paused, running: true, startedAt: h.now() } }]);
    const src = await h.store.get('campaigns', c.id);
    const copy = await h.call('campaigns.duplicate', { campaignId: c.id });
    expect(copy).toMatchObject({ name: 'Q4 outreach (copy)', leadGroupId: c.leadGroupId, hasActiveSequence: false });
    const stored = await h.store.get('campaigns', copy.id);
    expect(stored).toMatchObject({ running: false, startedAt: null, schedule: src?.schedule, settings: src?.settings, senders: [{ sdrProfileId: sender.id, paused: false }] });
    expect(stored?.sequenceId).not.toBe(src?.sequenceId);
    const srcSteps = src?.steps ?? [];
    const steps = stored?.steps ?? [];
    expect(steps).toHaveLength(srcSteps.length);
    for (const [i, s] of steps.entries()) {
      const o = srcSteps[i];
      expect(s.id).not.toBe(o?.id);
      expect(copy.stepIds[o?.id ?? '']).toBe(s.id);
      expect({ ...s, id: '', variants: s.variants.map((v) => ({ ...v, id: '' })), variantAssignment: { ...s.variantAssignment, defaultVariantId: '' } })
        .toEqual({ ...o, id: '', variants: o?.variants.map((v) => ({ ...v, id: '' })), variantAssignment: { ...o?.variantAssignment, defaultVariantId: '' } });
    }
    const msgStep = steps.find((s) => s.id === copy.stepIds[s2]);
    expect(msgStep?.variants.map((v) => v.id)).not.toContain(vA);
    expect(msgStep?.variantAssignment.defaultVariantId).toBe(msgStep?.variants[0]?.id);
    // The original is untouched.
    expect(await h.store.get('campaigns', c.id)).toEqual(src);
  });

  it('keeps conditions and their branches, takes a given name, and makes a new empty lead group when asked', async () => {
    const h = await makeHarness();
    await h.addSender();
    const cond = h.ids.uuid();
    const yes = h.ids.uuid();
    const no = h.ids.uuid();
    const c = await h.addCampaign({
      steps: [
        newStep(cond, 'CONDITION', { sendCondition: 'CONNECTED' }),
        newStep(yes, 'SEND_MESSAGE', { content: 'Thanks {{First name}}', parentStepId: cond, branch: 'yes' }),
        newStep(no, 'PROFILE_VISIT', { parentStepId: cond, branch: 'no' }),
      ],
    });
    await h.addLead({ firstName: 'Ann' });
    const copy = await h.call('campaigns.duplicate', { campaignId: c.id, name: 'Berlin founders', newLeadGroup: true });
    expect(copy.name).toBe('Berlin founders');
    expect(copy.leadGroupId).not.toBe(c.leadGroupId);
    const group = await h.store.get('leadGroups', copy.leadGroupId);
    const srcGroup = await h.store.get('leadGroups', c.leadGroupId);
    expect(group?.columns.map((col) => col.name)).toEqual(srcGroup?.columns.map((col) => col.name));
    expect((await h.call('campaigns.leads.count', { campaignId: copy.id })).count).toBe(0);
    const steps = (await h.store.get('campaigns', copy.id))?.steps ?? [];
    expect(steps.map((s) => [s.type, s.parentStepId, s.branch])).toEqual([
      ['CONDITION', null, null], ['SEND_MESSAGE', copy.stepIds[cond], 'yes'], ['PROFILE_VISIT', copy.stepIds[cond], 'no'],
    ]);
  });

  it('shortens a long name to fit " (copy)" and refuses empty names and other workspaces, changing nothing', async () => {
    const h = await makeHarness();
    const c = await h.addCampaign({ name: 'x'.repeat(200) });
    const copy = await h.call('campaigns.duplicate', { campaignId: c.id });
    expect(copy.name).toBe(`${'x'.repeat(193)} (copy)`);
    await h.expectRefused(h.call('campaigns.duplicate', { campaignId: c.id, name: '   ' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.duplicate', { campaignId: c.id }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.duplicate', { campaignId: h.ids.uuid() }), 'NOT_FOUND');
  });

  it('refuses a copy its senders could not run (the rules check every step of a new campaign), changing nothing', async () => {
    const h = await makeHarness();
    const linkedInOnly = await h.addSender({ capabilities: ['message', 'connection_request'] });
    const c = await h.addCampaign({ senderIds: [linkedInOnly.id], steps: [newStep(h.ids.uuid(), 'EMAIL', { content: 'Hi', subject: 'Hello' })] });
    const e = await h.expectRefused(h.call('campaigns.duplicate', { campaignId: c.id }), 'STEP_INVALID');
    expect(e.message).toBe('Sam Sender cannot perform step 1 (Email): its account cannot send emails.');
  });
});

describe('campaigns.leads.unenroll (the undo of a bulk enrollment)', () => {
  it('removes enrollments nothing was sent for, stops those that acted, leaves finished ones, unlinks only removed leads; dry run answers the same', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const otherGroup = (await h.call('campaigns.create', { name: 'Elsewhere' })).leadGroupId;
    const c = await h.addCampaign({ senderIds: [sender.id] });
    const fresh = await h.addLead({ firstName: 'Fresh' }, otherGroup);
    const reached = await h.addLead({ firstName: 'Reached' }, otherGroup);
    const home = await h.addLead({ firstName: 'Home' });
    const done = await h.addLead({ firstName: 'Done' });
    const outsider = await h.addLead({ firstName: 'Outsider' });
    const res = await h.call('campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'workspace' }, selection: { mode: 'ids', leadIds: [fresh.id, reached.id, home.id] },
      destination: { kind: 'existing', campaignId: c.id }, sender: 'unassign',
    });
    expect(res.enrolledLeadIds).toEqual([fresh.id, reached.id, home.id]);
    expect(res.linkedLeadIds).toEqual([fresh.id, reached.id]);
    const reachedEnrollment = (await h.store.query('enrollments', { where: { op: 'eq', field: 'leadId', value: reached.id } })).docs[0];
    if (!reachedEnrollment) throw new Error('no enrollment');
    const sent = newMessage(h.stamp(), { leadId: reached.id, sdrProfileId: sender.id, chatId: 'c', direction: 'out', kind: 'message', text: 'Hi', campaignId: c.id, stepId: c.steps[0]?.id ?? null, status: 'sent', sentAt: h.now() });
    const completed = newEnrollment(h.stamp(), done.id, c.id, { status: 'COMPLETED', completedAt: h.now(), nextActionAt: null });
    await h.seed([
      { collection: 'messages', id: sent.id, before: null, after: sent },
      { collection: 'enrollments', id: completed.id, before: null, after: completed },
    ]);

    const input = { campaignId: c.id, leadIds: [...res.enrolledLeadIds, done.id, outsider.id], unlinkLeadIds: res.linkedLeadIds };
    const before = h.db.snapshot();
    const preview = await h.call('campaigns.leads.unenroll', { ...input, dryRun: true });
    expect(h.db.snapshot()).toEqual(before);
    const real = await h.call('campaigns.leads.unenroll', input);
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real).toEqual({ dryRun: false, campaignId: c.id, removed: 2, stopped: 1, finished: 1, notEnrolled: 1, unlinked: 1 });

    const left = (await h.store.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: c.id } })).docs;
    expect(left.map((e) => [e.leadId, e.status]).sort()).toEqual([[done.id, 'COMPLETED'], [reached.id, 'STOPPED']].sort());
    expect((await h.store.get('leads', fresh.id))?.groupIds).toEqual([otherGroup]);
    // Reached was messaged: it stays on the list (its stopped enrollment keeps the runner off it).
    expect((await h.store.get('leads', reached.id))?.groupIds).toContain(c.leadGroupId);
    // Home's own list is the campaign's: never unlinked.
    expect((await h.store.get('leads', home.id))?.groupIds).toEqual([c.leadGroupId]);
    expect(await h.store.get('messages', sent.id)).toEqual(sent);
  });

  it('refuses other workspaces and empty lists, changing nothing', async () => {
    const h = await makeHarness();
    const c = await h.addCampaign();
    const lead = await h.addLead();
    await h.expectRefused(h.call('campaigns.leads.unenroll', { campaignId: c.id, leadIds: [lead.id] }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.unenroll', { campaignId: c.id, leadIds: [] }), 'INVALID_INPUT');
  });
});
