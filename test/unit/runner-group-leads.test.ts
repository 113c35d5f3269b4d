/** A campaign's leads are its lead group's leads: a running campaign with leads only in its group
 * (none enrolled) contacts them in lead-picking order and skips, with a reason the campaign page
 * shows, Do Not Contact, blocklisted, closed-stage leads and people running elsewhere. */
import { describe, expect, it } from 'vitest';
import { newStep } from '../../shared/model/factories.ts';
import { engineWorld } from './engine-fixtures.ts';

describe('runner: the lead group is the campaign\'s leads', () => {
  it('contacts the group\'s leads in lead-picking order and lists the skipped ones with reasons', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const group = w.h.main.leadGroupId;
    const c = await w.h.addCampaign({ senderIds: [sender.id], steps: [newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' })] });
    await w.patch('campaigns', c.id, (d) => void (d.settings.preferNewLeads = true));
    const { docs: stages } = await w.h.store.query('stages');
    const won = stages.find((s) => s.category === 'WON');
    if (!won) throw new Error('no WON stage');
    // Created one minute apart: preferNewLeads contacts the newest first.
    const at = (_m: number) => {
      w.h.clock.advance(60_000);
      return w.h.now();
    };
    const oldest = await w.h.addLead({ firstName: 'Oldest', createdAt: at(1) });
    const dnc = await w.h.addLead({ firstName: 'Dnc', doNotContact: true, createdAt: at(2) });
    const middle = await w.h.addLead({ firstName: 'Middle', createdAt: at(3) });
    const blocked = await w.h.addLead({ firstName: 'Blocked', blocklisted: true, createdAt: at(4) });
    const closed = await w.h.addLead({ firstName: 'Closed', pipelineStageId: won.id, createdAt: at(5) });
    const busy = await w.h.addLead({ firstName: 'Busy', createdAt: at(6) });
    const newest = await w.h.addLead({ firstName: 'Newest', createdAt: at(7) });
    const elsewhere = await w.h.addCampaign({ name: 'Elsewhere', senderIds: [sender.id] });
    await w.enroll(busy, elsewhere, { sdrProfileId: sender.id, nextActionAt: '2026-12-31T00:00:00.000Z' });
    expect(group).toBe(c.leadGroupId);

    const before = await w.h.call('campaigns.getActivity', { campaignId: c.id });
    expect(before.groupLeads.notStarted).toBe(3);
    await w.start(c);
    // One action per tick with a spacing of an hour: the order is visible in the sent messages.
    const runner = w.runner({ spacing: { minSeconds: 3600, jitterSeconds: 0 } });
    for (let i = 0; i < 4; i++) {
      await runner.tick();
      w.h.clock.advance(3600_000);
    }
    const sent = await w.messages({ campaignId: c.id, direction: 'out' });
    expect(sent.map((m) => m.leadId)).toEqual([newest.id, middle.id, oldest.id]);
    expect(sent.every((m) => m.status === 'sent')).toBe(true);

    const after = await w.h.call('campaigns.getActivity', { campaignId: c.id });
    expect(after.groupLeads.notStarted).toBe(0);
    expect(after.groupLeads.skipped.map((s) => [s.leadId, s.reason])).toEqual([
      [busy.id, 'running_elsewhere'],
      [closed.id, 'closed_stage'],
      [blocked.id, 'blocklisted'],
      [dnc.id, 'do_not_contact'],
    ]);
    expect(after.groupLeads.skipped[0]?.explanation).toMatch(/another campaign/);
    const { docs: mine } = await w.h.store.query('enrollments', { where: { op: 'eq', field: 'campaignId', value: c.id } });
    expect(mine.map((e) => e.leadId).sort()).toEqual([newest.id, middle.id, oldest.id].sort());
    expect((await w.events('enrolled')).filter((a) => a.metadata.campaignId === c.id)).toHaveLength(3);
  });

  it('a lead added to the group of a running campaign is started on the next tick; a lead running elsewhere starts when that sequence ends', async () => {
    const w = await engineWorld();
    const sender = await w.h.addSender();
    const c = await w.h.addCampaign({ senderIds: [sender.id] });
    const other = await w.h.addCampaign({ name: 'Other', senderIds: [sender.id] });
    await w.start(c);
    const runner = w.runner();
    const busy = await w.h.addLead({ firstName: 'Busy' });
    const busyElsewhere = await w.enroll(busy, other, { sdrProfileId: sender.id, nextActionAt: '2026-12-31T00:00:00.000Z' });
    expect((await runner.tick()).actions).toBe(0);

    w.h.clock.advance(60_000);
    const late = await w.h.addLead({ firstName: 'Late' });
    const r = await runner.tick();
    expect(r.startedFromGroup).toBe(1);
    expect(r.actions).toBe(1);
    expect((await w.messages({ campaignId: c.id })).map((m) => m.leadId)).toEqual([late.id]);

    w.h.clock.advance(60_000);
    await w.patch('enrollments', busyElsewhere.id, (e) => Object.assign(e, { status: 'COMPLETED', completedAt: w.h.now(), nextActionAt: null, updatedAt: w.h.now() }));
    const r2 = await runner.tick();
    expect(r2.startedFromGroup).toBe(1);
    expect((await w.messages({ campaignId: c.id })).map((m) => m.leadId)).toEqual([late.id, busy.id]);
  });
});
