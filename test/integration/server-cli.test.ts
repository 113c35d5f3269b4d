/** The command line of API-CONTRACT.md ("Server command line"), run as real processes. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../sync-server/app.ts';
import { openDatabase } from '../../sync-server/db.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { freePort, runCli, spawnServer } from './support/cli.ts';
import { BACKENDS, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(BACKENDS)('sync-server command line (%s)', (backend) => {
  let t: TestDatabase;
  let ws: { workspaceId: string; memberId: string; apiKey: string };
  beforeAll(async () => {
    t = testDatabase(backend);
    const res = await runCli(['create-workspace', '--name', 'Initech', '--owner-email', 'bill.lumbergh@initech.test'], t.env);
    expect(res.code, res.stderr).toBe(0);
    ws = JSON.parse(res.stdout) as typeof ws;
  });
  afterAll(async () => {
    await t?.cleanup();
  });

  it('create-workspace prints {workspaceId, memberId, apiKey} and starts the workspace trialing', async () => {
    expect(Object.keys(ws).sort()).toEqual(['apiKey', 'memberId', 'workspaceId']);
    expect(ws.workspaceId).toMatch(UUID);
    expect(ws.memberId).toMatch(UUID);
    expect(ws.apiKey).toMatch(/^live_[0-9A-Za-z]{40}$/);
    const sql = await openDatabase(t.options);
    try {
      const store = new PgDatabase(sql).forWorkspace(ws.workspaceId);
      expect((await store.get('workspaces', ws.workspaceId))?.subscriptionStatus).toBe('trialing');
      const owner = await store.get('members', ws.memberId);
      expect(owner).toMatchObject({ role: 'owner', email: 'bill.lumbergh@initech.test', name: 'Bill Lumbergh' });
      expect(await store.count('stages')).toBe(7);
      // Only the hash of the key is stored.
      const keys = await sql.query<{ doc: unknown }>("SELECT doc FROM documents WHERE collection = 'apiKeys' AND workspace_id = $1", [ws.workspaceId]);
      expect(JSON.stringify(keys)).not.toContain(ws.apiKey);
    } finally {
      await sql.close();
    }
  });

  // seed-demo runs the product over ten simulated days before it commits: slower than a plain write.
  it('create-member, set-subscription and seed-demo print JSON; the keys work against the server', async () => {
    const member = await runCli(['create-member', '--workspace', ws.workspaceId, '--name', 'Milton Waddams', '--email', 'milton@initech.test', '--role', 'member'], t.env);
    expect(member.code, member.stderr).toBe(0);
    const m = JSON.parse(member.stdout) as { memberId: string; apiKey: string };
    expect(Object.keys(m).sort()).toEqual(['apiKey', 'memberId']);

    const sub = await runCli(['set-subscription', '--workspace', ws.workspaceId, '--status', 'active'], t.env);
    expect(sub.code, sub.stderr).toBe(0);
    expect(JSON.parse(sub.stdout)).toEqual({ workspaceId: ws.workspaceId, status: 'active' });

    const demo = await runCli(['seed-demo', '--workspace', ws.workspaceId], t.env);
    expect(demo.code, demo.stderr).toBe(0);
    const counts = JSON.parse(demo.stdout) as Record<string, number>;
    expect(counts).toMatchObject({ leads: 500, senders: 3, campaigns: 2, tags: 4 });
    // The runner enrolls over ten simulated days from the workspace's random ids, so the exact count
    // varies between workspaces; it is in the low hundreds.
    expect(counts.enrollments).toBeGreaterThan(50);
    expect(counts.notes).toBeGreaterThan(0);
    expect(counts.tasks).toBeGreaterThan(0);
    const again = await runCli(['seed-demo', '--workspace', ws.workspaceId], t.env);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already has the demo data');

    const app = await buildServer({ open: t.options, logLevel: 'silent' });
    try {
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const get = (key: string, name: string) => fetch(`${url}/${name}`, { headers: { authorization: `Bearer ${key}` } }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
      const members = await get(m.apiKey, 'members.list');
      expect(members.status).toBe(200);
      expect(members.body.members).toEqual(expect.arrayContaining([expect.objectContaining({ email: 'milton@initech.test', role: 'member' })]));
      const campaigns = await get(ws.apiKey, 'campaigns.getBasic');
      expect(campaigns.body.totalCount).toBe(2);
      const search = await get(ws.apiKey, 'campaigns.leads.search?limit=200');
      expect((search.body.leads as unknown[]).length).toBe(200);
      const senders = await get(ws.apiKey, 'sdrProfiles.list');
      expect((senders.body.sdrProfiles as unknown[]).length).toBe(3);

      if (backend === 'pglite') {
        // One process owns an embedded database: the CLI refuses while the server runs.
        const busy = await runCli(['set-subscription', '--workspace', ws.workspaceId, '--status', 'past_due'], t.env);
        expect(busy.code).toBe(1);
        expect(busy.stderr).toContain('in use');
      }
    } finally {
      await app.close();
    }
  }, 120_000);

  /** A bad argument, what the message says, and whether it is refused before the database opens
   * (a bad email is the domain's refusal, after it). */
  const BAD: [string, string[], string, 'before the database' | 'by the domain'][] = [
    ['an unknown command', ['launch-rockets'], 'Unknown command', 'before the database'],
    ['a missing option', ['create-workspace', '--name', 'X'], '--owner-email is required', 'before the database'],
    ['an unknown option', ['create-workspace', '--name', 'X', '--owner-email', 'a@b.test', '--colour', 'red'], 'colour', 'before the database'],
    ['a bad role', ['create-member', '--workspace', '00000000-0000-4000-8000-000000000000', '--name', 'N', '--email', 'n@x.test', '--role', 'boss'], '--role must be one of', 'before the database'],
    ['a bad status', ['set-subscription', '--workspace', '00000000-0000-4000-8000-000000000000', '--status', 'free'], '--status must be one of', 'before the database'],
    ['a bad email', ['create-workspace', '--name', 'X', '--owner-email', 'not-an-email'], 'not an email', 'by the domain'],
    ['arguments to serve', ['serve', '--port', '1'], 'environment variables', 'before the database'],
  ];
  /** What a bad argument refused before the database is answered without: every module the CLI
   * loads only for a command (the server, the database drivers and migrations, admin, secrets,
   * credentials, metrics, the operator's routes and the runner). */
  const refuse = {
    NODE_OPTIONS: `--import=${fileURLToPath(new URL('../support/refuse-modules.ts', import.meta.url))}`,
    REFUSE_MODULES: ['app', 'db', 'migrate', 'pg-database', 'admin', 'secrets', 'credentials', 'metrics', 'operator', 'runner-host'].map((m) => `/sync-server/${m}.ts`).join(','),
  };
  for (const [what, args, message, when] of BAD) {
    it(`exits with 2 and says why on ${what}`, async () => {
      const res = await runCli(args, { ...t.env, ...(when === 'before the database' ? refuse : {}) });
      expect(res.code, res.stderr).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toContain(message);
    });
  }

  it('exits with 1 for a workspace that does not exist', async () => {
    const res = await runCli(['seed-demo', '--workspace', '00000000-0000-4000-8000-000000000000'], t.env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('not found');
  });
});

