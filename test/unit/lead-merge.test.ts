/** campaigns.leads.merge and campaigns.leads.unmerge on the memory store: every kind of data moves,
 * the invariants hold, a dry run answers the same and changes nothing, refusals change nothing, the
 * tombstone is invisible to searches and answers NOT_FOUND with mergedIntoId, and an undo puts both
 * leads back. */
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../shared/errors.ts';
import { newActivity, newEnrollment, newLeadGroup, newMessage, newStep } from '../../shared/model/factories.ts';
import type { Lead, Message } from '../../shared/model/index.ts';
import { MAX_MERGE_MOVES } from '../../shared/ops/lead-merge.ts';
import { eventsOf } from '../../shared/webhooks/events.ts';
import { validateChange } from '../../shared/rules/index.ts';
import { makeHarness, seedEnrollment as enroll, stagesByCategory as stages } from '../support/harness.ts';
import { engineWorld } from './engine-fixtures.ts';
import type { Harness } from '../support/harness.ts';

async function message(h: Harness, leadId: string, sdrProfileId: string, text: string): Promise<Message> {
  const m = newMessage(h.stamp(), { leadId, sdrProfileId, chatId: `chat-${leadId}`, direction: 'out', kind: 'message', text, status: 'sent' });
  await h.seed([{ collection: 'messages', id: m.id, before: null, after: m }]);
  return m;
}

/** Two leads of one person, each with work of its own. */
async function pair() {
  const h = await makeHarness();
  const st = await stages(h);
  const sender = await h.addSender({ name: 'Sam Sender' });
  const otherGroup = newLeadGroup(h.stamp(), 'Conference', () => h.ids.uuid(), ['Badge']);
  await h.seed([{ collection: 'leadGroups', id: otherGroup.id, before: null, after: otherGroup }]);
  const badge = otherGroup.columns.find((c) => c.name === 'Badge')?.id ?? '';
  const tag = await h.call('tags.create', { name: 'Hot', color: '#ff0000' });
  const survivor = await h.addLead({ firstName: 'Eve', lastName: 'Mail', email: 'eve@example.com', company: '', jobTitle: 'CTO', variables: { keep: 'mine' } });
  const merged = await h.addLead(
    {
      firstName: 'Evelyn', lastName: 'Mail', email: 'eve.mail@example.com', company: 'Initech', jobTitle: 'VP', phone: '+1 555',
      groupIds: [otherGroup.id], tagId: tag.id, pipelineStageId: st.ENGAGED?.id ?? null, variables: { keep: 'theirs', [badge]: 'B-17' },
    },
    otherGroup.id,
  );
  const q3 = await h.addCampaign({ name: 'Q3', senderIds: [sender.id] });
  const q4 = await h.addCampaign({ name: 'Q4', senderIds: [sender.id], leadGroupId: otherGroup.id });
  const shared = await h.addCampaign({ name: 'Shared', senderIds: [sender.id] });
  const sRun = await enroll(h, survivor.id, q3.id, { sdrProfileId: sender.id });
  const mRun = await enroll(h, merged.id, q4.id, { sdrProfileId: sender.id });
  const sShared = await enroll(h, survivor.id, shared.id, { status: 'COMPLETED', nextActionAt: null });
  const mShared = await enroll(h, merged.id, shared.id, { status: 'PAUSED' });
  const note = await h.call('leadActivities.create', { leadId: merged.id, content: 'Met at the booth' }, h.member);
  const task = await h.call('leadActivities.taskCreate', { leadId: merged.id, content: 'Send the deck' });
  const msg = await message(h, merged.id, sender.id, 'Hello Evelyn');
  const sMsg = await message(h, survivor.id, sender.id, 'Hello Eve');
  return { h, st, sender, otherGroup, badge, tag, survivor, merged, q3, q4, shared, sRun, mRun, sShared, mShared, note, task, msg, sMsg };
}

const lead = async (h: Harness, id: string): Promise<Lead> => {
  const l = await h.store.get('leads', id);
  if (!l) throw new Error(`no lead ${id}`);
  return l;
};

