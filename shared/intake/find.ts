/**
 * Finding the people an entry names among the workspace's leads, by their identity keys: every
 * store keeps the keys of shared/intake/identity.ts beside each lead, indexed per workspace
 * (PostgreSQL columns, the desktop's Store columns, the memory store's hash indexes), so a look-up
 * is one probe per key, never a list of spellings nor a read of every lead. A LeadIndex then
 * answers "who holds this key" for the whole call, and is kept current as the call creates and
 * changes leads.
 */
import type { Lead } from '../model/index.ts';
import type { Cond, StoreReader } from '../store.ts';
import { emailKey, isLiveIdentity, KEY_FIELDS, nameCompanyKey, profileKey } from './identity.ts';
import type { IdentityKind } from './identity.ts';

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

/** Files `l` under key `k` ('' is no key) unless another lead holds it. */
function fileUnder(map: Map<string, Lead>, k: string, l: Lead): void {
  if (!k) return;
  const held = map.get(k);
  if (!held || held.id === l.id) map.set(k, l);
}

/** Takes `l` out from under key `k` when it holds it. */
function unfileUnder(map: Map<string, Lead>, k: string, l: Lead): void {
  if (k && map.get(k)?.id === l.id) map.delete(k);
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
    fileUnder(this.byProfile, keys.profile, l);
    fileUnder(this.byEmail, keys.email, l);
    fileUnder(this.byNameCompany, keys.nameCompany, l);
  }

  remove(l: Lead): void {
    const keys = this.keysOf.get(l.id) ?? this.keys(l);
    this.byId.delete(l.id);
    this.keysOf.delete(l.id);
    unfileUnder(this.byProfile, keys.profile, l);
    unfileUnder(this.byEmail, keys.email, l);
    unfileUnder(this.byNameCompany, keys.nameCompany, l);
  }

  /** Files `after` in place of `before` (the same lead, changed); keys of unchanged fields are reused. */
  replace(before: Lead, after: Lead): void {
    const held = this.keysOf.get(before.id);
    const keys = this.keys(after, held ? { lead: before, keys: held } : undefined);
    this.remove(before);
    this.add(after, keys);
  }

  /** Keys a merged lead held, with the id of its survivor: a person who arrives with the merged
   * lead's email or profile URL is the survivor (kept as ids, so the survivor's current version is
   * found after the call changes it). A live lead holding the key wins. */
  private readonly aliases = { profile: new Map<string, string>(), email: new Map<string, string>() };

  /** Files a merged lead's keys to its survivor (which must be in the index). */
  alias(merged: Lead, survivorId: string): void {
    const keys = this.keys(merged);
    if (keys.profile && !this.aliases.profile.has(keys.profile)) this.aliases.profile.set(keys.profile, survivorId);
    if (keys.email && !this.aliases.email.has(keys.email)) this.aliases.email.set(keys.email, survivorId);
  }

  private aliased(kind: 'profile' | 'email', key: string): Lead | undefined {
    const id = this.aliases[kind].get(key);
    return id === undefined ? undefined : this.byId.get(id);
  }

  /** The keys `l` is filed under when this very version of it is in the index (computed once,
   * when it was added), else computed now. */
  keysOfLead(l: Lead): IdentityKeys {
    return this.byId.get(l.id) === l ? (this.keysOf.get(l.id) ?? this.keys(l)) : this.keys(l);
  }

  /** The lead holding a profile key, email key or name-and-company key ('' finds none). */
  profile(key: string): Lead | undefined {
    return key ? (this.byProfile.get(key) ?? this.aliased('profile', key)) : undefined;
  }
  email(key: string): Lead | undefined {
    return key ? (this.byEmail.get(key) ?? this.aliased('email', key)) : undefined;
  }
  nameCompany(key: string): Lead | undefined {
    return key ? this.byNameCompany.get(key) : undefined;
  }

  /** The lead a person is: by profile URL, else by email (one person is one lead). */
  person(keys: IdentityKeys): Lead | undefined {
    return this.profile(keys.profile) ?? this.email(keys.email);
  }
}

/** Keys per look-up statement: each is one probe of the key's index; a few thousand per statement
 * keep a statement's parameters and its answer of a bounded size. */
const KEY_LOOKUP_CHUNK = 5000;

/** The workspace's leads holding one of `keys` of one kind: one index probe per key. */
async function holders(db: StoreReader, kind: IdentityKind, keys: ReadonlySet<string>): Promise<Lead[]> {
  const values = [...keys];
  const out: Lead[] = [];
  for (let i = 0; i < values.length; i += KEY_LOOKUP_CHUNK) {
    const chunk = values.slice(i, i + KEY_LOOKUP_CHUNK);
    const where: Cond = chunk.length === 1 ? { op: 'eq', field: KEY_FIELDS[kind], value: chunk[0] as string } : { op: 'in', field: KEY_FIELDS[kind], values: chunk };
    for (const l of (await db.query('leads', { where })).docs) out.push(l);
  }
  return out;
}

