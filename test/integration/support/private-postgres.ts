/** A PostgreSQL server of the test's own (initdb in a temporary folder, on a free port of 127.0.0.1)
 * that the test may stop and start again to play a restart or a failover, without touching the
 * shared server the other suites use. PostgreSQL refuses to run as root: as root, its commands run
 * as the `postgres` user (runuser). */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './cli.ts';

const run = promisify(execFile);

export type PrivatePostgres = {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly port: number;
  /** Stops the server: `fast` (sessions are told 57P01 and closed, like a restart) or `immediate`
   * (no goodbye, like a crash). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data; resolves when it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  destroy(): Promise<void>;
};

/** The folder holding initdb and pg_ctl (PATH first, then Debian's /usr/lib/postgresql/<version>/bin,
 * newest first), or null. */
export function postgresBinDir(): string | null {
  const fromPath = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  const debian = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql')
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join('/usr/lib/postgresql', v, 'bin'))
    : [];
  for (const dir of [...fromPath, ...debian]) {
    const initdb = join(dir, 'initdb');
    if (!existsSync(initdb)) continue;
    // /usr/local/bin/initdb may be a link into the version's folder, where pg_ctl and postgres live.
    const real = dirname(realpathSync(initdb));
    if (existsSync(join(real, 'pg_ctl')) && existsSync(join(real, 'postgres'))) return real;
  }
  return null;
}

/** Why a private PostgreSQL cannot run here, or null when it can. */
export function privatePostgresUnavailable(): string | null {
  if (!postgresBinDir()) return 'initdb and pg_ctl of PostgreSQL are not installed (Debian: apt-get install postgresql); CI installs them';
  return null;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error(privatePostgresUnavailable() ?? 'PostgreSQL is not installed.');
  const asRoot = userInfo().uid === 0;
  // As root the folder must be reachable by the postgres user: /tmp, not a private TMPDIR.
  const root = mkdtempSync(join(asRoot ? '/tmp' : tmpdir(), 'crm-private-pg-'));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']).catch(() => ({ stdout: '' }));
    const { stdout: gid } = await run('id', ['-g', 'postgres']).catch(() => ({ stdout: '' }));
    if (!stdout.trim()) throw new Error('Running as root, the private PostgreSQL needs a postgres user to run as (PostgreSQL refuses root).');
    chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(root, 'data');
  const port = await freePort();
  const pg = (tool: string, args: string[]) => {
    const command = asRoot ? 'runuser' : join(bin, tool);
    const argv = asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args;
    return run(command, argv, { cwd: root, timeout: 60_000 });
  };
  await pg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const options = [`-p ${port}`, `-k ${root}`, '-c listen_addresses=127.0.0.1', '-c fsync=off', '-c full_page_writes=off', '-c autovacuum=off', '-c max_connections=60'].join(' ');
  const start = async (): Promise<void> => {
    await pg('pg_ctl', ['-D', data, '-l', join(root, 'server.log'), '-o', options, '-w', '-t', '30', 'start']);
  };
  let running = false;
  await start();
  running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop(mode = 'fast') {
      await pg('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop']);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(() => undefined);
      running = false;
      rmSync(root, { recursive: true, force: true });
    },
  };
}