describe('campaigns.leads.merge', () => {
  it('moves every kind of data to the survivor and leaves a tombstone naming it', async () => {
    const p = await pair();
    const { h } = p;
    const out = await h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    const s = await lead(h, p.survivor.id);
    const m = await lead(h, p.merged.id);

    // Fields: the survivor's non-empty values win, empty ones are filled.
    expect(s).toMatchObject({ firstName: 'Eve', email: 'eve@example.com', jobTitle: 'CTO', company: 'Initech', phone: '+1 555' });
    expect(out.fields.find((f) => f.field === 'company')).toEqual({ field: 'company', survivor: '', merged: 'Initech', result: 'Initech', from: 'merged' });
    expect(out.fields.find((f) => f.field === 'firstName')).toMatchObject({ result: 'Eve', from: 'survivor' });
    // Custom columns: the survivor's value of a shared column stays, a column only the other had is filled.
    expect(s.variables).toEqual({ keep: 'mine', [p.badge]: 'B-17' });
    // Lead lists: the survivor joins every list either was in.
    expect(new Set(s.groupIds)).toEqual(new Set([h.main.leadGroupId, p.otherGroup.id]));
    expect(s.leadGroupId).toBe(h.main.leadGroupId);
    // Tag: the survivor had none, so it takes the merged lead's; stage: ENGAGED is further than none.
    expect(s.tagId).toBe(p.tag.id);
    expect(s.pipelineStageId).toBe(p.st.ENGAGED?.id);
    expect(out.stage.from).toBe('merged');

    // Notes, tasks and messages now belong to the survivor.
    expect((await h.store.get('activities', p.note.id))?.leadId).toBe(s.id);
    expect((await h.store.get('activities', p.task.id))?.leadId).toBe(s.id);
    expect((await h.store.get('messages', p.msg.id))?.leadId).toBe(s.id);
    const conv = await h.call('campaigns.leads.getConversation', { leadId: s.id });
    expect(conv.messages.map((x) => x.text).sort()).toEqual(['Hello Eve', 'Hello Evelyn']);
    expect(out.moved).toMatchObject({ notes: 1, tasks: 1, messages: 1 });

    // Enrollments: both ran, the merged lead's stops (merged) and moves; the shared campaign's stays with the tombstone, stopped.
    const mRun = await h.store.get('enrollments', p.mRun.id);
    expect(mRun).toMatchObject({ leadId: s.id, status: 'STOPPED', stoppedReason: 'merged' });
    expect(await h.store.get('enrollments', p.sRun.id)).toMatchObject({ leadId: s.id, status: 'IN_PROGRESS' });
    expect(await h.store.get('enrollments', p.mShared.id)).toMatchObject({ leadId: m.id, status: 'STOPPED', stoppedReason: 'merged' });
    const running = await h.store.query('enrollments', { where: { op: 'and', conds: [{ op: 'eq', field: 'leadId', value: s.id }, { op: 'eq', field: 'status', value: 'IN_PROGRESS' }] } });
    expect(running.docs).toHaveLength(1);
    const perCampaign = (await h.store.query('enrollments', { where: { op: 'eq', field: 'leadId', value: s.id } })).docs.map((e) => e.campaignId);
    expect(new Set(perCampaign).size).toBe(perCampaign.length);

    // A timeline entry on the survivor; the merged lead is a tombstone.
    const timeline = await h.call('leadActivities.list', { leadId: s.id });
    expect(JSON.stringify(timeline)).toContain('Merged Evelyn Mail into this lead');
    expect(m.mergedIntoId).toBe(s.id);
    expect(m.email).toBe('eve.mail@example.com');

    // lead.merged is raised by the tombstone's write.
    const events = eventsOf([{ collection: 'leads', id: m.id, before: p.merged, after: m }, { collection: 'leads', id: s.id, before: p.survivor, after: s }], { leads: new Map(), stages: new Map() });
    expect(events.find((e) => e.type === 'lead.merged')).toMatchObject({ data: { lead: { id: s.id, fullName: s.fullName }, mergedLeadId: m.id, mergedLead: { email: 'eve.mail@example.com' } } });
  });

  it('never loses do-not-contact, blocklist or an unsubscription, and stops the survivor\'s sequence for them', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    const s = await h.addLead({ email: 'a@x.test' });
    const m = await h.addLead({ email: 'b@x.test', doNotContact: true, unsubscribedAt: '2026-01-02T00:00:00.000Z', unsubscribeSource: 'one_click' });
    const run = await enroll(h, s.id, c.id, { sdrProfileId: sender.id });
    const out = await h.call('campaigns.leads.merge', { survivorId: s.id, mergedId: m.id });
    expect(await lead(h, s.id)).toMatchObject({ doNotContact: true, unsubscribedAt: '2026-01-02T00:00:00.000Z', unsubscribeSource: 'one_click', blocklisted: false });
    expect(await h.store.get('enrollments', run.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'do_not_contact' });
    expect(out.enrollments).toEqual([expect.objectContaining({ id: run.id, of: 'survivor', action: 'stopped_do_not_contact', status: 'IN_PROGRESS', statusAfter: 'STOPPED' })]);

    const b = await h.addLead({ email: 'c@x.test', blocklisted: true });
    await h.call('campaigns.leads.merge', { survivorId: s.id, mergedId: b.id });
    expect(await lead(h, s.id)).toMatchObject({ doNotContact: true, blocklisted: true });
  });

  it('keeps the stage further along the pipeline, and the survivor\'s on a tie', async () => {
    const h = await makeHarness();
    const st = await stages(h);
    const s = await h.addLead({ pipelineStageId: st.MEETING_BOOKED?.id ?? null });
    const m = await h.addLead({ pipelineStageId: st.CONTACTED?.id ?? null });
    const out = await h.call('campaigns.leads.merge', { survivorId: s.id, mergedId: m.id, dryRun: true });
    expect(out.stage).toEqual({ survivor: st.MEETING_BOOKED?.id, merged: st.CONTACTED?.id, result: st.MEETING_BOOKED?.id, from: 'survivor' });
    const won = await h.addLead({ pipelineStageId: st.WON?.id ?? null });
    const out2 = await h.call('campaigns.leads.merge', { survivorId: s.id, mergedId: won.id });
    expect(out2.stage.result).toBe(st.WON?.id);
  });

  it('answers a dry run exactly as the real call, and the dry run changes nothing', async () => {
    const p = await pair();
    const before = p.h.db.snapshot();
    const commits = p.h.db.commits;
    const dry = await p.h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id, dryRun: true });
    expect(p.h.db.snapshot()).toEqual(before);
    expect(p.h.db.commits).toBe(commits);
    const real = await p.h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    expect({ ...real, dryRun: true }).toEqual(dry);
    expect(real.dryRun).toBe(false);
  });

  it('refuses the same lead twice, an unknown, a foreign and an already merged lead, changing nothing', async () => {
    const p = await pair();
    const { h } = p;
    await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.survivor.id }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: '00000000-0000-4000-8000-000000000999' }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: '00000000-0000-4000-8000-000000000999', mergedId: p.merged.id }), 'NOT_FOUND');
    // A lead of another workspace is "not found", whichever side it is on.
    const foreign = await h.call('campaigns.leads.create', { leadGroupId: h.other.leadGroupId, leads: [{ firstName: 'Far', email: 'far@globex.test' }] }, h.foreignOwner);
    const foreignId = foreign.leadIds[0];
    expect(foreignId).toBeTruthy();
    await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: foreignId ?? '' }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: foreignId ?? '', mergedId: p.merged.id }), 'NOT_FOUND');
    await h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    const third = await h.addLead({ email: 'third@example.com' });
    const again = await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: third.id, mergedId: p.merged.id }), 'NOT_FOUND');
    expect(again.details).toMatchObject({ mergedIntoId: p.survivor.id });
    const into = await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: p.merged.id, mergedId: third.id }), 'NOT_FOUND');
    expect(into.details).toMatchObject({ mergedIntoId: p.survivor.id });
  });

  it('moves a large lead whole: every page of its timeline and conversation', async () => {
    const h = await makeHarness();
    const s = await h.addLead({ email: 's@x.test' });
    const m = await h.addLead({ email: 'm@x.test' });
    const sender = await h.addSender();
    const writes = [];
    for (let i = 0; i < 2_500; i++) {
      const a = newActivity(h.stamp(), m.id, h.owner.memberId, 'EVENT', `event ${i}`, { metadata: { eventKind: 'message_sent' } });
      writes.push({ collection: 'activities' as const, id: a.id, before: null, after: a });
      if (i % 2 === 0) {
        const msg = newMessage(h.stamp(), { leadId: m.id, sdrProfileId: sender.id, chatId: 'c', direction: 'out', kind: 'message', text: `m${i}`, status: 'sent' });
        writes.push({ collection: 'messages' as const, id: msg.id, before: null, after: msg });
      }
    }
    await h.seed(writes);
    const out = await h.call('campaigns.leads.merge', { survivorId: s.id, mergedId: m.id });
    expect(out.moved).toMatchObject({ events: 2_500, messages: 1_250 });
    expect(await h.store.count('activities', { op: 'eq', field: 'leadId', value: m.id })).toBe(0);
    expect(await h.store.count('messages', { op: 'eq', field: 'leadId', value: s.id })).toBe(1_250);
  });

  it('refuses a lead with more documents than one merge moves, changing nothing', async () => {
    const h = await makeHarness();
    const s = await h.addLead({ email: 's@x.test' });
    const m = await h.addLead({ email: 'm@x.test' });
    const sender = await h.addSender();
    const writes = Array.from({ length: MAX_MERGE_MOVES + 1 }, (_, i) => {
      const msg = newMessage(h.stamp(), { leadId: m.id, sdrProfileId: sender.id, chatId: 'c', direction: 'out', kind: 'message', text: `m${i}`, status: 'sent' });
      return { collection: 'messages' as const, id: msg.id, before: null, after: msg };
    });
    await h.seed(writes);
    const e = await h.expectRefused(h.call('campaigns.leads.merge', { survivorId: s.id, mergedId: m.id }), 'RULE_VIOLATION');
    expect(e.details).toMatchObject({ max: MAX_MERGE_MOVES });
  });

  it('hides the tombstone from search, count and export, and answers 404 with mergedIntoId for operations naming it', async () => {
    const p = await pair();
    const { h } = p;
    await h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    const found = await h.call('campaigns.leads.search', { query: 'Mail' });
    expect(found.leads.map((l) => l.id)).toEqual([p.survivor.id]);
    expect((await h.call('campaigns.leads.count', { query: 'mail' })).count).toBe(1);
    const inGroup = await h.call('campaigns.leads.search', { campaignId: p.q4.id });
    expect(inGroup.leads.map((l) => l.id)).toEqual([p.survivor.id]);
    const exported = JSON.stringify(await h.call('campaigns.leads.export', { query: 'Mail' }));
    expect(exported).toContain(p.survivor.id);
    expect(exported).not.toContain(p.merged.id);
    for (const call of [
      () => h.call('campaigns.leads.get', { leadId: p.merged.id }),
      () => h.call('campaigns.leads.update', { leadId: p.merged.id, jobTitle: 'CEO' }),
      () => h.call('leadActivities.create', { leadId: p.merged.id, content: 'late note' }),
      () => h.call('campaigns.leads.setLeadFollowUp', { leadId: p.merged.id, followUpAt: null }),
    ]) {
      const e = await h.expectRefused(call(), 'NOT_FOUND');
      expect(e).toBeInstanceOf(DomainError);
      expect(e.status).toBe(404);
      expect(e.details).toMatchObject({ mergedIntoId: p.survivor.id });
    }
    // Ids naming it in a list count as missing.
    expect(await h.call('campaigns.leads.setDoNotContact', { leadIds: [p.merged.id], doNotContact: true })).toEqual({ changed: 0, skippedMissing: 1 });
  });
});

