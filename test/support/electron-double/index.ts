/**
 * A double of the Electron APIs that electron/main.ts and electron/preload.ts use, so that the real
 * main process and preload run under vitest on machines without Electron's binary. The "electron"
 * project of vitest.config.ts resolves `electron` to this module for test/electron/** only.
 *
 * It behaves like Electron where main.ts depends on it: the order of app events on quit (before-quit,
 * windows closing, will-quit), a window's close that can be prevented, the app quitting when its
 * last window closes unless someone listens to window-all-closed, IPC by structured clone between a
 * page and main with the sender's webContents and frame, contextBridge's copying (page.ts), a
 * session that grants every permission until a handler says otherwise, and an empty image for an
 * icon path that does not exist. Tests drive it as a person or a page would (close the window, click
 * a notification, open a link, start a second instance) and read what it recorded.
 *
 * Each member is typed against Electron's own declarations (`implements Pick<...>`, `SameParams`),
 * so a method the double invents, or a signature Electron changes, fails the typecheck. What it
 * cannot prove (real windows, the tray, the keychain, native notifications) is listed in
 * docs/desktop-checklist.md.
 *
 * main.ts runs code on import: import this module and main.ts afresh for each test, after
 * vi.resetModules(), so both see the same new world (test/electron/harness.ts does it).
 */
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type * as ElectronApi from 'electron';
import { PageDouble } from './page.ts';
import type { MainIpcPort } from './page.ts';
import type { SameParams } from './types.ts';

export { bridgeCopy, PageDouble } from './page.ts';

type Rect = ElectronApi.Rectangle;

/** Electron's event object: preventDefault plus the event's own fields. */
function electronEvent<P extends object>(params: P): ElectronApi.Event<P> {
  let prevented = false;
  return {
    ...params,
    preventDefault: () => {
      prevented = true;
    },
    get defaultPrevented() {
      return prevented;
    },
  };
}

/** A display as `screen` reports it; the work area leaves 40 px for a task bar. */
export function display(id: number, bounds: Rect): ElectronApi.Display {
  const workArea = { x: bounds.x, y: bounds.y, width: bounds.width, height: Math.max(0, bounds.height - 40) };
  return {
    id, label: `Display ${id}`, bounds, workArea, size: { width: bounds.width, height: bounds.height },
    workAreaSize: { width: workArea.width, height: workArea.height }, scaleFactor: 1, rotation: 0, internal: id === 1,
    monochrome: false, accelerometerSupport: 'unknown', touchSupport: 'unknown', colorSpace: 'srgb', colorDepth: 24,
    depthPerComponent: 8, detected: true, displayFrequency: 60, maximumCursorSize: { width: 64, height: 64 },
    nativeOrigin: { x: bounds.x, y: bounds.y },
  } satisfies ElectronApi.Display;
}

/** What a test sets before main.ts is imported (its module code reads some of it at once). */
export type DoubleConfig = {
  /** false: another instance holds the lock (this one is the second instance). */
  singleInstanceLock: boolean;
  displays: ElectronApi.Display[];
  encryptionAvailable: boolean;
  notificationsSupported: boolean;
};

type IpcMainListener = (event: ElectronApi.IpcMainEvent, ...args: unknown[]) => void;
type IpcMainHandler = (event: ElectronApi.IpcMainInvokeEvent, ...args: unknown[]) => unknown;

/** Everything the double records, and the knobs a test turns. */
class World {
  config: DoubleConfig = {
    singleInstanceLock: true,
    displays: [display(1, { x: 0, y: 0, width: 1920, height: 1080 })],
    encryptionAvailable: true,
    notificationsSupported: true,
  };
  readonly windows: BrowserWindowDouble[] = [];
  readonly trays: TrayDouble[] = [];
  readonly notifications: NotificationDouble[] = [];
  /** URLs handed to the operating system (shell.openExternal). */
  readonly openedExternally: string[] = [];
  readonly errorBoxes: { title: string; content: string }[] = [];
  readonly appUserModelIds: string[] = [];
  /** The schemes registered as privileged (protocol.registerSchemesAsPrivileged), before ready. */
  readonly privilegedSchemes: ElectronApi.CustomScheme[] = [];
  applicationMenu: MenuDouble | null = null;
  /** Every message that reached the main process over IPC, from whichever page: main decides
   * whether to answer, and a test can tell "ignored" from "never arrived". */
  readonly ipcReceived: { channel: string; url: string; args: unknown[] }[] = [];
  exitCode: number | null = null;
  /** Resolves with the exit code when the app exits (app.exit, or a quit nobody prevented). */
  readonly exited: Promise<number>;
  private resolveExit: (code: number) => void = () => undefined;

