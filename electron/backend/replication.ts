/**
 * Keeps a workspace's local database in step with its sync server: one RxDB replication per
 * collection over the endpoints of API-CONTRACT.md "Replication endpoints" (pull by the server's
 * `seq` checkpoint, push with the assumed master state, a Server-Sent Events stream that reconnects
 * with exponential backoff and asks for a RESYNC on every connect), a bearer key, and the
 * collection's schema version on every request so an outdated app is told to update instead of
 * writing documents it does not understand.
 *
 * Conflicts: when the server answers a push with a document equal to the one the push assumed, the
 * server refused the change (its rules): the server's state is taken and the reason is fetched from
 * GET /replication/refusals. Otherwise the document changed on both sides and is merged three ways
 * (assumed = base): local field changes the server did not also change are kept, the server's value
 * wins where both changed. The merged document is pushed again and judged again.
 */
import { replicateRxCollection } from 'rxdb/plugins/replication';
import type { RxReplicationState } from 'rxdb/plugins/replication';
import type { RxCollection, RxConflictHandler, RxConflictHandlerInput, RxDatabase, RxReplicationPullStreamItem, RxReplicationWriteToMasterRow, WithDeleted } from 'rxdb';
import { Subject } from 'rxjs';
import type { Subscription } from 'rxjs';
import type { Actor } from '../../shared/context.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS, ROLES } from '../../shared/model/index.ts';
import type { CollectionName, Role } from '../../shared/model/index.ts';
import type { LocalDb } from './local-db-port.ts';
import type { StartSync } from './session.ts';
import { persistedInstanceOf } from './storage/persisted-memory.ts';
import { SyncStatusTracker } from './sync-status.ts';
import type { SyncRefusal, SyncStatus } from './sync-status.ts';

type Json = Record<string, unknown>;
type Doc = WithDeleted<Json>;
type Checkpoint = Json;

const LOCAL_ONLY_FIELDS = new Set(['_rev', '_meta', '_attachments']);

/** Equality of JSON values regardless of key order; at the top level RxDB's local fields are ignored. */
export function sameDocument(a: unknown, b: unknown, top = true): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameDocument(x, b[i], false));
  }
  const keys = (o: object) => Object.keys(o).filter((k) => (o as Json)[k] !== undefined && !(top && LOCAL_ONLY_FIELDS.has(k)));
  const ka = keys(a);
  const kb = keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameDocument((a as Json)[k], (b as Json)[k], false));
}

const isPlainObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Three-way merge of one document: starts from the server's state and keeps every local change the
 * server did not also make. Plain objects merge key by key (two people editing different variables
 * of one lead both win); arrays and scalars are one value each (a campaign's steps stay one unit).
 */
export function mergeThreeWay(base: unknown, local: unknown, server: unknown): unknown {
  if (sameDocument(local, base, false)) return server;
  if (sameDocument(server, base, false)) return local;
  if (isPlainObject(base) && isPlainObject(local) && isPlainObject(server)) {
    const out: Json = {};
    for (const k of new Set([...Object.keys(server), ...Object.keys(local), ...Object.keys(base)])) {
      const v = mergeThreeWay(base[k], local[k], server[k]);
      if (v !== undefined) out[k] = v;
    }
    return out;
  }
  // Both changed the same value: the server's wins, so every copy ends identical.
  return server;
}

/** Whether a push conflict is a refusal: the server kept exactly the state the push assumed. */
export function isRefusal(input: RxConflictHandlerInput<Json>): boolean {
  const assumed = input.assumedMasterState;
  if (assumed) return sameDocument(input.realMasterState, assumed);
  // A refused creation: the server has no such document and answers with a deleted one.
  return input.realMasterState._deleted === true && input.newDocumentState._deleted !== true;
}

/** The conflict handler of every replicated collection (see the file comment). */
export const mergeConflictHandler: RxConflictHandler<Json> = {
  isEqual: (a, b) => sameDocument(a, b),
  async resolve(input) {
    const server = input.realMasterState;
    if (!input.assumedMasterState || isRefusal(input)) return server;
    const merged = mergeThreeWay(input.assumedMasterState, input.newDocumentState, server) as Doc;
    // The merge is a new write; its updatedAt is the later of the two sides.
    const lu = input.newDocumentState.updatedAt;
    const su = server.updatedAt;
    if (typeof lu === 'string' && typeof su === 'string' && !merged._deleted) merged.updatedAt = lu > su ? lu : su;
    return merged;
  },
};

/** An answer of the sync server that is not a success. `status` 0: the server was not reached. */
export class SyncHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'SyncHttpError';
  }
}