describe('after a merge, the person is the survivor', () => {
  it('lets the survivor take the merged lead\'s email (the tombstone holds nobody\'s identity)', async () => {
    const p = await pair();
    const { h } = p;
    await h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    const updated = await h.call('campaigns.leads.update', { leadId: p.survivor.id, email: 'eve.mail@example.com' });
    expect(updated.email).toBe('eve.mail@example.com');
    expect((await h.call('campaigns.leads.count', {})).count).toBe((await h.store.count('leads')) - 1);
  });
});

describe('after a merge, an entry with the merged lead\'s address is the survivor', () => {
  it('finds the survivor for a create, an import and a second merge\'s chain, and creates no lead', async () => {
    const p = await pair();
    const { h } = p;
    await h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    // The survivor kept its own email; the merged lead's address is on no live lead, yet it is Eve.
    expect((await lead(h, p.survivor.id)).email).toBe('eve@example.com');
    const before = await h.store.count('leads');
    const created = await h.call('campaigns.leads.create', { leadGroupId: p.otherGroup.id, leads: [{ firstName: 'Evelyn', email: ' EVE.MAIL@example.com ' }] });
    expect(created).toMatchObject({ created: 0, duplicates: 1 });
    expect(await h.store.count('leads')).toBe(before);
    expect((await lead(h, p.survivor.id)).groupIds).toContain(p.otherGroup.id);

    // Merged again: a third lead took the survivor in; the first merged lead's address leads to it.
    const third = await h.addLead({ firstName: 'E.', lastName: 'Mail', email: 'e.mail@example.org' });
    await h.call('campaigns.leads.merge', { survivorId: third.id, mergedId: p.survivor.id });
    const again = await h.call('campaigns.leads.create', { leadGroupId: p.otherGroup.id, leads: [{ email: 'Eve.Mail@Example.com' }, { email: 'eve@example.com' }] });
    expect(again).toMatchObject({ created: 0, duplicates: 2 });
    expect(await h.store.count('leads')).toBe(before + 1);
  });
});

