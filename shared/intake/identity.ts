/**
 * Who a person is: one person is one lead per workspace, found by profile URL (its key: `profileKey`),
 * else email (its key: `emailKey`); full name + company only flags a possible duplicate for the
 * user to decide. These are the only identity rules: every entry (shared/intake) compares keys.
 *
 * Keys compare values; a lead holds spellings. Every entry stores a profile URL in one spelling
 * (`canonicalProfileUrl`), but older entries, other desktops and replicated edits may hold any other.
 * So every store computes the keys of each lead it writes (`storedKeys`) and indexes them per
 * workspace: a look-up is one probe per key (`KEY_FIELDS` in a condition), whatever the spelling
 * the lead was stored with, never a list of spellings nor a read of every lead.
 */

/** A profile URL without scheme, `www.`, country subdomain of LinkedIn, query, fragment or final
 * slash, lower-cased and percent-decoded: `https://de.linkedin.com/in/Jane-Doe/?trk=x` ->
 * `linkedin.com/in/jane-doe`. */
export function profileKey(url: string): string {
  // Fast path for the form every entry stores: https://www.linkedin.com/in/<ascii slug>.
  if (CANONICAL_LINKEDIN.test(url)) return url.slice(12).toLowerCase();
  let u = url.trim();
  if (u.includes('%')) {
    try {
      u = decodeURI(u);
    } catch {
      // Malformed escapes: compare as written.
    }
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
  const name = foldName(fullName);
  let firm = foldName(company);
  if (firm.includes('.') || firm.includes(',')) firm = firm.replace(/[.,]/g, '');
  firm = firm.replace(/\s+(inc|ltd|llc|gmbh|ag|sa|sas|sarl|bv|plc|co)$/, '');
  return name && firm ? `${name}\u0001${firm}` : '';
}

/** A name without accents or case, its spaces collapsed (nameCompanyKey). At module level: a
 * function made inside nameCompanyKey was made again for every key (twice a row of an import). A
 * name already spaced singly (most) is not copied again to collapse nothing: every lead a store
 * writes and every row of an import computes this twice. */
function foldName(s: string): string {
  const lower = (ASCII.test(s) ? s : s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '')).toLowerCase();
  return ODD_SPACING.test(lower) ? lower.replace(/\s+/g, ' ').trim() : lower;
}

/** Whitespace foldName changes: at either end, two in a row, or any but a plain space. */
const ODD_SPACING = /^\s|\s$|\s\s|[^\S ]/;

/** A profile URL as every entry stores it: https, LinkedIn's country subdomains as `www.`, without
 * query string (tracking), fragment or final slash, scheme and host in lower case, each character
 * of the path in one spelling (`é` and `%c3%a9` as `%C3%A9`, `%41` as `A`); the path's case is
 * kept (LinkedIn's member ids are case-sensitive). */
