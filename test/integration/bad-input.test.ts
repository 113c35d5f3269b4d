/**
 * Regression tests for issue 12's causes of 500s, one by one, on a real server: each bad input is a
 * 4xx with the contract's body `{"error": {"code", "message", "details"}}`, nothing is stored, and the
 * server never logged that bad input reached the database (the boundary refused it first).
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FIELD_LIMITS, INDEXED_TEXT_MAX_BYTES, TEXT_LIMITS } from '../../shared/model/common.ts';
import { newLead } from '../../shared/model/factories.ts';
import type { Lead } from '../../shared/model/index.ts';
import { schemaProblem } from '../../shared/model/validate.ts';
import { validateChange } from '../../shared/rules/index.ts';
import { makeHarness } from '../support/harness.ts';
import { BACKENDS } from './support/db.ts';
import { seedFixtures } from './support/fixtures.ts';
import type { Fixtures } from './support/fixtures.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type ErrorBody = { error: { code: string; message: string; details: Record<string, unknown> } };
type Doc = Record<string, unknown> & { _deleted?: boolean };

const NUL = 'a\u0000b';
const LONE = 'x\udfffy';

function expectContractError(body: unknown, code?: string): void {
  const e = (body as Partial<ErrorBody>).error;
  expect(e, JSON.stringify(body)).toBeDefined();
  expect(typeof e?.code).toBe('string');
  if (code) expect(e?.code).toBe(code);
  expect(e?.message.length).toBeGreaterThan(10);
  expect(e?.details !== null && typeof e?.details === 'object').toBe(true);
}

function raw(url: string, payload: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
  });
}

describe.each(BACKENDS)('bad input is a clean 4xx, never a 500 (%s)', (backend) => {
  let s: TestServer;
  let fx: Fixtures;
  let foreign: Fixtures;

  beforeAll(async () => {
    s = await startTestServer(backend, { rateLimitPerMinute: 1_000_000 });
    const now = s.clock.now().toISOString();
    fx = await seedFixtures(s.db, s.ours, now, 'Acme');
    foreign = await seedFixtures(s.db, s.theirs, now, 'Globex');
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });
  let lastMessages: string[] = [];
  beforeEach(() => {
    s.logs.length = 0;
    lastMessages = [];
  });

  const databaseSawBadInput = () => s.logs.filter((l) => l.includes('bad input reached the database') || /"level":(50|60)/.test(l));

  /** Calls an operation, expects a 400 with the contract body and an unchanged workspace. */
  async function refused(name: string, input: Record<string, unknown>, init: Parameters<TestServer['call']>[3] = {}, status = 400): Promise<ErrorBody> {
    const before = await s.snapshot(s.ours.workspaceId);
    const res = await s.call<ErrorBody>(s.ours.ownerKey, name, input, init);
    expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(status);
    expectContractError(res.body);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    expect(databaseSawBadInput()).toEqual([]);
    lastMessages.push(JSON.stringify(res.body));
    return res.body;
  }

  async function push(collection: string, rows: unknown, key = s.ours.ownerKey): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${s.url}/replication/${collection}/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(rows),
    });
    return { status: res.status, body: await res.json() };
  }

  async function stored<T extends Doc>(collection: string, id: string): Promise<T> {
    const rows = await s.sql.query<{ doc: T }>('SELECT doc FROM documents WHERE collection = $1 AND id = $2', [collection, id]);
    const doc = rows[0]?.doc;
    if (!doc) throw new Error(`${collection}/${id} is not stored`);
    return doc;
  }

  it('NUL and lone surrogates in the text of every kind of document an operation stores are 400 INVALID_INPUT', async () => {
    for (const bad of [NUL, LONE]) {
      await refused('tags.create', { name: bad });
      await refused('campaigns.create', { name: bad });
      await refused('sdrProfiles.create', { name: bad, channel: 'sandbox' });
      await refused('leadActivities.create', { leadId: fx.leadId, content: bad });
      await refused('leadActivities.taskCreate', { leadId: fx.leadId, content: bad });
      await refused('apiKeys.create', { name: bad });
      await refused('campaigns.addSequenceStep', { campaignId: fx.campaignId, type: 'SEND_MESSAGE', content: bad });
      await refused('campaigns.leads.create', { leadGroupId: fx.leadGroupId, leads: [{ firstName: bad, email: 'nul@example.test' }] });
      await refused('campaigns.leads.sendMessage', { leadId: fx.leadId, text: bad });
      await refused('tags.create', { [bad]: 'field name' });
    }
    // Each refusal above names the bad text, not another problem of the input.
    expect(lastMessages.every((m) => /NUL|surrogate/i.test(m)), lastMessages.join('\n')).toBe(true);
  });

  it('NUL in search parameters and tampered cursors are 400 INVALID_INPUT', async () => {
    for (const [name, query] of [
      ['campaigns.leads.search', 'query=a%00b'],
      ['campaigns.leads.count', 'tagId=a%00b'],
      ['campaigns.getBasic', 'search=a%00b'],
      ['campaigns.leads.search', `cursor=${Buffer.from(JSON.stringify({ k: [NUL], id: NUL })).toString('base64url')}`],
      ['campaigns.leads.search', `cursor=${Buffer.from(JSON.stringify({ k: [{ nested: [1] }], id: 'x' })).toString('base64url')}`],
      ['leadActivities.list', `leadId=${fx.leadId}&cursor=${Buffer.from(JSON.stringify({ k: ['\ud800'], id: 'x' })).toString('base64url')}`],
      ['campaigns.leads.search', 'cursor=%%%not-base64'],
    ] as const) {
      const res = await fetch(`${s.url}/${name}?${query}`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } });
      expect(res.status, `${name}?${query}`).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expectContractError(body, 'INVALID_INPUT');
    }
    expect(databaseSawBadInput()).toEqual([]);
  });

  it('an Idempotency-Key with a body nested 20,000 levels is refused before hashing (400)', async () => {
    const deep = '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000);
    for (const key of [randomUUID(), null]) {
      const body = await refused('tags.create', {}, { rawBody: deep, headers: key ? { 'idempotency-key': key } : {} });
      expect(body.error.code).toBe('INVALID_INPUT');
      expect(body.error.message).toMatch(/nested more than \d+ levels/);
    }
    // The server is still alive and answers at once.
    expect((await s.call(s.ours.ownerKey, 'campaigns.getBasic', {})).status).toBe(200);
  });

  it('bad Idempotency-Keys are 400 and nothing is stored', async () => {
    for (const key of ['k'.repeat(256), 'has space', 'clé-\u00e9']) {
      await refused('tags.create', { name: 'Keyed' }, { headers: { 'idempotency-key': key } });
    }
  });

  it('replication/refusals?since= out of range or invalid is 400', async () => {
    for (const since of ['0000-01-01T00:00:00Z', '275760-09-13T00:00:00.000Z', '2026-02-30T00:00:00Z', 'yesterday', NUL, '1899-12-31T23:59:59Z']) {
      const res = await fetch(`${s.url}/replication/refusals?since=${encodeURIComponent(since)}`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } });
      expect(res.status, since).toBe(400);
      expectContractError(await res.json(), 'INVALID_INPUT');
    }
    const ok = await fetch(`${s.url}/replication/refusals?since=2026-01-01T00:00:00Z`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } });
    expect(ok.status).toBe(200);
    expect(databaseSawBadInput()).toEqual([]);
  });

  it('a pushed lead with a 2,800-character email is refused whole (400), nothing stored; the desktop rules refuse it too', async () => {
    const lead = await stored<Lead & Doc>('leads', fx.leadId);
    const longEmail = `${'x'.repeat(2_800)}@example.test`;
    const fresh = newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: s.clock.now().toISOString() }, fx.leadGroupId, { firstName: 'Fresh', email: 'fresh@example.test' });
    const before = await s.snapshot(s.ours.workspaceId);
    const res = await push('leads', [
      { newDocumentState: { ...fresh, _deleted: false } },
      { assumedMasterState: { ...lead, _deleted: false }, newDocumentState: { ...lead, email: longEmail, _deleted: false } },
    ]);
    expect(res.status).toBe(400);
    expectContractError(res.body, 'INVALID_INPUT');
    expect((res.body as ErrorBody).error.message).toMatch(/email must not be longer than 320/);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    // An indexed field is bounded in bytes too: 2,000 characters of 3-byte text fit the character
    // limit but not the index.
    const wide = '字'.repeat(1_000);
    expect(wide.length).toBeLessThanOrEqual(TEXT_LIMITS.url);
    const wideRes = await push('leads', [{ assumedMasterState: { ...lead, _deleted: false }, newDocumentState: { ...lead, socialUrl: `https://x.test/${wide}`, _deleted: false } }]);
    expect(wideRes.status).toBe(400);
    expect((wideRes.body as ErrorBody).error.message).toContain(`${INDEXED_TEXT_MAX_BYTES} bytes`);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    // The largest accepted email is stored and indexed.
    const longest = `${'y'.repeat(TEXT_LIMITS.email - 13)}@example.test`;
    expect(longest.length).toBe(FIELD_LIMITS.leads?.email);
    const okRes = await push('leads', [{ newDocumentState: { ...fresh, email: longest, _deleted: false } }]);
    expect(okRes).toEqual({ status: 200, body: [] });
    expect((await stored<Lead & Doc>('leads', fresh.id)).email).toBe(longest);
    // The limits are published with the schemas, so any replication client can check before pushing.
    const listed = (await (await fetch(`${s.url}/replication/collections`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } })).json()) as {
      collections: { name: string; limits: { fieldMaxLength: Record<string, number>; indexedFieldsMaxUtf8Bytes: Record<string, number> } }[];
    };
    const leadsLimits = listed.collections.find((c) => c.name === 'leads')?.limits;
    expect(leadsLimits?.fieldMaxLength.email).toBe(TEXT_LIMITS.email);
    expect(leadsLimits?.indexedFieldsMaxUtf8Bytes.email).toBe(INDEXED_TEXT_MAX_BYTES);
    // The same limit refuses the same write on a desktop (the shared rules run on every commit).
    const h = await makeHarness();
    const group = (await h.store.query('leadGroups')).docs[0];
    if (!group) throw new Error('no lead group');
    const local = newLead({ id: randomUUID(), workspaceId: h.owner.workspaceId, now: h.clock.now().toISOString() }, group.id, { email: longEmail, leadIdentifier: 'local' });
    expect(schemaProblem('leads', local)).toMatch(/email must not be longer than 320/);
    await expect(validateChange({ collection: 'leads', before: null, after: local }, { actor: h.owner, read: h.store, now: h.clock.now() })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('replication pushes with NUL, lone surrogates or bad timestamps are refused whole (400), nothing stored', async () => {
    const lead = await stored<Lead & Doc>('leads', fx.leadId);
    const note = await stored<Doc>('activities', fx.noteId);
    const tag = await stored<Doc>('tags', fx.tagId);
    const before = await s.snapshot(s.ours.workspaceId);
    for (const [collection, doc, change] of [
      ['leads', lead, { company: NUL }],
      ['leads', lead, { lastName: LONE }],
      ['leads', lead, { variables: { [NUL]: 'x' } }],
      ['leads', lead, { followUpAt: '0000-01-01T00:00:00Z' }],
      ['leads', lead, { followUpAt: 'next tuesday' }],
      ['activities', note, { content: NUL }],
      ['tags', tag, { name: LONE }],
    ] as const) {
      const res = await push(collection, [{ assumedMasterState: { ...doc, _deleted: false }, newDocumentState: { ...doc, ...change, _deleted: false } }]);
      expect(res.status, `${collection} ${JSON.stringify(change)}`).toBe(400);
      expectContractError(res.body, 'INVALID_INPUT');
    }
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    expect(databaseSawBadInput()).toEqual([]);
  });

  it('replication pushes refuse references to other workspaces or to nothing, like updateTag', async () => {
    const lead = await stored<Lead & Doc>('leads', fx.otherLeadId);
    const cases: [string, Partial<Lead>][] = [
      ['foreign tag', { tagId: foreign.tagId }],
      ['missing tag', { tagId: randomUUID() }],
      ['foreign lead group', { leadGroupId: foreign.leadGroupId, groupIds: [foreign.leadGroupId] }],
      ['missing extra lead group', { groupIds: [fx.leadGroupId, randomUUID()] }],
      ['missing pipeline stage', { pipelineStageId: randomUUID() }],
    ];
    for (const [label, change] of cases) {
      const before = await s.snapshot(s.ours.workspaceId);
      const res = await push('leads', [{ assumedMasterState: { ...lead, _deleted: false }, newDocumentState: { ...lead, ...change, _deleted: false } }]);
      expect(res.status, label).toBe(200);
      // The row comes back as a conflict: the stored document, unchanged.
      expect(res.body, label).toEqual([{ ...lead, _deleted: false }]);
      expect(await s.snapshot(s.ours.workspaceId), label).toEqual(before);
      expect(await stored('leads', lead.id)).toEqual(lead);
    }
    const refusals = (await (await fetch(`${s.url}/replication/refusals?since=2000-01-01T00:00:00Z`, { headers: { authorization: `Bearer ${s.ours.ownerKey}` } })).json()) as {
      refusals: { documentId: string; code: string; message: string }[];
    };
    const mine = refusals.refusals.filter((r) => r.documentId === lead.id);
    expect(mine.length).toBe(cases.length);
    expect(mine.every((r) => r.code === 'NOT_FOUND' && /was not found in this workspace/.test(r.message))).toBe(true);
    // The operation refuses the same change the same way.
    for (const tagId of [foreign.tagId, randomUUID()]) {
      await refused('campaigns.leads.updateTag', { leadGroupId: fx.leadGroupId, leadId: lead.id, tagId }, {}, 404);
    }
    // New documents that point at nothing are refused too (the server answers a deleted copy).
    const orphanMessage = {
      id: randomUUID(), workspaceId: s.ours.workspaceId, createdAt: s.clock.now().toISOString(), updatedAt: s.clock.now().toISOString(),
      leadId: foreign.leadId, sdrProfileId: fx.senderId, campaignId: null, stepId: null, chatId: 'c', direction: 'out', kind: 'message',
      text: 'hi', subject: '', status: 'sent', sentAt: null, openedAt: null, externalId: null, error: null,
    };
    const res = await push('messages', [{ newDocumentState: { ...orphanMessage, _deleted: false } }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ ...orphanMessage, _deleted: true }]);
    expect(await s.sql.query('SELECT 1 FROM documents WHERE id = $1', [orphanMessage.id])).toEqual([]);
  });

  it("the framework's own errors have the contract's body: bad URL encoding, malformed HTTP, oversize headers, body errors", async () => {
    const bad = await fetch(`${s.url}/%ff`);
    expect(bad.status).toBe(400);
    expectContractError(await bad.json(), 'INVALID_INPUT');
    const malformed = await raw(s.url, 'GARBAGE\r\n\r\n');
    expect(malformed.status).toBe(400);
    expectContractError(JSON.parse(malformed.body), 'INVALID_INPUT');
    const huge = await raw(s.url, `GET /tags.list HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge.status).toBe(431);
    expectContractError(JSON.parse(huge.body), 'INVALID_INPUT');
    const nul = await raw(s.url, 'GET /tags.list HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n');
    expect(nul.status).toBe(400);
    expectContractError(JSON.parse(nul.body));
    const longName = await fetch(`${s.url}/${'x'.repeat(500)}`);
    expect(longName.status).toBe(404);
    expectContractError(await longName.json(), 'UNKNOWN_OPERATION');
    await refused('tags.create', {}, { rawBody: '{"name": nope' });
    await refused('tags.create', {}, { rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const tooBig = await s.call<ErrorBody>(s.ours.ownerKey, 'tags.create', {}, { rawBody: `{"name":"${'x'.repeat(6 * 1024 * 1024)}"}` });
    expect(tooBig.status).toBe(413);
    expectContractError(tooBig.body, 'PAYLOAD_TOO_LARGE');
  });
});
