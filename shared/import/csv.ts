/**
 * CSV text to header and records, with the row numbers a spreadsheet shows (the header is row 1;
 * blank lines count, a value spanning lines is one row), and records back to CSV text with cells
 * escaped against formula injection. Parsing and quoting are papaparse's; this module decides the
 * delimiter, numbers the rows, and reads Excel's conventions (`sep=;` first line, `'=` escapes,
 * `="0123"` text cells).
 */
import Papa from 'papaparse';

export const DELIMITERS = [',', ';', '\t', '|'] as const;
export type Delimiter = (typeof DELIMITERS)[number];
export const DELIMITER_LABELS: Record<Delimiter, string> = { ',': 'Comma (,)', ';': 'Semicolon (;)', '\t': 'Tab', '|': 'Pipe (|)' };
export const isDelimiter = (s: string): s is Delimiter => (DELIMITERS as readonly string[]).includes(s);

/** One line of data: its spreadsheet row number and its cells, in header order. */
export type CsvRecord = { row: number; cells: string[] };
export type CsvProblem = { row: number; message: string };
export type ParsedCsv = {
  delimiter: Delimiter;
  /** Column names, made unique ("Email", "Email (2)"); an unnamed column is "Column 5". */
  headers: string[];
  /** Row number of the header line (1; later after a `sep=` line or notes above the header). */
  headerRow: number;
  /** Every line after the header, blank ones included, trailing blank lines left out. */
  records: CsvRecord[];
  /** Structural problems (an unterminated quote), by row. */
  problems: CsvProblem[];
};

const SEP_LINE = /^sep=(.)\r?\n/i;

/** The delimiter of a CSV text: the one that gives its first lines the most consistent field count. */
export function detectDelimiter(text: string): Delimiter {
  const sep = SEP_LINE.exec(text);
  if (sep?.[1] && isDelimiter(sep[1])) return sep[1];
  const sample = text.slice(0, 64 * 1024);
  const guess = Papa.parse<string[]>(sample, { preview: 20, skipEmptyLines: true, delimitersToGuess: [...DELIMITERS] }).meta.delimiter;
  return isDelimiter(guess) ? guess : ',';
}

function uniqueHeaders(raw: readonly string[]): string[] {
  const seen = new Map<string, number>();
  return raw.map((h, i) => {
    const name = h.replace(/^\ufeff/, '').trim() || `Column ${i + 1}`;
    const key = name.toLowerCase();
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    return n === 1 ? name : `${name} (${n})`;
  });
}

/** Parses CSV text (a leading BOM is ignored). The delimiter is detected unless given. */
export function parseCsv(input: string, opts: { delimiter?: Delimiter } = {}): ParsedCsv {
  let text = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  let headerRow = 1;
  const sep = SEP_LINE.exec(text);
  if (sep) {
    text = text.slice(sep[0].length);
    headerRow = 2;
  }
  const delimiter = opts.delimiter ?? detectDelimiter(sep ? `sep=${sep[1]}\n` : text);
  const result = Papa.parse<string[]>(text, { delimiter, skipEmptyLines: false, header: false });
  const data = result.data;
  // A final line break leaves an empty last record; blank lines at the end are not rows of data.
  let end = data.length;
  while (end > 1 && isBlank(data[end - 1] ?? [])) end--;
  // Some exports open with notes (LinkedIn's connections export): the header is the first line
  // naming at least two columns.
  const first = headerRow;
  let at = 0;
  for (let i = 0; i < Math.min(end, 20); i++) {
    if ((data[i] ?? []).filter((c) => c.trim() !== '').length >= 2) {
      at = i;
      break;
    }
  }
  headerRow = first + at;
  const headers = uniqueHeaders(data[at] ?? []);
  const records: CsvRecord[] = [];
  for (let i = at + 1; i < end; i++) records.push({ row: first + i, cells: data[i] ?? [] });
  const problems = result.errors
    .filter((e) => e.type === 'Quotes')
    .map((e) => ({ row: first + (e.row ?? 0), message: 'a quoted value is not closed: the rows after it may be read as one value' }));
  return { delimiter, headers, headerRow, records, problems };
}

export const isBlank = (cells: readonly string[]): boolean => cells.every((c) => c.trim() === '');

const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * A cell's value as the user meant it: trimmed, without the `'` a CSV export puts before a value
 * that starts like a formula (`'=SUM`, `'+44 20…`), with Excel's text formula `="0123"` unwrapped
 * and line breaks as `\n`.
 */
export function cellValue(raw: string | undefined): string {
  if (raw === undefined) return '';
  let v = raw.trim();
  if (v.length > 1 && v.charCodeAt(0) === 39 /* ' */ && FORMULA_START.test(v.slice(1))) v = v.slice(1).trim();
  else if (v.startsWith('="') && v.endsWith('"') && v.length >= 3) v = v.slice(2, -1).replace(/""/g, '"');
  // A value over several lines of a Windows file keeps plain line breaks.
  return v.includes('\r') ? v.replace(/\r\n?/g, '\n') : v;
}

/**
 * CSV text of a header and rows. Cells starting with `=`, `+`, `-`, `@`, a tab or a carriage
 * return are prefixed with `'` (OWASP's advice against CSV formula injection), so a spreadsheet
 * shows them as text; `cellValue` removes the prefix again on import.
 */
export function toCsv(headers: readonly string[], rows: readonly (readonly string[])[], opts: { delimiter?: Delimiter; header?: boolean } = {}): string {
  const data = opts.header === false ? rows : [headers, ...rows];
  if (data.length === 0) return '';
  return Papa.unparse(data as string[][], { delimiter: opts.delimiter ?? ',', newline: '\r\n', escapeFormulae: true }) + '\r\n';
}