  constructor() {
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
  }

  exit(code: number): void {
    if (this.exitCode !== null) return;
    this.exitCode = code;
    for (const w of this.windows) if (!w.isDestroyed()) w.destroy();
    this.resolveExit(code);
  }

  get quitting(): boolean {
    return app.quitInProgress;
  }

  liveWindows(): BrowserWindowDouble[] {
    return this.windows.filter((w) => !w.isDestroyed());
  }

  /** The menu item with this label in the application menu or the tray's menu. */
  menuItem(menu: MenuDouble | null, label: string): ElectronApi.MenuItemConstructorOptions {
    const found = menu?.find(label);
    if (!found) throw new Error(`no menu item "${label}"`);
    return found;
  }

  /** Clicks a menu item as a person would. */
  click(menu: MenuDouble | null, label: string): void {
    const { click } = this.menuItem(menu, label);
    if (!click) throw new Error(`menu item "${label}" does nothing when clicked`);
    // Electron passes the item, the focused window and the keyboard event; main.ts uses none of them.
    Reflect.apply(click, undefined, []);
  }
}

export const double = new World();

// --- app -------------------------------------------------------------------------------------

class AppDouble extends EventEmitter implements Pick<ElectronApi.App, 'requestSingleInstanceLock' | 'whenReady' | 'isReady' | 'quit' | 'exit' | 'setAppUserModelId'> {
  quitInProgress = false;
  private ready = false;

  requestSingleInstanceLock(): boolean {
    return double.config.singleInstanceLock;
  }

  whenReady(): Promise<void> {
    if (!this.ready) {
      this.ready = true;
      this.emit('ready', electronEvent({}), {});
    }
    return Promise.resolve();
  }

  isReady(): boolean {
    return this.ready;
  }

  /** As Electron: before-quit (preventable), then every window is asked to close (a window that
   * refuses cancels the quit), then will-quit (preventable), quit, and the process ends. */
  quit(): void {
    if (double.exitCode !== null) return;
    const before = electronEvent({});
    this.emit('before-quit', before);
    if (before.defaultPrevented) return;
    this.quitInProgress = true;
    for (const w of double.liveWindows()) {
      w.close();
      if (!w.isDestroyed()) {
        this.quitInProgress = false;
        return;
      }
    }
    const will = electronEvent({});
    this.emit('will-quit', will);
    if (will.defaultPrevented) {
      this.quitInProgress = false;
      return;
    }
    this.emit('quit', electronEvent({}), 0);
    double.exit(0);
  }

  /** Ends at once: no before-quit, no close events. */
  exit(exitCode = 0): void {
    double.exit(exitCode);
  }

  setAppUserModelId(id: string): void {
    double.appUserModelIds.push(id);
  }

  /** What Electron does when a second copy of the app starts while this one holds the lock. */
  startSecondInstance(argv: string[] = ['outreach-crm']): void {
    this.emit('second-instance', electronEvent({}), argv, process.cwd(), {});
  }

  /** A window was destroyed: with none left, Electron quits unless the app listens for this. */
  windowDestroyed(): void {
    if (double.liveWindows().length > 0 || this.quitInProgress || double.exitCode !== null) return;
    if (this.listenerCount('window-all-closed') > 0) this.emit('window-all-closed');
    else this.quit();
  }
}

export const app = new AppDouble();

// --- windows and their contents ------------------------------------------------------------------

let nextWebContentsId = 1;

/** What a page loaded from a scheme of the app's own was answered (its handler's Response, read). */
export type LoadedPage = { url: string; status: number; headers: Headers; body: string };

export class WebContentsDouble extends EventEmitter implements Pick<ElectronApi.WebContents, 'id' | 'getURL' | 'isDestroyed' | 'isLoading' | 'setWindowOpenHandler'> {
  readonly id = nextWebContentsId++;
  page: PageDouble | null = null;
  /** The last page loaded through a protocol handler (loadURL of the app's own scheme). */
  loaded: LoadedPage | null = null;
  private url = '';
  private destroyed = false;
  private windowOpenHandler: ((details: ElectronApi.HandlerDetails) => ElectronApi.WindowOpenHandlerResponse) | null = null;

