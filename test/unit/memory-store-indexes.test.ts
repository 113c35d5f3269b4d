/** The reference store's indexes (ordered ones for ranges on timestamps, hash ones for lookups) give
 * exactly what a scan of every document gives, after creates, updates that move documents between
 * index positions and buckets, and deletes. */
import { describe, expect, it } from 'vitest';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import { newMessage } from '../../shared/model/factories.ts';
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
