/**
 * Processes for the sync suites and the desktop bench: a real sync server (`sync-server/cli.ts`,
 * PGlite in a data folder or Postgres with DATABASE_URL), its admin commands, and headless desktop
 * backends (`electron/backend/headless.ts`) driven over their JSON-lines RPC.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { SyncStatus } from '../../electron/bridge.ts';

const ROOT = join(import.meta.dirname, '..', '..');

const tsxArgs = (script: string, args: readonly string[]): string[] => ['--import', 'tsx', join(ROOT, script), ...args];

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

export type ServerEnv = { dataDir: string; databaseUrl?: string; schema?: string };

const serverEnv = (e: ServerEnv): NodeJS.ProcessEnv => ({
  ...process.env,
  DATA_DIR: e.dataDir,
  ...(e.databaseUrl ? { DATABASE_URL: e.databaseUrl } : { DATABASE_URL: '' }),
  ...(e.schema ? { DATABASE_SCHEMA: e.schema } : {}),
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_MINUTE: '1000000',
});

/** Runs an admin command of the sync server CLI and returns its JSON answer. */
export async function serverAdmin(env: ServerEnv, args: readonly string[]): Promise<Record<string, string>> {
  const child = spawn(process.execPath, tsxArgs('sync-server/cli.ts', args), { env: serverEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`sync-server ${args.join(' ')} failed (${code}): ${err}`);
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Record<string, string>;
}

export type RunningServer = { url: string; port: number; process: ChildProcess; stop(signal?: NodeJS.Signals): Promise<void>; log(): string };

/** Starts `npm run sync-server` (serve) on a port and waits until it answers /healthz. */
export async function startServer(env: ServerEnv, port?: number): Promise<RunningServer> {
  const p = port ?? (await freePort());
  const child = spawn(process.execPath, tsxArgs('sync-server/cli.ts', []), {
    env: { ...serverEnv(env), PORT: String(p), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (b: Buffer) => (log += b.toString()));
  child.stderr.on('data', (b: Buffer) => (log += b.toString()));
  const url = `http://127.0.0.1:${p}`;
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sync server exited (${child.exitCode}): ${log}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`sync server did not start: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    port: p,
    process: child,
    log: () => log,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

export class RpcError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** One headless desktop backend in its own process. */
export class HeadlessDesktop {
  status: SyncStatus | null = null;
  workspaceId = '';
  memberId = '';
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly statusWaiters = new Set<() => void>();
  private stderr = '';
  private exited: Promise<number | null>;

  private constructor(readonly process: ChildProcess) {
    this.exited = new Promise((r) => process.once('exit', r));
    process.stderr?.on('data', (b: Buffer) => (this.stderr += b.toString()));
    void this.exited.then(() => {
      for (const p of this.pending.values()) p.reject(new Error(`desktop exited: ${this.stderr.slice(-2000)}`));
      this.pending.clear();
    });
  }

  static async start(opts: { server: string; key: string; dataDir: string; allowRaw?: boolean }): Promise<HeadlessDesktop> {
    const args = ['--server', opts.server, '--key', opts.key, '--data', opts.dataDir, ...(opts.allowRaw ? ['--allow-raw'] : [])];
    const child = spawn(process.execPath, tsxArgs('electron/backend/headless.ts', args), { stdio: ['pipe', 'pipe', 'pipe'] });
    const d = new HeadlessDesktop(child);
    const ready = new Promise<void>((resolve, reject) => {
      const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
      rl.on('line', (line) => {
        let msg: { event?: string; status?: SyncStatus; id?: number; result?: unknown; error?: { code: string; message: string }; workspaceId?: string; memberId?: string };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          return;
        }
        if (msg.event === 'ready') {
          d.workspaceId = msg.workspaceId ?? '';
          d.memberId = msg.memberId ?? '';
          d.status = msg.status ?? null;
          resolve();
        } else if (msg.event === 'status' && msg.status) {
          d.status = msg.status;
          for (const w of d.statusWaiters) w();
        } else if (typeof msg.id === 'number') {
          const p = d.pending.get(msg.id);
          d.pending.delete(msg.id);
          if (msg.error) p?.reject(new RpcError(msg.error.code, msg.error.message));
          else p?.resolve(msg.result);
        }
      });
      void d.exited.then((code) => reject(new Error(`desktop exited before ready (${code}): ${d.stderr}`)));
    });
    await ready;
    return d;
  }

  call<T = unknown>(op: string, input: unknown = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.process.stdin?.write(`${JSON.stringify({ id, op, input })}\n`);
    });
  }

  awaitSync(timeoutMs = 60_000): Promise<SyncStatus> {
    return this.call<SyncStatus>('$awaitSync', { timeoutMs });
  }

  /** Resolves when the latest status line satisfies `pred`. */
  async waitStatus(pred: (s: SyncStatus) => boolean, timeoutMs = 30_000): Promise<SyncStatus> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.call<SyncStatus>('$status');
      if (pred(s)) return s;
      if (Date.now() > end) throw new Error(`status never matched; last: ${JSON.stringify(s)}`);
      await new Promise<void>((r) => {
        const waiters = this.statusWaiters;
        const done = (): void => {
          clearTimeout(t);
          waiters.delete(done);
          r();
        };
        const t = setTimeout(done, 200);
        waiters.add(done);
      });
    }
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill(signal);
    return this.exited;
  }

  /** Closes cleanly (sync stopped, database closed). */
  async close(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    this.process.stdin?.end();
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}
