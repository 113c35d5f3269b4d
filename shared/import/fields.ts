/**
 * What a column of an imported file holds: a lead field, a part of the location, the lead id of
 * our own export, a flag, a custom column, or nothing. Headers are recognised by alias across the
 * exports people bring (HubSpot, Salesforce in English and German, Apollo, Sales Navigator tools,
 * PhantomBuster and other scrapers, LinkedIn's connections export, our own export); a header no
 * alias knows becomes a custom column of the same name unless the user skips it.
 */
import { MAX_COLUMN_NAME } from '../lead-columns.ts';

/** Lead text fields an import can fill. */
export const LEAD_TEXT_FIELDS = ['firstName', 'lastName', 'email', 'company', 'jobTitle', 'location', 'phone', 'socialUrl', 'seniority', 'websiteUrl', 'companySocialUrl'] as const;
export type LeadTextField = (typeof LEAD_TEXT_FIELDS)[number];

/** Every target a column can be mapped to, besides `skip` and `custom:<name>`. */
export const IMPORT_FIELDS = [
  'id', 'firstName', 'lastName', 'fullName', 'email', 'company', 'jobTitle', 'phone', 'socialUrl', 'location', 'city', 'state', 'country',
  'seniority', 'websiteUrl', 'companySocialUrl', 'doNotContact', 'blocklisted',
] as const;
export type ImportField = (typeof IMPORT_FIELDS)[number];
export type ImportTarget = ImportField | 'skip' | `custom:${string}`;

export const isImportField = (s: string): s is ImportField => (IMPORT_FIELDS as readonly string[]).includes(s);

export const FIELD_LABELS: Record<ImportField, string> = {
  id: 'Lead id (update this lead)',
  firstName: 'First name',
  lastName: 'Last name',
  fullName: 'Full name (split into first and last)',
  email: 'Email',
  company: 'Company',
  jobTitle: 'Job title',
  phone: 'Phone',
  socialUrl: 'Profile URL (LinkedIn or other)',
  location: 'Location',
  city: 'City (part of location)',
  state: 'State / region (part of location)',
  country: 'Country (part of location)',
  seniority: 'Seniority',
  websiteUrl: 'Website',
  companySocialUrl: 'Company profile URL',
  doNotContact: 'Do not contact (yes/no)',
  blocklisted: 'Blocklisted (yes/no)',
};

/**
 * Aliases by field, best first: when two columns of one file name the same field (Apollo's phones,
 * PhantomBuster's `linkedInProfileUrl` and `profileUrl`), the earlier alias wins the field and the
 * other keeps its values as a custom column. Compared after `headerKey` (accents, case, spaces and
 * punctuation ignored), so "E-Mail", "e_mail" and "Email" are one alias.
 */
const ALIASES: Record<Exclude<ImportField, 'id'>, readonly string[]> = {
  firstName: ['first name', 'firstname', 'first', 'given name', 'fname', 'contact first name', 'vorname', 'prénom', 'nombre', 'voornaam', 'nome'],
  lastName: ['last name', 'lastname', 'last', 'surname', 'family name', 'lname', 'contact last name', 'nachname', 'nom de famille', 'nom', 'apellido', 'apellidos', 'achternaam', 'cognome'],
  fullName: ['full name', 'fullname', 'name', 'contact name', 'contact', 'person name', 'lead name', 'vollständiger name', 'nom complet', 'nombre completo'],
  email: [
    'email', 'email address', 'e-mail address', 'work email', 'business email', 'primary email', 'email 1', 'mail', 'emails', 'courriel',
    'e-mail-adresse', 'adresse e-mail', 'adresse email', 'correo electrónico', 'correo', 'personal email',
  ],
  company: [
    'company', 'company name', 'company / account', 'account name', 'account', 'organization', 'organisation', 'organization name', 'current company',
    'employer', 'firma / account', 'firma', 'unternehmen', 'firmenname', 'société', 'entreprise', 'empresa', 'bedrijf', 'azienda',
  ],
  jobTitle: ['job title', 'title', 'jobtitle', 'position', 'role', 'job', 'occupation', 'current title', 'titel', 'berufsbezeichnung', 'position / titel', 'poste', 'fonction', 'intitulé du poste', 'cargo', 'functie', 'headline'],
  phone: [
    'phone', 'phone number', 'first phone', 'work direct phone', 'mobile phone', 'mobile', 'mobile phone number', 'direct phone', 'work phone', 'telephone',
    'tel', 'cell', 'cell phone', 'corporate phone', 'telefon', 'telefonnummer', 'mobiltelefon', 'mobil', 'handy', 'téléphone', 'portable', 'téléphone mobile', 'teléfono', 'phonenumber',
  ],
  socialUrl: [
    'linkedin url', 'linkedin profile url', 'person linkedin url', 'linkedin profile', 'linkedin', 'linkedinprofileurl', 'public profile url', 'profile url',
    'defaultprofileurl', 'social url', 'profile', 'url', 'linkedin-profil', 'profil linkedin', 'sales navigator url', 'sales nav url',
  ],
  location: ['location', 'address', 'standort', 'localisation', 'lieu', 'ubicación', 'locatie', 'person location'],
  city: ['city', 'town', 'mailing city', 'ort', 'stadt', 'ville', 'ciudad', 'plaats', 'città'],
  state: ['state', 'state/region', 'state / region', 'state/province', 'province', 'region', 'mailing state/province', 'bundesland', 'bundesland/kanton', 'kanton', 'région', 'département', 'provincia'],
  country: ['country', 'country/region', 'country / region', 'mailing country', 'country name', 'land', 'pays', 'país', 'paese'],
  seniority: ['seniority', 'seniority level', 'level'],
  websiteUrl: ['website', 'website url', 'company website', 'web', 'webseite', 'site web', 'site internet', 'homepage'],
  companySocialUrl: ['company linkedin url', 'company linkedin', 'company profile url', 'company social url', 'company linkedin profile'],
  doNotContact: ['do not contact', 'dnc', 'nicht kontaktieren', 'ne pas contacter'],
  blocklisted: ['blocklisted', 'blocklist', 'blacklisted', 'blocked'],
};

