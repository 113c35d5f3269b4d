/**
 * Cleaning what an entry says about a person before it is compared or stored: the checks every
 * entry makes (a person needs a name, an email or a profile URL; an email looks like one; no value
 * is longer than a field holds) and the one spelling a profile URL is stored in. The file import's
 * CSV reading (shared/import/rows.ts) and the lead edit use these too; `cleanRow` is the rows of
 * `campaigns.leads.create`.
 */
import { columnNameProblem } from '../lead-columns.ts';
import { FIELD_LIMITS } from '../model/index.ts';
import type { Lead } from '../model/index.ts';
import { canonicalProfileUrl } from './identity.ts';

/** Longest value of a lead field without a limit of its own, and of a variable. */
export const MAX_FIELD = 2000;

/** An email address as every entry accepts one: something@domain.tld, no spaces. */
export const isEmailAddress = (email: string): boolean => EMAIL.test(email);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A lead needs a name, an email or a profile URL: something to recognise the person by. */
export const hasIdentity = (f: { firstName?: string; lastName?: string; email?: string; socialUrl?: string }): boolean =>
  !!(f.firstName || f.lastName || f.email || f.socialUrl);

/** The fields with the profile URL in its stored spelling (shared/intake/identity.ts). */
export function withCanonicalProfile<F extends { socialUrl?: string }>(fields: F): F {
  if (!fields.socialUrl) return fields;
  const socialUrl = canonicalProfileUrl(fields.socialUrl);
  return socialUrl === fields.socialUrl ? fields : { ...fields, socialUrl };
}

const ROW_TEXT = ['firstName', 'lastName', 'email', 'company', 'jobTitle', 'location', 'phone', 'socialUrl', 'seniority'] as const;

/** A row of `campaigns.leads.create`: text fields and variables by column name, any of them empty. */
export type LeadRow = { [F in (typeof ROW_TEXT)[number]]?: string | null } & { variables?: Readonly<Record<string, string | null | undefined>> | null };

/** A checked row: its non-empty fields, trimmed, and its variables by name (values trimmed). */
export type CleanRow = { fields: Partial<Lead>; variables: [name: string, value: string][] };

/** Checks one row of `campaigns.leads.create`; returns the problem in words, or the row. */
export function cleanRow(row: LeadRow): CleanRow | string {
  const fields: Partial<Lead> = {};
  for (const f of ROW_TEXT) {
    const v = row[f];
    if (typeof v === 'string' && v.trim() !== '') {
      // The stored lead's limits (shared/model FIELD_LIMITS: an email is at most 320 characters).
      const max = FIELD_LIMITS.leads?.[f] ?? MAX_FIELD;
      if (v.length > max) return `${f} is longer than ${max} characters`;
      fields[f] = v.trim();
    }
  }
  const variables: [string, string][] = [];
  for (const [name, value] of Object.entries(row.variables ?? {})) {
    const problem = columnNameProblem(name);
    if (problem) return `variable "${name}": ${problem}`;
    const v = (value ?? '').trim();
    if (v.length > MAX_FIELD) return `variable "${name}" is longer than ${MAX_FIELD} characters`;
    variables.push([name, v]);
  }
  if (fields.email !== undefined && !isEmailAddress(fields.email)) return `email "${fields.email}" is not a valid email address`;
  if (!hasIdentity(fields)) return 'a lead needs a name, an email or a social profile URL';
  return { fields, variables };
}
