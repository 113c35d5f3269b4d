/** CSV import without UI: the picked file read with shared/import (as the import operation reads
 * one), and sent to campaigns.leads.import in calls of at most 5,000 rows, so a 100k-row file shows
 * progress and can be cancelled between calls (rows already sent stay imported). Rows that are one
 * person go in the same call (import-calls.ts). */
import type { Delimiter } from '../../../../shared/import/csv.ts';
import type { TextEncodingName } from '../../../../shared/import/encoding.ts';
import type { ImportTarget } from '../../../../shared/import/fields.ts';
import { readCsvBytes } from '../../../../shared/import/file.ts';
import type { ReadFile } from '../../../../shared/import/file.ts';
import type { OpInput, OpOutput } from '../../../../shared/ops/index.ts';
import { run } from '../../lib/ops.ts';
import { planCalls } from './import-calls.ts';

export type ImportResult = OpOutput<'campaigns.leads.import'>;
export type RowResult = ImportResult['results'][number];
export type Totals = ImportResult['totals'];
export type OnExisting = NonNullable<OpInput<'campaigns.leads.import'>['onExisting']>;
export type OnPossibleDuplicate = NonNullable<OpInput<'campaigns.leads.import'>['onPossibleDuplicate']>;

export const emptyTotals = (): Totals => ({ rows: 0, created: 0, updated: 0, unchanged: 0, repeatedInFile: 0, skipped: 0, possibleDuplicates: 0, invalid: 0, linked: 0 });

export function readFile(bytes: Uint8Array, encoding: TextEncodingName | 'auto', delimiter: Delimiter | 'auto'): ReadFile {
  return readCsvBytes(bytes, { encoding, delimiter: delimiter === 'auto' ? undefined : delimiter });
}

/** `next`: the first row of the next call (null when none is left). */
export type Progress = { done: number; total: number; totals: Totals; results: RowResult[]; next: number | null };

/**
 * Imports the file's records (or the rows numbered `only`) in calls (see import-calls.ts).
 * `isCancelled` is asked before each call; the answer says how far it got. A failed call throws
 * after the calls before it committed (their results are in the last progress report, and `next`
 * is the first row of the call that failed).
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
  const calls = planCalls(file, mapping, args.only);
  const total = calls.reduce((n, c) => n + c.rows.length, 0);
  const progress: Progress = { done: 0, total, totals: emptyTotals(), results: [], next: calls[0]?.rowNumbers[0] ?? null };
  const columnsCreated = new Set<string>();
  const sentMapping = Object.fromEntries(file.headers.flatMap((h) => (mapping[h] ?? 'skip') === 'skip' ? [] : [[h, mapping[h]]]));
  for (const [i, call] of calls.entries()) {
    if (args.isCancelled()) return { ...progress, cancelled: true, columnsCreated: [...columnsCreated] };
    const out = await run('campaigns.leads.import', {
      leadGroupId: args.leadGroupId,
      rows: call.rows,
      rowNumbers: call.rowNumbers,
      mapping: sentMapping,
      onExisting: args.onExisting,
      onPossibleDuplicate: args.onPossibleDuplicate,
      dryRun: args.dryRun,
    });
    for (const [k, v] of Object.entries(out.totals) as [keyof Totals, number][]) progress.totals[k] += v;
    progress.results.push(...out.results);
    for (const c of out.columnsCreated) columnsCreated.add(c);
    progress.done += call.rows.length;
    progress.next = calls[i + 1]?.rowNumbers[0] ?? null;
    args.onProgress({ ...progress, totals: { ...progress.totals } });
  }
  // Results by row number, as the file reads (a person's repeats were sent beside their first row).
  progress.results.sort((a, b) => a.row - b.row);
  return { ...progress, cancelled: false, columnsCreated: [...columnsCreated] };
}

/** Words for a row code, for the result list. */
export const CODE_WORDS: Record<RowResult['code'], string> = {
  CREATED: 'Created',
  UPDATED: 'Updated',
  UNCHANGED: 'Unchanged',
  DUPLICATE_SKIPPED: 'Already in the CRM',
  DUPLICATE_IN_FILE: 'Repeats an earlier row',
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
