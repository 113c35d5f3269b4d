/** campaigns.leads.import and campaigns.leads.export over a workspace in memory: real exports go
 * in with no field lost and no duplicate, re-imports follow the chosen mode, the export round-trips. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { cellValue } from '../../shared/import/csv.ts';
import { readCsvBytes } from '../../shared/import/file.ts';
import { suggestMapping } from '../../shared/import/fields.ts';
import { profileKey } from '../../shared/intake/identity.ts';
import { newEnrollment } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import type { OpInput, OpOutput } from '../../shared/ops/index.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'imports');
const bytes = (name: string): Buffer => readFileSync(join(FIXTURES, name));
const base64 = (name: string): string => bytes(name).toString('base64');

type ImportInput = OpInput<'campaigns.leads.import'>;
type ImportOutput = OpOutput<'campaigns.leads.import'>;

async function importFile(h: Harness, name: string, extra: Partial<ImportInput> = {}): Promise<ImportOutput> {
  return h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csvBase64: base64(name), ...extra });
}

async function leadsOf(h: Harness, groupId = h.main.leadGroupId): Promise<Lead[]> {
  return (await h.store.query('leads', { where: { op: 'has', field: 'groupIds', value: groupId } })).docs;
}

/** Every non-empty cell of each lead row is somewhere in the lead it became: a field (the location
 * holds city, state and country; URLs compared as profile keys) or a custom column value. */
async function expectNothingLost(h: Harness, name: string, out: ImportOutput): Promise<void> {
  const file = readCsvBytes(bytes(name));
  const byId = new Map((await leadsOf(h)).map((l) => [l.id, l]));
  for (const r of out.results) {
    if (!r.leadId) continue;
    const lead = byId.get(r.leadId);
    expect(lead, `row ${r.row}`).toBeDefined();
    const haystack = [...Object.values(lead as Lead).filter((v): v is string => typeof v === 'string'), ...Object.values((lead as Lead).variables)];
    const cells = file.records.find((x) => x.row === r.row)?.cells ?? [];
    for (const raw of cells) {
      const v = cellValue(raw);
      if (!v) continue;
      const found = haystack.some((s) => s.includes(v) || (v.includes('/') && profileKey(s) === profileKey(v)));
      expect(found, `row ${r.row}: "${v}" of ${name} is not in lead ${(lead as Lead).fullName}`).toBe(true);
    }
  }
}

const FIXTURE_LEADS: [string, number, number][] = [
  // file, leads, rows that are not leads (blank lines, report footer)
  ['hubspot-contacts.csv', 6, 0],
  ['salesforce-report-de.csv', 5, 5],
  ['apollo-people.csv', 5, 0],
  ['phantombuster-sales-navigator.csv', 4, 1],
  ['french-windows-1252.csv', 4, 0],
  ['linkedin-connections.csv', 3, 0],
];

