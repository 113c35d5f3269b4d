/** Starts support/runner-child.ts (one tick of a sync-server runner) in a process of its own on a
 * test database, for the crash tests that kill it mid-action. */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export type RunnerExit = { signal: NodeJS.Signals | null; code: number | null; out: string };

/** `dbEnv` names the test database (TestDatabase.env); only its variables point the child at a
 * database (an inherited DATABASE_URL would send a PGlite run elsewhere). `exited` rejects, after
 * killing the child, when it has not exited within a minute. */
export function startRunnerChild(dbEnv: Record<string, string>, runnerId: string, credentialsKey: string): { proc: ChildProcess; exited: Promise<RunnerExit> } {
  const { DATABASE_URL: _url, DATABASE_SCHEMA: _schema, DATA_DIR: _dir, ...inherited } = process.env;
  const env = { ...inherited, ...dbEnv, RUNNER_ID: runnerId, TEST_CREDENTIALS_KEY: credentialsKey };
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/integration/support/runner-child.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<RunnerExit>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`child runner did not finish in time: ${out}`));
    }, 60_000);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ signal, code, out });
    });
  });
  return { proc, exited };
}
