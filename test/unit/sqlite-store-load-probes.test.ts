/**
 * A bulk load of local documents (an import) leaves the identity keys' indexes and the creation
 * order's out (store-layout.ts, AfterLoad 'probed' and 'local'), and answers the look-ups of a
 * person from in-memory maps meanwhile (load-probes.ts): every look-up by key, count and Duplicates
 * page during the load, after a reopen of the unfinished load and after its builds must be the
 * memory store's, for leads written before the load and during it, in any stored spelling; a load
 * that outgrows the maps' bound builds the key indexes at once; one larger than the bound keeps them.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { LocalDatabase } from '../../electron/backend/local-db.ts';
import { LOAD_TUNING } from '../../electron/backend/storage/sqlite/doc-table.ts';
import type { DocTable } from '../../electron/backend/storage/sqlite/doc-table.ts';
import { PROBE_TUNING, RowsByHash } from '../../electron/backend/storage/sqlite/load-probes.ts';
import { sqliteInstanceOf } from '../../electron/backend/storage/sqlite/storage.ts';
import { emailKey, IDENTITY_KINDS, KEY_FIELDS, nameCompanyKey, profileKey } from '../../shared/intake/identity.ts';
import type { IdentityKind } from '../../shared/intake/identity.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import type { AnyWrite, Cond, DuplicatePage, Store } from '../../shared/store.ts';

const WS = 'e0000000-0000-4000-8000-000000000001';
const GROUP = 'e0000000-0000-4000-8000-0000000000b1';
const actor = { workspaceId: WS, memberId: 'e0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };

/** Person `p` (their keys), written as lead `i` in spelling `s` (0: plain; others: case, spaces,
 * scheme, country subdomain, query, final slash). */
function personLead(i: number, p: number, s: number): Lead {
  const email = [`p${p}@probe.test`, ` P${p}@Probe.TEST`, `p${p}@PROBE.test  `][s % 3] as string;
  const url = [`https://www.linkedin.com/in/probe-${p}`, `http://de.linkedin.com/in/Probe-${p}/?trk=x`, `LinkedIn.com/in/PROBE-${p}#about`][s % 3] as string;
  return newLead({ id: `e0000000-0000-4000-8000-5${String(i).padStart(11, '0')}`, workspaceId: WS, now: new Date(Date.UTC(2026, 6, 1) + Math.floor(i / 500) * 60_000).toISOString() }, GROUP, {
    firstName: s % 2 ? `ANNE${p % 40}` : `Anne${p % 40}`,
    lastName: `Probe${p}`,
    company: `Co ${p % 7}`,
    // Some leads without an email or a profile URL (no key of that kind).
    email: p % 11 === 5 ? '' : email,
    socialUrl: p % 13 === 6 ? '' : url,
  });
}

const creates = (leads: readonly Lead[]): AnyWrite[] => leads.map((after) => ({ collection: 'leads', id: after.id, before: null, after }));

/** Leads before the load (40, people 0-39, two of them twice), then two bulk writes of 1,200: the
 * first repeats people 0-19 of before in other spellings, the second people of the first. */
const before = [...Array.from({ length: 40 }, (_, i) => personLead(i, i, i)), personLead(40, 3, 1), personLead(41, 8, 2)];
const first = Array.from({ length: 1200 }, (_, i) => personLead(1000 + i, i < 20 ? i : 1000 + i, i + 1));
const second = Array.from({ length: 1200 }, (_, i) => personLead(3000 + i, i < 30 ? 1000 + i * 7 : 3000 + i, i + 2));

const keyOf = (kind: IdentityKind, l: Lead): string => (kind === 'profile' ? profileKey(l.socialUrl) : kind === 'email' ? emailKey(l.email) : nameCompanyKey(l.fullName, l.company));

/** Look-ups by every key kind (one key; many keys of leads from before, of each bulk write, and
 * missing ones), counts of them, and every Duplicates page. */
