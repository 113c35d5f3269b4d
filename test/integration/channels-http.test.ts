/** The HTTP connector channel against a mock connector on loopback that implements
 * docs/http-connector.md: bearer auth, idempotent actions, events with a cursor, post reads,
 * account state, and the error statuses. */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeHarness, seededRandom, testSecrets } from '../support/harness.ts';
import { createHttpConnector, retryAfterSeconds } from '../../channels/http-connector.ts';
import { channelHostOf } from '../../shared/engine/channel.ts';
import type { ChannelEvent } from '../../shared/engine/channel.ts';
import { createRunner } from '../../shared/engine/runner.ts';
import { newEnrollment, newStep } from '../../shared/model/factories.ts';

type Answer = { status: number; headers?: Record<string, string>; body?: unknown };
type Seen = { method: string; path: string; auth: string | undefined; query: URLSearchParams; body: unknown };

/** A small, complete reference connector. */
const mock = {
  token: 'secret-token',
  seen: [] as Seen[],
  byKey: new Map<string, unknown>(),
  performed: 0,
  events: [] as ChannelEvent[],
  next: [] as Answer[],
  account: { canSendMessage: true, reason: null as string | null },
  reset() {
    this.seen = [];
    this.byKey.clear();
    this.performed = 0;
    this.events = [];
    this.next = [];
    this.account = { canSendMessage: true, reason: null };
  },
};

function answer(res: ServerResponse, a: Answer): void {
  res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
  res.end(a.body === undefined ? '' : JSON.stringify(a.body));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  let raw = '';
  for await (const chunk of req) raw += String(chunk);
  const body: unknown = raw ? JSON.parse(raw) : null;
  mock.seen.push({ method: req.method ?? '', path: url.pathname, auth: req.headers.authorization, query: url.searchParams, body });
  if (req.headers.authorization !== `Bearer ${mock.token}`) return answer(res, { status: 401, body: { error: { code: 'BAD_TOKEN', message: 'The token is not valid.' } } });
  const scripted = mock.next.shift();
  if (scripted) return answer(res, scripted);
  const m = /^\/v1\/accounts\/([^/]+)(\/actions|\/events|\/posts)?$/.exec(url.pathname);
  if (!m) return answer(res, { status: 404, body: { error: { code: 'NOT_FOUND', message: 'No such route.' } } });
  const route = m[2] ?? '';
  if (req.method === 'POST' && route === '/actions') {
    const b = body as { idempotencyKey: string; recipient: { leadId: string } };
    const known = mock.byKey.get(b.idempotencyKey);
    if (known) return answer(res, { status: 200, body: known });
    mock.performed++;
    const result = { status: 'sent', externalId: `ext-${mock.performed}`, chatId: `conv-${b.recipient.leadId.slice(-6)}` };
    mock.byKey.set(b.idempotencyKey, result);
    return answer(res, { status: 201, body: result });
  }
  if (req.method === 'GET' && route === '/events') {
    const from = Number(url.searchParams.get('cursor') ?? '0');
    return answer(res, { status: 200, body: { events: mock.events.slice(from), cursor: String(mock.events.length) } });
  }
  if (req.method === 'GET' && route === '/posts') {
    const part = url.searchParams.get('part') ?? 'comments';
    const max = Number(url.searchParams.get('maxSearches') ?? '0');
    const total = part === 'comments' ? 25 : 12;
    const pages = Math.min(max, Math.ceil(total / 10));
    const items = Array.from({ length: Math.min(total, pages * 10) }, (_, i) => ({
      author: `Person ${part} ${i}`, text: part === 'comments' ? `Comment ${i}` : 'LIKE', date: '2026-11-10T08:00:00Z',
      authorDetails: { headline: 'Founder at Somewhere', profileUrl: `https://social.example/in/${part}-${i}` },
    }));
    return answer(res, { status: 200, body: { items, total, searchesUsed: pages, complete: pages * 10 >= total } });
  }
  if (req.method === 'GET' && route === '') return answer(res, { status: 200, body: mock.account });
  return answer(res, { status: 404, body: { error: { code: 'NOT_FOUND', message: 'No such route.' } } });
}

let server: Server;
let baseUrl = '';

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res).catch(() => answer(res, { status: 500 })));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => mock.reset());

