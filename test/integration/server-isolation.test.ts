/** An id from another workspace is "not found" for every operation that takes one: the Store is
 * scoped to the key's workspace, so nothing of the other workspace is read, changed or revealed. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpDef } from '../../shared/ops/define.ts';
import { OPERATION_NAMES, operations } from '../../shared/ops/index.ts';
import { BACKENDS } from './support/db.ts';
import { seedFixtures } from './support/fixtures.ts';
import type { Fixtures } from './support/fixtures.ts';
import { sampleInput } from './support/inputs.ts';
import { startTestServer } from './support/server.ts';
import type { CallResult, TestServer } from './support/server.ts';

const OPS = operations as Record<string, OpDef>;
type ErrorBody = { error: { code: string; message: string } };

const PLACEHOLDER = new Proxy({} as Fixtures, { get: (_t, k) => (k === 'marker' ? 'm' : `00000000-0000-4000-8000-${String(k).length.toString().padStart(12, '0')}`) });
/** Operations whose input names at least one id, decided from their schema. */
const TAKING_IDS = OPERATION_NAMES.filter((name) => sampleInput(OPS[name] as OpDef, PLACEHOLDER, '2026-11-16T10:00:00.000Z').ids.length > 0);

describe.each(BACKENDS)('workspace isolation over HTTP (%s)', (backend) => {
  let s: TestServer;
  let theirs: Fixtures;
  beforeAll(async () => {
    s = await startTestServer(backend);
    theirs = await seedFixtures(s.db, s.theirs, s.clock.now().toISOString(), 'Globex');
  });
  afterAll(async () => {
    await s?.close();
  });

  it('covers the operations that take ids', () => {
    expect(TAKING_IDS.length).toBeGreaterThan(5);
    for (const name of ['campaigns.leads.updateTag', 'leadActivities.update', 'campaigns.get', 'apiKeys.revoke']) {
      if (OPS[name]) expect(TAKING_IDS).toContain(name);
    }
  });

  /** Calls with the minimal input, and with every optional field when that one is refused (some
   * operations need at least one optional field). */
  async function callWith(key: string, op: OpDef, f: Fixtures): Promise<CallResult> {
    const now = s.clock.now().toISOString();
    const first = await s.call(key, op.name, sampleInput(op, f, now).input, { method: op.method });
    if (first.status === 200 || first.status === 404) return first;
    return s.call(key, op.name, sampleInput(op, f, now, true).input, { method: op.method });
  }

  for (const name of TAKING_IDS) {
    const op = OPS[name] as OpDef;
    it(`${name}: another workspace's ids are not found, and nothing changes anywhere`, async () => {
      const before = { ours: await s.snapshot(s.ours.workspaceId), theirs: await s.snapshot(s.theirs.workspaceId) };
      const res = await callWith(s.ours.ownerKey, op, theirs);
      if (res.status === 200) {
        // Bulk operations and batch reads report ids they did not find instead of failing the batch.
        const body = res.body as { skippedMissing?: number; notFound?: string[] };
        const reported = (body.skippedMissing ?? 0) > 0 || (body.notFound ?? []).length > 0;
        expect(reported, `${name} answered 200 without reporting the ids as missing: ${JSON.stringify(res.body)}`).toBe(true);
      } else {
        expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(404);
        expect((res.body as ErrorBody).error.code).toBe('NOT_FOUND');
      }
      expect(JSON.stringify(res.body)).not.toContain(theirs.marker);
      expect(await s.snapshot(s.theirs.workspaceId)).toEqual(before.theirs);
      expect(await s.snapshot(s.ours.workspaceId)).toEqual(before.ours);

      // The same call with this workspace's own ids is not "not found": the 404 above came from the
      // workspace boundary, not from a broken input.
      const mine = await seedFixtures(s.db, s.ours, s.clock.now().toISOString(), 'Acme');
      const ok = await callWith(s.ours.ownerKey, op, mine);
      expect(ok.status === 404 && (ok.body as ErrorBody).error.code === 'NOT_FOUND', `${name} with own ids: ${JSON.stringify(ok.body)}`).toBe(false);
      expect(ok.status, `${name} with own ids: ${JSON.stringify(ok.body)}`).toBeLessThan(500);
    });
  }

  it('never returns another workspace in lists and searches', async () => {
    for (const name of OPERATION_NAMES.filter((n) => OPS[n]?.method === 'GET' && !TAKING_IDS.includes(n))) {
      const res = await s.call(s.ours.ownerKey, name, {}, { method: 'GET' });
      expect(JSON.stringify(res.body), name).not.toContain(theirs.marker);
      expect(JSON.stringify(res.body), name).not.toContain(s.theirs.workspaceId);
    }
  });
});
