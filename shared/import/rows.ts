/**
 * Records of a file, mapped: each becomes the lead fields, custom column values and flags it gives,
 * or the reason it cannot be a lead (a code and a sentence). No store access: the import operation
 * then decides, per row, whether it creates, updates or skips a lead.
 */
import { cellValue, isBlank } from './csv.ts';
import type { CsvProblem, CsvRecord } from './csv.ts';
import { customColumnName, IMPORT_FIELDS, isUuid, LEAD_TEXT_FIELDS } from './fields.ts';
import type { ImportField, ImportTarget, LeadTextField } from './fields.ts';
import { hasIdentity, isEmailAddress, MAX_FIELD } from '../intake/clean.ts';
import { canonicalProfileUrl, emailKey, profileKey } from '../intake/identity.ts';

/** Machine codes of a row's outcome. DUPLICATE_IN_FILE: the row is a person an earlier row of the
 * same file already created or matched, and adds nothing to that lead. */
export const ROW_CODES = [
  'CREATED', 'UPDATED', 'UNCHANGED', 'DUPLICATE_SKIPPED', 'DUPLICATE_IN_FILE', 'POSSIBLE_DUPLICATE', 'CONFLICTING_MATCH',
  'INVALID_EMAIL', 'INVALID_PROFILE_URL', 'INVALID_VALUE', 'FIELD_TOO_LONG', 'MISSING_IDENTITY', 'EMPTY_ROW', 'NOT_A_LEAD_ROW', 'MALFORMED_ROW',
] as const;
export type RowCode = (typeof ROW_CODES)[number];
/** Codes of rows that could not be read as a lead (nothing was stored for them). */
export const INVALID_CODES: ReadonlySet<RowCode> = new Set(['INVALID_EMAIL', 'INVALID_PROFILE_URL', 'INVALID_VALUE', 'FIELD_TOO_LONG', 'MISSING_IDENTITY', 'MALFORMED_ROW']);

export type RowProblem = { row: number; code: RowCode; message: string };

export type MappedRow = {
  row: number;
  /** The lead id of our own export's `id` column. */
  id: string | null;
  /** Trimmed, non-empty values only; names split from a full name; location parts combined. */
  fields: Partial<Record<LeadTextField, string>>;
  /** Custom column display name -> value (non-empty values only). */
  custom: Map<string, string>;
  flags: { doNotContact?: boolean; blocklisted?: boolean };
  /** Notes about values that were read differently from what the cell says. */
  notes: string[];
};

/** Values that mean "nothing" in contact fields of CRM exports. */
const PLACEHOLDER = new Set(['n/a', 'na', '-', '--', 'none', 'null', '#n/a', 'unknown', 'not available']);
const TRUE = new Set(['yes', 'true', '1', 'x', 'y', 'ja', 'oui', 'si', 'sí', 'wahr', 'vrai', 'checked']);
const FALSE = new Set(['no', 'false', '0', 'n', 'nein', 'non', 'falsch', 'faux', 'unchecked']);

const LEAD_TEXT = new Set<string>(LEAD_TEXT_FIELDS);
const CONTACT_FIELDS = new Set<ImportField>(['email', 'socialUrl', 'phone', 'websiteUrl', 'companySocialUrl']);
const FIELD_WORDS: Partial<Record<ImportField, string>> = {
  firstName: 'first name', lastName: 'last name', fullName: 'full name', jobTitle: 'job title', socialUrl: 'profile URL', websiteUrl: 'website',
  companySocialUrl: 'company profile URL', doNotContact: 'do not contact', city: 'city', state: 'state', country: 'country',
};
const words = (f: ImportField): string => FIELD_WORDS[f] ?? f;

/** Splits a full name: "Doe, Jane" (last, first) or "Jane van Doe" (first word, then the rest). */
export function splitFullName(full: string): { firstName: string; lastName: string } {
  const n = full.trim().replace(/\s+/g, ' ');
  const comma = n.indexOf(',');
  if (comma > 0 && n.indexOf(',', comma + 1) < 0) return { firstName: n.slice(comma + 1).trim(), lastName: n.slice(0, comma).trim() };
  const space = n.indexOf(' ');
  return space < 0 ? { firstName: n, lastName: '' } : { firstName: n.slice(0, space), lastName: n.slice(space + 1) };
}

/** A column that carries a target: its custom column's name, or its field's slot (IMPORT_FIELDS). */
type PlanColumn = { index: number; header: string; custom: string | null; slot: number; contact: boolean };
type Plan = PlanColumn[];

const slotOf = (f: ImportField): number => IMPORT_FIELDS.indexOf(f);
const ID = slotOf('id');
const FULL_NAME = slotOf('fullName');
const PLACES = [slotOf('city'), slotOf('state'), slotOf('country')] as const;
/** The longest placeholder: a longer value is no placeholder (it is not lower-cased to see). */
const PLACEHOLDER_MAX = Math.max(...[...PLACEHOLDER].map((p) => p.length));