describe('campaigns.leads.unmerge', () => {
  it('puts both leads back as they were and moves everything back', async () => {
    const p = await pair();
    const { h } = p;
    const docsOf = async () => {
      const snap = h.db.snapshot() as Record<string, Record<string, { doc: Record<string, unknown>; deleted: boolean }>>;
      const pick = (c: string) => Object.fromEntries(Object.entries(snap[c] ?? {}).map(([id, r]) => {
        const { updatedAt: _u, ...rest } = r.doc;
        return [id, { ...rest, deleted: r.deleted } as Record<string, unknown>];
      }));
      return { leads: pick('leads'), messages: pick('messages'), enrollments: pick('enrollments'), activities: pick('activities') };
    };
    const before = await docsOf();
    const out = await h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    const back = await h.call('campaigns.leads.unmerge', { survivorId: p.survivor.id, mergedId: p.merged.id, undo: out.undo });
    expect(back.movedBack).toEqual({ activities: out.undo.movedActivityIds.length, messages: 1, enrollments: 2 });
    const after = await docsOf();
    expect(after.leads).toEqual(before.leads);
    expect(after.messages).toEqual(before.messages);
    expect(after.enrollments).toEqual(before.enrollments);
    // Every activity that was there is back where it was; the merge and its undo left two timeline entries.
    for (const [id, a] of Object.entries(before.activities)) expect(after.activities[id]).toEqual(a);
    const added = Object.values(after.activities).filter((a) => !(String(a.id) in before.activities)).map((a) => (a.metadata as { eventKind?: string }).eventKind);
    expect(added.sort()).toEqual(['lead_merged', 'lead_unmerged']);
    // The merged lead is a lead of its own again.
    expect((await h.call('campaigns.leads.get', { leadId: p.merged.id })).email).toBe('eve.mail@example.com');
  });

  it('keeps an edit made to the survivor after the merge', async () => {
    const p = await pair();
    const { h } = p;
    const out = await h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id });
    expect((await lead(h, p.survivor.id)).company).toBe('Initech');
    await h.call('campaigns.leads.update', { leadId: p.survivor.id, company: 'Initrode' });
    const back = await h.call('campaigns.leads.unmerge', { survivorId: p.survivor.id, mergedId: p.merged.id, undo: out.undo });
    expect(back.keptChanges).toBe(1);
    const s = await lead(h, p.survivor.id);
    expect(s.company).toBe('Initrode');
    // What nobody touched since is as before the merge.
    expect(s.phone).toBe('');
    expect(s.groupIds).toEqual([h.main.leadGroupId]);
    expect(s.tagId).toBeNull();
  });

  it('refuses to undo a merge that did not happen, changing nothing', async () => {
    const p = await pair();
    const out = await p.h.call('campaigns.leads.merge', { survivorId: p.survivor.id, mergedId: p.merged.id, dryRun: true });
    await p.h.expectRefused(p.h.call('campaigns.leads.unmerge', { survivorId: p.survivor.id, mergedId: p.merged.id, undo: out.undo }), 'CONFLICT');
  });
});