type FetchFn = typeof fetch;

/** Requests to the sync server with the key and the collection's schema version. */
class ServerClient {
  constructor(
    readonly serverUrl: string,
    private readonly apiKey: string,
    private readonly fetchFn: FetchFn,
  ) {}

  headers(collection?: CollectionName): Record<string, string> {
    const h: Record<string, string> = { authorization: `Bearer ${this.apiKey}` };
    if (collection) h['x-schema-version'] = String(COLLECTIONS[collection].schema.version);
    return h;
  }

  async json(path: string, init: RequestInit & { collection?: CollectionName; timeoutMs?: number } = {}): Promise<unknown> {
    const { collection, timeoutMs = 30_000, ...rest } = init;
    let res: Response;
    try {
      res = await this.fetchFn(`${this.serverUrl}${path}`, {
        ...rest,
        headers: { ...this.headers(collection), ...(rest.body ? { 'content-type': 'application/json' } : {}) },
        signal: rest.signal ?? AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      throw new SyncHttpError(0, 'UNREACHABLE', `The sync server at ${this.serverUrl} cannot be reached (${errorText(e)}).`);
    }
    const text = await bodyText(res);
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = null;
    }
    if (!res.ok) throw httpError(res.status, body, this.serverUrl);
    return body;
  }
}

type PulledPage = { documents: Doc[]; checkpoint: Checkpoint | null };

/** One collection's pull pages, with at most one page fetched ahead (the checkpoint of a page is
 * known only once the page before it arrived): the page after a full page is requested as soon as
 * that page arrives, and handed out when RxDB asks for the same checkpoint and size; anything else
 * is fetched then. A page fetched ahead holds the server's changes since that checkpoint when it
 * was read, so later changes still follow it in seq order. */
class PullPages {
  private ahead: { key: string; page: Promise<PulledPage> } | null = null;

  constructor(
    private readonly client: ServerClient,
    private readonly collection: CollectionName,
  ) {}

  take(checkpoint: Checkpoint | null, batchSize: number): Promise<PulledPage> {
    const ahead = this.ahead;
    this.ahead = null;
    if (ahead && ahead.key === PullPages.key(checkpoint, batchSize)) return ahead.page;
    return this.fetch(checkpoint, batchSize);
  }

  prefetch(checkpoint: Checkpoint | null, batchSize: number): void {
    const page = this.fetch(checkpoint, batchSize);
    // Awaited when RxDB asks for it, or never: take() reports its failure, or nobody needs to.
    page.catch(() => undefined);
    this.ahead = { key: PullPages.key(checkpoint, batchSize), page };
  }

  private async fetch(checkpoint: Checkpoint | null, batchSize: number): Promise<PulledPage> {
    const q = new URLSearchParams({ limit: String(batchSize) });
    if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
    const body = (await this.client.json(`/replication/${this.collection}/pull?${q.toString()}`, { collection: this.collection })) as { documents?: Doc[]; checkpoint?: Checkpoint | null } | null;
    return { documents: body?.documents ?? [], checkpoint: body?.checkpoint ?? checkpoint };
  }

  private static key(checkpoint: Checkpoint | null, batchSize: number): string {
    return `${batchSize} ${JSON.stringify(checkpoint)}`;
  }
}

/**
 * A response body as text, decoded chunk by chunk. `Response.text()` first gathers a body into one
 * buffer: for a 2 MB pull page that is a 2 MB allocation outside the JavaScript heap, and after the
 * first of those glibc serves them from its main heap, which never shrinks back past the long-lived
 * allocations made in between (at 100k leads the desktop kept ~80 MB of freed memory resident).
 * Decoded chunk by chunk, the only large value is the string, which lives in the JavaScript heap.
 */
async function bodyText(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    text += decoder.decode(value, { stream: true });
  }
}

