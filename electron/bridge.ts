/**
 * The one bridge between the UI and the desktop backend, declared once. The Electron preload
 * (electron/preload.ts) and the browser's WebSocket bridge (renderer/src/bridge/ws-bridge.ts) both
 * implement `Bridge` with `satisfies`, and the backend speaks the message protocol below over IPC and
 * over WebSocket alike. Only types live here, so the renderer can import it without pulling Node in.
 */
import type { ErrorCode, ErrorDetails } from '../shared/errors.ts';
import type { OpInput, OpName, OpOutput } from '../shared/ops/index.ts';
import type { Role } from '../shared/model/index.ts';

/** Codes only the desktop produces (about its own connection, not about an operation). */
export type BridgeOnlyCode = 'SERVER_UNREACHABLE' | 'NO_WORKSPACE' | 'DISCONNECTED';

/** An error as it crosses a process boundary: a stable code, a sentence for people, and details. */
export type BridgeError = { code: ErrorCode | BridgeOnlyCode; message: string; details: ErrorDetails };

/** Every answer is a value or an error; nothing is thrown across the boundary, so no field is lost
 * to structured cloning of Error objects. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: BridgeError };

export type Unsubscribe = () => void;

export type WorkspaceKind = 'demo' | 'connected';

/** Which workspace the backend has open, and as whom. */
export type SessionInfo =
  | { state: 'none'; dataDir: string }
  /** A workspace is being opened and its data moved, once, into the current storage format. */
  | {
      state: 'opening';
      dataDir: string;
      workspaceId: string;
      workspaceName: string;
      /** Documents moved so far of all; then, with `indexing`, the indexes being built. */
      migration: { done: number; total: number; indexing: boolean };
    }
  | {
      state: 'open';
      kind: WorkspaceKind;
      dataDir: string;
      workspaceId: string;
      workspaceName: string;
      member: { id: string; name: string; role: Role };
      /** The sync server, for a connected workspace. */
      serverUrl: string | null;
      /** The public prefix of the key this desktop syncs with (never the secret), to mark it in lists. */
      apiKeyPrefix: string | null;
      /** Whether the outreach runner is sending for this workspace's senders on this machine. */
      runner: 'running' | 'stopped' | 'unavailable';
    };

export type SyncRefusal = { collection: string; documentId: string; code: string; message: string; at: string };

export type SyncStatus = {
  /** local: a demo workspace, nothing to sync with. */
  mode: 'local' | 'online' | 'offline' | 'connecting';
  /** Local changes the server has not acknowledged yet. */
  pending: number;
  lastSyncedAt: string | null;
  /** Changes the server refused, with its reasons (the local copy was put back). */
  refusals: SyncRefusal[];
  /** Why the connection is down, or why synced data cannot be stored (`stalled`), in words. */
  error: string | null;
  /** Pulled data could not be stored on this computer (a full disk): sync is stuck until it can. */
  stalled?: boolean;
  /** Long work under way, in words, while it runs: a pull of many pages ("Syncing leads: 12,000 of
   * 100,000 · about 3 min left"; "12,000 so far" from a server that gives no count), or an index
   * being built ("Building the index of leads by full name"). */
  activity?: string;
  /** That pull's documents received and the server's count of all it brings (the progress bar). */
  progress?: { done: number; total: number };
};

export type ConnectInput = { url: string; apiKey: string };

/** What the desktop shell's menu asks the UI to do; `open-lead` is a click on a reminder. */
export type ShellCommand =
  | { kind: 'go'; screen: 'leads' | 'pipeline' | 'tasks' | 'triage' | 'settings' }
  | { kind: 'palette' | 'import-csv' | 'export-csv' | 'shortcuts' }
  | { kind: 'open-lead'; leadId: string };

/** A desktop notification the UI asks for (a task reminder). A notice with the same tag replaces
 * the previous one; clicking it opens `leadId`'s lead. */
export type Notice = { title: string; body: string; tag: string; leadId: string | null };

/** The longest texts a notice carries: the main process refuses longer ones, the UI shortens its
 * texts to fit. */
export const NOTICE_LIMITS = { title: 120, body: 600, tag: 120, leadId: 64 } as const;

/** What the renderer sees as `window.outreach`. */
export type Bridge = {
  readonly platform: 'electron' | 'web';
  /** Runs one operation of shared/ops for the signed-in member against the local database. */
  call<N extends OpName>(op: N, input: OpInput<N>): Promise<Result<OpOutput<N>>>;
  /** Runs a read operation now and again whenever the data it read changes; the listener gets each
   * new answer (an unchanged answer is not repeated). */
  subscribe<N extends OpName>(op: N, input: OpInput<N>, listener: (result: Result<OpOutput<N>>) => void): Unsubscribe;
  syncStatus: {
    subscribe(listener: (status: SyncStatus) => void): Unsubscribe;
  };
  session: {
    get(): Promise<SessionInfo>;
    subscribe(listener: (info: SessionInfo) => void): Unsubscribe;
    /** Creates (first time) or reopens the local demo workspace with the sandbox network. */
    openDemo(): Promise<Result<SessionInfo>>;
    connect(input: ConnectInput): Promise<Result<SessionInfo>>;
    /** Closes the workspace (its data stays on disk) and returns to the first-run choice. */
    close(): Promise<Result<SessionInfo>>;
  };
  /** Opens a link in the system browser (never inside the app window). */
  openExternal(url: string): void;
  /** Shows a desktop notification: the desktop app's own (from its main process), or the browser's
   * in a tab, which asks for permission the first time. Clicking it brings the app forward and sends
   * the `open-lead` command. Resolves false when notifications are unavailable or refused. */
  notify(notice: Notice): Promise<boolean>;
  /** Menu and notification commands (in a plain browser, only a notification's click). */
  commands: {
    subscribe(listener: (command: ShellCommand) => void): Unsubscribe;
  };
};

/** Messages from the UI to the backend, over Electron IPC or the web host's WebSocket. */
export type ClientMessage =
  | { t: 'call'; id: number; op: string; input: unknown }
  | { t: 'sub'; id: number; op: string; input: unknown }
  | { t: 'unsub'; id: number }
  | { t: 'session'; id: number; action: 'get' | 'openDemo' | 'close' }
  | { t: 'session'; id: number; action: 'connect'; input: ConnectInput };

/** Messages from the backend to the UI. `push` answers a subscription; `sync` and `session` are
 * broadcast to every connected UI. */
export type ServerMessage =
  | { t: 'reply'; id: number; result: Result<unknown> }
  | { t: 'push'; id: number; result: Result<unknown> }
  | { t: 'sync'; status: SyncStatus }
  | { t: 'session'; info: SessionInfo }
  | { t: 'command'; command: ShellCommand };

/** The IPC channel names the preload and main agree on. */
export const IPC_TO_BACKEND = 'outreach:to-backend';
export const IPC_FROM_BACKEND = 'outreach:from-backend';
export const IPC_OPEN_EXTERNAL = 'outreach:open-external';
/** invoke: a Notice in, whether it was shown out. */
export const IPC_NOTIFY = 'outreach:notify';