describe('importing real exports', () => {
  it.each(FIXTURE_LEADS)('%s: every person once, no field lost; importing it again adds nobody', async (name, leads, skipped) => {
    const h = await makeHarness();
    const out = await importFile(h, name);
    expect(out.totals).toMatchObject({ created: leads, skipped, invalid: 0, updated: 0, possibleDuplicates: 0 });
    expect(await leadsOf(h)).toHaveLength(leads);
    await expectNothingLost(h, name, out);

    const again = await importFile(h, name);
    expect(again.totals.created).toBe(0);
    expect(again.totals.unchanged + again.totals.possibleDuplicates).toBe(leads);
    expect(await leadsOf(h)).toHaveLength(leads);
  });

  it('HubSpot: city, state and country make the location (London is kept), and Grace without email comes back as a possible duplicate', async () => {
    const h = await makeHarness();
    const out = await importFile(h, 'hubspot-contacts.csv');
    const leads = await leadsOf(h);
    const amelia = leads.find((l) => l.firstName === 'Amelia');
    expect(amelia).toMatchObject({ location: 'London, England, United Kingdom', company: 'Brightwave Analytics', phone: '+44 20 7946 0321', websiteUrl: 'https://brightwave.example' });
    const group = await h.store.get('leadGroups', h.main.leadGroupId);
    const col = (n: string) => group?.columns.find((c) => c.name === n)?.id ?? '';
    expect(amelia?.variables[col('Mobile Phone Number')]).toBe('+44 7700 900123');
    expect(out.columnsCreated).toEqual(expect.arrayContaining(['Record ID', 'Mobile Phone Number', 'Lifecycle Stage']));

    const again = await importFile(h, 'hubspot-contacts.csv');
    const grace = again.results.find((r) => r.row === 6);
    expect(grace).toMatchObject({ code: 'POSSIBLE_DUPLICATE', matchedBy: 'nameAndCompany', leadId: leads.find((l) => l.firstName === 'Grace')?.id });
    expect(grace?.message).toContain('may be this person');
  });

  it('Salesforce (German, semicolons, BOM): names, company, umlauts; the report footer is not imported', async () => {
    const h = await makeHarness();
    const out = await importFile(h, 'salesforce-report-de.csv');
    expect(out.delimiter).toBe(';');
    expect(out.encoding).toBe('utf-8');
    const lukas = (await leadsOf(h)).find((l) => l.lastName === 'Müller');
    expect(lukas).toMatchObject({ firstName: 'Lukas', jobTitle: 'Geschäftsführer', company: 'Müller & Söhne Maschinenbau GmbH', location: 'Stuttgart, Baden-Württemberg, Deutschland' });
    expect(out.results.filter((r) => r.code === 'NOT_A_LEAD_ROW').map((r) => r.row)).toEqual([8, 9, 10, 11]);
    expect(out.results.find((r) => r.row === 7)?.code).toBe('EMPTY_ROW');
  });

  it('PhantomBuster: the public profile URL is the identity, the Sales Navigator URL is kept; rows after a blank line keep their number', async () => {
    const h = await makeHarness();
    const out = await importFile(h, 'phantombuster-sales-navigator.csv');
    expect(out.mapping).toMatchObject({ linkedInProfileUrl: 'socialUrl', profileUrl: 'custom:profileUrl', companyName: 'company', name: 'skip' });
    expect(out.results.map((r) => [r.row, r.code])).toEqual([[2, 'CREATED'], [3, 'CREATED'], [4, 'EMPTY_ROW'], [5, 'CREATED'], [6, 'CREATED']]);
    const aisha = (await leadsOf(h)).find((l) => l.id === out.results[3]?.leadId);
    expect(aisha).toMatchObject({ fullName: 'Aisha Bello', socialUrl: 'https://www.linkedin.com/in/aisha-bello', company: 'Lagos Fintech Hub' });
  });

  it('French Windows-1252: accents arrive intact, and a chosen encoding is used as given', async () => {
    const h = await makeHarness();
    const out = await importFile(h, 'french-windows-1252.csv');
    expect(out.encoding).toBe('windows-1252');
    const helene = (await leadsOf(h)).find((l) => l.email === 'helene.dupre@sgc.example');
    expect(helene).toMatchObject({ firstName: 'Hélène', lastName: 'Dupré', company: 'Société Générale de Câblage', location: 'Besançon, France' });
    const dry = await importFile(h, 'french-windows-1252.csv', { encoding: 'utf-8', dryRun: true, onExisting: 'update' });
    expect(dry.encoding).toBe('utf-8');
    expect(dry.results[0]?.message).toContain('Dupr\ufffd');
  });
});

