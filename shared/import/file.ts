/** A CSV file (bytes or text) read for import: its encoding, delimiter, header and records. Used by
 * the import operation and by the desktop's import dialog, so both read a file the same way. */
import { parseCsv } from './csv.ts';
import type { Delimiter, ParsedCsv } from './csv.ts';
import { decodeBytes } from './encoding.ts';
import type { TextEncodingName } from './encoding.ts';

/** Rows one import call takes. The desktop sends a larger file in calls of at most this many rows. */
export const MAX_IMPORT_ROWS = 5000;

export type ReadFile = ParsedCsv & { encoding: TextEncodingName | null; bom: boolean };

/** Reads a file's bytes: encoding detected unless chosen, delimiter detected unless chosen. */
export function readCsvBytes(bytes: Uint8Array, opts: { encoding?: TextEncodingName | 'auto'; delimiter?: Delimiter } = {}): ReadFile {
  const decoded = decodeBytes(bytes, opts.encoding ?? 'auto');
  return { ...parseCsv(decoded.text, { delimiter: opts.delimiter }), encoding: decoded.encoding, bom: decoded.bom };
}

/** Reads CSV text (already decoded). */
export function readCsvText(text: string, opts: { delimiter?: Delimiter } = {}): ReadFile {
  return { ...parseCsv(text, { delimiter: opts.delimiter }), encoding: null, bom: text.charCodeAt(0) === 0xfeff };
}