/**
 * Puts into `index` the workspace's leads the arrivals may be, key by key: lead ids, then profile
 * keys, then email keys, then (with `nameAndCompany`, for arrivals not found yet) name-and-company
 * keys, each one probe of the store's index of that key (stored with every lead, whatever spelling
 * it was written in). An arrival already found skips the later look-ups, unless its value there
 * differs from its lead's (then the look-up tells whether the value is another lead's, a conflict).
 * A lead merged into another (a `mergedIntoId`) is nobody's: its survivor is (addSurvivors).
 */
export async function findLeads(db: StoreReader, arrivals: readonly Arrival[], keys: readonly IdentityKeys[], index: LeadIndex, opts: { nameAndCompany: boolean }): Promise<void> {
  const add = async (docs: Lead[]) => {
    const merged: Lead[] = [];
    for (const l of docs.sort(oldestFirst)) {
      if (index.byId.has(l.id)) continue;
      if (isLiveIdentity(l)) index.add(l);
      else if (l.mergedIntoId) merged.push(l);
    }
    if (merged.length > 0) await addSurvivors(db, merged, index);
  };
  // A lead found here is in `index`, filed under the keys computed when it was added (keysOfLead).
  const resolved = (i: number): Lead | undefined => {
    const a = arrivals[i] as Arrival;
    return (a.id ? index.byId.get(a.id) : undefined) ?? index.person(keys[i] as IdentityKeys);
  };
  const ids = arrivals.flatMap((a) => (a.id ? [a.id] : []));
  if (ids.length > 0) await add(await db.getMany('leads', ids));

  const profiles = new Set<string>();
  keys.forEach((k, i) => {
    if (!k.profile) return;
    const lead = resolved(i);
    if (lead && index.keysOfLead(lead).profile === k.profile) return;
    profiles.add(k.profile);
  });
  if (profiles.size > 0) await add(await holders(db, 'profile', profiles));

  const emails = new Set<string>();
  keys.forEach((k, i) => {
    if (!k.email) return;
    const lead = resolved(i);
    if (lead && index.keysOfLead(lead).email === k.email) return;
    emails.add(k.email);
  });
  if (emails.size > 0) await add(await holders(db, 'email', emails));

  if (!opts.nameAndCompany) return;
  const names = new Set<string>();
  keys.forEach((k, i) => {
    if (k.nameCompany && !resolved(i)) names.add(k.nameCompany);
  });
  if (names.size > 0) await add(await holders(db, 'nameCompany', names));
}

/** A merge may be merged again: survivors are followed this many steps at most. */
const MAX_MERGE_HOPS = 8;

/**
 * Adds the survivors of merged leads found by key, and files each merged lead's profile and email
 * keys to its survivor: the survivor kept its own values where both had one, so the merged lead's
 * address is no longer on any live lead, yet it is still the same person.
 */
async function addSurvivors(db: StoreReader, merged: readonly Lead[], index: LeadIndex): Promise<void> {
  const survivorOf = new Map<string, string>();
  let pending = merged.map((m) => m.mergedIntoId ?? '').filter((id) => id !== '');
  for (const m of merged) if (m.mergedIntoId) survivorOf.set(m.id, m.mergedIntoId);
  for (let hop = 0; hop < MAX_MERGE_HOPS && pending.length > 0; hop++) {
    const wanted = [...new Set(pending)].filter((id) => !index.byId.has(id));
    const next: string[] = [];
    for (const l of (await db.getMany('leads', wanted)).sort(oldestFirst)) {
      if (isLiveIdentity(l)) index.add(l);
      else if (l.mergedIntoId) {
        survivorOf.set(l.id, l.mergedIntoId);
        next.push(l.mergedIntoId);
      }
    }
    pending = next;
  }
  for (const m of merged) {
    let id = m.id;
    for (let hop = 0; hop < MAX_MERGE_HOPS && !index.byId.has(id); hop++) {
      const to = survivorOf.get(id);
      if (to === undefined) break;
      id = to;
    }
    if (index.byId.has(id)) index.alias(m, id);
  }
}

/**
 * The oldest live lead other than `selfId` whose `field` holds the same person's email or profile
 * URL as `value`, or null: the check of an edit that would make two leads one person. One probe.
 */
export async function otherHolder(db: StoreReader, field: 'email' | 'socialUrl', value: string, selfId: string): Promise<Lead | null> {
  const kind = field === 'email' ? 'email' : 'profile';
  const key = kind === 'email' ? emailKey(value) : profileKey(value);
  if (key === '') return null;
  const { docs } = await db.query('leads', { where: { op: 'eq', field: KEY_FIELDS[kind], value: key } });
  const same = docs.filter((l) => l.id !== selfId && isLiveIdentity(l));
  return same.sort(oldestFirst)[0] ?? null;
}

/** The lead on list `groupId` as well (the same lead when it already is). */
export function linkedTo(lead: Lead, groupId: string): Lead {
  return lead.groupIds.includes(groupId) ? lead : { ...lead, groupIds: [...lead.groupIds, groupId] };
}
