/** A file that lists one person twice: the later row says which earlier row of the file it repeats,
 * never "already in the CRM", in a preview as in the import, and when the desktop sends the file in
 * several calls. */
import { describe, expect, it } from 'vitest';
import { readCsvText } from '../../shared/import/file.ts';
import { suggestMapping } from '../../shared/import/fields.ts';
import { identityGroups, mapRecords } from '../../shared/import/rows.ts';
import type { OpOutput } from '../../shared/ops/index.ts';
import { planCalls } from '../../renderer/src/screens/leads/import-calls.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

type ImportOutput = OpOutput<'campaigns.leads.import'>;

const CSV = [
  'First Name,Last Name,Email,Company,Title,Phone',
  'Jane,Doe,jane@acme.example,Acme,CTO,', // row 2
  'Bob,Stone,bob@initech.example,Initech,CFO,', // row 3
  'Jane,Doe,JANE@acme.example,Acme,CTO,', // row 4: row 2 again
  'Ann,Lee,ann@globex.example,Globex,CEO,', // row 5
].join('\n');

const codes = (out: ImportOutput) => out.results.map((r) => [r.row, r.code]);

async function importCsv(h: Harness, csv: string, extra: { onExisting?: 'skip' | 'fill_empty' | 'update'; dryRun?: boolean } = {}) {
  return h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, csv, ...extra });
}

describe('a row that repeats an earlier row of the file', () => {
  it('is reported as repeating that row, in the preview and in the import, and counted apart', async () => {
    const h = await makeHarness();
    const dry = await importCsv(h, CSV, { dryRun: true });
    const real = await importCsv(h, CSV);
    for (const out of [dry, real]) {
      expect(codes(out)).toEqual([[2, 'CREATED'], [3, 'CREATED'], [4, 'DUPLICATE_IN_FILE'], [5, 'CREATED']]);
      expect(out.results[2]?.message).toMatch(/^Repeats row 2 of this file: Jane Doe \(found by the same email\)/);
      expect(out.results[2]?.leadId).toBe(out.results[0]?.leadId);
      expect(out.totals).toMatchObject({ rows: 4, created: 3, unchanged: 0, skipped: 0, repeatedInFile: 1 });
    }
    expect(real.results[2]?.leadId).toBe(real.results[0]?.leadId);
  });

  it('a person already in the CRM stays "unchanged" on its first row; the second row repeats the first', async () => {
    const h = await makeHarness();
    await importCsv(h, CSV);
    const again = await importCsv(h, CSV);
    expect(codes(again)).toEqual([[2, 'UNCHANGED'], [3, 'UNCHANGED'], [4, 'DUPLICATE_IN_FILE'], [5, 'UNCHANGED']]);
    expect(again.results[0]?.message).toContain('already has a value for every field');
    expect(again.results[2]?.message).toContain('Repeats row 2 of this file');
    expect(again.totals).toMatchObject({ unchanged: 3, repeatedInFile: 1 });
  });

  it('a repeat that adds a value updates the lead and names the row it repeats; with skip it is left as it is', async () => {
    const h = await makeHarness();
    const more = `${CSV}\nJane,Doe,jane@acme.example,Acme,CTO,+1 555 0100\n`;
    const out = await importCsv(h, more);
    expect(out.results.find((r) => r.row === 6)).toMatchObject({ code: 'UPDATED' });
    expect(out.results.find((r) => r.row === 6)?.message).toMatch(/^Updated Jane Doe \(the person of row 2 of this file, found by the same email\): phone/);

    const h2 = await makeHarness();
    const skip = await importCsv(h2, CSV, { onExisting: 'skip' });
    expect(skip.results[2]).toMatchObject({ code: 'DUPLICATE_IN_FILE' });
    expect(skip.results[2]?.message).toBe('Repeats row 2 of this file: Jane Doe (found by the same email) is left as it is.');
    expect(skip.totals).toMatchObject({ skipped: 0, repeatedInFile: 1 });
  });

  it('names the row by its number in the file when rows come with rowNumbers', async () => {
    const h = await makeHarness();
    const out = await h.call('campaigns.leads.import', {
      leadGroupId: h.main.leadGroupId,
      rows: [{ Email: 'ada@x.example', Name: 'Ada Lovelace' }, { Email: 'ada@x.example', Name: 'Ada Lovelace' }],
      rowNumbers: [5002, 9000],
    });
    expect(codes(out)).toEqual([[5002, 'CREATED'], [9000, 'DUPLICATE_IN_FILE']]);
    expect(out.results[1]?.message).toContain('Repeats row 5002 of this file');
  });
});

