/**
 * The real Electron main process (electron/main.ts) and preload (electron/preload.ts), run against
 * the Electron double with the real desktop backend (local database in a temporary data folder):
 * the window's security settings, what a page may ask of main, links, permissions, the CSP, one
 * instance, the tray keeping outreach running, Quit, window placement, and task reminders as the
 * system's notifications. What the double cannot show is in docs/desktop-checklist.md.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { APP_URL } from '../../electron/app-protocol.ts';
import { contentSecurityPolicy } from '../../electron/renderer-files.ts';
import { IPC_NOTIFY, NOTICE_LIMITS } from '../../electron/bridge.ts';
import type { BackendThread } from '../../electron/backend/backend-thread.ts';
import type { Notice, SessionInfo, ShellCommand } from '../../electron/bridge.ts';
import { ensureRendererBuilt } from '../e2e/support/app.ts';
import { eventually, mainWindow, openPage, startMain, stopAll, tempDir, within } from './harness.ts';
import type { Electron } from './harness.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

afterEach(async () => {
  vi.restoreAllMocks();
  vi.useRealTimers();
  await stopAll();
});

/** Starts main, waits for its window and loads the preload into the window's page. */
async function started(opts: Parameters<typeof startMain>[0] = {}) {
  const s = await startMain(opts);
  const win = await mainWindow(s.electron);
  const { page, outreach } = await openPage(win);
  return { ...s, win, page, outreach };
}

function csp(electron: Electron, url: string) {
  return electron.session.defaultSession.respond(url, { 'content-type': ['text/html'] });
}

