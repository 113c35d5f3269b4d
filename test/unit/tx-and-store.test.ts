import { describe, expect, it } from 'vitest';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { Tx } from '../../shared/tx.ts';
import { newLead } from '../../shared/model/factories.ts';
import { DomainError } from '../../shared/errors.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { Store } from '../../shared/store.ts';
import { makeHarness } from '../support/harness.ts';

const ws = 'a0000000-0000-4000-8000-000000000001';
const other = 'a0000000-0000-4000-8000-000000000002';
const now = '2026-11-16T10:00:00.000Z';
const lead = (id: string, workspaceId = ws, fields = {}) => newLead({ id, workspaceId, now }, 'b0000000-0000-4000-8000-000000000001', fields);

describe('MemoryStore', () => {
  it('scopes reads to its workspace: a foreign id is simply absent', async () => {
    const db = new MemoryDatabase();
    await db.forWorkspace(other).commit([{ collection: 'leads', id: 'l-x', before: null, after: lead('l-x', other) }]);
    const store = db.forWorkspace(ws);
    expect(await store.get('leads', 'l-x')).toBeNull();
    expect((await store.query('leads')).docs).toEqual([]);
    expect(await store.count('leads')).toBe(0);
  });

  it('commits all writes or none, refusing a stale before with CONFLICT', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws);
    const a = lead('l-a');
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    const b = lead('l-b');
    const staleEdit = { ...a, firstName: 'Stale' };
    const err = await store
      .commit([
        { collection: 'leads', id: b.id, before: null, after: b },
        { collection: 'leads', id: a.id, before: { ...a, firstName: 'Other' }, after: staleEdit },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('CONFLICT');
    expect(await store.get('leads', 'l-b')).toBeNull();
    expect((await store.get('leads', 'l-a'))?.firstName).toBe('');
  });

  it('keeps soft-deleted documents out of reads', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws);
    const a = lead('l-a');
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    await store.commit([{ collection: 'leads', id: a.id, before: a, after: null }]);
    expect(await store.get('leads', a.id)).toBeNull();
    expect(await store.count('leads')).toBe(0);
  });
});

describe('Tx', () => {
  it('lets reads see staged writes and reports each changed document once, based on what was first read', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws);
    const a = lead('l-a', ws, { firstName: 'Ann' });
    const b = lead('l-b', ws, { firstName: 'Bea' });
    await store.commit([
      { collection: 'leads', id: a.id, before: null, after: a },
      { collection: 'leads', id: b.id, before: null, after: b },
    ]);
    const tx = new Tx(store);
    const readA = await tx.get('leads', a.id);
    expect(readA?.firstName).toBe('Ann');
    await tx.put('leads', { ...a, firstName: 'Anna' });
    await tx.put('leads', { ...a, firstName: 'Annie' });
    await tx.put('leads', { ...b }); // unchanged: not a write
    await tx.remove('leads', b.id);
    await tx.put('leads', lead('l-c', ws, { firstName: 'Cy' }));
    expect((await tx.get('leads', a.id))?.firstName).toBe('Annie');
    expect(await tx.get('leads', b.id)).toBeNull();
    const page = await tx.query('leads', { orderBy: [{ field: 'firstName', dir: 'asc' }] });
    expect(page.docs.map((d) => d.firstName)).toEqual(['Annie', 'Cy']);
    expect(await tx.count('leads', { op: 'eq', field: 'firstName', value: 'Cy' })).toBe(1);

    const writes = tx.writes();
    expect(writes.map((w) => [w.id, w.before === null, w.after === null])).toEqual([
      ['l-a', false, false],
      ['l-b', false, true],
      ['l-c', true, false],
    ]);
    expect((writes[0]?.before as { firstName: string }).firstName).toBe('Ann');
    expect(await store.get('leads', 'l-c')).toBeNull();
  });
});

describe('Tx.create', () => {
  it('stages a creation without reading the store, and the store refuses it when the id is taken', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws);
    const taken = lead('l-taken');
    await store.commit([{ collection: 'leads', id: taken.id, before: null, after: taken }]);
    const asked: string[] = [];
    const counting: Store = {
      workspaceId: ws,
      get: (c, id) => (asked.push(id), store.get(c, id)),
      getMany: (c, ids) => (asked.push(...ids), store.getMany(c, ids)),
      query: (c, q) => store.query(c, q),
      count: (c, where) => store.count(c, where),
      duplicateGroups: (kind, opts) => store.duplicateGroups(kind, opts),
      commit: (writes) => store.commit(writes),
    };
    const tx = new Tx(counting, { deferBase: true });
    await tx.create('leads', lead('l-new', ws, { firstName: 'New' }));
    await tx.create('leads', { ...taken, firstName: 'Same id' });
    // Reads get copies: changing one changes nothing staged.
    const read = await tx.get('leads', 'l-new');
    if (read) read.firstName = 'Changed by a reader';
    await tx.settle();
    expect(asked).toEqual([]);
    const writes = tx.writes();
    expect(writes.map((w) => [w.id, w.before, (w.after as { firstName: string }).firstName])).toEqual([
      ['l-new', null, 'New'],
      ['l-taken', null, 'Same id'],
    ]);
    const err = await store.commit(writes).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe('CONFLICT');
    expect(await store.get('leads', 'l-new')).toBeNull();
  });

  it('keeps the state of a document it has read: a write based on it, not a creation', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws);
    const a = lead('l-a', ws, { firstName: 'Ann' });
    await store.commit([{ collection: 'leads', id: a.id, before: null, after: a }]);
    const tx = new Tx(store, { deferBase: true });
    await tx.get('leads', a.id);
    await tx.create('leads', { ...a, firstName: 'Anna' });
    await tx.settle();
    const [w] = tx.writes();
    expect((w?.before as { firstName: string } | null)?.firstName).toBe('Ann');
    await store.commit(tx.writes());
    expect((await store.get('leads', a.id))?.firstName).toBe('Anna');
  });
});

