/**
 * `npm run dist`: packages the desktop app with electron-builder (build/electron-builder.yml).
 *
 *   npm run dist                    installers for this OS (Linux: AppImage + deb, macOS: dmg, Windows: nsis)
 *   npm run dist -- --linux         or --mac / --win, and any other electron-builder option
 *   npm run dist -- --check         validate the configuration and inputs, then (on Linux) pack the app
 *                                   with a stand-in for Electron's binary and inspect the archive;
 *                                   downloads nothing, builds no installer (~30 s)
 *
 * Steps: draw the icon, build the renderer (Vite) and the main process and preload (esbuild), then run
 * electron-builder, which downloads Electron for the target. Nothing is rebuilt for Electron:
 * better-sqlite3 ships Node-API binaries for every target, and those load in Electron as they are
 * (see npmRebuild in the yml), so this project's node_modules are left as they were.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildElectron, buildRenderer, RENDERER_DIST, ROOT } from '../scripts/build-app.ts';
import { runtimePackages } from './runtime-packages.ts';

const CONFIG = join(ROOT, 'build', 'electron-builder.yml');
const ICON = join(ROOT, 'build', 'resources', 'icon.png');
const CLI = join(ROOT, 'node_modules', 'electron-builder', 'cli.js');
const require = createRequire(import.meta.url);

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
  const config = require('app-builder-lib/out/util/config/config.js') as {
    getConfig(projectDir: string, configPath: string, fromOptions: null): Promise<unknown>;
    validateConfiguration(config: unknown, logger: unknown): Promise<void>;
  };
  const { DebugLogger } = require('builder-util/out/DebugLogger.js') as { DebugLogger: new (enabled: boolean) => unknown };
  await config.validateConfiguration(await config.getConfig(ROOT, CONFIG, null), new DebugLogger(false));
}

/** What the app archive must hold outside node_modules, and what else it may. */
const APP_FILES = ['/package.json', '/build/electron/main.mjs', '/build/electron/backend-worker.mjs', '/build/electron/preload.cjs', '/build/icon.png', '/renderer/dist/index.html'];
const ALLOWED = /^\/(package\.json|build(\/icon\.png|\/electron(\/main\.mjs|\/backend-worker\.mjs|\/preload\.cjs)?)?|renderer(\/dist(\/.*)?)?)$/;

/** Packs the app for Linux into a temporary folder, with a stand-in for Electron's binary
 * (electronDist) so nothing is downloaded, and checks what the archive holds. */
function trialPack(bundles: readonly string[]): void {
  const asar = require('@electron/asar') as { listPackage(archive: string, options: { isPack: boolean }): string[]; extractFile(archive: string, file: string): Buffer };
  const work = mkdtempSync(join(tmpdir(), 'outreach-dist-check-'));
  try {
    const electronDist = join(work, 'electron-dist');
    mkdirSync(join(electronDist, 'resources'), { recursive: true });
    writeFileSync(join(electronDist, 'electron'), '#!/bin/sh\necho "a stand-in for Electron (npm run dist -- --check)"\n', { mode: 0o755 });
    const out = join(work, 'out');
    console.log('Packing the app with a stand-in for Electron (no download, no installer)…');
    if (run(process.execPath, [CLI, '--config', CONFIG, '--publish', 'never', '--linux', 'dir', `-c.electronDist=${electronDist}`, `-c.directories.output=${out}`]) !== 0) {
      throw new Error('electron-builder could not pack the app (see its output above).');
    }
    const resources = join(out, 'linux-unpacked', 'resources');
    const archive = join(resources, 'app.asar');
    const files = asar.listPackage(archive, { isPack: false });
    const problems: string[] = [];
    for (const f of APP_FILES) if (!files.includes(f)) problems.push(`${f} is missing from app.asar`);
    const extra = files.filter((f) => !f.startsWith('/node_modules') && !ALLOWED.test(f));
    if (extra.length > 0) problems.push(`app.asar holds files the app does not run: ${extra.slice(0, 10).join(', ')}${extra.length > 10 ? ', …' : ''}`);
    const entry = (JSON.parse(asar.extractFile(archive, 'package.json').toString('utf8')) as { main?: string }).main;
    if (entry !== 'build/electron/main.mjs') problems.push(`the packaged package.json's main is ${String(entry)}, not build/electron/main.mjs`);
    for (const p of new Set(bundles.flatMap((b) => runtimePackages(b)))) if (!files.includes(`/node_modules/${p}/package.json`)) problems.push(`${p} (imported by the main process or its backend's thread) is not packed`);
    const binding = join(resources, 'app.asar.unpacked', 'node_modules', 'better-sqlite3', 'prebuilds', `linux-${process.arch}.node`);
    if (!existsSync(binding)) problems.push(`better-sqlite3's binary is not unpacked next to the archive (${binding})`);
    if (problems.length > 0) throw new Error(`The packed app is not right:\n- ${problems.join('\n- ')}`);
    const modules = new Set(files.filter((f) => f.startsWith('/node_modules/')).map((f) => f.split('/').slice(2, f.split('/')[2]?.startsWith('@') ? 4 : 3).join('/')));
    console.log(`The packed app holds the bundled main process, the preload, the renderer and ${modules.size} packages; better-sqlite3's binary is unpacked.`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function check(): Promise<void> {
  await validateConfig();
  const { width, height } = pngSize(ICON);
  if (width < 512 || height < 512) throw new Error(`${ICON} is ${width}x${height}; electron-builder needs at least 512x512 (run: npx tsx build/make-icon.ts).`);
  const { main, preload, backendWorker } = await buildElectron();
  for (const f of [main, preload, backendWorker, join(ROOT, 'build', 'icon.png')]) if (!existsSync(f)) throw new Error(`${f} is missing.`);
  console.log(`build/electron-builder.yml is valid; icon ${width}x${height}; main process and preload bundled (${main}).`);
  if (process.platform !== 'linux') {
    console.log('The trial packing runs on Linux only (there a stand-in for Electron is one file); skipped here.');
    return;
  }
  await buildRenderer({ log: console.log });
  if (!existsSync(join(RENDERER_DIST, 'index.html'))) throw new Error('The renderer did not build.');
  trialPack([main, backendWorker]);
}

const args = process.argv.slice(2);
if (args.includes('--check')) {
  await check();
} else {
  if (run(process.execPath, ['--import', 'tsx', join(ROOT, 'build', 'make-icon.ts')]) !== 0) process.exit(1);
  await buildRenderer({ force: true, log: console.log });
  await buildElectron();
  const status = run(process.execPath, [CLI, '--config', CONFIG, '--publish', 'never', ...args]);
  if (status !== 0) {
    console.error('electron-builder failed. It needs network access to download Electron for the target platform (see docs/packaging.md).');
  } else {
    console.log(`Installers are in ${join(ROOT, 'build', 'output')}.`);
  }
  process.exit(status);
}
