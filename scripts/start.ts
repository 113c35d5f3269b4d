/**
 * `npm start`: builds the UI if needed, then opens the desktop app (Electron), downloading Electron's
 * binary the first time (scripts/electron-binary.ts); when that cannot be had, it serves the same app
 * to a browser from the web host and says why in one line.
 *
 *   npm start                     desktop app, or the web host at http://127.0.0.1:5173
 *   npm start -- --desktop        the desktop app or an error: never the web host
 *   npm start -- --web            the web host even when Electron is installed
 *   npm start -- --port 0         any free port (printed)
 *   DATA_DIR=/tmp/crm npm start   another data folder (default ~/.outreach-crm)
 *
 * SIGINT and SIGTERM stop what it started (the web host and the backend, Electron, or a download in
 * progress) before it exits, and so does the end of its parent. npm runs this through `sh -c`, and
 * npm forwards a SIGTERM only to that shell: Debian's dash does not exec the command, so the shell
 * dies and this process would live on with the port, as an orphan. `exec` in the npm script would
 * fix it on POSIX shells but breaks cmd.exe on Windows; watching process.ppid works everywhere a
 * parent can vanish.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { createDesktopBackend } from '../electron/backend/desktop.ts';
import { defaultDataDir } from '../electron/backend/session.ts';
import { startWebHost } from '../electron/web-host.ts';
import { buildElectron, buildRenderer, RENDERER_DIST, ROOT } from './build-app.ts';
import { chooseElectron, megabytes } from './electron-binary.ts';
import type { DownloadProgress, ElectronChoice } from './electron-binary.ts';

type Mode = 'auto' | 'web' | 'desktop';
type Args = { mode: Mode; port: number; host: string; build: boolean };

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { mode: 'auto', port: Number(process.env.WEB_HOST_PORT ?? 5173), host: '127.0.0.1', build: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--web' || a === '--desktop') {
      const mode = a === '--web' ? 'web' : 'desktop';
      if (args.mode !== 'auto' && args.mode !== mode) fail('--web and --desktop ask for opposite things; give one of them');
      args.mode = mode;
    } else if (a === '--no-build') args.build = false;
    else if (a === '--port' || a === '--host') {
      const v = argv[++i];
      if (v === undefined) fail(`${a} needs a value`);
      if (a === '--port') {
        args.port = Number(v);
        if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) fail(`--port must be a port number, not "${v}"`);
      } else args.host = v;
    } else fail(`unknown option ${a}; options are --desktop, --web, --port N, --host H, --no-build`);
  }
  return args;
}

function fail(message: string, code = 2): never {
  console.error(`npm start: ${message}`);
  process.exit(code);
}

// --- Stopping ------------------------------------------------------------------------------------

/** Aborted on the first SIGINT/SIGTERM or when the parent is gone; a download in progress listens. */
const stopping = new AbortController();
/** What stops the running part and resolves with the exit code; replaced as the start advances. */
let stopRunning: (signal: NodeJS.Signals) => Promise<number> = async () => 0;

function requestStop(signal: NodeJS.Signals): void {
  if (stopping.signal.aborted) {
    // A second Ctrl+C: the user does not want to wait for a clean stop.
    console.error('npm start: stopped without waiting for a clean close');
    process.exit(1);
  }
  stopping.abort();
  // Nothing that is stopping may keep the port: after 10 s, exit whatever is still open.
  setTimeout(() => {
    console.error('npm start: still stopping after 10 s; exiting anyway');
    process.exit(1);
  }, 10_000).unref();
  stopRunning(signal).then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error('npm start: stopping failed:', e);
      process.exit(1);
    },
  );
}

process.on('SIGINT', () => requestStop('SIGINT'));
process.on('SIGTERM', () => requestStop('SIGTERM'));
const parentAtStart = process.ppid;
setInterval(() => {
  if (process.ppid !== parentAtStart && !stopping.signal.aborted) requestStop('SIGTERM');
}, 500).unref();

// --- Electron's binary ---------------------------------------------------------------------------

/** The download's progress on stderr: rewritten in place on a terminal, one line otherwise, and
 * nothing for a download that ends within a second (a machine without access fails at once). */
