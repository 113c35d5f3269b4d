/**
 * `npm run dist`: packages the desktop app with electron-builder (build/electron-builder.yml).
 *
 *   npm run dist                    installers for this OS (Linux: AppImage + deb, macOS: dmg, Windows: nsis)
 *   npm run dist -- --linux         or --mac / --win, and any other electron-builder option
 *   npm run dist -- --check         validate the configuration and inputs, build nothing
 *
 * Steps: draw the icon, build the renderer (Vite) and the main process and preload (esbuild), then run
 * electron-builder, which downloads Electron for the target and rebuilds better-sqlite3 for Electron's
 * ABI. That rebuild happens in this project's node_modules, which would leave Node (npm start, the
 * tests) with a binding it cannot load, so the Node build is restored afterwards, whatever happened.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildElectron, buildRenderer, RENDERER_DIST, ROOT } from '../scripts/build-app.ts';

const CONFIG = join(ROOT, 'build', 'electron-builder.yml');
const ICON = join(ROOT, 'build', 'resources', 'icon.png');

function run(cmd: string, args: readonly string[]): number {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' });
  return r.status ?? 1;
}

/** Width and height from a PNG's IHDR chunk. */
function pngSize(file: string): { width: number; height: number } {
  const b = readFileSync(file);
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** Validates the configuration against electron-builder's own schema (what `electron-builder` does
 * first), without downloading anything. */
async function validateConfig(): Promise<void> {
  const require = createRequire(import.meta.url);
  const config = require('app-builder-lib/out/util/config/config.js') as {
    getConfig(projectDir: string, configPath: string, fromOptions: null): Promise<unknown>;
    validateConfiguration(config: unknown, logger: unknown): Promise<void>;
  };
  const { DebugLogger } = require('builder-util/out/DebugLogger.js') as { DebugLogger: new (enabled: boolean) => unknown };
  await config.validateConfiguration(await config.getConfig(ROOT, CONFIG, null), new DebugLogger(false));
}

async function check(): Promise<void> {
  await validateConfig();
  const { width, height } = pngSize(ICON);
  if (width < 512 || height < 512) throw new Error(`${ICON} is ${width}x${height}; electron-builder needs at least 512x512 (run: npx tsx build/make-icon.ts).`);
  const { main, preload } = await buildElectron();
  for (const f of [main, preload, join(ROOT, 'build', 'icon.png')]) if (!existsSync(f)) throw new Error(`${f} is missing.`);
  console.log(`build/electron-builder.yml is valid; icon ${width}x${height}; main process and preload bundled (${main}).`);
  if (!existsSync(join(RENDERER_DIST, 'index.html'))) console.log('The renderer is not built yet; `npm run dist` builds it.');
}

const args = process.argv.slice(2);
if (args.includes('--check')) {
  await check();
} else {
  if (run(process.execPath, ['--import', 'tsx', join(ROOT, 'build', 'make-icon.ts')]) !== 0) process.exit(1);
  await buildRenderer({ force: true, log: console.log });
  await buildElectron();
  let status = 1;
  try {
    status = run(process.execPath, [join(ROOT, 'node_modules', 'electron-builder', 'cli.js'), '--config', CONFIG, '--publish', 'never', ...args]);
    if (status !== 0) {
      console.error(
        'electron-builder failed. It needs network access to download Electron for the target platform and, when no prebuilt better-sqlite3 matches, a C++ toolchain to compile it (see docs/packaging.md).',
      );
    } else {
      console.log(`Installers are in ${join(ROOT, 'build', 'output')}.`);
    }
  } finally {
    // Put back the better-sqlite3 binding built for Node (electron-builder rebuilt it for Electron).
    if (run(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['rebuild', 'better-sqlite3']) !== 0) {
      console.error('Could not rebuild better-sqlite3 for Node: run `npm rebuild better-sqlite3` before `npm start` or the tests.');
    }
  }
  process.exit(status);
}