export function canonicalProfileUrl(url: string): string {
  const u = url.trim();
  // The common forms (the canonical one, an export's http://www.linkedin.com/in/<ascii slug>, a
  // pasted address without scheme): the steps below give https and www. with the path as it is.
  const plain = PLAIN_LINKEDIN.exec(u);
  if (plain) return `https://www.linkedin.com${plain[1] as string}`;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(u) ? u : `https://${u}`;
  const canonical = withScheme
    // Scheme and host are case-insensitive: lower-case, like every browser writes them.
    .replace(/^[^/]*\/\/[^/?#]*/, (origin) => origin.toLowerCase())
    .replace(/^http:\/\//i, 'https://')
    .replace(/^https:\/\/(?:[a-z]{2,3}\.)?linkedin\.com\//i, 'https://www.linkedin.com/')
    .replace(/[?#].*$/, '')
    .replace(/\/+$/, '');
  return NOT_PLAIN.test(canonical) ? canonical.replace(SPELLED, oneSpelling) : canonical;
}

/** Whether a URL holds an escape or a character that must be escaped (else it is in one spelling). */
const NOT_PLAIN = /[^A-Za-z0-9\-_.!~*'();/?:@&=+$,]/;
/** A run of escapes, or one character (a code point) that is not a URL's own. */
const SPELLED = /(?:%[0-9A-Fa-f]{2})+|[^A-Za-z0-9\-_.!~*'();/?:@&=+$,#%]/gu;
const UNRESERVED = /^[A-Za-z0-9\-_.!~*'()]$/;

/** A character escaped in UTF-8 with capital hex digits, or a run of escapes with the characters
 * that need none decoded and the others escaped that way; malformed ones as written. */
function oneSpelling(m: string): string {
  if (!m.startsWith('%')) {
    try {
      return encodeURIComponent(m);
    } catch {
      return m;
    }
  }
  let text: string;
  try {
    text = decodeURIComponent(m);
  } catch {
    return m.toUpperCase();
  }
  let out = '';
  for (const ch of text) out += UNRESERVED.test(ch) ? ch : encodeURIComponent(ch);
  return out;
}

const ASCII = /^[\x20-\x7e]*$/;
const CANONICAL_LINKEDIN = /^https:\/\/www\.linkedin\.com\/[A-Za-z0-9_\-/]+[A-Za-z0-9_-]$/;
/** A LinkedIn URL the canonical form differs from only in scheme, host's case, subdomain (two or
 * three letters, as canonicalProfileUrl replaces) or final slashes; its path is plain ASCII. */
const PLAIN_LINKEDIN = /^(?:https?:\/\/)?(?:[a-z]{2,3}\.)?linkedin\.com(\/[A-Za-z0-9_\-/]*[A-Za-z0-9_-])\/*$/i;

/** The three identity keys as stored and indexed beside a lead in every store (PostgreSQL columns,
 * the desktop's Store columns, the memory store's hash indexes): each store computes them with this
 * function whenever it writes a lead, whatever wrote it, so they are never part of the replicated
 * document (old clients would not write them, and the server never rewrites a pushed document).
 * Null where the lead has no such key. */
export type StoredKeys = { profile: string | null; email: string | null; nameCompany: string | null };

export type IdentityKind = keyof StoredKeys;

/** The Store condition fields naming the keys: `{ op: 'eq', field: KEY_FIELDS.email, value:
 * emailKey(x) }` is one probe of the email key's index in every store (shared/query.ts computes the
 * key of a document for JavaScript stores; SQL stores read their column). */
export const KEY_FIELDS = { profile: 'key:profile', email: 'key:email', nameCompany: 'key:nameCompany' } as const satisfies Record<IdentityKind, string>;

export type KeyField = (typeof KEY_FIELDS)[IdentityKind];

/** The identity kinds, in the order a person is looked for: profile URL, email, name and company. */
export const IDENTITY_KINDS = ['profile', 'email', 'nameCompany'] as const satisfies readonly IdentityKind[];

const textOf = (doc: unknown, field: string): string => {
  const v = doc !== null && typeof doc === 'object' ? (doc as Record<string, unknown>)[field] : undefined;
  return typeof v === 'string' ? v : '';
};

/** One identity key of a (lead) document, or null. */
export function storedKey(doc: unknown, kind: IdentityKind): string | null {
  let k: string;
  if (kind === 'profile') {
    const url = textOf(doc, 'socialUrl');
    k = url ? profileKey(url) : '';
  } else if (kind === 'email') {
    const email = textOf(doc, 'email');
    k = email ? emailKey(email) : '';
  } else {
    k = nameCompanyKey(textOf(doc, 'fullName'), textOf(doc, 'company'));
  }
  return k === '' ? null : k;
}

/** The identity keys a store keeps beside a lead document. */
export function storedKeys(doc: unknown): StoredKeys {
  return { profile: storedKey(doc, 'profile'), email: storedKey(doc, 'email'), nameCompany: storedKey(doc, 'nameCompany') };
}

/** The kind of identity key a Store field names, or null for an ordinary field. */
export function keyKindOf(field: string): IdentityKind | null {
  return field === KEY_FIELDS.profile ? 'profile' : field === KEY_FIELDS.email ? 'email' : field === KEY_FIELDS.nameCompany ? 'nameCompany' : null;
}

/** Whether a lead counts for identity: not merged into another lead (the merge's tombstone carries a
 * non-empty `mergedIntoId`; read defensively, the field is optional). */
export function isLiveIdentity(doc: unknown): boolean {
  return textOf(doc, 'mergedIntoId') === '';
}

const LOOKS_LIKE_EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const LOOKS_LIKE_PROFILE = /^(?:[a-z][a-z0-9+.-]*:\/\/)?(?:www\.|[a-z]{2,3}\.)?linkedin\.com\/\S+$|^[a-z][a-z0-9+.-]*:\/\/\S+$/i;

/** The identity a search text names, when it is an email address or a profile URL in any spelling
 * (`JANE@acme.com `, `de.linkedin.com/in/jane-doe/?trk=x`): search finds that person's lead by
 * its key, first on the page. Null for any other text. */
export function identityOfSearch(text: string): { kind: 'email' | 'profile'; key: string } | null {
  const t = text.trim();
  if (LOOKS_LIKE_EMAIL.test(t)) return { kind: 'email', key: emailKey(t) };
  if (LOOKS_LIKE_PROFILE.test(t)) {
    const key = profileKey(t);
    return key ? { kind: 'profile', key } : null;
  }
  return null;
}
