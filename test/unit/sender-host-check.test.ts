/** sdrProfiles.create says at once when the sync server will refuse a server-hosted sender's host
 * (through the ctx.senderHosts port the server provides), and the sender's status says it after;
 * where no check is available it says that it could not check, and only for server-hosted senders. */
import { describe, expect, it } from 'vitest';
import type { Actor, SenderHostCheck } from '../../shared/context.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { OpInput, OpName, OpOutput } from '../../shared/ops/index.ts';
import { makeHarness, testSecrets } from '../support/harness.ts';

const REFUSAL = '10.1.2.3 is a private address: the sync server does not connect its senders into its own network. Use a public host, or have the operator set ALLOW_PRIVATE_SENDER_HOSTS=1.';

/** The server's check, as a fake: refuses the hosts it is given, records what it was asked. */
function fakeCheck(refused: readonly string[]) {
  const asked: string[] = [];
  const check: SenderHostCheck = {
    async refusal(hosts: readonly string[]) {
      asked.push(hosts.join(' '));
      return hosts.some((h) => refused.includes(h)) ? REFUSAL : null;
    },
  };
  return { check, asked };
}

async function world(senderHosts: SenderHostCheck | null) {
  const h = await makeHarness();
  const call = <N extends OpName>(name: N, input: OpInput<N>, as: Actor = h.owner): Promise<OpOutput<N>> =>
    execute(name, input, { actor: as, store: h.db.forWorkspace(as.workspaceId), clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets, senderHosts });
  return { h, call };
}

/** The mailbox check's line: no sender check runs in this harness (shared/ops/sdrProfiles.ts checkSender). */
const notChecked = (name: string, where: string) => expect.stringContaining(`Not checked: ${name}'s login, Sent folder and DNS records are checked from ${where}`);

const smtp = (host: string, hostedBy?: 'server' | 'desktop') => ({ host, port: 587, secure: false, user: 'sam@acme.test', from: 'sam@acme.test', ...(hostedBy ? { hostedBy } : {}) });

describe('a server-hosted sender whose host the sync server refuses', () => {
  it('is created disconnected, with the guard\'s sentence as the warning and as its status reason', async () => {
    const { check } = fakeCheck(['10.1.2.3']);
    const { h, call } = await world(check);
    const created = await call('sdrProfiles.create', { name: 'Relay Sam', channel: 'email', channelConfig: smtp('10.1.2.3', 'server') });
    expect(created.warnings).toEqual([`${REFUSAL} The sender is disconnected until then.`]);
    expect(created).toMatchObject({ status: 'disconnected', statusReason: REFUSAL, hostedBy: 'server' });
    const listed = (await call('sdrProfiles.list', {})).sdrProfiles.find((s) => s.id === created.id);
    expect(listed).toMatchObject({ status: 'disconnected', statusReason: expect.stringContaining('10.1.2.3 is a private address') });
    expect(await h.store.get('senders', created.id)).toMatchObject({ status: 'disconnected' });
  });

  it('also for its IMAP host and for a connector URL', async () => {
    const { check } = fakeCheck(['10.1.2.3', 'hooks.internal']);
    const { call } = await world(check);
    const imap = await call('sdrProfiles.create', { name: 'Imap Sam', channel: 'email', channelConfig: { ...smtp('smtp.acme.test', 'server'), imap: { host: '10.1.2.3' } } });
    expect(imap.status).toBe('disconnected');
    const hook = await call('sdrProfiles.create', { name: 'Hook', channel: 'http', channelConfig: { baseUrl: 'https://hooks.internal/api', hostedBy: 'server' } });
    expect(hook.status).toBe('disconnected');
    expect(hook.warnings).toHaveLength(1);
  });

  it('stays disconnected when new credentials are given while the host is still refused, and reconnects once it is allowed', async () => {
    const refused = ['10.1.2.3'];
    const check: SenderHostCheck = { refusal: async (hosts) => (hosts.some((h) => refused.includes(h)) ? REFUSAL : null) };
    const { h, call } = await world(check);
    const port = { hostedBy: 'server' as const, set: async () => undefined, has: async () => true };
    const callWithPort = <N extends OpName>(name: N, input: OpInput<N>) =>
      execute(name, input, { actor: h.owner, store: h.db.forWorkspace(h.owner.workspaceId), clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets, senderHosts: check, credentials: port });
    const created = await call('sdrProfiles.create', { name: 'Relay Sam', channel: 'email', channelConfig: smtp('10.1.2.3', 'server') });
    const again = await callWithPort('sdrProfiles.setCredentials', { sdrProfileId: created.id, secret: 'new-password' });
    expect(again).toMatchObject({ reconnected: false, status: 'disconnected' });
    expect(await h.store.get('senders', created.id)).toMatchObject({ status: 'disconnected', statusReason: expect.stringContaining('10.1.2.3') });
    refused.length = 0; // the operator allowed private hosts
    expect(await callWithPort('sdrProfiles.setCredentials', { sdrProfileId: created.id, secret: 'new-password' })).toMatchObject({ reconnected: true, status: 'available' });
  });
});

describe('no warning where none is due', () => {
  it('a host the server accepts: available, no warning; a desktop-hosted or sandbox sender is not even checked (it connects from its owner\'s computer)', async () => {
    const { check, asked } = fakeCheck(['10.1.2.3']);
    const { call } = await world(check);
    const created = await call('sdrProfiles.create', { name: 'Public Sam', channel: 'email', channelConfig: smtp('smtp.acme.test', 'server') });
    expect(created).toMatchObject({ status: 'available', statusReason: null, warnings: [notChecked('Public Sam', 'the sync server')] });
    const desk = await call('sdrProfiles.create', { name: 'Desk Sam', channel: 'email', channelConfig: smtp('10.1.2.3') });
    expect(desk).toMatchObject({ status: 'available', warnings: [notChecked('Desk Sam', "its owner's desktop")], hostedBy: 'desktop' });
    await call('sdrProfiles.create', { name: 'Sandy', channel: 'sandbox' });
    expect(asked).toEqual(['smtp.acme.test']);
  });

  it('where the sync server cannot be asked (offline, or none), a server-hosted sender gets a warning that says so, and stays available; a desktop-hosted one none', async () => {
    const offline: SenderHostCheck = { refusal: async () => { throw new Error('The sync server could not be reached (connect ECONNREFUSED).'); } };
    for (const [check, why] of [[offline, 'The sync server could not be reached (connect ECONNREFUSED)'], [null, 'no sync server answers here']] as const) {
      const { call } = await world(check);
      const created = await call('sdrProfiles.create', { name: 'Relay Sam', channel: 'email', channelConfig: { ...smtp('10.1.2.3', 'server'), imap: { host: 'imap.acme.test' } } });
      expect(created.status).toBe('available');
      expect(created.warnings).toEqual([`Whether the sync server will connect to 10.1.2.3 and imap.acme.test could not be checked (${why}): it refuses private, loopback and link-local addresses unless its operator allows them. If it refuses, this sender shows as disconnected with the reason once the server's runner tries it.`, notChecked('Relay Sam', 'the sync server')]);
      const desk = await call('sdrProfiles.create', { name: 'Desk Sam', channel: 'email', channelConfig: smtp('10.1.2.3') });
      expect(desk.warnings).toEqual([notChecked('Desk Sam', "its owner's desktop")]);
    }
  });
});