describe('the window and its page', () => {
  it('opens one window on our page with context isolation, a sandbox, no Node and the preload', async () => {
    const { electron, win } = await started();
    expect(electron.double.windows).toHaveLength(1);
    const prefs = win.options.webPreferences ?? {};
    expect(prefs).toMatchObject({
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      preload: join(ROOT, 'build', 'electron', 'preload.cjs'),
    });
    for (const risky of ['nodeIntegrationInWorker', 'nodeIntegrationInSubFrames', 'webviewTag', 'experimentalFeatures'] as const) expect(prefs[risky]).not.toBe(true);
    expect(prefs.enableBlinkFeatures).toBeUndefined();
    expect(win.webContents.getURL()).toBe(APP_URL);
    // Shown once the page is ready, not as a blank window before.
    expect(win.options.show).toBe(false);
    await eventually(() => win.isVisible(), 2000, 'the window to show');
  });

  it('the preload exposes exactly window.outreach, and nothing of Node or Electron', async () => {
    const { electron, page, outreach } = await started();
    expect(page.exposedKeys).toEqual(['outreach']);
    expect(Object.keys(page.world)).toEqual(['outreach']);
    expect(Object.keys(outreach).sort()).toEqual(['call', 'commands', 'notify', 'openExternal', 'platform', 'session', 'subscribe', 'syncStatus']);
    expect(outreach.platform).toBe('electron');

    // Walk what the preload handed to contextBridge, before copying: no Node or Electron object,
    // nor a method of one, is reachable from it.
    const forbidden = new Map<unknown, string>([
      [page.ipcRenderer, 'ipcRenderer'], [page.ipcRenderer.send, 'ipcRenderer.send'], [page.ipcRenderer.invoke, 'ipcRenderer.invoke'], [page.ipcRenderer.on, 'ipcRenderer.on'],
      [electron.ipcRenderer, 'ipcRenderer'], [electron.ipcRenderer.send, 'ipcRenderer.send'], [electron.ipcRenderer.invoke, 'ipcRenderer.invoke'], [electron.ipcRenderer.on, 'ipcRenderer.on'],
      [page.contextBridge, 'contextBridge'], [electron.contextBridge, 'contextBridge'], [electron.app, 'app'], [electron.ipcMain, 'ipcMain'], [electron.shell, 'shell'],
      [process, 'process'], [globalThis, 'globalThis'], [Buffer, 'Buffer'],
    ]);
    const seen = new Set<unknown>();
    const found: string[] = [];
    const walk = (value: unknown, path: string): void => {
      if ((typeof value !== 'object' && typeof value !== 'function') || value === null || seen.has(value)) return;
      seen.add(value);
      const name = forbidden.get(value);
      if (name) found.push(`${path} is ${name}`);
      for (const key of Reflect.ownKeys(value)) {
        if (typeof value === 'function' && (key === 'prototype' || key === 'length' || key === 'name')) continue;
        if (typeof key === 'string' && /^(ipcRenderer|contextBridge|require|process|module|electron|Buffer)$/.test(key)) found.push(`${path}.${key}`);
        walk(Reflect.get(value, key), `${path}.${String(key)}`);
      }
    };
    walk(page.exposedOriginals.outreach, 'outreach');
    expect(found).toEqual([]);
    // And the copy the page got still works: it is the bridge, answered by the backend over IPC.
    const info = await outreach.session.get();
    expect(info.state).toBe('none');
  });

  it('a page that is not ours gets no backend, no links and no notifications over IPC', async () => {
    const { electron, win, page, outreach } = await started();
    // Our page is answered.
    expect((await outreach.session.get()).state).toBe('none');
    expect(await outreach.notify({ title: 'Task due', body: 'Call Ann', tag: 'task-1', leadId: null })).toBe(true);
    expect(electron.double.notifications).toHaveLength(1);

    // Another page in the same window has the same preload and bridge, but main answers nothing.
    win.webContents.replacePage('https://evil.example/phish');
    const before = electron.double.ipcReceived.length;
    expect(await within(outreach.session.get(), 400)).toBe('timeout');
    outreach.openExternal('https://evil.example/next');
    expect(await outreach.notify({ title: 'Task due', body: 'Pay this invoice', tag: 'task-2', leadId: null })).toBe(false);
    await eventually(() => electron.double.ipcReceived.length >= before + 3, 2000, 'the messages to reach main');
    expect(electron.double.ipcReceived.slice(before).map((m) => m.url)).toEqual(['https://evil.example/phish', 'https://evil.example/phish', 'https://evil.example/phish']);
    expect(electron.double.openedExternally).toEqual([]);
    expect(electron.double.notifications).toHaveLength(1);
    expect(page.movedTo).toBe('https://evil.example/phish');
  });

  it('refuses navigation and new windows; web and mail links open in the system browser, other schemes never', async () => {
    const { electron, win, outreach } = await started();
    const outside = ['https://www.linkedin.com/in/ann-lee', 'http://example.com/pricing', 'mailto:ann@example.com'];
    const never = ['file:///etc/passwd', 'javascript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'smb://fileserver/share', 'not a url'];
    for (const url of [...outside, ...never]) expect(win.webContents.openWindow(url)).toEqual({ action: 'deny' });
    expect(electron.double.openedExternally).toEqual(outside.map((u) => new URL(u).href));

    // The bridge's openExternal goes through the same filter in main.
    electron.double.openedExternally.length = 0;
    outreach.openExternal('javascript:alert(document.cookie)');
    outreach.openExternal('file:///home/ann/.ssh/id_rsa');
    outreach.openExternal('https://calendly.com/ann/30min');
    await eventually(() => electron.double.openedExternally.length > 0, 2000, 'the link to open');
    await new Promise((r) => setTimeout(r, 50));
    expect(electron.double.openedExternally).toEqual(['https://calendly.com/ann/30min']);

    electron.double.openedExternally.length = 0;
    for (const url of [...outside, ...never]) expect(win.webContents.navigate(url)).toBe(false);
    expect(electron.double.openedExternally).toEqual(outside.map((u) => new URL(u).href));
    expect(win.webContents.getURL()).toBe(APP_URL);
    // The app's files, another host of its scheme, and the files the page once came from are not our page.
    for (const url of [`${APP_URL}assets/index.js`, 'app://elsewhere/', `file://${join(ROOT, 'renderer', 'dist', 'index.html')}`]) expect(win.webContents.navigate(url)).toBe(false);
    // Our own page (a reload of it, on a route) may load.
    expect(win.webContents.navigate(`${APP_URL}?reload=1#/tasks`)).toBe(true);
  });

  it('grants our page notifications and nothing else; no other page is granted anything', async () => {
    const { electron, win } = await started();
    const ses = electron.session.defaultSession;
    expect(await ses.requestPermission(win.webContents, 'notifications')).toBe(true);
    for (const p of ['media', 'geolocation', 'clipboard-read', 'clipboard-sanitized-write', 'display-capture', 'midiSysex', 'openExternal', 'fullscreen', 'pointerLock', 'window-management'] as const) {
      expect(await ses.requestPermission(win.webContents, p), p).toBe(false);
    }
    expect(ses.checkPermission(win.webContents, 'notifications')).toBe(true);
    for (const p of ['media', 'geolocation', 'clipboard-read', 'hid', 'serial', 'usb'] as const) expect(ses.checkPermission(win.webContents, p), p).toBe(false);
    expect(ses.checkPermission(null, 'notifications')).toBe(false);

    win.webContents.replacePage('https://evil.example/');
    expect(await ses.requestPermission(win.webContents, 'notifications')).toBe(false);
    expect(ses.checkPermission(win.webContents, 'notifications')).toBe(false);
  });

  it('sets the content security policy on responses, the same one the page carries', async () => {
    const { electron } = await started();
    const headers = await csp(electron, APP_URL);
    expect(headers['content-type']).toEqual(['text/html']);
    const policy = headers['Content-Security-Policy'];
    expect(Array.isArray(policy) ? policy : [policy]).toHaveLength(1);
    const directives = new Map(String(Array.isArray(policy) ? policy[0] : policy).split(';').map((d) => {
      const [name = '', ...values] = d.trim().split(/\s+/);
      return [name, values.join(' ')];
    }));
    expect(directives.get('default-src')).toBe("'self'");
    expect(directives.get('script-src')).toBe("'self'");
    expect(directives.get('object-src')).toBe("'none'");
    expect(directives.get('base-uri')).toBe("'none'");
    expect([...directives.values()].join(' ')).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    // renderer/index.html carries the same policy in a meta tag (file: pages may have no headers).
    const meta = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(readFileSync(join(ROOT, 'renderer', 'index.html'), 'utf8'));
    expect(meta?.[1]).toBe(Array.isArray(policy) ? policy[0] : policy);
    // A response with a policy of its own (the app: scheme's page, whose policy allows its first
    // screen's style element by a nonce) keeps it: a second, nonce-less policy would refuse it.
    const own = "default-src 'self'; style-src 'self' 'nonce-abc'";
    expect(await electron.session.defaultSession.respond(APP_URL, { 'content-security-policy': [own] })).toEqual({ 'content-security-policy': [own] });
    // Any other response's own policy is replaced by the app's: a page of another origin that the
    // window would show (it never navigates there) gets no looser policy than the app's.
    const elsewhere = await electron.session.defaultSession.respond('https://evil.example/', { 'content-security-policy': ["default-src *; script-src 'unsafe-inline'"] });
    expect(elsewhere['Content-Security-Policy']).toEqual(Array.isArray(policy) ? policy : [policy]);
  });

  it('serves the page from app://outreach/, a privileged scheme registered before ready, with the first screen read from the backend thread', async () => {
    await ensureRendererBuilt();
    const { electron, win, outreach } = await started();
    // Standard and secure (an origin of its own, relative URLs), fetch for its own files; no CSP
    // bypass, no cross-origin reads, no service workers.
    expect(electron.double.privilegedSchemes).toEqual([{ scheme: 'app', privileges: { standard: true, secure: true, supportFetchAPI: true, codeCache: true } }]);
    const loaded = win.webContents.loaded;
    expect(loaded?.url).toBe(APP_URL);
    expect(loaded?.status).toBe(200);
    // No workspace yet: the page without rows (its style sheet in it, under the response's nonce),
    // with the policy, nosniff and no referrer.
    expect(loaded?.body).not.toContain('data-lead-id');
    expect(loaded?.body).toContain('<div id="root"></div>');
    expect(loaded?.headers.get('content-security-policy')).toBe(contentSecurityPolicy(null, /<style nonce="([^"]+)">/.exec(loaded?.body ?? '')?.[1]));
    expect(loaded?.headers.get('x-content-type-options')).toBe('nosniff');
    expect(loaded?.headers.get('referrer-policy')).toBe('no-referrer');

    const opened = await outreach.session.openDemo();
    expect(opened.ok).toBe(true);
    const ses = electron.session.defaultSession.protocol;
    // main's connection hears the session change; the next load of the page carries the first rows.
    let page: { r: Response; body: string } | null = null;
    for (const deadline = Date.now() + 10_000; !page; await new Promise((r) => setTimeout(r, 50))) {
      if (Date.now() > deadline) throw new Error('no first screen in the page within 10 s');
      const r = await ses.fetch(APP_URL);
      const body = await r.text();
      if (body.includes('data-lead-id')) page = { r, body };
    }
    expect(page.r.headers.get('cache-control')).toBe('no-store');
    const nonce = /<style nonce="([^"]+)">/.exec(page.body)?.[1] ?? '';
    expect(page.r.headers.get('content-security-policy')).toContain(`style-src 'self' 'nonce-${nonce}'`);
    // The page's own files, with their types; nothing outside the renderer's folder, no other host.
    const script = /<script type="module" crossorigin src="\.\/(assets\/[\w.-]+\.js)">/.exec(page.body)?.[1] ?? '';
    const asset = await ses.fetch(`${APP_URL}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await ses.fetch(`${APP_URL}..%2f..%2fpackage.json`)).status).toBe(403);
    expect((await ses.fetch('app://elsewhere/')).status).toBe(404);
  });

  it('a start that fails says why in a dialog and exits with 1', async () => {
    const dataDir = tempDir();
    // The saved session cannot be read: the backend does not start.
    mkdirSync(join(dataDir, 'session.json'));
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { electron } = await startMain({ dataDir });
    expect(await within(electron.double.exited, 10_000)).toBe(1);
    expect(electron.double.errorBoxes).toEqual([{ title: 'Outreach CRM could not start', content: expect.stringContaining(dataDir) }]);
    expect(electron.double.windows).toEqual([]);
  });
});

describe('one instance', () => {
  it('a second instance hands over and quits without opening the data folder', async () => {
    const { electron, dataDir } = await startMain({ before: (e) => (e.double.config.singleInstanceLock = false) });
    expect(await within(electron.double.exited, 2000)).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(electron.double.windows).toEqual([]);
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('the first instance brings its window forward when a second one starts', async () => {
    const { electron, win } = await started();
    await eventually(() => win.isVisible(), 2000, 'the window to show');
    win.minimize();
    win.hide();
    electron.app.startSecondInstance();
    expect(win.isMinimized()).toBe(false);
    expect(win.isVisible()).toBe(true);
    expect(win.isFocused()).toBe(true);
    expect(electron.double.windows).toHaveLength(1);
  });
});

describe('the tray keeps outreach running; Quit stops it', () => {
  it('closing the window hides it; the backend and the runner go on, the tray brings it back', async () => {
    const { electron, win, outreach } = await started();
    const opened = await outreach.session.openDemo();
    expect(opened.ok && opened.value.state === 'open' && opened.value.runner).toBe('running');

    win.close();
    expect(win.isDestroyed()).toBe(false);
    expect(win.isVisible()).toBe(false);
    expect(electron.double.exitCode).toBeNull();
    const info: SessionInfo | 'timeout' = await within(outreach.session.get(), 5000);
    expect(info !== 'timeout' && info.state === 'open' && info.runner).toBe('running');
    const counts = await within(outreach.call('inbox.counts', {}), 5000);
    expect(counts !== 'timeout' && counts.ok).toBe(true);

    const tray = electron.double.trays[0];
    expect(tray?.toolTip).toMatch(/keeps running/);
    tray?.emit('click');
    expect(win.isVisible()).toBe(true);
  });

  it('Quit closes the backend, then exits with 0 (a second Quit waits for the same close)', async () => {
    const { electron } = await started();
    const { BackendThread } = await import('../../electron/backend/backend-thread.ts');
    const order: string[] = [];
    const close = BackendThread.prototype.close;
    const spy = vi.spyOn(BackendThread.prototype, 'close').mockImplementation(async function (this: BackendThread) {
      order.push('close:start');
      await new Promise((r) => setTimeout(r, 100));
      await close.call(this);
      order.push(`close:end (exit ${electron.double.exitCode ?? 'not yet'})`);
    });
    void electron.double.exited.then((code) => order.push(`exit ${code}`));

    electron.double.click(electron.double.trays[0]?.menu ?? null, 'Quit (stops outreach on this machine)');
    electron.app.quit();
    expect(await within(electron.double.exited, 10_000)).toBe(0);
    await Promise.resolve();
    expect(order).toEqual(['close:start', 'close:end (exit not yet)', 'exit 0']);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(electron.double.trays[0]?.isDestroyed()).toBe(true);
  });

  it('Quit exits with 1 when closing the backend fails', async () => {
    const { electron } = await started();
    const { BackendThread } = await import('../../electron/backend/backend-thread.ts');
    const close = BackendThread.prototype.close;
    const kept: BackendThread[] = [];
    vi.spyOn(BackendThread.prototype, 'close').mockImplementation(function (this: BackendThread) {
      kept.push(this);
      return Promise.reject(new Error('the disk went away'));
    });
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    electron.app.quit();
    expect(await within(electron.double.exited, 10_000)).toBe(1);
    expect(errors).toHaveBeenCalledWith('Closing the backend failed:', expect.objectContaining({ message: 'the disk went away' }));
    // The test's own clean-up: really close the backend it kept from closing.
    vi.restoreAllMocks();
    for (const b of kept) await close.call(b);
  });

  it('Quit exits with 1 after a time limit when the backend does not close', async () => {
    const { electron } = await started();
    const { BackendThread } = await import('../../electron/backend/backend-thread.ts');
    const close = BackendThread.prototype.close;
    const kept: BackendThread[] = [];
    vi.spyOn(BackendThread.prototype, 'close').mockImplementation(function (this: BackendThread) {
      kept.push(this);
      return new Promise<void>(() => undefined);
    });
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    electron.app.quit();
    await vi.advanceTimersByTimeAsync(9_000);
    expect(electron.double.exitCode).toBeNull();
    await vi.advanceTimersByTimeAsync(1_500);
    expect(electron.double.exitCode).toBe(1);
    expect(errors).toHaveBeenCalledWith(expect.stringMatching(/did not close within 10 s/));
    vi.useRealTimers();
    vi.restoreAllMocks();
    for (const b of kept) await close.call(b);
  });
});

describe("the backend in a worker thread of main", () => {
  /** Starts main with BackendThread.start watched, and returns the thread it started. */
  async function startedWithThread(opts: Parameters<typeof startMain>[0] = {}) {
    let watched: Promise<BackendThread> | null = null;
    const s = await startMain({
      ...opts,
      before: async (e) => {
        await opts.before?.(e);
        const { BackendThread: Thread } = await import('../../electron/backend/backend-thread.ts');
        const start = Thread.start.bind(Thread);
        vi.spyOn(Thread, 'start').mockImplementation((o) => (watched = start(o)));
      },
    });
    const win = await mainWindow(s.electron);
    const { outreach } = await openPage(win);
    const thread = await eventually(() => watched, 5000, 'the backend thread');
    return { ...s, win, outreach, thread: await thread };
  }

  it("runs with its heap generations capped, and the window's calls and subscriptions reach it", async () => {
    const { outreach, thread } = await startedWithThread();
    const { BACKEND_OLD_GENERATION_MB, BACKEND_YOUNG_GENERATION_MB } = await import('../../electron/backend/backend-thread.ts');
    expect(thread.thread.threadId).toBeGreaterThan(0);
    expect(thread.thread.resourceLimits?.maxYoungGenerationSizeMb).toBe(BACKEND_YOUNG_GENERATION_MB);
    expect(thread.thread.resourceLimits?.maxOldGenerationSizeMb).toBe(BACKEND_OLD_GENERATION_MB);
    const opened = await outreach.session.openDemo();
    expect(opened.ok && opened.value.state).toBe('open');
    const pushed: unknown[] = [];
    const stop = outreach.subscribe('inbox.counts', {}, (r) => pushed.push(r));
    await eventually(() => pushed.length > 0, 5000, 'the first push of a subscription');
    stop();
    const counts = await outreach.call('inbox.counts', {});
    expect(counts.ok).toBe(true);
  });

  it("reads and forgets the sync server's key through main's keychain store", async () => {
    const dataDir = tempDir();
    const workspaceId = '6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b';
    const key = 'live_0123456789abcdefghijklmnopqrstuv';
    // A sync server that is not there (a port just freed): the workspace opens offline.
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as AddressInfo;
    await new Promise((r) => probe.close(r));
    writeFileSync(join(dataDir, 'session.json'), JSON.stringify({ kind: 'connected', workspaceId, workspaceName: 'Acme', member: { id: '0b7c5f52-3f8e-4a8e-9d55-1c1f4e9f2a10', name: 'Ann', role: 'owner' }, serverUrl: `http://127.0.0.1:${port}` }));
    // As main's store writes it: encrypted by the OS keychain (the double's safeStorage).
    const encrypted = Buffer.from(`keychain:${Buffer.from(key, 'utf8').toString('base64')}`, 'utf8').toString('base64');
    writeFileSync(join(dataDir, 'credentials.json'), JSON.stringify({ [`sync-server:${workspaceId}`]: encrypted }));
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { outreach } = await startedWithThread({ dataDir });
    const info = await outreach.session.get();
    expect(info.state === 'open' && info.apiKeyPrefix).toBe(key.slice(0, 12));
    const closed = await outreach.session.close();
    expect(closed.ok && closed.value.state).toBe('none');
    expect(existsSync(join(dataDir, 'credentials.json'))).toBe(false);
  });

  it('a thread that ends by itself is said in a dialog, and the app exits with 1', async () => {
    const { electron, dataDir, thread } = await startedWithThread();
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    await thread.thread.terminate();
    expect(await within(electron.double.exited, 5000)).toBe(1);
    expect(electron.double.errorBoxes).toEqual([{ title: 'Outreach CRM stopped', content: expect.stringContaining(dataDir) }]);
  });
});

