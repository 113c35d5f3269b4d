/**
 * The preload of the sandboxed renderer: exposes exactly one object, `window.outreach`, implementing
 * the Bridge of electron/bridge.ts over IPC. Nothing else of Electron or Node reaches the page.
 */
import { contextBridge, ipcRenderer } from 'electron';
import type { IpcRendererEvent } from 'electron';
import { IPC_FROM_BACKEND, IPC_OPEN_EXTERNAL, IPC_TO_BACKEND } from './bridge.ts';
import type { Bridge, ClientMessage, Result, ServerMessage, SessionInfo, ShellCommand, SyncStatus } from './bridge.ts';

let nextId = 1;
const pending = new Map<number, (r: Result<unknown>) => void>();
const subs = new Map<number, (r: Result<unknown>) => void>();
const syncListeners = new Set<(s: SyncStatus) => void>();
const sessionListeners = new Set<(i: SessionInfo) => void>();
const commandListeners = new Set<(c: ShellCommand) => void>();
let lastSync: SyncStatus | null = null;

ipcRenderer.on(IPC_FROM_BACKEND, (_event: IpcRendererEvent, msg: ServerMessage) => {
  switch (msg.t) {
    case 'reply': {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      p?.(msg.result);
      return;
    }
    case 'push':
      subs.get(msg.id)?.(msg.result);
      return;
    case 'sync':
      lastSync = msg.status;
      for (const l of syncListeners) l(msg.status);
      return;
    case 'session':
      for (const l of sessionListeners) l(msg.info);
      return;
    case 'command':
      for (const l of commandListeners) l(msg.command);
      return;
  }
});

const send = (msg: ClientMessage) => ipcRenderer.send(IPC_TO_BACKEND, msg);

function request<T>(build: (id: number) => ClientMessage): Promise<Result<T>> {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve as (r: Result<unknown>) => void);
    send(build(id));
  });
}

const bridge = {
  platform: 'electron',
  call: (op, input) => request((id) => ({ t: 'call', id, op, input })),
  subscribe(op, input, listener) {
    const id = nextId++;
    subs.set(id, listener as (r: Result<unknown>) => void);
    send({ t: 'sub', id, op, input });
    return () => {
      subs.delete(id);
      send({ t: 'unsub', id });
    };
  },
  syncStatus: {
    subscribe(listener) {
      syncListeners.add(listener);
      if (lastSync) listener(lastSync);
      return () => syncListeners.delete(listener);
    },
  },
  session: {
    async get() {
      const r = await request<SessionInfo>((id) => ({ t: 'session', id, action: 'get' }));
      if (!r.ok) throw new Error(r.error.message);
      return r.value;
    },
    subscribe(listener) {
      sessionListeners.add(listener);
      return () => sessionListeners.delete(listener);
    },
    openDemo: () => request<SessionInfo>((id) => ({ t: 'session', id, action: 'openDemo' })),
    connect: (input) => request<SessionInfo>((id) => ({ t: 'session', id, action: 'connect', input })),
    close: () => request<SessionInfo>((id) => ({ t: 'session', id, action: 'close' })),
  },
  openExternal(url) {
    ipcRenderer.send(IPC_OPEN_EXTERNAL, String(url));
  },
  commands: {
    subscribe(listener) {
      commandListeners.add(listener);
      return () => commandListeners.delete(listener);
    },
  },
} satisfies Bridge;

contextBridge.exposeInMainWorld('outreach', bridge);
