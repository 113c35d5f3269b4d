/** Builds what `npm start` runs: the renderer (Vite) when its sources are newer than the build, and
 * the Electron main process, its backend's worker thread and preload bundles (esbuild; node_modules stay external). */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const RENDERER_DIST = join(ROOT, 'renderer', 'dist');

function newest(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let t = s.mtimeMs;
  for (const name of readdirSync(path)) t = Math.max(t, newest(join(path, name)));
  return t;
}

/** Renderer inputs: its sources and what they import from electron/bridge.ts and shared/ (screens
 * use shared code at run time too, e.g. merge-field validation). */
function rendererSourcesTime(): number {
  return Math.max(
    newest(join(ROOT, 'renderer', 'src')),
    newest(join(ROOT, 'renderer', 'index.html')),
    newest(join(ROOT, 'renderer', 'vite.config.ts')),
    newest(join(ROOT, 'electron', 'bridge.ts')),
    newest(join(ROOT, 'shared')),
  );
}

export function rendererIsStale(): boolean {
  const index = join(RENDERER_DIST, 'index.html');
  return !existsSync(index) || statSync(index).mtimeMs < rendererSourcesTime();
}

export async function buildRenderer(opts: { force?: boolean; log?: (line: string) => void } = {}): Promise<boolean> {
  if (!opts.force && !rendererIsStale()) return false;
  opts.log?.('Building the user interface (a few seconds, once)…');
  const { build } = await import('vite');
  // Test runners set NODE_ENV=test, which would make Vite bundle React's development build.
  const before = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: join(ROOT, 'renderer', 'vite.config.ts'), logLevel: 'warn', mode: 'production' });
  } finally {
    if (before === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = before;
  }
  return true;
}

export async function buildElectron(): Promise<{ main: string; preload: string; backendWorker: string }> {
  const esbuild = await import('esbuild');
  const out = join(ROOT, 'build', 'electron');
  const common = { bundle: true, platform: 'node', target: 'node20', packages: 'external', sourcemap: true, logLevel: 'warning' } as const;
  await esbuild.build({ ...common, entryPoints: [join(ROOT, 'electron', 'main.ts')], format: 'esm', outfile: join(out, 'main.mjs') });
  // The backend's worker thread (electron/backend/backend-thread.ts), started by main from beside it.
  await esbuild.build({ ...common, entryPoints: [join(ROOT, 'electron', 'backend', 'backend-worker.ts')], format: 'esm', outfile: join(out, 'backend-worker.mjs') });
  // Sandboxed preloads must be CommonJS and may only require 'electron': bundle everything else in.
  await esbuild.build({ ...common, packages: undefined, external: ['electron'], entryPoints: [join(ROOT, 'electron', 'preload.ts')], format: 'cjs', outfile: join(out, 'preload.cjs') });
  return { main: join(out, 'main.mjs'), preload: join(out, 'preload.cjs'), backendWorker: join(out, 'backend-worker.mjs') };
}

const invokedDirectly = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  const what = process.argv.slice(2);
  if (what.length === 0 || what.includes('renderer')) await buildRenderer({ force: true, log: console.log });
  if (what.length === 0 || what.includes('electron')) console.log(await buildElectron());
}