describe('window placement', () => {
  function savedWindow(dataDir: string, state: object): void {
    writeFileSync(join(dataDir, 'window-state.json'), JSON.stringify(state));
  }
  const laptop = (e: Electron) => e.display(1, { x: 0, y: 0, width: 1920, height: 1080 });

  it('a window saved on a monitor that is gone opens on the screen there is', async () => {
    const dataDir = tempDir();
    savedWindow(dataDir, { x: 2400, y: 120, width: 1200, height: 800, maximized: false });
    const { electron } = await startMain({ dataDir, before: (e) => (e.double.config.displays = [laptop(e)]) });
    const win = await mainWindow(electron);
    expect(win.options.x).toBeUndefined();
    expect(win.options.y).toBeUndefined();
    const b = win.getBounds();
    expect(b.x).toBeGreaterThanOrEqual(0);
    expect(b.x + b.width).toBeLessThanOrEqual(1920);
    expect(b.y).toBeGreaterThanOrEqual(0);
    expect(b.y + b.height).toBeLessThanOrEqual(1080);
    expect(b.width).toBe(1200);
  });

  it('a window saved on a monitor that is still there opens where it was', async () => {
    const dataDir = tempDir();
    savedWindow(dataDir, { x: 2400, y: 120, width: 1200, height: 800, maximized: true });
    const { electron } = await startMain({ dataDir, before: (e) => (e.double.config.displays = [laptop(e), e.display(2, { x: 1920, y: 0, width: 2560, height: 1440 })]) });
    const win = await mainWindow(electron);
    expect(win.getBounds()).toEqual({ x: 2400, y: 120, width: 1200, height: 800 });
    expect(win.isMaximized()).toBe(true);
  });

  it('a window larger than the screen it opens on is made to fit; a corrupt file gives the defaults', async () => {
    const dataDir = tempDir();
    savedWindow(dataDir, { x: 10, y: 10, width: 3000, height: 2000 });
    const { electron } = await startMain({ dataDir, before: (e) => (e.double.config.displays = [e.display(1, { x: 0, y: 0, width: 1366, height: 768 })]) });
    const win = await mainWindow(electron);
    expect(win.getBounds()).toEqual({ x: 10, y: 10, width: 1366, height: 728 });

    const other = tempDir();
    savedWindow(other, { x: '10', y: null, width: 'wide' });
    const again = await startMain({ dataDir: other, before: (e) => (e.double.config.displays = [laptop(e)]) });
    const w2 = await mainWindow(again.electron);
    expect(w2.options).toMatchObject({ width: 1320, height: 840 });
    expect(w2.options.x).toBeUndefined();
  });

  it('remembers where the window was when it is closed', async () => {
    const { electron, dataDir } = await startMain({ before: (e) => (e.double.config.displays = [laptop(e)]) });
    const win = await mainWindow(electron);
    win.setBoundsByUser({ x: 300, y: 200, width: 1000, height: 700 });
    win.close();
    expect(JSON.parse(readFileSync(join(dataDir, 'window-state.json'), 'utf8'))).toEqual({ x: 300, y: 200, width: 1000, height: 700, maximized: false });
  });
});

