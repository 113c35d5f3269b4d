/**
 * Electron's binary for `npm start`, fetched the first time it is needed rather than at install.
 *
 * package.json `allowScripts` denies Electron's install script, so `npm install` never fails on a
 * machine that cannot download the binary (no access to GitHub's release downloads, as in CI). The
 * first `npm start` runs that same script (`node_modules/electron/install.js`, through
 * @electron/get) in a child process instead: it honours ELECTRON_MIRROR, ELECTRON_CUSTOM_DIR,
 * electron_config_cache, the proxy settings (ELECTRON_GET_USE_PROXY with HTTPS_PROXY) and its
 * download cache, and it checks the zip against the checksums shipped in the package. We add what
 * it lacks when run by hand: a time limit, a progress line (its own bar only appears after 30 s, on
 * a terminal), a one-line reason when it fails, and a memory of the failure so that every start
 * does not wait for the same download to fail again.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The download's time limit unless ELECTRON_DOWNLOAD_SECONDS says otherwise: the Linux zip is about
 * 110 MB, three minutes at 5 Mbit/s. */
export const DEFAULT_DOWNLOAD_SECONDS = 180;
/** How long a failed download is believed before `npm start` tries again by itself. */
export const REMEMBER_FAILURE_MS = 24 * 60 * 60 * 1000;

const cjsRequire = createRequire(import.meta.url);

export type ElectronPackage = { dir: string; version: string };

/** The installed `electron` npm package (ELECTRON_PACKAGE_DIR points at another one, for tests), or
 * null when it is not installed (`npm install --omit=dev` leaves it out). */
export function findElectronPackage(env: NodeJS.ProcessEnv, root: string): ElectronPackage | null {
  let dir = env.ELECTRON_PACKAGE_DIR;
  if (!dir) {
    try {
      dir = dirname(cjsRequire.resolve('electron/package.json', { paths: [root] }));
    } catch {
      return null;
    }
  }
  try {
    const pkg: unknown = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const version = typeof pkg === 'object' && pkg !== null && 'version' in pkg ? pkg.version : undefined;
    return typeof version === 'string' ? { dir, version } : null;
  } catch {
    return null;
  }
}

/** The executable the package's own index.js names (it honours ELECTRON_OVERRIDE_DIST_PATH), when
 * it is there. index.js throws until install.js has written path.txt; a module that throws is not
 * cached, so asking again after a download sees the new binary. */
export function installedBinary(pkg: ElectronPackage): string | null {
  try {
    const path: unknown = cjsRequire(join(pkg.dir, 'index.js'));
    return typeof path === 'string' && existsSync(path) ? path : null;
  } catch {
    return null;
  }
}

export type DownloadProgress = { phase: 'download' | 'unpack'; bytes: number; seconds: number };

export type InstallerRun = { ok: true; path: string } | { ok: false; reason: string; aborted: boolean };

/**
 * Runs the package's install.js in a child process, killed after `timeoutMs` or when `signal`
 * aborts. The child's temporary folder is one we make, so the zip growing in it is the progress.
 */