describe('serving: port in use, bad settings, signals', () => {
  it('exits at once with code 3 and a message when the port is taken, without opening the database', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    const dataDir = mkdtempSync(join(tmpdir(), 'crm-port-'));
    try {
      const res = await runCli([], { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir }, 20_000);
      expect(res.code).toBe(3);
      expect(res.stderr).toContain(`Port ${port} on 127.0.0.1 is already in use`);
      // Refused before the embedded database was created.
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      await new Promise((r) => blocker.close(r));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('exits with 2 on a CORS_ORIGINS value that is not an origin', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'crm-cors-'));
    try {
      const res = await runCli([], { PORT: String(await freePort()), HOST: '127.0.0.1', DATA_DIR: dataDir, CORS_ORIGINS: 'app.example.com' }, 20_000);
      expect(res.code).toBe(2);
      expect(res.stderr).toContain('CORS_ORIGINS');
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('finishes and exits 0 on SIGTERM, serving /metrics and /docs until then', async () => {
    const t = testDatabase('pglite');
    const server = await spawnServer({ ...t.env, METRICS_TOKEN: 'tok' });
    try {
      expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer tok' } })).status).toBe(200);
      expect((await fetch(`${server.url}/docs`)).status).toBe(200);
      server.proc.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
      await t.cleanup();
    }
  }, 120_000);
});
