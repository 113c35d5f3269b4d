/**
 * The Electron main process, kept thin: one window (size and position remembered), a tray so the
 * outreach runner keeps going when the window is closed, the application menu, a single-instance
 * lock, the sync server's key in the OS keychain (safeStorage), task reminders as the system's
 * notifications, and the backend relayed over IPC. The backend runs in a worker thread of this
 * process (electron/backend/backend-thread.ts: its own V8 heap, with a capped young generation, and
 * its SQLite work off the thread that runs the windows). The renderer is sandboxed with context isolation
 * and no Node; it sees only `window.outreach`. Its page comes from the app's own scheme,
 * app://outreach/ (app-protocol.ts), with the leads table's first screen in it as the web host's. Tested without Electron's binary by test/electron/
 * (a double of the Electron APIs); what only a real desktop shows is in docs/desktop-checklist.md.
 */
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeImage, Notification, protocol, safeStorage, screen, session, shell, Tray } from 'electron';
import type { Display, IpcMainEvent, IpcMainInvokeEvent, MenuItemConstructorOptions, Rectangle, WebContents } from 'electron';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { APP_SCHEME, APP_SCHEME_PRIVILEGES, APP_URL, appProtocolHandler, isAppPage } from './app-protocol.ts';
import { BackendThread } from './backend/backend-thread.ts';
import type { ThreadConnection } from './backend/backend-thread.ts';
import { fileCredentialStore } from './backend/credentials.ts';
import { defaultDataDir } from './backend/data-dir.ts';
import { IPC_FROM_BACKEND, IPC_NOTIFY, IPC_OPEN_EXTERNAL, IPC_TO_BACKEND, NOTICE_LIMITS } from './bridge.ts';
import type { Notice, ServerMessage, ShellCommand } from './bridge.ts';
import { firstScreenOverBridge } from './first-screen-html.ts';
import type { FirstScreenSource } from './first-screen-html.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The app's root: main runs bundled as build/electron/main.mjs (npm start, the installers), and
 * from electron/main.ts in tests. */
const BUNDLED = basename(HERE) === 'electron' && basename(dirname(HERE)) === 'build';
const ROOT = BUNDLED ? join(HERE, '..', '..') : join(HERE, '..');
/** The backend's thread: bundled next to main (scripts/build-app.ts), or its source in tests. */
const BACKEND_WORKER = BUNDLED ? join(HERE, 'backend-worker.mjs') : join(HERE, 'backend', 'backend-worker.ts');
/** The renderer's build, served to the window as app://outreach/ (app-protocol.ts). */
const RENDERER_DIR = join(ROOT, 'renderer', 'dist');
const PRELOAD = join(ROOT, 'build', 'electron', 'preload.cjs');
const ICON = join(ROOT, 'build', 'icon.png');
/** The installers' appId (build/electron-builder.yml). Windows shows an app's notifications only
 * under the id its Start menu shortcut carries. */
const APP_ID = 'dev.outreach-crm.desktop';
const DATA_DIR = defaultDataDir();
const WINDOW_STATE = join(DATA_DIR, 'window-state.json');
/** How long Quit waits for the backend (the runner finishing the action in flight, the database
 * closing) before exiting anyway. An action cut short is settled at the next start from its
 * recorded intent, never sent blindly again. */
const QUIT_TIMEOUT_MS = 10_000;

/** The one permission the page is granted: notifications (task reminders; the desktop shows them
 * from this process, and the page's own Notification API works too). Camera, microphone, location,
 * clipboard reading and the rest are refused, and no page but ours is granted anything. */
const PAGE_PERMISSIONS: ReadonlySet<string> = new Set(['notifications']);

let win: BrowserWindow | null = null;
let tray: Tray | null = null;
let backend: BackendThread | null = null;
/** main's own connection to the backend, for the first screen in the window's page. */
let firstScreen: (FirstScreenSource & { close(): void }) | null = null;
let quitting = false;
let closing: Promise<void> | null = null;
const connections = new Map<number, ThreadConnection>();