async function expectSameLookups(a: Store, b: Store): Promise<void> {
  for (const kind of IDENTITY_KINDS) {
    const field = KEY_FIELDS[kind];
    const keys = [...before.slice(0, 12), ...first.slice(0, 25), ...first.slice(600, 610), ...second.slice(0, 35), ...second.slice(1100, 1110)].map((l) => keyOf(kind, l)).filter((k) => k !== '');
    const conds: Cond[] = [
      { op: 'eq', field, value: keyOf(kind, before[3] as Lead) },
      { op: 'eq', field, value: keyOf(kind, second[1150] as Lead) },
      { op: 'eq', field, value: 'nobody' },
      { op: 'in', field, values: [...keys, 'nobody@nowhere.test'] },
      { op: 'and', conds: [{ op: 'in', field, values: keys }, { op: 'eq', field: 'company', value: 'Co 3' }] },
    ];
    for (const where of conds) {
      expect(await a.query('leads', { where }), JSON.stringify(where).slice(0, 200)).toEqual(await b.query('leads', { where }));
      expect(await a.count('leads', where), JSON.stringify(where).slice(0, 200)).toBe(await b.count('leads', where));
    }
    const pages = async (s: Store): Promise<DuplicatePage[]> => {
      const out: DuplicatePage[] = [];
      let cursor: string | null = null;
      do {
        const page = await s.duplicateGroups(kind, { limit: 7, cursor });
        out.push(page);
        cursor = page.nextCursor;
      } while (cursor);
      return out;
    };
    const dups = await pages(a);
    expect(dups, kind).toEqual(await pages(b));
    expect(dups.flatMap((p) => p.groups).length, kind).toBeGreaterThan(10);
  }
  expect(await a.count('leads')).toBe(await b.count('leads'));
}

const indexesInFile = (table: DocTable): string[] => table.file.db.prepare<[string], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?").pluck().all(table.table);
const leadsTable = (db: LocalDatabase): DocTable => {
  const t = sqliteInstanceOf<Lead>(db.rx.collections.leads?.storageInstance)?.internalsForTests.table;
  if (!t) throw new Error('not on the SQLite storage');
  return t;
};
const namesOf = (table: DocTable, afterLoad: 'probed' | 'local'): string[] => table.layout.indexes.filter((i) => i.afterLoad === afterLoad).map((i) => i.name);