function httpError(status: number, body: unknown, serverUrl: string): SyncHttpError {
  const err = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const code = typeof err?.code === 'string' ? err.code : `HTTP_${status}`;
  const message = typeof err?.message === 'string' ? err.message : `The sync server at ${serverUrl} answered ${status}.`;
  if (status === 426) return new SyncHttpError(status, code, `This app is older than the sync server: ${message} Update the app to keep syncing.`);
  if (status === 401) return new SyncHttpError(status, code, `The sync server refused the API key: ${message}`);
  return new SyncHttpError(status, code, message);
}

const errorText = (e: unknown): string => {
  if (e instanceof Error) {
    const cause = (e as { cause?: unknown }).cause;
    return cause instanceof Error ? `${e.message}: ${cause.message}` : e.message;
  }
  return String(e);
};

/** The `data` of each Server-Sent Event (comments and other fields ignored). */
async function* sseData(body: ReadableStream<Uint8Array>, onBytes: () => void): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buf = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onBytes();
      buf += decoder.decode(value, { stream: true });
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        if (line === '') {
          if (data.length > 0) yield data.join('\n');
          data = [];
        } else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        nl = buf.indexOf('\n');
      }
    }
  } finally {
    reader.releaseLock();
  }
}

export type SyncOptions = {
  db: LocalDb & { rx?: RxDatabase };
  serverUrl: string;
  apiKey: string;
  fetch?: FetchFn;
  /** Documents per pull request (default 2000, the server's largest page) and per push request (default 100). */
  pullBatchSize?: number;
  pushBatchSize?: number;
  /** Wait before retrying a failed pull or push (default 2 s). */
  retryMs?: number;
  /** Stream reconnect backoff: first wait and cap (default 250 ms, 30 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Reconnect a stream that has been silent this long (default 45 s; servers send heartbeats). */
  streamIdleMs?: number;
  now?: () => Date;
  log?: (line: string) => void;
};

