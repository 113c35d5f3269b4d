/**
 * campaigns.leads.import: leads from a file. It takes rows as JSON objects or CSV text (or bytes in
 * base64 with an encoding), maps their columns (suggested from the headers, or given), finds each
 * person among the workspace's leads (lead id of our export, profile URL, email; same name and
 * company only flagged) and creates, updates or skips them row by row, reporting each row by its
 * spreadsheet row number. campaigns.leads.export writes the CSV that imports back.
 * The pure parts (encodings, CSV, header aliases, row mapping) are in shared/import; who a person
 * is and finding them among the leads, in shared/intake (as for every entry).
 */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { DELIMITERS } from '../import/csv.ts';
import { base64ToBytes, TEXT_ENCODINGS } from '../import/encoding.ts';
import { FIELD_LABELS, LEAD_TEXT_FIELDS, parseTarget, suggestMapping } from '../import/fields.ts';
import type { ImportTarget, LeadTextField } from '../import/fields.ts';
import { MAX_IMPORT_ROWS, readCsvBytes, readCsvText } from '../import/file.ts';
import type { ReadFile } from '../import/file.ts';
import { INVALID_CODES, isProblem, mapRecords, recordsFromObjects, ROW_CODES } from '../import/rows.ts';
import type { MappedRow, RowCode } from '../import/rows.ts';
import { findLeads, keysOf, LeadIndex, linkedTo, NameCompanyKeys } from '../intake/find.ts';
import type { Arrival, IdentityKeys } from '../intake/find.ts';
import { columnKey, ensureCustomColumns } from '../lead-columns.ts';
import { newLead } from '../model/factories.ts';
import type { Lead, LeadGroup, LeadGroupColumn } from '../model/index.ts';
import { stopRunningEnrollments } from './campaigns.leads.ts';
import { mutation, opsByName } from './define.ts';
import { isPlainObject } from './input-guard.ts';
import { dryRun, uuid } from './params.ts';

/** Characters of CSV text one call takes (about 5,000 rows of a wide CRM export). */
export const MAX_IMPORT_CSV_CHARS = 20_000_000;

const ON_EXISTING = ['skip', 'fill_empty', 'update'] as const;
type OnExisting = (typeof ON_EXISTING)[number];
const ON_POSSIBLE_DUPLICATE = ['report', 'create', 'merge'] as const;

/** Characters of a header, a cell and a mapping target. */
const MAX_HEADER = 500;
const MAX_CELL = 100_000;
const MAX_TARGET = 200;

const cell = z.union([z.string().max(MAX_CELL), z.number(), z.boolean(), z.null()]);

const importInput = z.object({
  leadGroupId: uuid.optional(),
  campaignId: uuid.optional(),
  rows: z.array(z.record(z.string().max(MAX_HEADER), cell)).max(MAX_IMPORT_ROWS, `at most ${MAX_IMPORT_ROWS} rows per call; send the rest in further calls`).optional(),
  rowNumbers: z.array(z.number().int().min(1)).max(MAX_IMPORT_ROWS).optional(),
  csv: z.string().max(MAX_IMPORT_CSV_CHARS).optional(),
  csvBase64: z.string().max(Math.ceil((MAX_IMPORT_CSV_CHARS * 4) / 3) + 4).optional(),
  encoding: z.enum(['auto', ...TEXT_ENCODINGS]).optional(),
  delimiter: z.enum(DELIMITERS).optional(),
  mapping: z.record(z.string().max(MAX_HEADER), z.string().max(MAX_TARGET)).optional(),
  onExisting: z.enum(ON_EXISTING).optional(),
  onPossibleDuplicate: z.enum(ON_POSSIBLE_DUPLICATE).optional(),
  dryRun,
});

/** A plain object whose keys are at most `maxKey` characters and whose values pass `value`. */
const plainRecord = (v: unknown, maxKey: number, value: (x: unknown) => boolean): boolean => {
  if (!isPlainObject(v)) return false;
  for (const k of Object.keys(v)) if (k.length > maxKey || !value(v[k])) return false;
  return true;
};
const plainCell = (x: unknown): boolean => x === null || typeof x === 'boolean' || (typeof x === 'string' ? x.length <= MAX_CELL : typeof x === 'number' && Number.isFinite(x));
const oneOf = (values: readonly string[], x: unknown): boolean => typeof x === 'string' && values.includes(x);
/** An array of at most MAX_IMPORT_ROWS items that all pass `item` (a hole is an undefined item). */
const listOf = (v: unknown, item: (x: unknown) => boolean): boolean => {
  if (!Array.isArray(v) || v.length > MAX_IMPORT_ROWS) return false;
  for (let i = 0; i < v.length; i++) if (!item(v[i])) return false;
  return true;
};

