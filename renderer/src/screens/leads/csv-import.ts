/** CSV import without UI: the picked file read with shared/import (as the import operation reads
 * one), and sent to campaigns.leads.import in calls of at most 5,000 rows, so a 100k-row file shows
 * progress and can be cancelled between calls (rows already sent stay imported). */
import type { Delimiter } from '../../../../shared/import/csv.ts';
import type { TextEncodingName } from '../../../../shared/import/encoding.ts';
import type { ImportTarget } from '../../../../shared/import/fields.ts';
import { MAX_IMPORT_ROWS, readCsvBytes } from '../../../../shared/import/file.ts';
import type { ReadFile } from '../../../../shared/import/file.ts';
import type { OpInput, OpOutput } from '../../../../shared/ops/index.ts';
import { run } from '../../lib/ops.ts';

export type ImportResult = OpOutput<'campaigns.leads.import'>;
export type RowResult = ImportResult['results'][number];
export type Totals = ImportResult['totals'];
export type OnExisting = NonNullable<OpInput<'campaigns.leads.import'>['onExisting']>;
export type OnPossibleDuplicate = NonNullable<OpInput<'campaigns.leads.import'>['onPossibleDuplicate']>;

/** Bytes of JSON one call carries at most (the sync server takes 5 MB bodies by default). */
const MAX_CALL_BYTES = 3_000_000;

export const emptyTotals = (): Totals => ({ rows: 0, created: 0, updated: 0, unchanged: 0, skipped: 0, possibleDuplicates: 0, invalid: 0, linked: 0 });

export function readFile(bytes: Uint8Array, encoding: TextEncodingName | 'auto', delimiter: Delimiter | 'auto'): ReadFile {
  return readCsvBytes(bytes, { encoding, delimiter: delimiter === 'auto' ? undefined : delimiter });
}

export type Progress = { done: number; total: number; totals: Totals; results: RowResult[] };

/**
 * Imports the file's records (or the rows numbered `only`) in calls. `isCancelled` is asked before
 * each call; the answer says how far it got. A failed call throws after the calls before it
 * committed (their results are in the last progress report).
 */
export async function importInCalls(args: {
  file: ReadFile;
  mapping: Readonly<Record<string, ImportTarget>>;
  leadGroupId: string;
  onExisting: OnExisting;
  onPossibleDuplicate: OnPossibleDuplicate;
  dryRun: boolean;
  only?: ReadonlySet<number>;
  isCancelled: () => boolean;
  onProgress: (p: Progress) => void;
}): Promise<Progress & { cancelled: boolean; columnsCreated: string[] }> {
  const { file, mapping } = args;
  const sent = file.headers.filter((h) => (mapping[h] ?? 'skip') !== 'skip');
  const columnOf = sent.map((h) => file.headers.indexOf(h));
  const records = args.only ? file.records.filter((r) => args.only?.has(r.row)) : file.records;
  const progress: Progress = { done: 0, total: records.length, totals: emptyTotals(), results: [] };
  const columnsCreated = new Set<string>();
  let at = 0;
  while (at < records.length) {
    if (args.isCancelled()) return { ...progress, cancelled: true, columnsCreated: [...columnsCreated] };
    const rows: Record<string, string>[] = [];
    const rowNumbers: number[] = [];
    let bytes = 0;
    while (at < records.length && rows.length < MAX_IMPORT_ROWS && bytes < MAX_CALL_BYTES) {
      const r = records[at++];
      if (!r) break;
      const row: Record<string, string> = {};
      sent.forEach((h, i) => {
        const v = r.cells[columnOf[i] ?? -1] ?? '';
        row[h] = v;
        bytes += v.length + h.length + 6;
      });
      rows.push(row);
      rowNumbers.push(r.row);
    }
    const out = await run('campaigns.leads.import', {
      leadGroupId: args.leadGroupId,
      rows,
      rowNumbers,
      mapping: Object.fromEntries(sent.map((h) => [h, mapping[h] ?? 'skip'])),
      onExisting: args.onExisting,
      onPossibleDuplicate: args.onPossibleDuplicate,
      dryRun: args.dryRun,
    });
    for (const [k, v] of Object.entries(out.totals) as [keyof Totals, number][]) progress.totals[k] += v;
    progress.results.push(...out.results);
    for (const c of out.columnsCreated) columnsCreated.add(c);
    progress.done += rows.length;
    args.onProgress({ ...progress, totals: { ...progress.totals } });
  }
  return { ...progress, cancelled: false, columnsCreated: [...columnsCreated] };
}

/** Words for a row code, for the result list. */
export const CODE_WORDS: Record<RowResult['code'], string> = {
  CREATED: 'Created',
  UPDATED: 'Updated',
  UNCHANGED: 'Unchanged',
  DUPLICATE_SKIPPED: 'Already in the CRM',
  POSSIBLE_DUPLICATE: 'Possible duplicate',
  CONFLICTING_MATCH: 'Two different leads',
  INVALID_EMAIL: 'Invalid email',
  INVALID_PROFILE_URL: 'Invalid profile URL',
  INVALID_VALUE: 'Invalid value',
  FIELD_TOO_LONG: 'Value too long',
  MISSING_IDENTITY: 'No name, email or URL',
  EMPTY_ROW: 'Empty row',
  NOT_A_LEAD_ROW: 'Not a lead',
  MALFORMED_ROW: 'Broken row',
};
