/**
 * What the installers ship: the main process and preload as esbuild bundles them
 * (scripts/build-app.ts, build/electron/main.mjs and preload.cjs), loaded in the Electron double.
 * The bundled preload runs as Electron's sandbox runs it (CommonJS, `require` of `electron` only), so
 * a preload that needs Node, or a bundle that left a module outside, fails here before it fails on a
 * desktop. Without DATA_DIR the data folder is in the user's home, never in the app's folder.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { APP_URL } from '../../electron/app-protocol.ts';
import { ROOT } from '../../scripts/build-app.ts';
import { ensureRendererBuilt } from '../e2e/support/app.ts';
import { eventually, mainWindow, openPage, startMain, stopAll, tempDir, within } from './harness.ts';

/** Built once for the project by global-setup.ts. */
const bundle = inject('electronBundle');

afterEach(async () => {
  await stopAll();
});

describe('the bundled main process and preload', () => {
  it('start in the double: a window on the built renderer, the sandboxed preload, the backend over IPC, Quit', async () => {
    await ensureRendererBuilt();
    const { electron } = await startMain({ main: () => import(bundle.main) });
    const win = await mainWindow(electron);
    const preload = win.options.webPreferences?.preload;
    expect(preload).toBe(bundle.preload);
    expect(existsSync(bundle.preload)).toBe(true);
    // The page comes from the app's scheme, from the build the bundle finds beside it.
    expect(win.webContents.getURL()).toBe(APP_URL);
    expect(win.webContents.loaded?.status).toBe(200);
    const built = readFileSync(join(ROOT, 'renderer', 'dist', 'index.html'), 'utf8');
    const script = /<script type="module" crossorigin src="[^"]+"><\/script>/.exec(built)?.[0];
    expect(script).toBeDefined();
    expect(win.webContents.loaded?.body).toContain(script);
    // The build's style sheet link is where the page builder looks for it: its rules are in the page.
    expect(win.webContents.loaded?.body).not.toContain('<link rel="stylesheet"');
    expect(win.webContents.loaded?.body).toMatch(/<style nonce="[^"]+">/);
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