/** A running sync: its status for the UI, and controls. */
export type Sync = {
  status(): SyncStatus;
  onStatus(listener: (s: SyncStatus) => void): () => void;
  /** Resolves when every collection has pulled what the server had and pushed every local change. */
  awaitInSync(): Promise<void>;
  /** Stops talking to the server (as if the network were gone); local work goes on. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
};

type Lane = {
  collection: CollectionName;
  state: RxReplicationState<Json, Checkpoint>;
  stream: Subject<RxReplicationPullStreamItem<Json, Checkpoint>>;
  abort: AbortController | null;
  loop: Promise<void> | null;
};

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** Starts replicating every replicated collection of the local database with the sync server. */
/**
 * The collections whose documents a collection's documents point at. The server refuses a pushed
 * reference to something it does not have, and every collection replicates on its own lane, so a
 * lead written offline with a new tag could otherwise reach the server before its tag and be refused.
 * A lane therefore pushes only once the lanes it depends on have pushed what they hold.
 */
export const PUSH_AFTER: Partial<Record<CollectionName, readonly CollectionName[]>> = {
  senders: ['members'],
  leads: ['tags', 'leadGroups', 'stages'],
  campaigns: ['leadGroups', 'senders'],
  activities: ['leads', 'members'],
  enrollments: ['leads', 'campaigns', 'senders'],
  messages: ['leads', 'campaigns', 'senders'],
  usage: ['senders'],
};

/** How long a push waits for the lanes it depends on before trying anyway (the server then judges). */
const PUSH_ORDER_WAIT_MS = 30_000;

export async function startSync(opts: SyncOptions): Promise<Sync> {
  const rx = opts.db.rx;
  if (!rx) throw new Error('Replication needs the RxDB local database (openLocalDatabase).');
  const serverUrl = opts.serverUrl.replace(/\/+$/, '');
  const client = new ServerClient(serverUrl, opts.apiKey, opts.fetch ?? fetch);
  const status = new SyncStatusTracker(opts.now);
  const log = opts.log ?? (() => undefined);
  const backoff = opts.backoffMs ?? 250;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  const idleMs = opts.streamIdleMs ?? 45_000;
  const subs: Subscription[] = [];
  // Refusal times are the server's clock: start a day back so a skewed desktop clock cannot hide
  // them (and recent ones from before a restart are shown); afterwards follow the server's times.
  let refusalsSince = new Date((opts.now ?? (() => new Date()))().getTime() - 86_400_000).toISOString();
  let paused = false;
  let stopped = false;

  const fail = (e: unknown): never => {
    const err = e instanceof SyncHttpError ? e : new SyncHttpError(0, 'UNREACHABLE', errorText(e));
    if (err.status === 426 || err.status === 401 || err.status === 403) status.fatalError(err.message);
    else status.requestFailed(err.message);
    throw err;
  };

  /** Fetches the reasons of refusals recorded since the last look, and shows them. */
  let refusalFetch: Promise<void> | null = null;
  const fetchRefusals = (): Promise<void> => {
    refusalFetch ??= (async () => {
      try {
        const body = (await client.json(`/replication/refusals?since=${encodeURIComponent(refusalsSince)}`)) as { refusals?: unknown[] } | unknown[] | null;
        const list = (Array.isArray(body) ? body : (body?.refusals ?? [])).map(toRefusal).filter((r): r is SyncRefusal => r !== null);
        for (const r of list) {
          status.explainRefusal(r);
          if (r.at > refusalsSince) refusalsSince = r.at;
        }
      } catch (e) {
        log(`Could not fetch refusal reasons: ${errorText(e)}`);
      } finally {
        refusalFetch = null;
      }
    })();
    return refusalFetch;
  };

  const lanes: Lane[] = [];
  /** Waits (bounded) until the lanes `c` depends on have nothing left to push or pull. */
  const parentsPushed = async (c: CollectionName): Promise<void> => {
    const parents = lanes.filter((l) => (PUSH_AFTER[c] ?? []).includes(l.collection));
    if (parents.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(parents.map((l) => l.state.awaitInSync())),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, PUSH_ORDER_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  };
  /** Conflicts resolved by taking the server's document, until that write lands in the fork. */
  const tookServerState = new Map<string, Doc>();
  for (const c of REPLICATED_COLLECTIONS) {
    const collection = rx.collections[c] as RxCollection<Json> | undefined;
    if (!collection) throw new Error(`The local database has no ${c} collection.`);
    const stream = new Subject<RxReplicationPullStreamItem<Json, Checkpoint>>();
    const pages = new PullPages(client, c);
    const state = replicateRxCollection<Json, Checkpoint>({
      collection,
      replicationIdentifier: `outreach-crm-sync|${serverUrl}`,
      live: true,
      retryTime: opts.retryMs ?? 2_000,
      waitForLeadership: false,
      autoStart: true,
      pull: {
        // Big pages: fewer round trips and fewer (larger) storage transactions per pulled document.
        batchSize: opts.pullBatchSize ?? 2000,
        stream$: stream.asObservable(),
        handler: async (checkpoint, batchSize) => {
          const page = await pages.take(checkpoint ?? null, batchSize).catch(fail);
          status.requestOk();
          if (page.documents.length >= batchSize) {
            // A full page means more is waiting: ask for the next one now, and let the request go
            // out before RxDB stores this page (its storing runs as one long chain of promise
            // callbacks, which would otherwise hold the request back until it is done), so the
            // server reads and sends the next page while this one is stored.
            pages.prefetch(page.checkpoint, batchSize);
            await new Promise((resolve) => setImmediate(resolve));
          }
          return page as { documents: Doc[]; checkpoint: Checkpoint };
        },
      },
      push: {
        batchSize: opts.pushBatchSize ?? 100,
        handler: async (rows: RxReplicationWriteToMasterRow<Json>[]) => {
          for (const r of rows) status.addPending(`${c}/${String(r.newDocumentState.id)}`);
          await parentsPushed(c);
          const body = await client.json(`/replication/${c}/push`, { method: 'POST', body: JSON.stringify(rows), collection: c }).catch(fail);
          status.requestOk();
          return (Array.isArray(body) ? body : []) as Doc[];
        },
      },
    });
    lanes.push({ collection: c, state, stream, abort: null, loop: null });

    // Pending: local writes (anything but the replication's own downstream writes) until the server
    // has the document's current state.
    const instance = persistedInstanceOf<Json>(collection.storageInstance);
    if (instance) {
      subs.push(
        instance.changeStream().subscribe((bulk) => {
          if (bulk.context.startsWith('replication-downstream-')) {
            // RxDB only pulls over documents without unpushed local changes: these match the server.
            if (status.pendingCount() > 0) for (const ev of bulk.events) status.acknowledged(`${c}/${ev.documentId}`);
            return;
          }
          for (const ev of bulk.events) {
            const key = `${c}/${ev.documentId}`;
            const master = tookServerState.get(key);
            tookServerState.delete(key);
            // A conflict resolved to exactly the server's state leaves nothing to push.
            if (bulk.context === 'replication-up-write-conflict' && master && sameDocument(ev.documentData, master)) status.acknowledged(key);
            else status.addPending(key);
          }
        }),
      );
    }
    subs.push(
      state.sent$.subscribe((doc) => {
        const id = String(doc.id);
        const current = instance?.currentDocuments().get(id);
        if (!current || sameDocument(current, doc)) status.acknowledged(`${c}/${id}`);
      }),
      state.conflict$.subscribe((conflict) => {
        const id = String(conflict.input.newDocumentState.id);
        if (sameDocument(conflict.output, conflict.input.realMasterState)) tookServerState.set(`${c}/${id}`, conflict.input.realMasterState);
        if (!isRefusal(conflict.input)) return;
        status.addRefusals([{ collection: c, documentId: id, code: 'REFUSED', message: 'The sync server refused this change; its version was restored.', at: new Date().toISOString() }]);
        void fetchRefusals();
      }),
      state.error$.subscribe((e) => log(`${c}: ${errorText(e)}`)),
    );
  }

  /** One collection's live stream: reconnects with exponential backoff, RESYNC on every connect. */
  const runStream = async (lane: Lane, signal: AbortSignal): Promise<void> => {
    let attempt = 0;
    while (!signal.aborted) {
      const idle = new AbortController();
      const both = AbortSignal.any([signal, idle.signal]);
      let timer: ReturnType<typeof setTimeout> | null = null;
      const touch = () => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => idle.abort(), idleMs);
      };
      try {
        touch();
        let res: Response;
        try {
          res = await (opts.fetch ?? fetch)(`${serverUrl}/replication/${lane.collection}/stream`, {
            headers: { ...client.headers(lane.collection), accept: 'text/event-stream' },
            signal: both,
          });
        } catch (e) {
          throw new SyncHttpError(0, 'UNREACHABLE', `The sync server at ${serverUrl} cannot be reached (${errorText(e)}).`);
        }
        if (!res.ok || !res.body) {
          const text = await res.text().catch(() => '');
          let body: unknown = null;
          try {
            body = JSON.parse(text);
          } catch {
            body = null;
          }
          throw httpError(res.status, body, serverUrl);
        }
        attempt = 0;
        status.streamUp(lane.collection);
        // Whatever changed while we were not listening is pulled again from the checkpoint.
        lane.stream.next('RESYNC');
        for await (const data of sseData(res.body, touch)) {
          if (data.trim() === 'RESYNC' || data.trim() === '"RESYNC"') lane.stream.next('RESYNC');
          else lane.stream.next(JSON.parse(data) as RxReplicationPullStreamItem<Json, Checkpoint>);
        }
        if (!signal.aborted) throw new SyncHttpError(0, 'STREAM_CLOSED', 'The sync server closed the live stream.');
      } catch (e) {
        if (signal.aborted) return;
        const err = e instanceof SyncHttpError ? e : new SyncHttpError(0, 'STREAM_FAILED', idle.signal.aborted ? 'The live stream went silent.' : errorText(e));
        if (err.status === 426 || err.status === 401 || err.status === 403) status.fatalError(err.message);
        status.streamDown(lane.collection, err.message);
        const wait = Math.min(maxBackoff, backoff * 2 ** attempt) * (0.5 + Math.random() / 2);
        attempt++;
        await sleep(wait, signal);
      } finally {
        if (timer) clearTimeout(timer);
      }
    }
  };

  const startStreams = () => {
    for (const lane of lanes) {
      const abort = new AbortController();
      lane.abort = abort;
      lane.loop = runStream(lane, abort.signal);
    }
  };
  const stopStreams = async () => {
    for (const lane of lanes) lane.abort?.abort();
    await Promise.all(lanes.map((l) => l.loop));
    for (const lane of lanes) {
      lane.abort = null;
      lane.loop = null;
    }
  };

  startStreams();
  void fetchRefusals();

  const sync: Sync = {
    status: () => status.get(),
    onStatus: (listener) => status.subscribe(listener),
    async awaitInSync() {
      for (;;) {
        await Promise.all(lanes.map((l) => l.state.awaitInSync()));
        if (status.pendingCount() === 0) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async pause() {
      if (paused || stopped) return;
      paused = true;
      status.setStopped(true);
      await Promise.all(lanes.map((l) => l.state.pause()));
      await stopStreams();
    },
    async resume() {
      if (!paused || stopped) return;
      paused = false;
      status.setStopped(false);
      await Promise.all(lanes.map((l) => l.state.start()));
      startStreams();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      status.setStopped(true);
      await stopStreams();
      await Promise.all(lanes.map((l) => l.state.cancel()));
      for (const s of subs) s.unsubscribe();
      for (const l of lanes) l.stream.complete();
    },
  };
  return sync;
}

function toRefusal(raw: unknown): SyncRefusal | null {
  if (!isPlainObject(raw)) return null;
  const str = (...keys: string[]): string | null => {
    for (const k of keys) if (typeof raw[k] === 'string') return raw[k];
    return null;
  };
  const collection = str('collection');
  const documentId = str('documentId', 'docId', 'id');
  if (!collection || !documentId) return null;
  return {
    collection,
    documentId,
    code: str('code') ?? 'REFUSED',
    message: str('message', 'reason') ?? 'The sync server refused this change.',
    at: str('at', 'createdAt', 'refusedAt') ?? new Date().toISOString(),
  };
}

/** Who an API key acts as, asked of the server (the same lookups the desktop's connect screen does). */
export async function identifyKey(serverUrl: string, apiKey: string, fetchFn: FetchFn = fetch): Promise<{ workspaceId: string; workspaceName: string; actor: Actor; memberName: string }> {
  const client = new ServerClient(serverUrl.replace(/\/+$/, ''), apiKey, fetchFn);
  const keys = (await client.json('/apiKeys.list')) as { keys?: { prefix: string; memberId: string }[] };
  const mine = keys.keys?.find((k) => apiKey.startsWith(k.prefix));
  if (!mine) throw new Error('The server accepted the key but does not list it among its keys.');
  const members = (await client.json('/members.list')) as { members?: { id: string; name: string; role: string }[] };
  const me = members.members?.find((m) => m.id === mine.memberId);
  if (!me || !(ROLES as readonly string[]).includes(me.role)) throw new Error("The key's member is no longer in the workspace.");
  const pulled = (await client.json('/replication/workspaces/pull?limit=1', { collection: 'workspaces' })) as { documents?: { id: string; name: string }[] };
  const ws = pulled.documents?.[0];
  if (!ws) throw new Error('The server did not share the workspace record.');
  return { workspaceId: ws.id, workspaceName: ws.name, memberName: me.name, actor: { workspaceId: ws.id, memberId: me.id, role: me.role as Role } };
}

// The desktop session starts sync through this shape (electron/backend/session.ts).
const _fitsSession: StartSync = startSync;
