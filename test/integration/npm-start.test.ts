/**
 * `npm start` as the README runs it, through npm and its shell, each run in its own process group:
 * the one-line fallback to the web host when Electron's binary cannot be downloaded, `--desktop`
 * failing instead, the desktop path with a stand-in Electron executable, and SIGTERM or SIGINT sent
 * to the npm process alone ending every process of the group and freeing the port.
 *
 * The electron package used is a copy in a temporary folder (ELECTRON_PACKAGE_DIR), with Electron's
 * real install.js pointed at a release server on 127.0.0.1 (test/support/fake-electron.ts).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { electronPackageCopy, electronVersion, fakeElectronScript, installerEnv, installFakeBinary, releaseServer, ROOT, zipName } from '../support/fake-electron.ts';
import type { ReleaseServer } from '../support/fake-electron.ts';

type Run = { child: ChildProcess; out: () => string; err: () => string; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> };

const runs: Run[] = [];

/** `npm start -- <args>` in its own process group (detached), as a terminal would start it; with
 * `direct`, the script alone (node --import tsx scripts/start.ts), which is quicker to start. */
function npmStart(args: string[], env: NodeJS.ProcessEnv, direct = false): Run {
  const [cmd, ...argv] = direct ? [process.execPath, '--import', 'tsx', 'scripts/start.ts', ...args] : ['npm', 'start', '--', ...args];
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...env, DATA_DIR: mkdtempSync(join(tmpdir(), 'crm-start-data-')) }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const run = { child, out: () => out, err: () => err, exited };
  runs.push(run);
  return run;
}

async function waitFor<T>(what: string, probe: () => T | null | undefined | false, run: Run, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\nstdout:\n${run.out()}\nstderr:\n${run.err()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The processes of a group that are still alive (zombies are dead: they only wait to be reaped,
 * which an orphan's new parent may never do in a container). */
function liveMembers(pgid: number): number[] {
  const live: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') live.push(Number(name));
    } catch {
      // The process ended while we looked.
    }
  }
  return live;
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.on('error', () => resolve(true));
  });
}

/** Sends `signal` to the npm process only, or to the whole group as Ctrl+C in a terminal does, and
 * expects every process of the group gone within 5 s. */
