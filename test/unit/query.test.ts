import { describe, expect, it } from 'vitest';
import { runQuery, compareValues, matches } from '../../shared/query.ts';
import type { Page, Query } from '../../shared/store.ts';

type Row = { id: string; name: string | null; n: number; tags: string[] };
const rows: Row[] = Array.from({ length: 57 }, (_, i) => ({
  id: `id-${String(i).padStart(3, '0')}`,
  name: i % 7 === 0 ? null : `Name ${String.fromCharCode(65 + (i % 26))}`,
  n: i % 5,
  tags: i % 2 ? ['odd'] : ['even'],
}));

function pages(q: Query): Row[] {
  const out: Row[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 100; guard++) {
    const page: Page<Row> = runQuery(rows, { ...q, cursor });
    out.push(...page.docs);
    if (!page.nextCursor) return out;
    cursor = page.nextCursor;
  }
  throw new Error('paging did not end');
}

describe('the query language', () => {
  it('orders nulls first ascending and breaks ties by id', () => {
    const all = runQuery(rows, { orderBy: [{ field: 'name', dir: 'asc' }] }).docs;
    expect(all[0]?.name).toBeNull();
    for (let i = 1; i < all.length; i++) {
      const a = all[i - 1] as Row;
      const b = all[i] as Row;
      const c = compareValues(a.name, b.name);
      expect(c < 0 || (c === 0 && a.id < b.id)).toBe(true);
    }
  });

  it('pages with cursors to exactly the full result, in both directions, for any page size', () => {
    for (const dir of ['asc', 'desc'] as const) {
      for (const limit of [1, 5, 10, 56, 57, 100]) {
        const q: Query = { orderBy: [{ field: 'n', dir }, { field: 'name', dir }], limit };
        const full = runQuery(rows, { orderBy: q.orderBy }).docs.map((r) => r.id);
        expect(pages(q).map((r) => r.id)).toEqual(full);
      }
    }
  });

  it('evaluates every condition', () => {
    const r = { id: 'x', name: 'Ada Lovelace', n: 3, tags: ['a'], nested: { k: 'v' } };
    expect(matches(r, { op: 'eq', field: 'nested.k', value: 'v' })).toBe(true);
    expect(matches(r, { op: 'eq', field: 'missing', value: null })).toBe(true);
    expect(matches(r, { op: 'neq', field: 'n', value: 3 })).toBe(false);
    expect(matches(r, { op: 'in', field: 'n', values: [1, 3] })).toBe(true);
    expect(matches(r, { op: 'lt', field: 'n', value: 3 })).toBe(false);
    expect(matches(r, { op: 'lte', field: 'n', value: 3 })).toBe(true);
    expect(matches(r, { op: 'gt', field: 'missing', value: 0 })).toBe(false);
    expect(matches(r, { op: 'contains', fields: ['id', 'name'], value: 'LOVE' })).toBe(true);
    expect(matches(r, { op: 'has', field: 'tags', value: 'a' })).toBe(true);
    expect(matches(r, { op: 'not', cond: { op: 'has', field: 'tags', value: 'a' } })).toBe(false);
    expect(matches(r, { op: 'or', conds: [{ op: 'eq', field: 'n', value: 1 }, { op: 'eq', field: 'n', value: 3 }] })).toBe(true);
    expect(matches(r, { op: 'and', conds: [{ op: 'eq', field: 'n', value: 1 }, { op: 'eq', field: 'n', value: 3 }] })).toBe(false);
  });

  it('refuses a tampered cursor with INVALID_INPUT', () => {
    expect(() => runQuery(rows, { orderBy: [{ field: 'n', dir: 'asc' }], cursor: 'not-a-cursor', limit: 5 })).toThrow(/cursor/);
  });
});
