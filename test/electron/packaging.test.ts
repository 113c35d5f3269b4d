/**
 * `npm run dist` as far as a machine without Electron's binary can check it: build/electron-builder.yml
 * as electron-builder itself loads and validates it, its targets, which files of the repository it
 * packs (with electron-builder's own pattern matcher), the native module (better-sqlite3) loading in
 * Electron without a rebuild and kept outside the asar archive, every package the bundled main
 * process imports being packed, and the data folder outside the app. `npm run dist -- --check`
 * goes further (it packs the app with a stand-in Electron and inspects the archive, ~30 s).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { runtimePackages } from '../../build/runtime-packages.ts';
import { defaultDataDir } from '../../electron/backend/session.ts';
import { ROOT } from '../../scripts/build-app.ts';
import { mainWindow, startMain, stopAll } from './harness.ts';

const require = createRequire(import.meta.url);

type BuilderConfig = {
  appId?: string;
  extraMetadata?: { main?: string };
  files?: { filter?: string[] }[];
  asar?: boolean;
  asarUnpack?: string[];
  npmRebuild?: boolean;
  linux?: { target?: string[] };
  mac?: { target?: string[] };
  win?: { target?: string[] };
};
type Filter = (file: string, stat: { isDirectory(): boolean }) => boolean;
type FileMatcherModule = { FileMatcher: new (from: string, to: string, expand: (s: string) => string, patterns: string[]) => { createFilter(): Filter } };

const configApi = require('app-builder-lib/out/util/config/config.js') as {
  getConfig(projectDir: string, configPath: string, fromOptions: null): Promise<BuilderConfig>;
  validateConfiguration(config: BuilderConfig, logger: unknown): Promise<void>;
};
const { DebugLogger } = require('builder-util/out/DebugLogger.js') as { DebugLogger: new (enabled: boolean) => unknown };
const { FileMatcher } = require('app-builder-lib/out/fileMatcher.js') as FileMatcherModule;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; devOptional?: boolean; optional?: boolean }> };

let config: BuilderConfig;
/** Built once for the project by global-setup.ts. */
const bundledMain = inject('electronBundle').main;
const bundledWorker = inject('electronBundle').backendWorker;

beforeAll(async () => {
  config = await configApi.getConfig(ROOT, join(ROOT, 'build', 'electron-builder.yml'), null);
  await configApi.validateConfiguration(config, new DebugLogger(false));
});

afterEach(async () => {
  await stopAll();
});

/** electron-builder's own matcher over `patterns`, for paths relative to the project. */
function matcher(patterns: string[]): (path: string) => boolean {
  const filter = new FileMatcher(ROOT, '/app', (s) => s, patterns).createFilter();
  return (path) => filter(join(ROOT, path), { isDirectory: () => false });
}

const filePatterns = () => (config.files ?? []).flatMap((f) => f.filter ?? []);

function projectFiles(dir = ROOT): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const rel = relative(ROOT, path).split(sep).join('/');
    if (['node_modules', '.git', 'build/output', 'test-results', 'data', 'dist'].includes(rel)) continue;
    if (entry.isDirectory()) out.push(...projectFiles(path));
    else out.push(rel);
  }
  return out;
}

/** Every .node file of a package the installers carry (production dependencies, not dev ones). */
function productionNativeBinaries(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.node')) out.push(relative(ROOT, path));
    }
  };
  for (const [key, meta] of Object.entries(lock.packages)) {
    if (!key.startsWith('node_modules/') || meta.dev === true || meta.devOptional === true) continue;
    try {
      walk(join(ROOT, key));
    } catch {
      // an optional package for another platform, not installed here
    }
  }
  return out;
}

