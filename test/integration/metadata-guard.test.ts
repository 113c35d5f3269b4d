/** Link-local and cloud metadata addresses are refused whatever ALLOW_PRIVATE_SENDER_HOSTS says (the
 * suite runs with it set to 1): webhook endpoints and server-hosted senders, in every spelling of
 * the address (decimal, octal, hex, IPv4-mapped IPv6) and behind names a real DNS server (dns2 on
 * 127.0.0.1) resolves to them, at registration (nothing is stored) and again when a connection is
 * made (a name that resolved to a public address at registration and to the metadata address later). */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenReason, guardedFetch, guardedLookup, guardedSmtpSocket, senderHostCheck } from '../../sync-server/sender-hosts.ts';
import { FakeClock } from '../support/harness.ts';
import { startDns } from './support/dns-server.ts';
import type { TestDns } from './support/dns-server.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every spelling of the metadata and link-local addresses a URL or a host field may carry. */
const LITERALS = [
  '169.254.169.254',
  '169.254.1.1',
  '2852039166',
  '0xa9fea9fe',
  '0251.0376.0251.0376',
  '169.254.43518',
  '::ffff:169.254.169.254',
  '::ffff:a9fe:a9fe',
  '::a9fe:a9fe',
  'fe80::1',
  'fd00:ec2::254',
  '100.100.100.200',
];
const inUrl = (host: string): string => (host.includes(':') ? `[${host}]` : host);

type ErrorOut = { error: { code: string; message: string } };

