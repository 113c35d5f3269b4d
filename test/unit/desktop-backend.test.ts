/** The desktop backend's router: calls, error normalisation, live subscriptions, sessions. */
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dnsResolver } from '../../channels/dns-check.ts';
import { createSenderVerifier } from '../../channels/verify-sender.ts';
import { passingZone, startDns } from '../integration/support/dns-server.ts';
import type { TestDns } from '../integration/support/dns-server.ts';
import type { Result, SessionInfo } from '../../electron/bridge.ts';
import { Backend } from '../../electron/backend/backend.ts';
import { desktopSenderCredentials, fileCredentialStore } from '../../electron/backend/credentials.ts';
import { openMemoryLocalDb } from '../../electron/backend/local-db-port.ts';
import type { LocalDb } from '../../electron/backend/local-db-port.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import type { DemoWorkspace } from '../../electron/backend/session.ts';
import { newLead } from '../../shared/model/factories.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from '../support/harness.ts';
import { UUID_V7 } from '../support/uuid-v7.ts';

const NOW = '2026-11-16T10:00:00.000Z';

/** A small workspace: the owner, the default stages and group, and three leads. */
function smallWorkspace(): DemoWorkspace {
  const ids = sequentialIds(3);
  const ws = workspaceCreation(ids, NOW, { name: 'Test', owner: { name: 'Olga Owner', email: 'o@t.test' }, subscriptionStatus: 'active' });
  const leads = ['Ann', 'Bob', 'Cy'].map((firstName, i) => newLead({ id: ids.uuid(), workspaceId: ws.workspaceId, now: `2026-11-1${i}T00:00:00.000Z` }, ws.leadGroupId, { firstName, lastName: 'Lee', email: `${firstName.toLowerCase()}@x.test` }));
  return {
    workspaceId: ws.workspaceId, workspaceName: 'Test', member: { id: ws.ownerId, name: 'Olga Owner', role: 'owner' },
    writes: [...ws.writes, ...leads.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l }))],
  };
}

type Setup = { backend: Backend; session: SessionManager; dbs: LocalDb[]; dataDir: string };
const open: Backend[] = [];

function setup(opts: { coalesceMs?: number; watchBuilds?: LocalDb['watchBuilds'] } = {}): Setup {
  const dataDir = mkdtempSync(join(tmpdir(), 'crm-backend-'));
  const dbs: LocalDb[] = [];
  // One memory database per workspace id, kept across close/reopen like a file on disk would be.
  const byWorkspace = new Map<string, LocalDb>();
  const session = new SessionManager({
    dataDir,
    openDb: async ({ workspaceId }) => {
      let db = byWorkspace.get(workspaceId);
      if (!db) {
        db = await openMemoryLocalDb({ workspaceId });
        byWorkspace.set(workspaceId, db);
        dbs.push(db);
      }
      return { ...db, ...(opts.watchBuilds ? { watchBuilds: opts.watchBuilds } : {}), close: async () => undefined };
    },
    credentials: fileCredentialStore(join(dataDir, 'credentials.json')),
    buildDemo: smallWorkspace,
  });
  const backend = new Backend({ session, coalesceMs: opts.coalesceMs ?? 20 });
  open.push(backend);
  return { backend, session, dbs, dataDir };
}

afterEach(async () => {
  for (const b of open.splice(0)) await b.close();
});

