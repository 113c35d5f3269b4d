/**
 * Stand-ins for the `electron` npm package and for GitHub's release downloads, so that `npm start`'s
 * download path runs for real without touching this checkout's node_modules/electron or the network:
 *
 * - `electronPackageCopy()`: `<tmp>/node_modules/electron` with the real package's install.js,
 *   index.js, package.json and checksums.json (ELECTRON_PACKAGE_DIR points `npm start` at it). Its
 *   install.js finds @electron/get through NODE_PATH, which `installerEnv()` sets.
 * - `releaseServer()`: an HTTP server on 127.0.0.1 to use as ELECTRON_MIRROR, answering 404, never
 *   finishing a download, or serving a zip with a fake executable and its SHASUMS256.txt.
 * - `storedZip()`: a zip without compression (the format's simplest form), for that fake release.
 */
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32 } from 'node:zlib';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REAL_PACKAGE = join(ROOT, 'node_modules', 'electron');

/** A copy of the real `electron` package, without any binary. */
export function electronPackageCopy(): { dir: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'crm-electron-'));
  const dir = join(root, 'node_modules', 'electron');
  mkdirSync(dir, { recursive: true });
  for (const f of ['install.js', 'index.js', 'package.json', 'checksums.json']) copyFileSync(join(REAL_PACKAGE, f), join(dir, f));
  return { dir, root };
}

/** The environment for a start against `electronPackageCopy()`: its install.js resolves
 * @electron/get from this checkout, and @electron/get caches in the temporary folder, not in the
 * user's ~/.cache/electron. */
export function installerEnv(pkg: { dir: string; root: string }, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ELECTRON_PACKAGE_DIR: pkg.dir, NODE_PATH: join(ROOT, 'node_modules'), electron_config_cache: join(pkg.root, 'electron-cache'), ...extra };
  // The test's own settings must not leak in from the machine running it.
  for (const k of ['ELECTRON_MIRROR', 'ELECTRON_CUSTOM_DIR', 'ELECTRON_SKIP_BINARY_DOWNLOAD', 'ELECTRON_DOWNLOAD_SECONDS', 'ELECTRON_OVERRIDE_DIST_PATH', 'npm_config_electron_mirror']) {
    if (!(k in extra)) delete env[k];
  }
  return env;
}

/** Where install.js puts the executable on this platform (its getPlatformPath()). */
export function platformPath(): string {
  if (process.platform === 'darwin') return 'Electron.app/Contents/MacOS/Electron';
  if (process.platform === 'win32') return 'electron.exe';
  return 'electron';
}

/**
 * A fake Electron executable: a Node script that prints its arguments and DATA_DIR, writes its pid
 * to `pidFile`, stays up like the app does, and on SIGTERM/SIGINT says so and exits 0.
 */
export function fakeElectronScript(pidFile: string): string {
  return `#!/usr/bin/env node
require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
console.log('fake electron: ' + JSON.stringify({ args: process.argv.slice(2), dataDir: process.env.DATA_DIR, runAsNode: process.env.ELECTRON_RUN_AS_NODE ?? null }));
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => { console.log('fake electron: ' + s); process.exit(0); });
setInterval(() => {}, 1000);
`;
}

/** Puts a fake executable in place as a successful install would (dist/<platformPath> and path.txt). */
export function installFakeBinary(dir: string, script: string): string {
  const exe = join(dir, 'dist', platformPath());
  mkdirSync(dirname(exe), { recursive: true });
  writeFileSync(exe, script);
  chmodSync(exe, 0o755);
  writeFileSync(join(dir, 'path.txt'), platformPath());
  return exe;
}

/** A zip archive of `files` (stored, not compressed), with Unix modes so an executable stays one. */
export function storedZip(files: { name: string; data: Buffer; mode: number }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const name = Buffer.from(f.name, 'utf8');
    const crc = crc32(f.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(f.data.length, 18);
    local.writeUInt32LE(f.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix, so the external attributes hold the mode
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(f.data.length, 20);
    central.writeUInt32LE(f.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(((0o100000 | f.mode) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, f.data);
    centrals.push(central, name);
    offset += local.length + name.length + f.data.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

export type ReleaseMode =
  | { kind: '404' }
  /** Sends the headers of a large zip and `bytes` of it, then nothing more. */
  | { kind: 'stall'; bytes: number }
  /** Serves `zip` for any .zip request, and a SHASUMS256.txt that matches it (but answers 404 to
   * everything under /missing/, a second mirror that fails). */
  | { kind: 'zip'; zip: Buffer };

export type ReleaseServer = {
  /** For ELECTRON_MIRROR: the server's root, ending with a slash as @electron/get expects. */
  mirror: string;
  requests: string[];
  /** Resolves when every connection the server saw has closed (a killed downloader's included). */
  allClosed: () => Promise<void>;
  close: () => Promise<void>;
};

export async function releaseServer(mode: ReleaseMode): Promise<ReleaseServer> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    requests.push(url);
    if (mode.kind === '404' || url.startsWith('/missing/')) {
      res.writeHead(404).end('not here');
    } else if (mode.kind === 'stall') {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': String(120_000_000) });
      res.write(Buffer.alloc(mode.bytes));
    } else if (url.endsWith('/SHASUMS256.txt')) {
      res.writeHead(200).end(`${createHash('sha256').update(mode.zip).digest('hex')} *${zipName()}\n`);
    } else if (url.endsWith('.zip')) {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': String(mode.zip.length) }).end(mode.zip);
    } else res.writeHead(404).end();
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    mirror: `http://127.0.0.1:${port}/`,
    requests,
    allClosed: async () => {
      while (sockets.size > 0) await new Promise((r) => setTimeout(r, 50));
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The version of the installed `electron` package. */
export function electronVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(join(REAL_PACKAGE, 'package.json'), 'utf8'));
  if (typeof pkg !== 'object' || pkg === null || !('version' in pkg) || typeof pkg.version !== 'string') throw new Error('node_modules/electron/package.json has no version');
  return pkg.version;
}

/** The zip @electron/get asks for on this machine (no SHASUMS entry for any other name passes). */
export function zipName(): string {
  return `electron-v${electronVersion()}-${process.platform}-${process.arch}.zip`;
}