// Before the app is ready, as Electron requires: the scheme the window's page comes from.
protocol.registerSchemesAsPrivileged([APP_SCHEME_PRIVILEGES]);

if (!app.requestSingleInstanceLock()) {
  // Another instance owns the data folder (its database file allows one owner): hand over to it.
  app.quit();
} else {
  // Before start() made the window there is nothing to show: it appears when the backend is ready.
  app.on('second-instance', () => {
    if (win) showWindow();
  });
  app.whenReady().then(start).catch((e: unknown) => {
    console.error('The app could not start:', e);
    dialog.showErrorBox('Outreach CRM could not start', `${e instanceof Error ? e.message : String(e)}\n\nData folder: ${DATA_DIR}`);
    app.exit(1);
  });
}

type WindowState = { x?: number; y?: number; width: number; height: number; maximized: boolean };

const DEFAULT_SIZE = { width: 1320, height: 840 };
const MIN_SIZE = { width: 800, height: 560 };

const savedWindow = z.object({ x: z.number().optional(), y: z.number().optional(), width: z.number(), height: z.number(), maximized: z.boolean().optional() });

/** Whether a window at `r` can be grabbed on display `d`: 100 px of it across, its title bar inside. */
function onDisplay(r: Rectangle, d: Display): boolean {
  const b = d.bounds;
  return r.x < b.x + b.width - 100 && r.x + r.width > b.x + 100 && r.y >= b.y - 10 && r.y < b.y + b.height - 100;
}

/** Where the window opens: where it was, when that is still on a screen; else centred on the primary
 * display (a window saved on a monitor that is gone would open off screen). Never larger than the
 * display it opens on. */
function loadWindowState(): WindowState {
  let saved: z.infer<typeof savedWindow> | null = null;
  try {
    const parsed = savedWindow.safeParse(JSON.parse(readFileSync(WINDOW_STATE, 'utf8')));
    if (parsed.success) saved = parsed.data;
  } catch {
    // no saved window (first start) or an unreadable file: the defaults
  }
  const rect = saved && saved.x !== undefined && saved.y !== undefined ? { x: saved.x, y: saved.y, width: saved.width, height: saved.height } : null;
  const home = rect ? screen.getAllDisplays().find((d) => onDisplay(rect, d)) : undefined;
  const area = (home ?? screen.getPrimaryDisplay()).workArea;
  const fit = (size: number, min: number, room: number) => Math.round(Math.max(min, Math.min(size, room)));
  const width = fit(saved?.width ?? DEFAULT_SIZE.width, MIN_SIZE.width, area.width);
  const height = fit(saved?.height ?? DEFAULT_SIZE.height, MIN_SIZE.height, area.height);
  const maximized = saved?.maximized === true;
  return home && rect ? { x: Math.round(rect.x), y: Math.round(rect.y), width, height, maximized } : { width, height, maximized };
}

function saveWindowState(w: BrowserWindow): void {
  const b = w.getNormalBounds();
  try {
    mkdirSync(DATA_DIR, { recursive: true });
    writeFileSync(WINDOW_STATE, JSON.stringify({ ...b, maximized: w.isMaximized() }));
  } catch (e) {
    console.error('Could not save the window position:', e);
  }
}

/** Only web and mail links leave the app, and they open in the system browser. */
function openExternal(url: string): void {
  try {
    const u = new URL(url);
    if (u.protocol === 'https:' || u.protocol === 'http:' || u.protocol === 'mailto:') void shell.openExternal(u.toString());
  } catch {
    // not a URL: ignore
  }
}

function isOurPage(contents: WebContents): boolean {
  return isAppPage(contents.getURL());
}

/** IPC is answered only for our page's top frame. A page that is not ours gets the same preload (it
 * runs in whatever the window shows) but no backend, no links and no notifications. */
