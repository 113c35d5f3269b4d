/** sdrProfiles.setCredentials over the credentials port, and the desktop's port over its private file. */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { desktopSenderCredentials, fileCredentialStore } from '../../electron/backend/credentials.ts';
import type { SenderCredentials } from '../../shared/context.ts';
import { execute } from '../../shared/ops/execute.ts';
import type { OpInput, OpName, OpOutput } from '../../shared/ops/index.ts';
import type { Actor } from '../../shared/context.ts';
import { makeHarness, testSecrets } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** A port kept in memory, recording what it was given. */
function memoryPort(hostedBy: 'server' | 'desktop') {
  const kept = new Map<string, { secret: string; at: string; by: string }>();
  const port: SenderCredentials = {
    hostedBy,
    async set(ws, id, secret, meta) {
      kept.set(`${ws}/${id}`, { secret, ...meta });
    },
    async has(ws, id) {
      return kept.has(`${ws}/${id}`);
    },
  };
  return { port, kept };
}

async function world(hostedBy: 'server' | 'desktop' = 'server') {
  const h = await makeHarness();
  const { port, kept } = memoryPort(hostedBy);
  const call = <N extends OpName>(name: N, input: OpInput<N>, as: Actor = h.owner): Promise<OpOutput<N>> =>
    execute(name, input, {
      actor: as, store: h.db.forWorkspace(as.workspaceId), clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets, credentials: port,
      // The sync server also checks its senders' hosts (this world's hosts are all acceptable).
      ...(hostedBy === 'server' ? { senderHosts: { refusal: async () => null } } : {}),
    });
  return { h, call, kept };
}

const emailConfig = (hostedBy?: 'server' | 'desktop') => ({ host: 'smtp.acme.test', port: 587, secure: false, user: 'sdr@acme.test', from: 'sdr@acme.test', ...(hostedBy ? { hostedBy } : {}) });

async function serverSender(h: Harness, owner: string, fields: Record<string, unknown> = {}) {
  return h.addSender({ name: 'Mail Sam', channel: 'email', capabilities: ['email'], ownerMemberId: owner, channelConfig: emailConfig('server'), ...fields });
}

