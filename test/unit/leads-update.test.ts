import { describe, expect, it } from 'vitest';
import { newEnrollment, newLeadGroup } from '../../shared/model/factories.ts';
import { makeHarness } from '../support/harness.ts';

describe('campaigns.leads.update', () => {
  it('changes only the passed fields; a dry run answers the same and changes nothing', async () => {
    const h = await makeHarness();
    const lead = await h.addLead({ firstName: 'Lena', lastName: 'Lead', email: 'lena@initech.test', company: 'Initech', jobTitle: 'CTO', phone: '555' });
    h.clock.advance(60_000);
    const input = { leadId: lead.id, lastName: 'Larsen', company: 'Initrode', rankingScore: 7 };
    const before = h.db.snapshot();
    const preview = await h.call('campaigns.leads.update', { ...input, dryRun: true });
    expect(h.db.snapshot()).toEqual(before);
    const real = await h.call('campaigns.leads.update', input);
    expect(preview).toEqual({ ...real, dryRun: true });
    expect(real).toMatchObject({
      id: lead.id, dryRun: false, firstName: 'Lena', lastName: 'Larsen', fullName: 'Lena Larsen', company: 'Initrode', jobTitle: 'CTO', phone: '555', rankingScore: 7,
      changed: ['lastName', 'fullName', 'company', 'rankingScore'], updatedAt: h.now(),
    });
    const stored = await h.store.get('leads', lead.id);
    expect(stored).toEqual({ ...lead, lastName: 'Larsen', fullName: 'Lena Larsen', company: 'Initrode', rankingScore: 7, updatedAt: h.now() });
  });

  it('sets, creates and clears variables by column name; a value equal to the stored one changes nothing', async () => {
    const h = await makeHarness();
    const group = newLeadGroup(h.stamp(), 'Fair', () => h.ids.uuid(), ['Booth']);
    await h.seed([{ collection: 'leadGroups', id: group.id, before: null, after: group }]);
    const booth = group.columns.find((c) => c.name === 'Booth');
    const lead = await h.addLead({ firstName: 'Ann', groupIds: [h.main.leadGroupId, group.id] });
    const res = await h.call('campaigns.leads.update', { leadId: lead.id, variables: { booth: 'B7', 'Favourite Colour': 'teal', 'job title': 'VP' } });
    const colour = (await h.store.get('leadGroups', h.main.leadGroupId))?.columns.find((c) => c.name === 'Favourite Colour');
    expect(colour).toMatchObject({ builtInType: null });
    expect(await h.store.get('leads', lead.id)).toMatchObject({ jobTitle: 'VP', variables: { [booth?.id ?? '']: 'B7', [colour?.id ?? '']: 'teal' } });
    expect(res.changed).toEqual(['jobTitle', 'booth', 'Favourite Colour']);
    expect(res.variables).toContainEqual({ variableTypeId: colour?.id, name: 'Favourite Colour', builtInType: '', value: 'teal' });

    const commits = h.db.commits;
    const same = await h.call('campaigns.leads.update', { leadId: lead.id, variables: { Booth: 'B7' } });
    expect(same.changed).toEqual([]);
    expect(h.db.commits).toBe(commits);

    await h.call('campaigns.leads.update', { leadId: lead.id, variables: { Booth: null, 'favourite colour': '' } });
    expect((await h.store.get('leads', lead.id))?.variables).toEqual({});
  });

  it('refuses nothing to update (422) and an email or social URL another lead has (409), changing nothing', async () => {
    const h = await makeHarness();
    const a = await h.addLead({ firstName: 'A', email: 'a@x.test', socialUrl: 'https://www.network.test/in/a/' });
    const b = await h.addLead({ firstName: 'B', email: 'b@x.test' });
    await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id }), 'NO_FIELDS_TO_UPDATE');
    await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id, variables: {}, dryRun: true }), 'NO_FIELDS_TO_UPDATE');
    const email = await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id, email: ' A@X.test ' }), 'DUPLICATE_LEAD');
    expect(email.details).toMatchObject({ field: 'email', existingLeadId: a.id });
    const social = await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id, socialUrl: 'http://network.test/in/A' }), 'DUPLICATE_LEAD');
    expect(social.details).toMatchObject({ field: 'socialUrl', existingLeadId: a.id });
    // The dry run refuses the same way.
    await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id, email: 'a@x.test', dryRun: true }), 'DUPLICATE_LEAD');
    await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id, email: 'not-an-email' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id, firstName: '', email: '' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.update', { leadId: b.id, firstName: 'X' }, h.foreignOwner), 'NOT_FOUND');
    // Its own email in another case is not a duplicate.
    expect((await h.call('campaigns.leads.update', { leadId: a.id, email: 'A@x.test' })).email).toBe('A@x.test');
  });

  it('doNotContact or blocklisted stops the running sequence', async () => {
    const h = await makeHarness();
    const sender = await h.addSender();
    const c = await h.addCampaign({ senderIds: [sender.id] });
    const lead = await h.addLead({ firstName: 'Run' });
    const e = newEnrollment(h.stamp(), lead.id, c.id, { sdrProfileId: sender.id });
    await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
    const res = await h.call('campaigns.leads.update', { leadId: lead.id, doNotContact: true });
    expect(res).toMatchObject({ doNotContact: true, changed: ['doNotContact'] });
    expect(await h.store.get('enrollments', e.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'do_not_contact' });
  });
});
