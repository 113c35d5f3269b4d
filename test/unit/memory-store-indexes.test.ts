/** The reference store's indexes (ordered ones for ranges on timestamps, hash ones for lookups) give
 * exactly what a scan of every document gives, after creates, updates that move documents between
 * index positions and buckets, and deletes. */
import { describe, expect, it } from 'vitest';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newLead, newMessage } from '../../shared/model/factories.ts';
import type { Message } from '../../shared/model/index.ts';
import { runQuery } from '../../shared/query.ts';
import type { AnyWrite, Cond } from '../../shared/store.ts';
import { seededRandom } from '../support/harness.ts';

const WS = 'a0000000-0000-4000-8000-0000000000aa';
const uid = (n: number) => `d0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const at = (minute: number) => new Date(Date.UTC(2026, 10, 24, 0, minute)).toISOString();

describe('memory store indexes', () => {
  it('answer ranges and lookups like a scan while documents move', async () => {
    const db = new MemoryDatabase();
    const store = db.forWorkspace(WS);
    const rnd = seededRandom(5);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const docs = new Map<string, Message>();
    const conds = (): Cond[] => [
      { op: 'eq', field: 'chatId', value: pick(['c1', 'c2', 'c3']) },
      { op: 'and', conds: [{ op: 'eq', field: 'status', value: 'queued' }, { op: 'eq', field: 'direction', value: 'out' }] },
      { op: 'eq', field: 'externalId', value: pick(['x1', 'x2']) },
      { op: 'and', conds: [{ op: 'gte', field: 'createdAt', value: at(pick([0, 10, 30])) }, { op: 'lt', field: 'createdAt', value: at(pick([20, 40, 60])) }] },
      { op: 'and', conds: [{ op: 'gt', field: 'updatedAt', value: at(pick([5, 25])) }, { op: 'eq', field: 'chatId', value: 'c2' }] },
    ];
    for (let round = 0; round < 40; round++) {
      const writes: AnyWrite[] = [];
      for (let k = 0; k < 10; k++) {
        const id = uid(Math.floor(rnd() * 60));
        if (writes.some((w) => w.id === id)) continue;
        const before = docs.get(id) ?? null;
        if (before && rnd() < 0.2) {
          writes.push({ collection: 'messages', id, before, after: null });
          docs.delete(id);
          continue;
        }
        const after = newMessage({ id, workspaceId: WS, now: at(Math.floor(rnd() * 60)) }, {
          leadId: uid(1000), sdrProfileId: uid(2000), chatId: pick(['c1', 'c2', 'c3']), direction: pick(['in', 'out'] as const), kind: 'message', text: `t${round}`,
          status: pick(['queued', 'sent', 'received'] as const), externalId: pick(['x1', 'x2', null]),
        });
        after.updatedAt = at(Math.floor(rnd() * 60));
        writes.push({ collection: 'messages', id, before, after });
        docs.set(id, after);
      }
      await store.commit(writes);
      for (const where of conds()) {
        const expected = runQuery([...docs.values()], { where }).docs.map((d) => d.id);
        expect((await store.query('messages', { where })).docs.map((d) => d.id), JSON.stringify(where)).toEqual(expected);
        expect(await store.count('messages', where)).toBe(expected.length);
      }
    }
  });
});

describe("memory store lookups of leads by who they are", () => {
  /** Counts the store's reads of a whole collection (each is a scan of every document). */
  class ScanCounting extends MemoryDatabase {
    scans = 0;
    override rows(c: Parameters<MemoryDatabase['rows']>[0]): ReturnType<MemoryDatabase['rows']> {
      const table = super.rows(c);
      const onScan = () => this.scans++;
      return new Proxy(table, {
        get(t, p) {
          if (p === 'values' || p === Symbol.iterator || p === 'entries' || p === 'forEach') onScan();
          const v: unknown = Reflect.get(t, p, t);
          return typeof v === 'function' ? v.bind(t) : v;
        },
      });
    }
  }

  it('answer `in` lists of emails, profile URLs, names and companies from their buckets, like a scan', async () => {
    const db = new ScanCounting();
    const store = db.forWorkspace(WS);
    const other = db.forWorkspace('b0000000-0000-4000-8000-0000000000bb');
    const leads = Array.from({ length: 300 }, (_, i) =>
      newLead({ id: uid(i), workspaceId: WS, now: at(i % 60) }, uid(5000), {
        firstName: `P${i % 40}`, lastName: 'Doe', email: i % 3 === 0 ? '' : `p${i % 97}@x.test`, socialUrl: i % 2 ? `https://www.linkedin.com/in/p${i}` : '', company: `Firm ${i % 7}`,
      }),
    );
    await store.commit(leads.map((l) => ({ collection: 'leads', id: l.id, before: null, after: l })));
    const foreign = newLead({ id: uid(999), workspaceId: 'b0000000-0000-4000-8000-0000000000bb', now: at(1) }, uid(5001), { email: 'p1@x.test' });
    await other.commit([{ collection: 'leads', id: foreign.id, before: null, after: foreign }]);
    const conds: Cond[] = [
      { op: 'in', field: 'email', values: ['p1@x.test', 'P1@x.test', 'p2@x.test', 'p1@x.test', 'nobody@x.test'] },
      { op: 'in', field: 'socialUrl', values: ['https://www.linkedin.com/in/p7', 'linkedin.com/in/p7', 'https://www.linkedin.com/in/p9/'] },
      { op: 'and', conds: [{ op: 'in', field: 'fullName', values: ['P3 Doe', 'p3 doe'] }, { op: 'in', field: 'company', values: ['Firm 3', 'Firm 4'] }] },
      { op: 'eq', field: 'email', value: 'p5@x.test' },
    ];
    for (const where of conds) {
      const scans = db.scans;
      const expected = runQuery(leads, { where }).docs.map((d) => d.id);
      expect((await store.query('leads', { where })).docs.map((d) => d.id), JSON.stringify(where)).toEqual(expected);
      expect(await store.count('leads', where)).toBe(expected.length);
      expect(db.scans, `${JSON.stringify(where)} read every lead`).toBe(scans);
    }
    // A list holding a non-string value cannot be looked up: scanned (the counter sees it), still right.
    const mixed: Cond = { op: 'in', field: 'email', values: ['p1@x.test', null] };
    const scans = db.scans;
    expect((await store.query('leads', { where: mixed })).docs.map((d) => d.id)).toEqual(runQuery(leads, { where: mixed }).docs.map((d) => d.id));
    expect(db.scans).toBe(scans + 1);
  });
});