describe('npm run dist: build/electron-builder.yml', () => {
  it('is valid for electron-builder and builds AppImage and deb, dmg, and an nsis installer', () => {
    expect(config.linux?.target).toEqual(['AppImage', 'deb']);
    expect(config.mac?.target).toEqual(['dmg']);
    expect(config.win?.target).toEqual(['nsis']);
    // The package's entry is the bundle `npm start` and the tests run.
    expect(config.extraMetadata?.main).toBe(relative(ROOT, bundledMain).split(sep).join('/'));
    expect(pkg.devDependencies.electron).toBeDefined();
    expect(pkg.dependencies.electron).toBeUndefined();
  });

  it('packs the bundled main process, the preload, the built renderer and the icon; no sources, tests or source maps', () => {
    const packed = matcher(filePatterns());
    for (const needed of ['package.json', 'build/electron/main.mjs', 'build/electron/backend-worker.mjs', 'build/electron/preload.cjs', 'build/icon.png', 'renderer/dist/index.html', 'renderer/dist/assets/index-0a1b2c3d.js', 'renderer/dist/assets/index-0a1b2c3d.css']) {
      expect(packed(needed), needed).toBe(true);
    }
    const allowed = /^(package\.json|build\/icon\.png|build\/electron\/(main\.mjs|backend-worker\.mjs|preload\.cjs)|renderer\/dist\/.+)$/;
    const extra = projectFiles().filter((f) => packed(f) && !allowed.test(f));
    expect(extra).toEqual([]);
    for (const source of ['electron/main.ts', 'electron/preload.ts', 'shared/ops/index.ts', 'sync-server/app.ts', 'test/electron/main.test.ts', 'renderer/src/main.tsx', 'docs/packaging.md', 'README.md', 'build/electron/main.mjs.map', 'renderer/dist/assets/index-0a1b2c3d.js.map', 'build/dist.ts']) {
      expect(packed(source), source).toBe(false);
    }
  });

  it('packs every package the bundled main process and its backend thread import: production dependencies, not excluded', () => {
    const imports = [...new Set([...runtimePackages(bundledMain), ...runtimePackages(bundledWorker)])].sort();
    expect(imports).toContain('better-sqlite3');
    expect(imports).toContain('rxdb');
    expect(imports.filter((p) => pkg.dependencies[p] === undefined)).toEqual([]);
    // electron-builder adds node_modules itself; only our exclusions can take a file away.
    const kept = matcher(['**/*', ...filePatterns().filter((p) => p.startsWith('!'))]);
    const needed = [...imports.map((p) => `node_modules/${p}/package.json`), 'node_modules/better-sqlite3/lib/index.js', 'node_modules/better-sqlite3/lib/binding.js'];
    expect(needed.filter((f) => !kept(f))).toEqual([]);
    expect(kept('node_modules/better-sqlite3/deps/sqlite3/sqlite3.c')).toBe(false);
  });

  it('better-sqlite3 loads in Electron as installed (Node-API binaries for every target), outside the asar archive', () => {
    expect(config.asar).toBe(true);
    const unpacked = matcher(config.asarUnpack ?? []);
    const kept = matcher(['**/*', ...filePatterns().filter((p) => p.startsWith('!'))]);
    for (const target of ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64']) {
      const binary = `node_modules/better-sqlite3/prebuilds/${target}.node`;
      expect(unpacked(binary), binary).toBe(true);
      expect(kept(binary), binary).toBe(true);
      expect(readdirSync(join(ROOT, 'node_modules', 'better-sqlite3', 'prebuilds'))).toContain(`${target}.node`);
    }
    // No rebuild for Electron (npmRebuild: false) is right only while every native binary the app
    // carries is Node-API: it exports napi_register_module_v1, not node_register_module_v<ABI>.
    const binaries = productionNativeBinaries();
    expect(binaries).toContain(join('node_modules', 'better-sqlite3', 'prebuilds', 'linux-x64.node'));
    for (const file of binaries) {
      const bytes = readFileSync(join(ROOT, file));
      expect(bytes.includes('napi_register_module_v1'), `${file} is a Node-API module`).toBe(true);
      expect(/node_register_module_v\d+/.test(bytes.toString('latin1')), `${file} is built for one Node ABI; set npmRebuild: true`).toBe(false);
    }
    expect(config.npmRebuild).toBe(false);
  });

  it('keeps the data folder in the home folder, never in the install folder', () => {
    expect(defaultDataDir({})).toBe(join(homedir(), '.outreach-crm'));
    expect(defaultDataDir({ DATA_DIR: '/srv/crm' })).toBe('/srv/crm');
    expect(filePatterns().some((p) => /(^|\/)data(\/|$)/.test(p) && !p.startsWith('!'))).toBe(false);
  });

  it("on Windows, main gives notifications the installers' appId", async () => {
    const platform = Object.getOwnPropertyDescriptor(process, 'platform');
    Object.defineProperty(process, 'platform', { value: 'win32', configurable: true });
    try {
      const { electron } = await startMain();
      await mainWindow(electron);
      expect(electron.double.appUserModelIds).toEqual([config.appId]);
    } finally {
      if (platform) Object.defineProperty(process, 'platform', platform);
    }
  });
});