/** importInput's quick check (OpDef.quickInput): the input the desktop's dialog and most scripts
 * send (rows as JSON objects, row numbers, a mapping, the modes), with every value of a type and
 * size the schema accepts; anything else (CSV text, a wrong value) is left to the schema. */
function quickImportInput(raw: Record<string, unknown>): boolean {
  for (const k of Object.keys(raw)) {
    const v = raw[k];
    let ok: boolean;
    switch (k) {
      case 'leadGroupId':
      case 'campaignId':
        ok = uuid.safeParse(v).success;
        break;
      case 'rows':
        ok = listOf(v, (row) => plainRecord(row, MAX_HEADER, plainCell));
        break;
      case 'rowNumbers':
        ok = listOf(v, (n) => Number.isSafeInteger(n) && (n as number) >= 1);
        break;
      case 'mapping':
        ok = plainRecord(v, MAX_HEADER, (x) => typeof x === 'string' && x.length <= MAX_TARGET);
        break;
      case 'onExisting':
        ok = oneOf(ON_EXISTING, v);
        break;
      case 'onPossibleDuplicate':
        ok = oneOf(ON_POSSIBLE_DUPLICATE, v);
        break;
      case 'dryRun':
        ok = typeof v === 'boolean';
        break;
      default:
        ok = false;
    }
    if (!ok) return false;
  }
  return true;
}

const rowResult = z.object({
  row: z.number().int(),
  code: z.enum(ROW_CODES),
  leadId: z.string().optional(),
  /** How an existing lead was found: id, profile URL, email, or name and company. */
  matchedBy: z.enum(['id', 'profileUrl', 'email', 'nameAndCompany']).optional(),
  message: z.string(),
});
type RowResult = z.output<typeof rowResult>;

const importOutput = z.object({
  dryRun: z.boolean(),
  leadGroupId: z.string(),
  totals: z.object({
    rows: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    /** Rows that repeat an earlier row of the file (the same person) and add nothing to its lead. */
    repeatedInFile: z.number().int(),
    skipped: z.number().int(),
    possibleDuplicates: z.number().int(),
    invalid: z.number().int(),
    /** Existing leads newly linked to the list (counted in updated, unchanged or skipped too). */
    linked: z.number().int(),
  }),
  results: z.array(rowResult),
  headers: z.array(z.string()),
  mapping: z.record(z.string(), z.string()),
  columnsCreated: z.array(z.string()),
  delimiter: z.string().nullable(),
  encoding: z.string().nullable(),
});

const invalid = (message: string, field: string): DomainError => new DomainError('INVALID_INPUT', message, { field });

/** The rows of the call, with the header they were read with. */
function readInput(input: z.output<typeof importInput>): ReadFile {
  const sources = [input.rows, input.csv, input.csvBase64].filter((s) => s !== undefined).length;
  if (sources !== 1) throw invalid('Give the rows once: as `rows` (JSON objects), as `csv` text, or as `csvBase64` bytes.', 'rows');
  if (input.encoding !== undefined && input.csvBase64 === undefined) {
    throw invalid('`encoding` applies to `csvBase64` bytes only: `csv` text and `rows` are already text.', 'encoding');
  }
  if (input.rowNumbers !== undefined && input.rowNumbers.length !== (input.rows?.length ?? -1)) {
    throw invalid('`rowNumbers` needs one number per row of `rows`.', 'rowNumbers');
  }
  let file: ReadFile;
  if (input.rows !== undefined) {
    if (input.delimiter !== undefined) throw invalid('`delimiter` applies to `csv` and `csvBase64` only.', 'delimiter');
    const { headers, records } = recordsFromObjects(input.rows, input.rowNumbers);
    file = { headers, records, headerRow: 1, problems: [], delimiter: ',', encoding: null, bom: false };
  } else if (input.csv !== undefined) {
    file = readCsvText(input.csv, { delimiter: input.delimiter });
  } else {
    let bytes: Uint8Array;
    try {
      bytes = base64ToBytes(input.csvBase64 ?? '');
    } catch {
      throw invalid('`csvBase64` is not base64 text.', 'csvBase64');
    }
    file = readCsvBytes(bytes, { encoding: input.encoding, delimiter: input.delimiter });
  }
  if (file.records.length > MAX_IMPORT_ROWS) {
    throw new DomainError('PAYLOAD_TOO_LARGE', `The file has ${file.records.length.toLocaleString('en')} rows; one call imports at most ${MAX_IMPORT_ROWS.toLocaleString('en')}: send it in parts (keep the header in each, and pass rowNumbers with rows to keep row numbers).`, {
      rows: file.records.length,
      max: MAX_IMPORT_ROWS,
    });
  }
  return file;
}

