/**
 * Finding the people an entry names among the workspace's leads, with exact lookups on indexed
 * fields (the spellings of shared/intake/identity.ts in `in` conditions: PgStore probes its index
 * once per value, the memory and desktop stores read their hash indexes), never a read of every
 * lead. A LeadIndex then answers "who holds this key" for the whole call, and is kept current as
 * the call creates and changes leads.
 */
import type { Lead } from '../model/index.ts';
import type { Cond, StoreReader } from '../store.ts';
import { addProfileVariants, emailKey, emailVariants, nameCompanyKey, nameVariants, profileKey } from './identity.ts';

/** What an entry knows of a person's identity (any part may be missing). */
export type Arrival = { id?: string | null; socialUrl?: string; email?: string; fullName?: string; company?: string };

/** A person's identity keys ('' where the part is missing). */
export type IdentityKeys = { profile: string; email: string; nameCompany: string };

/** nameCompanyKey with its answers remembered for one call: the key folds accents and case (a
 * Unicode normalisation for non-ASCII names), and a call asks it again for every lead it indexes,
 * re-indexes after an update, and creates. */
export class NameCompanyKeys {
  private readonly byName = new Map<string, Map<string, string>>();

  of(fullName: string, company: string): string {
    let byCompany = this.byName.get(fullName);
    if (!byCompany) this.byName.set(fullName, (byCompany = new Map()));
    let k = byCompany.get(company);
    if (k === undefined) byCompany.set(company, (k = nameCompanyKey(fullName, company)));
    return k;
  }
}

/** The identity keys of an arrival; without `names`, name and company are not a key. */
export function keysOf(a: Arrival, names?: NameCompanyKeys): IdentityKeys {
  return {
    profile: a.socialUrl ? profileKey(a.socialUrl) : '',
    email: a.email ? emailKey(a.email) : '',
    nameCompany: names ? names.of(a.fullName ?? '', a.company ?? '') : '',
  };
}

const oldestFirst = (a: Lead, b: Lead): number => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1);

/** Leads by identity key, kept current as a call creates and updates leads. The oldest lead holding
 * a key keeps it (leads are added oldest first). Name and company are keys only with `names`. */
export class LeadIndex {
  readonly byId = new Map<string, Lead>();
  private readonly byProfile = new Map<string, Lead>();
  private readonly byEmail = new Map<string, Lead>();
  private readonly byNameCompany = new Map<string, Lead>();
  /** The keys each indexed lead was filed under, so removing or replacing it computes none again. */
  private readonly keysOf = new Map<string, IdentityKeys>();

  constructor(private readonly names?: NameCompanyKeys) {}

  private keys(l: Lead, like?: { lead: Lead; keys: IdentityKeys }): IdentityKeys {
    const o = like?.lead;
    const k = like?.keys;
    return {
      profile: k && o?.socialUrl === l.socialUrl ? k.profile : l.socialUrl ? profileKey(l.socialUrl) : '',
      email: k && o?.email === l.email ? k.email : l.email ? emailKey(l.email) : '',
      nameCompany: !this.names ? '' : k && o?.fullName === l.fullName && o.company === l.company ? k.nameCompany : this.names.of(l.fullName, l.company),
    };
  }

  add(l: Lead, keys: IdentityKeys = this.keys(l)): void {
    this.byId.set(l.id, l);
    this.keysOf.set(l.id, keys);
    const file = (map: Map<string, Lead>, k: string) => {
      if (!k) return;
      const held = map.get(k);
      if (!held || held.id === l.id) map.set(k, l);
    };
    file(this.byProfile, keys.profile);
    file(this.byEmail, keys.email);
    file(this.byNameCompany, keys.nameCompany);
  }

  remove(l: Lead): void {
    const keys = this.keysOf.get(l.id) ?? this.keys(l);
    this.byId.delete(l.id);
    this.keysOf.delete(l.id);
    const unfile = (map: Map<string, Lead>, k: string) => {
      if (k && map.get(k)?.id === l.id) map.delete(k);
    };
    unfile(this.byProfile, keys.profile);
    unfile(this.byEmail, keys.email);
    unfile(this.byNameCompany, keys.nameCompany);
  }

  /** Files `after` in place of `before` (the same lead, changed); keys of unchanged fields are reused. */
  replace(before: Lead, after: Lead): void {
    const held = this.keysOf.get(before.id);
    const keys = this.keys(after, held ? { lead: before, keys: held } : undefined);
    this.remove(before);
    this.add(after, keys);
  }

  /** The lead holding a profile key, email key or name-and-company key ('' finds none). */
  profile(key: string): Lead | undefined {
    return key ? this.byProfile.get(key) : undefined;
  }
  email(key: string): Lead | undefined {
    return key ? this.byEmail.get(key) : undefined;
  }
  nameCompany(key: string): Lead | undefined {
    return key ? this.byNameCompany.get(key) : undefined;
  }