function fromOurPage(event: IpcMainEvent | IpcMainInvokeEvent): boolean {
  const frame = event.senderFrame;
  return frame !== null && frame.parent === null && isAppPage(frame.url) && isOurPage(event.sender);
}

const noticeInput = z.strictObject({
  title: z.string().min(1).max(NOTICE_LIMITS.title),
  body: z.string().max(NOTICE_LIMITS.body),
  tag: z.string().min(1).max(NOTICE_LIMITS.tag),
  leadId: z.string().max(NOTICE_LIMITS.leadId).regex(/^[A-Za-z0-9-]+$/).nullable(),
}) satisfies z.ZodType<Notice>;

/** Notifications on screen by tag, referenced until closed: Electron stops reporting the click of a
 * notification that was garbage collected. The oldest are let go past a few dozen. */
const notices = new Map<string, Notification>();
const MAX_NOTICES = 30;

/** Shows a reminder as the system's notification; a click opens its lead in the window. */
function showNotice(notice: Notice): boolean {
  if (!Notification.isSupported()) return false;
  // Same tag, same reminder: the new one replaces the old, as the browser's `tag` does.
  notices.get(notice.tag)?.close();
  const n = new Notification({ title: notice.title, body: notice.body, icon: ICON });
  n.on('click', () => {
    if (notice.leadId !== null) sendCommand({ kind: 'open-lead', leadId: notice.leadId });
    else showWindow();
  });
  n.on('close', () => {
    if (notices.get(notice.tag) === n) notices.delete(notice.tag);
  });
  notices.set(notice.tag, n);
  for (const tag of notices.keys()) {
    if (notices.size <= MAX_NOTICES) break;
    notices.delete(tag);
  }
  n.show();
  return true;
}

function sendCommand(command: ShellCommand): void {
  showWindow();
  win?.webContents.send(IPC_FROM_BACKEND, { t: 'command', command } satisfies ServerMessage);
}

function createWindow(): BrowserWindow {
  const { maximized, ...bounds } = loadWindowState();
  const w = new BrowserWindow({
    ...bounds,
    minWidth: MIN_SIZE.width,
    minHeight: MIN_SIZE.height,
    show: false,
    title: 'Outreach CRM',
    icon: ICON,
    backgroundColor: '#f6f7f9',
    webPreferences: {
      preload: PRELOAD,
      contextIsolation: true,
      nodeIntegration: false,
      sandbox: true,
      webSecurity: true,
      allowRunningInsecureContent: false,
      spellcheck: true,
    },
  });
  if (maximized) w.maximize();
  w.once('ready-to-show', () => w.show());
  let saveTimer: ReturnType<typeof setTimeout> | null = null;
  const saveSoon = () => {
    if (saveTimer) clearTimeout(saveTimer);
    saveTimer = setTimeout(() => saveWindowState(w), 500);
  };
  w.on('resize', saveSoon);
  w.on('move', saveSoon);
  w.on('close', (e) => {
    saveWindowState(w);
    if (!quitting) {
      // Closing the window keeps the app (and the outreach runner) going in the tray.
      e.preventDefault();
      w.hide();
    }
  });
  w.webContents.setWindowOpenHandler(({ url }) => {
    openExternal(url);
    return { action: 'deny' };
  });
  w.webContents.on('will-navigate', (e, url) => {
    if (!isAppPage(url)) {
      e.preventDefault();
      openExternal(url);
    }
  });
  const id = w.webContents.id;
  w.webContents.on('destroyed', () => {
    connections.get(id)?.close();
    connections.delete(id);
  });
  void w.loadURL(APP_URL);
  return w;
}

function showWindow(): void {
  if (!win || win.isDestroyed()) win = createWindow();
  if (win.isMinimized()) win.restore();
  win.show();
  win.focus();
}

