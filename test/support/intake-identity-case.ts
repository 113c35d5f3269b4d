/** One check run on every store (memory, PostgreSQL/PGlite): the spellings of one person's profile
 * URL (LinkedIn country subdomain, http, final slash, query string, percent-encoding, case, www.)
 * are one lead through every way a person enters: campaigns.leads.create, campaigns.leads.import,
 * campaigns.leads.update's duplicate check and social.importPostLeads, whichever of them (or an
 * older entry that stored the URL as given) wrote the lead first. */
import { expect } from 'vitest';
import type { Actor } from '../../shared/context.ts';
import type { Channel, PostReadResult, SocialPostItem } from '../../shared/engine/channel.ts';
import { ChannelFailure, channelHostOf } from '../../shared/engine/channel.ts';
import { isDomainError } from '../../shared/errors.ts';
import { profileKey } from '../../shared/intake/identity.ts';
import { newLead, newLeadGroup, newSender } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { OpInput, OpName, OpOutput } from '../../shared/ops/index.ts';
import type { AnyWrite, Store } from '../../shared/store.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { FakeClock, seededRandom, sequentialIds } from './deterministic.ts';
import { testSecrets } from './harness.ts';

/** Runs `fn` on the workspace's Store (one unit of work: one transaction on PostgreSQL). */
export type OpenStore = <T>(workspaceId: string, fn: (store: Store) => Promise<T>) => Promise<T>;

/** A post-reading channel whose every post has the commenters set in `commenters`. */
export class PostChannel implements Channel {
  commenters: SocialPostItem[] = [];

  async send(): Promise<never> {
    throw new ChannelFailure('unsupported', 'This channel only reads posts.');
  }
  async poll(_s: unknown, cursor: string | null) {
    return { events: [], cursor: cursor ?? '0' };
  }
  async readPost(_s: unknown, _url: string, part: 'comments' | 'reactions'): Promise<PostReadResult> {
    const items = part === 'comments' ? this.commenters : [];
    return { items, total: items.length, searchesUsed: part === 'comments' ? 1 : 0, stoppedEarly: false };
  }
  canSendMessage(): boolean {
    return true;
  }
}

/** Each person as the entry that first wrote them spelled the URL, and the other spellings. */
const PEOPLE = [
  {
    name: 'Jane Doe', firstBy: 'create', first: 'https://de.linkedin.com/in/jane-doe?trk=public_profile',
    spellings: ['https://de.linkedin.com/in/jane-doe', 'http://www.linkedin.com/in/jane-doe', 'https://www.linkedin.com/in/jane-doe/', 'https://www.linkedin.com/in/jane-doe?trk=people-guest', 'https://www.linkedin.com/in/jane%2Ddoe', 'https://www.LinkedIn.com/in/Jane-Doe', 'linkedin.com/in/jane-doe', 'HTTP://LINKEDIN.COM/IN/JANE-DOE/'],
  },
  {
    name: 'Jérôme Roux', firstBy: 'import', first: 'https://www.linkedin.com/in/j%C3%A9r%C3%B4me-roux/',
    spellings: ['https://fr.linkedin.com/in/jérôme-roux', 'http://linkedin.com/in/j%c3%a9r%c3%b4me-roux', 'https://www.linkedin.com/in/jérôme-roux/', 'https://www.linkedin.com/in/j%C3%A9r%C3%B4me-roux?originalSubdomain=fr', 'https://www.linkedin.com/in/Jérôme-Roux', 'www.linkedin.com/in/JÉRÔME-ROUX'],
  },
  {
    name: 'Ana Lima', firstBy: 'post', first: 'http://linkedin.com/in/ana-lima/',
    spellings: ['https://br.linkedin.com/in/ana-lima', 'https://www.linkedin.com/in/ana-lima', 'https://linkedin.com/in/ana-lima/', 'https://www.linkedin.com/in/ana-lima/?utm_source=share', 'https://www.linkedin.com/in/ana%2Dlima', 'https://www.linkedin.com/in/Ana-Lima'],
  },
  {
    name: 'Max Muster', firstBy: 'update', first: 'https://www.linkedin.com/in/Max-Muster/?utm=x',
    spellings: ['https://at.linkedin.com/in/max-muster', 'http://www.linkedin.com/in/max-muster', 'https://www.linkedin.com/in/max-muster/', 'https://www.linkedin.com/in/max-muster?trk=x', 'linkedin.com/in/MAX-MUSTER', 'https://www.linkedin.com/in/max%2Dmuster'],
  },
  {
    // Written by an older entry that stored URLs as given.
    name: 'Otto Timer', firstBy: 'stored', first: 'http://linkedin.com/in/old-timer/',
    spellings: ['https://de.linkedin.com/in/old-timer', 'https://www.linkedin.com/in/old-timer', 'https://www.linkedin.com/in/old-timer/', 'https://www.linkedin.com/in/old-timer?trk=x', 'https://www.linkedin.com/in/old%2Dtimer', 'https://www.linkedin.com/in/Old-Timer'],
  },
] as const;