/** The suggested mapping with the caller's choices over it; a header the file lacks is refused. */
function resolveMapping(file: ReadFile, given: Readonly<Record<string, string>> | undefined, customColumns: readonly string[]): Record<string, ImportTarget> {
  const sample = file.records.slice(0, 50).map((r) => r.cells);
  const mapping = suggestMapping(file.headers, sample, customColumns);
  for (const [header, raw] of Object.entries(given ?? {})) {
    if (!(header in mapping)) {
      throw new DomainError('INVALID_INPUT', `mapping: the file has no column "${header}"; its columns are ${file.headers.map((h) => `"${h}"`).join(', ')}.`, { field: `mapping.${header}` });
    }
    const target = parseTarget(header, raw);
    if (target === null) {
      throw new DomainError('INVALID_INPUT', `mapping: "${raw}" is not a target; use skip, custom, custom:<column name> or a field (${Object.keys(FIELD_LABELS).join(', ')}).`, { field: `mapping.${header}` });
    }
    mapping[header] = target;
  }
  return mapping;
}

const fullNameOf = (f: Partial<Record<LeadTextField, string>>): string => [f.firstName, f.lastName].filter(Boolean).join(' ');

/** What a row says of who the person is, for the intake's lookups. */
const arrivalOf = (r: MappedRow): Arrival => ({ id: r.id, socialUrl: r.fields.socialUrl, email: r.fields.email, fullName: fullNameOf(r.fields), company: r.fields.company });

const FIELD_WORDS: Record<LeadTextField, string> = {
  firstName: 'first name', lastName: 'last name', email: 'email', company: 'company', jobTitle: 'job title', location: 'location', phone: 'phone',
  socialUrl: 'profile URL', seniority: 'seniority', websiteUrl: 'website', companySocialUrl: 'company profile URL',
};
const MATCH_WORDS = { id: 'its lead id', profileUrl: 'the same profile URL', email: 'the same email', nameAndCompany: 'the same name and company' } as const;
const nameOf = (l: Lead): string => l.fullName || l.email || l.socialUrl || 'a lead';

const FLAGS = ['doNotContact', 'blocklisted'] as const;

/** Applies a row to an existing lead under a mode; returns the new lead and what changed (`lead`
 * itself when nothing did: the copy is made at the first change, as most rows of a re-import
 * change nothing). */
function applyRow(lead: Lead, row: MappedRow, custom: ReadonlyMap<string, LeadGroupColumn>, mode: OnExisting): { next: Lead; changed: string[] } {
  const changed: string[] = [];
  if (mode === 'skip') return { next: lead, changed };
  // No function is made per row here (the bundler names each one: a property write per row).
  let next: Lead | null = null;
  for (const f of LEAD_TEXT_FIELDS) {
    const v = row.fields[f];
    if (v === undefined || !takes(mode, (next ?? lead)[f], v)) continue;
    next ??= copyOf(lead);
    next[f] = v;
    changed.push(FIELD_WORDS[f]);
  }
  for (const [name, value] of row.custom) {
    const col = custom.get(columnKey(name));
    if (!col || col.builtInType !== null) continue;
    if (!takes(mode, (next ?? lead).variables[col.id] ?? '', value)) continue;
    next ??= copyOf(lead);
    next.variables[col.id] = value;
    changed.push(col.name);
  }
  for (const flag of FLAGS) {
    const v = row.flags[flag];
    // Fill-empty only ever turns a flag on; update also clears it.
    if (v === undefined || v === (next ?? lead)[flag] || (mode === 'fill_empty' && !v)) continue;
    next ??= copyOf(lead);
    next[flag] = v;
    changed.push(flag === 'doNotContact' ? (v ? 'marked Do Not Contact' : 'Do Not Contact cleared') : v ? 'blocklisted' : 'blocklist lifted');
  }
  if (next === null) return { next: lead, changed };
  if (next.firstName !== lead.firstName || next.lastName !== lead.lastName) next.fullName = [next.firstName, next.lastName].filter(Boolean).join(' ');
  return { next, changed };
}