  constructor(readonly webPreferences: ElectronApi.WebPreferences) {
    super();
  }

  getURL(): string {
    return this.url;
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }

  isLoading(): boolean {
    return false;
  }

  send(channel: string, ...args: unknown[]): void {
    if (this.destroyed) throw new Error('Object has been destroyed');
    const cloned = structuredClone(args);
    const page = this.page;
    setImmediate(() => {
      if (!this.destroyed && page && this.page === page) page.deliver(channel, cloned);
    });
  }

  setWindowOpenHandler(handler: (details: ElectronApi.HandlerDetails) => ElectronApi.WindowOpenHandlerResponse): void {
    this.windowOpenHandler = handler;
  }

  /** Loads a page: a new page (no preload has run in it yet; see runPreload). */
  load(url: string): void {
    this.url = url;
    this.page = new PageDouble(url, this.webPreferences.contextIsolation !== false, mainIpc);
  }

  /** What the page's `window.open`, a target=_blank link or a middle-click asks for. Without a
   * handler Electron opens a new window. */
  openWindow(url: string): ElectronApi.WindowOpenHandlerResponse {
    if (!this.windowOpenHandler) return { action: 'allow' };
    return this.windowOpenHandler({ url, frameName: '', features: '', disposition: 'foreground-tab', referrer: { url: this.url, policy: 'strict-origin-when-cross-origin' } });
  }

  /** A navigation the page starts (a link, `location.href = ...`): will-navigate may prevent it.
   * Returns whether the page moved. */
  navigate(url: string): boolean {
    const event = electronEvent({ url, isSameDocument: false, isMainFrame: true, frame: null, initiator: null });
    this.emit('will-navigate', event, url, false, true);
    if (event.defaultPrevented) return false;
    this.load(url);
    return true;
  }

  /** The page now shown is another one, however it got there (a redirect, a bug in the checks): for
   * tests of what a page that is not ours can do with the preload's bridge, which runs in it too. */
  replacePage(url: string): void {
    const previous = this.page;
    this.url = url;
    if (previous) {
      // Same preload, same bridge object, but the frame now belongs to `url`.
      previous.movedTo = url;
    }
  }

  /**
   * Runs a preload in the current page. `load` imports the preload module (electron/preload.ts,
   * whose `import 'electron'` resolves to this double, bound to this page while it loads); or pass
   * a file (build/electron/preload.cjs) to run it as Electron's sandbox does.
   */
  async runPreload(load: string | (() => Promise<unknown>)): Promise<PageDouble> {
    const page = this.page;
    if (!page) throw new Error('no page is loaded');
    if (typeof load === 'string') {
      page.runSandboxedPreload(load);
      return page;
    }
    activePage = page;
    await load();
    return page;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('destroyed');
  }
}

export class BrowserWindowDouble extends EventEmitter implements Pick<ElectronApi.BrowserWindow, 'id' | 'show' | 'hide' | 'focus' | 'isVisible' | 'isFocused' | 'isMinimized' | 'minimize' | 'restore' | 'maximize' | 'isMaximized' | 'getNormalBounds' | 'isDestroyed' | 'loadFile' | 'loadURL' | 'close' | 'destroy'> {
  private static nextId = 1;
  readonly id = BrowserWindowDouble.nextId++;
  readonly webContents: WebContentsDouble;
  private bounds: Rect;
  private visible: boolean;
  private focused = false;
  private minimized = false;
  private maximized = false;
  private destroyed = false;

  constructor(readonly options: ElectronApi.BrowserWindowConstructorOptions = {}) {
    super();
    this.webContents = new WebContentsDouble(options.webPreferences ?? {});
    const area = screen.getPrimaryDisplay().workArea;
    const width = options.width ?? 800;
    const height = options.height ?? 600;
    // Without x and y Electron centres the window on the primary display.
    this.bounds = { x: options.x ?? Math.round(area.x + (area.width - width) / 2), y: options.y ?? Math.round(area.y + (area.height - height) / 2), width, height };
    this.visible = options.show !== false;
    double.windows.push(this);
    app.emit('browser-window-created', electronEvent({}), this);
    app.emit('web-contents-created', electronEvent({}), this.webContents);
  }

  /** Where the window is (the double does not move windows on its own). */
  getBounds(): Rect {
    return { ...this.bounds };
  }

