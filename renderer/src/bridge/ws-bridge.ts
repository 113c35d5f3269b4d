/**
 * The bridge over the web host's WebSocket, for a plain browser. Same type as the Electron preload's.
 * When the socket drops (the host restarted), calls in flight fail with DISCONNECTED, the socket is
 * reopened with backoff and every live subscription is sent again.
 */
import type { Bridge, ClientMessage, Result, ServerMessage, SessionInfo, SyncStatus } from '../../../electron/bridge.ts';

type Pending = (result: Result<unknown>) => void;
type SubEntry = { op: string; input: unknown; listener: (r: Result<unknown>) => void };

export type ConnectionState = 'connecting' | 'open' | 'closed';

export function createWsBridge(url: string, onConnection?: (state: ConnectionState) => void): Bridge {
  let ws: WebSocket | null = null;
  let nextId = 1;
  let retry = 0;
  const pending = new Map<number, Pending>();
  const subs = new Map<number, SubEntry>();
  const outbox: ClientMessage[] = [];
  const syncListeners = new Set<(s: SyncStatus) => void>();
  const sessionListeners = new Set<(i: SessionInfo) => void>();
  let lastSync: SyncStatus | null = null;

  function send(msg: ClientMessage): void {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
    else outbox.push(msg);
  }

  function connect(): void {
    onConnection?.('connecting');
    const socket = new WebSocket(url);
    ws = socket;
    socket.onopen = () => {
      retry = 0;
      onConnection?.('open');
      // Subscriptions outlive the socket: ask again for each (the backend answers with fresh data).
      for (const [id, s] of subs) socket.send(JSON.stringify({ t: 'sub', id, op: s.op, input: s.input } satisfies ClientMessage));
      for (const m of outbox.splice(0)) socket.send(JSON.stringify(m));
    };
    socket.onmessage = (ev) => {
      let msg: ServerMessage;
      try {
        msg = JSON.parse(String(ev.data)) as ServerMessage;
      } catch {
        return;
      }
      switch (msg.t) {
        case 'reply': {
          const p = pending.get(msg.id);
          pending.delete(msg.id);
          p?.(msg.result);
          return;
        }
        case 'push':
          subs.get(msg.id)?.listener(msg.result);
          return;
        case 'sync':
          lastSync = msg.status;
          for (const l of syncListeners) l(msg.status);
          return;
        case 'session':
          for (const l of sessionListeners) l(msg.info);
          return;
        case 'command':
          return;
      }
    };
    socket.onclose = () => {
      if (ws !== socket) return;
      ws = null;
      onConnection?.('closed');
      for (const [id, p] of pending) {
        pending.delete(id);
        p({ ok: false, error: { code: 'DISCONNECTED', message: 'The connection to the app backend dropped before it answered; check whether the change was made, then try again.', details: {} } });
      }
      retry = Math.min(retry + 1, 6);
      setTimeout(connect, 250 * 2 ** retry);
    };
  }

  function request<T>(build: (id: number) => ClientMessage): Promise<Result<T>> {
    const id = nextId++;
    return new Promise((resolve) => {
      pending.set(id, resolve as Pending);
      send(build(id));
    });
  }

  connect();

  const bridge = {
    platform: 'web',
    call: (op, input) => request((id) => ({ t: 'call', id, op, input })),
    subscribe(op, input, listener) {
      const id = nextId++;
      subs.set(id, { op, input, listener: listener as (r: Result<unknown>) => void });
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
    openExternal(link) {
      window.open(link, '_blank', 'noopener,noreferrer');
    },
    commands: {
      // A browser tab has no application menu; its shortcuts are handled in the page.
      subscribe: () => () => undefined,
    },
  } satisfies Bridge;
  return bridge;
}
