/** Settling interrupted sends in the runner (an intent without outcome found when a runner takes a
 * sender), and "send again" (campaigns.leads.resendUnknown) with its refusals. */
import { describe, expect, it } from 'vitest';
import type { Channel, FindSentResult } from '../../shared/engine/channel.ts';
import { channelHostOf } from '../../shared/engine/channel.ts';
import { derivedUuid } from '../../shared/engine/hash.ts';
import { newMessage, newStep } from '../../shared/model/factories.ts';
import { engineWorld } from './engine-fixtures.ts';

async function interrupted(opts: { findSent?: FindSentResult } = {}) {
  const w = await engineWorld();
  const sender = await w.h.addSender({ name: 'Mia Mail', channel: 'email', capabilities: ['email'] });
  const step = newStep(w.h.ids.uuid(), 'EMAIL', { subject: 'Hello', content: 'Hi there' });
  const c = await w.h.addCampaign({ senderIds: [sender.id], steps: [step] });
  await w.start(c);
  const lead = await w.h.addLead({ firstName: 'Ada', email: 'ada@example.test' });
  const e = await w.enroll(lead, c, { sdrProfileId: sender.id });
  // What a runner killed right after the SMTP server's 250 leaves behind: the intent, no outcome.
  // The runner names a step's message after the enrollment and step (stable across retries).
  const intent = newMessage({ ...w.h.stamp(), id: derivedUuid('step-message', e.id, step.id, 0) }, { leadId: lead.id, sdrProfileId: sender.id, chatId: 'pending', direction: 'out', kind: 'email', text: 'Hi there', subject: 'Hello', campaignId: c.id, stepId: step.id, status: 'sending' });
  await w.h.seed([{ collection: 'messages', id: intent.id, before: null, after: intent }]);
  const lookups: string[] = [];
  const found = opts.findSent;
  const channel: Channel = found
    ? Object.assign(Object.create(w.scripted) as Channel, {
        findSent: async (_s: unknown, ref: string) => {
          lookups.push(ref);
          return found;
        },
      })
    : w.scripted;
  const runner = w.runner({ channels: channelHostOf({ email: channel }) });
  return { w, sender, c, step, lead, e, intent, runner, lookups };
}

describe('runner: an interrupted send is never sent blindly again', () => {
  it('without a mailbox lookup: "delivery unknown" on the message, the enrollment (shown by campaigns.getActivity) and the timeline; nothing sent', async () => {
    const { w, c, e, intent, runner } = await interrupted();
    const r = await runner.tick();
    expect(r.settled.unknown).toBe(1);
    expect(r.actions).toBe(0);
    expect(w.scripted.sent).toEqual([]);
    expect((await w.h.store.get('messages', intent.id))?.status).toBe('unknown');
    const after = await w.enrollment(e.id);
    expect([after.waitReason, after.nextActionAt, after.status]).toEqual(['delivery_unknown', null, 'IN_PROGRESS']);
    expect((await w.events('delivery_unknown')).map((a) => a.metadata.messageId)).toEqual([intent.id]);
    const act = await w.h.call('campaigns.getActivity', { campaignId: c.id });
    expect(act.queued[0]?.reason).toBe('delivery_unknown');
    expect(act.recent.find((x) => x.id === intent.id)?.type).toBe('unknown');
    // Later ticks leave it alone.
    w.h.clock.advance(3600_000);
    expect((await runner.tick()).actions).toBe(0);
    expect(w.scripted.sent).toEqual([]);
  });

  it('found in the mailbox: recorded as sent, the sequence goes on, nothing sent again', async () => {
    const { w, e, intent, runner, lookups } = await interrupted({ findSent: { status: 'sent', externalId: '<x@acme.test>', chatId: '<x@acme.test>' } });
    const r = await runner.tick();
    expect(lookups).toEqual([intent.id]);
    expect(r.settled.sent).toBe(1);
    expect(w.scripted.sent).toEqual([]);
    const m = await w.h.store.get('messages', intent.id);
    expect([m?.status, m?.externalId, m?.sentAt]).toEqual(['sent', '<x@acme.test>', intent.createdAt]);
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('surely not sent (not_found): sent normally with the same id', async () => {
    const { w, e, intent, runner } = await interrupted({ findSent: { status: 'not_found' } });
    await runner.tick();
    expect(w.scripted.sent.map((s) => s.ref)).toEqual([intent.id]);
    expect((await w.h.store.get('messages', intent.id))?.status).toBe('sent');
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');
  });

  it('campaigns.leads.resendUnknown: dryRun answers the same and changes nothing; the real call sends the step again with a new id; a second call is refused', async () => {
    const { w, e, intent, runner } = await interrupted();
    await runner.tick();
    const before = w.h.db.snapshot();
    const dry = await w.h.call('campaigns.leads.resendUnknown', { messageId: intent.id, dryRun: true });
    expect(w.h.db.snapshot()).toEqual(before);
    const real = await w.h.call('campaigns.leads.resendUnknown', { messageId: intent.id });
    expect({ ...dry, dryRun: false }).toEqual(real);
    expect(real.enrollmentIds).toEqual([e.id]);
    expect(real.resent).toBe('step');

    w.h.clock.advance(60_000);
    expect((await runner.tick()).actions).toBe(1);
    expect(w.scripted.sent).toHaveLength(1);
    expect(w.scripted.sent[0]?.ref).not.toBe(intent.id);
    expect((await w.h.store.get('messages', intent.id))?.status).toBe('failed');
    expect((await w.enrollment(e.id)).status).toBe('COMPLETED');

    const settled = w.h.db.snapshot();
    await w.h.expectRefused(w.h.call('campaigns.leads.resendUnknown', { messageId: intent.id }), 'CONFLICT');
    expect(w.h.db.snapshot()).toEqual(settled);
  });

  it('refuses a message of another workspace as not found, and changes nothing', async () => {
    const { w, intent, runner } = await interrupted();
    await runner.tick();
    const before = w.h.db.snapshot();
    await w.h.expectRefused(w.h.call('campaigns.leads.resendUnknown', { messageId: intent.id }, w.h.foreignOwner), 'NOT_FOUND');
    expect(w.h.db.snapshot()).toEqual(before);
  });
});