  getNormalBounds(): Rect {
    return { ...this.bounds };
  }

  show(): void {
    this.visible = true;
    this.minimized = false;
    this.focused = true;
  }

  hide(): void {
    this.visible = false;
    this.focused = false;
  }

  focus(): void {
    this.focused = true;
  }

  isVisible(): boolean {
    return this.visible && !this.minimized;
  }

  isFocused(): boolean {
    return this.focused;
  }

  minimize(): void {
    this.minimized = true;
    this.focused = false;
  }

  isMinimized(): boolean {
    return this.minimized;
  }

  restore(): void {
    this.minimized = false;
    this.maximized = false;
  }

  maximize(): void {
    this.maximized = true;
  }

  isMaximized(): boolean {
    return this.maximized;
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }

  /** Moves or resizes the window as a person dragging it would. */
  setBoundsByUser(bounds: Partial<Rect>): void {
    this.bounds = { ...this.bounds, ...bounds };
    this.emit('move');
    this.emit('resize');
  }

  /** Loads a file as Electron does: the page's URL is its file: URL; ready-to-show follows. */
  loadFile(filePath: string): Promise<void> {
    this.webContents.load(pathToFileURL(filePath).href);
    setImmediate(() => {
      if (!this.destroyed) this.emit('ready-to-show');
    });
    return Promise.resolve();
  }

  /** Loads a URL as Electron does for a scheme the app handles (protocol.handle in the default
   * session): its handler answers a GET of the URL, the page's URL is the URL, ready-to-show follows.
   * A scheme nobody handles fails as Electron's does (ERR_UNKNOWN_URL_SCHEME). Only the app's own
   * schemes are loaded here: main loads nothing else. */
  async loadURL(url: string): Promise<void> {
    const handler = session.defaultSession.protocol.handlerOf(new URL(url).protocol.slice(0, -1));
    if (!handler) throw new Error(`ERR_UNKNOWN_URL_SCHEME (-302) loading '${url}'`);
    const response = await handler(new Request(url));
    this.webContents.loaded = { url, status: response.status, headers: response.headers, body: await response.text() };
    if (this.destroyed) return;
    this.webContents.load(url);
    setImmediate(() => {
      if (!this.destroyed) this.emit('ready-to-show');
    });
  }

  /** The window's close button (or Cmd+W handled by the OS): 'close' may prevent it. */
  close(): void {
    if (this.destroyed) return;
    const event = electronEvent({});
    this.emit('close', event);
    if (!event.defaultPrevented) this.destroy();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.visible = false;
    this.emit('closed');
    this.webContents.destroy();
    app.windowDestroyed();
  }
}

export const BrowserWindow = BrowserWindowDouble satisfies new (options?: ElectronApi.BrowserWindowConstructorOptions) => unknown;

// --- IPC ---------------------------------------------------------------------------------------

class IpcMainDouble implements SameParams<ElectronApi.IpcMain, 'on' | 'handle' | 'removeHandler'> {
  readonly listeners = new Map<string, Set<IpcMainListener>>();
  readonly handlers = new Map<string, IpcMainHandler>();

  on = (channel: string, listener: (event: ElectronApi.IpcMainEvent, ...args: unknown[]) => void): this => {
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
    return this;
  };

