/**
 * The desktop's one client for the sync server (electron/backend/server-client.ts): what every
 * request carries, the one error mapping, and that a server that cannot be reached reaches the UI
 * the same way from the connect screen, a server-only operation and the sync status. Against the
 * real sync server where it can answer; a plain HTTP server plays what stands in front of one
 * (a gateway, another web server) and records what the client sends.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Backend, toBridgeError } from '../../electron/backend/backend.ts';
import { fileCredentialStore } from '../../electron/backend/credentials.ts';
import { openLocalDatabase } from '../../electron/backend/local-db.ts';
import { openMemoryLocalDb } from '../../electron/backend/local-db-port.ts';
import { startSync } from '../../electron/backend/replication.ts';
import { answerError, ServerClient, ServerError } from '../../electron/backend/server-client.ts';
import { SessionManager } from '../../electron/backend/session.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import { pullPageSchema } from '../../shared/wire/replication.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const WELL_FORMED = `live_${'Zz9'.repeat(14)}`;

/** Something other than a sync server on a loopback port: answers by path, records every request. */
type Recorded = { method: string; url: string; headers: IncomingHttpHeaders; body: string };
async function plainServer(): Promise<{ url: string; requests: Recorded[]; close(): Promise<void> }> {
  const requests: Recorded[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const path = (req.url ?? '').split('?')[0];
      if (path === '/slow') return; // never answers
      if (path === '/gateway') return void res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>');
      if (path === '/html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
      if (path === '/replication/leads/pull') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ documents: [{ firstName: 'no id' }], checkpoint: null }));
      if (path === '/newer') return void res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'SOMETHING_NEW', message: 'A rule this app does not know yet.', details: { x: 1 } } }));
      if (path === '/ok') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A loopback address nothing listens on. */
async function closedPort(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  await new Promise((r) => s.close(r));
  return url;
}

const failure = async (p: Promise<unknown>): Promise<ServerError> => {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  if (!(e instanceof ServerError)) throw new Error(`expected a ServerError, got ${String(e)}`);
  return e;
};

describe('what a request carries', () => {
  let plain: Awaited<ReturnType<typeof plainServer>>;
  beforeAll(async () => {
    plain = await plainServer();
  });
  afterAll(async () => {
    await plain.close();
  });

  it('refuses a malformed key before asking anything', () => {
    for (const key of ['secret', 'live_short', `live_${'a'.repeat(31)}`, `test_${'a'.repeat(40)}`]) {
      expect(() => new ServerClient(plain.url, key), key).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', message: 'An API key starts with live_ followed by at least 32 letters and digits.' }));
    }
    expect(plain.requests).toEqual([]);
  });

  it('sends the key, the schema version on replication calls only, JSON bodies, and lists as repeated query parameters', async () => {
    const client = new ServerClient(`${plain.url}//`, ` ${WELL_FORMED} `);
    await client.json('/ok', { collection: 'leads' });
    await client.operation('ok', 'GET', { tags: ['a', 'b'], none: null, n: 2 });
    await client.operation('ok', 'POST', { name: 'x' });
    const [pull, get, post] = plain.requests.slice(-3);
    expect(pull).toMatchObject({ method: 'GET', url: '/ok', headers: { authorization: `Bearer ${WELL_FORMED}`, 'x-schema-version': String(COLLECTIONS.leads.schema.version) } });
    expect(get).toMatchObject({ method: 'GET', url: '/ok?tags=a&tags=b&n=2' });
    expect(get?.headers['x-schema-version']).toBeUndefined();
    expect(post).toMatchObject({ method: 'POST', url: '/ok', body: '{"name":"x"}', headers: { 'content-type': 'application/json' } });
  });

  it('maps every way of not getting a usable answer to one error with a stable code', async () => {
    const client = new ServerClient(plain.url, WELL_FORMED);
    const slow = await failure(client.json('/slow', { timeoutMs: 150 }));
    expect([slow.code, slow.status, slow.message]).toEqual(['SERVER_UNREACHABLE', 0, `The sync server at ${plain.url} could not be reached (no answer in time).`]);
    const gateway = await failure(client.json('/gateway'));
    expect([gateway.code, gateway.message]).toEqual(['SERVER_UNREACHABLE', `The sync server at ${plain.url} could not be reached (its gateway answered 502).`]);
    const missing = await failure(client.json('/apiKeys.list?x=1'));
    expect([missing.code, missing.status, missing.message]).toEqual(['NOT_FOUND', 404, `The server at ${plain.url} has no /apiKeys.list (404); it may not be a sync server, or an older version of it.`]);
    const html = await failure(client.json('/html'));
    expect([html.code, html.message]).toEqual(['INTERNAL', `The server at ${plain.url} did not answer /html with JSON; it may not be a sync server.`]);
    const malformed = await failure(client.checked(pullPageSchema, '/replication/leads/pull?limit=5', { collection: 'leads' }));
    expect(malformed.code).toBe('INTERNAL');
    expect(malformed.message).toMatch(new RegExp(`^The sync server at ${plain.url} answered /replication/leads/pull with something this app does not understand at documents\\.0\\.id: `));
    const newer = await failure(client.json('/newer'));
    expect([newer.code, newer.status, newer.message, newer.details]).toEqual(['INTERNAL', 409, 'A rule this app does not know yet.', { x: 1, serverCode: 'SOMETHING_NEW' }]);
    const down = await closedPort();
    const refused = await failure(new ServerClient(down, WELL_FORMED).json('/ok'));
    expect(refused.code).toBe('SERVER_UNREACHABLE');
    expect(refused.message).toMatch(new RegExp(`^The sync server at ${down} could not be reached \\(fetch failed: connect ECONNREFUSED`));
  });

  it('tells an app older than the server to update, once', () => {
    const serverSays = 'This app is out of date: it syncs leads with schema version 1, the server has version 2. Update the app to keep syncing; your local changes are kept until then.';
    const outdated = answerError('http://s', '/replication/leads/pull', 426, { error: { code: 'CLIENT_OUTDATED', message: serverSays, details: {} } });
    expect([outdated.code, outdated.needsUser, outdated.message]).toEqual(['CLIENT_OUTDATED', true, `This app is older than the sync server: ${serverSays}`]);
    const terse = answerError('http://s', '/replication/leads/pull', 426, { error: { code: 'CLIENT_OUTDATED', message: 'Schema 2 expected.', details: {} } });
    expect(terse.message).toBe('This app is older than the sync server: Schema 2 expected. Update the app to keep syncing.');
  });
});

