/**
 * The desktop backend's router: runs operations of shared/ops for the signed-in member against the
 * open workspace's local database, keeps read subscriptions fresh when the data they read changes,
 * and turns every failure into a {code, message, details} value before it leaves the process. It has
 * no Electron import: the main process hosts it over IPC, the web host over WebSocket, tests directly.
 */
import type { Clock, Ids, Secrets, SenderCredentials, SenderHostCheck, SenderVerifier } from '../../shared/context.ts';
import type { ChannelHost } from '../../shared/engine/channel.ts';
import { DomainError, isDomainError } from '../../shared/errors.ts';
import type { CollectionName } from '../../shared/model/index.ts';
import { hostedByOf } from '../../shared/ops/credentials.ts';
import { timeOrderedIds } from '../../shared/ids.ts';
import { execute, getOperation } from '../../shared/ops/execute.ts';
import type { Store } from '../../shared/store.ts';
import { nodeSecrets } from '../../channels/secret-codec.ts';
import type { BridgeError, BridgeOnlyCode, Result, SessionInfo, SyncStatus } from '../bridge.ts';
import { oauthClientSettingsFromEnv } from '../../channels/oauth.ts';
import type { OAuthClientSettings } from '../../channels/oauth.ts';
import { createDesktopOAuth } from './oauth-loopback.ts';
import type { DesktopOAuth } from './oauth-loopback.ts';
import { ServerClient, ServerError } from './server-client.ts';
import type { SessionManager } from './session.ts';

export type BackendOptions = {
  session: SessionManager;
  clock?: Clock;
  ids?: Ids;
  random?: () => number;
  secrets?: Secrets;
  /** The channels of the senders hosted here (the sandbox network in the demo); null offline. */
  channels?: () => ChannelHost | null;
  /** Where this desktop keeps the secrets of the senders it runs (sdrProfiles.setCredentials). */
  senderCredentials?: SenderCredentials | null;
  /** Checks the mailboxes this desktop runs, from this computer (channels/verify-sender.ts). */
  senderVerifier?: SenderVerifier | null;
  /** How long changes are gathered before subscriptions re-run (about one animation frame or three). */
  coalesceMs?: number;
  fetch?: typeof fetch;
  log?: (line: string) => void;
  /** The registered apps for "Sign in with Google / Microsoft" (default: GOOGLE_OAUTH_CLIENT_ID, ...). */
  oauthClients?: OAuthClientSettings;
  /** How long a loopback sign-in waits for the browser (default 10 minutes). */
  oauthTimeoutMs?: number;
};

type Listener = (result: Result<unknown>) => void;

type Sub = {
  op: string;
  input: unknown;
  listener: Listener;
  /** Collections the last run read; a change to any of them re-runs it. Null before the first run. */
  reads: Set<CollectionName> | null;
  lastJson: string | null;
  running: boolean;
  dirty: boolean;
  closed: boolean;
};

const systemClock: Clock = { now: () => new Date() };
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);


/** A refusal about the desktop itself rather than about an operation (no workspace open, ...). */
export class BackendError extends Error {
  constructor(readonly code: BridgeOnlyCode, message: string) {
    super(message);
    this.name = 'BackendError';
  }
}

/** Any thrown value as the bridge's error shape. */
export function toBridgeError(e: unknown, log?: (line: string) => void): BridgeError {
  if (isDomainError(e)) return { code: e.code, message: e.message, details: e.details };
  if (e instanceof BackendError) return { code: e.code, message: e.message, details: {} };
  if (e instanceof ServerError) return { code: e.code, message: e.message, details: e.details };
  const message = e instanceof Error ? e.message : String(e);
  log?.(`Unexpected backend error: ${e instanceof Error && e.stack ? e.stack : message}`);
  return { code: 'INTERNAL', message: `Something went wrong in the desktop backend: ${message}`, details: {} };
}

/** A Store that remembers which collections were read through it. */
function trackingStore(store: Store, reads: Set<CollectionName>): Store {
  return {
    workspaceId: store.workspaceId,
    get: (c, id) => (reads.add(c), store.get(c, id)),
    getMany: (c, ids) => (reads.add(c), store.getMany(c, ids)),
    query: (c, q) => (reads.add(c), store.query(c, q)),
    count: (c, w) => (reads.add(c), store.count(c, w)),
    duplicateGroups: (kind, o) => (reads.add('leads'), store.duplicateGroups(kind, o)),
    commit: (writes) => store.commit(writes),
  };
}

export class Backend {
  readonly session: SessionManager;
  private readonly subs = new Set<Sub>();
  private readonly syncListeners = new Set<(s: SyncStatus) => void>();
  private readonly sessionListeners = new Set<(i: SessionInfo) => void>();
  private pending = new Set<CollectionName>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private unbindDb: (() => void) | null = null;
  private unbindSync: (() => void) | null = null;
  /** The index a local workspace's database builds now, in words (a workspace that syncs has its
   * sync status say it: replication.ts). */
  private localBuild: string | null = null;
  private readonly clock: Clock;
  private readonly ids: Ids;
  private readonly random: () => number;
  private readonly secrets: Secrets;
  private readonly coalesceMs: number;
  private readonly log: (line: string) => void;
  /** Mailbox sign-ins with OAuth begun on this desktop (loopback redirect, RFC 8252). */
  readonly oauth: DesktopOAuth;