function progressLine(): { start: (version: string, limit: number) => void; update: (p: DownloadProgress) => void; end: () => void } {
  const tty = process.stderr.isTTY === true;
  let version = '';
  let limit = 0;
  let shown = false;
  return {
    start: (v, l) => {
      version = v;
      limit = l;
    },
    update: (p) => {
      if (p.seconds < 1) return;
      const what = p.phase === 'unpack' ? `Unpacking Electron ${version}` : `Downloading Electron ${version} for the desktop app (once)`;
      if (tty) process.stderr.write(`\r\x1b[K${what}: ${megabytes(p.bytes)}, ${Math.round(p.seconds)} s of at most ${limit} s`);
      else if (!shown) process.stderr.write(`${what}, at most ${limit} s...\n`);
      shown = true;
    },
    end: () => {
      if (tty && shown) process.stderr.write('\r\x1b[K');
    },
  };
}

// --- Start ---------------------------------------------------------------------------------------

const args = parseArgs(process.argv.slice(2));
const dataDir = defaultDataDir();
if (args.build) await buildRenderer({ log: (l) => console.log(l) });

let electron: ElectronChoice = { kind: 'missing', reason: '', retry: '' };
if (args.mode !== 'web' && !stopping.signal.aborted) {
  const progress = progressLine();
  const choosing = chooseElectron({
    root: ROOT,
    env: process.env,
    force: args.mode === 'desktop',
    onDownloadStart: progress.start,
    onProgress: progress.update,
    onDownloadEnd: progress.end,
    signal: stopping.signal,
  });
  // Stopping during the download: the installer is killed, then we exit.
  stopRunning = () => choosing.then(() => 0);
  electron = await choosing;
}

/** Electron's run: its exit code, and whether it failed at once (no display on a Linux server,
 * missing system libraries), which in the default mode is a reason to offer the web host. */
async function runElectron(path: string): Promise<{ code: number; failedAtOnce: boolean }> {
  const { main } = await buildElectron();
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
  // Set by some tools that are themselves Electron apps; it would make the binary a plain Node.
  delete env.ELECTRON_RUN_AS_NODE;
  const started = Date.now();
  const child = spawn(path, [main], { stdio: 'inherit', env, cwd: ROOT });
  let forwarded: NodeJS.Signals | null = null;
  const exited = new Promise<number>((resolve) => {
    child.on('error', (e) => {
      console.error(`npm start: Electron could not start (${e.message})`);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      if (code !== null) resolve(code);
      else if (signal === forwarded) resolve(0);
      else {
        console.error(`npm start: Electron ended with ${signal}`);
        resolve(128 + (signal ? constants.signals[signal] : 0));
      }
    });
  });
  stopRunning = (signal) => {
    forwarded = signal;
    child.kill(signal);
    return exited;
  };
  const code = await exited;
  return { code, failedAtOnce: code !== 0 && forwarded === null && Date.now() - started < 10_000 };
}

async function serveWebHost(say: (url: string) => string): Promise<void> {
  const starting = (async () => {
    const backend = await createDesktopBackend({ dataDir });
    const host = await startWebHost({ backend, rendererDir: RENDERER_DIST, host: args.host, port: args.port, log: (l) => console.error(l) });
    return { backend, host };
  })();
  // A stop while the backend and the host are starting waits for them, then closes both.
  stopRunning = async () => {
    const { backend, host } = await starting;
    await host.close();
    await backend.close();
    console.error('Stopped: the web host and the local database are closed.');
    return 0;
  };
  const { host } = await starting;
  console.log(say(host.url.replace(/\/$/, '')));
  console.log(`Open that address in your browser. Data folder: ${dataDir}. Stop with Ctrl+C.`);
}

if (stopping.signal.aborted || electron.kind === 'stopped') {
  // A stop arrived while building or downloading: requestStop exits once the download is gone.
} else if (electron.kind === 'binary') {
  if (electron.downloaded) console.log(`Electron ${electron.version} is installed; opening the desktop app.`);
  const { code, failedAtOnce } = await runElectron(electron.path);
  if (args.mode === 'auto' && failedAtOnce && !stopping.signal.aborted) {
    await serveWebHost((url) => `Electron exited at once with code ${code} (its messages are above); opening the web host at ${url} instead. \`npm start -- --desktop\` runs the desktop app alone.`);
  } else process.exit(code);
} else if (args.mode === 'desktop') {
  fail(`${electron.reason}, and --desktop asks for the desktop app only. ${electron.retry}`, 1);
} else if (electron.kind === 'missing' && args.mode === 'auto') {
  await serveWebHost((url) => `${electron.reason}; opening the web host at ${url} instead. ${electron.retry}`);
} else await serveWebHost((url) => `Web host (--web) at ${url}.`);