describe('sdrProfiles.setCredentials', () => {
  it("stores the secret through the port for the sender's owner, an owner or an admin, and never answers it", async () => {
    const { h, call, kept } = await world();
    const sender = await serverSender(h, h.member.memberId);
    const out = await call('sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: 'first-secret' }, h.member);
    expect(out).toEqual({ sdrProfileId: sender.id, channel: 'email', storedOn: 'server', reconnected: false, status: 'available' });
    expect(JSON.stringify(out)).not.toContain('first-secret');
    expect(kept.get(`${h.main.workspaceId}/${sender.id}`)).toEqual({ secret: 'first-secret', at: h.now(), by: h.member.memberId });
    // Nothing about it reaches the replicated sender document.
    expect(JSON.stringify(await h.store.get('senders', sender.id))).not.toContain('first-secret');

    await call('sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: 'by-admin' }, h.admin);
    expect(kept.get(`${h.main.workspaceId}/${sender.id}`)?.by).toBe(h.admin.memberId);
    await call('sdrProfiles.setCredentials', { sdrProfileId: sender.id, secret: 'by-owner' }, h.owner);
    expect(kept.get(`${h.main.workspaceId}/${sender.id}`)?.secret).toBe('by-owner');
  });

  it("refuses a member who does not own the sender, another workspace, sandbox senders and empty secrets, storing nothing", async () => {
    const { h, call, kept } = await world();
    const ownersSender = await serverSender(h, h.owner.memberId);
    await h.expectRefused(call('sdrProfiles.setCredentials', { sdrProfileId: ownersSender.id, secret: 'x' }, h.member), 'PERMISSION_DENIED');
    await h.expectRefused(call('sdrProfiles.setCredentials', { sdrProfileId: ownersSender.id, secret: 'x' }, h.foreignOwner), 'NOT_FOUND');
    const sandbox = await h.addSender({ name: 'Sandy' });
    await h.expectRefused(call('sdrProfiles.setCredentials', { sdrProfileId: sandbox.id, secret: 'x' }), 'INVALID_INPUT');
    await h.expectRefused(call('sdrProfiles.setCredentials', { sdrProfileId: ownersSender.id, secret: '' }), 'INVALID_INPUT');
    await h.expectRefused(call('sdrProfiles.setCredentials', { sdrProfileId: ownersSender.id, secret: 'x', extra: 1 } as never), 'INVALID_INPUT');
    expect(kept.size).toBe(0);
  });

  it('keeps a secret only where the sender runs: a server never takes a desktop-hosted secret, nor a desktop a server-hosted one, and a host without a port neither', async () => {
    const server = await world('server');
    const desktopHosted = await server.h.addSender({ name: 'Desk Mail', channel: 'email', capabilities: ['email'], channelConfig: emailConfig() });
    const e1 = await server.h.expectRefused(server.call('sdrProfiles.setCredentials', { sdrProfileId: desktopHosted.id, secret: 'x' }), 'SERVER_ONLY');
    expect(e1.message).toContain('desktop');

    const desktop = await world('desktop');
    const onServer = await serverSender(desktop.h, desktop.h.owner.memberId);
    const e2 = await desktop.h.expectRefused(desktop.call('sdrProfiles.setCredentials', { sdrProfileId: onServer.id, secret: 'x' }), 'SERVER_ONLY');
    expect(e2.message).toContain('sync server');
    const http = await desktop.h.addSender({ name: 'Hook', channel: 'http', channelConfig: { baseUrl: 'https://c.test' } });
    expect((await desktop.call('sdrProfiles.setCredentials', { sdrProfileId: http.id, secret: 'token-1' })).storedOn).toBe('desktop');
    expect(desktop.kept.get(`${desktop.h.main.workspaceId}/${http.id}`)?.secret).toBe('token-1');

    // The harness passes no port at all.
    const bare = await makeHarness();
    const s = await serverSender(bare, bare.owner.memberId);
    await bare.expectRefused(bare.call('sdrProfiles.setCredentials', { sdrProfileId: s.id, secret: 'x' }), 'SERVER_ONLY');
  });

  it('reconnects a sender whose login was refused (paused stays paused)', async () => {
    const { h, call } = await world();
    const down = await serverSender(h, h.owner.memberId, { status: 'disconnected', statusReason: 'The network refused the account\'s credentials: 535' });
    const out = await call('sdrProfiles.setCredentials', { sdrProfileId: down.id, secret: 'fixed' });
    expect(out).toMatchObject({ reconnected: true, status: 'available' });
    expect(await h.store.get('senders', down.id)).toMatchObject({ status: 'available', statusReason: null, backoffUntil: null });

    const pausedDown = await serverSender(h, h.owner.memberId, { status: 'disconnected', outreachPaused: true });
    expect((await call('sdrProfiles.setCredentials', { sdrProfileId: pausedDown.id, secret: 'fixed' })).status).toBe('paused');
  });

  it('sdrProfiles.create stores a password given for a sender this host runs, and only there', async () => {
    const { h, call, kept } = await world('server');
    const created = await call('sdrProfiles.create', { name: 'Server Mail', channel: 'email', channelConfig: { ...emailConfig('server'), password: 'at-creation' } });
    // No mailbox check runs in this harness: it says so (test/integration/sender-check.test.ts checks).
    expect(created.warnings).toEqual([expect.stringContaining("Not checked: Server Mail's login")]);
    expect((await h.store.get('senders', created.id))?.channelConfig).toEqual(emailConfig('server'));
    expect(kept.get(`${h.main.workspaceId}/${created.id}`)?.secret).toBe('at-creation');

    const desk = await call('sdrProfiles.create', { name: 'Desk Mail', channel: 'email', channelConfig: { ...emailConfig(), password: 'not-here' } });
    expect(desk.warnings).toEqual([expect.stringContaining("Not checked: Desk Mail's login"), expect.stringContaining('The SMTP password was not stored in the workspace')]);
    expect(kept.has(`${h.main.workspaceId}/${desk.id}`)).toBe(false);
    expect((await h.store.get('senders', desk.id))?.channelConfig).toEqual(emailConfig());
    const hook = await call('sdrProfiles.create', { name: 'Hook', channel: 'http', channelConfig: { baseUrl: 'https://c.test', hostedBy: 'server' } });
    expect((await h.store.get('senders', hook.id))?.channelConfig).toEqual({ baseUrl: 'https://c.test', hostedBy: 'server' });
  });
});

describe('the desktop credentials port', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crm-creds-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps secrets in a file only the user can read, through the codec main.ts gives it', async () => {
    const file = join(dir, 'credentials.json');
    // A stand-in for safeStorage: what reaches the disk is not the secret.
    const codec = { encode: (p: string) => Buffer.from(Buffer.from(p, 'utf8').map((b) => b ^ 0x5a)), decode: (b: Buffer) => Buffer.from(b.map((x) => x ^ 0x5a)).toString('utf8') };
    const port = desktopSenderCredentials(fileCredentialStore(file, codec));
    expect(port.hostedBy).toBe('desktop');
    await port.set('ws-1', 'sender-1', 'smtp-password-1', { at: '2026-11-16T10:00:00.000Z', by: 'm1' });
    await port.set('ws-1', 'sender-2', 'token-2', { at: '2026-11-16T10:00:00.000Z', by: 'm1' });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const raw = readFileSync(file, 'utf8');
    expect(raw).not.toContain('smtp-password-1');
    expect(raw).not.toContain(Buffer.from('smtp-password-1').toString('base64'));
    expect(await port.secretFor('ws-1', 'sender-1')).toBe('smtp-password-1');
    expect(await port.has('ws-1', 'sender-2')).toBe(true);
    expect(await port.has('ws-2', 'sender-1')).toBe(false);
    await port.forget('ws-1', 'sender-1');
    expect(await port.secretFor('ws-1', 'sender-1')).toBeNull();
    expect(await port.secretFor('ws-1', 'sender-2')).toBe('token-2');
  });
});
