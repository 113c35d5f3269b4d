/** The bridge this window talks through: the Electron preload's when present, else the web host's
 * WebSocket. Either way it is also `window.outreach`, the one entry point (tests drive it too). */
import type { Bridge } from '../../../electron/bridge.ts';
import { createWsBridge } from './ws-bridge.ts';
import type { ConnectionState } from './ws-bridge.ts';

declare global {
  // Only an interface can add a property to the DOM's Window.
  // eslint-disable-next-line @typescript-eslint/consistent-type-definitions
  interface Window {
    outreach?: Bridge;
  }
}

const connectionListeners = new Set<(s: ConnectionState) => void>();
let connection: ConnectionState = 'open';

function pick(): Bridge {
  if (window.outreach) return window.outreach;
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/rpc`;
  const b = createWsBridge(url, (s) => {
    connection = s;
    for (const l of connectionListeners) l(s);
  });
  window.outreach = b;
  return b;
}

export const bridge: Bridge = pick();

/** The web host's socket state (always open under Electron). */
export const backendConnection = {
  get: (): ConnectionState => connection,
  subscribe(listener: (s: ConnectionState) => void): () => void {
    connectionListeners.add(listener);
    return () => connectionListeners.delete(listener);
  },
};