  handle = (channel: string, listener: (event: ElectronApi.IpcMainInvokeEvent, ...args: unknown[]) => unknown): void => {
    if (this.handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`);
    this.handlers.set(channel, listener);
  };

  removeHandler = (channel: string): void => {
    this.handlers.delete(channel);
  };
}

export const ipcMain = new IpcMainDouble();

/** The event main's IPC listeners get: the sender's webContents and its top frame, whose URL is the
 * page that sent the message. */
function mainEvent(page: PageDouble, contents: WebContentsDouble) {
  return electronEvent({
    sender: contents,
    senderFrame: { url: page.movedTo ?? page.url, parent: null, top: null, processId: 1, routingId: 1 },
    frameId: 1,
    processId: 1,
    ports: [],
    returnValue: undefined,
    type: 'frame' as const,
    reply: (channel: string, ...args: unknown[]) => contents.send(channel, ...args),
  });
}

function contentsOf(page: PageDouble): WebContentsDouble {
  const w = double.windows.find((win) => win.webContents.page === page);
  if (!w) throw new Error('this page is in no window');
  return w.webContents;
}

const mainIpc: MainIpcPort = {
  send(page, channel, args) {
    const contents = contentsOf(page);
    setImmediate(() => {
      if (contents.isDestroyed()) return;
      double.ipcReceived.push({ channel, url: page.movedTo ?? page.url, args });
      const event = mainEvent(page, contents);
      // The double's event stands in for Electron's IpcMainEvent: main.ts reads sender and senderFrame.
      for (const l of ipcMain.listeners.get(channel) ?? []) Reflect.apply(l, undefined, [event, ...args]);
    });
  },
  async invoke(page, channel, args) {
    const contents = contentsOf(page);
    await new Promise((resolve) => setImmediate(resolve));
    double.ipcReceived.push({ channel, url: page.movedTo ?? page.url, args });
    const handler = ipcMain.handlers.get(channel);
    if (!handler) throw new Error(`Error invoking remote method '${channel}': Error: No handler registered for '${channel}'`);
    const result: unknown = await Reflect.apply(handler, undefined, [mainEvent(page, contents), ...args]);
    return structuredClone(result);
  },
};

/** The page whose preload is being imported: the module-level ipcRenderer and contextBridge below
 * act for it (one renderer per test, as one window per app). */
let activePage: PageDouble | null = null;

function page(): PageDouble {
  if (!activePage) throw new Error('ipcRenderer and contextBridge are only for a preload (run it with webContents.runPreload)');
  return activePage;
}

export const ipcRenderer = {
  send: (channel: string, ...args: unknown[]): void => page().ipcRenderer.send(channel, ...args),
  invoke: (channel: string, ...args: unknown[]): Promise<unknown> => page().ipcRenderer.invoke(channel, ...args),
  on: (channel: string, listener: (event: ElectronApi.IpcRendererEvent, ...args: unknown[]) => void) => page().ipcRenderer.on(channel, listener),
} satisfies SameParams<ElectronApi.IpcRenderer, 'send' | 'invoke' | 'on'>;

export const contextBridge = {
  exposeInMainWorld: (apiKey: string, api: unknown): void => page().contextBridge.exposeInMainWorld(apiKey, api),
} satisfies Pick<ElectronApi.ContextBridge, 'exposeInMainWorld'>;

// --- menus, tray, images ---------------------------------------------------------------------------

export class MenuDouble {
  constructor(readonly items: ElectronApi.MenuItemConstructorOptions[]) {}

  static buildFromTemplate(template: Array<ElectronApi.MenuItemConstructorOptions | ElectronApi.MenuItem>): MenuDouble {
    return new MenuDouble(template.filter((i): i is ElectronApi.MenuItemConstructorOptions => !(i instanceof MenuDouble)));
  }

  static setApplicationMenu(menu: ElectronApi.Menu | null): void {
    double.applicationMenu = menu instanceof MenuDouble ? menu : null;
  }

  find(label: string): ElectronApi.MenuItemConstructorOptions | null {
    const walk = (items: readonly ElectronApi.MenuItemConstructorOptions[]): ElectronApi.MenuItemConstructorOptions | null => {
      for (const item of items) {
        if (item.label === label) return item;
        const sub = item.submenu;
        if (Array.isArray(sub)) {
          const found = walk(sub.filter((s): s is ElectronApi.MenuItemConstructorOptions => typeof s === 'object'));
          if (found) return found;
        }
      }
      return null;
    };
    return walk(this.items);
  }
}

export const Menu = MenuDouble satisfies SameParams<typeof ElectronApi.Menu, 'buildFromTemplate' | 'setApplicationMenu'>;

export class NativeImageDouble implements Pick<ElectronApi.NativeImage, 'isEmpty' | 'getSize'> {
  constructor(readonly path: string, private readonly size: ElectronApi.Size) {}

  isEmpty(): boolean {
    return this.size.width === 0;
  }

  getSize(): ElectronApi.Size {
    return { ...this.size };
  }

  resize(options: ElectronApi.ResizeOptions): NativeImageDouble {
    if (this.isEmpty()) return this;
    return new NativeImageDouble(this.path, { width: options.width ?? this.size.width, height: options.height ?? this.size.height });
  }
}

export const nativeImage = {
  /** Electron returns an empty image (no error) for a path that does not exist. */
  createFromPath: (path: string): NativeImageDouble => new NativeImageDouble(path, existsSync(path) ? { width: 512, height: 512 } : { width: 0, height: 0 }),
} satisfies SameParams<typeof ElectronApi.nativeImage, 'createFromPath'>;

export class TrayDouble extends EventEmitter implements Pick<ElectronApi.Tray, 'setToolTip' | 'setContextMenu' | 'destroy' | 'isDestroyed'> {
  toolTip = '';
  menu: MenuDouble | null = null;
  private destroyed = false;

  constructor(readonly image: ElectronApi.NativeImage | string) {
    super();
    double.trays.push(this);
  }

  setToolTip(toolTip: string): void {
    this.toolTip = toolTip;
  }

  setContextMenu(menu: ElectronApi.Menu | null): void {
    this.menu = menu instanceof MenuDouble ? menu : null;
  }

  destroy(): void {
    this.destroyed = true;
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }
}

export const Tray = TrayDouble satisfies new (image: ElectronApi.NativeImage | string) => unknown;

// --- notifications ---------------------------------------------------------------------------------

export class NotificationDouble extends EventEmitter implements Pick<ElectronApi.Notification, 'show' | 'close' | 'title' | 'body' | 'silent'> {
  static isSupported(): boolean {
    return double.config.notificationsSupported;
  }

  title: string;
  body: string;
  silent: boolean;
  shown = false;
  closed = false;

  constructor(readonly options: ElectronApi.NotificationConstructorOptions = {}) {
    super();
    this.title = options.title ?? '';
    this.body = options.body ?? '';
    this.silent = options.silent ?? false;
    double.notifications.push(this);
  }

  show(): void {
    this.shown = true;
    this.closed = false;
    this.emit('show', electronEvent({}));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close', electronEvent({}));
  }

  /** A person clicks the notification. */
  click(): void {
    this.emit('click', electronEvent({}));
  }
}

export const Notification = NotificationDouble satisfies Pick<typeof ElectronApi.Notification, 'isSupported'> & (new (options?: ElectronApi.NotificationConstructorOptions) => unknown);

// --- session, keychain, shell, screen, dialogs -----------------------------------------------------

type HeadersListener = (details: ElectronApi.OnHeadersReceivedListenerDetails, callback: (response: ElectronApi.HeadersReceivedResponse) => void) => void;
type PermissionRequestHandler = Parameters<ElectronApi.Session['setPermissionRequestHandler']>[0];
type PermissionCheckHandler = Parameters<ElectronApi.Session['setPermissionCheckHandler']>[0];
type RequestedPermission = Parameters<NonNullable<PermissionRequestHandler>>[1];
type CheckedPermission = Parameters<NonNullable<PermissionCheckHandler>>[1];

class WebRequestDouble implements SameParams<ElectronApi.WebRequest, 'onHeadersReceived'> {
  listener: HeadersListener | null = null;

  onHeadersReceived = (listener: HeadersListener | null): void => {
    this.listener = listener;
  };
}

type ProtocolHandler = Parameters<ElectronApi.Protocol['handle']>[1];

/** A session's protocol: handlers of schemes, by name. Electron refuses a second handler. */
class ProtocolDouble implements SameParams<ElectronApi.Protocol, 'handle' | 'unhandle' | 'isProtocolHandled'> {
  private readonly handlers = new Map<string, ProtocolHandler>();

  handle(scheme: string, handler: ProtocolHandler): void {
    if (this.handlers.has(scheme)) throw new Error(`Failed to register protocol: ${scheme}`);
    this.handlers.set(scheme, handler);
  }

  unhandle(scheme: string): void {
    this.handlers.delete(scheme);
  }

  isProtocolHandled(scheme: string): boolean {
    return this.handlers.has(scheme);
  }

  /** The handler of `scheme`, answering as a Promise (Electron takes a Response or a promise of one). */
  handlerOf(scheme: string): ((request: Request) => Promise<Response>) | null {
    const handler = this.handlers.get(scheme);
    return handler ? async (request) => handler(request) : null;
  }

  /** A request of the page's, as Chromium makes it to the scheme's handler (a subresource, a reload). */
  async fetch(url: string, init?: RequestInit): Promise<Response> {
    const handler = this.handlerOf(new URL(url).protocol.slice(0, -1));
    if (!handler) throw new Error(`ERR_UNKNOWN_URL_SCHEME (-302) loading '${url}'`);
    return handler(new Request(url, init));
  }
}

export class SessionDouble implements Pick<ElectronApi.Session, 'setPermissionRequestHandler' | 'setPermissionCheckHandler'> {
  readonly webRequest = new WebRequestDouble();
  readonly protocol = new ProtocolDouble();
  private requestHandler: PermissionRequestHandler = null;
  private checkHandler: PermissionCheckHandler = null;

  setPermissionRequestHandler(handler: PermissionRequestHandler): void {
    this.requestHandler = handler;
  }

  setPermissionCheckHandler(handler: PermissionCheckHandler): void {
    this.checkHandler = handler;
  }

  /** A page asks for a permission (Notification.requestPermission, getUserMedia, ...). Electron
   * grants every permission when no handler is set. */
  requestPermission(contents: WebContentsDouble, permission: RequestedPermission): Promise<boolean> {
    const handler = this.requestHandler;
    if (!handler) return Promise.resolve(true);
    return new Promise((resolve) => {
      // The double's webContents stands in for Electron's: main.ts reads its URL.
      Reflect.apply(handler, undefined, [contents, permission, resolve, { isMainFrame: true, requestingUrl: contents.getURL() }]);
    });
  }

  /** A page checks a permission without asking (Notification.permission, navigator.permissions). */
  checkPermission(contents: WebContentsDouble | null, permission: CheckedPermission): boolean {
    const handler = this.checkHandler;
    if (!handler) return true;
    const result: unknown = Reflect.apply(handler, undefined, [contents, permission, contents ? new URL(contents.getURL()).origin : '', { isMainFrame: true, requestingUrl: contents?.getURL() }]);
    return result === true;
  }

  /** A response arrives for `url`: the headers the page gets, after onHeadersReceived. */
  respond(url: string, responseHeaders: Record<string, string[]>): Promise<Record<string, string | string[]>> {
    const listener = this.webRequest.listener;
    if (!listener) return Promise.resolve(responseHeaders);
    const details: ElectronApi.OnHeadersReceivedListenerDetails = { id: 1, url, method: 'GET', resourceType: 'mainFrame', referrer: '', timestamp: Date.now(), statusLine: 'HTTP/1.1 200 OK', statusCode: 200, responseHeaders };
    return new Promise((resolve) => listener(details, (r) => resolve(r.responseHeaders ?? responseHeaders)));
  }
}

export const session = { defaultSession: new SessionDouble() };

export const protocol = {
  /** Electron allows it only before the app is ready (it throws after). */
  registerSchemesAsPrivileged(customSchemes: ElectronApi.CustomScheme[]): void {
    if (app.isReady()) throw new Error('protocol.registerSchemesAsPrivileged should be called before app is ready');
    double.privilegedSchemes.push(...customSchemes.map((s) => structuredClone(s)));
  },
  handle: (scheme: string, handler: ProtocolHandler): void => session.defaultSession.protocol.handle(scheme, handler),
} satisfies SameParams<ElectronApi.Protocol, 'registerSchemesAsPrivileged' | 'handle'>;

export const safeStorage = {
  isEncryptionAvailable: (): boolean => double.config.encryptionAvailable,
  encryptString: (plainText: string): Buffer => Buffer.from(`keychain:${Buffer.from(plainText, 'utf8').toString('base64')}`, 'utf8'),
  decryptString: (encrypted: Buffer): string => {
    const text = encrypted.toString('utf8');
    if (!text.startsWith('keychain:')) throw new Error('Error while decrypting the ciphertext provided to safeStorage.decryptString.');
    return Buffer.from(text.slice('keychain:'.length), 'base64').toString('utf8');
  },
} satisfies Pick<ElectronApi.SafeStorage, 'isEncryptionAvailable' | 'encryptString' | 'decryptString'>;

export const shell = {
  openExternal: (url: string): Promise<void> => {
    double.openedExternally.push(url);
    return Promise.resolve();
  },
} satisfies Pick<ElectronApi.Shell, 'openExternal'>;

export const screen = {
  getAllDisplays: (): ElectronApi.Display[] => double.config.displays.map((d) => ({ ...d })),
  getPrimaryDisplay: (): ElectronApi.Display => {
    const first = double.config.displays[0];
    if (!first) throw new Error('no display');
    return { ...first };
  },
} satisfies Pick<ElectronApi.Screen, 'getAllDisplays' | 'getPrimaryDisplay'>;

export const dialog = {
  showErrorBox: (title: string, content: string): void => {
    double.errorBoxes.push({ title, content });
  },
} satisfies Pick<ElectronApi.Dialog, 'showErrorBox'>;