async function world(token = 'secret-token') {
  let clockNow = () => Date.now();
  const connector = createHttpConnector({ tokenFor: () => token, now: () => clockNow() });
  const h = await makeHarness({ channels: channelHostOf({ http: connector }) });
  clockNow = () => h.clock.now().getTime();
  const sender = await h.addSender({ name: 'Connector Cara', channel: 'http', channelConfig: { baseUrl, accountId: 'acct 1' } });
  const runner = createRunner({
    store: h.store, clock: h.clock, random: seededRandom(5), ids: h.ids, randomBytes: testSecrets.randomBytes, channels: channelHostOf({ http: connector }),
    actor: { ...h.owner, isSystem: true }, spacing: { minSeconds: 0, jitterSeconds: 0 },
  });
  async function enrolled(steps = [newStep(h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name}}' })]) {
    const campaign = await h.addCampaign({ senderIds: [sender.id], steps, running: true });
    const lead = await h.addLead({ firstName: 'Ada', lastName: 'Lovelace', socialUrl: 'https://social.example/in/ada', company: 'Analytical' });
    const e = newEnrollment(h.stamp(), lead.id, campaign.id, { sdrProfileId: sender.id, currentStepId: steps[0]?.id ?? null });
    await h.seed([{ collection: 'enrollments', id: e.id, before: null, after: e }]);
    return { campaign, lead, e };
  }
  return { h, connector, sender, runner, enrolled };
}

const actions = () => mock.seen.filter((s) => s.path.endsWith('/actions'));

