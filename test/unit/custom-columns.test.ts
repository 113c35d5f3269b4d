import { describe, expect, it } from 'vitest';
import { ensureCustomColumns, MAX_CUSTOM_COLUMNS } from '../../shared/lead-columns.ts';
import { newLeadGroup, newStep } from '../../shared/model/factories.ts';
import { Tx } from '../../shared/tx.ts';
import type { Ctx } from '../../shared/context.ts';
import { makeHarness, testSecrets } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** A campaign on a lead group of its own, with a message step that uses no custom column. */
async function campaignWithGroup(h: Harness) {
  const group = newLeadGroup(h.stamp(), 'Fair 2026', () => h.ids.uuid());
  await h.seed([{ collection: 'leadGroups', id: group.id, before: null, after: group }]);
  return h.addCampaign({ name: 'Fair follow-up', leadGroupId: group.id });
}

const columnsOf = async (h: Harness, leadGroupId: string) => (await h.store.get('leadGroups', leadGroupId))?.columns ?? [];

describe('custom columns through campaigns.leads.create', () => {
  it('creates a missing column by display name, stores the value, and search with includeVariables returns it', async () => {
    const h = await makeHarness();
    const c = await campaignWithGroup(h);
    const res = await h.call('campaigns.leads.create', {
      leadGroupId: c.leadGroupId,
      leads: [
        { firstName: 'Tea', email: 'tea@x.test', variables: { 'Favourite Colour': 'teal' } },
        // Same column whatever the case and spacing; a built-in column by its name fills the field.
        { firstName: 'Rose', email: 'rose@x.test', variables: { ' favourite colour ': 'red', company: 'Rosebud' } },
      ],
    });
    expect(res).toMatchObject({ created: 2, errors: [] });
    const custom = (await columnsOf(h, c.leadGroupId)).filter((col) => col.builtInType === null);
    expect(custom.map((col) => col.name)).toEqual(['Favourite Colour']);
    const colour = custom[0];

    const page = await h.call('campaigns.leads.search', { campaignId: c.id, includeVariables: true, sortBy: 'fullName', sortOrder: 'asc' });
    expect(page.leads.map((l) => [l.firstName, l.company, l.variables?.find((v) => v.name === 'Favourite Colour')])).toEqual([
      ['Rose', 'Rosebud', { variableTypeId: colour?.id, name: 'Favourite Colour', builtInType: '', value: 'red' }],
      ['Tea', '', { variableTypeId: colour?.id, name: 'Favourite Colour', builtInType: '', value: 'teal' }],
    ]);
    // Workspace-wide search shows them too.
    const wide = await h.call('campaigns.leads.search', { includeVariables: true, query: 'tea@' });
    expect(wide.leads[0]?.variables?.find((v) => v.variableTypeId === colour?.id)?.value).toBe('teal');
    // And messages may use it.
    const fields = await h.call('campaigns.getMergeFields', { campaignId: c.id });
    expect(fields.mergeFields).toContainEqual({ name: 'Favourite Colour', kind: 'custom', variableTypeId: colour?.id });
  });

  it('a bad column name fails only its row; a batch over the column cap is refused whole and changes nothing', async () => {
    const h = await makeHarness();
    const c = await campaignWithGroup(h);
    const res = await h.call('campaigns.leads.create', {
      leadGroupId: c.leadGroupId,
      leads: [{ firstName: 'Ok', variables: { Size: 'L' } }, { firstName: 'Bad', variables: { 'a|b': 'x' } }],
    });
    expect(res.errors).toEqual([{ index: 1, message: expect.stringMatching(/cannot contain/) }]);
    expect((await columnsOf(h, c.leadGroupId)).map((col) => col.name)).toContain('Size');
    expect((await columnsOf(h, c.leadGroupId)).map((col) => col.name)).not.toContain('a|b');

    const tooMany = Object.fromEntries(Array.from({ length: MAX_CUSTOM_COLUMNS }, (_, i) => [`Col ${i}`, 'v']));
    const e = await h.expectRefused(h.call('campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'Wide', variables: tooMany }] }), 'INVALID_INPUT');
    expect(e.message).toMatch(/custom columns/);
  });
});

describe('ensureCustomColumns (the columns module the import uses)', () => {
  it('returns existing columns by lower-cased name and creates the missing ones once, in order', async () => {
    const h = await makeHarness();
    const c = await campaignWithGroup(h);
    const tx = new Tx(h.store);
    const ctx: Ctx = { actor: h.owner, clock: h.clock, ids: h.ids, random: h.random, db: tx, secrets: testSecrets, channels: null, dryRun: false };
    const map = await ensureCustomColumns(ctx, c.leadGroupId, ['Booth', 'EMAIL', 'booth', 'jobTitle', 'Shoe size']);
    expect([...map.keys()]).toEqual(['booth', 'email', 'jobtitle', 'shoe size']);
    expect(map.get('email')).toMatchObject({ name: 'Email', builtInType: 'email' });
    expect(map.get('jobtitle')).toMatchObject({ name: 'Job title', builtInType: 'jobTitle' });
    expect(map.get('booth')).toMatchObject({ name: 'Booth', builtInType: null });
    // Staged in the unit of work only: one group write with both new columns.
    expect(tx.writes()).toHaveLength(1);
    expect((await columnsOf(h, c.leadGroupId)).some((col) => col.name === 'Booth')).toBe(false);
    expect((await tx.get('leadGroups', c.leadGroupId))?.columns.filter((col) => col.builtInType === null).map((col) => col.name)).toEqual(['Booth', 'Shoe size']);
    await expect(ensureCustomColumns(ctx, h.ids.uuid(), ['x'])).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(ensureCustomColumns(ctx, c.leadGroupId, ['  '])).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});

describe('campaigns.addColumn and campaigns.removeColumn', () => {
  it('adds a column; the same name in any case is refused with the existing column, changing nothing', async () => {
    const h = await makeHarness();
    const c = await campaignWithGroup(h);
    const res = await h.call('campaigns.addColumn', { campaignId: c.id, name: '  Booth  ' });
    expect(res).toEqual({ campaignId: c.id, leadGroupId: c.leadGroupId, column: { variableTypeId: expect.any(String), name: 'Booth', kind: 'custom', builtInType: null } });
    expect(await columnsOf(h, c.leadGroupId)).toContainEqual({ id: res.column.variableTypeId, name: 'Booth', builtInType: null });

    const dup = await h.expectRefused(h.call('campaigns.addColumn', { campaignId: c.id, name: 'BOOTH' }), 'INVALID_INPUT');
    expect(dup.details.existing).toEqual({ variableTypeId: res.column.variableTypeId, name: 'Booth', builtInType: null });
    const builtIn = await h.expectRefused(h.call('campaigns.addColumn', { campaignId: c.id, name: 'company' }), 'INVALID_INPUT');
    expect(builtIn.details.existing).toMatchObject({ name: 'Company', builtInType: 'company' });
    await h.expectRefused(h.call('campaigns.addColumn', { campaignId: c.id, name: '{{Booth}}' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.addColumn', { campaignId: c.id, name: 'Theirs' }, h.foreignOwner), 'NOT_FOUND');
    // Renaming another column to a case variant of an existing name is refused too.
    const other = await h.call('campaigns.addColumn', { campaignId: c.id, name: 'Hall' });
    await h.expectRefused(h.call('campaigns.renameColumn', { campaignId: c.id, variableTypeId: other.column.variableTypeId, name: 'booth' }), 'INVALID_INPUT');
  });

  it('removes an unused custom column and its values; refuses built-in, used and unknown columns, changing nothing', async () => {
    const h = await makeHarness();
    const c = await campaignWithGroup(h);
    await h.call('campaigns.leads.create', {
      leadGroupId: c.leadGroupId,
      leads: [{ firstName: 'A', variables: { Booth: 'B1', Hall: 'H' } }, { firstName: 'B', variables: { Booth: 'B2' } }, { firstName: 'C' }],
    });
    const cols = await columnsOf(h, c.leadGroupId);
    const booth = cols.find((col) => col.name === 'Booth');
    const hall = cols.find((col) => col.name === 'Hall');
    const company = cols.find((col) => col.builtInType === 'company');
    if (!booth || !hall || !company) throw new Error('columns missing');

    // A message uses {{Hall}}: removing it is refused like a rename.
    await h.seed([{ collection: 'campaigns', id: c.id, before: c, after: { ...c, steps: [newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'See you in {{Hall|the hall}}' })] } }]);
    const used = await h.expectRefused(h.call('campaigns.removeColumn', { campaignId: c.id, variableTypeId: hall.id }), 'COLUMN_IN_USE');
    expect(used.details).toMatchObject({ variableTypeId: hall.id, column: 'Hall', campaignId: c.id });
    const bi = await h.expectRefused(h.call('campaigns.removeColumn', { campaignId: c.id, variableTypeId: company.id }), 'INVALID_INPUT');
    expect(bi.message).toMatch(/built-in/);
    await h.expectRefused(h.call('campaigns.removeColumn', { campaignId: c.id, variableTypeId: h.ids.uuid() }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.removeColumn', { campaignId: c.id, variableTypeId: booth.id }, h.foreignOwner), 'NOT_FOUND');

    const res = await h.call('campaigns.removeColumn', { campaignId: c.id, variableTypeId: booth.id });
    expect(res).toEqual({ campaignId: c.id, leadGroupId: c.leadGroupId, column: { variableTypeId: booth.id, name: 'Booth', kind: 'custom', builtInType: null }, clearedValues: 2 });
    expect((await columnsOf(h, c.leadGroupId)).map((col) => col.name)).not.toContain('Booth');
    const { docs } = await h.store.query('leads', {});
    expect(docs.every((l) => !(booth.id in l.variables))).toBe(true);
    expect(docs.some((l) => l.variables[hall.id] === 'H')).toBe(true);
    const fields = await h.call('campaigns.getMergeFields', { campaignId: c.id });
    expect(fields.mergeFields.map((m) => m.name)).not.toContain('Booth');
  });

  it('renames a custom column; the new name is the merge field and search shows it', async () => {
    const h = await makeHarness();
    const c = await campaignWithGroup(h);
    await h.call('campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'A', variables: { Booth: 'B1' } }] });
    const booth = (await columnsOf(h, c.leadGroupId)).find((col) => col.name === 'Booth');
    await h.call('campaigns.renameColumn', { campaignId: c.id, variableTypeId: booth?.id ?? '', name: 'Stand' });
    const page = await h.call('campaigns.leads.search', { campaignId: c.id, includeVariables: true });
    expect(page.leads[0]?.variables?.find((v) => v.variableTypeId === booth?.id)).toMatchObject({ name: 'Stand', value: 'B1' });
  });
});