describe('existing leads', () => {
  const csv = 'First Name,Last Name,Email,Title,Company,Team size\nJane,Doe,jane.doe@acme.example,VP Sales,Acme,11-50\n';

  async function withJane() {
    const h = await makeHarness();
    const jane = await h.addLead({ firstName: 'Jane', lastName: 'Doe', email: 'Jane.Doe@Acme.example', jobTitle: '', company: 'Acme Old' });
    return { h, jane };
  }

  it('skip: leaves the lead as it is (it joins the list) and says so', async () => {
    const { h, jane } = await withJane();
    const other = await h.call('campaigns.create', { name: 'Spring' });
    const out = await h.call('campaigns.leads.import', { campaignId: other.id, csv, onExisting: 'skip' });
    expect(out.results[0]).toMatchObject({ code: 'DUPLICATE_SKIPPED', leadId: jane.id, matchedBy: 'email' });
    expect(out.totals).toMatchObject({ skipped: 1, linked: 1, created: 0 });
    const after = await h.store.get('leads', jane.id);
    expect(after).toMatchObject({ jobTitle: '', company: 'Acme Old' });
    expect(after?.groupIds).toContain(other.leadGroupId);
  });

  it('fill_empty (default): fills only what is empty, case-insensitive email match', async () => {
    const { h, jane } = await withJane();
    const out = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv });
    expect(out.results[0]).toMatchObject({ code: 'UPDATED', leadId: jane.id });
    expect(out.results[0]?.message).toContain('job title, Team size');
    expect(await h.store.get('leads', jane.id)).toMatchObject({ jobTitle: 'VP Sales', company: 'Acme Old', email: 'Jane.Doe@Acme.example' });
  });

  it('update: non-empty cells overwrite, empty cells never clear', async () => {
    const { h, jane } = await withJane();
    await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email,Phone\njane.doe@acme.example,+1 555 0100\n' });
    const out = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email,Company,Phone\njane.doe@acme.example,Acme,\n', onExisting: 'update' });
    expect(out.results[0]).toMatchObject({ code: 'UPDATED' });
    expect(await h.store.get('leads', jane.id)).toMatchObject({ company: 'Acme', phone: '+1 555 0100' });
    const stored = await h.store.get('leads', jane.id);
    const commits = h.db.commits;
    h.clock.advance(60_000);
    const same = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email,Company\njane.doe@acme.example,Acme\n', onExisting: 'update' });
    expect(same.results[0]?.code).toBe('UNCHANGED');
    // Unchanged means untouched: no new updatedAt, nothing written (a re-import of a whole list writes nothing).
    expect(await h.store.get('leads', jane.id)).toEqual(stored);
    expect(h.db.commits).toBe(commits);
  });

  it('same name and company without a shared email: reported, created anyway, or merged, as asked', async () => {
    const h = await makeHarness();
    const jane = await h.addLead({ firstName: 'Jane', lastName: 'Doe', company: 'Acme Inc.' });
    const row = 'First Name,Last Name,Company,Title\njane,doe,ACME,CTO\n';
    const report = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: row });
    expect(report.results[0]).toMatchObject({ code: 'POSSIBLE_DUPLICATE', leadId: jane.id });
    expect(report.totals.possibleDuplicates).toBe(1);
    const merged = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: row, onPossibleDuplicate: 'merge' });
    expect(merged.results[0]).toMatchObject({ code: 'UPDATED', leadId: jane.id, matchedBy: 'nameAndCompany' });
    expect((await h.store.get('leads', jane.id))?.jobTitle).toBe('CTO');
    const created = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: row, onPossibleDuplicate: 'create' });
    expect(created.results[0]?.code).toBe('CREATED');
    expect(await leadsOf(h)).toHaveLength(2);
  });

  it('a row whose profile URL is one lead and whose email is another is refused, nothing changes', async () => {
    const h = await makeHarness();
    await h.addLead({ firstName: 'Ann', socialUrl: 'https://www.linkedin.com/in/ann' });
    await h.addLead({ firstName: 'Bob', email: 'bob@x.example' });
    const out = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'LinkedIn URL,Email,Title\nlinkedin.com/in/ann/,BOB@x.example,CEO\n', onExisting: 'update' });
    expect(out.results[0]?.code).toBe('CONFLICTING_MATCH');
    expect(out.results[0]?.message).toMatch(/^The profile URL is Ann's but the email is Bob's/);
    expect((await leadsOf(h)).map((l) => l.jobTitle)).toEqual(['', '']);
  });

  it('a row naming a lead by id is applied even when an old duplicate shares its email; giving it another lead\'s email is refused', async () => {
    const h = await makeHarness();
    const a = await h.addLead({ firstName: 'Omar', lastName: 'Andersen', email: 'omar@x.example' });
    await h.addLead({ firstName: 'Omar', lastName: 'Andersen', email: 'omar@x.example' });
    await h.addLead({ firstName: 'Bea', email: 'bea@x.example' });
    const ok = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: `id,Email,Title\n${a.id},omar@x.example,CFO\n`, onExisting: 'update' });
    expect(ok.results[0]).toMatchObject({ code: 'UPDATED', leadId: a.id, matchedBy: 'id' });
    const refused = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: `id,Email\n${a.id},bea@x.example\n`, onExisting: 'update' });
    expect(refused.results[0]?.code).toBe('CONFLICTING_MATCH');
    expect((await h.store.get('leads', a.id))?.email).toBe('omar@x.example');
  });

  it('marking Do Not Contact through an import stops the running sequence', async () => {
    const h = await makeHarness();
    const lead = await h.addLead({ firstName: 'Ann', email: 'ann@x.example' });
    const campaign = await h.addCampaign();
    const e = newEnrollment(h.stamp(), lead.id, campaign.id);
    await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
    const out = await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email,DNC\nann@x.example,yes\n' });
    expect(out.results[0]?.message).toContain('marked Do Not Contact');
    expect(await h.store.get('leads', lead.id)).toMatchObject({ doNotContact: true });
    expect(await h.store.get('enrollments', e.id)).toMatchObject({ status: 'STOPPED', stoppedReason: 'do_not_contact' });
  });
});

