/**
 * The backend's thread (started by backend-thread.ts from the Electron main process): the desktop
 * backend of desktop.ts, answering one bridge connection per window (rpc.ts), with the credential
 * store's reads and writes done by the main process (the OS keychain is Electron's).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { Backend } from './backend.ts';
import type { BackendWorkerData, CredentialOp, FromBackend, ToBackend } from './backend-thread.ts';
import type { CredentialStore } from './credentials.ts';
import { createDesktopBackend } from './desktop.ts';
import { openRpcConnection } from './rpc.ts';
import type { RpcConnection } from './rpc.ts';
import { keepWasmInBaseline } from './wasm-tiering.ts';

keepWasmInBaseline();

function threadPort(): MessagePort {
  if (!parentPort) throw new Error('backend-worker.ts runs as a worker thread (electron/backend/backend-thread.ts).');
  return parentPort;
}
const port = threadPort();
const data = workerData as BackendWorkerData;
const post = (m: FromBackend): void => port.postMessage(m);
const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));

const asked = new Map<number, { resolve: (v: string | null) => void; reject: (e: Error) => void }>();
let nextAsk = 1;
function ask(op: CredentialOp, name: string, secret: string | null = null): Promise<string | null> {
  const id = nextAsk++;
  return new Promise((resolve, reject) => {
    asked.set(id, { resolve, reject });
    post({ t: 'credential', id, op, name, secret });
  });
}

/** The main process's credential store, through messages. */
const credentials: CredentialStore = {
  protection: data.protection,
  get: (name) => ask('get', name),
  set: async (name, secret) => {
    await ask('set', name, secret);
  },
  delete: async (name) => {
    await ask('delete', name);
  },
};

let backend: Backend | null = null;
const connections = new Map<number, RpcConnection>();
let closing = false;

port.on('message', (m: ToBackend) => {
  switch (m.t) {
    case 'credential': {
      const waiting = asked.get(m.id);
      asked.delete(m.id);
      if (m.ok) waiting?.resolve(m.value);
      else waiting?.reject(new Error(m.message));
      return;
    }
    case 'open': {
      if (!backend || closing) return;
      const conn = m.conn;
      connections.set(conn, openRpcConnection(backend, (msg) => post({ t: 'out', conn, msg }), (line) => console.error(line)));
      return;
    }
    case 'msg':
      connections.get(m.conn)?.receive(m.msg);
      return;
    case 'drop':
      connections.get(m.conn)?.close();
      connections.delete(m.conn);
      return;
    case 'close':
      void close();
      return;
  }
});

async function close(): Promise<void> {
  if (closing) return;
  closing = true;
  for (const c of connections.values()) c.close();
  connections.clear();
  try {
    await backend?.close();
    post({ t: 'closed' });
  } catch (e) {
    post({ t: 'close-failed', message: errorMessage(e) });
  }
}

try {
  backend = await createDesktopBackend({ dataDir: data.dataDir, credentials });
  post({ t: 'ready' });
} catch (e) {
  post({ t: 'failed', message: errorMessage(e) });
}
