/**
 * `npm start`: builds the UI if needed, then opens the desktop app (Electron) when its binary is
 * installed, otherwise serves the same app to a browser from the web host and says why.
 *
 *   npm start                     desktop app, or the web host at http://127.0.0.1:5173
 *   npm start -- --web            the web host even when Electron is installed
 *   npm start -- --port 0         any free port (printed)
 *   DATA_DIR=/tmp/crm npm start   another data folder (default ~/.outreach-crm)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createDesktopBackend } from '../electron/backend/desktop.ts';
import { defaultDataDir } from '../electron/backend/session.ts';
import { startWebHost } from '../electron/web-host.ts';
import { buildElectron, buildRenderer, RENDERER_DIST, ROOT } from './build-app.ts';

type Args = { web: boolean; port: number; host: string; build: boolean };

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { web: false, port: Number(process.env.WEB_HOST_PORT ?? 5173), host: '127.0.0.1', build: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--web') args.web = true;
    else if (a === '--no-build') args.build = false;
    else if (a === '--port' || a === '--host') {
      const v = argv[++i];
      if (v === undefined) fail(`${a} needs a value`);
      if (a === '--port') {
        args.port = Number(v);
        if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) fail(`--port must be a port number, not "${v}"`);
      } else args.host = v;
    } else fail(`unknown option ${a}; options are --web, --port N, --host H, --no-build`);
  }
  return args;
}

function fail(message: string): never {
  console.error(`npm start: ${message}`);
  process.exit(2);
}

/** The Electron executable when its binary was downloaded at install time, else why not. */
function electronBinary(): { path: string } | { missing: string } {
  try {
    const path: unknown = createRequire(import.meta.url)('electron');
    if (typeof path === 'string' && existsSync(path)) return { path };
    return { missing: "Electron's binary is not installed here" };
  } catch {
    return { missing: "Electron's binary is not installed here" };
  }
}

const args = parseArgs(process.argv.slice(2));
const dataDir = defaultDataDir();
if (args.build) await buildRenderer({ log: (l) => console.log(l) });

const electron = args.web ? { missing: 'you asked for the web host (--web)' } : electronBinary();
if ('path' in electron) {
  const { main } = await buildElectron();
  const child = spawn(electron.path, [main], { stdio: 'inherit', env: { ...process.env, DATA_DIR: dataDir }, cwd: ROOT });
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  const backend = await createDesktopBackend({ dataDir });
  const host = await startWebHost({ backend, rendererDir: RENDERER_DIST, host: args.host, port: args.port, log: (l) => console.error(l) });
  console.log(`${electron.missing}; opening the web host at ${host.url.replace(/\/$/, '')} instead.`);
  console.log(`Open that address in your browser. Data folder: ${dataDir}. Stop with Ctrl+C.`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await host.close();
    await backend.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