describe('campaigns.leads.duplicates', () => {
  it('lists same-key groups and possible duplicates by name and company, paged, without merged leads', async () => {
    const h = await makeHarness();
    const a = await h.addLead({ firstName: 'Eve', lastName: 'Mail', email: 'Eve.Mail@Example.COM', company: 'Initech' });
    const b = await h.addLead({ firstName: 'Evelyn', lastName: 'Mail', email: 'eve.mail@example.com' });
    const c = await h.addLead({ firstName: 'Ann', lastName: 'Lee', socialUrl: 'https://www.linkedin.com/in/ann-lee/' });
    const d = await h.addLead({ firstName: 'Ann', lastName: 'Lee', socialUrl: 'http://de.linkedin.com/in/Ann-Lee?trk=x' });
    const e = await h.addLead({ firstName: 'Bo', lastName: 'Ng', company: 'Globex', email: 'bo@globex.test' });
    const f = await h.addLead({ firstName: 'bo', lastName: 'ng', company: 'Globex', email: 'bo.ng@globex.test' });
    await h.addLead({ firstName: 'Solo', lastName: 'Person', email: 'solo@x.test' });

    const all = await h.call('campaigns.leads.duplicates', {});
    const sets = all.groups.map((g) => [g.kind, g.certain, g.leads.map((l) => l.id).sort()] as const);
    expect(sets).toContainEqual(['profile', true, [c.id, d.id].sort()]);
    expect(sets).toContainEqual(['email', true, [a.id, b.id].sort()]);
    expect(all.nextCursor).toBeNull();
    expect(sets).toContainEqual(['nameCompany', false, [e.id, f.id].sort()]);
    expect(sets.filter(([k]) => k === 'nameCompany').flatMap(([, , ids]) => ids)).not.toContain(c.id);
    expect(all.groups[0]?.kind).toBe('profile');

    // One group a page: every group is reached exactly once through the cursor.
    const paged: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 20; i++) {
      const page: Awaited<ReturnType<typeof h.call<'campaigns.leads.duplicates'>>> = await h.call('campaigns.leads.duplicates', { limit: 1, ...(cursor ? { cursor } : {}) });
      expect(page.groups.length).toBeLessThanOrEqual(1);
      paged.push(...page.groups.map((g) => `${g.kind}/${g.key}`));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(paged).toEqual(all.groups.map((g) => `${g.kind}/${g.key}`));

    // After a merge the pair is gone.
    await h.call('campaigns.leads.merge', { survivorId: a.id, mergedId: b.id });
    const emails = await h.call('campaigns.leads.duplicates', { kind: 'email' });
    expect(emails.groups.flatMap((g) => g.leads.map((l) => l.id))).not.toContain(b.id);
    await h.expectRefused(h.call('campaigns.leads.duplicates', { cursor: 'nonsense' }), 'INVALID_INPUT');
  });
});

