/**
 * What the installers ship: the main process and preload as esbuild bundles them
 * (scripts/build-app.ts, build/electron/main.mjs and preload.cjs), loaded in the Electron double.
 * The bundled preload runs as Electron's sandbox runs it (CommonJS, `require` of `electron` only), so
 * a preload that needs Node, or a bundle that left a module outside, fails here before it fails on a
 * desktop. Without DATA_DIR the data folder is in the user's home, never in the app's folder.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { ROOT } from '../../scripts/build-app.ts';
import { eventually, mainWindow, openPage, startMain, stopAll, tempDir, within } from './harness.ts';

/** Built once for the project by global-setup.ts. */
const bundle = inject('electronBundle');

afterEach(async () => {
  await stopAll();
});

describe('the bundled main process and preload', () => {
  it('start in the double: a window on the built renderer, the sandboxed preload, the backend over IPC, Quit', async () => {
    const { electron } = await startMain({ main: () => import(bundle.main) });
    const win = await mainWindow(electron);
    const preload = win.options.webPreferences?.preload;
    expect(preload).toBe(bundle.preload);
    expect(existsSync(bundle.preload)).toBe(true);
    expect(win.webContents.getURL()).toBe(pathToFileURL(join(ROOT, 'renderer', 'dist', 'index.html')).href);
    // The tray and window icon is found where the bundle looks for it (an empty image otherwise).
    const icon = electron.double.trays[0]?.image;
    expect(icon instanceof electron.NativeImageDouble && !icon.isEmpty()).toBe(true);

    // The preload the window names, run as Electron's sandbox runs it.
    const { page, outreach } = await openPage(win, preload ?? '');
    expect(page.exposedKeys).toEqual(['outreach']);
    expect(outreach.platform).toBe('electron');
    const info = await within(outreach.session.get(), 5000);
    expect(info !== 'timeout' && info.state).toBe('none');
    expect(await outreach.notify({ title: 'Task due', body: 'Call Ann', tag: 'task-1', leadId: null })).toBe(true);
    expect(electron.double.notifications.map((n) => n.body)).toEqual(['Call Ann']);

    electron.app.quit();
    expect(await within(electron.double.exited, 10_000)).toBe(0);
  });

  it('the bundled preload needs nothing but electron (a sandboxed preload cannot require more)', () => {
    const required = [...readFileSync(bundle.preload, 'utf8').matchAll(/require\(["']([^"']+)["']\)/g)].map((m) => m[1]);
    expect(new Set(required)).toEqual(new Set(['electron']));
  });

  it('without DATA_DIR the data folder is in the home folder, outside the app', async () => {
    const home = tempDir('crm-home-');
    vi.stubEnv('HOME', home);
    vi.stubEnv('USERPROFILE', home);
    vi.stubEnv('DATA_DIR', undefined);
    const before = readdirSync(ROOT);
    const { electron } = await startMain({ dataDir: null, main: () => import(bundle.main) });
    const win = await mainWindow(electron);
    win.close();
    await eventually(() => existsSync(join(home, '.outreach-crm', 'window-state.json')), 5000, 'the window state in the home folder');
    expect(readdirSync(ROOT)).toEqual(before);
    expect(readdirSync(join(ROOT, 'build', 'electron')).sort()).toEqual(['backend-worker.mjs', 'backend-worker.mjs.map', 'main.mjs', 'main.mjs.map', 'preload.cjs', 'preload.cjs.map']);
  });
});