/** The columns that carry a target, in file order. */
function planOf(headers: readonly string[], mapping: Readonly<Record<string, ImportTarget>>): Plan {
  return headers.flatMap((header, index): PlanColumn[] => {
    const target = mapping[header] ?? 'skip';
    if (target === 'skip') return [];
    if (target.startsWith('custom:')) return [{ index, header, custom: target.slice(7), slot: -1, contact: false }];
    const field = target as ImportField;
    const slot = slotOf(field);
    return slot < 0 ? [] : [{ index, header, custom: null, slot, contact: CONTACT_FIELDS.has(field) }];
  });
}

/** A row's field values by slot and the slots in the order they were first given (a Map's order),
 * kept between rows: mapping a file allocates no map per row. */
class Got {
  readonly values: (string | undefined)[] = new Array<string | undefined>(IMPORT_FIELDS.length).fill(undefined);
  readonly order: number[] = [];

  clear(): void {
    for (const s of this.order) this.values[s] = undefined;
    this.order.length = 0;
  }

  give(slot: number, v: string): void {
    if (this.values[slot] !== undefined) return;
    this.values[slot] = v;
    this.order.push(slot);
  }
}

/**
 * Maps records with the mapping (header -> target). Several columns mapped to one field give the
 * first non-empty value in file order. `problems` are the CSV parser's, by row.
 */
export function mapRecords(
  headers: readonly string[],
  records: readonly CsvRecord[],
  mapping: Readonly<Record<string, ImportTarget>>,
  problems: readonly CsvProblem[] = [],
): (MappedRow | RowProblem)[] {
  const plan = planOf(headers, mapping);
  const broken = new Map(problems.map((p) => [p.row, p.message]));
  const got = new Got();
  return records.map((r) => {
    const problem = broken.get(r.row);
    if (problem) return { row: r.row, code: 'MALFORMED_ROW', message: `${cap(problem)}.` };
    got.clear();
    return mapRecord(r, headers.length, plan, got);
  });
}

function mapRecord(r: CsvRecord, columns: number, plan: Plan, got: Got): MappedRow | RowProblem {
  const { row, cells } = r;
  if (isBlank(cells)) return { row, code: 'EMPTY_ROW', message: 'The row is empty.' };
  if (cells.length === 1 && columns >= 3) {
    return { row, code: 'NOT_A_LEAD_ROW', message: `One value ("${short(cells[0] ?? '')}") where the header names ${columns} columns: a note or a report footer, not a lead.` };
  }
  if (cells.length > columns && cells.slice(columns).some((c) => c.trim() !== '')) {
    return { row, code: 'MALFORMED_ROW', message: `${cells.length} values where the header names ${columns} columns: a value probably holds the delimiter without quotes around it.` };
  }
  const custom = new Map<string, string>();
  const notes: string[] = [];
  for (let c = 0; c < plan.length; c++) {
    const col = plan[c] as PlanColumn;
    const v = cellValue(cells[col.index]);
    if (v === '') continue;
    if (v.length > MAX_FIELD) return { row, code: 'FIELD_TOO_LONG', message: `"${col.header}" is longer than ${MAX_FIELD} characters.` };
    if (col.custom !== null) {
      if (!custom.has(col.custom)) custom.set(col.custom, v);
      continue;
    }
    if (col.contact && v.length <= PLACEHOLDER_MAX && PLACEHOLDER.has(v.toLowerCase())) continue;
    got.give(col.slot, v);
  }

  const fields: MappedRow['fields'] = {};
  const flags: MappedRow['flags'] = {};
  let id: string | null = null;
  for (const slot of got.order) {
    const field = IMPORT_FIELDS[slot] as ImportField;
    const v = got.values[slot] as string;
    if (LEAD_TEXT.has(field)) fields[field as LeadTextField] = v;
    else if (slot === ID) {
      if (isUuid(v)) id = v.toLowerCase();
      else notes.push(`"${short(v)}" in the id column is not a lead id of this app; the row is matched by profile URL, email or name instead`);
    } else if (field === 'doNotContact' || field === 'blocklisted') {
      const k = v.toLowerCase();
      if (TRUE.has(k)) flags[field] = true;
      else if (FALSE.has(k)) flags[field] = false;
      else return { row, code: 'INVALID_VALUE', message: `${cap(words(field))} is "${short(v)}"; write yes or no.` };
    }
  }

  const full = got.values[FULL_NAME];
  if (full && !fields.firstName && !fields.lastName) Object.assign(fields, dropEmpty(splitFullName(full)));
  else if (full && fields.firstName && !fields.lastName && full.startsWith(`${fields.firstName} `)) fields.lastName = full.slice(fields.firstName.length + 1).trim();
  if (!fields.location) {
    // City, state and country, each once, in that order.
    let location = '';
    const seen: string[] = [];
    for (const s of PLACES) {
      const part = got.values[s];
      if (!part || seen.includes(part)) continue;
      seen.push(part);
      location = location === '' ? part : `${location}, ${part}`;
    }
    if (location !== '') fields.location = location;
  }

  if (fields.email !== undefined) {
    let email = fields.email.replace(/^mailto:/i, '');
    const list = /[\s,;]/.test(email) ? email.split(/[\s,;]+/).filter(Boolean) : [email];
    if (list.length > 1 && list.every(isEmailAddress)) {
      email = list[0] as string;
      custom.set('Other emails', list.slice(1).join(', '));
      notes.push('the first of several emails is the lead\'s email; the others are in "Other emails"');
    }
    if (!isEmailAddress(email)) return { row, code: 'INVALID_EMAIL', message: `"${short(email)}" is not an email address.` };
    fields.email = email;
  }
  if (fields.socialUrl !== undefined) {
    const url = fields.socialUrl;
    if (/\s/.test(url) || !url.includes('.') || url.length < 5) {
      return { row, code: 'INVALID_PROFILE_URL', message: `"${short(url)}" is not a profile URL (like https://www.linkedin.com/in/jane-doe).` };
    }
    fields.socialUrl = canonicalProfileUrl(url);
  }
  if (!hasIdentity(fields) && id === null) {
    return { row, code: 'MISSING_IDENTITY', message: 'No name, email or profile URL: a lead needs one of them.' };
  }
  return { row, id, fields, custom, flags, notes };
}

