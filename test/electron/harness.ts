/**
 * Starts the real Electron main process (electron/main.ts, or its bundle) against the Electron double,
 * with its own data folder, and loads the real preload into its window's page. main.ts runs its
 * module code on import, so each start is a fresh module instance of main.ts and of the double
 * (vi.resetModules), and `stopAll` quits what a test left running and removes its data folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vi } from 'vitest';
import { until } from '../support/until.ts';
import type { Bridge } from '../../electron/bridge.ts';
import type * as DoubleModule from '../support/electron-double/index.ts';
import type { BrowserWindowDouble, PageDouble } from '../support/electron-double/index.ts';

export type Electron = typeof DoubleModule;

export type Started = {
  electron: Electron;
  dataDir: string;
};

const running: Started[] = [];
const ownDirs: string[] = [];

/** A new empty data folder, removed after the test. */
export function tempDir(prefix = 'crm-electron-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  ownDirs.push(dir);
  return dir;
}

/**
 * Imports a fresh double and runs `main` (electron/main.ts by default) against it. `before` sets the
 * double up (displays, the single-instance lock, ...) before main's module code runs.
 */
export async function startMain(opts: { dataDir?: string | null; before?: (electron: Electron) => unknown; main?: () => Promise<unknown> } = {}): Promise<Started> {
  vi.resetModules();
  const dataDir = opts.dataDir === null ? '' : (opts.dataDir ?? tempDir());
  if (opts.dataDir !== null) vi.stubEnv('DATA_DIR', dataDir);
  const electron = await import('../support/electron-double/index.ts');
  await opts.before?.(electron);
  await (opts.main ?? (() => import('../../electron/main.ts')))();
  const started = { electron, dataDir };
  running.push(started);
  return started;
}

/** Polls until `get` returns a value (or throws after `ms`). */
export function eventually<T>(get: () => T | null | undefined | false, ms = 10_000, what = 'the condition'): Promise<T> {
  return until(what, get, ms);
}

/** The promise's value, or `timeout` if it takes longer than `ms` (for "never answered"). */
export function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms))]);
}

/** The window main makes once its backend is up, with its page loaded (from the app's scheme: its
 * handler has answered). The backend starts in a worker thread, a fresh isolate that loads its
 * modules (through tsx, from the sources) at every start: seconds on a loaded machine. */
export function mainWindow(electron: Electron): Promise<BrowserWindowDouble> {
  return eventually(() => {
    const win = electron.double.windows[0];
    return win?.webContents.page ? win : null;
  }, 60_000, 'the main window and its page');
}

function isBridge(v: unknown): v is Bridge {
  if (typeof v !== 'object' || v === null) return false;
  return ['call', 'subscribe', 'openExternal', 'notify'].every((k) => typeof Reflect.get(v, k) === 'function');
}

/** Runs the preload in the window's page (electron/preload.ts by default, or a bundled preload file
 * run as Electron's sandbox runs it) and returns the page and its `window.outreach`. */
export async function openPage(win: BrowserWindowDouble, preload: string | (() => Promise<unknown>) = () => import('../../electron/preload.ts')): Promise<{ page: PageDouble; outreach: Bridge }> {
  const page = await win.webContents.runPreload(preload);
  const outreach = page.world.outreach;
  if (!isBridge(outreach)) throw new Error('the preload exposed no bridge as window.outreach');
  return { page, outreach };
}

/** Quits every app a test started (Quit closes its backend) and removes the test's data folders. */
export async function stopAll(): Promise<void> {
  for (const { electron } of running.splice(0)) {
    if (electron.double.exitCode === null) {
      electron.app.quit();
      // A test that cut the backend's close short may leave it running; the app still exits.
      await within(electron.double.exited, 15_000);
    }
  }
  vi.unstubAllEnvs();
  for (const dir of ownDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}