/** Whether a cell's value replaces a lead's under a mode (fill_empty: only an empty one). */
const takes = (mode: OnExisting, current: string, value: string): boolean => value !== current && (mode === 'update' || current === '');
/** A lead to change: its own variables too. */
const copyOf = (lead: Lead): Lead => ({ ...lead, variables: { ...lead.variables } });

/** The other lead holding a row's profile or email key, when it is not `lead` and `lead` does not
 * hold that key itself (two leads already sharing an email, an old duplicate, are no conflict). */
function otherHolding(index: LeadIndex, lead: Lead, hit: Lead | undefined, key: string, kind: 'profile' | 'email'): Lead | undefined {
  // The lead's own keys only when another lead holds one of the row's (rare): the index has them.
  return hit !== undefined && hit.id !== lead.id && key !== index.keysOfLead(lead)[kind] ? hit : undefined;
}

/** Fields a built-in column given as a custom target fills (e.g. a header mapped to "custom:Company"). */
function withBuiltInColumns(row: MappedRow, custom: ReadonlyMap<string, LeadGroupColumn>): MappedRow {
  let fields = row.fields;
  for (const [name, value] of row.custom) {
    const col = custom.get(columnKey(name));
    const field = col?.builtInType;
    if (!field) continue;
    if (field === 'fullName') {
      if (!fields.firstName && !fields.lastName) {
        const [first = '', ...rest] = value.split(/\s+/);
        fields = { ...fields, firstName: first, ...(rest.length ? { lastName: rest.join(' ') } : {}) };
      }
    } else if ((LEAD_TEXT_FIELDS as readonly string[]).includes(field) && fields[field as LeadTextField] === undefined) {
      fields = { ...fields, [field]: value };
    }
  }
  return fields === row.fields ? row : { ...row, fields };
}

/** Rows between two hand-overs of final leads to the store (Tx.writeAhead): a part's worth. */
const AHEAD_ROWS = 500;

/**
 * For each row (by index), the index of the last row of the call that may name the same lead: rows
 * sharing a profile key or an email key are one person, and so, transitively, are rows linked
 * through them (a row that fills a lead's email makes the lead findable by that email). A lead a row
 * creates is final once that last row is read: no later row finds it, by profile URL or email, nor
 * changes it. Name and company do not link rows: a row matched that way is reported or creates
 * another lead (with onPossibleDuplicate 'merge', where it changes the lead, nothing is final early,
 * since a lead's name can be made of several rows' cells).
 */
function lastRowOfPerson(keys: readonly IdentityKeys[]): Int32Array {
  const parent = Int32Array.from(keys, (_, i) => i);
  const root = (i: number): number => {
    let r = i;
    while (parent[r] !== r) r = parent[r] as number;
    while (parent[i] !== r) {
      const next = parent[i] as number;
      parent[i] = r;
      i = next;
    }
    return r;
  };
  const firstRow = new Map<string, number>();
  const link = (key: string, i: number) => {
    const j = firstRow.get(key);
    if (j === undefined) firstRow.set(key, i);
    else parent[root(i)] = root(j);
  };
  keys.forEach((k, i) => {
    if (k.profile) link(`p ${k.profile}`, i);
    if (k.email) link(`e ${k.email}`, i);
  });
  const last = new Int32Array(keys.length);
  for (let i = 0; i < keys.length; i++) last[root(i)] = i;
  return Int32Array.from(keys, (_, i) => last[root(i)] as number);
}

