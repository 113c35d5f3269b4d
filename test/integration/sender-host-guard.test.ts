/** Over HTTP: a server-hosted sender whose host the sync server's address guard refuses is reported
 * by sdrProfiles.create at once (the guard's sentence as a warning) and shows as disconnected with
 * that reason in sdrProfiles.list, instead of failing when the runner first sends. The suite's
 * config allows private hosts for every test (ALLOW_PRIVATE_SENDER_HOSTS=1); this file turns the
 * guard on for its own servers. */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type SenderOut = { id: string; status: string; statusReason: string | null; warnings: string[] };
type ListOut = { sdrProfiles: { id: string; status: string; statusReason: string | null }[] };

const smtp = (host: string) => ({ host, port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', hostedBy: 'server' });

const servers: TestServer[] = [];
afterEach(() => {
  vi.unstubAllEnvs();
});
afterAll(async () => {
  for (const s of servers) await s.close();
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

  it('guard on: a public host gets no warning and is available', async () => {
    const s = servers[0] ?? (await server(true));
    const created = await create(s, 'Public Sam', smtp('93.184.216.34'));
    expect(created).toMatchObject({ warnings: [], status: 'available', statusReason: null });
    expect(await listed(s, created.id)).toMatchObject({ status: 'available', statusReason: null });
  });

  it('guard on: sdrProfiles.checkHosts (what a connected desktop asks) answers the same sentence, or null', async () => {
    const s = servers[0] ?? (await server(true));
    const refused = await s.call<{ refusal: string | null }>(s.ours.memberKey, 'sdrProfiles.checkHosts', { hosts: ['93.184.216.34', '10.1.2.3'] });
    expect(refused.status).toBe(200);
    expect(refused.body.refusal).toMatch(/^10\.1\.2\.3 is a private address: the sync server does not connect/);
    const fine = await s.call<{ refusal: string | null }>(s.ours.memberKey, 'sdrProfiles.checkHosts', { hosts: ['93.184.216.34'] });
    expect(fine.body).toEqual({ refusal: null });
  });

  it('guard off (ALLOW_PRIVATE_SENDER_HOSTS=1): the same relay gets no warning and is available', async () => {
    const s = await server(false);
    const created = await create(s, 'Relay Sam', smtp('10.1.2.3'));
    expect(created).toMatchObject({ warnings: [], status: 'available', statusReason: null });
    expect(await listed(s, created.id)).toMatchObject({ status: 'available' });
  });
});