describe('the call', () => {
  it('a dry run gives the real answer and stores nothing', async () => {
    const h = await makeHarness();
    const dry = await importFile(h, 'apollo-people.csv', { dryRun: true });
    const before = h.db.commits;
    expect(await leadsOf(h)).toHaveLength(0);
    expect(h.db.commits).toBe(before);
    const real = await importFile(h, 'apollo-people.csv');
    expect(real.totals).toEqual(dry.totals);
    expect(real.results.map((r) => [r.row, r.code])).toEqual(dry.results.map((r) => [r.row, r.code]));
    expect(dry.dryRun).toBe(true);
  });

  it('JSON rows with row numbers from the file, an explicit mapping, custom column or skip', async () => {
    const h = await makeHarness();
    const out = await h.call('campaigns.leads.import', {
      leadGroupId: h.main.leadGroupId,
      rows: [{ Who: 'Ada Lovelace', Mail: 'ada@x.example', Notes: 'met at conf', Secret: 'x' }, { Who: '', Mail: 'bad', Notes: '', Secret: '' }],
      rowNumbers: [5002, 5004],
      mapping: { Who: 'fullName', Mail: 'email', Notes: 'custom:Conference notes', Secret: 'skip' },
    });
    expect(out.results.map((r) => [r.row, r.code])).toEqual([[5002, 'CREATED'], [5004, 'INVALID_EMAIL']]);
    const [ada] = await leadsOf(h);
    expect(ada).toMatchObject({ firstName: 'Ada', lastName: 'Lovelace', email: 'ada@x.example' });
    const group = await h.store.get('leadGroups', h.main.leadGroupId);
    expect(group?.columns.map((c) => c.name)).toContain('Conference notes');
    expect(group?.columns.map((c) => c.name)).not.toContain('Secret');
  });

  it('refuses, with nothing stored: too many rows, two sources, a mapping to a column the file lacks, an unknown target', async () => {
    const h = await makeHarness();
    const big = `Email\n${Array.from({ length: 5001 }, (_, i) => `p${i}@x.example`).join('\n')}\n`;
    const tooMany = await h.expectRefused(h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: big }), 'PAYLOAD_TOO_LARGE');
    expect(tooMany.message).toContain('at most 5,000');
    await h.expectRefused(h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email\na@x.example\n', rows: [{ Email: 'a@x.example' }] }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email\na@x.example\n', mapping: { Mail: 'email' } }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email\na@x.example\n', mapping: { Email: 'emial' } }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.import', { csv: 'Email\na@x.example\n' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv: 'Email\na@x.example\n' }, h.foreignOwner), 'NOT_FOUND');
  });
});

