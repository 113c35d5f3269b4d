/**
 * Identity look-ups asked ahead (issue 26): on PostgreSQL an import asks for the identity keys of
 * each slice of rows it has mapped (KeysAhead, Store.keyHolders, on an idle connection of the pool
 * when there is one) while it maps the next, kind after kind for the rows the kinds before found
 * nobody for, and findLeads takes its holders from those answers. It must find exactly the leads
 * it finds looking up as it goes, whatever was asked ahead: keys it does not need (an email another
 * row's lead holds), keys in other slices, or none (those it looks up itself). Checked on the same
 * stored leads: one person stored three times in other spellings (the oldest holds the keys),
 * duplicates by email, a lead merged into another, a lead with another's name and company, another
 * workspace's lead with the same URL and email, for arrivals drawn by fast-check and sliced at
 * random.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findLeads, keysOf, KeysAhead, LeadIndex, NameCompanyKeys } from '../../shared/intake/find.ts';
import type { Arrival, IdentityKeys } from '../../shared/intake/find.ts';
import type { IdentityKind } from '../../shared/intake/identity.ts';
import { MAX_CUSTOM_COLUMNS } from '../../shared/lead-columns.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import type { AnyWrite } from '../../shared/store.ts';
import { Tx } from '../../shared/tx.ts';
import { recordPgStatements } from '../support/pg-statements.ts';
import { openDatabase } from '../../sync-server/db.ts';
import { BACKENDS, freshPgDatabase, testDatabase } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const WS = 'e0000000-0000-4000-8000-000000000001';
const OTHER_WS = 'e0000000-0000-4000-8000-000000000002';
const GROUP = 'e0000000-0000-4000-8000-0000000000b1';

let n = 0;
const id = (): string => `e0000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const lead = (fields: Partial<Lead>, ws = WS): Lead => newLead({ id: id(), workspaceId: ws, now: new Date(T0 + n * 1000).toISOString() }, GROUP, fields);
const creates = (leads: readonly Lead[]): AnyWrite[] => leads.map((after) => ({ collection: 'leads', id: after.id, before: null, after }));

const jane = [
  lead({ firstName: 'Jane', lastName: 'Doe', company: 'Acme', socialUrl: 'https://de.linkedin.com/in/jane-doe?trk=x', email: 'Jane.Doe@Acme.com' }),
  lead({ firstName: 'jane', lastName: 'doe', company: 'ACME', socialUrl: 'http://linkedin.com/in/Jane-Doe/', email: ' jane.doe@acme.com ' }),
  lead({ firstName: 'Jane', lastName: 'Doe', company: 'Acme', socialUrl: 'https://www.linkedin.com/in/jane%2Ddoe', email: 'JANE.DOE@ACME.COM' }),
];
// Jane's name and company, another person (no shared URL or email).
const janeTwin = lead({ firstName: 'Jane', lastName: 'Doe', company: 'Acme', email: 'jd@elsewhere.test' });
const eve = [lead({ firstName: 'Eve', lastName: 'Mail', email: 'Eve.Mail@Example.COM' }), lead({ email: 'eve.mail@example.com', socialUrl: 'https://www.linkedin.com/in/eve-m' })];
const max = lead({ firstName: 'Max', lastName: 'Sur', company: 'Vive', socialUrl: 'https://www.linkedin.com/in/max', email: 'max@vive.test' });
// Merged into Max: its URL and email are Max's now.
const maxOld = Object.assign(lead({ socialUrl: 'https://fr.linkedin.com/in/max-old', email: 'max.old@vive.test' }), { mergedIntoId: max.id });
const zed = lead({ socialUrl: 'https://www.linkedin.com/in/zed', email: 'zed@x.test', firstName: 'Zed', company: 'X' });
const foreign = lead({ socialUrl: 'https://www.linkedin.com/in/zed', email: 'zed@x.test', firstName: 'Zed', company: 'X' }, OTHER_WS);

const URLS = ['https://linkedin.com/in/jane-doe', 'https://www.linkedin.com/in/eve-m/', 'https://ca.linkedin.com/in/MAX', 'https://www.linkedin.com/in/max-old?x=1', 'https://www.linkedin.com/in/zed', 'https://www.linkedin.com/in/nobody'];
const EMAILS = ['jane.doe@ACME.com', 'EVE.MAIL@example.com', 'max.old@vive.test', 'Max@Vive.test', 'zed@x.test', 'jd@elsewhere.test', 'nobody@x.test'];
const NAMES: [string, string][] = [['Jane Doe', 'Acme'], ['jane doe', 'ACME'], ['Eve Mail', ''], ['Max Sur', 'Vive'], ['Zed', 'X'], ['No Body', 'Nowhere']];
const IDS = [jane[1]?.id, maxOld.id, foreign.id, zed.id, 'e0000000-0000-4000-8000-0000000fffff'];

const maybe = <T>(values: readonly T[]) => fc.option(fc.constantFrom(...values), { nil: undefined });
const arrival = fc.record({ id: maybe(IDS), socialUrl: maybe(URLS), email: maybe(EMAILS), name: maybe(NAMES) }).map(({ id, socialUrl, email, name }): Arrival => ({
  ...(id ? { id } : {}),
  ...(socialUrl ? { socialUrl } : {}),
  ...(email ? { email } : {}),
  ...(name ? { fullName: name[0], company: name[1] } : {}),
}));

/** What findLeads left in the index, as the import reads it: each arrival's lead (by id, else profile
 * URL, else email) and its name-and-company lead, and every lead found. */
