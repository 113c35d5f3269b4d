/** A desktop connected to a sync server creates a server-hosted sender locally (offline-first), and
 * asks the server whether its runner will connect to the sender's hosts: a refusal comes back as the
 * guard's sentence at once; when the server cannot be reached, the warning says that instead. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Backend } from '../../electron/backend/backend.ts';
import { fileCredentialStore } from '../../electron/backend/credentials.ts';
import { openMemoryLocalDb } from '../../electron/backend/local-db-port.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { sequentialIds } from '../support/harness.ts';

const NOW = '2026-11-16T10:00:00.000Z';
const KEY = `live_${'a1B2c3D4e5'.repeat(4)}`;
const REFUSAL = '10.1.2.3 is a private address: the sync server does not connect its senders into its own network. Use a public host, or have the operator set ALLOW_PRIVATE_SENDER_HOSTS=1.';

type Sent = { url: string; body: unknown };

/** The team's workspace as replication would have brought it to this desktop. */
const team = workspaceCreation(sequentialIds(5), NOW, { name: 'Team', owner: { name: 'Max Owner', email: 'max@team.test' }, subscriptionStatus: 'active' });

/** A sync server answering the identity lookups of connect() and sdrProfiles.checkHosts; `down`
 * makes the check unreachable (after connecting). */
function fakeServer() {
  const checks: Sent[] = [];
  const state = { down: false };
  const ws = { id: team.workspaceId, name: 'Team' };
  const me = { id: team.ownerId, name: 'Max Owner', email: 'max@team.test', role: 'owner' };
  const fake = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = String(input);
    if (url.endsWith('/apiKeys.list')) return Response.json({ keys: [{ id: 'k', name: 'first', prefix: KEY.slice(0, 12), memberId: me.id, createdAt: NOW, lastUsedAt: null }] });
    if (url.endsWith('/members.list')) return Response.json({ members: [me] });
    if (url.includes('/replication/workspaces/pull')) return Response.json({ documents: [{ ...ws, workspaceId: ws.id, _deleted: false }], checkpoint: null });
    if (url.endsWith('/sdrProfiles.checkHosts')) {
      if (state.down) throw new TypeError('fetch failed');
      const body = JSON.parse(String(init?.body)) as { hosts: string[] };
      checks.push({ url, body });
      return Response.json({ refusal: body.hosts.includes('10.1.2.3') ? REFUSAL : null });
    }
    if (url.endsWith('/sdrProfiles.verify')) {
      // The sync server checks the mailbox it runs and stores the result (replication brings it back).
      const body = JSON.parse(String(init?.body)) as { sdrProfileId: string };
      checks.push({ url, body });
      return Response.json({ sdrProfileId: body.sdrProfileId, name: 'Relay Sam', checkedAt: NOW, dkimSelector: null, ok: true, lines: [{ check: 'smtp', status: 'pass', message: 'SMTP: logged in to smtp.acme.test:587 as sam@acme.test.', fix: null }] });
    }
    return Response.json({ error: { code: 'UNKNOWN_OPERATION', message: 'nope' } }, { status: 404 });
  };
  return { fetch: fake as typeof fetch, checks, state };
}

const opened: Backend[] = [];
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close();
});

async function connectedBackend(fetchFn: typeof fetch, kind: 'connected' | 'demo' = 'connected') {
  const dataDir = mkdtempSync(join(tmpdir(), 'crm-hosts-'));
  const session = new SessionManager({
    dataDir,
    openDb: async ({ workspaceId }) => {
      const db = await openMemoryLocalDb({ workspaceId });
      if (workspaceId === team.workspaceId) await db.store.commit(team.writes);
      return db;
    },
    credentials: fileCredentialStore(join(dataDir, 'credentials.json')),
    buildDemo: () => {
      const ids = sequentialIds(3);
      const ws = workspaceCreation(ids, NOW, { name: 'Demo', owner: { name: 'Olga Owner', email: 'o@t.test' }, subscriptionStatus: 'active' });
      return { workspaceId: ws.workspaceId, workspaceName: 'Demo', member: { id: ws.ownerId, name: 'Olga Owner', role: 'owner' }, writes: ws.writes };
    },
    fetch: fetchFn,
    startSync: async () => ({ status: () => ({ mode: 'online', pending: 0, lastSyncedAt: null, refusals: [], error: null }), onStatus: () => () => undefined, stop: async () => undefined }),
  });
  const backend = new Backend({ session, fetch: fetchFn });
  opened.push(backend);
  if (kind === 'connected') await session.connect({ url: 'http://127.0.0.1:4000', apiKey: KEY });
  else await session.openDemo();
  return backend;
}

