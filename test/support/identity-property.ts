/** A property (fast-check) run on every store (memory, PGlite, PostgreSQL, the desktop's SQLite
 * Store): any spelling of a person's profile URL (scheme, `www.`, country subdomain, case, final
 * slash, query, fragment, percent-encoding) and of their email (case, spaces), put through
 * campaigns.leads.create, campaigns.leads.import, campaigns.leads.update, social.importPostLeads and
 * a replication write of the lead (a push on the server, a pulled document on the desktop), finds
 * one lead each time; lead search finds it, first on the page, by every spelling. */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { Actor } from '../../shared/context.ts';
import { isDomainError } from '../../shared/errors.ts';
import { emailKey, KEY_FIELDS, profileKey } from '../../shared/intake/identity.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import { leadPage } from '../../shared/ops/lead-search.ts';
import { intakeWorld } from './intake-identity-case.ts';
import type { OpenStore } from './intake-identity-case.ts';

/** Writes a lead document as replication does on this store (a push to the server, a pulled
 * document on the desktop), or as any other writer would (the memory store: a commit). */
export type ReplicatedWrite = (workspaceId: string, actor: Actor, lead: Lead) => Promise<void>;

const SLUG_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A person: a profile slug and an email (the run's number keeps people of different runs apart). */
const personArb = fc.record({
  slug: fc.array(fc.constantFrom(...SLUG_CHARS), { minLength: 2, maxLength: 8 }).map((c) => c.join('')),
  second: fc.array(fc.constantFrom(...SLUG_CHARS), { minLength: 1, maxLength: 6 }).map((c) => c.join('')),
  local: fc.array(fc.constantFrom(...'abcdefghij.'), { minLength: 1, maxLength: 8 }).map((c) => c.join('').replace(/^\.+|\.+$/g, '') || 'x'),
  domain: fc.constantFrom('acme.example', 'mail.example.org', 'x.test'),
});

type Spell = { scheme: string; host: string; upper: boolean[]; encode: boolean[]; hexUpper: boolean; slash: boolean; query: string; fragment: string };

const spellArb: fc.Arbitrary<Spell> = fc.record({
  scheme: fc.constantFrom('https://', 'http://', '', 'HTTPS://', 'Http://'),
  host: fc.constantFrom('www.linkedin.com', 'linkedin.com', 'de.linkedin.com', 'fr.linkedin.com', 'br.linkedin.com', 'WWW.LinkedIn.com', 'uk.LINKEDIN.com'),
  upper: fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }),
  encode: fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }),
  hexUpper: fc.boolean(),
  slash: fc.boolean(),
  query: fc.constantFrom('', '?trk=public_profile', '?originalSubdomain=de&trk=x', '?utm_source=share'),
  fragment: fc.constantFrom('', '#about', '#experience'),
});

/** A profile URL of `slug` in one spelling: each character of the slug in either case and perhaps
 * percent-encoded (hex digits in either case). */
function spellUrl(slug: string, s: Spell): string {
  const path = [...slug].map((ch, i) => {
    const c = s.upper[i % 20] ? ch.toUpperCase() : ch;
    if (!s.encode[i % 20]) return c;
    const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
    return `%${s.hexUpper ? hex.toUpperCase() : hex.toLowerCase()}`;
  });
  return `${s.scheme}${s.host}/in/${path.join('')}${s.slash ? '/' : ''}${s.query}${s.fragment}`;
}

type EmailSpell = { upper: boolean[]; before: string; after: string };
const emailSpellArb: fc.Arbitrary<EmailSpell> = fc.record({
  upper: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
  before: fc.constantFrom('', ' ', '  '),
  after: fc.constantFrom('', ' ', '\t'),
});
const spellEmail = (email: string, s: EmailSpell): string => `${s.before}${[...email].map((ch, i) => (s.upper[i % 30] ? ch.toUpperCase() : ch)).join('')}${s.after}`;

type Entry = 'create' | 'import' | 'post' | 'update' | 'replicated';
const entryArb = fc.constantFrom<Entry>('create', 'import', 'post', 'update', 'replicated');