describe('a merged lead is contacted through its survivor only', () => {
  it('is never started by a running campaign of its lead group, nor counted among its leads', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' })] });
    const keep = await w.h.addLead({ firstName: 'Keep', email: 'k@x.test' });
    const gone = await w.h.addLead({ firstName: 'Gone', email: 'g@x.test' });
    await w.h.call('campaigns.leads.merge', { survivorId: keep.id, mergedId: gone.id });
    const activity = await w.h.call('campaigns.getActivity', { campaignId: c.id });
    expect(activity.groupLeads.notStarted).toBe(1);
    await w.start(c);
    const runner = w.runner({ spacing: { minSeconds: 60, jitterSeconds: 0 } });
    for (let i = 0; i < 3; i++) {
      await runner.tick();
      w.h.clock.advance(3600_000);
    }
    const sent = await w.messages({ campaignId: c.id, direction: 'out' });
    expect(sent.map((m) => m.leadId)).toEqual([keep.id]);
    const { docs } = await w.h.store.query('enrollments', { where: { op: 'eq', field: 'leadId', value: gone.id } });
    expect(docs).toEqual([]);
  });

  it('refuses a running enrollment of a merged lead (the rules, for every writer)', async () => {
    const h = await makeHarness();
    const c = await h.addCampaign();
    const s = await h.addLead({ email: 's@x.test' });
    const m = await h.addLead({ email: 'm@x.test' });
    await h.call('campaigns.leads.merge', { survivorId: s.id, mergedId: m.id });
    const e = newEnrollment(h.stamp(), m.id, c.id);
    await expect(validateChange({ collection: 'enrollments', before: null, after: e }, { actor: h.owner, read: h.store, now: h.clock.now() })).rejects.toMatchObject({ code: 'NOT_FOUND', details: { mergedIntoId: s.id } });
    await expect(validateChange({ collection: 'enrollments', before: null, after: { ...e, status: 'STOPPED', stoppedReason: 'merged', nextActionAt: null } }, { actor: h.owner, read: h.store, now: h.clock.now() })).resolves.toBeUndefined();
    // A note, task or enrollment does not change lead except between a merged lead and its survivor.
    const other = await h.addLead({ email: 'o@x.test' });
    const note = await h.call('leadActivities.create', { leadId: s.id, content: 'mine' });
    const stored = await h.store.get('activities', note.id);
    if (!stored) throw new Error('no note');
    await expect(validateChange({ collection: 'activities', before: stored, after: { ...stored, leadId: other.id } }, { actor: h.owner, read: h.store, now: h.clock.now() })).rejects.toMatchObject({ code: 'RULE_VIOLATION' });
  });
});
