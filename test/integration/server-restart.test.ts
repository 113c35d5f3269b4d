/** Durability: a restart of the server on the same data loses nothing it acknowledged, whether it
 * shut down gracefully (in-flight requests finish first) or was killed. */
import { afterEach, describe, expect, it } from 'vitest';
import { buildServer } from '../../sync-server/app.ts';
import { openDatabase } from '../../sync-server/db.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { runCli, spawnServer } from './support/cli.ts';
import { BACKENDS, testDatabase } from './support/db.ts';
import type { TestDatabase } from './support/db.ts';

type Created = { id: string; name: string };

async function post(url: string, key: string, name: string, body: unknown): Promise<{ status: number; body: Created }> {
  const res = await fetch(`${url}/${name}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Created };
}

async function tagNames(t: TestDatabase, workspaceId: string): Promise<Set<string>> {
  const sql = await openDatabase(t.options);
  try {
    const { docs } = await new PgDatabase(sql).forWorkspace(workspaceId).query('tags');
    return new Set(docs.map((d) => d.name));
  } finally {
    await sql.close();
  }
}

/** Each case starts server processes (PGlite's first open is seconds) and waits on them; with two
 * test files at a time on two cores that can pass the suite's 30 s. */
const PROCESS_TEST_MS = 90_000;

describe.each(BACKENDS)('restarts (%s)', (backend) => {
  let t: TestDatabase | undefined;
  afterEach(async () => {
    await t?.cleanup();
    t = undefined;
  });

  async function workspace(db: TestDatabase): Promise<{ workspaceId: string; apiKey: string }> {
    const res = await runCli(['create-workspace', '--name', 'Durable', '--owner-email', 'owner@durable.test'], db.env);
    expect(res.code, res.stderr).toBe(0);
    return JSON.parse(res.stdout) as { workspaceId: string; apiKey: string };
  }

  it('keeps everything after close and reopen of the app', async () => {
    t = testDatabase(backend);
    const ws = await workspace(t);
    const app = await buildServer({ open: t.options, logLevel: 'silent' });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const acked: string[] = [];
    for (let i = 0; i < 15; i++) {
      const res = await post(url, ws.apiKey, 'tags.create', { name: `Tag ${i}` });
      expect(res.status).toBe(200);
      acked.push(res.body.name);
    }
    await app.close();
    const again = await buildServer({ open: t.options, logLevel: 'silent' });
    try {
      const url2 = await again.listen({ port: 0, host: '127.0.0.1' });
      const res = await fetch(`${url2}/tags.getAll`, { headers: { authorization: `Bearer ${ws.apiKey}` } });
      const body = (await res.json()) as { tags: { name: string }[] };
      expect(body.tags.map((x) => x.name).sort()).toEqual([...acked].sort());
    } finally {
      await again.close();
    }
  }, PROCESS_TEST_MS);

  it('loses no acknowledged write when the server process is killed (SIGKILL)', async () => {
    t = testDatabase(backend);
    const ws = await workspace(t);
    const server = await spawnServer(t.env);
    const acked: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await post(server.url, ws.apiKey, 'tags.create', { name: `Before kill ${i}` });
      expect(res.status).toBe(200);
      acked.push(res.body.name);
    }
    // A burst in flight while the process dies: whatever was answered 200 must survive.
    const burst = Array.from({ length: 20 }, (_, i) =>
      post(server.url, ws.apiKey, 'tags.create', { name: `In flight ${i}` }).then(
        (r) => (r.status === 200 ? r.body.name : null),
        () => null,
      ),
    );
    await new Promise((r) => setTimeout(r, 30));
    server.proc.kill('SIGKILL');
    const settled = await Promise.all(burst);
    await server.exited;
    acked.push(...settled.filter((n): n is string => n !== null));
    const names = await tagNames(t, ws.workspaceId);
    for (const name of acked) expect(names.has(name), `${name} was acknowledged`).toBe(true);
  }, PROCESS_TEST_MS);

  it('finishes in-flight requests on SIGTERM, then exits 0 with the database closed', async () => {
    t = testDatabase(backend);
    const ws = await workspace(t);
    const server = await spawnServer(t.env);
    const results = Array.from({ length: 25 }, (_, i) =>
      post(server.url, ws.apiKey, 'tags.create', { name: `Graceful ${i}` }).then(
        (r) => ({ ok: r.status === 200, name: r.body.name, status: r.status }),
        (e: unknown) => ({ ok: false, name: null, status: String(e) }),
      ),
    );
    // SIGTERM once the server is demonstrably serving the burst (a fixed delay raced a loaded machine:
    // every request could still be queued client-side, and nothing was in flight to finish).
    await Promise.race(results);
    server.proc.kill('SIGTERM');
    const done = await Promise.all(results);
    expect(await server.exited).toBe(0);
    for (const r of done) {
      // Refused at the door (connection refused or 503 while closing) is fine; a half answer is not.
      if (!r.ok) expect(r.status === 503 || /fetch failed|ECONNREFUSED|ECONNRESET|socket/.test(String(r.status)), String(r.status)).toBe(true);
    }
    const names = await tagNames(t, ws.workspaceId);
    for (const r of done) if (r.ok && r.name) expect(names.has(r.name)).toBe(true);
    expect(done.filter((r) => r.ok).length).toBeGreaterThan(0);
    if (backend === 'pglite') {
      // The lock file is gone: a clean close.
      const again = await runCli(['set-subscription', '--workspace', ws.workspaceId, '--status', 'active'], t.env);
      expect(again.code, again.stderr).toBe(0);
    }
  }, PROCESS_TEST_MS);
});
