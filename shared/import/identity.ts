/**
 * Who a row is: one person is one lead per workspace, found by profile URL (normalised), else
 * email (case-insensitive); full name + company only flags a possible duplicate for the user to
 * decide. Keys compare values; variants are the spellings a store may hold for a key, so an import
 * can look its rows up with exact `in` conditions instead of reading every lead of the workspace.
 */

/** A profile URL without scheme, `www.`, country subdomain of LinkedIn, query, fragment or final
 * slash, lower-cased and percent-decoded: `https://de.linkedin.com/in/Jane-Doe/?trk=x` ->
 * `linkedin.com/in/jane-doe`. */
export function profileKey(url: string): string {
  // Fast path for the form the import stores: https://www.linkedin.com/in/<ascii slug>.
  if (CANONICAL_LINKEDIN.test(url)) return url.slice(12).toLowerCase();
  let u = url.trim();
  try {
    u = decodeURI(u);
  } catch {
    // Malformed escapes: compare as written.
  }
  return u
    .toLowerCase()
    .replace(/^[a-z]+:\/\//, '')
    .replace(/^www\./, '')
    .replace(/^[a-z]{2,3}\.linkedin\.com\//, 'linkedin.com/')
    .replace(/[?#].*$/, '')
    .replace(/\/+$/, '');
}

export const emailKey = (email: string): string => email.trim().toLowerCase();

/** Full name and company, both required: spaces collapsed, case and accents ignored. */
export function nameCompanyKey(fullName: string, company: string): string {
  if (!fullName || !company) return '';
  const n = (s: string) => (ASCII.test(s) ? s : s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '')).toLowerCase().replace(/\s+/g, ' ').trim();
  const name = n(fullName);
  const firm = n(company).replace(/[.,]/g, '').replace(/\s+(inc|ltd|llc|gmbh|ag|sa|sas|sarl|bv|plc|co)$/, '');
  return name && firm ? `${name}\u0001${firm}` : '';
}

/** A profile URL as the import stores it: https, the query string (tracking) and final slash removed. */
export function canonicalProfileUrl(url: string): string {
  const u = url.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(u) ? u : `https://${u}`;
  return withScheme
    .replace(/^http:\/\//i, 'https://')
    .replace(/^https:\/\/(?:[a-z]{2,3}\.)?linkedin\.com\//i, 'https://www.linkedin.com/')
    .replace(/[?#].*$/, '')
    .replace(/\/+$/, '');
}

const ASCII = /^[\x20-\x7e]*$/;
const CANONICAL_LINKEDIN = /^https:\/\/www\.linkedin\.com\/[A-Za-z0-9_\-/]+[A-Za-z0-9_-]$/;

/** Capitalises the first letter of each part of a name ("jane.doe-smith" -> "Jane.Doe-Smith"). */
function titleCase(s: string): string {
  let out = '';
  let start = true;
  for (const ch of s) {
    out += start ? ch.toUpperCase() : ch;
    start = ch === ' ' || ch === '.' || ch === '-' || ch === "'" || ch === '_';
  }
  return out;
}

/** Spellings of an email a lead may have been stored with: as written, lower-case, or with the
 * name and the domain capitalised as people type them (`Jane.Doe@Acme.com`). Matching itself
 * ignores case; these only find the candidates. */
export function emailVariants(email: string): string[] {
  const e = email.trim();
  const lower = e.toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at <= 0) return e === lower ? [e] : [e, lower];
  const local = lower.slice(0, at);
  const domain = lower.slice(at + 1);
  const name = titleCase(local);
  const site = domain.charAt(0).toUpperCase() + domain.slice(1);
  return [...new Set([e, lower, `${name}@${domain}`, `${name}@${site}`, `${e.slice(0, at)}@${domain}`, `${local}@${e.slice(at + 1)}`])];
}

/** Spellings of a profile URL a lead may have been stored with (scheme, `www.`, final slash). */
export function profileVariants(url: string): string[] {
  return [...addProfileVariants(url, new Set())];
}

/** profileVariants added to `out` (an import collects the spellings of thousands of rows in one set). */
export function addProfileVariants(url: string, out: Set<string>): Set<string> {
  const raw = url.trim();
  let asWritten: string;
  let key: string;
  if (CANONICAL_LINKEDIN.test(raw)) {
    // The form the import stores (its own canonical spelling): no query, fragment or final slash.
    out.add(raw);
    asWritten = raw.slice(12);
    key = asWritten.toLowerCase();
  } else {
    out.add(raw);
    out.add(canonicalProfileUrl(raw));
    // The path as written (LinkedIn slugs may carry capitals) and as compared.
    asWritten = raw.replace(/^[a-z]+:\/\//i, '').replace(/^www\./i, '').replace(/[?#].*$/, '').replace(/\/+$/, '');
    key = profileKey(raw);
  }
  addPrefixed(key, out);
  if (asWritten !== key) addPrefixed(asWritten, out);
  return out;
}

function addPrefixed(path: string, out: Set<string>): void {
  for (const prefix of ['https://www.', 'https://', 'http://www.', 'http://', '']) {
    out.add(prefix + path);
    out.add(`${prefix}${path}/`);
  }
}

/** Spellings of a full name a lead may have been stored with. */
export function nameVariants(fullName: string): string[] {
  const n = fullName.trim().replace(/\s+/g, ' ');
  return [...new Set([n, n.toLowerCase(), titleCase(n.toLowerCase()), n.toUpperCase()])];
}
