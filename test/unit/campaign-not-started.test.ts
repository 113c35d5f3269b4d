/** What the campaign page says about its list's leads that have not started: how many the list holds,
 * how many wait their turn, how many are skipped for each reason (all of them, not only the listed
 * ones), and the skipped leads of one reason on request. */
import { describe, expect, it } from 'vitest';
import { newStep } from '../../shared/model/factories.ts';
import { engineWorld } from './engine-fixtures.ts';

describe('campaigns.getActivity: the list leads that have not started', () => {
  it('counts every skipped lead by reason, beyond the listed page, and lists one reason on request', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi' })] });
    const elsewhere = await w.h.addCampaign({ name: 'Elsewhere', senderIds: [sender.id] });
    for (let i = 0; i < 6; i++) await w.h.addLead({ firstName: `Dnc${i}`, doNotContact: true });
    await w.h.addLead({ firstName: 'Blocked', blocklisted: true });
    for (let i = 0; i < 2; i++) {
      const busy = await w.h.addLead({ firstName: `Busy${i}` });
      await w.enroll(busy, elsewhere, { sdrProfileId: sender.id, nextActionAt: '2026-12-31T00:00:00.000Z' });
    }
    for (let i = 0; i < 4; i++) await w.h.addLead({ firstName: `Fresh${i}` });
    const started = await w.h.addLead({ firstName: 'Started' });
    await w.enroll(started, c, { sdrProfileId: sender.id });

    const out = await w.h.call('campaigns.getActivity', { campaignId: c.id, limit: 3 });
    expect(out.groupLeads).toMatchObject({ total: 14, notStarted: 4, skippedTotal: 9 });
    expect(out.groupLeads.skippedByReason).toEqual({ do_not_contact: 6, blocklisted: 1, running_elsewhere: 2 });
    expect(out.groupLeads.skipped).toHaveLength(3);

    const dnc = await w.h.call('campaigns.getActivity', { campaignId: c.id, limit: 100, skippedReason: 'do_not_contact' });
    expect(dnc.groupLeads.skipped.map((s) => s.leadName).sort()).toEqual(['Dnc0', 'Dnc1', 'Dnc2', 'Dnc3', 'Dnc4', 'Dnc5']);
    expect(dnc.groupLeads.skipped.every((s) => s.reason === 'do_not_contact')).toBe(true);
    expect(dnc.groupLeads.skippedByReason).toEqual(out.groupLeads.skippedByReason);
  });
});