describe('HTTP connector channel', () => {
  it('performs campaign steps with bearer auth, recipient details and our message id as idempotency key, and applies the events it reports', async () => {
    const w = await world();
    const note = newStep(w.h.ids.uuid(), 'CONNECTION_REQUEST', { content: 'Hello {{First name}}' });
    const msg = newStep(w.h.ids.uuid(), 'SEND_MESSAGE', { content: 'Hi {{First name}}' });
    const { lead, e, campaign } = await w.enrolled([msg, note, newStep(w.h.ids.uuid(), 'WAIT', { waitTimeSeconds: 86_400 })]);
    const r = await w.runner.tick();
    expect(r.errors).toEqual([]);
    expect(r.actions).toBe(1);
    const [first] = actions();
    expect(first?.path).toBe('/v1/accounts/acct%201/actions');
    expect(first?.auth).toBe('Bearer secret-token');
    const { docs: sent } = await w.h.store.query('messages');
    expect(first?.body).toEqual({
      idempotencyKey: sent[0]?.id,
      recipient: { leadId: lead.id, profileUrl: 'https://social.example/in/ada', email: '', firstName: 'Ada', lastName: 'Lovelace', fullName: 'Ada Lovelace', company: 'Analytical' },
      action: { kind: 'message', text: 'Hi Ada', chatId: null, voiceNote: null },
    });
    expect(sent[0]).toMatchObject({ status: 'sent', externalId: 'ext-1', chatId: `conv-${lead.id.slice(-6)}` });

    await w.runner.tick();
    expect(actions()[1]?.body).toMatchObject({ action: { kind: 'connection_request', note: 'Hello Ada' } });

    mock.events.push({ kind: 'connection_accepted', leadId: lead.id, at: w.h.now() });
    mock.events.push({ kind: 'reply', leadId: lead.id, chatId: `conv-${lead.id.slice(-6)}`, text: 'Happy to talk', at: w.h.now(), externalId: 'ext-r1' });
    const r3 = await w.runner.tick();
    expect(r3.events).toMatchObject({ replies: 1, connectionsAccepted: 1 });
    expect((await w.h.store.get('enrollments', e.id))?.status).toBe('REPLIED');
    expect((await w.h.store.query('messages', { where: { op: 'eq', field: 'direction', value: 'in' } })).docs.map((m) => [m.text, m.campaignId])).toEqual([['Happy to talk', campaign.id]]);
    // The cursor is stored on the sender and sent back unchanged; events are not applied twice.
    expect((await w.h.store.get('senders', w.sender.id))?.pollCursor).toBe('2');
    const again = await w.runner.tick();
    expect(again.events.replies).toBe(0);
    expect(mock.seen.filter((s) => s.path.endsWith('/events')).at(-1)?.query.get('cursor')).toBe('2');
  });

  it('a 429 with Retry-After limits the sender visibly; the retried action reuses its idempotency key and is performed once', async () => {
    const w = await world();
    const { e } = await w.enrolled();
    mock.next.push({ status: 200, body: { events: [], cursor: '0' } }); // the poll of this tick
    mock.next.push({ status: 429, headers: { 'retry-after': '120' }, body: { error: { code: 'SLOW_DOWN', message: 'Too many actions this hour.' } } });
    const r = await w.runner.tick();
    expect(r.senders.limited).toEqual([w.sender.id]);
    const s = await w.h.store.get('senders', w.sender.id);
    expect(s?.status).toBe('limited');
    expect(s?.backoffUntil).toBe('2026-11-16T10:02:00.000Z');
    expect(s?.statusReason).toMatch(/HTTP 429 SLOW_DOWN: Too many actions this hour/);
    expect((await w.h.store.get('enrollments', e.id))?.nextActionAt).toBe('2026-11-16T10:02:00.000Z');
    w.h.clock.advance(60_000);
    expect((await w.runner.tick()).actions).toBe(0);
    w.h.clock.advance(60_000);
    const back = await w.runner.tick();
    expect(back.senders.resumed).toEqual([w.sender.id]);
    expect(back.actions).toBe(1);
    const keys = actions().map((a) => (a.body as { idempotencyKey: string }).idempotencyKey);
    expect(keys.length).toBe(2);
    expect(keys[0]).toBe(keys[1]);
    expect(mock.performed).toBe(1);
    expect((await w.h.store.get('senders', w.sender.id))?.status).toBe('available');
  });

  it('maps error statuses: 422 refuses the action for the lead, 500 backs off, 401 disconnects', async () => {
    const w = await world();
    const { e } = await w.enrolled();
    mock.next.push({ status: 200, body: { events: [], cursor: '0' } });
    mock.next.push({ status: 422, body: { error: { code: 'NOT_CONNECTED', message: 'Ada is not a connection of this account.' } } });
    await w.runner.tick();
    expect((await w.h.store.get('enrollments', e.id))?.stoppedReason).toMatch(/Ada is not a connection/);
    expect((await w.h.store.query('messages')).docs.map((m) => [m.status, m.error])).toEqual([['failed', 'Ada is not a connection of this account.']]);

    const second = await w.enrolled();
    mock.next.push({ status: 200, body: { events: [], cursor: '0' } });
    mock.next.push({ status: 500, body: { error: { code: 'BOOM', message: 'internal' } } });
    await w.runner.tick();
    const s = await w.h.store.get('senders', w.sender.id);
    expect(s?.status).toBe('limited');
    expect(s?.backoffUntil).toBe('2026-11-16T10:15:00.000Z');
    expect((await w.h.store.get('enrollments', second.e.id))?.status).toBe('IN_PROGRESS');

    const bad = await world('stolen-token');
    await bad.enrolled();
    const r = await bad.runner.tick();
    expect(r.senders.disconnected).toEqual([bad.sender.id]);
    expect((await bad.h.store.get('senders', bad.sender.id))?.statusReason).toMatch(/The token is not valid/);
  });

  it('is idempotent by key and understands Retry-After dates', async () => {
    const w = await world();
    const lead = await w.h.addLead({ firstName: 'Bo' });
    const action = { kind: 'profile_visit' } as const;
    const a = await w.connector.send(w.sender, lead, action, '0f0f0f0f-0000-4000-8000-000000000001');
    const b = await w.connector.send(w.sender, lead, action, '0f0f0f0f-0000-4000-8000-000000000001');
    expect(b).toEqual(a);
    expect(mock.performed).toBe(1);
    expect(retryAfterSeconds('Mon, 16 Nov 2026 10:05:00 GMT', Date.parse('2026-11-16T10:00:00Z'))).toBe(300);
    expect(retryAfterSeconds('30', 0)).toBe(30);
    expect(retryAfterSeconds('soon', 0)).toBeNull();
  });

  it('reads posts for the social operations, counting the searches the connector used, and reports the account state', async () => {
    const w = await world();
    const r = await w.h.call('social.getPostEngagement', { senderProfileId: w.sender.id, postUrl: 'https://social.example/posts/42' });
    expect([r.totalComments, r.comments.length, r.totalReactions, r.reactions.length]).toEqual([25, 25, 12, 12]);
    expect(r.dailyUsageAfterComments.todayUsage).toBe(3);
    expect(r.dailyUsage.todayUsage).toBe(5);
    const postReads = mock.seen.filter((s) => s.path.endsWith('/posts'));
    expect(postReads.map((s) => [s.query.get('part'), s.query.get('url'), s.query.get('maxSearches')])).toEqual([
      ['comments', 'https://social.example/posts/42', '100'],
      ['reactions', 'https://social.example/posts/42', '97'],
    ]);
    mock.account = { canSendMessage: false, reason: 'The account must confirm its email first.' };
    expect(await w.connector.accountInfo(w.sender)).toEqual({ canSendMessage: false, reason: 'The account must confirm its email first.' });
    const limits = await w.h.call('social.getAccountLimits', { senderProfileId: w.sender.id });
    expect(limits.accounts[0]?.canSendMessage).toBe(false);
  });
});
