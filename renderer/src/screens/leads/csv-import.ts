/** CSV import logic without UI: guess what each column holds, turn rows into the import operation's
 * lead rows, and find people listed twice in the file. */
import type { OpInput } from '../../../../shared/ops/index.ts';

export type ImportLead = OpInput<'campaigns.leads.create'>['leads'][number];

export const LEAD_FIELDS = [
  { field: 'firstName', label: 'First name', aliases: ['first name', 'firstname', 'first', 'given name', 'prenom'] },
  { field: 'lastName', label: 'Last name', aliases: ['last name', 'lastname', 'last', 'surname', 'family name'] },
  { field: 'fullName', label: 'Full name (split into first and last)', aliases: ['name', 'full name', 'fullname', 'contact', 'contact name'] },
  { field: 'email', label: 'Email', aliases: ['email', 'e-mail', 'email address', 'mail', 'work email'] },
  { field: 'company', label: 'Company', aliases: ['company', 'company name', 'organization', 'organisation', 'account', 'employer'] },
  { field: 'jobTitle', label: 'Job title', aliases: ['job title', 'title', 'position', 'role', 'headline'] },
  { field: 'location', label: 'Location', aliases: ['location', 'city', 'country', 'region'] },
  { field: 'phone', label: 'Phone', aliases: ['phone', 'phone number', 'mobile', 'telephone', 'tel'] },
  { field: 'socialUrl', label: 'Social profile URL', aliases: ['social url', 'profile url', 'linkedin', 'linkedin url', 'profile', 'social', 'url'] },
  { field: 'seniority', label: 'Seniority', aliases: ['seniority', 'level', 'seniority level'] },
] as const;

export type LeadField = (typeof LEAD_FIELDS)[number]['field'];

/** What a CSV column becomes: a lead field, a custom column of the list (by name), or nothing. */
export type Target = { kind: 'field'; field: LeadField } | { kind: 'custom'; column: string } | { kind: 'ignore' };

const norm = (s: string) => s.trim().toLowerCase().replace(/[_\-.]+/g, ' ').replace(/\s+/g, ' ');

export function guessTarget(header: string, customColumns: readonly string[]): Target {
  const h = norm(header);
  const custom = customColumns.find((c) => norm(c) === h);
  if (custom) return { kind: 'custom', column: custom };
  for (const f of LEAD_FIELDS) if ((f.aliases as readonly string[]).includes(h) || norm(f.label) === h) return { kind: 'field', field: f.field };
  return { kind: 'ignore' };
}

/** One file row as an import row. */
export function toImportLead(row: Record<string, string>, mapping: Record<string, Target>): ImportLead {
  const out: Record<string, string> = {};
  const variables: Record<string, string> = {};
  for (const [header, target] of Object.entries(mapping)) {
    const value = (row[header] ?? '').trim();
    if (!value || target.kind === 'ignore') continue;
    if (target.kind === 'custom') variables[target.column] = value;
    else if (target.field === 'fullName') {
      const [first = '', ...rest] = value.split(/\s+/);
      out.firstName ??= first;
      if (rest.length) out.lastName ??= rest.join(' ');
    } else out[target.field] = value;
  }
  return { ...out, ...(Object.keys(variables).length ? { variables } : {}) };
}

const socialKey = (url: string) => url.trim().toLowerCase().replace(/^https?:\/\/(www\.)?/, '').replace(/[?#].*$/, '').replace(/\/+$/, '');
const emailKey = (email: string) => email.trim().toLowerCase();

/** Rows that repeat an earlier row's person, as the import judges it (same profile URL, else same
 * email): index -> index of the earlier row. */
export function duplicatesInFile(leads: readonly ImportLead[]): Map<number, number> {
  const socials = new Map<string, number>();
  const emails = new Map<string, number>();
  const dups = new Map<number, number>();
  leads.forEach((l, i) => {
    const s = l.socialUrl ? socialKey(l.socialUrl) : '';
    const e = l.email ? emailKey(l.email) : '';
    const earlier = (s ? socials.get(s) : undefined) ?? (e ? emails.get(e) : undefined);
    if (earlier !== undefined) dups.set(i, earlier);
    if (s && !socials.has(s)) socials.set(s, i);
    if (e && !emails.has(e)) emails.set(e, i);
  });
  return dups;
}