type Found = { person: (string | null)[]; possible: (string | null)[]; leads: string[] };

describe.each(BACKENDS)('identity look-ups asked ahead (%s)', (backend) => {
  const pg = freshPgDatabase(backend);

  beforeAll(async () => {
    await pg.db.withStore(WS, (store) => store.commit(creates([...jane, janeTwin, ...eve, max, maxOld, zed])));
    await pg.db.withStore(OTHER_WS, (store) => store.commit(creates([foreign])));
  });

  /** findLeads for `arrivals`; with `ahead`, the slices of their keys asked first (each slice's keys
   * where `asked` is true for it). */
  const find = (arrivals: readonly Arrival[], ahead: { cuts: number[]; asked: boolean[] } | null): Promise<Found> =>
    pg.db.withStore(WS, async (store) => {
      const tx = new Tx(store);
      const names = new NameCompanyKeys();
      const keys: IdentityKeys[] = arrivals.map((a) => keysOf(a, names));
      const index = new LeadIndex(names);
      let asking: KeysAhead | null = null;
      if (ahead) {
        asking = new KeysAhead(tx);
        let from = 0;
        for (const [i, to] of [...ahead.cuts, keys.length].entries()) {
          if (ahead.asked[i] !== false) void asking.ask(keys.slice(from, to));
          from = Math.max(from, to);
        }
      }
      await findLeads(tx, arrivals, keys, index, { nameAndCompany: true, ahead: asking });
      return {
        person: arrivals.map((a, i) => ((a.id ? index.byId.get(a.id) : undefined) ?? index.person(keys[i] as IdentityKeys))?.id ?? null),
        possible: keys.map((k) => index.nameCompany(k.nameCompany)?.id ?? null),
        leads: [...index.byId.keys()].sort(),
      };
    });

  it('finds the same leads as findLeads looking up as it goes, whatever was asked ahead', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arrival, { minLength: 1, maxLength: 12 }), fc.array(fc.nat({ max: 12 }), { maxLength: 3 }), fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }), async (arrivals, cuts, asked) => {
        const expected = await find(arrivals, null);
        expect(await find(arrivals, { cuts: [...cuts].sort((a, b) => a - b), asked })).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  it('finds the oldest of a person\'s leads, the survivor of a merged one, and not another workspace\'s', async () => {
    const arrivals: Arrival[] = [{ socialUrl: 'https://linkedin.com/in/jane-doe' }, { email: 'max.old@vive.test' }, { email: 'zed@x.test' }, { fullName: 'Jane Doe', company: 'Acme', email: 'new@x.test' }];
    const found = await find(arrivals, { cuts: [1, 3], asked: [true, true, true] });
    expect(found.person).toEqual([jane[0]?.id, max.id, zed.id, null]);
    expect(found.possible[3]).toBe(jane[0]?.id);
    expect(found.leads).not.toContain(foreign.id);
    expect(found).toEqual(await find(arrivals, null));
  });

  it('asks only the profile URLs of people found by them (a re-import), every kind for new people', async () => {
    const kinds = (arrivals: Arrival[]) =>
      pg.db.withStore(WS, async (store) => {
        const tx = new Tx(store);
        const asked: string[] = [];
        const counting = Object.assign(Object.create(tx) as Tx, { keyHolders: (kind: IdentityKind, keys: readonly string[]) => (asked.push(kind), tx.keyHolders(kind, keys)) });
        const names = new NameCompanyKeys();
        const ahead = new KeysAhead(counting);
        await ahead.ask(arrivals.map((a) => keysOf(a, names)));
        return asked;
      });
    const known = [{ socialUrl: 'https://linkedin.com/in/jane-doe', email: 'jane.doe@acme.com', fullName: 'Jane Doe', company: 'Acme' }, { socialUrl: 'https://www.linkedin.com/in/zed', email: 'zed@x.test', fullName: 'Zed', company: 'X' }];
    expect(await kinds(known)).toEqual(['profile']);
    expect(await kinds([...known, { socialUrl: 'https://www.linkedin.com/in/new', email: 'new@x.test', fullName: 'New One', company: 'X' }])).toEqual(['profile', 'email', 'nameCompany']);
    // Found by email: no name look-up.
    expect(await kinds([{ socialUrl: 'https://www.linkedin.com/in/new', email: 'Max@Vive.test', fullName: 'Max Sur', company: 'Vive' }])).toEqual(['profile', 'email']);
  });

  it(backend === 'postgres' ? 'is asked where reads overlap, on another connection than the transaction\'s when one is idle' : 'is not asked on PGlite, whose reads run in this thread', async () => {
    const overlaps = await pg.db.withStore(WS, async (store) => new Tx(store).asksAhead);
    if (backend !== 'postgres') {
      expect(overlaps).toBe(false);
      return;
    }
    expect(overlaps).toBe(true);
    const rec = recordPgStatements();
    try {
      await find([{ socialUrl: 'https://linkedin.com/in/jane-doe', email: 'x@y.test' }, { email: 'zed@x.test' }], { cuts: [1], asked: [true, true] });
    } finally {
      rec.stop();
    }
    const asked = rec.texts.flatMap((t, i) => (t.startsWith('SELECT documents.doc FROM unnest(') ? [rec.clients[i]] : []));
    const began = rec.clients[rec.texts.findIndex((t) => t.startsWith('BEGIN'))];
    expect(asked).toHaveLength(2);
    expect(began).toBeDefined();
    expect(asked.some((c) => c !== began)).toBe(true);
  });
});