  /** The lead a person is: by profile URL, else by email (one person is one lead). */
  person(keys: IdentityKeys): Lead | undefined {
    return this.profile(keys.profile) ?? this.email(keys.email);
  }
}

/** Name spellings per lookup of findLeads (a document has one name, so the counts add up). */
const NAME_LOOKUP_CHUNK = 4000;

/**
 * Puts into `index` the workspace's leads the arrivals may be, found with exact lookups, identity
 * by identity: lead ids, then profile URLs, then emails, then (with `nameAndCompany`, for arrivals
 * not found yet) name and company. An arrival already found skips the later lookups, unless its
 * value there differs from its lead's (then the lookup tells whether the value is another lead's,
 * a conflict). Reads only the leads holding one of the arrivals' spellings.
 */
export async function findLeads(db: StoreReader, arrivals: readonly Arrival[], keys: readonly IdentityKeys[], index: LeadIndex, opts: { nameAndCompany: boolean }): Promise<void> {
  const add = (docs: Lead[]) => {
    for (const l of docs.sort(oldestFirst)) if (!index.byId.has(l.id)) index.add(l);
  };
  const resolved = (i: number): Lead | undefined => {
    const a = arrivals[i] as Arrival;
    return (a.id ? index.byId.get(a.id) : undefined) ?? index.person(keys[i] as IdentityKeys);
  };
  const ids = arrivals.flatMap((a) => (a.id ? [a.id] : []));
  if (ids.length > 0) add(await db.getMany('leads', ids));

  const urls = new Set<string>();
  arrivals.forEach((a, i) => {
    const k = keys[i] as IdentityKeys;
    if (!k.profile) return;
    const lead = resolved(i);
    if (lead && lead.socialUrl && profileKey(lead.socialUrl) === k.profile) return;
    addProfileVariants(a.socialUrl ?? '', urls);
  });
  if (urls.size > 0) add((await db.query('leads', { where: { op: 'in', field: 'socialUrl', values: [...urls] } })).docs);

  const emails = new Set<string>();
  arrivals.forEach((a, i) => {
    const k = keys[i] as IdentityKeys;
    if (!k.email) return;
    const lead = resolved(i);
    if (lead && lead.email && emailKey(lead.email) === k.email) return;
    for (const v of emailVariants(a.email ?? '')) emails.add(v);
  });
  if (emails.size > 0) add((await db.query('leads', { where: { op: 'in', field: 'email', values: [...emails] } })).docs);

  if (!opts.nameAndCompany) return;
  const names = new Set<string>();
  const companies = new Set<string>();
  arrivals.forEach((a, i) => {
    if (!(keys[i] as IdentityKeys).nameCompany || resolved(i)) return;
    for (const v of nameVariants(a.fullName ?? '')) names.add(v);
    for (const v of nameVariants(a.company ?? '')) companies.add(v);
  });
  if (names.size > 0) {
    // By name, so "ACME" finds "Acme Inc."; unless the names are so common that this would bring
    // back a large part of the workspace: then by name and company as written. A few thousand
    // names per query, so each stays an index lookup: names repeat in a large workspace (5 leads
    // per name of a call at 100k leads), and one lookup for all of them would be a large part of
    // the workspace, which a store scans instead (the first import's time grew with the list).
    const values = [...names];
    const byName: Cond[] = [];
    for (let i = 0; i < values.length; i += NAME_LOOKUP_CHUNK) byName.push({ op: 'in', field: 'fullName', values: values.slice(i, i + NAME_LOOKUP_CHUNK) });
    let matching = 0;
    for (const cond of byName) matching += await db.count('leads', cond);
    const common = matching > arrivals.length + 100;
    const byCompany: Cond = { op: 'in', field: 'company', values: [...companies] };
    // Added together, so the oldest lead of a name keeps it whichever lookup found it.
    const found: Lead[] = [];
    for (const cond of byName) for (const l of (await db.query('leads', { where: common ? { op: 'and', conds: [cond, byCompany] } : cond })).docs) found.push(l);
    add(found);
  }
}

/**
 * The oldest live lead other than `selfId` whose `field` holds the same person's email or profile
 * URL as `value`, or null: the check of an edit that would make two leads one person.
 */
export async function otherHolder(db: StoreReader, field: 'email' | 'socialUrl', value: string, selfId: string): Promise<Lead | null> {
  const key = field === 'email' ? emailKey(value) : profileKey(value);
  if (key === '') return null;
  const values = field === 'email' ? emailVariants(value) : [...addProfileVariants(value, new Set())];
  const { docs } = await db.query('leads', { where: { op: 'in', field, values } });
  const same = docs.filter((l) => l.id !== selfId && l[field] !== '' && (field === 'email' ? emailKey(l.email) : profileKey(l.socialUrl)) === key);
  return same.sort(oldestFirst)[0] ?? null;
}

/** The lead on list `groupId` as well (the same lead when it already is). */
export function linkedTo(lead: Lead, groupId: string): Lead {
  return lead.groupIds.includes(groupId) ? lead : { ...lead, groupIds: [...lead.groupIds, groupId] };
}
