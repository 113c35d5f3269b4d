/**
 * The renderer side of the Electron double: one page in a window, its preload's `ipcRenderer` and
 * `contextBridge`, and what the preload exposed to the page. Messages cross between the page and the
 * main process by structured clone, asynchronously, as Electron's IPC does; `contextBridge` copies
 * what it exposes the way Electron's does (functions proxied, objects copied by their own
 * enumerable properties, prototypes dropped), so a bridge that only works with its prototype, or
 * that hands the page a Node or Electron object, shows up in tests.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { runInThisContext } from 'node:vm';
import type * as ElectronApi from 'electron';
import type { SameParams } from './types.ts';

type RendererListener = (event: ElectronApi.IpcRendererEvent, ...args: unknown[]) => void;

/** What a page needs from the main side of the double: a way to send and to invoke. */
export type MainIpcPort = {
  send(from: PageDouble, channel: string, args: unknown[]): void;
  invoke(from: PageDouble, channel: string, args: unknown[]): Promise<unknown>;
};

/** Modules a sandboxed preload may require besides `electron` (Electron's sandbox rules). */
const SANDBOX_MODULES = new Set(['events', 'timers', 'url']);

export class PageDouble {
  /** What the preload put on the page's `window`, as the page sees it (copied by the bridge). */
  readonly world: Record<string, unknown> = {};
  /** The keys of each exposeInMainWorld call, in order. */
  readonly exposedKeys: string[] = [];
  /** What the preload passed to exposeInMainWorld, before the bridge copied it (to look for what
   * must not cross: a copy no longer shows which object it came from). */
  readonly exposedOriginals: Record<string, unknown> = {};
  /** Set when another page took this one's place in the window (webContents.replacePage). */
  movedTo: string | null = null;
  private readonly listeners = new Map<string, Set<RendererListener>>();
  private readonly require = createRequire(import.meta.url);

  readonly ipcRenderer: IpcRendererDouble;
  readonly contextBridge: ContextBridgeDouble;

  constructor(
    /** The URL the page was loaded from (the webContents' URL may change under it). */
    readonly url: string,
    readonly contextIsolation: boolean,
    private readonly main: MainIpcPort,
  ) {
    this.ipcRenderer = new IpcRendererDouble(this);
    this.contextBridge = new ContextBridgeDouble(this);
  }

  /** A message from the main process (webContents.send) arrives at the preload's listeners. */
  deliver(channel: string, args: unknown[]): void {
    const event = rendererEvent(this.ipcRenderer);
    // The double's event stands in for Electron's IpcRendererEvent (the preload reads none of it).
    for (const l of this.listeners.get(channel) ?? []) Reflect.apply(l, undefined, [event, ...args]);
  }

  listen(channel: string, listener: RendererListener): void {
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
  }

  unlisten(channel: string, listener: RendererListener): void {
    this.listeners.get(channel)?.delete(listener);
  }

  sendToMain(channel: string, args: unknown[]): void {
    this.main.send(this, channel, args);
  }

  invokeMain(channel: string, args: unknown[]): Promise<unknown> {
    return this.main.invoke(this, channel, args);
  }

  /**
   * Runs a bundled preload (build/electron/preload.cjs) as Electron's sandbox does: CommonJS, with a
   * `require` that gives `electron` (this page's ipcRenderer and contextBridge) and the few modules
   * the sandbox allows, and refuses every other module, and a `process` without Node's powers.
   */
  runSandboxedPreload(file: string): void {
    const electron = { ipcRenderer: this.ipcRenderer, contextBridge: this.contextBridge };
    const sandboxRequire = (id: string): unknown => {
      if (id === 'electron') return electron;
      if (SANDBOX_MODULES.has(id)) return this.require(id);
      throw new Error(`Cannot find module '${id}': a sandboxed preload can require only electron, ${[...SANDBOX_MODULES].join(', ')}`);
    };
    const sandboxProcess = { platform: process.platform, versions: { ...process.versions }, env: {}, type: 'renderer', sandboxed: true, contextIsolated: this.contextIsolation };
    const module = { exports: {} };
    const wrapper: unknown = runInThisContext(`(function (exports, require, module, __filename, __dirname, process) {${readFileSync(file, 'utf8')}\n})`, { filename: file });
    if (typeof wrapper !== 'function') throw new Error('the preload wrapper did not compile to a function');
    Reflect.apply(wrapper, undefined, [module.exports, sandboxRequire, module, file, dirname(file), sandboxProcess]);
  }
}