describe.runIf(BACKENDS.includes('postgres'))('a read on an idle connection (PostgreSQL)', () => {
  it('never waits for a connection: none while a transaction holds the whole pool, one once it is free', async () => {
    const t = testDatabase('postgres');
    const sql = await openDatabase({ ...t.options, poolSize: 1 });
    try {
      const inside = await sql.transaction(async (tx) => {
        const side = sql.queryOnIdle?.<{ x: number }>('SELECT 1 AS x');
        await tx.query('SELECT 1');
        return side;
      });
      expect(inside).toBeNull();
      expect(await sql.queryOnIdle?.<{ x: number }>('SELECT 2 AS x')).toEqual([{ x: 2 }]);
    } finally {
      await sql.close();
      await t.cleanup();
    }
  });
});

describe.each(BACKENDS)('an import refused after it asked ahead (%s)', (backend) => {
  let s: TestServer;
  let groupId = '';

  beforeAll(async () => {
    s = await startTestServer(backend);
    const groups = await s.call<{ leadGroups: { id: string }[] }>(s.ours.ownerKey, 'leadGroups.getAll');
    groupId = groups.body.leadGroups[0]?.id ?? '';
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  it('answers the refusal, changes nothing, and sends no look-up after its transaction ended', async () => {
    // More custom columns than a list takes (MAX_CUSTOM_COLUMNS): refused after the rows are mapped
    // and their keys asked for, before any lead is written.
    const extra = Object.fromEntries(Array.from({ length: MAX_CUSTOM_COLUMNS + 1 }, (_, c) => [`Extra ${c}`, 'x']));
    const rows = Array.from({ length: 2_500 }, (_, i) => ({ 'First Name': `F${i}`, 'Last Name': 'Refused', Email: `refused${i}@x.test`, Company: 'Co', ...(i === 0 ? extra : {}) }));
    // The leads and lists as they were (an API key's use is recorded on its own document meanwhile).
    const listsAndLeads = async () => Object.entries(await s.snapshot(s.ours.workspaceId)).filter(([k]) => k.startsWith('leads/') || k.startsWith('leadGroups/'));
    const before = await listsAndLeads();
    const rec = recordPgStatements();
    let answer;
    try {
      answer = await s.call<{ error: { code: string; message: string } }>(s.ours.ownerKey, 'campaigns.leads.import', { leadGroupId: groupId, rows });
    } finally {
      rec.stop();
    }
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'INVALID_INPUT' });
    expect(answer.body.error.message).toContain(`at most ${MAX_CUSTOM_COLUMNS}`);
    expect(await listsAndLeads()).toEqual(before);
    if (backend === 'postgres') {
      const asked = rec.texts.flatMap((t, i) => (t.startsWith('SELECT documents.doc FROM unnest(') ? [i] : []));
      expect(asked.length).toBeGreaterThan(0);
      const rollback = rec.texts.indexOf('ROLLBACK');
      expect(rollback).toBeGreaterThan(-1);
      const tx = rec.clients[rollback];
      expect(asked.filter((i) => i > rollback && rec.clients[i] === tx)).toEqual([]);
      expect(Math.max(...asked)).toBeLessThan(rollback);
    }
  });
});
