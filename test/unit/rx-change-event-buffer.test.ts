/**
 * RxDB's per-collection buffer of change events keeps its latest `limit` (100) events, also after one
 * write of many more (a pulled page of 2,000 documents), numbered as RxDB numbers them, so that its
 * queries stay right (electron/backend/rx-change-event-buffer.ts); and every collection of the
 * desktop's database is bounded so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRxDatabase, randomToken } from 'rxdb';
import type { RxCollection, RxDatabase, RxJsonSchema } from 'rxdb';
import { getRxStorageMemory } from 'rxdb/plugins/storage-memory';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { boundChangeEventBuffer } from '../../electron/backend/rx-change-event-buffer.ts';
import { newLead } from '../../shared/model/factories.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from '../support/deterministic.ts';

type Item = { id: string; n: number };
const itemSchema: RxJsonSchema<Item> = {
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: { id: { type: 'string', maxLength: 20 }, n: { type: 'number', minimum: 0, maximum: 1e6, multipleOf: 1 } },
  required: ['id', 'n'],
  indexes: ['n'],
};
/** A pulled page of the initial sync. */
const PAGE = 2000;
const items = (from: number, count: number): Item[] => Array.from({ length: count }, (_, k) => ({ id: `item-${String(from + k).padStart(6, '0')}`, n: from + k }));

let db: RxDatabase | null = null;
afterEach(async () => {
  await db?.remove();
  db = null;
});

async function bounded(): Promise<RxCollection<Item>> {
  db = await createRxDatabase({ name: `ceb${randomToken(8)}`, storage: getRxStorageMemory(), multiInstance: false, eventReduce: true });
  const { items: col } = await db.addCollections({ items: { schema: itemSchema } });
  if (!col) throw new Error('no collection');
  expect(boundChangeEventBuffer(col._changeEventBuffer)).toBe(true);
  return col;
}

const idsOf = (events: readonly { documentId: string }[] | null): string[] | null => events?.map((e) => e.documentId) ?? null;

describe('a collection change event buffer', () => {
  it('keeps the latest 100 events of a write of 2,000, numbered as RxDB numbers them', async () => {
    const col = await bounded();
    const buffer = col._changeEventBuffer;
    await col.bulkInsert(items(0, 10));
    await col.bulkInsert(items(10, PAGE));
    const total = 10 + PAGE;
    expect(buffer.getCounter()).toBe(total);
    expect(idsOf(buffer.getBuffer())).toEqual(items(total - 100, 100).map((i) => i.id));
    // The oldest kept event is number total - 99: from there on the buffer answers; before it, null.
    expect(idsOf(buffer.getFrom(total - 99))).toEqual(items(total - 100, 100).map((i) => i.id));
    expect(idsOf(buffer.getFrom(total))).toEqual([items(total - 1, 1)[0]?.id]);
    expect(buffer.getFrom(total - 100)).toBeNull();
    // A small write after it adds to the latest ones.
    await col.bulkInsert(items(total, 5));
    expect(buffer.getCounter()).toBe(total + 5);
    expect(buffer.getBuffer()).toHaveLength(100);
    expect(idsOf(buffer.getFrom(total + 1))).toEqual(items(total, 5).map((i) => i.id));
  });

  it('leaves the answers of queries RxDB ran before such a write right', async () => {
    const col = await bounded();
    await col.bulkInsert(items(0, 10));
    const query = col.find({ selector: { n: { $gte: 5 } }, sort: [{ n: 'asc' }] });
    expect((await query.exec()).length).toBe(5);
    await col.bulkInsert(items(10, PAGE));
    expect((await query.exec()).length).toBe(5 + PAGE);
    await col.bulkInsert(items(10 + PAGE, 3));
    const after = await query.exec();
    expect(after.length).toBe(5 + PAGE + 3);
    expect(after.at(-1)?.n).toBe(10 + PAGE + 2);
  });
});

describe('the desktop database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'change-event-buffer-'));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps at most 100 change events per collection after a commit of 2,000 leads', async () => {
    const c = workspaceCreation(sequentialIds(9), '2026-11-01T00:00:00.000Z', { name: 'Acme', owner: { name: 'Olive Owner', email: 'olive@acme.test' }, subscriptionStatus: 'active' });
    const ldb = await openLocalDatabase({ dir, workspaceId: c.workspaceId, actor: { workspaceId: c.workspaceId, memberId: c.ownerId, role: 'owner' } });
    try {
      await ldb.store.commit(c.writes);
      const ids = sequentialIds(11);
      const leads = Array.from({ length: PAGE }, (_, i) => newLead({ id: ids.uuid(), workspaceId: c.workspaceId, now: '2026-11-02T10:00:00.000Z' }, c.leadGroupId, { fullName: `Lead ${i}`, email: `lead-${i}@acme.test` }));
      await ldb.store.commit(leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l })));
      const buffers = Object.entries(ldb.rx.collections).map(([name, col]) => [name, col._changeEventBuffer.getBuffer().length] as const);
      expect(buffers.length).toBeGreaterThan(1);
      for (const [name, length] of buffers) expect(length, name).toBeLessThanOrEqual(100);
      expect(ldb.rx.collections['leads']?._changeEventBuffer.getCounter()).toBe(PAGE);
    } finally {
      await ldb.close();
    }
  });
});