/** A workspace for the identity tests: its owner, a second lead list, a sender reading posts from
 * `channel` (`postWith` sets a post's one commenter and names a new post), and `call` running an
 * operation in one unit of work of `open`. `seed` writes more documents with the workspace. */
export async function intakeWorld(open: OpenStore, opts: { name: string; email: string; ids: number; seed?: (stamp: () => { id: string; workspaceId: string; now: string }, leadGroupId: string) => AnyWrite[] }) {
  const ids = sequentialIds(opts.ids);
  const clock = new FakeClock();
  const creation = workspaceCreation(ids, clock.now().toISOString(), { name: opts.name, owner: { name: 'Olive Owner', email: opts.email }, subscriptionStatus: 'active' });
  const WS = creation.workspaceId;
  const actor: Actor = { workspaceId: WS, memberId: creation.ownerId, role: 'owner' };
  const channel = new PostChannel();
  const now = clock.now().toISOString();
  const stamp = () => ({ id: ids.uuid(), workspaceId: WS, now });
  const sender = newSender(stamp(), { name: 'Poster', ownerMemberId: creation.ownerId, channel: 'http' });
  const list = newLeadGroup(stamp(), 'Again', () => ids.uuid());
  const more = opts.seed?.(stamp, creation.leadGroupId) ?? [];
  await open(WS, (store) =>
    store.commit([...creation.writes, { collection: 'senders', id: sender.id, before: null, after: sender }, { collection: 'leadGroups', id: list.id, before: null, after: list }, ...more]),
  );
  const env = (store: Store) => ({ actor, store, clock, ids, random: seededRandom(3), secrets: testSecrets, channels: channelHostOf({ http: channel }) });
  const call = <N extends OpName>(name: N, input: OpInput<N>): Promise<OpOutput<N>> => open(WS, (store) => execute(name, input, env(store)));
  let posts = 0;
  const postWith = (profileUrl: string, author: string) => {
    channel.commenters = [{ author, text: 'Great post', date: now, authorDetails: { headline: 'Founder at Acme', profileUrl } }];
    return `https://social.example/posts/${++posts}`;
  };
  return { WS, actor, clock, ids, creation, sender, list, call, postWith };
}