function buildMenu(): void {
  const go = (screen: Extract<ShellCommand, { kind: 'go' }>['screen']) => () => sendCommand({ kind: 'go', screen });
  const template: MenuItemConstructorOptions[] = [
    ...(process.platform === 'darwin' ? [{ role: 'appMenu' as const }] : []),
    {
      label: 'File',
      submenu: [
        { label: 'Import leads from CSV…', accelerator: 'CmdOrCtrl+I', click: () => sendCommand({ kind: 'import-csv' }) },
        { label: 'Export leads as CSV', accelerator: 'CmdOrCtrl+Shift+E', click: () => sendCommand({ kind: 'export-csv' }) },
        { type: 'separator' },
        { label: 'Close window', accelerator: 'CmdOrCtrl+W', click: () => win?.hide() },
        { label: 'Quit', accelerator: 'CmdOrCtrl+Q', click: () => app.quit() },
      ],
    },
    { role: 'editMenu' },
    {
      label: 'Go',
      submenu: [
        { label: 'Leads', accelerator: 'CmdOrCtrl+1', click: go('leads') },
        { label: 'Pipeline', accelerator: 'CmdOrCtrl+2', click: go('pipeline') },
        { label: 'Tasks', accelerator: 'CmdOrCtrl+3', click: go('tasks') },
        { label: 'Triage', accelerator: 'CmdOrCtrl+4', click: go('triage') },
        { label: 'Settings', accelerator: 'CmdOrCtrl+,', click: go('settings') },
        { type: 'separator' },
        { label: 'Command palette', accelerator: 'CmdOrCtrl+K', click: () => sendCommand({ kind: 'palette' }) },
      ],
    },
    {
      label: 'View',
      submenu: [{ role: 'reload' }, { role: 'toggleDevTools' }, { type: 'separator' }, { role: 'resetZoom' }, { role: 'zoomIn' }, { role: 'zoomOut' }, { type: 'separator' }, { role: 'togglefullscreen' }],
    },
    { role: 'windowMenu' },
    { label: 'Help', submenu: [{ label: 'Keyboard shortcuts', accelerator: 'Shift+/', click: () => sendCommand({ kind: 'shortcuts' }) }] },
  ];
  Menu.setApplicationMenu(Menu.buildFromTemplate(template));
}

function buildTray(): void {
  tray = new Tray(nativeImage.createFromPath(ICON).resize({ width: 18, height: 18 }));
  tray.setToolTip('Outreach CRM: outreach keeps running while the window is closed');
  tray.setContextMenu(
    Menu.buildFromTemplate([
      { label: 'Open Outreach CRM', click: () => showWindow() },
      { label: 'Tasks', click: () => sendCommand({ kind: 'go', screen: 'tasks' }) },
      { type: 'separator' },
      { label: 'Quit (stops outreach on this machine)', click: () => app.quit() },
    ]),
  );
  tray.on('click', () => showWindow());
}

/** The key is encrypted with the OS keychain; without one it stays in a file only the user can read. */
function credentials() {
  const file = join(DATA_DIR, 'credentials.json');
  if (!safeStorage.isEncryptionAvailable()) return fileCredentialStore(file);
  return fileCredentialStore(file, { encode: (plain) => safeStorage.encryptString(plain), decode: (stored) => safeStorage.decryptString(stored) }, 'the operating system keychain');
}

/** Closes the backend within QUIT_TIMEOUT_MS; the exit code says whether it closed cleanly. */
async function closeBackend(b: BackendThread): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), QUIT_TIMEOUT_MS);
  });
  try {
    if ((await Promise.race([b.close().then(() => 'closed' as const), timeUp])) === 'closed') return 0;
    console.error(`The backend did not close within ${QUIT_TIMEOUT_MS / 1000} s; quitting anyway.`);
    return 1;
  } catch (e) {
    console.error('Closing the backend failed:', e);
    return 1;
  } finally {
    clearTimeout(timer);
  }
}

/** The backend's thread ended by itself (a crash, or out of memory): the window could only wait for
 * answers, so say so and exit. The data is safe (every acknowledged write is in the file; an action
 * of the runner cut short is settled at the next start). */