function dropEmpty(o: { firstName: string; lastName: string }): Partial<Record<LeadTextField, string>> {
  const out: Partial<Record<LeadTextField, string>> = {};
  if (o.firstName) out.firstName = o.firstName;
  if (o.lastName) out.lastName = o.lastName;
  return out;
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
const short = (s: string): string => (s.length > 60 ? `${s.slice(0, 57)}…` : s);

export const isProblem = (r: MappedRow | RowProblem): r is RowProblem => 'code' in r;

/** Rows given as JSON objects (header -> value) as records with header order of first appearance.
 * `rowNumbers` are the rows' numbers in the user's file; by default the header is row 1. */
export function recordsFromObjects(rows: readonly Readonly<Record<string, unknown>>[], rowNumbers?: readonly number[]): { headers: string[]; records: CsvRecord[] } {
  const index = new Map<string, number>();
  for (const r of rows) for (const k of Object.keys(r)) if (!index.has(k)) index.set(k, index.size);
  const headers = [...index.keys()];
  const records = rows.map((r, i) => {
    const cells = new Array<string>(headers.length).fill('');
    for (const k of Object.keys(r)) {
      const v = r[k];
      if (v === null || v === undefined) continue;
      cells[index.get(k) as number] = typeof v === 'string' ? v : String(v);
    }
    return { row: rowNumbers?.[i] ?? i + 2, cells };
  });
  return { headers, records };
}

/** Custom column names a mapping creates or fills. */
export const customNames = (mapping: Readonly<Record<string, ImportTarget>>): string[] =>
  [...new Set(Object.values(mapping).flatMap((t) => (t.startsWith('custom:') ? [customColumnName(t.slice(7))] : [])))];

/**
 * Rows of a file that are one person, by the keys the import matches with (lead id of our export,
 * profile URL, email; shared transitively: a row sharing the URL of one and the email of another
 * joins both). Each group in file order, groups ordered by their first row; rows that cannot be
 * read are groups of their own. The desktop sends a large file in several calls: keeping a group in
 * one call lets the import say "repeats row N" for each repeat, in a preview as in the import.
 */
export function identityGroups(rows: readonly (MappedRow | RowProblem)[]): number[][] {
  const parent = rows.map((_, i) => i);
  const find = (i: number): number => {
    let r = i;
    while (parent[r] !== r) r = parent[r] as number;
    // Path compression keeps later finds short.
    for (let x = i; parent[x] !== r; ) {
      const next = parent[x] as number;
      parent[x] = r;
      x = next;
    }
    return r;
  };
  const firstWith = new Map<string, number>();
  rows.forEach((r, i) => {
    if (isProblem(r)) return;
    const keys = [
      r.id ? `id:${r.id}` : '',
      r.fields.socialUrl ? `url:${profileKey(r.fields.socialUrl)}` : '',
      r.fields.email ? `email:${emailKey(r.fields.email)}` : '',
    ];
    for (const k of keys) {
      if (!k) continue;
      const j = firstWith.get(k);
      if (j === undefined) firstWith.set(k, i);
      else {
        const [a, b] = [find(i), find(j)];
        // The root is the group's first row, so groups come out ordered by it.
        if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
      }
    }
  });
  const groups = new Map<number, number[]>();
  rows.forEach((r, i) => {
    const root = find(i);
    const g = groups.get(root);
    if (g) g.push(r.row);
    else groups.set(root, [r.row]);
  });
  return [...groups.entries()].sort((a, b) => a[0] - b[0]).map(([, g]) => g);
}
