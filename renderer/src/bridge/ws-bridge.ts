/**
 * The bridge over the web host's WebSocket, for a plain browser. Same type as the Electron preload's.
 * When the socket drops (the host restarted), calls in flight fail with DISCONNECTED, the socket is
 * reopened with backoff and every live subscription is sent again.
 */
import type { Bridge, ClientMessage, ServerMessage } from '../../../electron/bridge.ts';
import { createBridgeClient } from '../../../electron/bridge-client.ts';
import { browserNotify } from './browser-notify.ts';

export type ConnectionState = 'connecting' | 'open' | 'closed';

export function createWsBridge(url: string, onConnection?: (state: ConnectionState) => void): Bridge {
  let ws: WebSocket | null = null;
  let retry = 0;
  const outbox: ClientMessage[] = [];

  function send(msg: ClientMessage): void {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
    else outbox.push(msg);
  }

  const client = createBridgeClient({
    platform: 'web',
    send,
    openExternal: (link) => void window.open(link, '_blank', 'noopener,noreferrer'),
    notify: browserNotify,
  });

  function connect(): void {
    onConnection?.('connecting');
    const socket = new WebSocket(url);
    ws = socket;
    socket.onopen = () => {
      retry = 0;
      onConnection?.('open');
      // Subscriptions outlive the socket: ask again for each (the backend answers with fresh data).
      // Queued subscribe messages are already among them, so only the rest of the outbox follows.
      const again = client.resubscriptions();
      const queued = outbox.splice(0).filter((m) => m.t !== 'sub' && m.t !== 'unsub');
      for (const m of [...again, ...queued]) socket.send(JSON.stringify(m));
    };
    socket.onmessage = (ev) => {
      let msg: ServerMessage;
      try {
        msg = JSON.parse(String(ev.data)) as ServerMessage;
      } catch {
        return;
      }
      client.receive(msg);
    };
    socket.onclose = () => {
      if (ws !== socket) return;
      ws = null;
      onConnection?.('closed');
      client.failPending({ code: 'DISCONNECTED', message: 'The connection to the app backend dropped before it answered; check whether the change was made, then try again.', details: {} });
      retry = Math.min(retry + 1, 6);
      setTimeout(connect, 250 * 2 ** retry);
    };
  }

  connect();
  return client.bridge;
}