async function stopAndExpectGroupGone(run: Run, signal: NodeJS.Signals, to: 'npm' | 'group'): Promise<void> {
  const pgid = run.child.pid;
  if (pgid === undefined) throw new Error('npm did not start');
  expect(liveMembers(pgid).length).toBeGreaterThan(1);
  process.kill(to === 'npm' ? pgid : -pgid, signal);
  const until = Date.now() + 5000;
  while (liveMembers(pgid).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  expect(liveMembers(pgid), `processes left in the group after ${signal} to npm`).toEqual([]);
}

let release: ReleaseServer;
beforeAll(async () => {
  release = await releaseServer({ kind: '404' });
});
afterEach(() => {
  // A failed test must not leave its group running.
  for (const r of runs.splice(0)) {
    if (r.child.pid !== undefined) {
      try {
        process.kill(-r.child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
});
afterAll(async () => {
  await release.close();
});

describe.skipIf(process.platform !== 'linux')('npm start', () => {
  it('says in one line that Electron could not be downloaded, serves the web host, and SIGTERM to npm ends it all', async () => {
    const pkg = electronPackageCopy();
    const run = npmStart(['--port', '0', '--no-build'], installerEnv(pkg, { ELECTRON_MIRROR: release.mirror }));
    const line = await waitFor('the fallback line', () => run.out().split('\n').find((l) => l.startsWith("Electron's binary")), run);
    const m = /^Electron's binary could not be downloaded \((.+)\); opening the web host at http:\/\/127\.0\.0\.1:(\d+) instead\. Retry with `npm start -- --desktop` \(a mirror, a proxy or a longer time limit: README "Running it"\)\.$/.exec(line);
    expect(m, line).not.toBeNull();
    expect(m?.[1]).toBe(`Response code 404 (Not Found) for ${release.mirror}v${electronVersion()}/${zipName()}`);
    const port = Number(m?.[2]);
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect([200, 503]).toContain(res.status); // 503 when the UI has not been built in this checkout
    expect(run.out().split('\n').filter((l) => l.includes('could not be downloaded'))).toHaveLength(1);

    await stopAndExpectGroupGone(run, 'SIGTERM', 'npm');
    expect(await portIsFree(port)).toBe(true);
    expect(run.err()).toContain('Stopped: the web host and the local database are closed.');
  });

  // Ctrl+C: the terminal sends SIGINT to the whole foreground group. (A SIGINT to npm alone stops at
  // npm's shell: dash catches it and waits for its child, as POSIX shells do; SIGTERM is the signal
  // for one process, and the test above sends it.)
  it('--web serves the web host without looking for Electron, and Ctrl+C ends it all cleanly', async () => {
    const pkg = electronPackageCopy();
    const before = release.requests.length;
    const run = npmStart(['--web', '--port', '0', '--no-build'], installerEnv(pkg, { ELECTRON_MIRROR: release.mirror }));
    const line = await waitFor('the web host line', () => run.out().split('\n').find((l) => l.startsWith('Web host')), run);
    const port = Number(/127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
    expect(release.requests).toHaveLength(before);
    await stopAndExpectGroupGone(run, 'SIGINT', 'group');
    expect(await portIsFree(port)).toBe(true);
    expect(run.err()).not.toContain('exiting anyway');
    // The web host and the backend closed, rather than the process dying of the signal.
    expect(run.err()).toContain('Stopped: the web host and the local database are closed.');
  });

  it('--desktop fails with the reason instead of falling back', async () => {
    const pkg = electronPackageCopy();
    const run = npmStart(['--desktop', '--port', '0', '--no-build'], installerEnv(pkg, { ELECTRON_MIRROR: release.mirror }));
    const { code } = await run.exited;
    expect(code).toBe(1);
    expect(run.err()).toContain("npm start: Electron's binary could not be downloaded (Response code 404 (Not Found) for ");
    expect(run.err()).toContain('and --desktop asks for the desktop app only.');
    expect(run.out()).not.toContain('web host');
  });

  it('opens the installed Electron with the main bundle and forwards SIGTERM to it', async () => {
    const pkg = electronPackageCopy();
    const pidFile = join(pkg.root, 'electron.pid');
    installFakeBinary(pkg.dir, fakeElectronScript(pidFile));
    const run = npmStart(['--no-build'], installerEnv(pkg, { ELECTRON_MIRROR: release.mirror, ELECTRON_RUN_AS_NODE: '1' }));
    const line = await waitFor('the fake Electron', () => run.out().split('\n').find((l) => l.startsWith('fake electron: {')), run);
    const seen: unknown = JSON.parse(line.slice('fake electron: '.length));
    expect(seen).toEqual({ args: [join(ROOT, 'build', 'electron', 'main.mjs')], dataDir: expect.stringContaining('crm-start-data-'), runAsNode: null });

    await stopAndExpectGroupGone(run, 'SIGTERM', 'npm');
    // Electron heard the signal itself: it was forwarded, not left to the group's end.
    expect(run.out()).toContain('fake electron: SIGTERM');
  });

  it('offers the web host when the desktop app fails at once (no display, missing libraries)', async () => {
    const pkg = electronPackageCopy();
    installFakeBinary(pkg.dir, '#!/bin/sh\necho "Missing X server or $DISPLAY" >&2\nexit 1\n');
    const run = npmStart(['--port', '0', '--no-build'], installerEnv(pkg), true);
    const line = await waitFor('the fallback line', () => run.out().split('\n').find((l) => l.startsWith('Electron exited')), run);
    expect(line).toMatch(/^Electron exited at once with code 1 \(its messages are above\); opening the web host at http:\/\/127\.0\.0\.1:\d+ instead\. `npm start -- --desktop` runs the desktop app alone\.$/);
    expect(run.err()).toContain('Missing X server');
    await stopAndExpectGroupGone(run, 'SIGTERM', 'npm');
  });
});