describe('task reminders through the main process', () => {
  const notice: Notice = { title: 'Task due', body: 'Call Ann about the renewal (Ann Lee, Acme)', tag: 'task-7', leadId: '0b7c5f52-3f8e-4a8e-9d55-1c1f4e9f2a10' };

  it("shows the system's notification with the task; a click brings the window and opens the lead", async () => {
    const { electron, win, outreach } = await started();
    const commands: ShellCommand[] = [];
    outreach.commands.subscribe((c) => commands.push(c));
    expect(await outreach.notify(notice)).toBe(true);
    const [n] = electron.double.notifications;
    expect(n?.title).toBe('Task due');
    expect(n?.body).toBe('Call Ann about the renewal (Ann Lee, Acme)');
    expect(n?.shown).toBe(true);

    win.close();
    expect(win.isVisible()).toBe(false);
    n?.click();
    expect(win.isVisible()).toBe(true);
    expect(win.isFocused()).toBe(true);
    await eventually(() => commands.length > 0, 2000, 'the open-lead command');
    expect(commands).toEqual([{ kind: 'open-lead', leadId: notice.leadId }]);
  });

  it('a reminder with the same tag replaces the previous one', async () => {
    const { electron, outreach } = await started();
    expect(await outreach.notify(notice)).toBe(true);
    expect(await outreach.notify({ ...notice, body: 'Call Ann (moved to 3 pm)' })).toBe(true);
    const [first, second] = electron.double.notifications;
    expect(first?.closed).toBe(true);
    expect(second?.closed).toBe(false);
  });

  it('ignores a malformed or oversized request, and says false where notifications are unsupported', async () => {
    const { electron, page } = await started();
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const bad: unknown[] = [
      null,
      'Task due',
      { ...notice, title: '' },
      { ...notice, title: 'x'.repeat(NOTICE_LIMITS.title + 1) },
      { ...notice, body: 'x'.repeat(NOTICE_LIMITS.body + 1) },
      { ...notice, tag: 42 },
      { ...notice, leadId: '../../etc/passwd' },
      { ...notice, leadId: 'a'.repeat(NOTICE_LIMITS.leadId + 1) },
      { ...notice, onclick: 'steal()' },
      { title: 'Task due', body: 'no tag' },
    ];
    for (const payload of bad) expect(await page.ipcRenderer.invoke(IPC_NOTIFY, payload), JSON.stringify(payload)).toBe(false);
    expect(electron.double.notifications).toEqual([]);
    expect(await page.ipcRenderer.invoke(IPC_NOTIFY, { ...notice, body: 'x'.repeat(NOTICE_LIMITS.body) })).toBe(true);
    expect(electron.double.notifications).toHaveLength(1);

    electron.double.config.notificationsSupported = false;
    expect(await page.ipcRenderer.invoke(IPC_NOTIFY, notice)).toBe(false);
    expect(electron.double.notifications).toHaveLength(1);
  });
});
