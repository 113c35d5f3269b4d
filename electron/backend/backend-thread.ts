/**
 * The desktop backend in a worker thread of the Electron main process (electron/main.ts starts it,
 * backend-worker.ts is the thread's side). Two reasons:
 * - its memory: the backend's V8 isolate is the thread's own, and a worker's heap limits can be set
 *   when it starts (`resourceLimits`), which the main process's own isolate cannot (its V8 flags are
 *   given on Electron's command line at launch only). Both generations are capped (below): in one
 *   isolate with V8's defaults, a 100k sync left a 34 MB young generation and 90 MB of old space for
 *   ~35 MB of live objects (README, "Desktop storage", Memory);
 * - its blocking work (SQLite statements, a pulled page's transaction) no longer holds the thread
 *   that runs Electron's windows, menus, tray and IPC.
 * The main process keeps what needs Electron: the OS keychain (the thread asks for the credential
 * store's reads and writes), windows, notifications. Bridge messages pass through unchanged: the
 * thread validates them (rpc.ts), as it did in-process.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ResourceLimits } from 'node:worker_threads';
import type { ServerMessage } from '../bridge.ts';
import type { CredentialStore } from './credentials.ts';

/** The backend isolate's young generation, MB (V8 splits it into three semi-spaces: 8 MB each, as
 * `--max-semi-space-size=8` gives a whole process; node 24's default is 192 MB, 64 MB semi-spaces).
 * Measured by the desktop bench's hosting lines. */
export const BACKEND_YOUNG_GENERATION_MB = 24;
/** The backend isolate's old generation limit, MB (V8's default here is 4096). Past it the thread
 * runs out of memory (main then says so and exits: BackendThreadOptions.onExit); the backend holds
 * ~35-50 MB of live objects after a 100k sync. The limit matters below it: V8 lets the old
 * generation grow to its live size times a factor that shrinks with the limit (at most 4x from a
 * 2 GB limit, 1.6x at 1 GB, 1.3x at 256 MB), so garbage of the sync's pages is collected at ~40 MB
 * of old space instead of ~90 MB. */
export const BACKEND_OLD_GENERATION_MB = 1024;

/** What the thread is started with. */
export type BackendWorkerData = { dataDir: string; protection: string };

export type CredentialOp = 'get' | 'set' | 'delete';

/** Main -> thread. */
export type ToBackend =
  | { t: 'open'; conn: number }
  | { t: 'msg'; conn: number; msg: unknown }
  | { t: 'drop'; conn: number }
  | { t: 'credential'; id: number; ok: true; value: string | null }
  | { t: 'credential'; id: number; ok: false; message: string }
  | { t: 'close' };

/** Thread -> main. */
export type FromBackend =
  | { t: 'ready' }
  | { t: 'failed'; message: string }
  | { t: 'out'; conn: number; msg: ServerMessage }
  | { t: 'credential'; id: number; op: CredentialOp; name: string; secret: string | null }
  | { t: 'closed' }
  | { t: 'close-failed'; message: string };

/** One UI connection to the backend in the thread (as rpc.ts's RpcConnection). */
export type ThreadConnection = { receive(raw: unknown): void; close(): void };

export type BackendThreadOptions = {
  /** The thread's module: build/electron/backend-worker.mjs, or electron/backend/backend-worker.ts
   * when main runs from its sources (tests), loaded through tsx. */
  entry: string;
  dataDir: string;
  /** The main process's store (the OS keychain): the thread reads and writes through it. */
  credentials: CredentialStore;
  /** Called once if the thread ends when it was not asked to (a crash, or out of memory). */
  onExit?: (error: Error) => void;
  log?: (line: string) => void;
  /** Default: young generation BACKEND_YOUNG_GENERATION_MB, old BACKEND_OLD_GENERATION_MB, the rest V8's defaults. */
  resourceLimits?: ResourceLimits;
};

const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));

