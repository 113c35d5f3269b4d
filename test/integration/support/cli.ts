/** Runs the sync-server command line as a real child process (node with the tsx loader, no wrapper,
 * so signals reach the server itself). */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = ['--import', 'tsx', 'sync-server/cli.ts'];

export type CliResult = { code: number | null; stdout: string; stderr: string };

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  // The test decides the database; never inherit one from the outer environment by accident.
  delete base.DATABASE_URL;
  delete base.DATABASE_SCHEMA;
  delete base.DATA_DIR;
  return { ...base, LOG_LEVEL: 'warn', ...env };
}

export function runCli(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sync-server ${args.join(' ')} did not finish in ${timeoutMs} ms. stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export type ServerProcess = { proc: ChildProcess; url: string; output: () => string; exited: Promise<number | null> };

/** Starts `sync-server` (serve) and waits until /healthz answers. */
export async function spawnServer(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  const port = await freePort();
  const proc = spawn(process.execPath, CLI, { cwd: ROOT, env: childEnv({ PORT: String(port), HOST: '127.0.0.1', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`The server exited with ${proc.exitCode}: ${out}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`The server did not become healthy in ${timeoutMs} ms: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { proc, url, output: () => out, exited };
}
