/**
 * The bridge over the web host's WebSocket, for a plain browser. Same type as the Electron preload's.
 * When the socket drops (the host restarted), calls in flight fail with DISCONNECTED, the socket is
 * reopened with backoff and every live subscription is sent again.
 */
import type { Bridge, ClientMessage, ServerMessage } from '../../../electron/bridge.ts';
import { createBridgeClient } from '../../../electron/bridge-client.ts';
import { browserNotify } from './browser-notify.ts';

export type ConnectionState = 'connecting' | 'open' | 'closed';

/** What a socket sends as it opens. Subscriptions outlive the socket: each live one is asked for
 * again (the backend answers with fresh data), those of an earlier socket first. Then what was
 * queued while it opened, in the order it was given: the page's entry asks for the session before
 * the first screen's data, and the session's answer (immediate) must not wait behind their
 * queries, since the first paint needs it. A queued subscription that has ended since is left out,
 * with its unsubscribe. */
export function openingMessages(live: readonly ClientMessage[], queued: readonly ClientMessage[]): ClientMessage[] {
  const liveIds = new Set(live.map((m) => m.id));
  const queuedSubs = new Set(queued.filter((m) => m.t === 'sub').map((m) => m.id));
  return [
    ...live.filter((m) => !queuedSubs.has(m.id)),
    ...queued.filter((m) => (m.t !== 'sub' && m.t !== 'unsub') || (m.t === 'sub' && liveIds.has(m.id))),
  ];
}

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
      for (const m of openingMessages(client.resubscriptions(), outbox.splice(0))) socket.send(JSON.stringify(m));
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