describe('Tx.writeAhead', () => {
  it('hands over the sealed writes at the start of the staged order, in that order, and never stages them again', async () => {
    const store = new MemoryDatabase().forWorkspace(ws);
    const tx = new Tx(store, { deferBase: true });
    const handed: string[][] = [];
    for (const id of ['l-1', 'l-2', 'l-3']) await tx.create('leads', lead(id));
    tx.seal('leads', 'l-1');
    tx.seal('leads', 'l-3');
    // Without a sink (a dry run, a store that commits at the end) nothing is handed over.
    await tx.writeAhead();
    expect(tx.handedOver()).toEqual([]);
    tx.aheadTo(async (writes) => void handed.push(writes.map((w) => w.id)));
    await tx.writeAhead();
    // l-2 is not sealed: l-3 waits behind it, so the commit's writes stay in staged order.
    expect(handed).toEqual([['l-1']]);
    tx.seal('leads', 'l-2');
    await tx.writeAhead();
    expect(handed).toEqual([['l-1'], ['l-2', 'l-3']]);
    await tx.create('leads', lead('l-4'));
    await tx.settle();
    expect(tx.handedOver().map((w) => w.id)).toEqual(['l-1', 'l-2', 'l-3']);
    expect(tx.writes().map((w) => w.id)).toEqual(['l-4']);
    await expect(tx.put('leads', { ...lead('l-1'), firstName: 'Again' })).rejects.toThrow(/sealed/);
  });
});

describe('Tx over many staged writes', () => {
  it('answers equality queries exactly like a scan once it indexes staged documents', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws);
    const stored = Array.from({ length: 50 }, (_, i) => lead(`s-${i}`, ws, { company: `C${i % 5}` }));
    await store.commit(stored.map((d) => ({ collection: 'leads' as const, id: d.id, before: null, after: d })));
    const tx = new Tx(store);
    // Far more staged writes than the index threshold, touching stored documents too.
    for (let i = 0; i < 300; i++) await tx.put('leads', lead(`n-${i}`, ws, { company: `C${i % 5}` }));
    const byCompany = (c: string) => tx.query('leads', { where: { op: 'and', conds: [{ op: 'eq', field: 'company', value: c }, { op: 'neq', field: 'firstName', value: 'x' }] } });
    expect((await byCompany('C1')).docs).toHaveLength(10 + 60);
    // Moving documents between values after the index exists, and deleting some.
    await tx.put('leads', { ...(stored[1] as typeof stored[number]), company: 'C2' });
    await tx.put('leads', { ...lead('n-1', ws), company: 'C2' });
    await tx.remove('leads', 'n-6');
    await tx.remove('leads', 's-11');
    const c1 = (await byCompany('C1')).docs.map((d) => d.id);
    expect(c1).toHaveLength(70 - 4);
    expect(c1).not.toContain('s-1');
    expect(c1).not.toContain('n-1');
    expect((await byCompany('C2')).docs.map((d) => d.id)).toEqual(expect.arrayContaining(['s-1', 'n-1']));
    expect(await tx.count('leads', { op: 'eq', field: 'company', value: 'C2' })).toBe(10 + 60 + 2);
    expect(await tx.count('leads')).toBe(50 + 300 - 2);
  });
});

describe('execute', () => {
  it('refuses unknown operations and malformed input without touching the store', async () => {
    const h = await makeHarness();
    const env = { actor: h.owner, store: h.store, clock: h.clock, ids: h.ids, random: h.random, secrets: { newApiKey: () => 'live_x', hash: (s: string) => s, randomBytes: (n: number) => new Uint8Array(n) } };
    await h.expectRefused(execute('nope.nothing', {}, env), 'UNKNOWN_OPERATION');
    await h.expectRefused(execute('toString', {}, env), 'UNKNOWN_OPERATION');
    const err = await h.expectRefused(execute('tags.create', { name: 42 }, env), 'INVALID_INPUT');
    expect(err.message).toContain('name');
    await h.expectRefused(execute('tags.create', 'not an object', env), 'INVALID_INPUT');
  });
});