describe('against the sync server', () => {
  let s: TestServer;
  let dir: string;
  beforeAll(async () => {
    s = await startTestServer('pglite');
    dir = mkdtempSync(join(tmpdir(), 'server-client-'));
  });
  afterAll(async () => {
    await s?.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('identifies a key, and passes on a refused key and a missing permission as errors that need the user', async () => {
    const who = await new ServerClient(s.url, s.ours.memberKey).identify();
    expect(who).toEqual({ workspaceId: s.ours.workspaceId, workspaceName: 'Acme', member: { id: s.ours.memberId, name: 'Acme Member', role: 'member' } });
    const unknown = await failure(new ServerClient(s.url, WELL_FORMED).identify());
    expect([unknown.code, unknown.status, unknown.needsUser, unknown.details.field]).toEqual(['UNAUTHENTICATED', 401, true, 'apiKey']);
    expect(unknown.message).toMatch(/^The sync server refused the API key: .+\.$/);
    const denied = await failure(new ServerClient(s.url, s.ours.memberKey).operation('members.create', 'POST', { name: 'Eve', email: 'eve@acme.test', role: 'member' }));
    expect([denied.code, denied.status, denied.needsUser]).toEqual(['PERMISSION_DENIED', 403, true]);
  });

  it('shows an unreachable server the same way on the connect screen, for a server-only operation, and in the sync status', async () => {
    const session = new SessionManager({
      dataDir: dir,
      openDb: ({ workspaceId }) => openMemoryLocalDb({ workspaceId }),
      credentials: fileCredentialStore(join(dir, 'credentials.json')),
      buildDemo: () => {
        throw new Error('no demo here');
      },
    });
    const backend = new Backend({ session });
    const local = await openLocalDatabase({ dir: join(dir, 'local'), workspaceId: s.ours.workspaceId, actor: { workspaceId: s.ours.workspaceId, memberId: s.ours.memberId, role: 'member' } });
    try {
      await session.connect({ url: s.url, apiKey: s.ours.memberKey });
      expect(await backend.call('members.create', { name: 'Eve', email: 'eve@acme.test', role: 'member' })).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
      await s.close();

      const sentence = new RegExp(`^The sync server at ${s.url} could not be reached \\(fetch failed`);
      const connect = toBridgeError(await session.connect({ url: s.url, apiKey: s.ours.memberKey }).catch((e: unknown) => e));
      expect(connect.code).toBe('SERVER_UNREACHABLE');
      expect(connect.message).toMatch(sentence);
      const op = await backend.call('members.create', { name: 'Eve', email: 'eve@acme.test', role: 'member' });
      expect(op).toMatchObject({ ok: false, error: { code: 'SERVER_UNREACHABLE', details: { serverUrl: s.url } } });
      expect(op.ok ? '' : op.error.message).toMatch(sentence);
      const sync = await startSync({ db: local, serverUrl: s.url, apiKey: s.ours.memberKey, retryMs: 50, backoffMs: 20, maxBackoffMs: 50 });
      try {
        await expect.poll(() => sync.status().error ?? '', { timeout: 5_000 }).toMatch(sentence);
        expect(sync.status().mode).toBe('offline');
      } finally {
        await sync.stop();
      }
    } finally {
      await backend.close();
      await local.close();
    }
  });
});