export async function expectOnePersonThroughEveryEntry(open: OpenStore): Promise<void> {
  const seeded: Lead[] = [];
  const { WS, creation, sender, list, call, postWith: readPostWith } = await intakeWorld(open, {
    name: 'Acme',
    email: 'olive@acme.test',
    ids: 70,
    seed: (stamp, leadGroupId) => {
      seeded.push(
        newLead(stamp(), leadGroupId, { firstName: 'By', lastName: 'Stander', socialUrl: 'https://www.linkedin.com/in/by-stander' }),
        newLead(stamp(), leadGroupId, { firstName: 'Otto', lastName: 'Timer', socialUrl: 'http://linkedin.com/in/old-timer/' }),
      );
      return seeded.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l }));
    },
  });
  const [bystander, legacy] = seeded;
  if (!bystander || !legacy) throw new Error('the seeded leads are missing');
  const allLeads = (): Promise<Lead[]> => open(WS, async (store) => (await store.query('leads')).docs);

  // Each person enters first through one entry, with one spelling.
  const leadOf = new Map<string, string>();
  for (const p of PEOPLE) {
    const [firstName = '', lastName = ''] = p.name.split(' ');
    let id: string | undefined;
    if (p.firstBy === 'create') {
      id = (await call('campaigns.leads.create', { leadGroupId: creation.leadGroupId, leads: [{ firstName, lastName, socialUrl: p.first }] })).leadIds[0] ?? undefined;
    } else if (p.firstBy === 'import') {
      const out = await call('campaigns.leads.import', { leadGroupId: creation.leadGroupId, rows: [{ Name: p.name, 'Profile URL': p.first }], mapping: { Name: 'fullName', 'Profile URL': 'socialUrl' } });
      expect(out.results[0]?.code).toBe('CREATED');
      id = out.results[0]?.leadId;
    } else if (p.firstBy === 'post') {
      const out = await call('social.importPostLeads', { senderProfileId: sender.id, postUrl: readPostWith(p.first, p.name), leadGroupId: creation.leadGroupId });
      expect(out.created).toBe(1);
      id = out.leadIds[0];
    } else if (p.firstBy === 'update') {
      id = (await call('campaigns.leads.create', { leadGroupId: creation.leadGroupId, leads: [{ firstName, lastName }] })).leadIds[0] ?? undefined;
      await call('campaigns.leads.update', { leadId: id ?? '', socialUrl: p.first });
    } else {
      id = legacy.id;
    }
    expect(id, p.name).toBeDefined();
    leadOf.set(p.name, id ?? '');
  }
  const stored = await allLeads();
  // Every entry stores one spelling: https, www. for LinkedIn, no query string or final slash.
  expect(stored.find((l) => l.id === leadOf.get('Jane Doe'))?.socialUrl).toBe('https://www.linkedin.com/in/jane-doe');
  expect(stored.find((l) => l.id === leadOf.get('Jérôme Roux'))?.socialUrl).toBe('https://www.linkedin.com/in/j%C3%A9r%C3%B4me-roux');
  expect(stored.find((l) => l.id === leadOf.get('Ana Lima'))?.socialUrl).toBe('https://www.linkedin.com/in/ana-lima');
  expect(stored.find((l) => l.id === leadOf.get('Max Muster'))?.socialUrl).toBe('https://www.linkedin.com/in/Max-Muster');

  // Then every other spelling, through every entry, is that lead.
  for (const p of PEOPLE) {
    const id = leadOf.get(p.name);
    for (const url of [p.first, ...p.spellings]) {
      const what = `${p.name} as ${url}`;
      const created = await call('campaigns.leads.create', { leadGroupId: list.id, leads: [{ firstName: 'Again', socialUrl: url }] });
      expect([created.created, created.duplicates, created.leadIds[0]], `create: ${what}`).toEqual([0, 1, id]);

      const imported = await call('campaigns.leads.import', { leadGroupId: list.id, rows: [{ 'Profile URL': url }], mapping: { 'Profile URL': 'socialUrl' } });
      expect([imported.totals.created, imported.results[0]?.leadId, imported.results[0]?.matchedBy], `import: ${what}`).toEqual([0, id, 'profileUrl']);

      const found = await call('social.getPostLeads', { senderProfileId: sender.id, postUrl: readPostWith(url, p.name) });
      expect(found.comments[0]?.existingLeadId, `post leads: ${what}`).toBe(id);
      // Picked by another spelling than the post shows: the same person.
      const posted = await call('social.importPostLeads', { senderProfileId: sender.id, postUrl: readPostWith(url, p.name), leadGroupId: list.id, profileUrls: [p.first] });
      expect([posted.created, posted.duplicates, posted.leadIds[0], posted.notFound], `post import: ${what}`).toEqual([0, 1, id, []]);

      const refusal = await call('campaigns.leads.update', { leadId: bystander.id, socialUrl: url }).then(
        () => null,
        (e: unknown) => (isDomainError(e) ? e : Promise.reject(e)),
      );
      expect([refusal?.code, refusal?.details], `update: ${what}`).toEqual(['DUPLICATE_LEAD', expect.objectContaining({ field: 'socialUrl', existingLeadId: id })]);
    }
  }

  const after = await allLeads();
  expect(after.length, 'no lead was added by a second spelling').toBe(stored.length);
  const byKey = new Map<string, number>();
  for (const l of after) byKey.set(profileKey(l.socialUrl), (byKey.get(profileKey(l.socialUrl)) ?? 0) + 1);
  expect([...byKey.values()].every((n) => n === 1)).toBe(true);
  // Every person ended up on the list the later entries named; the bystander kept its URL.
  for (const id of leadOf.values()) expect(after.find((l) => l.id === id)?.groupIds).toContain(list.id);
  expect(after.find((l) => l.id === bystander.id)?.socialUrl).toBe('https://www.linkedin.com/in/by-stander');
}