describe('look-ups by identity key during a bulk load of local documents', () => {
  const dirs: string[] = [];
  const tuning = { load: { ...LOAD_TUNING }, probe: { ...PROBE_TUNING } };
  afterEach(() => {
    Object.assign(LOAD_TUNING, tuning.load);
    Object.assign(PROBE_TUNING, tuning.probe);
    vi.restoreAllMocks();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const open = (dir: string): Promise<LocalDatabase> => openLocalDatabase({ dir, workspaceId: WS, actor });
  /** A new folder, removed after the test. */
  const folder = (name: string): string => {
    const dir = mkdtempSync(join(tmpdir(), `load-probes-${name}`));
    dirs.push(dir);
    return dir;
  };

  it('find leads of the same load and from before it, by any stored spelling, with counts and Duplicates the memory store gives, also after a reopen', async () => {
    // No build starts by itself during the test.
    LOAD_TUNING.quietMs = 600_000;
    const dir = folder('');
    const ref = new MemoryDatabase().forWorkspace(WS);
    let db = await open(dir);
    try {
      const all = indexesInFile(leadsTable(db));
      const left = [...namesOf(leadsTable(db), 'probed'), ...namesOf(leadsTable(db), 'local')];
      expect(left).toHaveLength(4);
      expect(all).toEqual(expect.arrayContaining(left));
      const table = leadsTable(db);
      const probes = vi.spyOn(table, 'probeRows');
      for (const part of [before, first]) {
        await db.store.commit(creates(part));
        await ref.commit(creates(part));
      }
      expect(table.isLoading).toBe(true);
      // The key indexes and the creation order's are not in the file during the load...
      const during = indexesInFile(table);
      for (const name of left) expect(during).not.toContain(name);
      // ... and the look-ups are answered from the probe maps (filled from the table now)...
      await expectSameLookups(db.store, ref);
      expect(probes.mock.results.filter((r) => r.type === 'return' && Array.isArray(r.value)).length).toBeGreaterThan(0);
      // ... which every later write adds to.
      await db.store.commit(creates(second));
      await ref.commit(creates(second));
      await expectSameLookups(db.store, ref);
      // The leads table's default order meanwhile.
      const page = { orderBy: [{ field: 'createdAt', dir: 'desc' }, { field: 'id', dir: 'asc' }], limit: 50 } as const;
      expect(await db.store.query('leads', page)).toEqual(await ref.query('leads', page));

      // A quit mid-load: the maps are filled again from the file before the first look-up.
      await db.close();
      db = await open(dir);
      const reopened = leadsTable(db);
      expect(reopened.isLoading).toBe(true);
      for (const name of left) expect(indexesInFile(reopened)).not.toContain(name);
      const again = vi.spyOn(reopened, 'probeRows');
      await expectSameLookups(db.store, ref);
      expect(again.mock.results.filter((r) => r.type === 'return' && Array.isArray(r.value)).length).toBeGreaterThan(0);

      // Edits during the load: a key changed, a lead deleted; stale map entries answer nothing.
      const moved = (await ref.get('leads', (second[5] as Lead).id)) as Lead;
      const gone = (await ref.get('leads', (first[0] as Lead).id)) as Lead;
      const edits: AnyWrite[] = [
        { collection: 'leads', id: moved.id, before: moved, after: { ...moved, email: 'Moved@Probe.Test', socialUrl: (before[9] as Lead).socialUrl.toUpperCase() } },
        { collection: 'leads', id: gone.id, before: gone, after: null },
      ];
      await db.store.commit(edits);
      await ref.commit(edits);
      await expectSameLookups(db.store, ref);
      for (const kind of ['email', 'profile'] as const) {
        const movedTo = kind === 'email' ? 'moved@probe.test' : profileKey((before[9] as Lead).socialUrl);
        const wheres: Cond[] = [
          { op: 'in', field: KEY_FIELDS[kind], values: [keyOf(kind, second[5] as Lead), keyOf(kind, first[0] as Lead), movedTo] },
          { op: 'eq', field: KEY_FIELDS[kind], value: movedTo },
          { op: 'eq', field: KEY_FIELDS[kind], value: keyOf(kind, second[5] as Lead) },
        ];
        for (const where of wheres) expect(await db.store.query('leads', { where }), JSON.stringify(where)).toEqual(await ref.query('leads', { where }));
      }

      await reopened.finishLoading();
      expect(indexesInFile(reopened).sort()).toEqual([...all].sort());
      await expectSameLookups(db.store, ref);
    } finally {
      await db.close();
    }
  }, 120_000);

  it('builds the key indexes at once when the load outgrows the maps, and keeps them up in a load larger than that', async () => {
    LOAD_TUNING.quietMs = 600_000;
    PROBE_TUNING.rows = 2_000;
    const dir = folder('bound-');
    const ref = new MemoryDatabase().forWorkspace(WS);
    let db = await open(dir);
    try {
      const table = leadsTable(db);
      const probed = namesOf(table, 'probed');
      for (const part of [before, first]) {
        await db.store.commit(creates(part));
        await ref.commit(creates(part));
      }
      expect(table.isLoading).toBe(true);
      for (const name of probed) expect(indexesInFile(table)).not.toContain(name);
      await expectSameLookups(db.store, ref);
      // 1,242 rows, then 2,442: past the bound, the key indexes are built without waiting for the
      // quiet window, while the others stay out until the load is over.
      await db.store.commit(creates(second));
      await ref.commit(creates(second));
      await expect.poll(() => probed.every((name) => table.indexReady(name)), { timeout: 20_000 }).toBe(true);
      expect(table.isLoading).toBe(true);
      const inFile = indexesInFile(table);
      for (const name of probed) expect(inFile).toContain(name);
      for (const name of namesOf(table, 'local')) expect(inFile).not.toContain(name);
      await expectSameLookups(db.store, ref);
      await db.close();

      // A load that alone brings more than the bound keeps the key indexes up.
      PROBE_TUNING.rows = 1_000;
      const dir2 = folder('large-');
      db = await open(dir2);
      const ref2 = new MemoryDatabase().forWorkspace(WS);
      await db.store.commit(creates([...before, ...first]));
      await ref2.commit(creates([...before, ...first]));
      const large = leadsTable(db);
      expect(large.isLoading).toBe(true);
      for (const name of probed.map((n) => n.replace(table.table, large.table))) expect(indexesInFile(large)).toContain(name);
      for (const name of namesOf(large, 'local')) expect(indexesInFile(large)).not.toContain(name);
    } finally {
      await db.close();
    }
  }, 120_000);
});

describe('a file whose layout record has the previous afterLoad kinds', () => {
  it('opens without a layout upgrade or a rewrite of its rows; only its record is written again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'load-probes-record-'));
    try {
      let db = await openLocalDatabase({ dir, workspaceId: WS, actor });
      await db.store.commit(creates(before));
      const table = leadsTable(db);
      const name = table.name;
      const probed = new Set(namesOf(table, 'probed'));
      const local = new Set(namesOf(table, 'local'));
      await db.close();
      // As the previous version recorded it: the key indexes kept by local loads, the creation order by every load.
      const file = readdirSync(dir).find((f) => f.endsWith('.sqlite'));
      const raw = new Database(join(dir, file ?? ''));
      const record = raw.prepare<[string], string>('SELECT layout FROM instances WHERE name = ?').pluck().get(name) ?? '';
      const parsed = JSON.parse(record) as { i: [string, string | null][] };
      const previous = JSON.stringify({ ...parsed, i: parsed.i.map(([n, a]) => [n, probed.has(n) ? 'pull' : local.has(n) ? null : a]) });
      expect(previous).not.toBe(record);
      raw.prepare('UPDATE instances SET layout = ? WHERE name = ?').run(previous, name);
      raw.close();

      const progress = vi.fn();
      db = await openLocalDatabase({ dir, workspaceId: WS, actor, onMigration: progress });
      try {
        expect(progress).not.toHaveBeenCalled();
        const reopened = leadsTable(db);
        // A rebuild would have updated every row on this connection.
        expect(Number(reopened.file.db.prepare('SELECT total_changes()').pluck().get())).toBeLessThan(before.length);
        expect(reopened.file.db.prepare<[string], string>('SELECT layout FROM instances WHERE name = ?').pluck().get(name)).toBe(record);
        expect((await db.store.query('leads', { where: { op: 'eq', field: KEY_FIELDS.email, value: 'p3@probe.test' } })).docs).toHaveLength(2);
      } finally {
        await db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('RowsByHash', () => {
  it('gives every rowid filed under a hash, once, across growth and collisions', () => {
    const m = new RowsByHash(4);
    const filed = new Map<number, Set<number>>();
    for (let i = 1; i <= 5000; i++) {
      // Few distinct hashes (many rows each), some negative, and the same pair twice.
      const h = ((i * 2654435761) % 701) - 350;
      m.add(h, i);
      m.add(h, i);
      if (!filed.has(h)) filed.set(h, new Set());
      filed.get(h)?.add(i);
    }
    expect(m.size).toBe(5000);
    for (const [h, rows] of filed) {
      const got = new Set<number>();
      m.find(h, got);
      expect([...got].sort((a, b) => a - b)).toEqual([...rows].sort((a, b) => a - b));
    }
    const none = new Set<number>();
    m.find(9999, none);
    expect(none.size).toBe(0);
  });
});
