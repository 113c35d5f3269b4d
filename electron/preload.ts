/**
 * The preload of the sandboxed renderer: exposes exactly one object, `window.outreach`, implementing
 * the Bridge of electron/bridge.ts over IPC. Nothing else of Electron or Node reaches the page.
 */
import { contextBridge, ipcRenderer } from 'electron';
import type { IpcRendererEvent } from 'electron';
import { IPC_FROM_BACKEND, IPC_NOTIFY, IPC_OPEN_EXTERNAL, IPC_TO_BACKEND } from './bridge.ts';
import type { ServerMessage } from './bridge.ts';
import { createBridgeClient } from './bridge-client.ts';

const client = createBridgeClient({
  platform: 'electron',
  send: (msg) => ipcRenderer.send(IPC_TO_BACKEND, msg),
  openExternal: (url) => ipcRenderer.send(IPC_OPEN_EXTERNAL, url),
  // The main process shows it, and sends a click back as an open-lead command.
  notify: (notice) => ipcRenderer.invoke(IPC_NOTIFY, notice).then((shown: unknown) => shown === true, () => false),
});

ipcRenderer.on(IPC_FROM_BACKEND, (_event: IpcRendererEvent, msg: ServerMessage) => client.receive(msg));

contextBridge.exposeInMainWorld('outreach', client.bridge);