/** Collects a subscription's answers. */
function collect(backend: Backend, op: string, input: unknown) {
  const results: Result<unknown>[] = [];
  let wake: (() => void) | null = null;
  const stop = backend.subscribe(op, input, (r) => {
    results.push(r);
    wake?.();
  });
  return {
    results,
    stop,
    async next(count: number, timeoutMs = 2000): Promise<Result<unknown>> {
      const deadline = Date.now() + timeoutMs;
      while (results.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} answers, got ${results.length}`);
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 50);
        });
      }
      return results[count - 1] as Result<unknown>;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const names = (r: Result<unknown>) => (r.ok ? (r.value as { leads: { firstName: string }[] }).leads.map((l) => l.firstName) : r.error.code);

describe('desktop backend', () => {
  it('answers no workspace until one is open, then runs operations as its member', async () => {
    const { backend } = setup();
    expect(await backend.call('tags.getAll', {})).toMatchObject({ ok: false, error: { code: 'NO_WORKSPACE' } });
    const info = await backend.session.openDemo();
    expect(info).toMatchObject({ state: 'open', kind: 'demo', member: { name: 'Olga Owner', role: 'owner' } });
    const r = await backend.call('campaigns.leads.search', { sortBy: 'fullName', sortOrder: 'asc' });
    expect(names(r)).toEqual(['Ann', 'Bob', 'Cy']);
    const note = await backend.call('leadActivities.create', { leadId: (r.ok ? (r.value as { leads: { id: string }[] }).leads[0]?.id : '') ?? '', content: 'Hello' });
    expect(note).toMatchObject({ ok: true, value: { userId: info.state === 'open' ? info.member.id : '', content: 'Hello' } });
  });

  it('says which index a local workspace’s database builds, in its sync status, and nothing once it is done', async () => {
    const watchers = new Set<(what: string | null) => void>();
    let building: string | null = null;
    const build = (what: string | null): void => {
      building = what;
      for (const w of watchers) w(what);
    };
    const { backend } = setup({
      watchBuilds: (watcher) => {
        watchers.add(watcher);
        watcher(building);
        return () => watchers.delete(watcher);
      },
    });
    const seen: (string | undefined)[] = [];
    backend.onSyncStatus((s) => seen.push(s.mode === 'local' ? (s.activity ?? 'none') : undefined));
    build('leads by creation time');
    await backend.session.openDemo();
    expect(seen.at(-1)).toBe('Building the index of leads by creation time');
    build('leads by full name');
    expect(seen.at(-1)).toBe('Building the index of leads by full name');
    build(null);
    expect(seen.at(-1)).toBe('none');
    // The workspace closed: its database's builds are not watched any more.
    await backend.session.close();
    expect(watchers.size).toBe(0);
  });

  it('gives new documents time-ordered ids (UUIDv7), ascending in the order they were made', async () => {
    const { backend } = setup();
    await backend.session.openDemo();
    const r = await backend.call('campaigns.leads.search', {});
    const leadId = r.ok ? (r.value as { leads: { id: string }[] }).leads[0]?.id : '';
    const notes: string[] = [];
    for (const content of ['first', 'second', 'third']) {
      const note = await backend.call('leadActivities.create', { leadId, content });
      notes.push(note.ok ? (note.value as { id: string }).id : '');
    }
    for (const id of notes) expect(id).toMatch(UUID_V7);
    expect([...notes].sort()).toEqual(notes);
  });

  it('turns refusals and unknown operations into {code, message, details} values', async () => {
    const { backend } = setup();
    await backend.session.openDemo();
    expect(await backend.call('no.such.op', {})).toEqual({ ok: false, error: { code: 'UNKNOWN_OPERATION', message: 'There is no operation named no.such.op.', details: { name: 'no.such.op' } } });
    const bad = await backend.call('leadActivities.create', { leadId: 'nope', content: '' });
    expect(bad).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(bad.ok ? '' : bad.error.message).toMatch(/leadId|content/);
    const stages = await backend.call('pipelineStages.getAll', {});
    const lost = stages.ok ? (stages.value as { stages: { id: string; category: string }[] }).stages.find((s) => s.category === 'LOST') : undefined;
    const leads = await backend.call('campaigns.leads.search', {});
    const leadId = leads.ok ? (leads.value as { leads: { id: string }[] }).leads[0]?.id : undefined;
    const refused = await backend.call('campaigns.leads.updateLeadStage', { leadId, pipelineStageId: lost?.id });
    expect(refused).toMatchObject({ ok: false, error: { code: 'CLOSE_REASON_REQUIRED', details: { field: 'closeReason' } } });
    // Server-only operations say why they cannot run in a local demo.
    const keys = await backend.call('apiKeys.list', {});
    expect(keys).toMatchObject({ ok: false, error: { code: 'SERVER_ONLY' } });
    expect(keys.ok ? '' : keys.error.message).toContain('Connect to a sync server in Settings');
  });

  it('re-runs a subscription when a collection it read changes, coalescing bursts and skipping unchanged answers', async () => {
    const { backend } = setup({ coalesceMs: 40 });
    await backend.session.openDemo();
    const sub = collect(backend, 'campaigns.leads.search', { sortBy: 'fullName', sortOrder: 'asc' });
    expect(names(await sub.next(1))).toEqual(['Ann', 'Bob', 'Cy']);
    const all = await backend.call('campaigns.leads.search', {});
    const leadGroupId = all.ok ? (all.value as { leads: { leadGroupId: string }[] }).leads[0]?.leadGroupId : '';
    // Three imports in one burst: one re-run, one new answer.
    await Promise.all(['Dee', 'Eve', 'Flo'].map((firstName) => backend.call('campaigns.leads.create', { leadGroupId, leads: [{ firstName, lastName: 'Lee' }] })));
    expect(names(await sub.next(2))).toEqual(['Ann', 'Bob', 'Cy', 'Dee', 'Eve', 'Flo']);
    await sleep(200);
    expect(sub.results).toHaveLength(2);
    // A note touches activities, which the lead search does not read: no re-run, no answer.
    const leadId = all.ok ? (all.value as { leads: { id: string }[] }).leads[0]?.id : '';
    await backend.call('leadActivities.create', { leadId, content: 'n' });
    await sleep(200);
    expect(sub.results).toHaveLength(2);
    // A change to another lead re-runs a search for Ann, whose answer stays the same: nothing is pushed.
    const ann = collect(backend, 'campaigns.leads.search', { query: 'Ann' });
    expect(names(await ann.next(1))).toEqual(['Ann']);
    const bob = all.ok ? (all.value as { leads: { id: string; firstName: string }[] }).leads.find((l) => l.firstName === 'Bob')?.id : '';
    expect(await backend.call('campaigns.leads.setDoNotContact', { leadIds: [bob], doNotContact: true })).toMatchObject({ ok: true, value: { changed: 1 } });
    await sleep(200);
    expect(ann.results).toHaveLength(1);
    expect(sub.results).toHaveLength(3);
    ann.stop();
    sub.stop();
    await backend.call('campaigns.leads.create', { leadGroupId, leads: [{ firstName: 'Gus' }] });
    await sleep(200);
    expect(sub.results).toHaveLength(3);
  });

  it('refuses to subscribe to an operation that changes data', async () => {
    const { backend } = setup();
    await backend.session.openDemo();
    const sub = collect(backend, 'tags.create', { name: 'X' });
    expect(await sub.next(1)).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(await backend.call('tags.getAll', {})).toMatchObject({ ok: true, value: { tags: [] } });
  });

  it('remembers the open workspace across restarts, closes it without losing data, and reopens the same demo', async () => {
    const first = setup();
    const opened = await first.backend.session.openDemo();
    const saved = JSON.parse(readFileSync(join(first.dataDir, 'session.json'), 'utf8')) as { workspaceId: string };
    expect(opened.state === 'open' && saved.workspaceId === opened.workspaceId).toBe(true);
    const sessionEvents: SessionInfo[] = [];
    first.backend.onSession((i) => sessionEvents.push(i));
    const closed = await first.backend.session.close();
    expect(closed.state).toBe('none');
    expect(sessionEvents.map((e) => e.state)).toEqual(['none']);
    expect(await first.backend.call('tags.getAll', {})).toMatchObject({ ok: false, error: { code: 'NO_WORKSPACE' } });
    const again = await first.backend.session.openDemo();
    expect(again.state === 'open' && opened.state === 'open' && again.workspaceId === opened.workspaceId).toBe(true);
    // Same data: no second copy of the demo was seeded.
    const r = await first.backend.call('campaigns.leads.search', {});
    expect(names(r)).toHaveLength(3);
  });

  it('answers subscriptions made before a workspace opens once it does', async () => {
    const { backend } = setup();
    const sub = collect(backend, 'tags.getAll', {});
    expect(await sub.next(1)).toMatchObject({ ok: false, error: { code: 'NO_WORKSPACE' } });
    await backend.session.openDemo();
    expect(await sub.next(2)).toEqual({ ok: true, value: { tags: [] } });
  });
});

describe('connecting to a sync server', () => {
  const KEY = `live_${'a1B2c3D4e5'.repeat(4)}`;

  /** A fake server answering the three identity lookups. */
  function fakeServer(opts: { status?: number } = {}): { fetch: typeof fetch; calls: string[] } {
    const calls: string[] = [];
    const ws = { id: '11111111-1111-4111-8111-111111111111', name: 'Team' };
    const me = { id: '22222222-2222-4222-8222-222222222222', name: 'Max Member', email: 'max@team.test', role: 'member' };
    const fake = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = String(input);
      calls.push(`${url} ${new Headers(init?.headers).get('authorization') ?? ''}`);
      if (opts.status) return Response.json({ error: { code: 'UNAUTHENTICATED', message: 'Unknown or revoked API key.' } }, { status: opts.status });
      if (url.endsWith('/apiKeys.list')) return Response.json({ keys: [{ id: 'k', name: 'first', prefix: KEY.slice(0, 12), memberId: me.id, createdAt: NOW, lastUsedAt: null }] });
      if (url.endsWith('/members.list')) return Response.json({ members: [me] });
      if (url.includes('/replication/workspaces/pull')) return Response.json({ documents: [{ ...ws, workspaceId: ws.id, _deleted: false }], checkpoint: null });
      return Response.json({ error: { code: 'UNKNOWN_OPERATION', message: 'nope' } }, { status: 404 });
    };
    return { fetch: fake as typeof fetch, calls };
  }

  function connectSetup(fetchFn: typeof fetch) {
    const dataDir = mkdtempSync(join(tmpdir(), 'crm-connect-'));
    const credentials = fileCredentialStore(join(dataDir, 'credentials.json'));
    const started: { serverUrl: string; apiKey: string }[] = [];
    let stopped = 0;
    const session = new SessionManager({
      dataDir,
      openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }),
      credentials,
      buildDemo: smallWorkspace,
      fetch: fetchFn,
      startSync: async ({ serverUrl, apiKey }) => {
        started.push({ serverUrl, apiKey });
        return { status: () => ({ mode: 'online', pending: 0, lastSyncedAt: null, refusals: [], error: null }), onStatus: () => () => undefined, stop: async () => void stopped++ };
      },
    });
    const backend = new Backend({ session });
    open.push(backend);
    return { session, credentials, started, stopped: () => stopped };
  }

  it('identifies the member behind the key, keeps the key, and starts syncing', async () => {
    const server = fakeServer();
    const s = connectSetup(server.fetch);
    const info = await s.session.connect({ url: ' http://127.0.0.1:4000/ ', apiKey: KEY });
    expect(info).toMatchObject({ state: 'open', kind: 'connected', workspaceName: 'Team', serverUrl: 'http://127.0.0.1:4000', member: { name: 'Max Member', role: 'member' } });
    expect(server.calls.every((c) => c.endsWith(`Bearer ${KEY}`))).toBe(true);
    expect(s.started).toEqual([{ serverUrl: 'http://127.0.0.1:4000', apiKey: KEY }]);
    expect(await s.credentials.get('sync-server:11111111-1111-4111-8111-111111111111')).toBe(KEY);
    await s.session.close();
    expect(s.stopped()).toBe(1);
    expect(await s.credentials.get('sync-server:11111111-1111-4111-8111-111111111111')).toBeNull();
  });

  it('says in words what is wrong with the address, the key, or the answer', async () => {
    const s = connectSetup(fakeServer().fetch);
    await expect(s.session.connect({ url: 'sync dot example', apiKey: KEY })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('is not a web address') });
    await expect(s.session.connect({ url: 'http://127.0.0.1:4000', apiKey: 'secret' })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('starts with live_') });
    const refused = connectSetup(fakeServer({ status: 401 }).fetch);
    await expect(refused.session.connect({ url: 'http://127.0.0.1:4000', apiKey: KEY })).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'The sync server refused the API key: Unknown or revoked API key.' });
    const down = connectSetup((async () => {
      throw new TypeError('fetch failed');
    }) as typeof fetch);
    await expect(down.session.connect({ url: 'http://127.0.0.1:9', apiKey: KEY })).rejects.toMatchObject({ code: 'SERVER_UNREACHABLE', message: 'The sync server at http://127.0.0.1:9 could not be reached (fetch failed).' });
    expect(s.session.info().state).toBe('none');
  });
});

describe("senders' secrets on this desktop", () => {
  // The mailbox is real (smtp-server on loopback) and so is the DNS its check asks (dns2), as on a
  // user's desktop: the login is checked before the sender is created.
  let smtp: SMTPServer;
  let smtpPort = 0;
  let dns: TestDns;
  beforeAll(async () => {
    smtp = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onAuth(auth, _session, cb) {
        if (auth.username === 'me@example.test' && auth.password === 'hunter2') cb(null, { user: auth.username });
        else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
    smtpPort = (smtp.server.address() as AddressInfo).port;
    dns = await startDns(passingZone('example.test'));
  });
  afterAll(async () => {
    await new Promise<void>((r) => smtp.close(() => r()));
    await dns.close();
  });

  it('keeps an SMTP password given to a desktop-hosted sender in the credential store, never in the document; a refused login creates nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'crm-secrets-'));
    const store = fileCredentialStore(join(dataDir, 'credentials.json'));
    const session = new SessionManager({ dataDir, openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }), credentials: store, buildDemo: smallWorkspace });
    const senderVerifier = createSenderVerifier({ hostedBy: 'desktop', resolve: dnsResolver(dns.servers), timeoutMs: 5_000, smtpPasswordFor: () => null });
    const backend = new Backend({ session, senderCredentials: desktopSenderCredentials(store), senderVerifier });
    open.push(backend);
    const info = await session.openDemo();
    const config = (password: string) => ({ host: '127.0.0.1', port: smtpPort, secure: false, user: 'me@example.test', from: 'me@example.test', password });
    const before = JSON.stringify(await backend.call('sdrProfiles.list', {}));
    const refused = await backend.call('sdrProfiles.create', { name: 'Mail Box', channel: 'email', channelConfig: config('wrong-one') });
    expect(refused).toMatchObject({ ok: false, error: { code: 'SENDER_CHECK_FAILED', message: expect.stringContaining('Mail Box was not connected: SMTP: 127.0.0.1 refused the login of me@example.test') } });
    expect(JSON.stringify(await backend.call('sdrProfiles.list', {}))).toBe(before);
    const kept = join(dataDir, 'credentials.json');
    expect(existsSync(kept) ? readFileSync(kept, 'utf8') : '').not.toContain('wrong-one');
    const created = await backend.call('sdrProfiles.create', { name: 'Mail Box', channel: 'email', channelConfig: config('hunter2') });
    expect(created.ok, JSON.stringify(created)).toBe(true);
    const id = created.ok ? (created.value as { id: string }).id : '';
    const workspaceId = info.state === 'open' ? info.workspaceId : '';
    expect(await desktopSenderCredentials(store).secretFor(workspaceId, id)).toBe('hunter2');
    const set = await backend.call('sdrProfiles.setCredentials', { sdrProfileId: id, secret: 'correct horse' });
    expect(set).toMatchObject({ ok: true, value: { storedOn: 'desktop' } });
    expect(await desktopSenderCredentials(store).secretFor(workspaceId, id)).toBe('correct horse');
    const listed = await backend.call('sdrProfiles.list', {});
    expect(JSON.stringify(listed)).not.toContain('correct horse');
    // Without Electron's keychain the file is readable by this user only.
    expect(statSync(join(dataDir, 'credentials.json')).mode & 0o777).toBe(0o600);
  });
});
