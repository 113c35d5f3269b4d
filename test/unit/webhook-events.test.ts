/** The events a commit's writes raise (shared/webhooks/events.ts): each type from the document
 * changes that mean it, and nothing from creations, unchanged fields, deletions or other documents. */
import { describe, expect, it } from 'vitest';
import { newActivity, newCampaign, newEnrollment, newLead, newMessage, newStage } from '../../shared/model/factories.ts';
import type { Lead, Stage } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { eventBody, eventsOf, mayRaiseEvents, referencesOf } from '../../shared/webhooks/events.ts';
import type { EventReferences } from '../../shared/webhooks/events.ts';

const WS = 'ws-1';
const T0 = '2026-11-20T09:00:00.000Z';
const T1 = '2026-11-20T09:05:00.000Z';
const stamp = (id: string, now = T0) => ({ id, workspaceId: WS, now });

const engaged: Stage = newStage(stamp('stage-engaged'), 'Engaged', 'ENGAGED', '#00aa00', 2);
const lost: Stage = newStage(stamp('stage-lost'), 'Lost', 'LOST', '#aa0000', 6);
const lead: Lead = newLead(stamp('lead-1'), 'group-1', { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', company: 'Engines' });
const refs: EventReferences = { leads: new Map([[lead.id, lead]]), stages: new Map([[engaged.id, engaged], [lost.id, lost]]) };

const update = <W extends AnyWrite>(w: Omit<W, 'id'> & { after: NonNullable<W['after']> }): AnyWrite => ({ ...w, id: w.after.id }) as AnyWrite;

describe('webhook events from writes', () => {
  it('a received reply raises lead.replied with the suggested label and the lead; a person labelling it raises lead.reply_labelled', () => {
    const reply = newMessage(stamp('msg-1', T1), { leadId: lead.id, sdrProfileId: 'sender-1', chatId: 'chat-1', direction: 'in', kind: 'email', text: 'Yes, call me', status: 'received', sentAt: T1, campaignId: 'camp-1', subject: 'Re: hi', replyLabelSuggested: 'interested' });
    const [e] = eventsOf([{ collection: 'messages', id: reply.id, before: null, after: reply }], refs);
    expect(e).toEqual({
      type: 'lead.replied',
      timestamp: T1,
      data: {
        messageId: 'msg-1', sdrProfileId: 'sender-1', campaignId: 'camp-1', chatId: 'chat-1', channel: 'email', subject: 'Re: hi', text: 'Yes, call me', textTruncated: false, receivedAt: T1,
        suggestedLabel: 'interested', label: null,
        lead: { id: lead.id, fullName: 'Ada Lovelace', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', company: 'Engines', jobTitle: '', socialUrl: '' },
      },
    });
    const labelled = { ...reply, replyLabel: 'not_interested' as const, replyLabelledBy: 'member-1', replyLabelledAt: '2026-11-20T10:00:00.000Z', updatedAt: '2026-11-20T10:00:00.000Z' };
    expect(eventsOf([{ collection: 'messages', id: reply.id, before: reply, after: labelled }], refs)).toEqual([
      {
        type: 'lead.reply_labelled',
        timestamp: '2026-11-20T10:00:00.000Z',
        data: expect.objectContaining({ messageId: 'msg-1', label: 'not_interested', previousLabel: null, suggestedLabel: 'interested', labelledBy: 'member-1', labelledAt: '2026-11-20T10:00:00.000Z' }) as unknown,
      },
    ]);
    // The same label again, marking it done, or a message we sent: nothing.
    expect(eventsOf([{ collection: 'messages', id: reply.id, before: labelled, after: { ...labelled, doneAt: T1 } }], refs)).toEqual([]);
    const sent = newMessage(stamp('msg-2'), { leadId: lead.id, sdrProfileId: 's', chatId: 'c', direction: 'out', kind: 'email', text: 'hi', status: 'sent' });
    expect(eventsOf([{ collection: 'messages', id: sent.id, before: null, after: sent }], refs)).toEqual([]);
  });

  it('cuts a long reply and says so', () => {
    const reply = newMessage(stamp('msg-3'), { leadId: lead.id, sdrProfileId: 's', chatId: 'c', direction: 'in', kind: 'message', text: 'x'.repeat(12_000), status: 'received' });
    const [e] = eventsOf([{ collection: 'messages', id: reply.id, before: null, after: reply }], refs);
    expect(e?.type === 'lead.replied' && [e.data.text.length, e.data.textTruncated]).toEqual([10_000, true]);
  });

  it('lead changes: stage (with names), meeting booked (with the campaign of its timeline event), bounce, unsubscribe', () => {
    const after: Lead = { ...lead, pipelineStageId: lost.id, closeReason: 'NOT_ICP', meetingBookedAt: T1, meetingBookedSource: 'MANUAL', emailBouncedAt: T1, emailBounceReason: '550 no such user', unsubscribedAt: T1, unsubscribeSource: 'one_click', updatedAt: T1 };
    const before: Lead = { ...lead, pipelineStageId: engaged.id };
    const booked = newActivity(stamp('act-1', T1), lead.id, 'member-1', 'EVENT', 'booked', { metadata: { eventKind: 'meeting_booked', campaignId: 'camp-9' } });
    const events = eventsOf([{ collection: 'activities', id: booked.id, before: null, after: booked }, update({ collection: 'leads', before, after })], refs);
    expect(events.map((e) => e.type)).toEqual(['lead.stage_changed', 'lead.meeting_booked', 'lead.email_bounced', 'lead.unsubscribed']);
    expect(events[0]?.data).toMatchObject({ stage: { id: lost.id, name: 'Lost', category: 'LOST' }, previousStage: { id: engaged.id, name: 'Engaged', category: 'ENGAGED' }, closeReason: 'NOT_ICP' });
    expect(events[1]?.data).toMatchObject({ campaignId: 'camp-9', source: 'MANUAL', bookedAt: T1 });
    expect(events[2]?.data).toMatchObject({ email: 'ada@example.com', reason: '550 no such user', bouncedAt: T1 });
    expect(events[3]?.data).toMatchObject({ source: 'one_click', unsubscribedAt: T1, lead: { id: lead.id, email: 'ada@example.com' } });
    // A lead created with those fields (an import) raises nothing; neither does a write that keeps them.
    expect(eventsOf([{ collection: 'leads', id: lead.id, before: null, after }], refs)).toEqual([]);
    expect(eventsOf([{ collection: 'leads', id: lead.id, before: after, after: { ...after, firstName: 'Augusta' } }], refs)).toEqual([]);
    expect(eventsOf([{ collection: 'leads', id: lead.id, before: after, after: null }], refs)).toEqual([]);
  });

  it('a sequence that finishes raises lead.sequence_finished: completed, or stopped with the reason', () => {
    const running = newEnrollment(stamp('enr-1'), lead.id, 'camp-1', { sdrProfileId: 'sender-1' });
    const cases: [Partial<typeof running>, string, string | null][] = [
      [{ status: 'COMPLETED', completedAt: T1 }, 'completed', null],
      [{ status: 'STOPPED', stoppedReason: 'meeting_booked' }, 'stopped', 'meeting_booked'],
      [{ status: 'REPLIED', stoppedReason: 'replied' }, 'stopped', 'replied'],
      [{ status: 'STOPPED', stoppedReason: 'unsubscribed' }, 'stopped', 'unsubscribed'],
    ];
    for (const [change, outcome, reason] of cases) {
      const [e] = eventsOf([update({ collection: 'enrollments', before: running, after: { ...running, ...change, updatedAt: T1 } })], refs);
      expect(e).toMatchObject({ type: 'lead.sequence_finished', data: { enrollmentId: 'enr-1', campaignId: 'camp-1', sdrProfileId: 'sender-1', outcome, reason } });
    }
    const stopped = { ...running, status: 'STOPPED' as const, stoppedReason: 'x' };
    expect(eventsOf([update({ collection: 'enrollments', before: stopped, after: { ...stopped, status: 'COMPLETED' } })], refs)).toEqual([]);
    expect(eventsOf([update({ collection: 'enrollments', before: running, after: { ...running, currentStepId: 'step-2' } })], refs)).toEqual([]);
  });

  it('an accepted connection (its timeline event) and campaigns started or paused', () => {
    const accepted = newActivity(stamp('act-2', T1), lead.id, 'u', 'EVENT', 'accepted', { metadata: { eventKind: 'connection_accepted', campaignId: 'camp-1', sdrProfileId: 'sender-1' } });
    expect(eventsOf([{ collection: 'activities', id: accepted.id, before: null, after: accepted }], refs)).toEqual([
      { type: 'lead.connection_accepted', timestamp: T1, data: expect.objectContaining({ campaignId: 'camp-1', sdrProfileId: 'sender-1', acceptedAt: T1 }) as unknown },
    ]);
    const note = newActivity(stamp('act-3'), lead.id, 'u', 'NOTE', 'a note');
    expect(eventsOf([{ collection: 'activities', id: note.id, before: null, after: note }], refs)).toEqual([]);
    const c = newCampaign(stamp('camp-1'), 'Spring', 'group-1', 'seq-1');
    const started = { ...c, running: true, updatedAt: T1 };
    expect(eventsOf([update({ collection: 'campaigns', before: c, after: started })], refs)).toEqual([{ type: 'campaign.started', timestamp: T1, data: { campaignId: 'camp-1', name: 'Spring', startedAt: T1 } }]);
    const paused = { ...started, running: false, pausedReason: 'The subscription lapsed.' };
    expect(eventsOf([update({ collection: 'campaigns', before: started, after: paused })], refs)[0]).toMatchObject({ type: 'campaign.paused', data: { reason: 'The subscription lapsed.' } });
    expect(eventsOf([update({ collection: 'campaigns', before: c, after: { ...c, name: 'Renamed' } })], refs)).toEqual([]);
  });

  it('a merge raises lead.merged and its undo lead.unmerged, naming the lead it had been merged into even when only the revived lead is written', () => {
    const dup: Lead = newLead(stamp('lead-dup'), 'group-1', { firstName: 'Ada', lastName: 'L.', email: 'ADA@example.com', company: 'Engines' });
    const tomb: Lead = { ...dup, mergedIntoId: lead.id, updatedAt: T1 };
    const [merged] = eventsOf([update({ collection: 'leads', before: dup, after: tomb })], refs);
    expect(merged).toMatchObject({ type: 'lead.merged', data: { lead: { id: lead.id }, mergedLeadId: dup.id, mergedAt: T1 } });
    const undoneAt = '2026-11-20T09:06:00.000Z';
    const { mergedIntoId: _gone, ...revived } = tomb;
    const back: Lead = { ...revived, updatedAt: undoneAt };
    const writes = [update({ collection: 'leads', before: tomb, after: back })];
    // Pushed by a desktop, the revived lead may come alone: the survivor is looked up.
    expect(referencesOf(writes).leadIds).toEqual([lead.id]);
    expect(eventsOf(writes, refs)).toEqual([{
      type: 'lead.unmerged',
      timestamp: undoneAt,
      data: {
        lead: { id: lead.id, fullName: 'Ada Lovelace', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', company: 'Engines', jobTitle: '', socialUrl: '' },
        mergedLead: { id: dup.id, fullName: 'Ada L.', firstName: 'Ada', lastName: 'L.', email: 'ADA@example.com', company: 'Engines', jobTitle: '', socialUrl: '' },
        mergedLeadId: dup.id,
        unmergedAt: undoneAt,
      },
    }]);
    // With the survivor in the same commit (campaigns.leads.unmerge), its state after the undo.
    const restored: Lead = { ...lead, company: 'Analytical Engines', updatedAt: undoneAt };
    const both = eventsOf([...writes, update({ collection: 'leads', before: lead, after: restored })], refs);
    expect(both.map((e) => e.type)).toEqual(['lead.unmerged']);
    expect(both[0]?.data).toMatchObject({ lead: { id: lead.id, company: 'Analytical Engines' } });
    // A tombstone edited (its survivor's push) or deleted is no undo.
    expect(eventsOf([update({ collection: 'leads', before: tomb, after: { ...tomb, jobTitle: 'CTO' } })], refs)).toEqual([]);
    expect(eventsOf([{ collection: 'leads', id: tomb.id, before: tomb, after: null }], refs)).toEqual([]);
  });

  it('says which leads and stages to look up, and which writes may raise events at all', () => {
    const reply = newMessage(stamp('msg-9'), { leadId: 'lead-2', sdrProfileId: 's', chatId: 'c', direction: 'in', kind: 'message', text: 'hi', status: 'received' });
    const moved = { ...lead, pipelineStageId: lost.id };
    expect(referencesOf([{ collection: 'messages', id: reply.id, before: null, after: reply }, update({ collection: 'leads', before: lead, after: moved })])).toEqual({ leadIds: ['lead-2'], stageIds: [lost.id] });
    expect(mayRaiseEvents([{ collection: 'leads', id: lead.id, before: null, after: lead }])).toBe(false);
    expect(mayRaiseEvents([{ collection: 'messages', id: reply.id, before: null, after: reply }])).toBe(true);
    expect(eventBody({ type: 'x.y', timestamp: T0, data: { a: 1 } })).toBe('{"type":"x.y","timestamp":"2026-11-20T09:00:00.000Z","data":{"a":1}}');
  });
});