export async function checkIdentityProperty(open: OpenStore, replicated: ReplicatedWrite, opts: { numRuns: number; seed?: number }): Promise<void> {
  const { WS, actor, clock, ids, creation, sender, list, call, postWith } = await intakeWorld(open, { name: 'Prop', email: 'olive@prop.test', ids: 90 });
  const holders = (kind: 'profile' | 'email', key: string): Promise<Lead[]> =>
    open(WS, async (store) => (await store.query('leads', { where: { op: 'eq', field: KEY_FIELDS[kind], value: key } })).docs);
  let run = 0;

  await fc.assert(
    fc.asyncProperty(personArb, entryArb, spellArb, emailSpellArb, fc.array(fc.tuple(entryArb, spellArb, emailSpellArb), { minLength: 2, maxLength: 4 }), async (p, firstBy, firstUrl, firstEmail, later) => {
      run++;
      clock.advance(60_000);
      const slug = `${p.slug}-${p.second}-${run}`;
      const email = `${p.local}${run}@${p.domain}`;
      const name = { firstName: 'Prop', lastName: `Person${run}` };
      const url0 = spellUrl(slug, firstUrl);
      const email0 = spellEmail(email, firstEmail);
      const what = (entry: string, url: string, mail: string) => `${entry} ${JSON.stringify(url)} ${JSON.stringify(mail)} (first by ${firstBy}: ${JSON.stringify(url0)})`;

      // The person's first lead, written by one entry in one spelling.
      let id: string | undefined;
      if (firstBy === 'create' || firstBy === 'update') {
        id = (await call('campaigns.leads.create', { leadGroupId: creation.leadGroupId, leads: [{ ...name, ...(firstBy === 'create' ? { socialUrl: url0, email: email0.trim() } : {}) }] })).leadIds[0] ?? undefined;
        if (firstBy === 'update') await call('campaigns.leads.update', { leadId: id ?? '', socialUrl: url0, email: email0.trim() });
      } else if (firstBy === 'import') {
        const out = await call('campaigns.leads.import', { leadGroupId: creation.leadGroupId, rows: [{ First: name.firstName, Last: name.lastName, 'Profile URL': url0, Email: email0 }], mapping: { First: 'firstName', Last: 'lastName', 'Profile URL': 'socialUrl', Email: 'email' } });
        id = out.results[0]?.leadId;
      } else if (firstBy === 'post') {
        const out = await call('social.importPostLeads', { senderProfileId: sender.id, postUrl: postWith(url0, `${name.firstName} ${name.lastName}`), leadGroupId: creation.leadGroupId });
        id = out.leadIds[0];
        // A post gives no email: the person's email comes with an edit.
        if (id) await call('campaigns.leads.update', { leadId: id, email: email0.trim() });
      } else {
        // As an older client or another desktop wrote it: the spellings as given, no canonical form.
        const lead = newLead({ id: ids.uuid(), workspaceId: WS, now: clock.now().toISOString() }, creation.leadGroupId, { ...name, socialUrl: url0, email: email0.trim() });
        await replicated(WS, actor, lead);
        id = lead.id;
      }
      expect(id, what('first', url0, email0)).toBeDefined();
      const pKey = profileKey(url0);
      const eKey = emailKey(email0);
      expect(pKey).toBe(`linkedin.com/in/${slug}`);
      expect(eKey).toBe(email);

      const spellings: { url: string; mail: string }[] = [{ url: url0, mail: email0 }];
      for (const [entry, us, es] of later) {
        const url = spellUrl(slug, us);
        const mail = spellEmail(email, es);
        spellings.push({ url, mail });
        const label = what(entry, url, mail);
        if (entry === 'create') {
          const out = await call('campaigns.leads.create', { leadGroupId: list.id, leads: [{ firstName: 'Again', socialUrl: url, email: mail.trim() }] });
          expect([out.created, out.leadIds[0]], label).toEqual([0, id]);
        } else if (entry === 'import') {
          const out = await call('campaigns.leads.import', { leadGroupId: list.id, rows: [{ 'Profile URL': url, Email: mail }], mapping: { 'Profile URL': 'socialUrl', Email: 'email' } });
          expect([out.totals.created, out.results[0]?.leadId], label).toEqual([0, id]);
          // By email alone, in its other spelling.
          const byMail = await call('campaigns.leads.import', { leadGroupId: list.id, rows: [{ Email: mail }], mapping: { Email: 'email' } });
          expect([byMail.totals.created, byMail.results[0]?.leadId], label).toEqual([0, id]);
        } else if (entry === 'post') {
          const out = await call('social.importPostLeads', { senderProfileId: sender.id, postUrl: postWith(url, 'Again'), leadGroupId: list.id });
          expect([out.created, out.leadIds[0]], label).toEqual([0, id]);
        } else if (entry === 'update') {
          // Another lead may not become this person, by either key.
          const other = (await call('campaigns.leads.create', { leadGroupId: list.id, leads: [{ firstName: 'Someone', lastName: `Else${run}-${spellings.length}` }] })).leadIds[0] ?? '';
          for (const change of [{ socialUrl: url }, { email: mail.trim() }]) {
            const refusal = await call('campaigns.leads.update', { leadId: other, ...change }).then(
              () => null,
              (e: unknown) => (isDomainError(e) ? e : Promise.reject(e)),
            );
            expect([refusal?.code, refusal?.details.existingLeadId], `${label} ${JSON.stringify(change)}`).toEqual(['DUPLICATE_LEAD', id]);
          }
        } else {
          // The person's own lead, edited elsewhere to another spelling, arrives by replication.
          const current = await open(WS, (store) => store.get('leads', id ?? ''));
          if (!current) throw new Error(`lead ${id ?? ''} is gone`);
          clock.advance(1000);
          await replicated(WS, actor, { ...current, socialUrl: url, email: mail.trim(), updatedAt: clock.now().toISOString() });
        }
        // One lead holds each key, whatever wrote it.
        expect((await holders('profile', pKey)).map((l) => l.id), label).toEqual([id]);
        expect((await holders('email', eKey)).map((l) => l.id), label).toEqual([id]);
      }

      // Search finds the person first on the page, by every spelling of either.
      for (const s of spellings) {
        for (const query of [s.url, s.mail]) {
          const page = await open(WS, (store) => leadPage(store, { query }, 10));
          expect(page.docs[0]?.id, `search ${JSON.stringify(query)}`).toBe(id);
        }
      }
    }),
    { numRuns: opts.numRuns, ...(opts.seed !== undefined ? { seed: opts.seed } : {}), endOnFailure: true },
  );
  expect(run, 'every run of the property ran').toBe(opts.numRuns);
}