function backendStopped(error: Error): void {
  if (quitting) return;
  console.error(error.message);
  backend = null;
  dialog.showErrorBox('Outreach CRM stopped', `${error.message}\n\nYour data is saved. Start the app again to go on.\n\nData folder: ${DATA_DIR}`);
  tray?.destroy();
  app.exit(1);
}

async function start(): Promise<void> {
  if (process.platform === 'win32') app.setAppUserModelId(APP_ID);
  // The renderer's policy, also in the page's meta tag (which holds however the page is loaded); a
  // test keeps the two equal. Written out here so that `npm run lint:electron` evaluates it. A
  // response of the app: scheme with a policy of its own keeps it (app-protocol.ts: this policy, and
  // the page's allows its first screen's style element by a nonce of that response); any other
  // response gets this one, whatever it says.
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    const own = details.url.startsWith(`${APP_SCHEME}:`) && Object.keys(details.responseHeaders ?? {}).some((h) => h.toLowerCase() === 'content-security-policy');
    if (own) {
      callback({});
      return;
    }
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': ["default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'"] } });
  });
  session.defaultSession.setPermissionRequestHandler((contents, permission, callback) => callback(PAGE_PERMISSIONS.has(permission) && isOurPage(contents)));
  session.defaultSession.setPermissionCheckHandler((contents, permission) => PAGE_PERMISSIONS.has(permission) && contents !== null && isOurPage(contents));
  app.on('web-contents-created', (_e, contents) => {
    contents.on('will-attach-webview', (e) => e.preventDefault());
  });

  backend = await BackendThread.start({
    entry: BACKEND_WORKER,
    dataDir: DATA_DIR,
    credentials: credentials(),
    log: (line) => console.error(line),
    onExit: backendStopped,
  });
  const b = backend;
  ipcMain.on(IPC_TO_BACKEND, (event: IpcMainEvent, msg: unknown) => {
    if (!fromOurPage(event)) return;
    let conn = connections.get(event.sender.id);
    if (!conn) {
      const contents = event.sender;
      conn = b.connect((out) => {
        if (!contents.isDestroyed()) contents.send(IPC_FROM_BACKEND, out);
      });
      connections.set(contents.id, conn);
    }
    conn.receive(msg);
  });
  ipcMain.on(IPC_OPEN_EXTERNAL, (event: IpcMainEvent, url: unknown) => {
    if (fromOurPage(event) && typeof url === 'string') openExternal(url);
  });
  ipcMain.handle(IPC_NOTIFY, (event: IpcMainInvokeEvent, raw: unknown) => {
    if (!fromOurPage(event)) return false;
    const notice = noticeInput.safeParse(raw);
    if (!notice.success) {
      console.error('Ignored a malformed notification request from the page.');
      return false;
    }
    return showNotice(notice.data);
  });

  // The window's page and files, with the first screen read over a connection of main's own.
  firstScreen = await firstScreenOverBridge((send) => b.connect(send)).catch((e: unknown) => {
    console.error('The first screen will not be in the page:', e);
    return null;
  });
  session.defaultSession.protocol.handle(APP_SCHEME, appProtocolHandler({ rendererDir: RENDERER_DIR, firstScreen, log: (line) => console.error(line) }));

  buildMenu();
  buildTray();
  win = createWindow();
  app.on('activate', () => showWindow());
  app.on('window-all-closed', () => {
    // Stay in the tray: the runner keeps sending within its windows and limits.
  });
  app.on('before-quit', (e) => {
    // Quit again while closing: the exit is on its way (within QUIT_TIMEOUT_MS).
    if (closing) {
      e.preventDefault();
      return;
    }
    if (!backend) return;
    quitting = true;
    e.preventDefault();
    const b = backend;
    backend = null;
    for (const c of connections.values()) c.close();
    connections.clear();
    firstScreen?.close();
    firstScreen = null;
    closing = closeBackend(b).then((code) => {
      tray?.destroy();
      app.exit(code);
    });
  });
}
