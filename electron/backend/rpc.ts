/**
 * One UI connection to the backend (an Electron window over IPC, or a browser tab over WebSocket):
 * answers the bridge's messages and owns that connection's subscriptions, which end with it.
 */
import type { ClientMessage, Result, ServerMessage } from '../bridge.ts';
import { toBridgeError } from './backend.ts';
import type { Backend } from './backend.ts';

export type RpcConnection = {
  receive(raw: unknown): void;
  close(): void;
};

function isClientMessage(m: unknown): m is ClientMessage {
  if (m === null || typeof m !== 'object') return false;
  const { t, id } = m as { t?: unknown; id?: unknown };
  return typeof id === 'number' && (t === 'call' || t === 'sub' || t === 'unsub' || t === 'session');
}

export function openRpcConnection(backend: Backend, send: (msg: ServerMessage) => void, log: (line: string) => void = () => undefined): RpcConnection {
  const subs = new Map<number, () => void>();
  let closed = false;
  const out = (msg: ServerMessage) => {
    if (!closed) send(msg);
  };
  const stopSync = backend.onSyncStatus((status) => out({ t: 'sync', status }));
  const stopSession = backend.onSession((info) => out({ t: 'session', info }));

  async function session(msg: Extract<ClientMessage, { t: 'session' }>): Promise<Result<unknown>> {
    try {
      switch (msg.action) {
        case 'get':
          return { ok: true, value: backend.session.info() };
        case 'openDemo':
          return { ok: true, value: await backend.session.openDemo() };
        case 'connect':
          return { ok: true, value: await backend.session.connect(msg.input) };
        case 'close':
          return { ok: true, value: await backend.session.close() };
      }
    } catch (e) {
      return { ok: false, error: toBridgeError(e, log) };
    }
  }

  return {
    receive(raw) {
      if (closed) return;
      if (!isClientMessage(raw)) {
        log(`Ignored a malformed bridge message: ${JSON.stringify(raw).slice(0, 200)}`);
        return;
      }
      const msg = raw;
      switch (msg.t) {
        case 'call':
          void backend.call(msg.op, msg.input).then((result) => out({ t: 'reply', id: msg.id, result }));
          return;
        case 'sub':
          subs.get(msg.id)?.();
          subs.set(msg.id, backend.subscribe(msg.op, msg.input, (result) => out({ t: 'push', id: msg.id, result })));
          return;
        case 'unsub':
          subs.get(msg.id)?.();
          subs.delete(msg.id);
          return;
        case 'session':
          void session(msg).then((result) => out({ t: 'reply', id: msg.id, result }));
          return;
      }
    },
    close() {
      closed = true;
      for (const stop of subs.values()) stop();
      subs.clear();
      stopSync();
      stopSession();
    },
  };
}