describe('link-local and metadata addresses, with ALLOW_PRIVATE_SENDER_HOSTS=1', () => {
  let dns: TestDns;
  let s: TestServer;
  beforeAll(async () => {
    expect(process.env.ALLOW_PRIVATE_SENDER_HOSTS).toBe('1');
    dns = await startDns();
    dns.point('metadata.crm.test', ['169.254.169.254']);
    dns.point('metadata6.crm.test', ['fd00:ec2::254']);
    dns.point('mixed.crm.test', ['203.0.113.7', '169.254.169.254']);
    dns.point('rebinding.crm.test', ['203.0.113.7']);
    dns.point('loopback.crm.test', ['127.0.0.1']);
    s = await startTestServer('pglite', {
      clock: new RealClock(),
      webhooks: { allowHttp: true, policy: { allowPrivate: true, resolve: (h) => dns.resolve(h) }, delivery: { pollMs: 50, timeoutMs: 2_000 } },
    });
  });
  afterAll(async () => {
    await s?.close();
    await dns?.close();
  });

  it('every spelling is one of the forbidden addresses; the private ones the setting allows are not', () => {
    for (const ip of ['169.254.169.254', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', 'fe80::1', 'fd00:ec2::254', '100.100.100.200']) expect(forbiddenReason(ip), ip).not.toBeNull();
    for (const ip of ['127.0.0.1', '10.0.0.1', '192.168.1.1', 'fd00::1', '100.64.0.1', '93.184.216.34']) expect(forbiddenReason(ip), ip).toBeNull();
  });

  it('webhooks.create refuses each spelling and each name resolving to one, storing nothing', async () => {
    const urls = [
      ...LITERALS.map((h) => `http://${inUrl(h)}/latest/meta-data`),
      'https://metadata.crm.test/latest/meta-data',
      'https://metadata6.crm.test:8443/x',
      'https://mixed.crm.test/x',
    ];
    for (const url of urls) {
      const res = await s.call<ErrorOut>(s.ours.ownerKey, 'webhooks.create', { url, events: ['lead.replied'] });
      expect([url, res.status, res.body.error?.code]).toEqual([url, 422, 'URL_NOT_ALLOWED']);
      expect(res.body.error.message).toMatch(/(link-local address|cloud metadata address).*: the sync server never sends webhooks there, whatever ALLOW_PRIVATE_SENDER_HOSTS says/);
    }
    expect(await s.sql.query('SELECT 1 FROM webhook_endpoints')).toHaveLength(0);
    expect((await s.call<{ endpoints: unknown[] }>(s.ours.ownerKey, 'webhooks.list')).body.endpoints).toEqual([]);
  });

  it('the setting still allows a private receiver, and an update to a metadata URL is refused, changing nothing', async () => {
    const ok = await s.call<{ id: string }>(s.ours.ownerKey, 'webhooks.create', { url: 'http://loopback.crm.test:9/in', events: ['lead.replied'] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const before = (await s.call(s.ours.ownerKey, 'webhooks.list')).body;
    for (const url of ['http://0xa9fea9fe/latest/meta-data', 'http://[::ffff:a9fe:a9fe]/', 'http://metadata.crm.test/']) {
      const res = await s.call<ErrorOut>(s.ours.ownerKey, 'webhooks.update', { endpointId: ok.body.id, url });
      expect([url, res.status, res.body.error.code]).toEqual([url, 422, 'URL_NOT_ALLOWED']);
    }
    expect((await s.call(s.ours.ownerKey, 'webhooks.list')).body).toEqual(before);
    await s.call(s.ours.ownerKey, 'webhooks.delete', { endpointId: ok.body.id });
  });

  it('a file: or ftp: URL is refused with the schemes this server allows (https, and http with WEBHOOKS_ALLOW_HTTP=1)', async () => {
    for (const url of ['ftp://hooks.example.com/x', 'file:///etc/passwd']) {
      const res = await s.call<ErrorOut>(s.ours.ownerKey, 'webhooks.create', { url, events: ['lead.replied'] });
      expect([url, res.status, res.body.error.code]).toEqual([url, 422, 'URL_NOT_ALLOWED']);
      expect(res.body.error.message).toMatch(/^Webhook URLs must use https or http \(this server allows http: WEBHOOKS_ALLOW_HTTP=1\), not (ftp|file)\.$/);
    }
    expect(await s.sql.query('SELECT 1 FROM webhook_endpoints')).toHaveLength(0);
  });

  it('a delivery connects only after checking the name again: one that now resolves to the metadata address is refused, nothing is sent', async () => {
    let hits = 0;
    // No keep-alive: a pooled connection (made to the address the name had then) would be reused
    // without a new lookup; the second delivery must connect anew.
    const receiver = createServer((_req, res) => {
      hits++;
      res.writeHead(200, { connection: 'close' }).end('ok');
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as AddressInfo).port;
    try {
      dns.point('rebinding.crm.test', ['127.0.0.1']);
      const created = await s.call<{ id: string }>(s.ours.ownerKey, 'webhooks.create', { url: `http://rebinding.crm.test:${port}/in`, events: ['lead.replied'] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const first = await s.call(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: created.body.id });
      expect(first.status).toBe(200);
      for (let i = 0; i < 100 && hits === 0; i++) await sleep(20);
      expect(hits).toBe(1);
      // The name now points at the metadata service.
      dns.point('rebinding.crm.test', ['169.254.169.254']);
      await s.call(s.ours.ownerKey, 'webhooks.sendTest', { endpointId: created.body.id });
      let attempt: { responseStatus: number | null; error: string | null } | undefined;
      for (let i = 0; i < 100 && !attempt; i++) {
        const log = await s.call<{ deliveries: { attemptLog: { responseStatus: number | null; error: string | null }[] }[] }>(s.ours.ownerKey, 'webhooks.deliveries.list', { endpointId: created.body.id });
        attempt = log.body.deliveries[0]?.attemptLog[0];
        if (!attempt) await sleep(25);
      }
      expect(attempt?.responseStatus).toBeNull();
      expect(attempt?.error).toMatch(/rebinding\.crm\.test resolves to 169\.254\.169\.254, a link-local address \(cloud metadata lives there\): the sync server never connects there, whatever ALLOW_PRIVATE_SENDER_HOSTS says/);
      expect(hits).toBe(1);
      await s.call(s.ours.ownerKey, 'webhooks.delete', { endpointId: created.body.id });
    } finally {
      await new Promise((r) => receiver.close(r));
    }
  });

  it('sdrProfiles.create refuses a server-hosted sender at each spelling (SMTP, IMAP, connector), storing nothing', async () => {
    const before = await s.snapshot(s.ours.workspaceId);
    const configs: Record<string, unknown>[] = [
      ...LITERALS.map((host) => ({ channel: 'email', channelConfig: { host, port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', hostedBy: 'server' } })),
      { channel: 'email', channelConfig: { host: 'smtp.example.com', port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', hostedBy: 'server', imap: { host: '0251.0376.0251.0376', port: 993, secure: true } } },
      { channel: 'http', channelConfig: { baseUrl: 'http://2852039166/connector', hostedBy: 'server' } },
      { channel: 'http', channelConfig: { baseUrl: 'http://[fd00:ec2::254]/connector', hostedBy: 'server' } },
    ];
    for (const c of configs) {
      const res = await s.call<ErrorOut>(s.ours.ownerKey, 'sdrProfiles.create', { name: 'Meta Sam', ...c });
      expect([JSON.stringify(c.channelConfig), res.status, res.body.error?.code]).toEqual([JSON.stringify(c.channelConfig), 422, 'URL_NOT_ALLOWED']);
      expect(res.body.error.message).toMatch(/(link-local address|cloud metadata address).*: the sync server never connects there, whatever ALLOW_PRIVATE_SENDER_HOSTS says/);
    }
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    // A private relay is still what the setting allows: the guard lets it through to the mailbox
    // check (which, without a password, refuses it for that reason, not for its address).
    // sender-host-guard.test.ts connects one that logs in.
    const relay = await s.call<ErrorOut>(s.ours.ownerKey, 'sdrProfiles.create', {
      name: 'Relay Sam',
      channel: 'email',
      channelConfig: { host: '10.1.2.3', port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', hostedBy: 'server' },
    });
    expect([relay.status, relay.body.error?.code], JSON.stringify(relay.body)).toEqual([422, 'SENDER_CHECK_FAILED']);
    expect(relay.body.error.message).toMatch(/no password is kept/);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
  });

  it('the sender checks follow what a name resolves to: at registration, and again at connect (fetch, SMTP, IMAP)', async () => {
    const policy = { allowPrivate: true, resolve: (h: string) => dns.resolve(h) };
    const check = senderHostCheck(policy);
    expect(await check.forbidden?.(['metadata.crm.test'])).toMatch(/^metadata\.crm\.test resolves to 169\.254\.169\.254, a link-local address/);
    expect(await check.forbidden?.(['mixed.crm.test'])).toMatch(/resolves to 169\.254\.169\.254/);
    expect(await check.forbidden?.(['loopback.crm.test', '10.0.0.1'])).toBeNull();

    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      dns.point('rebinding.crm.test', ['127.0.0.1']);
      expect((await guardedFetch(policy)(`http://rebinding.crm.test:${port}/`)).status).toBe(200);
      expect(hits).toBe(1);
      dns.point('rebinding.crm.test', ['169.254.169.254']);
      await expect(guardedFetch(policy)(`http://rebinding.crm.test:${port}/`)).rejects.toThrow();
      await expect(guardedFetch(policy)(`http://2852039166:${port}/`)).rejects.toMatchObject({ kind: 'unauthorized' });
      await expect(guardedFetch(policy)(`http://[::ffff:a9fe:a9fe]:${port}/`)).rejects.toMatchObject({ kind: 'unauthorized' });
      const smtp = (host: string) => new Promise<Error | null>((resolve) => guardedSmtpSocket(policy)({ host, port, connectionTimeout: 2_000 }, (err, sock) => (sock && sock.connection.destroy(), resolve(err))));
      expect((await smtp('rebinding.crm.test'))?.message).toMatch(/resolves to 169\.254\.169\.254, a link-local address.*never connects there/);
      expect((await smtp('0xa9fea9fe'))?.message).toMatch(/0xa9fea9fe is 169\.254\.169\.254, a link-local address/);
      expect((await smtp('fd00:ec2::254'))?.message).toMatch(/cloud metadata address/);
      const imap = await new Promise<Error | null>((resolve) => guardedLookup(policy)('rebinding.crm.test', { all: true }, (err) => resolve(err)));
      expect(imap?.message).toMatch(/resolves to 169\.254\.169\.254/);
      expect(hits).toBe(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
