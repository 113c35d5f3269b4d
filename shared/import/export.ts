/**
 * The CSV export of leads: the lead `id` first, every field an import can set, the custom columns,
 * then what the app sets (stage, tag, sequence, scores, dates). Re-importing the file, edited or
 * not, with `onExisting: update` updates those same leads through the `id` column and creates none.
 */
import { toCsv } from './csv.ts';
import type { Delimiter } from './csv.ts';
import { CUSTOM_SUFFIX, EXPORT_READ_ONLY_HEADERS, headerKey } from './fields.ts';

/** Lead fields of the export, in column order, with the header the importer maps back to the field. */
export const EXPORT_FIELD_COLUMNS = [
  { header: 'First name', field: 'firstName' },
  { header: 'Last name', field: 'lastName' },
  { header: 'Full name', field: 'fullName' },
  { header: 'Email', field: 'email' },
  { header: 'Company', field: 'company' },
  { header: 'Job title', field: 'jobTitle' },
  { header: 'Location', field: 'location' },
  { header: 'Phone', field: 'phone' },
  { header: 'Profile URL', field: 'socialUrl' },
  { header: 'Seniority', field: 'seniority' },
  { header: 'Website', field: 'websiteUrl' },
  { header: 'Company profile URL', field: 'companySocialUrl' },
] as const;

type FieldName = (typeof EXPORT_FIELD_COLUMNS)[number]['field'];

/** One lead as the export writes it. */
export type ExportLead = Record<FieldName, string> & {
  id: string;
  doNotContact: boolean;
  blocklisted: boolean;
  /** Custom column display name -> value. */
  custom: Readonly<Record<string, string>>;
  stage: string;
  tag: string;
  sequenceStatus: string;
  campaigns: readonly string[];
  rankingScore: number;
  leadFitScore: number;
  followUpAt: string | null;
  lastActivityAt: string | null;
  createdAt: string;
  /** When and how the lead unsubscribed (one_click, mailto, reply); null when it never did. */
  unsubscribedAt: string | null;
  unsubscribeSource: string | null;
};

const FIXED = ['id', ...EXPORT_FIELD_COLUMNS.map((c) => c.header), 'Do not contact', 'Blocklisted', ...EXPORT_READ_ONLY_HEADERS];
const FIXED_KEYS = new Set(FIXED.map(headerKey));

/** The header of a custom column in the export. */
export const customHeader = (name: string): string => (FIXED_KEYS.has(headerKey(name)) ? `${name}${CUSTOM_SUFFIX}` : name);

/** Every header of an export with these custom columns. */
export function exportHeaders(customColumns: readonly string[]): string[] {
  return [...FIXED.slice(0, EXPORT_FIELD_COLUMNS.length + 3), ...customColumns.map(customHeader), ...EXPORT_READ_ONLY_HEADERS];
}

const yesNo = (b: boolean): string => (b ? 'yes' : 'no');

export function exportRow(lead: ExportLead, customColumns: readonly string[]): string[] {
  return [
    lead.id,
    ...EXPORT_FIELD_COLUMNS.map((c) => lead[c.field]),
    yesNo(lead.doNotContact),
    yesNo(lead.blocklisted),
    ...customColumns.map((c) => lead.custom[c] ?? ''),
    lead.stage,
    lead.tag,
    lead.sequenceStatus,
    lead.campaigns.join('; '),
    String(lead.rankingScore),
    String(lead.leadFitScore),
    lead.followUpAt ?? '',
    lead.lastActivityAt ?? '',
    lead.createdAt,
    lead.unsubscribedAt ?? '',
    lead.unsubscribeSource ?? '',
  ];
}

/** CSV text of leads; `header: false` for the pages after the first. */
export function leadsToCsv(leads: readonly ExportLead[], customColumns: readonly string[], opts: { delimiter?: Delimiter; header?: boolean } = {}): string {
  return toCsv(exportHeaders(customColumns), leads.map((l) => exportRow(l, customColumns)), opts);
}
