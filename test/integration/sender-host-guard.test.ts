/** Over HTTP: a server-hosted sender whose host the sync server's address guard refuses is reported
 * by sdrProfiles.create at once (the guard's sentence as a warning) and shows as disconnected with
 * that reason in sdrProfiles.list, instead of failing when the runner first sends. The suite's
 * config allows private hosts for every test (ALLOW_PRIVATE_SENDER_HOSTS=1); this file turns the
 * guard on for its own servers. */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type SenderOut = { id: string; status: string; statusReason: string | null; warnings: string[] };
type ListOut = { sdrProfiles: { id: string; status: string; statusReason: string | null }[] };

const smtp = (host: string) => ({ host, port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', hostedBy: 'server' });

const servers: TestServer[] = [];
/** A mail relay on loopback (a private address, as an office relay would be) that takes one login. */
let relay: SMTPServer;
let relayPort = 0;
beforeAll(async () => {
  relay = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === 'sam@acme.test' && auth.password === 'relay-pass') cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  relayPort = (relay.server.address() as AddressInfo).port;
});
afterEach(() => {
  vi.unstubAllEnvs();
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await new Promise<void>((r) => relay.close(() => r()));
});

/** A server built with the guard on (the default of a real deployment) or off. */
async function server(guard: boolean): Promise<TestServer> {
  vi.stubEnv('ALLOW_PRIVATE_SENDER_HOSTS', guard ? '' : '1');
  const s = await startTestServer('pglite');
  servers.push(s);
  return s;
}

async function create(s: TestServer, name: string, channelConfig: Record<string, unknown>): Promise<SenderOut> {
  const res = await s.call<SenderOut>(s.ours.ownerKey, 'sdrProfiles.create', { name, channel: 'email', channelConfig });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function listed(s: TestServer, id: string) {
  const res = await s.call<ListOut>(s.ours.memberKey, 'sdrProfiles.list', {}, { method: 'GET' });
  expect(res.status).toBe(200);
  return res.body.sdrProfiles.find((p) => p.id === id);
}

describe('the sender host guard at creation', () => {
  it('guard on: an SMTP relay at 10.1.2.3 gets the guard\'s sentence as a warning, and its status says it afterwards', async () => {
    const s = await server(true);
    const created = await create(s, 'Relay Sam', smtp('10.1.2.3'));
    expect(created.warnings).toHaveLength(1);
    expect(created.warnings[0]).toContain('10.1.2.3 is a private address: the sync server does not connect its senders into its own network');
    expect(created.warnings[0]).toContain('ALLOW_PRIVATE_SENDER_HOSTS=1');
    expect(created.status).toBe('disconnected');
    expect(await listed(s, created.id)).toMatchObject({ status: 'disconnected', statusReason: expect.stringContaining('10.1.2.3 is a private address') });
  });

  it('guard on: a public host is not refused by the guard; the login check goes on to it (here, offline, it cannot be reached, so nothing is created)', async () => {
    const s = servers[0] ?? (await server(true));
    const before = JSON.stringify(await s.snapshot(s.ours.workspaceId));
    const res = await s.call<{ error: { code: string; message: string } }>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Public Sam', channel: 'email', channelConfig: { ...smtp('93.184.216.34'), password: 'p' } });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('SENDER_CHECK_FAILED');
    expect(res.body.error.message).toContain('SMTP: 93.184.216.34:587 could not be reached');
    expect(res.body.error.message).not.toContain('private address');
    expect(JSON.stringify(await s.snapshot(s.ours.workspaceId))).toBe(before);
  }, 30_000);

  it('guard on: sdrProfiles.checkHosts (what a connected desktop asks) answers the same sentence, or null', async () => {
    const s = servers[0] ?? (await server(true));
    const refused = await s.call<{ refusal: string | null }>(s.ours.memberKey, 'sdrProfiles.checkHosts', { hosts: ['93.184.216.34', '10.1.2.3'] });
    expect(refused.status).toBe(200);
    expect(refused.body.refusal).toMatch(/^10\.1\.2\.3 is a private address: the sync server does not connect/);
    const fine = await s.call<{ refusal: string | null }>(s.ours.memberKey, 'sdrProfiles.checkHosts', { hosts: ['93.184.216.34'] });
    expect(fine.body).toEqual({ refusal: null });
  });

  it('guard off (ALLOW_PRIVATE_SENDER_HOSTS=1): a relay on a private address is checked like any host and is available', async () => {
    const s = await server(false);
    const created = await create(s, 'Relay Sam', { ...smtp('127.0.0.1'), port: relayPort, password: 'relay-pass' });
    // Logged in; its only finding is that no IMAP mailbox is read (acme.test's DNS is set up in the test DNS).
    expect(created).toMatchObject({ warnings: [expect.stringContaining('IMAP: no mailbox settings')], status: 'available', statusReason: null });
    expect(await listed(s, created.id)).toMatchObject({ status: 'available' });
    // Guard on, the same loopback relay is refused by the guard before any login.
    const guarded = await create(servers[0] ?? (await server(true)), 'Relay Sam', { ...smtp('127.0.0.1'), port: relayPort, password: 'relay-pass' });
    expect(guarded).toMatchObject({ status: 'disconnected', statusReason: expect.stringContaining('127.0.0.1 is a loopback address') });
  });
});
