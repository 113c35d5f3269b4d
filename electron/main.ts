/**
 * The Electron main process, kept thin: one window (size and position remembered), a tray so the
 * outreach runner keeps going when the window is closed, the application menu, a single-instance
 * lock, the sync server's key in the OS keychain (safeStorage), and the backend relayed over IPC.
 * The renderer is sandboxed with context isolation and no Node; it sees only `window.outreach`.
 */
import { app, BrowserWindow, ipcMain, Menu, nativeImage, safeStorage, screen, session, shell, Tray } from 'electron';
import type { IpcMainEvent, MenuItemConstructorOptions, WebContents } from 'electron';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Backend } from './backend/backend.ts';
import { fileCredentialStore } from './backend/credentials.ts';
import { createDesktopBackend } from './backend/desktop.ts';
import { openRpcConnection } from './backend/rpc.ts';
import type { RpcConnection } from './backend/rpc.ts';
import { defaultDataDir } from './backend/session.ts';
import { IPC_FROM_BACKEND, IPC_OPEN_EXTERNAL, IPC_TO_BACKEND } from './bridge.ts';
import type { ServerMessage, ShellCommand } from './bridge.ts';

/** build/electron/main.mjs -> the project root. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RENDERER = join(ROOT, 'renderer', 'dist', 'index.html');
const PRELOAD = join(ROOT, 'build', 'electron', 'preload.cjs');
const ICON = join(ROOT, 'build', 'icon.png');
const DATA_DIR = defaultDataDir();
const WINDOW_STATE = join(DATA_DIR, 'window-state.json');

/** The renderer's policy (the page also carries it in a meta tag). */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'";

let win: BrowserWindow | null = null;
let tray: Tray | null = null;
let backend: Backend | null = null;
let quitting = false;
const connections = new Map<number, RpcConnection>();

if (!app.requestSingleInstanceLock()) {
  // Another instance owns the data folder (its database file allows one owner): hand over to it.
  app.quit();
} else {
  app.on('second-instance', () => showWindow());
  app.whenReady().then(start, (e: unknown) => {
    console.error('The app could not start:', e);
    app.exit(1);
  });
}

type WindowState = { x?: number; y?: number; width: number; height: number; maximized: boolean };

function loadWindowState(): WindowState {
  const fallback: WindowState = { width: 1320, height: 840, maximized: false };
  try {
    const s = JSON.parse(readFileSync(WINDOW_STATE, 'utf8')) as Partial<WindowState>;
    if (typeof s.width !== 'number' || typeof s.height !== 'number') return fallback;
    const state: WindowState = { x: s.x, y: s.y, width: Math.max(800, s.width), height: Math.max(560, s.height), maximized: s.maximized === true };
    // A window saved on a monitor that is gone would open off screen: keep it only if it is visible.
    const visible = screen.getAllDisplays().some((d) => state.x !== undefined && state.y !== undefined && state.x < d.bounds.x + d.bounds.width - 100 && state.x + state.width > d.bounds.x + 100 && state.y >= d.bounds.y - 10 && state.y < d.bounds.y + d.bounds.height - 100);
    return visible ? state : { ...state, x: undefined, y: undefined };
  } catch {
    return fallback;
  }
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
  return contents.getURL().startsWith(pathToFileURL(RENDERER).toString());
}

function sendCommand(command: ShellCommand): void {
  showWindow();
  win?.webContents.send(IPC_FROM_BACKEND, { t: 'command', command } satisfies ServerMessage);
}

function createWindow(): BrowserWindow {
  const state = loadWindowState();
  const w = new BrowserWindow({
    ...state,
    minWidth: 800,
    minHeight: 560,
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
  if (state.maximized) w.maximize();
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
    if (!url.startsWith(pathToFileURL(RENDERER).toString())) {
      e.preventDefault();
      openExternal(url);
    }
  });
  const id = w.webContents.id;
  w.webContents.on('destroyed', () => {
    connections.get(id)?.close();
    connections.delete(id);
  });
  void w.loadFile(RENDERER);
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

async function start(): Promise<void> {
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CSP] } });
  });
  // The CRM needs no camera, microphone, location or notifications permission prompts.
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  app.on('web-contents-created', (_e, contents) => {
    contents.on('will-attach-webview', (e) => e.preventDefault());
  });

  backend = await createDesktopBackend({ dataDir: DATA_DIR, credentials: credentials() });
  const b = backend;
  ipcMain.on(IPC_TO_BACKEND, (event: IpcMainEvent, msg: unknown) => {
    if (!isOurPage(event.sender)) return;
    let conn = connections.get(event.sender.id);
    if (!conn) {
      const contents = event.sender;
      conn = openRpcConnection(b, (out) => {
        if (!contents.isDestroyed()) contents.send(IPC_FROM_BACKEND, out);
      }, (line) => console.error(line));
      connections.set(contents.id, conn);
    }
    conn.receive(msg);
  });
  ipcMain.on(IPC_OPEN_EXTERNAL, (event: IpcMainEvent, url: unknown) => {
    if (isOurPage(event.sender) && typeof url === 'string') openExternal(url);
  });

  buildMenu();
  buildTray();
  win = createWindow();
  app.on('activate', () => showWindow());
  app.on('window-all-closed', () => {
    // Stay in the tray: the runner keeps sending within its windows and limits.
  });
  app.on('before-quit', (e) => {
    if (!backend) return;
    quitting = true;
    e.preventDefault();
    const closing = backend;
    backend = null;
    for (const c of connections.values()) c.close();
    closing.close().catch((err: unknown) => console.error('Closing the backend failed:', err)).finally(() => {
      tray?.destroy();
      app.exit(0);
    });
  });
}
