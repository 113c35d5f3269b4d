/**
 * The client half of the bridge protocol, shared by the Electron preload (over IPC) and the browser
 * (over the web host's WebSocket): request ids, calls awaiting their reply, live subscriptions and
 * the sync, session and command listeners. A transport only moves messages.
 */
import type { Bridge, BridgeError, ClientMessage, Notice, Result, ServerMessage, SessionInfo, ShellCommand, SyncStatus } from './bridge.ts';

export type BridgeTransport = {
  platform: Bridge['platform'];
  send(msg: ClientMessage): void;
  openExternal(url: string): void;
  /** Shows the notice; `clicked` runs when a person clicks it. (The desktop's main process sends the
   * click back as an `open-lead` command instead, so its transport never calls `clicked`.) */
  notify(notice: Notice, clicked: () => void): Promise<boolean>;
};

export type BridgeClient = {
  bridge: Bridge;
  /** Hands a message from the backend to whoever waits for it. */
  receive(msg: ServerMessage): void;
  /** The subscribe messages of every live subscription, to send again on a new connection. */
  resubscriptions(): ClientMessage[];
  /** Answers every call still waiting with this error (the connection dropped). */
  failPending(error: BridgeError): void;
};

type SubEntry = { op: string; input: unknown; listener: (r: Result<unknown>) => void };

export function createBridgeClient(transport: BridgeTransport): BridgeClient {
  let nextId = 1;
  const pending = new Map<number, (r: Result<unknown>) => void>();
  const subs = new Map<number, SubEntry>();
  const syncListeners = new Set<(s: SyncStatus) => void>();
  const sessionListeners = new Set<(i: SessionInfo) => void>();
  const commandListeners = new Set<(c: ShellCommand) => void>();
  let lastSync: SyncStatus | null = null;

  function command(c: ShellCommand): void {
    for (const l of commandListeners) l(c);
  }

  function request<T>(build: (id: number) => ClientMessage): Promise<Result<T>> {
    const id = nextId++;
    return new Promise((resolve) => {
      pending.set(id, resolve as (r: Result<unknown>) => void);
      transport.send(build(id));
    });
  }

  const bridge = {
    platform: transport.platform,
    call: (op, input) => request((id) => ({ t: 'call', id, op, input })),
    subscribe(op, input, listener) {
      const id = nextId++;
      subs.set(id, { op, input, listener: listener as (r: Result<unknown>) => void });
      transport.send({ t: 'sub', id, op, input });
      return () => {
        subs.delete(id);
        transport.send({ t: 'unsub', id });
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
    openExternal: (url) => transport.openExternal(String(url)),
    notify: (notice) => transport.notify(notice, () => {
      if (notice.leadId !== null) command({ kind: 'open-lead', leadId: notice.leadId });
    }),
    commands: {
      // The desktop's menu and notifications send commands; in a browser tab only a click on one of
      // the browser's notifications does.
      subscribe(listener) {
        commandListeners.add(listener);
        return () => commandListeners.delete(listener);
      },
    },
  } satisfies Bridge;

  return {
    bridge,
    receive(msg) {
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
          command(msg.command);
          return;
      }
    },
    resubscriptions: () => [...subs].map(([id, s]): ClientMessage => ({ t: 'sub', id, op: s.op, input: s.input })),
    failPending(error) {
      for (const [id, p] of pending) {
        pending.delete(id);
        p({ ok: false, error });
      }
    },
  };
}
