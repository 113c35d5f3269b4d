/** How the import dialog cuts a file into calls of campaigns.leads.import: at most 5,000 rows and
 * about 3 MB of JSON each, in file order, except that the rows of one person (same lead id, profile
 * URL or email) travel in one call. The operation then reports each repeat as "repeats row N of this
 * file", in the preview as in the import: across calls, a preview could not know that an earlier
 * call's row would have created the lead, and an import would call the repeat "already in the CRM". */
import type { CsvRecord } from '../../../../shared/import/csv.ts';
import type { ImportTarget } from '../../../../shared/import/fields.ts';
import { MAX_IMPORT_ROWS } from '../../../../shared/import/file.ts';
import type { ReadFile } from '../../../../shared/import/file.ts';
import { identityGroups, mapRecords } from '../../../../shared/import/rows.ts';

/** Bytes of JSON one call carries at most (the sync server takes 5 MB bodies by default). */
export const MAX_CALL_BYTES = 3_000_000;

export type ImportCall = { rows: Record<string, string>[]; rowNumbers: number[] };

/**
 * The calls for the file's records (or those numbered `only`), with the mapped columns only. A
 * person with more rows than a call holds (a broken export) is the one case split across calls.
 */
export function planCalls(
  file: ReadFile,
  mapping: Readonly<Record<string, ImportTarget>>,
  only?: ReadonlySet<number>,
  limits: { rows: number; bytes: number } = { rows: MAX_IMPORT_ROWS, bytes: MAX_CALL_BYTES },
): ImportCall[] {
  const sent = file.headers.filter((h) => (mapping[h] ?? 'skip') !== 'skip');
  const columnOf = sent.map((h) => file.headers.indexOf(h));
  const records = only ? file.records.filter((r) => only.has(r.row)) : file.records;
  const byRow = new Map(records.map((r) => [r.row, r]));
  const groups = identityGroups(mapRecords(file.headers, records, mapping, file.problems));

  const calls: ImportCall[] = [];
  let call: ImportCall = { rows: [], rowNumbers: [] };
  let bytes = 0;
  const flush = () => {
    if (call.rows.length > 0) calls.push(call);
    call = { rows: [], rowNumbers: [] };
    bytes = 0;
  };
  const encode = (r: CsvRecord): { row: Record<string, string>; size: number } => {
    const row: Record<string, string> = {};
    let size = 0;
    sent.forEach((h, i) => {
      const v = r.cells[columnOf[i] ?? -1] ?? '';
      row[h] = v;
      size += v.length + h.length + 6;
    });
    return { row, size };
  };
  for (const g of groups) {
    const members = g.flatMap((n) => {
      const r = byRow.get(n);
      return r ? [{ n, ...encode(r) }] : [];
    });
    const size = members.reduce((t, m) => t + m.size, 0);
    if (call.rows.length + members.length > limits.rows || bytes + size > limits.bytes) flush();
    for (const m of members) {
      // Only a group larger than a whole call gets here with a full call.
      if (call.rows.length >= limits.rows || (call.rows.length > 0 && bytes + m.size > limits.bytes)) flush();
      call.rows.push(m.row);
      call.rowNumbers.push(m.n);
      bytes += m.size;
    }
  }
  flush();
  return calls;
}