export async function runElectronInstaller(opts: {
  pkg: ElectronPackage;
  timeoutMs: number;
  env: NodeJS.ProcessEnv;
  onProgress?: (p: DownloadProgress) => void;
  signal?: AbortSignal;
}): Promise<InstallerRun> {
  const { pkg } = opts;
  const installJs = join(pkg.dir, 'install.js');
  if (!existsSync(installJs)) return { ok: false, reason: `${installJs} is missing`, aborted: false };
  const tmp = mkdtempSync(join(tmpdir(), 'outreach-electron-'));
  const started = Date.now();
  const child = spawn(process.execPath, [installJs], {
    cwd: pkg.dir,
    // TMPDIR/TMP/TEMP: os.tmpdir() of the child on every OS, where @electron/get downloads to.
    // DEBUG: @electron/get then logs the URL it asks for, which its HTTP errors' stack leaves out.
    env: { ...opts.env, TMPDIR: tmp, TMP: tmp, TEMP: tmp, DEBUG: [opts.env.DEBUG, '@electron/get:index'].filter(Boolean).join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    if (output.length < 64_000) output += chunk.toString('utf8');
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);

  let bytes = 0;
  let why: 'timeout' | 'aborted' | null = null;
  const kill = (reason: 'timeout' | 'aborted') => {
    if (why !== null || child.exitCode !== null || child.signalCode !== null) return;
    why = reason;
    child.kill('SIGTERM');
    // install.js has no cleanup that could hang, but a stuck child must not outlive us.
    setTimeout(() => child.kill('SIGKILL'), 3000).unref();
  };
  const poll = setInterval(() => {
    const zip = downloadingZipSize(tmp);
    if (zip !== null) bytes = Math.max(bytes, zip);
    opts.onProgress?.({ phase: zip === null && bytes > 0 ? 'unpack' : 'download', bytes, seconds: (Date.now() - started) / 1000 });
  }, 250);
  const limit = setTimeout(() => kill('timeout'), opts.timeoutMs);
  const onAbort = () => kill('aborted');
  opts.signal?.addEventListener('abort', onAbort);
  if (opts.signal?.aborted) onAbort();

  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.on('error', (error) => resolve({ code: null, signal: null, error }));
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  clearInterval(poll);
  clearTimeout(limit);
  opts.signal?.removeEventListener('abort', onAbort);
  rmSync(tmp, { recursive: true, force: true });

  if (why === 'aborted') return { ok: false, reason: 'stopped', aborted: true };
  if (why === 'timeout') {
    const seconds = Math.round(opts.timeoutMs / 1000);
    return { ok: false, reason: `not finished within ${seconds} s, ${megabytes(bytes)} received; ELECTRON_DOWNLOAD_SECONDS sets the limit`, aborted: false };
  }
  if (exit.error) return { ok: false, reason: `its installer could not start: ${exit.error.message}`, aborted: false };
  const said = installerReason(output);
  if (exit.code === 0) {
    const path = installedBinary(pkg);
    if (path) return { ok: true, path };
    return { ok: false, reason: `its installer ended without a binary in ${join(pkg.dir, 'dist')}${said ? `: ${said}` : ''}`, aborted: false };
  }
  const how = exit.code !== null ? `exited with code ${exit.code}` : `ended by ${exit.signal}`;
  return { ok: false, reason: said ?? `its installer ${how}`, aborted: false };
}

/** The size of the zip @electron/get is writing under `tmp` (tmp/electron-download-XXXX/*.zip). */
function downloadingZipSize(tmp: string): number | null {
  try {
    for (const d of readdirSync(tmp)) {
      const sub = join(tmp, d);
      if (!statSync(sub).isDirectory()) continue;
      for (const f of readdirSync(sub)) if (f.endsWith('.zip')) return statSync(join(sub, f)).size;
    }
  } catch {
    // The folder is removed when the download ends: nothing is being written then.
  }
  return null;
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/**
 * One line from install.js's output that says why it failed. It prints the error's stack: the
 * first line is "<Class>Error: <message>" (got's "RequestError: getaddrinfo ENOTFOUND github.com",
 * "HTTPError: Response code 404 (Not Found) for <url>", sumchecker's checksum mismatch), and the
 * class name says nothing to a user, so only the message is kept.
 */
export function installerReason(output: string): string | null {
  const all = output.split(/\r?\n/).map((l) => l.trim());
  // "<time> @electron/get:index Downloading <url> to <path> with options: {...}" (DEBUG, above).
  const urls = all.flatMap((l) => /@electron\/get:index Downloading (\S+) to /.exec(l)?.[1] ?? []);
  const lines = all.filter((l) => l !== '' && !l.startsWith('at ') && !l.includes('@electron/get:'));
  const error = lines.find((l) => /^[A-Za-z]*Error: /.test(l)) ?? lines.find((l) => /^[A-Za-z]*Error\b/.test(l));
  let line = (error ?? lines.at(-1))?.replace(/^[A-Za-z]*Error: /, '');
  if (!line) return null;
  // got's HTTP errors name the status only ("Response code 404 (Not Found)"): add what was asked.
  const url = urls.at(-1);
  if (url && /^Response code \d+/.test(line) && !line.includes(' for ')) line += ` for ${url}`;
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/** The settings that decide where and how the download happens: a failure is only remembered for
 * the same ones, so setting a mirror or a proxy (or a longer time limit) tries again at once. */
export function downloadSettings(env: NodeJS.ProcessEnv): string {
  const relevant = /^((npm_config_|npm_package_config_)?electron_(mirror|custom_dir|custom_filename|custom_version|nightly_mirror|use_remote_checksums|config_cache|get_use_proxy|download_seconds)|global_agent_\w+|https?_proxy|no_proxy|force_no_cache)$/i;
  const pairs = Object.entries(env).filter(([k, v]) => relevant.test(k) && v !== undefined && v !== '');
  return JSON.stringify(pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export type FailureRecord = { version: string; settings: string; at: string; reason: string };

/** Where the last failure is kept: beside the package, in node_modules/.cache, so a fresh
 * `npm install` into an empty node_modules starts over. */
export function failureFile(pkg: ElectronPackage): string {
  return join(dirname(pkg.dir), '.cache', 'outreach-crm', 'electron-download.json');
}

export function rememberedFailure(file: string, version: string, settings: string, now: Date): FailureRecord | null {
  try {
    const r: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (typeof r !== 'object' || r === null || !('at' in r) || !('reason' in r) || !('version' in r) || !('settings' in r)) return null;
    const { at, reason } = r;
    if (r.version !== version || r.settings !== settings || typeof at !== 'string' || typeof reason !== 'string') return null;
    const age = now.getTime() - Date.parse(at);
    return age >= 0 && age < REMEMBER_FAILURE_MS ? { version, settings, at, reason } : null;
  } catch {
    return null;
  }
}

function writeFailure(file: string, rec: FailureRecord | null): void {
  try {
    if (rec === null) rmSync(file, { force: true });
    else {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, `${JSON.stringify(rec, null, 2)}\n`);
    }
  } catch {
    // Only a convenience: without it the next start tries the download again.
  }
}

/** "3 minutes ago", "5 hours ago": how old a remembered failure is. */
export function ago(at: string, now: Date): string {
  const minutes = Math.max(0, Math.round((now.getTime() - Date.parse(at)) / 60_000));
  if (minutes < 1) return 'less than a minute ago';
  if (minutes < 90) return `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
  const hours = Math.round(minutes / 60);
  return `${hours} hours ago`;
}

/** The time limit from ELECTRON_DOWNLOAD_SECONDS (0: never download), or why the value is wrong. */
export function downloadSeconds(env: NodeJS.ProcessEnv): number | { invalid: string } {
  const raw = env.ELECTRON_DOWNLOAD_SECONDS;
  if (raw === undefined || raw.trim() === '') return DEFAULT_DOWNLOAD_SECONDS;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : { invalid: `ELECTRON_DOWNLOAD_SECONDS must be a number of seconds, not "${raw}"` };
}

export type ElectronChoice =
  | { kind: 'binary'; path: string; version: string; downloaded: boolean }
  /** `reason` completes "<reason>; opening the web host at ... instead."; `retry` is a sentence. */
  | { kind: 'missing'; reason: string; retry: string }
  | { kind: 'stopped' };

const RETRY = 'Retry with `npm start -- --desktop` (a mirror, a proxy or a longer time limit: README "Running it").';

/**
 * The Electron executable, downloaded now if needed. `force` (npm start -- --desktop) ignores a
 * remembered failure. Never throws for a failed download: the caller falls back or fails.
 */
export async function chooseElectron(opts: {
  root: string;
  env: NodeJS.ProcessEnv;
  force: boolean;
  now?: () => Date;
  onDownloadStart?: (version: string, limitSeconds: number) => void;
  onProgress?: (p: DownloadProgress) => void;
  onDownloadEnd?: () => void;
  signal?: AbortSignal;
}): Promise<ElectronChoice> {
  const now = opts.now ?? (() => new Date());
  const pkg = findElectronPackage(opts.env, opts.root);
  if (!pkg) {
    return { kind: 'missing', reason: 'Electron is not installed (it is a dev dependency: `npm install --omit=dev` leaves it out)', retry: 'Run `npm install` to get it.' };
  }
  const installed = installedBinary(pkg);
  if (installed) return { kind: 'binary', path: installed, version: pkg.version, downloaded: false };
  if (opts.env.ELECTRON_SKIP_BINARY_DOWNLOAD) {
    return { kind: 'missing', reason: "Electron's binary is not installed and ELECTRON_SKIP_BINARY_DOWNLOAD is set", retry: 'Unset it to download the binary.' };
  }
  const seconds = downloadSeconds(opts.env);
  if (typeof seconds !== 'number') return { kind: 'missing', reason: seconds.invalid, retry: 'Fix it and start again.' };
  if (seconds === 0) {
    return { kind: 'missing', reason: "Electron's binary is not installed and ELECTRON_DOWNLOAD_SECONDS=0 turns its download off", retry: 'Unset it to download the binary.' };
  }
  const file = failureFile(pkg);
  const settings = downloadSettings(opts.env);
  const remembered = opts.force ? null : rememberedFailure(file, pkg.version, settings, now());
  if (remembered) {
    return { kind: 'missing', reason: `Electron's binary could not be downloaded ${ago(remembered.at, now())} (${remembered.reason})`, retry: RETRY };
  }
  opts.onDownloadStart?.(pkg.version, seconds);
  const run = await runElectronInstaller({ pkg, timeoutMs: seconds * 1000, env: opts.env, onProgress: opts.onProgress, signal: opts.signal });
  opts.onDownloadEnd?.();
  if (run.ok) {
    writeFailure(file, null);
    return { kind: 'binary', path: run.path, version: pkg.version, downloaded: true };
  }
  if (run.aborted) return { kind: 'stopped' };
  writeFailure(file, { version: pkg.version, settings, at: now().toISOString(), reason: run.reason });
  return { kind: 'missing', reason: `Electron's binary could not be downloaded (${run.reason})`, retry: RETRY };
}