async function groupOf(ctx: Ctx, input: { leadGroupId?: string; campaignId?: string }): Promise<LeadGroup> {
  if (input.leadGroupId === undefined && input.campaignId === undefined) {
    throw invalid('Name the list to import into: a lead list (leadGroupId) or a campaign (campaignId, its lead list).', 'leadGroupId');
  }
  let groupId = input.leadGroupId;
  if (input.campaignId !== undefined) {
    const campaign = await ctx.db.get('campaigns', input.campaignId);
    if (!campaign) throw notFound('Campaign', input.campaignId);
    // Both may be given when they agree: a campaign imports into its own lead list only.
    if (groupId !== undefined && groupId !== campaign.leadGroupId) {
      throw invalid(`Campaign "${campaign.name}" imports into its own lead list, not the one named by leadGroupId.`, 'leadGroupId');
    }
    groupId = campaign.leadGroupId;
  }
  const group = await ctx.db.get('leadGroups', groupId ?? '');
  if (!group) throw notFound('Lead group', groupId ?? '');
  return group;
}

const importOp = mutation({
  name: 'campaigns.leads.import',
  summary:
    `Imports leads into a list (leadGroupId, or campaignId for its list) from rows: JSON objects (rows, with rowNumbers to keep the file's row numbers), CSV text (csv) or CSV bytes in base64 (csvBase64, with encoding auto/utf-8/windows-1252/...). At most ${MAX_IMPORT_ROWS} rows per call. Columns are mapped from headers of HubSpot, Salesforce (also German), Apollo, Sales Navigator tools, PhantomBuster, LinkedIn and our own export; mapping {header: field | custom | custom:<name> | skip} overrides, unknown headers become custom columns. A row is matched to a lead by the id column of our export, the profile URL, then the email; onExisting skip, fill_empty (default: only empty fields are filled) or update (non-empty cells overwrite; empty cells never clear). Same name and company is reported as POSSIBLE_DUPLICATE (onPossibleDuplicate report, create or merge). Each row's result has its spreadsheet row number (header = 1) and a code. dryRun previews.`,
  input: importInput,
  quickInput: quickImportInput,
  output: importOutput,
  dryRun: true,
  async handler(input, ctx) {
    const group = await groupOf(ctx, input);
    const file = readInput(input);
    const groupCustom = group.columns.filter((c) => c.builtInType === null).map((c) => c.name);
    const mapping = resolveMapping(file, input.mapping, groupCustom);
    const mode: OnExisting = input.onExisting ?? 'fill_empty';
    const onPossible = input.onPossibleDuplicate ?? 'report';

    const mapped = mapRecords(file.headers, file.records, mapping, file.problems);
    const readable = mapped.filter((r): r is MappedRow => !isProblem(r));

    // Custom columns the rows give values for: created once, before any lead is written.
    const names = new Set<string>();
    for (const r of readable) for (const n of r.custom.keys()) names.add(n);
    const known = new Set(group.columns.map((c) => columnKey(c.name)));
    const columns = names.size > 0 ? await ensureCustomColumns(ctx, group.id, names) : new Map<string, LeadGroupColumn>();
    const columnsCreated = [...names].filter((n) => !known.has(columnKey(n)));
    // The list is written once, before any lead: it may go ahead of them (Tx.writeAhead).
    ctx.db.seal('leadGroups', group.id);
    const rows = readable.map((r) => withBuiltInColumns(r, columns));

    const nameKeys = new NameCompanyKeys();
    const arrivals = rows.map(arrivalOf);
    const keys = arrivals.map((a) => keysOf(a, nameKeys));
    const index = new LeadIndex(nameKeys);
    await findLeads(ctx.db, arrivals, keys, index, { nameAndCompany: true });

    const now = nowIso(ctx);
    const touched = new Map<string, Lead>();
    /** The ids of `touched` in the order rows first touched them (the order they are staged in). */
    const touchOrder: string[] = [];
    /** Of a lead this call creates: the index of the last row that may change it (see lastRowOfPerson). */
    const finalAfter = new Map<string, number>();
    const lastRow = onPossible === 'merge' ? null : lastRowOfPerson(keys);
    const rowIds = new Set(rows.flatMap((r) => (r.id ? [r.id] : [])));
    let staged = 0;
    /** Stages the leads of touchOrder, from the first not staged yet, that no later row can change:
     * each is sealed, so the Tx may hand them to the store while the rows after them are read. */
    const stageFinal = async (rowIndex: number): Promise<void> => {
      const from = staged;
      for (; staged < touchOrder.length; staged++) {
        const id = touchOrder[staged] as string;
        if (!((finalAfter.get(id) ?? Infinity) <= rowIndex)) break;
        await ctx.db.create('leads', touched.get(id) as Lead);
        ctx.db.seal('leads', id);
      }
      if (staged > from) await ctx.db.writeAhead();
    };
    /** Leads this call creates (fresh ids): staged as creations, with no stored state to read. */
    const created = new Set<string>();
    const flagged = { doNotContact: new Set<string>(), blocklisted: new Set<string>() };
    const byRow = new Map<number, RowResult>();
    let linked = 0;
    const result = (r: RowResult) => byRow.set(r.row, r);
    // The first row of this call that created or found each lead: a later row that is the same
    // person repeats that row (a file listing someone twice), which is not "already in the CRM".
    const firstRowOf = new Map<string, number>();
    const inFile = (id: string): string => {
      const n = firstRowOf.get(id);
      return n === undefined ? '' : `row ${n} of this file`;
    };

    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as MappedRow;
      if (i > 0 && i % AHEAD_ROWS === 0) await stageFinal(i - 1);
      const k = keys[i] as IdentityKeys;
      const note = row.notes.length > 0 ? ` (${row.notes.join('; ')})` : '';
      const byId = row.id ? index.byId.get(row.id) : undefined;
      const byProfile = index.profile(k.profile);
      const byEmail = index.email(k.email);
      // The lead the row is: by id, else profile URL, else email. Another lead holding the row's
      // profile URL or email is a conflict only when the row would give that value to this lead
      // (two leads already sharing an email, an old duplicate, do not stop a row naming one by id).
      let lead = byId ?? byProfile ?? byEmail;
      const otherByProfile = lead && otherHolding(index, lead, byProfile, k.profile, 'profile');
      const otherByEmail = lead && !otherByProfile ? otherHolding(index, lead, byEmail, k.email, 'email') : undefined;
      if (lead && (otherByProfile || otherByEmail)) {
        const [what, hit] = otherByProfile ? ['the profile URL', otherByProfile] : ['the email', otherByEmail as Lead];
        const whatLead = lead === byId ? 'the lead id' : lead === byProfile ? 'the profile URL' : 'the email';
        result({
          row: row.row, code: 'CONFLICTING_MATCH', leadId: lead.id,
          message: `${whatLead} is ${nameOf(lead)}'s but ${what} is ${nameOf(hit)}'s: not imported. Fix the row, or merge those two leads first.`.replace(/^./, (c) => c.toUpperCase()),
        });
        continue;
      }
      let matchedBy: RowResult['matchedBy'] = lead === undefined ? undefined : lead === byId ? 'id' : lead === byProfile ? 'profileUrl' : 'email';
      const idNote = row.id && !byId ? ` (the id ${row.id} is not a lead of this workspace)` : '';

      if (!lead) {
        const possible = index.nameCompany(k.nameCompany);
        if (possible && onPossible === 'report') {
          const from = inFile(possible.id);
          result({
            row: row.row, code: 'POSSIBLE_DUPLICATE', leadId: possible.id, matchedBy: 'nameAndCompany',
            message: `${nameOf(possible)} at ${possible.company}${from ? ` (${from})` : ''} may be this person (same name and company, no shared email or profile URL): not imported. Merge it into that lead or create it anyway.`,
          });
          continue;
        }
        if (possible && onPossible === 'merge') {
          lead = possible;
          matchedBy = 'nameAndCompany';
        }
      }

      if (!lead) {
        const variables: Record<string, string> = {};
        for (const [name, value] of row.custom) {
          const col = columns.get(columnKey(name));
          if (col && col.builtInType === null) variables[col.id] = value;
        }
        const made = newLead({ id: ctx.ids.uuid(), workspaceId: ctx.actor.workspaceId, now }, group.id, {
          ...row.fields,
          doNotContact: row.flags.doNotContact ?? false,
          blocklisted: row.flags.blocklisted ?? false,
          variables,
        });
        touched.set(made.id, made);
        touchOrder.push(made.id);
        created.add(made.id);
        // A later row names it by a key of its own row's person, or by its id (when a row of the
        // file happens to carry the fresh id, it waits for the end).
        if (lastRow !== null && !rowIds.has(made.id)) finalAfter.set(made.id, lastRow[i] as number);
        // Its keys are the row's: the same URL, email, full name and company.
        index.add(made, k);
        firstRowOf.set(made.id, row.row);
        result({ row: row.row, code: 'CREATED', leadId: made.id, message: `Created ${nameOf(made)}${idNote}${note}.` });
        continue;
      }

      const current = touched.get(lead.id) ?? lead;
      const { next, changed } = applyRow(current, row, columns, mode);
      const onList = linkedTo(next, group.id);
      const link = onList !== next;
      // A row that changes nothing leaves its lead as it is (no new updatedAt, nothing written).
      const after: Lead = link ? onList : changed.length > 0 ? next : current;
      if (after !== current) {
        after.updatedAt = now;
        if (!touched.has(after.id)) touchOrder.push(after.id);
        touched.set(after.id, after);
        index.replace(current, after);
      }
      if (link) linked++;
      for (const flag of FLAGS) if (after[flag] && !current[flag]) flagged[flag].add(after.id);
      const found = `found by ${MATCH_WORDS[matchedBy ?? 'email']}`;
      const linkNote = link ? `; added to "${group.name}"` : '';
      const repeats = inFile(after.id);
      if (!repeats) firstRowOf.set(after.id, row.row);
      const code: RowCode = repeats && changed.length === 0 && !link ? 'DUPLICATE_IN_FILE' : mode === 'skip' ? 'DUPLICATE_SKIPPED' : changed.length > 0 ? 'UPDATED' : 'UNCHANGED';
      const message =
        code === 'DUPLICATE_IN_FILE'
          ? `Repeats ${repeats}: ${nameOf(after)} (${found}) ${mode === 'skip' ? 'is left as it is' : mode === 'fill_empty' ? 'already has a value for every field the row gives' : 'already has these values'}.`
          : code === 'DUPLICATE_SKIPPED'
            ? `${nameOf(after)} is already in the CRM (${found}); left as it is${linkNote}.`
            : code === 'UPDATED'
              ? `Updated ${nameOf(after)} (${repeats ? `the person of ${repeats}, ` : ''}${found}): ${changed.join(', ')}${linkNote}.`
              : `${nameOf(after)} (${found}) already has ${mode === 'fill_empty' ? 'a value for every field the row gives' : 'these values'}${linkNote}.`;
      result({ row: row.row, code, leadId: after.id, matchedBy, message: `${message.slice(0, -1)}${idNote}${note}.` });
    }

    for (const id of touchOrder.slice(staged)) {
      const lead = touched.get(id) as Lead;
      await (created.has(id) ? ctx.db.create('leads', lead) : ctx.db.put('leads', lead));
    }
    if (flagged.doNotContact.size > 0) await stopRunningEnrollments(ctx, [...flagged.doNotContact], 'do_not_contact');
    if (flagged.blocklisted.size > 0) await stopRunningEnrollments(ctx, [...flagged.blocklisted], 'blocklisted');

    for (const r of mapped) if (isProblem(r)) byRow.set(r.row, { row: r.row, code: r.code, message: r.message });
    const results = file.records.flatMap((r) => {
      const res = byRow.get(r.row);
      return res ? [res] : [];
    });
    const byCode = new Map<RowCode, number>();
    for (const r of results) byCode.set(r.code, (byCode.get(r.code) ?? 0) + 1);
    const count = (codes: Iterable<RowCode>): number => {
      let n = 0;
      for (const c of codes) n += byCode.get(c) ?? 0;
      return n;
    };
    return {
      dryRun: ctx.dryRun,
      leadGroupId: group.id,
      totals: {
        rows: results.length,
        created: count(['CREATED']),
        updated: count(['UPDATED']),
        unchanged: count(['UNCHANGED']),
        repeatedInFile: count(['DUPLICATE_IN_FILE']),
        skipped: count(['DUPLICATE_SKIPPED', 'EMPTY_ROW', 'NOT_A_LEAD_ROW']),
        possibleDuplicates: count(['POSSIBLE_DUPLICATE']),
        invalid: count(INVALID_CODES) + count(['CONFLICTING_MATCH']),
        linked,
      },
      results,
      headers: file.headers,
      mapping,
      columnsCreated,
      delimiter: input.rows === undefined ? file.delimiter : null,
      encoding: file.encoding,
    };
  },
});

export const ops = opsByName(importOp);