  constructor(private readonly opts: BackendOptions) {
    this.session = opts.session;
    this.clock = opts.clock ?? systemClock;
    this.ids = opts.ids ?? timeOrderedIds;
    // The backend is an I/O edge: handlers get randomness through ctx, and this is where it comes from.
    this.random = opts.random ?? Math.random;
    this.secrets = opts.secrets ?? nodeSecrets;
    this.coalesceMs = opts.coalesceMs ?? 50;
    this.log = opts.log ?? (() => undefined);
    this.oauth = createDesktopOAuth({
      settings: opts.oauthClients ?? oauthClientSettingsFromEnv(),
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      ...(opts.oauthTimeoutMs !== undefined ? { timeoutMs: opts.oauthTimeoutMs } : {}),
      log: this.log,
      complete: async (state, code) => {
        const out = await this.call('sdrProfiles.oauth.complete', { state, code });
        return out.ok ? { ok: true, value: out.value as { id: string; name: string; reconnected: boolean } } : out;
      },
    });
    this.session.onChange((info) => this.sessionChanged(info));
    this.bind();
  }

  /** Runs one operation; never throws. */
  async call(op: string, input: unknown): Promise<Result<unknown>> {
    try {
      return { ok: true, value: await this.run(op, input, null) };
    } catch (e) {
      return { ok: false, error: toBridgeError(e, this.log) };
    }
  }

  /** Runs a read operation now and whenever a collection it read changes. */
  subscribe(op: string, input: unknown, listener: Listener): () => void {
    const sub: Sub = { op, input, listener, reads: null, lastJson: null, running: false, dirty: false, closed: false };
    this.subs.add(sub);
    void this.rerun(sub);
    return () => {
      sub.closed = true;
      this.subs.delete(sub);
    };
  }

  onSyncStatus(listener: (s: SyncStatus) => void): () => void {
    this.syncListeners.add(listener);
    listener(this.syncStatus());
    return () => this.syncListeners.delete(listener);
  }