/** How headers are compared: accents, case, spaces and punctuation ignored ("E-Mail" = "email"). */
export function headerKey(header: string): string {
  return header.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/ß/g, 'ss').replace(/[^a-z0-9]+/g, '');
}

/** alias key -> field and rank (lower is better). */
const ALIAS_INDEX = new Map<string, { field: ImportField; rank: number }>();
for (const [field, aliases] of Object.entries(ALIASES) as [ImportField, readonly string[]][]) {
  aliases.forEach((a, rank) => {
    const k = headerKey(a);
    if (!ALIAS_INDEX.has(k)) ALIAS_INDEX.set(k, { field, rank });
  });
}
// A field's own name (an API client's `firstName`, `jobTitle`) is its best alias.
for (const f of IMPORT_FIELDS) ALIAS_INDEX.set(headerKey(f), { field: f, rank: -1 });

/** The field a header names by alias, with its rank (lower is better), or null. */
export function fieldForHeader(header: string): { field: ImportField; rank: number } | null {
  return ALIAS_INDEX.get(headerKey(header)) ?? null;
}

/** Columns of our own export that the app sets (stage, tag, scores...): ignored on re-import. */
export const EXPORT_READ_ONLY_HEADERS = ['Stage', 'Tag', 'Sequence status', 'Campaigns', 'Ranking score', 'Lead fit score', 'Catch-up date', 'Last activity', 'Created', 'Unsubscribed at', 'Unsubscribe source'] as const;
const READ_ONLY_KEYS = new Set(EXPORT_READ_ONLY_HEADERS.map(headerKey));

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID.test(s);

/** A custom column name for a header: what `{{Name}}` merge fields can hold (no braces or pipes),
 * within the longest column name. */
export function customColumnName(header: string): string {
  return header.replace(/[{}|]+/g, ' ').replace(/\s+/g, ' ').trim().slice(0, MAX_COLUMN_NAME).trim() || 'Column';
}

export type SuggestedMapping = Record<string, ImportTarget>;

/** Suffix of a custom column our export renames because one of its own columns has that name. */
export const CUSTOM_SUFFIX = ' (custom)';

/**
 * The suggested target of each header. `sample` holds some data rows (cells in header order): it
 * tells an `id` column of lead ids from another system's ids, and a second column for a field
 * from a copy of the first (skipped rather than kept twice). `customColumns` are the names of the
 * list's custom columns: a header naming one goes there before any alias is tried.
 */
export function suggestMapping(headers: readonly string[], sample: readonly (readonly string[])[] = [], customColumns: readonly string[] = []): SuggestedMapping {
  const ourExport = headers[0]?.trim().toLowerCase() === 'id';
  const existing = new Map(customColumns.map((c) => [c.trim().toLowerCase(), c]));
  const candidates = new Map<ImportField, { index: number; rank: number }[]>();
  const out: SuggestedMapping = {};
  headers.forEach((h, index) => {
    const key = headerKey(h);
    if (ourExport && READ_ONLY_KEYS.has(key)) {
      out[h] = 'skip';
      return;
    }
    // A column the list already has keeps its values there (our export writes "Stage (custom)"
    // for a custom column named like one of its own).
    const own = existing.get(h.trim().toLowerCase()) ?? (h.endsWith(CUSTOM_SUFFIX) ? existing.get(h.slice(0, -CUSTOM_SUFFIX.length).trim().toLowerCase()) : undefined);
    if (own) {
      out[h] = `custom:${own}`;
      return;
    }
    if (key === 'id') {
      const values = sample.map((r) => (r[index] ?? '').trim()).filter(Boolean);
      out[h] = values.length > 0 && values.every(isUuid) ? 'id' : `custom:${customColumnName(h)}`;
      return;
    }
    const hit = ALIAS_INDEX.get(key);
    if (hit && hit.field !== 'id') {
      const list = candidates.get(hit.field) ?? [];
      list.push({ index, rank: hit.rank });
      candidates.set(hit.field, list);
      return;
    }
    out[h] = `custom:${customColumnName(h)}`;
  });
  for (const [field, list] of candidates) {
    list.sort((a, b) => a.rank - b.rank || a.index - b.index);
    const [best, ...rest] = list;
    if (!best) continue;
    out[headers[best.index] as string] = field;
    for (const other of rest) {
      const h = headers[other.index] as string;
      const copy = sample.every((r) => {
        const v = (r[other.index] ?? '').trim();
        return v === '' || v === (r[best.index] ?? '').trim();
      });
      out[h] = copy ? 'skip' : `custom:${customColumnName(h)}`;
    }
  }
  // Keep the file's column order.
  return Object.fromEntries(headers.map((h) => [h, out[h] ?? 'skip']));
}

/** Parses a target given by a client: a field name, `skip`, `custom` (named as the header) or `custom:Name`. */
export function parseTarget(header: string, raw: string): ImportTarget | null {
  const t = raw.trim();
  if (t === 'skip' || isImportField(t)) return t;
  if (t === 'custom') return `custom:${customColumnName(header)}`;
  if (t.startsWith('custom:')) {
    const name = customColumnName(t.slice(7));
    return name ? `custom:${name}` : null;
  }
  return null;
}