function rendererEvent(sender: IpcRendererDouble) {
  let prevented = false;
  return {
    sender,
    ports: [],
    preventDefault: () => {
      prevented = true;
    },
    get defaultPrevented() {
      return prevented;
    },
  };
}

export class IpcRendererDouble implements SameParams<ElectronApi.IpcRenderer, 'send' | 'invoke' | 'on' | 'removeListener'> {
  constructor(private readonly page: PageDouble) {}

  send = (channel: string, ...args: unknown[]): void => {
    // Electron clones the arguments before they leave the renderer: a function or a DOM node throws here.
    this.page.sendToMain(channel, structuredClone(args));
  };

  invoke = (channel: string, ...args: unknown[]): Promise<unknown> => this.page.invokeMain(channel, structuredClone(args));

  on = (channel: string, listener: (event: ElectronApi.IpcRendererEvent, ...args: unknown[]) => void): this => {
    this.page.listen(channel, listener);
    return this;
  };

  removeListener = (channel: string, listener: (event: ElectronApi.IpcRendererEvent, ...args: unknown[]) => void): this => {
    this.page.unlisten(channel, listener);
    return this;
  };
}

export class ContextBridgeDouble implements SameParams<ElectronApi.ContextBridge, 'exposeInMainWorld'> {
  constructor(private readonly page: PageDouble) {}

  exposeInMainWorld = (apiKey: string, api: unknown): void => {
    if (!this.page.contextIsolation) throw new Error('contextBridge API can only be used when contextIsolation is enabled');
    if (apiKey in this.page.world) throw new Error(`Cannot bind an API on top of an existing property on the window object: ${apiKey}`);
    this.page.exposedKeys.push(apiKey);
    this.page.exposedOriginals[apiKey] = api;
    this.page.world[apiKey] = bridgeCopy(api, 0);
  };
}

/**
 * What crosses contextBridge: primitives as they are; functions as proxies whose arguments and
 * results cross again (a promise's value too); arrays and objects copied by their own enumerable
 * properties, without their prototype (a class instance arrives as a plain object). Symbols and
 * values nested deeper than Electron's limit cannot cross.
 */
export function bridgeCopy(value: unknown, depth: number): unknown {
  if (depth > 1000) throw new Error('contextBridge: object graph too deep to copy');
  if (value === null || value === undefined) return value;
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'bigint':
      return value;
    case 'symbol':
      throw new Error('contextBridge: a Symbol cannot be copied');
    case 'function': {
      const fn = value;
      return (...args: unknown[]) => {
        const result: unknown = Reflect.apply(fn, undefined, args.map((a) => bridgeCopy(a, 0)));
        if (isThenable(result)) return result.then((v) => bridgeCopy(v, 0));
        return bridgeCopy(result, 0);
      };
    }
    case 'object': {
      if (isThenable(value)) return value.then((v) => bridgeCopy(v, 0));
      if (value instanceof Error || value instanceof Date || value instanceof RegExp || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return structuredClone(value);
      if (Array.isArray(value)) return value.map((v) => bridgeCopy(v, depth + 1));
      const copy: Record<string, unknown> = {};
      for (const key of Object.keys(value)) copy[key] = bridgeCopy(Reflect.get(value, key), depth + 1);
      return copy;
    }
    default:
      throw new Error(`contextBridge: cannot copy a ${typeof value}`);
  }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof Reflect.get(v, 'then') === 'function';
}