  onSession(listener: (i: SessionInfo) => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  /** Re-runs every subscription whose reads intersect `collections` (used by tests and by the
   * database's change feed). */
  notifyChanged(collections: readonly CollectionName[]): void {
    for (const c of collections) this.pending.add(c);
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.coalesceMs);
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const s of this.subs) s.closed = true;
    this.subs.clear();
    this.unbindDb?.();
    this.unbindSync?.();
    await this.oauth.close();
    await this.session.shutdown();
  }

  private async run(op: string, input: unknown, reads: Set<CollectionName> | null): Promise<unknown> {
    const def = getOperation(op);
    const open = this.session.current();
    if (!open) throw new BackendError('NO_WORKSPACE', 'No workspace is open: open the demo workspace or connect to a sync server first.');
    if (reads && def.mutates) throw new DomainError('INVALID_INPUT', `${op} changes data; only read operations can be subscribed to.`);
    // A mailbox the sync server will run is signed in there; this desktop receives the browser's
    // redirect on its loopback address and hands the code to the server.
    if (op === 'sdrProfiles.oauth.begin' && !reads && isObject(input) && input.hostedBy === 'server' && open.saved.kind === 'connected' && open.saved.serverUrl && open.apiKey) {
      const { serverUrl, apiKey } = { serverUrl: open.saved.serverUrl, apiKey: open.apiKey };
      return this.oauth.beginElsewhere(
        open.actor.workspaceId,
        async (redirectUri) => (await this.forward(serverUrl, apiKey, 'POST', op, { ...input, redirectUri })) as { authorizationUrl: string; state: string; redirectUri: string; expiresAt: string },
        async (state, code) => {
          try {
            return { ok: true, value: (await this.forward(serverUrl, apiKey, 'POST', 'sdrProfiles.oauth.complete', { state, code })) as { id: string; name: string; reconnected: boolean } };
          } catch (e) {
            return { ok: false, error: toBridgeError(e, this.log) };
          }
        },
      );
    }
    if (def.serverOnly) {
      if (open.saved.kind !== 'connected' || !open.saved.serverUrl || !open.apiKey) {
        throw new DomainError('SERVER_ONLY', `${def.summary.replace(/\.$/, '')}: this is managed by the sync server, and this workspace is a local demo without one. Connect to a sync server in Settings to use it.`, { op });
      }
      return this.forward(open.saved.serverUrl, open.apiKey, def.method, op, input);
    }
    // A server-hosted mailbox is checked by the sync server, which runs it and keeps its secrets;
    // the result comes back here through replication.
    if (op === 'sdrProfiles.verify' && open.saved.kind === 'connected' && open.saved.serverUrl && open.apiKey && !reads) {
      const id = typeof input === 'object' && input !== null && 'sdrProfileId' in input ? input.sdrProfileId : null;
      const sender = typeof id === 'string' ? await open.db.store.get('senders', id) : null;
      if (sender && hostedByOf(sender) === 'server') return this.forward(open.saved.serverUrl, open.apiKey, 'POST', op, input);
    }
    const store = reads ? trackingStore(open.db.store, reads) : open.db.store;
    return execute(op, input, {
      actor: open.actor, store, clock: this.clock, ids: this.ids, random: this.random, secrets: this.secrets,
      channels: open.runner?.channels ?? this.opts.channels?.() ?? null,
      credentials: this.opts.senderCredentials ?? null,
      oauth: this.oauth,
      senderVerifier: this.opts.senderVerifier ?? null,
      senderHosts: open.saved.kind === 'connected' && open.saved.serverUrl && open.apiKey ? this.serverHostCheck(open.saved.serverUrl, open.apiKey) : null,
    });
  }

  /** Server-hosted senders connect from the sync server, which refuses hosts of its own network:
   * sdrProfiles.create asks it (sdrProfiles.checkHosts), and says so when it cannot. */
  private serverHostCheck(serverUrl: string, apiKey: string): SenderHostCheck {
    return {
      refusal: async (hosts) => {
        try {
          const out = (await this.forward(serverUrl, apiKey, 'POST', 'sdrProfiles.checkHosts', { hosts })) as { refusal?: unknown } | null;
          return typeof out?.refusal === 'string' ? out.refusal : null;
        } catch (e) {
          throw new Error(e instanceof ServerError && e.code === 'SERVER_UNREACHABLE' ? 'the sync server could not be reached' : `the sync server did not answer: ${(e as Error).message}`, { cause: e });
        }
      },
    };
  }

  /** Server-only operations (API keys, new members) run where the secrets live. */
  private forward(serverUrl: string, apiKey: string, method: 'GET' | 'POST', op: string, input: unknown): Promise<unknown> {
    return new ServerClient(serverUrl, apiKey, this.opts.fetch).operation(op, method, input);
  }

  private async rerun(sub: Sub): Promise<void> {
    if (sub.closed) return;
    if (sub.running) {
      sub.dirty = true;
      return;
    }
    sub.running = true;
    const reads = new Set<CollectionName>();
    let result: Result<unknown>;
    try {
      result = { ok: true, value: await this.run(sub.op, sub.input, reads) };
    } catch (e) {
      result = { ok: false, error: toBridgeError(e, this.log) };
    }
    sub.running = false;
    if (sub.closed) return;
    sub.reads = reads;
    const json = JSON.stringify(result);
    if (json !== sub.lastJson) {
      sub.lastJson = json;
      try {
        sub.listener(result);
      } catch (e) {
        this.log(`A subscription listener failed: ${(e as Error).message}`);
      }
    }
    if (sub.dirty) {
      sub.dirty = false;
      await this.rerun(sub);
    }
  }

  private flush(): void {
    this.timer = null;
    const changed = this.pending;
    this.pending = new Set();
    for (const sub of this.subs) {
      // A subscription that has not finished its first run has no read set yet: it will see the change.
      if (sub.reads === null || [...sub.reads].some((c) => changed.has(c))) void this.rerun(sub);
    }
  }

  private bind(): void {
    this.unbindDb?.();
    this.unbindSync?.();
    const open = this.session.current();
    this.unbindDb = open ? open.db.onChange((cs) => this.notifyChanged(cs)) : null;
    this.localBuild = null;
    // A local workspace (no sync) says what its database builds too (an import's indexes at 1M
    // leads: tens of seconds, during which pages of a re-sorted table come slower).
    this.unbindSync = open?.sync
      ? open.sync.onStatus((s) => this.emitSync(s))
      : (open?.db.watchBuilds?.((what) => {
          if (what === this.localBuild) return;
          this.localBuild = what;
          this.emitSync(this.syncStatus());
        }) ?? null);
  }

  /** The session's sync status, with a local workspace's index build as its activity. */
  private syncStatus(): SyncStatus {
    const status = this.session.syncStatus();
    return status.mode === 'local' && this.localBuild ? { ...status, activity: `Building the index of ${this.localBuild}` } : status;
  }

  /** The local store builds its sorted index for a lead ordering on first use (a few hundred ms at
   * 100k leads): build the one the leads screen opens with while the window loads. */
  private warmUp(): void {
    void this.call('campaigns.leads.search', { tagId: 'all', sortBy: 'createdAt', sortOrder: 'desc', limit: 1 });
  }

  private emitSync(status: SyncStatus): void {
    for (const l of this.syncListeners) l(status);
  }

  private sessionChanged(info: SessionInfo): void {
    this.bind();
    if (info.state === 'open') this.warmUp();
    for (const l of this.sessionListeners) l(info);
    this.emitSync(this.syncStatus());
    // Everything a subscription read belongs to the workspace that just closed: run them all again.
    for (const sub of this.subs) {
      sub.lastJson = null;
      void this.rerun(sub);
    }
  }
}