describe('export', () => {
  it('writes the id first, every field and custom column, escapes formulas, pages with the header once', async () => {
    const h = await makeHarness();
    await h.call('campaigns.leads.import', {
      leadGroupId: h.main.leadGroupId,
      csv: 'First Name,Last Name,Email,Company,Phone,Team size\nEve,Hacker,eve@x.example,"=HYPERLINK(""http://evil.example"",""x"")",+44 20 7946 0000,-5\nAda,Lovelace,ada@x.example,Analytical,,11-50\n',
    });
    const first = await h.call('campaigns.leads.export', { limit: 1, sortBy: 'fullName', sortOrder: 'asc' });
    expect(first.headers.slice(0, 4)).toEqual(['id', 'First name', 'Last name', 'Full name']);
    expect(first.headers).toContain('Team size');
    const second = await h.call('campaigns.leads.export', { limit: 1, sortBy: 'fullName', sortOrder: 'asc', cursor: first.nextCursor ?? undefined });
    expect(second.nextCursor).toBeNull();
    expect(second.csv.startsWith('id,')).toBe(false);
    const text = first.csv + second.csv;
    expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    expect(text).toContain(`"'+44 20 7946 0000"`);
    expect(text).toContain(`"'-5"`);
    const rows = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true }).data;
    expect(rows.map((r) => r['Full name'])).toEqual(['Ada Lovelace', 'Eve Hacker']);
  });

  it('round trip: the export edited in a spreadsheet and imported with update changes those leads and creates none', async () => {
    const h = await makeHarness();
    const campaign = await h.call('campaigns.create', { name: 'Apollo Q1' });
    await h.call('campaigns.leads.import', { campaignId: campaign.id, csvBase64: base64('apollo-people.csv') });
    // A lead with neither email nor profile URL: only its id tells it apart on the way back.
    await h.call('campaigns.leads.import', { campaignId: campaign.id, csv: 'First Name,Last Name,Company\nNo,Contact,Somewhere\n' });
    const exported = await h.call('campaigns.leads.export', { campaignId: campaign.id });
    expect(exported.count).toBe(6);

    const parsed = Papa.parse<string[]>(exported.csv, { skipEmptyLines: true });
    const [header, ...data] = parsed.data as string[][];
    const col = (n: string) => (header as string[]).indexOf(n);
    const sofia = data.find((r) => r[col('First name')] === 'Sofia') as string[];
    sofia[col('Email')] = 'sofia.lindqvist@fjordpay.example';
    sofia[col('Job title')] = 'VP Growth';
    const nobody = data.find((r) => r[col('First name')] === 'No') as string[];
    nobody[col('Company')] = 'Somewhere Else';
    const edited = Papa.unparse([header as string[], ...data]);

    const out = await h.call('campaigns.leads.import', { campaignId: campaign.id, csv: edited, onExisting: 'update' });
    expect(out.totals).toMatchObject({ created: 0, updated: 2, unchanged: 4, invalid: 0, possibleDuplicates: 0 });
    expect(out.results.filter((r) => r.code === 'UPDATED').every((r) => r.matchedBy === 'id')).toBe(true);
    const leads = await leadsOf(h, (await h.store.get('campaigns', campaign.id))?.leadGroupId);
    expect(leads).toHaveLength(6);
    expect(leads.find((l) => l.firstName === 'Sofia')).toMatchObject({ email: 'sofia.lindqvist@fjordpay.example', jobTitle: 'VP Growth' });
    expect(leads.find((l) => l.firstName === 'No')?.company).toBe('Somewhere Else');
    // The phone Apollo wrote as '+1 415… is stored as +1 415…, exported escaped, and read back equal.
    expect(leads.find((l) => l.firstName === 'Daniel')?.phone).toBe('+1 415-555-0132');
  });

  it('the suggested mapping of an export puts the id column on the lead id', () => {
    const mapping = suggestMapping(['id', 'First name'], [['0b7a3c1e-8f1d-4c2e-9a5b-7d6e5f4c3b2a', 'Ada']]);
    expect(mapping.id).toBe('id');
  });
});
