/** A real sync server on a loopback port over a fresh test database, with two workspaces (ours and a
 * foreign one), members of each role, and real HTTP calls through fetch. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { OpDef } from '../../../shared/ops/define.ts';
import { operations } from '../../../shared/ops/index.ts';
import { createMember, createWorkspace } from '../../../sync-server/admin.ts';
import type { AdminDeps } from '../../../sync-server/admin.ts';
import { buildServer } from '../../../sync-server/app.ts';
import type { ServerOptions } from '../../../sync-server/app.ts';
import type { SqlDatabase } from '../../../sync-server/db.ts';
import { PgDatabase } from '../../../sync-server/pg-database.ts';
import { nodeSecrets } from '../../../sync-server/secrets.ts';
import { FakeClock, seededRandom } from '../../support/harness.ts';
import { openMigrated, testDatabase } from './db.ts';
import { passingZone, startDns } from './dns-server.ts';
import { dnsResolver } from '../../../channels/dns-check.ts';
import type { Backend, TestDatabase } from './db.ts';

export type Team = { workspaceId: string; ownerId: string; ownerKey: string; memberId: string; memberKey: string; adminId: string; adminKey: string };

export type CallResult<T = unknown> = { status: number; body: T; headers: Headers };

export type TestServer = {
  backend: Backend;
  url: string;
  app: FastifyInstance;
  sql: SqlDatabase;
  db: PgDatabase;
  clock: FakeClock;
  deps: AdminDeps;
  ours: Team;
  theirs: Team;
  /** Log lines the server wrote (JSON, one per line). */
  logs: string[];
  call<T = Record<string, unknown>>(key: string | null, name: string, input?: Record<string, unknown>, init?: { method?: string; headers?: Record<string, string>; rawBody?: string }): Promise<CallResult<T>>;
  /** Highest seq in a workspace: proves nothing was written. */
  maxSeq(workspaceId: string): Promise<number>;
  /** Every document of a workspace with its deleted flag, API key usage times left out: two equal
   * snapshots mean nothing a client could notice changed. */
  snapshot(workspaceId: string): Promise<Record<string, unknown>>;
  /** Stops the HTTP server (the database stays open for assertions) and removes everything. */
  close(): Promise<void>;
  database: TestDatabase;
};

export async function createTeam(db: PgDatabase, deps: AdminDeps, name: string): Promise<Team> {
  const slug = name.toLowerCase().replace(/\W/g, '');
  const ws = await createWorkspace(db, { name, ownerEmail: `owner@${slug}.test`, ownerName: `${name} Owner` }, deps);
  const member = await createMember(db, { workspaceId: ws.workspaceId, name: `${name} Member`, email: `member@${slug}.test`, role: 'member' }, deps);
  const admin = await createMember(db, { workspaceId: ws.workspaceId, name: `${name} Admin`, email: `admin@${slug}.test`, role: 'admin' }, deps);
  return {
    workspaceId: ws.workspaceId,
    ownerId: ws.memberId,
    ownerKey: ws.apiKey,
    memberId: member.memberId,
    memberKey: member.apiKey,
    adminId: admin.memberId,
    adminKey: admin.apiKey,
  };
}

/** Encodes a GET input as a query string: arrays as repeated parameters. */
export function queryString(input: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(input)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) q.append(k, String(item));
    else q.append(k, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export async function startTestServer(backend: Backend, opts: Omit<ServerOptions, 'database' | 'clock'> & { clock?: FakeClock } = {}): Promise<TestServer> {
  const database = testDatabase(backend);
  const sql = await openMigrated(database);
  const db = new PgDatabase(sql);
  const clock = opts.clock ?? new FakeClock('2026-11-16T10:00:00.000Z');
  const deps: AdminDeps = { clock, ids: { uuid: () => randomUUID() }, secrets: nodeSecrets, random: seededRandom(3) };
  const ours = await createTeam(db, deps, 'Acme');
  const theirs = await createTeam(db, deps, 'Globex');
  const logs: string[] = [];
  const stream = {
    write(line: string) {
      logs.push(line);
    },
  };
  // The mailbox check asks DNS: a server on loopback where acme.test (the tests' sending domain) is
  // set up well for mail from 127.0.0.1, never the machine's DNS. A test may give its own.
  const dns = opts.senderCheck ? null : await startDns(passingZone('acme.test', '127.0.0.1'));
  const senderCheck = opts.senderCheck ?? { resolve: dnsResolver(dns?.servers ?? []), timeoutMs: 5_000 };
  const app = await buildServer({ database: sql, clock, logLevel: 'warn', logStream: stream, ...opts, senderCheck });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });

  async function call<T>(key: string | null, name: string, input: Record<string, unknown> = {}, init: { method?: string; headers?: Record<string, string>; rawBody?: string } = {}): Promise<CallResult<T>> {
    const method = init.method ?? (name.includes('.') && isGet(name) ? 'GET' : 'POST');
    const headers: Record<string, string> = { ...(key ? { authorization: `Bearer ${key}` } : {}), ...init.headers };
    let url = `${address}/${name}`;
    let body: string | undefined;
    if (method === 'GET') url += queryString(input);
    else {
      body = init.rawBody ?? JSON.stringify(input);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: keep the text for the assertion message.
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  return {
    backend,
    url: address,
    app,
    sql,
    db,
    clock,
    deps,
    ours,
    theirs,
    logs,
    call,
    async maxSeq(workspaceId) {
      const rows = await sql.query<{ m: string | number | null }>('SELECT max(seq) AS m FROM documents WHERE workspace_id = $1', [workspaceId]);
      return Number(rows[0]?.m ?? 0);
    },
    async snapshot(workspaceId) {
      const rows = await sql.query<{ collection: string; id: string; deleted: boolean; doc: Record<string, unknown> }>(
        'SELECT collection, id, deleted, doc FROM documents WHERE workspace_id = $1 ORDER BY collection, id',
        [workspaceId],
      );
      return Object.fromEntries(
        rows.map((r) => [`${r.collection}/${r.id}`, { deleted: r.deleted, doc: r.collection === 'apiKeys' ? { ...r.doc, lastUsedAt: null } : r.doc }]),
      );
    },
    async close() {
      await app.close();
      await dns?.close();
      await sql.close();
      await database.cleanup();
    },
    database,
  };
}

function isGet(name: string): boolean {
  const op = (operations as Record<string, OpDef>)[name];
  return op !== undefined && Object.prototype.hasOwnProperty.call(operations, name) && op.method === 'GET';
}