/** The mailbox check's line where this host does not run the sender (shared/ops/sdrProfiles.ts checkSender). */
const notChecked = (where: string) => expect.stringContaining(`Not checked: Relay Sam's login, Sent folder and DNS records are checked from ${where}`);

type Created = { id: string; status: string; statusReason: string | null; warnings: string[] };

async function create(backend: Backend, host: string, hostedBy: 'server' | 'desktop' = 'server'): Promise<Created> {
  const r = await backend.call('sdrProfiles.create', { name: 'Relay Sam', channel: 'email', channelConfig: { host, port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', hostedBy } });
  if (!r.ok) throw new Error(r.error.message);
  return r.value as Created;
}

describe('a server-hosted sender created on a connected desktop', () => {
  it('gets the sync server\'s refusal at once and is created disconnected; an accepted host is not', async () => {
    const server = fakeServer();
    const backend = await connectedBackend(server.fetch);
    const refused = await create(backend, '10.1.2.3');
    expect(refused).toMatchObject({ status: 'disconnected', statusReason: REFUSAL, warnings: [`${REFUSAL} The sender is disconnected until then.`] });
    // Its login and DNS are checked where it runs (the sync server), not on this desktop.
    expect(server.checks).toEqual([{ url: 'http://127.0.0.1:4000/sdrProfiles.checkHosts', body: { hosts: ['10.1.2.3'] } }]);
    expect(await create(backend, 'smtp.acme.test')).toMatchObject({ status: 'available', warnings: [notChecked('the sync server')] });
    // A desktop-hosted sender connects from this computer: the server is not asked. (This backend
    // has no sender check of its own, so it says it did not check the mailbox.)
    expect(await create(backend, '10.1.2.3', 'desktop')).toMatchObject({ status: 'available', warnings: [notChecked("its owner's desktop")] });
    expect(server.checks).toHaveLength(2);
  });

  it('Check again on a server-hosted mailbox asks the sync server, which runs it and keeps its password', async () => {
    const server = fakeServer();
    const backend = await connectedBackend(server.fetch);
    const created = await create(backend, 'smtp.acme.test');
    const r = await backend.call('sdrProfiles.verify', { sdrProfileId: created.id });
    expect(r).toMatchObject({ ok: true, value: { sdrProfileId: created.id, ok: true, lines: [{ check: 'smtp', status: 'pass' }] } });
    expect(server.checks.at(-1)).toEqual({ url: 'http://127.0.0.1:4000/sdrProfiles.verify', body: { sdrProfileId: created.id } });
  });

  it('offline: created available, with a warning that the server could not be asked', async () => {
    const server = fakeServer();
    const backend = await connectedBackend(server.fetch);
    server.state.down = true;
    const created = await create(backend, '10.1.2.3');
    expect(created.status).toBe('available');
    expect(created.warnings).toEqual([expect.stringMatching(/^Whether the sync server will connect to 10\.1\.2\.3 could not be checked \(the sync server could not be reached\)/), notChecked('the sync server')]);
  });

  it('in the local demo (no sync server) the warning says no server answers', async () => {
    const backend = await connectedBackend(fakeServer().fetch, 'demo');
    const created = await create(backend, '10.1.2.3');
    expect(created.warnings).toEqual([expect.stringContaining('could not be checked (no sync server answers here)'), notChecked('the sync server')]);
  });
});
