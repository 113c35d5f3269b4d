import { describe, expect, it } from 'vitest';
import { sameJson } from '../../shared/json-equal.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead } from '../../shared/model/factories.ts';

describe('sameJson, the one JSON equality of every store', () => {
  it('ignores key order and undefined keys, and nothing else', () => {
    expect(sameJson({ a: 1, b: { c: [1, { d: 'x' }] } }, { b: { c: [1, { d: 'x' }] }, a: 1 })).toBe(true);
    expect(sameJson({ a: 1, gone: undefined }, { a: 1 })).toBe(true);
    expect(sameJson(null, null)).toBe(true);
    expect(sameJson({ a: 1 }, { a: '1' })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson({ a: null }, {})).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson({}, null)).toBe(false);
    // An own key is not found on the other side's prototype.
    expect(sameJson({ constructor: 1 }, { other: 1 })).toBe(false);
  });

  it("lets the memory store accept a write based on the stored document with its keys in another order (jsonb's order)", async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace('ws-1');
    const lead = newLead({ id: 'lead-1', workspaceId: 'ws-1', now: '2026-01-01T00:00:00.000Z' }, 'group-1', { firstName: 'Ann' });
    await store.commit([{ collection: 'leads', id: lead.id, before: null, after: lead }]);
    const reordered = Object.fromEntries(Object.entries(lead).reverse()) as typeof lead;
    await store.commit([{ collection: 'leads', id: lead.id, before: reordered, after: { ...lead, firstName: 'Anna' } }]);
    expect((await store.get('leads', lead.id))?.firstName).toBe('Anna');
    await expect(store.commit([{ collection: 'leads', id: lead.id, before: lead, after: lead }])).rejects.toMatchObject({ code: 'CONFLICT' });
  });
});