export class BackendThread {
  private readonly connections = new Map<number, (msg: ServerMessage) => void>();
  private nextConn = 1;
  private closing: Promise<void> | null = null;
  private ended = false;
  private readonly closeWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];

  private constructor(
    /** The worker (its `resourceLimits` and `threadId` say where and how the backend runs). */
    readonly thread: Worker,
    private readonly opts: BackendThreadOptions,
  ) {}

  /** Starts the thread and resolves once its backend is up (the saved workspace reopened); rejects
   * with the backend's own message when it could not start. */
  static async start(opts: BackendThreadOptions): Promise<BackendThread> {
    const workerData: BackendWorkerData = { dataDir: opts.dataDir, protection: opts.credentials.protection };
    const common = { workerData, resourceLimits: opts.resourceLimits ?? { maxYoungGenerationSizeMb: BACKEND_YOUNG_GENERATION_MB, maxOldGenerationSizeMb: BACKEND_OLD_GENERATION_MB } };
    const worker = opts.entry.endsWith('.ts')
      ? new Worker(sourceBootstrap(opts.entry), { ...common, eval: true })
      : new Worker(opts.entry, common);
    const host = new BackendThread(worker, opts);
    await host.started();
    return host;
  }

  /** A connection for one window; `send` gets the backend's messages for it. */
  connect(send: (msg: ServerMessage) => void): ThreadConnection {
    const conn = this.nextConn++;
    this.connections.set(conn, send);
    this.post({ t: 'open', conn });
    return {
      receive: (msg) => {
        if (this.connections.has(conn)) this.post({ t: 'msg', conn, msg });
      },
      close: () => {
        if (this.connections.delete(conn)) this.post({ t: 'drop', conn });
      },
    };
  }

  /** Closes the backend (the runner, sync and database, as Backend.close) and ends the thread. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.connections.clear();
      if (this.ended) return;
      const closed = new Promise<void>((resolve, reject) => this.closeWaiters.push({ resolve, reject }));
      this.post({ t: 'close' });
      await closed;
      this.ended = true;
      await this.thread.terminate();
    })();
    return this.closing;
  }

  private started(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let up = false;
      this.thread.on('message', (m: FromBackend) => {
        switch (m.t) {
          case 'ready':
            up = true;
            resolve();
            return;
          case 'failed':
            this.ended = true;
            void this.thread.terminate();
            reject(new Error(m.message));
            return;
          case 'out':
            this.connections.get(m.conn)?.(m.msg);
            return;
          case 'credential':
            void this.credential(m.id, m.op, m.name, m.secret);
            return;
          case 'closed':
            for (const w of this.closeWaiters.splice(0)) w.resolve();
            return;
          case 'close-failed':
            for (const w of this.closeWaiters.splice(0)) w.reject(new Error(m.message));
            return;
        }
      });
      this.thread.on('error', (e) => {
        // An uncaught error or running out of memory ends the thread; 'exit' follows.
        this.opts.log?.(`The backend's thread failed: ${e.stack ?? e.message}`);
      });
      this.thread.on('exit', (code) => {
        const wasEnded = this.ended;
        this.ended = true;
        const error = new Error(`The backend's thread ended unexpectedly (exit code ${code}).`);
        for (const w of this.closeWaiters.splice(0)) w.reject(error);
        if (!up) reject(error);
        else if (!wasEnded && this.closing === null) this.opts.onExit?.(error);
      });
    });
  }

  /** Answers the thread's credential store call from the main process's store. */
  private async credential(id: number, op: CredentialOp, name: string, secret: string | null): Promise<void> {
    const store = this.opts.credentials;
    try {
      let value: string | null = null;
      if (op === 'get') value = await store.get(name);
      else if (op === 'set') await store.set(name, secret ?? '');
      else await store.delete(name);
      this.post({ t: 'credential', id, ok: true, value });
    } catch (e) {
      this.post({ t: 'credential', id, ok: false, message: errorMessage(e) });
    }
  }

  private post(m: ToBackend): void {
    if (this.ended) return;
    try {
      this.thread.postMessage(m);
    } catch (e) {
      // A value that cannot be copied to the thread (IPC only delivers copyable ones).
      this.opts.log?.(`Could not pass a message to the backend's thread: ${errorMessage(e)}`);
    }
  }
}

/** A worker's code that loads the TypeScript entry through tsx (main run from its sources: tests). */
function sourceBootstrap(entry: string): string {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href;
  // tsx's CommonJS build of its API, as `require` resolves it: register() is a named export, or the
  // default export's when Node's CommonJS lexer does not find it.
  return `import(${JSON.stringify(tsx)}).then((m) => { (m.register ?? m.default.register)(); return import(${JSON.stringify(pathToFileURL(entry).href)}); });`;
}