describe('the calls of a large file', () => {
  // 12 people on rows 2-13, each once; then row 14 repeats row 2, and row 15 has row 5's profile
  // URL and row 9's email (rows 5, 9 and 15 are one group).
  const lines = ['Name,Email,LinkedIn'];
  for (let i = 0; i < 12; i++) lines.push(`Person ${i},p${i}@x.example,https://www.linkedin.com/in/p${i}`);
  lines.push('Person 0,p0@x.example,');
  lines.push('Person 3,p7@x.example,linkedin.com/in/p3/');
  const file = readCsvText(lines.join('\n'));
  const mapping = suggestMapping(file.headers, file.records.map((r) => r.cells));

  it('groups the rows that are one person, transitively, in file order', () => {
    const groups = identityGroups(mapRecords(file.headers, file.records, mapping, file.problems));
    expect(groups.find((g) => g.includes(14))).toEqual([2, 14]);
    expect(groups.find((g) => g.includes(15))).toEqual([5, 9, 15]);
    expect(groups.flat()).toHaveLength(14);
    expect(groups.map((g) => g[0])).toEqual([...groups.map((g) => g[0])].sort((a, b) => (a ?? 0) - (b ?? 0)));
  });

  it('keeps a person\'s rows in one call, so preview and import both say "repeats row N" across the file', async () => {
    const calls = planCalls(file, mapping, undefined, { rows: 4, bytes: 1_000_000 });
    expect(calls.every((c) => c.rows.length <= 4)).toBe(true);
    expect(calls.flatMap((c) => c.rowNumbers).sort((a, b) => a - b)).toEqual(file.records.map((r) => r.row));
    const callOf = (row: number) => calls.findIndex((c) => c.rowNumbers.includes(row));
    expect(callOf(14)).toBe(callOf(2));
    expect(callOf(15)).toBe(callOf(5));
    expect(callOf(15)).toBe(callOf(9));

    const h = await makeHarness();
    const send = async (dryRun: boolean) => {
      const outs: ImportOutput[] = [];
      for (const c of calls) outs.push(await h.call('campaigns.leads.import', { leadGroupId: h.main.leadGroupId, rows: c.rows, rowNumbers: c.rowNumbers, mapping, dryRun }));
      return outs.flatMap((o) => o.results).sort((a, b) => a.row - b.row);
    };
    const preview = await send(true);
    const imported = await send(false);
    for (const results of [preview, imported]) {
      expect(results.filter((r) => r.code === 'CREATED')).toHaveLength(12);
      expect(results.find((r) => r.row === 14)).toMatchObject({ code: 'DUPLICATE_IN_FILE' });
      expect(results.find((r) => r.row === 14)?.message).toContain('Repeats row 2 of this file');
      // Row 15 gives row 5's person the email of row 9's: the two leads conflict, as in one call.
      expect(results.find((r) => r.row === 15)?.code).toBe('CONFLICTING_MATCH');
    }
    expect(imported.map((r) => r.code)).toEqual(preview.map((r) => r.code));
  });

  it('starts a new call rather than cut a person\'s rows, and splits only a person with more rows than a call holds', () => {
    const three = readCsvText(['Email', 'first@x.example', 'same@x.example', 'same@x.example', 'same@x.example'].join('\n'));
    expect(planCalls(three, { Email: 'email' }, undefined, { rows: 3, bytes: 1_000_000 }).map((c) => c.rowNumbers)).toEqual([[2], [3, 4, 5]]);
    const seven = readCsvText(['Email', ...Array.from({ length: 7 }, () => 'same@x.example')].join('\n'));
    expect(planCalls(seven, { Email: 'email' }, undefined, { rows: 3, bytes: 1_000_000 }).map((c) => c.rowNumbers)).toEqual([[2, 3, 4], [5, 6, 7], [8]]);
  });
});
