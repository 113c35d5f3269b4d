/** What the HTTP transport adds around the operations: idempotency keys, rate limits, body limits,
 * dry runs, query parsing, key lifecycle, concurrency retries, request ids and error hygiene. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpDef } from '../../shared/ops/define.ts';
import { OPERATION_NAMES, operations } from '../../shared/ops/index.ts';
import { FakeClock } from '../support/harness.ts';
import { BACKENDS } from './support/db.ts';
import { seedFixtures } from './support/fixtures.ts';
import type { Fixtures } from './support/fixtures.ts';
import { sampleInput } from './support/inputs.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const OPS = operations as Record<string, OpDef>;
type ErrorBody = { error: { code: string; message: string; details: Record<string, unknown> } };
const code = (body: unknown): string | undefined => (body as ErrorBody).error?.code;

/** A clock that can be made to fail, to provoke an unexpected server error. */
class ExplodingClock extends FakeClock {
  explode = false;
  override now(): Date {
    if (this.explode) throw new Error('the clock exploded');
    return super.now();
  }
}

describe.each(BACKENDS)('HTTP transport (%s)', (backend) => {
  let s: TestServer;
  let fx: Fixtures;
  const clock = new ExplodingClock('2026-11-16T10:00:00.000Z');
  beforeAll(async () => {
    s = await startTestServer(backend, { clock, bodyLimit: 64 * 1024 });
    fx = await seedFixtures(s.db, s.ours, clock.now().toISOString(), 'Acme');
  });
  afterAll(async () => {
    await s?.close();
  });

  describe('Idempotency-Key', () => {
    it('replays the first response for the same key and body, and changes nothing again', async () => {
      const headers = { 'idempotency-key': 'create-q1-campaign' };
      const first = await s.call(s.ours.ownerKey, 'campaigns.create', { name: 'Q1 push' }, { headers });
      expect(first.status).toBe(200);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const seq = await s.maxSeq(s.ours.workspaceId);
      // Same body in another key order is the same request.
      const again = await s.call(s.ours.ownerKey, 'campaigns.create', {}, { headers, rawBody: JSON.stringify({ name: 'Q1 push' }) });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await s.maxSeq(s.ours.workspaceId)).toBe(seq);
      const list = await s.call<{ basicCampaigns: { name: string }[] }>(s.ours.ownerKey, 'campaigns.getBasic', { search: 'Q1 push' });
      expect(list.body.basicCampaigns.filter((c) => c.name === 'Q1 push')).toHaveLength(1);
    });

    it('refuses the same key with a different body (409 IDEMPOTENCY_KEY_REUSED), changing nothing', async () => {
      const headers = { 'idempotency-key': 'reused-key' };
      expect((await s.call(s.ours.ownerKey, 'campaigns.create', { name: 'First' }, { headers })).status).toBe(200);
      const before = await s.snapshot(s.ours.workspaceId);
      const res = await s.call(s.ours.ownerKey, 'campaigns.create', { name: 'Second' }, { headers });
      expect(res.status).toBe(409);
      expect(code(res.body)).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    });

    it('scopes keys to the API key, and forgets them after 24 hours', async () => {
      const headers = { 'idempotency-key': 'shared-name' };
      const a = await s.call<{ id: string }>(s.ours.ownerKey, 'campaigns.create', { name: 'Scoped' }, { headers });
      const b = await s.call<{ id: string }>(s.ours.adminKey, 'campaigns.create', { name: 'Scoped' }, { headers });
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(b.body.id).not.toBe(a.body.id);
      clock.advance(24 * 3_600_000 + 1000);
      const later = await s.call<{ id: string }>(s.ours.ownerKey, 'campaigns.create', { name: 'Scoped' }, { headers });
      expect(later.status).toBe(200);
      expect(later.body.id).not.toBe(a.body.id);
      expect(later.headers.get('idempotent-replayed')).toBeNull();
    });

    it('runs concurrent duplicates once', async () => {
      const headers = { 'idempotency-key': 'burst' };
      const results = await Promise.all(Array.from({ length: 5 }, () => s.call<{ id: string }>(s.ours.ownerKey, 'campaigns.create', { name: 'Burst' }, { headers })));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
      const list = await s.call<{ basicCampaigns: { name: string }[] }>(s.ours.ownerKey, 'campaigns.getBasic', { search: 'Burst' });
      expect(list.body.basicCampaigns.filter((c) => c.name === 'Burst')).toHaveLength(1);
    });

    it('does not store refusals: a refused request can be sent again', async () => {
      const headers = { 'idempotency-key': 'refused-then-fixed' };
      const bad = await s.call(s.ours.ownerKey, 'campaigns.create', { name: '' }, { headers });
      expect(bad.status).toBe(400);
      // Not remembered: the corrected request under the same key is not "reused with another body".
      const good = await s.call(s.ours.ownerKey, 'campaigns.create', { name: 'Fixed' }, { headers });
      expect(good.status).toBe(200);
    });
  });

  describe('dry runs', () => {
    const dryOps = OPERATION_NAMES.filter((n) => OPS[n]?.dryRun);
    it('exist in the registry', () => {
      expect(dryOps.length).toBeGreaterThan(3);
    });
    for (const name of dryOps) {
      it(`${name}: dryRun answers like the real call and stores nothing`, async () => {
        const op = OPS[name] as OpDef;
        const mine = await seedFixtures(s.db, s.ours, clock.now().toISOString(), 'Dry');
        const now = clock.now().toISOString();
        let input = sampleInput(op, mine, now).input;
        const before = await s.snapshot(s.ours.workspaceId);
        let dry = await s.call<Record<string, unknown>>(s.ours.ownerKey, name, { ...input, dryRun: true });
        if (dry.status !== 200) {
          input = sampleInput(op, mine, now, true).input;
          dry = await s.call<Record<string, unknown>>(s.ours.ownerKey, name, { ...input, dryRun: true });
        }
        expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
        if (process.env.SMOKE_REPORT) process.stdout.write(`DRY ${name} ${dry.status} ${JSON.stringify(dry.body).slice(0, 200)}\n`);
        const real = await s.call<Record<string, unknown>>(s.ours.ownerKey, name, { ...input, dryRun: false });
        expect(real.status, `${name}: ${JSON.stringify(real.body)}`).toBe(dry.status);
        if (dry.status === 200) {
          expect(dry.body.dryRun).toBe(true);
          expect({ ...real.body, dryRun: true }).toEqual(dry.body);
        } else {
          expect(code(real.body)).toBe(code(dry.body));
        }
      });
    }
  });

  it('parses query strings: repeated parameters and comma lists, booleans, numbers', async () => {
    if (!OPS['campaigns.getMetrics'] || !OPS['campaigns.leads.search']) return;
    const other = await seedFixtures(s.db, s.ours, clock.now().toISOString(), 'Second');
    const repeated = await s.call(s.ours.ownerKey, 'campaigns.getMetrics', { campaignIds: [fx.campaignId, other.campaignId] });
    const comma = await s.call(s.ours.ownerKey, 'campaigns.getMetrics', { campaignIds: `${fx.campaignId},${other.campaignId}` });
    expect(repeated.status).toBe(200);
    expect(comma.body).toEqual(repeated.body);
    expect((repeated.body as { metrics: unknown[] }).metrics).toHaveLength(2);

    type Rows = { leads: { id: string; variables?: unknown }[]; nextCursor: string | null };
    const plain = await s.call<Rows>(s.ours.ownerKey, 'campaigns.leads.search', { query: fx.marker, includeVariables: 'false' });
    const withVars = await s.call<Rows>(s.ours.ownerKey, 'campaigns.leads.search', { query: fx.marker, includeVariables: 'true' });
    expect(plain.body.leads.map((l) => l.id)).toEqual([fx.leadId]);
    expect(plain.body.leads[0]?.variables).toBeUndefined();
    expect(withVars.body.leads[0]?.variables).toBeDefined();
    const paged = await s.call<Rows>(s.ours.ownerKey, 'campaigns.leads.search', { limit: '1' });
    expect(paged.body.leads).toHaveLength(1);
    expect(paged.body.nextCursor).toEqual(expect.any(String));
    const bad = await s.call(s.ours.ownerKey, 'campaigns.leads.search', { limit: 'many' });
    expect(bad.status).toBe(400);
    expect(code(bad.body)).toBe('INVALID_INPUT');
  });

  it('refuses bodies that are not JSON objects with 400 INVALID_INPUT', async () => {
    for (const rawBody of ['{"name": ', '[1,2]', '"text"', 'null']) {
      const res = await s.call(s.ours.ownerKey, 'tags.create', {}, { rawBody });
      expect(res.status, rawBody).toBe(400);
      expect(code(res.body), rawBody).toBe('INVALID_INPUT');
    }
    const form = await s.call(s.ours.ownerKey, 'tags.create', {}, { rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(400);
    expect((form.body as ErrorBody).error.message).toContain('application/json');
    // An empty body is an empty input.
    const empty = await s.call(s.ours.ownerKey, 'tags.create', {}, { rawBody: '' });
    expect(empty.status).toBe(400);
    expect((empty.body as ErrorBody).error.message).toContain('name');
    // Prototype keys are dropped, not merged.
    const proto = await s.call<{ name: string }>(s.ours.ownerKey, 'tags.create', {}, { rawBody: '{"name":"Proto","__proto__":{"admin":true}}' });
    expect(proto.status).toBe(200);
    expect(proto.body.name).toBe('Proto');
  });

  it('refuses a body over the limit with 413 PAYLOAD_TOO_LARGE and a clear message', async () => {
    const before = await s.snapshot(s.ours.workspaceId);
    const res = await s.call(s.ours.ownerKey, 'tags.create', { name: 'x', padding: 'y'.repeat(100 * 1024) });
    expect(res.status).toBe(413);
    expect(code(res.body)).toBe('PAYLOAD_TOO_LARGE');
    expect((res.body as ErrorBody).error.message).toContain(`${64 * 1024} bytes`);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
  });

  it('answers unexpected failures with 500 INTERNAL, logs them with the stack, and never sends the stack', async () => {
    clock.explode = true;
    try {
      const res = await s.call(s.ours.ownerKey, 'tags.create', { name: 'Boom' }, { headers: { 'x-request-id': 'req-boom-1' } });
      expect(res.status).toBe(500);
      expect(code(res.body)).toBe('INTERNAL');
      expect((res.body as ErrorBody).error.details.requestId).toBe('req-boom-1');
      expect(JSON.stringify(res.body)).not.toContain('exploded');
      expect(JSON.stringify(res.body)).not.toMatch(/\bat .*\.ts:\d+/);
      const logged = s.logs.map((l) => JSON.parse(l) as { level: number; reqId?: string; err?: { stack?: string } }).find((l) => l.reqId === 'req-boom-1' && l.level >= 50);
      expect(logged?.err?.stack).toContain('the clock exploded');
    } finally {
      clock.explode = false;
    }
  });

  it('echoes a sane X-Request-Id and makes one up otherwise', async () => {
    const given = await s.call(s.ours.ownerKey, 'tags.getAll', {}, { headers: { 'x-request-id': 'trace-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const made = await s.call(s.ours.ownerKey, 'tags.getAll', {}, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  describe('API keys', () => {
    it('records lastUsedAt at most once a minute', async () => {
      const created = await s.call<{ id: string; key: string; prefix: string }>(s.ours.ownerKey, 'apiKeys.create', { name: 'usage probe' });
      expect(created.status).toBe(200);
      expect(created.body.key).toMatch(/^live_[0-9A-Za-z]{32,}$/);
      expect(created.body.key.startsWith(created.body.prefix)).toBe(true);
      const lastUsed = async (): Promise<string | null> => {
        const list = await s.call<{ keys: { id: string; lastUsedAt: string | null }[] }>(s.ours.ownerKey, 'apiKeys.list', {});
        return list.body.keys.find((k) => k.id === created.body.id)?.lastUsedAt ?? null;
      };
      const settle = () => new Promise((r) => setTimeout(r, 150));
      expect(await lastUsed()).toBeNull();
      const t0 = clock.now().toISOString();
      expect((await s.call(created.body.key, 'tags.getAll')).status).toBe(200);
      await settle();
      expect(await lastUsed()).toBe(t0);
      clock.advance(30_000);
      await s.call(created.body.key, 'tags.getAll');
      await settle();
      expect(await lastUsed()).toBe(t0);
      clock.advance(31_000);
      const t2 = clock.now().toISOString();
      await s.call(created.body.key, 'tags.getAll');
      await settle();
      expect(await lastUsed()).toBe(t2);
    });

    it('refuses a revoked key at once (401), and only that key', async () => {
      const created = await s.call<{ id: string; key: string }>(s.ours.memberKey, 'apiKeys.create', { name: 'to revoke' });
      expect((await s.call(created.body.key, 'tags.getAll')).status).toBe(200);
      const revoked = await s.call(s.ours.memberKey, 'apiKeys.revoke', { id: created.body.id });
      expect(revoked.status).toBe(200);
      const res = await s.call(created.body.key, 'tags.getAll');
      expect(res.status).toBe(401);
      expect(code(res.body)).toBe('UNAUTHENTICATED');
      expect((res.body as ErrorBody).error.message).toContain('revoked');
      expect((await s.call(s.ours.memberKey, 'tags.getAll')).status).toBe(200);
    });

    it("refuses the key of a removed member", async () => {
      const made = await s.call<{ memberId: string; apiKey: string }>(s.ours.adminKey, 'members.create', { name: 'Short Stay', email: 'short@acme.test', role: 'member' });
      expect(made.status).toBe(200);
      expect((await s.call(made.body.apiKey, 'tags.getAll')).status).toBe(200);
      const store = s.db.forWorkspace(s.ours.workspaceId);
      const member = await store.get('members', made.body.memberId);
      expect(member).not.toBeNull();
      await store.commit([{ collection: 'members', id: made.body.memberId, before: member, after: null }]);
      const res = await s.call(made.body.apiKey, 'tags.getAll');
      expect(res.status).toBe(401);
      expect((res.body as ErrorBody).error.message).toContain('removed');
    });

    it('acts with the role of the key’s member: a member cannot manage members (403)', async () => {
      const before = await s.snapshot(s.ours.workspaceId);
      const res = await s.call(s.ours.memberKey, 'members.create', { name: 'Sneaky', email: 'sneaky@acme.test', role: 'owner' });
      expect(res.status).toBe(403);
      expect(code(res.body)).toBe('PERMISSION_DENIED');
      expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
      const members = await s.call<{ members: { email: string; role: string }[] }>(s.ours.memberKey, 'members.list', {});
      expect(members.body.members.map((m) => m.email)).toEqual(expect.arrayContaining(['owner@acme.test', 'member@acme.test', 'admin@acme.test']));
    });
  });

  it('retries a call whose commit lost a race, so concurrent edits of one lead all succeed', async () => {
    const days = ['2026-12-01', '2026-12-02', '2026-12-03', '2026-12-04'];
    const results = await Promise.all(days.map((d) => s.call(s.ours.memberKey, 'campaigns.leads.setLeadFollowUp', { leadId: fx.otherLeadId, followUpAt: `${d}T09:00:00.000Z` })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const lead = await s.db.forWorkspace(s.ours.workspaceId).get('leads', fx.otherLeadId);
    expect(days.map((d) => `${d}T09:00:00.000Z`)).toContain(lead?.followUpAt);
  });
});

describe.each(BACKENDS)('rate limit (%s)', (backend) => {
  let s: TestServer;
  const clock = new FakeClock('2026-11-16T10:00:00.000Z');
  beforeAll(async () => {
    s = await startTestServer(backend, { clock, rateLimitPerMinute: 5 });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('allows the limit per key, then answers 429 RATE_LIMITED with Retry-After, per key', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await s.call(s.ours.ownerKey, 'tags.getAll');
      expect(res.status, `request ${i + 1} of 5: ${JSON.stringify(res.body)}`).toBe(200);
    }
    const limited = await s.call(s.ours.ownerKey, 'tags.getAll');
    expect(limited.status).toBe(429);
    expect(code(limited.body)).toBe('RATE_LIMITED');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(12);
    // POSTs count too, and a limited POST changes nothing.
    const before = await s.snapshot(s.ours.workspaceId);
    expect((await s.call(s.ours.ownerKey, 'tags.create', { name: 'Limited' })).status).toBe(429);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    // Another key of the same workspace has its own allowance.
    const member = await s.call(s.ours.memberKey, 'tags.getAll');
    expect(member.status, `another key: ${JSON.stringify(member.body)}`).toBe(200);
    clock.advance(retryAfter * 1000);
    const after = await s.call(s.ours.ownerKey, 'tags.getAll');
    expect(after.status, `after Retry-After (${retryAfter} s): ${JSON.stringify(after.body)}`).toBe(200);
  });
});
